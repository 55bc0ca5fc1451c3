// The benchmark's cuBLAS peer (cuda/peer/cublas_moe.h) against the fp64 reference, held to
// peer_tolerance (its definition gives the reasons), and the L2 flush of the benchmark timing.
#include <cuda_runtime.h>

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

// `tiny` (16 experts, top-4, 1 shared, H 256, I 128, DeepSeek-V3 routing) on CUDA with the host
// copies kept, every expert loaded; T = 33 tokens (odd on purpose), checked on every token.
void check_peer(QuantMethod m, RoutingSkew skew) {
  QuantConfig q;
  q.method = m;
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

  const int64_t T = 33, H = cfg.experts.hidden_size;
  const int E = cfg.routing.num_experts;
  const std::vector<uint16_t> hidden = make_hidden(22, T, H);
  const std::vector<float> logits = make_router_logits(23, T, E, skew);
  const std::vector<float> bias = make_correction_bias(24, E);
  DeviceVec<uint16_t> d_hidden(hidden), d_out(std::vector<uint16_t>(T * H, 0xFFFF));
  DeviceVec<float> d_logits(logits), d_bias(bias);
  MoEInputs in;
  in.hidden = TensorView::contiguous(d_hidden.p, DType::kBF16, {T, H}, exec.device);
  in.router_logits = TensorView::contiguous(d_logits.p, DType::kF32, {T, E}, exec.device);
  in.correction_bias = TensorView::contiguous(d_bias.p, DType::kF32, {E}, exec.device);
  const TensorView out = TensorView::contiguous(d_out.p, DType::kBF16, {T, H}, exec.device);

  peer::CublasMoE peer(layer, 4);
  ASSERT_TRUE(peer.available()) << peer.note();
  try {
    peer.plan(in, nullptr);
  } catch (const Error& e) {
    // fp8_block128 needs cuBLAS >= 12.9 block scaling on sm_90; the peer says so instead.
    if (m == QuantMethod::kFP8Block128) GTEST_SKIP() << e.what();
    throw;
  }
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
  ref_in.bias = bias.data();
  const std::vector<double> ref = moe_reference(layer, ref_in);
  EXPECT_LT(relative_l2(got.data(), ref.data(), T * H), peer::peer_tolerance(m))
      << quant_name(m) << " via " << peer.name();

  // A second run on the same plan gives the same bits (the timed runs repeat it).
  peer.run(in, out, nullptr);
  std::vector<uint16_t> again(got_bits.size());
  ASSERT_EQ(cudaMemcpy(again.data(), d_out.p, again.size() * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(again, got_bits);
}

TEST(CublasPeer, Bf16) {
  SERVEKIT_REQUIRE_GPU();
  check_peer(QuantMethod::kBF16, RoutingSkew::kUniform);
  check_peer(QuantMethod::kBF16, RoutingSkew::kSkewed);
}

TEST(CublasPeer, Fp8PerTensor) {
  SERVEKIT_REQUIRE_GPU();
  check_peer(QuantMethod::kFP8PerTensor, RoutingSkew::kUniform);
}

TEST(CublasPeer, Fp8Block128) {
  SERVEKIT_REQUIRE_GPU();
  check_peer(QuantMethod::kFP8Block128, RoutingSkew::kSkewed);
}

TEST(CublasPeer, DequantizedMxfp4) {
  SERVEKIT_REQUIRE_GPU();
  check_peer(QuantMethod::kMXFP4W4A16, RoutingSkew::kUniform);
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
