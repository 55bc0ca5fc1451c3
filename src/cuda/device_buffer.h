// Owned device memory for host code of a CUDA build: cudaMalloc'd at construction (zero bytes
// give a null pointer), freed at destruction, move-only. Internal header; plain C++ translation
// units may include it (only the CUDA runtime API is used).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cuda/runtime.h"

namespace servekit::cuda {

class DeviceBuffer {
 public:
  enum class Init { kUninitialised, kZero };

  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, Init init = Init::kUninitialised) {
    if (bytes == 0) return;
    void* p = nullptr;
    SERVEKIT_CUDA_CHECK(cudaMalloc(&p, bytes));
    ptr_.reset(p);
    size_ = bytes;
    if (init == Init::kZero) SERVEKIT_CUDA_CHECK(cudaMemset(p, 0, bytes));
  }
  // A device copy of `bytes` bytes of host memory.
  static DeviceBuffer copy_of(const void* host, size_t bytes) {
    DeviceBuffer b(bytes);
    if (bytes) SERVEKIT_CUDA_CHECK(cudaMemcpy(b.get(), host, bytes, cudaMemcpyHostToDevice));
    return b;
  }

  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_.get());
  }
  uint8_t* bytes() const { return get<uint8_t>(); }
  size_t size() const { return size_; }  // bytes allocated

 private:
  struct Free {
    void operator()(void* p) const { cudaFree(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  size_t size_ = 0;
};

}  // namespace servekit::cuda
