// Parameters of the static MoE kernels: plain structs of device pointers, built by the host
// launcher (static_moe.cu). Pure C++.
#pragma once

#include <cstdint>

#include "cuda/kernels/static/static_tasks.h"
#include "servekit/moe.h"

namespace servekit::cuda::static_moe {

// One plan group's weights, in device memory (the table is [G] entries).
struct StaticExpertPtrs {
  const uint8_t* w13 = nullptr;  // W13 in the static layout (codes then scales); null = zeros
  const uint8_t* w2 = nullptr;   // W2 likewise
  float w13_alpha = 1.0f;        // StaticPackedMatrix::alpha of each
  float w2_alpha = 1.0f;
};

// Planner: tasks from the plan's group offsets (CTA 0), and the input's preparation
// (StaticInputPrep) on its CTAs 1 .. input.ctas.
struct StaticPlanParams {
  const int32_t* group_offsets = nullptr;  // [G + 1]
  int num_groups = 0;
  // [capacity]; never null: launch_static_moe launches the planner only when the route + plan
  // launch did not build the tasks (StaticMoEArgs::tasks_built).
  StaticTask* tasks = nullptr;
  int32_t* num_tasks = nullptr;
  int task_capacity = 0;
  StaticPartitionBuild partition;  // the GEMMs' CTA partition tables, built with the tasks
  StaticInputPrep input;
  // Diagnostic (SERVEKIT_DIAG_STATIC_TIMES), null in normal use: [kStaticDiagSlots], CTA 0's
  // stamps (kStaticPrefixStamps).
  uint64_t* diag_prefix = nullptr;
};

// One GEMM of the static path. GEMM1 (gate/up, kDown = false):
//   h[row, :I] = act(alpha * (xq[row_token[row]] . W13^T) + b13)          (fp32)
// GEMM2 (down, kDown = true):
//   y[row, :H] = alpha * (hq[row] . W2^T)   -> bf16 y, or fp32 then the fused combine
// where xq / hq are the activations quantized as quant.h says for the format.
struct StaticGemmParams {
  // work
  const StaticTask* tasks = nullptr;
  const int32_t* num_tasks = nullptr;
  const StaticExpertPtrs* experts = nullptr;  // [G]
  int64_t n = 0, k = 0;                       // this GEMM's weight matrix [N, K]
  int tiles = 0, kblocks = 0, ngroups = 0;
  int64_t tile_scale_bytes = 0, code_bytes = 0;
  bool gated = false;  // GEMM1 of a gated activation

  // activations (the B operand): GEMM1 gathers bf16 x rows, GEMM2 reads fp32 h rows
  const uint16_t* x = nullptr;         // [T, K] bf16
  const uint16_t* xq = nullptr;        // fp8_block128 GEMM1: x quantized once (StaticInputPrep)
  const float* xs = nullptr;           //   and its scales
  const int32_t* row_token = nullptr;  // [rows] (GEMM1)
  const float* h = nullptr;            // [rows, K] fp32 (GEMM2)
  const uint16_t* hq = nullptr;        // fp8_block128 GEMM2, when set: h quantized once
  const float* hs = nullptr;           //   (StaticHQuant::hq, hs)
  const uint32_t* amax_in = nullptr;   // fp8_per_tensor: |src| maxima of the previous kernel
  int amax_in_count = 0;

  // GEMM1 epilogue
  float* h_out = nullptr;           // [rows, I] fp32
  const float* w13_bias = nullptr;  // [G, R] or null
  Activation act = Activation::kSwiGLU;
  int64_t inter = 0;             // I
  uint32_t* amax_out = nullptr;  // fp8_per_tensor: |h| maxima, one per CTA

  // GEMM2 epilogue: y (bf16, for launch_combine) or the fused combine into out
  uint16_t* y = nullptr;                    // [rows, H] bf16
  float* y32 = nullptr;                     // [rows, H] fp32 (fused)
  uint16_t* out = nullptr;                  // [T, H] bf16 (fused)
  const int32_t* token_slot_row = nullptr;  // [T, K + S]
  const int32_t* row_group = nullptr;       // [rows]
  const float* topk_weights = nullptr;      // [T, K]
  const float* w2_bias = nullptr;           // [G, H] or null
  int64_t tokens = 0;
  int top_k = 0, num_shared = 0;
  int32_t* column_counters = nullptr;  // [ngroups], zero between launches

  // The shared experts' W13 codes in L2 ahead of GEMM1 (docs/static_moe.md; 0: off, 1: on; the
  // launcher's default is on for fp8_block128 only, SERVEKIT_STATIC_SHARED_PREFETCH=0|1 forces).
  // A shared expert's weights do not depend on the routing, so GEMM1's CTAs ask L2 for them
  // before their dependency wait, while HBM is idle during the route + plan prefix; each CTA an
  // equal slice (static_shared_prefetch). Groups [shared_first, shared_first + shared_count),
  // shared_code_bytes of W13 codes each (a multiple of 16; the weights are 256-byte aligned).
  int shared_prefetch = 0;
  int shared_first = 0, shared_count = 0;
  int64_t shared_code_bytes = 0;

  // stream-K: the CTA ranges and the fix-up
  const int32_t* cta_begins = nullptr;  // [grid + 1] the planner's table (static_tasks.h: the
                                        // weighted partition), or null: the uniform partition
  float* partials = nullptr;            // [grid][2][kStaticWarps][4][32] float4
  int32_t* unit_counters = nullptr;     // [units], zero between launches

  // Diagnostic (SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1): the fix-up's part reads and the fused
  // combine's slot loads one after another, as before they were batched (same bits).
  int serial_tail = 0;

  // Diagnostic (SERVEKIT_DIAG_STATIC_TIMES, docs/static_moe.md), null in normal use:
  // [grid][kStaticDiagSlots] per CTA: kStaticDiagStamps global-timer stamps, then the SM id and
  // the number of units in the CTA's range (static_diag_times_report).
  uint64_t* diag_times = nullptr;
};

// The stamps of a CTA: entry, dependency wait released, last unit's k-loop done, exit.
constexpr int kStaticDiagStamps = 4;
constexpr int kStaticDiagSlots = 8;  // the stamps, SM id, units, two spare

// The prefix kernels' stamps (SERVEKIT_DIAG_STATIC_TIMES), CTA 0 of the one-CTA route + plan
// kernel and of the static planner, one kStaticDiagSlots region each after the GEMMs':
// entry, dependency wait released, routing done, plan done, task list done (the planner writes
// 0, 1 and 4), then the SM id in slot kStaticPrefixStamps.
constexpr int kStaticPrefixStamps = 5;
enum StaticPrefixKernel : int { kPrefixRoutePlan = 0, kPrefixPlanner = 1, kPrefixKernels = 2 };

}  // namespace servekit::cuda::static_moe
