// Random data is a pure function of (seed, stream, index): reproducible, independent of what
// else is generated, and with the documented ranges and moments.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "moe_test_util.h"

namespace servekit {
namespace {

TEST(RandomData, DeterministicAndPrefixStable) {
  // 3M values crosses the threshold above which fills are split across threads.
  std::vector<float> big(3 << 20), small(1000), again(3 << 20);
  fill_uniform_f32(5, 9, big.data(), big.size(), 2.0f);
  fill_uniform_f32(5, 9, again.data(), again.size(), 2.0f);
  fill_uniform_f32(5, 9, small.data(), small.size(), 2.0f);
  EXPECT_EQ(big, again);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), big.begin()));
  std::vector<float> other_seed(1000), other_stream(1000);
  fill_uniform_f32(6, 9, other_seed.data(), 1000, 2.0f);
  fill_uniform_f32(5, 10, other_stream.data(), 1000, 2.0f);
  EXPECT_NE(small, other_seed);
  EXPECT_NE(small, other_stream);
}

TEST(RandomData, UniformAndNormalMoments) {
  const size_t n = 1 << 20;
  std::vector<float> u(n), g(n);
  fill_uniform_f32(1, 1, u.data(), n, 3.0f);
  fill_normal_f32(1, 2, g.data(), n, 2.0f);
  double su = 0, su2 = 0, sg = 0, sg2 = 0;
  float lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    su += u[i];
    su2 += double(u[i]) * u[i];
    sg += g[i];
    sg2 += double(g[i]) * g[i];
    lo = std::min(lo, u[i]);
    hi = std::max(hi, u[i]);
  }
  EXPECT_GT(lo, -3.0f);
  EXPECT_LT(hi, 3.0f);
  EXPECT_LT(lo, -2.99f);
  EXPECT_GT(hi, 2.99f);
  // Standard error of the mean: sigma / sqrt(2^20) = sigma / 1024; allow 5 of them.
  EXPECT_NEAR(su / n, 0.0, 5 * std::sqrt(3.0) / 1024);
  EXPECT_NEAR(su2 / n, 3.0, 0.02);  // U(-3, 3) has variance 3
  EXPECT_NEAR(sg / n, 0.0, 5 * 2.0 / 1024);
  EXPECT_NEAR(sg2 / n, 4.0, 0.03);
  std::vector<uint16_t> b(1000);
  fill_uniform_bf16(1, 1, b.data(), b.size(), 3.0f);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], float_to_bf16(u[i])) << i;
}

TEST(RandomData, ExpertAloneEqualsExpertAmongOthers) {
  test::LayerCase c;
  c.bias = true;
  const MoEConfig cfg = test::make_config(c);
  std::vector<HostExpert> all;
  for (int e = 0; e <= c.num_experts; ++e) all.push_back(make_random_expert(cfg, 42, e, true));
  const HostExpert alone = make_random_expert(cfg, 42, 5, true);
  EXPECT_EQ(alone.w13, all[5].w13);
  EXPECT_EQ(alone.w2, all[5].w2);
  EXPECT_EQ(alone.w13_bias, all[5].w13_bias);
  EXPECT_EQ(alone.w2_bias, all[5].w2_bias);
  EXPECT_NE(all[5].w13, all[6].w13);
  EXPECT_NE(all[5].w2, all[16].w2);
  EXPECT_EQ(alone.w13.size(), size_t(256 * 256));
  EXPECT_EQ(alone.w2.size(), size_t(256 * 128));
  EXPECT_TRUE(make_random_expert(cfg, 42, 5, false).w13_bias.empty());
  EXPECT_EQ(make_random_expert(cfg, 42, 5, false).w13, alone.w13);
  // fan-in scaling: |w13| <= sqrt(3 / H), |w2| <= sqrt(3 / I) (bf16 rounding may add 2^-8).
  for (uint16_t v : alone.w13)
    ASSERT_LE(std::abs(bf16_to_float(v)), std::sqrt(3.0f / 256) * (1 + 1.0f / 256));
  for (uint16_t v : alone.w2)
    ASSERT_LE(std::abs(bf16_to_float(v)), std::sqrt(3.0f / 128) * (1 + 1.0f / 256));
  EXPECT_THROW(make_random_expert(cfg, 42, 17, false), Error);
}

// Top-K ids [T, K] of `logits` under routing method m (DeepSeek-V3: 8 groups, keep 2).
std::vector<int32_t> route_ids(RoutingMethod m, const std::vector<float>& logits,
                               const std::vector<float>& bias, int T, int E, int K) {
  RoutingConfig cfg;
  cfg.num_experts = E;
  cfg.top_k = K;
  cfg.method = m;
  if (m == RoutingMethod::kDeepSeekV3) cfg.n_group = 8, cfg.topk_group = 2;
  std::vector<int32_t> ids(size_t(T) * K);
  std::vector<float> w(size_t(T) * K);
  route_cpu(cfg, logits.data(), bias.data(), T, ids.data(), w.data());
  return ids;
}
constexpr RoutingMethod kAllMethods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                         RoutingMethod::kDeepSeekV3,  RoutingMethod::kLlama4,
                                         RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax};

// kOneExpert: every token's first choice is one expert under every routing method (deepseek's
// group-limited selection included), and its other slots still vary between tokens.
TEST(RandomData, RouterLogitsOneExpert) {
  const int E = 64, K = 6, T = 128;
  const std::vector<float> logits = make_router_logits(9, T, E, RoutingSkew::kOneExpert);
  const std::vector<float> bias = make_correction_bias(9, E);
  for (RoutingMethod m : kAllMethods) {
    const std::vector<int32_t> ids = route_ids(m, logits, bias, T, E, K);
    std::set<int32_t> second;
    for (int t = 0; t < T; ++t) {
      ASSERT_EQ(ids[t * K], ids[0]) << routing_name(m) << " token " << t;
      second.insert(ids[t * K + 1]);
    }
    EXPECT_GT(second.size(), 4u) << routing_name(m);
  }
  EXPECT_EQ(parse_routing_skew("one"), RoutingSkew::kOneExpert);
  for (RoutingSkew s : {RoutingSkew::kUniform, RoutingSkew::kSkewed, RoutingSkew::kOneExpert,
                        RoutingSkew::kBalanced})
    EXPECT_EQ(parse_routing_skew(routing_skew_name(s)), s);
  EXPECT_THROW(parse_routing_skew("zipf"), Error);
}

// kBalanced: under every routing method each token takes the experts (t * K + j) mod E, so
// every expert gets floor or ceil(T * K / E) rows (exactly T * K / E when E divides it).
TEST(RandomData, RouterLogitsBalanced) {
  const int E = 64, K = 6;
  const std::vector<float> bias = make_correction_bias(9, E);
  for (int T : {1, 7, 128, 1000}) {
    const std::vector<float> logits = make_router_logits(9, T, E, RoutingSkew::kBalanced, K);
    for (RoutingMethod m : kAllMethods) {
      const std::vector<int32_t> ids = route_ids(m, logits, bias, T, E, K);
      std::vector<int> rows(E, 0);
      for (int t = 0; t < T; ++t) {
        std::set<int32_t> want, got(ids.begin() + t * K, ids.begin() + (t + 1) * K);
        for (int j = 0; j < K; ++j) want.insert((t * K + j) % E);
        ASSERT_EQ(got, want) << routing_name(m) << " T=" << T << " token " << t;
        for (int32_t e : got) ++rows[e];
      }
      const int lo = T * K / E, hi = (T * K + E - 1) / E;
      for (int e = 0; e < E; ++e) {
        EXPECT_GE(rows[e], lo) << routing_name(m) << " T=" << T << " expert " << e;
        EXPECT_LE(rows[e], hi) << routing_name(m) << " T=" << T << " expert " << e;
      }
    }
  }
  EXPECT_EQ(parse_routing_skew("balanced"), RoutingSkew::kBalanced);
  EXPECT_THROW(make_router_logits(9, 8, E, RoutingSkew::kBalanced), Error);  // no top_k
  EXPECT_THROW(make_router_logits(9, 8, E, RoutingSkew::kBalanced, E + 1), Error);
}

TEST(RandomData, RouterLogitsSkewAndInputs) {
  const int E = 64;
  const std::vector<float> u = make_router_logits(3, 256, E, RoutingSkew::kUniform);
  const std::vector<float> s = make_router_logits(3, 256, E, RoutingSkew::kSkewed);
  ASSERT_EQ(u.size(), size_t(256 * E));
  // Skewed = uniform + a per-expert bonus: the same for every token, one expert gets +6.
  std::vector<float> bonus(E);
  for (int j = 0; j < E; ++j) bonus[j] = s[j] - u[j];
  EXPECT_NEAR(*std::max_element(bonus.begin(), bonus.end()), 6.0f, 1e-5f);
  for (int64_t t = 0; t < 256; ++t)
    for (int j = 0; j < E; ++j) ASSERT_NEAR(s[t * E + j] - u[t * E + j], bonus[j], 1e-5f);
  const std::vector<float> bias = make_correction_bias(3, E);
  for (float b : bias) EXPECT_LE(std::abs(b), 0.1f);
  EXPECT_EQ(make_hidden(3, 4, 100), make_hidden(3, 4, 100));
  EXPECT_NE(make_hidden(3, 4, 100), make_hidden(4, 4, 100));
  const std::vector<uint16_t> h = make_hidden(3, 1, 4096);
  int nonzero = 0;
  for (uint16_t v : h) nonzero += bf16_to_float(v) != 0.0f;
  EXPECT_GT(nonzero, 4000);
}

}  // namespace
}  // namespace servekit
