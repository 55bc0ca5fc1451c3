// Host steps a runner of a CUTLASS sm90 GEMM kernel takes once, at construction: the
// shared-memory opt-in, and turning the kernel's Arguments into checked Params with an
// initialised workspace. Shared by grouped_gemm_runner.cuh (bf16 and fp8) and w4a16_gemm.cuh
// (int4 weights). Internal header for CUDA translation units.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>

#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda::gemm {

// Lets GemmKernel's CTAs use its whole shared storage; returns that many bytes.
template <class GemmKernel>
int opt_in_shared_memory() {
  // 227 KB: the most shared memory an sm_90 CTA can opt in to.
  static_assert(GemmKernel::SharedStorageSize <= 227 * 1024,
                "the kernel's shared storage exceeds what a CTA can have (a launch would fail)");
  const int smem = GemmKernel::SharedStorageSize;
  SERVEKIT_CUDA_CHECK(cudaFuncSetAttribute(cutlass::device_kernel<GemmKernel>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  return smem;
}

// CUTLASS's can_implement, the workspace's initialisation (synchronised) and the Params, with a
// servekit::Error naming `who` and the shape (n, k) when CUTLASS refuses.
template <class Gemm, class GemmKernel>
typename GemmKernel::Params checked_params(const typename GemmKernel::Arguments& args,
                                           void* workspace, const char* who, int64_t n, int64_t k) {
  const cutlass::Status ok = Gemm::can_implement(args);
  SERVEKIT_CHECK(ok == cutlass::Status::kSuccess, who, ": CUTLASS cannot implement n=", n, " k=", k,
                 ": ", cutlassGetStatusString(ok));
  const cutlass::Status init = GemmKernel::initialize_workspace(args, workspace, nullptr);
  SERVEKIT_CHECK(init == cutlass::Status::kSuccess, who,
                 ": workspace init failed: ", cutlassGetStatusString(init));
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  return GemmKernel::to_underlying_arguments(args, workspace);
}

}  // namespace servekit::cuda::gemm
