// Host launcher of the activation + quantize between the MoE grouped GEMMs.
#include "cuda/kernels/quant/activation_rows.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/moe_quant.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {

namespace quant {
template <ActFormat F, Activation A>
void launch_activation(const uint16_t* h, const float* bias, int64_t cols, const PlanBuffers& plan,
                       int64_t capacity, const ActBuffers& out, cudaStream_t stream, bool pdl,
                       int interleave) {
  const int grid = row_grid(capacity, cols / kChunk);
  if constexpr (F == ActFormat::kFP8PerTensor) {
    // The per-tensor scale needs the amax of every activated row before any row is quantized:
    // a first pass computes it (recomputing the activation is cheaper than storing it).
    // The amax pass follows a memset, not a kernel, so it runs without PDL.
    SERVEKIT_CUDA_CHECK(cudaMemsetAsync(out.amax_bits, 0, sizeof(unsigned), stream));
    activation_rows_kernel<F, A, true>
        <<<grid, kRowThreads, 0, stream>>>(h, bias, cols, plan, out, interleave);
    SERVEKIT_CUDA_CHECK(cudaGetLastError());
  }
  launch_pdl(activation_rows_kernel<F, A, false>, grid, kRowThreads, 0, pdl, stream, h, bias, cols,
             plan, out, interleave);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

template <ActFormat F>
void launch_for_format(Activation act, const uint16_t* h, const float* bias, int64_t cols,
                       const PlanBuffers& plan, int64_t capacity, const ActBuffers& out,
                       cudaStream_t stream, bool pdl, int interleave) {
  switch (act) {
    case Activation::kSwiGLU:
      return launch_activation<F, Activation::kSwiGLU>(h, bias, cols, plan, capacity, out, stream,
                                                       pdl, interleave);
    case Activation::kGeGLU:
      return launch_activation<F, Activation::kGeGLU>(h, bias, cols, plan, capacity, out, stream,
                                                      pdl, interleave);
    case Activation::kSwiGLUOAI:
      return launch_activation<F, Activation::kSwiGLUOAI>(h, bias, cols, plan, capacity, out,
                                                          stream, pdl, interleave);
    case Activation::kReLU2:
      return launch_activation<F, Activation::kReLU2>(h, bias, cols, plan, capacity, out, stream,
                                                      pdl, interleave);
  }
  SERVEKIT_FAIL("activation: unknown activation ", static_cast<int>(act));
}
}  // namespace quant

void launch_activation_quantize(ActFormat f, Activation act, const uint16_t* h, const float* bias,
                                int64_t cols, const PlanBuffers& plan, int64_t capacity,
                                const ActBuffers& out, cudaStream_t stream, bool pdl,
                                int interleave) {
  const int64_t block =
      f == ActFormat::kFP8Block128 || f == ActFormat::kFP8Block128AsBF16 ? 128 : 8;
  SERVEKIT_CHECK(cols > 0 && cols % block == 0, "activation: cols=", cols,
                 " must be a positive multiple of ", block);
  SERVEKIT_CHECK(interleave == 0 || ((interleave == 8 || interleave == 64 || interleave == 128) &&
                                     activation_is_gated(act) && cols % interleave == 0),
                 "activation: an interleaved gate/up layout needs blocks of 8, 64 or 128 columns, "
                 "a gated activation and cols % block == 0, got block=",
                 interleave, " cols=", cols);
  switch (f) {
    case ActFormat::kBF16:
      return quant::launch_for_format<ActFormat::kBF16>(act, h, bias, cols, plan, capacity, out,
                                                        stream, pdl, interleave);
    case ActFormat::kFP8PerTensor:
      return quant::launch_for_format<ActFormat::kFP8PerTensor>(act, h, bias, cols, plan, capacity,
                                                                out, stream, pdl, interleave);
    case ActFormat::kFP8Block128:
      return quant::launch_for_format<ActFormat::kFP8Block128>(act, h, bias, cols, plan, capacity,
                                                               out, stream, pdl, interleave);
    case ActFormat::kFP8Block128AsBF16:
      return quant::launch_for_format<ActFormat::kFP8Block128AsBF16>(
          act, h, bias, cols, plan, capacity, out, stream, pdl, interleave);
  }
  SERVEKIT_FAIL("activation: unknown format ", static_cast<int>(f));
}

}  // namespace servekit::cuda
