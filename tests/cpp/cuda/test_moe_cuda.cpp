// GPU tests of the whole MoE layer on the CUDA backend (src/cuda/moe_cuda.cu) against the fp64
// reference (src/cpu/moe_reference.h): every routing method, quantization variant and
// activation, shared experts, an expert-parallel local range, the weight copies each path keeps,
// the int4 GEMM on and off, odd sizes, skewed routing, token counts 1..8192 (reference on a
// sample of tokens). CUDA-graph replay and the layer's other choices: test_moe_cuda_paths.cpp.
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
#include "moe_cuda_test_util.h"
#include "servekit/moe.h"

namespace servekit {
namespace {

using testing::DeviceArray;
using namespace moe_cuda_test;

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

}  // namespace
}  // namespace servekit
