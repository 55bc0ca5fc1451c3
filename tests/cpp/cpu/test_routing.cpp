// Hand-computed cases of route_cpu, one or more per method, and the validation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "servekit/error.h"
#include "servekit/routing.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace servekit {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
// Logits whose sigmoid / exp are simple fractions: sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4,
// sigmoid(ln 7) = 7/8, sigmoid(-ln 7) = 1/8, sigmoid(ln 15) = 15/16, sigmoid(-ln 15) = 1/16.
const float kLn2 = std::log(2.0f), kLn3 = std::log(3.0f), kLn4 = std::log(4.0f);
const float kLn7 = std::log(7.0f), kLn15 = std::log(15.0f);

// Relative tolerance of a hand-computed weight: the logits ln(n) are rounded to float
// (relative error 2^-24 in s, so |s| * 2^-24 <= 2.7 * 6e-8 in e^s), exp/sigmoid add <= 2.4
// ulp and the sums/divisions/scaling <= 6 roundings of 0.5 ulp: <= ~12 ulp = 7e-7 < 1e-6.
constexpr double kHandRtol = 1e-6;

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Runs route_cpu on poisoned outputs (ids -7, weights NaN), so a slot left unwritten fails
// every comparison below.
Routed route(const RoutingConfig& cfg, const std::vector<float>& logits,
             const std::vector<float>& bias = {}) {
  const int64_t tokens = static_cast<int64_t>(logits.size()) / cfg.num_experts;
  Routed r{std::vector<int32_t>(tokens * cfg.top_k, -7),
           std::vector<float>(tokens * cfg.top_k, kNaN)};
  route_cpu(cfg, logits.data(), bias.empty() ? nullptr : bias.data(), tokens, r.ids.data(),
            r.weights.data());
  return r;
}

void expect_routed(const Routed& got, const std::vector<int32_t>& ids,
                   const std::vector<double>& weights) {
  ASSERT_EQ(got.ids.size(), ids.size());
  for (size_t j = 0; j < ids.size(); ++j) {
    EXPECT_EQ(got.ids[j], ids[j]) << "slot " << j;
    EXPECT_NEAR(got.weights[j], weights[j], kHandRtol * std::fabs(weights[j]) + 1e-30)
        << "slot " << j;
  }
}

RoutingConfig config(RoutingMethod m, int experts, int k, bool renormalize = true,
                     float scale = 1.0f) {
  RoutingConfig c;
  c.method = m;
  c.num_experts = experts;
  c.top_k = k;
  c.renormalize = renormalize;
  c.routed_scaling_factor = scale;
  return c;
}

// s = {ln 4, 0, ln 2, ln 3}: m = ln 4, e = {1, 1/4, 1/2, 3/4}, S = 5/2, p = {.4, .1, .2, .3}.
// Top-2: experts 0 (.4), 3 (.3). Renormalized: .4/.7 = 4/7, .3/.7 = 3/7.
TEST(RouteSoftmaxTopK, HandComputed) {
  const std::vector<float> s = {kLn4, 0.0f, kLn2, kLn3};
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 2, false), s), {0, 3}, {0.4, 0.3});
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 2, true), s), {0, 3},
                {4.0 / 7, 3.0 / 7});
  // routed_scaling_factor 2.5: 2.5 * 4/7 = 10/7, 2.5 * 3/7 = 7.5/7.
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 2, true, 2.5f), s), {0, 3},
                {10.0 / 7, 7.5 / 7});
}

// top_k = E: every expert, by descending logit: 0 (.4), 3 (.3), 2 (.2), 1 (.1); the
// renormalizing sum is 1, so the weights are the softmax itself.
TEST(RouteSoftmaxTopK, TopKEqualsNumExperts) {
  const std::vector<float> s = {kLn4, 0.0f, kLn2, kLn3};
  for (bool renorm : {false, true})
    expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 4, renorm), s), {0, 3, 2, 1},
                  {0.4, 0.3, 0.2, 0.1});
}

// Equal logits: the lower expert index comes first. s = {1, 2, 2, 1, 2}: top-3 = {1, 2, 4},
// top-4 adds 0 (before 3). Softmax of {1, 2, 2, 1, 2}: e = {1/e, 1, 1, 1/e, 1} (m = 2),
// S = 3 + 2/e; the three 2s get 1/S = 1/(3 + 2/e) = 0.2677, the 1s 0.2677/e = 0.0985.
TEST(RouteSoftmaxTopK, TiesGoToLowerIndex) {
  const std::vector<float> s = {1, 2, 2, 1, 2};
  const double big = 1.0 / (3.0 + 2.0 / std::exp(1.0)), small = big / std::exp(1.0);
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 5, 3, false), s), {1, 2, 4},
                {big, big, big});
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 5, 4, false), s), {1, 2, 4, 0},
                {big, big, big, small});
  // -0 == +0 under IEEE comparison: a tie, so expert 0 wins. Each gets e^0 / 2 = 1/2.
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 2, 1, false), {-0.0f, 0.0f}), {0}, {0.5});
}

// NaN logits act as -inf: never chosen over a real logit; picked last (lower index first)
// with e^-inf = 0 when K exceeds the real logits. s = {NaN, ln 3, NaN, 0}: m = ln 3,
// e = {0, 1, 0, 1/3}, S = 4/3, p = {0, 3/4, 0, 1/4}.
TEST(RouteSoftmaxTopK, NaNLogitsActAsMinusInf) {
  const std::vector<float> s = {kNaN, kLn3, kNaN, 0.0f};
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 3, false), s), {1, 3, 0},
                {0.75, 0.25, 0.0});
  // All NaN: every logit is -inf = m, each numerator is defined as 1: uniform 1/4.
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 4, 2, false), {kNaN, kNaN, kNaN, kNaN}),
                {0, 1}, {0.25, 0.25});
  // +inf logits: the +inf experts share the mass, the rest get e^-inf = 0.
  expect_routed(route(config(RoutingMethod::kSoftmaxTopK, 3, 3, false), {1.0f, kInf, kInf}),
                {1, 2, 0}, {0.5, 0.5, 0.0});
}

// s = {0.5, 2, 2 - ln 3, -1}: top-2 logits are experts 1 (2) and 2 (2 - ln 3 = 0.90).
// Softmax over the two: e = {1, 1/3}, S = 4/3, w = {3/4, 1/4}. renormalize has no effect.
TEST(RouteTopKSoftmax, HandComputed) {
  const std::vector<float> s = {0.5f, 2.0f, 2.0f - kLn3, -1.0f};
  for (bool renorm : {false, true})
    expect_routed(route(config(RoutingMethod::kTopKSoftmax, 4, 2, renorm), s), {1, 2},
                  {0.75, 0.25});
  // K = 1: softmax of one logit is 1, times routed_scaling_factor 3.
  expect_routed(route(config(RoutingMethod::kTopKSoftmax, 4, 1, true, 3.0f), s), {1}, {3.0});
}

// s = {-ln 3, ln 3, 0, -5}: top-1 is expert 1, weight sigmoid(ln 3) = 3/4. Top-2 adds expert
// 2 with sigmoid(0) = 1/2; Llama-4 never renormalizes (renormalize is ignored).
TEST(RouteLlama4, HandComputed) {
  const std::vector<float> s = {-kLn3, kLn3, 0.0f, -5.0f};
  expect_routed(route(config(RoutingMethod::kLlama4, 4, 1), s), {1}, {0.75});
  expect_routed(route(config(RoutingMethod::kLlama4, 4, 2, true), s), {1, 2}, {0.75, 0.5});
}

// s = {0, ln 3, -ln 3, ln 7}: p = {1/2, 3/4, 1/4, 7/8}. Top-2: experts 3 (7/8), 1 (3/4).
// Renormalized: sum 13/8, w = {7/13, 6/13}; times 2: {14/13, 12/13}.
TEST(RouteSigmoidTopK, HandComputed) {
  const std::vector<float> s = {0.0f, kLn3, -kLn3, kLn7};
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 4, 2, false), s), {3, 1}, {0.875, 0.75});
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 4, 2, true), s), {3, 1},
                {7.0 / 13, 6.0 / 13});
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 4, 2, true, 2.0f), s), {3, 1},
                {14.0 / 13, 12.0 / 13});
}

// Every selected sigmoid underflows to 0 (sigmoid(-200) ~ 1e-87): the renormalizing sum is 0
// and the weights fall back to 1/K = 1/2 each; without renormalize they are the sigmoids, 0.
TEST(RouteSigmoidTopK, UnderflowedSumGivesUniformWeights) {
  const std::vector<float> s = {-200.0f, -300.0f, -250.0f};
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 3, 2, true), s), {0, 2}, {0.5, 0.5});
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 3, 2, false), s), {0, 2}, {0.0, 0.0});
}

// s = {0, ln 3, -ln 3, ln 7}: p = {.5, .75, .25, .875}; b = {.3, 0, .6, 0}:
// q = {.8, .75, .85, .875}. Top-2 of q: experts 3 (.875), 2 (.85) -- expert 2 has the lowest p
// but the bias lifts it. Weights from p: {.875, .25} / 1.125 = {7/9, 2/9}, always normalized.
TEST(RouteMiniMax, HandComputed) {
  const std::vector<float> s = {0.0f, kLn3, -kLn3, kLn7};
  const std::vector<float> b = {0.3f, 0.0f, 0.6f, 0.0f};
  for (bool renorm : {false, true})
    expect_routed(route(config(RoutingMethod::kMiniMax, 4, 2, renorm), s, b), {3, 2},
                  {7.0 / 9, 2.0 / 9});
}

// E = 8 in n_group = 4 groups of 2, topk_group = 2, K = 3, routed_scaling_factor 2.5.
//   s = {ln 15, -ln 15, ln 3, 0,  ln 7, -ln 3, -ln 7, -ln 15}
//   p = {15/16, 1/16,   3/4,  1/2, 7/8, 1/4,   1/8,   1/16}
//   b = {0,     0,      0,    .1,  0,   .4,    .1,    0}
//   q = {.9375, .0625,  .75,  .6,  .875, .65,  .225,  .0625}
// Group scores (top-2 q): g0 = 1.0, g1 = 1.35, g2 = 1.525, g3 = .2875 -> keep g2, g1.
// Top-3 of q among experts 2..5: 4 (.875), 2 (.75), 5 (.65). Expert 0 has the best q of all
// (.9375) but its group is dropped. Expert 5 beats expert 3 only thanks to its bias (p .25 <
// .5). Weights from p: {7/8, 3/4, 1/4}, sum 15/8 -> {7/15, 6/15, 2/15} * 2.5 = {7/6, 1, 1/3};
// without renormalize {7/8, 3/4, 1/4} * 2.5 = {2.1875, 1.875, .625}.
TEST(RouteDeepSeekV3, GroupLimitDropsTheBestExpert) {
  const std::vector<float> s = {kLn15, -kLn15, kLn3, 0.0f, kLn7, -kLn3, -kLn7, -kLn15};
  const std::vector<float> b = {0, 0, 0, 0.1f, 0, 0.4f, 0.1f, 0};
  RoutingConfig c = config(RoutingMethod::kDeepSeekV3, 8, 3, true, 2.5f);
  c.n_group = 4;
  c.topk_group = 2;
  expect_routed(route(c, s, b), {4, 2, 5}, {7.0 / 6, 1.0, 1.0 / 3});
  c.renormalize = false;
  expect_routed(route(c, s, b), {4, 2, 5}, {2.1875, 1.875, 0.625});
  // Keeping every group, the top-3 of q is 0 (.9375), 4 (.875), 2 (.75); p sum 41/16:
  // {15/41, 14/41, 12/41} * 2.5.
  c.renormalize = true;
  c.topk_group = 4;
  expect_routed(route(c, s, b), {0, 4, 2}, {37.5 / 41, 35.0 / 41, 30.0 / 41});
}

// Group ties go to the lower group, expert ties to the lower expert. s = 0 (p = 1/2),
//   b = {0, 0,  .2, .1,  .1, .1,  .1, .2}: q = {.5, .5, .7, .6, .6, .6, .6, .7}
// Scores: g0 = 1.0, g1 = .7 + .6 = 1.3, g2 = 1.2, g3 = .6 + .7 = 1.3 (same float: + commutes).
// topk_group = 1 keeps g1 (tie with g3, lower group): top-2 = {2, 3}. topk_group = 2 keeps
// g1, g3: candidates 2 (.7), 3 (.6), 6 (.6), 7 (.7) -> 2 then 7 (tie at .7, lower first).
// Weights: p = 1/2 each, renormalized to {1/2, 1/2}.
TEST(RouteDeepSeekV3, TiesGoToLowerGroupAndExpert) {
  const std::vector<float> s(8, 0.0f);
  const std::vector<float> b = {0, 0, 0.2f, 0.1f, 0.1f, 0.1f, 0.1f, 0.2f};
  RoutingConfig c = config(RoutingMethod::kDeepSeekV3, 8, 2);
  c.n_group = 4;
  c.topk_group = 1;
  expect_routed(route(c, s, b), {2, 3}, {0.5, 0.5});
  c.topk_group = 2;
  expect_routed(route(c, s, b), {2, 7}, {0.5, 0.5});
}

// Groups of one expert (n_group = E): the group score is that expert's q alone. With
// s = {0, ln 3, -ln 3, ln 7}, b = 0: q = p = {.5, .75, .25, .875}; topk_group = 2 keeps
// experts 3 and 1; K = 2 picks them: {7/8, 3/4} / (13/8) = {7/13, 6/13}.
TEST(RouteDeepSeekV3, SingleExpertGroups) {
  RoutingConfig c = config(RoutingMethod::kDeepSeekV3, 4, 2);
  c.n_group = 4;
  c.topk_group = 2;
  expect_routed(route(c, {0.0f, kLn3, -kLn3, kLn7}, {0, 0, 0, 0}), {3, 1}, {7.0 / 13, 6.0 / 13});
}

// E = 257 (prime, so one group), K = 6, one token: logits i/1000 except a few planted
// values; the planted top-6 (including the last expert, 256) must come out in order.
// Sigmoid weights of logits {4, 3, 3, 2, 1.5, 1.2}: ids 256, 7, 100 (tie at 3: 7 first), 0,
// 128, 3; checked against double-precision sigmoids without renormalization.
TEST(RouteAllMethods, E257TopK6) {
  std::vector<float> s(257);
  for (int i = 0; i < 257; ++i) s[i] = static_cast<float>(i) / 1000.0f;
  s[256] = 4.0f, s[7] = 3.0f, s[100] = 3.0f, s[0] = 2.0f, s[128] = 1.5f, s[3] = 1.2f;
  const std::vector<int32_t> ids = {256, 7, 100, 0, 128, 3};
  std::vector<double> sig;
  for (int32_t i : ids) sig.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(s[i]))));
  expect_routed(route(config(RoutingMethod::kSigmoidTopK, 257, 6, false), s), ids, sig);
  expect_routed(route(config(RoutingMethod::kLlama4, 257, 6), s), ids, sig);
  const std::vector<float> zero_bias(257, 0.0f);
  RoutingConfig ds = config(RoutingMethod::kDeepSeekV3, 257, 6, false);
  expect_routed(route(ds, s, zero_bias), ids, sig);
  for (RoutingMethod m :
       {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax, RoutingMethod::kMiniMax}) {
    const Routed r = route(config(m, 257, 6), s, zero_bias);
    EXPECT_EQ(r.ids, ids) << routing_name(m);
  }
}

TEST(RouteCpu, ZeroTokensAndErrors) {
  RoutingConfig c = config(RoutingMethod::kSoftmaxTopK, 4, 2);
  EXPECT_NO_THROW(route_cpu(c, nullptr, nullptr, 0, nullptr, nullptr));
  int32_t ids[2];
  float w[2];
  const float s[4] = {1, 2, 3, 4};
  auto message = [&](RoutingConfig cfg, const float* logits, const float* bias, int64_t t) {
    try {
      route_cpu(cfg, logits, bias, t, ids, w);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(c, s, nullptr, -1).find("num_tokens=-1"), std::string::npos);
  EXPECT_NE(message(c, nullptr, nullptr, 1).find("logits="), std::string::npos);
  c.method = RoutingMethod::kDeepSeekV3;
  EXPECT_NE(message(c, s, nullptr, 1).find("bias=nullptr"), std::string::npos);
  c.method = RoutingMethod::kMiniMax;
  EXPECT_NE(message(c, s, nullptr, 1).find("bias=nullptr"), std::string::npos);
  c.method = RoutingMethod::kPrecomputed;
  EXPECT_NE(message(c, s, nullptr, 1).find("precomputed"), std::string::npos);
#if defined(__x86_64__)
  // Flush-to-zero would make host results differ from the GPU's: refused.
  c.method = RoutingMethod::kSoftmaxTopK;
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | _MM_FLUSH_ZERO_ON);
  const std::string ftz = message(c, s, nullptr, 1);
  _mm_setcsr(csr);
  EXPECT_NE(ftz.find("FTZ/DAZ"), std::string::npos) << ftz;
#endif
}

TEST(RoutingNames, RoundTripAndUnknown) {
  for (RoutingMethod m :
       {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax, RoutingMethod::kDeepSeekV3,
        RoutingMethod::kLlama4, RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax,
        RoutingMethod::kPrecomputed})
    EXPECT_EQ(parse_routing(routing_name(m)), m);
  EXPECT_EQ(routing_name(RoutingMethod::kDeepSeekV3), "deepseek_v3");
  try {
    parse_routing("deepseek");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'deepseek'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("deepseek_v3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("precomputed"), std::string::npos) << msg;
  }
  EXPECT_TRUE(routing_uses_bias(RoutingMethod::kDeepSeekV3));
  EXPECT_TRUE(routing_uses_bias(RoutingMethod::kMiniMax));
  EXPECT_FALSE(routing_uses_bias(RoutingMethod::kSoftmaxTopK));
  EXPECT_FALSE(routing_uses_bias(RoutingMethod::kSigmoidTopK));
}

// Each bad field must throw, and the message must name the field with its value.
TEST(ValidateRoutingConfig, NamesTheBadField) {
  struct Case {
    const char* expect;
    void (*edit)(RoutingConfig&);
  };
  const Case cases[] = {
      {"num_experts=0", [](RoutingConfig& c) { c.num_experts = 0; }},
      {"top_k=0", [](RoutingConfig& c) { c.top_k = 0; }},
      {"top_k=33", [](RoutingConfig& c) { c.top_k = 33; }},
      {"top_k=9", [](RoutingConfig& c) { c.num_experts = 8, c.n_group = 4, c.top_k = 9; }},
      {"n_group=0", [](RoutingConfig& c) { c.n_group = 0; }},
      {"n_group=3", [](RoutingConfig& c) { c.n_group = 3; }},
      {"topk_group=0", [](RoutingConfig& c) { c.topk_group = 0; }},
      {"topk_group=9", [](RoutingConfig& c) { c.topk_group = 9; }},
      // 1 group of 64/8 = 8 experts cannot supply top_k = 9.
      {"topk_group=1", [](RoutingConfig& c) { c.topk_group = 1, c.top_k = 9; }},
      {"routed_scaling_factor=0", [](RoutingConfig& c) { c.routed_scaling_factor = 0.0f; }},
      {"routed_scaling_factor=-1", [](RoutingConfig& c) { c.routed_scaling_factor = -1.0f; }},
      {"routed_scaling_factor=nan",
       [](RoutingConfig& c) { c.routed_scaling_factor = std::nanf(""); }},
      {"routed_scaling_factor=inf", [](RoutingConfig& c) { c.routed_scaling_factor = kInf; }},
      {"method=9", [](RoutingConfig& c) { c.method = static_cast<RoutingMethod>(9); }},
  };
  RoutingConfig good = config(RoutingMethod::kDeepSeekV3, 64, 8, true, 2.5f);
  good.n_group = 8;
  good.topk_group = 4;
  EXPECT_NO_THROW(validate_routing_config(good));
  for (const Case& k : cases) {
    RoutingConfig c = good;
    k.edit(c);
    try {
      validate_routing_config(c);
      ADD_FAILURE() << "no error for " << k.expect;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(k.expect), std::string::npos)
          << "expected '" << k.expect << "' in: " << e.what();
    }
  }
  // The group-capacity rule binds only DeepSeek-V3.
  RoutingConfig soft = good;
  soft.method = RoutingMethod::kSoftmaxTopK;
  soft.topk_group = 1;
  soft.top_k = 9;
  EXPECT_NO_THROW(validate_routing_config(soft));
}

}  // namespace
}  // namespace servekit
