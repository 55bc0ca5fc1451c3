// Physical floors of one MoE forward (BENCH.md): the bytes it must move and the FLOP it must do,
// over the H200 ceilings. Pure arithmetic, header-only so the CPU unit test can include it.
//
//   memory floor  = (bytes of every expert that received >= 1 row + all shared experts
//                    + hidden in [T, H] bf16 + router logits [T, E] f32 (+ correction bias [E] f32)
//                    + out [T, H] bf16) / read ceiling
//   compute floor = 2 * T * top_k * (3 for gated, 2 for relu2) * H * I / tensor-core rate
//   floor         = max(memory floor, compute floor)
// The compute floor counts routed experts only, exactly as BENCH.md defines it; `executed_flop`
// adds the shared experts and is what TFLOP/s columns divide by.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "servekit/moe.h"

namespace servekit::bench {

// H200 ceilings measured on the device machine (BENCH.md, 2026-11-30).
struct Ceilings {
  double read_TBps = 4.58;
  double copy_TBps = 4.30;
  double bf16_TFLOPs = 783.0;
  double fp8_TFLOPs = 1432.0;
};

// Whether the ceilings above describe the named device (cudaDeviceProp::name). They were measured
// on an H200; on any other card the floors, and every time/floor ratio, are the H200's, so the
// bench says so before its rows.
inline bool ceilings_describe(std::string_view device_name) {
  return device_name.find("H200") != std::string_view::npos;
}

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Bytes of one [rows, cols] weight matrix in the plain layout of quant.h: codes + block scales,
// plus the fp32 tensor scale of the formats that have one (fp8_per_tensor, nvfp4).
inline int64_t weight_matrix_bytes(const QuantConfig& q, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  switch (q.method) {
    case QuantMethod::kBF16:
      return 2 * n;
    case QuantMethod::kFP8PerTensor:
      return n + 4;
    case QuantMethod::kFP8Block128:
      return n + ceil_div(rows, 128) * (cols / 128) * 4;
    case QuantMethod::kMXFP4W4A16:
    case QuantMethod::kMXFP4W4A8:
      return n / 2 + rows * (cols / 32);
    case QuantMethod::kNVFP4W4A16:
      return n / 2 + rows * (cols / 16) + 4;
    case QuantMethod::kInt4W4A16:
      return n / 2 + rows * (cols / q.group_size) * 2;
  }
  return 0;
}

// Bytes of one expert: W13 [R, H] + W2 [H, I] in the format, plus fp32 biases [R] and [H] when
// the preset has them (the prepared layout keeps biases in fp32).
inline int64_t expert_bytes(const MoEConfig& cfg, bool with_bias) {
  const int64_t H = cfg.experts.hidden_size, I = cfg.experts.intermediate_size;
  const int64_t R = w13_rows(cfg);
  int64_t b = weight_matrix_bytes(cfg.quant, R, H) + weight_matrix_bytes(cfg.quant, H, I);
  if (with_bias) b += 4 * (R + H);
  return b;
}

// GEMM FLOP per routed (token, expert) row: W13 (R x H) and W2 (H x I), 2 FLOP per MAC.
inline double flop_per_row(const MoEConfig& cfg) {
  const double H = static_cast<double>(cfg.experts.hidden_size);
  const double I = static_cast<double>(cfg.experts.intermediate_size);
  return 2.0 * (activation_is_gated(cfg.activation) ? 3.0 : 2.0) * H * I;
}

// BENCH.md's compute work: 2 * T * top_k * 3 * H * I (2 * T * top_k * 2 * H * I for relu2).
inline double floor_flop(const MoEConfig& cfg, int64_t tokens) {
  return static_cast<double>(tokens) * cfg.routing.top_k * flop_per_row(cfg);
}

// The GEMM work the layer actually does: routed rows plus one row per token per shared expert.
inline double executed_flop(const MoEConfig& cfg, int64_t tokens) {
  return static_cast<double>(tokens) * (cfg.routing.top_k + cfg.experts.num_shared_experts) *
         flop_per_row(cfg);
}

// Tensor-core rate of the format's GEMM math: fp8 for the formats whose activations are fp8,
// bf16 otherwise (Hopper has no fp4 tensor cores: 4-bit w4a16 weights run bf16 math).
inline double tensor_core_TFLOPs(QuantMethod m, const Ceilings& c) {
  const bool fp8_math = m == QuantMethod::kFP8PerTensor || m == QuantMethod::kFP8Block128 ||
                        m == QuantMethod::kMXFP4W4A8;
  return fp8_math ? c.fp8_TFLOPs : c.bf16_TFLOPs;
}

// Rows per local routed expert in ids [T, K] (global ids; others and -1 are not local).
inline std::vector<int64_t> local_expert_rows(const int32_t* ids, int64_t tokens, int top_k,
                                              int expert_offset, int local_experts) {
  std::vector<int64_t> rows(static_cast<size_t>(std::max(local_experts, 0)), 0);
  for (int64_t i = 0; i < tokens * top_k; ++i) {
    const int l = ids[i] - expert_offset;
    if (ids[i] >= 0 && l >= 0 && l < local_experts) ++rows[static_cast<size_t>(l)];
  }
  return rows;
}

// Distinct local routed experts in ids [T, K] (global ids; others and -1 are not local).
inline int count_touched_experts(const int32_t* ids, int64_t tokens, int top_k, int expert_offset,
                                 int local_experts) {
  const std::vector<int64_t> rows =
      local_expert_rows(ids, tokens, top_k, expert_offset, local_experts);
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](int64_t r) { return r > 0; }));
}

// How the routed rows spread over the local experts (untouched ones count as 0 rows): the
// largest expert's rows and the standard deviation over experts. The dynamic path's tile pick
// (src/cuda/gemm_tile_pick.h) models a group's rows as Poisson around tokens x top-k / E, so an
// sd far above sqrt(mean) says its padding estimate is low for the row: deepseek-v3's uniform
// rows (random logits, a U(-0.1, 0.1) correction bias, group-limited selection) have sd ~230 at
// 256 rows per expert, against 16 for qwen3-235b's and gpt-oss-120b's.
struct ExpertRows {
  int max = 0;
  double sd = 0;
};
inline ExpertRows expert_row_stats(const int32_t* ids, int64_t tokens, int top_k, int expert_offset,
                                   int local_experts) {
  const std::vector<int64_t> rows =
      local_expert_rows(ids, tokens, top_k, expert_offset, local_experts);
  ExpertRows r;
  if (rows.empty()) return r;
  double sum = 0, sq = 0;
  for (int64_t x : rows) {
    r.max = std::max(r.max, static_cast<int>(x));
    sum += static_cast<double>(x);
  }
  const double mean = sum / static_cast<double>(rows.size());
  for (int64_t x : rows) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  r.sd = std::sqrt(sq / static_cast<double>(rows.size()));
  return r;
}

struct Floor {
  double weight_bytes = 0;      // touched routed experts + shared experts
  double activation_bytes = 0;  // hidden + logits (+ bias) in, out
  double flop = 0;              // floor_flop
  double memory_us = 0, compute_us = 0;
  double floor_us = 0;  // max(memory_us, compute_us)
};

inline Floor moe_floor(const MoEConfig& cfg, int64_t tokens, int touched_experts, bool with_bias,
                       const Ceilings& c) {
  Floor f;
  const double T = static_cast<double>(tokens);
  const double H = static_cast<double>(cfg.experts.hidden_size);
  const double E = static_cast<double>(cfg.routing.num_experts);
  f.weight_bytes = static_cast<double>(touched_experts + cfg.experts.num_shared_experts) *
                   static_cast<double>(expert_bytes(cfg, with_bias));
  f.activation_bytes = T * H * 2 + T * E * 4 + T * H * 2;
  if (routing_uses_bias(cfg.routing.method)) f.activation_bytes += E * 4;
  f.flop = floor_flop(cfg, tokens);
  f.memory_us = (f.weight_bytes + f.activation_bytes) / (c.read_TBps * 1e12) * 1e6;
  f.compute_us = f.flop / (tensor_core_TFLOPs(cfg.quant.method, c) * 1e12) * 1e6;
  f.floor_us = std::max(f.memory_us, f.compute_us);
  return f;
}

}  // namespace servekit::bench
