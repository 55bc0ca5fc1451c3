// A checked, owning device array for the GPU tests: plain cudaMalloc / cudaMemcpy / cudaMemset,
// every call checked with SERVEKIT_CUDA_CHECK.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "cuda/runtime.h"

namespace servekit::testing {

template <typename T>
class DeviceArray {
 public:
  // At least one element is allocated so that the pointer is never null.
  explicit DeviceArray(size_t n) : size_(n) {
    SERVEKIT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), (n > 0 ? n : 1) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}

  T* get() const { return ptr_; }
  size_t size() const { return size_; }

  void upload(const std::vector<T>& host) {
    if (host.empty()) return;
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download(size_t n) const {
    std::vector<T> host(n);
    if (n > 0)
      SERVEKIT_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  std::vector<T> download() const { return download(size_); }
  // Fills every byte, so a result the kernel forgot to write cannot pass for a right one.
  void poison(uint8_t byte = 0xFF) {
    SERVEKIT_CUDA_CHECK(cudaMemset(ptr_, byte, (size_ > 0 ? size_ : 1) * sizeof(T)));
  }

 private:
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

// Raw scratch bytes, 256-byte aligned as cudaMalloc guarantees.
using DeviceBytes = DeviceArray<uint8_t>;

}  // namespace servekit::testing
