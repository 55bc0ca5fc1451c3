// GPU tests of the row kernels around the grouped GEMMs (src/cuda/moe_quant.h), on a plan built
// by hand: the gather + quantize must reproduce quant.h's host quantizers bit for bit, and the
// activation + quantize must match an fp64 activation within the rounding of its output format.
// Rows past the plan's total must stay untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/moe_reference.h"
#include "cuda/device_array.h"
#include "cuda/gemm_tile_config.h"
#include "cuda/grouped_gemm.h"
#include "cuda/moe_plan.h"
#include "cuda/moe_quant.h"
#include "gpu_test_util.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit::cuda {
namespace {

using testing::DeviceArray;

// A plan of 5 groups over `tokens` tokens: sizes {0, 40, 3, 61, 0} (104 rows), random tokens.
// token_slot_row [tokens, slots] names each row once, at a random slot of its token, with -1 in
// the other slots (as an EP-local plan has), and some tokens have no row at all.
struct HostPlan {
  std::vector<int32_t> offsets, row_token, row_group, token_slot_row;
  int64_t rows = 0, capacity = 0;
  int slots = 0;
};

HostPlan make_plan(int64_t tokens, uint64_t seed) {
  const std::vector<int> sizes = {0, 40, 3, 61, 0};
  std::mt19937_64 rng(seed);
  HostPlan p;
  p.offsets.push_back(0);
  for (size_t g = 0; g < sizes.size(); ++g) {
    for (int i = 0; i < sizes[g]; ++i) {
      p.row_token.push_back(static_cast<int32_t>(rng() % tokens));
      p.row_group.push_back(static_cast<int32_t>(g));
    }
    p.offsets.push_back(p.offsets.back() + sizes[g]);
  }
  p.rows = p.offsets.back();
  std::vector<std::vector<int32_t>> rows_of(static_cast<size_t>(tokens));
  for (int64_t r = 0; r < p.rows; ++r)
    rows_of[static_cast<size_t>(p.row_token[static_cast<size_t>(r)])].push_back(
        static_cast<int32_t>(r));
  size_t most = 0;
  for (const auto& v : rows_of) most = std::max(most, v.size());
  p.slots = static_cast<int>(most) + 2;
  p.token_slot_row.assign(static_cast<size_t>(tokens * p.slots), -1);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int> order(static_cast<size_t>(p.slots));
    for (int s = 0; s < p.slots; ++s) order[static_cast<size_t>(s)] = s;
    std::shuffle(order.begin(), order.end(), rng);
    const auto& v = rows_of[static_cast<size_t>(t)];
    for (size_t i = 0; i < v.size(); ++i)
      p.token_slot_row[static_cast<size_t>(t * p.slots + order[i])] = v[i];
  }
  p.capacity = p.rows + 9;  // rows past the total must stay poisoned
  p.row_token.resize(static_cast<size_t>(p.capacity), 0);
  p.row_group.resize(static_cast<size_t>(p.capacity), 0);
  return p;
}

struct DevicePlan {
  explicit DevicePlan(const HostPlan& p)
      : offsets(p.offsets),
        row_token(p.row_token),
        row_group(p.row_group),
        token_slot_row(p.token_slot_row) {
    plan.num_groups = static_cast<int>(p.offsets.size()) - 1;
    plan.group_offsets = offsets.get();
    plan.row_token = row_token.get();
    plan.row_group = row_group.get();
    plan.token_slot_row = token_slot_row.get();
  }
  DeviceArray<int32_t> offsets, row_token, row_group, token_slot_row;
  PlanBuffers plan;
};

std::vector<float> random_bf16_values(size_t n, float scale, uint64_t seed,
                                      std::vector<uint16_t>& bits) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  bits.resize(n);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = float_to_bf16(normal(rng));
    f[i] = bf16_to_float(bits[i]);
  }
  return f;
}

// Gather + quantize against quant.h's quantizers, bit for bit, at three widths: H = 2944 (23
// scale blocks; two tokens per CTA step), H = 128 (sixteen tokens per step) and H = 8320 (one
// token's row over two column slices). 37 tokens, some with no row.
TEST(MoEQuantCuda, GatherMatchesHostQuantizers) {
  SERVEKIT_REQUIRE_GPU();
  for (const int64_t h : {2944, 128, 8320}) {
    SCOPED_TRACE("H=" + std::to_string(h));
    const int64_t tokens = 37, kb = h / 128;
    std::vector<uint16_t> hidden_bits;
    const std::vector<float> hidden = random_bf16_values(
        static_cast<size_t>(tokens * h), 1.0f, 11 + static_cast<uint64_t>(h), hidden_bits);
    const HostPlan hp = make_plan(tokens, 5);
    DevicePlan dp(hp);
    DeviceArray<uint16_t> d_hidden(hidden_bits);

    std::vector<uint8_t> pt_codes(hidden.size()), blk_codes(hidden.size());
    std::vector<float> blk_scales(static_cast<size_t>(tokens * kb));
    const float pt_scale = quantize_act_fp8_per_tensor(hidden.data(), tokens, h, pt_codes.data());
    quantize_act_fp8_block128(hidden.data(), tokens, h, blk_codes.data(), blk_scales.data());

    for (ActFormat f : {ActFormat::kBF16, ActFormat::kFP8PerTensor, ActFormat::kFP8Block128,
                        ActFormat::kFP8Block128AsBF16}) {
      SCOPED_TRACE(static_cast<int>(f));
      const size_t bytes = act_element_bytes(f);
      DeviceArray<uint8_t> rows(static_cast<size_t>(hp.capacity * h) * bytes);
      DeviceArray<float> scales(static_cast<size_t>(hp.capacity * kb)), tensor_scale(1);
      DeviceArray<unsigned> amax(1);
      rows.poison();
      scales.poison();
      const ActBuffers out{rows.get(), scales.get(), tensor_scale.get(), amax.get()};
      launch_gather_quantize(f, d_hidden.get(), tokens, h, hp.slots, dp.plan, out, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint8_t> got = rows.download();
      const std::vector<float> got_scales = scales.download();

      for (int64_t r = 0; r < hp.rows; ++r) {
        const int64_t t = hp.row_token[static_cast<size_t>(r)];
        const int g = hp.row_group[static_cast<size_t>(r)];
        const int64_t begin = hp.offsets[g], m = hp.offsets[g + 1] - begin;
        for (int64_t c = 0; c < h; ++c) {
          const size_t src = static_cast<size_t>(t * h + c), dst = static_cast<size_t>(r * h + c);
          uint16_t b16 = 0;
          if (bytes == 2) std::memcpy(&b16, &got[2 * dst], 2);
          switch (f) {
            case ActFormat::kBF16:
              ASSERT_EQ(b16, hidden_bits[src]) << "row " << r << " col " << c;
              break;
            case ActFormat::kFP8PerTensor:
              ASSERT_EQ(got[dst], pt_codes[src]) << "row " << r << " col " << c;
              break;
            case ActFormat::kFP8Block128:
              ASSERT_EQ(got[dst], blk_codes[src]) << "row " << r << " col " << c;
              break;
            case ActFormat::kFP8Block128AsBF16: {
              const float deq = e4m3_to_float(blk_codes[src]) * blk_scales[t * kb + c / 128];
              ASSERT_EQ(b16, float_to_bf16(deq)) << "row " << r << " col " << c;
              break;
            }
          }
        }
        if (f == ActFormat::kFP8Block128) {
          for (int64_t j = 0; j < kb; ++j) {
            const float s =
                got_scales[static_cast<size_t>(a_block_scale_index(begin, m, kb, r, j))];
            ASSERT_EQ(s, blk_scales[static_cast<size_t>(t * kb + j)])
                << "row " << r << " blk " << j;
          }
        }
      }
      if (f == ActFormat::kFP8PerTensor) {
        EXPECT_EQ(tensor_scale.download()[0], pt_scale);
      }
      for (size_t i = static_cast<size_t>(hp.rows * h) * bytes; i < got.size(); ++i)
        ASSERT_EQ(got[i], 0xFF) << "byte " << i << " past the plan's rows was written";
      if (f == ActFormat::kFP8Block128) {
        for (size_t i = static_cast<size_t>(hp.rows * kb); i < got_scales.size(); ++i)
          ASSERT_TRUE(std::isnan(got_scales[i])) << "scale " << i << " past the plan's rows";
      }
    }
  }
}

// Bad arguments of the gather give errors, not launches.
TEST(MoEQuantCuda, GatherRejectsBadArguments) {
  SERVEKIT_REQUIRE_GPU();
  const HostPlan hp = make_plan(4, 3);
  DevicePlan dp(hp);
  DeviceArray<uint16_t> hidden(static_cast<size_t>(4 * 256));
  DeviceArray<uint8_t> rows(static_cast<size_t>(hp.capacity * 256));
  DeviceArray<float> scales(static_cast<size_t>(hp.capacity * 2));
  const ActBuffers out{rows.get(), scales.get(), nullptr, nullptr};
  EXPECT_THROW(launch_gather_quantize(ActFormat::kFP8Block128, hidden.get(), 4, 200, hp.slots,
                                      dp.plan, out, nullptr),
               Error);  // cols not a multiple of 128
  EXPECT_THROW(
      launch_gather_quantize(ActFormat::kBF16, hidden.get(), 4, 256, 0, dp.plan, out, nullptr),
      Error);  // no slots
  PlanBuffers no_slots = dp.plan;
  no_slots.token_slot_row = nullptr;
  EXPECT_THROW(launch_gather_quantize(ActFormat::kBF16, hidden.get(), 4, 256, hp.slots, no_slots,
                                      out, nullptr),
               Error);
}

// Activation + bias + quantize against an fp64 activation of the same bf16 inputs. I = 384.
// Bounds: bf16 output within its rounding (2^-9 relative) plus fp32 math (1e-5 absolute); e4m3
// within half a step (2^-4 relative for normals, 2^-10 * scale below) of the exact value, with the
// scale amax/448 of the fp32 values (1e-5 relative from the fp32 activation).
TEST(MoEQuantCuda, ActivationMatchesReference) {
  SERVEKIT_REQUIRE_GPU();
  const int64_t inter = 384, kb = inter / 128;
  const HostPlan hp = make_plan(64, 9);
  DevicePlan dp(hp);
  for (Activation act :
       {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI, Activation::kReLU2}) {
    const bool gated = act != Activation::kReLU2;
    const int64_t width = gated ? 2 * inter : inter;
    std::vector<uint16_t> h_bits;
    const std::vector<float> h1 = random_bf16_values(static_cast<size_t>(hp.capacity * width), 3.0f,
                                                     21 + static_cast<int>(act), h_bits);
    std::vector<uint16_t> unused;
    const std::vector<float> bias =
        random_bf16_values(static_cast<size_t>(5 * width), 0.5f, 31, unused);
    DeviceArray<uint16_t> d_h(h_bits);
    DeviceArray<float> d_bias(bias);

    std::vector<double> ref(static_cast<size_t>(hp.rows * inter));
    double amax = 0.0;
    for (int64_t r = 0; r < hp.rows; ++r) {
      const int g = hp.row_group[static_cast<size_t>(r)];
      for (int64_t i = 0; i < inter; ++i) {
        const double gate = double{h1[r * width + i]} + bias[g * width + i];
        const double up =
            gated ? double{h1[r * width + inter + i]} + bias[g * width + inter + i] : 0.0;
        ref[static_cast<size_t>(r * inter + i)] = reference_activation(act, gate, up);
        amax = std::max(amax, std::abs(ref[static_cast<size_t>(r * inter + i)]));
      }
    }
    for (ActFormat f : {ActFormat::kBF16, ActFormat::kFP8PerTensor, ActFormat::kFP8Block128}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(act)) + "/" +
                   std::to_string(static_cast<int>(f)));
      const size_t bytes = act_element_bytes(f);
      DeviceArray<uint8_t> rows(static_cast<size_t>(hp.capacity * inter) * bytes);
      DeviceArray<float> scales(static_cast<size_t>(hp.capacity * kb)), tensor_scale(1);
      DeviceArray<unsigned> amax_bits(1);
      rows.poison();
      const ActBuffers out{rows.get(), scales.get(), tensor_scale.get(), amax_bits.get()};
      launch_activation_quantize(f, act, d_h.get(), d_bias.get(), inter, dp.plan, hp.capacity, out,
                                 nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint8_t> got = rows.download();
      const std::vector<float> got_scales = scales.download();
      const float ts = tensor_scale.download()[0];
      if (f == ActFormat::kFP8PerTensor) {
        EXPECT_NEAR(ts, amax / 448.0, 1e-5 * amax / 448.0);
      }

      for (int64_t r = 0; r < hp.rows; ++r) {
        const int g = hp.row_group[static_cast<size_t>(r)];
        const int64_t begin = hp.offsets[g], m = hp.offsets[g + 1] - begin;
        for (int64_t i = 0; i < inter; ++i) {
          const double v = ref[static_cast<size_t>(r * inter + i)];
          const size_t at = static_cast<size_t>(r * inter + i);
          if (f == ActFormat::kBF16) {
            uint16_t b16 = 0;
            std::memcpy(&b16, &got[2 * at], 2);
            ASSERT_NEAR(bf16_to_float(b16), v, std::abs(v) / 256.0 + 1e-5)
                << "row " << r << " col " << i;
            continue;
          }
          const double s =
              f == ActFormat::kFP8PerTensor
                  ? ts
                  : got_scales[static_cast<size_t>(a_block_scale_index(begin, m, kb, r, i / 128))];
          const double deq = double{e4m3_to_float(got[at])} * s;
          ASSERT_NEAR(deq, v, std::abs(v) / 16.0 + s / 512.0) << "row " << r << " col " << i;
        }
      }
      for (size_t i = static_cast<size_t>(hp.rows * inter) * bytes; i < got.size(); ++i)
        ASSERT_EQ(got[i], 0xFF) << "byte " << i << " past the plan's rows was written";
    }
  }
}

// The pass on GEMM1's output in an interleaved W13 order (interleaved_w13_row with blocks of 64
// and 128 columns) gives the same bytes as on the plain order: only where it reads gate and up
// changes. I = 384 (three 128-blocks, six 64-blocks), every gated activation, all three formats
// with a bias. Interleaves other than 0, 64 and 128, or I not a multiple of the block, throw.
TEST(MoEQuantCuda, ActivationReadsInterleavedOutput) {
  SERVEKIT_REQUIRE_GPU();
  const int64_t inter = 384, width = 2 * inter, kb = inter / 128;
  const HostPlan hp = make_plan(64, 9);
  DevicePlan dp(hp);
  std::vector<uint16_t> h_bits, unused;
  random_bf16_values(static_cast<size_t>(hp.capacity * width), 3.0f, 41, h_bits);
  const std::vector<float> bias =
      random_bf16_values(static_cast<size_t>(5 * width), 0.5f, 43, unused);
  DeviceArray<uint16_t> d_plain(h_bits);
  DeviceArray<float> d_bias(bias);
  for (int w : {64, 128}) {
    // Physical column p of the interleaved output holds logical column interleaved_w13_row(p).
    std::vector<uint16_t> mixed(h_bits.size());
    for (int64_t r = 0; r < hp.capacity; ++r)
      for (int64_t p = 0; p < width; ++p)
        mixed[static_cast<size_t>(r * width + p)] =
            h_bits[static_cast<size_t>(r * width + interleaved_w13_row(p, inter, w))];
    DeviceArray<uint16_t> d_mixed(mixed);
    for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI})
      for (ActFormat f : {ActFormat::kBF16, ActFormat::kFP8PerTensor, ActFormat::kFP8Block128}) {
        SCOPED_TRACE("block " + std::to_string(w) + " activation " +
                     std::to_string(static_cast<int>(act)) + " format " +
                     std::to_string(static_cast<int>(f)));
        const size_t bytes = act_element_bytes(f);
        std::vector<std::vector<uint8_t>> rows;
        std::vector<std::vector<float>> scales;
        for (int pass = 0; pass < 2; ++pass) {
          DeviceArray<uint8_t> out_rows(static_cast<size_t>(hp.capacity * inter) * bytes);
          DeviceArray<float> out_scales(static_cast<size_t>(hp.capacity * kb)), ts(1);
          DeviceArray<unsigned> amax_bits(1);
          out_rows.poison();
          out_scales.poison();
          const ActBuffers out{out_rows.get(), out_scales.get(), ts.get(), amax_bits.get()};
          launch_activation_quantize(f, act, pass == 0 ? d_plain.get() : d_mixed.get(),
                                     d_bias.get(), inter, dp.plan, hp.capacity, out, nullptr, false,
                                     pass == 0 ? 0 : w);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          rows.push_back(out_rows.download());
          scales.push_back(out_scales.download());
        }
        const size_t valid = static_cast<size_t>(hp.rows * inter) * bytes;
        for (size_t i = 0; i < valid; ++i) {
          ASSERT_EQ(rows[1][i], rows[0][i]) << "byte " << i;
        }
        if (f == ActFormat::kFP8Block128) {
          for (size_t i = 0; i < static_cast<size_t>(hp.rows * kb); ++i) {
            ASSERT_EQ(std::memcmp(&scales[1][i], &scales[0][i], sizeof(float)), 0) << "scale " << i;
          }
        }
      }
  }
  DeviceArray<uint8_t> out_rows(static_cast<size_t>(hp.capacity * inter) * 2);
  const ActBuffers out{out_rows.get(), nullptr, nullptr, nullptr};
  for (int bad : {1, 32, 256})
    EXPECT_THROW(
        launch_activation_quantize(ActFormat::kBF16, Activation::kSwiGLU, d_plain.get(), nullptr,
                                   inter, dp.plan, hp.capacity, out, nullptr, false, bad),
        Error)
        << bad;
  EXPECT_THROW(
      launch_activation_quantize(ActFormat::kBF16, Activation::kSwiGLU, d_plain.get(), nullptr, 320,
                                 dp.plan, hp.capacity, out, nullptr, false, 128),
      Error);  // I = 320 is not a multiple of 128
  EXPECT_THROW(
      launch_activation_quantize(ActFormat::kBF16, Activation::kReLU2, d_plain.get(), nullptr,
                                 inter, dp.plan, hp.capacity, out, nullptr, false, 64),
      Error);  // not gated
}

}  // namespace
}  // namespace servekit::cuda
