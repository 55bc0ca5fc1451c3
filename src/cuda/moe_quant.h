// Row kernels around the grouped GEMMs of the MoE dynamic path: the gather of hidden rows into
// the permuted GEMM1 input and the activation between the GEMMs, each fused with the
// quantization of its output into the GEMM input format. Both take where rows go from the
// device plan (no host synchronisation, no allocation). Internal header.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/moe_plan.h"
#include "servekit/moe.h"
#include "servekit/quant.h"

namespace servekit::cuda {

// The format a GEMM input row is written in.
enum class ActFormat : uint8_t {
  kBF16,               // bf16 (bf16 and the *_w4a16 methods)
  kFP8PerTensor,       // e4m3 codes, one dynamic fp32 scale over the whole tensor
  kFP8Block128,        // e4m3 codes, one fp32 scale per row per 128 columns
  kFP8Block128AsBF16,  // the e4m3 1x128 round trip stored back as bf16 (mxfp4_w4a8, interim)
};

// The activation format of a quantization method (quant.h's table).
ActFormat act_format(QuantMethod m);
// Bytes of one stored element: 1 for the e4m3 formats, 2 for the bf16 ones.
size_t act_element_bytes(ActFormat f);

struct ActBuffers {               // device
  void* rows = nullptr;           // [capacity, cols] bf16 or e4m3, row r = permuted row r
  float* block_scales = nullptr;  // kFP8Block128: [capacity * cols/128], a_block_scale_index
  float* tensor_scale = nullptr;  // kFP8PerTensor: [1], written by the launch (amax / 448)
  unsigned* amax_bits = nullptr;  // kFP8PerTensor: [1] scratch (fp32 bits of the amax)
};

// out.rows[r] = quantize(hidden[t]) for every permuted row r = plan.token_slot_row[t, s] >= 0
// (t < tokens, s < slots); no other row is written. hidden: [tokens, cols] bf16 (raw bits),
// contiguous; slots = top_k + num_shared, the width of plan.token_slot_row. Each token's row is
// read and quantized once and stored to all its rows. kFP8PerTensor takes its scale from the
// amax over all tokens x cols (not only the routed ones), as quant.h specifies. cols % 8 == 0
// (% 128 for the block formats), slots in [1, 3072]; plan.token_slot_row, row_group and
// group_offsets set. Throws servekit::Error on bad arguments or a launch failure.
// pdl: launch with programmatic dependent launch (kernels/pdl.cuh) where the previous operation
// on the stream is a kernel; the kernels wait for it before reading anything.
void launch_gather_quantize(ActFormat f, const uint16_t* hidden, int64_t tokens, int64_t cols,
                            int slots, const PlanBuffers& plan, const ActBuffers& out,
                            cudaStream_t stream, bool pdl = false);

// out.rows[r] = quantize(act(h[r] + bias[g(r)])) for r < plan.group_offsets[G], with
// h: [capacity, R] bf16 GEMM1 output (gated: columns [0, I) gate, [I, 2I) up, or with
// `interleave` = w > 0, w-column blocks of gate and up in turn as interleaved_w13_row(p, I, w)
// orders W13's rows, w 8 (the int4 GEMM's), 64 or 128, I % w == 0; ReLU²: R = I), bias: [G, R]
// fp32 in the logical order (gate, up) or nullptr, cols = I. kFP8PerTensor takes its scale from
// the amax over all rows (two passes). The arithmetic is fp32. pdl: as launch_gather_quantize.
// Throws servekit::Error for any other interleave.
void launch_activation_quantize(ActFormat f, Activation act, const uint16_t* h, const float* bias,
                                int64_t cols, const PlanBuffers& plan, int64_t capacity,
                                const ActBuffers& out, cudaStream_t stream, bool pdl = false,
                                int interleave = 0);

}  // namespace servekit::cuda
