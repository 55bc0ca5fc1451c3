// Host steps a runner of a CUTLASS sm90 GEMM kernel takes once, at construction: the
// shared-memory opt-in, the occupancy of its cluster launch, and turning the kernel's Arguments
// into checked Params with an initialised workspace. Shared by grouped_gemm_runner.cuh (bf16 and
// fp8) and w4a16_gemm.cuh (int4 weights). Internal header for CUDA translation units.
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

// How many clusters of cluster_m x cluster_n CTAs of GemmKernel, with `smem` bytes of shared memory
// each, can be resident on `device` at once (clusters must fit whole in a GPC, so fewer than
// sm_count / cluster size may co-exist); throws naming `who` when none fits.
template <class GemmKernel>
int max_active_clusters(int cluster_m, int cluster_n, int smem, const char* who, int device) {
  const void* kernel = reinterpret_cast<const void*>(cutlass::device_kernel<GemmKernel>);
  cudaLaunchConfig_t launch{};
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(cluster_m);
  attr.val.clusterDim.y = static_cast<unsigned>(cluster_n);
  attr.val.clusterDim.z = 1;
  launch.gridDim = dim3(static_cast<unsigned>(cluster_m), static_cast<unsigned>(cluster_n), 1);
  launch.blockDim = dim3(GemmKernel::MaxThreadsPerBlock, 1, 1);
  launch.dynamicSmemBytes = static_cast<size_t>(smem);
  launch.attrs = &attr;
  launch.numAttrs = 1;
  int clusters = 0;
  SERVEKIT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch));
  SERVEKIT_CHECK(clusters > 0, who, ": no cluster of ", cluster_m * cluster_n, " CTAs with ", smem,
                 " bytes of shared memory fits on device ", device);
  return clusters;
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
