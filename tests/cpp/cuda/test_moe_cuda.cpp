// GPU tests of the whole MoE layer on the CUDA backend (src/cuda/moe_cuda.cu) against the fp64
// reference (src/cpu/moe_reference.h): every routing method, quantization variant and
// activation, shared experts, an expert-parallel local range, odd sizes, skewed routing, token
// counts 1..8192 (reference on a sample of tokens), CUDA-graph replay and no allocation in
// forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/random_data.h"
#include "cpu/moe_reference.h"
#include "cuda/device_array.h"
#include "cuda/gemm_tile_config.h"
#include "cuda/gemm_tile_pick.h"
#include "cuda/grouped_gemm.h"
#include "gpu_test_util.h"
#include "servekit/moe.h"

namespace servekit {
namespace {

using testing::DeviceArray;

// Tolerance: moe_tolerance(m, kCUDA) (src/cpu/moe_reference.cpp gives the reasons).
double cuda_tolerance(QuantMethod m) {
  return moe_tolerance(m, DeviceType::kCUDA);
}

struct Case {
  QuantMethod quant = QuantMethod::kBF16;
  int group_size = 128;
  RoutingMethod routing = RoutingMethod::kSoftmaxTopK;
  Activation activation = Activation::kSwiGLU;
  int experts = 16, top_k = 4, shared = 1, local_offset = 0, local_count = -1;
  int64_t hidden = 384, inter = 256, tokens = 33, max_tokens = 0;
  bool bias = false;
  RoutingSkew skew = RoutingSkew::kUniform;
  std::vector<int> only_experts;  // kPrecomputed: route every token to these (in order)
  int sample = 0;                 // tokens checked against the reference (0 = all)
  uint64_t seed = 7;
  MoEPath path = MoEPath::kDynamic;
};

MoEConfig make_config(const Case& c) {
  MoEConfig cfg;
  cfg.routing.num_experts = c.experts;
  cfg.routing.top_k = c.top_k;
  cfg.routing.method = c.routing;
  if (c.routing == RoutingMethod::kDeepSeekV3) {
    cfg.routing.n_group = 4;
    cfg.routing.topk_group = 2;
    cfg.routing.routed_scaling_factor = 2.5f;
  }
  cfg.quant.method = c.quant;
  cfg.quant.group_size = c.group_size;
  cfg.experts.hidden_size = c.hidden;
  cfg.experts.intermediate_size = c.inter;
  cfg.experts.local_expert_offset = c.local_offset;
  cfg.experts.local_num_experts = c.local_count;
  cfg.experts.num_shared_experts = c.shared;
  cfg.activation = c.activation;
  cfg.exec.max_num_tokens = std::max(c.tokens, c.max_tokens);
  cfg.exec.device = Device::cuda(0);
  cfg.exec.path = c.path;
  cfg.exec.keep_host_weights = true;  // the reference reads the prepared copies
  return cfg;
}

// Loads the routed experts that can be routed to (all local ones, or only `only_experts`) and
// the shared ones, on all host threads (load_expert is safe for distinct experts; generating and
// quantizing 257 experts is the slow part of these tests).
void load_experts(MoELayer& layer, const Case& c) {
  const MoEConfig& cfg = layer.config();
  const int first = cfg.experts.local_expert_offset, count = cfg.experts.local_num_experts;
  std::vector<int> todo;  // local index, or count + s for shared expert s
  for (int e = 0; e < count; ++e) {
    if (c.only_experts.empty() ||
        std::find(c.only_experts.begin(), c.only_experts.end(), first + e) != c.only_experts.end())
      todo.push_back(e);
  }
  for (int s = 0; s < cfg.experts.num_shared_experts; ++s) todo.push_back(count + s);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (size_t i = next++; i < todo.size() && !failed; i = next++) {
      const int idx = todo[i];
      const bool shared = idx >= count;
      try {
        HostExpert he =
            make_random_expert(cfg, c.seed, shared ? c.experts + idx - count : first + idx, c.bias);
        if (shared) {
          layer.load_shared_expert(idx - count, he.view(cfg));
        } else {
          layer.load_expert(idx, he.view(cfg));
        }
      } catch (const std::exception& e) {
        failed = true;
        ADD_FAILURE() << "loading expert " << idx << ": " << e.what();
      }
    }
  };
  const size_t threads =
      std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

// Host inputs of one forward.
struct Inputs {
  int64_t tokens = 0;
  std::vector<uint16_t> hidden;  // [T, H] bf16
  std::vector<float> hidden_f;   // the same values
  std::vector<float> logits, bias;
  std::vector<int32_t> ids;  // kPrecomputed
  std::vector<float> weights;
};

Inputs make_inputs(const Case& c, int64_t tokens) {
  Inputs in;
  in.tokens = tokens;
  in.hidden = make_hidden(c.seed + 1, tokens, c.hidden);
  in.hidden_f.resize(in.hidden.size());
  for (size_t i = 0; i < in.hidden.size(); ++i) in.hidden_f[i] = bf16_to_float(in.hidden[i]);
  in.logits = make_router_logits(c.seed + 2, tokens, c.experts, c.skew);
  if (routing_uses_bias(c.routing)) in.bias = make_correction_bias(c.seed + 3, c.experts);
  if (c.routing == RoutingMethod::kPrecomputed) {
    in.ids.resize(static_cast<size_t>(tokens * c.top_k));
    in.weights.resize(in.ids.size());
    if (!c.only_experts.empty()) {
      for (int64_t t = 0; t < tokens; ++t)
        for (int k = 0; k < c.top_k; ++k) {
          in.ids[static_cast<size_t>(t * c.top_k + k)] = c.only_experts[k % c.only_experts.size()];
          in.weights[static_cast<size_t>(t * c.top_k + k)] = 0.25f + 0.5f * k / c.top_k;
        }
    } else {  // softmax routing of the logits, then every 5th slot dropped (-1)
      RoutingConfig rc;
      rc.num_experts = c.experts;
      rc.top_k = c.top_k;
      route_cpu(rc, in.logits.data(), nullptr, tokens, in.ids.data(), in.weights.data());
      for (size_t i = 0; i < in.ids.size(); i += 5) in.ids[i] = -1;
    }
  }
  return in;
}

// Device copies of Inputs and the output buffer, with the views forward takes.
class DeviceInputs {
 public:
  // misalign: hidden starts this many bf16 elements into its allocation (1: not 16-byte aligned).
  DeviceInputs(const Inputs& in, const Case& c, int misalign = 0)
      : hidden_(with_lead(in.hidden, misalign)),
        logits_(in.logits),
        bias_(in.bias),
        ids_(in.ids),
        weights_(in.weights),
        out_(static_cast<size_t>(in.tokens * c.hidden) * 2) {
    const Device dev = Device::cuda(0);
    view_.hidden =
        TensorView::contiguous(hidden_.get() + misalign, DType::kBF16, {in.tokens, c.hidden}, dev);
    if (c.routing != RoutingMethod::kPrecomputed) {
      view_.router_logits =
          TensorView::contiguous(logits_.get(), DType::kF32, {in.tokens, c.experts}, dev);
    }
    if (!in.bias.empty())
      view_.correction_bias = TensorView::contiguous(bias_.get(), DType::kF32, {c.experts}, dev);
    if (c.routing == RoutingMethod::kPrecomputed) {
      view_.topk_ids = TensorView::contiguous(ids_.get(), DType::kInt32, {in.tokens, c.top_k}, dev);
      view_.topk_weights =
          TensorView::contiguous(weights_.get(), DType::kF32, {in.tokens, c.top_k}, dev);
    }
    out_view_ = TensorView::contiguous(out_.get(), DType::kBF16, {in.tokens, c.hidden}, dev);
  }
  const MoEInputs& inputs() const { return view_; }
  TensorView out() const { return out_view_; }
  DeviceArray<uint16_t>& out_buffer() { return out_; }

 private:
  static std::vector<uint16_t> with_lead(const std::vector<uint16_t>& v, int lead) {
    std::vector<uint16_t> out(static_cast<size_t>(lead), 0);
    out.insert(out.end(), v.begin(), v.end());
    return out;
  }
  DeviceArray<uint16_t> hidden_;
  DeviceArray<float> logits_, bias_;
  DeviceArray<int32_t> ids_;
  DeviceArray<float> weights_;
  DeviceArray<uint16_t> out_;
  MoEInputs view_;
  TensorView out_view_;
};

std::vector<float> to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_float(bits[i]);
  return f;
}

// Tokens checked against the reference: all, or `sample` spread over the batch (first and last
// included).
std::vector<int64_t> sample_tokens(int64_t tokens, int sample) {
  std::vector<int64_t> t;
  if (sample <= 0 || sample >= tokens) {
    for (int64_t i = 0; i < tokens; ++i) t.push_back(i);
    return t;
  }
  for (int i = 0; i < sample; ++i) t.push_back(i * (tokens - 1) / (sample - 1));
  return t;
}

// Checks out [T, H] against the reference on the sampled tokens, and that every element of every
// token is finite (the output was poisoned with NaN before the run).
void check_output(const MoELayer& layer, const Case& c, const Inputs& in,
                  const std::vector<float>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out[i])) << "token " << i / c.hidden << " col " << i % c.hidden;
  }
  const std::vector<int64_t> tokens = sample_tokens(in.tokens, c.sample);
  const int64_t h = c.hidden, e = c.experts, k = c.top_k;
  std::vector<float> hid, logits, weights;
  std::vector<int32_t> ids;
  for (int64_t t : tokens) {
    hid.insert(hid.end(), in.hidden_f.begin() + t * h, in.hidden_f.begin() + (t + 1) * h);
    if (!in.logits.empty())
      logits.insert(logits.end(), in.logits.begin() + t * e, in.logits.begin() + (t + 1) * e);
    if (!in.ids.empty()) {
      ids.insert(ids.end(), in.ids.begin() + t * k, in.ids.begin() + (t + 1) * k);
      weights.insert(weights.end(), in.weights.begin() + t * k, in.weights.begin() + (t + 1) * k);
    }
  }
  ReferenceInputs ri;
  ri.hidden = hid.data();
  ri.tokens = static_cast<int64_t>(tokens.size());
  ri.logits = logits.empty() ? nullptr : logits.data();
  ri.bias = in.bias.empty() ? nullptr : in.bias.data();
  ri.ids = ids.empty() ? nullptr : ids.data();
  ri.weights = weights.empty() ? nullptr : weights.data();
  const std::vector<double> ref = moe_reference(layer, ri);

  std::vector<float> got;
  for (int64_t t : tokens) got.insert(got.end(), out.begin() + t * h, out.begin() + (t + 1) * h);
  const double tol = cuda_tolerance(c.quant);
  EXPECT_LE(relative_l2(got.data(), ref.data(), static_cast<int64_t>(got.size())), tol);
  // Per token (3x the layer bound: fewer elements, more spread); a token with no local expert
  // and no shared expert must come out exactly zero.
  for (size_t i = 0; i < tokens.size(); ++i) {
    double ref2 = 0.0;
    for (int64_t j = 0; j < h; ++j) ref2 += ref[i * h + j] * ref[i * h + j];
    if (ref2 == 0.0) {
      for (int64_t j = 0; j < h; ++j) ASSERT_EQ(got[i * h + j], 0.0f) << "token " << tokens[i];
    } else {
      EXPECT_LE(relative_l2(&got[i * h], &ref[i * h], h), 3 * tol) << "token " << tokens[i];
    }
  }
}

// The output buffer is twice the size of out [T, H]: the second half is a guard region that must
// still hold the poison after the forward (nothing written past the end of out).
std::vector<float> forward(MoELayer& layer, DeviceInputs& dev, cudaStream_t stream) {
  dev.out_buffer().poison();
  layer.forward(dev.inputs(), dev.out(), stream);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<uint16_t> bits = dev.out_buffer().download();
  const size_t n = static_cast<size_t>(dev.out().numel());
  for (size_t i = n; i < bits.size(); ++i) {
    EXPECT_EQ(bits[i], 0xFFFF) << "forward wrote past the end of out at element " << i;
    if (bits[i] != 0xFFFF) break;
  }
  bits.resize(n);
  return to_float(bits);
}

// One forward of c.tokens tokens on a loaded layer, checked against the reference.
void check_forward(MoELayer& layer, const Case& c) {
  const Inputs in = make_inputs(c, c.tokens);
  DeviceInputs dev(in, c);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const std::vector<float> out = forward(layer, dev, stream);
  check_output(layer, c, in, out);
  cudaStreamDestroy(stream);
}

void run_case(const Case& c) {
  MoELayer layer(make_config(c));
  load_experts(layer, c);
  check_forward(layer, c);
}

std::string case_name(const Case& c) {
  return std::string(quant_name(c.quant)) + "/" + std::string(routing_name(c.routing)) + "/" +
         std::string(activation_name(c.activation)) + "/T" + std::to_string(c.tokens);
}

const QuantMethod kAllQuant[] = {QuantMethod::kBF16,        QuantMethod::kFP8PerTensor,
                                 QuantMethod::kFP8Block128, QuantMethod::kMXFP4W4A16,
                                 QuantMethod::kMXFP4W4A8,   QuantMethod::kNVFP4W4A16,
                                 QuantMethod::kInt4W4A16};

class MoECudaQuant : public ::testing::TestWithParam<QuantMethod> {};

// Every routing method (SwiGLU, one shared expert), 33 tokens, H = 384 and I = 256 (multiples of
// every format's block).
TEST_P(MoECudaQuant, EveryRoutingMethod) {
  SERVEKIT_REQUIRE_GPU();
  const RoutingMethod methods[] = {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax,
                                   RoutingMethod::kDeepSeekV3,  RoutingMethod::kLlama4,
                                   RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax,
                                   RoutingMethod::kPrecomputed};
  for (RoutingMethod m : methods) {
    Case c;
    c.quant = GetParam();
    c.routing = m;
    SCOPED_TRACE(case_name(c));
    run_case(c);
  }
}

// Every activation, with w13/w2 biases, and without shared experts for ReLU².
TEST_P(MoECudaQuant, EveryActivationWithBias) {
  SERVEKIT_REQUIRE_GPU();
  const Activation acts[] = {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI,
                             Activation::kReLU2};
  for (Activation a : acts) {
    Case c;
    c.quant = GetParam();
    c.activation = a;
    c.bias = true;
    c.shared = a == Activation::kReLU2 ? 0 : 2;
    SCOPED_TRACE(case_name(c));
    run_case(c);
  }
}

// Expert parallelism: experts [4, 12) of 16 are local; precomputed ids with dropped slots and
// non-local experts, which contribute nothing.
TEST_P(MoECudaQuant, ExpertParallelLocalRange) {
  SERVEKIT_REQUIRE_GPU();
  Case c;
  c.quant = GetParam();
  c.routing = RoutingMethod::kPrecomputed;
  c.local_offset = 4;
  c.local_count = 8;
  c.shared = 0;
  c.tokens = 57;
  SCOPED_TRACE(case_name(c));
  run_case(c);
  c.shared = 1;
  c.routing = RoutingMethod::kSoftmaxTopK;
  run_case(c);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, MoECudaQuant, ::testing::ValuesIn(kAllQuant),
                         [](const auto& info) { return std::string(quant_name(info.param)); });

// exec.path decides which weight copies the layer keeps (MoELayer::device_weight_bytes): the
// dynamic path's GEMM layout (int4's own codes and scales for the int4 GEMM) and the static
// kernels' layout (the format's own bytes, each matrix 256-byte aligned), auto both, or only the
// static one when its capacity stays within the cutover (this shape has no table entry: 256 routed
// rows, 64 tokens at top-4). Each layer, the static-only ones included (no GEMM weights, no dynamic
// workspace), matches the reference. Sizes computed here from the shapes, not read back.
TEST(MoECuda, PathDecidesTheWeightCopies) {
  SERVEKIT_REQUIRE_GPU();
  // The cutover table's default, not an override from the environment.
  const testing::ScopedEnv cutover("SERVEKIT_MOE_CUTOVER_ROWS", nullptr);
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kInt4W4A16}) {
    Case c;
    c.quant = q;
    c.bias = true;
    c.tokens = 9;
    c.max_tokens = 65;  // 260 routed rows: past the cutover, so auto keeps both copies
    const size_t g = static_cast<size_t>(c.experts + c.shared), h = c.hidden, i = c.inter,
                 r = 2 * i;  // SwiGLU: gate and up rows
    const size_t bias = g * (r + h) * sizeof(float);
    auto align = [](size_t n) { return (n + 255) / 256 * 256; };
    // bf16: 2 bytes per weight; int4 with 128-column groups: half a byte plus a bf16 scale per
    // 128 weights, in both layouts (the dynamic path's int4 GEMM reads the codes as they are).
    auto packed = [&](size_t n) { return q == QuantMethod::kBF16 ? 2 * n : n / 2 + n / 64; };
    const size_t gemm = g * (packed(r * h) + packed(h * i));
    const size_t stat = g * (align(packed(r * h)) + align(packed(h * i)));
    const MoEPath paths[] = {MoEPath::kAuto, MoEPath::kStatic, MoEPath::kDynamic, MoEPath::kAuto};
    const int64_t capacity[] = {65, 65, 65, 64};  // 64 tokens: 256 rows, within the cutover
    const size_t expect[] = {gemm + stat + bias, stat + bias, gemm + bias, stat + bias};
    for (int p = 0; p < 4; ++p) {
      Case cp = c;
      cp.path = paths[p];
      cp.max_tokens = capacity[p];
      SCOPED_TRACE(case_name(cp) + " path " + std::to_string(p));
      MoELayer layer(make_config(cp));
      EXPECT_EQ(layer.device_weight_bytes(), expect[p]);
      load_experts(layer, cp);
      check_forward(layer, cp);
    }
  }
}

// int4_w4a16 on the dynamic path: groups 64 and 128 run the int4 GEMM (make_grouped_gemm_w4a16)
// unless SERVEKIT_DYNAMIC_W4A16=0, group 32 (and a switched-off layer) the bf16 GEMMs on the
// dequantized copy; every layer matches the reference at 1, 200 and 300 tokens (groups of ~50-75
// routed rows, several 64-token tiles), with shared experts and biases, and holds the bytes of
// the copy it runs (a quarter of bf16's plus the scales, or bf16's). The int4 GEMM runs the
// activation in GEMM1's epilogue (W13 in 8-row gate/up blocks) unless SERVEKIT_DYNAMIC_FUSED_ACT=0
// (W13 in the logical order, the separate pass).
TEST(MoECuda, W4A16GemmOnAndOff) {
  SERVEKIT_REQUIRE_GPU();
  for (int group : {32, 64, 128})
    for (const char* value : {"", "0"})
      for (const char* fused : {"", "0"}) {
        const testing::ScopedEnv w4a16("SERVEKIT_DYNAMIC_W4A16", value);
        const testing::ScopedEnv fused_act("SERVEKIT_DYNAMIC_FUSED_ACT", fused);
        Case c;
        c.quant = QuantMethod::kInt4W4A16;
        c.group_size = group;
        c.bias = true;
        c.shared = 2;
        c.tokens = 300;
        SCOPED_TRACE("group " + std::to_string(group) + " SERVEKIT_DYNAMIC_W4A16='" + value +
                     "' SERVEKIT_DYNAMIC_FUSED_ACT='" + fused + "'");
        MoELayer layer(make_config(c));
        const bool native = group != 32 && std::string(value).empty();
        EXPECT_EQ(layer.kernels(300).find("int4 weights") != std::string::npos, native)
            << layer.kernels(300);
        if (native) {
          EXPECT_EQ(layer.kernels(300).find("int4 weights + activation") != std::string::npos,
                    std::string(fused).empty())
              << layer.kernels(300);
        }
        const size_t g = static_cast<size_t>(c.experts + c.shared), h = c.hidden, i = c.inter,
                     r = 2 * i, n = r * h + h * i;
        const size_t gemm = native ? n / 2 + n / static_cast<size_t>(group) * 2 : 2 * n;
        EXPECT_EQ(layer.device_weight_bytes(), g * (gemm + (r + h) * sizeof(float)));
        load_experts(layer, c);
        for (int64_t t : {int64_t{1}, int64_t{200}, int64_t{300}}) {
          Case ct = c;
          ct.tokens = t;
          SCOPED_TRACE("tokens " + std::to_string(t));
          check_forward(layer, ct);
        }
      }
}

// The odd sizes of BENCH.md where each format's block allows: H = 2880, I = 1856, E = 257,
// top-k = 6, one shared expert. Routing is precomputed onto 8 experts spread over the range
// (including the last, 256) so only those are generated; 24 tokens.
TEST(MoECuda, OddSizes) {
  SERVEKIT_REQUIRE_GPU();
  struct Variant {
    QuantMethod quant;
    int group;
    int64_t hidden, inter;
  };
  // fp8_block128 and mxfp4_w4a8 need multiples of 128: 2944 = 23 x 128, 1920 = 15 x 128.
  const Variant variants[] = {
      {QuantMethod::kBF16, 128, 2880, 1856},       {QuantMethod::kFP8PerTensor, 128, 2880, 1856},
      {QuantMethod::kMXFP4W4A16, 128, 2880, 1856}, {QuantMethod::kNVFP4W4A16, 128, 2880, 1856},
      {QuantMethod::kInt4W4A16, 64, 2880, 1856},   {QuantMethod::kFP8Block128, 128, 2944, 1920},
      {QuantMethod::kMXFP4W4A8, 128, 2944, 1920}};
  for (const Variant& v : variants) {
    Case c;
    c.quant = v.quant;
    c.group_size = v.group;
    c.hidden = v.hidden;
    c.inter = v.inter;
    c.experts = 257;
    c.top_k = 6;
    c.shared = 1;
    c.tokens = 24;
    c.routing = RoutingMethod::kPrecomputed;
    c.only_experts = {256, 0, 129, 7, 200, 64, 255, 31};
    SCOPED_TRACE(case_name(c));
    run_case(c);
  }
}

// Skewed routing: Zipf-like logits, and every token on the same two experts (one group holds
// all 2048 x 2 rows).
TEST(MoECuda, SkewedRouting) {
  SERVEKIT_REQUIRE_GPU();
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8Block128}) {
    Case c;
    c.quant = q;
    c.hidden = 1024;
    c.inter = 512;
    c.tokens = 2048;
    c.sample = 48;
    c.skew = RoutingSkew::kSkewed;
    SCOPED_TRACE(case_name(c) + "/zipf");
    run_case(c);
    c.routing = RoutingMethod::kPrecomputed;
    c.top_k = 2;
    c.only_experts = {9, 2};
    SCOPED_TRACE(case_name(c) + "/two-experts");
    run_case(c);
  }
}

// Token counts 1, 7, 128, 2048 and 8192 through one layer sized for 8192 (E = 64, top-8,
// H = 1024, I = 512: ~1000 rows per expert at 8192 tokens), reference on 32 tokens spread over
// the batch. Per-tensor
// fp8 takes its scales over the whole batch, so a token subset would not reproduce them: it is
// checked on all tokens at the smaller counts.
TEST(MoECuda, TokenCounts) {
  SERVEKIT_REQUIRE_GPU();
  for (QuantMethod q :
       {QuantMethod::kBF16, QuantMethod::kFP8Block128, QuantMethod::kFP8PerTensor}) {
    Case c;
    c.quant = q;
    c.experts = 64;
    c.top_k = 8;
    c.shared = 0;
    c.hidden = 1024;
    c.inter = 512;
    c.max_tokens = 8192;
    MoELayer layer(make_config(c));
    load_experts(layer, c);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    for (int64_t t : {1, 7, 128, 2048, 8192}) {
      if (q == QuantMethod::kFP8PerTensor && t > 128) continue;
      c.tokens = t;
      c.sample = q == QuantMethod::kFP8PerTensor ? 0 : 32;
      SCOPED_TRACE(case_name(c));
      const Inputs in = make_inputs(c, t);
      DeviceInputs dev(in, c);
      check_output(layer, c, in, forward(layer, dev, stream));
    }
    cudaStreamDestroy(stream);
  }
}

// GEMM1's activation in its epilogue (SERVEKIT_DYNAMIC_FUSED_ACT=1, the default) against the
// separate activation pass on the usual W13 layout (=0), read at construction: two layers with
// the same experts give the same bits, and the fused one matches the reference. 600 tokens at
// top-4 of 16 with two shared experts: ~200 rows per group, so GEMM1 takes the 128-row tile
// (fused); 33 tokens the 64-row tile and the pass on the interleaved output; 384 (128 rows per
// group) bf16's swap-AB tile, fused for the bf16 intermediates (bf16 and int4, whose GEMMs run on
// dequantized bf16 weights) and the pass for mxfp4_w4a8's e4m3 round trip. The gated activations
// with biases; the formats that fuse and fp8_per_tensor, which never fuses.
TEST(MoECuda, FusedActivationMatchesThePass) {
  SERVEKIT_REQUIRE_GPU();
  // The premise on bf16's GEMM1 (rows per group = tokens x (4 + 2) / 18).
  ASSERT_EQ(cuda::choose_gemm_tile(cuda::GemmOperand::kBF16, 600 * 6 / 18, true),
            cuda::GemmTileKind::kLarge);
  ASSERT_EQ(cuda::choose_gemm_tile(cuda::GemmOperand::kBF16, 384 * 6 / 18, true),
            cuda::GemmTileKind::kSwap);
  // A layer built with SERVEKIT_DYNAMIC_FUSED_ACT at `value` (read at construction only).
  auto layer_with = [](const Case& c, const char* value) {
    const testing::ScopedEnv fused_act("SERVEKIT_DYNAMIC_FUSED_ACT", value);
    return MoELayer(make_config(c));
  };
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8Block128, QuantMethod::kMXFP4W4A8,
                        QuantMethod::kInt4W4A16, QuantMethod::kFP8PerTensor})
    for (Activation a : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI}) {
      Case c;
      c.quant = q;
      c.activation = a;
      c.bias = true;
      c.shared = 2;
      c.tokens = 600;
      c.sample = q == QuantMethod::kFP8PerTensor ? 0 : 48;
      SCOPED_TRACE(case_name(c));
      MoELayer pass = layer_with(c, "0");
      MoELayer fused = layer_with(c, "1");
      load_experts(pass, c);
      load_experts(fused, c);
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      // 600 tokens: the fused epilogue; 33 (~10 rows per group): the 64-row tile, whose separate
      // pass reads the interleaved GEMM1 output; 384: bf16's swap-AB tile (fused or the pass).
      for (int64_t t : {600, 33, 384}) {
        c.tokens = t;
        SCOPED_TRACE(t);
        const Inputs in = make_inputs(c, t);
        DeviceInputs dev(in, c);
        const std::vector<float> want = forward(pass, dev, stream);
        const std::vector<float> got = forward(fused, dev, stream);
        ASSERT_EQ(got.size(), want.size());
        int64_t bad = 0;
        for (size_t i = 0; i < got.size(); ++i)
          if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 5)
            ADD_FAILURE() << "element " << i << ": fused " << got[i] << " vs pass " << want[i];
        EXPECT_EQ(bad, 0);
        check_output(fused, c, in, got);
      }
      cudaStreamDestroy(stream);
    }
}

// bf16's swap-AB tiles (SERVEKIT_GEMM_TILE=swap or pair, read at construction) under every token
// count, so groups of 0 to ~400 rows, one to three 144-token tiles (the pair tile: one or two
// pairs, the second CTA of a pair often past the group): bf16 and int4_w4a16 (bf16 GEMMs on
// dequantized weights), SwiGLU-OAI with biases, two shared experts, against the reference.
TEST(MoECuda, SwapTileMatchesReference) {
  SERVEKIT_REQUIRE_GPU();
  // int4 on the bf16 GEMMs (its dequantized copy), not on its own int4 GEMM (W4A16GemmOnAndOff).
  const testing::ScopedEnv copy("SERVEKIT_DYNAMIC_W4A16", "0");
  // Every swap-AB tile for both GEMMs (SERVEKIT_GEMM_SWAP, read at construction): the ping-pong
  // one fuses the activation on W13 in 64-row blocks, the cooperative one and its pair on 128-row
  // blocks.
  const std::pair<const char*, const char*> tiles[] = {
      {"cooperative", "swap"}, {"pingpong", "swap"}, {"cooperative", "pair"}};
  for (const auto& [swap, tile_choice] : tiles)
    for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kInt4W4A16}) {
      const testing::ScopedEnv tile("SERVEKIT_GEMM_TILE", tile_choice);
      const testing::ScopedEnv which("SERVEKIT_GEMM_SWAP", swap);
      SCOPED_TRACE(std::string(swap) + " " + tile_choice);
      Case c;
      c.quant = q;
      c.activation = Activation::kSwiGLUOAI;
      c.bias = true;
      c.shared = 2;
      c.max_tokens = 1000;
      MoELayer layer(make_config(c));
      load_experts(layer, c);
      // The forced tile is what runs (MoELayer::kernels follows forward's picks): both GEMMs on
      // the swap tile asked for, GEMM1 with the activation fused.
      constexpr cuda::GemmOperand kBF16 = cuda::GemmOperand::kBF16;
      const std::string swap_tile = cuda::gemm_tile_name(
          std::string(tile_choice) == "pair" ? cuda::swap_pair_tile_config(kBF16)
          : std::string(swap) == "pingpong"
              ? cuda::swap_pp_tile_config(kBF16, cuda::swap_pp_tile_k(0))
              : cuda::swap_ab_tile_config(kBF16));
      EXPECT_EQ(layer.kernels(1000),
                "dynamic: gemm1 " + swap_tile + " + activation; gemm2 " + swap_tile);
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      for (int64_t t : {1, 33, 384, 1000}) {
        c.tokens = t;
        c.sample = 48;
        SCOPED_TRACE(case_name(c));
        const Inputs in = make_inputs(c, t);
        DeviceInputs dev(in, c);
        check_output(layer, c, in, forward(layer, dev, stream));
      }
      cudaStreamDestroy(stream);
    }
}

// The auto pick between the 2x1 swap tile and its pair: bf16 on the cooperative swap tile
// (SERVEKIT_GEMM_SWAP=cooperative: these small experts would take the ping-pong one, which has no
// pair), top-4 of 16 experts, 1024 tokens without shared experts (256 routed rows per expert) and
// 972 with one (243 routed rows; 285 per group with the shared one averaged in, the swap tile's
// range as deepseek-v3's 286). The host pick runs the pair without shared experts and the 2x1
// tile with one; SERVEKIT_GEMM_PAIR_PICK=device launches both and the device picks (kSwapOrPair),
// here under uniform routing (Poisson rows: the pair) and skewed routing (most rows on a few
// experts: the 2x1 tile); auto (the default) is host without a shared expert and device with one.
// Both GEMMs are named by kernels(), and every case matches the reference.
TEST(MoECuda, SwapOrPairPick) {
  SERVEKIT_REQUIRE_GPU();
  constexpr cuda::GemmOperand kBF16 = cuda::GemmOperand::kBF16;
  const testing::ScopedEnv which("SERVEKIT_GEMM_SWAP", "cooperative");
  const std::string swap = cuda::gemm_tile_name(cuda::swap_ab_tile_config(kBF16));
  const std::string pair = cuda::gemm_tile_name(cuda::swap_pair_tile_config(kBF16));
  for (const char* pick : {"auto", "host", "device"})
    for (const auto& [shared, tokens] : {std::pair<int, int64_t>{0, 1024}, {1, 972}}) {
      const testing::ScopedEnv pick_env("SERVEKIT_GEMM_PAIR_PICK", pick);
      Case c;
      c.shared = shared;
      c.tokens = tokens;
      c.max_tokens = 1024;
      c.sample = 64;
      MoELayer layer(make_config(c));
      load_experts(layer, c);
      ASSERT_EQ(cuda::routed_rows_per_group({4, shared, 16}, tokens * (4 + shared), 16 + shared),
                shared == 0 ? 256 : 243);
      const std::string tile =
          !cuda::kAutoSwapPair ? swap
          : std::string(pick) == "device" || (std::string(pick) == "auto" && shared == 1)
              ? swap + " or " + pair + " (device pick)"
          : shared == 0 ? pair
                        : swap;
      EXPECT_EQ(layer.kernels(tokens), "dynamic: gemm1 " + tile + " + activation; gemm2 " + tile);
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      for (RoutingSkew skew : {RoutingSkew::kUniform, RoutingSkew::kSkewed}) {
        c.skew = skew;
        SCOPED_TRACE(std::string(pick) + " " + case_name(c));
        const Inputs in = make_inputs(c, c.tokens);
        DeviceInputs dev(in, c);
        check_output(layer, c, in, forward(layer, dev, stream));
      }
      cudaStreamDestroy(stream);
    }
}

// A misspelt SERVEKIT_GEMM_SWAP is an error at construction, not a silent auto.
TEST(MoECuda, RejectsAnUnknownSwapChoice) {
  SERVEKIT_REQUIRE_GPU();
  const testing::ScopedEnv which("SERVEKIT_GEMM_SWAP", "ping-pong");
  Case c;
  EXPECT_THROW(MoELayer(make_config(c)), Error);
}

// The CUDA kernels read hidden and write out in 16-byte vectors: a view that starts off that
// alignment is a servekit::Error at forward, not a misaligned-address fault that poisons the
// context (found by session 28's first row-gather test, which fed such a hidden to the
// gather kernel). The layer still runs afterwards.
TEST(MoECuda, RejectsUnalignedHiddenAndOut) {
  SERVEKIT_REQUIRE_GPU();
  for (MoEPath path : {MoEPath::kDynamic, MoEPath::kStatic}) {
    Case c;
    c.path = path;
    c.tokens = 5;
    MoELayer layer(make_config(c));
    load_experts(layer, c);
    const Inputs in = make_inputs(c, c.tokens);
    DeviceInputs odd(in, c, 1), dev(in, c);
    EXPECT_THROW(layer.forward(odd.inputs(), odd.out(), nullptr), Error);
    DeviceArray<uint16_t> out(static_cast<size_t>(c.tokens * c.hidden) + 8);
    const TensorView odd_out =
        TensorView::contiguous(out.get() + 1, DType::kBF16, {c.tokens, c.hidden}, Device::cuda(0));
    EXPECT_THROW(layer.forward(dev.inputs(), odd_out, nullptr), Error);
    check_forward(layer, c);
  }
}

// The fp8 formats on the static path: up to 32 tokens the route + plan launch also prepares
// fp8_per_tensor's input (its amax) on extra CTAs and no planner runs; above, and for
// fp8_block128 (x's 1x128 quantization) from two tokens on, the static planner prepares it. H =
// 2048 spreads x over several CTAs (4 at 32 tokens, 6 at 48). Checked against the reference on
// every token (per-tensor scales span the batch), and two forwards of the same input must be
// bit-identical (the amax slots reduce in a fixed order). fp8_block128 (with a shared expert) runs
// through its planner first (SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=0), then with its tasks and input
// in the route + plan launch (1, the default: at one token; 2: up to 32 tokens), which must give
// the planner's bits: the same quantization and the same task list, built elsewhere.
TEST(MoECuda, StaticFp8InputPreparation) {
  SERVEKIT_REQUIRE_GPU();
  for (QuantMethod q : {QuantMethod::kFP8PerTensor, QuantMethod::kFP8Block128}) {
    Case c;
    c.quant = q;
    c.routing = RoutingMethod::kDeepSeekV3;
    c.experts = 32;
    c.top_k = 4;
    c.shared = q == QuantMethod::kFP8Block128 ? 1 : 0;
    c.hidden = 2048;
    c.inter = 256;
    c.max_tokens = 64;
    c.path = MoEPath::kStatic;
    MoELayer layer(make_config(c));
    load_experts(layer, c);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    for (int64_t t : {1, 7, 32, 48}) {
      c.tokens = t;
      SCOPED_TRACE(case_name(c) + "/static");
      const Inputs in = make_inputs(c, t);
      DeviceInputs dev(in, c);
      std::vector<float> first, again;
      {
        const bool block128 = q == QuantMethod::kFP8Block128;
        const testing::ScopedEnv planner("SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS", block128 ? "0" : "");
        first = forward(layer, dev, stream);
        again = forward(layer, dev, stream);
      }
      check_output(layer, c, in, first);
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
      if (q != QuantMethod::kFP8Block128) continue;
      for (const char* mode : {"1", "2"}) {
        const testing::ScopedEnv route_tasks("SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS", mode);
        const std::vector<float> routed = forward(layer, dev, stream);
        EXPECT_EQ(std::memcmp(first.data(), routed.data(), first.size() * sizeof(float)), 0)
            << "SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS=" << mode;
      }
    }
    cudaStreamDestroy(stream);
  }
}

// A forward captured in a CUDA graph and replayed gives bit-identical output to the eager run;
// an eager forward allocates no device memory; two runs are bit-identical (no atomics order).
TEST(MoECuda, GraphReplayNoAllocationDeterminism) {
  SERVEKIT_REQUIRE_GPU();
  // int4_w4a16 (group 128): the int4 GEMM (make_grouped_gemm_w4a16) and its separate activation.
  for (QuantMethod q : {QuantMethod::kBF16, QuantMethod::kFP8PerTensor, QuantMethod::kFP8Block128,
                        QuantMethod::kInt4W4A16}) {
    Case c;
    c.quant = q;
    c.tokens = 96;
    c.max_tokens = 256;
    c.hidden = 512;
    c.inter = 384;
    c.routing = RoutingMethod::kDeepSeekV3;
    SCOPED_TRACE(case_name(c));
    MoELayer layer(make_config(c));
    load_experts(layer, c);
    const Inputs in = make_inputs(c, c.tokens);
    DeviceInputs dev(in, c);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    const std::vector<float> eager = forward(layer, dev, stream);  // also loads every kernel
    check_output(layer, c, in, eager);

    size_t free_before = 0, free_after = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
    const std::vector<float> again = forward(layer, dev, stream);
    ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
    EXPECT_EQ(free_before, free_after) << "forward allocated device memory";
    EXPECT_EQ(std::memcmp(eager.data(), again.data(), eager.size() * sizeof(float)), 0);

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    layer.forward(dev.inputs(), dev.out(), stream);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 2; ++replay) {
      dev.out_buffer().poison();
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      const std::vector<float> replayed = to_float(dev.out_buffer().download());
      EXPECT_EQ(std::memcmp(eager.data(), replayed.data(), eager.size() * sizeof(float)), 0)
          << "replay " << replay;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

// Two forwards of one layer on two streams, the second enqueued while the first runs: a long
// dynamic-path forward on stream a, then a short static-path one on stream b, whose routing and
// plan overwrite the workspace the first is reading. With the layer's stream order (the default:
// SERVEKIT_FORWARD_STREAM_ORDER unset, src/cuda/stream_order.h) each must equal its forward run
// alone, bit for bit (both paths are deterministic); with it off (=0) they race
// (DISABLED_ForwardsOnTwoStreamsRaceUnordered shows that this setup does overlap them).
struct TwoStreamRun {
  size_t differ_a = 0, differ_b = 0;  // elements unlike the solo run's, over `rounds` rounds
};
TwoStreamRun forwards_on_two_streams(bool ordered, int rounds) {
  Case c;
  c.path = MoEPath::kAuto;  // 4096 tokens on the dynamic path, 8 on the static one
  c.hidden = 2048;
  c.inter = 1024;
  c.tokens = 4096;
  c.shared = 1;
  // Read at construction: unset (the default) or 0.
  const testing::ScopedEnv order("SERVEKIT_FORWARD_STREAM_ORDER", ordered ? nullptr : "0");
  MoELayer layer(make_config(c));
  EXPECT_NE(layer.kernels(4096), "static");
  EXPECT_EQ(layer.kernels(8), "static");
  load_experts(layer, c);
  Case cb = c;
  cb.seed = 99;  // other inputs, the same experts
  const Inputs in_a = make_inputs(c, 4096), in_b = make_inputs(cb, 8);
  DeviceInputs dev_a(in_a, c), dev_b(in_b, cb);
  cudaStream_t sa = nullptr, sb = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking), cudaSuccess);
  // Alone (each ordered by its synchronize), checked against the reference on a sample.
  const std::vector<float> solo_a = forward(layer, dev_a, sa), solo_b = forward(layer, dev_b, sb);
  c.sample = 16;
  check_output(layer, c, in_a, solo_a);
  check_output(layer, cb, in_b, solo_b);
  TwoStreamRun r;
  for (int round = 0; round < rounds; ++round) {
    dev_a.out_buffer().poison();
    dev_b.out_buffer().poison();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    layer.forward(dev_a.inputs(), dev_a.out(), sa);
    layer.forward(dev_b.inputs(), dev_b.out(), sb);
    EXPECT_EQ(cudaStreamSynchronize(sb), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(sa), cudaSuccess);
    const std::vector<uint16_t> a = dev_a.out_buffer().download(),
                                b = dev_b.out_buffer().download();
    for (size_t i = 0; i < solo_a.size(); ++i) r.differ_a += bf16_to_float(a[i]) != solo_a[i];
    for (size_t i = 0; i < solo_b.size(); ++i) r.differ_b += bf16_to_float(b[i]) != solo_b[i];
  }
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
  return r;
}

TEST(MoECuda, ForwardsOnTwoStreamsAreOrdered) {
  SERVEKIT_REQUIRE_GPU();
  const TwoStreamRun r = forwards_on_two_streams(true, 3);
  EXPECT_EQ(r.differ_a, 0u) << "the long forward on stream a";
  EXPECT_EQ(r.differ_b, 0u) << "the short forward on stream b";
}

// Disabled: it races on purpose, and a race may fault the context (run it alone, with
// --gtest_also_run_disabled_tests). It shows the test above can fail: without the stream order
// the same calls give other results.
TEST(MoECuda, DISABLED_ForwardsOnTwoStreamsRaceUnordered) {
  SERVEKIT_REQUIRE_GPU();
  const TwoStreamRun r = forwards_on_two_streams(false, 3);
  std::printf("unordered: %zu elements of a and %zu of b differ from the solo runs\n", r.differ_a,
              r.differ_b);
  EXPECT_GT(r.differ_a + r.differ_b, 0u) << "the forwards did not overlap";
}

// moe.h: a NaN in a token's input reaches that token's whole output, on both paths and in every
// activation (fminf / fmaxf clamps turned it into a finite number on the dynamic path, relu into
// 0); the other tokens stay within the tolerance of the reference.
TEST(MoECuda, NaNInATokenReachesOnlyItsOutput) {
  SERVEKIT_REQUIRE_GPU();
  for (MoEPath path : {MoEPath::kDynamic, MoEPath::kStatic})
    for (Activation a :
         {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI, Activation::kReLU2}) {
      Case c;
      c.activation = a;
      c.bias = true;
      c.shared = a == Activation::kReLU2 ? 0 : 1;  // as EveryActivationWithBias
      c.tokens = 5;
      SCOPED_TRACE(case_name(c) + (path == MoEPath::kStatic ? "/static" : "/dynamic"));
      MoEConfig cfg = make_config(c);
      cfg.exec.path = path;
      MoELayer layer(cfg);
      load_experts(layer, c);
      Inputs in = make_inputs(c, c.tokens);
      const int64_t bad = 2, H = c.hidden;
      in.hidden[static_cast<size_t>(bad * H + 100)] = 0x7FC0;  // bf16 quiet NaN
      in.hidden_f[static_cast<size_t>(bad * H + 100)] = bf16_to_float(0x7FC0);
      DeviceInputs dev(in, c);
      dev.out_buffer().poison();
      layer.forward(dev.inputs(), dev.out(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<uint16_t> bits = dev.out_buffer().download();
      bits.resize(static_cast<size_t>(c.tokens * H));
      for (int64_t j = 0; j < H; ++j) {
        const uint16_t b = bits[static_cast<size_t>(bad * H + j)];
        ASSERT_TRUE(std::isnan(bf16_to_float(b)) && b != 0xFFFF) << "column " << j;
      }
      // The other tokens: finite and checked against the reference.
      Inputs rest;
      std::vector<float> out_rest;
      const std::vector<float> out = to_float(bits);
      for (int64_t t = 0; t < c.tokens; ++t) {
        if (t == bad) continue;
        rest.hidden_f.insert(rest.hidden_f.end(), in.hidden_f.begin() + t * H,
                             in.hidden_f.begin() + (t + 1) * H);
        rest.logits.insert(rest.logits.end(), in.logits.begin() + t * c.experts,
                           in.logits.begin() + (t + 1) * c.experts);
        out_rest.insert(out_rest.end(), out.begin() + t * H, out.begin() + (t + 1) * H);
      }
      rest.tokens = c.tokens - 1;
      rest.bias = in.bias;
      check_output(layer, c, rest, out_rest);
    }
}

}  // namespace
}  // namespace servekit
