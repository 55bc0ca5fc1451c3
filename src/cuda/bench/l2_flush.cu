#include "cuda/bench/l2_flush.h"

#include "cuda/runtime.h"

namespace servekit::cuda {

namespace {

// Writes a value that changes per call, 16 bytes per store, over the whole buffer.
__global__ void overwrite(uint4* buf, size_t n, unsigned value) {
  const uint4 v = make_uint4(value, value + 1, value + 2, value + 3);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    buf[i] = v;
}

}  // namespace

L2Flusher::L2Flusher(int device) {
  cudaDeviceProp prop{};
  SERVEKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  l2_bytes_ = static_cast<size_t>(prop.l2CacheSize);
  bytes_ = (2 * l2_bytes_ + 15) / 16 * 16;
  if (bytes_ == 0) bytes_ = size_t{128} << 20;  // a device that reports no L2: flush 128 MiB
  SERVEKIT_CUDA_CHECK(cudaMalloc(&buf_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buf_) cudaFree(buf_);
}

void L2Flusher::flush(cudaStream_t stream) {
  const size_t n = bytes_ / 16;
  overwrite<<<1024, 256, 0, stream>>>(static_cast<uint4*>(buf_), n, ++counter_);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
