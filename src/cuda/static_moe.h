// The static (small-batch, decode) MoE path of the CUDA backend: a planner and two
// bandwidth-bound GEMMs (kernels/static/) that read each active expert's weights once per call.
// Internal header.
//
// Call sequence (one stream, no host synchronisation, CUDA-graph safe):
//   once:      pack_static_matrix() per expert (static_pack.h), copy the bytes to the device,
//              fill a device StaticExpertPtrs table [G]; allocate static_workspace_bytes() and
//              static_workspace_init() it.
//   per call:  launch_route + launch_build_plan (moe_plan.h), or launch_route_and_plan with
//              static_task_build() (the task list built in the same launch), then
//              launch_static_moe(). With
//              args.out set the combine is fused (out = the layer output); with args.y set instead,
//              y is the permuted GEMM2 output and launch_combine() finishes the layer.
// Determinism: no float atomics. A unit split between CTAs is summed in CTA order; the fused
// combine sums slots 0..K-1 (weighted) then the shared slots, like launch_combine. Results depend
// only on the inputs and the device's SM count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "cuda/kernels/static/static_params.h"
#include "cuda/moe_plan.h"
#include "servekit/moe.h"

namespace servekit::cuda {

using static_moe::StaticExpertPtrs;

// The layer shape the static path is built for.
struct StaticMoEDesc {
  QuantConfig quant;
  Activation activation = Activation::kSwiGLU;
  int64_t hidden = 0;        // H, a multiple of 64
  int64_t intermediate = 0;  // I, a multiple of 64
  int num_groups = 0;        // G = local routed experts + shared experts
  int top_k = 0;             // K routed slots per token
  int num_shared = 0;        // S
  int64_t max_tokens = 0;    // capacity: the most tokens one call may take on this path
};

// Throws servekit::Error naming the field for an unsupported or invalid desc.
void validate_static_desc(const StaticMoEDesc& d);

// Bytes of device workspace for desc on the current device (it depends on the SM count).
size_t static_workspace_bytes(const StaticMoEDesc& d);
// Zeroes the workspace's counters; once after allocation (the kernels leave them zero).
void static_workspace_init(const StaticMoEDesc& d, void* workspace, cudaStream_t stream);

struct StaticMoEArgs {
  const StaticExpertPtrs* experts = nullptr;  // device [G]
  const float* w13_bias = nullptr;      // device [G, R] f32 (R = 2I gated, I for relu2) or null
  const float* w2_bias = nullptr;       // device [G, H] f32 or null
  const void* hidden = nullptr;         // device [T, H] bf16, contiguous
  int64_t tokens = 0;                   // T, 1..max_tokens
  PlanBuffers plan;                     // from launch_build_plan for these T tokens
  const float* topk_weights = nullptr;  // device [T, K] f32 (fused combine)
  void* out = nullptr;  // device [T, H] bf16: the layer output (fused combine), or null
  void* y = nullptr;    // device [T * (K + S), H] bf16: permuted GEMM2 output, when out is null
  void* workspace = nullptr;  // static_workspace_bytes(), initialised
  bool pdl = true;            // programmatic dependent launch between the kernels
  // The task list of this plan and the input's preparation are in the workspace already:
  // launch_route_and_plan built them into static_task_build(d, workspace, hidden, tokens) and
  // returned true. Then no planner is launched.
  bool tasks_built = false;
};

// Where launch_route_and_plan builds the task list of the static path (in the workspace) for
// `tokens` tokens of `hidden` (device [T, H] bf16, 16-byte aligned), with the input's
// preparation for GEMM1 (input.ctas > 0 for fp8_per_tensor: x's amax; for fp8_block128 at one
// token: x's 1x128 codes and scales) on extra CTAs of the same launch. tasks == nullptr for
// fp8_block128 from two tokens on, whose planner launch measured faster there (it builds the
// tasks and quantizes x); SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS (docs/static_moe.md) moves that
// boundary, and launch_static_moe must see the same value. Throws servekit::Error for a null
// workspace, a null or misaligned hidden, or tokens outside 1..max_tokens.
static_moe::StaticTaskBuild static_task_build(const StaticMoEDesc& d, void* workspace,
                                              const void* hidden, int64_t tokens);

// Runs the planner and both GEMMs. Throws servekit::Error for a bad argument (null pointer,
// tokens outside 1..max_tokens, neither or both of out / y).
void launch_static_moe(const StaticMoEDesc& d, const StaticMoEArgs& a, cudaStream_t stream);

// The grid of the GEMM kernels on the current device (CTAs resident at once).
int static_gemm_grid(const StaticMoEDesc& d);

// Diagnostic SERVEKIT_DIAG_STATIC_TIMES=1 (docs/static_moe.md): each GEMM CTA stamps the GPU's
// global timer at entry, at its dependency release, after its last unit's k-loop and at exit.
// prepare() allocates the stamp buffer when the variable is set (call it outside stream capture:
// the layer does at construction); report() waits for the device and summarises the stamps of
// the last launch per GEMM and stamp (quantiles over CTAs, in us from GEMM1's first release),
// or returns "" when nothing was stamped. One buffer per process, on the device current at
// prepare(): a diagnostic for single-GPU runs (servekit bench), not thread-safe.
void static_diag_times_prepare();
std::string static_diag_times_report();

}  // namespace servekit::cuda
