// The CPU backend of the MoE layer against the fp64 reference (cpu/moe_reference.h): every
// quant variant x activation x routing method, and the special cases of moe.h. Tolerances are
// moe_tolerance(method), whose definition gives the reason for each value.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>
#include <tuple>

#include "moe_test_util.h"

namespace servekit {
namespace {

using test::error_vs_reference;
using test::Inputs;
using test::LayerCase;
using test::load_random_experts;
using test::make_config;
using test::make_inputs;
using test::run_poisoned;

constexpr Activation kActivations[] = {Activation::kSwiGLU, Activation::kGeGLU,
                                       Activation::kSwiGLUOAI, Activation::kReLU2};
constexpr RoutingMethod kRoutings[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                       RoutingMethod::kDeepSeekV3,  RoutingMethod::kLlama4,
                                       RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax,
                                       RoutingMethod::kPrecomputed};

using SweepParam = std::tuple<QuantMethod, Activation, RoutingMethod>;
class MoESweep : public ::testing::TestWithParam<SweepParam> {};

// Odd token counts (1, 7, 33), one shared expert; biases on every other routing method and
// always with swiglu_oai (gpt-oss); precomputed routing includes -1 ids.
TEST_P(MoESweep, MatchesReference) {
  const auto [quant, activation, routing] = GetParam();
  LayerCase c;
  c.quant.method = quant;
  c.activation = activation;
  c.routing = routing;
  c.bias = activation == Activation::kSwiGLUOAI || static_cast<int>(routing) % 2 == 1;
  MoELayer layer(make_config(c));
  load_random_experts(layer, 11, c.bias);
  for (int64_t tokens : {1, 7, 33}) {
    Inputs in = make_inputs(layer.config(), tokens, 100 + static_cast<uint64_t>(tokens));
    EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(quant)) << "tokens=" << tokens;
  }
}

std::string sweep_name(const ::testing::TestParamInfo<SweepParam>& info) {
  std::string s = std::string(quant_name(std::get<0>(info.param))) + "_" +
                  std::string(activation_name(std::get<1>(info.param))) + "_" +
                  std::string(routing_name(std::get<2>(info.param)));
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllVariants, MoESweep,
                         ::testing::Combine(::testing::ValuesIn(all_quant_methods()),
                                            ::testing::ValuesIn(kActivations),
                                            ::testing::ValuesIn(kRoutings)),
                         sweep_name);

// The CPU backend keeps no device copy of the weights (device_weight_bytes is about device
// memory); the CUDA backend's counts are checked by MoECuda.PathDecidesTheWeightCopies.
TEST(MoELayer, CpuLayerHoldsNoDeviceWeights) {
  LayerCase c;
  MoELayer layer(make_config(c));
  EXPECT_EQ(layer.device_weight_bytes(), 0u);
  load_random_experts(layer, 5, false);
  EXPECT_EQ(layer.device_weight_bytes(), 0u);
}

// MoELayer::kernels names what a forward runs: "cpu" on the CPU backend; tokens outside
// [1, max_num_tokens] are an error, as for forward. (The CUDA backend's descriptions are checked
// by MoECuda.SwapTileMatchesReference.)
TEST(MoELayer, KernelsNamesWhatAForwardRuns) {
  LayerCase c;
  MoELayer layer(make_config(c));
  const int64_t max_tokens = layer.config().exec.max_num_tokens;
  EXPECT_EQ(layer.kernels(1), "cpu");
  EXPECT_EQ(layer.kernels(max_tokens), "cpu");
  EXPECT_THROW(layer.kernels(0), Error);
  EXPECT_THROW(layer.kernels(max_tokens + 1), Error);
}

TEST(MoELayer, Int4GroupSizes) {
  for (int group : {32, 64, 128}) {
    LayerCase c;
    c.quant = {QuantMethod::kInt4W4A16, group};
    MoELayer layer(make_config(c));
    load_random_experts(layer, 5, false);
    Inputs in = make_inputs(layer.config(), 7, 9);
    EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(c.quant.method)) << "group=" << group;
  }
}

TEST(MoELayer, NoSharedAndTwoSharedExperts) {
  for (int shared : {0, 2}) {
    LayerCase c;
    c.num_shared = shared;
    c.quant.method = QuantMethod::kFP8PerTensor;  // the intermediate amax spans shared rows too
    MoELayer layer(make_config(c));
    load_random_experts(layer, 3, true);
    Inputs in = make_inputs(layer.config(), 33, 4);
    EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(c.quant.method)) << "S=" << shared;
  }
}

// An EP-local layer holds experts [4, 12) of 16: the reference restricted to that range matches,
// and the two ranks of a split layer add up to the whole layer.
TEST(MoELayer, ExpertParallelLocalRange) {
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8Block128}) {
    LayerCase c;
    c.quant.method = q;
    c.local_offset = 4;
    c.local_count = 8;
    MoELayer layer(make_config(c));
    load_random_experts(layer, 21, false);
    Inputs in = make_inputs(layer.config(), 33, 22);
    EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(q)) << quant_name(q);
  }

  LayerCase whole;
  whole.num_shared = 1;
  MoELayer full(make_config(whole));
  load_random_experts(full, 21, true);
  LayerCase rank0 = whole, rank1 = whole;
  rank0.local_count = 8;
  rank1.local_offset = 8;
  rank1.num_shared = 0;  // the shared expert lives on rank 0 only
  MoELayer layer0(make_config(rank0)), layer1(make_config(rank1));
  load_random_experts(layer0, 21, true);
  load_random_experts(layer1, 21, true);
  Inputs in = make_inputs(full.config(), 33, 23);
  const std::vector<float> out0 = run_poisoned(layer0, in), out1 = run_poisoned(layer1, in);
  const std::vector<double> ref = moe_reference(full, in.reference());
  std::vector<float> sum(out0.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = out0[i] + out1[i];
  // Two bf16 roundings (one per rank) instead of one.
  EXPECT_LT(relative_l2(sum.data(), ref.data(), static_cast<int64_t>(sum.size())),
            2 * moe_tolerance(QuantMethod::kBF16));
}

// Precomputed ids: -1 and ids outside the local range contribute nothing; a token whose every
// slot is empty gets exactly the shared experts' output (here: none, so zero).
TEST(MoELayer, PrecomputedIdsOutsideRangeContributeNothing) {
  LayerCase c;
  c.routing = RoutingMethod::kPrecomputed;
  c.num_shared = 0;
  c.local_offset = 0;
  c.local_count = 8;
  MoELayer layer(make_config(c));
  load_random_experts(layer, 31, false);
  Inputs in = make_inputs(layer.config(), 7, 32);
  for (int k = 0; k < c.top_k; ++k) in.ids[k] = k % 2 ? -1 : 8 + k;  // token 0: nothing local
  in.ids[c.top_k + 1] = 15;                                          // token 1: one remote
  const std::vector<float> out = run_poisoned(layer, in);
  for (int64_t h = 0; h < c.hidden; ++h) ASSERT_EQ(out[h], 0.0f) << "token 0, column " << h;
  const std::vector<double> ref = moe_reference(layer, in.reference());
  EXPECT_LT(relative_l2(out.data(), ref.data(), static_cast<int64_t>(out.size())),
            moe_tolerance(c.quant.method));
}

// All tokens to one expert: the largest per-expert row count the workspace must hold.
TEST(MoELayer, SkewedRoutingAllTokensToOneExpert) {
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8Block128, QuantMethod::kMXFP4W4A8}) {
    LayerCase c;
    c.quant.method = q;
    c.routing = RoutingMethod::kPrecomputed;
    c.top_k = 2;
    MoELayer layer(make_config(c));
    load_random_experts(layer, 41, false);
    Inputs in = make_inputs(layer.config(), c.max_tokens, 42);
    for (int64_t t = 0; t < in.tokens; ++t) {
      in.ids[t * 2] = 3;
      in.ids[t * 2 + 1] = t % 3 ? 3 : -1;  // the same expert twice is two separate terms
    }
    EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(q)) << quant_name(q);
  }
  LayerCase c;
  c.quant.method = QuantMethod::kFP8PerTensor;
  MoELayer layer(make_config(c));
  load_random_experts(layer, 43, false);
  Inputs in = make_inputs(layer.config(), 33, 44, RoutingSkew::kSkewed);
  EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(c.quant.method));
}

TEST(MoELayer, SwiGLUOAIWithBf16Biases) {
  LayerCase c;
  c.activation = Activation::kSwiGLUOAI;
  c.routing = RoutingMethod::kTopKSoftmax;
  c.quant.method = QuantMethod::kMXFP4W4A16;
  c.num_shared = 0;
  const MoEConfig cfg = make_config(c);
  MoELayer layer(cfg);
  for (int l = 0; l < c.num_experts; ++l) {
    HostExpert e = make_random_expert(cfg, 51, l, true);
    std::vector<uint16_t> b13(e.w13_bias.size()), b2(e.w2_bias.size());
    for (size_t i = 0; i < b13.size(); ++i) b13[i] = float_to_bf16(e.w13_bias[i]);
    for (size_t i = 0; i < b2.size(); ++i) b2[i] = float_to_bf16(e.w2_bias[i]);
    ExpertWeightsView v = e.view(cfg);
    v.w13_bias = TensorView::contiguous(b13.data(), DType::kBF16, {w13_rows(cfg)});
    v.w2_bias = TensorView::contiguous(b2.data(), DType::kBF16, {c.hidden});
    layer.load_expert(l, v);
    EXPECT_EQ(layer.prepared_expert(l)->w13_bias[5], bf16_to_float(b13[5]));
  }
  Inputs in = make_inputs(layer.config(), 33, 52);
  EXPECT_LT(error_vs_reference(layer, in), moe_tolerance(c.quant.method));
}

std::vector<uint16_t> forward_bits(MoELayer& layer, Inputs& in) {
  const int64_t H = layer.config().experts.hidden_size;
  std::vector<uint16_t> out(static_cast<size_t>(in.tokens * H), test::kPoisonBF16);
  layer.forward(in.view(layer.config()),
                TensorView::contiguous(out.data(), DType::kBF16, {in.tokens, H}));
  return out;
}

// Results do not depend on the thread count, nor on repeating the call.
TEST(MoELayer, BitwiseEqualAcrossThreadCounts) {
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8PerTensor, QuantMethod::kNVFP4W4A16}) {
    std::vector<std::vector<uint16_t>> outs;
    for (int threads : {1, 2, 3}) {
      LayerCase c;
      c.quant.method = q;
      c.threads = threads;
      c.bias = true;
      MoELayer layer(make_config(c));
      load_random_experts(layer, 61, true);
      Inputs in = make_inputs(layer.config(), 33, 62, RoutingSkew::kSkewed);
      outs.push_back(forward_bits(layer, in));
      EXPECT_EQ(forward_bits(layer, in), outs.back()) << "second call, threads=" << threads;
    }
    EXPECT_EQ(outs[0], outs[1]) << quant_name(q) << ": 1 vs 2 threads";
    EXPECT_EQ(outs[0], outs[2]) << quant_name(q) << ": 1 vs 3 threads";
  }
}

// bf16 router logits route exactly like the same values given in f32.
TEST(MoELayer, Bf16RouterLogits) {
  LayerCase c;
  c.routing = RoutingMethod::kDeepSeekV3;
  MoELayer layer(make_config(c));
  load_random_experts(layer, 71, false);
  Inputs in = make_inputs(layer.config(), 7, 72);
  std::vector<uint16_t> bits(in.logits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    bits[i] = float_to_bf16(in.logits[i]);
    in.logits[i] = bf16_to_float(bits[i]);
  }
  const std::vector<uint16_t> f32_out = forward_bits(layer, in);
  MoEInputs view = in.view(layer.config());
  view.router_logits = TensorView::contiguous(bits.data(), DType::kBF16, {7, c.num_experts});
  std::vector<uint16_t> out(f32_out.size(), test::kPoisonBF16);
  layer.forward(view, TensorView::contiguous(out.data(), DType::kBF16, {7, c.hidden}));
  EXPECT_EQ(out, f32_out);
}

// Stacked prepare_weights gives the same experts as one load_expert call per expert.
TEST(MoELayer, PrepareWeightsMatchesLoadExpert) {
  LayerCase c;
  c.num_experts = 8;
  c.top_k = 2;
  c.num_shared = 1;
  c.quant.method = QuantMethod::kFP8Block128;
  const MoEConfig cfg = make_config(c);
  MoELayer one_by_one(cfg), stacked(cfg);
  load_random_experts(one_by_one, 81, true);
  const int64_t R = w13_rows(cfg), H = c.hidden, I = c.intermediate;
  std::vector<uint16_t> w13, w2, sw13, sw2;
  std::vector<float> b13, b2, sb13, sb2;
  for (int e = 0; e <= c.num_experts; ++e) {
    const HostExpert x = make_random_expert(cfg, 81, e, true);
    const bool shared = e == c.num_experts;
    (shared ? sw13 : w13).insert((shared ? sw13 : w13).end(), x.w13.begin(), x.w13.end());
    (shared ? sw2 : w2).insert((shared ? sw2 : w2).end(), x.w2.begin(), x.w2.end());
    (shared ? sb13 : b13).insert((shared ? sb13 : b13).end(), x.w13_bias.begin(), x.w13_bias.end());
    (shared ? sb2 : b2).insert((shared ? sb2 : b2).end(), x.w2_bias.begin(), x.w2_bias.end());
  }
  const int64_t E = c.num_experts;
  MoEWeights w;
  w.w13 = TensorView::contiguous(w13.data(), DType::kBF16, {E, R, H});
  w.w2 = TensorView::contiguous(w2.data(), DType::kBF16, {E, H, I});
  w.w13_bias = TensorView::contiguous(b13.data(), DType::kF32, {E, R});
  w.w2_bias = TensorView::contiguous(b2.data(), DType::kF32, {E, H});
  w.shared_w13 = TensorView::contiguous(sw13.data(), DType::kBF16, {1, R, H});
  w.shared_w2 = TensorView::contiguous(sw2.data(), DType::kBF16, {1, H, I});
  w.shared_w13_bias = TensorView::contiguous(sb13.data(), DType::kF32, {1, R});
  w.shared_w2_bias = TensorView::contiguous(sb2.data(), DType::kF32, {1, H});
  stacked.prepare_weights(w);
  for (int e = 0; e <= c.num_experts; ++e) {
    const PreparedExpert* a = one_by_one.prepared_expert(e);
    const PreparedExpert* b = stacked.prepared_expert(e);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->w13.codes, b->w13.codes) << "expert " << e;
    EXPECT_EQ(a->w13.scales, b->w13.scales) << "expert " << e;
    EXPECT_EQ(a->w2.codes, b->w2.codes) << "expert " << e;
    EXPECT_EQ(a->w13_bias, b->w13_bias) << "expert " << e;
    EXPECT_EQ(a->w2_bias, b->w2_bias) << "expert " << e;
  }
  Inputs in = make_inputs(cfg, 7, 82);
  EXPECT_EQ(forward_bits(one_by_one, in), forward_bits(stacked, in));
}

// Canonical weights may be strided (e.g. rows padded in a larger checkpoint buffer).
TEST(MoELayer, LoadExpertAcceptsStridedWeights) {
  LayerCase c;
  c.quant.method = QuantMethod::kMXFP4W4A16;
  const MoEConfig cfg = make_config(c);
  MoELayer plain(cfg), strided(cfg);
  HostExpert x = make_random_expert(cfg, 95, 3, true);
  plain.load_expert(3, x.view(cfg));
  const int64_t R = w13_rows(cfg), H = c.hidden, pitch = H + 24;
  std::vector<uint16_t> padded(static_cast<size_t>(R * pitch), 0xFFFF);  // NaN padding
  for (int64_t r = 0; r < R; ++r)
    std::copy(x.w13.begin() + r * H, x.w13.begin() + (r + 1) * H, padded.begin() + r * pitch);
  ExpertWeightsView v = x.view(cfg);
  v.w13.data = padded.data();
  v.w13.strides[0] = pitch;
  strided.load_expert(3, v);
  EXPECT_EQ(plain.prepared_expert(3)->w13.codes, strided.prepared_expert(3)->w13.codes);
  EXPECT_EQ(plain.prepared_expert(3)->w13.scales, strided.prepared_expert(3)->w13.scales);
}

// The tolerance is tight enough to see real bugs: a layer missing its biases, or with gate and
// up swapped, fails against the reference of the correct layer.
TEST(MoELayer, ToleranceCatchesMissingBiasAndSwappedGateUp) {
  LayerCase c;
  c.quant.method = QuantMethod::kFP8Block128;
  const MoEConfig cfg = make_config(c);
  MoELayer good(cfg), no_bias(cfg), swapped(cfg);
  load_random_experts(good, 91, true);
  load_random_experts(no_bias, 91, false);
  const int64_t I = c.intermediate, H = c.hidden;
  for (int e = 0; e <= c.num_experts; ++e) {
    HostExpert x = make_random_expert(cfg, 91, e, true);
    std::vector<uint16_t> w13(x.w13.size());
    std::memcpy(w13.data(), x.w13.data() + I * H, I * H * sizeof(uint16_t));
    std::memcpy(w13.data() + I * H, x.w13.data(), I * H * sizeof(uint16_t));
    std::swap_ranges(x.w13_bias.begin(), x.w13_bias.begin() + I, x.w13_bias.begin() + I);
    x.w13 = w13;
    if (e < c.num_experts)
      swapped.load_expert(e, x.view(cfg));
    else
      swapped.load_shared_expert(0, x.view(cfg));
  }
  Inputs in = make_inputs(cfg, 33, 92);
  const std::vector<double> ref = moe_reference(good, in.reference());
  for (MoELayer* bad : {&no_bias, &swapped}) {
    const std::vector<float> out = run_poisoned(*bad, in);
    EXPECT_GT(relative_l2(out.data(), ref.data(), static_cast<int64_t>(out.size())),
              10 * moe_tolerance(c.quant.method));
  }
}

}  // namespace
}  // namespace servekit

namespace servekit {
namespace {

// out may be hidden itself (moe.h): the in-place forward gives the out-of-place result's bits.
TEST(MoELayer, InPlaceForwardMatchesOutOfPlace) {
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8Block128, QuantMethod::kMXFP4W4A16,
                        QuantMethod::kInt4W4A16}) {
    SCOPED_TRACE(quant_name(q));
    LayerCase c;
    c.quant.method = q;
    MoELayer layer(make_config(c));
    load_random_experts(layer, 71, true);
    Inputs in = make_inputs(layer.config(), 7, 72);
    const std::vector<float> apart = run_poisoned(layer, in);
    const MoEInputs v = in.view(layer.config());
    layer.forward(v, TensorView::contiguous(in.hidden.data(), DType::kBF16, {in.tokens, c.hidden}));
    for (size_t i = 0; i < apart.size(); ++i)
      ASSERT_EQ(float_to_bf16(apart[i]), in.hidden[i]) << "element " << i;
  }
}

// moe.h: a NaN in a token's input reaches that token's output in every activation (a NaN through
// relu or the gpt-oss clamps must not become a finite number); the other tokens stay exact.
TEST(MoELayer, NaNInATokenReachesOnlyItsOutput) {
  for (Activation act :
       {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI, Activation::kReLU2}) {
    SCOPED_TRACE(static_cast<int>(act));
    LayerCase c;
    c.activation = act;
    MoELayer layer(make_config(c));
    load_random_experts(layer, 61, true);
    Inputs in = make_inputs(layer.config(), 4, 62);
    const int64_t H = c.hidden, bad = 2;
    in.hidden[static_cast<size_t>(bad * H + 17)] = 0x7FC0;  // bf16 quiet NaN
    in.hidden_f32[static_cast<size_t>(bad * H + 17)] = bf16_to_float(0x7FC0);
    std::vector<uint16_t> out(static_cast<size_t>(in.tokens * H), test::kPoisonBF16);
    layer.forward(in.view(layer.config()),
                  TensorView::contiguous(out.data(), DType::kBF16, {in.tokens, H}));
    const std::vector<double> ref = moe_reference(layer, in.reference());
    double err2 = 0, ref2 = 0;
    for (int64_t t = 0; t < in.tokens; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const size_t i = static_cast<size_t>(t * H + h);
        const float v = bf16_to_float(out[i]);
        if (t == bad) {
          ASSERT_TRUE(std::isnan(v) && out[i] != test::kPoisonBF16)
              << "out[" << t << ", " << h << "]";
          ASSERT_TRUE(std::isnan(ref[i])) << "reference[" << t << ", " << h << "]";
        } else {
          ASSERT_TRUE(std::isfinite(v)) << "out[" << t << ", " << h << "]";
          err2 += (v - ref[i]) * (v - ref[i]);
          ref2 += ref[i] * ref[i];
        }
      }
    EXPECT_LT(std::sqrt(err2 / ref2), moe_tolerance(c.quant.method));
  }
}

}  // namespace
}  // namespace servekit
