// Dispatch of GroupedGemm::create to the per-format instantiations.
#include "cuda/grouped_gemm.h"
#include "servekit/error.h"

namespace servekit::cuda {

std::unique_ptr<GroupedGemm> GroupedGemm::create(const GroupedGemmShape& shape, int device) {
  switch (shape.operand) {
    case GemmOperand::kBF16:
      return make_grouped_gemm_bf16(shape, device);
    case GemmOperand::kFP8PerTensor:
      return make_grouped_gemm_fp8_per_tensor(shape, device);
    case GemmOperand::kFP8Block128:
      return make_grouped_gemm_fp8_block128(shape, device);
  }
  SERVEKIT_FAIL("grouped_gemm: unknown operand ", static_cast<int>(shape.operand));
}

}  // namespace servekit::cuda
