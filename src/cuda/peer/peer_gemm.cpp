#include "cuda/peer/peer_gemm.h"

#include <cstdint>

#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::peer {

void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw Error(detail::concat(call, " failed: ", cublasGetStatusName(s), " (",
                             cublasGetStatusString(s), ") (", file, ":", line, ")"));
}

namespace {

// Owns one cuBLASLt handle object and destroys it with the matching function.
template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
  T h = nullptr;
  LtHandle() = default;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() {
    if (h) Destroy(h);
  }
};

template <typename V>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& v) {
  SERVEKIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}

template <typename V>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const V& v) {
  SERVEKIT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof(v)));
}

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing the address.
uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

}  // namespace

struct GroupedGemm::LtCall {
  LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
  LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> a, b, d;
  cublasLtMatmulAlgo_t algo{};
};

GroupedGemm::GroupedGemm(cublasHandle_t blas, cublasLtHandle_t lt, GemmKind kind, int max_problems,
                         void* lt_workspace, size_t ws_bytes)
    : blas_(blas),
      lt_(lt),
      kind_(kind),
      max_problems_(max_problems),
      ws_(lt_workspace),
      ws_bytes_(ws_bytes) {
  if (kind_ == GemmKind::kBF16)
    SERVEKIT_CUDA_CHECK(
        cudaMalloc(&d_ptrs_, 3 * sizeof(void*) * static_cast<size_t>(max_problems)));
}

GroupedGemm::~GroupedGemm() {
  if (d_ptrs_) cudaFree(d_ptrs_);
}

std::string GroupedGemm::api() const {
  switch (kind_) {
    case GemmKind::kBF16:
      return grouped_ok_ ? "cublas_grouped" : "cublas_gemm_ex";
    case GemmKind::kFP8Tensor:
      return "cublaslt_fp8_tensor";
    case GemmKind::kFP8Block:
      return "cublaslt_fp8_block128";
  }
  return "?";
}

void GroupedGemm::set_problems(const std::vector<GemmProblem>& problems) {
  SERVEKIT_CHECK(static_cast<int>(problems.size()) <= max_problems_, "peer gemm: ", problems.size(),
                 " problems exceed the capacity of ", max_problems_);
  problems_.clear();
  lt_calls_.clear();
  const size_t P = problems.size();
  if (kind_ == GemmKind::kBF16) {
    trans_a_.assign(P, CUBLAS_OP_T);
    trans_b_.assign(P, CUBLAS_OP_N);
    m_.resize(P);
    n_.resize(P);
    k_.resize(P);
    group_size_.assign(P, 1);
    alpha_.assign(P, 1.0f);
    beta_.assign(P, 0.0f);
    std::vector<const void*> ptrs(3 * P);
    for (size_t i = 0; i < P; ++i) {
      m_[i] = problems[i].m;
      n_[i] = problems[i].n;
      k_[i] = problems[i].k;
      ptrs[i] = problems[i].a;
      ptrs[P + i] = problems[i].b;
      ptrs[2 * P + i] = problems[i].c;
    }
    if (P > 0)
      SERVEKIT_CUDA_CHECK(
          cudaMemcpy(d_ptrs_, ptrs.data(), ptrs.size() * sizeof(void*), cudaMemcpyHostToDevice));
    problems_ = problems;
    return;
  }

  std::vector<std::unique_ptr<LtCall>> calls;
  for (const GemmProblem& p : problems) {
    std::string why;
    calls.push_back(make_lt_call(p, &why));
    SERVEKIT_CHECK(calls.back() != nullptr, "peer gemm: ", why);
  }
  lt_calls_ = std::move(calls);
  problems_ = problems;
}

bool GroupedGemm::has_algorithm(const GemmProblem& p, std::string* why) const {
  return kind_ == GemmKind::kBF16 || make_lt_call(p, why) != nullptr;
}

std::unique_ptr<GroupedGemm::LtCall> GroupedGemm::make_lt_call(const GemmProblem& p,
                                                               std::string* why) const {
  const bool block = kind_ == GemmKind::kFP8Block;
  const auto problem = [&] { return detail::concat(api(), " m=", p.m, " n=", p.n, " k=", p.k); };
  // Checked here because cuBLASLt only answers CUBLAS_STATUS_NOT_SUPPORTED.
  if (p.m % kFp8RowAlign != 0 || p.n % kFp8RowAlign != 0 || p.k % kFp8RowAlign != 0 || p.m <= 0 ||
      p.n <= 0 || p.k <= 0) {
    *why = detail::concat(problem(), ": fp8 needs m, n and k positive multiples of ", kFp8RowAlign);
    return nullptr;
  }
  for (const void* q : {p.a, p.b, static_cast<const void*>(p.c),
                        static_cast<const void*>(p.a_scale), static_cast<const void*>(p.b_scale)}) {
    if (q == nullptr || alignment_of(q) < 16) {
      *why = detail::concat(problem(), ": fp8 needs 16-byte aligned matrices and scales, got ", q);
      return nullptr;
    }
  }
  auto call = std::make_unique<LtCall>();
  SERVEKIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&call->desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  // Weights 128x128 blocks with activations 1x128 blocks: a pair the docs list as supported.
  const int32_t a_mode =
      block ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  const int32_t b_mode =
      block ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode);
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode);
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, p.a_scale);
  set_desc(call->desc.h, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, p.b_scale);
  SERVEKIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call->a.h, CUDA_R_8F_E4M3, p.k, p.m, p.k));
  SERVEKIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call->b.h, CUDA_R_8F_E4M3, p.k, p.n, p.k));
  SERVEKIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call->d.h, CUDA_R_16BF, p.m, p.n, p.m));
  LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  SERVEKIT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.h));
  set_pref(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws_bytes_);
  // The heuristic assumes 256-byte aligned matrices by default; an expert's rows start anywhere.
  set_pref(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(p.a));
  set_pref(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(p.b));
  set_pref(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(p.c));
  set_pref(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(p.c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
      lt_, call->desc.h, call->a.h, call->b.h, call->d.h, call->d.h, pref.h, 1, &result, &found);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    *why = detail::concat("cuBLASLt has no ", problem(), " algorithm on this device (",
                          cublasGetStatusName(s), ", ", found, " found)");
    return nullptr;
  }
  call->algo = result.algo;
  return call;
}

void GroupedGemm::run_bf16(cudaStream_t stream) {
  const int P = static_cast<int>(problems_.size());
  if (P == 0) return;
  SERVEKIT_CUBLAS_CHECK(cublasSetStream(blas_, stream));
  if (grouped_ok_) {
    const cublasStatus_t s = cublasGemmGroupedBatchedEx(
        blas_, trans_a_.data(), trans_b_.data(), m_.data(), n_.data(), k_.data(), alpha_.data(),
        const_cast<const void* const*>(d_ptrs_), CUDA_R_16BF, k_.data(),
        const_cast<const void* const*>(d_ptrs_ + P), CUDA_R_16BF, k_.data(), beta_.data(),
        d_ptrs_ + 2 * P, CUDA_R_16BF, m_.data(), P, group_size_.data(), CUBLAS_COMPUTE_32F);
    // Refused calls enqueue nothing; later calls take the per-problem route.
    if (s == CUBLAS_STATUS_SUCCESS) return;
    if (s != CUBLAS_STATUS_NOT_SUPPORTED && s != CUBLAS_STATUS_INVALID_VALUE)
      check_cublas(s, "cublasGemmGroupedBatchedEx", __FILE__, __LINE__);
    grouped_ok_ = false;
  }
  const float alpha = 1.0f, beta = 0.0f;
  for (const GemmProblem& p : problems_)
    SERVEKIT_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, p.m, p.n, p.k, &alpha, p.a,
                                       CUDA_R_16BF, p.k, p.b, CUDA_R_16BF, p.k, &beta, p.c,
                                       CUDA_R_16BF, p.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void GroupedGemm::run(cudaStream_t stream) {
  if (kind_ == GemmKind::kBF16) {
    run_bf16(stream);
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  for (size_t i = 0; i < problems_.size(); ++i) {
    const GemmProblem& p = problems_[i];
    const LtCall& c = *lt_calls_[i];
    SERVEKIT_CUBLAS_CHECK(cublasLtMatmul(lt_, c.desc.h, &alpha, p.a, c.a.h, p.b, c.b.h, &beta, p.c,
                                         c.d.h, p.c, c.d.h, &c.algo, ws_, ws_bytes_, stream));
  }
}

}  // namespace servekit::peer
