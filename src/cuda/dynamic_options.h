// Environment switches of the CUDA dynamic path, read once when a layer is constructed
// (docs/perf-notes.md, eighth pass). Pure C++: the parsers are tested on the CPU.
//
//   SERVEKIT_DYNAMIC_PDL=0|1        programmatic dependent launch between the dynamic path's
//                                   kernels (default 0: measured level to 1% slower in CUDA
//                                   graphs, docs/perf-notes.md); results are identical either
//                                   way.
//   SERVEKIT_DYNAMIC_FUSED_ACT=0|1  GEMM1's activation in its epilogue where the run's tile has
//                                   it, W13 interleaved at load (default 1: 1.1-1.4% faster on
//                                   issue 3's rows; docs/perf-notes.md, twenty-fifth pass); 0
//                                   keeps the usual W13 layout and the separate pass. Results
//                                   are identical either way.
//   SERVEKIT_DIAG_SWAP_FUSED_ACT=0|1  A/B only: 0 runs the separate pass where the run's tile
//                                   is bf16's swap-AB tile, as before session 34 (the tile pick
//                                   still counts the swap tile as fusing). Default 1. Results
//                                   are identical either way.
//   SERVEKIT_GEMM_SWAP=auto|cooperative|pingpong  bf16's swap-AB tile per GEMM: auto picks the
//                                   ping-pong 128x144 tile where the expert's weight matrix is
//                                   small (use_swap_pingpong, gemm_tile_config.h), else the
//                                   cooperative 256x144 one; the others force one for both GEMMs.
//                                   Results are identical either way.
//   SERVEKIT_GEMM_PAIR_PICK=auto|host|device  where bf16's pair swap tile could pay, who picks
//                                   between it and the 2x1 swap tile (GemmPairPick,
//                                   gemm_tile_pick.h; read by GroupedGemm::create): device
//                                   launches both and the GPU gives the work to one by the
//                                   experts' actual rows; host takes the pair unless the routing
//                                   has a shared expert, then the 2x1 tile; auto (default) is
//                                   host without a shared expert and device with one.
//                                   Results are identical either way.
//   SERVEKIT_GEMM_PP_TILE_K=auto|64|128  the k-step of bf16's ping-pong swap tile (read by
//                                   GroupedGemm::create, swap_pp_tile_k): auto (default) takes
//                                   128 on an H100 and 64 elsewhere (swap_pp_tile_k_for_device,
//                                   gemm_tile_config.h, with the measurements). Both steps
//                                   pass the same GEMM tests against the reference.
//   SERVEKIT_DYNAMIC_W4A16=0|1      int4_w4a16 with group 64 or 128 on the int4 GEMM
//                                   (make_grouped_gemm_w4a16, grouped_gemm.h) over its 4-bit
//                                   codes (default 1, kDynamicW4A16Default: 1.3-2.3x the bf16 copy
//                                   at 256-2048 tokens on qwen3-235b, 11% slower at 4096, a quarter
//                                   of its memory; docs/perf-notes.md, forty-fifth pass); 0 runs
//                                   the bf16 GEMMs on weights dequantized at load. Results agree
//                                   within the int4 tolerance (the same bf16 weights, another
//                                   summation order).
//   SERVEKIT_GEMM_W4A16_TILE=auto|64|128|256  the int4 GEMM's token tile (read by
//                                   make_grouped_gemm_w4a16, grouped_gemm.h): auto (default)
//                                   picks per run by an expert's expected rows (w4a16_tile_n);
//                                   a number forces that tile for every run. Results are
//                                   identical either way.
//   SERVEKIT_GEMM_W4A16_CLUSTER=1|2  the int4 GEMM's 128- and 256-token tiles alone or in
//                                   clusters of two weight tiles sharing the token tile by
//                                   multicast (read by make_grouped_gemm_w4a16; default 2,
//                                   kW4A16ClusterDefault: 5-8% faster on qwen3-235b at 1024-8192
//                                   tokens). Results are identical either way.
//   SERVEKIT_DIAG_DYNAMIC_STOP=N    timing attribution only: the forward returns after pass N
//                                   (1 route + plan, 2 gather, 3 GEMM1, 4 activation, 5 GEMM2),
//                                   so the layer's output is garbage; 0 or unset: whole layer.
// Any other value is an error (servekit::Error at construction), not a silent default.
#pragma once

#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/env.h"
#include "cuda/gemm_tile_config.h"
#include "servekit/error.h"

namespace servekit::cuda {

constexpr int kDynamicStopPasses = 5;

// SERVEKIT_DYNAMIC_W4A16 when unset or empty.
constexpr bool kDynamicW4A16Default = true;

// The on/off switches above: "1" / "on", "0" / "off"; empty is `empty`.
constexpr std::optional<bool> parse_dynamic_switch(std::string_view s, bool empty) {
  if (s.empty()) return empty;
  if (s == "1" || s == "on") return true;
  if (s == "0" || s == "off") return false;
  return std::nullopt;
}

constexpr std::optional<bool> parse_dynamic_pdl(std::string_view s) {
  return parse_dynamic_switch(s, false);
}

constexpr std::optional<int> parse_dynamic_stop(std::string_view s) {
  if (s.empty()) return 0;
  if (s.size() == 1 && s[0] >= '0' && s[0] <= '0' + kDynamicStopPasses) return s[0] - '0';
  return std::nullopt;
}

// The readers the layer calls at construction: the value of the environment variable, parsed
// as above (unset: the default); a bad value throws servekit::Error naming it.
// An on/off switch (SERVEKIT_DYNAMIC_PDL, _FUSED_ACT, _W4A16, SERVEKIT_DIAG_SWAP_FUSED_ACT):
// `fallback` when unset or empty.
inline bool dynamic_switch_from_env(const char* name, bool fallback) {
  return env_choice(
      name, fallback, [&](std::string_view s) { return parse_dynamic_switch(s, fallback); },
      "1 or 0");
}
inline GemmSwapChoice gemm_swap_from_env() {
  return env_choice("SERVEKIT_GEMM_SWAP", GemmSwapChoice::kAuto, parse_gemm_swap_choice,
                    "auto, cooperative or pingpong");
}
inline int dynamic_stop_from_env() {
  static_assert(kDynamicStopPasses == 5, "the message below names the passes");
  return env_choice("SERVEKIT_DIAG_DYNAMIC_STOP", 0, parse_dynamic_stop, "0 to 5");
}

}  // namespace servekit::cuda
