// The alternate CUTLASS instantiation of the bf16 grouped GEMM (alternate_tile_config, selected
// by SERVEKIT_GEMM_TILES=alt for an A/B measurement).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {
namespace {
constexpr GemmOperand kOperand = GemmOperand::kBF16;
constexpr GemmTileConfig kTile = alternate_tile_config(kOperand);
using Kernel = gemm::Sm90GroupedGemm<kOperand, kTile.tile_m, kTile.tile_n, kTile.tile_k,
                                     kTile.cluster_m, kTile.cluster_n, kTile.schedule>;
}  // namespace

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_alt(const GroupedGemmShape& shape, int device) {
  return gemm::make_runner<Kernel>(shape, device);
}

}  // namespace servekit::cuda
