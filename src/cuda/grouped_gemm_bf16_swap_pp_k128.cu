// The ping-pong swap-AB tile of grouped_gemm_bf16_swap_pp.cu with k-steps of 128 (3 stages of
// 36 KB instead of 6 of 18 KB), for the cards whose step is 128 (swap_pp_tile_k). Its own
// translation unit, so that each heavy instantiation compiles alone.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pp_k128(const GroupedGemmShape& shape,
                                                                 int device) {
  constexpr GemmTileConfig t = swap_pp_tile_config(GemmOperand::kBF16, 128);
  return gemm::make_runner<gemm::Sm90GroupedGemm<GemmOperand::kBF16, t.tile_m, t.tile_n, t.tile_k,
                                                 t.cluster_m, t.cluster_n, t.schedule, t.swap_ab>>(
      shape, device);
}

}  // namespace servekit::cuda
