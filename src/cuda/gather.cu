// Host launchers of the gather + quantize of the MoE GEMM1 input, and the activation-format
// table.
#include <algorithm>

#include "cuda/kernels/quant/gather_rows.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/moe_quant.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {

ActFormat act_format(QuantMethod m) {
  switch (m) {
    case QuantMethod::kFP8PerTensor:
      return ActFormat::kFP8PerTensor;
    case QuantMethod::kFP8Block128:
      return ActFormat::kFP8Block128;
    case QuantMethod::kMXFP4W4A8:
      return ActFormat::kFP8Block128AsBF16;
    default:
      return ActFormat::kBF16;
  }
}

size_t act_element_bytes(ActFormat f) {
  return f == ActFormat::kFP8PerTensor || f == ActFormat::kFP8Block128 ? 1 : 2;
}

namespace quant {

int row_grid(int64_t rows, int64_t chunks) {
  int device = 0, sms = 0;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&device));
  SERVEKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Eight 256-thread CTAs fill an SM's 2048 threads; more would only queue.
  const int64_t per_cta = int64_t{kRowThreads} * kUnroll;
  const int64_t needed = (rows * chunks + per_cta - 1) / per_cta;
  return static_cast<int>(std::clamp<int64_t>(needed, 1, int64_t{sms} * 8));
}

}  // namespace quant

void launch_gather_quantize(ActFormat f, const uint16_t* hidden, int64_t tokens, int64_t cols,
                            const PlanBuffers& plan, int64_t capacity, const ActBuffers& out,
                            cudaStream_t stream, bool pdl) {
  const int64_t block =
      f == ActFormat::kFP8Block128 || f == ActFormat::kFP8Block128AsBF16 ? 128 : 8;
  SERVEKIT_CHECK(cols > 0 && cols % block == 0, "gather: cols=", cols,
                 " must be a positive multiple of ", block);
  const int grid = quant::row_grid(capacity, cols / quant::kChunk);
  switch (f) {
    case ActFormat::kBF16:
      launch_pdl(quant::gather_rows_kernel<ActFormat::kBF16>, grid, quant::kRowThreads, 0, pdl,
                 stream, hidden, cols, plan, out);
      break;
    case ActFormat::kFP8PerTensor: {
      SERVEKIT_CUDA_CHECK(cudaMemsetAsync(out.amax_bits, 0, sizeof(unsigned), stream));
      const int64_t n8 = tokens * cols / quant::kChunk;
      const int amax_grid = static_cast<int>(std::max<int64_t>(
          1, std::min<int64_t>((n8 + quant::kRowThreads - 1) / quant::kRowThreads, grid)));
      quant::hidden_amax_kernel<<<amax_grid, quant::kRowThreads, 0, stream>>>(hidden, n8,
                                                                              out.amax_bits);
      SERVEKIT_CUDA_CHECK(cudaGetLastError());
      // The amax kernel follows a memset, not a kernel, so it runs without PDL; the gather
      // follows the amax kernel.
      launch_pdl(quant::gather_rows_kernel<ActFormat::kFP8PerTensor>, grid, quant::kRowThreads, 0,
                 pdl, stream, hidden, cols, plan, out);
      break;
    }
    case ActFormat::kFP8Block128:
      launch_pdl(quant::gather_rows_kernel<ActFormat::kFP8Block128>, grid, quant::kRowThreads, 0,
                 pdl, stream, hidden, cols, plan, out);
      break;
    case ActFormat::kFP8Block128AsBF16:
      launch_pdl(quant::gather_rows_kernel<ActFormat::kFP8Block128AsBF16>, grid, quant::kRowThreads,
                 0, pdl, stream, hidden, cols, plan, out);
      break;
  }
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
