// Declarations of the per-format launchers of the static GEMM kernels (defined in
// static_launch.cuh, instantiated once per format in src/cuda/static_moe_<format>.cu), so the
// dispatching translation unit does not compile every kernel. Pure C++ plus the CUDA runtime.
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels/static/static_layout.h"
#include "cuda/kernels/static/static_params.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticMaxCtasPerSm = 2;  // the workspace holds partials for this many per SM

struct StaticLaunch {
  StaticGemmParams gemm1, gemm2;  // gemm2.amax_in_count is set by the launcher (= the grid)
  bool pdl = true;
};

// Grid of format F's GEMM kernels on the current device.
template <StaticFormat F>
int static_grid();
// Launches GEMM1 then GEMM2 of format F on stream.
template <StaticFormat F>
void static_launch_gemms(StaticLaunch& l, cudaStream_t stream);

}  // namespace servekit::cuda::static_moe
