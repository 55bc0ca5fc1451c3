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

// Stream-K: the CTA ranges tile the step list; static_cta_of_step inverts static_cta_begin;
// segments and partial slots are consistent and a CTA cuts at most two units.
TEST(StaticPlan, StreamKPartition) {
  for (int64_t units : {1, 3, 7, 45, 288}) {
    for (int kblocks : {1, 12, 45, 112}) {
      for (int grid : {1, 5, 132, 264}) {
        const int64_t total = units * kblocks;
        int64_t covered = 0;
        for (int b = 0; b < grid; ++b) {
          const int64_t s0 = static_cta_begin(b, total, grid),
                        s1 = static_cta_begin(b + 1, total, grid);
          ASSERT_LE(s0, s1);
          ASSERT_EQ(s0, covered);
          covered = s1;
          for (int64_t s = s0; s < s1; ++s) ASSERT_EQ(static_cta_of_step(s, total, grid), b);
        }
        ASSERT_EQ(covered, total);
        // For each unit: its CTAs' segments tile [0, kblocks) in CTA order, and distinct CTAs
        // holding a cut unit use distinct (cta, slot) pairs.
        std::vector<int> slot_use(static_cast<size_t>(grid) * 2, 0);
        for (int64_t u = 0; u < units; ++u) {
          const StaticSegment first = static_segment(u, 0, kblocks, total, grid);
          int kb = 0, parts = 0;
          for (int c = first.first_cta; c <= first.last_cta; ++c) {
            if (!static_cta_has_steps(c, total, grid)) continue;
            ++parts;
            const StaticSegment seg = static_segment(u, c, kblocks, total, grid);
            ASSERT_EQ(seg.first_cta, first.first_cta);
            ASSERT_EQ(seg.last_cta, first.last_cta);
            ASSERT_EQ(seg.kb_begin, kb);
            ASSERT_GT(seg.kb_end, seg.kb_begin);
            kb = seg.kb_end;
            if (first.first_cta != first.last_cta) {
              const int slot = static_partial_slot(u, c, kblocks, total, grid);
              ++slot_use[static_cast<size_t>(c) * 2 + static_cast<size_t>(slot)];
            }
          }
          ASSERT_EQ(kb, kblocks);
          ASSERT_EQ(parts, static_unit_parts(first, total, grid));
        }
        for (int v : slot_use) ASSERT_LE(v, 1);
      }
    }
  }
}

}  // namespace
}  // namespace servekit::cuda::static_moe
