// Task and work arithmetic of the static (small-batch) MoE kernels, shared by the device planner,
// the GEMM kernels and the CPU unit tests (tests/cpp/tune/test_static_plan.cpp), so the tests
// exercise the very code the kernels run. Pure C++ (no CUDA headers): it also builds without CUDA.
//
// Vocabulary:
//   group  an expert of the plan (moe_plan.h): routed experts first, then shared ones.
//   task   a virtual expert: at most kStaticTaskRows consecutive rows of one group. An expert with
//          more routed rows is split, so a skewed expert spreads over several CTAs while each task
//          still streams that expert's weights once for all of its rows.
//   unit   (task, column group): kStaticWarps m16 tiles of one weight matrix, i.e. 128 weight rows.
//   step   (unit, k-block): the unit's work over 64 columns of K.
// The steps of all units form one list (unit-major; units column-group-major, see static_gemm.cuh),
// and CTA b of a grid of P works on steps
// [b * S / P, (b + 1) * S / P) ("stream-K"): every CTA gets the same number of steps whatever
// the expert count, and a unit cut between CTAs is summed in CTA order (deterministic).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SERVEKIT_HD __host__ __device__ __forceinline__
#else
#define SERVEKIT_HD inline
#endif

namespace servekit::cuda::static_moe {

constexpr int kStaticTaskRows = 32;  // rows of one task: 4 mma n8 tiles of tokens
constexpr int kStaticWarps = 8;      // warps per CTA; each owns one m16 tile of a unit
constexpr int kStaticTileRows = 16;  // weight rows of an mma m16 tile
constexpr int kStaticKBlock = 64;    // K columns of one step
constexpr int kStaticUnitRows = kStaticWarps * kStaticTileRows;  // 128

struct StaticTask {
  int32_t group;      // plan group (expert) index
  int32_t row_begin;  // first permuted row
  int32_t rows;       // 1..kStaticTaskRows
  int32_t pad;
};

// Where a task list goes (device pointers; static_task_build.cuh builds it); tasks == nullptr:
// nothing to build.
struct StaticTaskBuild {
  StaticTask* tasks = nullptr;  // [capacity]
  int32_t* num_tasks = nullptr;
  int capacity = 0;
};

// Tasks of a group with `rows` rows.
SERVEKIT_HD int static_tasks_of_group(int rows) {
  return rows <= 0 ? 0 : (rows + kStaticTaskRows - 1) / kStaticTaskRows;
}

// Task j (0 <= j < static_tasks_of_group(rows)) of group g whose rows start at row_begin.
SERVEKIT_HD StaticTask static_make_task(int group, int row_begin, int rows, int j) {
  const int first = j * kStaticTaskRows;
  const int left = rows - first;
  return StaticTask{group, row_begin + first, left < kStaticTaskRows ? left : kStaticTaskRows, 0};
}

// Worst-case task count for a plan of max_tokens tokens with top_k routed slots and num_shared
// shared experts per token over num_groups groups (routed + shared). With R rows in all and r_g
// rows in group g, sum_g ceil(r_g / 32) <= sum_g (floor(r_g / 32) + [r_g > 0])
// <= floor(R / 32) + (active groups), and active groups <= min(num_groups, R).
inline int64_t static_task_capacity(int64_t max_tokens, int top_k, int num_groups,
                                    int num_shared = 0) {
  const int64_t rows = max_tokens * (top_k + num_shared);
  const int64_t active = rows < num_groups ? rows : num_groups;
  return active + rows / kStaticTaskRows;
}

// The serial planner: the reference of the device planner (which runs the same per-group
// functions in parallel). offsets: [G + 1] as in moe_plan.h. Writes at most `capacity` tasks and
// returns the task count (which may exceed capacity only if the plan breaks its contract).
SERVEKIT_HD int static_plan_tasks_serial(const int32_t* offsets, int num_groups, StaticTask* out,
                                         int capacity) {
  int n = 0;
  for (int g = 0; g < num_groups; ++g) {
    const int rows = offsets[g + 1] - offsets[g];
    const int k = static_tasks_of_group(rows);
    for (int j = 0; j < k; ++j, ++n)
      if (n < capacity) out[n] = static_make_task(g, offsets[g], rows, j);
  }
  return n;
}

// ---- stream-K partition of the step list ------------------------------------------------------

// First step of CTA b (b = grid gives the total).
SERVEKIT_HD int64_t static_cta_begin(int64_t b, int64_t total_steps, int grid) {
  return b * total_steps / grid;
}

// The CTA whose range holds step s (0 <= s < total_steps).
SERVEKIT_HD int static_cta_of_step(int64_t s, int64_t total_steps, int grid) {
  int64_t b = (s * grid) / total_steps;  // a lower bound up to rounding; fix up below
  while (b + 1 < grid && static_cta_begin(b + 1, total_steps, grid) <= s) ++b;
  while (b > 0 && static_cta_begin(b, total_steps, grid) > s) --b;
  return static_cast<int>(b);
}

// The part of unit u that CTA b computes, as k-blocks [kb_begin, kb_end) (empty when the CTA
// does not touch u), and where the unit's pieces live.
struct StaticSegment {
  int64_t unit;
  int kb_begin, kb_end;
  int first_cta, last_cta;  // CTAs holding the unit's first and last k-block
};

SERVEKIT_HD StaticSegment static_segment(int64_t unit, int b, int kblocks, int64_t total_steps,
                                         int grid) {
  const int64_t u0 = unit * kblocks, u1 = u0 + kblocks;
  const int64_t c0 = static_cta_begin(b, total_steps, grid);
  const int64_t c1 = static_cta_begin(b + 1, total_steps, grid);
  const int64_t s0 = c0 > u0 ? c0 : u0, s1 = c1 < u1 ? c1 : u1;
  StaticSegment seg;
  seg.unit = unit;
  seg.kb_begin = static_cast<int>(s0 - u0);
  seg.kb_end = static_cast<int>(s1 > s0 ? s1 - u0 : s0 - u0);
  seg.first_cta = static_cta_of_step(u0, total_steps, grid);
  seg.last_cta = static_cta_of_step(u1 - 1, total_steps, grid);
  return seg;
}

// Whether CTA b has steps (with fewer steps than CTAs some ranges are empty, even between the
// CTAs of one unit).
SERVEKIT_HD bool static_cta_has_steps(int b, int64_t total_steps, int grid) {
  return static_cta_begin(b + 1, total_steps, grid) > static_cta_begin(b, total_steps, grid);
}

// CTAs holding a part of the unit: those with steps in [first_cta, last_cta].
SERVEKIT_HD int static_unit_parts(const StaticSegment& seg, int64_t total_steps, int grid) {
  int n = 0;
  for (int c = seg.first_cta; c <= seg.last_cta; ++c)
    n += static_cta_has_steps(c, total_steps, grid);
  return n;
}

// Slot (0 or 1) in which CTA c stores its partial sums of a unit: 0 for the first unit of its
// range, 1 for the last. A CTA cuts at most two units (its first and its last), so two slots per
// CTA hold every partial of a launch.
SERVEKIT_HD int static_partial_slot(int64_t unit, int c, int kblocks, int64_t total_steps,
                                    int grid) {
  return unit == static_cta_begin(c, total_steps, grid) / kblocks ? 0 : 1;
}

}  // namespace servekit::cuda::static_moe
