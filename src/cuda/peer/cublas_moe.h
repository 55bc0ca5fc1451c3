// The in-repo peer of the MoE layer for benchmarks: the same layer computed with cuBLAS GEMMs.
// Routing and the plan are the library's own kernels (cuda/moe_plan.h), so only the expert
// computation differs:
//   bf16                   cublasGemmGroupedBatchedEx over the non-empty experts (falls back to
//                          one cublasGemmEx per expert if this cuBLAS refuses the grouped call)
//   fp8_per_tensor         one cublasLtMatmul per expert, e4m3 x e4m3 with scalar scales
//   fp8_block128           one cublasLtMatmul per expert, weights BLK128x128_32F scales and
//                          activations VEC128_32F (1 x 128) scales (cuBLAS >= 12.9 on sm_90)
//   mxfp4_*, nvfp4, int4   the bf16 peer on the dequantized weights (bf16 activations, also for
//                          mxfp4_w4a8: its note says so)
// cuBLASLt's fp8 GEMMs need row counts that are multiples of 16 (peer_gemm.h), so for the fp8
// formats each expert's rows are padded to a multiple of 16 with zero rows (block scales 1);
// the GEMMs compute them, activation and combine skip them (32, 64 or 128 rows, with a note, if
// cuBLASLt has no algorithm for 16 here). When cuBLASLt has no fp8 algorithm
// for the layer's shapes on this device (asked once at construction), or H or I is not a
// multiple of 16, the fp8 formats fall back to the bf16 peer on the dequantized weights with bf16
// activations: named "cublas_grouped_dequant_bf16", with a note saying why.
// Activation and combine are the peer's own simple kernels (peer_kernels.cuh), fp32 math with a
// bf16 intermediate, combine in the order of the layer. cuBLAS takes problem sizes on the host,
// so plan() copies the group sizes to the host once (one sync, outside any timed region); run()
// then replays the whole layer for those inputs without synchronising.
// Internal header (benchmarks and GPU tests).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "servekit/moe.h"

namespace servekit::peer {

// Relative-L2 bound of the peer's output against moe_reference. The peer rounds its GEMM1
// output to bf16 before the activation (as vLLM's fused MoE does), one rounding (2^-9 relative)
// more than the layer:
//   bf16, *_w4a16     one more bf16 rounding of the intermediate: twice the layer's 3e-3;
//   fp8_per_tensor,   that rounding moves ~2^-9 / 2^-4 = 3% of the fp8 intermediate codes by one
//   fp8_block128      e4m3 step (6-12% of the element): sqrt(0.03) * 0.09 = 1.6% rms, bound 3%;
//   mxfp4_w4a8        the peer keeps bf16 activations where the reference rounds them to e4m3
//                     (rms 2^-4/sqrt(3) = 3.6% per operand, ~5% after both): bound 15%.
//   fp8 fallback      (bf16 GEMMs on dequantized weights) bf16 activations where the reference
//                     rounds them to e4m3, as mxfp4_w4a8: bound 15%.
inline double peer_tolerance(QuantMethod m, bool fp8_dequant_fallback = false) {
  if (fp8_dequant_fallback) return 0.15;
  switch (m) {
    case QuantMethod::kFP8PerTensor:
    case QuantMethod::kFP8Block128:
      return 0.03;
    case QuantMethod::kMXFP4W4A8:
      return 0.15;
    default:
      return 6e-3;
  }
}

class CublasMoE {
 public:
  // layer: a MoELayer on a CUDA device, built with exec.keep_host_weights = true, with every
  // routed and shared expert loaded; its prepared host copies are converted to the peer's layout
  // on `threads` host threads (0 = all) and uploaded. The peer's workspace is sized for the
  // layer's max_num_tokens. Throws servekit::Error if the layer is not on CUDA, an expert is
  // missing or not kept, or a CUDA/cuBLAS call fails; an unsupported format does not throw: the
  // peer is then unavailable with a reason.
  explicit CublasMoE(const MoELayer& layer, int threads = 0);
  ~CublasMoE();
  CublasMoE(const CublasMoE&) = delete;
  CublasMoE& operator=(const CublasMoE&) = delete;

  bool available() const;
  // "cublas_grouped", "cublas_gemm_ex", "cublaslt_fp8_tensor", "cublaslt_fp8_block128", with
  // "_dequant_bf16" appended for 4-bit formats and the fp8 fallback; "none" when unavailable.
  std::string name() const;
  // Why the peer is unavailable, or what it approximates (empty when exact in kind).
  const std::string& note() const;
  // peer_tolerance of the path this peer takes (the fp8 fallback has its own bound).
  double tolerance() const;

  // Untimed set-up for one batch: routes and plans `in` once on `stream`, copies the group sizes
  // to the host (synchronises the stream), lays out the padded rows (zeroes the pad rows) and
  // builds the per-expert GEMM arguments.
  // `in` as for MoELayer::forward (device tensors, router logits f32/bf16, correction bias when
  // the routing uses one; precomputed routing is not supported). Throws servekit::Error if the
  // peer is unavailable, T exceeds the capacity, or cuBLASLt finds no algorithm (the note then
  // says why and the peer becomes unavailable).
  void plan(const MoEInputs& in, cudaStream_t stream);

  // The whole layer for the inputs last given to plan() (same tensors, same contents): route,
  // plan, permute (+ fp8 quantize), GEMM1, activation (+ quantize), GEMM2, combine into out
  // [T, H] bf16 on the device. Asynchronous on `stream`. Throws servekit::Error if plan() was
  // not called for this T or a CUDA/cuBLAS call fails.
  void run(const MoEInputs& in, TensorView out, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace servekit::peer
