// The static MoE path's task planner and stream-K partition (cuda/kernels/static/static_tasks.h):
// the same host/device functions the kernels run, checked on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {
namespace {

std::vector<int32_t> offsets_of(const std::vector<int>& rows) {
  std::vector<int32_t> off(rows.size() + 1, 0);
  for (size_t g = 0; g < rows.size(); ++g) off[g + 1] = off[g] + rows[g];
  return off;
}

std::vector<StaticTask> plan(const std::vector<int>& rows) {
  const auto off = offsets_of(rows);
  std::vector<StaticTask> tasks(4096);
  const int n = static_plan_tasks_serial(off.data(), static_cast<int>(rows.size()), tasks.data(),
                                         static_cast<int>(tasks.size()));
  EXPECT_LE(n, static_cast<int>(tasks.size()));
  tasks.resize(static_cast<size_t>(n));
  return tasks;
}

// Every row of every group is covered exactly once, by tasks of 1..32 rows of that group, in
// group then row order.
void check_cover(const std::vector<int>& rows, const std::vector<StaticTask>& tasks) {
  const auto off = offsets_of(rows);
  int32_t next_row = 0;
  int prev_group = -1;
  for (const StaticTask& t : tasks) {
    ASSERT_GE(t.rows, 1);
    ASSERT_LE(t.rows, kStaticTaskRows);
    ASSERT_GE(t.group, prev_group);
    prev_group = t.group;
    ASSERT_EQ(t.row_begin, next_row) << "group " << t.group;
    ASSERT_GE(t.row_begin, off[t.group]);
    ASSERT_LE(t.row_begin + t.rows, off[t.group + 1]);
    next_row += t.rows;
  }
  EXPECT_EQ(next_row, off.back());
}

TEST(StaticPlan, HandWorkedExample) {
  // groups with 0, 1, 32, 33 and 70 rows: 0 + 1 + 1 + 2 + 3 = 7 tasks;
  // group 3 rows [33, 66) -> [33, 65) and [65, 66); group 4 rows [66, 136) -> 32, 32, 6.
  const auto tasks = plan({0, 1, 32, 33, 70});
  ASSERT_EQ(tasks.size(), 7u);
  check_cover({0, 1, 32, 33, 70}, tasks);
  EXPECT_EQ(tasks[0].group, 1);
  EXPECT_EQ(tasks[0].rows, 1);
  EXPECT_EQ(tasks[3].group, 3);
  EXPECT_EQ(tasks[3].row_begin, 65);
  EXPECT_EQ(tasks[3].rows, 1);
  EXPECT_EQ(tasks[6].group, 4);
  EXPECT_EQ(tasks[6].row_begin, 130);
  EXPECT_EQ(tasks[6].rows, 6);
}

TEST(StaticPlan, TasksOfGroup) {
  EXPECT_EQ(static_tasks_of_group(0), 0);
  EXPECT_EQ(static_tasks_of_group(-3), 0);
  EXPECT_EQ(static_tasks_of_group(1), 1);
  EXPECT_EQ(static_tasks_of_group(32), 1);
  EXPECT_EQ(static_tasks_of_group(33), 2);
  EXPECT_EQ(static_tasks_of_group(256), 8);
}

TEST(StaticPlan, CapacityBoundHoldsAndIsReached) {
  // Routed plans of T tokens, K distinct experts each, over E experts, plus S shared groups
  // that every token visits.
  std::mt19937 rng(7);
  struct Case {
    int tokens, top_k, experts, shared;
    enum { kUniform, kSkewed, kOneExpert, kSpread } kind;
  };
  const Case cases[] = {{1, 8, 256, 1, Case::kUniform},     {8, 8, 256, 1, Case::kUniform},
                        {32, 8, 256, 1, Case::kUniform},    {256, 8, 256, 1, Case::kSkewed},
                        {256, 1, 128, 0, Case::kOneExpert}, {33, 4, 128, 0, Case::kOneExpert},
                        {512, 8, 512, 0, Case::kSpread},    {1000, 6, 257, 2, Case::kSkewed},
                        {31, 32, 512, 0, Case::kSpread}};
  for (const Case& c : cases) {
    std::vector<int> rows(static_cast<size_t>(c.experts + c.shared), 0);
    for (int t = 0; t < c.tokens; ++t) {
      std::vector<int> ids(static_cast<size_t>(c.experts));
      std::iota(ids.begin(), ids.end(), 0);
      if (c.kind == Case::kSkewed) {  // most tokens on the first experts
        std::shuffle(ids.begin() + c.top_k, ids.end(), rng);
        if (rng() % 4 == 0) std::shuffle(ids.begin(), ids.end(), rng);
      } else if (c.kind != Case::kOneExpert) {
        std::shuffle(ids.begin(), ids.end(), rng);
      }
      const int k = c.kind == Case::kOneExpert ? 1 : c.top_k;
      for (int j = 0; j < k; ++j) ++rows[static_cast<size_t>(ids[static_cast<size_t>(j)])];
      if (c.kind == Case::kSpread) continue;
      for (int s = 0; s < c.shared; ++s) ++rows[static_cast<size_t>(c.experts + s)];
    }
    const auto tasks = plan(rows);
    check_cover(rows, tasks);
    const int64_t cap = static_task_capacity(c.tokens, c.top_k, c.experts + c.shared, c.shared);
    EXPECT_LE(static_cast<int64_t>(tasks.size()), cap)
        << "tokens " << c.tokens << " top_k " << c.top_k << " experts " << c.experts;
  }
  // The bound is tight: every group holds 32m + 1 rows. 3 groups of 33 rows = 99 rows:
  // 6 tasks = 3 active + floor(99 / 32) = 3 + 3.
  EXPECT_EQ(plan({33, 33, 33}).size(), 6u);
  EXPECT_EQ(static_task_capacity(33, 3, 3), 3 + 99 / 32);
  // Many small experts: 256 groups of 1 row each = 256 tasks; the bound for 32 tokens x 8 slots
  // over 256 groups is min(256, 256) + 256 / 32 = 264.
  EXPECT_EQ(plan(std::vector<int>(256, 1)).size(), 256u);
  EXPECT_EQ(static_task_capacity(32, 8, 256), 264);
  // Skew: all of 256 rows on one expert: 8 tasks.
  std::vector<int> one(128, 0);
  one[17] = 256;
  EXPECT_EQ(plan(one).size(), 8u);
}

TEST(StaticPlan, CapacityTruncatesWithoutOverflow) {
  const auto off = offsets_of({40, 40});
  StaticTask tasks[3] = {};
  EXPECT_EQ(static_plan_tasks_serial(off.data(), 2, tasks, 3), 4);  // 4 needed, 3 written
  EXPECT_EQ(tasks[2].group, 1);
}

// The CTA holding step s, by brute force: the last CTA whose range starts at or before s.
int cta_of_step(int64_t s, const StaticPartition& p) {
  int c = 0;
  for (int b = 0; b < p.grid; ++b)
    if (p.begin(b) <= s) c = b;
  return c;
}

// The fix-up's invariants of a partition of units x kblocks steps: the CTA ranges tile the step
// list in CTA order; for each unit, the segment of every CTA holding part of it names the unit's
// first and last CTA (brute force), the segments tile [0, kblocks) in CTA order,
// static_unit_parts counts them, and distinct CTAs holding a cut unit use distinct (cta, slot)
// pairs (a CTA cuts at most its first and last unit).
void check_fixup(const StaticPartition& p, int64_t units, int kblocks) {
  const int64_t total = units * kblocks;
  int64_t covered = 0;
  for (int b = 0; b < p.grid; ++b) {
    const int64_t s0 = p.begin(b), s1 = p.begin(b + 1);
    ASSERT_LE(s0, s1);
    ASSERT_EQ(s0, covered);
    covered = s1;
  }
  ASSERT_EQ(covered, total);
  std::vector<int> slot_use(static_cast<size_t>(p.grid) * 2, 0);
  for (int64_t u = 0; u < units; ++u) {
    const int first_cta = cta_of_step(u * kblocks, p);
    const int last_cta = cta_of_step(u * kblocks + kblocks - 1, p);
    int kb = 0, parts = 0;
    for (int c = first_cta; c <= last_cta; ++c) {
      if (!static_cta_has_steps(c, p)) continue;
      ++parts;
      const StaticSegment seg = static_segment(u, c, kblocks, p);
      ASSERT_EQ(seg.first_cta, first_cta) << "unit " << u << " cta " << c;
      ASSERT_EQ(seg.last_cta, last_cta) << "unit " << u << " cta " << c;
      ASSERT_EQ(seg.kb_begin, kb);
      ASSERT_GT(seg.kb_end, seg.kb_begin);
      kb = seg.kb_end;
      if (first_cta != last_cta) {
        const int slot = static_partial_slot(u, c, kblocks, p);
        // the slot is 0 exactly when u is the first unit of c's range
        ASSERT_EQ(slot == 0, p.begin(c) / kblocks == u);
        ++slot_use[static_cast<size_t>(c) * 2 + static_cast<size_t>(slot)];
      }
    }
    ASSERT_EQ(kb, kblocks);
    if (parts > 0) {
      const StaticSegment seg = static_segment(u, last_cta, kblocks, p);
      ASSERT_EQ(static_unit_parts(seg, p), parts);
    }
  }
  for (int v : slot_use) ASSERT_LE(v, 1);
}

// The uniform partition's table.
std::vector<int32_t> uniform_table(int64_t total, int grid) {
  std::vector<int32_t> t(static_cast<size_t>(grid) + 1);
  for (int b = 0; b <= grid; ++b)
    t[size_t(b)] = static_cast<int32_t>(static_cta_begin(b, total, grid));
  return t;
}

// Stream-K, uniform partition: the fix-up's invariants, including grids larger than the steps
// (empty ranges between the CTAs of one unit).
TEST(StaticPlan, StreamKPartition) {
  for (int64_t units : {1, 3, 7, 45, 288}) {
    for (int kblocks : {1, 12, 45, 112}) {
      for (int grid : {1, 5, 132, 264}) {
        const std::vector<int32_t> t = uniform_table(units * kblocks, grid);
        check_fixup(StaticPartition{t.data(), grid}, units, kblocks);
      }
    }
  }
}

// A random plan: group rows as decode batches give them (mostly 0..6 rows), with some skewed
// groups (up to 100 rows) and a shared expert of `tokens` rows at the end.
std::vector<int> random_rows(std::mt19937& rng, int groups, int tokens) {
  std::vector<int> rows(static_cast<size_t>(groups));
  std::uniform_int_distribution<int> small(0, 6), skew(0, 99), pick(0, 9);
  for (int& r : rows) r = pick(rng) == 0 ? skew(rng) + 1 : small(rng);
  rows.push_back(tokens);
  return rows;
}

// Everything the weighted partition needs, for one plan and GEMM shape.
struct WeightedCase {
  std::vector<int32_t> off;
  std::vector<int64_t> cost;  // static_group_cost per group, [G + 1]
  std::vector<StaticTask> tasks;
  int row_cost = 0;
};
WeightedCase weighted_case(const std::vector<int>& rows, int row_cost) {
  WeightedCase c;
  c.off = offsets_of(rows);
  c.tasks = plan(rows);
  c.row_cost = row_cost;
  int64_t first = 0;
  for (size_t g = 0; g <= rows.size(); ++g) {
    c.cost.push_back(static_group_cost(first, c.off[g] - c.off[0], row_cost));
    if (g < rows.size()) first += static_tasks_of_group(rows[g]);
  }
  return c;
}

// The weighted partition equals a step-by-step brute force (CTA b starts at the first step whose
// start cost is >= ceil(b * total cost / grid)), keeps every fix-up invariant, and balances: no
// CTA's cost exceeds the mean by more than one step's cost.
TEST(StaticPlan, WeightedPartitionMatchesBruteForceAndKeepsTheFixupInvariants) {
  std::mt19937 rng(20261201);
  const int groups_of[] = {1, 9, 64, 257};
  const int tokens_of[] = {1, 8, 32, 0, 64};
  int cases = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int groups = groups_of[trial % 4];
    const std::vector<int> rows = random_rows(rng, groups, tokens_of[trial % 5]);
    for (int row_cost : {1, 5, 12}) {
      const WeightedCase c = weighted_case(rows, row_cost);
      const int G = static_cast<int>(rows.size());
      const int64_t ntasks = static_cast<int64_t>(c.tasks.size());
      for (int kblocks : {1, 7, 112}) {
        for (int ngroups : {1, 3, 28}) {
          if (ntasks * ngroups * kblocks > 400000) continue;  // keeps the brute force quick
          // brute force: the start cost of every step, in step order
          std::vector<int64_t> start;
          int64_t acc = 0, max_cost = 0;
          for (int cg = 0; cg < ngroups; ++cg)
            for (const StaticTask& t : c.tasks)
              for (int kb = 0; kb < kblocks; ++kb) {
                start.push_back(acc);
                const int64_t cost = kStaticStepCost + int64_t{row_cost} * t.rows;
                acc += cost;
                max_cost = std::max(max_cost, cost);
              }
          const int64_t total_cost = acc, total = ntasks * ngroups * kblocks;
          for (int grid : {1, 5, 132, 264}) {
            std::vector<int32_t> begins(static_cast<size_t>(grid) + 1);
            for (int b = 0; b <= grid; ++b) {
              const int64_t v = (b * total_cost + grid - 1) / grid;
              const int64_t want = std::lower_bound(start.begin(), start.end(), v) - start.begin();
              const int64_t got =
                  static_weighted_begin(b, grid, kblocks, ngroups, c.cost, c.off, G, row_cost);
              ASSERT_EQ(got, want)
                  << "trial " << trial << " row_cost " << row_cost << " kblocks " << kblocks
                  << " ngroups " << ngroups << " grid " << grid << " b " << b;
              begins[static_cast<size_t>(b)] = static_cast<int32_t>(got);
            }
            const StaticPartition p{begins.data(), grid};
            check_fixup(p, ntasks * ngroups, kblocks);
            for (int b = 0; b < grid; ++b) {
              auto at = [&](int64_t s) { return s < total ? start[size_t(s)] : total_cost; };
              const int64_t cta_cost = at(p.begin(b + 1)) - at(p.begin(b));
              ASSERT_LE(cta_cost, total_cost / grid + max_cost + 1) << "grid " << grid;
            }
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 500);
}

// A hand-worked case: two groups, a 32-row task (cost 64 + 5 * 32 = 224 per step) and a one-row
// task (69), one column group of 2 k-blocks: steps cost 224, 224, 69, 69 (total 586). Two CTAs:
// CTA 1 starts at the first step whose start is >= 293, step 2 (start 448): the first CTA takes
// the 32-row task whole, the second the one-row task.
TEST(StaticPlan, WeightedPartitionHandWorked) {
  const WeightedCase c = weighted_case({32, 1}, 5);
  EXPECT_EQ(static_weighted_begin(0, 2, 2, 1, c.cost, c.off, 2, 5), 0);
  EXPECT_EQ(static_weighted_begin(1, 2, 2, 1, c.cost, c.off, 2, 5), 2);
  EXPECT_EQ(static_weighted_begin(2, 2, 2, 1, c.cost, c.off, 2, 5), 4);
  // Three CTAs: starts >= 196 -> step 1 (224), >= 391 -> step 2 (448).
  EXPECT_EQ(static_weighted_begin(1, 3, 2, 1, c.cost, c.off, 2, 5), 1);
  EXPECT_EQ(static_weighted_begin(2, 3, 2, 1, c.cost, c.off, 2, 5), 2);
}

// The tables' parameters for deepseek-v3's two GEMMs (GEMM1: 32 column groups of 112 k-blocks,
// GEMM2: 56 of 32) at row cost 5.
StaticPartitionBuild deepseek_build(int grid) {
  StaticPartitionBuild pb;
  pb.grid = grid;
  pb.row_cost = 5;
  pb.kblocks[0] = 112, pb.kblocks[1] = 32;
  pb.ngroups[0] = 32, pb.ngroups[1] = 56;
  return pb;
}

// The serial tables (the GPU build's reference): uniform when every task has the same rows or
// the task list overflowed, weighted otherwise; both GEMMs' tables end at their step totals.
TEST(StaticPlan, PartitionTables) {
  StaticPartitionBuild pb = deepseek_build(132);
  std::vector<int32_t> out(2 * kStaticPartitionStride);
  pb.align = false;  // the whole-unit partition: AlignedPartition
  // one row in each of 9 groups: uniform
  std::vector<int> ones(9, 1);
  auto off = offsets_of(ones);
  static_partition_tables_serial(off.data(), 9, 100, pb, out.data());
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b <= pb.grid; ++b)
      ASSERT_EQ(out[size_t(w * kStaticPartitionStride + b)],
                static_cta_begin(b, int64_t{9} * pb.ngroups[w] * pb.kblocks[w], pb.grid));
  // 64 rows in one group: two tasks of 32, equal: uniform
  off = offsets_of({0, 64, 0});
  static_partition_tables_serial(off.data(), 3, 100, pb, out.data());
  EXPECT_EQ(out[66], static_cta_begin(66, int64_t{2} * 32 * 112, 132));
  // one row and a 32-row shared expert: weighted, the shared expert's CTAs get fewer steps
  const std::vector<int> mixed = {1, 1, 1, 1, 1, 1, 1, 1, 32};
  off = offsets_of(mixed);
  static_partition_tables_serial(off.data(), 9, 100, pb, out.data());
  const WeightedCase c = weighted_case(mixed, 5);
  for (int w = 0; w < 2; ++w) {
    for (int b = 0; b <= pb.grid; ++b)
      ASSERT_EQ(
          out[size_t(w * kStaticPartitionStride + b)],
          static_weighted_begin(b, pb.grid, pb.kblocks[w], pb.ngroups[w], c.cost, c.off, 9, 5));
    EXPECT_EQ(out[size_t(w * kStaticPartitionStride + pb.grid)],
              int64_t{9} * pb.ngroups[w] * pb.kblocks[w]);
  }
  // the last CTA of a column group's range ends in the shared expert's task, and holds fewer
  // steps than a uniform CTA
  int64_t min_steps = 1 << 30, max_steps = 0;
  for (int b = 0; b < pb.grid; ++b) {
    const int64_t n = out[size_t(b + 1)] - out[size_t(b)];
    min_steps = std::min(min_steps, n), max_steps = std::max(max_steps, n);
  }
  EXPECT_LT(min_steps, int64_t{9} * 32 * 112 / 132);
  EXPECT_GT(max_steps, int64_t{9} * 32 * 112 / 132);
  // overflow: 9 tasks needed, capacity 4: uniform over the 4 written
  static_partition_tables_serial(off.data(), 9, 4, pb, out.data());
  EXPECT_EQ(out[size_t(pb.grid)], int64_t{4} * 32 * 112);
  EXPECT_EQ(out[1], static_cta_begin(1, int64_t{4} * 32 * 112, 132));
}

// Whole units per CTA: only for equal-row plans where the busiest CTA does <= 5% more steps;
// then no unit is cut (every unit lies in one CTA's range) and the fix-up invariants hold.
TEST(StaticPlan, AlignedPartition) {
  EXPECT_TRUE(static_aligned_fits(256, 264));   // qwen3-235b GEMM2, one token: 1 unit per CTA
  EXPECT_TRUE(static_aligned_fits(504, 264));   // deepseek-v3 GEMM2: 2 vs 1.91
  EXPECT_FALSE(static_aligned_fits(288, 264));  // deepseek-v3 GEMM1: 2 vs 1.09
  EXPECT_FALSE(static_aligned_fits(192, 264));  // qwen3-235b GEMM1: 1 vs 0.73
  EXPECT_TRUE(static_aligned_fits(264 * 7, 264));
  EXPECT_FALSE(static_aligned_fits(0, 264));
  StaticPartitionBuild pb = deepseek_build(264);
  std::vector<int32_t> out(2 * kStaticPartitionStride);
  const std::vector<int> ones(9, 1);  // deepseek-v3 at one token: 8 routed + 1 shared
  const auto off = offsets_of(ones);
  for (bool align : {true, false}) {
    pb.align = align;
    static_partition_tables_serial(off.data(), 9, 100, pb, out.data());
    for (int w = 0; w < 2; ++w) {
      const int64_t units = int64_t{9} * pb.ngroups[w];
      const StaticPartition p{out.data() + w * kStaticPartitionStride, pb.grid};
      check_fixup(p, units, pb.kblocks[w]);
      const bool whole = align && w == 1;
      int cut = 0;
      for (int b = 0; b <= pb.grid; ++b) cut += p.begin(b) % pb.kblocks[w] != 0;
      if (whole) {
        EXPECT_EQ(cut, 0);
        for (int b = 0; b < pb.grid; ++b) EXPECT_LE(p.begin(b + 1) - p.begin(b), 2 * pb.kblocks[w]);
      } else {
        EXPECT_GT(cut, 0);
        for (int b = 0; b <= pb.grid; ++b)
          EXPECT_EQ(p.begin(b), static_cta_begin(b, units * pb.kblocks[w], pb.grid));
      }
    }
  }
}

// static_weighted_fits: off for row cost 0, a grid or group count over the tables, or bounds
// that overflow the 32-bit group costs.
TEST(StaticPlan, WeightedFits) {
  EXPECT_TRUE(static_weighted_fits(2000, 60000, 5, 112, 32, 264, 257));
  EXPECT_FALSE(static_weighted_fits(2000, 60000, 0, 112, 32, 264, 257));
  EXPECT_FALSE(static_weighted_fits(2000, 60000, 5, 112, 32, kStaticMaxPartitionGrid + 1, 257));
  EXPECT_FALSE(static_weighted_fits(2000, 60000, 5, 112, 32, 264, kStaticMaxPartitionGroups + 1));
  EXPECT_FALSE(static_weighted_fits(int64_t{1} << 26, int64_t{1} << 30, 5, 112, 32, 264, 257));
}

}  // namespace
}  // namespace servekit::cuda::static_moe
