// launch_build_plan against a plan computed on the host: every array must be equal, element for
// element (the plan is integer bookkeeping, so there is no tolerance).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/gpu_test_util.h"
#include "cuda/moe_plan.h"
#include "cuda/plan_test_util.h"

namespace servekit {
namespace {

using testing::DeviceArray;

// 0xA5A5A5A5 is negative and not -1, so it is neither a row nor the "not local" marker.
constexpr uint8_t kPoison = 0xA5;

struct HostPlan {
  std::vector<int32_t> group_offsets, row_token, row_group, token_slot_row;
};

// The plan by definition: rows of group g follow ascending (token, slot); shared groups last.
HostPlan host_plan(const std::vector<int32_t>& ids, int64_t tokens, int top_k, int offset,
                   int local, int shared) {
  const int groups = local + shared;
  auto local_group = [&](int32_t id) {
    return (id >= offset && id - offset < local) ? id - offset : -1;
  };
  std::vector<int32_t> count(groups, 0);
  for (int32_t id : ids)
    if (local_group(id) >= 0) ++count[local_group(id)];
  for (int s = 0; s < shared; ++s) count[local + s] = static_cast<int32_t>(tokens);
  HostPlan p;
  p.group_offsets.assign(groups + 1, 0);
  std::partial_sum(count.begin(), count.end(), p.group_offsets.begin() + 1);
  std::vector<int32_t> next(p.group_offsets.begin(), p.group_offsets.end() - 1);
  const int slots = top_k + shared;
  p.row_token.assign(p.group_offsets[groups], -1);
  p.row_group.assign(p.group_offsets[groups], -1);
  p.token_slot_row.assign(tokens * slots, -1);
  auto place = [&](int64_t t, int slot, int g) {
    const int32_t row = next[g]++;
    p.row_token[row] = static_cast<int32_t>(t);
    p.row_group[row] = g;
    p.token_slot_row[t * slots + slot] = row;
  };
  for (int64_t t = 0; t < tokens; ++t)
    for (int k = 0; k < top_k; ++k)
      if (int g = local_group(ids[t * top_k + k]); g >= 0) place(t, k, g);
  for (int s = 0; s < shared; ++s)
    for (int64_t t = 0; t < tokens; ++t) place(t, top_k + s, local + s);
  return p;
}

// Runs the device plan with buffers sized for max_tokens, every output poisoned first.
HostPlan device_plan(const std::vector<int32_t>& ids, int64_t tokens, int top_k, int offset,
                     int local, int shared, int64_t max_tokens) {
  const int groups = local + shared;
  const int64_t capacity = cuda::plan_capacity_rows(max_tokens, top_k, shared);
  DeviceArray<int32_t> d_ids(ids);
  DeviceArray<int32_t> offsets(groups + 1), row_token(capacity), row_group(capacity),
      slot_row(max_tokens * (top_k + shared));
  DeviceArray<uint8_t> scratch(cuda::plan_scratch_bytes(max_tokens, top_k, groups));
  offsets.poison(kPoison);
  row_token.poison(kPoison);
  row_group.poison(kPoison);
  slot_row.poison(kPoison);
  scratch.poison(kPoison);  // stale block counts must not leak into the scan

  const cuda::PlanBuffers plan =
      testing::plan_buffers(groups, offsets, row_token, row_group, slot_row, scratch);
  cuda::launch_build_plan(d_ids.get(), tokens, top_k, offset, local, shared, plan, nullptr);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());

  HostPlan p;
  p.group_offsets = offsets.download();
  const int64_t total = p.group_offsets[groups];
  // A wrong total must fail the comparison below, not read past the buffers.
  const int64_t rows = std::clamp<int64_t>(total, 0, capacity);
  p.row_token = row_token.download(rows);
  p.row_group = row_group.download(rows);
  p.token_slot_row = slot_row.download(tokens * (top_k + shared));
  return p;
}

void expect_plan_matches(const std::vector<int32_t>& ids, int64_t tokens, int top_k, int offset,
                         int local, int shared, int64_t max_tokens = -1) {
  SCOPED_TRACE(::testing::Message() << "T=" << tokens << " K=" << top_k << " offset=" << offset
                                    << " E_local=" << local << " S=" << shared);
  const HostPlan want = host_plan(ids, tokens, top_k, offset, local, shared);
  const HostPlan got =
      device_plan(ids, tokens, top_k, offset, local, shared, max_tokens < 0 ? tokens : max_tokens);
  ASSERT_EQ(got.group_offsets, want.group_offsets);
  ASSERT_EQ(got.row_token, want.row_token);
  ASSERT_EQ(got.row_group, want.row_group);
  ASSERT_EQ(got.token_slot_row, want.token_slot_row);
}

// K distinct experts per token from [0, experts), as a router picks them.
std::vector<int32_t> distinct_ids(int64_t tokens, int top_k, int experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> all(experts), ids(tokens * top_k);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int k = 0; k < top_k; ++k) {
      std::uniform_int_distribution<int> pick(k, experts - 1);
      std::swap(all[k], all[pick(rng)]);
      ids[t * top_k + k] = all[k];
    }
  return ids;
}

TEST(PlanCuda, AllExpertsLocal) {
  SERVEKIT_REQUIRE_GPU();
  for (int64_t tokens : {1, 7, 8192}) {
    expect_plan_matches(distinct_ids(tokens, 8, 256, 1), tokens, 8, 0, 256, 1);  // deepseek-v3
    expect_plan_matches(distinct_ids(tokens, 2, 8, 2), tokens, 2, 0, 8, 0);      // mixtral
  }
}

TEST(PlanCuda, ExpertParallelLocalRange) {
  SERVEKIT_REQUIRE_GPU();
  // Rank 1 of 4 holds experts [64, 128); ids outside (including -1 and ids >= E) get row -1.
  for (int64_t tokens : {1, 7, 8192}) {
    std::vector<int32_t> ids = distinct_ids(tokens, 8, 256, 3);
    for (size_t i = 0; i < ids.size(); i += 13) ids[i] = -1;
    for (size_t i = 5; i < ids.size(); i += 17) ids[i] = 256 + static_cast<int32_t>(i % 9);
    for (int shared : {0, 2}) expect_plan_matches(ids, tokens, 8, 64, 64, shared);
  }
}

TEST(PlanCuda, AllTokensToOneExpert) {
  SERVEKIT_REQUIRE_GPU();
  for (int64_t tokens : {1, 7, 8192}) {
    expect_plan_matches(std::vector<int32_t>(tokens, 5), tokens, 1, 0, 128, 0);
    // Slot 0 always expert 3, the other slots spread over the rest.
    std::vector<int32_t> ids = distinct_ids(tokens, 8, 128, 4);
    for (int64_t t = 0; t < tokens; ++t) {
      auto row = ids.begin() + t * 8;
      auto hot = std::find(row, row + 8, 3);
      if (hot != row + 8) std::iter_swap(row, hot);
      row[0] = 3;
    }
    expect_plan_matches(ids, tokens, 8, 0, 128, 1);
  }
}

TEST(PlanCuda, WideAndOddShapes) {
  SERVEKIT_REQUIRE_GPU();
  // 512 local experts, K = 32, 3 shared: 262144 entries, several tiles per block.
  expect_plan_matches(distinct_ids(8192, 32, 512, 5), 8192, 32, 0, 512, 3);
  // E = 257, K = 6, T not a multiple of anything, buffers sized for a larger capacity.
  expect_plan_matches(distinct_ids(1000, 6, 257, 6), 1000, 6, 0, 257, 1, 4096);
  expect_plan_matches(distinct_ids(33, 6, 257, 7), 33, 6, 100, 157, 0, 8192);
}

TEST(PlanCuda, DuplicateAndInvalidIds) {
  SERVEKIT_REQUIRE_GPU();
  // Precomputed ids may repeat an expert within a token (rows then follow the slot order) and
  // may hold anything: negative, past the local range, INT_MIN / INT_MAX.
  std::mt19937 rng(8);
  std::uniform_int_distribution<int32_t> pick(-3, 66);
  std::vector<int32_t> ids(4099 * 4);
  for (auto& id : ids) id = pick(rng);
  ids[1] = INT_MIN;
  ids[2] = INT_MAX;
  expect_plan_matches(ids, 4099, 4, 0, 64, 0);
  expect_plan_matches(ids, 4099, 4, 32, 16, 2);
  // No local routed experts at all: only the shared rows.
  expect_plan_matches(ids, 4099, 4, 100, 0, 1);
}

TEST(PlanCuda, NoTokens) {
  SERVEKIT_REQUIRE_GPU();
  expect_plan_matches({}, 0, 8, 0, 256, 1, 64);
}

TEST(PlanCuda, RejectsBadArguments) {
  SERVEKIT_REQUIRE_GPU();
  DeviceArray<int32_t> buf(1024);
  DeviceArray<uint8_t> scratch(cuda::plan_scratch_bytes(16, 8, 9) + 16);
  cuda::PlanBuffers plan;
  plan.num_groups = 9;
  plan.group_offsets = plan.row_token = plan.row_group = plan.token_slot_row = buf.get();
  plan.scratch = scratch.get();
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), 16, 8, 0, 8, 0, plan, nullptr), Error);
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), 16, 0, 0, 8, 1, plan, nullptr), Error);
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), 16, 33, 0, 8, 1, plan, nullptr), Error);
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), -1, 8, 0, 8, 1, plan, nullptr), Error);
  plan.num_groups = 514;
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), 16, 8, 0, 513, 1, plan, nullptr), Error);
  plan.num_groups = 9;
  plan.scratch = scratch.get() + 4;
  EXPECT_THROW(cuda::launch_build_plan(buf.get(), 16, 8, 0, 8, 1, plan, nullptr), Error);
  EXPECT_THROW(cuda::plan_scratch_bytes(16, 0, 9), Error);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace servekit
