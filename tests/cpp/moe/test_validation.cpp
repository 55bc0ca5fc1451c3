// Every invalid config or argument of the MoE layer throws servekit::Error naming the argument;
// none crashes, and the layer stays usable after a rejected call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "moe_test_util.h"
#include "servekit/servekit.h"

namespace servekit {
namespace {

using test::Inputs;
using test::LayerCase;
using test::load_random_experts;
using test::make_config;
using test::make_inputs;

// Runs `stmt`, which must throw servekit::Error whose message contains every one of `parts`.
#define EXPECT_ERROR_NAMING(stmt, ...)                                            \
  do {                                                                            \
    try {                                                                         \
      stmt;                                                                       \
      ADD_FAILURE() << #stmt " did not throw";                                    \
    } catch (const Error& e) {                                                    \
      for (const std::string& part : std::vector<std::string>{__VA_ARGS__})       \
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)            \
            << "message \"" << e.what() << "\" does not name \"" << part << "\""; \
    }                                                                             \
  } while (0)

MoEConfig tiny_config() {
  return make_config(LayerCase{});
}

TEST(MoEValidation, RoutingFields) {
  MoEConfig c = tiny_config();
  c.routing.top_k = 17;  // > num_experts = 16
  EXPECT_ERROR_NAMING(validate_moe_config(c), "top_k", "17");
  c = tiny_config();
  c.routing.num_experts = 64;
  c.routing.top_k = 33;  // > kMaxTopK
  EXPECT_ERROR_NAMING(validate_moe_config(c), "top_k", "33");
  c = tiny_config();
  c.routing.method = RoutingMethod::kDeepSeekV3;
  c.routing.n_group = 3;  // does not divide 16
  EXPECT_ERROR_NAMING(validate_moe_config(c), "n_group", "3");
  c.routing.n_group = 4;
  c.routing.topk_group = 5;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "topk_group", "5");
}

TEST(MoEValidation, ExpertAndExecutionFields) {
  MoEConfig c = tiny_config();
  c.quant.method = QuantMethod::kFP8Block128;
  c.experts.hidden_size = 200;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "hidden_size", "200", "128");
  c = tiny_config();
  c.quant.method = QuantMethod::kMXFP4W4A16;
  c.experts.intermediate_size = 100;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "intermediate_size", "100", "32");
  c = tiny_config();
  c.quant.method = QuantMethod::kMXFP4W4A8;  // weight block 32 but activation block 128
  c.experts.intermediate_size = 96;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "intermediate_size", "96", "128");
  c = tiny_config();
  c.experts.hidden_size = 0;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "hidden_size");
  c = tiny_config();
  c.experts.local_expert_offset = 16;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "local_expert_offset", "16");
  c = tiny_config();
  c.experts.local_expert_offset = 8;
  c.experts.local_num_experts = 9;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "local_num_experts", "9");
  c = tiny_config();
  c.experts.num_shared_experts = -1;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "num_shared_experts");
  c = tiny_config();
  c.exec.max_num_tokens = 0;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "max_num_tokens");
  c = tiny_config();
  c.exec.num_threads = -2;
  EXPECT_ERROR_NAMING(validate_moe_config(c), "num_threads");
  c = tiny_config();
  c.quant = {QuantMethod::kInt4W4A16, 48};
  EXPECT_THROW(validate_moe_config(c), Error);
  c = tiny_config();
  c.experts.local_expert_offset = 4;
  EXPECT_EQ(validate_moe_config(c).experts.local_num_experts, 12);  // -1 resolves to the rest
  EXPECT_ERROR_NAMING(parse_activation("silu"), "silu", "swiglu");
  for (Activation a :
       {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI, Activation::kReLU2})
    EXPECT_EQ(parse_activation(activation_name(a)), a);
}

TEST(MoEValidation, CudaDeviceWithoutCudaBackendIsAnError) {
  MoEConfig c = tiny_config();
  c.exec.device = Device::cuda(0);
  // Either this build has no CUDA backend, or the backend cannot start here: an Error, not a
  // crash, in both cases.
  if (cuda_device_count() == 0) {
    EXPECT_THROW(MoELayer layer(c), Error);
  }
}

class ForwardValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    LayerCase c;
    c.routing = RoutingMethod::kDeepSeekV3;
    c.max_tokens = 8;
    layer_ = std::make_unique<MoELayer>(make_config(c));
    load_random_experts(*layer_, 1, false);
    in_ = make_inputs(layer_->config(), 7, 2);
    out_.assign(7 * 256, 0);
  }
  MoEInputs view() { return in_.view(layer_->config()); }
  TensorView out() { return TensorView::contiguous(out_.data(), DType::kBF16, {7, 256}); }
  void forward(const MoEInputs& in, TensorView out) { layer_->forward(in, out); }

  std::unique_ptr<MoELayer> layer_;
  Inputs in_;
  std::vector<uint16_t> out_;
};

TEST_F(ForwardValidation, WrongDtype) {
  MoEInputs in = view();
  in.hidden.dtype = DType::kF16;
  EXPECT_ERROR_NAMING(forward(in, out()), "hidden", "f16", "bf16");
  TensorView o = out();
  o.dtype = DType::kF32;
  EXPECT_ERROR_NAMING(forward(view(), o), "out", "f32");
  in = view();
  in.router_logits.dtype = DType::kInt32;
  EXPECT_ERROR_NAMING(forward(in, out()), "router_logits", "int32");
  in = view();
  in.correction_bias.dtype = DType::kBF16;
  EXPECT_ERROR_NAMING(forward(in, out()), "correction_bias", "bf16", "f32");
}

TEST_F(ForwardValidation, WrongShape) {
  MoEInputs in = view();
  in.hidden.shape[1] = 255;
  EXPECT_ERROR_NAMING(forward(in, out()), "hidden", "255");
  TensorView o = out();
  o.shape[0] = 6;
  EXPECT_ERROR_NAMING(forward(view(), o), "out", "[6, 256]");
  in = view();
  in.router_logits.shape[1] = 15;
  EXPECT_ERROR_NAMING(forward(in, out()), "router_logits", "15");
  in = view();
  in.correction_bias = TensorView{};
  EXPECT_ERROR_NAMING(forward(in, out()), "correction_bias", "required");
}

TEST_F(ForwardValidation, NonContiguousAndDeviceMismatch) {
  std::vector<uint16_t> wide(7 * 512);
  MoEInputs in = view();
  in.hidden = TensorView::contiguous(wide.data(), DType::kBF16, {7, 256});
  in.hidden.strides[0] = 512;
  EXPECT_ERROR_NAMING(forward(in, out()), "hidden", "contiguous");
  in = view();
  in.hidden.device = Device::cuda(0);
  EXPECT_ERROR_NAMING(forward(in, out()), "hidden", "cuda:0", "cpu");
  TensorView o = out();
  o.device = Device::cuda(1);
  EXPECT_ERROR_NAMING(forward(view(), o), "out", "cuda:1");
}

TEST_F(ForwardValidation, TokenCount) {
  std::vector<uint16_t> big(9 * 256);
  std::vector<uint16_t> big_out(9 * 256);
  std::vector<float> logits(9 * 16, 0.5f);
  MoEInputs in = view();
  in.hidden = TensorView::contiguous(big.data(), DType::kBF16, {9, 256});
  in.router_logits = TensorView::contiguous(logits.data(), DType::kF32, {9, 16});
  EXPECT_ERROR_NAMING(forward(in, TensorView::contiguous(big_out.data(), DType::kBF16, {9, 256})),
                      "hidden", "T=9", "max_num_tokens=8");
  in.hidden.shape[0] = 0;
  EXPECT_ERROR_NAMING(forward(in, out()), "T=0");
}

TEST_F(ForwardValidation, UnusedInputsAreRejected) {
  MoEInputs in = view();
  std::vector<int32_t> ids(7 * 4, 0);
  std::vector<float> w(7 * 4, 1.0f);
  in.topk_ids = TensorView::contiguous(ids.data(), DType::kInt32, {7, 4});
  in.topk_weights = TensorView::contiguous(w.data(), DType::kF32, {7, 4});
  EXPECT_ERROR_NAMING(forward(in, out()), "topk_ids");
}

// out may be hidden itself (in place); any other overlap with an input is refused by name.
TEST_F(ForwardValidation, OutOverlappingAnInput) {
  // A buffer of 8 rows: hidden in rows 0..6, out in rows 1..7 (overlapping, not the same).
  std::vector<uint16_t> rows(8 * 256);
  std::copy(in_.hidden.begin(), in_.hidden.end(), rows.begin());
  MoEInputs in = view();
  in.hidden = TensorView::contiguous(rows.data(), DType::kBF16, {7, 256});
  EXPECT_ERROR_NAMING(
      forward(in, TensorView::contiguous(rows.data() + 256, DType::kBF16, {7, 256})), "out",
      "overlaps hidden", "in place");
  // out over the router logits (7 x 16 floats = 448 bytes, inside out's 3584).
  std::vector<uint16_t> big(7 * 256);
  in = view();
  in.router_logits = TensorView::contiguous(big.data() + 64, DType::kF32, {7, 16});
  std::memcpy(big.data() + 64, in_.logits.data(), in_.logits.size() * sizeof(float));
  EXPECT_ERROR_NAMING(forward(in, TensorView::contiguous(big.data(), DType::kBF16, {7, 256})),
                      "out", "overlaps router_logits");
  in = view();
  in.correction_bias = TensorView::contiguous(big.data() + 7 * 256 - 32, DType::kF32, {16});
  EXPECT_ERROR_NAMING(forward(in, TensorView::contiguous(big.data(), DType::kBF16, {7, 256})),
                      "out", "overlaps correction_bias");
  // Adjacent is not overlapping: out ends where the bias starts.
  std::vector<uint16_t> joined(7 * 256 + 32);
  in = view();
  std::memcpy(joined.data() + 7 * 256, in_.bias.data(), in_.bias.size() * sizeof(float));
  in.correction_bias = TensorView::contiguous(joined.data() + 7 * 256, DType::kF32, {16});
  EXPECT_NO_THROW(forward(in, TensorView::contiguous(joined.data(), DType::kBF16, {7, 256})));
}

TEST_F(ForwardValidation, LayerStillWorksAfterErrors) {
  MoEInputs in = view();
  in.hidden.dtype = DType::kF32;
  EXPECT_THROW(forward(in, out()), Error);
  EXPECT_NO_THROW(forward(view(), out()));
}

TEST(MoEValidation, PrecomputedIds) {
  LayerCase c;
  c.routing = RoutingMethod::kPrecomputed;
  MoELayer layer(make_config(c));
  load_random_experts(layer, 1, false);
  Inputs in = make_inputs(layer.config(), 7, 2);
  std::vector<uint16_t> out(7 * 256);
  const TensorView o = TensorView::contiguous(out.data(), DType::kBF16, {7, 256});
  in.ids[9] = 16;
  EXPECT_ERROR_NAMING(layer.forward(in.view(layer.config()), o), "topk_ids[2, 1]", "16");
  in.ids[9] = -2;
  EXPECT_ERROR_NAMING(layer.forward(in.view(layer.config()), o), "topk_ids[2, 1]", "-2");
  in.ids[9] = 3;
  MoEInputs v = in.view(layer.config());
  v.topk_weights.dtype = DType::kBF16;
  EXPECT_ERROR_NAMING(layer.forward(v, o), "topk_weights", "bf16");
  v = in.view(layer.config());
  v.topk_ids.shape[1] = 3;
  EXPECT_ERROR_NAMING(layer.forward(v, o), "topk_ids", "[7, 3]");
  v = in.view(layer.config());
  v.topk_ids = TensorView{};
  EXPECT_ERROR_NAMING(layer.forward(v, o), "topk_ids", "required");
  // The CUDA combine reads topk_weights after out's first write: out may not overlap them.
  std::vector<uint16_t> both(7 * 256);
  v = in.view(layer.config());
  std::memcpy(both.data(), in.weights.data(), in.weights.size() * sizeof(float));
  v.topk_weights = TensorView::contiguous(both.data(), DType::kF32, {7, 4});
  EXPECT_ERROR_NAMING(layer.forward(v, TensorView::contiguous(both.data(), DType::kBF16, {7, 256})),
                      "out", "overlaps topk_weights");
  v = in.view(layer.config());
  std::memcpy(both.data() + 128, in.ids.data(), in.ids.size() * sizeof(int32_t));
  v.topk_ids = TensorView::contiguous(both.data() + 128, DType::kInt32, {7, 4});
  EXPECT_ERROR_NAMING(layer.forward(v, TensorView::contiguous(both.data(), DType::kBF16, {7, 256})),
                      "out", "overlaps topk_ids");
}

TEST(MoEValidation, ExpertRoutedToButNotLoaded) {
  LayerCase c;
  c.routing = RoutingMethod::kPrecomputed;
  const MoEConfig cfg = make_config(c);
  MoELayer layer(cfg);
  for (int l = 0; l < 16; ++l) {
    if (l == 5) continue;
    HostExpert e = make_random_expert(cfg, 1, l, false);
    layer.load_expert(l, e.view(cfg));
  }
  Inputs in = make_inputs(cfg, 7, 2);
  for (int32_t& id : in.ids)
    if (id == 5) id = -1;
  std::vector<uint16_t> out(7 * 256);
  const TensorView o = TensorView::contiguous(out.data(), DType::kBF16, {7, 256});
  EXPECT_ERROR_NAMING(layer.forward(in.view(cfg), o), "shared expert 0", "never loaded");
  HostExpert shared = make_random_expert(cfg, 1, 16, false);
  layer.load_shared_expert(0, shared.view(cfg));
  in.ids[4 * 4 + 2] = 5;
  EXPECT_ERROR_NAMING(layer.forward(in.view(cfg), o), "token 4", "expert 5", "never loaded");
  EXPECT_FALSE(layer.expert_loaded(5));
  EXPECT_EQ(layer.prepared_expert(5), nullptr);
  EXPECT_TRUE(layer.expert_loaded(4));
}

TEST(MoEValidation, ExpertWeights) {
  LayerCase c;
  c.bias = true;
  const MoEConfig cfg = make_config(c);
  MoELayer layer(cfg);
  HostExpert e = make_random_expert(cfg, 1, 0, true);
  ExpertWeightsView v = e.view(cfg);
  v.w13.shape[1] = 255;
  EXPECT_ERROR_NAMING(layer.load_expert(0, v), "w.w13", "255");
  v = e.view(cfg);
  v.w2.dtype = DType::kF32;
  EXPECT_ERROR_NAMING(layer.load_expert(0, v), "w.w2", "f32", "bf16");
  v = e.view(cfg);
  v.w13_bias.shape[0] = 128;
  EXPECT_ERROR_NAMING(layer.load_expert(0, v), "w13_bias", "128");
  v = e.view(cfg);
  v.w2_bias.dtype = DType::kInt32;
  EXPECT_ERROR_NAMING(layer.load_expert(0, v), "w2_bias", "int32");
  v = e.view(cfg);
  v.w13.device = Device::cuda(0);
  EXPECT_ERROR_NAMING(layer.load_expert(0, v), "w.w13", "cuda:0");
  EXPECT_ERROR_NAMING(layer.load_expert(16, e.view(cfg)), "local_expert", "16");
  EXPECT_ERROR_NAMING(layer.load_shared_expert(1, e.view(cfg)), "shared_index", "1");
  EXPECT_ERROR_NAMING(layer.prepared_expert(17), "index", "17");
  EXPECT_ERROR_NAMING(layer.expert_loaded(-1), "local_expert", "-1");
  MoEWeights w;
  EXPECT_ERROR_NAMING(layer.prepare_weights(w), "weights.w13", "required");
  EXPECT_FALSE(layer.expert_loaded(0));
}

}  // namespace
}  // namespace servekit
