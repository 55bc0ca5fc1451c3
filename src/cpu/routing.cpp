// Host routing (routing.h): the oracle that the CUDA routing kernels match bit for bit. Every
// transcendental comes from core/exact_math.h and every float operation below is one
// exact:: call (one IEEE rounding), so the order written here is the order of record.
//
// Conventions shared by all methods (the CUDA kernels must follow them):
//   - s'_i = NaN ? -inf : s_i. NaN logits act as -inf everywhere (selection and weights), so
//     a NaN never wins and its weight, if it is picked anyway (fewer non-NaN experts than K),
//     is that of -inf: 0 (or exp(-inf - m) = 0 in softmax).
//   - Selection keys are compared with IEEE < (so -0 == +0); a NaN key (e.g. q = p + b with a
//     NaN bias, or a group score +inf + -inf) is read as -inf.
//   - Top-k: by descending key, ties to the lower index; candidates are offered in ascending
//     index order and a candidate displaces a kept one only when strictly greater.
//   - Sums run in a fixed order, starting from 0.0f: acc = acc + x_0, acc = acc + x_1, ...
//     "index order" means ascending expert index; "selection order" means slot 0..K-1.
//   - renormalize divides by R = sum of the selected weights in selection order. R == 0 (every
//     selected sigmoid underflowed: logits < -103.97) gives 1/K per slot, the limit for
//     equal logits, so weights stay finite.
//   - Last step of every method: w_j = w_j * routed_scaling_factor (also when it is 1).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/exact_math.h"
#include "servekit/error.h"
#include "servekit/routing.h"

namespace servekit {
namespace {

namespace ex = exact;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float key_of(float v) {
  return ex::is_nan(v) ? kNegInf : v;
}

// The k best (key, index) pairs offered so far, in selection order. Offers must come in
// ascending index order, which makes "strictly greater displaces" mean "ties to the lower
// index".
class TopK {
 public:
  void reset(int k) {
    k_ = k;
    n_ = 0;
    key_.resize(static_cast<size_t>(k));
    idx_.resize(static_cast<size_t>(k));
  }
  void offer(float key, int index) {
    if (n_ == k_ && !(key > key_[k_ - 1])) return;
    int pos = n_ < k_ ? n_++ : k_ - 1;
    while (pos > 0 && key > key_[pos - 1]) {
      key_[pos] = key_[pos - 1];
      idx_[pos] = idx_[pos - 1];
      --pos;
    }
    key_[pos] = key;
    idx_[pos] = index;
  }
  int size() const { return n_; }
  int index(int j) const { return idx_[j]; }
  float key(int j) const { return key_[j]; }

 private:
  int k_ = 0, n_ = 0;
  std::vector<float> key_;
  std::vector<int> idx_;
};

// Per-call scratch, reused across tokens.
struct Scratch {
  TopK top;
  TopK group_top;
  std::vector<float> s;  // s'[E]
  std::vector<float> e;  // softmax numerators or sigmoids [E]
  std::vector<float> q;  // biased scores [E]
  std::vector<char> group_kept;
};

// w[j] = w[j] / R with R = sum of w in selection order (R == 0: 1/K each).
void renormalize(float* w, int k) {
  float r = 0.0f;
  for (int j = 0; j < k; ++j) r = ex::add(r, w[j]);
  if (r > 0.0f) {
    for (int j = 0; j < k; ++j) w[j] = ex::div(w[j], r);
  } else {
    const float uniform = ex::div(1.0f, static_cast<float>(k));
    for (int j = 0; j < k; ++j) w[j] = uniform;
  }
}

// e^(x - m), with x == m giving exactly 1 so that m = +-inf (all -inf, or some +inf logits)
// stays finite instead of inf - inf = NaN.
float softmax_numerator(float x, float m) {
  return x == m ? 1.0f : ex::exp(ex::sub(x, m));
}

void select_on(const float* key, int n, int k, TopK& top) {
  top.reset(k);
  for (int i = 0; i < n; ++i) top.offer(key[i], i);
}

// kSoftmaxTopK: m = max s'; e_i = e^(s'_i - m); S = sum e_i in index order; top-k on s';
// p_j = e_j / S; renormalize ? p_j / R : p_j.
void route_softmax_topk(const RoutingConfig& cfg, Scratch& sc, int32_t* ids, float* w) {
  const int n = cfg.num_experts, k = cfg.top_k;
  const float* s = sc.s.data();
  float m = kNegInf;
  for (int i = 0; i < n; ++i) m = s[i] > m ? s[i] : m;
  float total = 0.0f;
  for (int i = 0; i < n; ++i) {
    sc.e[i] = softmax_numerator(s[i], m);
    total = ex::add(total, sc.e[i]);
  }
  select_on(s, n, k, sc.top);
  for (int j = 0; j < k; ++j) {
    ids[j] = sc.top.index(j);
    w[j] = ex::div(sc.e[ids[j]], total);
  }
  if (cfg.renormalize) renormalize(w, k);
}

// kTopKSoftmax: top-k on s'; m = s'_(slot 0); e_j = e^(s'_j - m); w_j = e_j / S with S the
// sum of e_j in selection order.
void route_topk_softmax(const RoutingConfig& cfg, Scratch& sc, int32_t* ids, float* w) {
  const int k = cfg.top_k;
  const float* s = sc.s.data();
  select_on(s, cfg.num_experts, k, sc.top);
  const float m = s[sc.top.index(0)];
  float total = 0.0f;
  for (int j = 0; j < k; ++j) {
    ids[j] = sc.top.index(j);
    w[j] = softmax_numerator(s[ids[j]], m);
    total = ex::add(total, w[j]);
  }
  for (int j = 0; j < k; ++j) w[j] = ex::div(w[j], total);
}

// kLlama4 and kSigmoidTopK: top-k on s' (sigmoid is monotonic); w_j = sigmoid(s'_j);
// kSigmoidTopK renormalizes when asked, kLlama4 never does.
void route_sigmoid_topk(const RoutingConfig& cfg, bool renorm, Scratch& sc, int32_t* ids,
                        float* w) {
  const int k = cfg.top_k;
  select_on(sc.s.data(), cfg.num_experts, k, sc.top);
  for (int j = 0; j < k; ++j) {
    ids[j] = sc.top.index(j);
    w[j] = ex::sigmoid(sc.s[ids[j]]);
  }
  if (renorm) renormalize(w, k);
}

// p_i = sigmoid(s'_i), q_i = p_i + b_i, key'(q_i) for i in [0, E).
void biased_sigmoids(const float* bias, int n, Scratch& sc) {
  for (int i = 0; i < n; ++i) {
    sc.e[i] = ex::sigmoid(sc.s[i]);
    sc.q[i] = key_of(ex::add(sc.e[i], bias[i]));
  }
}

// kMiniMax: top-k on q'; w_j = p_j / R (always normalized).
void route_minimax(const RoutingConfig& cfg, const float* bias, Scratch& sc, int32_t* ids,
                   float* w) {
  const int k = cfg.top_k;
  biased_sigmoids(bias, cfg.num_experts, sc);
  select_on(sc.q.data(), cfg.num_experts, k, sc.top);
  for (int j = 0; j < k; ++j) {
    ids[j] = sc.top.index(j);
    w[j] = sc.e[ids[j]];
  }
  renormalize(w, k);
}

// kDeepSeekV3: group g holds experts [g G, (g+1) G), G = E / n_group. Group score = q'_a + q'_b
// for its best two experts a, b (slot order; q'_a alone when G == 1), read as a key. Keep the
// topk_group best groups; top-k on q' over the experts of kept groups (offered in ascending
// expert index); w_j = p_j, renormalized when asked.
void route_deepseek_v3(const RoutingConfig& cfg, const float* bias, Scratch& sc, int32_t* ids,
                       float* w) {
  const int n = cfg.num_experts, k = cfg.top_k, groups = cfg.n_group;
  const int group_size = n / groups;
  biased_sigmoids(bias, n, sc);
  const float* q = sc.q.data();
  sc.group_top.reset(cfg.topk_group);
  for (int g = 0; g < groups; ++g) {
    select_on(q + g * group_size, group_size, group_size >= 2 ? 2 : 1, sc.top);
    const float score =
        group_size >= 2 ? key_of(ex::add(sc.top.key(0), sc.top.key(1))) : sc.top.key(0);
    sc.group_top.offer(score, g);
  }
  std::fill(sc.group_kept.begin(), sc.group_kept.end(), 0);
  for (int j = 0; j < sc.group_top.size(); ++j) sc.group_kept[sc.group_top.index(j)] = 1;
  sc.top.reset(k);
  for (int g = 0; g < groups; ++g) {
    if (!sc.group_kept[g]) continue;
    for (int i = g * group_size; i < (g + 1) * group_size; ++i) sc.top.offer(q[i], i);
  }
  for (int j = 0; j < k; ++j) {
    ids[j] = sc.top.index(j);
    w[j] = sc.e[ids[j]];
  }
  if (cfg.renormalize) renormalize(w, k);
}

struct NamedMethod {
  RoutingMethod method;
  std::string_view name;
};
constexpr NamedMethod kMethods[] = {
    {RoutingMethod::kSoftmaxTopK, "softmax_topk"}, {RoutingMethod::kTopKSoftmax, "topk_softmax"},
    {RoutingMethod::kDeepSeekV3, "deepseek_v3"},   {RoutingMethod::kLlama4, "llama4"},
    {RoutingMethod::kSigmoidTopK, "sigmoid_topk"}, {RoutingMethod::kMiniMax, "minimax"},
    {RoutingMethod::kPrecomputed, "precomputed"},
};

}  // namespace

std::string_view routing_name(RoutingMethod m) {
  for (const auto& nm : kMethods)
    if (nm.method == m) return nm.name;
  return "unknown";
}

RoutingMethod parse_routing(std::string_view name) {
  for (const auto& nm : kMethods)
    if (nm.name == name) return nm.method;
  std::string valid;
  for (const auto& nm : kMethods) {
    if (!valid.empty()) valid += ", ";
    valid += nm.name;
  }
  SERVEKIT_FAIL("routing: unknown method '", name, "'; valid: ", valid);
}

bool routing_uses_bias(RoutingMethod m) {
  return m == RoutingMethod::kDeepSeekV3 || m == RoutingMethod::kMiniMax;
}

void validate_routing_config(const RoutingConfig& cfg) {
  SERVEKIT_CHECK(routing_name(cfg.method) != "unknown",
                 "routing: method=", static_cast<int>(cfg.method), " is not a RoutingMethod");
  const int e = cfg.num_experts;
  SERVEKIT_CHECK(e >= 1, "routing: num_experts=", e, " must be >= 1");
  const int max_k = e < kMaxTopK ? e : kMaxTopK;
  SERVEKIT_CHECK(cfg.top_k >= 1 && cfg.top_k <= max_k, "routing: top_k=", cfg.top_k,
                 " must be in 1..min(num_experts=", e, ", ", kMaxTopK, ") = ", max_k);
  SERVEKIT_CHECK(cfg.n_group >= 1 && e % cfg.n_group == 0, "routing: n_group=", cfg.n_group,
                 " must be >= 1 and divide num_experts=", e);
  SERVEKIT_CHECK(cfg.topk_group >= 1 && cfg.topk_group <= cfg.n_group,
                 "routing: topk_group=", cfg.topk_group, " must be in 1..n_group=", cfg.n_group);
  if (cfg.method == RoutingMethod::kDeepSeekV3) {
    const int kept = cfg.topk_group * (e / cfg.n_group);
    SERVEKIT_CHECK(kept >= cfg.top_k, "routing: topk_group=", cfg.topk_group,
                   " keeps topk_group * num_experts / n_group = ", kept,
                   " experts, fewer than top_k=", cfg.top_k,
                   "; need topk_group >= ", (cfg.top_k + e / cfg.n_group - 1) / (e / cfg.n_group));
  }
  const float rsf = cfg.routed_scaling_factor;
  SERVEKIT_CHECK(rsf > 0.0f && rsf <= std::numeric_limits<float>::max(),
                 "routing: routed_scaling_factor=", rsf, " must be finite and > 0");
}

void route_cpu(const RoutingConfig& cfg, const float* logits, const float* bias, int64_t num_tokens,
               int32_t* ids, float* weights) {
  validate_routing_config(cfg);
  SERVEKIT_CHECK(cfg.method != RoutingMethod::kPrecomputed,
                 "route_cpu: method=precomputed has no routing to run; pass the ids and "
                 "weights directly");
  SERVEKIT_CHECK(num_tokens >= 0, "route_cpu: num_tokens=", num_tokens, " must be >= 0");
  if (num_tokens == 0) return;
  SERVEKIT_CHECK(logits && ids && weights, "route_cpu: logits=", logits, ", ids=", ids,
                 ", weights=", weights, " must all be non-null for num_tokens=", num_tokens);
  SERVEKIT_CHECK(bias || !routing_uses_bias(cfg.method),
                 "route_cpu: bias=nullptr but method=", routing_name(cfg.method),
                 " needs a correction bias [num_experts]");
  SERVEKIT_CHECK(ex::host_keeps_subnormals(),
                 "route_cpu: the floating-point environment flushes subnormals (FTZ/DAZ set in "
                 "MXCSR, e.g. by a library built with -ffast-math); routing would then differ "
                 "from the GPU's. Clear FTZ/DAZ before routing");
  const int n = cfg.num_experts, k = cfg.top_k;
  Scratch sc;
  sc.s.resize(static_cast<size_t>(n));
  sc.e.resize(static_cast<size_t>(n));
  sc.q.resize(static_cast<size_t>(n));
  sc.group_kept.resize(static_cast<size_t>(cfg.n_group));
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* row = logits + t * n;
    for (int i = 0; i < n; ++i) sc.s[i] = key_of(row[i]);
    int32_t* id = ids + t * k;
    float* w = weights + t * k;
    switch (cfg.method) {
      case RoutingMethod::kSoftmaxTopK:
        route_softmax_topk(cfg, sc, id, w);
        break;
      case RoutingMethod::kTopKSoftmax:
        route_topk_softmax(cfg, sc, id, w);
        break;
      case RoutingMethod::kDeepSeekV3:
        route_deepseek_v3(cfg, bias, sc, id, w);
        break;
      case RoutingMethod::kLlama4:
        route_sigmoid_topk(cfg, false, sc, id, w);
        break;
      case RoutingMethod::kSigmoidTopK:
        route_sigmoid_topk(cfg, cfg.renormalize, sc, id, w);
        break;
      case RoutingMethod::kMiniMax:
        route_minimax(cfg, bias, sc, id, w);
        break;
      case RoutingMethod::kPrecomputed:
        break;
    }
    for (int j = 0; j < k; ++j) w[j] = ex::mul(w[j], cfg.routed_scaling_factor);
  }
}

}  // namespace servekit
