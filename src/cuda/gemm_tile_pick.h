// The per-run tile pick of the dynamic path's grouped GEMMs (choose_gemm_tile and its parts): which
// of a format's compiled tiles (gemm_tile_config.h) a run takes from the rows per group the host
// expects, the run-time switches' values (SERVEKIT_GEMM_TILE, SERVEKIT_GEMM_PAIR_PICK) and the
// measurements behind each threshold. Host policy only: GroupedGemm::create and the tests read it;
// the CUTLASS instantiations do not include it, so a change here recompiles no kernel. Plain
// C++17, no CUDA. Internal header.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cuda/gemm_tile_config.h"

namespace servekit::cuda {

// Which of the two tiles a run uses, from the rows per group it expects (host-known: tokens x
// (top-k + shared) / groups, integer division, no device read): the 64-row tile up to
// small_m_tile_max_rows(op), the 128-row tile above. Measured on the H200 (dynamic layer,
// 64-row vs 128-row tile, us; rows per group in the units above):
//   bf16: 64x256 3-4% faster at 16 and 32 rows, 6% slower at 64 (sixth pass); 64x128 at 32
//     rows (qwen3-235b, 512 tokens) 1254.0 vs 1268.3.
//   fp8_block128 (64x128), deepseek-v3 (tokens x 9 / 257): 4 rows (128 tokens) 2015.3 vs
//     2189.1 and 35 rows (1024 tokens) 3009.0 vs 2977.0 (seventh pass); 8 rows (256 tokens)
//     2256 vs 2414-2456, 17 rows (512) 2613-2615 vs 2852-2913, 26 rows (768) 2846-2851 vs
//     2923-3108 (eighth pass, ab/2026-11-30-s8-tile-*). So 26, the largest measured point where
//     the 64-row tile won; the crossover lies between 26 and 35.
inline constexpr int64_t kSmallMTileMaxRows = 32;
constexpr int64_t small_m_tile_max_rows(GemmOperand op) {
  return op == GemmOperand::kFP8Block128 ? 26 : kSmallMTileMaxRows;
}
enum class GemmTileChoice : uint8_t { kAuto, kLarge, kSmall, kSwap, kPair };
// SERVEKIT_GEMM_TILE's value: "auto" or empty, "large", "small", "swap", "pair"; anything else is
// not a choice.
constexpr std::optional<GemmTileChoice> parse_gemm_tile_choice(std::string_view s) {
  if (s.empty() || s == "auto") return GemmTileChoice::kAuto;
  if (s == "large") return GemmTileChoice::kLarge;
  if (s == "small") return GemmTileChoice::kSmall;
  if (s == "swap") return GemmTileChoice::kSwap;
  if (s == "pair") return GemmTileChoice::kPair;
  return std::nullopt;
}
constexpr bool use_small_m_tile(GemmOperand op, int64_t rows_per_group,
                                GemmTileChoice choice = GemmTileChoice::kAuto) {
  if (!has_small_m_tile(op) || choice == GemmTileChoice::kLarge ||
      choice == GemmTileChoice::kSwap || choice == GemmTileChoice::kPair)
    return false;
  return choice == GemmTileChoice::kSmall || rows_per_group <= small_m_tile_max_rows(op);
}

// Expected rows a group occupies in whole tiles of `tile_rows`, over its expected rows `mean`:
// E[ceil(X / t) * t] / mean with X ~ Normal(mean, mean) rounded to integers >= 0 (Poisson-like:
// uniform top-k routing gives a binomial count of variance mean * (1 - k/E) <= mean). 1 when
// mean < 1 (an empty run pads nothing that matters).
inline double expected_tile_padding(int64_t tile_rows, double mean) {
  if (!(mean >= 1.0) || tile_rows < 1) return 1.0;
  const double sd = std::sqrt(mean);
  const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(mean - 6.0 * sd)));
  const int64_t hi = static_cast<int64_t>(std::ceil(mean + 6.0 * sd));
  double weight = 0.0, padded = 0.0;
  for (int64_t x = lo; x <= hi; ++x) {
    const double z = (static_cast<double>(x) - mean) / sd;
    const double w = std::exp(-0.5 * z * z);
    weight += w;
    padded += w * static_cast<double>((x + tile_rows - 1) / tile_rows * tile_rows);
  }
  return padded / weight / mean;
}

// The swap-AB tile wins where it cuts the expected padding by more than this factor against a
// 128-row tile that fuses the activation (the fused epilogue saves ~1.5-2% of the layer, ninth
// and twenty-sixth passes), and wherever it cuts it at all against one that does not.
inline constexpr double kSwapOverFusedPadding = 0.97;
// Up to how many rows per group a GEMM whose swap-AB tile is the ping-pong one (use_swap_pingpong)
// takes it over the 128-row tile, whatever the padding model says: the ping-pong tile hides its
// epilogue under the other warp group's mainloop, which the 128x256 cooperative tile cannot, and on
// these small weight matrices the epilogue is a large share of a tile. Measured on the H200
// (session 35, qwen3-30b bf16, us, 128-row tile vs ping-pong swap tile; ab/2026-12-03-s35-check
// and, two rounds each, ab/2026-12-03-s35-pp-rows): 1024 tokens (64 rows per expert) 406.0,
// 406.6 vs 404.8, 404.4; 2048 501.6, 500.4 vs 453.4, 453.3; 4096 750.4, 752.2 vs 695.8, 695.1;
// 8192 1295.3, 1291.9 vs 1232.0, 1231.6 (GEMM1 alone 736 vs 684); 16384 (1024 rows) 2439.1,
// 2488.3 vs 2376.4, 2416.2. Larger groups were not measured: the padding model decides there.
inline constexpr int64_t kSwapPingpongMaxRows = 1024;

// Whether the pair swap tile (swap_pair_tile_config) suits groups of `rows_per_group` expected
// rows: its padding to whole pairs of token tiles is at most kSwapPairOverSwapPadding times the
// 2x1 swap tile's (single token tiles, expected_tile_padding), i.e. the groups mostly hold two or
// more token tiles. Ratios: 256 routed rows per expert (deepseek-v3 at 8192 tokens, qwen3-235b at
// 4096, gpt-oss-120b at 8192) 1.01, 200 1.00, 512 1.00, so the pair; 128 (those at half the
// tokens) 1.87, 143 1.38, 150 1.20, so not.
inline bool swap_pair_pays(GemmOperand op, int64_t rows_per_group) {
  if (!has_swap_pair_tile(op) || rows_per_group < 1) return false;
  const double m = static_cast<double>(rows_per_group);
  return expected_tile_padding(swap_pair_tile_config(op).token_block_rows(), m) <=
         kSwapPairOverSwapPadding * expected_tile_padding(swap_ab_tile_config(op).token_rows(), m);
}
// Whether the auto pick may take the pair swap tile where swap_pair_pays (measured:
// swap_pair_tile_config).
inline constexpr bool kAutoSwapPair = true;
// Who picks between the 2x1 swap tile and its pair where the pair could pay
// (SERVEKIT_GEMM_PAIR_PICK=auto|host|device, read by GroupedGemm::create). The host knows only the
// mean rows, and its Poisson model holds for softmax routers but not for every router with a
// shared expert and a correction bias (a skewed bias spreads deepseek-v3's rows to 0-929 around
// 256, where the pair pads 1.29x); the device (kSwapOrPair) launches both tiles and gives the
// groups to one by their actual rows, at a small cost (one more setup launch and an empty GEMM:
// measured 0-3% where the host pick was right, session 43). So:
// - kAuto (default): the pair where the routing has no shared-expert group, the device pick where
//   it has one. Measured (session 44, H100, ab/2026-12-06-s44-bias, deepseek-v3 bf16 8192 tokens,
//   us, 2x1 tile (kHost) / device pick / pair, two rounds): Poisson-like rows ("uniform")
//   13138.4, 13096.1 / 12276.4, 12308.0 / 12220.9, 12251.5; the skewed bias ("biased")
//   15433.6, 15288.7 / 15574.6, 15559.0 / 16727.0, 16954.4. The device pick is within 0.5% of
//   the better tile on Poisson rows and 1.3% over it on skewed ones.
// - kHost: the pair where there is no shared-expert group, else the 2x1 tile (the default of
//   sessions 42-43).
// - kDevice: the device pick everywhere the pair could pay.
enum class GemmPairPick : uint8_t { kAuto, kHost, kDevice };
constexpr std::optional<GemmPairPick> parse_gemm_pair_pick(std::string_view s) {
  if (s.empty() || s == "auto") return GemmPairPick::kAuto;
  if (s == "host") return GemmPairPick::kHost;
  if (s == "device") return GemmPairPick::kDevice;
  return std::nullopt;
}
// Whether a GEMM with `shared_groups` shared-expert groups may run the pair tile under `pick`,
// alone or in the device pick (GroupedGemm::create builds the pair runner only then).
constexpr bool pair_pick_may_run_pair(GemmPairPick pick, int shared_groups) {
  return pick != GemmPairPick::kHost || shared_groups == 0;
}

// The tile for a run with `rows_per_group` expected rows per group (host-known: tokens x (top-k +
// shared) / groups, no device read); large_fuses: the 128-row tile would run the activation in
// its epilogue and the swap-AB tile would not (the caller passes false when both would);
// swap_pingpong: the GEMM's swap-AB tile is the ping-pong one. The 64-row tile up to
// small_m_tile_max_rows; with a ping-pong swap tile, that tile up to kSwapPingpongMaxRows; else the
// swap-AB tile where its expected padding
// (expected_tile_padding) is below the 128-row tile's (times kSwapOverFusedPadding when that one
// fuses), else the 128-row tile. Against the measurements above: 64 rows large (2.0 vs 2.25), 128
// swap (1.49 vs 1.19), 143 swap, 256 swap (1.24 vs 1.14; measured 0.8-1.6% slower on qwen3 where
// the large tile fuses, 1.9% faster on deepseek-v3 and 12% on gpt-oss), 512 large (1.12 vs 1.13).
// Where the cooperative swap-AB tile wins and its pair (swap_pair_tile_config) could pay
// (kAutoSwapPair and swap_pair_pays on `routed_rows_per_group`, a routed group's expected rows
// without the shared experts' groups: routed_rows_per_group(); -1 means rows_per_group): where
// `shared_groups` (GemmRoutingHint::shared_groups) is 0 the pair, except under kDevice; where it
// is not, the 2x1 tile under kHost. The other cases run kSwapOrPair, the device picking between
// the two on the groups' actual rows (pair_gate_pays). A forced
// choice (SERVEKIT_GEMM_TILE) the format lacks falls back to the 128-row tile ("pair" to the swap
// tile first; a GEMM whose swap tile is the ping-pong one has no pair).
inline GemmTileKind choose_gemm_tile(GemmOperand op, int64_t rows_per_group, bool large_fuses,
                                     GemmTileChoice choice = GemmTileChoice::kAuto,
                                     bool swap_pingpong = false, int64_t routed_rows_per_group = -1,
                                     int shared_groups = 0,
                                     GemmPairPick pair_pick = GemmPairPick::kAuto) {
  switch (choice) {
    case GemmTileChoice::kLarge:
      return GemmTileKind::kLarge;
    case GemmTileChoice::kSmall:
      return has_small_m_tile(op) ? GemmTileKind::kSmall : GemmTileKind::kLarge;
    case GemmTileChoice::kSwap:
      return has_swap_ab_tile(op) ? GemmTileKind::kSwap : GemmTileKind::kLarge;
    case GemmTileChoice::kPair:
      return has_swap_pair_tile(op) && !swap_pingpong ? GemmTileKind::kSwapPair
             : has_swap_ab_tile(op)                   ? GemmTileKind::kSwap
                                                      : GemmTileKind::kLarge;
    case GemmTileChoice::kAuto:
      break;
  }
  if (use_small_m_tile(op, rows_per_group)) return GemmTileKind::kSmall;
  if (!has_swap_ab_tile(op) || rows_per_group < 1) return GemmTileKind::kLarge;
  if (swap_pingpong && has_swap_pp_tile(op) && rows_per_group <= kSwapPingpongMaxRows)
    return GemmTileKind::kSwap;
  const double m = static_cast<double>(rows_per_group);
  const double large = expected_tile_padding(compiled_tile_config(op).token_rows(), m) *
                       (large_fuses ? kSwapOverFusedPadding : 1.0);
  const double swap = expected_tile_padding(swap_ab_tile_config(op).token_rows(), m);
  if (!(swap < large)) return GemmTileKind::kLarge;
  const int64_t routed = routed_rows_per_group >= 0 ? routed_rows_per_group : rows_per_group;
  if (!kAutoSwapPair || swap_pingpong || !swap_pair_pays(op, routed)) return GemmTileKind::kSwap;
  if (pair_pick == GemmPairPick::kDevice) return GemmTileKind::kSwapOrPair;
  if (shared_groups == 0) return GemmTileKind::kSwapPair;
  return pair_pick == GemmPairPick::kAuto ? GemmTileKind::kSwapOrPair : GemmTileKind::kSwap;
}

}  // namespace servekit::cuda
