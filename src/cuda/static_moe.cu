// Host launcher of the static MoE path: validation, workspace carve-up, the planner launch and
// the per-format dispatch of the two GEMM kernels.
#include "cuda/static_moe.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/env.h"
#include "cuda/kernels/static/static_diag.h"
#include "cuda/kernels/static/static_launch.h"
#include "cuda/kernels/static/static_planner.cuh"
#include "cuda/runtime.h"
#include "cuda/static_pack.h"
#include "servekit/error.h"
#include "tune/moe_path.h"

namespace servekit::cuda {
namespace sm = static_moe;
using sm::StaticFormat;

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// Diagnostic switches, read at every launch (so at capture for a graph); docs/static_moe.md.
// SERVEKIT_DIAG_STATIC_STOP: 1 = return before the planner, 2 = after it, 3 = after GEMM1:
// the layer's output is then garbage, the time is the prefix's (timing attribution only).
// SERVEKIT_DIAG_STATIC_CTAS_PER_SM: GEMM CTAs per SM below the resident maximum.
// Unset or empty: 0; a value outside 0..hi is an error (core/env.h).
int diag_env(const char* name, int hi) {
  return static_cast<int>(env_int(name, 0, hi, 0));
}

// SERVEKIT_DIAG_STATIC_TIMES: one device buffer for the whole process, [2 GEMMs][kDiagMaxGrid]
// [kStaticDiagSlots] slots, then [kPrefixKernels][kStaticDiagSlots] for the prefix kernels'
// CTA 0 (route + plan, planner), allocated by static_diag_times_prepare (never while a stream
// is capturing), and the grid of the last launch that stamped it.
constexpr int kDiagMaxGrid = 4096;
constexpr size_t kDiagSlotsTotal =
    (2 * static_cast<size_t>(kDiagMaxGrid) + sm::kPrefixKernels) * sm::kStaticDiagSlots;
uint64_t* g_diag_times = nullptr;
int g_diag_device = -1;  // where g_diag_times lives: other devices' launches are not stamped
int g_diag_grid = 0;

// The stamp region of prefix kernel k when this launch is stamped, else null.
uint64_t* diag_prefix_slots(sm::StaticPrefixKernel k) {
  if (g_diag_times == nullptr || diag_env("SERVEKIT_DIAG_STATIC_TIMES", 2) <= 0) return nullptr;
  int dev = -1;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev != g_diag_device) return nullptr;
  return g_diag_times + (2 * static_cast<size_t>(kDiagMaxGrid) + k) * sm::kStaticDiagSlots;
}

int64_t w13_rows(const StaticMoEDesc& d) {
  return activation_is_gated(d.activation) ? 2 * d.intermediate : d.intermediate;
}
int64_t unit_groups(int64_t rows) {
  return (rows / sm::kStaticTileRows + sm::kStaticWarps - 1) / sm::kStaticWarps;
}
int64_t rows_capacity(const StaticMoEDesc& d) {
  return plan_capacity_rows(d.max_tokens, d.top_k, d.num_shared);
}
// Worst-case virtual-expert tasks of a layer (static_tasks.h: static_task_capacity).
int64_t task_capacity(const StaticMoEDesc& d) {
  return sm::static_task_capacity(d.max_tokens, d.top_k, d.num_groups, d.num_shared);
}

int sm_count() {
  int dev = 0, sms = 0;
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&dev));
  SERVEKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// The workspace's regions; with base == nullptr only the sizes are computed.
struct Workspace {
  sm::StaticTask* tasks = nullptr;
  int32_t* num_tasks = nullptr;
  uint32_t* x_amax = nullptr;     // [sms]     planner CTAs' |x| maxima
  uint32_t* h_amax = nullptr;     // [grid]    GEMM1 CTAs' |h| maxima
  uint16_t* xq = nullptr;         // [T, H]    fp8_block128: x codes (f16 bits), else empty
  float* xs = nullptr;            // [T, ceil(H / 128)] their scales
  uint16_t* hq = nullptr;         // [rows, I] fp8_block128: h codes for GEMM2, else empty
  float* hs = nullptr;            // [rows, ceil(I / 128)] their scales
  float* h = nullptr;             // [rows, I] GEMM1 output
  float* y32 = nullptr;           // [rows, H] GEMM2 output for the fused combine
  float* partials = nullptr;      // [grid][2][8 warps][4][32] float4
  int32_t* partitions = nullptr;  // [2][kStaticPartitionStride] GEMM1's, GEMM2's CTA begins
  int32_t* counters = nullptr;    // unit counters, then column counters
  size_t unit_counters = 0, column_counters = 0;
  size_t counters_offset = 0, bytes = 0;
};

Workspace carve(const StaticMoEDesc& d, uint8_t* base, int sms) {
  Workspace w;
  const int64_t tasks = task_capacity(d);
  const int64_t rows = rows_capacity(d);
  const int64_t grid = static_cast<int64_t>(sms) * sm::kStaticMaxCtasPerSm;
  w.unit_counters =
      static_cast<size_t>(tasks * std::max(unit_groups(w13_rows(d)), unit_groups(d.hidden)));
  w.column_counters = static_cast<size_t>(unit_groups(d.hidden));
  size_t off = 0;
  auto take = [&](size_t bytes) {
    uint8_t* p = base ? base + off : nullptr;
    off += align_up(bytes);
    return p;
  };
  w.tasks = reinterpret_cast<sm::StaticTask*>(take(sizeof(sm::StaticTask) * tasks));
  w.num_tasks = reinterpret_cast<int32_t*>(take(sizeof(int32_t)));
  w.x_amax = reinterpret_cast<uint32_t*>(take(sizeof(uint32_t) * sms));
  w.h_amax = reinterpret_cast<uint32_t*>(take(sizeof(uint32_t) * grid));
  if (static_format(d.quant) == StaticFormat::kFP8Block128) {
    w.xq = reinterpret_cast<uint16_t*>(take(sizeof(uint16_t) * d.max_tokens * d.hidden));
    w.xs = reinterpret_cast<float*>(take(sizeof(float) * d.max_tokens * ((d.hidden + 127) / 128)));
    w.hq = reinterpret_cast<uint16_t*>(take(sizeof(uint16_t) * rows * d.intermediate));
    w.hs = reinterpret_cast<float*>(take(sizeof(float) * rows * ((d.intermediate + 127) / 128)));
  }
  w.h = reinterpret_cast<float*>(take(sizeof(float) * rows * d.intermediate));
  w.y32 = reinterpret_cast<float*>(take(sizeof(float) * rows * d.hidden));
  w.partials =
      reinterpret_cast<float*>(take(sizeof(float) * 4 * grid * 2 * sm::kStaticWarps * 4 * 32));
  w.partitions = reinterpret_cast<int32_t*>(take(sizeof(int32_t) * 2 * sm::kStaticPartitionStride));
  w.counters_offset = off;
  w.counters =
      reinterpret_cast<int32_t*>(take(sizeof(int32_t) * (w.unit_counters + w.column_counters)));
  w.bytes = off;
  return w;
}

template <typename Fn>
void dispatch(StaticFormat f, Fn&& fn) {
  switch (f) {
    case StaticFormat::kBF16:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kBF16>{});
    case StaticFormat::kFP8PerTensor:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kFP8PerTensor>{});
    case StaticFormat::kFP8Block128:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kFP8Block128>{});
    case StaticFormat::kMXFP4:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kMXFP4>{});
    case StaticFormat::kNVFP4:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kNVFP4>{});
    case StaticFormat::kInt4G32:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kInt4G32>{});
    case StaticFormat::kInt4G64:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kInt4G64>{});
    case StaticFormat::kInt4G128:
      return fn(std::integral_constant<StaticFormat, StaticFormat::kInt4G128>{});
  }
  SERVEKIT_FAIL("static moe: unknown format ", static_cast<int>(f));
}

// GEMM params common to both kernels; the matrix-specific fields from its geometry.
sm::StaticGemmParams gemm_params(const Workspace& w, const StaticMoEArgs& a,
                                 const sm::StaticMatrixGeometry& geo) {
  sm::StaticGemmParams p;
  p.tasks = w.tasks;
  p.num_tasks = w.num_tasks;
  p.experts = a.experts;
  p.n = geo.rows;
  p.k = geo.cols;
  p.tiles = static_cast<int>(geo.tiles);
  p.kblocks = static_cast<int>(geo.kblocks);
  p.ngroups = static_cast<int>(unit_groups(geo.rows));
  p.tile_scale_bytes = geo.scale_bytes / geo.tiles;
  p.code_bytes = geo.code_bytes;
  p.gated = geo.gated;
  p.partials = w.partials;
  p.unit_counters = w.counters;
  return p;
}

// Cost of one row of a task in the weighted partition, against kStaticStepCost for the step's
// weight stream (static_tasks.h): SERVEKIT_STATIC_ROW_COST when set (0: the uniform partition),
// else per format. fp8: 5, fitted to the CTA stamps of deepseek-v3 fp8_block128 (a 32-row task's
// unit took ~3.3x a one-row task's, an 8-row one ~1.5x; docs/perf-notes.md, twelfth pass) and
// the best of 0 3 5 8 at 8 and 32 tokens (thirteenth pass). 4-bit: 8, the best of 3 5 8 12 on
// kimi-k2 int4 at 32 tokens (half fp8's weight bytes per step for the same rows of work; mxfp4
// and nvfp4 take it unmeasured). bf16: 2 (twice fp8's bytes per step; 0, 2 and 4 measured level
// on qwen3-235b, which has no shared expert).
// The environment's row cost is at most this (kStaticStepCost = 64 is one step's stream).
constexpr int kMaxStaticRowCost = 1 << 16;
int static_row_cost(StaticFormat f) {
  if (const long long cost = env_int("SERVEKIT_STATIC_ROW_COST", 0, kMaxStaticRowCost, -1);
      cost >= 0)
    return static_cast<int>(cost);
  switch (f) {
    case StaticFormat::kBF16:
      return 2;
    case StaticFormat::kFP8PerTensor:
    case StaticFormat::kFP8Block128:
      return 5;
    default:
      return 8;
  }
}

// One wave of format f's resident GEMM CTAs (static_launch.cuh: static_grid).
int resident_grid(StaticFormat f) {
  int grid = 0;
  dispatch(f, [&](auto fc) { grid = sm::static_grid<decltype(fc)::value>(); });
  return grid;
}

// The GEMMs' grid: the resident wave, fewer under SERVEKIT_DIAG_STATIC_CTAS_PER_SM.
int launch_grid(const StaticMoEDesc& d) {
  int grid = resident_grid(static_format(d.quant));
  const int per_sm = diag_env("SERVEKIT_DIAG_STATIC_CTAS_PER_SM", sm::kStaticMaxCtasPerSm);
  if (per_sm > 0 && per_sm < sm::kStaticMaxCtasPerSm)
    grid = grid / sm::kStaticMaxCtasPerSm * per_sm;
  return grid;
}

// What the task build writes besides the tasks: the GEMMs' weighted partition tables, unless
// the row cost is 0 or the bounds do not fit the tables (static_weighted_fits): then none, and
// the GEMMs use the uniform partition.
sm::StaticPartitionBuild partition_build(const StaticMoEDesc& d, const Workspace& w, int grid) {
  const StaticFormat f = static_format(d.quant);
  const sm::StaticMatrixGeometry g13 =
      sm::static_geometry(f, w13_rows(d), d.hidden, activation_is_gated(d.activation));
  const sm::StaticMatrixGeometry g2 = sm::static_geometry(f, d.hidden, d.intermediate, false);
  sm::StaticPartitionBuild b;
  b.grid = grid;
  b.row_cost = static_row_cost(f);
  b.align = env_int("SERVEKIT_STATIC_ALIGN", 0, 1, 1) != 0;  // 0: no whole-unit partition
  b.kblocks[0] = static_cast<int>(g13.kblocks);
  b.kblocks[1] = static_cast<int>(g2.kblocks);
  b.ngroups[0] = static_cast<int>(unit_groups(g13.rows));
  b.ngroups[1] = static_cast<int>(unit_groups(g2.rows));
  const int64_t tasks = task_capacity(d);
  for (int i = 0; i < 2; ++i)
    if (!sm::static_weighted_fits(tasks, rows_capacity(d), b.row_cost, b.kblocks[i], b.ngroups[i],
                                  grid, d.num_groups))
      return sm::StaticPartitionBuild{};
  b.begins = w.partitions;
  return b;
}

}  // namespace

void validate_static_desc(const StaticMoEDesc& d) {
  static_format(d.quant);  // throws for an unsupported method
  std::string why;
  SERVEKIT_CHECK(tune::static_path_supports(d.quant, d.hidden, d.intermediate, &why),
                 "static moe: ", why);
  SERVEKIT_CHECK(d.num_groups >= 1, "static moe: num_groups=", d.num_groups, " must be >= 1");
  SERVEKIT_CHECK(d.num_shared >= 0 && d.num_shared <= d.num_groups,
                 "static moe: num_shared=", d.num_shared,
                 " must be in [0, num_groups=", d.num_groups, "]");
  SERVEKIT_CHECK(d.top_k >= 0 && d.top_k <= kMaxTopK, "static moe: top_k=", d.top_k,
                 " must be in [0, ", kMaxTopK, "]");
  SERVEKIT_CHECK(d.max_tokens >= 1, "static moe: max_tokens=", d.max_tokens, " must be >= 1");
  const int64_t tasks = task_capacity(d);
  // The kernels index steps (tasks x column groups x k-blocks) and matrix bytes in 32 bits.
  const int64_t groups = std::max(unit_groups(w13_rows(d)), unit_groups(d.hidden));
  const int64_t kblocks = std::max(d.hidden, d.intermediate) / 64;
  const StaticFormat f = static_format(d.quant);
  const int64_t matrix_bytes =
      std::max(sm::static_geometry(f, w13_rows(d), d.hidden, false).code_bytes * 2,
               sm::static_geometry(f, d.hidden, d.intermediate, false).code_bytes * 2);
  SERVEKIT_CHECK(
      rows_capacity(d) < (int64_t{1} << 31) && tasks * groups * kblocks < (int64_t{1} << 31),
      "static moe: max_tokens=", d.max_tokens, " gives more than 2^31 rows or steps");
  SERVEKIT_CHECK(matrix_bytes < (int64_t{1} << 31), "static moe: hidden_size=", d.hidden,
                 ", intermediate_size=", d.intermediate, " give weight matrices over 1 GiB");
}

size_t static_workspace_bytes(const StaticMoEDesc& d) {
  validate_static_desc(d);
  return carve(d, nullptr, sm_count()).bytes;
}

void static_workspace_init(const StaticMoEDesc& d, void* workspace, cudaStream_t stream) {
  validate_static_desc(d);
  SERVEKIT_CHECK(workspace != nullptr, "static moe: workspace is null");
  const Workspace w = carve(d, static_cast<uint8_t*>(workspace), sm_count());
  SERVEKIT_CUDA_CHECK(cudaMemsetAsync(
      w.counters, 0, sizeof(int32_t) * (w.unit_counters + w.column_counters), stream));
}

int static_gemm_grid(const StaticMoEDesc& d) {
  validate_static_desc(d);
  return resident_grid(static_format(d.quant));
}

// Whether GEMM1 needs the input prepared (StaticInputPrep): fp8_per_tensor's input amax, or an
// input transform the workspace holds a buffer for (fp8_block128's quantized x).
static bool needs_input_prep(const Workspace& w, StaticFormat f) {
  return f == StaticFormat::kFP8PerTensor || w.xq != nullptr;
}

// CTAs preparing the input: one per 16K elements of x, at most all SMs but the task builder's.
static int input_prep_ctas(int64_t x_elems, int sms) {
  return static_cast<int>(std::clamp<int64_t>(x_elems / (16 * 1024), 1, std::max(1, sms - 1)));
}

// The input's preparation for `tokens` tokens of x, or ctas == 0 when the format needs none.
// launch_static_moe reads the same count back for GEMM1's amax slots.
static sm::StaticInputPrep input_prep(const StaticMoEDesc& d, const Workspace& w, int sms,
                                      const void* x, int64_t tokens) {
  sm::StaticInputPrep q;
  if (!needs_input_prep(w, static_format(d.quant))) return q;
  q.x = static_cast<const uint16_t*>(x);
  q.x_elems = tokens * d.hidden;
  q.hidden = d.hidden;
  q.amax_slots = static_format(d.quant) == StaticFormat::kFP8PerTensor ? w.x_amax : nullptr;
  q.xq = w.xq;
  q.xs = w.xs;
  q.ctas = input_prep_ctas(q.x_elems, sms);
  return q;
}

// Whether the route + plan launch builds the task list (and prepares the input) for format f
// at `tokens` tokens. Every format but fp8_block128 always. fp8_block128 only at one token, where
// the routing warp builds the tasks alone (thirty-first pass): deepseek-v3 137.5 / 137.8 ->
// 134.5 / 134.2 us. From 2 tokens on it keeps its planner launch, whose CTAs quantize x beside
// the task build: the route + plan launch measured 8 / 4-6 us slower at 8 / 32 tokens (H200;
// docs/perf-notes.md, thirty-second pass; session 15 found the same with the CTA-wide build).
// SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS (diagnostic, read at every launch): 0 = fp8_block128 always
// through its planner, 1 (default) = the route + plan launch at one token, 2 = wherever it routes
// (up to 32 tokens).
static bool tasks_in_route(StaticFormat f, int64_t tokens) {
  if (f != StaticFormat::kFP8Block128) return true;
  const int mode = static_cast<int>(env_int("SERVEKIT_DIAG_BLOCK128_ROUTE_TASKS", 0, 2, 1));
  return mode == 2 || (mode == 1 && tokens == 1);
}

static_moe::StaticTaskBuild static_task_build(const StaticMoEDesc& d, void* workspace,
                                              const void* hidden, int64_t tokens) {
  validate_static_desc(d);
  SERVEKIT_CHECK(workspace != nullptr, "static moe: workspace is null");
  SERVEKIT_CHECK(tokens >= 1 && tokens <= d.max_tokens, "static moe: tokens=", tokens,
                 " must be in [1, max_tokens=", d.max_tokens, "]");
  SERVEKIT_CHECK(hidden != nullptr && reinterpret_cast<uintptr_t>(hidden) % 16 == 0,
                 "static moe: hidden must be a 16-byte aligned device pointer (got ", hidden, ")");
  static_moe::StaticTaskBuild b;
  const int sms = sm_count();
  const Workspace w = carve(d, static_cast<uint8_t*>(workspace), sms);
  if (!tasks_in_route(static_format(d.quant), tokens)) return b;
  b.tasks = w.tasks;
  b.num_tasks = w.num_tasks;
  b.capacity = static_cast<int>(task_capacity(d));
  b.partition = partition_build(d, w, launch_grid(d));
  b.input = input_prep(d, w, sms, hidden, tokens);
  b.diag_prefix = diag_prefix_slots(sm::kPrefixRoutePlan);
  return b;
}

void launch_static_moe(const StaticMoEDesc& d, const StaticMoEArgs& a, cudaStream_t stream) {
  validate_static_desc(d);
  SERVEKIT_CHECK(a.tokens >= 1 && a.tokens <= d.max_tokens, "static moe: tokens=", a.tokens,
                 " must be in [1, max_tokens=", d.max_tokens, "]");
  SERVEKIT_CHECK(a.experts && a.hidden && a.workspace,
                 "static moe: experts, hidden and "
                 "workspace must be device pointers (got experts=",
                 a.experts, ", hidden=", a.hidden, ", workspace=", a.workspace, ")");
  auto aligned16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  SERVEKIT_CHECK(aligned16(a.hidden) && aligned16(a.out) && aligned16(a.w2_bias),
                 "static moe: hidden, out and w2_bias must be 16-byte aligned (got hidden=",
                 a.hidden, ", out=", a.out, ", w2_bias=", a.w2_bias, ")");
  SERVEKIT_CHECK((a.out == nullptr) != (a.y == nullptr),
                 "static moe: give exactly one of out (fused combine) and y (for launch_combine)");
  SERVEKIT_CHECK(a.plan.group_offsets && a.plan.row_token && a.plan.num_groups == d.num_groups,
                 "static moe: plan must have group_offsets, row_token and num_groups=",
                 d.num_groups, " (got ", a.plan.num_groups, ")");
  SERVEKIT_CHECK(
      !a.out || (a.plan.token_slot_row && a.plan.row_group && (a.topk_weights || d.top_k == 0)),
      "static moe: the fused combine needs plan.token_slot_row, plan.row_group and "
      "topk_weights");
  const StaticFormat f = static_format(d.quant);
  const int sms = sm_count();
  const Workspace w = carve(d, static_cast<uint8_t*>(a.workspace), sms);
  const int grid = launch_grid(d);
  const sm::StaticPartitionBuild partition = partition_build(d, w, grid);
  const bool per_tensor = f == StaticFormat::kFP8PerTensor;
  SERVEKIT_CHECK(!a.tasks_built || tasks_in_route(f, a.tokens),
                 "static moe: tasks_built is not for ", quant_name(d.quant.method),
                 " (static_task_build returns no tasks for it: its planner prepares the input)");

  const int diag_stop = diag_env("SERVEKIT_DIAG_STATIC_STOP", 3);
  if (diag_stop == 1) return;
  // The input's preparation, by the route + plan launch (tasks_built) or here by the planner's
  // CTAs 1.. (CTA 0 builds the task list).
  const sm::StaticInputPrep input = input_prep(d, w, sms, a.hidden, a.tokens);
  if (!a.tasks_built) {
    sm::StaticPlanParams pp;
    pp.group_offsets = a.plan.group_offsets;
    pp.num_groups = d.num_groups;
    pp.tasks = w.tasks;
    pp.num_tasks = w.num_tasks;
    pp.task_capacity = static_cast<int>(task_capacity(d));
    pp.partition = partition;
    pp.input = input;
    pp.diag_prefix = diag_prefix_slots(sm::kPrefixPlanner);
    launch_pdl(sm::static_plan_kernel, 1 + input.ctas, sm::kStaticPlanThreads, 0, a.pdl, stream,
               pp);
  }
  if (diag_stop == 2) return;

  const sm::StaticMatrixGeometry g13 =
      sm::static_geometry(f, w13_rows(d), d.hidden, activation_is_gated(d.activation));
  const sm::StaticMatrixGeometry g2 = sm::static_geometry(f, d.hidden, d.intermediate, false);
  sm::StaticLaunch l;
  l.pdl = a.pdl;
  l.grid = grid;
  l.gemm1 = gemm_params(w, a, g13);
  l.gemm1.cta_begins = partition.begins;  // null: the uniform partition
  l.gemm1.x = static_cast<const uint16_t*>(a.hidden);
  l.gemm1.xq = w.xq;
  l.gemm1.xs = w.xs;
  l.gemm1.row_token = a.plan.row_token;
  l.gemm1.amax_in = per_tensor ? w.x_amax : nullptr;
  l.gemm1.amax_in_count = per_tensor ? input.ctas : 0;
  l.gemm1.h_out = w.h;
  l.gemm1.w13_bias = a.w13_bias;
  SERVEKIT_CHECK(d.activation == Activation::kSwiGLU || d.activation == Activation::kGeGLU ||
                     d.activation == Activation::kSwiGLUOAI || d.activation == Activation::kReLU2,
                 "static moe: unknown activation ", static_cast<int>(d.activation));
  l.gemm1.act = d.activation;
  l.gemm1.inter = d.intermediate;
  l.gemm1.amax_out = per_tensor ? w.h_amax : nullptr;

  l.gemm2 = gemm_params(w, a, g2);
  l.gemm2.cta_begins =
      partition.begins != nullptr ? partition.begins + sm::kStaticPartitionStride : nullptr;
  l.gemm2.h = w.h;
  l.gemm2.amax_in = per_tensor ? w.h_amax : nullptr;
  l.gemm2.y = static_cast<uint16_t*>(a.y);
  l.gemm2.out = static_cast<uint16_t*>(a.out);
  l.gemm2.y32 = w.y32;
  l.gemm2.token_slot_row = a.plan.token_slot_row;
  l.gemm2.row_group = a.plan.row_group;
  l.gemm2.topk_weights = a.topk_weights;
  l.gemm2.w2_bias = a.w2_bias;
  l.gemm2.tokens = a.tokens;
  l.gemm2.top_k = d.top_k;
  l.gemm2.num_shared = d.num_shared;
  l.gemm2.column_counters = w.counters + w.unit_counters;
  // The shared experts' W13 codes in L2 during the prefix (StaticGemmParams::shared_prefetch).
  // By default only where it measured faster: fp8_block128, whose longer prefix leaves HBM idle
  // longer (deepseek-v3 -2 to -7 us at 1 and 8 tokens through the planner; -1.0 us at one token
  // with the tasks in the route + plan launch, thirty-second pass); kimi-k2 int4 was ~1 us slower
  // with it (docs/perf-notes.md, twentieth pass). SERVEKIT_STATIC_SHARED_PREFETCH=0|1 forces it
  // off or on (read at every launch).
  const int shared_prefetch_default = f == StaticFormat::kFP8Block128 ? 1 : 0;
  if (d.num_shared > 0 &&
      env_int("SERVEKIT_STATIC_SHARED_PREFETCH", 0, 1, shared_prefetch_default) == 1) {
    SERVEKIT_CHECK(g13.code_bytes % 16 == 0, "static moe: W13 code bytes ", g13.code_bytes,
                   " are not a multiple of 16");
    l.gemm1.shared_prefetch = 1;
    l.gemm1.shared_first = d.num_groups - d.num_shared;
    l.gemm1.shared_count = d.num_shared;
    l.gemm1.shared_code_bytes = g13.code_bytes;
  }
  // fp8_block128: from kHQuantMinRows routed rows on, quantize h once between the GEMMs
  // instead of at every GEMM2 unit; below, the extra launch would cost more than it saves.
  constexpr int64_t kHQuantMinRows = 64;
  const int64_t rows_used = a.tokens * (d.top_k + d.num_shared);
  if (w.hq != nullptr && rows_used >= kHQuantMinRows) {
    l.hquant = true;
    l.hquant_rows = rows_used;
    l.hq.group_offsets = a.plan.group_offsets;
    l.hq.num_groups = d.num_groups;
    l.hq.h = w.h;
    l.hq.inter = d.intermediate;
    l.hq.hq = w.hq;
    l.hq.hs = w.hs;
    l.gemm2.hq = w.hq;
    l.gemm2.hs = w.hs;
  }
  l.stop_after_gemm1 = diag_stop == 3;
  l.gemm1.serial_tail = l.gemm2.serial_tail = diag_env("SERVEKIT_DIAG_STATIC_SERIAL_TAIL", 1);
  int diag_dev = -1;
  if (g_diag_times != nullptr) SERVEKIT_CUDA_CHECK(cudaGetDevice(&diag_dev));
  if (g_diag_times != nullptr && diag_dev == g_diag_device &&
      diag_env("SERVEKIT_DIAG_STATIC_TIMES", 2) > 0) {
    g_diag_grid = grid;
    if (g_diag_grid <= kDiagMaxGrid) {
      l.gemm1.diag_times = g_diag_times;
      l.gemm2.diag_times = g_diag_times + kDiagMaxGrid * sm::kStaticDiagSlots;
    }
  }
  dispatch(f, [&](auto fc) { sm::static_launch_gemms<decltype(fc)::value>(l, stream); });
}

void static_diag_times_prepare() {
  if (g_diag_times != nullptr || diag_env("SERVEKIT_DIAG_STATIC_TIMES", 2) <= 0) return;
  const size_t bytes = kDiagSlotsTotal * sizeof(uint64_t);
  SERVEKIT_CUDA_CHECK(cudaGetDevice(&g_diag_device));
  SERVEKIT_CUDA_CHECK(cudaMalloc(&g_diag_times, bytes));
  SERVEKIT_CUDA_CHECK(cudaMemset(g_diag_times, 0, bytes));
}

std::string static_diag_times_report() {
  if (g_diag_times == nullptr || g_diag_grid <= 0 || g_diag_grid > kDiagMaxGrid) return "";
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint64_t> slots(kDiagSlotsTotal);
  SERVEKIT_CUDA_CHECK(cudaMemcpy(slots.data(), g_diag_times, slots.size() * sizeof(uint64_t),
                                 cudaMemcpyDeviceToHost));
  const std::string r = sm::static_diag_format(slots, kDiagMaxGrid, g_diag_grid,
                                               diag_env("SERVEKIT_DIAG_STATIC_TIMES", 2) >= 2);
  g_diag_grid = 0;  // reported once: a later dynamic-path row prints nothing
  // The prefix kernels' regions too: a later row whose prefix is another kernel (the planner
  // instead of route + plan) must not report this row's stamps.
  SERVEKIT_CUDA_CHECK(
      cudaMemset(g_diag_times + 2 * static_cast<size_t>(kDiagMaxGrid) * sm::kStaticDiagSlots, 0,
                 sm::kPrefixKernels * sm::kStaticDiagSlots * sizeof(uint64_t)));
  return r;
}

}  // namespace servekit::cuda
