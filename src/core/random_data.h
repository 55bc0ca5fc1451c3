// Deterministic random weights and inputs for the program, tests and benchmarks. Every value is
// a pure function of (seed, stream, index), so one expert's weights can be generated without
// generating the others (a deepseek-v3 layer on 8 tokens touches ~60 of 256 experts and must
// fit in 24 GB). Internal header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "servekit/moe.h"

namespace servekit {

// n bf16 values (raw bits) uniform in [-scale, scale].
void fill_uniform_bf16(uint64_t seed, uint64_t stream, uint16_t* out, size_t n, float scale);
void fill_uniform_f32(uint64_t seed, uint64_t stream, float* out, size_t n, float scale);
// n standard-normal-ish floats (sum of uniforms), for logits and hidden states.
void fill_normal_f32(uint64_t seed, uint64_t stream, float* out, size_t n, float stddev);

// Canonical host weights of one expert, with views for MoELayer::load_expert.
struct HostExpert {
  std::vector<uint16_t> w13;             // [R, H] bf16 bits
  std::vector<uint16_t> w2;              // [H, I]
  std::vector<float> w13_bias, w2_bias;  // empty unless with_bias
  ExpertWeightsView view(const MoEConfig& cfg);
};
// Weights of expert `index` (routed global id, or num_experts + s for shared expert s), scaled
// so that activations stay O(1): U(-a, a) with a = sqrt(3 / fan_in).
HostExpert make_random_expert(const MoEConfig& cfg, uint64_t seed, int index, bool with_bias);

enum class RoutingSkew : uint8_t { kUniform, kSkewed, kOneExpert, kBalanced, kBiased };
// Router logits [T, E]: kUniform draws N(0, 1); kSkewed adds a Zipf-like bonus that sends most
// tokens to a few experts (expert j gets +6/(1+j) after a seeded shuffle); kOneExpert shifts
// every logit by -4 and one seeded expert by +30 more, so every token routes to it (top-1 under
// every method: the others' sigmoid stays < 0.12, below the hot expert's 1 even with a +-0.1
// correction bias) while the other slots stay random: the worst case of the static path's
// virtual-expert split. kBalanced (needs top_k in [1, num_experts]) gives token t the experts
// (t * top_k + j) mod E, j < top_k, at +4 and every other expert at -4 (each plus N(0, 0.1)):
// every expert gets floor or ceil(tokens * top_k / E) rows, the case without tile padding. The
// margin (sigmoid 0.98 against 0.02) outlasts a +-0.1 correction bias, and a token's experts are
// consecutive, so with top_k <= the group size they fall in at most two groups of a
// group-limited router, and those rank first (it must keep >= 2 groups, as the presets do). Without
// top_k (0) only the other kinds are accepted. kBiased draws kUniform's logits; it differs in the
// correction bias that goes with it (correction_bias_scale).
std::vector<float> make_router_logits(uint64_t seed, int64_t tokens, int num_experts,
                                      RoutingSkew skew, int top_k = 0);
// "uniform", "skewed", "one", "balanced" or "biased", and back; parse_routing_skew throws Error
// for any other name.
const char* routing_skew_name(RoutingSkew skew);
RoutingSkew parse_routing_skew(const std::string& name);
// Correction bias [E] (DeepSeek-V3 / MiniMax): U(-scale, scale), the same draws scaled.
std::vector<float> make_correction_bias(uint64_t seed, int num_experts, float scale = 0.1f);
// The correction bias's scale that goes with a routing kind's logits in the benchmark and the main
// program. A trained checkpoint's bias balances its experts' load; on N(0, 1) logits, which favour
// no expert, the balancing bias is ~0. So kUniform takes 0.001: the bias is read and added, and
// the rows per expert stay Poisson-like (deepseek-v3 at 8192 tokens: sd 15.9 around 256, against
// 15.7 with no bias). kBiased takes 0.1, what every kind used before session 44: on a sigmoid
// router's top-k tail a bias of 0.1 moves an expert by ~1 logit, so it is a fixed skew (deepseek-v3
// at 8192 tokens: 0 to 929 rows, sd 252; kimi-k2 sd 205). The other kinds keep 0.1 (their logits
// outweigh it by design).
float correction_bias_scale(RoutingSkew skew);
// Hidden states [T, H] bf16 bits, N(0, 1).
std::vector<uint16_t> make_hidden(uint64_t seed, int64_t tokens, int64_t hidden);

}  // namespace servekit
