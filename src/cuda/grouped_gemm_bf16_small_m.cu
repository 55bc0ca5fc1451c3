// The 64-row CUTLASS instantiation of the bf16 grouped GEMM (small_m_tile_config), for runs whose
// groups are short (GroupedGemm::create picks it per run from rows_hint).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_small_m(const GroupedGemmShape& shape,
                                                            int device) {
  return gemm::make_tile_runner<GemmOperand::kBF16, GemmTileKind::kSmall>(shape, device);
}

}  // namespace servekit::cuda
