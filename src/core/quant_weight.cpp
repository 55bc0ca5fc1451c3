// Weight quantizers and dequantizers of quant.h, in the plain host layouts of its table.
// Dequantization runs on every CPU MoE forward for every touched expert, so its loops use decode
// tables and pick the method once per call, never per element.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/minifloat.h"
#include "core/quant_common.h"
#include "servekit/quant.h"

namespace servekit {
namespace {

static_assert(std::endian::native == std::endian::little,
              "scale and bf16 bytes are stored in host order, which must be little-endian");

// nvfp4's tensor scale maps the tensor amax to the largest e4m3 block scale times the largest
// e2m1 code.
constexpr float kNVFP4TensorRange = kE4M3Max * kE2M1Max;  // 2688

// Bytes of the codes and scales of a [rows, cols] matrix (cols a multiple of the block).
std::pair<size_t, size_t> storage_bytes(QuantMethod m, int group, int64_t rows, int64_t cols) {
  const auto n = static_cast<size_t>(rows * cols);
  const auto r = static_cast<size_t>(rows);
  switch (m) {
    case QuantMethod::kBF16:
      return {2 * n, 0};
    case QuantMethod::kFP8PerTensor:
      return {n, 0};
    case QuantMethod::kFP8Block128: {
      const auto row_blocks = static_cast<size_t>((rows + kFP8BlockSize - 1) / kFP8BlockSize);
      return {n, row_blocks * static_cast<size_t>(cols / kFP8BlockSize) * sizeof(float)};
    }
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      return {n / 2, r * static_cast<size_t>(cols / kMXFP4BlockSize)};
    case QuantMethod::kNVFP4W4A16:
      return {n / 2, r * static_cast<size_t>(cols / kNVFP4BlockSize)};
    case QuantMethod::kInt4W4A16:
      return {n / 2, r * static_cast<size_t>(cols / group) * 2};
  }
  return {0, 0};
}

void check_shape(const char* fn, const QuantConfig& q, int64_t rows, int64_t cols) {
  validate_quant_config(q);
  SERVEKIT_CHECK(rows >= 0, fn, ": rows=", rows, " must be >= 0");
  SERVEKIT_CHECK(cols >= 0, fn, ": cols=", cols, " must be >= 0");
  const int block = weight_k_block(q);
  SERVEKIT_CHECK(cols % block == 0, fn, ": cols=", cols, " must be a multiple of ", block,
                 " (the column block of quant ", quant_name(q.method), ")");
}

[[noreturn]] void fail_non_finite(const float* w, int64_t rows, int64_t cols) {
  const int64_t i = std::find_if(w, w + rows * cols, [](float v) { return !std::isfinite(v); }) - w;
  SERVEKIT_FAIL("quantize_weight: w[", i / cols, ", ", i % cols, "]=", w[i],
                " is not finite; weights must be finite");
}

void store_f32(std::vector<uint8_t>& bytes, const std::vector<float>& v) {
  bytes.resize(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
}

// ---- encode / decode loops -------------------------------------------------------------------
// Kept simple so that GCC vectorizes the encoders (SSE2 baseline) and keeps the table decoders
// scalar: on a plain per-byte loop it emits emulated gathers that ran 3x slower than scalar.

void encode_e4m3_scaled(const float* x, int64_t n, float s, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = mf::encode_e4m3(x[i] / s);
}

// Encodes a block of N values with enc (fp32 -> 4-bit code) and packs them two per byte, low
// nibble first.
template <int N, typename Enc>
void encode_nibbles(const float* x, uint8_t* out, Enc enc) {
  uint8_t codes[N];
  for (int i = 0; i < N; ++i) codes[i] = enc(x[i]);
  for (int j = 0; j < N / 2; ++j) out[j] = pack_nibbles(codes[2 * j], codes[2 * j + 1]);
}

// out[i] = table[code i] * s for n values (n % 16 == 0), 16 codes per little-endian 64-bit word,
// element 0 in the lowest nibble.
void decode_nibbles(const uint8_t* c, int64_t n, const float* table, float s, float* out) {
  for (int64_t j = 0; j < n; j += 16) {
    uint64_t w;
    std::memcpy(&w, c + j / 2, sizeof(w));
    for (int k = 0; k < 16; ++k, w >>= 4) out[j + k] = table[w & 0xF] * s;
  }
}

// out[i] = table[c[i]] * s for n values, 8 codes per 64-bit word.
void decode_bytes(const uint8_t* c, int64_t n, const float* table, float s, float* out) {
  const int64_t n8 = n - n % 8;
  for (int64_t j = 0; j < n8; j += 8) {
    uint64_t w;
    std::memcpy(&w, c + j, sizeof(w));
    for (int k = 0; k < 8; ++k, w >>= 8) out[j + k] = table[w & 0xFF] * s;
  }
  for (int64_t j = n8; j < n; ++j) out[j] = table[c[j]] * s;
}

// ---- quantizers: one per method, m.codes / m.scales / m.tensor_scale out ----------------------

void quantize_bf16(const float* w, QuantizedMatrix& m) {
  const int64_t n = m.rows * m.cols;
  if (std::isnan(amax_or_nan(w, n))) fail_non_finite(w, m.rows, m.cols);
  m.codes.resize(2 * static_cast<size_t>(n));
  uint8_t* out = m.codes.data();
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = mf::encode_bf16(w[i]);
    out[2 * i] = static_cast<uint8_t>(h & 0xFF);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

void quantize_fp8_per_tensor(const float* w, QuantizedMatrix& m) {
  const int64_t n = m.rows * m.cols;
  const float amax = amax_or_nan(w, n);
  if (std::isnan(amax)) fail_non_finite(w, m.rows, m.cols);
  m.tensor_scale = fp8_scale(amax);
  m.codes.resize(static_cast<size_t>(n));
  encode_e4m3_scaled(w, n, m.tensor_scale, m.codes.data());
}

void quantize_fp8_block128(const float* w, QuantizedMatrix& m) {
  const int64_t rows = m.rows, cols = m.cols, kb = cols / kFP8BlockSize;
  const int64_t row_blocks = (rows + kFP8BlockSize - 1) / kFP8BlockSize;
  std::vector<float> scales(static_cast<size_t>(row_blocks * kb), 0.0f);
  m.codes.resize(static_cast<size_t>(rows * cols));
  for (int64_t rb = 0; rb < row_blocks; ++rb) {
    // The last row block may be partial: its amax covers only the rows that exist.
    const int64_t r0 = rb * kFP8BlockSize, r1 = std::min(rows, r0 + kFP8BlockSize);
    float* s = scales.data() + rb * kb;  // the amax first, then the scale
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t cb = 0; cb < kb; ++cb) {
        const float a = amax_or_nan(w + r * cols + cb * kFP8BlockSize, kFP8BlockSize);
        if (std::isnan(a)) fail_non_finite(w, rows, cols);
        s[cb] = std::max(s[cb], a);
      }
    for (int64_t cb = 0; cb < kb; ++cb) s[cb] = fp8_scale(s[cb]);
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t cb = 0; cb < kb; ++cb) {
        const int64_t off = r * cols + cb * kFP8BlockSize;
        encode_e4m3_scaled(w + off, kFP8BlockSize, s[cb], m.codes.data() + off);
      }
  }
  store_f32(m.scales, scales);
}

// OCP MX v1.0 shared exponent of a block: floor(log2(amax)) - emax(e2m1) = ... - 2, clamped to
// the ue8m0 range [-127, 127]. amax == 0 (and fp32-subnormal amax, whose floor(log2) is below
// -126) lands on the clamp -127, code 0: the smallest code, and it decodes zeros exactly.
int mx_shared_exponent(float amax) {
  const int e = static_cast<int>(mf::bits_of(amax) >> 23);  // amax >= 0 and finite
  return e == 0 ? -127 : std::clamp(e - 127 - 2, -127, 127);
}

void quantize_mxfp4(const float* w, QuantizedMatrix& m) {
  const int64_t blocks = m.rows * (m.cols / kMXFP4BlockSize);
  m.codes.resize(static_cast<size_t>(m.rows * m.cols / 2));
  m.scales.resize(static_cast<size_t>(blocks));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const float* x = w + blk * kMXFP4BlockSize;
    const float amax = amax_or_nan(x, kMXFP4BlockSize);
    if (std::isnan(amax)) fail_non_finite(w, m.rows, m.cols);
    const int exp = mx_shared_exponent(amax);
    m.scales[blk] = static_cast<uint8_t>(exp + 127);
    // x / 2^exp as x * 2^-exp: the same correctly rounded result, since 2^-exp is an exact
    // normal fp32 power of two (a finite amax < 2^128 keeps exp <= 125, so -exp >= -125).
    const float inv = mf::pow2(-exp);
    encode_nibbles<kMXFP4BlockSize>(x, m.codes.data() + blk * (kMXFP4BlockSize / 2),
                                    [inv](float v) { return mf::encode_e2m1(v * inv); });
  }
}

void quantize_nvfp4(const float* w, QuantizedMatrix& m) {
  const int64_t blocks = m.rows * (m.cols / kNVFP4BlockSize);
  const float amax_t = amax_or_nan(w, m.rows * m.cols);
  if (std::isnan(amax_t)) fail_non_finite(w, m.rows, m.cols);
  const float ts = amax_t / kNVFP4TensorRange;
  m.tensor_scale = ts == 0.0f ? 1.0f : ts;
  m.codes.resize(static_cast<size_t>(m.rows * m.cols / 2));
  m.scales.resize(static_cast<size_t>(blocks));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const float* x = w + blk * kNVFP4BlockSize;
    const float amax = amax_or_nan(x, kNVFP4BlockSize);
    const uint8_t bs_code = mf::encode_e4m3(amax / kE2M1Max / m.tensor_scale);
    m.scales[blk] = bs_code;
    // A scale product of 0 (the e4m3 block scale rounds to 0 when the block amax is below
    // ~2.2e-6 of the tensor's) must give zero codes, not x / 0: dividing by inf does that.
    const float denom = mf::kE4M3Table[bs_code] * m.tensor_scale;
    const float div = denom == 0.0f ? std::numeric_limits<float>::infinity() : denom;
    encode_nibbles<kNVFP4BlockSize>(x, m.codes.data() + blk * (kNVFP4BlockSize / 2),
                                    [div](float v) { return mf::encode_e2m1(v / div); });
  }
}

template <int G>
void quantize_int4_groups(const float* w, QuantizedMatrix& m) {
  const int64_t groups = m.rows * (m.cols / G);
  m.codes.resize(static_cast<size_t>(m.rows * m.cols / 2));
  m.scales.resize(static_cast<size_t>(groups * 2));
  for (int64_t grp = 0; grp < groups; ++grp) {
    const float* x = w + grp * G;
    const float amax = amax_or_nan(x, G);
    if (std::isnan(amax)) fail_non_finite(w, m.rows, m.cols);
    uint16_t sb = mf::encode_bf16(amax / 7.0f);
    // A zero scale (all-zero group, or amax / 7 below the bf16 range) becomes 1, as for fp8:
    // the codes are then round(x) = 0.
    if (mf::decode_bf16(sb) == 0.0f) sb = mf::encode_bf16(1.0f);
    const float s = mf::decode_bf16(sb);
    m.scales[2 * grp] = static_cast<uint8_t>(sb & 0xFF);
    m.scales[2 * grp + 1] = static_cast<uint8_t>(sb >> 8);
    encode_nibbles<G>(x, m.codes.data() + grp * (G / 2),
                      [s](float v) { return mf::encode_int4(v / s); });
  }
}

void quantize_int4(const float* w, QuantizedMatrix& m) {
  switch (m.group_size) {
    case 32:
      quantize_int4_groups<32>(w, m);
      return;
    case 64:
      quantize_int4_groups<64>(w, m);
      return;
    default:
      quantize_int4_groups<128>(w, m);
      return;  // validated: 32, 64 or 128
  }
}

// ---- dequantizers: rows [r0, r1) of m into out -------------------------------------------------

void dequant_bf16(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  const uint8_t* c = m.codes.data() + 2 * r0 * m.cols;
  const int64_t n = (r1 - r0) * m.cols;
  for (int64_t i = 0; i < n; ++i)
    out[i] = mf::decode_bf16(static_cast<uint16_t>(c[2 * i] | (c[2 * i + 1] << 8)));
}

void dequant_fp8_per_tensor(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  decode_bytes(m.codes.data() + r0 * m.cols, (r1 - r0) * m.cols, mf::kE4M3Table.data(),
               m.tensor_scale, out);
}

void dequant_fp8_block128(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  const int64_t cols = m.cols, kb = cols / kFP8BlockSize;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* srow = m.scales.data() + (r / kFP8BlockSize) * kb * sizeof(float);
    for (int64_t cb = 0; cb < kb; ++cb) {
      float s;
      std::memcpy(&s, srow + cb * sizeof(float), sizeof(float));
      const int64_t off = cb * kFP8BlockSize;
      decode_bytes(m.codes.data() + r * cols + off, kFP8BlockSize, mf::kE4M3Table.data(), s,
                   out + (r - r0) * cols + off);
    }
  }
}

void dequant_mxfp4(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  const int64_t kb = m.cols / kMXFP4BlockSize, b0 = r0 * kb, b1 = r1 * kb;
  for (int64_t blk = b0; blk < b1; ++blk)
    decode_nibbles(m.codes.data() + blk * (kMXFP4BlockSize / 2), kMXFP4BlockSize,
                   mf::kE2M1Table.data(), mf::decode_ue8m0(m.scales[blk]),
                   out + (blk - b0) * kMXFP4BlockSize);
}

void dequant_nvfp4(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  // (code * block scale) is exact (a 2-bit by 4-bit significand product), so one rounding
  // happens, at the tensor scale: the order the GPU kernels use when they apply the tensor
  // scale in the epilogue. The table is scaled per block, 16 products for 16 outputs.
  const int64_t kb = m.cols / kNVFP4BlockSize, b0 = r0 * kb, b1 = r1 * kb;
  for (int64_t blk = b0; blk < b1; ++blk) {
    const float bs = mf::kE4M3Table[m.scales[blk]];
    std::array<float, 16> lut;
    for (size_t i = 0; i < lut.size(); ++i) lut[i] = mf::kE2M1Table[i] * bs;
    decode_nibbles(m.codes.data() + blk * (kNVFP4BlockSize / 2), kNVFP4BlockSize, lut.data(),
                   m.tensor_scale, out + (blk - b0) * kNVFP4BlockSize);
  }
}

void dequant_int4(const QuantizedMatrix& m, int64_t r0, int64_t r1, float* out) {
  const int64_t g = m.group_size, kb = m.cols / g, b0 = r0 * kb, b1 = r1 * kb;
  for (int64_t grp = b0; grp < b1; ++grp) {
    const float s =
        mf::decode_bf16(static_cast<uint16_t>(m.scales[2 * grp] | (m.scales[2 * grp + 1] << 8)));
    decode_nibbles(m.codes.data() + grp * (g / 2), g, mf::kInt4Table.data(), s,
                   out + (grp - b0) * g);
  }
}

}  // namespace

QuantizedMatrix quantize_weight(const QuantConfig& q, const float* w, int64_t rows, int64_t cols) {
  check_shape("quantize_weight", q, rows, cols);
  SERVEKIT_CHECK(w != nullptr || rows * cols == 0, "quantize_weight: w is null for a [", rows, ", ",
                 cols, "] matrix");
  QuantizedMatrix m;
  m.method = q.method;
  m.group_size = q.group_size;
  m.rows = rows;
  m.cols = cols;
  switch (q.method) {
    case QuantMethod::kBF16:
      quantize_bf16(w, m);
      break;
    case QuantMethod::kFP8PerTensor:
      quantize_fp8_per_tensor(w, m);
      break;
    case QuantMethod::kFP8Block128:
      quantize_fp8_block128(w, m);
      break;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      quantize_mxfp4(w, m);
      break;
    case QuantMethod::kNVFP4W4A16:
      quantize_nvfp4(w, m);
      break;
    case QuantMethod::kInt4W4A16:
      quantize_int4(w, m);
      break;
  }
  return m;
}

void dequantize_rows(const QuantizedMatrix& m, int64_t row_begin, int64_t row_end, float* out) {
  check_shape("dequantize_rows", QuantConfig{m.method, m.group_size}, m.rows, m.cols);
  const auto [code_bytes, scale_bytes] = storage_bytes(m.method, m.group_size, m.rows, m.cols);
  SERVEKIT_CHECK(m.codes.size() == code_bytes && m.scales.size() == scale_bytes,
                 "dequantize_rows: a [", m.rows, ", ", m.cols, "] ", quant_name(m.method),
                 " matrix needs ", code_bytes, " code bytes and ", scale_bytes,
                 " scale bytes, got ", m.codes.size(), " and ", m.scales.size());
  SERVEKIT_CHECK(0 <= row_begin && row_begin <= row_end && row_end <= m.rows,
                 "dequantize_rows: rows [", row_begin, ", ", row_end,
                 ") must satisfy 0 <= row_begin <= row_end <= rows=", m.rows);
  if (row_begin == row_end || m.cols == 0) return;
  SERVEKIT_CHECK(out != nullptr, "dequantize_rows: out is null");
  switch (m.method) {
    case QuantMethod::kBF16:
      dequant_bf16(m, row_begin, row_end, out);
      return;
    case QuantMethod::kFP8PerTensor:
      dequant_fp8_per_tensor(m, row_begin, row_end, out);
      return;
    case QuantMethod::kFP8Block128:
      dequant_fp8_block128(m, row_begin, row_end, out);
      return;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      dequant_mxfp4(m, row_begin, row_end, out);
      return;
    case QuantMethod::kNVFP4W4A16:
      dequant_nvfp4(m, row_begin, row_end, out);
      return;
    case QuantMethod::kInt4W4A16:
      dequant_int4(m, row_begin, row_end, out);
      return;
  }
}

}  // namespace servekit
