// The 128-row CUTLASS instantiation of the fp8_block128 grouped GEMM (tile from
// compiled_tile_config); grouped_gemm_fp8_block128_small_m.cu holds the 64-row one.
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {
namespace {
constexpr GemmOperand kOperand = GemmOperand::kFP8Block128;
constexpr GemmTileConfig kTile = compiled_tile_config(kOperand);
using Kernel = gemm::Sm90GroupedGemm<kOperand, kTile.tile_m, kTile.tile_n, kTile.tile_k,
                                     kTile.cluster_m, kTile.cluster_n, kTile.schedule>;
}  // namespace

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128(const GroupedGemmShape& shape,
                                                            int device) {
  return gemm::make_runner<Kernel>(shape, device);
}

}  // namespace servekit::cuda
