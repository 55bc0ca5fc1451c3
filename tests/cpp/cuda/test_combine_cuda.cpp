// launch_combine against the host: the kernel does exactly the host's operations (products and
// sums separately rounded, no FMA, slots in order k = 0..K-1 then shared), so the fp32 sums are
// bit-identical and so is their single rounding to bf16: every output element must be equal bit
// for bit (tolerance zero).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "core/exact_math.h"
#include "cuda/device_array.h"
#include "cuda/gpu_test_util.h"
#include "cuda/moe_plan.h"

namespace servekit {
namespace {

using testing::DeviceArray;

struct CombineCase {
  int64_t tokens;
  int top_k;
  int num_shared;
  int local_experts;
  int64_t hidden;
  bool bias;
  double non_local;  // fraction of routed slots held by another rank (row -1)
};

// A random plan: combine only reads token_slot_row and row_group, so rows may be any
// permutation; a shuffled one catches a kernel that assumes rows follow tokens.
struct RandomPlan {
  std::vector<int32_t> token_slot_row, row_group;
  int64_t rows = 0;
};

RandomPlan random_plan(const CombineCase& c, std::mt19937& rng) {
  const int slots = c.top_k + c.num_shared;
  RandomPlan p;
  p.token_slot_row.assign(c.tokens * slots, -1);
  std::bernoulli_distribution remote(c.non_local);
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int j = 0; j < slots; ++j)
      if (j >= c.top_k || !remote(rng)) p.token_slot_row[t * slots + j] = p.rows++;
  std::vector<int32_t> perm(p.rows);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  p.row_group.assign(p.rows, -1);
  std::uniform_int_distribution<int> expert(0, c.local_experts - 1);
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int j = 0; j < slots; ++j) {
      int32_t& row = p.token_slot_row[t * slots + j];
      if (row < 0) continue;
      row = perm[row];
      p.row_group[row] = j < c.top_k ? expert(rng) : c.local_experts + (j - c.top_k);
    }
  return p;
}

std::vector<uint16_t> host_combine(const CombineCase& c, const RandomPlan& p,
                                   const std::vector<uint16_t>& y, const std::vector<float>& w,
                                   const std::vector<float>& bias) {
  const int slots = c.top_k + c.num_shared;
  std::vector<uint16_t> out(c.tokens * c.hidden);
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t h = 0; h < c.hidden; ++h) {
      float acc = 0.0f;
      for (int j = 0; j < slots; ++j) {
        const int32_t row = p.token_slot_row[t * slots + j];
        if (row < 0) continue;
        float v = bf16_to_float(y[row * c.hidden + h]);
        if (c.bias) v = exact::add(v, bias[p.row_group[row] * c.hidden + h]);
        if (j < c.top_k) v = exact::mul(w[t * c.top_k + j], v);
        acc = exact::add(acc, v);
      }
      out[t * c.hidden + h] = float_to_bf16(acc);
    }
  return out;
}

void expect_combine_matches(const CombineCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "T=" << c.tokens << " K=" << c.top_k << " S=" << c.num_shared
                                    << " H=" << c.hidden << " bias=" << c.bias);
  std::mt19937 rng(seed);
  const RandomPlan plan = random_plan(c, rng);
  const int groups = c.local_experts + c.num_shared;
  // Never zeros: y in +-[1/64, 4] with random signs, weights in (0.01, 1), bias in +-1.
  std::uniform_real_distribution<float> mag(1.0f / 64, 4.0f), unit(0.01f, 1.0f), sym(-1, 1);
  std::bernoulli_distribution negative(0.5);
  std::vector<uint16_t> y(std::max<int64_t>(plan.rows, 1) * c.hidden);
  for (auto& v : y) v = float_to_bf16(negative(rng) ? -mag(rng) : mag(rng));
  std::vector<float> w(c.tokens * c.top_k), bias(c.bias ? groups * c.hidden : 0);
  for (auto& v : w) v = unit(rng);
  for (auto& v : bias) v = sym(rng);

  DeviceArray<uint16_t> d_y(y), d_out(c.tokens * c.hidden);
  DeviceArray<float> d_w(w), d_bias(bias);
  DeviceArray<int32_t> d_slot_row(plan.token_slot_row), d_row_group(plan.row_group);
  d_out.poison(0xFF);  // bf16 0xFFFF is a NaN: an unwritten element cannot match
  cuda::PlanBuffers buffers;
  buffers.num_groups = groups;
  buffers.token_slot_row = d_slot_row.get();
  buffers.row_group = d_row_group.get();
  cuda::launch_combine(d_y.get(), buffers, d_w.get(), c.tokens, c.top_k, c.num_shared, c.hidden,
                       c.bias ? d_bias.get() : nullptr, d_out.get(), nullptr);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());

  const std::vector<uint16_t> want = host_combine(c, plan, y, w, bias);
  const std::vector<uint16_t> got = d_out.download();
  int64_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && ++mismatches <= 5)
      ADD_FAILURE() << "out[" << i / c.hidden << ", " << i % c.hidden << "] = 0x" << std::hex
                    << got[i] << ", want 0x" << want[i] << std::dec;
  EXPECT_EQ(mismatches, 0);
}

TEST(CombineCuda, DeepSeekShapes) {
  SERVEKIT_REQUIRE_GPU();
  // deepseek-v3: K = 8, one shared expert, H = 7168; EP-style remote slots.
  expect_combine_matches({1, 8, 1, 256, 7168, false, 0.0}, 1);
  expect_combine_matches({7, 8, 1, 256, 7168, false, 0.5}, 2);
  // 8192 tokens at a smaller H keeps the host reference quick; the grid is the same shape.
  expect_combine_matches({8192, 8, 1, 256, 512, false, 0.25}, 3);
}

TEST(CombineCuda, BiasAndOddHidden) {
  SERVEKIT_REQUIRE_GPU();
  expect_combine_matches({33, 4, 0, 128, 2880, true, 0.0}, 4);  // gpt-oss: w2 bias
  expect_combine_matches({5, 6, 2, 257, 1032, true, 0.3}, 5);   // partial column block
  expect_combine_matches({9, 1, 0, 8, 8, false, 0.0}, 6);       // one vector per row
  expect_combine_matches({17, 32, 1, 512, 24, true, 0.1}, 7);   // K = 32: four load batches
}

TEST(CombineCuda, TokensWithNoLocalExpert) {
  SERVEKIT_REQUIRE_GPU();
  // Every routed slot remote and no shared expert: the sum is empty and the output +0.
  expect_combine_matches({64, 8, 0, 32, 256, false, 1.0}, 8);
}

TEST(CombineCuda, RejectsBadArguments) {
  SERVEKIT_REQUIRE_GPU();
  DeviceArray<uint16_t> buf(4096);
  DeviceArray<int32_t> ibuf(64);
  DeviceArray<float> w(64);
  cuda::PlanBuffers plan;
  plan.num_groups = 9;
  plan.token_slot_row = plan.row_group = ibuf.get();
  auto launch = [&](int64_t hidden, const void* y, int top_k) {
    cuda::launch_combine(y, plan, w.get(), 2, top_k, 1, hidden, nullptr, buf.get(), nullptr);
  };
  EXPECT_THROW(launch(12, buf.get(), 8), Error);      // H not a multiple of 8
  EXPECT_THROW(launch(0, buf.get(), 8), Error);       // H = 0
  EXPECT_THROW(launch(64, buf.get() + 1, 8), Error);  // y not 16-byte aligned
  EXPECT_THROW(launch(64, buf.get(), 33), Error);     // K > 32
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace
}  // namespace servekit
