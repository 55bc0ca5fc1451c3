#include "tune/moe_path.h"

#include <cstdint>
#include <limits>

#include "core/env.h"
#include "servekit/error.h"

namespace servekit::tune {

// Cutovers per (shape, format): the static path runs while tokens * top_k <= rows. Measured
// entries come from bench/results/h200/2026-11-30-issues-s2.json (scripts/gpu-check.sh,
// BENCH_SET=issues: `servekit bench moe --path both`, graph replays, cold L2) unless they name
// another file: rows is the largest measured point where the static path was faster than the
// dynamic one; the true crossover lies between it and the next measured point. Entries that
// say H100 were measured on one (session 44: the 4-bit formats, where the static path reads a
// quarter of the dynamic path's weight bytes and stays 1.9-3.3x ahead to 256-512 tokens; no H200
// was lent; qwen3-235b int4 moved down again in session 45 and kimi-k2 int4 in session 46, when
// the dynamic path got its own int4 GEMM). Unmeasured shapes keep the design point of the static
// path (decode, 256 routed rows) and say so.
const std::vector<MoECutover>& moe_cutover_table() {
  static const std::vector<MoECutover> table = {
      {"deepseek-v3", 256, 8, 7168, 2048, QuantMethod::kFP8Block128, 32, true,
       "static 396.5 us vs dynamic 397.6 us at T=4 (a 0.3% margin); 662.7 vs 649.6 at T=8 "
       "(2026-12-01-cutover-s13.json: the static path's cost-weighted partition; at s7 T=4 was "
       "400.3 vs "
       "390.6)"},
      {"deepseek-v3", 256, 8, 7168, 2048, QuantMethod::kBF16, 16, true,
       "static 405.6 us vs dynamic 414.3 us at T=2; 691.2 vs 689.7 at T=4, 1170.5 vs 1161.1 at "
       "T=8 (cutover-s8.json)"},
      {"kimi-k2", 384, 8, 7168, 2048, QuantMethod::kFP8Block128, 16, true,
       "static 249.6 us vs dynamic 262.8 us at T=2; 415.5 vs 403.9 at T=4, 688.8 vs 657.6 at T=8 "
       "(cutover-s8.json)"},
      {"kimi-k2", 384, 8, 7168, 2048, QuantMethod::kInt4W4A16, 2048, true,
       "H100, the dynamic path on the int4 GEMM (session 46, ab/2026-12-06-s46-suite/"
       "kimi-both.json, one lease): static 2325.4, 3135.3, 3880.4, 5361.3 us vs dynamic 3460.6, "
       "4540.7, 4912.2, 4968.8 at T=64, 128, 256, 512. Before the int4 GEMM (session 44, the "
       "bf16 copy): 4096 rows, dynamic 10168.9 at T=128, 11504.6 at T=512. H200: static 1525.0 "
       "vs dynamic (bf16 copy) 3139.3 at T=32"},
      {"qwen3-235b-a22b", 128, 8, 4096, 1536, QuantMethod::kBF16, 64, true,
       "static 482.2 us vs dynamic 487.2 us at T=8; 704.8 vs 687.6 at T=12, 760.1 vs 739.0 at "
       "T=16 (cutover-s7b-qwen3.json: the dynamic path's 64x128 tile)"},
      {"qwen3-235b-a22b", 128, 8, 4096, 1536, QuantMethod::kInt4W4A16, 1024, true,
       "H100, the dynamic path on the int4 GEMM (session 46, ab/2026-12-06-s46-suite/"
       "q235-both.json, one lease): static 547.4, 677.0, 848.6, 1028.1 us vs dynamic 777.1, "
       "786.4, 784.9, 785.1 at T=64, 128, 192, 256 (session 45, ab/2026-12-06-s45-w4a16b: "
       "dynamic 784.5 vs static 1016.1 at T=256, 798.7 vs 1849.3 at T=512). Before the int4 GEMM "
       "(the bf16 copy, session 44): static 545.7, 666.1, 1016.6 vs dynamic 1672.7, 1711.1, "
       "1753.7 at T=64, 128, 256"},
      {"qwen3-30b-a3b", 128, 8, 2048, 768, QuantMethod::kBF16, 128, true,
       "static 204.4 us vs dynamic 207.3 us at T=12, 207.4 vs 210.1 at T=16; 286.3 vs 284.9 at "
       "T=32 (2026-12-01-cutover-s13.json; at s7 T=12 and 16 were level, 205.5 vs 204.7, 208.3 vs "
       "207.8)"},
      {"mixtral-8x7b", 8, 2, 4096, 14336, QuantMethod::kBF16, 16, true,
       "static 614.8 us vs dynamic 629.3 us at T=8; 704.4 vs 699.2 at T=16 (cutover-s8.json)"},
      {"gpt-oss-120b", 128, 4, 2880, 2880, QuantMethod::kMXFP4W4A16, 2048, true,
       "H100 (session 44, ab/2026-12-06-s44-final/cutover4.json): static 651.3, 748.8, 937.8, "
       "1411.4 us vs dynamic 2021.7, 2171.9, 2254.8, 2321.6 at T=64, 128, 256, 512 (uniform; "
       "skewed 447.2-1544.7 vs 1207.2-2431.3), the largest measured. H200: static 443.6 vs "
       "dynamic 975.8 at T=32"},
  };
  return table;
}

bool static_path_supports(const QuantConfig& q, int64_t hidden, int64_t intermediate,
                          std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (q.method == QuantMethod::kMXFP4W4A8) return no("quant mxfp4_w4a8 has no static kernel");
  if (hidden <= 0 || hidden % 64 != 0)
    return no("hidden_size=" + std::to_string(hidden) + " is not a positive multiple of 64");
  if (intermediate <= 0 || intermediate % 64 != 0)
    return no("intermediate_size=" + std::to_string(intermediate) +
              " is not a positive multiple of 64");
  return true;
}

int64_t moe_cutover_rows(const MoEPathDesc& d) {
  // Unset or empty: the table; else a whole number of routed rows (core/env.h's parser).
  if (const long long v = env_int(kCutoverEnv, 0, std::numeric_limits<int64_t>::max(), -1); v >= 0)
    return v;
  for (const MoECutover& c : moe_cutover_table())
    if (c.num_experts == d.num_experts && c.top_k == d.top_k && c.hidden == d.hidden &&
        c.intermediate == d.intermediate && c.quant == d.quant.method)
      return c.rows;
  return kDefaultCutoverRows;
}

MoEPath choose_moe_path(const MoEPathDesc& d) {
  SERVEKIT_CHECK(d.tokens >= 1, "choose_moe_path: tokens=", d.tokens, " must be >= 1");
  SERVEKIT_CHECK(d.top_k >= 1, "choose_moe_path: top_k=", d.top_k, " must be >= 1");
  if (!static_path_supports(d.quant, d.hidden, d.intermediate)) return MoEPath::kDynamic;
  return d.tokens * d.top_k <= moe_cutover_rows(d) ? MoEPath::kStatic : MoEPath::kDynamic;
}

}  // namespace servekit::tune
