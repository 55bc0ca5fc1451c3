// GEMM1's self-routing of one token (cuda/kernels/static/static_self_route.h): when it applies,
// and that its task list is the planner's for the plan of the same ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/kernels/static/static_self_route.h"
#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {
namespace {

RoutingConfig routing(RoutingMethod m, int experts, int top_k, int n_group = 1,
                      int topk_group = 1) {
  RoutingConfig r;
  r.method = m;
  r.num_experts = experts;
  r.top_k = top_k;
  r.n_group = n_group;
  r.topk_group = topk_group;
  return r;
}

TEST(StaticSelfRoute, AppliesToOneTokenOfBf16Or4BitWithARepeatableSelection) {
  const StaticFormat f = StaticFormat::kInt4G128;
  const RoutingMethod m = RoutingMethod::kSoftmaxTopK;
  EXPECT_TRUE(static_self_route_fits(f, routing(m, 128, 8), 1, 0));
  EXPECT_TRUE(static_self_route_fits(f, routing(m, 512, 32), 1, 32));  // the task bound, exactly
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 512, 32), 1, 33));
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 128, 8), 2, 0));  // one token only
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 128, 8), 0, 0));
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 513, 8), 1, 0));  // 16 logits per lane
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 4, 8), 1, 0));    // top_k > E
  EXPECT_FALSE(static_self_route_fits(f, routing(m, 128, 33), 1, 0));
  for (StaticFormat g : {StaticFormat::kBF16, StaticFormat::kMXFP4, StaticFormat::kNVFP4,
                         StaticFormat::kInt4G32, StaticFormat::kInt4G64, StaticFormat::kInt4G128})
    EXPECT_TRUE(static_self_route_fits(g, routing(m, 128, 8), 1, 1));
  for (StaticFormat g : {StaticFormat::kFP8PerTensor, StaticFormat::kFP8Block128})
    EXPECT_FALSE(static_self_route_fits(g, routing(m, 128, 8), 1, 1));
  for (RoutingMethod r :
       {RoutingMethod::kSoftmaxTopK, RoutingMethod::kTopKSoftmax, RoutingMethod::kLlama4,
        RoutingMethod::kSigmoidTopK, RoutingMethod::kMiniMax})
    EXPECT_TRUE(static_self_route_fits(f, routing(r, 128, 8), 1, 1));
  EXPECT_FALSE(static_self_route_fits(f, routing(RoutingMethod::kPrecomputed, 128, 8), 1, 1));
  // DeepSeek-V3: only when the group stage keeps every group (kimi-k2: one group).
  const RoutingMethod ds = RoutingMethod::kDeepSeekV3;
  EXPECT_TRUE(static_self_route_fits(f, routing(ds, 384, 8, 1, 1), 1, 1));
  EXPECT_TRUE(static_self_route_fits(f, routing(ds, 256, 8, 8, 8), 1, 1));
  EXPECT_FALSE(static_self_route_fits(f, routing(ds, 256, 8, 8, 4), 1, 1));  // deepseek-v3's
  EXPECT_TRUE(static_self_route_biased(ds));
  EXPECT_TRUE(static_self_route_biased(RoutingMethod::kMiniMax));
  EXPECT_FALSE(static_self_route_biased(RoutingMethod::kSoftmaxTopK));
}

// Random picks (some outside the EP-local range, dropped slots as -1), against the planner's
// list for the plan of those ids: rows per local group, then num_shared groups of one row.
TEST(StaticSelfRoute, TaskListIsThePlannersForTheSameIds) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 2000; ++iter) {
    const int experts = 1 + static_cast<int>(rng() % 512);
    const int top_k = static_cast<int>(rng() % (std::min(experts, 32) + 1));
    const int local_first = static_cast<int>(rng() % experts);
    const int local_count = 1 + static_cast<int>(rng() % (experts - local_first));
    const int shared = static_cast<int>(rng() % 4);
    std::vector<int32_t> all(static_cast<size_t>(experts));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int32_t> ids(all.begin(), all.begin() + top_k);
    if (top_k > 0 && rng() % 4 == 0) ids[rng() % top_k] = -1;

    std::vector<int> rows(static_cast<size_t>(local_count + shared), 0);
    for (int32_t id : ids)
      if (id >= local_first && id < local_first + local_count) ++rows[id - local_first];
    for (int s = 0; s < shared; ++s) rows[local_count + s] = 1;
    std::vector<int32_t> off(rows.size() + 1, 0);
    for (size_t g = 0; g < rows.size(); ++g) off[g + 1] = off[g] + rows[g];
    std::vector<StaticTask> want(64), got(64);
    const int nw = static_plan_tasks_serial(off.data(), static_cast<int>(rows.size()), want.data(),
                                            static_cast<int>(want.size()));
    const int ng =
        static_self_route_tasks(ids.data(), top_k, local_first, local_count, shared, got.data());
    ASSERT_EQ(ng, nw) << "iter " << iter;
    for (int i = 0; i < ng; ++i) {
      EXPECT_EQ(got[i].group, want[i].group) << "iter " << iter << " task " << i;
      EXPECT_EQ(got[i].row_begin, want[i].row_begin) << "iter " << iter << " task " << i;
      EXPECT_EQ(got[i].rows, want[i].rows) << "iter " << iter << " task " << i;
    }
  }
}

}  // namespace
}  // namespace servekit::cuda::static_moe
