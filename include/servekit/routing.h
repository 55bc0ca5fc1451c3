// servekit/routing.h — top-k expert selection for MoE layers.
//
// Input: router logits [T, E] (fp32 on the host API). Output: ids [T, K] int32 (global expert
// ids) and weights [T, K] fp32, in selection order: by descending selection score, ties to the
// lower expert index. The methods (s = logits, b = correction bias [E]):
//   kSoftmaxTopK   p = softmax(s); top-k of p; renormalize ? p/sum(p_topk) : p
//   kTopKSoftmax   top-k of s; weights = softmax over the k selected logits
//   kDeepSeekV3    p = sigmoid(s); q = p + b; group score = sum of the top-2 q in each of
//                  n_group groups; keep the topk_group best groups (ties to the lower group);
//                  top-k of q among kept experts; weights = p (unbiased), renormalized if
//                  renormalize, times routed_scaling_factor
//   kLlama4        top-k of s (Llama-4 uses k = 1); weights = sigmoid(s)
//   kSigmoidTopK   p = sigmoid(s); top-k of p; renormalize ? p/sum : p
//   kMiniMax       p = sigmoid(s); top-k of p + b; weights = p / sum(p_topk)
//   kPrecomputed   the caller gives ids and weights (no routing is run)
// routed_scaling_factor multiplies the final weights of every method (default 1).
// NaN logits are treated as -inf for selection (a NaN never wins); documented, not an error.
#pragma once

#include <cstdint>
#include <string_view>

namespace servekit {

enum class RoutingMethod : uint8_t {
  kSoftmaxTopK,
  kTopKSoftmax,
  kDeepSeekV3,
  kLlama4,
  kSigmoidTopK,
  kMiniMax,
  kPrecomputed,
};

struct RoutingConfig {
  int num_experts = 0;   // E, 1..512 (the GPU kernels' limit; the CPU takes any E >= 1)
  int top_k = 1;         // K, 1..min(E, 32)
  RoutingMethod method = RoutingMethod::kSoftmaxTopK;
  int n_group = 1;       // kDeepSeekV3: groups, must divide E
  int topk_group = 1;    // kDeepSeekV3: groups kept, 1..n_group; topk_group * E/n_group >= K
  float routed_scaling_factor = 1.0f;
  bool renormalize = true;  // kSoftmaxTopK, kSigmoidTopK, kDeepSeekV3
};

constexpr int kMaxTopK = 32;
constexpr int kMaxExpertsGpu = 512;

std::string_view routing_name(RoutingMethod m);
RoutingMethod parse_routing(std::string_view name);  // throws servekit::Error
// Whether the method reads a correction bias [E].
bool routing_uses_bias(RoutingMethod m);
// Throws servekit::Error naming the field, its value and the valid range.
void validate_routing_config(const RoutingConfig& cfg);

// Routes T tokens on the host. logits: [T, E] row-major fp32; bias: [E] fp32 or nullptr
// (required when routing_uses_bias); ids/weights: [T, K]. Throws for kPrecomputed, an invalid
// config, or a missing bias.
void route_cpu(const RoutingConfig& cfg, const float* logits, const float* bias,
               int64_t num_tokens, int32_t* ids, float* weights);

}  // namespace servekit
