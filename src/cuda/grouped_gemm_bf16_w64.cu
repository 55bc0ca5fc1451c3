// The bf16 128x256 instantiation whose fused activation reads W13 in 64-row gate/up blocks: the
// large tile of a GEMM1 whose swap-AB tile is the ping-pong one (GemmActFusion::interleave_rows
// = 64). One store per kernel (sm90_act_epilogue.cuh says why).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_w64(const GroupedGemmShape& shape, int device) {
  constexpr GemmTileConfig t = compiled_tile_config(GemmOperand::kBF16);
  return gemm::make_runner<gemm::Sm90GroupedGemm<GemmOperand::kBF16, t.tile_m, t.tile_n, t.tile_k,
                                                 t.cluster_m, t.cluster_n, t.schedule, false, 64>>(
      shape, device);
}

}  // namespace servekit::cuda
