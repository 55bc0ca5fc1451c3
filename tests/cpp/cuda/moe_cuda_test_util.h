// Shared by the MoE layer's GPU tests (test_moe_cuda.cpp, test_moe_cuda_paths.cpp): a test case
// and its layer config and experts, random inputs and their device copies, and the forward
// checked against the fp64 reference (src/cpu/moe_reference.h) on a sample of tokens.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/random_data.h"
#include "cpu/moe_reference.h"
#include "cuda/device_array.h"
#include "gpu_test_util.h"
#include "servekit/moe.h"

// Their own namespace, not the library's; the test files take it with a using-directive.
namespace servekit::moe_cuda_test {

// Tolerance: moe_tolerance(m, kCUDA) (src/cpu/moe_reference.cpp gives the reasons).
inline double cuda_tolerance(QuantMethod m) {
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

inline MoEConfig make_config(const Case& c) {
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
inline void load_experts(MoELayer& layer, const Case& c) {
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

inline Inputs make_inputs(const Case& c, int64_t tokens) {
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
  testing::DeviceArray<uint16_t>& out_buffer() { return out_; }

 private:
  static std::vector<uint16_t> with_lead(const std::vector<uint16_t>& v, int lead) {
    std::vector<uint16_t> out(static_cast<size_t>(lead), 0);
    out.insert(out.end(), v.begin(), v.end());
    return out;
  }
  testing::DeviceArray<uint16_t> hidden_;
  testing::DeviceArray<float> logits_, bias_;
  testing::DeviceArray<int32_t> ids_;
  testing::DeviceArray<float> weights_;
  testing::DeviceArray<uint16_t> out_;
  MoEInputs view_;
  TensorView out_view_;
};

inline std::vector<float> to_float(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_float(bits[i]);
  return f;
}

// Tokens checked against the reference: all, or `sample` spread over the batch (first and last
// included).
inline std::vector<int64_t> sample_tokens(int64_t tokens, int sample) {
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
inline void check_output(const MoELayer& layer, const Case& c, const Inputs& in,
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
inline std::vector<float> forward(MoELayer& layer, DeviceInputs& dev, cudaStream_t stream) {
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
inline void check_forward(MoELayer& layer, const Case& c) {
  const Inputs in = make_inputs(c, c.tokens);
  DeviceInputs dev(in, c);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const std::vector<float> out = forward(layer, dev, stream);
  check_output(layer, c, in, out);
  cudaStreamDestroy(stream);
}

inline void run_case(const Case& c) {
  MoELayer layer(make_config(c));
  load_experts(layer, c);
  check_forward(layer, c);
}

inline std::string case_name(const Case& c) {
  return std::string(quant_name(c.quant)) + "/" + std::string(routing_name(c.routing)) + "/" +
         std::string(activation_name(c.activation)) + "/T" + std::to_string(c.tokens);
}

}  // namespace servekit::moe_cuda_test
