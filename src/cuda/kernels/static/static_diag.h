// The report of SERVEKIT_DIAG_STATIC_TIMES (docs/static_moe.md): per-CTA global-timer stamps of
// the two static GEMMs summarised as text. Pure C++ (unit-tested on the CPU); the stamps come
// from the device (static_moe.cu).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/kernels/static/static_params.h"

namespace servekit::cuda::static_moe {

// slots: [2 GEMMs][max_grid][kStaticDiagSlots] as the kernels wrote them for a launch of grid
// CTAs (grid <= max_grid), optionally followed by [kPrefixKernels][kStaticDiagSlots], the
// prefix kernels' CTA 0 stamps (static_params.h; a region whose entry stamp is 0 did not run).
// Times are in us from GEMM1's earliest dependency release. One line per prefix kernel that ran
// (its stamps, negative: before the release), one per (GEMM, stamp) with the quantiles over
// CTAs, then with per_cta one line per CTA (SM id, units in its range, the four stamps). Empty
// when grid is out of range or slots too short for the GEMMs' part.
inline std::string static_diag_format(const std::vector<uint64_t>& slots, int max_grid, int grid,
                                      bool per_cta) {
  constexpr int ns = kStaticDiagStamps;
  if (grid <= 0 || grid > max_grid ||
      slots.size() < 2 * static_cast<size_t>(max_grid) * kStaticDiagSlots)
    return "";
  auto at = [&](int gemm, int cta, int s) {
    return slots[(static_cast<size_t>(gemm) * max_grid + cta) * kStaticDiagSlots + s];
  };
  uint64_t zero = ~0ull;
  for (int c = 0; c < grid; ++c) zero = std::min(zero, at(0, c, 1));
  auto us = [&](int gemm, int cta, int s) {
    return (static_cast<double>(at(gemm, cta, s)) - static_cast<double>(zero)) * 1e-3;
  };
  std::string r;
  char line[256];
  const size_t prefix0 = 2 * static_cast<size_t>(max_grid) * kStaticDiagSlots;
  if (slots.size() >= prefix0 + kPrefixKernels * kStaticDiagSlots) {
    const char* kernel_names[kPrefixKernels] = {"route+plan", "planner"};
    const char* stamp_names[kStaticPrefixStamps] = {"entry", "wait done", "routed", "planned",
                                                    "tasks done"};
    for (int k = 0; k < kPrefixKernels; ++k) {
      const uint64_t* st = slots.data() + prefix0 + static_cast<size_t>(k) * kStaticDiagSlots;
      if (st[0] == 0) continue;
      std::snprintf(line, sizeof(line),
                    "diag-times %-10s sm %3d us from gemm1 release:", kernel_names[k],
                    static_cast<int>(st[kStaticPrefixStamps]));
      r += line;
      for (int i = 0; i < kStaticPrefixStamps; ++i) {
        if (st[i] == 0) continue;  // a stamp this kernel does not write
        std::snprintf(line, sizeof(line), " %s %.2f", stamp_names[i],
                      (static_cast<double>(st[i]) - static_cast<double>(zero)) * 1e-3);
        r += line;
      }
      r += "\n";
    }
  }
  const char* names[ns] = {"entry", "wait done", "k-loops done", "exit"};
  for (int gemm = 0; gemm < 2; ++gemm)
    for (int s = 0; s < ns; ++s) {
      std::vector<double> v(static_cast<size_t>(grid));
      for (int c = 0; c < grid; ++c) v[static_cast<size_t>(c)] = us(gemm, c, s);
      std::sort(v.begin(), v.end());
      auto q = [&](int num) { return v[static_cast<size_t>(grid * num / 10)]; };
      std::snprintf(line, sizeof(line),
                    "diag-times gemm%d %-12s us from gemm1 release: min %8.2f p10 %8.2f p50 %8.2f "
                    "p90 %8.2f max %8.2f\n",
                    gemm + 1, names[s], v.front(), q(1), q(5), q(9), v.back());
      r += line;
    }
  if (per_cta)
    for (int gemm = 0; gemm < 2; ++gemm)
      for (int c = 0; c < grid; ++c) {
        std::snprintf(line, sizeof(line),
                      "diag-cta gemm%d cta %4d sm %3d units %3d us %8.2f %8.2f %8.2f %8.2f\n",
                      gemm + 1, c, static_cast<int>(at(gemm, c, ns)),
                      static_cast<int>(at(gemm, c, ns + 1)), us(gemm, c, 0), us(gemm, c, 1),
                      us(gemm, c, 2), us(gemm, c, 3));
        r += line;
      }
  return r;
}

}  // namespace servekit::cuda::static_moe
