// The 128-row CUTLASS instantiation of the fp8_block128 grouped GEMM (tile from
// compiled_tile_config); grouped_gemm_fp8_block128_small_m.cu holds the 64-row one.
#include <cstdlib>

#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"
#include "servekit/error.h"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128(const GroupedGemmShape& shape,
                                                            int device) {
  // Session 23's A/B of the idle warp group (sm90_blockwise_halves.cuh); removed after the run.
  const char* v = std::getenv("SERVEKIT_DIAG_FP8_IDLE");
  const int mode = v == nullptr || *v == '\0' ? 0 : std::atoi(v);
  SERVEKIT_CHECK(mode >= 0 && mode <= 2, "SERVEKIT_DIAG_FP8_IDLE must be 0, 1 or 2");
  SERVEKIT_CHECK(cudaSetDevice(device) == cudaSuccess &&
                     cudaMemcpyToSymbol(gemm::kDiagIdleMode, &mode, sizeof(mode)) == cudaSuccess,
                 "SERVEKIT_DIAG_FP8_IDLE: cudaMemcpyToSymbol failed");
  return gemm::make_tile_runner<GemmOperand::kFP8Block128, false>(shape, device);
}

}  // namespace servekit::cuda
