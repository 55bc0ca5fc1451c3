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

namespace {

template <ActFormat F>
void launch_scatter(const uint16_t* hidden, int64_t tokens, int64_t cols, int slots,
                    const PlanBuffers& plan, const ActBuffers& out, cudaStream_t stream, bool pdl) {
  const int64_t chunks = cols / quant::kChunk;
  int tokens_per_step = 1, slices = 1;
  if (chunks >= quant::kScatterStep) {
    slices = static_cast<int>((chunks + quant::kScatterStep - 1) / quant::kScatterStep);
  } else {
    // Whole rows per step, at most 16 and at most 16 KB of slot table.
    const int64_t by_table = (16 << 10) / (int64_t{slots} * sizeof(quant::SlotDest));
    tokens_per_step = static_cast<int>(
        std::max<int64_t>(1, std::min<int64_t>({quant::kScatterStep / chunks, 16, by_table})));
  }
  int device = 0, sms = 0;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&device));
  SERVEKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Eight 256-thread CTAs fill an SM's 2048 threads; more would only queue.
  const int64_t steps = (tokens + tokens_per_step - 1) / tokens_per_step;
  const int64_t per_slice = std::max<int64_t>(1, int64_t{sms} * 8 / slices);
  const dim3 grid(static_cast<unsigned>(std::min(steps, per_slice)), static_cast<unsigned>(slices));
  const size_t smem = sizeof(quant::SlotDest) * static_cast<size_t>(tokens_per_step) * slots;
  launch_pdl(quant::scatter_tokens_kernel<F>, grid, quant::kRowThreads, smem, pdl, stream, hidden,
             static_cast<int>(tokens), cols, slots, tokens_per_step, plan, out);
}

}  // namespace

void launch_gather_quantize(ActFormat f, const uint16_t* hidden, int64_t tokens, int64_t cols,
                            int slots, const PlanBuffers& plan, const ActBuffers& out,
                            cudaStream_t stream, bool pdl) {
  const int64_t block =
      f == ActFormat::kFP8Block128 || f == ActFormat::kFP8Block128AsBF16 ? 128 : 8;
  SERVEKIT_CHECK(cols > 0 && cols % block == 0, "gather: cols=", cols,
                 " must be a positive multiple of ", block);
  SERVEKIT_CHECK(tokens >= 0 && tokens <= INT32_MAX, "gather: tokens=", tokens,
                 " must be in [0, 2^31)");
  // The slot table of one token (slots SlotDest) must fit the default 48 KB of shared memory.
  SERVEKIT_CHECK(slots >= 1 && slots <= 3072, "gather: slots (top_k + shared experts)=", slots,
                 " must be in [1, 3072]");
  SERVEKIT_CHECK(
      plan.token_slot_row != nullptr && plan.row_group != nullptr && plan.group_offsets != nullptr,
      "gather: plan.token_slot_row, row_group and group_offsets must be set");
  if (tokens == 0) return;
  switch (f) {
    case ActFormat::kBF16:
      launch_scatter<ActFormat::kBF16>(hidden, tokens, cols, slots, plan, out, stream, pdl);
      break;
    case ActFormat::kFP8PerTensor: {
      SERVEKIT_CUDA_CHECK(cudaMemsetAsync(out.amax_bits, 0, sizeof(unsigned), stream));
      const int64_t n8 = tokens * cols / quant::kChunk;
      const int amax_grid =
          static_cast<int>(std::clamp<int64_t>((n8 + quant::kRowThreads - 1) / quant::kRowThreads,
                                               1, quant::row_grid(tokens, cols / quant::kChunk)));
      quant::hidden_amax_kernel<<<amax_grid, quant::kRowThreads, 0, stream>>>(hidden, n8,
                                                                              out.amax_bits);
      SERVEKIT_CUDA_CHECK(cudaGetLastError());
      // The amax kernel follows a memset, not a kernel, so it runs without PDL; the gather
      // follows the amax kernel.
      launch_scatter<ActFormat::kFP8PerTensor>(hidden, tokens, cols, slots, plan, out, stream, pdl);
      break;
    }
    case ActFormat::kFP8Block128:
      launch_scatter<ActFormat::kFP8Block128>(hidden, tokens, cols, slots, plan, out, stream, pdl);
      break;
    case ActFormat::kFP8Block128AsBF16:
      launch_scatter<ActFormat::kFP8Block128AsBF16>(hidden, tokens, cols, slots, plan, out, stream,
                                                    pdl);
      break;
  }
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
