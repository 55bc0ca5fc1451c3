// The ping-pong swap-AB CUTLASS instantiation of the bf16 grouped GEMM with k-steps of 64
// (swap_pp_tile_config: 128 weight rows x 144 tokens), the swap tile of the GEMMs that
// use_swap_pingpong picks (GroupedGemmShape::swap_pingpong) on cards whose step is 64
// (swap_pp_tile_k). m64n144k16 is one of CuTe's extended sm90 MMA shapes, as in
// grouped_gemm_bf16_swap.cu. The step of 128 is grouped_gemm_bf16_swap_pp_k128.cu.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pp(const GroupedGemmShape& shape,
                                                            int device) {
  return gemm::make_swap_pp_runner<64>(shape, device);
}

}  // namespace servekit::cuda
