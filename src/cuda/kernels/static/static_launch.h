// Declarations of the per-format launchers of the static GEMM kernels (defined in
// static_launch.cuh, instantiated once per format in src/cuda/static_moe_<format>.cu), so the
// dispatching translation unit does not compile every kernel. Pure C++ plus the CUDA runtime.
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels/static/static_layout.h"
#include "cuda/kernels/static/static_params.h"
#include "cuda/launch_pdl.h"
#include "cuda/runtime.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticMaxCtasPerSm = 2;  // the workspace holds partials for this many per SM

// fp8_block128's h quantized once between the GEMMs (src/cuda/static_hquant.cu).
struct StaticHQuant {
  const int32_t* group_offsets = nullptr;  // [G + 1]: rows in use = group_offsets[G]
  int num_groups = 0;
  const float* h = nullptr;  // [rows, I] fp32, GEMM1's output
  int64_t inter = 0;         // I
  uint16_t* hq = nullptr;    // [rows, I] e4m3 codes as f16 bits
  float* hs = nullptr;       // [rows, ceil(I / 128)] scales
};

struct StaticLaunch {
  StaticGemmParams gemm1, gemm2;  // gemm2.amax_in_count is set by the launcher (= the grid)
  int grid = 0;  // both GEMMs' (static_grid, or fewer CTAs per SM); the partition tables' grid
  bool pdl = true;
  bool hquant = false;  // launch hquant between the GEMMs (gemm2.hq / hs point at its outputs)
  StaticHQuant hq;
  int64_t hquant_rows = 0;  // upper bound of the rows in use (sizes its grid)
  // Diagnostics (SERVEKIT_DIAG_*, docs/static_moe.md), never set in normal use:
  bool stop_after_gemm1 = false;  // launch GEMM1 only (timing attribution; the output is garbage)
};

// Launches the h quantization (PDL: waits for GEMM1, lets GEMM2 start its weight loads).
void launch_static_hquant(const StaticHQuant& q, int64_t max_rows, int max_ctas, bool pdl,
                          cudaStream_t stream);

// Grid of format F's GEMM kernels on the current device.
template <StaticFormat F>
int static_grid();
// Launches GEMM1 then GEMM2 of format F on stream.
template <StaticFormat F>
void static_launch_gemms(StaticLaunch& l, cudaStream_t stream);

}  // namespace servekit::cuda::static_moe
