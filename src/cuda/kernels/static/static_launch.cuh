// Host side of one format's static GEMM kernels: grid from the device (SM count x resident
// CTAs), shared-memory opt-in, and the PDL launch. Included by the per-format instantiation
// files (static_moe_<format>.cu), so each compiles one format's two kernels.
#pragma once

#include <algorithm>
#include <atomic>

#include <cuda_runtime.h>

#include "cuda/kernels/static/static_gemm.cuh"
#include "cuda/kernels/static/static_launch.h"
#include "cuda/kernels/static/static_ring.cuh"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda::static_moe {

// CTAs of kernel resident per SM with smem_bytes of dynamic shared memory (opting in first).
template <typename Kernel>
int static_ctas_per_sm(Kernel kernel, int threads, int smem_bytes) {
  SERVEKIT_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  int n = 0;
  SERVEKIT_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem_bytes));
  SERVEKIT_CHECK(n >= 1, "static moe: the GEMM kernel does not fit on an SM with ", smem_bytes,
                 " bytes of shared memory");
  return n;
}

inline int static_sm_count() {
  int dev = 0, sms = 0;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&dev));
  SERVEKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

constexpr int kStaticMaxDevices = 64;

// The GEMM kernels of format F: the shared-memory ring (static_ring.cuh) where static_uses_ring,
// else the register ring (static_gemm.cuh).
template <StaticFormat F>
struct StaticKernels {
  static constexpr bool kRing = static_uses_ring(F);
  static constexpr int kThreads = kRing ? kRingThreads : kStaticThreads;
  static constexpr int kSmem = kRing ? kRingSmemBytes : kStaticSmemBytes;
  static auto gemm(bool down) {
    if constexpr (kRing) {
      return down ? static_ring_kernel<F, true> : static_ring_kernel<F, false>;
    } else {
      return down ? static_gemm_kernel<F, true> : static_gemm_kernel<F, false>;
    }
  }
};

// GEMM grid of format F (both kernels): one wave of resident CTAs, at most
// kStaticMaxCtasPerSm per SM and kStaticMaxPartitionGrid in all. Cached per device (the queries
// cost microseconds per call); the shared memory size is a constant per format, so the opt-in made
// on the first call holds.
template <StaticFormat F>
int static_grid() {
  using K = StaticKernels<F>;
  static std::atomic<int> cache[kStaticMaxDevices] = {};
  int dev = 0;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < kStaticMaxDevices && cache[dev].load() > 0) return cache[dev].load();
  const int a = static_ctas_per_sm(K::gemm(false), K::kThreads, K::kSmem);
  const int b = static_ctas_per_sm(K::gemm(true), K::kThreads, K::kSmem);
  int per_sm = a < b ? a : b;
  per_sm = per_sm < kStaticMaxCtasPerSm ? per_sm : kStaticMaxCtasPerSm;
  // At most kStaticMaxPartitionGrid CTAs: the kernels keep the CTA begins in shared memory
  // (static_tasks.h); a larger GPU would run fewer CTAs per SM.
  const int grid = std::min(static_sm_count() * per_sm, kStaticMaxPartitionGrid);
  if (dev < kStaticMaxDevices) cache[dev].store(grid);
  return grid;
}

template <StaticFormat F>
void static_launch_gemms(StaticLaunch& l, cudaStream_t stream) {
  const int grid = l.grid;
  SERVEKIT_CHECK(grid >= 1 && grid <= static_grid<F>(), "static moe: grid ", grid,
                 " must be in [1, ", static_grid<F>(), "]");
  l.gemm2.amax_in_count = grid;
  using K = StaticKernels<F>;
  launch_pdl(K::gemm(false), grid, K::kThreads, K::kSmem, l.pdl, stream, l.gemm1);
  if (l.stop_after_gemm1) return;
  if (l.hquant) launch_static_hquant(l.hq, l.hquant_rows, 2 * grid, l.pdl, stream);
  launch_pdl(K::gemm(true), grid, K::kThreads, K::kSmem, l.pdl, stream, l.gemm2);
}

}  // namespace servekit::cuda::static_moe
