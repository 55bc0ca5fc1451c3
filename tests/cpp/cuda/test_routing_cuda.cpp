// launch_route against route_cpu. Both sides run the same separately rounded float operations
// (core/exact_math.h: no FMA, no library transcendental) in the same order, so the ids AND the
// weights must be equal bit for bit: the tolerance is zero, not an ulp. bf16 logits are
// widened exactly on both sides (the host through bf16_to_float).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/gpu_test_util.h"
#include "cuda/moe_plan.h"
#include "cuda/routing_test_util.h"

namespace servekit {
namespace {

using testing::DeviceArray;

constexpr RoutingMethod kMethods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                      RoutingMethod::kDeepSeekV3,  RoutingMethod::kLlama4,
                                      RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax};

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Routes on the GPU; logits are f32 values, sent as f32 or rounded to bf16.
Routed route_gpu(const RoutingConfig& cfg, const std::vector<float>& logits, DType dtype,
                 const std::vector<float>& bias, int64_t tokens) {
  const int64_t n = tokens * cfg.top_k;
  DeviceArray<int32_t> ids(n);
  DeviceArray<float> weights(n), d_bias(bias);
  ids.poison(0xFF);      // -1: not an expert id
  weights.poison(0xFF);  // NaN bits: never equal to a computed weight
  const float* bias_ptr = bias.empty() ? nullptr : d_bias.get();
  if (dtype == DType::kF32) {
    DeviceArray<float> d_logits(logits);
    cuda::launch_route(cfg, d_logits.get(), dtype, bias_ptr, tokens, ids.get(), weights.get(),
                       nullptr);
    SERVEKIT_CUDA_CHECK(cudaGetLastError());
    SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    std::vector<uint16_t> raw(logits.size());
    std::transform(logits.begin(), logits.end(), raw.begin(), float_to_bf16);
    DeviceArray<uint16_t> d_logits(raw);
    cuda::launch_route(cfg, d_logits.get(), dtype, bias_ptr, tokens, ids.get(), weights.get(),
                       nullptr);
    SERVEKIT_CUDA_CHECK(cudaGetLastError());
    SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  return {ids.download(), weights.download()};
}

Routed route_host(const RoutingConfig& cfg, std::vector<float> logits, DType dtype,
                  const std::vector<float>& bias, int64_t tokens) {
  if (dtype == DType::kBF16)
    for (float& x : logits) x = bf16_to_float(float_to_bf16(x));
  Routed r{std::vector<int32_t>(tokens * cfg.top_k), std::vector<float>(tokens * cfg.top_k)};
  route_cpu(cfg, logits.data(), bias.empty() ? nullptr : bias.data(), tokens, r.ids.data(),
            r.weights.data());
  return r;
}

void expect_route_matches(const RoutingConfig& cfg, const std::vector<float>& logits,
                          const std::vector<float>& bias, int64_t tokens, DType dtype) {
  SCOPED_TRACE(::testing::Message()
               << routing_name(cfg.method) << " E=" << cfg.num_experts << " K=" << cfg.top_k
               << " groups=" << cfg.n_group << "/" << cfg.topk_group
               << " renorm=" << cfg.renormalize << " T=" << tokens << " " << dtype_name(dtype));
  const Routed want = route_host(cfg, logits, dtype, bias, tokens);
  const Routed got = route_gpu(cfg, logits, dtype, bias, tokens);
  int mismatches = 0;
  for (size_t i = 0; i < want.ids.size(); ++i) {
    if (got.ids[i] == want.ids[i] && bits_of(got.weights[i]) == bits_of(want.weights[i])) continue;
    if (++mismatches <= 5)
      ADD_FAILURE() << "token " << i / cfg.top_k << " slot " << i % cfg.top_k << ": id "
                    << got.ids[i] << " weight " << got.weights[i] << " (0x" << std::hex
                    << bits_of(got.weights[i]) << std::dec << "), want id " << want.ids[i]
                    << " weight " << want.weights[i] << " (0x" << std::hex
                    << bits_of(want.weights[i]) << std::dec << ")";
  }
  EXPECT_EQ(mismatches, 0);
}

std::vector<float> normal_logits(int64_t tokens, int experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(tokens * experts);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<float> random_bias(int experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  std::vector<float> v(experts);
  for (float& x : v) x = u(rng);
  return v;
}

// Group layouts of a DeepSeek-V3 sweep point: 8 groups keeping 4 (when E allows: the last
// stage needs topk_group * E / n_group >= K) and a single group.
std::vector<std::pair<int, int>> group_layouts(int experts, int top_k) {
  std::vector<std::pair<int, int>> out{{1, 1}};
  if (experts % 8 == 0 && 4 * (experts / 8) >= top_k) out.push_back({8, 4});
  return out;
}

TEST(RoutingCuda, EveryMethodShapeAndDtype) {
  SERVEKIT_REQUIRE_GPU();
  uint32_t seed = 1;
  for (RoutingMethod m : kMethods)
    for (int experts : {8, 16, 128, 256, 257, 384, 512})
      for (int top_k : {1, 2, 4, 6, 8, 32}) {
        if (top_k > experts) continue;
        for (auto [n_group, topk_group] : group_layouts(experts, top_k)) {
          if (m != RoutingMethod::kDeepSeekV3 && n_group != 1) continue;
          RoutingConfig cfg = routing_test_config(m, experts, top_k, n_group, topk_group);
          const std::vector<float> bias =
              routing_uses_bias(m) ? random_bias(experts, seed) : std::vector<float>{};
          for (int64_t tokens : {1, 7}) {
            const std::vector<float> logits = normal_logits(tokens, experts, ++seed);
            for (DType dtype : {DType::kF32, DType::kBF16}) {
              cfg.renormalize = true;
              expect_route_matches(cfg, logits, bias, tokens, dtype);
              cfg.renormalize = false;
              expect_route_matches(cfg, logits, bias, tokens, dtype);
            }
          }
        }
      }
}

TEST(RoutingCuda, PresetsAt8192Tokens) {
  SERVEKIT_REQUIRE_GPU();
  struct Case {
    RoutingMethod m;
    int experts, top_k, n_group, topk_group;
    float scale;
  };
  const Case cases[] = {
      {RoutingMethod::kDeepSeekV3, 256, 8, 8, 4, 2.5f},    // deepseek-v3
      {RoutingMethod::kDeepSeekV3, 384, 8, 1, 1, 2.827f},  // kimi-k2
      {RoutingMethod::kSoftmaxTopK, 128, 8, 1, 1, 1.0f},   // qwen3
      {RoutingMethod::kSoftmaxTopK, 8, 2, 1, 1, 1.0f},     // mixtral
      {RoutingMethod::kTopKSoftmax, 128, 4, 1, 1, 1.0f},   // gpt-oss
      {RoutingMethod::kLlama4, 16, 1, 1, 1, 1.0f},
      {RoutingMethod::kSigmoidTopK, 257, 6, 1, 1, 1.0f},
      {RoutingMethod::kMiniMax, 512, 32, 1, 1, 1.0f},
      {RoutingMethod::kDeepSeekV3, 384, 8, 8, 4, 2.5f},   // groups of 48: the scan path
      {RoutingMethod::kDeepSeekV3, 512, 32, 8, 4, 1.0f},  // groups of 64: two rows each
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    RoutingConfig cfg = routing_test_config(c.m, c.experts, c.top_k, c.n_group, c.topk_group);
    cfg.routed_scaling_factor = c.scale;
    const std::vector<float> logits = normal_logits(8192, c.experts, ++seed);
    const std::vector<float> bias =
        routing_uses_bias(c.m) ? random_bias(c.experts, seed) : std::vector<float>{};
    for (DType dtype : {DType::kF32, DType::kBF16})
      expect_route_matches(cfg, logits, bias, 8192, dtype);
  }
}

TEST(RoutingCuda, TiesGoToTheLowerIndex) {
  SERVEKIT_REQUIRE_GPU();
  // Logits from a set of four values (plus both zeros): most experts tie with many others,
  // and DeepSeek group scores tie too. All-equal rows are the extreme case.
  std::mt19937 rng(7);
  const float levels[] = {-1.0f, -0.0f, 0.0f, 0.5f, 1.0f};
  std::uniform_int_distribution<int> pick(0, 4);
  for (RoutingMethod m : kMethods)
    for (int experts : {16, 256, 257}) {
      const int top_k = std::min(8, experts);
      std::vector<float> logits(64 * experts);
      for (float& x : logits) x = levels[pick(rng)];
      std::fill(logits.begin(), logits.begin() + experts, 0.25f);  // token 0: all equal
      for (auto [n_group, topk_group] : group_layouts(experts, top_k)) {
        if (m != RoutingMethod::kDeepSeekV3 && n_group != 1) continue;
        const RoutingConfig cfg = routing_test_config(m, experts, top_k, n_group, topk_group);
        // A bias of equal values keeps the ties among the biased scores.
        const std::vector<float> bias =
            routing_uses_bias(m) ? std::vector<float>(experts, 0.125f) : std::vector<float>{};
        for (DType dtype : {DType::kF32, DType::kBF16})
          expect_route_matches(cfg, logits, bias, 64, dtype);
      }
    }
}

TEST(RoutingCuda, NonFiniteAndExtremeLogits) {
  SERVEKIT_REQUIRE_GPU();
  // NaN reads as -inf; +-inf and logits below the sigmoid's underflow (-200: every selected
  // sigmoid is 0, renormalization falls back to 1/K) keep the weights finite or as documented.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int experts = 64;
  std::vector<float> logits = normal_logits(6, experts, 9);
  for (int e = 0; e < experts; ++e) {
    logits[0 * experts + e] = e % 3 == 0 ? nan : logits[e];  // NaNs among finite logits
    logits[1 * experts + e] = nan;                           // all NaN: picks of -inf
    logits[2 * experts + e] = e == 5 ? inf : logits[2 * experts + e];
    logits[3 * experts + e] = e % 2 ? inf : -inf;
    logits[4 * experts + e] = -200.0f;
    logits[5 * experts + e] = e % 7 == 0 ? -inf : 1e30f;
  }
  for (RoutingMethod m : kMethods) {
    RoutingConfig cfg = routing_test_config(m, experts, 4, m == RoutingMethod::kDeepSeekV3 ? 8 : 1,
                                            m == RoutingMethod::kDeepSeekV3 ? 2 : 1);
    const std::vector<float> bias =
        routing_uses_bias(m) ? random_bias(experts, 10) : std::vector<float>{};
    for (bool renorm : {true, false}) {
      cfg.renormalize = renorm;
      expect_route_matches(cfg, logits, bias, 6, DType::kF32);
    }
  }
}

TEST(RoutingCuda, RejectsOutOfRangeConfigs) {
  SERVEKIT_REQUIRE_GPU();
  DeviceArray<float> buf(1024 * 40);
  DeviceArray<int32_t> ids(1024);
  auto launch = [&](const RoutingConfig& cfg, DType dtype, const float* bias) {
    cuda::launch_route(cfg, buf.get(), dtype, bias, 2, ids.get(), buf.get(), nullptr);
  };
  EXPECT_THROW(
      launch(routing_test_config(RoutingMethod::kSoftmaxTopK, 513, 8), DType::kF32, nullptr),
      Error);
  EXPECT_THROW(
      launch(routing_test_config(RoutingMethod::kSoftmaxTopK, 512, 33), DType::kF32, nullptr),
      Error);
  EXPECT_THROW(
      launch(routing_test_config(RoutingMethod::kSoftmaxTopK, 64, 8), DType::kF16, nullptr), Error);
  EXPECT_THROW(launch(routing_test_config(RoutingMethod::kDeepSeekV3, 64, 8), DType::kF32, nullptr),
               Error);  // no bias
  EXPECT_THROW(
      launch(routing_test_config(RoutingMethod::kPrecomputed, 64, 8), DType::kF32, nullptr), Error);
  try {
    launch(routing_test_config(RoutingMethod::kSoftmaxTopK, 600, 8), DType::kF32, nullptr);
    ADD_FAILURE() << "num_experts=600 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("600"), std::string::npos) << e.what();
  }
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

// Not a benchmark (bench/ has those): a ceiling that catches a serial or badly occupied
// kernel. deepseek-v3 routing of 8192 tokens is a few microseconds of sigmoid and selection
// work spread over all SMs; 50 us would mean something is badly wrong.
TEST(RoutingCuda, DeepSeekV3At8192TokensIsFast) {
  SERVEKIT_REQUIRE_GPU();
  RoutingConfig cfg = routing_test_config(RoutingMethod::kDeepSeekV3, 256, 8, 8, 4);
  const int64_t tokens = 8192;
  DeviceArray<float> logits(normal_logits(tokens, 256, 11)), bias(random_bias(256, 12));
  DeviceArray<int32_t> ids(tokens * 8);
  DeviceArray<float> weights(tokens * 8);
  cudaEvent_t start, stop;
  SERVEKIT_CUDA_CHECK(cudaEventCreate(&start));
  SERVEKIT_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> us;
  for (int rep = 0; rep < 40; ++rep) {
    SERVEKIT_CUDA_CHECK(cudaEventRecord(start));
    cuda::launch_route(cfg, logits.get(), DType::kF32, bias.get(), tokens, ids.get(), weights.get(),
                       nullptr);
    SERVEKIT_CUDA_CHECK(cudaEventRecord(stop));
    SERVEKIT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SERVEKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep >= 10) us.push_back(ms * 1000.0f);  // the first ones warm up
  }
  SERVEKIT_CUDA_CHECK(cudaEventDestroy(start));
  SERVEKIT_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  const float median = us[us.size() / 2];
  std::printf("deepseek-v3 routing, 8192 tokens, f32 logits: median %.1f us (events)\n", median);
  EXPECT_LT(median, 50.0f);
}

}  // namespace
}  // namespace servekit
