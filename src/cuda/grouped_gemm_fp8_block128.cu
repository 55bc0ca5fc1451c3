// The 128-row CUTLASS instantiation of the fp8_block128 grouped GEMM (tile from
// compiled_tile_config); grouped_gemm_fp8_block128_small_m.cu holds the 64-row one.
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128(const GroupedGemmShape& shape,
                                                            int device) {
  return gemm::make_tile_runner<GemmOperand::kFP8Block128, GemmTileKind::kLarge>(shape, device);
}

}  // namespace servekit::cuda
