// Device buffers and checked CUDA calls for the GPU tests (host C++, CUDA runtime API only).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#define SERVEKIT_TEST_CUDA(call)                                               \
  do {                                                                         \
    const cudaError_t err_ = (call);                                           \
    ASSERT_EQ(err_, cudaSuccess) << #call << ": " << cudaGetErrorString(err_); \
  } while (0)

namespace servekit::test {

// An owning device allocation; copies to and from host vectors.
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t bytes) : bytes_(bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      ptr_ = nullptr;
      ADD_FAILURE() << "cudaMalloc(" << bytes << ") failed";
    }
  }
  template <typename T>
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size() * sizeof(T)) {
    if (ptr_ != nullptr) cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice);
  }
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceArray(DeviceArray&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }

  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

  // Fills every byte with `byte` (0xFF poisons bf16 and f32 with NaN).
  void poison(uint8_t byte = 0xFF) const {
    if (ptr_ != nullptr) cudaMemset(ptr_, byte, bytes_);
  }
  template <typename T>
  std::vector<T> to_host() const {
    std::vector<T> out(bytes_ / sizeof(T));
    if (ptr_ != nullptr) cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace servekit::test
