// MoELayer: validates the config and every forward argument, converts canonical bf16 weights
// into prepared experts (quant.h) and hands them to the backend (moe/backend.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/exclusive_call.h"
#include "moe/backend.h"
#include "servekit/formats.h"

namespace servekit {

namespace {

constexpr Activation kAllActivations[] = {Activation::kSwiGLU, Activation::kGeGLU,
                                          Activation::kSwiGLUOAI, Activation::kReLU2};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string dtypes_str(const std::vector<DType>& dtypes) {
  std::string s;
  for (size_t i = 0; i < dtypes.size(); ++i)
    s += (i ? " or " : "") + std::string(dtype_name(dtypes[i]));
  return s;
}

// Checks that `t` is defined, on `device`, of one of `dtypes` and of exactly `shape`;
// `contiguous` additionally requires a row-major layout. `where` prefixes the message
// ("moe.forward"), `name` is the argument.
void check_tensor(const TensorView& t, const std::string& where, const std::string& name,
                  const std::vector<DType>& dtypes, const std::vector<int64_t>& shape,
                  Device device, bool contiguous) {
  const std::string expected = shape_str(shape) + " " + dtypes_str(dtypes) + " " + device.str();
  SERVEKIT_CHECK(t.defined(), where, ": ", name, " is required (expected ", expected, ")");
  bool shape_ok = t.ndim == static_cast<int>(shape.size());
  for (int d = 0; shape_ok && d < t.ndim; ++d) shape_ok = t.shape[d] == shape[d];
  SERVEKIT_CHECK(shape_ok, where, ": ", name, " has shape ", t.str(), ", expected ", expected);
  bool dtype_ok = false;
  for (DType d : dtypes) dtype_ok = dtype_ok || t.dtype == d;
  SERVEKIT_CHECK(dtype_ok, where, ": ", name, " has dtype ", dtype_name(t.dtype), ", expected ",
                 dtypes_str(dtypes));
  SERVEKIT_CHECK(t.device == device, where, ": ", name, " is on ", t.device.str(),
                 " but must be on ", device.str(), " (the layer's device)");
  SERVEKIT_CHECK(t.numel() == 0 || t.data != nullptr, where, ": ", name, " ", t.str(),
                 " has a null data pointer");
  if (contiguous) {
    std::vector<int64_t> strides(t.strides.begin(), t.strides.begin() + t.ndim);
    SERVEKIT_CHECK(t.is_contiguous(), where, ": ", name, " ", t.str(), " has strides ",
                   shape_str(strides), " but must be contiguous (row-major)");
  }
}

// forward's out against an input (both checked contiguous): out may be `hidden` itself (an
// in-place forward: every backend has read all of hidden before it writes out), and must
// otherwise share no byte with it or with any other input, which some paths read after out's
// first write (the CUDA combine reads topk_weights; include/servekit/moe.h).
void check_out_apart(const TensorView& out, const TensorView& t, const std::string& where,
                     const std::string& name, bool may_be_it) {
  if (!t.defined() || t.nbytes() == 0 || (may_be_it && t.data == out.data)) return;
  const auto o = reinterpret_cast<uintptr_t>(out.data), b = reinterpret_cast<uintptr_t>(t.data);
  SERVEKIT_CHECK(o + out.nbytes() <= b || b + t.nbytes() <= o, where, ": out ", out.str(),
                 " overlaps ", name, " ", t.str(), "; out must ",
                 may_be_it ? "be hidden itself (in place) or apart from it" : "not overlap it");
}

// Offset in storage elements of element (lead, i, j) of a [n, rows, cols] view, or (i, j) of a
// [rows, cols] view when lead < 0.
int64_t offset_of(const TensorView& t, int64_t lead, int64_t i, int64_t j) {
  const int d = t.ndim - 2;
  return (lead >= 0 ? lead * t.strides[0] : 0) + i * t.strides[d] + j * t.strides[d + 1];
}

std::vector<float> bf16_matrix_to_float(const TensorView& t, int64_t lead, int64_t rows,
                                        int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const auto* p = t.ptr<const uint16_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = bf16_to_float(p[offset_of(t, lead, i, j)]);
  return out;
}

// A bias [n] or slice `lead` of [E, n], f32 or bf16, as fp32.
std::vector<float> bias_to_float(const TensorView& t, int64_t lead, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  const int64_t base = lead >= 0 ? lead * t.strides[0] : 0;
  const int64_t step = t.strides[t.ndim - 1];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = base + i * step;
    out[i] = t.dtype == DType::kF32 ? t.ptr<const float>()[at]
                                    : bf16_to_float(t.ptr<const uint16_t>()[at]);
  }
  return out;
}

// The four tensors of one expert: either 2-D views (lead < 0) or slice `lead` of stacked views.
struct ExpertSource {
  TensorView w13, w2, w13_bias, w2_bias;
  int64_t lead;   // -1 for per-expert views
  int64_t count;  // leading extent of stacked views
};

void check_expert_source(const MoEConfig& cfg, const ExpertSource& s, const std::string& where,
                         const std::string& prefix) {
  const int64_t R = w13_rows(cfg), H = cfg.experts.hidden_size, I = cfg.experts.intermediate_size;
  auto dims = [&](std::vector<int64_t> d) {
    if (s.lead >= 0) d.insert(d.begin(), s.count);
    return d;
  };
  const Device host = Device::cpu();
  check_tensor(s.w13, where, prefix + "w13", {DType::kBF16}, dims({R, H}), host, false);
  check_tensor(s.w2, where, prefix + "w2", {DType::kBF16}, dims({H, I}), host, false);
  if (s.w13_bias.defined())
    check_tensor(s.w13_bias, where, prefix + "w13_bias", {DType::kF32, DType::kBF16}, dims({R}),
                 host, false);
  if (s.w2_bias.defined())
    check_tensor(s.w2_bias, where, prefix + "w2_bias", {DType::kF32, DType::kBF16}, dims({H}), host,
                 false);
}

// Converts one (already checked) expert: bf16 -> fp32 -> the format's quantizer.
std::shared_ptr<const PreparedExpert> prepare_expert(const MoEConfig& cfg, const ExpertSource& s) {
  const int64_t R = w13_rows(cfg), H = cfg.experts.hidden_size, I = cfg.experts.intermediate_size;
  auto e = std::make_shared<PreparedExpert>();
  {
    const std::vector<float> w = bf16_matrix_to_float(s.w13, s.lead, R, H);
    e->w13 = quantize_weight(cfg.quant, w.data(), R, H);
  }
  {
    const std::vector<float> w = bf16_matrix_to_float(s.w2, s.lead, H, I);
    e->w2 = quantize_weight(cfg.quant, w.data(), H, I);
  }
  if (s.w13_bias.defined()) e->w13_bias = bias_to_float(s.w13_bias, s.lead, R);
  if (s.w2_bias.defined()) e->w2_bias = bias_to_float(s.w2_bias, s.lead, H);
  return e;
}

std::unique_ptr<MoEBackend> make_backend(const MoEConfig& cfg) {
  if (!cfg.exec.device.is_cuda()) return make_cpu_backend(cfg);
#ifdef SERVEKIT_WITH_CUDA
  return make_cuda_backend(cfg);
#else
  SERVEKIT_FAIL("moe: exec.device=", cfg.exec.device.str(),
                " but this build has no CUDA backend (configured without CUDA); use device cpu");
#endif
}

}  // namespace

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kSwiGLU:
      return "swiglu";
    case Activation::kGeGLU:
      return "geglu";
    case Activation::kSwiGLUOAI:
      return "swiglu_oai";
    case Activation::kReLU2:
      return "relu2";
  }
  return "?";
}

Activation parse_activation(std::string_view name) {
  for (Activation a : kAllActivations)
    if (activation_name(a) == name) return a;
  SERVEKIT_FAIL("activation: unknown name '", name,
                "'; valid names: swiglu, geglu, swiglu_oai, relu2");
}

MoEConfig validate_moe_config(MoEConfig cfg) {
  validate_routing_config(cfg.routing);
  validate_quant_config(cfg.quant);
  const int E = cfg.routing.num_experts;
  ExpertConfig& x = cfg.experts;
  const std::string q(quant_name(cfg.quant.method));
  const int wk = weight_k_block(cfg.quant), ak = activation_k_block(cfg.quant);
  const std::pair<const char*, int64_t> dims[] = {{"hidden_size", x.hidden_size},
                                                  {"intermediate_size", x.intermediate_size}};
  for (const auto& [name, v] : dims) {
    SERVEKIT_CHECK(v > 0, "moe: experts.", name, "=", v, " must be > 0");
    // H is the K of W13 and the width of the input activations; I the K of W2 and the width
    // of the intermediate activations.
    SERVEKIT_CHECK(v % wk == 0, "moe: experts.", name, "=", v, " must be a multiple of ", wk,
                   " (the weight block of quant ", q, ")");
    SERVEKIT_CHECK(v % ak == 0, "moe: experts.", name, "=", v, " must be a multiple of ", ak,
                   " (the activation block of quant ", q, ")");
  }
  SERVEKIT_CHECK(x.local_expert_offset >= 0 && x.local_expert_offset < E,
                 "moe: experts.local_expert_offset=", x.local_expert_offset,
                 " must be in [0, num_experts=", E, ")");
  if (x.local_num_experts == -1) x.local_num_experts = E - x.local_expert_offset;
  SERVEKIT_CHECK(x.local_num_experts >= 1 && x.local_expert_offset + x.local_num_experts <= E,
                 "moe: experts.local_num_experts=", x.local_num_experts,
                 " must be -1 (all) or in [1, ", E - x.local_expert_offset, "] (num_experts=", E,
                 ", local_expert_offset=", x.local_expert_offset, ")");
  SERVEKIT_CHECK(x.num_shared_experts >= 0,
                 "moe: experts.num_shared_experts=", x.num_shared_experts, " must be >= 0");
  const int act = static_cast<int>(cfg.activation);
  SERVEKIT_CHECK(act >= 0 && act <= static_cast<int>(Activation::kReLU2), "moe: activation=", act,
                 " is not a valid Activation (swiglu, geglu, swiglu_oai, relu2)");
  const ExecutionConfig& e = cfg.exec;
  SERVEKIT_CHECK(e.max_num_tokens >= 1, "moe: exec.max_num_tokens=", e.max_num_tokens,
                 " must be >= 1");
  SERVEKIT_CHECK(e.num_threads >= 0, "moe: exec.num_threads=", e.num_threads,
                 " must be >= 0 (0 = all hardware threads)");
  SERVEKIT_CHECK(static_cast<int>(e.path) <= static_cast<int>(MoEPath::kDynamic),
                 "moe: exec.path=", static_cast<int>(e.path),
                 " is not a valid MoEPath (auto, static, dynamic)");
  SERVEKIT_CHECK(e.device.is_cuda() ? e.device.index >= 0 : e.device.index == 0,
                 "moe: exec.device=", e.device.str(),
                 " is invalid (cpu has index 0, cuda a non-negative ordinal)");
  return cfg;
}

struct MoELayer::Impl {
  MoEConfig cfg;
  bool keep_host = false;
  // E_local routed experts, then S shared ones; null when not loaded or not kept.
  std::vector<std::shared_ptr<const PreparedExpert>> host;
  std::vector<uint8_t> loaded;  // not vector<bool>: distinct experts may load concurrently
  std::unique_ptr<MoEBackend> backend;
  // forward's calls, one at a time on the host: the backend's workspace is the layer's only one.
  ExclusiveCall forward_call;

  int num_local() const { return cfg.experts.local_num_experts; }
  int num_shared() const { return cfg.experts.num_shared_experts; }

  void store(int index, std::shared_ptr<const PreparedExpert> e) {
    if (keep_host) host[index] = e;
    loaded[index] = 1;
    backend->load_expert(index, std::move(e));
  }
};

MoELayer::MoELayer(const MoEConfig& cfg) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = validate_moe_config(cfg);
  impl_->keep_host = !impl_->cfg.exec.device.is_cuda() || impl_->cfg.exec.keep_host_weights;
  const size_t n = static_cast<size_t>(impl_->num_local() + impl_->num_shared());
  impl_->host.resize(n);
  impl_->loaded.assign(n, 0);
  impl_->backend = make_backend(impl_->cfg);
}

MoELayer::~MoELayer() = default;
MoELayer::MoELayer(MoELayer&&) noexcept = default;
MoELayer& MoELayer::operator=(MoELayer&&) noexcept = default;

const MoEConfig& MoELayer::config() const {
  return impl_->cfg;
}

void MoELayer::prepare_weights(const MoEWeights& w) {
  const MoEConfig& cfg = impl_->cfg;
  const int L = impl_->num_local(), S = impl_->num_shared();
  const ExpertSource routed{w.w13, w.w2, w.w13_bias, w.w2_bias, 0, L};
  check_expert_source(cfg, routed, "moe.prepare_weights", "weights.");
  const ExpertSource shared{w.shared_w13, w.shared_w2, w.shared_w13_bias, w.shared_w2_bias, 0, S};
  const bool has_shared = w.shared_w13.defined() || w.shared_w2.defined() ||
                          w.shared_w13_bias.defined() || w.shared_w2_bias.defined();
  SERVEKIT_CHECK(S == 0 || has_shared, "moe.prepare_weights: num_shared_experts=", S,
                 " but weights.shared_w13/shared_w2 are not given");
  if (has_shared) check_expert_source(cfg, shared, "moe.prepare_weights", "weights.");
  for (int l = 0; l < L; ++l) {
    ExpertSource s = routed;
    s.lead = l;
    impl_->store(l, prepare_expert(cfg, s));
  }
  for (int i = 0; i < S; ++i) {
    ExpertSource s = shared;
    s.lead = i;
    impl_->store(L + i, prepare_expert(cfg, s));
  }
}

void MoELayer::load_expert(int local_expert, const ExpertWeightsView& w) {
  const int L = impl_->num_local();
  SERVEKIT_CHECK(local_expert >= 0 && local_expert < L,
                 "moe.load_expert: local_expert=", local_expert,
                 " must be in [0, local_num_experts=", L, ")");
  const ExpertSource s{w.w13, w.w2, w.w13_bias, w.w2_bias, -1, 0};
  check_expert_source(impl_->cfg, s, "moe.load_expert", "w.");
  impl_->store(local_expert, prepare_expert(impl_->cfg, s));
}

void MoELayer::load_shared_expert(int shared_index, const ExpertWeightsView& w) {
  const int S = impl_->num_shared();
  SERVEKIT_CHECK(shared_index >= 0 && shared_index < S,
                 "moe.load_shared_expert: shared_index=", shared_index,
                 " must be in [0, num_shared_experts=", S, ")");
  const ExpertSource s{w.w13, w.w2, w.w13_bias, w.w2_bias, -1, 0};
  check_expert_source(impl_->cfg, s, "moe.load_shared_expert", "w.");
  impl_->store(impl_->num_local() + shared_index, prepare_expert(impl_->cfg, s));
}

bool MoELayer::expert_loaded(int local_expert) const {
  const int L = impl_->num_local();
  SERVEKIT_CHECK(local_expert >= 0 && local_expert < L,
                 "moe.expert_loaded: local_expert=", local_expert,
                 " must be in [0, local_num_experts=", L, ")");
  return impl_->loaded[local_expert] != 0;
}

const PreparedExpert* MoELayer::prepared_expert(int index) const {
  const int n = impl_->num_local() + impl_->num_shared();
  SERVEKIT_CHECK(index >= 0 && index < n, "moe.prepared_expert: index=", index,
                 " must be in [0, local_num_experts + num_shared_experts=", n, ")");
  return impl_->host[index].get();
}

size_t MoELayer::device_weight_bytes() const {
  return impl_->backend->device_weight_bytes();
}

std::string MoELayer::kernels(int64_t tokens) const {
  const int64_t max_tokens = impl_->cfg.exec.max_num_tokens;
  SERVEKIT_CHECK(tokens >= 1 && tokens <= max_tokens, "moe.kernels: tokens=", tokens,
                 " must be in [1, exec.max_num_tokens=", max_tokens, "]");
  return impl_->backend->kernels(tokens);
}

void MoELayer::forward(const MoEInputs& in, TensorView out, void* stream) {
  const ExclusiveCall::Scope one_at_a_time(
      impl_->forward_call, "moe.forward",
      "another forward of this layer is running on another host thread; a layer has one "
      "workspace, so its forwards must not overlap (include/servekit/moe.h)");
  const MoEConfig& cfg = impl_->cfg;
  const std::string where = "moe.forward";
  const Device dev = cfg.exec.device;
  const int64_t H = cfg.experts.hidden_size;
  const int E = cfg.routing.num_experts, K = cfg.routing.top_k;
  const RoutingMethod method = cfg.routing.method;

  SERVEKIT_CHECK(in.hidden.defined() && in.hidden.ndim == 2, where, ": hidden must be [T, ", H,
                 "] bf16, got ", in.hidden.defined() ? in.hidden.str() : "nothing");
  const int64_t T = in.hidden.shape[0];
  SERVEKIT_CHECK(T >= 1 && T <= cfg.exec.max_num_tokens, where, ": hidden has T=", T,
                 " tokens, must be in [1, max_num_tokens=", cfg.exec.max_num_tokens, "]");
  check_tensor(in.hidden, where, "hidden", {DType::kBF16}, {T, H}, dev, true);
  check_tensor(out, where, "out", {DType::kBF16}, {T, H}, dev, true);
  check_out_apart(out, in.hidden, where, "hidden", true);
  if (dev.is_cuda()) {  // the CUDA kernels move hidden and out rows in 16-byte vectors
    for (const auto& [name, t] :
         {std::pair<const char*, const TensorView*>{"hidden", &in.hidden}, {"out", &out}}) {
      SERVEKIT_CHECK(reinterpret_cast<uintptr_t>(t->data) % 16 == 0, where, ": ", name,
                     " must start at a 16-byte aligned address on a CUDA device");
    }
  }

  const std::string routing(routing_name(method));
  if (method == RoutingMethod::kPrecomputed) {
    check_tensor(in.topk_ids, where, "topk_ids", {DType::kInt32}, {T, K}, dev, true);
    check_tensor(in.topk_weights, where, "topk_weights", {DType::kF32}, {T, K}, dev, true);
    check_out_apart(out, in.topk_ids, where, "topk_ids", false);
    check_out_apart(out, in.topk_weights, where, "topk_weights", false);
    SERVEKIT_CHECK(!in.router_logits.defined(), where, ": router_logits is given but routing ",
                   routing, " uses topk_ids/topk_weights; leave it empty");
    SERVEKIT_CHECK(!in.correction_bias.defined(), where, ": correction_bias is given but routing ",
                   routing, " does not use one");
    impl_->backend->forward(in, out, stream);
    return;
  }
  check_tensor(in.router_logits, where, "router_logits", {DType::kF32, DType::kBF16}, {T, E}, dev,
               true);
  check_out_apart(out, in.router_logits, where, "router_logits", false);
  if (routing_uses_bias(method)) {
    check_tensor(in.correction_bias, where, "correction_bias", {DType::kF32}, {E}, dev, true);
    check_out_apart(out, in.correction_bias, where, "correction_bias", false);
  } else {
    SERVEKIT_CHECK(!in.correction_bias.defined(), where, ": correction_bias is given but routing ",
                   routing, " does not use one (only deepseek_v3 and minimax do)");
  }
  SERVEKIT_CHECK(!in.topk_ids.defined() && !in.topk_weights.defined(), where,
                 ": topk_ids/topk_weights are given but routing is ", routing,
                 "; they are read only with precomputed routing");
  impl_->backend->forward(in, out, stream);
}

}  // namespace servekit
