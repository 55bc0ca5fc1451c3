// The single-CTA routing + plan (PlanKernels::kOneCta) against the multi-CTA kernels
// (kMultiCta: launch_route, then the three plan passes, each tested against the host in
// test_routing_cuda / test_plan_cuda). Both are integer bookkeeping plus route_cpu's exact
// float order, so ids, weights (bit patterns) and every plan array must be EQUAL: no
// tolerance. The ids and weights are also checked against route_cpu directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/gpu_test_util.h"
#include "cuda/kernels/static/static_tasks.h"
#include "cuda/moe_plan.h"
#include "cuda/plan_test_util.h"
#include "cuda/routing_test_util.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit {
namespace {

using testing::DeviceArray;

// 0xA5A5A5A5: negative and not -1 as an id or row, a NaN as a weight.
constexpr uint8_t kPoison = 0xA5;

constexpr RoutingMethod kMethods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                      RoutingMethod::kDeepSeekV3,  RoutingMethod::kLlama4,
                                      RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax};

struct Layout {  // expert parallelism: this rank's routed experts, and the shared ones
  int offset = 0, local = 0, shared = 0;
};

struct Result {
  std::vector<int32_t> ids;
  std::vector<uint32_t> weight_bits;
  std::vector<int32_t> group_offsets, row_token, row_group, token_slot_row;
};

// Runs the GPU path `kernels` with every output poisoned; buffers sized for max_tokens.
// logits: [T, E] f32 values, sent as f32 or as their bf16 bits. ids: for kPrecomputed only.
Result run_gpu(const RoutingConfig& cfg, const std::vector<float>& logits, DType dtype,
               const std::vector<float>& bias, const std::vector<int32_t>& given_ids,
               int64_t tokens, int64_t max_tokens, const Layout& l, cuda::PlanKernels kernels) {
  const int k = cfg.top_k, groups = l.local + l.shared;
  const int64_t capacity = cuda::plan_capacity_rows(max_tokens, k, l.shared);
  DeviceArray<int32_t> ids(max_tokens * k), offsets(groups + 1), row_token(capacity),
      row_group(capacity), slot_row(max_tokens * (k + l.shared));
  DeviceArray<float> weights(max_tokens * k), d_bias(bias);
  DeviceArray<uint8_t> scratch(cuda::plan_scratch_bytes(max_tokens, k, groups));
  for (auto* a : {&ids, &offsets, &row_token, &row_group, &slot_row}) a->poison(kPoison);
  weights.poison(kPoison);
  scratch.poison(kPoison);
  const cuda::PlanBuffers plan =
      testing::plan_buffers(groups, offsets, row_token, row_group, slot_row, scratch);

  if (cfg.method == RoutingMethod::kPrecomputed) {
    ids.upload(given_ids);
    cuda::launch_build_plan(ids.get(), tokens, k, l.offset, l.local, l.shared, plan, nullptr,
                            kernels);
  } else {
    std::vector<uint16_t> raw(logits.size());
    std::transform(logits.begin(), logits.end(), raw.begin(), float_to_bf16);
    DeviceArray<float> logits_f32(logits);
    DeviceArray<uint16_t> logits_bf16(raw);
    const void* d_logits = dtype == DType::kF32 ? static_cast<const void*>(logits_f32.get())
                                                : static_cast<const void*>(logits_bf16.get());
    cuda::launch_route_and_plan(cfg, d_logits, dtype, bias.empty() ? nullptr : d_bias.get(), tokens,
                                ids.get(), weights.get(), l.offset, l.local, l.shared, plan,
                                nullptr, kernels);
  }
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());

  Result r;
  r.ids = ids.download(tokens * k);
  const std::vector<float> w = weights.download(tokens * k);
  r.weight_bits.resize(w.size());
  std::memcpy(r.weight_bits.data(), w.data(), w.size() * sizeof(float));
  r.group_offsets = offsets.download();
  // A wrong total must fail the comparison, not read past the buffers.
  const int64_t rows = std::clamp<int64_t>(r.group_offsets[groups], 0, capacity);
  r.row_token = row_token.download(rows);
  r.row_group = row_group.download(rows);
  r.token_slot_row = slot_row.download(tokens * (k + l.shared));
  return r;
}

void expect_paths_agree(const RoutingConfig& cfg, const std::vector<float>& logits, DType dtype,
                        const std::vector<float>& bias, const std::vector<int32_t>& given_ids,
                        int64_t tokens, const Layout& l, int64_t max_tokens = -1) {
  SCOPED_TRACE(::testing::Message()
               << routing_name(cfg.method) << " E=" << cfg.num_experts << " K=" << cfg.top_k
               << " groups=" << cfg.n_group << "/" << cfg.topk_group
               << " renorm=" << cfg.renormalize << " T=" << tokens << " " << dtype_name(dtype)
               << " local=[" << l.offset << ", +" << l.local << ") S=" << l.shared);
  if (max_tokens < 0) max_tokens = tokens;
  const Result one = run_gpu(cfg, logits, dtype, bias, given_ids, tokens, max_tokens, l,
                             cuda::PlanKernels::kOneCta);
  const Result multi = run_gpu(cfg, logits, dtype, bias, given_ids, tokens, max_tokens, l,
                               cuda::PlanKernels::kMultiCta);
  if (cfg.method != RoutingMethod::kPrecomputed) {
    std::vector<float> host_logits = logits;
    if (dtype == DType::kBF16)
      for (float& x : host_logits) x = bf16_to_float(float_to_bf16(x));
    std::vector<int32_t> want_ids(tokens * cfg.top_k);
    std::vector<float> want_w(tokens * cfg.top_k);
    route_cpu(cfg, host_logits.data(), bias.empty() ? nullptr : bias.data(), tokens,
              want_ids.data(), want_w.data());
    std::vector<uint32_t> want_bits(want_w.size());
    std::memcpy(want_bits.data(), want_w.data(), want_w.size() * sizeof(float));
    ASSERT_EQ(one.ids, want_ids);
    ASSERT_EQ(one.weight_bits, want_bits);
    ASSERT_EQ(multi.ids, want_ids);
    ASSERT_EQ(multi.weight_bits, want_bits);
  }
  // The total of a skewed or EP-local plan is not every row: check it means something.
  ASSERT_GE(one.group_offsets.back(), static_cast<int32_t>(tokens * l.shared));
  ASSERT_EQ(one.group_offsets, multi.group_offsets);
  ASSERT_EQ(one.row_token, multi.row_token);
  ASSERT_EQ(one.row_group, multi.row_group);
  ASSERT_EQ(one.token_slot_row, multi.token_slot_row);
}

std::vector<float> normal_values(int64_t n, float stddev, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Layouts: all experts local; rank 1 of 4 (a quarter, odd sizes rounded); the top 3/4 with
// shared experts.
std::vector<Layout> layouts(int experts) {
  const int quarter = std::max(1, experts / 4);
  return {{0, experts, 0}, {quarter, quarter, 1}, {experts / 4, experts - experts / 4, 3}};
}

TEST(RoutePlanCuda, OneCtaEqualsMultiCtaForEveryMethod) {
  SERVEKIT_REQUIRE_GPU();
  uint32_t seed = 1;
  for (RoutingMethod m : kMethods)
    for (int experts : {8, 60, 128, 256, 257, 384, 512})
      for (int top_k : {1, 6, 8, 32}) {
        if (top_k > experts) continue;
        std::vector<std::pair<int, int>> group_layouts{{1, 1}};
        if (m == RoutingMethod::kDeepSeekV3 && experts % 8 == 0 && 4 * (experts / 8) >= top_k)
          group_layouts.push_back({8, 4});
        for (auto [n_group, topk_group] : group_layouts) {
          RoutingConfig cfg = routing_test_config(m, experts, top_k, n_group, topk_group);
          const std::vector<float> bias =
              routing_uses_bias(m) ? normal_values(experts, 0.05f, ++seed) : std::vector<float>{};
          // 1 and 8: decode; 32: a warp per token; 45: two tokens on some warps. For the biased
          // methods the one-CTA kernel routes in two steps (one_cta_route_split) up to 128
          // (token, 32-expert row) pairs: 1 and 8 tokens for every E, 16 on both sides of it,
          // 32 for E <= 128 only.
          for (int64_t tokens : {1, 8, 16, 32, 45}) {
            const std::vector<float> logits = normal_values(tokens * experts, 2.0f, ++seed);
            const DType dtype = seed % 2 ? DType::kF32 : DType::kBF16;
            cfg.renormalize = seed % 3 != 0;
            for (const Layout& l : layouts(experts))
              expect_paths_agree(cfg, logits, dtype, bias, {}, tokens, l);
          }
        }
      }
}

// The one-CTA kernel lets the next kernel launch after its routing (StaticTaskBuild::
// late_trigger, the default) or, under SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=1, at its start. The
// trigger only moves the dependent launch: both settings must give the same exact results.
TEST(RoutePlanCuda, EarlyAndLateTriggerGiveTheSameResults) {
  SERVEKIT_REQUIRE_GPU();
  constexpr const char* kEnv = "SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER";
  uint32_t seed = 500;
  for (const char* early : {"1", "0"}) {
    const testing::ScopedEnv trigger(kEnv, early);
    SCOPED_TRACE(::testing::Message() << kEnv << "=" << early);
    for (auto [m, experts] : {std::pair{RoutingMethod::kSoftmaxTopK, 128},
                              std::pair{RoutingMethod::kDeepSeekV3, 384}}) {
      RoutingConfig cfg = routing_test_config(m, experts, 8, 1, 1);
      const std::vector<float> bias =
          routing_uses_bias(m) ? normal_values(experts, 0.05f, ++seed) : std::vector<float>{};
      for (int64_t tokens : {1, 8, 32}) {
        const std::vector<float> logits = normal_values(tokens * experts, 2.0f, ++seed);
        for (const Layout& l : layouts(experts))
          expect_paths_agree(cfg, logits, DType::kF32, bias, {}, tokens, l);
      }
    }
  }
}

TEST(RoutePlanCuda, SkewedRoutingAndLargerCapacity) {
  SERVEKIT_REQUIRE_GPU();
  // Every token prefers experts 3, 4 and 5 by a wide margin: rows pile onto three groups.
  for (RoutingMethod m : {RoutingMethod::kSoftmaxTopK, RoutingMethod::kDeepSeekV3}) {
    const int experts = 256, top_k = 8;
    RoutingConfig cfg =
        routing_test_config(m, experts, top_k, m == RoutingMethod::kDeepSeekV3 ? 8 : 1,
                            m == RoutingMethod::kDeepSeekV3 ? 4 : 1);
    std::vector<float> logits = normal_values(29 * experts, 1.0f, 77);
    for (int t = 0; t < 29; ++t)
      for (int e = 3; e <= 5; ++e) logits[t * experts + e] = 12.0f + static_cast<float>(e);
    const std::vector<float> bias =
        routing_uses_bias(m) ? normal_values(experts, 0.05f, 78) : std::vector<float>{};
    for (const Layout& l : {Layout{0, 256, 1}, Layout{4, 60, 0}})
      expect_paths_agree(cfg, logits, DType::kF32, bias, {}, 29, l, 1000);
  }
}

TEST(RoutePlanCuda, PrecomputedIdsOneCtaEqualsMultiCta) {
  SERVEKIT_REQUIRE_GPU();
  RoutingConfig cfg;
  cfg.method = RoutingMethod::kPrecomputed;
  std::mt19937 rng(9);
  // Sizes around one CTA's 1024-entry tile, K up to 32, E_local up to 512, duplicate ids,
  // ids outside the local range and INT_MIN / INT_MAX.
  for (int64_t tokens : {1, 31, 32, 33, 257, 1000}) {
    for (int top_k : {1, 5, 8, 32}) {
      for (const Layout& l :
           {Layout{0, 512, 0}, Layout{100, 157, 2}, Layout{7, 3, 1}, Layout{600, 0, 1}}) {
        cfg.top_k = top_k;
        std::uniform_int_distribution<int32_t> pick(-3, 520);
        std::vector<int32_t> ids(tokens * top_k);
        for (auto& id : ids) id = pick(rng);
        ids[0] = INT_MIN;
        if (ids.size() > 1) ids[1] = INT_MAX;
        // Skew: a third of the entries to one expert of the local range.
        for (size_t i = 2; i < ids.size(); i += 3) ids[i] = l.offset + l.local / 2;
        expect_paths_agree(cfg, {}, DType::kF32, {}, ids, tokens, l);
      }
    }
  }
}

// The one-CTA launch captured in a CUDA graph (global mode: no unsafe call may run while
// capturing), with more than 48 KiB of shared memory (E = 512 DeepSeek-V3, 32 tokens: the
// opt-in happens during the capture), replays to the eager result.
TEST(RoutePlanCuda, OneCtaLaunchIsGraphCapturable) {
  SERVEKIT_REQUIRE_GPU();
  const int experts = 512, top_k = 8, tokens = 32, shared = 1;
  const RoutingConfig cfg = routing_test_config(RoutingMethod::kDeepSeekV3, experts, top_k, 8, 4);
  const std::vector<float> logits = normal_values(tokens * experts, 2.0f, 11);
  const std::vector<float> bias = normal_values(experts, 0.05f, 12);
  const Layout l{0, experts, shared};
  const Result eager =
      run_gpu(cfg, logits, DType::kF32, bias, {}, tokens, tokens, l, cuda::PlanKernels::kMultiCta);

  const int64_t capacity = cuda::plan_capacity_rows(tokens, top_k, shared);
  DeviceArray<float> d_logits(logits), d_bias(bias), weights(tokens * top_k);
  DeviceArray<int32_t> ids(tokens * top_k), offsets(experts + shared + 1), row_token(capacity),
      row_group(capacity), slot_row(tokens * (top_k + shared));
  DeviceArray<uint8_t> scratch(cuda::plan_scratch_bytes(tokens, top_k, experts + shared));
  cuda::PlanBuffers plan;
  plan.num_groups = experts + shared;
  plan.group_offsets = offsets.get();
  plan.row_token = row_token.get();
  plan.row_group = row_group.get();
  plan.token_slot_row = slot_row.get();
  plan.scratch = scratch.get();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  cuda::launch_route_and_plan(cfg, d_logits.get(), DType::kF32, d_bias.get(), tokens, ids.get(),
                              weights.get(), 0, experts, shared, plan, stream,
                              cuda::PlanKernels::kOneCta);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    for (auto* a : {&ids, &offsets, &row_token, &row_group, &slot_row}) a->poison(kPoison);
    weights.poison(kPoison);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    SCOPED_TRACE(::testing::Message() << "replay " << replay);
    EXPECT_EQ(ids.download(), eager.ids);
    const std::vector<float> w = weights.download();
    std::vector<uint32_t> bits(w.size());
    std::memcpy(bits.data(), w.data(), w.size() * sizeof(float));
    EXPECT_EQ(bits, eager.weight_bits);
    EXPECT_EQ(offsets.download(), eager.group_offsets);
    EXPECT_EQ(row_token.download(eager.row_token.size()), eager.row_token);
    EXPECT_EQ(row_group.download(eager.row_group.size()), eager.row_group);
    EXPECT_EQ(slot_row.download(), eager.token_slot_row);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// The static path's input preparation done by the one-CTA launch's extra CTAs
// (StaticTaskBuild::input): x [T, H] bf16 quantized in 1x128 blocks and the |x| maxima, one
// slot per CTA. Exact: the codes are quant.h's (e4m3(x / s), s = amax / 448, 1 if 0) as f16
// bits, the scales equal quantize_act_fp8_block128's, and the slots' maximum is max |x|.
struct InputPrepCheck {
  int64_t hidden = 0;
  int ctas = 0;
  std::vector<uint16_t> x;
  DeviceArray<uint16_t> d_x, xq;
  DeviceArray<float> xs;
  DeviceArray<uint32_t> amax;

  InputPrepCheck(int64_t tokens, int64_t h, int c, uint32_t seed)
      : hidden(h),
        ctas(c),
        x(bf16_values(tokens, h, seed)),
        d_x(x),
        xq(x.size()),
        xs(tokens * (h / 128)),
        amax(c) {}
  // Normal values, and in each row's second block a block of zeros but for a -0.
  static std::vector<uint16_t> bf16_values(int64_t tokens, int64_t h, uint32_t seed) {
    const std::vector<float> v = normal_values(tokens * h, 1.5f, seed);
    std::vector<uint16_t> x(v.size());
    for (size_t i = 0; i < v.size(); ++i) x[i] = float_to_bf16(v[i]);
    if (h >= 256)
      for (int64_t t = 0; t < tokens; ++t) {
        std::fill(x.begin() + t * h + 128, x.begin() + t * h + 256, uint16_t{0});
        x[t * h + 130] = 0x8000;
      }
    return x;
  }
  cuda::static_moe::StaticInputPrep prep() {
    xq.poison(kPoison);
    xs.poison(kPoison);
    amax.poison(kPoison);
    cuda::static_moe::StaticInputPrep q;
    q.x = d_x.get();
    q.x_elems = static_cast<int64_t>(x.size());
    q.hidden = hidden;
    q.amax_slots = amax.get();
    q.xq = xq.get();
    q.xs = xs.get();
    q.ctas = ctas;
    return q;
  }
  void expect_done() {
    const int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    std::vector<float> xf(x.size());
    float m = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      xf[i] = bf16_to_float(x[i]);
      m = std::max(m, std::fabs(xf[i]));
    }
    std::vector<uint8_t> codes(x.size());
    std::vector<float> scales(tokens * (hidden / 128));
    quantize_act_fp8_block128(xf.data(), tokens, hidden, codes.data(), scales.data());
    const std::vector<uint16_t> got_q = xq.download();
    const std::vector<float> got_s = xs.download();
    int64_t bad_q = 0, bad_s = 0;
    for (size_t i = 0; i < codes.size(); ++i)
      bad_q += got_q[i] != float_to_f16(e4m3_to_float(codes[i]));
    for (size_t i = 0; i < scales.size(); ++i) bad_s += std::memcmp(&got_s[i], &scales[i], 4) != 0;
    EXPECT_EQ(bad_q, 0) << "of " << codes.size() << " codes differ (or were not written)";
    EXPECT_EQ(bad_s, 0) << "of " << scales.size() << " scales differ (or were not written)";
    const std::vector<uint32_t> slots = amax.download();
    uint32_t want = 0, got = 0;
    std::memcpy(&want, &m, 4);
    for (uint32_t b : slots) {
      EXPECT_LE(b, 0x7F800000u) << "an amax slot was not written";
      got = std::max(got, b);
    }
    EXPECT_EQ(got, want);
  }
};

// The static path's task list built at the end of the one-CTA launch (static_tasks set) equals
// the serial planner's on the same plan, slot for slot; tasks past the count stay poisoned. The
// multi-CTA path builds nothing and says so. Sizes: decode, a full warp per token, skewed rows.
// Cases with input CTAs also prepare x for GEMM1 (InputPrepCheck); the multi-CTA path must not.
TEST(RoutePlanCuda, OneCtaBuildsTheStaticTaskList) {
  SERVEKIT_REQUIRE_GPU();
  struct Case {
    RoutingMethod method;
    int experts, top_k, n_group, topk_group;
    int64_t tokens;
    Layout layout;
    bool skew;
    int64_t hidden;  // of x for the input preparation, on input_ctas CTAs (0: none)
    int input_ctas;
    bool avoid_local = false;  // the local experts' logits at -20: no pick is local
  };
  // One token runs the routing warp's own plan and task build (one_token_plan_warp), also under
  // SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=0 the CTA-wide passes: both against the serial planner. Its
  // cases: the tables' whole-unit branch (E = 128, no shared: GEMM1's 256 units over 264 CTAs)
  // and uniform one (GEMM2's 448), K = 32 over E = 512 with two shared experts, an EP range
  // holding none of the picks (only the shared task), and the deepseek-v3 shape with CTA 1
  // preparing the input.
  const Case cases[] = {
      {RoutingMethod::kDeepSeekV3, 256, 8, 8, 4, 1, {0, 256, 1}, false, 7168, 1},
      {RoutingMethod::kDeepSeekV3, 256, 8, 8, 4, 32, {0, 256, 1}, true, 7168, 14},
      {RoutingMethod::kSoftmaxTopK, 128, 8, 1, 1, 8, {0, 128, 0}, false, 0, 0},
      {RoutingMethod::kSoftmaxTopK, 384, 8, 1, 1, 19, {96, 96, 2}, true, 384, 3},
      {RoutingMethod::kSoftmaxTopK, 128, 8, 1, 1, 1, {0, 128, 0}, false, 0, 0},
      {RoutingMethod::kTopKSoftmax, 512, 32, 1, 1, 1, {0, 512, 2}, false, 0, 0},
      {RoutingMethod::kSoftmaxTopK, 128, 8, 1, 1, 1, {32, 40, 1}, false, 0, 0, true},
      {RoutingMethod::kSoftmaxTopK, 384, 8, 1, 1, 1, {96, 96, 2}, true, 0, 0},
  };
  uint32_t seed = 500;
  for (const Case& c : cases)
    for (const char* warp_path : {"1", "0"}) {
      if (c.tokens != 1 && warp_path[0] == '0') continue;  // the switch acts at one token only
      const testing::ScopedEnv one_token("SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP", warp_path);
      SCOPED_TRACE(::testing::Message()
                   << routing_name(c.method) << " E=" << c.experts << " K=" << c.top_k
                   << " T=" << c.tokens << " local=" << c.layout.offset << "+" << c.layout.local
                   << " shared=" << c.layout.shared << " skew=" << c.skew
                   << " one-token warp=" << warp_path);
      const RoutingConfig cfg =
          routing_test_config(c.method, c.experts, c.top_k, c.n_group, c.topk_group);
      std::vector<float> logits = normal_values(c.tokens * c.experts, 2.0f, ++seed);
      if (c.skew)  // every token's favourite: expert 100 (local in every layout above)
        for (int64_t t = 0; t < c.tokens; ++t) logits[t * c.experts + 100] = 20.0f;
      if (c.avoid_local)
        for (int64_t t = 0; t < c.tokens; ++t)
          for (int e = 0; e < c.layout.local; ++e)
            logits[t * c.experts + c.layout.offset + e] = -20.0f;
      const std::vector<float> bias = routing_uses_bias(c.method)
                                          ? normal_values(c.experts, 0.05f, ++seed)
                                          : std::vector<float>{};
      const Layout& l = c.layout;
      const int groups = l.local + l.shared;
      const int64_t capacity = cuda::plan_capacity_rows(c.tokens, c.top_k, l.shared);
      DeviceArray<float> d_logits(logits), d_bias(bias), weights(c.tokens * c.top_k);
      DeviceArray<int32_t> ids(c.tokens * c.top_k), offsets(groups + 1), row_token(capacity),
          row_group(capacity), slot_row(c.tokens * (c.top_k + l.shared)), num_tasks(1);
      DeviceArray<uint8_t> scratch(cuda::plan_scratch_bytes(c.tokens, c.top_k, groups));
      const int task_capacity = static_cast<int>(groups + capacity / 32 + 1);
      DeviceArray<cuda::static_moe::StaticTask> tasks(task_capacity);
      const cuda::PlanBuffers plan =
          testing::plan_buffers(groups, offsets, row_token, row_group, slot_row, scratch);
      namespace sm = cuda::static_moe;
      // The CTA partition tables of two GEMMs shaped like deepseek-v3's (static_tasks.h).
      DeviceArray<int32_t> begins(2 * sm::kStaticPartitionStride);
      sm::StaticTaskBuild build;
      build.tasks = tasks.get();
      build.num_tasks = num_tasks.get();
      build.capacity = task_capacity;
      build.partition.begins = begins.get();
      build.partition.grid = 264;
      build.partition.row_cost = 5;
      build.partition.kblocks[0] = 112, build.partition.kblocks[1] = 32;
      build.partition.ngroups[0] = 32, build.partition.ngroups[1] = 56;
      std::optional<InputPrepCheck> input;
      if (c.input_ctas > 0) input.emplace(c.tokens, c.hidden, c.input_ctas, ++seed);
      std::vector<int32_t> one_cta_offsets;  // the one-CTA run's, which comes first
      for (cuda::PlanKernels kernels : {cuda::PlanKernels::kOneCta, cuda::PlanKernels::kMultiCta}) {
        tasks.poison(kPoison);
        num_tasks.poison(kPoison);
        begins.poison(kPoison);
        if (input) build.input = input->prep();
        const bool built = cuda::launch_route_and_plan(
            cfg, d_logits.get(), DType::kF32, bias.empty() ? nullptr : d_bias.get(), c.tokens,
            ids.get(), weights.get(), l.offset, l.local, l.shared, plan, nullptr, kernels, &build);
        SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<cuda::static_moe::StaticTask> got = tasks.download();
        if (kernels == cuda::PlanKernels::kMultiCta) {
          EXPECT_FALSE(built);
          EXPECT_EQ(offsets.download(), one_cta_offsets)
              << "group offsets differ from the one-CTA run's";
          std::vector<uint8_t> bytes(got.size() * sizeof(got[0]));
          std::memcpy(bytes.data(), got.data(), bytes.size());
          EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) {
            return b == kPoison;
          })) << "the multi-CTA path wrote tasks";
          const std::vector<int32_t> tables = begins.download();
          std::vector<uint8_t> table_bytes(tables.size() * sizeof(int32_t));
          std::memcpy(table_bytes.data(), tables.data(), table_bytes.size());
          EXPECT_TRUE(std::all_of(table_bytes.begin(), table_bytes.end(), [](uint8_t b) {
            return b == kPoison;
          })) << "the multi-CTA path wrote partition tables";
          if (input) {
            const std::vector<float> xs = input->xs.download();
            std::vector<uint8_t> xs_bytes(xs.size() * sizeof(float));
            std::memcpy(xs_bytes.data(), xs.data(), xs_bytes.size());
            EXPECT_TRUE(std::all_of(xs_bytes.begin(), xs_bytes.end(), [](uint8_t b) {
              return b == kPoison;
            })) << "the multi-CTA path prepared the input";
          }
          continue;
        }
        ASSERT_TRUE(built);
        if (input) input->expect_done();
        const std::vector<int32_t> off = offsets.download();
        one_cta_offsets = off;
        std::vector<cuda::static_moe::StaticTask> want(task_capacity);
        const int n = cuda::static_moe::static_plan_tasks_serial(off.data(), groups, want.data(),
                                                                 task_capacity);
        ASSERT_LE(n, task_capacity);
        ASSERT_EQ(num_tasks.download()[0], n);
        ASSERT_GE(n, 1);
        for (int i = 0; i < task_capacity; ++i) {
          SCOPED_TRACE(::testing::Message() << "task " << i << " of " << n);
          if (i < n) {
            EXPECT_EQ(got[i].group, want[i].group);
            EXPECT_EQ(got[i].row_begin, want[i].row_begin);
            EXPECT_EQ(got[i].rows, want[i].rows);
          } else {
            uint8_t first = 0;
            std::memcpy(&first, &got[i], 1);
            EXPECT_EQ(first, kPoison) << "a task past the count was written";
          }
        }
        // The partition tables equal the serial build's, entry for entry (uniform at one token,
        // weighted where the tasks' rows differ); entries past the grid stay poisoned.
        std::vector<int32_t> want_tables(2 * sm::kStaticPartitionStride, 0);
        sm::static_partition_tables_serial(off.data(), groups, task_capacity, build.partition,
                                           want_tables.data());
        const std::vector<int32_t> tables = begins.download();
        int32_t poison_word = 0;
        std::memset(&poison_word, kPoison, sizeof(poison_word));
        for (int w = 0; w < 2; ++w)
          for (int b = 0; b < sm::kStaticPartitionStride; ++b) {
            const size_t i = static_cast<size_t>(w * sm::kStaticPartitionStride + b);
            if (b <= build.partition.grid)
              ASSERT_EQ(tables[i], want_tables[i]) << "GEMM " << w + 1 << " CTA " << b;
            else
              ASSERT_EQ(tables[i], poison_word) << "GEMM " << w + 1 << " entry " << b;
          }
      }
    }
}

TEST(RoutePlanCuda, NoTokens) {
  SERVEKIT_REQUIRE_GPU();
  RoutingConfig cfg = routing_test_config(RoutingMethod::kSoftmaxTopK, 64, 4, 1, 1);
  expect_paths_agree(cfg, {}, DType::kF32, {}, {}, 0, Layout{0, 64, 2}, 16);
}

}  // namespace
}  // namespace servekit
