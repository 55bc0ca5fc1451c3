// One benchmark row and the two ways it is reported: the result file of BENCH.md (JSON) and the
// human table printed as rows complete. Header-only so the CPU unit test can include it.
#pragma once

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench_floor.h"
#include "bench_json.h"

namespace servekit::bench {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct BenchRow {
  std::string preset, quant, routing, path;  // path as requested: auto, static or dynamic
  int64_t tokens = 0;
  // "ok"; "fail" (wrong result: rel_l2 over tolerance or replays differ); "error" (an exception,
  // see `error`); "stopped" (a dynamic-path row cut short by SERVEKIT_DIAG_DYNAMIC_STOP: timed,
  // not checked; row_verdict); "skipped" (time budget); "unsupported" (the preset's shapes do not
  // fit the format, e.g. H = 2880 with 128-blocks).
  std::string status = "ok";
  std::string error;
  double us = kNaN, us_min = kNaN;  // median and fastest timed replay
  int repeats = 0;
  std::string timing;  // "graph" (CUDA graph replays) or "stream" (capture failed: direct calls)
  Floor floor;
  int touched_experts = 0;
  ExpertRows expert_rows;  // the routed rows' spread over the local experts (expert_row_stats)
  int group_size = 0;      // int4_w4a16: the group size; 0 for the other formats
  double flop = 0;         // executed_flop: routed + shared rows
  double rel_l2 = kNaN, tolerance = kNaN;
  std::string check;  // how rel_l2 was measured
  bool deterministic = true;
  std::string kernels;  // MoELayer::kernels: the path and, on the dynamic path, the GEMM tiles
  std::string peer = "none", peer_note;
  std::string peer_timing;  // as `timing`, for the peer
  double peer_us = kNaN, peer_rel_l2 = kNaN, peer_tolerance = kNaN;

  double ratio() const { return us / floor.floor_us; }
  double tflops() const { return flop / (us * 1e-6) / 1e12; }
  double speedup_vs_peer() const { return peer_us / us; }
};

struct RunInfo {
  std::string commit, date, device, command;
  Ceilings ceilings;
  size_t l2_flush_bytes = 0;
  // A graph of one node (a 4-byte memset) timed exactly as the rows are (L2 flush, events,
  // replay): what a row pays for the graph launch and the events whatever its kernels do.
  double one_node_graph_us = kNaN;
};

inline void write_row(JsonWriter& w, const BenchRow& r) {
  w.begin_object();
  w.key("op").value("moe");
  w.key("preset").value(r.preset);
  w.key("quant").value(r.quant);
  w.key("tokens").value(r.tokens);
  w.key("routing").value(r.routing);
  w.key("path").value(r.path);
  w.key("us").value(r.us);
  w.key("floor_us").value(r.floor.floor_us);
  w.key("peer").value(r.peer);
  w.key("peer_us").value(r.peer_us);
  w.key("rel_l2").value(r.rel_l2);
  w.key("ratio").value(r.ratio());
  w.key("tflops").value(r.tflops());
  w.key("speedup_vs_peer").value(r.speedup_vs_peer());
  w.key("peer_ratio").value(r.peer_us / r.floor.floor_us);
  w.key("peer_rel_l2").value(r.peer_rel_l2);
  w.key("peer_tolerance").value(r.peer_tolerance);
  w.key("status").value(r.status);
  if (!r.error.empty()) w.key("error").value(r.error);
  if (!r.peer_note.empty()) w.key("peer_note").value(r.peer_note);
  w.key("us_min").value(r.us_min);
  w.key("repeats").value(r.repeats);
  w.key("timing").value(r.timing);
  if (!r.peer_timing.empty()) w.key("peer_timing").value(r.peer_timing);
  w.key("memory_floor_us").value(r.floor.memory_us);
  w.key("compute_floor_us").value(r.floor.compute_us);
  w.key("weight_bytes").value(r.floor.weight_bytes);
  w.key("activation_bytes").value(r.floor.activation_bytes);
  w.key("floor_flop").value(r.floor.flop);
  w.key("flop").value(r.flop);
  w.key("touched_experts").value(r.touched_experts);
  w.key("expert_rows_max").value(r.expert_rows.max);
  w.key("expert_rows_sd").value(r.expert_rows.sd);
  if (r.group_size > 0) w.key("group_size").value(r.group_size);  // int4_w4a16 rows only
  w.key("tolerance").value(r.tolerance);
  w.key("check").value(r.check);
  w.key("deterministic").value(r.deterministic);
  if (!r.kernels.empty()) w.key("kernels").value(r.kernels);
  w.end_object();
}

// The result file of BENCH.md: commit, date, device, ceilings, rows (one per line).
inline std::string results_json(const RunInfo& info, const std::vector<BenchRow>& rows) {
  JsonWriter w;
  w.begin_object();
  w.newline().key("commit").value(info.commit);
  w.key("date").value(info.date);
  w.key("device").value(info.device);
  w.newline().key("ceilings").begin_object();
  w.key("read_TBps").value(info.ceilings.read_TBps);
  w.key("copy_TBps").value(info.ceilings.copy_TBps);
  w.key("bf16_TFLOPs").value(info.ceilings.bf16_TFLOPs);
  w.key("fp8_TFLOPs").value(info.ceilings.fp8_TFLOPs);
  w.end_object();
  w.newline().key("command").value(info.command);
  w.key("l2_flush_bytes").value(static_cast<int64_t>(info.l2_flush_bytes));
  w.key("one_node_graph_us").value(info.one_node_graph_us);
  w.newline().key("rows").begin_array();
  for (const BenchRow& r : rows) {
    w.newline();
    write_row(w, r);
  }
  w.newline().end_array();
  w.newline().end_object();
  return w.str() + "\n";
}

inline std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

// The verdict of one checked row: `status` "ok", "fail" (rel_l2 over the gate, or a timed replay
// whose output differs from the checked one) or "stopped": the row ran the dynamic path with
// SERVEKIT_DIAG_DYNAMIC_STOP = dynamic_stop > 0, so the forward returned before writing its output
// on purpose (timing attribution) and the check cannot say anything about the kernels. `error`
// says why for anything but "ok". rel_l2 NaN (an output never written) is a failure.
struct RowVerdict {
  std::string status = "ok";
  std::string error;
};
inline RowVerdict row_verdict(double rel_l2, double gate, bool deterministic, int dynamic_stop,
                              bool ran_dynamic) {
  RowVerdict v;
  if (dynamic_stop > 0 && ran_dynamic) {
    v.status = "stopped";
    v.error = "SERVEKIT_DIAG_DYNAMIC_STOP=" + std::to_string(dynamic_stop) +
              ": the forward stops after pass " + std::to_string(dynamic_stop) +
              ", so its output is incomplete and not checked (timing only)";
  } else if (!(rel_l2 <= gate)) {
    v.status = "fail";
    v.error = "rel_l2 " + fmt("%.3e", rel_l2) + " exceeds " + fmt("%.3e", gate);
  } else if (!deterministic) {
    v.status = "fail";
    v.error = "the last timed replay differs from the checked one (non-deterministic)";
  }
  return v;
}

inline std::string table_header() {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%-16s %-15s %6s %-7s %-7s %10s %10s %6s %7s %10s %7s %9s %s",
                "preset", "quant", "tokens", "routing", "path", "us", "floor_us", "ratio",
                "TFLOP/s", "peer_us", "vs_peer", "rel_l2", "status");
  return buf;
}

inline std::string table_line(const BenchRow& r) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-16s %-15s %6lld %-7s %-7s %10s %10s %6s %7s %10s %7s %9s %s",
                r.preset.c_str(), r.quant.c_str(), static_cast<long long>(r.tokens),
                r.routing.c_str(), r.path.c_str(), fmt("%.1f", r.us).c_str(),
                fmt("%.1f", r.floor.floor_us).c_str(), fmt("%.2f", r.ratio()).c_str(),
                fmt("%.0f", r.tflops()).c_str(), fmt("%.1f", r.peer_us).c_str(),
                fmt("%.2f", r.speedup_vs_peer()).c_str(), fmt("%.2e", r.rel_l2).c_str(),
                r.status.c_str());
  return buf;
}

}  // namespace servekit::bench
