// Gather of hidden rows into the permuted GEMM1 input, fused with its quantization. Warps walk
// the (row, chunk) units of row_quant.cuh: per step, the row tokens of kUnroll units, then
// their kUnroll 16-byte loads, then the stores, so loads never wait on each other.
#pragma once

#include "cuda/kernels/quant/row_quant.cuh"

namespace servekit::cuda::quant {

// amax over all of hidden [n8 * 8] values (every token, as quant.h's per-tensor scale).
// Launched without PDL (a memset of amax_bits precedes it); the wait is a no-op then.
__global__ void hidden_amax_kernel(const uint16_t* hidden, int64_t n8, unsigned* amax_bits) {
  pdl_wait();
  pdl_trigger();
  float m = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n8;
       i += int64_t{gridDim.x} * blockDim.x) {
    m = max_nan(m, chunk_amax(load_bf16_chunk(hidden + i * kChunk)));
  }
  warp_atomic_amax(amax_bits, m);
}

template <ActFormat F>
__global__ void __launch_bounds__(kRowThreads)
    gather_rows_kernel(const uint16_t* hidden, int64_t cols, PlanBuffers plan, ActBuffers out) {
  pdl_wait();  // the plan (and hidden) come from the previous kernels
  pdl_trigger();
  const int chunks = static_cast<int>(cols / kChunk);
  const int64_t units = int64_t{plan.group_offsets[plan.num_groups]} * chunks;
  float tensor_scale = 1.0f;
  if constexpr (F == ActFormat::kFP8PerTensor) {
    tensor_scale = fp8_scale_of(__uint_as_float(*out.amax_bits));
    if (blockIdx.x == 0 && threadIdx.x == 0) *out.tensor_scale = tensor_scale;
  }
  const WarpSteps steps = warp_steps();
  for (int64_t base = steps.first; base < units; base += steps.stride) {
    const UnitSpan span = unit_span(base, units, chunks);
    int token[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) token[i] = span.r[i] >= 0 ? plan.row_token[span.r[i]] : 0;
    uint4 raw[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      raw[i] = make_uint4(0, 0, 0, 0);
      if (span.r[i] >= 0)
        raw[i] = reinterpret_cast<const uint4*>(hidden + int64_t{token[i]} * cols)[span.c[i]];
    }
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const bool valid = span.r[i] >= 0;
      if constexpr (F == ActFormat::kBF16) {  // a plain 16-byte copy
        if (valid) {
          reinterpret_cast<uint4*>(static_cast<uint16_t*>(out.rows) +
                                   int64_t{span.r[i]} * cols)[span.c[i]] = raw[i];
        }
      } else {
        store_row_chunk<F>(out, plan, span.r[i], cols, span.c[i], valid, bf16_chunk_of(raw[i]),
                           tensor_scale);
      }
    }
  }
}

}  // namespace servekit::cuda::quant
