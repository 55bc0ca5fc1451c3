#include "cuda/expert_layout.h"

#include <algorithm>
#include <cstring>

#include "servekit/error.h"
#include "servekit/formats.h"

namespace servekit::cuda {

GemmOperand gemm_operand(QuantMethod m) {
  switch (m) {
    case QuantMethod::kFP8PerTensor:
      return GemmOperand::kFP8PerTensor;
    case QuantMethod::kFP8Block128:
      return GemmOperand::kFP8Block128;
    default:
      return GemmOperand::kBF16;  // bf16 and the 4-bit formats (dequantized, interim)
  }
}

GemmWeightHost to_gemm_layout(const QuantizedMatrix& m, int64_t rows, int64_t cols) {
  SERVEKIT_CHECK(m.rows == rows && m.cols == cols, "moe cuda: prepared matrix is [", m.rows, ", ",
                 m.cols, "], expected [", rows, ", ", cols, "]");
  const size_t n = static_cast<size_t>(rows * cols);
  GemmWeightHost out;
  switch (m.method) {
    case QuantMethod::kBF16:
      SERVEKIT_CHECK(m.codes.size() == 2 * n, "moe cuda: bf16 codes hold ", m.codes.size(),
                     " bytes, expected ", 2 * n);
      out.codes = m.codes;
      return out;
    case QuantMethod::kFP8PerTensor:
      SERVEKIT_CHECK(m.codes.size() == n, "moe cuda: fp8 codes hold ", m.codes.size(),
                     " bytes, expected ", n);
      out.codes = m.codes;
      out.tensor_scale = m.tensor_scale;
      return out;
    case QuantMethod::kFP8Block128: {
      const int64_t nb = (rows + 127) / 128, kb = cols / 128;
      SERVEKIT_CHECK(m.codes.size() == n && m.scales.size() == sizeof(float) * nb * kb,
                     "moe cuda: fp8_block128 matrix has ", m.codes.size(), " code and ",
                     m.scales.size(), " scale bytes, expected ", n, " and ",
                     sizeof(float) * nb * kb);
      out.codes = m.codes;
      // quant.h stores [ceil(N/128), K/128] (K-major); the sm90 blockwise mainloop reads the
      // weight scales N-major, [K/128, ceil(N/128)].
      out.block_scales.resize(static_cast<size_t>(nb * kb));
      for (int64_t i = 0; i < nb; ++i) {
        for (int64_t j = 0; j < kb; ++j) {
          std::memcpy(&out.block_scales[static_cast<size_t>(j * nb + i)],
                      m.scales.data() + sizeof(float) * static_cast<size_t>(i * kb + j),
                      sizeof(float));
        }
      }
      return out;
    }
    default: {  // 4-bit: exact dequantization, rounded once to bf16 (interim path)
      out.codes.resize(2 * n);
      constexpr int64_t kRowsPerStep = 64;  // bounds the fp32 staging buffer
      std::vector<float> buf(static_cast<size_t>(std::min(rows, kRowsPerStep) * cols));
      for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerStep) {
        const int64_t r1 = std::min(rows, r0 + kRowsPerStep);
        dequantize_rows(m, r0, r1, buf.data());
        for (int64_t i = 0; i < (r1 - r0) * cols; ++i) {
          const uint16_t b = float_to_bf16(buf[static_cast<size_t>(i)]);
          std::memcpy(&out.codes[2 * static_cast<size_t>(r0 * cols + i)], &b, 2);
        }
      }
      return out;
    }
  }
}

GemmWeightHost w4a16_gemm_layout(const QuantizedMatrix& m, int64_t rows, int64_t cols) {
  SERVEKIT_CHECK(m.method == QuantMethod::kInt4W4A16, "w4a16_gemm_layout: the matrix is ",
                 quant_name(m.method), ", not int4_w4a16");
  SERVEKIT_CHECK(m.rows == rows && m.cols == cols, "moe cuda: prepared matrix is [", m.rows, ", ",
                 m.cols, "], expected [", rows, ", ", cols, "]");
  const int64_t g = m.group_size;
  SERVEKIT_CHECK(g > 0 && cols % g == 0 && cols % 2 == 0, "w4a16_gemm_layout: group ", g,
                 " does not divide cols=", cols);
  const int64_t groups = cols / g;
  SERVEKIT_CHECK(m.codes.size() == static_cast<size_t>(rows * cols / 2) &&
                     m.scales.size() == static_cast<size_t>(rows * groups) * 2,
                 "moe cuda: int4_w4a16 matrix has ", m.codes.size(), " code and ", m.scales.size(),
                 " scale bytes, expected ", rows * cols / 2, " and ", rows * groups * 2);
  GemmWeightHost out;
  out.codes = m.codes;
  out.group_scales.resize(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < groups; ++j)
      std::memcpy(&out.group_scales[static_cast<size_t>(j * rows + r)],
                  m.scales.data() + 2 * static_cast<size_t>(r * groups + j), 2);
  return out;
}

namespace {

// Row p of the result is row interleaved_w13_row(p, inter, width) of `rows`, 2I rows of `row_elems`
// elements each.
template <class T>
std::vector<T> interleaved_rows(const std::vector<T>& rows, int64_t inter, size_t row_elems,
                                int64_t width) {
  std::vector<T> out(rows.size());
  for (int64_t p = 0; p < 2 * inter; ++p) {
    std::memcpy(&out[static_cast<size_t>(p) * row_elems],
                &rows[static_cast<size_t>(interleaved_w13_row(p, inter, width)) * row_elems],
                row_elems * sizeof(T));
  }
  return out;
}

}  // namespace

void interleave_w4a16_w13(GemmWeightHost& w, int64_t inter, int64_t cols, int64_t width) {
  const int64_t rows = 2 * inter;
  SERVEKIT_CHECK(width > 0 && inter > 0 && inter % width == 0 && cols > 0 && cols % 2 == 0 &&
                     w.codes.size() == static_cast<size_t>(rows * cols / 2) &&
                     !w.group_scales.empty() && w.group_scales.size() % rows == 0,
                 "interleave_w4a16_w13: need intermediate % width == 0 and a [2I, cols] int4 "
                 "matrix with [cols/G, 2I] scales, got I=",
                 inter, " width=", width, " cols=", cols, " with ", w.codes.size(),
                 " code bytes and ", w.group_scales.size(), " scales");
  w.codes = interleaved_rows(w.codes, inter, static_cast<size_t>(cols / 2), width);
  // [cols/G, 2I], 2I contiguous: each row's 2I scales reorder as the weight rows do.
  std::vector<uint16_t> scales(w.group_scales.size());
  const size_t n = static_cast<size_t>(rows);
  for (size_t j = 0; j < w.group_scales.size() / n; ++j)
    for (int64_t p = 0; p < rows; ++p)
      scales[j * n + static_cast<size_t>(p)] =
          w.group_scales[j * n + static_cast<size_t>(interleaved_w13_row(p, inter, width))];
  w.group_scales = std::move(scales);
}

void interleave_w13(GemmWeightHost& w, GemmOperand op, int64_t inter, int64_t cols, int64_t width) {
  const int64_t rows = 2 * inter;
  const size_t row_bytes = static_cast<size_t>(cols) * gemm_operand_bytes(op);
  SERVEKIT_CHECK(width == 128 || (width == 64 && op == GemmOperand::kBF16),
                 "interleave_w13: blocks of 128 rows, or 64 with bf16, got ", width);
  SERVEKIT_CHECK(inter > 0 && inter % 128 == 0 && cols > 0 &&
                     w.codes.size() == static_cast<size_t>(rows) * row_bytes,
                 "interleave_w13: need intermediate % 128 == 0 and a [2I, cols] matrix, got I=",
                 inter, " cols=", cols, " with ", w.codes.size(), " bytes");
  w.codes = interleaved_rows(w.codes, inter, row_bytes, width);
  if (op != GemmOperand::kFP8Block128) return;
  // [K/128, R/128] MN-major: physical block nb holds logical block of row 128 * nb.
  const int64_t n_blocks = rows / 128, k_blocks = cols / 128;
  SERVEKIT_CHECK(w.block_scales.size() == static_cast<size_t>(n_blocks * k_blocks),
                 "interleave_w13: ", w.block_scales.size(), " block scales, expected ",
                 n_blocks * k_blocks);
  std::vector<float> scales(w.block_scales.size());
  for (int64_t kb = 0; kb < k_blocks; ++kb)
    for (int64_t nb = 0; nb < n_blocks; ++nb)
      scales[static_cast<size_t>(kb * n_blocks + nb)] = w.block_scales[static_cast<size_t>(
          kb * n_blocks + interleaved_w13_row(nb * 128, inter) / 128)];
  w.block_scales = std::move(scales);
}

}  // namespace servekit::cuda
