// The swap-AB CUTLASS instantiation of the bf16 grouped GEMM (swap_ab_tile_config: 256 weight rows
// x 144 tokens), for runs whose groups hold ~100-300 rows (GroupedGemm::create picks it per run
// from rows_hint, choose_gemm_tile).
// The 144-wide wgmma (m64n144k16) is one of CuTe's extended sm90 MMA shapes, declared only under
// this macro; without it CuTe's selector would split each k-step into 9 m64n16 instructions. It
// is defined for this translation unit alone: the other instantiations use the standard shapes.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap(const GroupedGemmShape& shape,
                                                         int device) {
  return gemm::make_tile_runner<GemmOperand::kBF16, GemmTileKind::kSwap>(shape, device);
}

}  // namespace servekit::cuda
