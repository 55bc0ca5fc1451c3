// Quantization methods: names, blocks, and the activation quantizers. The weight quantizers are
// in quant_weight.cpp; the scale rules shared by both are in quant_common.h.
#include "servekit/quant.h"

#include <array>
#include <string>

#include "core/minifloat.h"
#include "core/quant_common.h"
#include "servekit/error.h"

namespace servekit {
namespace {

constexpr std::array<std::string_view, 7> kQuantNames = {
    "bf16",       "fp8_per_tensor", "fp8_block128", "mxfp4_w4a16",
    "mxfp4_w4a8", "nvfp4_w4a16",    "int4_w4a16"};

std::string valid_quant_names() {
  std::string s;
  for (std::string_view n : kQuantNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

// Activation shape checks shared by the fake and real quantizers.
void check_act_args(const char* fn, QuantMethod m, const void* x, int64_t rows, int64_t cols,
                    const void* out, const char* out_name) {
  SERVEKIT_CHECK(rows >= 0, fn, ": rows=", rows, " must be >= 0");
  SERVEKIT_CHECK(cols >= 0, fn, ": cols=", cols, " must be >= 0");
  const int block = activation_k_block(QuantConfig{m, 128});
  SERVEKIT_CHECK(cols % block == 0, fn, ": cols=", cols, " must be a multiple of ", block,
                 " (the activation block of quant ", quant_name(m), ")");
  if (rows * cols == 0) return;
  SERVEKIT_CHECK(x != nullptr, fn, ": x is null for a [", rows, ", ", cols, "] input");
  SERVEKIT_CHECK(out != nullptr, fn, ": ", out_name, " is null for a [", rows, ", ", cols,
                 "] input");
}

// x <- e4m3(x / s) * s over n values.
void fake_fp8(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] = mf::kE4M3Table[mf::encode_e4m3(x[i] / s)] * s;
}

void encode_fp8(const float* x, int64_t n, float s, uint8_t* codes) {
  for (int64_t i = 0; i < n; ++i) codes[i] = mf::encode_e4m3(x[i] / s);
}

}  // namespace

std::string_view quant_name(QuantMethod m) {
  return kQuantNames[quant_index(m)];
}

QuantMethod parse_quant(std::string_view name) {
  for (QuantMethod m : all_quant_methods())
    if (quant_name(m) == name) return m;
  SERVEKIT_FAIL("quant: unknown method '", name, "' (valid: ", valid_quant_names(), ")");
}

const std::vector<QuantMethod>& all_quant_methods() {
  static const std::vector<QuantMethod> all = {
      QuantMethod::kBF16,       QuantMethod::kFP8PerTensor, QuantMethod::kFP8Block128,
      QuantMethod::kMXFP4W4A16, QuantMethod::kMXFP4W4A8,    QuantMethod::kNVFP4W4A16,
      QuantMethod::kInt4W4A16};
  return all;
}

void validate_quant_config(const QuantConfig& q) {
  quant_index(q.method);
  if (q.method != QuantMethod::kInt4W4A16) return;  // group_size is ignored by the others
  SERVEKIT_CHECK(q.group_size == 32 || q.group_size == 64 || q.group_size == 128,
                 "quant int4_w4a16: group_size=", q.group_size, " must be 32, 64 or 128");
}

int weight_k_block(const QuantConfig& q) {
  validate_quant_config(q);
  switch (q.method) {
    case QuantMethod::kBF16:
    case QuantMethod::kFP8PerTensor:
      return 1;
    case QuantMethod::kFP8Block128:
      return kFP8BlockSize;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      return kMXFP4BlockSize;
    case QuantMethod::kNVFP4W4A16:
      return kNVFP4BlockSize;
    case QuantMethod::kInt4W4A16:
      return q.group_size;
  }
  return 1;  // unreachable: validate_quant_config rejects other values
}

int activation_k_block(const QuantConfig& q) {
  quant_index(q.method);
  return (q.method == QuantMethod::kFP8Block128 || q.method == QuantMethod::kMXFP4W4A8)
             ? kFP8BlockSize
             : 1;
}

bool quantizes_activations(QuantMethod m) {
  quant_index(m);
  return m == QuantMethod::kFP8PerTensor || m == QuantMethod::kFP8Block128 ||
         m == QuantMethod::kMXFP4W4A8;
}

void fake_quantize_activations(QuantMethod m, float* x, int64_t rows, int64_t cols) {
  check_act_args("fake_quantize_activations", m, x, rows, cols, x, "x");
  const int64_t n = rows * cols;
  switch (m) {
    case QuantMethod::kBF16:
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kNVFP4W4A16:
    case QuantMethod::kInt4W4A16:
      for (int64_t i = 0; i < n; ++i) x[i] = mf::decode_bf16(mf::encode_bf16(x[i]));
      return;
    case QuantMethod::kFP8PerTensor:
      fake_fp8(x, n, fp8_scale(amax_or_nan(x, n)));
      return;
    case QuantMethod::kFP8Block128:
    case QuantMethod::kMXFP4W4A8:
      for (int64_t i = 0; i < n; i += kFP8BlockSize)
        fake_fp8(x + i, kFP8BlockSize, fp8_scale(amax_or_nan(x + i, kFP8BlockSize)));
      return;
  }
}

float quantize_act_fp8_per_tensor(const float* x, int64_t rows, int64_t cols, uint8_t* codes) {
  check_act_args("quantize_act_fp8_per_tensor", QuantMethod::kFP8PerTensor, x, rows, cols, codes,
                 "codes");
  const int64_t n = rows * cols;
  const float s = fp8_scale(amax_or_nan(x, n));
  encode_fp8(x, n, s, codes);
  return s;
}

void quantize_act_fp8_block128(const float* x, int64_t rows, int64_t cols, uint8_t* codes,
                               float* scales) {
  check_act_args("quantize_act_fp8_block128", QuantMethod::kFP8Block128, x, rows, cols, codes,
                 "codes");
  check_act_args("quantize_act_fp8_block128", QuantMethod::kFP8Block128, x, rows, cols, scales,
                 "scales");
  const int64_t n = rows * cols;
  // A row is a whole number of 128-blocks, so the blocks of the flat buffer are the 1x128
  // slices, and block b's scale lands at scales[b] = [row, col / 128].
  for (int64_t i = 0; i < n; i += kFP8BlockSize) {
    const float s = fp8_scale(amax_or_nan(x + i, kFP8BlockSize));
    scales[i / kFP8BlockSize] = s;
    encode_fp8(x + i, kFP8BlockSize, s, codes + i);
  }
}

}  // namespace servekit
