// Conversion of one prepared expert matrix (quant.h's plain host layout) into the operand
// layout of the sm90 grouped GEMM (grouped_gemm.h). Host only. Internal header.
//
// The 4-bit formats have no native Hopper path yet (interim): their weights are DEQUANTIZED
// exactly as quant.h specifies and rounded once to bf16, and run through the bf16 GEMM. Hopper
// tensor cores would round a 4-bit weight dequantized in registers to bf16 in the same way, so
// only the memory footprint (4x) and bandwidth differ from a native kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/gemm_tile_config.h"
#include "servekit/quant.h"

namespace servekit::cuda {

// The GEMM operand format that runs a quantization method on the dynamic path.
GemmOperand gemm_operand(QuantMethod m);

struct GemmWeightHost {
  std::vector<uint8_t> codes;       // [N, K] bf16 (2 bytes, little-endian) or e4m3
  std::vector<float> block_scales;  // fp8_block128: [K/128, ceil(N/128)] (MN-major), else empty
  float tensor_scale = 1.0f;        // fp8_per_tensor
};

// Throws servekit::Error if m is not [rows, cols] or its method's data are malformed.
GemmWeightHost to_gemm_layout(const QuantizedMatrix& m, int64_t rows, int64_t cols);

// Reorders a converted [2I, cols] gate/up matrix (gate rows first) into the layout of the fused
// activation (interleaved_w13_row in blocks of `width` rows, w13_interleave_rows,
// gemm_tile_config.h): rows, and for fp8_block128 the 128-row scale blocks with them. Throws
// servekit::Error unless inter % 128 == 0, width is 128 (or 64 with bf16) and w holds 2I rows of
// `cols` elements of `op`.
void interleave_w13(GemmWeightHost& w, GemmOperand op, int64_t inter, int64_t cols,
                    int64_t width = 128);

}  // namespace servekit::cuda
