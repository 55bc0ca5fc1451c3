// The pair swap-AB CUTLASS instantiation of the bf16 grouped GEMM (swap_pair_tile_config: the
// cooperative 256 weight rows x 144 tokens tile in a 1x2 cluster along the tokens, the weight tile
// multicast to both), for runs whose groups hold two or more token tiles (GroupedGemm::create
// picks it per run, choose_gemm_tile). m64n144k16 is one of CuTe's extended sm90 MMA shapes, as in
// grouped_gemm_bf16_swap.cu.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pair(const GroupedGemmShape& shape,
                                                              int device) {
  return gemm::make_tile_runner<GemmOperand::kBF16, GemmTileKind::kSwapPair>(shape, device);
}

}  // namespace servekit::cuda
