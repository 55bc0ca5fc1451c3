// The static MoE path (cuda/static_moe.h) against a host computation on the dequantized
// weights, for every static format: routing ids and the plan are built on the host (moe_plan.h's
// semantics), weights quantized with quant.h, activations quantized as quant.h specifies
// (fake_quantize_activations), everything else in double.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cpu/moe_reference.h"
#include "cuda/gpu_test_util.h"
#include "cuda/static_moe.h"
#include "cuda/static_pack.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit::cuda {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// A device allocation freed at scope end.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr, bytes == 0 ? 1 : bytes) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

template <typename T>
void upload(DeviceBuffer& d, const std::vector<T>& h) {
  ASSERT_NE(d.ptr, nullptr);
  ASSERT_EQ(cudaMemcpy(d.ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
}

enum class Skew { kUniform, kOneExpert };

struct Case {
  QuantConfig quant;
  Activation act;
  int64_t hidden, inter;
  int experts, top_k, shared;
  int64_t tokens;
  Skew skew;
  bool bias;
  bool fused = true;  // fused combine into out; else y for launch_combine
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string n = std::string(quant_name(c.quant.method));
  if (c.quant.method == QuantMethod::kInt4W4A16) n += "_g" + std::to_string(c.quant.group_size);
  n += "_" + std::string(activation_name(c.act)) + "_H" + std::to_string(c.hidden) + "_I" +
       std::to_string(c.inter) + (c.top_k != 4 ? "_top" + std::to_string(c.top_k) : "") + "_T" +
       std::to_string(c.tokens) + (c.skew == Skew::kOneExpert ? "_skewed" : "_uniform") +
       (c.bias ? "_bias" : "") + (c.fused ? "" : "_y");
  return n;
}
// gtest's print of the parameter (without it, the struct's bytes, uninitialized padding included).
void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(::testing::TestParamInfo<Case>(c, 0));
}

// The plan of moe_plan.h on the host: groups 0..E-1 routed, E..E+S-1 shared; rows of a group
// contiguous and by ascending token.
struct HostPlan {
  std::vector<int32_t> offsets, row_token, row_group, token_slot_row;
};

HostPlan build_plan(const std::vector<int32_t>& ids, int64_t tokens, int top_k, int experts,
                    int shared) {
  const int G = experts + shared, slots = top_k + shared;
  HostPlan p;
  p.offsets.assign(static_cast<size_t>(G + 1), 0);
  p.token_slot_row.assign(static_cast<size_t>(tokens * slots), -1);
  for (int g = 0; g < G; ++g) {
    p.offsets[static_cast<size_t>(g)] = static_cast<int32_t>(p.row_token.size());
    for (int64_t t = 0; t < tokens; ++t)
      for (int s = 0; s < slots; ++s) {
        const int gs = s < top_k ? ids[static_cast<size_t>(t * top_k + s)] : experts + s - top_k;
        if (gs != g) continue;
        p.token_slot_row[static_cast<size_t>(t * slots + s)] =
            static_cast<int32_t>(p.row_token.size());
        p.row_token.push_back(static_cast<int32_t>(t));
        p.row_group.push_back(g);
      }
  }
  p.offsets[static_cast<size_t>(G)] = static_cast<int32_t>(p.row_token.size());
  return p;
}

double act_ref(Activation a, double g, double u) {
  switch (a) {
    case Activation::kSwiGLU:
      return g / (1 + std::exp(-g)) * u;
    case Activation::kGeGLU:
      return 0.5 * g * (1 + std::erf(g / std::sqrt(2.0))) * u;
    case Activation::kSwiGLUOAI: {
      const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
      return (uc + 1) * gc / (1 + std::exp(-1.702 * gc));
    }
    case Activation::kReLU2:
      return g > 0 ? g * g : 0;
  }
  return 0;
}

class StaticMoECuda : public ::testing::TestWithParam<Case> {};

TEST_P(StaticMoECuda, MatchesHostOnDequantizedWeights) {
  SERVEKIT_REQUIRE_GPU();
  const Case c = GetParam();
  const bool gated = activation_is_gated(c.act);
  const int64_t H = c.hidden, I = c.inter, R = gated ? 2 * I : I, T = c.tokens;
  const int G = c.experts + c.shared, K = c.top_k, slots = K + c.shared;
  std::mt19937 rng(static_cast<uint32_t>(H * 7 + I * 3 + T + static_cast<int>(c.quant.method)));

  // Routing: K distinct experts per token; kOneExpert puts every token's first slot on expert 3.
  std::vector<int32_t> ids(static_cast<size_t>(T * K));
  std::vector<float> weights(static_cast<size_t>(T * K));
  std::uniform_real_distribution<float> uw(0.05f, 1.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> e(static_cast<size_t>(c.experts));
    std::iota(e.begin(), e.end(), 0);
    std::shuffle(e.begin(), e.end(), rng);
    if (c.skew == Skew::kOneExpert) std::iter_swap(e.begin(), std::find(e.begin(), e.end(), 3));
    for (int k = 0; k < K; ++k) {
      ids[static_cast<size_t>(t * K + k)] = e[static_cast<size_t>(k)];
      weights[static_cast<size_t>(t * K + k)] = uw(rng);
    }
  }
  const HostPlan plan = build_plan(ids, T, K, c.experts, c.shared);
  const int64_t rows = static_cast<int64_t>(plan.row_token.size());

  // Weights: U(-a, a), a = sqrt(3 / fan_in), quantized; biases U(-0.5, 0.5).
  std::vector<std::vector<float>> w13d(static_cast<size_t>(G)), w2d(static_cast<size_t>(G));
  std::vector<StaticPackedMatrix> p13, p2;
  std::vector<float> b13(static_cast<size_t>(G * R), 0.0f), b2(static_cast<size_t>(G * H), 0.0f);
  std::uniform_real_distribution<float> ub(-0.5f, 0.5f);
  for (int g = 0; g < G; ++g) {
    std::vector<float> w(static_cast<size_t>(R * H)), v(static_cast<size_t>(H * I));
    std::uniform_real_distribution<float> u13(-std::sqrt(3.0f / H), std::sqrt(3.0f / H));
    std::uniform_real_distribution<float> u2(-std::sqrt(3.0f / I), std::sqrt(3.0f / I));
    for (float& x : w) x = u13(rng);
    for (float& x : v) x = u2(rng);
    const QuantizedMatrix q13 = quantize_weight(c.quant, w.data(), R, H);
    const QuantizedMatrix q2 = quantize_weight(c.quant, v.data(), H, I);
    w13d[static_cast<size_t>(g)].resize(w.size());
    w2d[static_cast<size_t>(g)].resize(v.size());
    dequantize_rows(q13, 0, R, w13d[static_cast<size_t>(g)].data());
    dequantize_rows(q2, 0, H, w2d[static_cast<size_t>(g)].data());
    p13.push_back(pack_static_matrix(q13, gated));
    p2.push_back(pack_static_matrix(q2, false));
    if (c.bias) {
      for (int64_t j = 0; j < R; ++j) b13[static_cast<size_t>(g * R + j)] = ub(rng);
      for (int64_t j = 0; j < H; ++j) b2[static_cast<size_t>(g * H + j)] = ub(rng);
    }
  }

  // Input x: N(0, 1) rounded to bf16.
  std::vector<uint16_t> x16(static_cast<size_t>(T * H));
  std::vector<float> xq(x16.size());
  std::normal_distribution<float> un(0.0f, 1.0f);
  for (size_t i = 0; i < x16.size(); ++i) {
    x16[i] = float_to_bf16(un(rng));
    xq[i] = bf16_to_float(x16[i]);
  }

  // ---- host reference ----
  fake_quantize_activations(c.quant.method, xq.data(), T, H);
  std::vector<float> h(static_cast<size_t>(rows * I));
  for (int64_t r = 0; r < rows; ++r) {
    const int g = plan.row_group[static_cast<size_t>(r)];
    const float* xr = xq.data() + plan.row_token[static_cast<size_t>(r)] * H;
    const float* w = w13d[static_cast<size_t>(g)].data();
    std::vector<double> pre(static_cast<size_t>(R));
    for (int64_t j = 0; j < R; ++j) {
      double s = b13[static_cast<size_t>(g * R + j)];
      for (int64_t k = 0; k < H; ++k) s += static_cast<double>(xr[k]) * w[j * H + k];
      pre[static_cast<size_t>(j)] = s;
    }
    for (int64_t j = 0; j < I; ++j)
      h[static_cast<size_t>(r * I + j)] = static_cast<float>(
          gated ? act_ref(c.act, pre[static_cast<size_t>(j)], pre[static_cast<size_t>(I + j)])
                : act_ref(c.act, pre[static_cast<size_t>(j)], 0));
  }
  fake_quantize_activations(c.quant.method, h.data(), rows, I);
  std::vector<double> y(static_cast<size_t>(rows * H));
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = w2d[static_cast<size_t>(plan.row_group[static_cast<size_t>(r)])].data();
    for (int64_t n = 0; n < H; ++n) {
      double s = 0;
      for (int64_t j = 0; j < I; ++j)
        s += static_cast<double>(h[static_cast<size_t>(r * I + j)]) * w[n * I + j];
      y[static_cast<size_t>(r * H + n)] = s;
    }
  }
  std::vector<double> ref;
  if (c.fused) {
    ref.assign(static_cast<size_t>(T * H), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int s = 0; s < slots; ++s) {
        const int32_t r = plan.token_slot_row[static_cast<size_t>(t * slots + s)];
        const double wt = s < K ? weights[static_cast<size_t>(t * K + s)] : 1.0;
        const int g = plan.row_group[static_cast<size_t>(r)];
        for (int64_t n = 0; n < H; ++n)
          ref[static_cast<size_t>(t * H + n)] +=
              wt * (y[static_cast<size_t>(r * H + n)] + b2[static_cast<size_t>(g * H + n)]);
      }
  } else {
    ref = y;
  }

  // ---- device ----
  StaticMoEDesc d;
  d.quant = c.quant;
  d.activation = c.act;
  d.hidden = H;
  d.intermediate = I;
  d.num_groups = G;
  d.top_k = K;
  d.num_shared = c.shared;
  d.max_tokens = T + 3;  // capacity above the call, as a layer would have
  std::vector<std::unique_ptr<DeviceBuffer>> wbufs;
  std::vector<StaticExpertPtrs> table(static_cast<size_t>(G));
  for (int g = 0; g < G; ++g) {
    for (int m = 0; m < 2; ++m) {
      const StaticPackedMatrix& pm =
          m == 0 ? p13[static_cast<size_t>(g)] : p2[static_cast<size_t>(g)];
      wbufs.push_back(std::make_unique<DeviceBuffer>(pm.bytes.size()));
      upload(*wbufs.back(), pm.bytes);
      (m == 0 ? table[static_cast<size_t>(g)].w13 : table[static_cast<size_t>(g)].w2) =
          wbufs.back()->as<uint8_t>();
    }
    table[static_cast<size_t>(g)].w13_alpha = p13[static_cast<size_t>(g)].alpha;
    table[static_cast<size_t>(g)].w2_alpha = p2[static_cast<size_t>(g)].alpha;
  }
  DeviceBuffer dtable(table.size() * sizeof(StaticExpertPtrs)), db13(b13.size() * 4),
      db2(b2.size() * 4), dx(x16.size() * 2), dw(weights.size() * 4), doff(plan.offsets.size() * 4),
      drt(plan.row_token.size() * 4), drg(plan.row_group.size() * 4),
      dtsr(plan.token_slot_row.size() * 4), dout(ref.size() * 2), dws(static_workspace_bytes(d));
  upload(dtable, table);
  upload(db13, b13);
  upload(db2, b2);
  upload(dx, x16);
  upload(dw, weights);
  upload(doff, plan.offsets);
  upload(drt, plan.row_token);
  upload(drg, plan.row_group);
  upload(dtsr, plan.token_slot_row);
  static_workspace_init(d, dws.ptr, nullptr);

  StaticMoEArgs a;
  a.experts = dtable.as<StaticExpertPtrs>();
  a.w13_bias = c.bias ? db13.as<float>() : nullptr;
  a.w2_bias = c.bias ? db2.as<float>() : nullptr;
  a.hidden = dx.ptr;
  a.tokens = T;
  a.plan.num_groups = G;
  a.plan.group_offsets = doff.as<int32_t>();
  a.plan.row_token = drt.as<int32_t>();
  a.plan.row_group = drg.as<int32_t>();
  a.plan.token_slot_row = dtsr.as<int32_t>();
  a.topk_weights = dw.as<float>();
  (c.fused ? a.out : a.y) = dout.ptr;
  a.workspace = dws.ptr;

  std::vector<uint16_t> got(ref.size()), again(ref.size());
  for (std::vector<uint16_t>* dst : {&got, &again}) {     // twice: results must be bitwise equal
    CUDA_OK(cudaMemset(dout.ptr, 0xFF, ref.size() * 2));  // poison: bf16 NaN
    launch_static_moe(d, a, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(dst->data(), dout.ptr, ref.size() * 2, cudaMemcpyDeviceToHost));
  }
  EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 2), 0) << "not deterministic";

  // Every element: finite (not the poison) and within 16 bf16 steps of its own size plus 2% of
  // the RMS (an intermediate that rounded the other way moves an output by a few % of RMS for
  // e4m3); the relative L2 over all elements against the tolerance above.
  double err2 = 0, ref2 = 0;
  for (double v : ref) ref2 += v * v;
  const double rms = std::sqrt(ref2 / static_cast<double>(ref.size()));
  const double elem_rms =
      (c.quant.method == QuantMethod::kFP8PerTensor || c.quant.method == QuantMethod::kFP8Block128)
          ? 0.08
          : 0.02;
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double v = bf16_to_float(got[i]);
    ASSERT_TRUE(std::isfinite(v)) << "element " << i << " not written (poison) or not finite";
    const double e = v - ref[i];
    err2 += e * e;
    if (std::fabs(e) > 16 * std::ldexp(std::fabs(ref[i]), -8) + elem_rms * rms && bad++ < 5)
      ADD_FAILURE() << "element " << i << " (token/row " << i / H << ", col " << i % H << "): got "
                    << v << ", want " << ref[i];
  }
  EXPECT_EQ(bad, 0);
  const double rel = std::sqrt(err2 / ref2);
  // The same error budget as the layer against moe_reference: the host side here has the same
  // semantics (quant.h's quantizers, fp64 elsewhere), so what differs is the bf16 rounding of the
  // outputs (relative RMS ~2^-9 / sqrt(3)) and rare intermediate rounding flips between fp32 and
  // fp64 (moe_tolerance's reasons, per format).
  EXPECT_LE(rel, moe_tolerance(c.quant.method)) << "relative L2 " << rel;

  // The shared experts' L2 prefetch (on by default for fp8_block128, off for the others) is a
  // hint: forced off and forced on (SERVEKIT_STATIC_SHARED_PREFETCH=0, 1), the same bits as the
  // default, every element written.
  if (c.shared > 0 && T <= 8) {
    for (const char* mode : {"0", "1"}) {
      ASSERT_EQ(setenv("SERVEKIT_STATIC_SHARED_PREFETCH", mode, 1), 0);
      CUDA_OK(cudaMemset(dout.ptr, 0xFF, ref.size() * 2));
      launch_static_moe(d, a, nullptr);
      unsetenv("SERVEKIT_STATIC_SHARED_PREFETCH");
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(again.data(), dout.ptr, ref.size() * 2, cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 2), 0)
          << "SERVEKIT_STATIC_SHARED_PREFETCH=" << mode << " changed bits";
    }
  }

  // The fix-up and the fused combine load a chunk of parts or slots before summing them; the
  // slot-by-slot code (SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1) sums the same values in the same
  // order: the same bits, every element written.
  {
    const testing::ScopedEnv serial("SERVEKIT_DIAG_STATIC_SERIAL_TAIL", "1");
    CUDA_OK(cudaMemset(dout.ptr, 0xFF, ref.size() * 2));
    launch_static_moe(d, a, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(again.data(), dout.ptr, ref.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 2), 0)
        << "SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1 changed bits";
  }

  // The timing diagnostic (SERVEKIT_DIAG_STATIC_TIMES) on the bf16 fused cases: one more launch
  // with the stamps on gives the same bits, and a report whose quantiles are in stamp order.
  if (c.quant.method == QuantMethod::kBF16 && c.fused) {
    ASSERT_EQ(setenv("SERVEKIT_DIAG_STATIC_TIMES", "1", 1), 0);
    static_diag_times_prepare();
    CUDA_OK(cudaMemset(dout.ptr, 0xFF, ref.size() * 2));
    launch_static_moe(d, a, nullptr);
    const std::string report = static_diag_times_report();
    unsetenv("SERVEKIT_DIAG_STATIC_TIMES");
    CUDA_OK(cudaMemcpy(again.data(), dout.ptr, ref.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * 2), 0) << "stamps changed bits";
    EXPECT_EQ(static_diag_times_report(), "") << "a report is given once";
    // 2 GEMMs x 4 stamps; p50 of each stamp >= the previous stamp's min, exit last.
    std::vector<std::array<double, 5>> q;
    size_t pos = 0;
    while ((pos = report.find("min ", pos)) != std::string::npos) {
      std::array<double, 5> v{};
      ASSERT_EQ(std::sscanf(report.c_str() + pos, "min %lf p10 %lf p50 %lf p90 %lf max %lf", &v[0],
                            &v[1], &v[2], &v[3], &v[4]),
                5)
          << report;
      q.push_back(v);
      pos += 4;
    }
    ASSERT_EQ(q.size(), 8u) << report;
    for (size_t i = 0; i < q.size(); ++i) {
      EXPECT_TRUE(std::is_sorted(q[i].begin(), q[i].end())) << report;
      if (i % 4 != 0) {
        EXPECT_GE(q[i][4], q[i - 1][0]) << report;
      }
    }
    EXPECT_EQ(q[1][0], 0.0) << "times count from GEMM1's first release\n" << report;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const QuantConfig formats[] = {
      {QuantMethod::kBF16, 128},        {QuantMethod::kFP8PerTensor, 128},
      {QuantMethod::kFP8Block128, 128}, {QuantMethod::kMXFP4W4A16, 128},
      {QuantMethod::kNVFP4W4A16, 128},  {QuantMethod::kInt4W4A16, 128}};
  // Every format: tokens 1, 8, 32, 256, uniform and all-on-one-expert routing, 16 experts top-4
  // plus a shared expert, biases on the skewed runs.
  for (const QuantConfig& q : formats)
    for (int64_t t : {1, 8, 32, 256})
      for (Skew s : {Skew::kUniform, Skew::kOneExpert})
        v.push_back({q, Activation::kSwiGLU, 512, 384, 16, 4, 1, t, s, s == Skew::kOneExpert});
  // The other int4 group sizes and activations, odd shapes, and the unfused (y) output.
  v.push_back({{QuantMethod::kInt4W4A16, 32},
               Activation::kSwiGLU,
               512,
               384,
               16,
               4,
               1,
               8,
               Skew::kUniform,
               true});
  v.push_back({{QuantMethod::kInt4W4A16, 64},
               Activation::kGeGLU,
               512,
               384,
               16,
               4,
               1,
               32,
               Skew::kOneExpert,
               false});
  v.push_back({{QuantMethod::kMXFP4W4A16, 128},
               Activation::kSwiGLUOAI,
               2880,
               2880,
               8,
               4,
               0,
               8,
               Skew::kUniform,
               true});
  v.push_back({{QuantMethod::kBF16, 128},
               Activation::kReLU2,
               2880,
               1856,
               9,
               3,
               0,
               5,
               Skew::kUniform,
               true});
  v.push_back({{QuantMethod::kNVFP4W4A16, 128},
               Activation::kGeGLU,
               1024,
               1856,
               7,
               6,
               2,
               17,
               Skew::kOneExpert,
               true});
  v.push_back({{QuantMethod::kFP8Block128, 128},
               Activation::kSwiGLU,
               1024,
               512,
               16,
               4,
               1,
               32,
               Skew::kUniform,
               true,
               false});
  v.push_back({{QuantMethod::kBF16, 128},
               Activation::kSwiGLU,
               512,
               384,
               16,
               4,
               1,
               8,
               Skew::kOneExpert,
               true,
               false});
  // Top-8 plus a shared expert: 9 slots, so the fused combine's loads take two chunks
  // (static_combine_quad); at one token the stream-K fix-up has units in more parts than one
  // chunk (static_fixup) too.
  for (int64_t t : {1, 32})
    v.push_back({{QuantMethod::kInt4W4A16, 128},
                 Activation::kSwiGLU,
                 512,
                 384,
                 16,
                 8,
                 1,
                 t,
                 Skew::kUniform,
                 false});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Formats, StaticMoECuda, ::testing::ValuesIn(cases()), case_name);

TEST(StaticMoECudaArgs, RejectsBadArguments) {
  SERVEKIT_REQUIRE_GPU();
  StaticMoEDesc d;
  d.quant = {QuantMethod::kBF16, 128};
  d.hidden = 512;
  d.intermediate = 384;
  d.num_groups = 4;
  d.top_k = 2;
  d.max_tokens = 8;
  StaticMoEArgs a;
  EXPECT_THROW(launch_static_moe(d, a, nullptr), Error);  // null pointers, tokens 0
  StaticMoEDesc bad = d;
  bad.hidden = 500;
  EXPECT_THROW(static_workspace_bytes(bad), Error);
  bad = d;
  bad.quant = {QuantMethod::kMXFP4W4A8, 128};
  EXPECT_THROW(static_workspace_bytes(bad), Error);

  // static_task_build: the input's preparation only for fp8_per_tensor, on at least one CTA;
  // none at all for fp8_block128 from two tokens on (its planner builds the tasks; at one token
  // the route + plan launch does, with x's 1x128 quantization: below); tokens outside
  // 1..max_tokens and a null or misaligned hidden are errors. The switch is pinned to its
  // default so that a caller's environment cannot change what is checked.
  const testing::ScopedEnv route_tasks("SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS", "1");
  DeviceBuffer x(sizeof(uint16_t) * d.max_tokens * d.hidden + 16);
  for (QuantMethod q :
       {QuantMethod::kBF16, QuantMethod::kFP8PerTensor, QuantMethod::kFP8Block128}) {
    StaticMoEDesc e = d;
    e.quant = {q, 128};
    DeviceBuffer ws(static_workspace_bytes(e));
    ASSERT_NE(ws.ptr, nullptr);
    const static_moe::StaticTaskBuild b = static_task_build(e, ws.ptr, x.ptr, 3);
    EXPECT_EQ(b.tasks != nullptr, q != QuantMethod::kFP8Block128) << quant_name(q);
    EXPECT_EQ(b.input.ctas > 0, q == QuantMethod::kFP8PerTensor) << quant_name(q);
    EXPECT_EQ(b.input.amax_slots != nullptr, q == QuantMethod::kFP8PerTensor) << quant_name(q);
    EXPECT_EQ(b.input.xq, nullptr) << quant_name(q);
    if (b.input.ctas > 0) {
      EXPECT_EQ(b.input.x_elems, 3 * e.hidden);
    }
    EXPECT_THROW(static_task_build(e, ws.ptr, x.ptr, 0), Error);
    EXPECT_THROW(static_task_build(e, ws.ptr, x.ptr, e.max_tokens + 1), Error);
    EXPECT_THROW(static_task_build(e, ws.ptr, nullptr, 3), Error);
    EXPECT_THROW(static_task_build(e, ws.ptr, x.as<uint8_t>() + 2, 3), Error);
    EXPECT_THROW(static_task_build(e, nullptr, x.ptr, 3), Error);
    if (q == QuantMethod::kFP8Block128) {
      const static_moe::StaticTaskBuild one = static_task_build(e, ws.ptr, x.ptr, 1);
      EXPECT_NE(one.tasks, nullptr);
      EXPECT_GT(one.input.ctas, 0);
      EXPECT_NE(one.input.xq, nullptr);
      EXPECT_NE(one.input.xs, nullptr);
      EXPECT_EQ(one.input.amax_slots, nullptr);
      EXPECT_EQ(one.input.x_elems, e.hidden);
      // From two tokens its planner quantizes x: tasks_built (no planner) is refused, after every
      // other check passed (the pointers are never read: the call throws before any launch).
      int32_t* p32 = x.as<int32_t>();
      StaticMoEArgs t;
      t.experts = x.as<StaticExpertPtrs>();
      t.hidden = t.out = t.workspace = x.ptr;
      t.tokens = 3;
      t.topk_weights = x.as<float>();
      t.plan.num_groups = e.num_groups;
      t.plan.group_offsets = t.plan.row_token = t.plan.row_group = t.plan.token_slot_row = p32;
      t.tasks_built = true;
      try {
        launch_static_moe(e, t, nullptr);
        ADD_FAILURE() << "tasks_built accepted for fp8_block128";
      } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("tasks_built"), std::string::npos) << err.what();
      }
    }
  }
}

}  // namespace
}  // namespace servekit::cuda
