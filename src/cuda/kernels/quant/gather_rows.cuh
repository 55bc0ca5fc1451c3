// Gather of hidden rows into the permuted GEMM1 input, fused with its quantization, token-major:
// each token's row is loaded and quantized once and stored into every permuted row that holds
// it (plan.token_slot_row), K + S of them when every slot is local. (Walking the permuted rows
// instead loads and quantizes a token's row K + S times: 2.3x slower at deepseek-v3's 8192
// tokens, docs/perf-notes.md, twenty-second pass.)
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

// Where one (token, slot) goes: its permuted row (-1: none) and, for kFP8Block128, the index of
// its 1x128 scale of K block 0 and the step between K blocks (a_block_scale_index).
struct SlotDest {
  int64_t scale_base;
  int row;
  int scale_step;
};

// Units of one CTA step of scatter_tokens_kernel: kUnroll 8-column chunks per thread.
constexpr int kScatterStep = kRowThreads * kUnroll;

// One CTA step covers `tokens_per_step` whole token rows (cols / 8 <= kScatterStep), or, with
// tokens_per_step = 1, the kScatterStep chunks of one token's row at blockIdx.y * kScatterStep.
// Dynamic shared memory: tokens_per_step * slots SlotDest. cols % 128 == 0 for the block
// formats, so the 16 lanes of a 128-column block always share a token and are all in or all out
// of range.
template <ActFormat F>
__global__ void __launch_bounds__(kRowThreads)
    scatter_tokens_kernel(const uint16_t* hidden, int tokens, int64_t cols, int slots,
                          int tokens_per_step, PlanBuffers plan, ActBuffers out) {
  extern __shared__ SlotDest dest[];
  pdl_wait();  // the plan (and hidden) come from the previous kernels
  pdl_trigger();
  const int chunks = static_cast<int>(cols / kChunk);
  const int64_t k_blocks = cols / 128;
  float tensor_scale = 1.0f;
  if constexpr (F == ActFormat::kFP8PerTensor) {
    tensor_scale = fp8_scale_of(__uint_as_float(*out.amax_bits));
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) *out.tensor_scale = tensor_scale;
  }
  // This thread's units, the same in every step: token within the step (-1: none) and chunk.
  int tok[kUnroll], chunk[kUnroll];
#pragma unroll
  for (int i = 0; i < kUnroll; ++i) {
    const int j = static_cast<int>(threadIdx.x) + i * kRowThreads;
    if (tokens_per_step == 1) {
      chunk[i] = static_cast<int>(blockIdx.y) * kScatterStep + j;
      tok[i] = chunk[i] < chunks ? 0 : -1;
    } else {
      tok[i] = j / chunks;
      chunk[i] = j - tok[i] * chunks;
      if (tok[i] >= tokens_per_step) tok[i] = -1;
    }
  }
  const int entries = tokens_per_step * slots;
  for (int64_t t0 = int64_t{blockIdx.x} * tokens_per_step; t0 < tokens;
       t0 += int64_t{gridDim.x} * tokens_per_step) {
    // The row loads first, so they are in flight during the slot lookups.
    uint4 raw[kUnroll];
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      raw[i] = make_uint4(0, 0, 0, 0);
      if (tok[i] >= 0 && t0 + tok[i] < tokens)
        raw[i] = reinterpret_cast<const uint4*>(hidden + (t0 + tok[i]) * cols)[chunk[i]];
    }
    __syncthreads();  // every thread is done with the previous step's table
    for (int e = static_cast<int>(threadIdx.x); e < entries; e += kRowThreads) {
      SlotDest d{0, -1, 0};
      if (t0 + e / slots < tokens) {
        d.row = plan.token_slot_row[t0 * slots + e];  // (token t0 + e / slots, slot e % slots)
        if (F == ActFormat::kFP8Block128 && d.row >= 0) {
          const RowGroup grp = row_group_of(plan, d.row);
          d.scale_base = grp.begin * k_blocks + (d.row - grp.begin);
          d.scale_step = static_cast<int>(grp.rows);
        }
      }
      dest[e] = d;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kUnroll; ++i) {
      const bool valid = tok[i] >= 0 && t0 + tok[i] < tokens;
      // The stored form, computed once for all of the token's rows (every lane takes part in
      // the block amax's shuffles).
      uint4 wide = raw[i];  // bf16 formats
      uint2 codes = make_uint2(0, 0);
      float scale = 1.0f;
      if constexpr (F != ActFormat::kBF16) {
        const Chunk x = bf16_chunk_of(raw[i]);
        if constexpr (F == ActFormat::kFP8PerTensor) {
          codes = e4m3_codes(x, tensor_scale);
        } else {
          scale = fp8_scale_of(block128_amax(valid ? chunk_amax(x) : 0.0f));
          if constexpr (F == ActFormat::kFP8Block128) {
            codes = e4m3_codes(x, scale);
          } else {  // kFP8Block128AsBF16: e4m3 round trip, dequantized value rounded to bf16
            Chunk y;
#pragma unroll
            for (int k = 0; k < kChunk; ++k) y.v[k] = from_e4m3(to_e4m3(x.v[k] / scale)) * scale;
            wide = bf16_raw_of(y);
          }
        }
      }
      if (!valid) continue;
      const SlotDest* d = dest + tok[i] * slots;
      for (int s = 0; s < slots; ++s) {
        const SlotDest ds = d[s];
        if (ds.row < 0) continue;
        const int64_t at = int64_t{ds.row} * cols + int64_t{chunk[i]} * kChunk;
        if constexpr (F == ActFormat::kBF16 || F == ActFormat::kFP8Block128AsBF16) {
          *reinterpret_cast<uint4*>(static_cast<uint16_t*>(out.rows) + at) = wide;
        } else {
          *reinterpret_cast<uint2*>(static_cast<uint8_t*>(out.rows) + at) = codes;
          if (F == ActFormat::kFP8Block128 && (chunk[i] & 15) == 0)
            out.block_scales[ds.scale_base + int64_t{chunk[i] / 16} * ds.scale_step] = scale;
        }
      }
    }
  }
}

}  // namespace servekit::cuda::quant
