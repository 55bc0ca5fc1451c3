#include "cuda/peer/cublas_moe.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/moe_plan.h"
#include "cuda/peer/peer_gemm.h"
#include "cuda/peer/peer_kernels.cuh"
#include "cuda/runtime.h"
#include "servekit/formats.h"

namespace servekit::peer {

namespace {

using cuda::DeviceBuffer;

GemmKind gemm_kind(QuantMethod m) {
  if (m == QuantMethod::kFP8PerTensor) return GemmKind::kFP8Tensor;
  if (m == QuantMethod::kFP8Block128) return GemmKind::kFP8Block;
  return GemmKind::kBF16;
}

bool is_4bit(QuantMethod m) {
  return m == QuantMethod::kMXFP4W4A16 || m == QuantMethod::kMXFP4W4A8 ||
         m == QuantMethod::kNVFP4W4A16 || m == QuantMethod::kInt4W4A16;
}

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

// Runs fn(i) for i in [0, n) on `threads` host threads bound to `device`; rethrows the first
// exception after all threads finish.
template <typename Fn>
void parallel_for(int n, int threads, int device, Fn fn) {
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    try {
      SERVEKIT_CUDA_CHECK(cudaSetDevice(device));
      for (int i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      next = n;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, std::min(threads, n)); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;  // cuBLAS and cuBLASLt workspaces
constexpr int kThreads = 256;
// fp8_per_tensor scalar scales sit 4 floats apart so that each is 16-byte aligned.
constexpr int64_t kScalarStride = 4;

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 1024));
}

}  // namespace

struct CublasMoE::Impl {
  MoEConfig cfg;
  int device = 0;
  QuantMethod method = QuantMethod::kBF16;
  GemmKind kind = GemmKind::kBF16;
  bool dequant = false;       // bf16 GEMMs on dequantized weights (4-bit formats, fp8 fallback)
  bool fp8_fallback = false;  // an fp8 format that cuBLASLt cannot run here
  bool available = false;
  std::string note;
  int L = 0, S = 0, G = 0, K = 0;
  int64_t H = 0, I = 0, R = 0, max_tokens = 0, capacity = 0;
  int row_align = 1;            // each group's rows padded to a multiple of this
  int64_t padded_capacity = 0;  // rows of the GEMM buffers: capacity plus the padding
  int64_t padded_rows = 0;      // rows in use after plan()
  size_t w_elt = 2, a_elt = 2;  // bytes per weight / activation element in the GEMMs
  bool has_bias = false;
  int64_t nb13 = 0, ld13 = 0, nb2 = 0, ld2 = 0;  // fp8_block128 weight scale layouts

  DeviceBuffer w13, w2, s13, s2, b13, b2;
  DeviceBuffer ids, topk_w, offsets, row_token, row_group, token_slot_row, scratch, pad_shift;
  DeviceBuffer xa, xs, h1, act_f32, act, as, y, amax, act_scales, lt_ws, blas_ws;
  cuda::PlanBuffers plan{};
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  std::unique_ptr<GroupedGemm> gemm1, gemm2;
  int64_t planned_tokens = -1;

  ~Impl() {
    gemm1.reset();
    gemm2.reset();
    if (blas) cublasDestroy(blas);
    if (lt) cublasLtDestroy(lt);
  }

  int choose_fp8_row_align(std::string* why) const;
  void upload_weights(const MoELayer& layer, int threads);
  void allocate_workspace();
  void route_and_plan(const MoEInputs& in, int64_t T, cudaStream_t stream);
};

// Asked before anything is uploaded: the smallest row alignment (16, 32, 64 or 128) for which
// cuBLASLt has fp8 algorithms for both GEMMs of the layer at the smallest and the largest padded
// row counts, or 0 with *why set (the reason at 16) when there is none.
int CublasMoE::Impl::choose_fp8_row_align(std::string* why) const {
  if (H % kFp8RowAlign != 0 || I % kFp8RowAlign != 0) {
    *why = detail::concat("H=", H, " and I=", I, " must be multiples of ", kFp8RowAlign,
                          " for cuBLASLt fp8");
    return 0;
  }
  GroupedGemm probe(blas, lt, kind, 1, lt_ws.get(), kLtWorkspaceBytes);
  const auto runs_all = [&](int align, std::string* reason) {
    const int64_t most = round_up(capacity + int64_t{G} * (align - 1), align);
    for (const int64_t n : {int64_t{align}, most}) {
      for (const auto& [rows, depth] : {std::pair{R, H}, std::pair{H, I}}) {
        GemmProblem p;  // the workspace stands in for every pointer: only its alignment is read
        p.a = p.b = p.c = lt_ws.get();
        p.a_scale = p.b_scale = lt_ws.get<float>();
        p.m = static_cast<int>(rows);
        p.n = static_cast<int>(n);
        p.k = static_cast<int>(depth);
        if (!probe.has_algorithm(p, reason)) return false;
      }
    }
    return true;
  };
  for (int align = kFp8RowAlign; align <= 128; align *= 2) {
    std::string reason;
    if (runs_all(align, &reason)) return align;
    if (align == kFp8RowAlign) *why = reason;
  }
  return 0;
}

// Copies one prepared matrix [N, Kc] into the peer's layout at dst: bf16 values when dequant,
// else the codes and, for fp8_block128 (dst_scales non-null), its scales as [ceil(N/128)][ld]
// (cuBLASLt BLK128x128_32F, "K-major" with ld = round_up(Kc/128, 4); PyTorch's
// `is_blockwise_128x128_scaling`).
static void upload_matrix(const QuantizedMatrix& m, bool dequant, uint8_t* dst, float* dst_scales,
                          int64_t ld) {
  if (dequant) {
    std::vector<float> f(static_cast<size_t>(m.rows * m.cols));
    dequantize_rows(m, 0, m.rows, f.data());
    std::vector<uint16_t> b(f.size());
    for (size_t i = 0; i < f.size(); ++i) b[i] = float_to_bf16(f[i]);
    SERVEKIT_CUDA_CHECK(cudaMemcpy(dst, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    return;
  }
  SERVEKIT_CUDA_CHECK(cudaMemcpy(dst, m.codes.data(), m.codes.size(), cudaMemcpyHostToDevice));
  if (dst_scales == nullptr) return;
  const int64_t nb = (m.rows + 127) / 128, kb = m.cols / 128;
  const auto* s = reinterpret_cast<const float*>(m.scales.data());
  std::vector<float> padded(static_cast<size_t>(nb * ld), 1.0f);
  for (int64_t i = 0; i < nb; ++i)
    for (int64_t j = 0; j < kb; ++j) padded[i * ld + j] = s[i * kb + j];
  SERVEKIT_CUDA_CHECK(
      cudaMemcpy(dst_scales, padded.data(), padded.size() * 4, cudaMemcpyHostToDevice));
}

void CublasMoE::Impl::upload_weights(const MoELayer& layer, int threads) {
  for (int g = 0; g < G; ++g)
    SERVEKIT_CHECK(layer.prepared_expert(g) != nullptr, "peer: expert ", g,
                   " has no prepared host copy; load every expert into a layer built with "
                   "exec.keep_host_weights = true");
  has_bias = !layer.prepared_expert(0)->w13_bias.empty();
  nb13 = (R + 127) / 128;
  ld13 = round_up(H / 128, 4);
  nb2 = (H + 127) / 128;
  ld2 = round_up(I / 128, 4);
  w13 = DeviceBuffer(static_cast<size_t>(G * R * H) * w_elt);
  w2 = DeviceBuffer(static_cast<size_t>(G * H * I) * w_elt);
  if (kind == GemmKind::kFP8Block) {
    s13 = DeviceBuffer(static_cast<size_t>(G * nb13 * ld13) * 4);
    s2 = DeviceBuffer(static_cast<size_t>(G * nb2 * ld2) * 4);
  } else if (kind == GemmKind::kFP8Tensor) {
    s13 = DeviceBuffer(static_cast<size_t>(G * kScalarStride) * 4);
    s2 = DeviceBuffer(static_cast<size_t>(G * kScalarStride) * 4);
  }
  std::vector<float> bias13, bias2, tensor13(G * kScalarStride), tensor2(G * kScalarStride);
  if (has_bias) {
    bias13.assign(static_cast<size_t>(G * R), 0.0f);
    bias2.assign(static_cast<size_t>(G * H), 0.0f);
  }
  parallel_for(G, threads, device, [&](int g) {
    const PreparedExpert& e = *layer.prepared_expert(g);
    const bool block = kind == GemmKind::kFP8Block;
    upload_matrix(e.w13, dequant, w13.bytes() + g * R * H * w_elt,
                  block ? s13.get<float>() + g * nb13 * ld13 : nullptr, ld13);
    upload_matrix(e.w2, dequant, w2.bytes() + g * H * I * w_elt,
                  block ? s2.get<float>() + g * nb2 * ld2 : nullptr, ld2);
    tensor13[g * kScalarStride] = e.w13.tensor_scale;
    tensor2[g * kScalarStride] = e.w2.tensor_scale;
    if (has_bias) {
      SERVEKIT_CHECK(static_cast<int64_t>(e.w13_bias.size()) == R &&
                         static_cast<int64_t>(e.w2_bias.size()) == H,
                     "peer: expert ", g, " has biases of ", e.w13_bias.size(), " and ",
                     e.w2_bias.size(), " values, expected ", R, " and ", H,
                     " (every expert must have biases when expert 0 has)");
      std::copy(e.w13_bias.begin(), e.w13_bias.end(), bias13.begin() + g * R);
      std::copy(e.w2_bias.begin(), e.w2_bias.end(), bias2.begin() + g * H);
    }
  });
  if (kind == GemmKind::kFP8Tensor) {
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(s13.get(), tensor13.data(), tensor13.size() * 4, cudaMemcpyHostToDevice));
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(s2.get(), tensor2.data(), tensor2.size() * 4, cudaMemcpyHostToDevice));
  }
  if (has_bias) {
    b13 = DeviceBuffer(bias13.size() * 4);
    b2 = DeviceBuffer(bias2.size() * 4);
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(b13.get(), bias13.data(), bias13.size() * 4, cudaMemcpyHostToDevice));
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(b2.get(), bias2.data(), bias2.size() * 4, cudaMemcpyHostToDevice));
  }
}

void CublasMoE::Impl::allocate_workspace() {
  const auto n = [](int64_t v) { return static_cast<size_t>(v); };
  ids = DeviceBuffer(n(max_tokens * K) * 4);
  topk_w = DeviceBuffer(n(max_tokens * K) * 4);
  offsets = DeviceBuffer(n(G + 1) * 4);
  row_token = DeviceBuffer(n(capacity) * 4);
  row_group = DeviceBuffer(n(capacity) * 4);
  token_slot_row = DeviceBuffer(n(max_tokens * (K + S)) * 4);
  scratch = DeviceBuffer(cuda::plan_scratch_bytes(max_tokens, K, G));
  pad_shift = DeviceBuffer(n(G + 1) * 4);
  plan.num_groups = G;
  plan.group_offsets = offsets.get<int32_t>();
  plan.row_token = row_token.get<int32_t>();
  plan.row_group = row_group.get<int32_t>();
  plan.token_slot_row = token_slot_row.get<int32_t>();
  plan.scratch = scratch.get();

  padded_capacity = capacity + int64_t{G} * (row_align - 1);
  const int64_t P = padded_capacity;
  xa = DeviceBuffer(n(P * H) * a_elt);
  h1 = DeviceBuffer(n(P * R) * 2);
  act = DeviceBuffer(n(P * I) * a_elt);
  y = DeviceBuffer(n(P * H) * 2);
  if (kind != GemmKind::kBF16) {
    act_f32 = DeviceBuffer(n(P * I) * 4);
    amax = DeviceBuffer(2 * sizeof(unsigned));
    act_scales = DeviceBuffer(n(2 * kScalarStride) * sizeof(float));
  }
  if (kind == GemmKind::kFP8Block) {
    xs = DeviceBuffer(n((H / kernels::kActBlock) * P) * 4);
    as = DeviceBuffer(n((I / kernels::kActBlock) * P) * 4);
  }
}

void CublasMoE::Impl::route_and_plan(const MoEInputs& in, int64_t T, cudaStream_t stream) {
  const float* bias =
      in.correction_bias.defined() ? in.correction_bias.ptr<const float>() : nullptr;
  cuda::launch_route(cfg.routing, in.router_logits.data, in.router_logits.dtype, bias, T,
                     ids.get<int32_t>(), topk_w.get<float>(), stream);
  cuda::launch_build_plan(ids.get<int32_t>(), T, K, cfg.experts.local_expert_offset, L, S, plan,
                          stream);
}

CublasMoE::CublasMoE(const MoELayer& layer, int threads) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.cfg = layer.config();
  SERVEKIT_CHECK(m.cfg.exec.device.is_cuda(), "peer: the layer is on ", m.cfg.exec.device.str(),
                 "; the cuBLAS peer needs a CUDA layer");
  m.device = m.cfg.exec.device.index;
  SERVEKIT_CUDA_CHECK(cudaSetDevice(m.device));
  m.method = m.cfg.quant.method;
  m.kind = gemm_kind(m.method);
  m.L = m.cfg.experts.local_num_experts;
  m.S = m.cfg.experts.num_shared_experts;
  m.G = m.L + m.S;
  m.K = m.cfg.routing.top_k;
  m.H = m.cfg.experts.hidden_size;
  m.I = m.cfg.experts.intermediate_size;
  m.R = w13_rows(m.cfg);
  m.max_tokens = m.cfg.exec.max_num_tokens;
  m.capacity = cuda::plan_capacity_rows(m.max_tokens, m.K, m.S);
  m.dequant = is_4bit(m.method);
  if (m.cfg.routing.method == RoutingMethod::kPrecomputed) {
    m.note = "precomputed routing is not supported by the peer";
    return;
  }
  if (m.cfg.routing.num_experts > kMaxExpertsGpu) {
    m.note = "num_experts exceeds the GPU routing limit";
    return;
  }
  if (is_4bit(m.method)) {
    m.note = "bf16 GEMMs on the dequantized 4-bit weights";
    if (m.method == QuantMethod::kMXFP4W4A8) m.note += ", bf16 activations (not fp8)";
  }
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SERVEKIT_CUBLAS_CHECK(cublasCreate(&m.blas));
  // A workspace of our own: cuBLAS then allocates nothing while a CUDA graph captures run().
  m.blas_ws = DeviceBuffer(kLtWorkspaceBytes);
  SERVEKIT_CUBLAS_CHECK(cublasSetWorkspace(m.blas, m.blas_ws.get(), kLtWorkspaceBytes));
  SERVEKIT_CUBLAS_CHECK(cublasLtCreate(&m.lt));
  if (m.kind != GemmKind::kBF16) {
    m.lt_ws = DeviceBuffer(kLtWorkspaceBytes);
    std::string why;
    m.row_align = m.choose_fp8_row_align(&why);
    if (m.row_align == 0) {
      m.kind = GemmKind::kBF16;
      m.row_align = 1;
      m.dequant = m.fp8_fallback = true;
      m.note = why + "; so bf16 GEMMs on the dequantized weights, bf16 activations (not fp8)";
    } else if (m.row_align != kFp8RowAlign) {
      m.note = detail::concat("rows padded to multiples of ", m.row_align,
                              " per expert: cuBLASLt has no fp8 algorithm for ", kFp8RowAlign,
                              " rows here (", why, ")");
    }
  }
  m.w_elt = m.kind == GemmKind::kBF16 ? 2 : 1;
  m.a_elt = m.w_elt;
  m.upload_weights(layer, threads);
  m.allocate_workspace();
  m.gemm1 =
      std::make_unique<GroupedGemm>(m.blas, m.lt, m.kind, m.G, m.lt_ws.get(), kLtWorkspaceBytes);
  m.gemm2 =
      std::make_unique<GroupedGemm>(m.blas, m.lt, m.kind, m.G, m.lt_ws.get(), kLtWorkspaceBytes);
  m.available = true;
}

CublasMoE::~CublasMoE() = default;

bool CublasMoE::available() const {
  return impl_->available;
}

std::string CublasMoE::name() const {
  if (!impl_->available) return "none";
  return impl_->gemm1->api() + (impl_->dequant ? "_dequant_bf16" : "");
}

const std::string& CublasMoE::note() const {
  return impl_->note;
}

double CublasMoE::tolerance() const {
  return peer_tolerance(impl_->method, impl_->fp8_fallback);
}

void CublasMoE::plan(const MoEInputs& in, cudaStream_t stream) {
  Impl& m = *impl_;
  SERVEKIT_CHECK(m.available, "peer: unavailable: ", m.note);
  const int64_t T = in.hidden.size(0);
  SERVEKIT_CHECK(T >= 1 && T <= m.max_tokens, "peer: T=", T, " must be in [1, ", m.max_tokens, "]");
  SERVEKIT_CUDA_CHECK(cudaSetDevice(m.device));
  m.planned_tokens = -1;
  m.route_and_plan(in, T, stream);
  std::vector<int32_t> off(static_cast<size_t>(m.G + 1));
  SERVEKIT_CUDA_CHECK(
      cudaMemcpyAsync(off.data(), m.offsets.get(), off.size() * 4, cudaMemcpyDeviceToHost, stream));
  SERVEKIT_CUDA_CHECK(cudaStreamSynchronize(stream));

  // Group g's rows start at padded[g], a multiple of row_align; the pad rows stay zero (block
  // scales 1), so the GEMMs add nothing from them and the per-tensor amax ignores them.
  std::vector<int64_t> padded(static_cast<size_t>(m.G + 1));
  std::vector<int32_t> shift(static_cast<size_t>(m.G + 1));
  int64_t rows = 0;
  for (int g = 0; g <= m.G; ++g) {
    padded[g] = rows;
    shift[g] = static_cast<int32_t>(rows - off[g]);
    if (g < m.G) rows += round_up(off[g + 1] - off[g], m.row_align);
  }
  m.padded_rows = rows;
  SERVEKIT_CHECK(rows <= m.padded_capacity, "peer: ", rows, " padded rows exceed the capacity of ",
                 m.padded_capacity);
  SERVEKIT_CUDA_CHECK(cudaMemcpyAsync(m.pad_shift.get(), shift.data(), shift.size() * 4,
                                      cudaMemcpyHostToDevice, stream));
  const bool block = m.kind == GemmKind::kFP8Block, tensor = m.kind == GemmKind::kFP8Tensor;
  const int64_t kb1 = m.H / kernels::kActBlock, kb2 = m.I / kernels::kActBlock;
  if (m.kind != GemmKind::kBF16) {
    SERVEKIT_CUDA_CHECK(cudaMemsetAsync(m.xa.get(), 0, rows * m.H * m.a_elt, stream));
    SERVEKIT_CUDA_CHECK(cudaMemsetAsync(m.act.get(), 0, rows * m.I * m.a_elt, stream));
    SERVEKIT_CUDA_CHECK(cudaMemsetAsync(m.act_f32.get(), 0, rows * m.I * 4, stream));
  }
  if (block) {
    kernels::fill_f32<<<grid_for(kb1 * rows), kThreads, 0, stream>>>(m.xs.get<float>(), kb1 * rows,
                                                                     1.0f);
    kernels::fill_f32<<<grid_for(kb2 * rows), kThreads, 0, stream>>>(m.as.get<float>(), kb2 * rows,
                                                                     1.0f);
    SERVEKIT_CUDA_CHECK(cudaGetLastError());
  }
  SERVEKIT_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<GemmProblem> p1, p2;
  for (int g = 0; g < m.G; ++g) {
    const int64_t o = padded[g], n = padded[g + 1] - padded[g];
    if (n == 0) continue;
    GemmProblem a;
    a.a = m.w13.bytes() + g * m.R * m.H * m.w_elt;
    a.b = m.xa.bytes() + o * m.H * m.a_elt;
    a.c = m.h1.bytes() + o * m.R * 2;
    a.m = static_cast<int>(m.R);
    a.n = static_cast<int>(n);
    a.k = static_cast<int>(m.H);
    GemmProblem b;
    b.a = m.w2.bytes() + g * m.H * m.I * m.w_elt;
    b.b = m.act.bytes() + o * m.I * m.a_elt;
    b.c = m.y.bytes() + o * m.H * 2;
    b.m = static_cast<int>(m.H);
    b.n = static_cast<int>(n);
    b.k = static_cast<int>(m.I);
    if (tensor) {
      a.a_scale = m.s13.get<float>() + g * kScalarStride;
      a.b_scale = m.act_scales.get<float>();
      b.a_scale = m.s2.get<float>() + g * kScalarStride;
      b.b_scale = m.act_scales.get<float>() + kScalarStride;
    } else if (block) {
      a.a_scale = m.s13.get<float>() + g * m.nb13 * m.ld13;
      a.b_scale = m.xs.get<float>() + kernels::act_scale_base(o, kb1);
      b.a_scale = m.s2.get<float>() + g * m.nb2 * m.ld2;
      b.b_scale = m.as.get<float>() + kernels::act_scale_base(o, kb2);
    }
    p1.push_back(a);
    p2.push_back(b);
  }
  try {
    m.gemm1->set_problems(p1);
    m.gemm2->set_problems(p2);
  } catch (const Error& e) {
    m.available = false;
    m.note = e.what();
    throw;
  }
  m.planned_tokens = T;
}

void CublasMoE::run(const MoEInputs& in, TensorView out, cudaStream_t stream) {
  using namespace kernels;
  Impl& m = *impl_;
  const int64_t T = in.hidden.size(0);
  SERVEKIT_CHECK(m.available && m.planned_tokens == T, "peer: run with T=", T,
                 " needs plan() on the same inputs first (planned T=", m.planned_tokens, ")");
  SERVEKIT_CHECK(out.ndim == 2 && out.size(0) == T && out.size(1) == m.H &&
                     out.dtype == DType::kBF16 && out.is_contiguous(),
                 "peer: out is ", out.str(), ", expected [", T, ", ", m.H, "] bf16 contiguous");
  SERVEKIT_CUDA_CHECK(cudaSetDevice(m.device));
  m.route_and_plan(in, T, stream);

  const auto rows = static_cast<unsigned>(T * (m.K + m.S));  // upper bound of permuted rows
  const auto* hidden = in.hidden.ptr<const __nv_bfloat16>();
  const int32_t* off = m.offsets.get<int32_t>();
  const int32_t* tok = m.row_token.get<int32_t>();
  const int32_t* grp = m.row_group.get<int32_t>();
  const int32_t* shift = m.pad_shift.get<int32_t>();
  const auto* no_token = static_cast<const int32_t*>(nullptr);  // source in the padded layout
  unsigned* amax = m.amax.get<unsigned>();
  float* ascale = m.act_scales.get<float>();
  switch (m.kind) {
    case GemmKind::kBF16:
      gather_rows_bf16<<<rows, 128, 0, stream>>>(hidden, tok, grp, shift, off, m.G, m.H,
                                                 m.xa.get<__nv_bfloat16>());
      break;
    case GemmKind::kFP8Tensor:
      SERVEKIT_CUDA_CHECK(cudaMemsetAsync(amax, 0, 2 * sizeof(unsigned), stream));
      amax_rows<<<grid_for(T * m.H), kThreads, 0, stream>>>(hidden, T, nullptr, m.H, amax);
      quantize_rows_fp8_tensor<<<rows, kThreads, 0, stream>>>(
          hidden, tok, grp, shift, off, m.G, m.H, amax, m.xa.get<uint8_t>(), ascale);
      break;
    case GemmKind::kFP8Block:
      quantize_rows_fp8_block<<<rows, kThreads, 0, stream>>>(
          hidden, tok, grp, shift, off, m.G, m.H, m.xa.get<uint8_t>(), m.xs.get<float>());
      break;
  }
  m.gemm1->run(stream);
  const auto* h1 = m.h1.get<__nv_bfloat16>();
  if (m.kind == GemmKind::kBF16) {
    activation_rows<<<rows, kThreads, 0, stream>>>(h1, m.b13.get<float>(), grp, shift, off, m.G,
                                                   m.I, m.cfg.activation,
                                                   m.act.get<__nv_bfloat16>());
  } else {
    float* a32 = m.act_f32.get<float>();
    activation_rows<<<rows, kThreads, 0, stream>>>(h1, m.b13.get<float>(), grp, shift, off, m.G,
                                                   m.I, m.cfg.activation, a32);
    if (m.kind == GemmKind::kFP8Tensor) {
      // Over all padded rows: the pad rows hold zeros, which leave the amax as it is.
      amax_rows<<<grid_for(m.padded_rows * m.I), kThreads, 0, stream>>>(a32, m.padded_rows, nullptr,
                                                                        m.I, amax + 1);
      quantize_rows_fp8_tensor<<<rows, kThreads, 0, stream>>>(a32, no_token, grp, shift, off, m.G,
                                                              m.I, amax + 1, m.act.get<uint8_t>(),
                                                              ascale + kScalarStride);
    } else {
      quantize_rows_fp8_block<<<rows, kThreads, 0, stream>>>(
          a32, no_token, grp, shift, off, m.G, m.I, m.act.get<uint8_t>(), m.as.get<float>());
    }
  }
  m.gemm2->run(stream);
  combine_rows<<<static_cast<unsigned>(T), kThreads, 0, stream>>>(
      m.y.get<__nv_bfloat16>(), m.token_slot_row.get<int32_t>(), grp, shift, m.topk_w.get<float>(),
      m.b2.get<float>(), m.K, m.S, m.H, out.ptr<__nv_bfloat16>());
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::peer
