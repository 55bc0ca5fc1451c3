// The model presets of BENCH.md, plus `tiny`. Numbers are the models' published configs.
#include "core/presets.h"

namespace servekit {

const std::vector<Preset>& presets() {
  using A = Activation;
  using Q = QuantMethod;
  using R = RoutingMethod;
  static const std::vector<Preset> kPresets = {
      // {name, E, K, S, H, I, routing, n_group, topk_group, routed_scaling_factor,
      //  renormalize, activation, has_bias, default_quant}
      {"deepseek-v3", 256, 8, 1, 7168, 2048, R::kDeepSeekV3, 8, 4, 2.5f, true, A::kSwiGLU, false,
       Q::kFP8Block128},
      {"kimi-k2", 384, 8, 1, 7168, 2048, R::kDeepSeekV3, 1, 1, 2.827f, true, A::kSwiGLU, false,
       Q::kFP8Block128},
      {"qwen3-235b-a22b", 128, 8, 0, 4096, 1536, R::kSoftmaxTopK, 1, 1, 1.0f, true, A::kSwiGLU,
       false, Q::kBF16},
      {"qwen3-30b-a3b", 128, 8, 0, 2048, 768, R::kSoftmaxTopK, 1, 1, 1.0f, true, A::kSwiGLU, false,
       Q::kBF16},
      {"mixtral-8x7b", 8, 2, 0, 4096, 14336, R::kSoftmaxTopK, 1, 1, 1.0f, true, A::kSwiGLU, false,
       Q::kBF16},
      // top-k -> softmax ignores `renormalize` (the softmax over the k picks already sums to 1).
      {"gpt-oss-120b", 128, 4, 0, 2880, 2880, R::kTopKSoftmax, 1, 1, 1.0f, false, A::kSwiGLUOAI,
       true, Q::kMXFP4W4A16},
      // A DeepSeek-shaped layer small enough for unit tests and quick runs.
      {"tiny", 16, 4, 1, 256, 128, R::kDeepSeekV3, 4, 2, 2.5f, true, A::kSwiGLU, false, Q::kBF16},
  };
  return kPresets;
}

const Preset& find_preset(std::string_view name) {
  std::string valid;
  for (const Preset& p : presets()) {
    if (p.name == name) return p;
    valid += (valid.empty() ? "" : ", ") + p.name;
  }
  SERVEKIT_FAIL("preset: unknown name '", name, "'; valid presets: ", valid);
}

MoEConfig preset_config(const Preset& p, QuantConfig quant, ExecutionConfig exec) {
  MoEConfig cfg;
  cfg.routing.num_experts = p.num_experts;
  cfg.routing.top_k = p.top_k;
  cfg.routing.method = p.routing;
  cfg.routing.n_group = p.n_group;
  cfg.routing.topk_group = p.topk_group;
  cfg.routing.routed_scaling_factor = p.routed_scaling_factor;
  cfg.routing.renormalize = p.renormalize;
  cfg.quant = quant;
  cfg.experts.hidden_size = p.hidden;
  cfg.experts.intermediate_size = p.intermediate;
  cfg.experts.local_expert_offset = 0;
  cfg.experts.local_num_experts = p.num_experts;
  cfg.experts.num_shared_experts = p.num_shared;
  cfg.activation = p.activation;
  cfg.exec = exec;
  return cfg;
}

}  // namespace servekit
