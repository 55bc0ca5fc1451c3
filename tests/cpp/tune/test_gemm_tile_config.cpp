// CPU tests of the grouped-GEMM tile configuration (src/cuda/gemm_tile_config.h, and the per-run
// pick of gemm_tile_pick.h): the compiled tiles respect the sm90 hardware limits they were chosen
// against, and the run-time choice is what the comments promise for the preset shapes.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cuda/gemm_tile_config.h"
#include "cuda/gemm_tile_pick.h"

namespace servekit::cuda {
namespace {

constexpr GemmOperand kOperands[] = {GemmOperand::kBF16, GemmOperand::kFP8PerTensor,
                                     GemmOperand::kFP8Block128};

// fp32 accumulator registers per math thread: cooperative spreads a tile over 2 warp groups
// (256 threads), ping-pong gives each warp group (128 threads) a whole tile. The blockwise
// mainloops also hold wgmma results for the scale promotion: CUTLASS's (ping-pong) one of the
// tile's size, sm90_blockwise_overlap.cuh (cooperative 128x128) two, and
// sm90_blockwise_halves.cuh (cooperative 128x256) one 128-column half.
int accumulators_per_thread(GemmOperand op, const GemmTileConfig& t) {
  const int threads = t.schedule == GemmSchedule::kCooperative ? 256 : 128;
  const int per = t.tile_m * t.tile_n / threads;
  if (op != GemmOperand::kFP8Block128) return per;
  if (t.schedule == GemmSchedule::kPingpong) return 2 * per;
  return t.tile_n == 256 ? per + per / 2 : 3 * per;
}

TEST(GemmTileConfig, CompiledTilesFitTheHardware) {
  for (GemmOperand op : kOperands)
    for (int kind : {0, 1, 2}) {
      SCOPED_TRACE(static_cast<int>(op) * 10 + kind);
      const GemmTileConfig t = kind == 0   ? compiled_tile_config(op)
                               : kind == 1 ? small_m_tile_config(op)
                                           : swap_ab_tile_config(op);
      EXPECT_EQ(t.tile_m % 64, 0) << "wgmma M granule is 64";
      EXPECT_EQ(t.tile_n % 8, 0) << "wgmma N granule is 8";
      if (t.schedule == GemmSchedule::kCooperative) {
        EXPECT_GE(t.tile_m, 128);
      }
      EXPECT_EQ(t.tile_k * gemm_operand_bytes(op) % 128, 0) << "whole 128-byte swizzle rows";
      // 232 registers per math thread after setmaxnreg: 128 accumulators leave room for
      // addresses, and both blockwise mainloops compile at 192 without spills (ptxas -v); the
      // swap-AB tile's 144 compile without spills too (168 registers at launch, session 27).
      EXPECT_LE(accumulators_per_thread(op, t), op == GemmOperand::kFP8Block128 ? 192
                                                : t.swap_ab                     ? 144
                                                                                : 128);
      // At least 3 pipeline stages in 227 KB of shared memory, leaving 32 KB for the epilogue.
      const int stage_bytes = (t.tile_m + t.tile_n) * t.tile_k * gemm_operand_bytes(op);
      EXPECT_GE((227 - 32) * 1024 / stage_bytes, 3);
      // MoE groups are a few tiles tall: a cluster along the tokens would pad every group to 2
      // tiles (the tokens are the kernel's N in a swap-AB tile, its M otherwise).
      EXPECT_EQ(t.swap_ab ? t.cluster_n : t.cluster_m, 1);
      EXPECT_LE(t.cluster_m * t.cluster_n, 2);
    }
  const GemmTileConfig b = compiled_tile_config(GemmOperand::kFP8Block128);
  EXPECT_EQ(b.tile_k, 128) << "one activation/weight scale block per K tile";
  EXPECT_EQ(b.tile_n % 128, 0) << "whole weight scale blocks along N";
}

// CUTLASS 4.2's blockwise scale producer splits a tile's scales over 32 lanes: fp8_block128's
// tiles keep each operand's count at most 32 or a multiple of it (the kernels static_assert the
// same on CUTLASS's counts); a 144-token tile with one scale per token would not (report 3 of
// docs/upstream-cutlass.md: lanes 16-31 write offsets 144-159).
TEST(GemmTileConfig, BlockScaledTilesFitTheStockScaleProducer) {
  for (const GemmTileConfig& t : {compiled_tile_config(GemmOperand::kFP8Block128),
                                  small_m_tile_config(GemmOperand::kFP8Block128)}) {
    EXPECT_TRUE(stock_scale_producer_fits(t.tile_m)) << t.tile_m;        // one per row
    EXPECT_TRUE(stock_scale_producer_fits(t.tile_n / 128)) << t.tile_n;  // one per weight block
  }
  for (int ok : {1, 2, 32, 64, 96, 128, 256}) EXPECT_TRUE(stock_scale_producer_fits(ok)) << ok;
  for (int bad : {33, 48, 144, 200}) EXPECT_FALSE(stock_scale_producer_fits(bad)) << bad;
}

// bf16 alone has the swap-AB tile: 256 weight rows x 144 tokens, cluster along the weights.
TEST(GemmTileConfig, SwapTile) {
  EXPECT_TRUE(has_swap_ab_tile(GemmOperand::kBF16));
  EXPECT_FALSE(has_swap_ab_tile(GemmOperand::kFP8PerTensor));
  EXPECT_FALSE(has_swap_ab_tile(GemmOperand::kFP8Block128));
  const GemmTileConfig t = swap_ab_tile_config(GemmOperand::kBF16);
  EXPECT_TRUE(t.swap_ab);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.tile_n, 144);
  EXPECT_EQ(t.token_rows(), 144);
  EXPECT_EQ(compiled_tile_config(GemmOperand::kBF16).token_rows(), 128);
  EXPECT_EQ(gemm_padded_rows(t, 0), 0);
  EXPECT_EQ(gemm_padded_rows(t, 1), 144);
  EXPECT_EQ(gemm_padded_rows(t, 144), 144);
  EXPECT_EQ(gemm_padded_rows(t, 145), 288);  // the 2x1 cluster is along the weights
  GemmTileConfig plain = t;
  plain.swap_ab = false;
  EXPECT_FALSE(plain == t);
}

// The expected padding of a group of ~mean rows (Normal(mean, mean)) in whole tiles: close to
// bench/tools/padding_sim.py's draws of real top-k routing (qwen3-30b at 2048 tokens, 128 rows
// per expert: 1.47-1.49 for 128-row tiles, 1.19-1.21 for 144), tile / mean where the spread stays
// inside one tile, and 1 for an empty run.
TEST(GemmTileConfig, ExpectedTilePadding) {
  EXPECT_NEAR(expected_tile_padding(128, 128.0), 1.48, 0.02);
  EXPECT_NEAR(expected_tile_padding(144, 128.0), 1.20, 0.02);
  EXPECT_NEAR(expected_tile_padding(128, 64.0), 2.0, 1e-3);  // 64 +- 8: always one tile
  EXPECT_NEAR(expected_tile_padding(144, 64.0), 2.25, 1e-3);
  EXPECT_NEAR(expected_tile_padding(128, 1e6), 1.0, 1e-3);
  EXPECT_EQ(expected_tile_padding(128, 0.0), 1.0);
  EXPECT_EQ(expected_tile_padding(128, 0.5), 1.0);
  EXPECT_EQ(expected_tile_padding(0, 100.0), 1.0);
  for (double m : {3.0, 50.0, 129.0, 300.0, 5000.0}) EXPECT_GE(expected_tile_padding(128, m), 1.0);
}

// The per-run tile at the rows per group measured on the H200 (gemm_tile_config.h's table).
TEST(GemmTileConfig, ChoosesTheTileByRowsPerGroup) {
  const GemmOperand b = GemmOperand::kBF16;
  using K = GemmTileKind;
  EXPECT_EQ(choose_gemm_tile(b, 16, true), K::kSmall);
  EXPECT_EQ(choose_gemm_tile(b, kSmallMTileMaxRows, true), K::kSmall);
  EXPECT_EQ(choose_gemm_tile(b, 64, true), K::kLarge);       // qwen3 1024 tokens
  EXPECT_EQ(choose_gemm_tile(b, 64, false), K::kLarge);      // gpt-oss 2048
  EXPECT_EQ(choose_gemm_tile(b, 128, true), K::kSwap);       // qwen3 2048
  EXPECT_EQ(choose_gemm_tile(b, 128, false), K::kSwap);      // gpt-oss 4096
  EXPECT_EQ(choose_gemm_tile(b, 143, true), K::kSwap);       // deepseek-v3 4096
  EXPECT_EQ(choose_gemm_tile(b, 256, false), K::kSwapPair);  // gpt-oss 8192 (SwapPairChoice)
  EXPECT_EQ(choose_gemm_tile(b, 286, true), K::kSwap);       // deepseek-v3 8192
  EXPECT_EQ(choose_gemm_tile(b, 512, true), K::kLarge);      // mixtral 2048 (qwen3-30b: below)
  EXPECT_EQ(choose_gemm_tile(b, 2048, true), K::kLarge);     // mixtral 8192
  EXPECT_EQ(choose_gemm_tile(b, 0, true), K::kSmall);
  // No swap tile in the fp8 formats.
  for (int64_t m : {128, 256, 286}) {
    EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8Block128, m, true), K::kLarge) << m;
    EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8PerTensor, m, false), K::kLarge) << m;
  }
  EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8Block128, 20, true), K::kSmall);
  // Forced choices; a tile the format lacks falls back to the 128-row one.
  EXPECT_EQ(choose_gemm_tile(b, 128, true, GemmTileChoice::kLarge), K::kLarge);
  EXPECT_EQ(choose_gemm_tile(b, 4096, true, GemmTileChoice::kSmall), K::kSmall);
  EXPECT_EQ(choose_gemm_tile(b, 4096, true, GemmTileChoice::kSwap), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 4, true, GemmTileChoice::kSwap), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8Block128, 128, true, GemmTileChoice::kSwap),
            K::kLarge);
  EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8PerTensor, 16, false, GemmTileChoice::kSmall),
            K::kLarge);
  EXPECT_FALSE(use_small_m_tile(b, 16, GemmTileChoice::kSwap));
}

TEST(GemmTileConfig, ChoiceUsesTheCompiledTile) {
  for (GemmOperand op : kOperands) {
    const GemmDesc d{op, 4096, 7168, 257, 73728 / 257};
    EXPECT_TRUE(choose_gemm_config(d).tile == compiled_tile_config(op));
  }
}

TEST(GemmTileConfig, SmallMTileForShortGroups) {
  // bf16 and fp8_block128 have a second instantiation: a 64-row tile, half the padding of the
  // 128-row one; fp8_per_tensor has not.
  EXPECT_TRUE(has_small_m_tile(GemmOperand::kBF16));
  EXPECT_FALSE(has_small_m_tile(GemmOperand::kFP8PerTensor));
  EXPECT_TRUE(has_small_m_tile(GemmOperand::kFP8Block128));
  const GemmTileConfig s = small_m_tile_config(GemmOperand::kBF16);
  EXPECT_EQ(s.tile_m, 64);
  EXPECT_EQ(s.schedule, GemmSchedule::kPingpong) << "cooperative splits M over two warp groups";
  const GemmTileConfig f = small_m_tile_config(GemmOperand::kFP8Block128);
  EXPECT_EQ(f.tile_m, 64);
  EXPECT_EQ(f.tile_k, 128) << "one scale block per K tile";
  EXPECT_EQ(f.tile_n % 128, 0) << "whole weight scale blocks along N";
  EXPECT_EQ(f.schedule, GemmSchedule::kPingpong);
  EXPECT_EQ(gemm_padded_rows(s, 129), 192);
  EXPECT_EQ(gemm_padded_rows(compiled_tile_config(GemmOperand::kBF16), 129), 256);
  // qwen3-30b at 256 tokens: 256 * 8 / 128 = 16 rows per expert -> small; at 2048 (128 rows),
  // deepseek-v3 and mixtral at 8192 (~287 and 2048 rows) -> large; the boundary is inclusive.
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kBF16, 16));
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kBF16, kSmallMTileMaxRows));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kBF16, kSmallMTileMaxRows + 1));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kBF16, 128));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kBF16, 287));
  // fp8_block128's boundary is lower: deepseek-v3 at 768 tokens (26 rows per group) runs the
  // 64-row tile, at 1024 (35, measured slower there) the 128-row one.
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kFP8Block128, 1));
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kFP8Block128, 768 * 9 / 257));
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kFP8Block128,
                               small_m_tile_max_rows(GemmOperand::kFP8Block128)));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kFP8Block128, 1024 * 9 / 257));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kFP8Block128, 32));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kFP8Block128, 287));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kFP8PerTensor, 16));
  // A forced choice wins over the rows, except where no small tile exists.
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kBF16, 16, GemmTileChoice::kLarge));
  EXPECT_TRUE(use_small_m_tile(GemmOperand::kBF16, 4096, GemmTileChoice::kSmall));
  EXPECT_FALSE(use_small_m_tile(GemmOperand::kFP8PerTensor, 16, GemmTileChoice::kSmall));
  EXPECT_TRUE(choose_gemm_config({GemmOperand::kBF16, 1536, 2048, 128, 128}, true).tile == s);
  EXPECT_TRUE(choose_gemm_config({GemmOperand::kFP8Block128, 4096, 7168, 256, 8}, f).tile == f);
}

TEST(GemmTileConfig, ParsesTheTileEnvironmentValue) {
  EXPECT_EQ(parse_gemm_tile_choice(""), GemmTileChoice::kAuto);
  EXPECT_EQ(parse_gemm_tile_choice("auto"), GemmTileChoice::kAuto);
  EXPECT_EQ(parse_gemm_tile_choice("large"), GemmTileChoice::kLarge);
  EXPECT_EQ(parse_gemm_tile_choice("small"), GemmTileChoice::kSmall);
  EXPECT_EQ(parse_gemm_tile_choice("swap"), GemmTileChoice::kSwap);
  EXPECT_EQ(parse_gemm_tile_choice("pair"), GemmTileChoice::kPair);
  EXPECT_FALSE(parse_gemm_tile_choice("Swap").has_value());
  EXPECT_FALSE(parse_gemm_tile_choice("Small").has_value());
  EXPECT_FALSE(parse_gemm_tile_choice("small128").has_value());
  EXPECT_FALSE(parse_gemm_tile_choice("64").has_value());
}

TEST(GemmTileConfig, RasterFollowsTheLargerOperand) {
  // deepseek-v3 GEMM1 at 8192 tokens: ~256 rows per expert vs N = 2I = 4096: weights dominate.
  EXPECT_EQ(choose_gemm_config({GemmOperand::kBF16, 4096, 7168, 257, 287}).raster,
            GemmRaster::kAlongM);
  // mixtral GEMM2 at 8192 tokens: 2048 rows per expert vs N = H = 4096: still along M.
  EXPECT_EQ(choose_gemm_config({GemmOperand::kBF16, 4096, 14336, 8, 2048}).raster,
            GemmRaster::kAlongM);
  // A group 5x taller than wide reuses A instead (4 * 512 = 2048 < 2560).
  EXPECT_EQ(choose_gemm_config({GemmOperand::kBF16, 512, 4096, 1, 2560}).raster,
            GemmRaster::kAlongN);
  EXPECT_EQ(choose_gemm_config({GemmOperand::kBF16, 512, 4096, 1, 2560}).max_swizzle, 1);
  // A swap-AB tile walks its weight tiles (its M) whatever the group's height.
  EXPECT_EQ(choose_gemm_config({GemmOperand::kBF16, 512, 4096, 1, 2560},
                               swap_ab_tile_config(GemmOperand::kBF16))
                .raster,
            GemmRaster::kAlongM);
}

TEST(GemmTileConfig, ShapeSupport) {
  // bf16: 16-byte rows need K % 8 == 0; fp8: K % 16 == 0; block128: K % 128 == 0.
  EXPECT_TRUE(gemm_shape_supported({GemmOperand::kBF16, 3712, 2880, 4, 0}));
  EXPECT_TRUE(gemm_shape_supported({GemmOperand::kFP8PerTensor, 3712, 2880, 4, 0}));
  EXPECT_FALSE(gemm_shape_supported({GemmOperand::kFP8Block128, 3712, 2880, 4, 0}));   // 22.5
  EXPECT_TRUE(gemm_shape_supported({GemmOperand::kFP8Block128, 2880, 2944, 4, 0}));    // 23
  EXPECT_FALSE(gemm_shape_supported({GemmOperand::kBF16, 3712, 2884, 4, 0}));          // 2884 % 8
  EXPECT_FALSE(gemm_shape_supported({GemmOperand::kFP8PerTensor, 3712, 2888, 4, 0}));  // % 16
  EXPECT_FALSE(gemm_shape_supported({GemmOperand::kBF16, 3714, 2880, 4, 0}));          // N % 8
  EXPECT_FALSE(gemm_shape_supported({GemmOperand::kBF16, 3712, 2880, 0, 0}));          // no groups
}

TEST(GemmTileConfig, PaddedRows) {
  const GemmTileConfig t = compiled_tile_config(GemmOperand::kBF16);  // tile M 128, cluster 1
  EXPECT_EQ(gemm_padded_rows(t, 0), 0);
  EXPECT_EQ(gemm_padded_rows(t, 1), 128);
  EXPECT_EQ(gemm_padded_rows(t, 128), 128);
  EXPECT_EQ(gemm_padded_rows(t, 129), 256);
  EXPECT_EQ(gemm_padded_rows(t, 300), 384);  // 3 tiles
  GemmTileConfig c = t;
  c.cluster_m = 2;  // a 2-CTA cluster along M pads to 256
  EXPECT_EQ(gemm_padded_rows(c, 129), 256);
  EXPECT_EQ(gemm_padded_rows(c, 300), 512);
}

// The fused activation runs in the 128x256 cooperative tiles of bf16 and fp8_block128 and in
// bf16's 256-row cooperative swap-AB tile: the 64-row tiles and fp8_per_tensor (tensor-wide
// scale) do not have it, nor a swap-AB tile whose 256 weight rows are not one gate/up pair.
TEST(GemmTileConfig, FusedActivationTiles) {
  EXPECT_TRUE(
      gemm_tile_fuses_activation(GemmOperand::kBF16, compiled_tile_config(GemmOperand::kBF16)));
  EXPECT_TRUE(gemm_tile_fuses_activation(GemmOperand::kFP8Block128,
                                         compiled_tile_config(GemmOperand::kFP8Block128)));
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kFP8PerTensor,
                                          compiled_tile_config(GemmOperand::kFP8PerTensor)));
  for (GemmOperand op : kOperands)
    EXPECT_FALSE(gemm_tile_fuses_activation(op, small_m_tile_config(op))) << static_cast<int>(op);
  EXPECT_TRUE(
      gemm_tile_fuses_activation(GemmOperand::kBF16, swap_ab_tile_config(GemmOperand::kBF16)));
  GemmTileConfig swapped = compiled_tile_config(GemmOperand::kBF16);
  swapped.swap_ab = true;  // 128 weight rows: a gate block without its up rows
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kBF16, swapped));
  GemmTileConfig swap_pp{256, 144, 64, 2, 1, GemmSchedule::kPingpong};
  swap_pp.swap_ab = true;  // one warp group a 256-row tile: rows r, r + 64, r + 128, ...
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kBF16, swap_pp));
  GemmTileConfig swap_pp128{128, 144, 64, 2, 1, GemmSchedule::kPingpong};
  swap_pp128.swap_ab = true;  // swap_pp_tile_config: rows r and r + 64 (64-row interleave)
  EXPECT_TRUE(gemm_tile_fuses_activation(GemmOperand::kBF16, swap_pp128));
  GemmTileConfig swap_fp8 = swap_ab_tile_config(GemmOperand::kBF16);
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kFP8Block128, swap_fp8));
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kBF16,
                                          {128, 256, 64, 1, 2, GemmSchedule::kPingpong}));
  EXPECT_FALSE(gemm_tile_fuses_activation(GemmOperand::kBF16,
                                          {128, 128, 64, 1, 2, GemmSchedule::kCooperative}));
}

// interleaved_w13_row with blocks of w rows is a permutation of [0, 2I) that puts gate row
// wn + c at physical row 2wn + c and up row I + wn + c at 2wn + w + c: a 2w-row span holds a gate
// row and its up row w apart. w = 128 by default (the 128x256 tiles and the cooperative swap-AB
// tile); 64 where GEMM1 takes the ping-pong swap-AB tile.
TEST(GemmTileConfig, InterleavedW13Rows) {
  for (int64_t w : {64, 128})
    for (int64_t inter : {128, 768, 2048, 14336}) {
      SCOPED_TRACE(std::to_string(w) + " " + std::to_string(inter));
      std::vector<int> seen(static_cast<size_t>(2 * inter), 0);
      for (int64_t p = 0; p < 2 * inter; ++p) {
        const int64_t logical = interleaved_w13_row(p, inter, w);
        ASSERT_GE(logical, 0);
        ASSERT_LT(logical, 2 * inter);
        ++seen[static_cast<size_t>(logical)];
      }
      for (int64_t r = 0; r < 2 * inter; ++r) ASSERT_EQ(seen[static_cast<size_t>(r)], 1) << r;
      for (int64_t n = 0; n < inter / w; ++n)
        for (int64_t c = 0; c < w; c += 17) {
          EXPECT_EQ(interleaved_w13_row(2 * w * n + c, inter, w), w * n + c);
          EXPECT_EQ(interleaved_w13_row(2 * w * n + w + c, inter, w), inter + w * n + c);
        }
    }
  EXPECT_EQ(interleaved_w13_row(300, 768), interleaved_w13_row(300, 768, 128));
  // fp8_block128's weight scales cover 128 rows: never a 64-row interleave.
  EXPECT_EQ(w13_interleave_rows(GemmOperand::kFP8Block128, true), 128);
  EXPECT_EQ(w13_interleave_rows(GemmOperand::kBF16, false), 128);
  EXPECT_EQ(w13_interleave_rows(GemmOperand::kBF16, true), 64);
}

// bf16's ping-pong swap-AB tile: 128 weight rows x 144 tokens, one warp group a tile, its fused
// activation on the 64-row interleave; the other formats have none.
TEST(GemmTileConfig, SwapPingpongTile) {
  const GemmTileConfig t = swap_pp_tile_config(GemmOperand::kBF16);
  EXPECT_TRUE(t.swap_ab);
  EXPECT_EQ(t.schedule, GemmSchedule::kPingpong);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_k, 64);  // the default argument; the other compiled step is 128
  const GemmTileConfig k128 = swap_pp_tile_config(GemmOperand::kBF16, 128);
  EXPECT_EQ(k128.tile_k, 128);
  GemmTileConfig same = k128;
  same.tile_k = 64;
  EXPECT_TRUE(same == t);  // the k-step is the only difference
  EXPECT_EQ(t.token_rows(), swap_ab_tile_config(GemmOperand::kBF16).token_rows());
  EXPECT_TRUE(gemm_tile_fuses_activation(GemmOperand::kBF16, t));
  EXPECT_EQ(t.tile_m / 2, w13_interleave_rows(GemmOperand::kBF16, true));
  EXPECT_EQ(swap_ab_tile_config(GemmOperand::kBF16).tile_m / 2,
            w13_interleave_rows(GemmOperand::kBF16, false));
  EXPECT_TRUE(has_swap_pp_tile(GemmOperand::kBF16));
  EXPECT_FALSE(has_swap_pp_tile(GemmOperand::kFP8Block128));
  EXPECT_FALSE(has_swap_pp_tile(GemmOperand::kFP8PerTensor));
}

// The ping-pong swap tile's k-step per card (session 43: 128 measured faster on the H100, 64 on
// the H200) and SERVEKIT_GEMM_PP_TILE_K's values.
TEST(GemmTileConfig, SwapPingpongStepPerCard) {
  EXPECT_EQ(swap_pp_tile_k_for_device("NVIDIA H100 80GB HBM3"), 128);
  EXPECT_EQ(swap_pp_tile_k_for_device("NVIDIA H100 PCIe"), 128);
  EXPECT_EQ(swap_pp_tile_k_for_device("NVIDIA H200"), 64);
  EXPECT_EQ(swap_pp_tile_k_for_device("NVIDIA GH200 480GB"), 64);  // not measured: the default
  EXPECT_EQ(swap_pp_tile_k_for_device(""), 64);
  EXPECT_EQ(parse_swap_pp_tile_k(""), 0);
  EXPECT_EQ(parse_swap_pp_tile_k("auto"), 0);
  EXPECT_EQ(parse_swap_pp_tile_k("64"), 64);
  EXPECT_EQ(parse_swap_pp_tile_k("128"), 128);
  for (const char* bad : {"96", "256", "0", "Auto", " 64", "64k"})
    EXPECT_FALSE(parse_swap_pp_tile_k(bad).has_value()) << bad;
}

// bf16's pair swap-AB tile: the cooperative 256x144 swap tile in a cluster of two along the
// tokens, so a group pads to whole pairs of token tiles (288 rows); it fuses like the swap tile.
TEST(GemmTileConfig, SwapPairTile) {
  const GemmOperand b = GemmOperand::kBF16;
  const GemmTileConfig t = swap_pair_tile_config(b), swap = swap_ab_tile_config(b);
  EXPECT_TRUE(t.swap_ab);
  EXPECT_EQ(t.schedule, GemmSchedule::kCooperative);
  EXPECT_EQ(t.tile_m, swap.tile_m);
  EXPECT_EQ(t.tile_n, swap.tile_n);
  EXPECT_EQ(t.tile_k, swap.tile_k);
  EXPECT_EQ(t.cluster_n, 2);
  EXPECT_EQ(t.token_rows(), 144);
  EXPECT_EQ(t.token_block_rows(), 288);
  EXPECT_EQ(swap.token_block_rows(), 144);  // its cluster lies along the weights
  EXPECT_EQ(compiled_tile_config(b).token_block_rows(), 128);
  EXPECT_EQ(gemm_padded_rows(t, 1), 288);
  EXPECT_EQ(gemm_padded_rows(t, 288), 288);
  EXPECT_EQ(gemm_padded_rows(t, 289), 576);
  EXPECT_EQ(gemm_padded_rows(swap, 289), 432);
  EXPECT_TRUE(gemm_tile_fuses_activation(b, t));
  EXPECT_TRUE(has_swap_pair_tile(b));
  EXPECT_FALSE(has_swap_pair_tile(GemmOperand::kFP8Block128));
  EXPECT_FALSE(has_swap_pair_tile(GemmOperand::kFP8PerTensor));
}

// The tile's name in MoELayer::kernels.
TEST(GemmTileConfig, TileName) {
  EXPECT_EQ(gemm_tile_name(swap_ab_tile_config(GemmOperand::kBF16)),
            "256x144x64 swap-AB cooperative cluster 2x1");
  EXPECT_EQ(gemm_tile_name(swap_pair_tile_config(GemmOperand::kBF16)),
            "256x144x64 swap-AB cooperative cluster " +
                std::to_string(swap_pair_tile_config(GemmOperand::kBF16).cluster_m) + "x2");
  EXPECT_EQ(gemm_tile_name(small_m_tile_config(GemmOperand::kBF16)),
            "64x128x64 ping-pong cluster 1x2");
  EXPECT_EQ(gemm_tile_name(compiled_tile_config(GemmOperand::kFP8Block128)),
            "128x256x128 cooperative cluster 1x2");
}

// Where the pair pays (a routed group's rows, tokens x top-k / experts): from about two token
// tiles up, not at one. deepseek-v3 (top-8 of 256, one shared): 8192 tokens 256 rows, 4096 128;
// qwen3-235b (top-8 of 128) 2048 tokens 128, 4096 256; gpt-oss-120b (top-4 of 128) 8192 256.
TEST(GemmTileConfig, SwapPairChoice) {
  const GemmOperand b = GemmOperand::kBF16;
  EXPECT_TRUE(swap_pair_pays(b, 256));
  EXPECT_TRUE(swap_pair_pays(b, 200));
  EXPECT_TRUE(swap_pair_pays(b, 512));
  EXPECT_FALSE(swap_pair_pays(b, 128));
  EXPECT_FALSE(swap_pair_pays(b, 143));
  EXPECT_FALSE(swap_pair_pays(b, 0));
  EXPECT_FALSE(swap_pair_pays(GemmOperand::kFP8Block128, 256));
  // The routed rows: deepseek-v3 at 8192 tokens, 257 groups (256 experts and the shared one), and
  // on an expert-parallel rank of 32 experts; without a hint, rows / groups.
  const GemmRoutingHint ds{8, 1, 256};
  EXPECT_EQ(routed_rows_per_group(ds, 8192 * 9, 257), 256);
  EXPECT_EQ(routed_rows_per_group(ds, 8192 * 9, 33), 256);
  EXPECT_EQ(routed_rows_per_group({}, 8192 * 9, 257), 8192 * 9 / 257);
  EXPECT_EQ(routed_rows_per_group({}, 10, 0), 0);
  // The pick: rows_per_group 286 (the shared group averaged in) takes the cooperative swap tile;
  // where the auto pick may take the pair, the default pick (kAuto) takes it without
  // shared-expert groups and leaves it to the GPU (kSwapOrPair) with them, the host pick keeps
  // the 2x1 tile with them, the device pick leaves it to the GPU either way; a ping-pong swap
  // GEMM never takes it; forcing "pair" takes the pair alone.
  using K = GemmTileKind;
  const K swap_or_pair = kAutoSwapPair ? K::kSwapPair : K::kSwap;
  const GemmTileChoice a = GemmTileChoice::kAuto;
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256), swap_or_pair);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 1),
            kAutoSwapPair ? K::kSwapOrPair : K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 1, GemmPairPick::kAuto),
            kAutoSwapPair ? K::kSwapOrPair : K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 0, GemmPairPick::kAuto), swap_or_pair);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 1, GemmPairPick::kHost), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 0, GemmPairPick::kHost), swap_or_pair);
  // The pair runner is built wherever a run may take it.
  EXPECT_TRUE(pair_pick_may_run_pair(GemmPairPick::kAuto, 1));
  EXPECT_TRUE(pair_pick_may_run_pair(GemmPairPick::kDevice, 1));
  EXPECT_FALSE(pair_pick_may_run_pair(GemmPairPick::kHost, 1));
  EXPECT_TRUE(pair_pick_may_run_pair(GemmPairPick::kHost, 0));
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 1, GemmPairPick::kDevice),
            kAutoSwapPair ? K::kSwapOrPair : K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 286, true, a, false, 256, 0, GemmPairPick::kDevice),
            kAutoSwapPair ? K::kSwapOrPair : K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 143, true, a, false, 128, 0, GemmPairPick::kDevice), K::kSwap);
  EXPECT_EQ(parse_gemm_pair_pick("host"), GemmPairPick::kHost);
  EXPECT_EQ(parse_gemm_pair_pick(""), GemmPairPick::kAuto);
  EXPECT_EQ(parse_gemm_pair_pick("auto"), GemmPairPick::kAuto);
  EXPECT_EQ(parse_gemm_pair_pick("device"), GemmPairPick::kDevice);
  EXPECT_FALSE(parse_gemm_pair_pick("gpu").has_value());
  EXPECT_EQ(choose_gemm_tile(b, 143, true, GemmTileChoice::kAuto, false, 128), K::kSwap);
  // Without the routed rows the shared group's 8192 rows, averaged in, make the groups look
  // like 286 +- 17 rows, half of them spilling into a second pair: no pair.
  EXPECT_FALSE(swap_pair_pays(b, 286));
  EXPECT_EQ(choose_gemm_tile(b, 286, true), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 256, true, GemmTileChoice::kAuto, true, 256), K::kSwap);
  // GroupedGemmCuda.PairTileChoiceAndRoutingHint's case (5 groups, 4 routed and 1 shared, top-3,
  // 1348 rows): 269 per group, 252 per routed group.
  EXPECT_EQ(routed_rows_per_group({3, 1, 4}, 1348, 5), 252);
  EXPECT_EQ(choose_gemm_tile(b, 269, false, GemmTileChoice::kAuto, false, 252), swap_or_pair);
  EXPECT_EQ(choose_gemm_tile(b, 269, false, GemmTileChoice::kAuto, false, 252, 1),
            kAutoSwapPair ? K::kSwapOrPair : K::kSwap);
  EXPECT_EQ(
      choose_gemm_tile(b, 269, false, GemmTileChoice::kAuto, false, 252, 1, GemmPairPick::kHost),
      K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 269, false, GemmTileChoice::kPair, false, 252, 1), K::kSwapPair);
  EXPECT_EQ(choose_gemm_tile(b, 269, false), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 4, true, GemmTileChoice::kPair), K::kSwapPair);
  EXPECT_EQ(choose_gemm_tile(b, 4, true, GemmTileChoice::kPair, true), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8Block128, 256, true, GemmTileChoice::kPair),
            K::kLarge);
  EXPECT_FALSE(use_small_m_tile(b, 4, GemmTileChoice::kPair));
}

// The device-side pick's arithmetic (GemmRunGate): token tiles per group for the 2x1 swap tile
// (144 tokens) and the pair (two 144-token tiles per 288 rows), and the 1.05 margin.
TEST(GemmTileConfig, PairGateCountsTheGroupsTiles) {
  const GemmOperand b = GemmOperand::kBF16;
  auto count = [&](const std::vector<int64_t>& rows) {
    int64_t swap = 0, pair = 0;
    for (int64_t m : rows) {
      swap += swap_gate_tiles(b, m);
      pair += pair_gate_tiles(b, m);
    }
    return std::pair<int64_t, int64_t>{swap, pair};
  };
  EXPECT_EQ(swap_gate_tiles(b, 0), 0);
  EXPECT_EQ(pair_gate_tiles(b, 0), 0);
  EXPECT_EQ(swap_gate_tiles(b, 1), 1);
  EXPECT_EQ(pair_gate_tiles(b, 1), 2);
  EXPECT_EQ(swap_gate_tiles(b, 288), 2);
  EXPECT_EQ(pair_gate_tiles(b, 288), 2);
  EXPECT_EQ(swap_gate_tiles(b, 289), 3);
  EXPECT_EQ(pair_gate_tiles(b, 289), 4);
  // Groups of 280 and 270 rows: 4 tiles each way, the pair. The GPU test's spread layout (17,
  // 0, 300, 1, 0): 5 against 8, the 2x1 tile. deepseek-v3-like (0, 9, 191, 600, 787): 1 + 2 + 5
  // + 6 = 14 against 2 + 2 + 6 + 6 = 16 > 14.7, the 2x1 tile; all empty: the pair.
  auto [s1, p1] = count({280, 270, 0, 0, 0});
  EXPECT_EQ(s1, 4);
  EXPECT_EQ(p1, 4);
  EXPECT_TRUE(pair_gate_pays(p1, s1));
  auto [s2, p2] = count({17, 0, 300, 1, 0});
  EXPECT_EQ(s2, 5);
  EXPECT_EQ(p2, 8);
  EXPECT_FALSE(pair_gate_pays(p2, s2));
  auto [s3, p3] = count({0, 9, 191, 600, 787});
  EXPECT_EQ(s3, 14);
  EXPECT_EQ(p3, 16);
  EXPECT_FALSE(pair_gate_pays(p3, s3));
  EXPECT_TRUE(pair_gate_pays(0, 0));
  // GroupedGemmCuda.BF16SwapOrPairPickedOnTheDevice's layouts: (256, 256) 4 against 4, the pair;
  // (17, 495) 5 against 6, the 2x1 tile.
  auto [s4, p4] = count({256, 256});
  EXPECT_TRUE(s4 == 4 && p4 == 4 && pair_gate_pays(p4, s4));
  auto [s5, p5] = count({17, 495});
  EXPECT_TRUE(s5 == 5 && p5 == 6 && !pair_gate_pays(p5, s5));
  // The margin: 21 pair tiles against 20 pay (1.05), 22 do not.
  EXPECT_TRUE(pair_gate_pays(21, 20));
  EXPECT_FALSE(pair_gate_pays(22, 20));
}

// Which GEMMs take it (N x K of an expert's matrix, gemm1 = (2I, H), gemm2 = (H, I)): both of
// qwen3-30b's (the one row that gained, session 34), none of qwen3-235b's, gpt-oss-120b's,
// deepseek-v3's or mixtral's; the override and its parsing.
TEST(GemmTileConfig, SwapPingpongChoice) {
  const GemmOperand b = GemmOperand::kBF16;
  EXPECT_TRUE(use_swap_pingpong(b, 1536, 2048));    // qwen3-30b GEMM1
  EXPECT_TRUE(use_swap_pingpong(b, 2048, 768));     // qwen3-30b GEMM2
  EXPECT_FALSE(use_swap_pingpong(b, 3072, 4096));   // qwen3-235b GEMM1
  EXPECT_FALSE(use_swap_pingpong(b, 4096, 1536));   // qwen3-235b GEMM2
  EXPECT_FALSE(use_swap_pingpong(b, 5760, 2880));   // gpt-oss-120b GEMM1
  EXPECT_FALSE(use_swap_pingpong(b, 2880, 2880));   // gpt-oss-120b GEMM2
  EXPECT_FALSE(use_swap_pingpong(b, 4096, 7168));   // deepseek-v3 GEMM1
  EXPECT_FALSE(use_swap_pingpong(b, 7168, 2048));   // deepseek-v3 GEMM2
  EXPECT_FALSE(use_swap_pingpong(b, 4096, 14336));  // mixtral GEMM2
  EXPECT_TRUE(use_swap_pingpong(b, 7168, 2048, GemmSwapChoice::kPingpong));
  EXPECT_FALSE(use_swap_pingpong(b, 1536, 2048, GemmSwapChoice::kCooperative));
  EXPECT_FALSE(use_swap_pingpong(GemmOperand::kFP8Block128, 1536, 2048));
  EXPECT_FALSE(use_swap_pingpong(GemmOperand::kFP8Block128, 1536, 2048, GemmSwapChoice::kPingpong));
  EXPECT_EQ(parse_gemm_swap_choice(""), GemmSwapChoice::kAuto);
  EXPECT_EQ(parse_gemm_swap_choice("auto"), GemmSwapChoice::kAuto);
  EXPECT_EQ(parse_gemm_swap_choice("cooperative"), GemmSwapChoice::kCooperative);
  EXPECT_EQ(parse_gemm_swap_choice("pingpong"), GemmSwapChoice::kPingpong);
  EXPECT_FALSE(parse_gemm_swap_choice("ping-pong").has_value());
  // A GEMM with the ping-pong swap tile takes it up to kSwapPingpongMaxRows rows per group, where
  // the padding model alone would take the 128-row tile (qwen3-30b at 8192 and 16384 tokens).
  using K = GemmTileKind;
  const GemmTileChoice a = GemmTileChoice::kAuto;
  EXPECT_EQ(choose_gemm_tile(b, 512, true, a, false), K::kLarge);
  EXPECT_EQ(choose_gemm_tile(b, 512, true, a, true), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 128, true, a, true), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, kSwapPingpongMaxRows, false, a, true), K::kSwap);
  EXPECT_EQ(choose_gemm_tile(b, 1024, true, a, true), K::kSwap);   // qwen3-30b 16384 tokens
  EXPECT_EQ(choose_gemm_tile(b, 2048, true, a, true), K::kLarge);  // the padding model again
  EXPECT_EQ(choose_gemm_tile(b, 16, true, a, true), K::kSmall);    // the 64-row tile first
  EXPECT_EQ(choose_gemm_tile(b, 512, true, GemmTileChoice::kLarge, true), K::kLarge);
  EXPECT_EQ(choose_gemm_tile(GemmOperand::kFP8Block128, 512, true, a, true), K::kLarge);
  EXPECT_FALSE(parse_gemm_swap_choice("Pingpong").has_value());
}

}  // namespace
}  // namespace servekit::cuda
