// The 128-row fp8_block128 tile on CUTLASS's own consumer mainloop, kept for A/B runs against
// the overlapped promotion (SERVEKIT_DIAG_FP8_PROMOTION=serial; sm90_blockwise_overlap.cuh).
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128_serial(const GroupedGemmShape& shape,
                                                                   int device) {
  return gemm::make_tile_runner<GemmOperand::kFP8Block128, false, true>(shape, device);
}

}  // namespace servekit::cuda
