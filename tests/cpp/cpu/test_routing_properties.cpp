// Property tests of route_cpu over random logits: the selection is exactly the top-k of the
// method's key (within the kept groups for DeepSeek-V3), in selection order, and the weights
// match a double-precision evaluation of the method's formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/exact_math.h"
#include "servekit/routing.h"

namespace servekit {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kNegInf = -std::numeric_limits<float>::infinity();

float key_of(float v) {
  return std::isnan(v) ? kNegInf : v;
}

struct Case {
  RoutingMethod method;
  int experts, k, n_group, topk_group;
  bool renormalize;
  float scale;
};

std::string describe(const Case& c) {
  return std::string(routing_name(c.method)) + " E=" + std::to_string(c.experts) +
         " K=" + std::to_string(c.k) + " groups=" + std::to_string(c.n_group) + "/" +
         std::to_string(c.topk_group) + " renorm=" + std::to_string(c.renormalize) +
         " scale=" + std::to_string(c.scale);
}

// Logits of one of three kinds: N(0, 1) * 4 (wide), multiples of 1/4 in [-2, 2] (many exact
// ties), or N(0, 1) with a quarter of the entries NaN.
std::vector<float> make_logits(std::mt19937& rng, int64_t tokens, int experts, int kind) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> quarter(-8, 8), coin(0, 3);
  std::vector<float> s(static_cast<size_t>(tokens * experts));
  for (float& v : s) {
    if (kind == 0) v = 4.0f * normal(rng);
    if (kind == 1) v = 0.25f * static_cast<float>(quarter(rng));
    if (kind == 2) v = coin(rng) == 0 ? kNaN : normal(rng);
  }
  return s;
}

// Checks one token's routing against an independent evaluation.
void check_token(const Case& c, const float* s, const float* bias, const int32_t* ids,
                 const float* w) {
  const int e = c.experts, k = c.k;
  const bool biased = routing_uses_bias(c.method);
  // The selection key of each expert: the logit, or sigmoid(s') + b for biased methods.
  std::vector<float> key(e);
  for (int i = 0; i < e; ++i)
    key[i] = biased ? key_of(exact::add(exact::sigmoid(key_of(s[i])), bias[i])) : key_of(s[i]);
  // Allowed experts: all, or those of the topk_group best groups (DeepSeek-V3).
  std::vector<char> allowed(e, 1);
  if (c.method == RoutingMethod::kDeepSeekV3) {
    const int size = e / c.n_group;
    std::vector<std::pair<float, int>> score(c.n_group);
    for (int g = 0; g < c.n_group; ++g) {
      std::vector<float> kg(key.begin() + g * size, key.begin() + (g + 1) * size);
      std::sort(kg.begin(), kg.end(), std::greater<float>());
      score[g] = {size >= 2 ? key_of(kg[0] + kg[1]) : kg[0], g};
    }
    std::stable_sort(score.begin(), score.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::fill(allowed.begin(), allowed.end(), 0);
    for (int j = 0; j < c.topk_group; ++j)
      std::fill(allowed.begin() + score[j].second * size,
                allowed.begin() + (score[j].second + 1) * size, 1);
  }
  // ids: in range, allowed, distinct, in selection order, and exactly the top-k.
  std::set<int> chosen;
  for (int j = 0; j < k; ++j) {
    ASSERT_TRUE(ids[j] >= 0 && ids[j] < e) << "slot " << j << " id " << ids[j];
    ASSERT_TRUE(allowed[ids[j]]) << "slot " << j << " id " << ids[j] << " from a dropped group";
    ASSERT_TRUE(chosen.insert(ids[j]).second) << "id " << ids[j] << " repeated";
    if (j > 0) {
      const float a = key[ids[j - 1]], b = key[ids[j]];
      ASSERT_TRUE(a > b || (a == b && ids[j - 1] < ids[j])) << "slots " << j - 1 << ", " << j;
    }
  }
  const int last = ids[k - 1];
  for (int i = 0; i < e; ++i) {
    if (!allowed[i] || chosen.count(i)) continue;
    ASSERT_TRUE(key[i] < key[last] || (key[i] == key[last] && i > last))
        << "expert " << i << " (key " << key[i] << ") should have been chosen over " << last;
  }
  // Weights against double precision.
  std::vector<double> ref(k);
  double max_gap = 0.0;  // largest |s - m| fed to exp: its rounding costs |s - m| * 2^-24
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (c.method == RoutingMethod::kSoftmaxTopK || c.method == RoutingMethod::kTopKSoftmax) {
    const bool all = c.method == RoutingMethod::kSoftmaxTopK;
    double m = -INFINITY, total = 0.0;
    for (int i = 0; i < e; ++i) m = std::max(m, static_cast<double>(key_of(s[i])));
    for (int i = 0; i < (all ? e : k); ++i) {
      const double x = key_of(s[all ? i : ids[i]]);
      total += x == m ? 1.0 : std::exp(x - m);
      if (x != m && std::isfinite(x)) max_gap = std::max(max_gap, m - x);
    }
    for (int j = 0; j < k; ++j) {
      const double x = key_of(s[ids[j]]);
      ref[j] = (x == m ? 1.0 : std::exp(x - m)) / total;
    }
  } else {
    for (int j = 0; j < k; ++j) ref[j] = sigmoid(key_of(s[ids[j]]));
  }
  const bool normalize =
      c.method == RoutingMethod::kMiniMax || (c.renormalize && c.method != RoutingMethod::kLlama4 &&
                                              c.method != RoutingMethod::kTopKSoftmax);
  double sum = 0.0;
  for (double r : ref) sum += r;
  // A zero sum (every selected sigmoid underflowed) normalizes to 1/K each (routing.cpp).
  for (double& r : ref) r = (normalize ? (sum > 0.0 ? r / sum : 1.0 / k) : r) * c.scale;
  // Relative bound, in units of u = 2^-24: the float sum of E softmax numerators (recursive
  // summation of positive terms: (E - 1) u), the renormalizing sum of K weights (K u), the
  // rounding of s - m before exp (|s - m| u), exp/sigmoid (<= 2.41 ulp <= 4.82 u) and three
  // single roundings (divide, renormalize divide, scale).
  const int summed = c.method == RoutingMethod::kSoftmaxTopK ? e : 0;
  const double tol = (summed + k + max_gap + 8.0) * std::ldexp(1.0, -24);
  double wsum = 0.0;
  for (int j = 0; j < k; ++j) {
    ASSERT_TRUE(std::isfinite(w[j]) && w[j] >= 0.0f) << "slot " << j << " weight " << w[j];
    EXPECT_NEAR(w[j], ref[j], tol * ref[j] + 1e-38) << "slot " << j << " id " << ids[j];
    wsum += w[j];
  }
  if (normalize || c.method == RoutingMethod::kTopKSoftmax) {
    EXPECT_NEAR(wsum, c.scale, 2 * k * tol * c.scale);
  }
}

std::vector<Case> property_cases() {
  using M = RoutingMethod;
  std::vector<Case> cases;
  for (bool renorm : {false, true}) {
    for (float scale : {1.0f, 2.5f}) {
      cases.push_back({M::kSoftmaxTopK, 8, 2, 1, 1, renorm, scale});
      cases.push_back({M::kSoftmaxTopK, 512, 32, 1, 1, renorm, scale});
      cases.push_back({M::kSoftmaxTopK, 257, 6, 1, 1, renorm, scale});
      cases.push_back({M::kTopKSoftmax, 64, 8, 1, 1, renorm, scale});
      cases.push_back({M::kTopKSoftmax, 128, 4, 1, 1, renorm, scale});
      cases.push_back({M::kLlama4, 128, 1, 1, 1, renorm, scale});
      cases.push_back({M::kLlama4, 16, 3, 1, 1, renorm, scale});
      cases.push_back({M::kSigmoidTopK, 256, 8, 1, 1, renorm, scale});
      cases.push_back({M::kSigmoidTopK, 257, 6, 1, 1, renorm, scale});
      cases.push_back({M::kMiniMax, 256, 8, 1, 1, renorm, scale});
      cases.push_back({M::kMiniMax, 5, 5, 1, 1, renorm, scale});
      cases.push_back({M::kDeepSeekV3, 256, 8, 8, 4, renorm, scale});
      cases.push_back({M::kDeepSeekV3, 512, 32, 16, 4, renorm, scale});
      cases.push_back({M::kDeepSeekV3, 384, 8, 1, 1, renorm, scale});
      cases.push_back({M::kDeepSeekV3, 12, 5, 12, 5, renorm, scale});
      cases.push_back({M::kDeepSeekV3, 60, 6, 6, 1, renorm, scale});
    }
  }
  return cases;
}

TEST(RoutingProperties, RandomLogits) {
  std::mt19937 rng(1234);
  constexpr int64_t kTokens = 37;
  for (const Case& c : property_cases()) {
    SCOPED_TRACE(describe(c));
    RoutingConfig cfg;
    cfg.method = c.method;
    cfg.num_experts = c.experts;
    cfg.top_k = c.k;
    cfg.n_group = c.n_group;
    cfg.topk_group = c.topk_group;
    cfg.renormalize = c.renormalize;
    cfg.routed_scaling_factor = c.scale;
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE("logit kind " + std::to_string(kind));
      const std::vector<float> s = make_logits(rng, kTokens, c.experts, kind);
      // Bias in multiples of 1/32 within [-1/8, 1/8] for tie-heavy logits, U(-0.1, 0.1) else.
      std::vector<float> bias(c.experts);
      std::uniform_real_distribution<float> small(-0.1f, 0.1f);
      std::uniform_int_distribution<int> steps(-4, 4);
      for (float& b : bias) b = kind == 1 ? steps(rng) / 32.0f : small(rng);
      std::vector<int32_t> ids(kTokens * c.k, -7), ids2(kTokens * c.k, -9);
      std::vector<float> w(kTokens * c.k, kNaN), w2(kTokens * c.k, -1.0f);
      route_cpu(cfg, s.data(), bias.data(), kTokens, ids.data(), w.data());
      for (int64_t t = 0; t < kTokens; ++t)
        check_token(c, &s[t * c.experts], bias.data(), &ids[t * c.k], &w[t * c.k]);
      // A second run gives the same bits.
      route_cpu(cfg, s.data(), bias.data(), kTokens, ids2.data(), w2.data());
      EXPECT_EQ(ids, ids2);
      EXPECT_EQ(std::memcmp(w.data(), w2.data(), w.size() * sizeof(float)), 0);
    }
  }
}

// Each token is routed on its own: a token's result does not depend on its neighbours.
TEST(RoutingProperties, TokensAreIndependent) {
  std::mt19937 rng(99);
  RoutingConfig cfg;
  cfg.method = RoutingMethod::kDeepSeekV3;
  cfg.num_experts = 64;
  cfg.top_k = 6;
  cfg.n_group = 8;
  cfg.topk_group = 3;
  cfg.routed_scaling_factor = 2.5f;
  const std::vector<float> s = make_logits(rng, 9, 64, 0);
  std::vector<float> bias(64, 0.05f);
  std::vector<int32_t> all(9 * 6), one(6);
  std::vector<float> wall(9 * 6), wone(6);
  route_cpu(cfg, s.data(), bias.data(), 9, all.data(), wall.data());
  for (int t = 0; t < 9; ++t) {
    route_cpu(cfg, &s[t * 64], bias.data(), 1, one.data(), wone.data());
    for (int j = 0; j < 6; ++j) {
      EXPECT_EQ(one[j], all[t * 6 + j]);
      EXPECT_EQ(wone[j], wall[t * 6 + j]);
    }
  }
}

// The host routing must keep up with a prefill batch: 8192 tokens x 512 experts in well under
// a second on one core (measured ~0.1 s per method in a Release build). The bound is loose
// (3 s) because the test machine is shared; it catches an accidental O(E^2) or allocation per
// token, not small regressions.
TEST(RoutingProperties, FastEnoughFor8192x512) {
  std::mt19937 rng(5);
  constexpr int64_t kTokens = 8192;
  constexpr int kExperts = 512;
  const std::vector<float> s = make_logits(rng, kTokens, kExperts, 0);
  const std::vector<float> bias(kExperts, 0.01f);
  for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kDeepSeekV3}) {
    RoutingConfig cfg;
    cfg.method = m;
    cfg.num_experts = kExperts;
    cfg.top_k = 8;
    cfg.n_group = 8;
    cfg.topk_group = 4;
    std::vector<int32_t> ids(kTokens * 8);
    std::vector<float> w(kTokens * 8);
    const auto t0 = std::chrono::steady_clock::now();
    route_cpu(cfg, s.data(), bias.data(), kTokens, ids.data(), w.data());
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("route_cpu %s 8192x512 top-8: %.3f s\n", std::string(routing_name(m)).c_str(), sec);
    EXPECT_LT(sec, 3.0) << routing_name(m);
  }
}

}  // namespace
}  // namespace servekit
