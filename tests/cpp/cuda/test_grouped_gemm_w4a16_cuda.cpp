// GPU tests of the int4_w4a16 grouped GEMM (make_grouped_gemm_w4a16, grouped_gemm.h) against the
// fp64 host GEMM of grouped_gemm_test_util.h on the dequantized weights, the group layouts of
// test_grouped_gemm_cuda.cpp's run_case, and host tests of its weight layout (w4a16_gemm_layout).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/device_array.h"
#include "cuda/expert_layout.h"
#include "cuda/gemm_tile_pick.h"
#include "cuda/grouped_gemm.h"
#include "cuda/moe_plan.h"
#include "cuda/moe_quant.h"
#include "gpu_test_util.h"
#include "grouped_gemm_test_util.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit::cuda {
namespace {

using testing::DeviceArray;
using namespace gemm_test;

// Random int4_w4a16 operands for make_grouped_gemm_w4a16: bf16 rows [rows, K], and per expert a
// quant.h int4_w4a16 matrix ([N, K/2] codes, every nibble value; [N, K/G] bf16 scales) converted
// by the layer's own w4a16_gemm_layout. `o` holds what reference() needs: B's values
// bf16(code * scale) (the convert-and-scale mainloop rounds the product once, as __hmul does),
// one block over K, scales 1.
struct W4A16Operands {
  Operands o;
  std::vector<uint8_t> codes;    // [G, N, K/2], quant.h's order (not yet reordered)
  std::vector<uint16_t> scales;  // [G, K/G, N]
};

W4A16Operands make_w4a16_operands(int64_t n, int64_t k, int group, int groups, int64_t rows) {
  std::mt19937_64 rng(4321 + static_cast<uint64_t>(group));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), pos(0.5f, 2.0f);
  W4A16Operands w;
  Operands& o = w.o;
  o.n = n, o.k = k, o.rows = rows, o.groups = groups, o.k_block = k;
  o.a.resize(static_cast<size_t>(rows * k) * 2);
  o.a_val.resize(static_cast<size_t>(rows * k));
  for (size_t i = 0; i < o.a_val.size(); ++i) {
    const uint16_t b16 = float_to_bf16(unit(rng));
    std::memcpy(&o.a[2 * i], &b16, 2);
    o.a_val[i] = bf16_to_float(b16);
  }
  o.a_scale.assign(static_cast<size_t>(rows), 1.0);
  o.b_scale.assign(static_cast<size_t>(groups * n), 1.0);
  o.b_val.resize(static_cast<size_t>(groups * n * k));
  for (int g = 0; g < groups; ++g) {
    QuantizedMatrix m;
    m.method = QuantMethod::kInt4W4A16;
    m.group_size = group;
    m.rows = n, m.cols = k;
    m.codes.resize(static_cast<size_t>(n * k / 2));
    m.scales.resize(static_cast<size_t>(n * (k / group)) * 2);
    for (auto& b : m.codes) b = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < m.scales.size() / 2; ++i) {
      const uint16_t s16 = float_to_bf16(pos(rng) / 8.0f * (rng() & 1 ? 1.0f : -1.0f));
      std::memcpy(&m.scales[2 * i], &s16, 2);
    }
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c) {
        const uint8_t byte = m.codes[static_cast<size_t>((r * k + c) / 2)];
        uint16_t s16;
        std::memcpy(&s16, &m.scales[2 * static_cast<size_t>(r * (k / group) + c / group)], 2);
        const float v =
            static_cast<float>(int4_to_int(c % 2 ? byte >> 4 : byte & 15)) * bf16_to_float(s16);
        o.b_val[static_cast<size_t>((g * n + r) * k + c)] = bf16_to_float(float_to_bf16(v));
      }
    const GemmWeightHost h = w4a16_gemm_layout(m, n, k);
    w.codes.insert(w.codes.end(), h.codes.begin(), h.codes.end());
    w.scales.insert(w.scales.end(), h.group_scales.begin(), h.group_scales.end());
  }
  return w;
}

// The codes on the device, each expert's reordered as the layer loads them.
DeviceArray<uint8_t> w4a16_device_codes(const W4A16Operands& w) {
  DeviceArray<uint8_t> d(w.codes);
  const int64_t n = w.o.n, k = w.o.k;
  for (int g = 0; g < w.o.groups; ++g)
    w4a16_reorder_codes(d.get() + static_cast<size_t>(g * n * k / 2), n, k);
  return d;
}

// The runs of the int4 GEMM's tests: the default (the 128- and 256-token tiles in pairs of
// weight tiles) and every tile alone (SERVEKIT_GEMM_W4A16_CLUSTER=1), each by its rows_hint over
// 5 groups of a 318-row capacity: 0 (the capacity, 63 rows per group, the 128-token tile), 200
// (40, the 64-token one), 2000 (400, the 256-token one; w4a16_tile_n).
struct W4A16Run {
  const GroupedGemm* gemm;
  int64_t hint;
  const char* tile;
};
struct W4A16Gemms {
  std::unique_ptr<GroupedGemm> pairs, single;
  std::vector<W4A16Run> runs() const {
    return {{pairs.get(), 0, "128x128x64 swap-AB cooperative cluster 2x1"},
            {pairs.get(), 200, "128x64x64 swap-AB cooperative cluster 1x1"},
            {pairs.get(), 2000, "128x256x64 swap-AB cooperative cluster 2x1"},
            {single.get(), 0, "128x128x64 swap-AB cooperative cluster 1x1"},
            {single.get(), 2000, "128x256x64 swap-AB cooperative cluster 1x1"}};
  }
};
W4A16Gemms make_w4a16_gemms(const GroupedGemmShape& shape) {
  W4A16Gemms g;
  g.pairs = make_grouped_gemm_w4a16(shape, 0);
  const testing::ScopedEnv single("SERVEKIT_GEMM_W4A16_CLUSTER", "1");
  g.single = make_grouped_gemm_w4a16(shape, 0);
  return g;
}

// make_grouped_gemm_w4a16 with one bf16 scale per `group` K elements against bf16 rows, in the
// five group layouts of run_case (empty groups, 300 rows over several token tiles, all groups
// empty), on all three tiles, the two wider ones also in clusters of two weight tiles (N = 2896's
// odd 23 weight tiles leave the last cluster half outside the matrix). The reference takes
// exactly the kernel's weights (make_w4a16_operands): what remains is fp32 accumulation and the
// bf16 rounding of D, bf16's tolerance (3e-3 relative L2, 1/256 per element; a wrong nibble
// order, scale group or scale transpose is off by O(rms)).
void run_w4a16_case(int64_t n, int64_t k, int group) {
  SERVEKIT_REQUIRE_GPU();
  SCOPED_TRACE("w4a16 n=" + std::to_string(n) + " k=" + std::to_string(k) + " group " +
               std::to_string(group));
  const int groups = kLayoutGroups;
  const int64_t rows = kLayoutRows;
  const W4A16Operands w = make_w4a16_operands(n, k, group, groups, rows);
  GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, rows};
  shape.weight_group = group;
  const W4A16Gemms gemms = make_w4a16_gemms(shape);
  EXPECT_FALSE(gemms.pairs->fuses_activation(0));
  DeviceArray<uint8_t> d_a(w.o.a), d_b = w4a16_device_codes(w);
  DeviceArray<uint16_t> d_s(w.scales);
  DeviceArray<uint16_t> d_d(static_cast<size_t>((rows + kGuardRows) * n));
  for (const W4A16Run& run : gemms.runs())
    for (const auto& sizes : kGroupLayouts) {
      SCOPED_TRACE(std::string(run.tile) + ", rows_hint " + std::to_string(run.hint));
      EXPECT_EQ(run.gemm->tile_name(run.hint), std::string(run.tile) + " int4 weights");
      std::vector<int32_t> offsets{0};
      for (int m : sizes) offsets.push_back(offsets.back() + m);
      DeviceArray<int32_t> d_off(offsets);
      d_d.poison();
      GroupedGemmOperands ops;
      ops.group_offsets = d_off.get();
      ops.a = d_a.get();
      ops.b = d_b.get();
      ops.b_group_scale = d_s.get();
      ops.d = d_d.get();
      ops.rows_hint = run.hint;
      run.gemm->run(ops, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_d_matches(d_d.download(), reference(GemmOperand::kBF16, w.o, sizes), n,
                       tolerance(GemmOperand::kBF16));
    }
}

// qwen3-235b's GEMM2 shape at group 128 (N = 4096 whole tiles), and N = 2896 (an 80-row last
// weight tile) with K = 2880 at group 64 (45 groups, odd).
TEST(GroupedGemmCuda, W4A16) {
  run_w4a16_case(4096, 1536, 128);
  run_w4a16_case(2896, 2880, 64);
}

// GEMM1's activation in the int4 GEMM's epilogue (W13 in 8-row gate/up blocks) against the same
// GEMM into D followed by the activation pass on the interleaved D: the same bits, and no D
// written, on every tile and cluster of run_w4a16_case, the three gated activations, with and
// without a bias, in the five group layouts. I = 1472: N = 2944 is 23 weight tiles of 128 rows,
// so the last pair has a tile past N, which must write nothing; K = 2880 at group 64.
TEST(GroupedGemmCuda, W4A16FusedActivation) {
  SERVEKIT_REQUIRE_GPU();
  const int groups = kLayoutGroups, group = 64;
  const int64_t rows = kLayoutRows, inter = 1472, n = 2 * inter, k = 2880;
  const W4A16Operands w = make_w4a16_operands(n, k, group, groups, rows);
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<float> unit(-0.5f, 0.5f);
  std::vector<float> bias(static_cast<size_t>(groups * n));
  for (auto& b : bias) b = unit(rng);
  DeviceArray<uint8_t> d_a(w.o.a), d_b = w4a16_device_codes(w);
  DeviceArray<uint16_t> d_s(w.scales);
  DeviceArray<float> d_bias(bias);
  DeviceArray<uint16_t> d_h(static_cast<size_t>(rows * n));
  DeviceArray<uint8_t> out_pass(static_cast<size_t>((rows + kGuardRows) * inter) * 2);
  DeviceArray<uint8_t> out_fused(static_cast<size_t>((rows + kGuardRows) * inter) * 2);
  for (Activation act : {Activation::kSwiGLU, Activation::kGeGLU, Activation::kSwiGLUOAI}) {
    GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, rows};
    shape.weight_group = group;
    shape.act = {true, act, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
    const W4A16Gemms gemms = make_w4a16_gemms(shape);
    for (const W4A16Run& run : gemms.runs()) {
      ASSERT_TRUE(run.gemm->fuses_activation(run.hint));
      for (bool with_bias : {false, true})
        for (const auto& sizes : kGroupLayouts) {
          SCOPED_TRACE(std::string(run.tile) + ", rows_hint " + std::to_string(run.hint) +
                       ", activation " + std::to_string(static_cast<int>(act)) +
                       (with_bias ? ", bias" : "") + ", first group " + std::to_string(sizes[0]));
          const DeviceGroups dg = device_groups(sizes, rows);
          GroupedGemmOperands ops;
          ops.group_offsets = dg.offsets.get();
          ops.a = d_a.get();
          ops.b = d_b.get();
          ops.b_group_scale = d_s.get();
          ops.rows_hint = run.hint;
          const float* b13 = with_bias ? d_bias.get() : nullptr;
          // The separate pass.
          out_pass.poison();
          ops.d = d_h.get();
          run.gemm->run(ops, nullptr);
          const ActBuffers ab{out_pass.get(), nullptr, nullptr, nullptr};
          launch_activation_quantize(ActFormat::kBF16, act, d_h.get(), b13, inter, dg.plan(), rows,
                                     ab, nullptr, false, static_cast<int>(kW4A16Interleave));
          // The fused epilogue.
          out_fused.poison();
          d_h.poison();
          ops.act_out = out_fused.get();
          ops.act_bias = b13;
          run.gemm->run(ops, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          expect_fused_equals_pass(d_h, out_pass, out_fused, dg.total, inter, 2);
        }
    }
  }
}

TEST(GroupedGemmCuda, W4A16RejectsWhatItCannotRun) {
  SERVEKIT_REQUIRE_GPU();
  auto shape = [](int64_t n, int64_t k, int group) {
    GroupedGemmShape s{GemmOperand::kBF16, 4, n, k, 64};
    s.weight_group = group;
    return s;
  };
  EXPECT_NO_THROW(make_grouped_gemm_w4a16(shape(3712, 2944, 128), 0));
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3712, 2944, 32), 0), Error);   // group 32
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3712, 2880, 128), 0), Error);  // K % 128
  EXPECT_THROW(make_grouped_gemm_w4a16(shape(3720, 2944, 128), 0), Error);  // N % 16
  GroupedGemmShape fused = shape(3712, 2944, 128);
  fused.act = {true, Activation::kSwiGLU, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
  EXPECT_NO_THROW(make_grouped_gemm_w4a16(fused, 0));
  fused.act.interleave_rows = 128;  // the bf16 tiles' interleave
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  fused.act.interleave_rows = static_cast<int>(kW4A16Interleave);
  fused.act.format = ActFormat::kFP8Block128AsBF16;
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  fused.act.format = ActFormat::kBF16;
  fused.act.activation = Activation::kReLU2;  // not gated
  EXPECT_THROW(make_grouped_gemm_w4a16(fused, 0), Error);
  GroupedGemmShape fused_odd = shape(3648, 2944, 128);  // N = 2I with I = 1824, not % 64
  fused_odd.act = {true, Activation::kSwiGLU, ActFormat::kBF16, static_cast<int>(kW4A16Interleave)};
  EXPECT_THROW(make_grouped_gemm_w4a16(fused_odd, 0), Error);
  // act_out on a runner built without shape.act.
  {
    auto plain = make_grouped_gemm_w4a16(shape(3712, 2944, 128), 0);
    GroupedGemmOperands ops;
    int32_t dummy = 0;
    ops.group_offsets = &dummy;
    ops.a = ops.b = ops.b_group_scale = ops.d = ops.act_out = &dummy;
    EXPECT_THROW(plain->run(ops, nullptr), Error);
  }
  GroupedGemmShape fp8 = shape(3712, 2944, 128);
  fp8.operand = GemmOperand::kFP8Block128;
  EXPECT_THROW(make_grouped_gemm_w4a16(fp8, 0), Error);
}

// SERVEKIT_GEMM_W4A16_TILE forces one tile for every run; a bad value is refused by name.
TEST(GroupedGemmCuda, W4A16TileSwitch) {
  SERVEKIT_REQUIRE_GPU();
  GroupedGemmShape s{GemmOperand::kBF16, 4, 3072, 4096, 4096};
  s.weight_group = 128;
  const char* name = "SERVEKIT_GEMM_W4A16_TILE";
  for (const char* v : {"64", "128", "256"}) {
    const testing::ScopedEnv tile(name, v);
    auto gemm = make_grouped_gemm_w4a16(s, 0);
    for (int64_t hint : {int64_t{8}, int64_t{400}, int64_t{4000}})
      EXPECT_EQ(gemm->tile_name(hint).rfind("128x" + std::string(v) + "x64 ", 0), 0u)
          << v << " rows_hint " << hint << ": " << gemm->tile_name(hint);
  }
  {
    const testing::ScopedEnv tile(name, "auto");
    EXPECT_EQ(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).rfind("128x256x64 ", 0), 0u);
    EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).find("cluster 2x1"),
              std::string::npos);
    EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(8).find("cluster 1x1"), std::string::npos);
    {
      const testing::ScopedEnv cluster("SERVEKIT_GEMM_W4A16_CLUSTER", "1");
      EXPECT_NE(make_grouped_gemm_w4a16(s, 0)->tile_name(4000).find("cluster 1x1"),
                std::string::npos);
    }
    const testing::ScopedEnv cluster("SERVEKIT_GEMM_W4A16_CLUSTER", "4");
    EXPECT_THROW(make_grouped_gemm_w4a16(s, 0), Error);
  }
  const testing::ScopedEnv tile(name, "512");
  try {
    make_grouped_gemm_w4a16(s, 0);
    ADD_FAILURE() << "a bad tile was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

// Host only: the tile each routed group's expected rows gets, and the switch's values.
TEST(GroupedGemmW4A16Layout, TilePick) {
  EXPECT_EQ(w4a16_tile_n(1), 64);
  EXPECT_EQ(w4a16_tile_n(kW4A16NarrowTileMaxRows), 64);
  EXPECT_EQ(w4a16_tile_n(kW4A16NarrowTileMaxRows + 1), 128);
  EXPECT_EQ(w4a16_tile_n(kW4A16MidTileMaxRows), 128);
  EXPECT_EQ(w4a16_tile_n(kW4A16MidTileMaxRows + 1), 256);
  EXPECT_EQ(w4a16_tile_n(int64_t{1} << 40), 256);
  EXPECT_EQ(parse_w4a16_tile(""), 0);
  EXPECT_EQ(parse_w4a16_tile("auto"), 0);
  EXPECT_EQ(parse_w4a16_tile("64"), 64);
  EXPECT_EQ(parse_w4a16_tile("128"), 128);
  EXPECT_EQ(parse_w4a16_tile("256"), 256);
  EXPECT_FALSE(parse_w4a16_tile("32").has_value());
  EXPECT_FALSE(parse_w4a16_tile("0").has_value());
  EXPECT_FALSE(parse_w4a16_tile("Auto").has_value());
  EXPECT_EQ(parse_w4a16_cluster(""), kW4A16ClusterDefault);
  EXPECT_EQ(kW4A16ClusterDefault, 2);
  EXPECT_EQ(parse_w4a16_cluster("1"), 1);
  EXPECT_EQ(parse_w4a16_cluster("2"), 2);
  EXPECT_FALSE(parse_w4a16_cluster("4").has_value());
  EXPECT_FALSE(parse_w4a16_cluster("auto").has_value());
}

// Host only (runs without a GPU): the scales of each row's K groups become column r of a
// [K/G, N] matrix, the codes stay as quant.h packs them, and malformed matrices are refused.
TEST(GroupedGemmW4A16Layout, TransposesTheScalesAndKeepsTheCodes) {
  QuantizedMatrix m;
  m.method = QuantMethod::kInt4W4A16;
  m.group_size = 64;
  m.rows = 3, m.cols = 192;  // 3 groups per row
  m.codes.resize(3 * 96);
  for (size_t i = 0; i < m.codes.size(); ++i) m.codes[i] = static_cast<uint8_t>(i * 7);
  m.scales.resize(3 * 3 * 2);
  for (size_t i = 0; i < m.scales.size(); ++i) m.scales[i] = static_cast<uint8_t>(i);
  const GemmWeightHost w = w4a16_gemm_layout(m, 3, 192);
  EXPECT_EQ(w.codes, m.codes);
  ASSERT_EQ(w.group_scales.size(), 9u);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 3; ++j) {
      uint16_t want;
      std::memcpy(&want, &m.scales[2 * (r * 3 + j)], 2);
      EXPECT_EQ(w.group_scales[j * 3 + r], want) << "row " << r << " group " << j;
    }
  EXPECT_THROW(w4a16_gemm_layout(m, 3, 128), Error);  // wrong shape
  QuantizedMatrix short_scales = m;
  short_scales.scales.pop_back();
  EXPECT_THROW(w4a16_gemm_layout(short_scales, 3, 192), Error);
  QuantizedMatrix not_int4 = m;
  not_int4.method = QuantMethod::kMXFP4W4A16;
  EXPECT_THROW(w4a16_gemm_layout(not_int4, 3, 192), Error);
}

// Host only: interleave_w4a16_w13 puts logical W13 row interleaved_w13_row(p, I, 8) at physical
// row p -- 8 gate rows, then the same 8 up rows -- with each row's codes whole and its column of
// the [K/G, 2I] scales moved with it; a layout it cannot build is refused.
TEST(GroupedGemmW4A16Layout, InterleavesTheW13RowsWithTheirScales) {
  const int64_t inter = 16, rows = 2 * inter, cols = 128, groups = 2;  // group 64
  GemmWeightHost w;
  w.codes.resize(static_cast<size_t>(rows * cols / 2));
  for (size_t i = 0; i < w.codes.size(); ++i)  // row r's bytes all r, its last byte r + 100
    w.codes[i] = static_cast<uint8_t>(i / (cols / 2) + (i % (cols / 2) == cols / 2 - 1 ? 100 : 0));
  w.group_scales.resize(static_cast<size_t>(groups * rows));
  for (size_t i = 0; i < w.group_scales.size(); ++i)  // group j of row r: 1000 j + r
    w.group_scales[i] = static_cast<uint16_t>(1000 * (i / rows) + i % rows);
  GemmWeightHost v = w;
  interleave_w4a16_w13(v, inter, cols, kW4A16Interleave);
  // Physical rows 0-7 gate 0-7, 8-15 up 0-7 (logical 16-23), 16-23 gate 8-15, 24-31 up 8-15.
  const int64_t want[rows] = {0, 1, 2,  3,  4,  5,  6,  7,  16, 17, 18, 19, 20, 21, 22, 23,
                              8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};
  for (int64_t p = 0; p < rows; ++p) {
    EXPECT_EQ(interleaved_w13_row(p, inter, kW4A16Interleave), want[p]) << "row " << p;
    for (int64_t b = 0; b < cols / 2; ++b)
      ASSERT_EQ(v.codes[static_cast<size_t>(p * cols / 2 + b)],
                w.codes[static_cast<size_t>(want[p] * cols / 2 + b)])
          << "row " << p << " byte " << b;
    for (int64_t j = 0; j < groups; ++j)
      EXPECT_EQ(v.group_scales[static_cast<size_t>(j * rows + p)], 1000 * j + want[p])
          << "row " << p << " group " << j;
  }
  GemmWeightHost bad = w;
  EXPECT_THROW(interleave_w4a16_w13(bad, 12, cols, kW4A16Interleave), Error);    // I % 8
  EXPECT_THROW(interleave_w4a16_w13(bad, inter, 256, kW4A16Interleave), Error);  // code bytes
  bad.group_scales.pop_back();
  EXPECT_THROW(interleave_w4a16_w13(bad, inter, cols, kW4A16Interleave), Error);
}

// Host only: the shapes make_grouped_gemm_w4a16 takes, and the reason for one it does not.
TEST(GroupedGemmW4A16Layout, SupportedShapes) {
  EXPECT_TRUE(w4a16_gemm_supported(3072, 4096, 128));  // qwen3-235b GEMM1
  EXPECT_TRUE(w4a16_gemm_supported(7168, 2048, 64));
  EXPECT_TRUE(w4a16_gemm_supported(2896, 2880, 64));
  std::string why;
  EXPECT_FALSE(w4a16_gemm_supported(3072, 4096, 32, &why));
  EXPECT_NE(why.find("not 64 or 128"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(2880, 2880, 128, &why));  // K % 128
  EXPECT_NE(why.find("multiple of the weight group"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(2888, 2944, 128, &why));  // N % 16
  EXPECT_NE(why.find("multiple of 16"), std::string::npos) << why;
  EXPECT_FALSE(w4a16_gemm_supported(0, 2944, 128));
  EXPECT_FALSE(w4a16_gemm_supported(16, int64_t{1} << 31, 128));
  EXPECT_FALSE(w4a16_gemm_supported(65536, 32768, 128));  // n * k = 2^31
  EXPECT_TRUE(w4a16_gemm_supported(65536, 32640, 128));
  EXPECT_TRUE(w4a16_gemm_supported(16, 128, 128, &why));
  EXPECT_TRUE(why.empty());
}

}  // namespace
}  // namespace servekit::cuda
