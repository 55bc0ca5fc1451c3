// choose_moe_path: the static / dynamic cutover as data (src/tune/moe_path.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <tuple>

#include "tune/moe_path.h"

namespace servekit::tune {
namespace {

// Sets SERVEKIT_MOE_CUTOVER_ROWS for one scope and restores the previous state.
class CutoverEnv {
 public:
  explicit CutoverEnv(const char* value) {
    if (const char* old = std::getenv(kCutoverEnv)) old_ = old, had_ = true;
    if (value) {
      setenv(kCutoverEnv, value, 1);
    } else {
      unsetenv(kCutoverEnv);
    }
  }
  ~CutoverEnv() {
    if (had_) {
      setenv(kCutoverEnv, old_.c_str(), 1);
    } else {
      unsetenv(kCutoverEnv);
    }
  }

 private:
  std::string old_;
  bool had_ = false;
};

MoEPathDesc deepseek(int64_t tokens) {
  return {256, 8, 7168, 2048, {QuantMethod::kFP8Block128, 128}, tokens};
}

TEST(MoEPath, TableCutoverSplitsTheTokens) {
  CutoverEnv env(nullptr);
  // deepseek-v3 fp8_block128 (measured): 32 rows = 4 tokens at top-8.
  EXPECT_EQ(moe_cutover_rows(deepseek(1)), 32);
  EXPECT_EQ(choose_moe_path(deepseek(1)), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path(deepseek(4)), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path(deepseek(5)), MoEPath::kDynamic);
  // Measured in the eighth pass: deepseek-v3 bf16 and kimi-k2 fp8_block128 16 rows (2 tokens at
  // top-8), mixtral-8x7b 16 rows (8 tokens at top-2).
  const MoEPathDesc ds_bf16{256, 8, 7168, 2048, {QuantMethod::kBF16, 128}, 2};
  EXPECT_EQ(choose_moe_path(ds_bf16), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({256, 8, 7168, 2048, {QuantMethod::kBF16, 128}, 3}), MoEPath::kDynamic);
  const MoEPathDesc kimi_fp8{384, 8, 7168, 2048, {QuantMethod::kFP8Block128, 128}, 2};
  EXPECT_EQ(choose_moe_path(kimi_fp8), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({384, 8, 7168, 2048, {QuantMethod::kFP8Block128, 128}, 3}),
            MoEPath::kDynamic);
  const MoEPathDesc mixtral{8, 2, 4096, 14336, {QuantMethod::kBF16, 128}, 8};
  EXPECT_EQ(choose_moe_path(mixtral), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({8, 2, 4096, 14336, {QuantMethod::kBF16, 128}, 9}), MoEPath::kDynamic);
  // qwen3-30b-a3b bf16 (measured): 128 rows = 16 tokens at top-8.
  const MoEPathDesc q30{128, 8, 2048, 768, {QuantMethod::kBF16, 128}, 16};
  EXPECT_EQ(choose_moe_path(q30), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({128, 8, 2048, 768, {QuantMethod::kBF16, 128}, 17}), MoEPath::kDynamic);
  // The 4-bit formats (H100): gpt-oss-120b mxfp4 2048 rows = 512 tokens at top-4 (session 44);
  // qwen3-235b int4 1024 rows = 128 tokens at top-8 (session 45) and kimi-k2 int4 2048 rows = 256
  // tokens (session 46), both on the dynamic path's int4 GEMM.
  const MoEPathDesc oss{128, 4, 2880, 2880, {QuantMethod::kMXFP4W4A16, 128}, 512};
  EXPECT_EQ(choose_moe_path(oss), MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({128, 4, 2880, 2880, {QuantMethod::kMXFP4W4A16, 128}, 513}),
            MoEPath::kDynamic);
  EXPECT_EQ(choose_moe_path({128, 8, 4096, 1536, {QuantMethod::kInt4W4A16, 128}, 128}),
            MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({128, 8, 4096, 1536, {QuantMethod::kInt4W4A16, 128}, 129}),
            MoEPath::kDynamic);
  EXPECT_EQ(choose_moe_path({384, 8, 7168, 2048, {QuantMethod::kInt4W4A16, 128}, 256}),
            MoEPath::kStatic);
  EXPECT_EQ(choose_moe_path({384, 8, 7168, 2048, {QuantMethod::kInt4W4A16, 128}, 257}),
            MoEPath::kDynamic);
}

TEST(MoEPath, UnknownShapeUsesTheDefault) {
  CutoverEnv env(nullptr);
  const MoEPathDesc odd{257, 6, 2880, 1856, {QuantMethod::kBF16, 128}, 1};
  EXPECT_EQ(moe_cutover_rows(odd), kDefaultCutoverRows);
  EXPECT_EQ(choose_moe_path({257, 6, 2880, 1856, {QuantMethod::kBF16, 128}, 42}),
            MoEPath::kStatic);  // 252 rows
  EXPECT_EQ(choose_moe_path({257, 6, 2880, 1856, {QuantMethod::kBF16, 128}, 43}),
            MoEPath::kDynamic);  // 258 rows
}

TEST(MoEPath, EnvironmentOverrides) {
  {
    CutoverEnv env("0");
    EXPECT_EQ(choose_moe_path(deepseek(1)), MoEPath::kDynamic);
  }
  {
    CutoverEnv env("100000");
    EXPECT_EQ(moe_cutover_rows(deepseek(1)), 100000);
    EXPECT_EQ(choose_moe_path(deepseek(8192)), MoEPath::kStatic);
  }
  for (const char* bad : {"-1", "12x", "lots", "1e3", " 5", "99999999999999999999"}) {
    CutoverEnv env(bad);
    EXPECT_THROW(choose_moe_path(deepseek(1)), Error) << bad;
  }
}

TEST(MoEPath, UnsupportedLayersGoDynamic) {
  CutoverEnv env("100000");
  EXPECT_EQ(choose_moe_path({128, 4, 2880, 2880, {QuantMethod::kMXFP4W4A8, 128}, 1}),
            MoEPath::kDynamic);
  EXPECT_EQ(choose_moe_path({8, 2, 4000, 14336, {QuantMethod::kBF16, 128}, 1}),
            MoEPath::kDynamic);  // H % 64 != 0
  std::string why;
  EXPECT_FALSE(static_path_supports({QuantMethod::kBF16, 128}, 4096, 1000, &why));
  EXPECT_NE(why.find("intermediate_size=1000"), std::string::npos) << why;
  EXPECT_TRUE(static_path_supports({QuantMethod::kInt4W4A16, 32}, 2880, 1856));
}

TEST(MoEPath, RejectsBadCalls) {
  CutoverEnv env(nullptr);
  EXPECT_THROW(choose_moe_path(deepseek(0)), Error);
  MoEPathDesc d = deepseek(1);
  d.top_k = 0;
  EXPECT_THROW(choose_moe_path(d), Error);
}

TEST(MoEPath, TableEntriesAreUniqueAndLabelled) {
  std::set<std::tuple<int, int, int64_t, int64_t, int>> keys;
  for (const MoECutover& c : moe_cutover_table()) {
    EXPECT_TRUE(
        keys.insert({c.num_experts, c.top_k, c.hidden, c.intermediate, static_cast<int>(c.quant)})
            .second)
        << c.shape;
    EXPECT_GT(c.rows, 0) << c.shape;
    // An unmeasured entry must say so; a measured one must name its measurement.
    EXPECT_EQ(std::string(c.measurement) == "not yet measured", !c.measured) << c.shape;
  }
}

}  // namespace
}  // namespace servekit::tune
