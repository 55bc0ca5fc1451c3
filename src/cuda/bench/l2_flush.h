// Cold-L2 timing support for benchmarks: a device buffer of twice the L2 size that a kernel
// overwrites, so that nothing a timed region reads next is still in L2 (the H200's 60 MB L2 holds
// all weights of a small preset). Internal header; host-only declarations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace servekit::cuda {

class L2Flusher {
 public:
  // Sizes the buffer from cudaDeviceProp::l2CacheSize of `device` (2x). Throws servekit::Error
  // if the allocation fails.
  explicit L2Flusher(int device);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;

  // Enqueues one kernel on `stream` that writes every byte of the buffer.
  void flush(cudaStream_t stream);
  size_t bytes() const { return bytes_; }
  // The device's L2 size in bytes.
  size_t l2_bytes() const { return l2_bytes_; }

 private:
  void* buf_ = nullptr;
  size_t bytes_ = 0;
  size_t l2_bytes_ = 0;
  unsigned counter_ = 0;
};

}  // namespace servekit::cuda
