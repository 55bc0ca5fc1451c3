// Correctness of one benchmark run: the fp64 reference (cpu/moe_reference.h) of a sample of the
// batch's tokens, and the relative L2 error of a device output against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "servekit/moe.h"

namespace servekit::bench {

// min(T, n) token indices spread evenly over [0, T), first and last included.
inline std::vector<int64_t> sample_tokens(int64_t tokens, int n) {
  std::vector<int64_t> rows;
  if (tokens <= n) {
    for (int64_t t = 0; t < tokens; ++t) rows.push_back(t);
    return rows;
  }
  if (n <= 1) return {0};
  // j * (T - 1) / (n - 1) is strictly increasing in j when T > n, so the rows are distinct.
  for (int j = 0; j < n; ++j) rows.push_back(j * (tokens - 1) / (n - 1));
  return rows;
}

struct RefCheck {
  std::vector<int64_t> rows;  // checked token indices
  std::vector<double> ref;    // [rows.size(), H] reference outputs
  std::string how;            // what was checked, for the result file
  double tolerance = 0;       // moe_tolerance of the format
  double gate = 0;            // a row fails when rel_l2 > gate (tolerance, or 4x for "approx")

  // rel_l2 of out [T, H] (bf16 bits, the full device output) on the checked rows.
  double rel_l2(const std::vector<uint16_t>& out, int64_t hidden) const;
};

// The reference for one batch: hidden [T, H] bf16 bits, logits [T, E] f32, bias [E] or empty.
// Routing of a token depends on that token alone, so a sample of check_tokens tokens is exact
// and is computed in chunks on `threads` threads. fp8_per_tensor is the exception: its
// activation scales are the amax of the whole batch (quant.h), so up to fp8_full_max tokens the
// whole batch is the reference input (one call), and beyond it the sample is an approximation
// (the sample's scales differ from the batch's): such rows fail only beyond 4x the tolerance.
RefCheck reference_check(const MoELayer& layer, const std::vector<uint16_t>& hidden,
                         const std::vector<float>& logits, const std::vector<float>& bias,
                         int64_t tokens, int check_tokens, int64_t fp8_full_max, int threads);

}  // namespace servekit::bench
