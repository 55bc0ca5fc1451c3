// servekit/moe.h — the Mixture-of-Experts layer.
//
//   out[t] = sum_k  w[t,k] * FFN_{e[t,k]}(x[t])   +   sum_s FFN_shared_s(x[t])
//   FFN(x) = act(x · W13ᵀ + b13) · W2ᵀ + b2
//
// over the routed experts e[t,k] that fall in the local range [local_expert_offset,
// local_expert_offset + local_num_experts) (others contribute nothing: expert parallelism), with
// shared experts seeing every token with weight 1. The sum runs in a fixed order (k = 0..K-1,
// then shared experts) in fp32, so results do not depend on scheduling.
//
// Canonical weights (host, bf16, row-major, K-major "y = x · Wᵀ"):
//   w13 [E_local, R, H]  R = 2I for gated activations (rows [0, I) gate, [I, 2I) up), I for ReLU²
//   w2  [E_local, H, I]
//   w13_bias [E_local, R], w2_bias [E_local, H]  optional, f32 or bf16
//   shared_* the same with S = num_shared_experts in place of E_local
// prepare_weights / load_expert convert them once into the layout of ExecutionConfig's backend
// and QuantConfig's format (quant.h); the caller's buffers are not kept.
//
// Activations (g = gate half, u = up half of x · W13ᵀ + b13):
//   kSwiGLU     silu(g) * u
//   kGeGLU      gelu(g) * u            (erf form)
//   kSwiGLUOAI  gpt-oss: g' = min(g, 7), u' = clamp(u, -7, 7), (u' + 1) * g' * sigmoid(1.702 g')
//   kReLU2      relu(h)^2              (not gated: W13 has I rows)
// All in fp32. The CUDA backend computes the sigmoids' exponential and division with the
// hardware approximations (__expf, __fdividef: a few fp32 ulp, ~1e-6 relative), far below the
// bf16 or e4m3 rounding of the activation that follows; the CPU backend uses std::exp and IEEE
// division.
// A NaN gate or up value gives a NaN output in every activation (the clamps and the relu do not
// turn it into a number), so a NaN in a token's input reaches that token's output on every
// backend and path instead of becoming a finite, wrong value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "servekit/quant.h"
#include "servekit/routing.h"
#include "servekit/tensor.h"

namespace servekit {

enum class Activation : uint8_t { kSwiGLU, kGeGLU, kSwiGLUOAI, kReLU2 };

std::string_view activation_name(Activation a);
Activation parse_activation(std::string_view name);  // throws servekit::Error
constexpr bool activation_is_gated(Activation a) {
  return a != Activation::kReLU2;
}
constexpr float kSwiGLUOAIAlpha = 1.702f;
constexpr float kSwiGLUOAILimit = 7.0f;

struct ExpertConfig {
  int64_t hidden_size = 0;        // H
  int64_t intermediate_size = 0;  // I (per expert)
  int local_expert_offset = 0;    // first global expert id held here
  int local_num_experts = -1;     // experts held here; -1 = all (num_experts - offset)
  int num_shared_experts = 0;     // S, fused into the same pass, weight 1
};

// Which kernel family runs a forward. kAuto picks by routed rows (tokens x top_k) against the
// tuned cutover (a CUDA layer whose max_num_tokens never crosses it builds only the static path:
// MoELayer::device_weight_bytes); the CPU backend ignores it.
enum class MoEPath : uint8_t { kAuto, kStatic, kDynamic };

struct ExecutionConfig {
  int64_t max_num_tokens = 1024;  // capacity: workspace is sized for it once, at construction
  Device device = Device::cpu();
  int num_threads = 0;  // CPU backend: 0 = all hardware threads
  MoEPath path = MoEPath::kAuto;
  bool keep_host_weights = false;  // CUDA backend: also keep the prepared host copy (for checks)
};

struct MoEConfig {
  RoutingConfig routing;
  QuantConfig quant;
  ExpertConfig experts;
  Activation activation = Activation::kSwiGLU;
  ExecutionConfig exec;
};

// Resolves defaults (local_num_experts = -1) and throws servekit::Error for any invalid field,
// naming it, its value and the valid range.
MoEConfig validate_moe_config(MoEConfig cfg);
// Rows of W13: 2I for gated activations, I otherwise.
inline int64_t w13_rows(const MoEConfig& c) {
  return activation_is_gated(c.activation) ? 2 * c.experts.intermediate_size
                                           : c.experts.intermediate_size;
}

// One expert's canonical weights (host, bf16; biases f32 or bf16, optional).
struct ExpertWeightsView {
  TensorView w13;       // [R, H]
  TensorView w2;        // [H, I]
  TensorView w13_bias;  // [R] or undefined
  TensorView w2_bias;   // [H] or undefined
};

// All experts' canonical weights, stacked (see the top of this file).
struct MoEWeights {
  TensorView w13, w2, w13_bias, w2_bias;                              // [E_local, ...]
  TensorView shared_w13, shared_w2, shared_w13_bias, shared_w2_bias;  // [S, ...]
};

struct MoEInputs {
  TensorView hidden;           // [T, H] bf16, contiguous, on the layer's device (CUDA: 16-byte
                               // aligned, as out)
  TensorView router_logits;    // [T, E] f32 or bf16 (all methods but kPrecomputed)
  TensorView correction_bias;  // [E] f32 (kDeepSeekV3, kMiniMax)
  TensorView topk_ids;         // [T, K] int32 global ids, kPrecomputed only; -1 = no expert
  TensorView topk_weights;     // [T, K] f32, kPrecomputed only
};

// A prepared expert in the plain host layout of quant.h, with biases in fp32 (empty if none).
struct PreparedExpert {
  QuantizedMatrix w13;  // [R, H]
  QuantizedMatrix w2;   // [H, I]
  std::vector<float> w13_bias, w2_bias;
};

class MoELayer {
 public:
  // Validates the config and allocates workspace for exec.max_num_tokens on exec.device.
  // Throws servekit::Error for an invalid config, or a CUDA device in a build without CUDA.
  explicit MoELayer(const MoEConfig& cfg);
  ~MoELayer();
  MoELayer(MoELayer&&) noexcept;
  MoELayer& operator=(MoELayer&&) noexcept;

  const MoEConfig& config() const;

  // Converts all weights at once (shapes as at the top of this file).
  void prepare_weights(const MoEWeights& w);
  // Converts one routed expert (local index 0..E_local-1) or one shared expert (0..S-1).
  // Calls for distinct experts may run concurrently from several threads (loading 257 experts
  // one by one takes minutes); calls for the same expert, or concurrent with forward, may not.
  // Experts never loaded must never be routed to: forward throws if one is (CPU backend) or
  // reads zero weights (CUDA backend, which keeps no host-side routing).
  void load_expert(int local_expert, const ExpertWeightsView& w);
  void load_shared_expert(int shared_index, const ExpertWeightsView& w);
  bool expert_loaded(int local_expert) const;

  // The prepared host copy of an expert (CPU backend, or CUDA with keep_host_weights), for
  // references and checks; nullptr if not loaded or not kept. shared experts follow the routed
  // ones: index E_local + s.
  const PreparedExpert* prepared_expert(int index) const;

  // Runs the layer. out: [T, H] bf16 contiguous on the layer's device, 1 <= T <= max_num_tokens.
  // stream: a cudaStream_t for the CUDA backend (nullptr = default stream), ignored on the CPU.
  // Throws servekit::Error naming the argument for a wrong dtype, shape, device or layout.
  // out may be in.hidden itself (an in-place forward, bit for bit the same result: every
  // backend reads all of hidden before it writes out); any other overlap of out with an input
  // (part of hidden, router_logits, correction_bias, topk_ids, topk_weights) throws, since some
  // paths read those after out's first write.
  // One workspace per layer (sized at construction): the device work of two forwards of the same
  // layer must not overlap. Calls on one stream are ordered by the stream; calls on different
  // streams (two micro-batches overlapped on two streams, say) are ordered by the layer: a
  // forward on another stream than the layer's last eager forward makes its stream wait for
  // that forward first (an event recorded at the end of every eager forward; streams told apart
  // by cudaStreamGetId, so cudaStreamPerThread on two threads counts as two streams).
  // SERVEKIT_FORWARD_STREAM_ORDER=0 (read at construction) turns that off, leaving calls on
  // different streams to the caller to order with events. A forward captured into a CUDA graph
  // neither waits nor records: replays of graphs that captured forwards of one layer must be
  // ordered by the caller, against each other and against eager forwards on other streams.
  // There is no second workspace over the same weights: two MoELayer objects hold two copies of
  // the weights. Overlapping forwards corrupt each other's results and can leave the static
  // path's unit counters (each reset by the launch that finishes with it) in a state that makes
  // later calls wrong too. A forward that starts while another forward of the layer is running
  // on another host thread throws servekit::Error (the CPU backend's buffers are host memory, so
  // on the CPU that is the whole guard).
  void forward(const MoEInputs& in, TensorView out, void* stream = nullptr);

  // Bytes of device memory the layer holds for expert weights (codes, scales, biases of all
  // E_local + S experts, allocated at construction), in every layout it keeps; 0 on the CPU.
  // On CUDA, exec.path decides the layouts: kDynamic keeps the grouped GEMMs' layout (bf16 for
  // the 4-bit formats, dequantized at load: 4x their codes), kStatic the static kernels' layout
  // (the format's own bytes), kAuto both, so that it can take either path per call, unless
  // max_num_tokens x top_k is within the static path's cutover (src/tune/moe_path.cpp, and
  // SERVEKIT_MOE_CUTOVER_ROWS as set when the layer is built): then every call runs the static
  // path and only its layout is kept.
  size_t device_weight_bytes() const;

  // What a forward of `tokens` tokens runs, for logs and benchmark records; never changes
  // results. "cpu"; "static"; or on the dynamic path each grouped GEMM's tile (M x N x K in the
  // kernel's terms, swap-AB when M is the weights, schedule, cluster) and whether GEMM1 runs the
  // activation in its epilogue, e.g. "dynamic: gemm1 256x144x64 swap-AB cooperative cluster 2x1
  // + activation; gemm2 256x144x64 swap-AB cooperative cluster 2x1". Where the GPU picks between
  // two tiles on the routed rows it sees, both are named: "<tile> or <tile> (device pick)". It
  // follows the same picks as forward (exec.path, the cutover, the tile choice and its
  // SERVEKIT_GEMM_TILE / SERVEKIT_GEMM_SWAP overrides as read at construction). Throws
  // servekit::Error unless 1 <= tokens <= exec.max_num_tokens.
  std::string kernels(int64_t tokens) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servekit
