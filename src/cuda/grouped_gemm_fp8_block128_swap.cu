// The swap-AB CUTLASS instantiation of the fp8_block128 grouped GEMM (swap_ab_tile_config: 128
// weight rows x 144 tokens), for groups of ~150-300 rows; SERVEKIT_GEMM_TILE=swap takes it until
// the auto pick does (kAutoSwapFP8Block128). m64n144k32 is one of CuTe's extended sm90 MMA shapes,
// declared only under this macro (grouped_gemm_bf16_swap.cu).
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128_swap(const GroupedGemmShape& shape,
                                                                 int device) {
  return gemm::make_tile_runner<GemmOperand::kFP8Block128, GemmTileKind::kSwap>(shape, device);
}

}  // namespace servekit::cuda
