#include "bench_check.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "cpu/moe_reference.h"
#include "servekit/formats.h"

namespace servekit::bench {

double RefCheck::rel_l2(const std::vector<uint16_t>& out, int64_t hidden) const {
  std::vector<float> got(rows.size() * static_cast<size_t>(hidden));
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t h = 0; h < hidden; ++h)
      got[i * hidden + h] = bf16_to_float(out[rows[i] * hidden + h]);
  return relative_l2(got.data(), ref.data(), static_cast<int64_t>(got.size()));
}

RefCheck reference_check(const MoELayer& layer, const std::vector<uint16_t>& hidden,
                         const std::vector<float>& logits, const std::vector<float>& bias,
                         int64_t tokens, int check_tokens, int64_t fp8_full_max, int threads) {
  const MoEConfig& cfg = layer.config();
  const int64_t H = cfg.experts.hidden_size, E = cfg.routing.num_experts;
  RefCheck c;
  c.tolerance = moe_tolerance(cfg.quant.method);
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
      c.gate = 4 * c.tolerance;
    }
  }
  const int64_t n = static_cast<int64_t>(c.rows.size());
  std::vector<float> x(static_cast<size_t>(n * H)), l(static_cast<size_t>(n * E));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < H; ++h) x[i * H + h] = bf16_to_float(hidden[c.rows[i] * H + h]);
    std::copy_n(logits.begin() + c.rows[i] * E, E, l.begin() + i * E);
  }
  c.ref.assign(static_cast<size_t>(n * H), 0.0);
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
