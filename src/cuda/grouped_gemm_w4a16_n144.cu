// The int4-weight grouped GEMM's 144-token tile (kernels/gemm/w4a16_gemm.cuh): two of them hold 288
// rows where 128-token tiles need three past 256 (an expert's Poisson rows around 128 or 256 spill
// past one or two 128-token tiles about half the time). SERVEKIT_GEMM_W4A16_TILE=144 runs it
// (w4a16_tile_n does not pick it yet: session 46's A/B measures it).
#include "cuda/kernels/gemm/w4a16_gemm.cuh"

namespace servekit::cuda::gemm {

std::unique_ptr<GroupedGemm> make_w4a16_runner_n144(const GroupedGemmShape& shape, int device) {
  return std::make_unique<W4A16Runner<144>>(shape, device);
}

}  // namespace servekit::cuda::gemm
