// Shared by the grouped GEMM GPU tests (test_grouped_gemm_cuda.cpp and
// test_grouped_gemm_w4a16_cuda.cpp): random operands and their fp64 reference, the tolerance per
// operand and the check of D, the group layouts both run, and a run's groups on the device with
// the check that a fused activation equals GEMM1 followed by the activation pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/grouped_gemm.h"
#include "cuda/moe_plan.h"
#include "servekit/formats.h"

// Their own namespace, not the library's; the test files take it with a using-directive.
namespace servekit::cuda::gemm_test {

constexpr int kGuardRows = 8;  // rows of D past the last group, which must stay poisoned

struct Operands {
  int64_t n = 0, k = 0, rows = 0, k_block = 0;  // k_block: K columns sharing one scale
  int groups = 0;
  std::vector<uint8_t> a, b;        // codes: [rows, K], [G, N, K] (bf16: 2 bytes each)
  std::vector<float> a_val, b_val;  // the codes' values (exact), same shapes
  std::vector<double> a_scale;      // [rows, K/k_block] (1 for bf16)
  std::vector<double> b_scale;      // [G, N, K/k_block] (1 for bf16)
  float a_tensor_scale = 1.0f;      // fp8_per_tensor
  std::vector<float> b_tensor_scale;
};

// Random operands. e4m3 codes span the whole range (|value| up to 448); scales bring the
// dequantized values to O(1/448..2/448) per unit code so products stay O(1).
inline Operands make_operands(GemmOperand op, int groups, int64_t rows, int64_t n, int64_t k,
                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), pos(0.5f, 2.0f);
  Operands o;
  o.n = n, o.k = k, o.rows = rows, o.groups = groups;
  o.k_block = op == GemmOperand::kFP8Block128 ? 128 : k;
  const size_t bytes = gemm_operand_bytes(op);
  auto fill = [&](std::vector<uint8_t>& codes, std::vector<float>& vals, size_t count) {
    codes.resize(count * bytes);
    vals.resize(count);
    for (size_t i = 0; i < count; ++i) {
      if (op == GemmOperand::kBF16) {
        const uint16_t b16 = float_to_bf16(unit(rng));
        std::memcpy(&codes[2 * i], &b16, 2);
        vals[i] = bf16_to_float(b16);
      } else {
        codes[i] = float_to_e4m3(448.0f * unit(rng));
        vals[i] = e4m3_to_float(codes[i]);
      }
    }
  };
  fill(o.a, o.a_val, static_cast<size_t>(rows * k));
  fill(o.b, o.b_val, static_cast<size_t>(groups * n * k));
  const int64_t kb = k / o.k_block;
  o.a_scale.assign(static_cast<size_t>(rows * kb), 1.0);
  o.b_scale.assign(static_cast<size_t>(groups * n * kb), 1.0);
  if (op == GemmOperand::kFP8PerTensor) {
    o.a_tensor_scale = 1.0f / 448.0f;
    o.b_tensor_scale.resize(static_cast<size_t>(groups));
    for (auto& s : o.b_tensor_scale) s = pos(rng) / 448.0f;
  }
  if (op == GemmOperand::kFP8Block128) {
    for (auto& s : o.a_scale) s = pos(rng) / 448.0f;
    // One scale per 128x128 weight block, expanded per row for the host reference.
    const int64_t nb = (n + 127) / 128;
    std::vector<float> blocks(static_cast<size_t>(groups * nb * kb));
    for (auto& s : blocks) s = pos(rng) / 448.0f;
    for (int g = 0; g < groups; ++g)
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < kb; ++j)
          o.b_scale[static_cast<size_t>((g * n + r) * kb + j)] =
              blocks[static_cast<size_t>((g * nb + r / 128) * kb + j)];
    o.b_tensor_scale = blocks;  // kept for the upload, [G, ceil(N/128), K/128]
  }
  return o;
}

// fp64 reference: ref[r, n] = alpha_g * sum_kb sa[r,kb] sb[g,n,kb] sum_{k in kb} a[r,k] b[g,n,k].
// Covers the rows of the groups, sum(sizes) <= o.rows. shared_b: every group multiplies by group
// 0's B codes (b_group_stride = 0), each still with its own scales.
inline std::vector<double> reference(GemmOperand op, const Operands& o,
                                     const std::vector<int>& sizes, bool shared_b = false) {
  int64_t rows = 0;
  for (int m : sizes) rows += m;
  std::vector<double> ref(static_cast<size_t>(rows * o.n));
  std::vector<int> group_of(static_cast<size_t>(rows));
  for (int g = 0, r = 0; g < static_cast<int>(sizes.size()); ++g)
    for (int i = 0; i < sizes[g]; ++i) group_of[static_cast<size_t>(r++)] = g;
  const int64_t kb_count = o.k / o.k_block;
  auto work = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int g = group_of[static_cast<size_t>(r)];
      const double alpha =
          op == GemmOperand::kFP8PerTensor ? double{o.a_tensor_scale} * o.b_tensor_scale[g] : 1.0;
      const float* a = &o.a_val[static_cast<size_t>(r * o.k)];
      for (int64_t c = 0; c < o.n; ++c) {
        const float* b = &o.b_val[static_cast<size_t>(((shared_b ? 0 : g) * o.n + c) * o.k)];
        double acc = 0.0;
        for (int64_t kb = 0; kb < kb_count; ++kb) {
          double part = 0.0;
          for (int64_t i = kb * o.k_block; i < (kb + 1) * o.k_block; ++i)
            part += double{a[i]} * b[i];
          acc += part * o.a_scale[static_cast<size_t>(r * kb_count + kb)] *
                 o.b_scale[static_cast<size_t>((g * o.n + c) * kb_count + kb)];
        }
        ref[static_cast<size_t>(r * o.n + c)] = alpha * acc;
      }
    }
  };
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  const int64_t step = (rows + threads - 1) / threads;
  for (int64_t r0 = 0; r0 < rows; r0 += step)
    pool.emplace_back(work, r0, std::min(rows, r0 + step));
  for (auto& t : pool) t.join();
  return ref;
}

// Activation scales in the grouped MN-major layout of grouped_gemm.h.
inline std::vector<float> grouped_a_scales(const Operands& o, const std::vector<int>& sizes) {
  const int64_t kb = o.k / 128;
  std::vector<float> out(static_cast<size_t>(o.rows * kb));
  int64_t begin = 0;
  for (int m : sizes) {
    for (int64_t r = begin; r < begin + m; ++r)
      for (int64_t j = 0; j < kb; ++j)
        out[static_cast<size_t>(a_block_scale_index(begin, m, kb, r, j))] =
            static_cast<float>(o.a_scale[static_cast<size_t>(r * kb + j)]);
    begin += m;
  }
  return out;
}

struct Tolerance {
  double l2;       // relative L2 over all rows
  double element;  // |got - ref| <= element * (|ref| + rms(ref)) for every element
};

// bf16 and fp8_block128 accumulate in fp32 (the blockwise mainloop promotes every 128 K): what
// remains is the bf16 rounding of D, 2^-9/sqrt(3) ~ 1.1e-3 relative RMS and at most 2^-9 per
// element, so 3e-3 and 1/256. fp8_per_tensor uses the fast single-level accumulation, and
// Hopper's fp8 MMA keeps only ~14 bits of its accumulator (DeepSeek-V3 report, up to ~2% worst
// case at K = 4096); biased over the ~90 k32 steps of K = 2880 that is up to ~6e-3 relative,
// so 1e-2 and 1/64. A wrong tile, group or scale is off by O(rms) and fails either bound.
// fp8_block128's weight scales as the GEMM reads them: [G, ceil(N/128), K/128] (Operands) ->
// [G, K/128, ceil(N/128)] (b_block_scale_index).
// Exactly gemm_b_block_scale_floats long: the tail the kernels may read (grouped_gemm.h) is NaN,
// so a tail scale that reached a stored output would fail the comparison, and memcheck
// catches a read past it.
inline std::vector<float> gemm_b_block_scales(const Operands& o) {
  const int64_t nb = (o.n + 127) / 128, kb = o.k / 128;
  std::vector<float> out(static_cast<size_t>(gemm_b_block_scale_floats(o.groups, o.n, o.k)),
                         std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(o.b_tensor_scale.size() + kBlockScaleTailFloats, out.size());
  for (int g = 0; g < o.groups; ++g)
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t j = 0; j < kb; ++j)
        out[static_cast<size_t>(b_block_scale_index(g, nb, kb, i, j))] =
            o.b_tensor_scale[static_cast<size_t>((g * nb + i) * kb + j)];
  return out;
}

inline Tolerance tolerance(GemmOperand op) {
  return op == GemmOperand::kFP8PerTensor ? Tolerance{1e-2, 1.0 / 64} : Tolerance{3e-3, 1.0 / 256};
}

// D (bf16, n columns) against the fp64 reference of the groups' rows: every element within
// tol.element of |ref| + the rms, the relative L2 within tol.l2; the rows past the reference (the
// guard rows, or all of D when the groups are empty) still poisoned (0xFFFF).
inline void expect_d_matches(const std::vector<uint16_t>& d, const std::vector<double>& ref,
                             int64_t n, const Tolerance& tol) {
  for (size_t i = ref.size(); i < d.size(); ++i) ASSERT_EQ(d[i], 0xFFFF) << "guard " << i;
  if (ref.empty()) return;
  double err2 = 0.0, ref2 = 0.0;
  for (double v : ref) ref2 += v * v;
  const double rms = std::sqrt(ref2 / static_cast<double>(ref.size()));
  int64_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double got = bf16_to_float(d[i]);
    err2 += (got - ref[i]) * (got - ref[i]);
    if (!(std::abs(got - ref[i]) <= tol.element * (std::abs(ref[i]) + rms))) {
      if (bad++ < 5)
        ADD_FAILURE() << "row " << i / n << " col " << i % n << ": " << got << " vs " << ref[i];
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_LE(std::sqrt(err2 / ref2), tol.l2);
}

// The group sizes run_case and run_w4a16_case run: the same five groups in two orders (318 rows),
// then all empty (nothing may be written), then groups whose last 128-row tile holds 65 rows (the
// second warp group's first row only), exactly 128, exactly 64 (the fp8_block128 128x256 tile's
// second warp group idles: its rows are past the end) and 61; then groups one past and exactly at
// the swap-AB tile's 144 tokens.
inline const std::vector<std::vector<int>> kGroupLayouts = {{17, 0, 300, 1, 0},
                                                            {0, 1, 300, 0, 17},
                                                            {0, 0, 0, 0, 0},
                                                            {65, 128, 0, 64, 61},
                                                            {145, 0, 144, 0, 29}};
constexpr int kLayoutGroups = 5;
constexpr int64_t kLayoutRows = 318;  // the rows of every layout but the empty one

// A run's groups on the device as the GEMM and the activation pass read them: the offsets [G + 1]
// of `sizes`, and the group of each of `capacity` rows (rows past the last group in group 0).
struct DeviceGroups {
  testing::DeviceArray<int32_t> offsets, row_group;
  int num_groups;
  int64_t total;  // rows in the groups
  PlanBuffers plan() const {
    PlanBuffers p;
    p.num_groups = num_groups;
    p.group_offsets = offsets.get();
    p.row_group = row_group.get();
    return p;
  }
};
inline DeviceGroups device_groups(const std::vector<int>& sizes, int64_t capacity) {
  std::vector<int32_t> offsets{0}, row_group;
  for (size_t g = 0; g < sizes.size(); ++g) {
    offsets.push_back(offsets.back() + sizes[g]);
    row_group.insert(row_group.end(), static_cast<size_t>(sizes[g]), static_cast<int>(g));
  }
  row_group.resize(static_cast<size_t>(capacity), 0);
  return {testing::DeviceArray<int32_t>(offsets), testing::DeviceArray<int32_t>(row_group),
          static_cast<int>(sizes.size()), offsets.back()};
}

// A fused run against GEMM1 into D followed by the activation pass: the fused run wrote no D
// (sm90_act_epilogue.cuh; every element of d_h keeps the poison), the same bytes in the first
// `total` rows of the [rows, inter] intermediate (elements of `bytes` bytes), and its guard rows
// still poisoned.
inline void expect_fused_equals_pass(const testing::DeviceArray<uint16_t>& d_h,
                                     const testing::DeviceArray<uint8_t>& pass,
                                     const testing::DeviceArray<uint8_t>& fused, int64_t total,
                                     int64_t inter, size_t bytes) {
  const std::vector<uint16_t> h_fused = d_h.download();
  for (size_t i = 0; i < h_fused.size(); ++i)
    ASSERT_EQ(h_fused[i], 0xFFFF) << "the fused run wrote D element " << i;
  const std::vector<uint8_t> want = pass.download(), got = fused.download();
  const size_t valid = static_cast<size_t>(total * inter) * bytes;
  int64_t bad = 0;
  for (size_t i = 0; i < valid; ++i) {
    if (got[i] != want[i] && bad++ < 5)
      ADD_FAILURE() << "byte " << i << " (row " << i / bytes / inter << " col " << i / bytes % inter
                    << "): fused " << int{got[i]} << " vs pass " << int{want[i]};
  }
  EXPECT_EQ(bad, 0);
  for (size_t i = valid; i < got.size(); ++i) ASSERT_EQ(got[i], 0xFF) << "guard byte " << i;
}

}  // namespace servekit::cuda::gemm_test
