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

TEST(StaticDiag, PrefixKernelsThatRanComeFirstBeforeTheRelease) {
  const int grid = 2;
  const uint64_t base = 5'000'000;  // GEMM1's release (the zero) is base + 1000 ns
  std::vector<uint64_t> t = stamps(base, grid);
  t.resize(t.size() + kPrefixKernels * kStaticDiagSlots, 0);
  uint64_t* route_plan = t.data() + 2 * kMaxGrid * kStaticDiagSlots;
  // route + plan: entry 12 us before the release, then 0.5, 4, 6 and 7.5 us after its entry.
  const double at[kStaticPrefixStamps] = {-12.0, -11.5, -8.0, -6.0, -4.5};
  for (int i = 0; i < kStaticPrefixStamps; ++i)
    route_plan[i] = static_cast<uint64_t>(static_cast<double>(base + 1000) + 1000.0 * at[i]);
  route_plan[kStaticPrefixStamps] = 42;  // SM id
  // The planner region stays zero: it did not run, so no line.
  std::vector<std::string> l = lines(static_diag_format(t, kMaxGrid, grid, false));
  ASSERT_EQ(l.size(), 9u);
  EXPECT_EQ(l[0].rfind("diag-times route+plan sm  42", 0), 0u) << l[0];
  double v[kStaticPrefixStamps];
  ASSERT_EQ(std::sscanf(l[0].c_str() + l[0].find("entry"),
                        "entry %lf wait done %lf routed %lf planned %lf tasks done %lf", &v[0],
                        &v[1], &v[2], &v[3], &v[4]),
            kStaticPrefixStamps)
      << l[0];
  for (int i = 0; i < kStaticPrefixStamps; ++i) EXPECT_NEAR(v[i], at[i], 1e-9) << l[0];
  EXPECT_EQ(l[1].rfind("diag-times gemm1", 0), 0u) << l[1];

  // The planner writes entry, wait done and tasks done only: the others are left out.
  uint64_t* planner = route_plan + kStaticDiagSlots;
  planner[0] = base - 3000;
  planner[1] = base - 2000;
  planner[4] = base;
  planner[kStaticPrefixStamps] = 3;
  l = lines(static_diag_format(t, kMaxGrid, grid, false));
  ASSERT_EQ(l.size(), 10u);
  EXPECT_EQ(l[1],
            "diag-times planner    sm   3 us from gemm1 release: entry -4.00 wait done -3.00 "
            "tasks done -1.00")
      << l[1];
}

TEST(StaticDiag, NothingForAnOutOfRangeGridOrShortBuffer) {
  EXPECT_EQ(static_diag_format(stamps(0, 2), kMaxGrid, 0, false), "");
  EXPECT_EQ(static_diag_format(stamps(0, 2), kMaxGrid, kMaxGrid + 1, false), "");
  std::vector<uint64_t> short_buffer(10, 0);
  EXPECT_EQ(static_diag_format(short_buffer, kMaxGrid, 2, false), "");
}

}  // namespace
}  // namespace servekit::cuda::static_moe
