// The activation between the two grouped GEMMs (moe.h's four), with the w13 bias, fused with the
// quantization of the intermediate into the GEMM2 input. Same walk as gather_rows.cuh: warps
// over (row, chunk) units, every load of a step issued before any use. fp32 arithmetic
// throughout.
#pragma once

#include "cuda/kernels/activation_math.cuh"
#include "cuda/kernels/quant/row_quant.cuh"
#include "servekit/moe.h"

namespace servekit::cuda::quant {

// kAmaxOnly: the first pass of kFP8PerTensor (amax of the activated rows, nothing stored).
template <ActFormat F, Activation A, bool kAmaxOnly>
__global__ void __launch_bounds__(kRowThreads)
    activation_rows_kernel(const uint16_t* h, const float* bias, int64_t cols, PlanBuffers plan,
                           ActBuffers out, int interleave) {
  pdl_wait();  // h comes from GEMM1
  pdl_trigger();
  constexpr bool kGated = activation_is_gated(A);
  const int chunks = static_cast<int>(cols / kChunk);
  const int64_t width = kGated ? 2 * cols : cols;  // R
  const int64_t units = int64_t{plan.group_offsets[plan.num_groups]} * chunks;
  float tensor_scale = 1.0f;
  if constexpr (F == ActFormat::kFP8PerTensor && !kAmaxOnly) {
    tensor_scale = fp8_scale_of(__uint_as_float(*out.amax_bits));
    if (blockIdx.x == 0 && threadIdx.x == 0) *out.tensor_scale = tensor_scale;
  }
  float amax = 0.0f;
  const WarpSteps steps = warp_steps();
  for (int64_t base = steps.first; base < units; base += steps.stride) {
    const UnitSpan span = unit_span(base, units, chunks);
    // Every load of the step first: gate and up halves (and the bias rows' groups).
    uint4 gate[kUnroll], up[kUnroll];
    int group[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      gate[i] = up[i] = make_uint4(0, 0, 0, 0);
      group[i] = 0;
      if (span.r[i] < 0) continue;
      // Gate chunk c at 8c and up at I + 8c, or, interleaved in blocks of w = interleave columns
      // (moe_quant.h), within w-column block c / (w / 8) of the gate, the up block right after it.
      int64_t gate_at = int64_t{span.c[i]} * kChunk, up_at = gate_at + cols;
      if (interleave != 0) {
        const int per = interleave / kChunk;
        gate_at = int64_t{span.c[i] / per} * 2 * interleave + (span.c[i] % per) * kChunk;
        up_at = gate_at + interleave;
      }
      const uint16_t* row = h + int64_t{span.r[i]} * width;
      gate[i] = *reinterpret_cast<const uint4*>(row + gate_at);
      if constexpr (kGated) up[i] = *reinterpret_cast<const uint4*>(row + up_at);
      if (bias != nullptr) group[i] = plan.row_group[span.r[i]];
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const bool valid = span.r[i] >= 0;
      Chunk g = bf16_chunk_of(gate[i]), u = bf16_chunk_of(up[i]);
      if (valid && bias != nullptr) {
        const float* b = bias + int64_t{group[i]} * width + int64_t{span.c[i]} * kChunk;
        add_chunk(g, b);
        if constexpr (kGated) add_chunk(u, b + cols);
      }
      Chunk y;
#pragma unroll
      for (int j = 0; j < kChunk; ++j) y.v[j] = valid ? cuda::activate<A>(g.v[j], u.v[j]) : 0.0f;
      if constexpr (kAmaxOnly) {
        amax = max_nan(amax, chunk_amax(y));
      } else {
        store_row_chunk<F>(out, plan, span.r[i], cols, span.c[i], valid, y, tensor_scale);
      }
    }
  }
  if constexpr (kAmaxOnly) warp_atomic_amax(out.amax_bits, amax);
}

}  // namespace servekit::cuda::quant
