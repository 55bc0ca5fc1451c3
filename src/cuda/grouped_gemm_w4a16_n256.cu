// The int4-weight grouped GEMM's 256-token tile (kernels/gemm/w4a16_gemm.cuh), which
// make_grouped_gemm_w4a16 picks for runs of more than kW4A16MidTileMaxRows rows per routed group.
#include "cuda/kernels/gemm/w4a16_gemm.cuh"

namespace servekit::cuda::gemm {

std::unique_ptr<GroupedGemm> make_w4a16_runner_n256(const GroupedGemmShape& shape, int device) {
  return std::make_unique<W4A16Runner<256, 1>>(shape, device);
}

}  // namespace servekit::cuda::gemm
