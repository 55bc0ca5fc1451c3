// The one CUTLASS instantiation of the fp8_per_tensor grouped GEMM (tile from
// compiled_tile_config).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_per_tensor(const GroupedGemmShape& shape,
                                                              int device) {
  return gemm::make_tile_runner<GemmOperand::kFP8PerTensor, GemmTileKind::kLarge>(shape, device);
}

}  // namespace servekit::cuda
