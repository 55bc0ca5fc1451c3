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
// cut into one contiguous range per CTA ("stream-K"): equal steps per CTA (the uniform
// partition), or equal cost where tasks differ in rows (the weighted partition, below), whatever
// the expert count. A unit cut between CTAs is summed in CTA order (deterministic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

// Stride of the partition tables (static_tasks.h's weighted partition, below): grid + 1 begins.
constexpr int kStaticMaxPartitionGrid = 512;
constexpr int kStaticPartitionStride = kStaticMaxPartitionGrid + 1;

// Where the GEMMs' CTA partition tables go (static_task_build.cuh builds them with the task
// list); begins == nullptr: the GEMMs use the uniform partition and nothing is built.
struct StaticPartitionBuild {
  int32_t* begins = nullptr;  // [2][kStaticPartitionStride]: GEMM1's table, then GEMM2's
  int grid = 0;               // both GEMMs' grid, <= kStaticMaxPartitionGrid
  int row_cost = 0;           // > 0 (static_weighted_begin)
  int kblocks[2] = {0, 0};    // GEMM1's, GEMM2's
  int ngroups[2] = {0, 0};    // column groups of 128 weight rows
  bool align = true;          // equal-row plans: whole units per CTA where it costs <= 5%
                              // (static_aligned_fits)
};

// What GEMM1 of some formats needs from the MoE input x besides the task list, computed by
// `ctas` CTAs of the launch that builds the tasks (static_input_prep.cuh: static_prepare_input):
// fp8_per_tensor's |x| maxima (one slot per CTA), fp8_block128's x quantized once per token
// (GEMM1 then stages a copy instead of quantizing the same rows again for every unit).
// ctas == 0: nothing to do.
struct StaticInputPrep {
  const uint16_t* x = nullptr;     // [T, H] bf16
  int64_t x_elems = 0;             // T * H
  int64_t hidden = 0;              // H
  uint32_t* amax_slots = nullptr;  // [ctas] |x| bit maxima, or null
  // fp8_block128 (quant.h's 1x128 blocks), or null: xq [T, H] e4m3 codes as f16 bits,
  // xs [T, ceil(H / 128)] scales.
  uint16_t* xq = nullptr;
  float* xs = nullptr;
  int ctas = 0;
};

// Where a task list goes (device pointers; static_task_build.cuh builds it); tasks == nullptr:
// nothing to build. input: the input's preparation the same launch does (extra CTAs).
struct StaticTaskBuild {
  StaticTask* tasks = nullptr;  // [capacity]
  int32_t* num_tasks = nullptr;
  int capacity = 0;
  StaticPartitionBuild partition;
  StaticInputPrep input;
  // Diagnostic (SERVEKIT_DIAG_STATIC_TIMES), null in normal use: [kStaticDiagSlots], the route +
  // plan kernel's CTA 0 stamps (static_params.h, kStaticPrefixStamps).
  uint64_t* diag_prefix = nullptr;
  // CTA 0 of the route + plan kernel lets the next kernel launch only once it has routed, not at
  // its start, so that the next kernel's CTAs are not resident while it routes (measured 0-2 us
  // faster at 1 and 8 tokens, docs/perf-notes.md, eighteenth pass). launch_route_and_plan sets
  // it at every launch: false only under the diagnostic SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=1.
  bool late_trigger = true;
  // At one token the routing warp of the route + plan kernel builds the plan, the tasks and the
  // partition tables alone (one_cta_plan.cuh: one_token_plan_warp); false only under the
  // diagnostic SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=0, which runs the CTA-wide passes instead.
  bool one_token_warp = true;
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

// kStaticMaxPartitionGrid (above): the largest grid whose CTA begins fit the partition tables
// (the workspace's and the GEMMs' shared-memory copy); a larger grid uses the uniform partition.
// Most plan groups whose costs the planner's table build holds in shared memory (one per thread
// of static_task_build.cuh's CTA of 1024, the last thread writing the total); more groups use the
// uniform partition.
constexpr int kStaticMaxPartitionGroups = 1023;
// Cost of a step in the weighted partition: kStaticStepCost + row_cost x the task's rows. The
// constant stands for the step's weight stream, the rows for its staging and mma (per format,
// static_moe.cu: static_row_cost).
constexpr int kStaticStepCost = 64;

// How the step list [0, total) is cut into CTA ranges: CTA b works on [begins[b], begins[b + 1]),
// a table of grid + 1 begins (non-decreasing, begins[0] = 0, begins[grid] = total): the uniform
// partition (static_cta_begin) or the weighted one below. The kernels keep it in shared memory.
struct StaticPartition {
  const int32_t* begins;
  int grid;
  SERVEKIT_HD int64_t begin(int64_t b) const { return begins[b]; }
};

// First step of CTA b of the uniform partition (b = grid gives the total).
SERVEKIT_HD int64_t static_cta_begin(int64_t b, int64_t total_steps, int grid) {
  return b * total_steps / grid;
}

// The part of unit u that CTA b computes, as k-blocks [kb_begin, kb_end), and where the unit's
// pieces live: CTAs first_cta..last_cta hold its first and last k-block (between them, CTAs
// with empty ranges may lie). CTA b must hold steps of the unit; the first and last CTA are
// found by walking from b (a cut unit spans a few CTAs).
struct StaticSegment {
  int64_t unit;
  int kb_begin, kb_end;
  int first_cta, last_cta;
};

SERVEKIT_HD StaticSegment static_segment(int64_t unit, int b, int kblocks,
                                         const StaticPartition& p) {
  const int64_t u0 = unit * kblocks, u1 = u0 + kblocks;
  const int64_t c0 = p.begin(b), c1 = p.begin(b + 1);
  const int64_t s0 = c0 > u0 ? c0 : u0, s1 = c1 < u1 ? c1 : u1;
  StaticSegment seg;
  seg.unit = unit;
  seg.kb_begin = static_cast<int>(s0 - u0);
  seg.kb_end = static_cast<int>(s1 > s0 ? s1 - u0 : s0 - u0);
  int first = b;  // the last CTA whose range starts at or before the unit's first step
  while (first > 0 && p.begin(first) > u0) --first;
  int last = b;  // the last CTA whose range starts before the unit's end
  while (last + 1 < p.grid && p.begin(last + 1) < u1) ++last;
  seg.first_cta = first;
  seg.last_cta = last;
  return seg;
}

// Whether CTA b has steps (with fewer steps than CTAs some ranges are empty, even between the
// CTAs of one unit; the weighted partition leaves CTAs empty too).
SERVEKIT_HD bool static_cta_has_steps(int b, const StaticPartition& p) {
  return p.begin(b + 1) > p.begin(b);
}

// CTAs holding a part of the unit: those with steps in [first_cta, last_cta].
SERVEKIT_HD int static_unit_parts(const StaticSegment& seg, const StaticPartition& p) {
  int n = 0;
  for (int c = seg.first_cta; c <= seg.last_cta; ++c) n += static_cta_has_steps(c, p);
  return n;
}

// Slot (0 or 1) in which CTA c stores its partial sums of a unit: 0 for the first unit of its
// range, 1 for the last. A CTA cuts at most two units (its first and its last), so two slots per
// CTA hold every partial of a launch.
SERVEKIT_HD int static_partial_slot(int64_t unit, int c, int kblocks, const StaticPartition& p) {
  return unit == p.begin(c) / kblocks ? 0 : 1;
}

// ---- the cost-weighted partition --------------------------------------------------------------
//
// Stream-K with equal steps per CTA gives equal work only when every task has the same rows. A
// 32-row task's step stages and multiplies 32 rows against the same weights as a one-row task's,
// and costs ~3x as much (the shared expert at 32 tokens, docs/perf-notes.md, twelfth pass). The
// weighted partition gives each step of a task with r rows the cost kStaticStepCost +
// row_cost * r and starts CTA b at the first step whose start (the cost of the steps before it)
// is at least b / grid of the total cost. The step order is unchanged, so the fix-up (segments,
// parts, slots above) is unchanged; only the cut points move.
//
// The steps are column-group-major (static_gemm.cuh: unit = column group x tasks + task), so the
// cost before step s = (cg, task t, k-block kb) is cg * kblocks * W + kblocks * P_t + kb * c_t,
// with W the cost of one k-block of every task, P_t that of tasks 0..t-1 and c_t task t's. Tasks
// are in group order and every task but a group's last has kStaticTaskRows rows, so
//   P_t = kStaticStepCost * t + row_cost * (rows of the tasks before t)
// and per group g, with its first task and first row: P_g = kStaticStepCost * task_first[g] +
// row_cost * (offsets[g] - offsets[0]) (static_group_cost). The search needs only the [G + 1]
// group costs (in shared memory on the device) and the group offsets.

// The cost of the tasks before group g: task_first = tasks of the groups before g, rows_before =
// offsets[g] - offsets[0].
SERVEKIT_HD int64_t static_group_cost(int64_t task_first, int64_t rows_before, int row_cost) {
  return kStaticStepCost * task_first + row_cost * rows_before;
}

// First step of CTA b (0 <= b <= grid) of the weighted partition of a GEMM with ngroups column
// groups of kblocks k-blocks. group_cost: [G + 1] static_group_cost per group (group_cost[G] = W
// covers every task); offsets: [G + 1] the plan's group offsets. Any accessor with operator[]
// works (shared memory on the device, vectors in the tests).
template <typename Costs, typename Offsets>
SERVEKIT_HD int64_t static_weighted_begin(int64_t b, int grid, int kblocks, int ngroups,
                                          const Costs& group_cost, const Offsets& offsets,
                                          int num_groups, int row_cost) {
  const int64_t W = group_cost[num_groups];
  const int64_t rows_all = int64_t{offsets[num_groups]} - offsets[0];
  const int64_t ntasks = (W - int64_t{row_cost} * rows_all) / kStaticStepCost;
  const int64_t total = ntasks * ngroups * kblocks;
  if (b <= 0 || ntasks == 0) return 0;
  if (b >= grid) return total;
  const int64_t group_span = W * kblocks;                          // cost of one column group
  const int64_t v = (b * group_span * ngroups + grid - 1) / grid;  // the start cost to reach
  if (v >= group_span * ngroups) return total;  // fewer cost units than CTAs: the tail is empty
  const int64_t cg = v / group_span;
  const int64_t rem = v - cg * group_span;
  const int64_t remk = rem / kblocks;  // task t's unit starts at or before rem iff P_t <= remk
  // The last group with P_g <= remk; it has tasks (P_{g+1} > remk >= P_g).
  int lo = 0, hi = num_groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (int64_t{group_cost[mid]} <= remk)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int g = lo;
  const int64_t pg = group_cost[g];
  const int64_t row0 = int64_t{offsets[g]} - offsets[0];
  const int64_t rows_g = int64_t{offsets[g + 1]} - offsets[g];
  const int64_t first = (pg - int64_t{row_cost} * row0) / kStaticStepCost;
  const int64_t tasks_g = (rows_g + kStaticTaskRows - 1) / kStaticTaskRows;
  const int64_t full = kStaticStepCost + int64_t{row_cost} * kStaticTaskRows;
  int64_t j = (remk - pg) / full;
  if (j > tasks_g - 1) j = tasks_g - 1;
  const int64_t rows_t = rows_g - j * kStaticTaskRows < kStaticTaskRows
                             ? rows_g - j * kStaticTaskRows
                             : int64_t{kStaticTaskRows};
  const int64_t pt = pg + j * full;
  const int64_t ct = kStaticStepCost + int64_t{row_cost} * rows_t;
  const int64_t kb = (rem - kblocks * pt + ct - 1) / ct;  // in [0, kblocks]
  return (cg * ntasks + first + j) * kblocks + kb;
}

// Whether whole units per CTA (no unit cut, so no fix-up hand-over) cost at most 5% more steps
// on the busiest CTA than the uniform partition: ceil(units / grid) * grid <= 1.05 * units. It
// holds for GEMM2 at one token on the large presets (256 or 504 units over 264 CTAs), where the
// uniform partition cuts every unit and each CTA ends in a hand-over.
SERVEKIT_HD bool static_aligned_fits(int64_t units, int grid) {
  if (units <= 0) return false;
  const int64_t per = (units + grid - 1) / grid;
  return per * grid * 100 <= units * 105;
}

// Entry b of GEMM `which`'s table as static_build_tasks writes it, for a plan of ntasks tasks.
// When every task has the same rows (one token, one row per expert: weights would not move a
// cut) or the task list overflowed: whole units per CTA where static_aligned_fits (and pb.align),
// else uniform. Otherwise weighted.
template <typename Costs, typename Offsets>
SERVEKIT_HD int64_t static_partition_entry(int b, int which, const StaticPartitionBuild& pb,
                                           int64_t ntasks, bool uniform, const Costs& group_cost,
                                           const Offsets& offsets, int num_groups) {
  const int64_t units = ntasks * pb.ngroups[which];
  if (uniform && pb.align && static_aligned_fits(units, pb.grid))
    return b * units / pb.grid * pb.kblocks[which];
  if (uniform) return static_cta_begin(b, units * pb.kblocks[which], pb.grid);
  return static_weighted_begin(b, pb.grid, pb.kblocks[which], pb.ngroups[which], group_cost,
                               offsets, num_groups, pb.row_cost);
}

// The two tables static_build_tasks writes, computed serially (the tests' reference): out
// [2][kStaticPartitionStride]; offsets [G + 1]; capacity as in static_plan_tasks_serial.
inline void static_partition_tables_serial(const int32_t* offsets, int num_groups, int capacity,
                                           const StaticPartitionBuild& pb, int32_t* out) {
  std::vector<int64_t> cost(static_cast<size_t>(num_groups) + 1);
  int64_t tasks = 0;
  int min_rows = kStaticTaskRows, max_rows = 0;
  for (int g = 0; g <= num_groups; ++g) {
    cost[static_cast<size_t>(g)] = static_group_cost(tasks, offsets[g] - offsets[0], pb.row_cost);
    if (g == num_groups) break;
    const int rows = offsets[g + 1] - offsets[g], n = static_tasks_of_group(rows);
    if (n > 0) {
      const int last = rows - (n - 1) * kStaticTaskRows;
      min_rows = last < min_rows ? last : min_rows;
      max_rows = n > 1 ? kStaticTaskRows : (rows > max_rows ? rows : max_rows);
    }
    tasks += n;
  }
  const bool overflow = tasks > capacity;
  const int64_t ntasks = overflow ? capacity : tasks;
  for (int which = 0; which < 2; ++which)
    for (int b = 0; b <= pb.grid; ++b)
      out[which * kStaticPartitionStride + b] = static_cast<int32_t>(
          static_partition_entry(b, which, pb, ntasks, overflow || min_rows >= max_rows,
                                 cost.data(), offsets, num_groups));
}

// Whether the weighted partition can be used for these bounds: the group costs fit 32 bits (the
// device keeps them in shared memory as int32) and b x the total cost fits 63 bits.
inline bool static_weighted_fits(int64_t max_tasks, int64_t max_rows, int row_cost, int kblocks,
                                 int ngroups, int grid, int num_groups) {
  if (row_cost <= 0 || grid > kStaticMaxPartitionGrid || num_groups > kStaticMaxPartitionGroups)
    return false;
  const double w =
      static_cast<double>(kStaticStepCost) * max_tasks + static_cast<double>(row_cost) * max_rows;
  return w < 2147483647.0 && w * kblocks * ngroups * (grid + 1.0) < 9.0e18;
}

}  // namespace servekit::cuda::static_moe
