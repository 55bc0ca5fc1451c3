// The 128-row CUTLASS instantiation of the bf16 grouped GEMM (tile from compiled_tile_config);
// grouped_gemm_bf16_small_m.cu holds the 64-row one, grouped_gemm_bf16_swap.cu the swap-AB one.
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16(const GroupedGemmShape& shape, int device) {
  return gemm::make_tile_runner<GemmOperand::kBF16, GemmTileKind::kLarge>(shape, device);
}

}  // namespace servekit::cuda
