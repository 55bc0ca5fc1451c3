// The ping-pong swap-AB tile of grouped_gemm_bf16_swap_pp.cu with k-steps of 128 (3 stages of
// 36 KB instead of 6 of 18 KB), for the cards whose step is 128 (swap_pp_tile_k). Its own
// translation unit, so that each heavy instantiation compiles alone.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pp_k128(const GroupedGemmShape& shape,
                                                                 int device) {
  return gemm::make_swap_pp_runner<128>(shape, device);
}

}  // namespace servekit::cuda
