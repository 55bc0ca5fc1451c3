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
#include "grouped_gemm_test_util.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit::cuda {
namespace {

using testing::DeviceArray;
using namespace gemm_test;

using Factory = std::unique_ptr<GroupedGemm> (*)(const GroupedGemmShape&, int);

// Where group g's B lies (GroupedGemmOperands::b_group_stride): packed [G, N, K] (the default),
// every group on B[0] (stride 0), or a row of padding between groups (stride (N + 1) * K).
enum class BLayout { kPacked, kShared, kPadded };

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

TEST(GroupedGemmCuda, RejectsUnalignedShapes) {
  SERVEKIT_REQUIRE_GPU();
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kFP8Block128, 4, 3712, 2880, 64}, 0), Error);
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kBF16, 4, 3712, 2884, 64}, 0), Error);
  EXPECT_THROW(GroupedGemm::create({GemmOperand::kBF16, 0, 3712, 2880, 64}, 0), Error);
}

}  // namespace
}  // namespace servekit::cuda