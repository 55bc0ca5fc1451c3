// servekit/quant.h — the quantization variants of the MoE layer and their host quantizers.
//
// Weight layouts (one expert, a K-major matrix W of shape [N, K], i.e. y = x · Wᵀ):
//   method          codes                      scales                               tensor scale
//   bf16            [N, K]   bf16              —                                    —
//   fp8_per_tensor  [N, K]   e4m3              —                                    fp32 (amax/448)
//   fp8_block128    [N, K]   e4m3              [ceil(N/128), K/128] fp32            —
//   mxfp4_w4a16     [N, K/2] e2m1x2            [N, K/32]  ue8m0                     —
//   mxfp4_w4a8      [N, K/2] e2m1x2            [N, K/32]  ue8m0                     —
//   nvfp4_w4a16     [N, K/2] e2m1x2            [N, K/16]  e4m3                      fp32
//   int4_w4a16      [N, K/2] int4x2            [N, K/G]   bf16 (G = group_size)     —
// Dequantized value: code * scale (* tensor scale). K must be a multiple of the format's block
// (128, 128, 32, 32, 16, G); N may be anything.
//
// Activations (the MoE input and the intermediate between the two GEMMs):
//   bf16, *_w4a16      bf16 (rounded to bf16, no scale)
//   fp8_per_tensor     e4m3, one dynamic fp32 scale for the whole tensor (amax over all rows / 448)
//   fp8_block128       e4m3, one dynamic fp32 scale per row per 128 columns (DeepSeek 1x128)
//   mxfp4_w4a8         e4m3, one dynamic fp32 scale per row per 128 columns (as fp8_block128)
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace servekit {

enum class QuantMethod : uint8_t {
  kBF16,
  kFP8PerTensor,
  kFP8Block128,
  kMXFP4W4A16,
  kMXFP4W4A8,
  kNVFP4W4A16,
  kInt4W4A16,
};

struct QuantConfig {
  QuantMethod method = QuantMethod::kBF16;
  int group_size = 128;  // int4_w4a16 only: 32, 64 or 128
};

// "bf16", "fp8_per_tensor", "fp8_block128", "mxfp4_w4a16", "mxfp4_w4a8", "nvfp4_w4a16",
// "int4_w4a16".
std::string_view quant_name(QuantMethod m);
// Inverse of quant_name; throws servekit::Error listing the valid names.
QuantMethod parse_quant(std::string_view name);
// All seven, in declaration order.
const std::vector<QuantMethod>& all_quant_methods();

// Column block of the weight format (K must be a multiple of it): 1 for bf16 and
// fp8_per_tensor, 128 for fp8_block128, 32 for mxfp4, 16 for nvfp4, group_size for int4.
int weight_k_block(const QuantConfig& q);
// Column block of the activation format: 128 for fp8_block128 and mxfp4_w4a8, else 1.
int activation_k_block(const QuantConfig& q);
// Whether activations are quantized to fp8 before a GEMM.
bool quantizes_activations(QuantMethod m);
// Throws servekit::Error if group_size is invalid for the method.
void validate_quant_config(const QuantConfig& q);

// A quantized weight matrix in the plain layout of the table above (host memory).
struct QuantizedMatrix {
  QuantMethod method = QuantMethod::kBF16;
  int group_size = 128;
  int64_t rows = 0, cols = 0;   // logical [N, K]
  std::vector<uint8_t> codes;   // packed as in the table (bf16 as 2 bytes little-endian)
  std::vector<uint8_t> scales;  // raw bytes of the scale tensor (fp32/bf16/e4m3/ue8m0)
  float tensor_scale = 1.0f;    // fp8_per_tensor and nvfp4 only

  size_t nbytes() const { return codes.size() + scales.size() + sizeof(float); }
};

// Quantizes a row-major [rows, cols] fp32 matrix. Every x / s below is one fp32 division,
// then the round-to-nearest-even, saturating encoder of formats.h. Scale choices:
//   fp8_per_tensor: tensor_scale = amax/448 (1 if that is 0).
//   fp8_block128:   scale = amax(block)/448 per 128x128 block (1 if that is 0). When N % 128 != 0
//                   the last row block has N % 128 rows and its amax covers only those.
//   mxfp4:          OCP MX: shared exponent = floor(log2(amax(block))) - 2 (emax of e2m1),
//                   clamped to [-127, 127], stored as ue8m0 code exponent + 127; elements =
//                   e2m1(x / 2^exp) (saturating: |x| / 2^exp < 8, so 6 < |x| / 2^exp clips to 6).
//                   An all-zero block takes the clamp, exponent -127 (code 0): the smallest code,
//                   which decodes the zeros exactly (so does an fp32-subnormal amax).
//   nvfp4:          tensor_scale = amax(tensor) / (448 * 6) (1 if that is 0, e.g. a zero tensor);
//                   block scale = e4m3((amax(block) / 6) / tensor_scale); elements =
//                   e2m1(x / (block scale * tensor_scale)), all +-0 when that product is 0.
//   int4:           scale = bf16(amax(group) / 7) (1 if that is 0); elements =
//                   clamp(round_half_even(x / scale), -8, 7).
// Dequantization is code * scale, for nvfp4 (code * block scale) * tensor_scale (the first
// product is exact, so there is one rounding).
// Throws servekit::Error if rows or cols < 0, cols is not a multiple of the format's block,
// w is null (unless rows * cols == 0), group_size is invalid, or a weight is not finite (the
// message names its [row, col]).
QuantizedMatrix quantize_weight(const QuantConfig& q, const float* w, int64_t rows, int64_t cols);

// Dequantizes rows [row_begin, row_end) into out (row-major, cols wide). Throws
// servekit::Error if the row range is outside [0, rows], the code/scale byte counts do not match
// the table for [rows, cols], or out is null (with a non-empty range).
void dequantize_rows(const QuantizedMatrix& m, int64_t row_begin, int64_t row_end, float* out);

// Simulates the activation quantization of the method in place on a row-major [rows, cols]
// buffer: quantize then dequantize (bf16 rounding for the a16 methods). The fp8 methods use
// x -> e4m3(x / s) * s with s = amax/448 (1 if that is 0); for fp8_per_tensor amax is over the
// whole buffer, for fp8_block128 and mxfp4_w4a8 over each row's 128-column slice. A NaN or inf
// in a scale block makes its scale NaN, so the whole block comes back NaN (bf16 rounding keeps
// NaN and inf as they are). Throws servekit::Error if rows or cols < 0, cols is not a multiple
// of activation_k_block, or x is null (unless rows * cols == 0).
void fake_quantize_activations(QuantMethod m, float* x, int64_t rows, int64_t cols);

// Activation quantizers (the real ones, for kernels that consume fp8 + scales), with the scale
// rules of fake_quantize_activations: decoded code * scale is exactly what it computes. Same
// errors; pointers may be null only when rows * cols == 0.
// fp8 per tensor: codes [rows, cols] e4m3, returns the scale (amax/448, 1 if all zero).
float quantize_act_fp8_per_tensor(const float* x, int64_t rows, int64_t cols, uint8_t* codes);
// fp8 1x128: codes [rows, cols] e4m3, scales [rows, cols/128] fp32. cols % 128 == 0.
void quantize_act_fp8_block128(const float* x, int64_t rows, int64_t cols, uint8_t* codes,
                               float* scales);

}  // namespace servekit
