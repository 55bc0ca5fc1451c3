// Helpers of the MoE layer tests: small random layers, inputs, poisoned forwards and the fp64
// reference check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/random_data.h"
#include "cpu/moe_reference.h"
#include "servekit/formats.h"
#include "servekit/moe.h"

namespace servekit::test {

// A small layer; defaults give E 16, K 4, one shared expert, H 256, I 128.
struct LayerCase {
  QuantConfig quant{};
  Activation activation = Activation::kSwiGLU;
  RoutingMethod routing = RoutingMethod::kSoftmaxTopK;
  int num_experts = 16;
  int top_k = 4;
  int num_shared = 1;
  int64_t hidden = 256;
  int64_t intermediate = 128;
  int local_offset = 0;
  int local_count = -1;
  bool bias = false;
  int64_t max_tokens = 64;
  int threads = 2;
};

inline MoEConfig make_config(const LayerCase& c) {
  MoEConfig cfg;
  cfg.routing.num_experts = c.num_experts;
  cfg.routing.top_k = c.top_k;
  cfg.routing.method = c.routing;
  if (c.routing == RoutingMethod::kDeepSeekV3) {
    cfg.routing.n_group = 4;
    cfg.routing.topk_group = 2;
    cfg.routing.routed_scaling_factor = 2.5f;
  }
  cfg.quant = c.quant;
  cfg.experts.hidden_size = c.hidden;
  cfg.experts.intermediate_size = c.intermediate;
  cfg.experts.local_expert_offset = c.local_offset;
  cfg.experts.local_num_experts = c.local_count;
  cfg.experts.num_shared_experts = c.num_shared;
  cfg.activation = c.activation;
  cfg.exec.max_num_tokens = c.max_tokens;
  cfg.exec.num_threads = c.threads;
  return cfg;
}

// Loads every local and shared expert with make_random_expert(seed); the weights of a global
// expert do not depend on which layer (EP range) loads them.
inline void load_random_experts(MoELayer& layer, uint64_t seed, bool bias) {
  const MoEConfig& cfg = layer.config();
  for (int l = 0; l < cfg.experts.local_num_experts; ++l) {
    HostExpert e = make_random_expert(cfg, seed, cfg.experts.local_expert_offset + l, bias);
    layer.load_expert(l, e.view(cfg));
  }
  for (int s = 0; s < cfg.experts.num_shared_experts; ++s) {
    HostExpert e = make_random_expert(cfg, seed, cfg.routing.num_experts + s, bias);
    layer.load_shared_expert(s, e.view(cfg));
  }
}

// Host inputs of one forward, with views for the layer and the reference.
struct Inputs {
  int64_t tokens = 0;
  std::vector<uint16_t> hidden;  // [T, H] bf16
  std::vector<float> hidden_f32;
  std::vector<float> logits;  // [T, E]
  std::vector<float> bias;    // [E] when the method uses one
  std::vector<int32_t> ids;   // [T, K] precomputed only
  std::vector<float> weights;

  MoEInputs view(const MoEConfig& cfg) {
    const int64_t H = cfg.experts.hidden_size;
    const int E = cfg.routing.num_experts, K = cfg.routing.top_k;
    MoEInputs in;
    in.hidden = TensorView::contiguous(hidden.data(), DType::kBF16, {tokens, H});
    if (!logits.empty())
      in.router_logits = TensorView::contiguous(logits.data(), DType::kF32, {tokens, E});
    if (!bias.empty()) in.correction_bias = TensorView::contiguous(bias.data(), DType::kF32, {E});
    if (!ids.empty()) {
      in.topk_ids = TensorView::contiguous(ids.data(), DType::kInt32, {tokens, K});
      in.topk_weights = TensorView::contiguous(weights.data(), DType::kF32, {tokens, K});
    }
    return in;
  }
  ReferenceInputs reference() const {
    ReferenceInputs r;
    r.hidden = hidden_f32.data();
    r.tokens = tokens;
    r.logits = logits.empty() ? nullptr : logits.data();
    r.bias = bias.empty() ? nullptr : bias.data();
    r.ids = ids.empty() ? nullptr : ids.data();
    r.weights = weights.empty() ? nullptr : weights.data();
    return r;
  }
};

// Precomputed routing: K distinct experts per token drawn from the seed, every fifth (t + k)
// slot set to -1, weights in (0.1, 1.1).
inline void make_precomputed(const MoEConfig& cfg, uint64_t seed, Inputs& in) {
  const int E = cfg.routing.num_experts, K = cfg.routing.top_k;
  const std::vector<float> score = make_router_logits(seed, in.tokens, E, RoutingSkew::kUniform);
  std::vector<float> w(static_cast<size_t>(in.tokens * K));
  fill_uniform_f32(seed, 77, w.data(), w.size(), 0.5f);
  in.ids.resize(w.size());
  in.weights.resize(w.size());
  for (int64_t t = 0; t < in.tokens; ++t) {
    std::vector<int> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return score[t * E + a] > score[t * E + b]; });
    for (int k = 0; k < K; ++k) {
      in.ids[t * K + k] = (t + k) % 5 == 4 ? -1 : order[k];
      in.weights[t * K + k] = 0.6f + w[t * K + k];
    }
  }
}

inline Inputs make_inputs(const MoEConfig& cfg, int64_t tokens, uint64_t seed,
                          RoutingSkew skew = RoutingSkew::kUniform) {
  Inputs in;
  in.tokens = tokens;
  in.hidden = make_hidden(seed, tokens, cfg.experts.hidden_size);
  in.hidden_f32.resize(in.hidden.size());
  for (size_t i = 0; i < in.hidden.size(); ++i) in.hidden_f32[i] = bf16_to_float(in.hidden[i]);
  if (cfg.routing.method == RoutingMethod::kPrecomputed) {
    make_precomputed(cfg, seed + 1, in);
    return in;
  }
  in.logits = make_router_logits(seed + 1, tokens, cfg.routing.num_experts, skew);
  if (routing_uses_bias(cfg.routing.method))
    in.bias = make_correction_bias(seed + 2, cfg.routing.num_experts);
  return in;
}

constexpr uint16_t kPoisonBF16 = 0x7FC1;  // a quiet NaN no computation produces

// Runs the layer on NaN-filled output and checks that every element was written with a
// finite value; returns the output as fp32.
inline std::vector<float> run_poisoned(MoELayer& layer, Inputs& in) {
  const MoEConfig& cfg = layer.config();
  const int64_t H = cfg.experts.hidden_size;
  std::vector<uint16_t> out(static_cast<size_t>(in.tokens * H), kPoisonBF16);
  layer.forward(in.view(cfg), TensorView::contiguous(out.data(), DType::kBF16, {in.tokens, H}));
  std::vector<float> f(out.size());
  int64_t bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    f[i] = bf16_to_float(out[i]);
    bad += out[i] == kPoisonBF16 || !std::isfinite(f[i]);
  }
  EXPECT_EQ(bad, 0) << "elements of out not written or not finite";
  return f;
}

// Runs the layer and returns its relative L2 error against moe_reference.
inline double error_vs_reference(MoELayer& layer, Inputs& in) {
  const std::vector<float> out = run_poisoned(layer, in);
  const std::vector<double> ref = moe_reference(layer, in.reference());
  return relative_l2(out.data(), ref.data(), static_cast<int64_t>(out.size()));
}

}  // namespace servekit::test
