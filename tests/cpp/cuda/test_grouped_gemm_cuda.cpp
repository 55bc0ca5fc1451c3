// GPU tests of the sm90 grouped GEMMs alone (src/cuda/grouped_gemm.h) against an fp64 host GEMM
// on the dequantized operands: groups of 0, 1, 17 and 300 rows in two orders (the same runner
// serves both, so problem sizes really are read on the device), odd N and K, every element
// checked, rows outside the groups left untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/expert_layout.h"
#include "cuda/gemm_tile_pick.h"
#include "cuda/grouped_gemm.h"
#include "cuda/moe_plan.h"
#include "cuda/moe_quant.h"
#include "gpu_test_util.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit::cuda {
namespace {

using testing::DeviceArray;

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
Operands make_operands(GemmOperand op, int groups, int64_t rows, int64_t n, int64_t k,
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
std::vector<double> reference(GemmOperand op, const Operands& o, const std::vector<int>& sizes,
                              bool shared_b = false) {
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
std::vector<float> grouped_a_scales(const Operands& o, const std::vector<int>& sizes) {
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
std::vector<float> gemm_b_block_scales(const Operands& o) {
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

Tolerance tolerance(GemmOperand op) {
  return op == GemmOperand::kFP8PerTensor ? Tolerance{1e-2, 1.0 / 64} : Tolerance{3e-3, 1.0 / 256};
}

using Factory = std::unique_ptr<GroupedGemm> (*)(const GroupedGemmShape&, int);

// D (bf16, n columns) against the fp64 reference of the groups' rows: every element within
// tol.element of |ref| + the rms, the relative L2 within tol.l2; the rows past the reference (the
// guard rows, or all of D when the groups are empty) still poisoned (0xFFFF).
void expect_d_matches(const std::vector<uint16_t>& d, const std::vector<double>& ref, int64_t n,
                      const Tolerance& tol) {
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

// Where group g's B lies (GroupedGemmOperands::b_group_stride): packed [G, N, K] (the default),
// every group on B[0] (stride 0), or a row of padding between groups (stride (N + 1) * K).
enum class BLayout { kPacked, kShared, kPadded };

// The group sizes run_case and run_w4a16_case run: the same five groups in two orders (318 rows),
// then all empty (nothing may be written), then groups whose last 128-row tile holds 65 rows (the
// second warp group's first row only), exactly 128, exactly 64 (the fp8_block128 128x256 tile's
// second warp group idles: its rows are past the end) and 61; then groups one past and exactly at
// the swap-AB tile's 144 tokens.
const std::vector<std::vector<int>> kGroupLayouts = {{17, 0, 300, 1, 0},
                                                     {0, 1, 300, 0, 17},
                                                     {0, 0, 0, 0, 0},
                                                     {65, 128, 0, 64, 61},
                                                     {145, 0, 144, 0, 29}};
constexpr int kLayoutGroups = 5;
constexpr int64_t kLayoutRows = 318;  // the rows of every layout but the empty one

// factory: one instantiation; null: GroupedGemm::create, run with each rows_hint in `hints`.
void run_case(GemmOperand op, int64_t n, int64_t k, Factory factory = nullptr,
              std::vector<int64_t> hints = {0}, BLayout b_layout = BLayout::kPacked) {
  SERVEKIT_REQUIRE_GPU();
  const Tolerance tol = tolerance(op);
  const std::vector<std::vector<int>>& layouts = kGroupLayouts;
  const int groups = kLayoutGroups;
  const int64_t rows = kLayoutRows;
  const Operands o = make_operands(op, groups, rows, n, k, 1234 + static_cast<int>(op));
  auto gemm = factory ? factory({op, groups, n, k, rows}, 0)
                      : GroupedGemm::create({op, groups, n, k, rows}, 0);

  // Padded: each group's codes followed by a row (K elements) of a value no group holds (0xFF
  // bytes: a bf16 NaN, the e4m3 NaN), so a GEMM that ignored the stride would read NaNs.
  const int64_t pad = b_layout == BLayout::kPadded ? k : 0;
  const size_t elem = gemm_operand_bytes(op), group_bytes = static_cast<size_t>(n * k) * elem;
  std::vector<uint8_t> b_codes = o.b;
  if (b_layout == BLayout::kPadded) {
    b_codes.assign((group_bytes + static_cast<size_t>(pad) * elem) * groups, 0xFF);
    for (int g = 0; g < groups; ++g)
      std::memcpy(&b_codes[g * (group_bytes + static_cast<size_t>(pad) * elem)],
                  &o.b[g * group_bytes], group_bytes);
  }
  const int64_t b_stride = b_layout == BLayout::kPacked   ? -1
                           : b_layout == BLayout::kShared ? 0
                                                          : n * k + pad;
  DeviceArray<uint8_t> d_a(o.a), d_b(b_codes);
  DeviceArray<uint16_t> d_d(static_cast<size_t>((rows + kGuardRows) * n));
  DeviceArray<float> d_b_scale(op == GemmOperand::kFP8Block128 ? gemm_b_block_scales(o)
                                                               : o.b_tensor_scale);
  DeviceArray<float> d_a_scale(std::vector<float>{o.a_tensor_scale});

  for (int64_t hint : hints)
    for (const auto& sizes : layouts) {
      SCOPED_TRACE("rows_hint " + std::to_string(hint) + ", tile M " +
                   std::to_string(gemm->config(hint).tile.tile_m) +
                   (gemm->config(hint).tile.swap_ab ? " swap-AB" : ""));
      std::vector<int32_t> offsets{0};
      for (int m : sizes) offsets.push_back(offsets.back() + m);
      DeviceArray<int32_t> d_off(offsets);
      DeviceArray<float> d_a_blocks(op == GemmOperand::kFP8Block128 ? grouped_a_scales(o, sizes)
                                                                    : std::vector<float>{});
      d_d.poison();
      GroupedGemmOperands ops;
      ops.group_offsets = d_off.get();
      ops.a = d_a.get();
      ops.b = d_b.get();
      ops.d = d_d.get();
      ops.rows_hint = hint;
      ops.b_group_stride = b_stride;
      if (op == GemmOperand::kFP8PerTensor) {
        ops.a_scale = d_a_scale.get();
        ops.b_scale = d_b_scale.get();
      }
      if (op == GemmOperand::kFP8Block128) {
        ops.a_block_scale = d_a_blocks.get();
        ops.b_block_scale = d_b_scale.get();
      }
      gemm->run(ops, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

      expect_d_matches(d_d.download(), reference(op, o, sizes, b_layout == BLayout::kShared), n,
                       tol);
    }
}

// N = 2 * 1856 (an odd gated intermediate), K = 2880 (gpt-oss hidden, 22.5 blocks of 128).
TEST(GroupedGemmCuda, BF16) {
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16);
}
// The 64-row ping-pong bf16 tile: the 300-row group spans 5 tiles (the last one 44 rows), the 17-
// and 1-row groups one partial tile each.
TEST(GroupedGemmCuda, BF16SmallM) {
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_small_m);
}
// The swap-AB bf16 tile (256 weight rows x 144 tokens): N = 3712 ends in half a weight tile
// (and an odd one of the 2x1 cluster), the 300-row group spans 3 token tiles, 145 rows 2.
TEST(GroupedGemmCuda, BF16Swap) {
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap);
}
// The pair swap-AB bf16 tile (the 256x144 tile in a 1x2 cluster along the tokens, the weight tile
// multicast): the 300-row group spans 3 token tiles, so its second pair's second CTA lies wholly
// past the group, as does the 17-, 1-, 61- and 64-row groups' second CTA; 145 rows fill one pair.
TEST(GroupedGemmCuda, BF16SwapPair) {
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap_pair);
}
// The device-side pick between the 2x1 swap tile and its pair (GemmRunGate), two groups: 256 and
// 256 rows (4 token tiles either way: the pair), 17 and 495 (5 against 6: the 2x1 tile), none.
// Each gated runner alone writes the whole result or nothing (D stays poisoned); create()'s GEMM
// under SERVEKIT_GEMM_PAIR_PICK=device, whose pick at 256 rows per group is kSwapOrPair, runs both
// and gets the result every time.
TEST(GroupedGemmCuda, BF16SwapOrPairPickedOnTheDevice) {
  SERVEKIT_REQUIRE_GPU();
  const GemmOperand op = GemmOperand::kBF16;
  const int64_t n = 3712, k = 2880, rows = 512;
  ASSERT_EQ(choose_gemm_tile(op, rows / 2, false, GemmTileChoice::kAuto, false, -1, 0,
                             GemmPairPick::kDevice),
            kAutoSwapPair ? GemmTileKind::kSwapOrPair : GemmTileKind::kSwap);
  const Operands o = make_operands(op, 2, rows, n, k, 4321);
  DeviceArray<uint8_t> d_a(o.a), d_b(o.b);
  DeviceArray<uint16_t> d_d(static_cast<size_t>((rows + kGuardRows) * n));
  const GroupedGemmShape shape{op, 2, n, k, rows};
  auto swap = make_grouped_gemm_bf16_swap(shape, 0);
  auto pair = make_grouped_gemm_bf16_swap_pair(shape, 0);
  std::unique_ptr<GroupedGemm> picked;
  {
    const testing::ScopedEnv pick("SERVEKIT_GEMM_PAIR_PICK", "device");
    picked = GroupedGemm::create(shape, 0);
  }
  if (kAutoSwapPair) {
    EXPECT_EQ(picked->tile_name(rows), gemm_tile_name(swap_ab_tile_config(op)) + " or " +
                                           gemm_tile_name(swap_pair_tile_config(op)) +
                                           " (device pick)");
  }
  const std::vector<std::pair<std::vector<int>, bool>> layouts = {
      {{256, 256}, true}, {{17, 495}, false}, {{0, 0}, true}};
  for (const auto& [sizes, pair_pays] : layouts) {
    SCOPED_TRACE(std::to_string(sizes[0]) + " + " + std::to_string(sizes[1]) + " rows");
    std::vector<int32_t> offsets{0, sizes[0], sizes[0] + sizes[1]};
    DeviceArray<int32_t> d_off(offsets);
    const std::vector<double> ref = reference(op, o, sizes, false);
    GroupedGemmOperands ops;
    ops.group_offsets = d_off.get();
    ops.a = d_a.get();
    ops.b = d_b.get();
    ops.d = d_d.get();
    ops.rows_hint = rows;
    // Each gated runner alone: the result, or nothing at all.
    const std::pair<const GroupedGemm*, GemmRunGate> gated[] = {
        {swap.get(), GemmRunGate::kUnlessPairPays}, {pair.get(), GemmRunGate::kIfPairPays}};
    for (const auto& [gemm, gate] : gated) {
      const bool works = (gate == GemmRunGate::kIfPairPays) == pair_pays;
      SCOPED_TRACE(gate == GemmRunGate::kIfPairPays ? "pair, if it pays" : "2x1, unless");
      d_d.poison();
      ops.gate = gate;
      gemm->run(ops, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_d_matches(d_d.download(), works ? ref : std::vector<double>{}, n, tolerance(op));
    }
    // create()'s GEMM: both launched, one works.
    d_d.poison();
    ops.gate = GemmRunGate::kAlways;
    picked->run(ops, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_d_matches(d_d.download(), ref, n, tolerance(op));
  }
  // A gate on a format without the pair is an error, not a silent run: every operand the run
  // needs is there (one buffer), so only the gate is wrong.
  auto fp8 = make_grouped_gemm_fp8_block128({GemmOperand::kFP8Block128, 2, 2880, 2944, 64}, 0);
  DeviceArray<int32_t> zeros(std::vector<int32_t>(3, 0));
  DeviceArray<float> buf(1 << 16);
  GroupedGemmOperands bad;
  bad.group_offsets = zeros.get();
  bad.a = bad.b = bad.d = buf.get();
  bad.a_block_scale = bad.b_block_scale = buf.get();
  bad.gate = GemmRunGate::kIfPairPays;
  EXPECT_THROW(fp8->run(bad, nullptr), Error);
  bad.gate = GemmRunGate::kAlways;
  fp8->run(bad, nullptr);  // empty groups: runs, writes nothing
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// The ping-pong swap-AB bf16 tile (128 weight rows x 144 tokens), k-steps of 64 and of 128: N =
// 3712 is 29 weight tiles (an odd count: the 2x1 cluster's last pair has a tile past N).
TEST(GroupedGemmCuda, BF16SwapPingpong) {
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap_pp);
  run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap_pp_k128);
}
// create() builds the ping-pong swap tile at the card's k-step (swap_pp_tile_k: the device's name,
// unless SERVEKIT_GEMM_PP_TILE_K says 64 or 128); any other value throws, for every format.
TEST(GroupedGemmCuda, SwapPingpongStepPerCard) {
  SERVEKIT_REQUIRE_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(swap_pp_tile_k(0), swap_pp_tile_k_for_device(prop.name)) << prop.name;
  const testing::ScopedEnv tile("SERVEKIT_GEMM_TILE", "swap");
  GroupedGemmShape pp{GemmOperand::kBF16, 5, 3712, 2880, 318};
  pp.swap_pingpong = true;
  EXPECT_TRUE(GroupedGemm::create(pp, 0)->config().tile ==
              swap_pp_tile_config(GemmOperand::kBF16, swap_pp_tile_k(0)));
  for (int k : {64, 128}) {
    const testing::ScopedEnv step("SERVEKIT_GEMM_PP_TILE_K", std::to_string(k).c_str());
    EXPECT_EQ(swap_pp_tile_k(0), k);
    EXPECT_TRUE(GroupedGemm::create(pp, 0)->config().tile ==
                swap_pp_tile_config(GemmOperand::kBF16, k));
  }
  const testing::ScopedEnv step("SERVEKIT_GEMM_PP_TILE_K", "96");
  EXPECT_THROW(swap_pp_tile_k(0), Error);
  EXPECT_THROW(GroupedGemm::create(pp, 0), Error);
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kFP8Block128, 5, 2880, 2944, 318}, 0), Error);
}
// B's group stride (b_group_stride): every group on one matrix (what the GEMM probe times) and
// groups with padding between them, on the swap-AB tile (B is the kernel's A operand there) and
// the 128-row tile, and on fp8_block128 (codes move, scales stay per group). A stride that is not
// -1 or 0 must be a multiple of K of at least N*K, else the run throws.
TEST(GroupedGemmCuda, BGroupStride) {
  for (BLayout layout : {BLayout::kShared, BLayout::kPadded}) {
    SCOPED_TRACE(layout == BLayout::kShared ? "shared" : "padded");
    run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap_pp, {0}, layout);
    run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16_swap_pair, {0}, layout);
    run_case(GemmOperand::kBF16, 3712, 2880, make_grouped_gemm_bf16, {0}, layout);
    run_case(GemmOperand::kFP8Block128, 2880, 2944, make_grouped_gemm_fp8_block128, {0}, layout);
  }
  SERVEKIT_REQUIRE_GPU();
  auto gemm = make_grouped_gemm_bf16({GemmOperand::kBF16, 5, 256, 128, 318}, 0);
  DeviceArray<int32_t> d_off(std::vector<int32_t>{0, 1, 1, 1, 1, 1});
  DeviceArray<uint16_t> buf(256 * 128 * 5);
  GroupedGemmOperands ops;
  ops.group_offsets = d_off.get();
  ops.a = ops.b = ops.d = buf.get();
  for (int64_t bad : {int64_t{-2}, int64_t{1}, int64_t{255 * 128}, int64_t{256 * 128 + 64}}) {
    ops.b_group_stride = bad;
    EXPECT_THROW(gemm->run(ops, nullptr), Error) << bad;
  }
}

// create() picks the tile per run from the rows hint over its 5 groups: `small` rows take the
// 64-row tile, `large` rows and no hint (capacity 318, ~64 each) the 128-row one and `swap` rows
// (bf16) the swap-AB one; all on the same object, in turn, results checked each time.
// (SERVEKIT_GEMM_TILE must be unset.)
void expect_tile_per_run(GemmOperand op, int64_t n, int64_t k, int64_t small, int64_t large,
                         int64_t swap = 0) {
  SERVEKIT_REQUIRE_GPU();
  auto gemm = GroupedGemm::create({op, 5, n, k, 318}, 0);
  EXPECT_EQ(gemm->config(small).tile.tile_m, 64);
  EXPECT_EQ(gemm->config(0).tile.tile_m, 128);
  EXPECT_FALSE(gemm->config(0).tile.swap_ab);
  EXPECT_EQ(gemm->config(large).tile.tile_m, 128);
  EXPECT_FALSE(gemm->config(large).tile.swap_ab);
  std::vector<int64_t> hints{small, 0, large, small};
  if (swap > 0) {
    EXPECT_TRUE(gemm->config(swap).tile.swap_ab);
    hints.insert(hints.begin() + 2, swap);
    hints.push_back(swap);
  }
  run_case(op, n, k, nullptr, hints);
}
// bf16: 30 rows per group (150) is small, 128 (640) swap-AB, 1000 (5000) large.
TEST(GroupedGemmCuda, BF16PicksTheTilePerRun) {
  expect_tile_per_run(GemmOperand::kBF16, 3712, 2880, 150, 5000, 640);
}
TEST(GroupedGemmCuda, FP8PerTensor) {
  run_case(GemmOperand::kFP8PerTensor, 3712, 2880);
}
// Block scales need K % 128 == 0: K = 2944 (23 blocks); N = 2880 ends in a half block.
TEST(GroupedGemmCuda, FP8Block128) {
  run_case(GemmOperand::kFP8Block128, 2880, 2944);
}
// The 128-row fp8_block128 tile's mainloop alternates two wgmma fragments per k-tile
// (sm90_blockwise_overlap.cuh): one k-tile (no steady state), two and four (even: the paired
// loop only), three (odd: the paired loop and one more), 16 (deepseek-v3's K = 2048) and the 23
// of K = 2944 above.
TEST(GroupedGemmCuda, FP8Block128KTileCounts) {
  for (int64_t k : {128, 256, 384, 512, 2048}) {
    SCOPED_TRACE("k " + std::to_string(k));
    run_case(GemmOperand::kFP8Block128, 2880, k, make_grouped_gemm_fp8_block128);
  }
}
// The 128x256 tile promotes in 128-column halves (sm90_blockwise_halves.cuh): N = 2880 ends in a
// tile whose second half is wholly out of bounds and whose first half ends in a half scale
// block; N = 4096 (deepseek-v3's GEMM1) has whole tiles only; K from one k-tile to 23.
TEST(GroupedGemmCuda, FP8Block128TileEdges) {
  for (int64_t n : {2880, 4096})
    for (int64_t k : {128, 384, 2944}) {
      SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(k));
      run_case(GemmOperand::kFP8Block128, n, k, make_grouped_gemm_fp8_block128);
    }
}
// The 64-row ping-pong fp8_block128 tile (64x128: the half scale block at N's end is a whole
// partial tile here).
TEST(GroupedGemmCuda, FP8Block128SmallM) {
  run_case(GemmOperand::kFP8Block128, 2880, 2944, make_grouped_gemm_fp8_block128_small_m);
}
// fp8_block128 has the lower boundary (26 rows): 10 rows per group (50) is small, 30 (150) large.
TEST(GroupedGemmCuda, FP8Block128PicksTheTilePerRun) {
  expect_tile_per_run(GemmOperand::kFP8Block128, 2880, 2944, 50, 150);
}

// A run's groups on the device as the GEMM and the activation pass read them: the offsets [G + 1]
// of `sizes`, and the group of each of `capacity` rows (rows past the last group in group 0).
struct DeviceGroups {
  DeviceArray<int32_t> offsets, row_group;
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
DeviceGroups device_groups(const std::vector<int>& sizes, int64_t capacity) {
  std::vector<int32_t> offsets{0}, row_group;
  for (size_t g = 0; g < sizes.size(); ++g) {
    offsets.push_back(offsets.back() + sizes[g]);
    row_group.insert(row_group.end(), static_cast<size_t>(sizes[g]), static_cast<int>(g));
  }
  row_group.resize(static_cast<size_t>(capacity), 0);
  return {DeviceArray<int32_t>(offsets), DeviceArray<int32_t>(row_group),
          static_cast<int>(sizes.size()), offsets.back()};
}

// A fused run against GEMM1 into D followed by the activation pass: the fused run wrote no D
// (sm90_act_epilogue.cuh; every element of d_h keeps the poison), the same bytes in the first
// `total` rows of the [rows, inter] intermediate (elements of `bytes` bytes), and its guard rows
// still poisoned.
void expect_fused_equals_pass(const DeviceArray<uint16_t>& d_h, const DeviceArray<uint8_t>& pass,
                              const DeviceArray<uint8_t>& fused, int64_t total, int64_t inter,
                              size_t bytes) {
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

// GEMM1's activation in the 128x256 tile's epilogue (sm90_act_epilogue.cuh) against GEMM1 into
// D followed by the activation pass on the interleaved D: the same bits, intermediate and 1x128
// scales, and no D written by the fused run, for each output format the operand allows,
// the three gated activations, with and without a bias, and the group layouts of run_case (empty
// groups, a 0-row run, tiles with 65, 64 and 61 rows). Rows past the last group must keep the
// poison. B is random, so which rows are "gate" only matters to both paths alike.
void run_fused_activation_case(GemmOperand op, ActFormat f, Factory factory, int64_t inter,
                               int64_t k, int interleave = 128) {
  SERVEKIT_REQUIRE_GPU();
  const int groups = 5;
  const int64_t rows = 318, n = 2 * inter, kb = inter / 128;
  const std::vector<std::vector<int>> layouts = {
      {17, 0, 300, 1, 0}, {0, 0, 0, 0, 0}, {65, 128, 0, 64, 61}};
  const Operands o = make_operands(op, groups, rows, n, k, 99 + static_cast<int>(op));
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> unit(-0.5f, 0.5f);
  std::vector<float> bias(static_cast<size_t>(groups * n));
  for (auto& b : bias) b = unit(rng);
  DeviceArray<uint8_t> d_a(o.a), d_b(o.b);
  DeviceArray<float> d_b_scale(op == GemmOperand::kFP8Block128 ? gemm_b_block_scales(o)
                                                               : std::vector<float>{});
  DeviceArray<float> d_bias(bias);
  DeviceArray<uint16_t> d_h(static_cast<size_t>(rows * n));
  const size_t bytes = act_element_bytes(f);
  DeviceArray<uint8_t> out_pass(static_cast<size_t>((rows + kGuardRows) * inter) * bytes);
  DeviceArray<uint8_t> out_fused(static_cast<size_t>((rows + kGuardRows) * inter) * bytes);
  DeviceArray<float> sc_pass(static_cast<size_t>(rows * kb)),
      sc_fused(static_cast<size_t>(rows * kb));

  for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI}) {
    GroupedGemmShape shape{op, groups, n, k, rows};
    shape.act = {true, act, f, interleave};
    auto gemm = factory(shape, 0);
    ASSERT_TRUE(gemm->fuses_activation());
    for (bool with_bias : {false, true})
      for (const auto& sizes : layouts) {
        SCOPED_TRACE("activation " + std::to_string(static_cast<int>(act)) + " format " +
                     std::to_string(static_cast<int>(f)) + (with_bias ? " bias" : "") +
                     " first group " + std::to_string(sizes[0]));
        const DeviceGroups dg = device_groups(sizes, rows);
        DeviceArray<float> d_a_blocks(op == GemmOperand::kFP8Block128 ? grouped_a_scales(o, sizes)
                                                                      : std::vector<float>{});
        GroupedGemmOperands ops;
        ops.group_offsets = dg.offsets.get();
        ops.a = d_a.get();
        ops.b = d_b.get();
        if (op == GemmOperand::kFP8Block128) {
          ops.a_block_scale = d_a_blocks.get();
          ops.b_block_scale = d_b_scale.get();
        }
        const float* b13 = with_bias ? d_bias.get() : nullptr;
        // The separate pass.
        out_pass.poison();
        sc_pass.poison();
        ops.d = d_h.get();
        gemm->run(ops, nullptr);
        const ActBuffers ab{out_pass.get(), sc_pass.get(), nullptr, nullptr};
        launch_activation_quantize(f, act, d_h.get(), b13, inter, dg.plan(), rows, ab, nullptr,
                                   false, interleave);
        // The fused epilogue.
        out_fused.poison();
        sc_fused.poison();
        d_h.poison();
        ops.act_out = out_fused.get();
        ops.act_out_scale = f == ActFormat::kFP8Block128 ? sc_fused.get() : nullptr;
        ops.act_bias = b13;
        gemm->run(ops, nullptr);
        ops.act_out = nullptr;
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

        expect_fused_equals_pass(d_h, out_pass, out_fused, dg.total, inter, bytes);
        if (f == ActFormat::kFP8Block128) {
          const std::vector<float> ws = sc_pass.download(), gs = sc_fused.download();
          for (size_t i = 0; i < static_cast<size_t>(dg.total * kb); ++i)
            ASSERT_EQ(std::memcmp(&ws[i], &gs[i], sizeof(float)), 0)
                << "scale " << i << ": " << gs[i] << " vs " << ws[i];
        }
      }
  }
}

// bf16 operands: the bf16 intermediate and mxfp4_w4a8's e4m3 round trip stored as bf16.
// I = 1408: N = 2I is 11 tiles of 256, so the 1x2 cluster's last pair has a tile past N, which
// must write nothing (it wrote into the next row once). K = 2880.
TEST(GroupedGemmCuda, BF16FusedActivation) {
  for (ActFormat f : {ActFormat::kBF16, ActFormat::kFP8Block128AsBF16})
    run_fused_activation_case(GemmOperand::kBF16, f, make_grouped_gemm_bf16, 1408, 2880);
}
// The same on W13 in 64-row gate/up blocks (what GEMM1's ping-pong swap tile asks for), the
// 128x256 tile's second bf16 instantiation: it pairs flat values 32 apart.
TEST(GroupedGemmCuda, BF16FusedActivationOn64RowInterleave) {
  for (ActFormat f : {ActFormat::kBF16, ActFormat::kFP8Block128AsBF16})
    run_fused_activation_case(GemmOperand::kBF16, f, make_grouped_gemm_bf16_w64, 1408, 2880, 64);
}
// fp8_block128: e4m3 intermediate with 1x128 scales. I = 1152 (9 tiles along N, the last pair
// with a tile past N), K = 2944 (23 scale blocks).
TEST(GroupedGemmCuda, FP8Block128FusedActivation) {
  run_fused_activation_case(GemmOperand::kFP8Block128, ActFormat::kFP8Block128,
                            make_grouped_gemm_fp8_block128, 1152, 2944);
}
// bf16's swap-AB tile (256 weight rows x 144 tokens) with the bf16 intermediate: I = 1408 makes
// N = 2I 11 tiles of 256 weight rows, so the 2x1 cluster's last pair has a tile past N; the
// 300-row group spans three token tiles (the last one 12 rows).
TEST(GroupedGemmCuda, BF16SwapFusedActivation) {
  run_fused_activation_case(GemmOperand::kBF16, ActFormat::kBF16, make_grouped_gemm_bf16_swap, 1408,
                            2880);
}
// The pair swap-AB tile with the bf16 intermediate: as above, with token tiles wholly past a
// group in every group of one or three token tiles (the activation's stores must clip them).
TEST(GroupedGemmCuda, BF16SwapPairFusedActivation) {
  run_fused_activation_case(GemmOperand::kBF16, ActFormat::kBF16, make_grouped_gemm_bf16_swap_pair,
                            1408, 2880);
}
// The ping-pong swap-AB tile (128 weight rows x 144 tokens) on its 64-row interleave: 22 weight
// tiles of 128 rows, I = 1408 = 22 x 64.
TEST(GroupedGemmCuda, BF16SwapPingpongFusedActivation) {
  run_fused_activation_case(GemmOperand::kBF16, ActFormat::kBF16, make_grouped_gemm_bf16_swap_pp,
                            1408, 2880, 64);
  run_fused_activation_case(GemmOperand::kBF16, ActFormat::kBF16,
                            make_grouped_gemm_bf16_swap_pp_k128, 1408, 2880, 64);
}
// The 64-row tile has no fused epilogue, and the swap-AB tile none for an e4m3 intermediate
// (mxfp4_w4a8's round trip): they report it, and a run that asks for it throws; a fused shape
// whose output format does not match the operand is refused at construction.
TEST(GroupedGemmCuda, FusedActivationOnlyWhereTheTileHasIt) {
  SERVEKIT_REQUIRE_GPU();
  GroupedGemmShape shape{GemmOperand::kBF16, 5, 3072, 2880, 318};
  shape.act = {true, Activation::kSwiGLU, ActFormat::kBF16};
  auto small = make_grouped_gemm_bf16_small_m(shape, 0);
  EXPECT_FALSE(small->fuses_activation());
  auto swap = make_grouped_gemm_bf16_swap(shape, 0);
  EXPECT_TRUE(swap->fuses_activation());
  auto picked = GroupedGemm::create(shape, 0);
  EXPECT_FALSE(picked->fuses_activation(150));  // 30 rows per group: the 64-row tile
  EXPECT_TRUE(picked->fuses_activation(640));   // 128 rows per group: the swap-AB tile
  EXPECT_TRUE(picked->fuses_activation(5000));
  GroupedGemmShape e4m3 = shape;
  e4m3.act.format = ActFormat::kFP8Block128AsBF16;
  auto swap_e4m3 = make_grouped_gemm_bf16_swap(e4m3, 0);
  EXPECT_FALSE(swap_e4m3->fuses_activation());
  // Each swap tile fuses on its own interleave only: cooperative 128 rows, ping-pong 64.
  GroupedGemmShape rows64 = shape;
  rows64.act.interleave_rows = 64;
  EXPECT_FALSE(make_grouped_gemm_bf16_swap(rows64, 0)->fuses_activation());
  EXPECT_TRUE(make_grouped_gemm_bf16_swap_pp(rows64, 0)->fuses_activation());
  EXPECT_FALSE(make_grouped_gemm_bf16_swap_pp(shape, 0)->fuses_activation());
  EXPECT_FALSE(make_grouped_gemm_bf16(rows64, 0)->fuses_activation());  // compiled for 128
  EXPECT_TRUE(make_grouped_gemm_bf16_w64(rows64, 0)->fuses_activation());
  EXPECT_FALSE(make_grouped_gemm_bf16_w64(shape, 0)->fuses_activation());
  EXPECT_TRUE(GroupedGemm::create(rows64, 0)->fuses_activation(5000));  // create() takes w64
  GroupedGemmShape rows64_pp = rows64;
  rows64_pp.swap_pingpong = true;
  EXPECT_TRUE(GroupedGemm::create(rows64_pp, 0)->fuses_activation(640));  // the ping-pong swap
  EXPECT_FALSE(GroupedGemm::create(rows64, 0)->fuses_activation(640));    // the cooperative one
  auto picked_e4m3 = GroupedGemm::create(e4m3, 0);
  EXPECT_FALSE(picked_e4m3->fuses_activation(640));  // the swap-AB tile: the pass
  EXPECT_TRUE(picked_e4m3->fuses_activation(5000));  // the 128-row tile fuses it
  DeviceArray<int32_t> d_off(std::vector<int32_t>{0, 1, 1, 1, 1, 1});
  DeviceArray<uint16_t> buf(4096);
  GroupedGemmOperands ops;
  ops.group_offsets = d_off.get();
  ops.a = ops.b = ops.d = buf.get();
  ops.act_out = buf.get();
  EXPECT_THROW(small->run(ops, nullptr), Error);
  EXPECT_THROW(swap_e4m3->run(ops, nullptr), Error);
  shape.act.format = ActFormat::kFP8Block128;  // bf16 operand, e4m3 intermediate
  EXPECT_THROW(make_grouped_gemm_bf16(shape, 0), Error);
  shape.act.format = ActFormat::kBF16;
  for (int bad : {0, 32, 256}) {
    shape.act.interleave_rows = bad;
    EXPECT_THROW(make_grouped_gemm_bf16(shape, 0), Error) << bad;
  }
  shape.act.interleave_rows = 128;
  shape.act = {true, Activation::kReLU2, ActFormat::kBF16};  // not gated
  EXPECT_THROW(make_grouped_gemm_bf16(shape, 0), Error);
}

// A misspelt SERVEKIT_GEMM_TILE is an error, for every format (not a silent auto).
TEST(GroupedGemmCuda, RejectsAnUnknownTileChoice) {
  SERVEKIT_REQUIRE_GPU();
  {
    const testing::ScopedEnv tile("SERVEKIT_GEMM_TILE", "smal");
    EXPECT_THROW(GroupedGemm::create({GemmOperand::kBF16, 5, 3712, 2880, 318}, 0), Error);
    EXPECT_THROW(GroupedGemm::create({GemmOperand::kFP8PerTensor, 5, 3712, 2880, 318}, 0), Error);
  }
  const testing::ScopedEnv tile("SERVEKIT_GEMM_TILE", "auto");
  EXPECT_NO_THROW(GroupedGemm::create({GemmOperand::kFP8Block128, 5, 2880, 2944, 318}, 0));
}

// SERVEKIT_GEMM_TILE=pair forces bf16's pair swap tile, or the ping-pong swap tile where that is
// the GEMM's swap tile (it has no pair), or fp8_block128's 128-row tile. The routing hint (tile
// pick only) is checked at create; with it, the auto pick judges the pair on a routed group's
// rows: 4 routed experts and 1 shared, top-3, 337 tokens: 1348 rows, 269 per group (the
// cooperative swap tile's range, where the pair would not pay) but 252 per routed group (where it
// does). The default pick (auto) leaves both to the device there because of the shared group
// (SERVEKIT_GEMM_PAIR_PICK=device too), the host pick keeps the 2x1 tile, and both take the pair
// without it (4 routed groups, 1008 rows); without the hint, the 2x1 swap tile alone.
TEST(GroupedGemmCuda, PairTileChoiceAndRoutingHint) {
  SERVEKIT_REQUIRE_GPU();
  {
    const testing::ScopedEnv tile("SERVEKIT_GEMM_TILE", "pair");
    const GemmConfig pair =
        GroupedGemm::create({GemmOperand::kBF16, 5, 3712, 2880, 318}, 0)->config();
    EXPECT_TRUE(pair.tile == swap_pair_tile_config(GemmOperand::kBF16));
    GroupedGemmShape pp{GemmOperand::kBF16, 5, 3712, 2880, 318};
    pp.swap_pingpong = true;
    EXPECT_TRUE(GroupedGemm::create(pp, 0)->config().tile ==
                swap_pp_tile_config(GemmOperand::kBF16, swap_pp_tile_k(0)));
    EXPECT_TRUE(
        GroupedGemm::create({GemmOperand::kFP8Block128, 5, 2880, 2944, 318}, 0)->config().tile ==
        compiled_tile_config(GemmOperand::kFP8Block128));
  }
  GroupedGemmShape shape{GemmOperand::kBF16, 5, 3712, 2880, 1348};
  for (GemmRoutingHint bad : {GemmRoutingHint{8, 0, 0}, GemmRoutingHint{0, 1, 4},
                              GemmRoutingHint{8, 5, 4}, GemmRoutingHint{8, -1, 4}}) {
    shape.routing = bad;
    EXPECT_THROW(GroupedGemm::create(shape, 0), Error)
        << bad.top_k << " " << bad.shared_groups << " " << bad.experts;
  }
  shape.routing = {3, 1, 4};
  ASSERT_EQ(routed_rows_per_group(shape.routing, 1348, 5), 252);
  ASSERT_TRUE(swap_pair_pays(GemmOperand::kBF16, 252));
  ASSERT_FALSE(swap_pair_pays(GemmOperand::kBF16, 1348 / 5));
  const std::string swap = gemm_tile_name(swap_ab_tile_config(GemmOperand::kBF16));
  const std::string pair = gemm_tile_name(swap_pair_tile_config(GemmOperand::kBF16));
  const std::string either = kAutoSwapPair ? swap + " or " + pair + " (device pick)" : swap;
  EXPECT_EQ(GroupedGemm::create(shape, 0)->tile_name(1348), either);
  {
    const testing::ScopedEnv pick("SERVEKIT_GEMM_PAIR_PICK", "host");
    EXPECT_EQ(GroupedGemm::create(shape, 0)->tile_name(1348), swap);
  }
  {
    const testing::ScopedEnv pick("SERVEKIT_GEMM_PAIR_PICK", "device");
    auto device = GroupedGemm::create(shape, 0);
    EXPECT_TRUE(device->config(1348).tile == swap_ab_tile_config(GemmOperand::kBF16));
    EXPECT_EQ(device->tile_name(1348), either);
  }
  {
    const testing::ScopedEnv pick("SERVEKIT_GEMM_PAIR_PICK", "gpu");
    EXPECT_THROW(GroupedGemm::create(shape, 0), Error);
  }
  GroupedGemmShape routed{GemmOperand::kBF16, 4, 3712, 2880, 1008};
  routed.routing = {3, 0, 4};
  ASSERT_EQ(routed_rows_per_group(routed.routing, 1008, 4), 252);
  EXPECT_EQ(GroupedGemm::create(routed, 0)->tile_name(1008), kAutoSwapPair ? pair : swap);
  {
    const testing::ScopedEnv pick("SERVEKIT_GEMM_PAIR_PICK", "host");
    EXPECT_EQ(GroupedGemm::create(routed, 0)->tile_name(1008), kAutoSwapPair ? pair : swap);
  }
  shape.routing = {};
  EXPECT_EQ(GroupedGemm::create(shape, 0)->tile_name(1348), swap);
}

// Random int4_w4a16 operands for make_grouped_gemm_w4a16: bf16 rows [rows, K], and per expert a
// quant.h int4_w4a16 matrix ([N, K/2] codes, every nibble value; [N, K/G] bf16 scales) converted
// by the layer's own w4a16_gemm_layout. `o` holds what reference() needs: B's values
// bf16(code * scale) (the convert-and-scale mainloop rounds the product once, as __hmul does),
// one block over K, scales 1.
struct W4A16Operands {
  Operands o;
  std::vector<uint8_t> codes;    // [G, N, K/2], quant.h's order (not yet reordered)
  std::vector<uint16_t> scales;  // [G, K/G, N]
};

W4A16Operands make_w4a16_operands(int64_t n, int64_t k, int group, int groups, int64_t rows) {
  std::mt19937_64 rng(4321 + static_cast<uint64_t>(group));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), pos(0.5f, 2.0f);
  W4A16Operands w;
  Operands& o = w.o;
  o.n = n, o.k = k, o.rows = rows, o.groups = groups, o.k_block = k;
  o.a.resize(static_cast<size_t>(rows * k) * 2);
  o.a_val.resize(static_cast<size_t>(rows * k));
  for (size_t i = 0; i < o.a_val.size(); ++i) {
    const uint16_t b16 = float_to_bf16(unit(rng));
    std::memcpy(&o.a[2 * i], &b16, 2);
    o.a_val[i] = bf16_to_float(b16);
  }
  o.a_scale.assign(static_cast<size_t>(rows), 1.0);
  o.b_scale.assign(static_cast<size_t>(groups * n), 1.0);
  o.b_val.resize(static_cast<size_t>(groups * n * k));
  for (int g = 0; g < groups; ++g) {
    QuantizedMatrix m;
    m.method = QuantMethod::kInt4W4A16;
    m.group_size = group;
    m.rows = n, m.cols = k;
    m.codes.resize(static_cast<size_t>(n * k / 2));
    m.scales.resize(static_cast<size_t>(n * (k / group)) * 2);
    for (auto& b : m.codes) b = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < m.scales.size() / 2; ++i) {
      const uint16_t s16 = float_to_bf16(pos(rng) / 8.0f * (rng() & 1 ? 1.0f : -1.0f));
      std::memcpy(&m.scales[2 * i], &s16, 2);
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const uint8_t byte = m.codes[static_cast<size_t>((r * k + c) / 2)];
        uint16_t s16;
        std::memcpy(&s16, &m.scales[2 * static_cast<size_t>(r * (k / group) + c / group)], 2);
        const float v =
            static_cast<float>(int4_to_int(c % 2 ? byte >> 4 : byte & 15)) * bf16_to_float(s16);
        o.b_val[static_cast<size_t>((g * n + r) * k + c)] = bf16_to_float(float_to_bf16(v));
      }
    const GemmWeightHost h = w4a16_gemm_layout(m, n, k);
    w.codes.insert(w.codes.end(), h.codes.begin(), h.codes.end());
    w.scales.insert(w.scales.end(), h.group_scales.begin(), h.group_scales.end());
  }
  return w;
}

// The codes on the device, each expert's reordered as the layer loads them.
DeviceArray<uint8_t> w4a16_device_codes(const W4A16Operands& w) {
  DeviceArray<uint8_t> d(w.codes);
  const int64_t n = w.o.n, k = w.o.k;
  for (int g = 0; g < w.o.groups; ++g)
    w4a16_reorder_codes(d.get() + static_cast<size_t>(g * n * k / 2), n, k);
  return d;
}

// The runs of the int4 GEMM's tests: the default (the 128- and 256-token tiles in pairs of
// weight tiles) and every tile alone (SERVEKIT_GEMM_W4A16_CLUSTER=1), each by its rows_hint over
// 5 groups of a 318-row capacity: 0 (the capacity, 63 rows per group, the 128-token tile), 200
// (40, the 64-token one), 2000 (400, the 256-token one; w4a16_tile_n).
struct W4A16Run {
  const GroupedGemm* gemm;
  int64_t hint;
  const char* tile;
};
struct W4A16Gemms {
  std::unique_ptr<GroupedGemm> pairs, single;
  std::vector<W4A16Run> runs() const {
    return {{pairs.get(), 0, "128x128x64 swap-AB cooperative cluster 2x1"},
            {pairs.get(), 200, "128x64x64 swap-AB cooperative cluster 1x1"},
            {pairs.get(), 2000, "128x256x64 swap-AB cooperative cluster 2x1"},
            {single.get(), 0, "128x128x64 swap-AB cooperative cluster 1x1"},
            {single.get(), 2000, "128x256x64 swap-AB cooperative cluster 1x1"}};
  }
};
W4A16Gemms make_w4a16_gemms(const GroupedGemmShape& shape) {
  W4A16Gemms g;
  g.pairs = make_grouped_gemm_w4a16(shape, 0);
  const testing::ScopedEnv single("SERVEKIT_GEMM_W4A16_CLUSTER", "1");
  g.single = make_grouped_gemm_w4a16(shape, 0);
  return g;
}

// make_grouped_gemm_w4a16 with one bf16 scale per `group` K elements against bf16 rows, in the
// five group layouts of run_case (empty groups, 300 rows over several token tiles, all groups
// empty), on all three tiles, the two wider ones also in clusters of two weight tiles (N = 2896's
// odd 23 weight tiles leave the last cluster half outside the matrix). The reference takes
// exactly the kernel's weights (make_w4a16_operands): what remains is fp32 accumulation and the
// bf16 rounding of D, bf16's tolerance (3e-3 relative L2, 1/256 per element; a wrong nibble
// order, scale group or scale transpose is off by O(rms)).
void run_w4a16_case(int64_t n, int64_t k, int group) {
  SERVEKIT_REQUIRE_GPU();
  SCOPED_TRACE("w4a16 n=" + std::to_string(n) + " k=" + std::to_string(k) + " group " +
               std::to_string(group));
  const int groups = kLayoutGroups;
  const int64_t rows = kLayoutRows;
  const W4A16Operands w = make_w4a16_operands(n, k, group, groups, rows);
  GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, rows};
  shape.weight_group = group;
  const W4A16Gemms gemms = make_w4a16_gemms(shape);
  EXPECT_FALSE(gemms.pairs->fuses_activation(0));
  DeviceArray<uint8_t> d_a(w.o.a), d_b = w4a16_device_codes(w);
  DeviceArray<uint16_t> d_s(w.scales);
  DeviceArray<uint16_t> d_d(static_cast<size_t>((rows + kGuardRows) * n));
  for (const W4A16Run& run : gemms.runs())
    for (const auto& sizes : kGroupLayouts) {
      SCOPED_TRACE(std::string(run.tile) + ", rows_hint " + std::to_string(run.hint));
      EXPECT_EQ(run.gemm->tile_name(run.hint), std::string(run.tile) + " int4 weights");
      std::vector<int32_t> offsets{0};
      for (int m : sizes) offsets.push_back(offsets.back() + m);
      DeviceArray<int32_t> d_off(offsets);
      d_d.poison();
      GroupedGemmOperands ops;
      ops.group_offsets = d_off.get();
      ops.a = d_a.get();
      ops.b = d_b.get();
      ops.b_group_scale = d_s.get();
      ops.d = d_d.get();
      ops.rows_hint = run.hint;
      run.gemm->run(ops, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_d_matches(d_d.download(), reference(GemmOperand::kBF16, w.o, sizes), n,
                       tolerance(GemmOperand::kBF16));
    }
}

// qwen3-235b's GEMM2 shape at group 128 (N = 4096 whole tiles), and N = 2896 (an 80-row last
// weight tile) with K = 2880 at group 64 (45 groups, odd).
TEST(GroupedGemmCuda, W4A16) {
  run_w4a16_case(4096, 1536, 128);
  run_w4a16_case(2896, 2880, 64);
}

// GEMM1's activation in the int4 GEMM's epilogue (W13 in 8-row gate/up blocks) against the same
// GEMM into D followed by the activation pass on the interleaved D: the same bits, and no D
// written, on every tile and cluster of run_w4a16_case, the three gated activations, with and
// without a bias, in the five group layouts. I = 1472: N = 2944 is 23 weight tiles of 128 rows,
// so the last pair has a tile past N, which must write nothing; K = 2880 at group 64.
TEST(GroupedGemmCuda, W4A16FusedActivation) {
  SERVEKIT_REQUIRE_GPU();
  const int groups = kLayoutGroups, group = 64;
  const int64_t rows = kLayoutRows, inter = 1472, n = 2 * inter, k = 2880;
  const W4A16Operands w = make_w4a16_operands(n, k, group, groups, rows);
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<float> unit(-0.5f, 0.5f);
  std::vector<float> bias(static_cast<size_t>(groups * n));
  for (auto& b : bias) b = unit(rng);
  DeviceArray<uint8_t> d_a(w.o.a), d_b = w4a16_device_codes(w);
  DeviceArray<uint16_t> d_s(w.scales);
  DeviceArray<float> d_bias(bias);
  DeviceArray<uint16_t> d_h(static_cast<size_t>(rows * n));
  DeviceArray<uint8_t> out_pass(static_cast<size_t>((rows + kGuardRows) * inter) * 2);
  DeviceArray<uint8_t> out_fused(static_cast<size_t>((rows + kGuardRows) * inter) * 2);
  for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI}) {
    GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, rows};
    shape.weight_group = group;
    shape.act = {true, act, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
    const W4A16Gemms gemms = make_w4a16_gemms(shape);
    for (const W4A16Run& run : gemms.runs()) {
      ASSERT_TRUE(run.gemm->fuses_activation(run.hint));
      for (bool with_bias : {false, true})
        for (const auto& sizes : kGroupLayouts) {
          SCOPED_TRACE(std::string(run.tile) + ", rows_hint " + std::to_string(run.hint) +
                       ", activation " + std::to_string(static_cast<int>(act)) +
                       (with_bias ? ", bias" : "") + ", first group " + std::to_string(sizes[0]));
          const DeviceGroups dg = device_groups(sizes, rows);
          GroupedGemmOperands ops;
          ops.group_offsets = dg.offsets.get();
          ops.a = d_a.get();
          ops.b = d_b.get();
          ops.b_group_scale = d_s.get();
          ops.rows_hint = run.hint;
          const float* b13 = with_bias ? d_bias.get() : nullptr;
          // The separate pass.
          out_pass.poison();
          ops.d = d_h.get();
          run.gemm->run(ops, nullptr);
          const ActBuffers ab{out_pass.get(), nullptr, nullptr, nullptr};
          launch_activation_quantize(ActFormat::kBF16, act, d_h.get(), b13, inter, dg.plan(), rows,
                                     ab, nullptr, false, static_cast<int>(kW4A16Interleave));
          // The fused epilogue.
          out_fused.poison();
          d_h.poison();
          ops.act_out = out_fused.get();
          ops.act_bias = b13;
          run.gemm->run(ops, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          expect_fused_equals_pass(d_h, out_pass, out_fused, dg.total, inter, 2);
        }
    }
  }
}

TEST(GroupedGemmCuda, W4A16RejectsWhatItCannotRun) {
  SERVEKIT_REQUIRE_GPU();
  auto shape = [](int64_t n, int64_t k, int group) {
    GroupedGemmShape s{GemmOperand::kBF16, 4, n, k, 64};
    s.weight_group = group;
    return s;
  };
  EXPECT_NO_THROW(make_grouped_gemm_w4a16(shape(3712, 2944, 128), 0));
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3712, 2944, 32), 0), Error);   // group 32
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3712, 2880, 128), 0), Error);  // K % 128
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3720, 2944, 128), 0), Error);  // N % 16
  GroupedGemmShape fused = shape(3712, 2944, 128);
  fused.act = {true, Activation::kSwiGLU, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
  EXPECT_NO_THROW(make_grouped_gemm_w4a16(fused, 0));
  fused.act.interleave_rows = 128;  // the bf16 tiles' interleave
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  fused.act.interleave_rows = static_cast<int>(kW4A16Interleave);
  fused.act.format = ActFormat::kFP8Block128AsBF16;
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  fused.act.format = ActFormat::kBF16;
  fused.act.activation = Activation::kReLU2;  // not gated
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  GroupedGemmShape fused_odd = shape(3648, 2944, 128);  // N = 2I with I = 1824, not % 64
  fused_odd.act = {true, Activation::kSwiGLU, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
  EXPECT_THROW(make_grouped_gemm_w4a16(fused_odd, 0), Error);
  // act_out on a runner built without shape.act.
  {
    auto plain = make_grouped_gemm_w4a16(shape(3712, 2944, 128), 0);
    GroupedGemmOperands ops;
    int32_t dummy = 0;
    ops.group_offsets = &dummy;
    ops.a = ops.b = ops.b_group_scale = ops.d = ops.act_out = &dummy;
    EXPECT_THROW(plain->run(ops, nullptr), Error);
  }
  GroupedGemmShape fp8 = shape(3712, 2944, 128);
  fp8.operand = GemmOperand::kFP8Block128;
  EXPECT_THROW(make_grouped_gemm_w4a16(fp8, 0), Error);
}

// SERVEKIT_GEMM_W4A16_TILE forces one tile for every run; a bad value is refused by name.
TEST(GroupedGemmCuda, W4A16TileSwitch) {
  SERVEKIT_REQUIRE_GPU();
  GroupedGemmShape s{GemmOperand::kBF16, 4, 3072, 4096, 4096};
  s.weight_group = 128;
  const char* name = "SERVEKIT_GEMM_W4A16_TILE";
  for (const char* v : {"64", "128", "256"}) {
    const testing::ScopedEnv tile(name, v);
    auto gemm = make_grouped_gemm_w4a16(s, 0);
    for (int64_t hint : {int64_t{8}, int64_t{400}, int64_t{4000}})
      EXPECT_EQ(gemm->tile_name(hint).rfind("128x" + std::string(v) + "x64 ", 0), 0u)
          << v << " rows_hint " << hint << ": " << gemm->tile_name(hint);
  }
  {
    const testing::ScopedEnv tile(name, "auto");
    EXPECT_EQ(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).rfind("128x256x64 ", 0), 0u);
    EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).find("cluster 2x1"),
              std::string::npos);
    EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(8).find("cluster 1x1"), std::string::npos);
    {
      const testing::ScopedEnv cluster("SERVEKIT_GEMM_W4A16_CLUSTER", "1");
      EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).find("cluster 1x1"),
                std::string::npos);
    }
    const testing::ScopedEnv cluster("SERVEKIT_GEMM_W4A16_CLUSTER", "4");
    EXPECT_THROW(make_grouped_gemm_w4a16(s, 0), Error);
  }
  const testing::ScopedEnv tile(name, "512");
  try {
    make_grouped_gemm_w4a16(s, 0);
    ADD_FAILURE() << "a bad tile was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

// Host only: the tile each routed group's expected rows gets, and the switch's values.
TEST(GroupedGemmW4A16Layout, TilePick) {
  EXPECT_EQ(w4a16_tile_n(1), 64);
  EXPECT_EQ(w4a16_tile_n(kW4A16NarrowTileMaxRows), 64);
  EXPECT_EQ(w4a16_tile_n(kW4A16NarrowTileMaxRows + 1), 128);
  EXPECT_EQ(w4a16_tile_n(kW4A16MidTileMaxRows), 128);
  EXPECT_EQ(w4a16_tile_n(kW4A16MidTileMaxRows + 1), 256);
  EXPECT_EQ(w4a16_tile_n(int64_t{1} << 40), 256);
  EXPECT_EQ(parse_w4a16_tile(""), 0);
  EXPECT_EQ(parse_w4a16_tile("auto"), 0);
  EXPECT_EQ(parse_w4a16_tile("64"), 64);
  EXPECT_EQ(parse_w4a16_tile("128"), 128);
  EXPECT_EQ(parse_w4a16_tile("256"), 256);
  EXPECT_FALSE(parse_w4a16_tile("32").has_value());
  EXPECT_FALSE(parse_w4a16_tile("0").has_value());
  EXPECT_FALSE(parse_w4a16_tile("Auto").has_value());
  EXPECT_EQ(parse_w4a16_cluster(""), kW4A16ClusterDefault);
  EXPECT_EQ(kW4A16ClusterDefault, 2);
  EXPECT_EQ(parse_w4a16_cluster("1"), 1);
  EXPECT_EQ(parse_w4a16_cluster("2"), 2);
  EXPECT_FALSE(parse_w4a16_cluster("4").has_value());
  EXPECT_FALSE(parse_w4a16_cluster("auto").has_value());
}

// Host only (runs without a GPU): the scales of each row's K groups become column r of a
// [K/G, N] matrix, the codes stay as quant.h packs them, and malformed matrices are refused.
TEST(GroupedGemmW4A16Layout, TransposesTheScalesAndKeepsTheCodes) {
  QuantizedMatrix m;
  m.method = QuantMethod::kInt4W4A16;
  m.group_size = 64;
  m.rows = 3, m.cols = 192;  // 3 groups per row
  m.codes.resize(3 * 96);
  for (size_t i = 0; i < m.codes.size(); ++i) m.codes[i] = static_cast<uint8_t>(i * 7);
  m.scales.resize(3 * 3 * 2);
  for (size_t i = 0; i < m.scales.size(); ++i) m.scales[i] = static_cast<uint8_t>(i);
  const GemmWeightHost w = w4a16_gemm_layout(m, 3, 192);
  EXPECT_EQ(w.codes, m.codes);
  ASSERT_EQ(w.group_scales.size(), 9u);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 3; ++j) {
      uint16_t want;
      std::memcpy(&want, &m.scales[2 * (r * 3 + j)], 2);
      EXPECT_EQ(w.group_scales[j * 3 + r], want) << "row " << r << " group " << j;
    }
  EXPECT_THROW(w4a16_gemm_layout(m, 3, 128), Error);  // wrong shape
  QuantizedMatrix short_scales = m;
  short_scales.scales.pop_back();
  EXPECT_THROW(w4a16_gemm_layout(short_scales, 3, 192), Error);
  QuantizedMatrix not_int4 = m;
  not_int4.method = QuantMethod::kMXFP4W4A16;
  EXPECT_THROW(w4a16_gemm_layout(not_int4, 3, 192), Error);
}

// Host only: interleave_w4a16_w13 puts logical W13 row interleaved_w13_row(p, I, 8) at physical
// row p -- 8 gate rows, then the same 8 up rows -- with each row's codes whole and its column of
// the [K/G, 2I] scales moved with it; a layout it cannot build is refused.
TEST(GroupedGemmW4A16Layout, InterleavesTheW13RowsWithTheirScales) {
  const int64_t inter = 16, rows = 2 * inter, cols = 128, groups = 2;  // group 64
  GemmWeightHost w;
  w.codes.resize(static_cast<size_t>(rows * cols / 2));
  for (size_t i = 0; i < w.codes.size(); ++i)  // row r's bytes all r, its last byte r + 100
    w.codes[i] = static_cast<uint8_t>(i / (cols / 2) + (i % (cols / 2) == cols / 2 - 1 ? 100 : 0));
  w.group_scales.resize(static_cast<size_t>(groups * rows));
  for (size_t i = 0; i < w.group_scales.size(); ++i)  // group j of row r: 1000 j + r
    w.group_scales[i] = static_cast<uint16_t>(1000 * (i / rows) + i % rows);
  GemmWeightHost v = w;
  interleave_w4a16_w13(v, inter, cols, kW4A16Interleave);
  // Physical rows 0-7 gate 0-7, 8-15 up 0-7 (logical 16-23), 16-23 gate 8-15, 24-31 up 8-15.
  const int64_t want[rows] = {0, 1, 2,  3,  4,  5,  6,  7,  16, 17, 18, 19, 20, 21, 22, 23,
                              8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
  for (int64_t p = 0; p < rows; ++p) {
    EXPECT_EQ(interleaved_w13_row(p, inter, kW4A16Interleave), want[p]) << "row " << p;
    for (int64_t b = 0; b < cols / 2; ++b)
      ASSERT_EQ(v.codes[static_cast<size_t>(p * cols / 2 + b)],
                w.codes[static_cast<size_t>(want[p] * cols / 2 + b)])
          << "row " << p << " byte " << b;
    for (int64_t j = 0; j < groups; ++j)
      EXPECT_EQ(v.group_scales[static_cast<size_t>(j * rows + p)], 1000 * j + want[p])
          << "row " << p << " group " << j;
  }
  GemmWeightHost bad = w;
  EXPECT_THROW(interleave_w4a16_w13(bad, 12, cols, kW4A16Interleave), Error);    // I % 8
  EXPECT_THROW(interleave_w4a16_w13(bad, inter, 256, kW4A16Interleave), Error);  // code bytes
  bad.group_scales.pop_back();
  EXPECT_THROW(interleave_w4a16_w13(bad, inter, cols, kW4A16Interleave), Error);
}

// Host only: the shapes make_grouped_gemm_w4a16 takes, and the reason for one it does not.
TEST(GroupedGemmW4A16Layout, SupportedShapes) {
  EXPECT_TRUE(w4a16_gemm_supported(3072, 4096, 128));  // qwen3-235b GEMM1
  EXPECT_TRUE(w4a16_gemm_supported(7168, 2048, 64));
  EXPECT_TRUE(w4a16_gemm_supported(2896, 2880, 64));
  std::string why;
  EXPECT_FALSE(w4a16_gemm_supported(3072, 4096, 32, &why));
  EXPECT_NE(why.find("not 64 or 128"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(2880, 2880, 128, &why));  // K % 128
  EXPECT_NE(why.find("multiple of the weight group"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(2888, 2944, 128, &why));  // N % 16
  EXPECT_NE(why.find("multiple of 16"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(0, 2944, 128));
  EXPECT_FALSE(w4a16_gemm_supported(16, int64_t{1} << 31, 128));
  EXPECT_FALSE(w4a16_gemm_supported(65536, 32768, 128));  // n * k = 2^31
  EXPECT_TRUE(w4a16_gemm_supported(65536, 32640, 128));
  EXPECT_TRUE(w4a16_gemm_supported(16, 128, 128, &why));
  EXPECT_TRUE(why.empty());
}

TEST(GroupedGemmCuda, RejectsUnalignedShapes) {
  SERVEKIT_REQUIRE_GPU();
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kFP8Block128, 4, 3712, 2880, 64}, 0), Error);
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kBF16, 4, 3712, 2884, 64}, 0), Error);
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kBF16, 0, 3712, 2880, 64}, 0), Error);
}

}  // namespace
}  // namespace servekit::cuda
