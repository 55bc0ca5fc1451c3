// A list of independent GEMMs (one per non-empty expert) run through cuBLAS, for the peer MoE
// layer (cublas_moe.h). Every problem is "y = x · Wᵀ" with row-major operands:
//   C [n, m] bf16 = B [n, k] · A [m, k]ᵀ      (A = the expert's weight, B = its token rows)
// which is cuBLAS's column-major C (m x n) = op(A) (m x k) · B (k x n) with op = transpose
// ("TN", the only layout cuBLASLt takes for fp8 on Hopper). Internal header.
//
// The fp8 requirements of cublasLtMatmul (cuBLAS docs, "cublasLtMatmul()" and "128-element 1D
// and 128x128 2D Block Scaling"): every dimension and pointer 16-byte aligned (m, n, k and the
// leading dimensions multiples of 16 e4m3 elements), scale factors 16-byte aligned, M and N
// multiples of 4 for the block scales, A BLK128x128 with B VEC128 a supported pair. The
// heuristic assumes 256-byte aligned matrices unless told otherwise, so each call tells it the
// real alignment of its pointers.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace servekit::peer {

// fp8 problems need n (the expert's row count) to be a multiple of this: callers pad each
// expert's rows up to it with zero rows.
constexpr int kFp8RowAlign = 16;

enum class GemmKind {
  kBF16,       // bf16 x bf16 -> bf16, fp32 accumulate
  kFP8Tensor,  // e4m3 x e4m3 -> bf16, one fp32 scale per operand (device pointers)
  kFP8Block,   // e4m3 x e4m3 -> bf16, A: 128x128 block scales, B: 1x128 scales (device pointers)
};

struct GemmProblem {
  const void* a = nullptr;  // [m, k] weight, row-major
  const void* b = nullptr;  // [n, k] activations, row-major
  void* c = nullptr;        // [n, m] bf16 output, row-major
  int m = 0, n = 0, k = 0;
  const float* a_scale = nullptr;  // fp8 kinds: device scales of A (layout per kind)
  const float* b_scale = nullptr;  // fp8 kinds: device scales of B
};

class GroupedGemm {
 public:
  // max_problems bounds set_problems; lt_workspace (device, ws_bytes) is used by cuBLASLt.
  GroupedGemm(cublasHandle_t blas, cublasLtHandle_t lt, GemmKind kind, int max_problems,
              void* lt_workspace, size_t ws_bytes);
  ~GroupedGemm();
  GroupedGemm(const GroupedGemm&) = delete;
  GroupedGemm& operator=(const GroupedGemm&) = delete;

  // Untimed: uploads the pointer arrays (bf16, synchronously) or builds one cuBLASLt descriptor
  // set per problem and asks the heuristic for an algorithm. Throws servekit::Error naming the
  // problem when it breaks an fp8 requirement above or cuBLASLt has no algorithm for it.
  void set_problems(const std::vector<GemmProblem>& problems);
  // fp8 kinds: whether the heuristic finds an algorithm for p (pointers are only looked at for
  // their alignment, nothing runs); *why says why not. Always true for kBF16.
  bool has_algorithm(const GemmProblem& p, std::string* why) const;
  // Enqueues every problem on `stream`. bf16: one grouped call, or, if this cuBLAS refuses the
  // grouped call on its first use, one cublasGemmEx per problem from then on.
  void run(cudaStream_t stream);
  // "cublas_grouped", "cublas_gemm_ex", "cublaslt_fp8_tensor" or "cublaslt_fp8_block128".
  std::string api() const;

 private:
  struct LtCall;
  void run_bf16(cudaStream_t stream);
  // The descriptors and algorithm of one fp8 problem; null with *why set when it breaks a
  // requirement or the heuristic finds nothing.
  std::unique_ptr<LtCall> make_lt_call(const GemmProblem& p, std::string* why) const;

  cublasHandle_t blas_;
  cublasLtHandle_t lt_;
  GemmKind kind_;
  int max_problems_;
  void* ws_;
  size_t ws_bytes_;
  bool grouped_ok_ = true;
  std::vector<GemmProblem> problems_;
  // bf16 grouped call: host arrays of the per-group arguments, device pointer arrays A|B|C.
  std::vector<cublasOperation_t> trans_a_, trans_b_;
  std::vector<int> m_, n_, k_, group_size_;
  std::vector<float> alpha_, beta_;
  void** d_ptrs_ = nullptr;
  std::vector<std::unique_ptr<LtCall>> lt_calls_;
};

// Throws servekit::Error "<call> failed: <cuBLAS status> (file:line)" unless s is success.
void check_cublas(cublasStatus_t s, const char* call, const char* file, int line);

}  // namespace servekit::peer

#define SERVEKIT_CUBLAS_CHECK(call) \
  ::servekit::peer::check_cublas((call), #call, __FILE__, __LINE__)
