// CUDA MoE backend on Hopper: two kernel families behind one forward. Small batches (routed
// rows tokens x top_k up to the tuned cutover, src/tune/moe_path.h) run the static path
// (static_moe.h: each active expert's weights read once, fused combine); larger ones the dynamic
// path below. Per forward, all on the given stream, with no host synchronisation and no
// allocation (CUDA-graph capturable):
//
//   route + build_plan (one launch for small batches), or precomputed ids -> build_plan
//   -> gather + quantize hidden rows into A1 [rows, H]
//   -> grouped GEMM1 (A1 · W13ᵀ -> H1 [rows, R] bf16) -> bias + activation + quantize -> A2
//   [rows, I] -> grouped GEMM2 (A2 · W2ᵀ -> Y [rows, H] bf16) -> combine (weights, w2 bias,
//   fixed order) -> out [T, H]
//
// Groups g = 0..E_local-1 are the local routed experts, E_local..E_local+S-1 the shared ones
// (moe_plan.h). Everything is allocated at construction: weights for all G groups in the GEMM
// layout (zero until loaded, so an unloaded expert contributes zeros) and workspace for
// exec.max_num_tokens; the static path keeps its own copy of the weights in its layout. So
// exec.path auto holds two copies (one when its capacity never leaves the static path), static
// or dynamic one (MoELayer::device_weight_bytes). The fp8 formats run natively (e4m3 x e4m3);
// int4_w4a16 with group 64 or 128 runs the int4 GEMM on its 4-bit codes
// (make_grouped_gemm_w4a16; SERVEKIT_DYNAMIC_W4A16=0 turns it off), the other 4-bit formats the
// bf16 GEMMs on weights dequantized at load time (expert_layout.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/dynamic_options.h"
#include "cuda/expert_layout.h"
#include "cuda/grouped_gemm.h"
#include "cuda/moe_plan.h"
#include "cuda/moe_quant.h"
#include "cuda/runtime.h"
#include "cuda/static_moe.h"
#include "cuda/static_pack.h"
#include "cuda/stream_order.h"
#include "moe/backend.h"
#include "servekit/error.h"
#include "tune/moe_path.h"

namespace servekit {
namespace {

using cuda::ActFormat;
using cuda::GemmOperand;

// Makes `device` current for a scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    SERVEKIT_CUDA_CHECK(cudaGetDevice(&previous_));
    switched_ = previous_ != device;
    if (switched_) SERVEKIT_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

using cuda::DeviceBuffer;

// The static path is planned for small batches: its capacity is the layer's, up to this many
// tokens (far above any measured cutover; exec.path=static beyond it is an error at forward).
constexpr int64_t kStaticMaxTokens = 1024;

// Every buffer of the backend starts zeroed: unloaded experts read as zero weights.
DeviceBuffer zeroed(size_t bytes) {
  return DeviceBuffer(bytes, DeviceBuffer::Init::kZero);
}

class CudaMoEBackend final : public MoEBackend {
 public:
  explicit CudaMoEBackend(const MoEConfig& cfg);
  void load_expert(int index, std::shared_ptr<const PreparedExpert> expert) override;
  void forward(const MoEInputs& in, TensorView out, void* stream) override;
  size_t device_weight_bytes() const override;
  std::string kernels(int64_t tokens) const override;

 private:
  // forward's launches, between order_'s before() and after().
  void enqueue(const MoEInputs& in, TensorView out, cudaStream_t stream);
  // Whether GEMM1 runs the activation in its epilogue for a call of rows_bound rows (its tile
  // has the fused epilogue for W13's layout, and a swap-AB tile only where the format allows).
  bool gemm1_fuses(int64_t rows_bound) const;
  // Whether this call runs the static path (exec.path, else the tuned cutover).
  bool use_static(int64_t tokens) const;
  // Whether the cutover table (src/tune/moe_path.h) puts `tokens` on the static path.
  bool auto_picks_static(int64_t tokens) const;
  void load_static(int index, const PreparedExpert& e);
  void upload_matrix(const QuantizedMatrix& m, int index, int64_t rows, int64_t cols,
                     const DeviceBuffer& codes, const DeviceBuffer& tensor_scales,
                     const DeviceBuffer& block_scales, const DeviceBuffer& group_scales,
                     bool interleave_w13 = false);
  static void upload_bias(const std::vector<float>& bias, int index, int64_t n,
                          const DeviceBuffer& dst, std::atomic<bool>& any);

  MoEConfig cfg_;
  int device_ = 0;
  int64_t hidden_ = 0, inter_ = 0, w13_rows_ = 0;  // H, I, R
  int top_k_ = 0, num_local_ = 0, num_shared_ = 0, num_groups_ = 0;
  int64_t max_tokens_ = 0, capacity_ = 0;  // capacity: permuted rows
  GemmOperand operand_ = GemmOperand::kBF16;
  ActFormat act_ = ActFormat::kBF16;

  // Weights in the GEMM layout, all G groups (grouped_gemm.h).
  DeviceBuffer w13_, w2_;              // [G, R, H], [G, H, I]
  DeviceBuffer w13_scale_, w2_scale_;  // fp8_per_tensor: [G]
  // fp8_block128: [G, H/128, ceil(R/128)], [G, I/128, ceil(H/128)], each + kBlockScaleTailFloats
  DeviceBuffer w13_sfb_, w2_sfb_;
  // int4 on the int4 GEMM (w4a16_): w13_ / w2_ hold the codes, [G, R, H/2] and [G, H, I/2]
  // int4x2, and these the bf16 scales, [G, H/gs, R] and [G, I/gs, H] (w4a16_gemm_layout).
  DeviceBuffer w13_gs_, w2_gs_;
  DeviceBuffer b13_, b2_;  // [G, R], [G, H] fp32
  // Whether any expert has a bias (else forward passes no bias pointer). Atomic: load_expert runs
  // concurrently for distinct experts (backend.h); each writes only its own weight slices.
  std::atomic<bool> has_b13_{false}, has_b2_{false};

  // Workspace for max_tokens.
  DeviceBuffer ids_, weights_;  // [T, K] routing output
  DeviceBuffer offsets_, row_token_, row_group_, token_slot_row_, plan_scratch_;
  DeviceBuffer x_;                      // A1 [cap, H], then Y [cap, H] bf16 (A1 is dead)
  DeviceBuffer sfa1_, h1_, a2_, sfa2_;  // [cap*H/128], [cap, R] bf16, [cap, I], [cap*I/128]
  DeviceBuffer scalars_;                // act scales [2] f32, then amax scratch [2]
  cuda::PlanBuffers plan_;
  std::unique_ptr<cuda::GroupedGemm> gemm1_, gemm2_;
  bool pdl_ = false;  // PDL between the dynamic path's kernels (SERVEKIT_DYNAMIC_PDL)
  // SERVEKIT_DYNAMIC_FUSED_ACT (on by default, dynamic_options.h): W13 in the fused activation's
  // interleaved layout (gated activation; I % 128 == 0 with bf16 or fp8_block128 operands, not
  // fp8_per_tensor's tensor-wide scale; I % 64 == 0 on the int4 GEMM), and GEMM1 runs the
  // activation in its epilogue on the runs whose tile has it; the others run the activation pass
  // on the interleaved output.
  bool w13_interleaved_ = false;
  // int4_w4a16 with group 64 or 128 on the dynamic path: both GEMMs are
  // make_grouped_gemm_w4a16's on the 4-bit codes (SERVEKIT_DYNAMIC_W4A16, on by default), GEMM1
  // with the activation fused where w13_interleaved_ (W13 in kW4A16Interleave-row blocks); else
  // the bf16 GEMMs on a dequantized copy.
  bool w4a16_ = false;
  int diag_stop_ = 0;           // SERVEKIT_DIAG_DYNAMIC_STOP
  bool swap_fused_act_ = true;  // SERVEKIT_DIAG_SWAP_FUSED_ACT
  // Which swap-AB tile each GEMM builds (use_swap_pingpong; SERVEKIT_GEMM_SWAP; none on the int4
  // GEMM), and the rows of W13's gate/up interleave that GEMM1's choice asks for
  // (w13_interleave_rows).
  bool gemm1_swap_pp_ = false, gemm2_swap_pp_ = false;
  int w13_interleave_ = 128;

  // Dynamic path (exec.path dynamic, or auto with a capacity past the cutover): the GEMM-layout
  // weights above, the A1 / H1 / A2 workspace and the two grouped GEMMs; else none of them is
  // allocated.
  bool dynamic_ok_ = true;
  // Static path (when the format has static kernels and exec.path allows it): its own weight
  // layout (static_pack.h) for all G groups, a device table of per-group pointers, workspace.
  bool static_ok_ = false;
  cuda::StaticMoEDesc static_desc_;
  size_t static_w13_bytes_ = 0, static_w2_bytes_ = 0;
  DeviceBuffer static_w_, static_table_, static_ws_;

  // Forwards on two streams share the workspace above: the stream order orders them
  // (stream_order.h; SERVEKIT_FORWARD_STREAM_ORDER=0 turns it off, include/servekit/moe.h).
  std::unique_ptr<cuda::StreamOrder> order_;
};

CudaMoEBackend::CudaMoEBackend(const MoEConfig& cfg) : cfg_(cfg) {
  SERVEKIT_CHECK(cfg.exec.device.is_cuda(), "moe cuda: device ", cfg.exec.device.str(),
                 " is not a CUDA device");
  device_ = cfg.exec.device.index;
  pdl_ = cuda::dynamic_switch_from_env("SERVEKIT_DYNAMIC_PDL", false);
  diag_stop_ = cuda::dynamic_stop_from_env();
  swap_fused_act_ = cuda::dynamic_switch_from_env("SERVEKIT_DIAG_SWAP_FUSED_ACT", true);
  hidden_ = cfg.experts.hidden_size;
  inter_ = cfg.experts.intermediate_size;
  w13_rows_ = w13_rows(cfg);
  top_k_ = cfg.routing.top_k;
  num_local_ = cfg.experts.local_num_experts;
  num_shared_ = cfg.experts.num_shared_experts;
  num_groups_ = num_local_ + num_shared_;
  max_tokens_ = cfg.exec.max_num_tokens;
  capacity_ = cuda::plan_capacity_rows(max_tokens_, top_k_, num_shared_);
  operand_ = cuda::gemm_operand(cfg.quant.method);
  act_ = cuda::act_format(cfg.quant.method);
  std::string why;
  static_ok_ = cfg.exec.path != MoEPath::kDynamic &&
               tune::static_path_supports(cfg.quant, hidden_, inter_, &why);
  SERVEKIT_CHECK(static_ok_ || cfg.exec.path != MoEPath::kStatic,
                 "moe cuda: exec.path=static is not available for quant ",
                 quant_name(cfg.quant.method), ": ", why);
  // exec.path auto runs the dynamic path only above the cutover: a layer whose capacity stays
  // within it (max_num_tokens x top_k at most the cutover rows, read now, at construction) never
  // will, and keeps one copy of the weights, the static one.
  dynamic_ok_ =
      cfg.exec.path == MoEPath::kDynamic ||
      (cfg.exec.path == MoEPath::kAuto &&
       !(static_ok_ && max_tokens_ <= kStaticMaxTokens && auto_picks_static(max_tokens_)));
  SERVEKIT_CHECK(num_groups_ > 0,
                 "moe cuda: no local or shared experts (local_num_experts=", num_local_,
                 ", num_shared_experts=", num_shared_, ")");
  SERVEKIT_CHECK(cfg.routing.num_experts <= kMaxExpertsGpu,
                 "moe cuda: num_experts=", cfg.routing.num_experts,
                 " exceeds the GPU routing limit ", kMaxExpertsGpu);
  const int64_t k_multiple = cuda::gemm_k_multiple(operand_);
  const int64_t act_block = act_ == ActFormat::kFP8Block128AsBF16 ? 128 : 1;
  const int64_t need = std::max<int64_t>({k_multiple, act_block, 8});
  SERVEKIT_CHECK(!dynamic_ok_ || (hidden_ % need == 0 && inter_ % need == 0),
                 "moe cuda: hidden_size=", hidden_, " and intermediate_size=", inter_,
                 " must be multiples of ", need, " for quant ", quant_name(cfg.quant.method),
                 " on the CUDA dynamic path");
  SERVEKIT_CHECK(capacity_ < (int64_t{1} << 31), "moe cuda: max_num_tokens=", max_tokens_,
                 " x (top_k + shared) exceeds 2^31 permuted rows");

  w4a16_ = dynamic_ok_ && cfg.quant.method == QuantMethod::kInt4W4A16 &&
           cuda::dynamic_switch_from_env("SERVEKIT_DYNAMIC_W4A16", cuda::kDynamicW4A16Default) &&
           cuda::w4a16_gemm_supported(w13_rows_, hidden_, cfg.quant.group_size) &&
           cuda::w4a16_gemm_supported(hidden_, inter_, cfg.quant.group_size);
  w13_interleaved_ =
      cuda::dynamic_switch_from_env("SERVEKIT_DYNAMIC_FUSED_ACT", true) && dynamic_ok_ &&
      activation_is_gated(cfg.activation) && w13_rows_ == 2 * inter_ &&
      (w4a16_ ? inter_ % 64 == 0 && act_ == ActFormat::kBF16
              : inter_ % 128 == 0 && act_ != ActFormat::kFP8PerTensor &&
                    (operand_ == GemmOperand::kBF16 || operand_ == GemmOperand::kFP8Block128));
  // Each GEMM's swap-AB tile by its shape (N x K); GEMM1's sets the interleave its fused tiles
  // need (the ping-pong swap tile 64 rows, else 128; create() builds the 128x256 tile for it).
  const cuda::GemmSwapChoice swap_choice = cuda::gemm_swap_from_env();
  gemm1_swap_pp_ = !w4a16_ && cuda::use_swap_pingpong(operand_, w13_rows_, hidden_, swap_choice);
  gemm2_swap_pp_ = !w4a16_ && cuda::use_swap_pingpong(operand_, hidden_, inter_, swap_choice);
  w13_interleave_ = static_cast<int>(w4a16_ ? cuda::kW4A16Interleave
                                            : cuda::w13_interleave_rows(operand_, gemm1_swap_pp_));

  DeviceScope scope(device_);
  order_ = std::make_unique<cuda::StreamOrder>(  // its event on the layer's device
      cuda::dynamic_switch_from_env("SERVEKIT_FORWARD_STREAM_ORDER", true));
  const size_t g = static_cast<size_t>(num_groups_);
  const size_t ab = cuda::gemm_operand_bytes(operand_);
  const size_t h = static_cast<size_t>(hidden_), i = static_cast<size_t>(inter_),
               r = static_cast<size_t>(w13_rows_), cap = static_cast<size_t>(capacity_);
  if (dynamic_ok_ && w4a16_) {
    const size_t gs = static_cast<size_t>(cfg.quant.group_size);
    w13_ = zeroed(g * r * h / 2);
    w2_ = zeroed(g * h * i / 2);
    w13_gs_ = zeroed(g * (h / gs) * r * 2);
    w2_gs_ = zeroed(g * (i / gs) * h * 2);
  } else if (dynamic_ok_) {
    w13_ = zeroed(g * r * h * ab);
    w2_ = zeroed(g * h * i * ab);
    if (operand_ == GemmOperand::kFP8PerTensor) {
      w13_scale_ = zeroed(g * sizeof(float));
      w2_scale_ = zeroed(g * sizeof(float));
    }
    if (operand_ == GemmOperand::kFP8Block128) {
      // Each with the tail the fp8_block128 kernels may read (grouped_gemm.h).
      w13_sfb_ =
          zeroed(static_cast<size_t>(cuda::gemm_b_block_scale_floats(g, r, h)) * sizeof(float));
      w2_sfb_ =
          zeroed(static_cast<size_t>(cuda::gemm_b_block_scale_floats(g, h, i)) * sizeof(float));
    }
  }
  b13_ = zeroed(g * r * sizeof(float));
  b2_ = zeroed(g * h * sizeof(float));

  const size_t tk = static_cast<size_t>(max_tokens_) * static_cast<size_t>(top_k_);
  ids_ = zeroed(tk * sizeof(int32_t));
  weights_ = zeroed(tk * sizeof(float));
  offsets_ = zeroed((g + 1) * sizeof(int32_t));
  row_token_ = zeroed(cap * sizeof(int32_t));
  row_group_ = zeroed(cap * sizeof(int32_t));
  token_slot_row_ = zeroed(static_cast<size_t>(max_tokens_) *
                           static_cast<size_t>(top_k_ + num_shared_) * sizeof(int32_t));
  plan_scratch_ = zeroed(cuda::plan_scratch_bytes(max_tokens_, top_k_, num_groups_));
  plan_.num_groups = num_groups_;
  plan_.group_offsets = offsets_.get<int32_t>();
  plan_.row_token = row_token_.get<int32_t>();
  plan_.row_group = row_group_.get<int32_t>();
  plan_.token_slot_row = token_slot_row_.get<int32_t>();
  plan_.scratch = plan_scratch_.get();

  if (dynamic_ok_) {
    const size_t act_bytes = cuda::act_element_bytes(act_);
    x_ = zeroed(cap * h * 2);  // bf16 Y is the larger of A1 and Y
    h1_ = zeroed(cap * r * 2);
    a2_ = zeroed(cap * i * act_bytes);
    if (act_ == ActFormat::kFP8Block128) {
      sfa1_ = zeroed(cap * (h / 128) * sizeof(float));
      sfa2_ = zeroed(cap * (i / 128) * sizeof(float));
    }
    scalars_ = zeroed(4 * sizeof(float));
  }

  if (static_ok_) {
    // Capacity: the layer's, up to kStaticMaxTokens.
    static_desc_.quant = cfg.quant;
    static_desc_.activation = cfg.activation;
    static_desc_.hidden = hidden_;
    static_desc_.intermediate = inter_;
    static_desc_.num_groups = num_groups_;
    static_desc_.top_k = top_k_;
    static_desc_.num_shared = num_shared_;
    static_desc_.max_tokens = std::min<int64_t>(max_tokens_, kStaticMaxTokens);
    cuda::validate_static_desc(static_desc_);
    const auto f = cuda::static_format(cfg.quant);
    const bool gated = activation_is_gated(cfg.activation);
    const auto g13 = cuda::static_moe::static_geometry(f, w13_rows_, hidden_, gated);
    const auto g2 = cuda::static_moe::static_geometry(f, hidden_, inter_, false);
    static_w13_bytes_ = static_cast<size_t>(g13.code_bytes + g13.scale_bytes);
    static_w2_bytes_ = static_cast<size_t>(g2.code_bytes + g2.scale_bytes);
    // 256-byte aligned slices: the kernels issue 16-byte vector loads.
    static_w13_bytes_ = (static_w13_bytes_ + 255) / 256 * 256;
    static_w2_bytes_ = (static_w2_bytes_ + 255) / 256 * 256;
    static_w_ = zeroed(g * (static_w13_bytes_ + static_w2_bytes_));
    // Unloaded groups keep null pointers: the kernels read them as zeros.
    static_table_ = zeroed(g * sizeof(cuda::StaticExpertPtrs));
    static_ws_ = zeroed(cuda::static_workspace_bytes(static_desc_));
    cuda::static_workspace_init(static_desc_, static_ws_.get(), nullptr);
    cuda::static_diag_times_prepare();
    SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  }

  if (dynamic_ok_) {
    // The tile pick judges the pair swap tile on a routed expert's rows (rows_hint counts the
    // shared experts' groups, which hold every token).
    cuda::GemmRoutingHint routing;
    if (num_local_ > 0) routing = {top_k_, num_shared_, cfg.routing.num_experts};
    cuda::GroupedGemmShape s1{operand_, num_groups_, w13_rows_, hidden_, capacity_};
    s1.act = {w13_interleaved_, cfg.activation, act_, w13_interleave_};
    s1.swap_pingpong = gemm1_swap_pp_;
    s1.routing = routing;
    cuda::GroupedGemmShape s2{operand_, num_groups_, hidden_, inter_, capacity_};
    s2.swap_pingpong = gemm2_swap_pp_;
    s2.routing = routing;
    if (w4a16_) {
      s1.weight_group = s2.weight_group = cfg.quant.group_size;
      gemm1_ = cuda::make_grouped_gemm_w4a16(s1, device_);
      gemm2_ = cuda::make_grouped_gemm_w4a16(s2, device_);
    } else {
      gemm1_ = cuda::GroupedGemm::create(s1, device_);
      gemm2_ = cuda::GroupedGemm::create(s2, device_);
    }
  }
}

size_t CudaMoEBackend::device_weight_bytes() const {
  size_t n = 0;
  for (const DeviceBuffer* b : {&w13_, &w2_, &w13_scale_, &w2_scale_, &w13_sfb_, &w2_sfb_, &w13_gs_,
                                &w2_gs_, &b13_, &b2_, &static_w_})
    n += b->size();
  return n;
}

void CudaMoEBackend::upload_matrix(const QuantizedMatrix& m, int index, int64_t rows, int64_t cols,
                                   const DeviceBuffer& codes, const DeviceBuffer& tensor_scales,
                                   const DeviceBuffer& block_scales,
                                   const DeviceBuffer& group_scales, bool interleave_w13) {
  SERVEKIT_CHECK(m.method == cfg_.quant.method, "moe cuda: expert ", index, " is prepared as ",
                 quant_name(m.method), ", the layer runs ", quant_name(cfg_.quant.method));
  if (w4a16_) {
    cuda::GemmWeightHost w = cuda::w4a16_gemm_layout(m, rows, cols);
    if (interleave_w13) cuda::interleave_w4a16_w13(w, inter_, cols, w13_interleave_);
    const size_t bytes = static_cast<size_t>(rows * cols / 2);
    const size_t scales = static_cast<size_t>(rows * (cols / cfg_.quant.group_size));
    SERVEKIT_CHECK(w.codes.size() == bytes && w.group_scales.size() == scales,
                   "moe cuda: converted expert ", index, " has ", w.codes.size(),
                   " code bytes and ", w.group_scales.size(), " scales, expected ", bytes, " and ",
                   scales);
    uint8_t* dst = codes.get<uint8_t>() + static_cast<size_t>(index) * bytes;
    SERVEKIT_CUDA_CHECK(cudaMemcpy(dst, w.codes.data(), bytes, cudaMemcpyHostToDevice));
    cuda::w4a16_reorder_codes(dst, rows, cols);  // into the order the kernels load them
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(group_scales.get<uint16_t>() + static_cast<size_t>(index) * scales,
                   w.group_scales.data(), scales * 2, cudaMemcpyHostToDevice));
    return;
  }
  cuda::GemmWeightHost w = cuda::to_gemm_layout(m, rows, cols);
  if (interleave_w13) cuda::interleave_w13(w, operand_, inter_, cols, w13_interleave_);
  const size_t bytes = static_cast<size_t>(rows * cols) * cuda::gemm_operand_bytes(operand_);
  SERVEKIT_CHECK(w.codes.size() == bytes, "moe cuda: converted expert ", index, " has ",
                 w.codes.size(), " bytes, expected ", bytes);
  SERVEKIT_CUDA_CHECK(cudaMemcpy(codes.get<uint8_t>() + static_cast<size_t>(index) * bytes,
                                 w.codes.data(), bytes, cudaMemcpyHostToDevice));
  if (operand_ == GemmOperand::kFP8PerTensor) {
    SERVEKIT_CUDA_CHECK(cudaMemcpy(tensor_scales.get<float>() + index, &w.tensor_scale,
                                   sizeof(float), cudaMemcpyHostToDevice));
  }
  if (operand_ == GemmOperand::kFP8Block128) {
    const size_t n = w.block_scales.size();
    SERVEKIT_CUDA_CHECK(cudaMemcpy(block_scales.get<float>() + static_cast<size_t>(index) * n,
                                   w.block_scales.data(), n * sizeof(float),
                                   cudaMemcpyHostToDevice));
  }
}

void CudaMoEBackend::upload_bias(const std::vector<float>& bias, int index, int64_t n,
                                 const DeviceBuffer& dst, std::atomic<bool>& any) {
  SERVEKIT_CHECK(bias.empty() || static_cast<int64_t>(bias.size()) == n, "moe cuda: expert ", index,
                 " bias has ", bias.size(), " values, expected ", n);
  float* row = dst.get<float>() + static_cast<size_t>(index) * static_cast<size_t>(n);
  if (bias.empty()) {  // a reload without bias must not keep the previous one
    SERVEKIT_CUDA_CHECK(cudaMemset(row, 0, static_cast<size_t>(n) * sizeof(float)));
    return;
  }
  SERVEKIT_CUDA_CHECK(
      cudaMemcpy(row, bias.data(), static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice));
  any.store(true);
}

void CudaMoEBackend::load_expert(int index, std::shared_ptr<const PreparedExpert> expert) {
  SERVEKIT_CHECK(index >= 0 && index < num_groups_, "moe cuda: expert index=", index,
                 " out of range [0, ", num_groups_, ")");
  SERVEKIT_CHECK(expert != nullptr, "moe cuda: expert ", index, " is null");
  DeviceScope scope(device_);
  if (dynamic_ok_) {
    upload_matrix(expert->w13, index, w13_rows_, hidden_, w13_, w13_scale_, w13_sfb_, w13_gs_,
                  w13_interleaved_);
    upload_matrix(expert->w2, index, hidden_, inter_, w2_, w2_scale_, w2_sfb_, w2_gs_);
  }
  upload_bias(expert->w13_bias, index, w13_rows_, b13_, has_b13_);
  upload_bias(expert->w2_bias, index, hidden_, b2_, has_b2_);
  if (static_ok_) load_static(index, *expert);
}

void CudaMoEBackend::load_static(int index, const PreparedExpert& e) {
  const cuda::StaticPackedMatrix p13 =
      cuda::pack_static_matrix(e.w13, activation_is_gated(cfg_.activation));
  const cuda::StaticPackedMatrix p2 = cuda::pack_static_matrix(e.w2, false);
  SERVEKIT_CHECK(p13.bytes.size() <= static_w13_bytes_ && p2.bytes.size() <= static_w2_bytes_,
                 "moe cuda: static layout of expert ", index, " is larger than planned");
  uint8_t* base = static_w_.get<uint8_t>() +
                  static_cast<size_t>(index) * (static_w13_bytes_ + static_w2_bytes_);
  SERVEKIT_CUDA_CHECK(cudaMemcpy(base, p13.bytes.data(), p13.bytes.size(), cudaMemcpyHostToDevice));
  SERVEKIT_CUDA_CHECK(cudaMemcpy(base + static_w13_bytes_, p2.bytes.data(), p2.bytes.size(),
                                 cudaMemcpyHostToDevice));
  cuda::StaticExpertPtrs ptrs;
  ptrs.w13 = base;
  ptrs.w2 = base + static_w13_bytes_;
  ptrs.w13_alpha = p13.alpha;
  ptrs.w2_alpha = p2.alpha;
  SERVEKIT_CUDA_CHECK(cudaMemcpy(static_table_.get<cuda::StaticExpertPtrs>() + index, &ptrs,
                                 sizeof(ptrs), cudaMemcpyHostToDevice));
}

bool CudaMoEBackend::gemm1_fuses(int64_t rows_bound) const {
  return w13_interleaved_ && gemm1_->fuses_activation(rows_bound) &&
         (swap_fused_act_ || !gemm1_->config(rows_bound).tile.swap_ab);
}

std::string CudaMoEBackend::kernels(int64_t tokens) const {
  if (use_static(tokens)) return "static";
  const int64_t rows_bound = cuda::plan_capacity_rows(tokens, top_k_, num_shared_);
  return "dynamic: gemm1 " + gemm1_->tile_name(rows_bound) +
         (gemm1_fuses(rows_bound) ? " + activation" : "") + "; gemm2 " +
         gemm2_->tile_name(rows_bound);
}

bool CudaMoEBackend::use_static(int64_t tokens) const {
  if (!static_ok_) return false;
  if (!dynamic_ok_) {  // exec.path static, or auto within the cutover at every capacity
    SERVEKIT_CHECK(tokens <= static_desc_.max_tokens, "moe cuda: the static path takes at most ",
                   static_desc_.max_tokens, " tokens per call, got ", tokens);
    return true;
  }
  return tokens <= static_desc_.max_tokens && auto_picks_static(tokens);
}

bool CudaMoEBackend::auto_picks_static(int64_t tokens) const {
  tune::MoEPathDesc d;
  d.num_experts = cfg_.routing.num_experts;
  d.top_k = top_k_;
  d.hidden = hidden_;
  d.intermediate = inter_;
  d.quant = cfg_.quant;
  d.tokens = tokens;
  return tune::choose_moe_path(d) == MoEPath::kStatic;
}

void CudaMoEBackend::forward(const MoEInputs& in, TensorView out, void* stream_ptr) {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  DeviceScope scope(device_);
  order_->before(stream);
  enqueue(in, out, stream);
  order_->after(stream);
}

void CudaMoEBackend::enqueue(const MoEInputs& in, TensorView out, cudaStream_t stream) {
  const int64_t tokens = in.hidden.size(0);
  const bool static_path = use_static(tokens);
  bool tasks_built = false;
  const float* weights = nullptr;
  if (cfg_.routing.method == RoutingMethod::kPrecomputed) {
    weights = in.topk_weights.ptr<float>();
    cuda::launch_build_plan(in.topk_ids.ptr<int32_t>(), tokens, top_k_,
                            cfg_.experts.local_expert_offset, num_local_, num_shared_, plan_,
                            stream);
  } else {
    // Small batches route and plan in one single-CTA launch (moe_plan.h).
    const float* bias = in.correction_bias.defined() ? in.correction_bias.ptr<float>() : nullptr;
    // On the static path the same launch builds the static task list and prepares the input
    // (static_moe.h: static_task_build), which saves the planner's launch.
    cuda::static_moe::StaticTaskBuild tb;
    if (static_path)
      tb = cuda::static_task_build(static_desc_, static_ws_.get(), in.hidden.data, tokens);
    tasks_built = cuda::launch_route_and_plan(
        cfg_.routing, in.router_logits.data, in.router_logits.dtype, bias, tokens,
        ids_.get<int32_t>(), weights_.get<float>(), cfg_.experts.local_expert_offset, num_local_,
        num_shared_, plan_, stream, cuda::PlanKernels::kAuto, tb.tasks ? &tb : nullptr);
    weights = weights_.get<float>();
  }

  if (static_path) {
    cuda::StaticMoEArgs a;
    a.tasks_built = tasks_built;
    a.experts = static_table_.get<cuda::StaticExpertPtrs>();
    a.w13_bias = has_b13_.load() ? b13_.get<float>() : nullptr;
    a.w2_bias = has_b2_.load() ? b2_.get<float>() : nullptr;
    a.hidden = in.hidden.data;
    a.tokens = tokens;
    a.plan = plan_;
    a.topk_weights = weights;
    a.out = out.data;  // fused combine
    a.workspace = static_ws_.get();
    cuda::launch_static_moe(static_desc_, a, stream);
    return;
  }
  if (diag_stop_ == 1) return;

  auto* scalars = scalars_.get<float>();
  auto* amax = reinterpret_cast<unsigned*>(scalars + 2);
  const cuda::ActBuffers a1{x_.get(), sfa1_.get<float>(), scalars + 0, amax + 0};
  // Row kernels size their grids by the most rows this call can have, not the layer's capacity:
  // a decode step on a layer declared for 8192 tokens must not launch 8192 tokens' worth of CTAs.
  const int64_t rows_bound = cuda::plan_capacity_rows(tokens, top_k_, num_shared_);
  // With PDL (SERVEKIT_DYNAMIC_PDL=1, off by default: no gain measured) each kernel below may
  // launch while the previous one runs, and waits for it before
  // reading anything (kernels/pdl.cuh); every predecessor is a kernel (the fp8_per_tensor amax
  // passes, which follow a memset, launch without it).
  cuda::launch_gather_quantize(act_, in.hidden.ptr<uint16_t>(), tokens, hidden_,
                               top_k_ + num_shared_, plan_, a1, stream, pdl_);
  if (diag_stop_ == 2) return;

  cuda::GroupedGemmOperands g1;
  g1.group_offsets = plan_.group_offsets;
  g1.a = x_.get();
  g1.b = w13_.get();
  g1.d = h1_.get();
  g1.a_scale = scalars + 0;
  g1.b_scale = w13_scale_.get<float>();
  g1.a_block_scale = sfa1_.get<float>();
  g1.b_block_scale = w13_sfb_.get<float>();
  g1.b_group_scale = w13_gs_.get();
  g1.rows_hint = rows_bound;  // picks the tile (choose_gemm_tile): 64-row, swap-AB or 128-row
  g1.pdl = pdl_;
  const float* b13 = has_b13_.load() ? b13_.get<float>() : nullptr;
  // The activation in GEMM1's epilogue where this run's tile has it (GEMM1 then writes A2
  // instead of H1, and stop 3 includes the activation).
  const bool fused = gemm1_fuses(rows_bound);
  if (fused) {
    g1.act_out = a2_.get();
    g1.act_out_scale = sfa2_.get<float>();
    g1.act_bias = b13;
  }
  gemm1_->run(g1, stream);
  if (diag_stop_ == 3) return;

  const cuda::ActBuffers a2{a2_.get(), sfa2_.get<float>(), scalars + 1, amax + 1};
  if (!fused) {
    cuda::launch_activation_quantize(act_, cfg_.activation, h1_.get<uint16_t>(), b13, inter_, plan_,
                                     rows_bound, a2, stream, pdl_,
                                     w13_interleaved_ ? w13_interleave_ : 0);
  }
  if (diag_stop_ == 4) return;

  cuda::GroupedGemmOperands g2;
  g2.group_offsets = plan_.group_offsets;
  g2.a = a2_.get();
  g2.b = w2_.get();
  g2.d = x_.get();  // Y reuses A1's buffer
  g2.a_scale = scalars + 1;
  g2.b_scale = w2_scale_.get<float>();
  g2.a_block_scale = sfa2_.get<float>();
  g2.b_block_scale = w2_sfb_.get<float>();
  g2.b_group_scale = w2_gs_.get();
  g2.rows_hint = rows_bound;
  g2.pdl = pdl_;
  gemm2_->run(g2, stream);
  if (diag_stop_ == 5) return;

  cuda::launch_combine(x_.get(), plan_, weights, tokens, top_k_, num_shared_, hidden_,
                       has_b2_.load() ? b2_.get<float>() : nullptr, out.data, stream, pdl_);
}

}  // namespace

std::unique_ptr<MoEBackend> make_cuda_backend(const MoEConfig& cfg) {
  return std::make_unique<CudaMoEBackend>(cfg);
}

}  // namespace servekit
