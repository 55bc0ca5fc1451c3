// Correctness of one benchmark run: the fp64 reference (cpu/moe_reference.h) of a sample of the
// batch's tokens, and the relative L2 error of a device output against it. Header-only so the
// CPU unit test can include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cpu/moe_reference.h"
#include "servekit/formats.h"
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

// Gate of the approximate fp8_per_tensor check. With different scales the layer and the reference
// round each fp8 value independently: e4m3 keeps 3 mantissa bits, a rounding error of at most
// 2^-4 relative, rms 2^-4/sqrt(3) = 3.6%, so the two sides differ by sqrt(2) * 3.6% = 5.1% rms per
// quantized operand and about 7% after both (input and intermediate; measured 7.1% on `tiny`).
// Twice that catches a broken layer, not a subtle one: that is what the T <= 512 rows are for.
constexpr double kApproxGate = 0.15;

struct RefCheck {
  std::vector<int64_t> rows;  // checked token indices
  std::vector<double> ref;    // [rows.size(), H] reference outputs
  std::string how;            // what was checked, for the result file
  double tolerance = 0;       // moe_tolerance of the format
  double gate = 0;            // a row fails when rel_l2 > gate (tolerance, kApproxGate if approx)

  // rel_l2 of out [T, H] (bf16 bits, the full device output) on the checked rows.
  double rel_l2(const std::vector<uint16_t>& out, int64_t hidden) const;
};

// The reference for one batch: hidden [T, H] bf16 bits, logits [T, E] f32, bias [E] or empty.
// Routing of a token depends on that token alone, so a sample of check_tokens tokens is exact
// and is computed in chunks on `threads` threads (0 = all). fp8_per_tensor is the exception: its
// activation scales are the amax of the whole batch (quant.h), so up to fp8_full_max tokens the
// whole batch is the reference input (one call), and beyond it the sample is an approximation
// (the sample's scales differ from the batch's): such rows fail only beyond kApproxGate.
RefCheck reference_check(const MoELayer& layer, const std::vector<uint16_t>& hidden,
                         const std::vector<float>& logits, const std::vector<float>& bias,
                         int64_t tokens, int check_tokens, int64_t fp8_full_max, int threads);

inline double RefCheck::rel_l2(const std::vector<uint16_t>& out, int64_t hidden) const {
  std::vector<float> got(rows.size() * static_cast<size_t>(hidden));
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t h = 0; h < hidden; ++h)
      got[i * hidden + h] = bf16_to_float(out[rows[i] * hidden + h]);
  return relative_l2(got.data(), ref.data(), static_cast<int64_t>(got.size()));
}

inline RefCheck reference_check(const MoELayer& layer, const std::vector<uint16_t>& hidden,
                                const std::vector<float>& logits, const std::vector<float>& bias,
                                int64_t tokens, int check_tokens, int64_t fp8_full_max,
                                int threads) {
  const MoEConfig& cfg = layer.config();
  const int64_t H = cfg.experts.hidden_size, E = cfg.routing.num_experts;
  RefCheck c;
  c.tolerance = moe_tolerance(cfg.quant.method, cfg.exec.device.type);
  c.gate = c.tolerance;
  const bool per_tensor = cfg.quant.method == QuantMethod::kFP8PerTensor;
  if (per_tensor && tokens <= fp8_full_max) {
    c.rows = sample_tokens(tokens, static_cast<int>(tokens));
    c.how = "all tokens (fp8_per_tensor scales span the batch)";
    threads = 1;
  } else {
    c.rows = sample_tokens(tokens, check_tokens);
    c.how = std::to_string(c.rows.size()) + " of " + std::to_string(tokens) + " tokens";
    if (per_tensor) {
      c.how = "approx: " + c.how + " (fp8_per_tensor scales from the sample, not the batch)";
      c.gate = kApproxGate;
    }
  }
  const int64_t n = static_cast<int64_t>(c.rows.size());
  std::vector<float> x(static_cast<size_t>(n * H)), l(static_cast<size_t>(n * E));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < H; ++h) x[i * H + h] = bf16_to_float(hidden[c.rows[i] * H + h]);
    std::copy_n(logits.begin() + c.rows[i] * E, E, l.begin() + i * E);
  }
  c.ref.assign(static_cast<size_t>(n * H), 0.0);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int chunks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&](int j) {
    try {
      const int64_t a = n * j / chunks, b = n * (j + 1) / chunks;
      if (a == b) return;
      ReferenceInputs in;
      in.hidden = x.data() + a * H;
      in.tokens = b - a;
      in.logits = l.data() + a * E;
      in.bias = bias.empty() ? nullptr : bias.data();
      const std::vector<double> r = moe_reference(layer, in);
      std::copy(r.begin(), r.end(), c.ref.begin() + a * H);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < chunks; ++j) pool.emplace_back(work, j);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return c;
}

}  // namespace servekit::bench
