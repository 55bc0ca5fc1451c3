// Which MoE kernel family runs a forward: the static (small-batch, bandwidth-bound) path or the
// dynamic (grouped GEMM) path, chosen by routed rows = tokens x top_k against a cutover measured
// per (layer shape, format). Tuning as data: a small table (moe_path.cpp, each entry with the
// measurement that chose it) and pure functions, testable on the CPU. Internal header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "servekit/moe.h"

namespace servekit::tune {

// The facts of a layer and a call that the choice depends on.
struct MoEPathDesc {
  int num_experts = 0;       // E (routed, global)
  int top_k = 0;             // K
  int64_t hidden = 0;        // H
  int64_t intermediate = 0;  // I
  QuantConfig quant;
  int64_t tokens = 0;  // T of this call
};

// One measured (or placeholder) cutover: the static path runs while tokens * top_k <= rows.
struct MoECutover {
  const char* shape;  // preset name of the shape, for reports
  int num_experts, top_k;
  int64_t hidden, intermediate;
  QuantMethod quant;
  int64_t rows;
  bool measured;            // false: a placeholder, not yet measured on the H200
  const char* measurement;  // how the number was found (bench command and result file)
};

// Rows used for a shape that has no table entry (a placeholder, not measured).
constexpr int64_t kDefaultCutoverRows = 256;
// Overrides every cutover when set: a non-negative integer number of routed rows.
constexpr const char* kCutoverEnv = "SERVEKIT_MOE_CUTOVER_ROWS";

const std::vector<MoECutover>& moe_cutover_table();

// Whether the static kernels support the layer: a format they have (not mxfp4_w4a8) and H, I
// multiples of 64. When not, and why is given, it receives the reason.
bool static_path_supports(const QuantConfig& q, int64_t hidden, int64_t intermediate,
                          std::string* why = nullptr);

// The cutover in routed rows for desc's shape: SERVEKIT_MOE_CUTOVER_ROWS if set, else the table
// entry of (E, K, H, I, quant method), else kDefaultCutoverRows. Throws servekit::Error for an
// environment value that is not a non-negative integer.
int64_t moe_cutover_rows(const MoEPathDesc& d);

// kStatic when the static path supports the layer and tokens * top_k <= the cutover, else
// kDynamic. Never returns kAuto. Throws servekit::Error for tokens < 1 or top_k < 1.
MoEPath choose_moe_path(const MoEPathDesc& d);

}  // namespace servekit::tune
