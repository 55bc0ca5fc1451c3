// The 64-row CUTLASS instantiation of the fp8_block128 grouped GEMM (small_m_tile_config), for
// runs whose groups are short (GroupedGemm::create picks it per run from rows_hint).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {
namespace {
constexpr GemmOperand kOperand = GemmOperand::kFP8Block128;
constexpr GemmTileConfig kTile = small_m_tile_config(kOperand);
static_assert(has_small_m_tile(kOperand));
using Kernel = gemm::Sm90GroupedGemm<kOperand, kTile.tile_m, kTile.tile_n, kTile.tile_k,
                                     kTile.cluster_m, kTile.cluster_n, kTile.schedule>;
}  // namespace

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128_small_m(const GroupedGemmShape& shape,
                                                                    int device) {
  return gemm::make_runner<Kernel>(shape, device);
}

}  // namespace servekit::cuda
