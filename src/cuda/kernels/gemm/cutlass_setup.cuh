// Host steps a runner of a CUTLASS sm90 GEMM kernel takes once, at construction: the one device
// block of its per-group arrays and workspace, the shared-memory opt-in, the occupancy of its
// cluster launch, and turning the kernel's Arguments into checked Params with an initialised
// workspace; and its checked launch. Shared by grouped_gemm_runner.cuh (bf16 and
// fp8) and w4a16_gemm.cuh (int4 weights). Internal header for CUDA translation units.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>

#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda::gemm {

// Offsets of consecutive pieces of one device block (a runner's per-group arrays, then the CUTLASS
// workspace), each 128-byte aligned.
class BlockLayout {
 public:
  // The offset of a new piece of `bytes`.
  size_t reserve(size_t bytes) {
    const size_t at = end_;
    end_ = (end_ + bytes + 127) / 128 * 128;
    return at;
  }
  // Where the next piece would start: the bytes reserved so far, rounded up.
  size_t end() const { return end_; }

 private:
  size_t end_ = 0;
};

// A zeroed device block of `bytes`, plus 128 bytes of slack for the workspace's alignment.
inline void* zeroed_block(size_t bytes) {
  void* block = nullptr;
  SERVEKIT_CUDA_CHECK(cudaMalloc(&block, bytes + 128));
  SERVEKIT_CUDA_CHECK(cudaMemset(block, 0, bytes + 128));
  return block;
}

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

// Gemm::run on a copy of `params` (it takes a mutable reference), with programmatic dependent
// launch if `pdl`; a servekit::Error naming `who`, CUTLASS's status and the CUDA error when the
// launch fails.
template <class Gemm>
void launch_checked(typename Gemm::Params params, cudaStream_t stream, bool pdl, const char* who) {
  const cutlass::Status status = Gemm::run(params, stream, nullptr, pdl);
  SERVEKIT_CHECK(status == cutlass::Status::kSuccess, who,
                 ": CUTLASS launch failed: ", cutlassGetStatusString(status), " (",
                 cudaGetErrorString(cudaGetLastError()), ")");
}

}  // namespace servekit::cuda::gemm
