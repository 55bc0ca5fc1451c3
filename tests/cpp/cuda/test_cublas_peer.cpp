// The benchmark's cuBLAS peer (cuda/peer/cublas_moe.h) against the fp64 reference, held to the
// peer's tolerance (peer_tolerance gives the reasons), and the L2 flush of the benchmark timing.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/presets.h"
#include "core/random_data.h"
#include "cpu/moe_reference.h"
#include "cuda/bench/l2_flush.h"
#include "cuda/gpu_test_util.h"
#include "cuda/peer/cublas_moe.h"
#include "servekit/formats.h"

namespace servekit {
namespace {

template <typename T>
struct DeviceVec {
  T* p = nullptr;
  explicit DeviceVec(const std::vector<T>& h) {
    EXPECT_EQ(cudaMalloc(&p, h.size() * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVec() { cudaFree(p); }
};

// Loads random experts (with biases when `with_bias`) into a CUDA layer of `cfg` with the host
// copies kept, runs the peer on T tokens of random hidden states and the given logits, and checks
// every output element against moe_reference within the peer's tolerance, then that a second run
// on the same plan gives the same bits. The output is poisoned (0xFFFF, a NaN) before the run.
void check_peer(MoEConfig cfg_in, const std::vector<float>& logits, const std::vector<float>& bias,
                int64_t T, bool with_bias) {
  cfg_in.exec.device = Device::cuda(0);
  cfg_in.exec.keep_host_weights = true;
  MoELayer layer(cfg_in);
  const MoEConfig& cfg = layer.config();
  const QuantMethod m = cfg.quant.method;
  for (int e = 0; e < cfg.experts.local_num_experts; ++e) {
    HostExpert x = make_random_expert(cfg, 21, e, with_bias);
    layer.load_expert(e, x.view(cfg));
  }
  for (int s = 0; s < cfg.experts.num_shared_experts; ++s) {
    HostExpert x = make_random_expert(cfg, 21, cfg.routing.num_experts + s, with_bias);
    layer.load_shared_expert(s, x.view(cfg));
  }

  const int64_t H = cfg.experts.hidden_size;
  const int E = cfg.routing.num_experts;
  ASSERT_EQ(static_cast<int64_t>(logits.size()), T * E);
  const std::vector<uint16_t> hidden = make_hidden(22, T, H);
  DeviceVec<uint16_t> d_hidden(hidden), d_out(std::vector<uint16_t>(T * H, 0xFFFF));
  DeviceVec<float> d_logits(logits), d_bias(bias.empty() ? std::vector<float>(1) : bias);
  const Device dev = cfg.exec.device;
  MoEInputs in;
  in.hidden = TensorView::contiguous(d_hidden.p, DType::kBF16, {T, H}, dev);
  in.router_logits = TensorView::contiguous(d_logits.p, DType::kF32, {T, E}, dev);
  if (!bias.empty()) in.correction_bias = TensorView::contiguous(d_bias.p, DType::kF32, {E}, dev);
  const TensorView out = TensorView::contiguous(d_out.p, DType::kBF16, {T, H}, dev);

  peer::CublasMoE peer(layer, 4);
  ASSERT_TRUE(peer.available()) << peer.note();
  // Visible in the log: which path ran (an fp8 fallback is honest but worth seeing).
  std::printf("[ peer     ] %s: %s%s%s\n", std::string(quant_name(m)).c_str(), peer.name().c_str(),
              peer.note().empty() ? "" : ": ", peer.note().c_str());
  peer.plan(in, nullptr);
  peer.run(in, out, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> got_bits(static_cast<size_t>(T * H));
  ASSERT_EQ(cudaMemcpy(got_bits.data(), d_out.p, got_bits.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  std::vector<float> hidden_f(hidden.size()), got(got_bits.size());
  for (size_t i = 0; i < hidden.size(); ++i) hidden_f[i] = bf16_to_float(hidden[i]);
  for (size_t i = 0; i < got.size(); ++i) got[i] = bf16_to_float(got_bits[i]);
  ReferenceInputs ref_in;
  ref_in.hidden = hidden_f.data();
  ref_in.tokens = T;
  ref_in.logits = logits.data();
  ref_in.bias = bias.empty() ? nullptr : bias.data();
  const std::vector<double> ref = moe_reference(layer, ref_in);
  // relative_l2 is +inf if any element is still the NaN poison.
  EXPECT_LT(relative_l2(got.data(), ref.data(), T * H), peer.tolerance())
      << quant_name(m) << " via " << peer.name();

  // A second run on the same plan gives the same bits (the timed runs repeat it).
  peer.run(in, out, nullptr);
  std::vector<uint16_t> again(got_bits.size());
  ASSERT_EQ(cudaMemcpy(again.data(), d_out.p, again.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(again, got_bits);
}

// `tiny` (16 experts, top-4, 1 shared, H 256, I 128, DeepSeek-V3 routing); T = 33 tokens (odd on
// purpose), random logits.
void check_tiny(QuantMethod m, RoutingSkew skew) {
  QuantConfig q;
  q.method = m;
  ExecutionConfig exec;
  exec.max_num_tokens = 40;
  exec.device = Device::cuda(0);
  const MoEConfig cfg = preset_config(find_preset("tiny"), q, exec);
  const int64_t T = 33;
  const int E = cfg.routing.num_experts;
  check_peer(cfg, make_router_logits(23, T, E, skew), make_correction_bias(24, E), T, false);
}

// Expert row counts around the fp8 peers' padding to multiples of 16 (1, 5, 10, 17, exactly 16,
// and empty experts): 8 experts, top-2 of the logits, 1 shared expert (33 rows), H 256, I 128,
// with biases (a pad row through the activation with a bias would not stay zero). T = 33:
//   slot 0: token 0 -> e0, 1..5 -> e1, 6..22 -> e2, 23..32 -> e5
//   slot 1: tokens 0..15 -> e4, 16..32 -> e6
// row counts e0..e7 = 1, 5, 17, 0, 16, 10, 17, 0. Logits: U(-1, 0) noise, +4 on the slot-0
// expert and +2 on the slot-1 expert, so the top-2 is exactly that whatever the noise.
constexpr int64_t kOddTokens = 33;
constexpr int kOddExperts = 8;

std::vector<int> odd_rows() {
  return {1, 5, 17, 0, 16, 10, 17, 0};
}

std::vector<float> odd_group_logits() {
  const int E = kOddExperts;
  std::vector<float> logits(static_cast<size_t>(kOddTokens * E));
  fill_uniform_f32(31, 0, logits.data(), logits.size(), 0.5f);  // U(-0.5, 0.5)
  for (float& v : logits) v -= 0.5f;
  for (int64_t t = 0; t < kOddTokens; ++t) {
    const int first = t == 0 ? 0 : t <= 5 ? 1 : t <= 22 ? 2 : 5;
    const int second = t <= 15 ? 4 : 6;
    logits[t * E + first] += 4.0f;
    logits[t * E + second] += 2.0f;
  }
  return logits;
}

void check_odd_groups(QuantMethod m) {
  MoEConfig cfg;
  cfg.routing.num_experts = kOddExperts;
  cfg.routing.top_k = 2;
  cfg.routing.method = RoutingMethod::kTopKSoftmax;
  cfg.quant.method = m;
  cfg.experts.hidden_size = 256;
  cfg.experts.intermediate_size = 128;
  cfg.experts.num_shared_experts = 1;
  cfg.activation = Activation::kSwiGLU;
  cfg.exec.max_num_tokens = 40;
  const std::vector<float> logits = odd_group_logits();

  // The routing really gives the intended row counts (else the test would cover less).
  std::vector<int32_t> ids(static_cast<size_t>(kOddTokens * 2));
  std::vector<float> weights(ids.size());
  route_cpu(cfg.routing, logits.data(), nullptr, kOddTokens, ids.data(), weights.data());
  std::vector<int> rows(kOddExperts, 0);
  for (const int32_t e : ids) ++rows[e];
  ASSERT_EQ(rows, odd_rows());

  check_peer(cfg, logits, {}, kOddTokens, true);
}

TEST(CublasPeer, Bf16) {
  SERVEKIT_REQUIRE_GPU();
  check_tiny(QuantMethod::kBF16, RoutingSkew::kUniform);
  check_tiny(QuantMethod::kBF16, RoutingSkew::kSkewed);
}

TEST(CublasPeer, Fp8PerTensor) {
  SERVEKIT_REQUIRE_GPU();
  check_tiny(QuantMethod::kFP8PerTensor, RoutingSkew::kUniform);
}

TEST(CublasPeer, Fp8Block128) {
  SERVEKIT_REQUIRE_GPU();
  check_tiny(QuantMethod::kFP8Block128, RoutingSkew::kSkewed);
}

TEST(CublasPeer, DequantizedMxfp4) {
  SERVEKIT_REQUIRE_GPU();
  check_tiny(QuantMethod::kMXFP4W4A16, RoutingSkew::kUniform);
}

TEST(CublasPeer, OddGroupSizesBf16) {
  SERVEKIT_REQUIRE_GPU();
  check_odd_groups(QuantMethod::kBF16);
}

TEST(CublasPeer, OddGroupSizesFp8PerTensor) {
  SERVEKIT_REQUIRE_GPU();
  check_odd_groups(QuantMethod::kFP8PerTensor);
}

TEST(CublasPeer, OddGroupSizesFp8Block128) {
  SERVEKIT_REQUIRE_GPU();
  check_odd_groups(QuantMethod::kFP8Block128);
}

// Per-tensor fp8 is documented for compute capability 8.9+: with the padding the peer must run
// it with cuBLASLt, never take the fallback.
TEST(CublasPeer, Fp8PerTensorRunsOnCublasLt) {
  SERVEKIT_REQUIRE_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major * 10 + prop.minor < 89) GTEST_SKIP() << "fp8 needs compute capability 8.9+";
  QuantConfig q;
  q.method = QuantMethod::kFP8PerTensor;
  ExecutionConfig exec;
  exec.max_num_tokens = 40;
  exec.device = Device::cuda(0);
  exec.keep_host_weights = true;
  MoELayer layer(preset_config(find_preset("tiny"), q, exec));
  const MoEConfig& cfg = layer.config();
  for (int e = 0; e < cfg.experts.local_num_experts; ++e) {
    HostExpert x = make_random_expert(cfg, 21, e, false);
    layer.load_expert(e, x.view(cfg));
  }
  HostExpert shared = make_random_expert(cfg, 21, cfg.routing.num_experts, false);
  layer.load_shared_expert(0, shared.view(cfg));
  peer::CublasMoE peer(layer, 4);
  EXPECT_EQ(peer.name(), "cublaslt_fp8_tensor") << peer.note();
}

TEST(L2Flusher, CoversTwiceTheL2) {
  SERVEKIT_REQUIRE_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  cuda::L2Flusher f(0);
  EXPECT_EQ(f.l2_bytes(), static_cast<size_t>(prop.l2CacheSize));
  EXPECT_GE(f.bytes(), 2 * f.l2_bytes());
  f.flush(nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace servekit
