// Model presets of BENCH.md, plus `tiny` for quick checks. Internal header (program, tests,
// benchmarks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "servekit/moe.h"

namespace servekit {

struct Preset {
  std::string name;
  int num_experts;
  int top_k;
  int num_shared;
  int64_t hidden;
  int64_t intermediate;
  RoutingMethod routing;
  int n_group;
  int topk_group;
  float routed_scaling_factor;
  bool renormalize;
  Activation activation;
  bool has_bias;              // expert biases (gpt-oss)
  QuantMethod default_quant;  // the checkpoint's format
};

const std::vector<Preset>& presets();
// Throws servekit::Error listing the valid names.
const Preset& find_preset(std::string_view name);
// A full MoEConfig for the preset (all experts local).
MoEConfig preset_config(const Preset& p, QuantConfig quant, ExecutionConfig exec);

}  // namespace servekit
