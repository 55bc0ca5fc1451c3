// The benchmark's correctness check (tools/bench_check.h) on the CPU backend: a correct output
// passes, a wrong value in a checked token fails, and fp8_per_tensor takes the whole batch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../../tools/bench_check.h"
#include "core/presets.h"
#include "core/random_data.h"
#include "servekit/formats.h"

namespace servekit::bench {
namespace {

struct Batch {
  std::vector<uint16_t> hidden, out;
  std::vector<float> logits, bias;
};

// The `tiny` preset (16 experts, top-4, 1 shared, H 256, I 128, DeepSeek-V3 routing) on the CPU,
// every expert loaded, and one forward of T random tokens.
MoELayer make_layer(QuantMethod m) {
  QuantConfig q;
  q.method = m;
  ExecutionConfig exec;
  exec.max_num_tokens = 64;
  exec.num_threads = 2;
  MoELayer layer(preset_config(find_preset("tiny"), q, exec));
  const MoEConfig& cfg = layer.config();
  for (int e = 0; e < cfg.experts.local_num_experts; ++e) {
    HostExpert x = make_random_expert(cfg, 7, e, false);
    layer.load_expert(e, x.view(cfg));
  }
  for (int s = 0; s < cfg.experts.num_shared_experts; ++s) {
    HostExpert x = make_random_expert(cfg, 7, cfg.routing.num_experts + s, false);
    layer.load_shared_expert(s, x.view(cfg));
  }
  return layer;
}

Batch run(MoELayer& layer, int64_t T) {
  const MoEConfig& cfg = layer.config();
  const int64_t H = cfg.experts.hidden_size;
  const int E = cfg.routing.num_experts;
  Batch b;
  b.hidden = make_hidden(3, T, H);
  b.logits = make_router_logits(4, T, E, RoutingSkew::kUniform);
  b.bias = make_correction_bias(5, E);
  b.out.assign(static_cast<size_t>(T * H), 0xFFFF);  // poison: bf16 NaN
  MoEInputs in;
  in.hidden = TensorView::contiguous(b.hidden.data(), DType::kBF16, {T, H});
  in.router_logits = TensorView::contiguous(b.logits.data(), DType::kF32, {T, E});
  in.correction_bias = TensorView::contiguous(b.bias.data(), DType::kF32, {E});
  layer.forward(in, TensorView::contiguous(b.out.data(), DType::kBF16, {T, H}));
  return b;
}

TEST(BenchCheck, SampledCheckPassesAndCatchesAWrongCheckedToken) {
  MoELayer layer = make_layer(QuantMethod::kBF16);
  const int64_t T = 37, H = layer.config().experts.hidden_size;
  Batch b = run(layer, T);
  const RefCheck c = reference_check(layer, b.hidden, b.logits, b.bias, T, 8, 512, 3);
  EXPECT_EQ(c.rows, sample_tokens(T, 8));
  EXPECT_EQ(c.how, "8 of 37 tokens");
  EXPECT_EQ(c.gate, c.tolerance);
  ASSERT_EQ(c.ref.size(), 8u * H);
  const double good = c.rel_l2(b.out, H);
  EXPECT_LT(good, c.tolerance);
  // A token outside the sample does not enter the check (sample of 37 in 8: rows 0, 5, 10, ...).
  std::vector<uint16_t> off_sample = b.out;
  off_sample[1 * H + 3] = float_to_bf16(1e4f);
  EXPECT_EQ(c.rel_l2(off_sample, H), good);
  // A checked token with one element off by 1e4 fails; a NaN gives +inf.
  std::vector<uint16_t> bad = b.out;
  bad[c.rows[3] * H + 5] = float_to_bf16(1e4f);
  EXPECT_GT(c.rel_l2(bad, H), c.gate);
  bad[c.rows[3] * H + 5] = 0xFFFF;
  EXPECT_FALSE(c.rel_l2(bad, H) <= c.gate);
}

TEST(BenchCheck, ChunkedReferenceEqualsOneCall) {
  MoELayer layer = make_layer(QuantMethod::kFP8Block128);
  const int64_t T = 11;
  Batch b = run(layer, T);
  const RefCheck one = reference_check(layer, b.hidden, b.logits, b.bias, T, 64, 512, 1);
  const RefCheck four = reference_check(layer, b.hidden, b.logits, b.bias, T, 64, 512, 4);
  EXPECT_EQ(one.ref, four.ref);  // per-token routing and 1x128 scales: chunks change nothing
  EXPECT_LT(one.rel_l2(b.out, layer.config().experts.hidden_size), one.tolerance);
}

TEST(BenchCheck, Fp8PerTensorUsesTheWholeBatchOrSaysApprox) {
  MoELayer layer = make_layer(QuantMethod::kFP8PerTensor);
  const int64_t T = 20, H = layer.config().experts.hidden_size;
  Batch b = run(layer, T);
  const RefCheck full = reference_check(layer, b.hidden, b.logits, b.bias, T, 4, 512, 4);
  EXPECT_EQ(full.rows.size(), 20u);
  EXPECT_EQ(full.gate, full.tolerance);
  EXPECT_LT(full.rel_l2(b.out, H), full.tolerance);
  const RefCheck approx = reference_check(layer, b.hidden, b.logits, b.bias, T, 4, 16, 4);
  EXPECT_EQ(approx.rows.size(), 4u);
  EXPECT_EQ(approx.how.rfind("approx: 4 of 20 tokens", 0), 0u);
  EXPECT_EQ(approx.gate, kApproxGate);
  // Scales from 4 of 20 tokens: fp8 rounding no longer cancels (~7%, see kApproxGate).
  const double e = approx.rel_l2(b.out, H);
  EXPECT_GT(e, full.tolerance);
  EXPECT_LT(e, approx.gate);
}

}  // namespace
}  // namespace servekit::bench
