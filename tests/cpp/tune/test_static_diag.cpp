// The text report of SERVEKIT_DIAG_STATIC_TIMES (static_diag.h) from hand-made stamps.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/kernels/static/static_diag.h"

namespace servekit::cuda::static_moe {
namespace {

constexpr int kMaxGrid = 4;

// Stamps in ns: GEMM g, CTA c, stamp s = base + 1000 * (10 g + s) + 100 c; SM 7 + c, c + 1 units.
std::vector<uint64_t> stamps(uint64_t base, int grid) {
  std::vector<uint64_t> t(2 * kMaxGrid * kStaticDiagSlots, 0);
  for (int g = 0; g < 2; ++g)
    for (int c = 0; c < grid; ++c) {
      uint64_t* slot = t.data() + (g * kMaxGrid + c) * kStaticDiagSlots;
      for (int s = 0; s < kStaticDiagStamps; ++s) slot[s] = base + 1000 * (10 * g + s) + 100 * c;
      slot[kStaticDiagStamps] = 7 + c;
      slot[kStaticDiagStamps + 1] = c + 1;
    }
  return t;
}

std::vector<std::string> lines(const std::string& r) {
  std::vector<std::string> out;
  size_t a = 0;
  for (size_t b; (b = r.find('\n', a)) != std::string::npos; a = b + 1)
    out.push_back(r.substr(a, b - a));
  return out;
}

TEST(StaticDiag, QuantilesFromGemm1sFirstRelease) {
  const int grid = 3;
  const std::vector<std::string> l =
      lines(static_diag_format(stamps(5'000'000, grid), kMaxGrid, grid, false));
  ASSERT_EQ(l.size(), 8u);  // 2 GEMMs x 4 stamps, no per-CTA lines
  for (int g = 0; g < 2; ++g)
    for (int s = 0; s < kStaticDiagStamps; ++s) {
      const std::string& line = l[static_cast<size_t>(4 * g + s)];
      EXPECT_EQ(line.rfind("diag-times gemm" + std::to_string(g + 1), 0), 0u) << line;
      double mn, p10, p50, p90, mx;
      ASSERT_EQ(std::sscanf(line.c_str() + line.find("min "),
                            "min %lf p10 %lf p50 %lf p90 %lf max %lf", &mn, &p10, &p50, &p90, &mx),
                5)
          << line;
      // Zero is GEMM1's stamp 1 of CTA 0: stamp s of GEMM g is 10 g + s - 1 us, CTAs 0.1 us apart.
      const double first = 10.0 * g + s - 1.0;
      EXPECT_DOUBLE_EQ(mn, first) << line;
      EXPECT_DOUBLE_EQ(p10, first) << line;         // index grid / 10 = 0
      EXPECT_NEAR(p50, first + 0.1, 1e-9) << line;  // index 1
      EXPECT_NEAR(p90, first + 0.2, 1e-9) << line;  // index 2
      EXPECT_NEAR(mx, first + 0.2, 1e-9) << line;
    }
}

TEST(StaticDiag, PerCtaLinesCarryTheSmAndUnits) {
  const int grid = 2;
  const std::vector<std::string> l =
      lines(static_diag_format(stamps(0, grid), kMaxGrid, grid, true));
  ASSERT_EQ(l.size(), 8u + 2 * grid);
  int gemm, cta, sm, units;
  double t[4];
  ASSERT_EQ(
      std::sscanf(l[8 + 1].c_str(), "diag-cta gemm%d cta %d sm %d units %d us %lf %lf %lf %lf",
                  &gemm, &cta, &sm, &units, &t[0], &t[1], &t[2], &t[3]),
      8)
      << l[9];
  EXPECT_EQ(gemm, 1);
  EXPECT_EQ(cta, 1);
  EXPECT_EQ(sm, 8);
  EXPECT_EQ(units, 2);
  EXPECT_NEAR(t[0], -1.0 + 0.1, 1e-9);
  EXPECT_NEAR(t[3], 2.0 + 0.1, 1e-9);
}

TEST(StaticDiag, NothingForAnOutOfRangeGridOrShortBuffer) {
  EXPECT_EQ(static_diag_format(stamps(0, 2), kMaxGrid, 0, false), "");
  EXPECT_EQ(static_diag_format(stamps(0, 2), kMaxGrid, kMaxGrid + 1, false), "");
  std::vector<uint64_t> short_buffer(10, 0);
  EXPECT_EQ(static_diag_format(short_buffer, kMaxGrid, 2, false), "");
}

}  // namespace
}  // namespace servekit::cuda::static_moe
