// Quantization methods (quant.h): names and blocks, the scale rules on hand-made blocks, every
// element of random matrices against a reference built from the rules and the scalar formats
// (formats.h, tested exhaustively in test_formats.cpp), relative-L2 bounds, errors, and the
// activation quantizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> randn(uint32_t seed, int64_t n, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0, n = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    e += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    n += double(want[i]) * want[i];
  }
  return std::sqrt(e / n);
}

// All rows, into a buffer poisoned with NaN so that an element left unwritten shows.
std::vector<float> dequant_all(const QuantizedMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols), kNaN);
  dequantize_rows(m, 0, m.rows, out.data());
  return out;
}

float amax_of(const float* x, int64_t n) {
  float a = 0;
  for (int64_t i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

float f32_at(const std::vector<uint8_t>& bytes, size_t i) {
  float v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}
uint16_t u16_at(const std::vector<uint8_t>& bytes, size_t i) {
  return static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
}

float e4m3_round(float y) {
  return e4m3_to_float(float_to_e4m3(y));
}
float e2m1_round(float y) {
  return e2m1_to_float(float_to_e2m1(y));
}

// The expected dequantized matrix, built from quant.h's scale rules with the scalar formats,
// checking the stored scales on the way. MX exponents come from frexp, not bit tricks.
std::vector<float> reference_dequant(const QuantConfig& q, const std::vector<float>& w,
                                     int64_t rows, int64_t cols, const QuantizedMatrix& m) {
  std::vector<float> out(w.size());
  const auto n = static_cast<int64_t>(w.size());
  switch (q.method) {
    case QuantMethod::kBF16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(float_to_bf16(w[i]));
      break;
    case QuantMethod::kFP8PerTensor: {
      const float s = amax_of(w.data(), n) / 448.0f;
      EXPECT_EQ(m.tensor_scale, s);
      for (int64_t i = 0; i < n; ++i) out[i] = e4m3_round(w[i] / s) * s;
      break;
    }
    case QuantMethod::kFP8Block128:
      for (int64_t rb = 0; rb * 128 < rows; ++rb)
        for (int64_t cb = 0; cb < cols / 128; ++cb) {
          float a = 0;
          for (int64_t r = rb * 128; r < std::min(rows, rb * 128 + 128); ++r)
            a = std::max(a, amax_of(&w[r * cols + cb * 128], 128));
          const float s = a / 448.0f;
          EXPECT_EQ(f32_at(m.scales, rb * (cols / 128) + cb), s) << rb << "," << cb;
          for (int64_t r = rb * 128; r < std::min(rows, rb * 128 + 128); ++r)
            for (int64_t c = cb * 128; c < cb * 128 + 128; ++c)
              out[r * cols + c] = e4m3_round(w[r * cols + c] / s) * s;
        }
      break;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      for (int64_t b = 0; b < n / 32; ++b) {
        int e2;
        std::frexp(amax_of(&w[b * 32], 32), &e2);  // amax = f * 2^e2, f in [0.5, 1)
        const int exp = std::clamp(e2 - 1 - 2, -127, 127);
        EXPECT_EQ(m.scales[b], exp + 127) << "block " << b;
        for (int64_t i = b * 32; i < b * 32 + 32; ++i)
          out[i] = e2m1_round(std::ldexp(w[i], -exp)) * std::ldexp(1.0f, exp);
      }
      break;
    case QuantMethod::kNVFP4W4A16: {
      const float ts = amax_of(w.data(), n) / (448.0f * 6.0f);
      EXPECT_EQ(m.tensor_scale, ts);
      for (int64_t b = 0; b < n / 16; ++b) {
        const float bs = e4m3_round(amax_of(&w[b * 16], 16) / 6.0f / ts);
        EXPECT_EQ(e4m3_to_float(m.scales[b]), bs) << "block " << b;
        for (int64_t i = b * 16; i < b * 16 + 16; ++i)
          out[i] = (e2m1_round(w[i] / (bs * ts)) * bs) * ts;
      }
      break;
    }
    case QuantMethod::kInt4W4A16: {
      const int g = q.group_size;
      for (int64_t b = 0; b < n / g; ++b) {
        const float s = bf16_to_float(float_to_bf16(amax_of(&w[b * g], g) / 7.0f));
        EXPECT_EQ(bf16_to_float(u16_at(m.scales, b)), s) << "group " << b;
        for (int64_t i = b * g; i < b * g + g; ++i)
          out[i] = static_cast<float>(int4_to_int(float_to_int4(w[i] / s))) * s;
      }
      break;
    }
  }
  return out;
}

// Relative-L2 bounds for N(0, 1) weights. Round to nearest leaves an error spread evenly over
// +-ulp/2, RMS ulp/sqrt(12), and ulp <= 2^-p |x| with p explicit mantissa bits, so a float
// format's relative RMS error is at most 2^-p / sqrt(12): bf16 (p = 7) 0.00226, e4m3 (p = 3)
// 0.0361, e2m1 (p = 1) 0.144 (its few subnormal and saturated elements, < 1/8 and > 6/8 of a
// block's range, do not change that at this precision: measured 0.095 nvfp4, 0.115 mxfp4).
// int4 has a uniform step s = amax/7, RMS error s/sqrt(12), and E[amax] of G samples of
// |N(0, 1)| is at most sqrt(2 ln 2G): bound sqrt(2 ln 2G) / (7 sqrt(12)) = 0.119, 0.128, 0.137
// for G = 32, 64, 128 (measured 0.097, 0.107, 0.117). Truncating instead of rounding doubles the
// error and fails every bound.
double rel_l2_bound(const QuantConfig& q) {
  const double sqrt12 = std::sqrt(12.0);
  switch (q.method) {
    case QuantMethod::kBF16:
      return std::ldexp(1.0, -7) / sqrt12;
    case QuantMethod::kFP8PerTensor:
    case QuantMethod::kFP8Block128:
      return std::ldexp(1.0, -3) / sqrt12;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
    case QuantMethod::kNVFP4W4A16:
      return std::ldexp(1.0, -1) / sqrt12;
    case QuantMethod::kInt4W4A16:
      return std::sqrt(2 * std::log(2.0 * q.group_size)) / (7 * sqrt12);
  }
  return 0;
}

std::vector<QuantConfig> all_configs() {
  std::vector<QuantConfig> qs;
  for (QuantMethod m : all_quant_methods())
    if (m == QuantMethod::kInt4W4A16)
      for (int g : {32, 64, 128}) qs.push_back({m, g});
    else
      qs.push_back({m, 128});
  return qs;
}

std::string label(const QuantConfig& q) {
  return std::string(quant_name(q.method)) + " g" + std::to_string(q.group_size);
}

// ---- names and blocks --------------------------------------------------------------------------

TEST(Quant, NamesRoundTrip) {
  const char* names[] = {"bf16",       "fp8_per_tensor", "fp8_block128", "mxfp4_w4a16",
                         "mxfp4_w4a8", "nvfp4_w4a16",    "int4_w4a16"};
  ASSERT_EQ(all_quant_methods().size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(static_cast<size_t>(all_quant_methods()[i]), i);
    EXPECT_EQ(quant_name(all_quant_methods()[i]), names[i]);
    EXPECT_EQ(parse_quant(names[i]), all_quant_methods()[i]);
  }
  try {
    parse_quant("fp4");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp4'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int4_w4a16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quant_name(static_cast<QuantMethod>(7)), Error);
  EXPECT_THROW(validate_quant_config({static_cast<QuantMethod>(200), 128}), Error);
}

TEST(Quant, BlocksAndActivationFlags) {
  using M = QuantMethod;
  const int wblock[] = {1, 1, 128, 32, 32, 16, 64};  // int4 with group 64
  const int ablock[] = {1, 1, 128, 1, 128, 1, 1};
  const bool acts[] = {false, true, true, false, true, false, false};
  for (size_t i = 0; i < 7; ++i) {
    const QuantConfig q{all_quant_methods()[i], 64};
    EXPECT_EQ(weight_k_block(q), wblock[i]) << label(q);
    EXPECT_EQ(activation_k_block(q), ablock[i]) << label(q);
    EXPECT_EQ(quantizes_activations(q.method), acts[i]) << label(q);
  }
  for (int g : {32, 64, 128}) EXPECT_NO_THROW(validate_quant_config({M::kInt4W4A16, g}));
  for (int g : {0, 16, 48, 96, 256, -32}) {
    EXPECT_THROW(validate_quant_config({M::kInt4W4A16, g}), Error) << g;
    EXPECT_THROW(weight_k_block({M::kInt4W4A16, g}), Error) << g;
  }
  EXPECT_NO_THROW(validate_quant_config({M::kFP8Block128, 48}));  // ignored outside int4
}

// ---- scale rules on hand-made blocks -----------------------------------------------------------

TEST(Quant, MXFP4ScalesByHand) {
  std::vector<float> w(4 * 32, 0.0f);
  // Block 0: amax 5 -> exponent floor(log2 5) - 2 = 0, code 127; elements e2m1(x / 1).
  w[0] = 5.0f;   // tie between 4 (code 6) and 6 (code 7): even code 6
  w[1] = -1.2f;  // nearest 1.0: code 0x8 | 2
  w[2] = 0.3f;   // nearest 0.5: code 1
  w[3] = 2.6f;   // nearest 3: code 5
  // Block 1: amax 0.75 -> floor(log2 0.75) - 2 = -3, code 124; elements e2m1(8 x).
  w[32] = 0.75f;  // 6: code 7
  w[33] = 0.1f;   // 0.8 -> 1.0: code 2
  w[34] = -0.3f;  // -2.4 -> -2: code 0xC
  // Block 2 all zero: the clamp, exponent -127, code 0.
  // Block 3: amax 7.5 -> floor(log2 7.5) - 2 = 0; 7.5 saturates to 6 (code 7).
  w[96] = 7.5f;
  w[97] = -6.9f;  // saturates to -6: code 0xF
  const QuantizedMatrix m = quantize_weight({QuantMethod::kMXFP4W4A16, 128}, w.data(), 1, 128);
  ASSERT_EQ(m.scales.size(), 4u);
  ASSERT_EQ(m.codes.size(), 64u);
  EXPECT_EQ(m.scales[0], 127);
  EXPECT_EQ(m.scales[1], 124);
  EXPECT_EQ(m.scales[2], 0);
  EXPECT_EQ(m.scales[3], 127);
  EXPECT_EQ(m.codes[0], pack_nibbles(6, 0xA));
  EXPECT_EQ(m.codes[1], pack_nibbles(1, 5));
  EXPECT_EQ(m.codes[16], pack_nibbles(7, 2));
  EXPECT_EQ(m.codes[17], pack_nibbles(0xC, 0));
  EXPECT_EQ(m.codes[48], pack_nibbles(7, 0xF));
  for (int j = 0; j < 16; ++j) EXPECT_EQ(m.codes[32 + j], 0) << j;
  const std::vector<float> d = dequant_all(m);
  EXPECT_EQ(d[0], 4.0f);
  EXPECT_EQ(d[1], -1.0f);
  EXPECT_EQ(d[33], 1.0f / 8);
  EXPECT_EQ(d[34], -2.0f / 8);
  EXPECT_EQ(d[97], -6.0f);
  for (int i = 64; i < 96; ++i) EXPECT_EQ(d[i], 0.0f);
}

TEST(Quant, FP8PerTensorByHand) {
  // amax 3.5 -> scale 3.5 / 448 = 2^-7 exactly, so codes are e4m3(128 x).
  const float w[6] = {3.5f, 1.0f, 0.01f, -2.0f, -3.5f, 0.5f};
  const QuantizedMatrix m = quantize_weight({QuantMethod::kFP8PerTensor, 128}, w, 2, 3);
  EXPECT_EQ(m.tensor_scale, std::ldexp(1.0f, -7));
  EXPECT_TRUE(m.scales.empty());
  // 448: 0x7E; 128 = 2^7: exponent field 14, 0x70; 1.28 -> 1.25 = 2^0 * 1.01b: 0x3A;
  // -256 = -2^8: 0x80 | 0x78; 64 = 2^6: 0x68.
  const uint8_t want[6] = {0x7E, 0x70, 0x3A, 0xF8, 0xFE, 0x68};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(m.codes[i], want[i]) << i;
  EXPECT_EQ(dequant_all(m)[2], 1.25f / 128);
  const std::vector<float> zeros(6, 0.0f);
  const QuantizedMatrix z = quantize_weight({QuantMethod::kFP8PerTensor, 128}, zeros.data(), 2, 3);
  EXPECT_EQ(z.tensor_scale, 1.0f);
  for (float v : dequant_all(z)) EXPECT_EQ(v, 0.0f);
}

TEST(Quant, FP8Block128PartialLastRowBlock) {
  const int64_t rows = 130, cols = 256;  // row blocks of 128 and 2 rows
  std::vector<float> w = randn(5, rows * cols);
  w[0 * cols + 200] = 100.0f;  // block (0, 1) only
  w[129 * cols + 3] = -50.0f;  // block (1, 0): its amax comes from rows 128..129 alone
  const QuantizedMatrix m = quantize_weight({QuantMethod::kFP8Block128, 128}, w.data(), rows, cols);
  ASSERT_EQ(m.scales.size(), 2u * 2u * 4u);
  EXPECT_EQ(f32_at(m.scales, 1), 100.0f / 448);
  EXPECT_EQ(f32_at(m.scales, 2), 50.0f / 448);
  float a = 0;  // block (1, 1): rows 128..129, columns 128..255
  for (int64_t r = 128; r < 130; ++r) a = std::max(a, amax_of(&w[r * cols + 128], 128));
  EXPECT_EQ(f32_at(m.scales, 3), a / 448);
  EXPECT_EQ(dequant_all(m), reference_dequant({QuantMethod::kFP8Block128, 128}, w, rows, cols, m));
  std::vector<float> zeros(static_cast<size_t>(rows * cols), 0.0f);
  const QuantizedMatrix z =
      quantize_weight({QuantMethod::kFP8Block128, 128}, zeros.data(), rows, cols);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(f32_at(z.scales, i), 1.0f);
}

TEST(Quant, NVFP4TwoLevelScalesByHand) {
  std::vector<float> w(48, 0.0f);
  // Tensor amax 168 -> tensor scale 168 / 2688 = 2^-4.
  // Block 0: amax 168 -> block scale e4m3(168 / 6 / 2^-4) = e4m3(448) = 0x7E; divisor 28.
  w[0] = 168.0f;  // 6: code 7
  w[1] = 14.0f;   // 0.5: code 1
  w[2] = -42.0f;  // -1.5: code 0xB
  w[3] = 70.0f;   // 2.5: tie between 2 (code 4) and 3 (code 5), even code 4
  // Block 1: amax 3 -> block scale e4m3(3 / 6 / 2^-4) = 8 = 2^3 (exponent field 10: 0x50);
  // divisor 0.5.
  w[16] = 3.0f;   // 6: code 7
  w[17] = 0.2f;   // 0.4 -> 0.5: code 1
  w[18] = -1.1f;  // -2.2 -> -2: code 0xC
  // Block 2: amax 1e-6 -> 1e-6 / 6 / 2^-4 = 2.7e-6 is below half the smallest e4m3 (2^-10):
  // block scale 0, so the codes are zeros.
  w[32] = 1e-6f;
  w[33] = -5e-7f;
  const QuantizedMatrix m = quantize_weight({QuantMethod::kNVFP4W4A16, 128}, w.data(), 1, 48);
  EXPECT_EQ(m.tensor_scale, 0.0625f);
  ASSERT_EQ(m.scales.size(), 3u);
  EXPECT_EQ(m.scales[0], 0x7E);
  EXPECT_EQ(m.scales[1], 0x50);
  EXPECT_EQ(m.scales[2], 0x00);
  EXPECT_EQ(m.codes[0], pack_nibbles(7, 1));
  EXPECT_EQ(m.codes[1], pack_nibbles(0xB, 4));
  EXPECT_EQ(m.codes[8], pack_nibbles(7, 1));
  EXPECT_EQ(m.codes[9], pack_nibbles(0xC, 0));
  EXPECT_EQ(m.codes[16], pack_nibbles(0, 0x8));  // +0 and -0 (-5e-7 keeps its sign)
  for (int j = 17; j < 24; ++j) EXPECT_EQ(m.codes[j], 0) << j;
  const std::vector<float> d = dequant_all(m);
  EXPECT_EQ(d[3], 56.0f);   // (2 * 448) * 2^-4
  EXPECT_EQ(d[18], -1.0f);  // (-2 * 8) * 2^-4
  EXPECT_EQ(d[32], 0.0f);
  const std::vector<float> zeros(48, 0.0f);
  const QuantizedMatrix z = quantize_weight({QuantMethod::kNVFP4W4A16, 128}, zeros.data(), 1, 48);
  EXPECT_EQ(z.tensor_scale, 1.0f);
  for (float v : dequant_all(z)) EXPECT_EQ(v, 0.0f);
}

TEST(Quant, Int4GroupsByHand) {
  for (int g : {32, 64, 128}) {
    std::vector<float> w(3 * static_cast<size_t>(g), 0.0f);
    // Group 0: amax 7 -> scale bf16(1) = 1; codes round-half-even(x).
    w[0] = 7.0f;
    w[1] = 2.5f;   // 2
    w[2] = -3.5f;  // -4: code 0xC
    w[3] = -0.4f;  // 0
    // Group 1: amax 0.7 -> 0.1 = 0x3DCCCCCD in fp32, whose low half 0xCCCD > 0x8000 rounds the
    // bf16 up to 0x3DCD = 0.10009765625; 0.7 / that = 6.99 -> 7, -0.35 / that = -3.497 -> -3.
    w[g] = 0.7f;
    w[g + 1] = -0.35f;
    // Group 2 all zero: scale 1, codes 0.
    const QuantizedMatrix m = quantize_weight({QuantMethod::kInt4W4A16, g}, w.data(), 1, 3 * g);
    ASSERT_EQ(m.scales.size(), 6u) << g;
    EXPECT_EQ(u16_at(m.scales, 0), 0x3F80) << g;
    EXPECT_EQ(u16_at(m.scales, 1), 0x3DCD) << g;
    EXPECT_EQ(u16_at(m.scales, 2), 0x3F80) << g;
    EXPECT_EQ(m.codes[0], pack_nibbles(7, 2)) << g;
    EXPECT_EQ(m.codes[1], pack_nibbles(0xC, 0)) << g;
    EXPECT_EQ(m.codes[g / 2], pack_nibbles(7, 0xD)) << g;
    const std::vector<float> d = dequant_all(m);
    EXPECT_EQ(d[g + 1], -3 * 0.10009765625f) << g;
    for (int i = 2 * g; i < 3 * g; ++i) EXPECT_EQ(d[i], 0.0f);
  }
}

// ---- random matrices: every element, relative L2 ----------------------------------------------

TEST(Quant, RandomMatricesMatchReferenceAndBound) {
  for (const QuantConfig& q : all_configs())
    for (int64_t rows : {17, 130}) {
      const int64_t cols = 384;
      const std::vector<float> w =
          randn(static_cast<uint32_t>(rows * 7 + q.group_size), rows * cols);
      const QuantizedMatrix m = quantize_weight(q, w.data(), rows, cols);
      EXPECT_EQ(m.method, q.method);
      EXPECT_EQ(m.rows, rows);
      EXPECT_EQ(m.cols, cols);
      const std::vector<float> got = dequant_all(m);
      const std::vector<float> want = reference_dequant(q, w, rows, cols, m);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << label(q) << " rows " << rows << " element " << i;
      const double err = rel_l2(got, w);
      EXPECT_LE(err, rel_l2_bound(q)) << label(q) << " rows " << rows;
      EXPECT_GT(err, 0.0) << label(q);
    }
}

TEST(Quant, DequantizeRowRanges) {
  for (const QuantConfig& q : all_configs()) {
    const int64_t rows = 130, cols = 256;
    const std::vector<float> w = randn(3, rows * cols);
    const QuantizedMatrix m = quantize_weight(q, w.data(), rows, cols);
    const std::vector<float> all = dequant_all(m);
    for (auto [r0, r1] : {std::pair<int64_t, int64_t>{5, 12}, {127, 130}, {0, 1}, {129, 130}}) {
      std::vector<float> out(static_cast<size_t>((r1 - r0) * cols + 1), kNaN);
      out.back() = 12345.0f;  // sentinel: nothing past the range is written
      dequantize_rows(m, r0, r1, out.data());
      for (int64_t i = 0; i < (r1 - r0) * cols; ++i)
        ASSERT_EQ(out[i], all[r0 * cols + i]) << label(q) << " rows " << r0 << ".." << r1;
      EXPECT_EQ(out.back(), 12345.0f);
    }
  }
}

// ---- errors ------------------------------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Quant, Errors) {
  const std::vector<float> w = randn(9, 4 * 256);
  const std::string bad_k = error_of([&] {
    quantize_weight({QuantMethod::kMXFP4W4A16, 128}, w.data(), 4, 100);
  });
  EXPECT_NE(bad_k.find("cols=100"), std::string::npos) << bad_k;
  EXPECT_NE(bad_k.find("32"), std::string::npos) << bad_k;
  EXPECT_NE(bad_k.find("mxfp4_w4a16"), std::string::npos) << bad_k;
  EXPECT_THROW(quantize_weight({QuantMethod::kFP8Block128, 128}, w.data(), 4, 192), Error);
  EXPECT_THROW(quantize_weight({QuantMethod::kNVFP4W4A16, 128}, w.data(), 4, 24), Error);
  EXPECT_THROW(quantize_weight({QuantMethod::kInt4W4A16, 128}, w.data(), 4, 64), Error);
  EXPECT_NO_THROW(quantize_weight({QuantMethod::kInt4W4A16, 64}, w.data(), 4, 64));
  const std::string bad_g = error_of([&] {
    quantize_weight({QuantMethod::kInt4W4A16, 48}, w.data(), 4, 96);
  });
  EXPECT_NE(bad_g.find("group_size=48"), std::string::npos) << bad_g;
  EXPECT_THROW(quantize_weight({QuantMethod::kBF16, 128}, w.data(), -1, 4), Error);
  EXPECT_THROW(quantize_weight({QuantMethod::kBF16, 128}, w.data(), 4, -4), Error);
  EXPECT_THROW(quantize_weight({QuantMethod::kBF16, 128}, nullptr, 4, 4), Error);
  EXPECT_NO_THROW(quantize_weight({QuantMethod::kNVFP4W4A16, 128}, nullptr, 0, 256));
  for (const QuantConfig& q : all_configs()) {
    std::vector<float> bad = w;
    bad[1 * 256 + 2] = (q.group_size == 64) ? -kInf : kNaN;
    const std::string e = error_of([&] { quantize_weight(q, bad.data(), 4, 256); });
    EXPECT_NE(e.find("w[1, 2]"), std::string::npos) << label(q) << ": " << e;
  }
  QuantizedMatrix m = quantize_weight({QuantMethod::kMXFP4W4A16, 128}, w.data(), 4, 256);
  std::vector<float> out(4 * 256);
  EXPECT_THROW(dequantize_rows(m, -1, 2, out.data()), Error);
  EXPECT_THROW(dequantize_rows(m, 3, 2, out.data()), Error);
  EXPECT_THROW(dequantize_rows(m, 0, 5, out.data()), Error);
  EXPECT_THROW(dequantize_rows(m, 0, 1, nullptr), Error);
  EXPECT_NO_THROW(dequantize_rows(m, 2, 2, nullptr));
  m.scales.pop_back();
  EXPECT_THROW(dequantize_rows(m, 0, 1, out.data()), Error);
}

// ---- activations -------------------------------------------------------------------------------

TEST(Quant, FakeQuantizeActivationsEveryMethod) {
  const int64_t rows = 17, cols = 384;
  std::vector<float> x = randn(21, rows * cols);
  x[3 * cols + 130] = 300.0f;  // one large value: row 3, columns 128..255
  for (QuantMethod m : all_quant_methods()) {
    std::vector<float> y = x;
    fake_quantize_activations(m, y.data(), rows, cols);
    std::vector<float> want(x.size());
    if (!quantizes_activations(m)) {
      for (size_t i = 0; i < x.size(); ++i) want[i] = bf16_to_float(float_to_bf16(x[i]));
    } else if (m == QuantMethod::kFP8PerTensor) {
      const float s = 300.0f / 448;  // amax over the whole buffer, every row shares it
      for (size_t i = 0; i < x.size(); ++i) want[i] = e4m3_round(x[i] / s) * s;
    } else {  // fp8_block128 and mxfp4_w4a8: per row per 128 columns
      for (int64_t b = 0; b < rows * cols / 128; ++b) {
        const float s = amax_of(&x[b * 128], 128) / 448;
        for (int64_t i = b * 128; i < b * 128 + 128; ++i) want[i] = e4m3_round(x[i] / s) * s;
      }
    }
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(y[i], want[i]) << quant_name(m) << " element " << i;
    if (m != QuantMethod::kFP8PerTensor) {
      // Rounding error alone, as for weights: bf16 2^-7/sqrt(12), e4m3 2^-3/sqrt(12). The
      // per-tensor scale is set by the planted 300 and the rest sits in e4m3's subnormal
      // range, so it gets no such bound.
      const double bound = std::ldexp(1.0, quantizes_activations(m) ? -3 : -7) / std::sqrt(12.0);
      EXPECT_LE(rel_l2(y, x), bound) << quant_name(m);
    }
  }
  EXPECT_THROW(fake_quantize_activations(QuantMethod::kFP8Block128, x.data(), 1, 100), Error);
  EXPECT_THROW(fake_quantize_activations(QuantMethod::kMXFP4W4A8, x.data(), 1, 64), Error);
  EXPECT_NO_THROW(fake_quantize_activations(QuantMethod::kFP8PerTensor, x.data(), 1, 100));
  EXPECT_THROW(fake_quantize_activations(QuantMethod::kBF16, nullptr, 1, 4), Error);
  EXPECT_THROW(fake_quantize_activations(QuantMethod::kBF16, x.data(), -1, 4), Error);
}

TEST(Quant, ActivationZerosAndNonFinite) {
  const int64_t rows = 2, cols = 256;
  for (QuantMethod m : {QuantMethod::kFP8PerTensor, QuantMethod::kFP8Block128}) {
    std::vector<float> zeros(rows * cols, 0.0f);
    fake_quantize_activations(m, zeros.data(), rows, cols);
    for (float v : zeros) EXPECT_EQ(v, 0.0f);
  }
  std::vector<uint8_t> codes(rows * cols);
  std::vector<float> scales(rows * cols / 128, kNaN);
  std::vector<float> zeros(rows * cols, 0.0f);
  EXPECT_EQ(quantize_act_fp8_per_tensor(zeros.data(), rows, cols, codes.data()), 1.0f);
  quantize_act_fp8_block128(zeros.data(), rows, cols, codes.data(), scales.data());
  for (float s : scales) EXPECT_EQ(s, 1.0f);
  // A NaN or inf poisons its whole scale block and nothing else.
  for (float bad : {kNaN, kInf}) {
    std::vector<float> x = randn(4, rows * cols);
    x[1 * cols + 5] = bad;  // row 1, block 0
    fake_quantize_activations(QuantMethod::kFP8Block128, x.data(), rows, cols);
    for (int64_t i = 0; i < rows * cols; ++i)
      EXPECT_EQ(std::isnan(x[i]), i / 128 == 2) << bad << " element " << i;
    x = randn(4, rows * cols);
    x[7] = bad;
    fake_quantize_activations(QuantMethod::kFP8PerTensor, x.data(), rows, cols);
    for (float v : x) EXPECT_TRUE(std::isnan(v)) << bad;
  }
}

TEST(Quant, RealActivationQuantizersAgreeWithFake) {
  for (int64_t rows : {1, 17}) {
    const int64_t cols = 512;
    const std::vector<float> x = randn(static_cast<uint32_t>(rows), rows * cols, 3.0f);
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols), 0xAA);
    std::vector<float> scales(static_cast<size_t>(rows * cols / 128), kNaN);

    std::vector<float> fake = x;
    fake_quantize_activations(QuantMethod::kFP8PerTensor, fake.data(), rows, cols);
    const float s = quantize_act_fp8_per_tensor(x.data(), rows, cols, codes.data());
    EXPECT_EQ(s, amax_of(x.data(), rows * cols) / 448);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(e4m3_to_float(codes[i]) * s, fake[i]) << i;

    std::fill(codes.begin(), codes.end(), uint8_t{0xAA});
    for (QuantMethod m : {QuantMethod::kFP8Block128, QuantMethod::kMXFP4W4A8}) {
      fake = x;
      fake_quantize_activations(m, fake.data(), rows, cols);
      quantize_act_fp8_block128(x.data(), rows, cols, codes.data(), scales.data());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const float sc = scales[r * (cols / 128) + c / 128];  // [rows, cols/128]
          ASSERT_EQ(sc, amax_of(&x[r * cols + c / 128 * 128], 128) / 448);
          ASSERT_EQ(e4m3_to_float(codes[r * cols + c]) * sc, fake[r * cols + c]) << r << "," << c;
        }
    }
  }
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> codes(256);
  std::vector<float> scales(2);
  EXPECT_THROW(quantize_act_fp8_block128(x.data(), 2, 100, codes.data(), scales.data()), Error);
  EXPECT_THROW(quantize_act_fp8_block128(x.data(), 1, 256, codes.data(), nullptr), Error);
  EXPECT_THROW(quantize_act_fp8_per_tensor(x.data(), 1, 256, nullptr), Error);
  EXPECT_THROW(quantize_act_fp8_per_tensor(nullptr, 1, 256, codes.data()), Error);
  EXPECT_NO_THROW(quantize_act_fp8_per_tensor(nullptr, 0, 256, nullptr));
}

}  // namespace
}  // namespace servekit
