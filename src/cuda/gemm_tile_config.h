// Tile configuration of the sm90 grouped GEMMs of the MoE dynamic path, as pure constexpr data
// (Desc -> Config), so the choice can be printed and unit-tested on a machine without a GPU.
// Plain C++17: no CUDA or CUTLASS includes. Internal header.
//
// Only the tile shapes that compiled_tile_config(), small_m_tile_config() and
// swap_ab_tile_config() return are instantiated (one CUTLASS kernel per operand format, plus a
// 64-row tile for bf16 and fp8_block128 and a swap-AB tile for bf16: each costs minutes and
// gigabytes to compile); choose_gemm_tile() (gemm_tile_pick.h, host policy the kernels do not
// include) picks between a format's tiles per run and choose_gemm_config() the run-time knobs
// (raster order, swizzle). Adding a tile means one more instantiation .cu file and a case here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace servekit::cuda {

// Operand format of a grouped GEMM; A (activations) and B (weights) share it.
enum class GemmOperand : uint8_t {
  kBF16,          // bf16 x bf16
  kFP8PerTensor,  // e4m3 x e4m3, one fp32 alpha per group (act scale * weight scale)
  kFP8Block128,   // e4m3 x e4m3, 1x128 activation scales, 128x128 weight scales (DeepSeek)
};

enum class GemmSchedule : uint8_t {
  kCooperative,  // two consumer warp groups split one tile along M
  kPingpong,     // two consumer warp groups alternate whole tiles (overlaps the epilogue)
};

// Order in which a persistent CTA walks the output tiles of a group.
enum class GemmRaster : uint8_t {
  kAlongM,  // consecutive tiles go down M: neighbouring CTAs share a weight (B) tile in L2
  kAlongN,  // consecutive tiles go along N: neighbouring CTAs share an activation (A) tile
};

struct GemmTileConfig {
  int tile_m = 0, tile_n = 0, tile_k = 0;  // CTA tile (elements), in the kernel's M, N, K
  int cluster_m = 1, cluster_n = 1;        // CTAs per cluster along M and N (TMA multicast)
  GemmSchedule schedule = GemmSchedule::kCooperative;
  // The kernel computes D_gᵀ = B_g · A_gᵀ: its M is the weights' N (tile_m weight rows) and its
  // N the group's rows (tile_n tokens), so a group pads to whole tile_n rows.
  bool swap_ab = false;

  constexpr bool operator==(const GemmTileConfig& o) const {
    return tile_m == o.tile_m && tile_n == o.tile_n && tile_k == o.tile_k &&
           cluster_m == o.cluster_m && cluster_n == o.cluster_n && schedule == o.schedule &&
           swap_ab == o.swap_ab;
  }
  // Rows of a group (tokens) one tile covers.
  constexpr int token_rows() const { return swap_ab ? tile_n : tile_m; }
  // Rows of a group one cluster covers: a group pads to whole clusters along its rows (CUTLASS's
  // group scheduler rounds each group's tiles up to the cluster).
  constexpr int token_block_rows() const {
    return token_rows() * (swap_ab ? cluster_n : cluster_m);
  }
};

// One grouped GEMM: for each group g, D_g [M_g, N] = A_g [M_g, K] · B_gᵀ, B_g [N, K].
struct GemmDesc {
  GemmOperand operand = GemmOperand::kBF16;
  int64_t n = 0, k = 0;
  int num_groups = 0;
  int64_t rows_per_group = 0;  // expected M_g (capacity rows / groups), for run-time knobs
};

// What a grouped GEMM knows of the MoE routing behind its groups, for the tile pick only (never
// changes results): `top_k` routed rows and `shared_groups` shared-expert rows per token, the
// routed rows spread over `experts` experts (all of them: with an expert-parallel range the
// GEMM's groups are a part). All 0: plain groups, each expected to hold rows / groups.
struct GemmRoutingHint {
  int top_k = 0;
  int shared_groups = 0;
  int experts = 0;
};
// A routed group's expected rows in a run of `rows` rows over `groups` groups: tokens x top_k /
// experts, with tokens = rows / (top_k + shared_groups); rows / groups without a hint.
constexpr int64_t routed_rows_per_group(const GemmRoutingHint& h, int64_t rows, int groups) {
  if (h.top_k < 1 || h.experts < 1) return groups > 0 ? rows / groups : 0;
  return rows / (h.top_k + h.shared_groups) * h.top_k / h.experts;
}

struct GemmConfig {
  GemmTileConfig tile;
  GemmRaster raster = GemmRaster::kAlongM;
  int max_swizzle = 1;  // CUTLASS tile-scheduler swizzle (1, 2, 4 or 8)
};

constexpr int gemm_operand_bytes(GemmOperand op) {
  return op == GemmOperand::kBF16 ? 2 : 1;
}

// The one tile shape compiled per operand format. H200 facts behind the choices: wgmma peak
// needs >= 128x128 per CTA (bf16 ~790, fp8 ~1430 TFLOP/s), each math warp group holds at most
// ~128 fp32 accumulators per thread without spilling (232 registers after setmaxnreg), and the
// L2 feeds ~6-8 TB/s, so bytes loaded per FLOP must stay low.
constexpr GemmTileConfig compiled_tile_config(GemmOperand op) {
  switch (op) {
    case GemmOperand::kBF16:
      // 128x256x64 cooperative: each warp group owns 64x256 (128 accumulators per thread), the
      // most FLOP per loaded byte that fits; K=64 is one 128-byte swizzle row of bf16. Cluster
      // 1x2 multicasts the A tile to two N-neighbours: MoE groups are short in M (a DeepSeek
      // expert sees ~256 rows at 8192 tokens), so a cluster along M would round every group up
      // to 256 rows, while N (2I or H) is always a multiple of 512 in the presets.
      return {128, 256, 64, 1, 2, GemmSchedule::kCooperative};
    case GemmOperand::kFP8PerTensor:
      // Same geometry as bf16 with K=128 (128 bytes of e4m3 per swizzle row). Fast (single
      // level) fp8 accumulation, as vLLM and TensorRT-LLM use for per-tensor W8A8: Hopper's fp8
      // MMA keeps ~14 accumulator bits, ~0.5% relative at K ~ 3000 and up to ~2% at K = 4096
      // worst case (DeepSeek-V3 report), below the e4m3 rounding noise of the operands. A
      // promoting mainloop needs registers for a wgmma result besides the accumulator
      // (fp8_block128 below).
      return {128, 256, 128, 1, 2, GemmSchedule::kCooperative};
    case GemmOperand::kFP8Block128:
      // 128x256x128 cooperative, cluster 1x2 as above; tile K must equal the 128 scale block.
      // The blockwise mainloop keeps each k-tile's wgmma result apart from the accumulator for
      // the per-128-K promotion; at 64x256 per warp group it promotes in two 128-column halves
      // (kernels/gemm/sm90_blockwise_halves.cuh: 128 accumulators + one 64-register half per
      // thread). Against the 128x128 tile (sm90_blockwise_overlap.cuh, promotion overlapped
      // with the next k-tile's wgmma) the L2 serves 17% fewer bytes per MAC. Measured on the
      // H200 (deepseek-v3 dynamic layer, us, ab/2026-12-02-s23-n256-*): 8192 tokens 8814.1 /
      // 8876.7 vs 9259.1 / 9127.5 (ncu GEMM1 4432 vs 4888, GEMM2 2510 vs 2629); 2048 tokens
      // 3849.7 / 3833.5 vs 3914.2 / 3841.4.
      return {128, 256, 128, 1, 2, GemmSchedule::kCooperative};
  }
  return {};
}

// The second instantiation of bf16 and fp8_block128, for very short groups: a 64x128 tile,
// ping-pong (each consumer warp group owns a whole tile and the two alternate, so one group's
// epilogue overlaps the other's mainloop). A group of m rows occupies ceil(m/128)*128 rows of
// the 128-row tile but only ceil(m/64)*64 of this one, and N = 128 gives twice the tiles per
// group of a 256-wide tile: at decode sizes (1-2 rows per expert) a 64x256 grid is ~5 waves deep
// on 132 SMs with a part-empty last wave, the 64x128 grid ~10. Each 64-row tile loads its weight
// slab for half the MMAs of a 128-row tile, so it only pays where the groups are far shorter
// than 128 rows and the GEMM is bound by reading the weights. Measured on the H200
// (docs/perf-notes.md, sixth and seventh passes; dynamic layer, us):
//   bf16, 128x256 vs 64x256: qwen3-30b at 16 / 64 / 128 rows per expert 371 / 357, 407 / 430,
//     508 / 584; 64x256 vs 64x128 at 8, 16, 32 tokens: qwen3-235b 493 / 490, 765 / 753,
//     1012 / 999, qwen3-30b 160 / 155, 215 / 209, 287 / 283.
//   fp8_block128, 128x128 vs 64x128: deepseek-v3 at 8 / 16 / 32 tokens 725 / 647,
//     1098 / 985, 1538 / 1397.
// fp8_per_tensor has no second instantiation (returns the compiled tile).
constexpr GemmTileConfig small_m_tile_config(GemmOperand op) {
  switch (op) {
    case GemmOperand::kBF16:
      return {64, 128, 64, 1, 2, GemmSchedule::kPingpong};
    case GemmOperand::kFP8Block128:
      return {64, 128, 128, 1, 2, GemmSchedule::kPingpong};
    case GemmOperand::kFP8PerTensor:
      break;
  }
  return compiled_tile_config(op);
}
constexpr bool has_small_m_tile(GemmOperand op) {
  return !(small_m_tile_config(op) == compiled_tile_config(op));
}

// The third instantiation of bf16, for groups of ~100-300 rows: swap-AB, 256 weight rows x 144
// tokens, cooperative (each warp group 128 weight rows x 144 tokens, 144 accumulators per
// thread; m64n144k16, one of CuTe's extended wgmma shapes), cluster 2x1 (two weight tiles share
// the token tile by multicast). The 128-row tiles pad a group of m rows to whole 128-row tiles:
// uniform routing gives ~m +- sqrt(m) rows per expert, so at m = 128 half the experts spill a few
// rows into a second, nearly empty tile (1.49x the rows' own tensor work at qwen3-30b 2048
// tokens, bench/tools/padding_sim.py), at m = 256 about a quarter (1.24x); 144-token tiles pad
// 1.19x and 1.14x there. Operand bytes per MAC 0.0109 against the 128x256 tile's 0.0117. GEMM1's
// activation fused in its epilogue for bf16 intermediates (session 34; gemm_tile_fuses_activation
// below). Measured on the H200 (dynamic bf16 layer,
// uniform routing, us, 128x256 vs swap 256x144; ab/2026-12-03-s27-swap-range):
//   qwen3-30b 1024 / 2048 / 4096 / 8192 tokens (64 / 128 / 256 / 512 rows per expert): 395.8 /
//     407.9, 493.1 / 482.5, 738.4 / 750.1, 1263.7 / 1290.3;
//   qwen3-235b 1024 / 2048 / 4096: 1307.6 / 1346.0, 1647.5 / 1493.4, 2416.5 / 2436.3;
//   gpt-oss-120b (no fused activation on either) 2048 / 4096 / 8192 (64 / 128 / 256): 1777.1 /
//     1783.0, 2190.4 / 1991.1, 3631.8 / 3181.2;
//   deepseek-v3 4096 / 8192 (143 / 286 with the shared expert): 8719.5 / 8703.2, 14095.9 /
//     13826.1.
// A 128x144 swap tile (same call) was 1.4% faster at qwen3-30b 2048 and slower everywhere else.
constexpr GemmTileConfig swap_ab_tile_config(GemmOperand op) {
  if (op == GemmOperand::kBF16) {
    GemmTileConfig t{256, 144, 64, 2, 1, GemmSchedule::kCooperative};
    t.swap_ab = true;
    return t;
  }
  return compiled_tile_config(op);
}
constexpr bool has_swap_ab_tile(GemmOperand op) {
  return !(swap_ab_tile_config(op) == compiled_tile_config(op));
}

// The fifth instantiation of bf16: the cooperative swap-AB tile (256 weight rows x 144 tokens) in a
// 1x2 cluster along the tokens, for groups of two or more token tiles: the weight tile is
// multicast to two token tiles, so each weight byte leaves HBM once per pair. With the 2x1 cluster
// an expert's token tiles read each weight tile on CTAs that drift apart by up to a tile's time
// (~130 us at deepseek-v3's K = 7168), far longer than the L2 keeps a line while the weights
// stream through it (50 MB at ~3 TB/s: ~10-20 us). Measured (session 41, ncu on an H100,
// ab/2026-12-06-s41-ncu-ds, deepseek-v3 bf16 8192 tokens, 2x1 swap tile): GEMM1 11.05 ms at 84% of
// DRAM peak (~31 GB read against 15 GB of weights), L2 hit rate 28%; GEMM2 4.93 ms at 81%. Groups
// pad to whole pairs (288 tokens), so it only pays where a group holds two or more token tiles
// (swap_pair_pays). L2 bytes per MAC (128 + 144) x 2 / 36864 = 0.0148 against the 2x1 cluster's
// (256 + 72) x 2 / 36864 = 0.0178. Measured (session 42, H100, ab/2026-12-06-s42-pair and
// -s42-power, dynamic bf16 layer, uniform, us, 2x1 swap tile / pair): gpt-oss-120b 8192 tokens
// 3917.8, 3852.1 / 3391.4, 3430.8 (300 repeats: 3966.7 / 3644.2); qwen3-235b 4096 2674.9, 2684.5 /
// 2546.8, 2473.2; deepseek-v3 8192 15521.8, 15469.8, 15546.3, 15420.8 / 16759.5, 16797.2, 16887.6,
// 16736.8, the loss all GEMM1's (pair on GEMM1 only 16907.9, 17027.2; on GEMM2 only 15355.7,
// 15434.8). Why: that row's routing is far from Poisson (random logits, a random correction
// bias, group-limited selection: 0 to 787 rows per expert, sd 230 around 256), so 111 of the
// 256 experts spill past one pair and the pair runs 792 token tiles against the 2x1 tile's 613
// (1.29x; qwen3-235b 4096 1.004x, gpt-oss-120b 8192 1.015x). On Poisson-like groups the pair is
// faster on deepseek-v3's shapes too, shared group included (bench/tools/gemm_pair.cpp,
// ab/2026-12-06-s42-last, us, 2x1 / pair, three rounds: GEMM1 with the shared group 8456.5,
// 8556.3, 8763.6 / 8042.9, 7518.0, 7586.1; GEMM2 5403.6, 4619.6, 5125.7 / 4070.4, 3987.5,
// 3958.5). The host-side pick sees only the mean rows, so by default it takes the pair where the
// routing has no shared expert and leaves the pick to the device where it has one (GemmPairPick,
// kSwapOrPair: both tiles launched, the groups given to one of them by their actual rows).
// SERVEKIT_GEMM_TILE=pair forces the pair alone.
// A/B only: -DSERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M=2 builds it in a 2x2 cluster (the token tile
// multicast to two weight tiles too: (128 + 72) x 2 / 36864 = 0.0109 bytes per MAC).
#ifndef SERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M
#define SERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M 1
#endif
constexpr GemmTileConfig swap_pair_tile_config(GemmOperand op) {
  if (op == GemmOperand::kBF16) {
    GemmTileConfig t{
        256, 144, 64, SERVEKIT_DIAG_SWAP_PAIR_CLUSTER_M, 2, GemmSchedule::kCooperative};
    t.swap_ab = true;
    return t;
  }
  return compiled_tile_config(op);
}
constexpr bool has_swap_pair_tile(GemmOperand op) {
  return !(swap_pair_tile_config(op) == compiled_tile_config(op));
}

// The fourth and fifth instantiations of bf16: the swap-AB tile as 128 weight rows x 144 tokens,
// ping-pong (each warp group a whole tile, so one group's epilogue, the fused activation included,
// runs under the other's mainloop; 144 accumulators per thread), with k-steps of 64 and of 128
// (below). It replaces the cooperative swap tile in the GEMMs that use_swap_pingpong picks. Its
// fused activation needs W13 in 64-row gate/up blocks (a thread holds weight rows r and r + 64).
// Measured on the H200 (session 34, ab/2026-12-03-s34-swap-pp, as the swap tile of both GEMMs,
// dynamic bf16 layer, us, cooperative vs ping-pong): qwen3-30b 2048 tokens 488.5, 488.3 vs 451.0,
// 451.8; qwen3-235b 2048 1498.6, 1500.2 vs 1538.1, 1535.1; gpt-oss-120b 4096 2019.5 vs 2111.7;
// deepseek-v3 8192 14017.6 vs 17421.7.
//
// A/B only: -DSERVEKIT_DIAG_SWAP_PP_CLUSTER_M=4 builds it with four CTAs per cluster along the
// weights (the token tile multicast to four weight tiles instead of two). Measured slower (session
// 35, ab/2026-12-03-s35-pp-cluster4, qwen3-30b bf16, us, 2x1 / 4x1): 2048 tokens 452.8, 451.8 /
// 464.9, 464.6; 8192 1233.8 / 1292.8.
//
// The k-step: 64 (6 stages of 18 KB) or 128 (3 of 36 KB), both compiled, and the cards disagree
// on which is faster. qwen3-30b bf16 dynamic, us, k-step 64 / 128, one lease each:
//   H200, session 43 (ab/2026-12-06-s43-kstep): 2048 tokens 438.9, 439.5 / 435.9, 435.8;
//     4096 643.1 / 675.1; 8192 1167.9, 1173.8 / 1205.9, 1206.6.
//   H100, session 39 (ab/2026-12-06-s39-pp*): 1024 519.3, 519.1 / 507.7, 507.2; 2048 591.3,
//     589.9 / 565.2, 565.5; 4096 820.6, 822.6 / 784.7, 784.5; 8192 1345.3, 1349.7 / 1340.4,
//     1339.3.
//   H100, session 40 (ab/2026-12-06-s40-ab8k): 2048 586.9, 587.8 / 566.5, 565.6; 4096 816.4 /
//     783.8; 6144 level; 8192 1292-1336 (bimodal) / 1334-1342; 16384 level.
// So 128 is 4% faster on the H100 up to 4096 tokens and level above, and 3-5% slower on the H200
// at 4096-8192 (level at 2048): swap_pp_tile_k_for_device picks per card.
#ifndef SERVEKIT_DIAG_SWAP_PP_CLUSTER_M
#define SERVEKIT_DIAG_SWAP_PP_CLUSTER_M 2
#endif
// A/B only: -DSERVEKIT_DIAG_SWAP_PP_CLUSTER_N=2 puts two token tiles in a cluster too, the weight
// tile multicast to both (with the default 2 along M, a 2x2 cluster: L2 bytes per MAC
// (64 + 72) x 2 / 18432 = 0.0148 against (128 + 72) x 2 / 18432 = 0.0217 now, -32%); groups pad to
// whole pairs of token tiles, which costs nothing where they hold 4 (qwen3-30b at 8192 tokens,
// 512 rows) and doubles the work where they hold 1 (128 rows, 2048 tokens). Clusters of four must
// fit whole in a GPC, which may leave SMs idle (bench/tools/cluster_occupancy.cu counts them); the
// 4x1 cluster above was measured slower.
#ifndef SERVEKIT_DIAG_SWAP_PP_CLUSTER_N
#define SERVEKIT_DIAG_SWAP_PP_CLUSTER_N 1
#endif
// tile_k: 64 or 128, the two k-steps compiled (grouped_gemm_bf16_swap_pp*.cu).
constexpr GemmTileConfig swap_pp_tile_config(GemmOperand op, int tile_k = 64) {
  if (op == GemmOperand::kBF16) {
    GemmTileConfig t{128,
                     144,
                     tile_k,
                     SERVEKIT_DIAG_SWAP_PP_CLUSTER_M,
                     SERVEKIT_DIAG_SWAP_PP_CLUSTER_N,
                     GemmSchedule::kPingpong};
    t.swap_ab = true;
    return t;
  }
  return compiled_tile_config(op);
}
constexpr bool has_swap_pp_tile(GemmOperand op) {
  return !(swap_pp_tile_config(op) == compiled_tile_config(op));
}
// The ping-pong swap tile's k-step on a card, by its name (cudaDeviceProp::name): 128 on an H100
// (measured on the H100 80GB HBM3; other H100 parts are assumed alike), 64 on anything else (the
// H200, measured; unmeasured cards take its step).
constexpr int swap_pp_tile_k_for_device(std::string_view device_name) {
  return device_name.find("H100") != std::string_view::npos ? 128 : 64;
}
// SERVEKIT_GEMM_PP_TILE_K: "auto" or empty -> 0 (the card's step), "64" or "128"; anything else is
// not a step.
constexpr std::optional<int> parse_swap_pp_tile_k(std::string_view s) {
  if (s.empty() || s == "auto") return 0;
  if (s == "64") return 64;
  if (s == "128") return 128;
  return std::nullopt;
}

// Which swap-AB tile a GEMM builds (SERVEKIT_GEMM_SWAP, read by the MoE layer at construction).
enum class GemmSwapChoice : uint8_t { kAuto, kCooperative, kPingpong };
// "auto" or empty, "cooperative", "pingpong"; anything else is not a choice.
constexpr std::optional<GemmSwapChoice> parse_gemm_swap_choice(std::string_view s) {
  if (s.empty() || s == "auto") return GemmSwapChoice::kAuto;
  if (s == "cooperative") return GemmSwapChoice::kCooperative;
  if (s == "pingpong") return GemmSwapChoice::kPingpong;
  return std::nullopt;
}
// The ping-pong swap tile where an expert's weight matrix (N x K) is small: there the fused
// epilogue is a large share of a tile and the cooperative kernel cannot hide it. Of the four
// measured rows only qwen3-30b gained, whose two GEMMs are 1536 x 2048 and 2048 x 768; the
// smallest of the others is qwen3-235b's GEMM2, 4096 x 1536. Per-GEMM times to refine it:
// bench/runs/next-swap-pp-stops.sh.
inline constexpr int64_t kSwapPingpongMaxWeights = int64_t{2048} * 2048;
constexpr bool use_swap_pingpong(GemmOperand op, int64_t n, int64_t k,
                                 GemmSwapChoice choice = GemmSwapChoice::kAuto) {
  if (!has_swap_pp_tile(op) || choice == GemmSwapChoice::kCooperative) return false;
  return choice == GemmSwapChoice::kPingpong || n * k <= kSwapPingpongMaxWeights;
}

// Which of the compiled tiles a run uses.
// kSwapOrPair: the 2x1 swap tile and its pair both launch, and the device gives the groups to one
// of them (pair_gate_pays); the other finds only empty groups.
enum class GemmTileKind : uint8_t { kLarge, kSmall, kSwap, kSwapPair, kSwapOrPair };
// The pair's padding may be at most this factor of the 2x1 swap tile's (swap_pair_pays in
// gemm_tile_pick.h on the expected rows; pair_gate_pays below on the actual ones).
inline constexpr double kSwapPairOverSwapPadding = 1.05;

// The pick between the 2x1 swap tile and its pair on the rows the groups actually hold, made on
// the device (GemmTileKind::kSwapOrPair, GemmRunGate in grouped_gemm.h): the token tiles each
// tiling runs over a group of m rows, and whether the pair's total over the groups is at most
// kSwapPairOverSwapPadding times the 2x1 tile's. All groups empty: the pair (which then runs
// nothing either). The host knows only the mean rows, and routers spread them far wider than
// swap_pair_pays's Poisson model where a correction bias and group-limited selection meet
// (deepseek-v3's bench rows: 0-787 rows around 256, 1.29x the tiles in pairs; qwen3-235b's
// 1.004x).
constexpr int64_t swap_gate_tiles(GemmOperand op, int64_t m) {
  const int64_t t = swap_ab_tile_config(op).token_rows();
  return (m + t - 1) / t;
}
constexpr int64_t pair_gate_tiles(GemmOperand op, int64_t m) {
  const GemmTileConfig p = swap_pair_tile_config(op);
  const int64_t block = p.token_block_rows();
  return (m + block - 1) / block * (block / p.token_rows());
}
constexpr bool pair_gate_pays(int64_t pair_tiles, int64_t swap_tiles) {
  return static_cast<double>(pair_tiles) <=
         kSwapPairOverSwapPadding * static_cast<double>(swap_tiles);
}

// Whether a tile can run GEMM1's gated activation in its epilogue
// (kernels/gemm/sm90_act_epilogue.cuh): the 128x256 cooperative tile of bf16 and fp8_block128,
// whose output tile n is gate columns [128n, 128n + 128) next to the same up columns when W13 is
// interleaved in 128-row blocks (interleaved_w13_row), and bf16's 256-row cooperative swap-AB
// tile, whose 256 weight rows are those same 128 gate and 128 up rows (each warp group holds
// rows r and r + 128; bf16 intermediates only: the runner keeps the pass for an e4m3 one, whose
// 1x128 amax would span the two warp groups). fp8_per_tensor quantizes the intermediate by one
// scale over the whole tensor, which needs every row's activation first: never fused.
constexpr bool gemm_tile_fuses_activation(GemmOperand op, const GemmTileConfig& t) {
  if (t.swap_ab) {
    // Cooperative 256 rows: warp group w holds rows r and r + 128 (128-row interleave). Ping-pong
    // 128 rows (swap_pp_tile_config): one warp group holds rows r and r + 64 (64-row interleave).
    return op == GemmOperand::kBF16 &&
           ((t.schedule == GemmSchedule::kCooperative && t.tile_m == 256) ||
            (t.schedule == GemmSchedule::kPingpong && t.tile_m == 128));
  }
  return op != GemmOperand::kFP8PerTensor && t.schedule == GemmSchedule::kCooperative &&
         t.tile_m == 128 && t.tile_n == 256;
}

// Rows of W13's gate/up interleave for the fused activation: 128 (the 128x256 tiles and the
// cooperative swap-AB tile), or 64 for bf16 when GEMM1 uses the ping-pong swap-AB tile, whose 128
// weight rows must hold a gate block and its up block. fp8_block128's weight scales cover 128
// rows, so it keeps 128.
constexpr int64_t w13_interleave_rows(GemmOperand op, bool swap_pingpong) {
  return op == GemmOperand::kBF16 && swap_pingpong ? 64 : 128;
}

// W13 interleaved for the fused activation: physical row p of an expert's [2I, H] gate/up
// matrix holds logical row interleaved_w13_row(p, I, w), w-row blocks of gate and up in turn
// (gate rows [0, I), up rows [I, 2I)). inter % w == 0; w = 128 unless given.
constexpr int64_t interleaved_w13_row(int64_t p, int64_t inter, int64_t w = 128) {
  const int64_t block = p / (2 * w), within = p % (2 * w);
  return within < w ? block * w + within : inter + block * w + (within - w);
}

// Whether CUTLASS 4.2's blockwise scale producer (the fp8_block128 mainloops' load_auxiliary,
// which every block-scaled tile here inherits) keeps one operand's scales of a k-tile inside their
// shared-memory stage: it splits them over its warp's 32 lanes, and a count above 32 that is not
// a multiple of 32 is rounded up to the next multiple, whose extra copies land on the next stage's
// scales (docs/upstream-cutlass.md, report 3). Counts: a tile's rows (1x128 activation scales) and
// its tile_n / 128 weight blocks.
constexpr bool stock_scale_producer_fits(int scales_per_tile) {
  return scales_per_tile <= 32 || scales_per_tile % 32 == 0;
}

// Fixed alignment constraints of the instantiated kernels, in elements: TMA needs 16-byte
// aligned rows, so K (row length of A and B) and N (row length of D, bf16) must be multiples of
// these; fp8_block128 needs K to be a whole number of 128-scale blocks.
constexpr int64_t gemm_k_multiple(GemmOperand op) {
  return op == GemmOperand::kFP8Block128 ? 128 : 16 / gemm_operand_bytes(op);
}
constexpr int64_t gemm_n_multiple(GemmOperand) {
  return 8;
}  // bf16 output rows

// Whether the instantiated kernel supports the shape (N, K > 0 and aligned as above).
constexpr bool gemm_shape_supported(const GemmDesc& d) {
  return d.n > 0 && d.k > 0 && d.num_groups > 0 && d.k % gemm_k_multiple(d.operand) == 0 &&
         d.n % gemm_n_multiple(d.operand) == 0;
}

// A tile as the layer's kernel description prints it (MoELayer::kernels): "256x144x64 swap-AB
// cooperative cluster 2x1" (M x N x K in the kernel's terms; swap-AB: M is the weights).
inline std::string gemm_tile_name(const GemmTileConfig& t) {
  return std::to_string(t.tile_m) + "x" + std::to_string(t.tile_n) + "x" +
         std::to_string(t.tile_k) + (t.swap_ab ? " swap-AB" : "") +
         (t.schedule == GemmSchedule::kPingpong ? " ping-pong" : " cooperative") + " cluster " +
         std::to_string(t.cluster_m) + "x" + std::to_string(t.cluster_n);
}

// Rows a group of m rows occupies once rounded up to whole tiles (and clusters) along M: the
// padding the tile wastes. Used by the tests and by benchmarks to explain efficiency.
constexpr int64_t gemm_padded_rows(const GemmTileConfig& t, int64_t m) {
  const int64_t block = t.token_block_rows();
  return (m + block - 1) / block * block;
}

// Run-time knobs for the instantiation of tile `tile`.
constexpr GemmConfig choose_gemm_config(const GemmDesc& d, const GemmTileConfig& tile) {
  GemmConfig c;
  c.tile = tile;
  // A group's weights (N x K) are far larger than its rows (M_g x K) whenever M_g < N, the MoE
  // case: walking down M keeps one weight tile hot in L2 for every M tile of the group, so each
  // weight byte comes from HBM once. Only groups much taller than wide (a shared expert at
  // large batch with small N) favour reusing A instead. In a swap-AB tile the kernel's M is the
  // weights: along M, neighbouring CTAs take the weight tiles of one token tile and share it,
  // and a group's 1-3 token tiles run in the same wave, which shares its weight tiles in L2 (the
  // order measured in session 27), whatever the group's height.
  c.raster =
      !tile.swap_ab && d.rows_per_group > 4 * d.n ? GemmRaster::kAlongN : GemmRaster::kAlongM;
  // Groups are only a few tiles tall; a swizzle would round each group's tile count up to the
  // swizzle width and waste CTAs, so keep the plain order.
  c.max_swizzle = 1;
  return c;
}
// `small_m` picks small_m_tile_config (see above), else the compiled tile.
constexpr GemmConfig choose_gemm_config(const GemmDesc& d, bool small_m = false) {
  return choose_gemm_config(
      d, small_m ? small_m_tile_config(d.operand) : compiled_tile_config(d.operand));
}

}  // namespace servekit::cuda
