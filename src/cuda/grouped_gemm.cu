// Dispatch of GroupedGemm::create to the per-format instantiations.
#include "cuda/grouped_gemm.h"
#include "servekit/error.h"

#include <cstdlib>
#include <string_view>

namespace servekit::cuda {

namespace {
// SERVEKIT_GEMM_TILES=alt selects alternate_tile_config (gemm_tile_config.h); anything else,
// or unset, the default tiles. Read at every create (layer construction), never per forward.
bool use_alternate_tiles() {
  const char* v = std::getenv("SERVEKIT_GEMM_TILES");
  return v != nullptr && std::string_view(v) == "alt";
}
}  // namespace

std::unique_ptr<GroupedGemm> GroupedGemm::create(const GroupedGemmShape& shape, int device) {
  const bool alt = use_alternate_tiles();
  switch (shape.operand) {
    case GemmOperand::kBF16:
      return alt ? make_grouped_gemm_bf16_alt(shape, device)
                 : make_grouped_gemm_bf16(shape, device);
    case GemmOperand::kFP8PerTensor:
      return make_grouped_gemm_fp8_per_tensor(shape, device);
    case GemmOperand::kFP8Block128:
      return alt ? make_grouped_gemm_fp8_block128_alt(shape, device)
                 : make_grouped_gemm_fp8_block128(shape, device);
  }
  SERVEKIT_FAIL("grouped_gemm: unknown operand ", static_cast<int>(shape.operand));
}

}  // namespace servekit::cuda
