// `servekit bench moe`: builds MoE layers on the GPU, checks each run against the fp64 reference
// and times it (CUDA graph replays, cold L2, median), next to the cuBLAS peer. See bench/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_report.h"
#include "core/random_data.h"
#include "servekit/moe.h"

namespace servekit::bench {

// One group of rows: the cross product presets x quants x paths x routings x tokens.
struct RowSpec {
  std::vector<std::string> presets;   // preset names (core/presets.h)
  std::vector<std::string> quants;    // quant names, or "default" for the preset's own format
  std::vector<int64_t> tokens;        // token counts T
  std::vector<RoutingSkew> routings;  // uniform / skewed router logits
  std::vector<MoEPath> paths;         // kernel family requested from the layer
  int check_tokens = 64;              // tokens checked against the reference per row
  int group_size = 128;               // int4_w4a16 rows: quant.h's group size (32, 64 or 128)
};

struct BenchOptions {
  std::vector<RowSpec> specs;
  int repeats = 30;                     // timed replays per row (the median is reported)
  int warmup = 5;                       // untimed replays first
  int64_t fp8_tensor_full_check = 512;  // fp8_per_tensor: full-batch reference up to this T
  bool peer = true;                     // run the cuBLAS peer too
  // Call MoELayer::load_expert from all host threads at once. Relies on load_expert being safe
  // for distinct experts: the CUDA backend writes disjoint slots; MoELayer's own `loaded` flags
  // (a vector<bool>) are the one shared write, and the benchmark never reads them (every row is
  // checked against the reference, which reads the prepared copies, distinct per expert).
  bool parallel_load = true;
  int threads = 0;           // host threads (weights, reference); 0 = all
  int device = 0;            // CUDA device ordinal
  double max_seconds = 0;    // time budget; rows not started by then are "skipped"
  uint64_t seed = 20261130;  // weights, inputs (each row derives its own stream)
  // Called with all rows so far after each row completes (e.g. to rewrite the result file, so
  // that a run killed by a timeout still leaves its finished rows behind).
  std::function<void(const std::vector<BenchRow>&)> on_row;
};

// Runs every row of every spec, printing the table to stdout as
// rows complete, and fills info.device / info.l2_flush_bytes. Rows that fail or throw are
// reported with their status, never dropped. Throws servekit::Error only for a bad option (an
// unknown preset or quant name) or when no CUDA device is usable.
std::vector<BenchRow> run_moe_bench(const BenchOptions& opt, RunInfo& info);

}  // namespace servekit::bench
