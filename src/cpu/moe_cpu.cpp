// The CPU backend of the MoE layer: fp32 compute on weights dequantized with quant.h, activation
// quantization simulated with fake_quantize_activations, multithreaded with std::thread.
//
// A forward runs in phases, each a parallel loop over independent tasks:
//   1. routing (route_cpu or the caller's ids) and a counting sort of the (token, k) pairs into
//      per-expert row ranges (routed local experts, then shared experts with every token);
//   2. the input fake-quantized per the format;
//   3. tasks (expert, 32 intermediate columns): dequantize those rows of W13 once, then for every
//      row of the expert h = x·W13ᵀ + b13 and the activation, into the intermediate buffer;
//   4. the intermediate fake-quantized (fp8_per_tensor: one scale over every row of every expert,
//      which is why phases 3 and 5 cannot be fused);
//   5. tasks (32 output columns): for each expert dequantize those rows of W2, y = a·W2ᵀ + b2
//      for its rows, then combine every token in the fixed order k = 0..K-1, shared experts,
//      in fp32, and round to bf16.
// Every output element is computed by the same code path whatever the thread count (tiles and
// chunks depend only on the shapes), so results are bitwise reproducible across num_threads.
// Each weight chunk is dequantized exactly once per forward, and never a whole matrix.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moe/backend.h"
#include "servekit/formats.h"

namespace servekit {
namespace {

constexpr int64_t kColumnChunk = 32;  // weight rows dequantized per task (bounded scratch)
constexpr int kRowTile = 4;           // activation rows sharing one pass over a weight row
constexpr int kLanes = 8;             // independent partial sums per dot product

// dot(x[i], w) for N rows at once. Every row uses the same lane split (lane l sums k = l mod
// kLanes, the tail goes to lane 0, lanes add in a fixed tree), so a value does not depend on N.
template <int N>
void dot_rows(const float* const* x, const float* w, int64_t n, float* out) {
  float acc[N][kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int i = 0; i < N; ++i)
      for (int l = 0; l < kLanes; ++l) acc[i][l] += x[i][k + l] * w[k + l];
  for (; k < n; ++k)
    for (int i = 0; i < N; ++i) acc[i][0] += x[i][k] * w[k];
  for (int i = 0; i < N; ++i) {
    const float* a = acc[i];
    out[i] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  }
}

// Calls f(rows[0..m), results) in tiles; results[i] = dot(x_of(rows[i]), w).
template <typename XOf, typename Emit>
void dot_tiles(int64_t m, XOf x_of, const float* w, int64_t n, Emit emit) {
  int64_t i = 0;
  const float* x[kRowTile];
  float r[kRowTile];
  for (; i + kRowTile <= m; i += kRowTile) {
    for (int j = 0; j < kRowTile; ++j) x[j] = x_of(i + j);
    dot_rows<kRowTile>(x, w, n, r);
    for (int j = 0; j < kRowTile; ++j) emit(i + j, r[j]);
  }
  for (; i < m; ++i) {
    x[0] = x_of(i);
    dot_rows<1>(x, w, n, r);
    emit(i, r[0]);
  }
}

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

float activate(Activation a, float g, float u) {
  switch (a) {
    case Activation::kSwiGLU:
      return g * sigmoid(g) * u;
    case Activation::kGeGLU:
      return 0.5f * g * (1.0f + std::erf(g * 0.70710678118654752f)) * u;
    case Activation::kSwiGLUOAI: {
      const float gc = std::min(g, kSwiGLUOAILimit);
      const float uc = std::clamp(u, -kSwiGLUOAILimit, kSwiGLUOAILimit);
      return (uc + 1.0f) * gc * sigmoid(kSwiGLUOAIAlpha * gc);
    }
    case Activation::kReLU2:  // NaN propagates (moe.h)
      return g > 0.0f ? g * g : (std::isnan(g) ? g : 0.0f);
  }
  return 0.0f;
}

// Scratch of one worker thread, sized at construction.
struct Scratch {
  std::vector<float> w;  // kColumnChunk (x2 for gated W13) dequantized weight rows
  std::vector<float> y;  // [max_rows, kColumnChunk] second-GEMM outputs of one column chunk
  std::vector<float> h;  // [max_rows_per_tile] gate values awaiting their up half
};

class CpuBackend final : public MoEBackend {
 public:
  explicit CpuBackend(const MoEConfig& cfg);
  void load_expert(int index, std::shared_ptr<const PreparedExpert> expert) override {
    experts_[index] = std::move(expert);
  }
  void forward(const MoEInputs& in, TensorView out, void* stream) override;

 private:
  // Runs f(task, worker) for task in [0, n) on up to num_threads_ threads; rethrows the first
  // exception. Thread creation is the one per-forward allocation left (std::thread).
  template <typename F>
  void parallel_for(int64_t n, F f);
  void route(const MoEInputs& in, int64_t T);
  void assign_rows(int64_t T);
  void quantize_input(const MoEInputs& in, int64_t T);
  void fake_quantize_rows(float* x, int64_t rows, int64_t cols);
  void first_gemm(int64_t task, Scratch& s);
  void second_gemm_and_combine(int64_t chunk, int64_t T, Scratch& s, uint16_t* out);

  MoEConfig cfg_;
  int E_, K_, L_, S_, offset_;
  int64_t H_, I_, max_tokens_, max_rows_;
  bool gated_;
  int num_threads_;
  std::vector<std::shared_ptr<const PreparedExpert>> experts_;  // L routed, then S shared

  // Workspace, sized once for max_num_tokens.
  std::vector<float> x_;            // [T, H] input after activation fake-quantization
  std::vector<float> logits_;       // [T, E] router logits as fp32
  std::vector<int32_t> ids_;        // [T, K]
  std::vector<float> weights_;      // [T, K]
  std::vector<int32_t> row_of_;     // [T, K] row of (t, k), -1 when not computed here
  std::vector<int32_t> row_token_;  // [rows] token of each row
  std::vector<int64_t> begin_;      // [L + S + 1] first row of each expert
  std::vector<int64_t> cursor_;     // [L + S]
  std::vector<float> act_;          // [rows, I] intermediate activations
  std::vector<Scratch> scratch_;    // one per worker
  std::vector<int64_t> tasks_;      // first-GEMM tasks: expert * chunks + chunk
  const int32_t* ids_in_ = nullptr;
  const float* weights_in_ = nullptr;
};

CpuBackend::CpuBackend(const MoEConfig& cfg)
    : cfg_(cfg),
      E_(cfg.routing.num_experts),
      K_(cfg.routing.top_k),
      L_(cfg.experts.local_num_experts),
      S_(cfg.experts.num_shared_experts),
      offset_(cfg.experts.local_expert_offset),
      H_(cfg.experts.hidden_size),
      I_(cfg.experts.intermediate_size),
      max_tokens_(cfg.exec.max_num_tokens),
      max_rows_(cfg.exec.max_num_tokens * (cfg.routing.top_k + cfg.experts.num_shared_experts)),
      gated_(activation_is_gated(cfg.activation)) {
  SERVEKIT_CHECK(max_rows_ <= INT32_MAX, "moe: exec.max_num_tokens=", max_tokens_,
                 " times (top_k + num_shared_experts) must fit in int32 rows");
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  num_threads_ = cfg.exec.num_threads > 0 ? cfg.exec.num_threads : static_cast<int>(hw);
  experts_.resize(static_cast<size_t>(L_ + S_));
  x_.resize(static_cast<size_t>(max_tokens_ * H_));
  if (cfg.routing.method != RoutingMethod::kPrecomputed)
    logits_.resize(static_cast<size_t>(max_tokens_ * E_));
  ids_.resize(static_cast<size_t>(max_tokens_ * K_));
  weights_.resize(ids_.size());
  row_of_.resize(ids_.size());
  row_token_.resize(static_cast<size_t>(max_rows_));
  begin_.resize(static_cast<size_t>(L_ + S_ + 1));
  cursor_.resize(static_cast<size_t>(L_ + S_));
  act_.resize(static_cast<size_t>(max_rows_ * I_));
  const int64_t chunks = (I_ + kColumnChunk - 1) / kColumnChunk;
  tasks_.reserve(static_cast<size_t>((L_ + S_) * chunks));
  scratch_.resize(static_cast<size_t>(num_threads_));
  const int64_t w_rows = kColumnChunk * (gated_ ? 2 : 1);
  for (Scratch& s : scratch_) {
    s.w.resize(static_cast<size_t>(std::max(w_rows * H_, kColumnChunk * I_)));
    s.y.resize(static_cast<size_t>(max_rows_ * kColumnChunk));
    s.h.resize(kRowTile);
  }
}

template <typename F>
void CpuBackend::parallel_for(int64_t n, F f) {
  const int workers = static_cast<int>(std::min<int64_t>(num_threads_, n));
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int worker) {
    try {
      for (int64_t i = next++; i < n; i = next++) f(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n;
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

void CpuBackend::route(const MoEInputs& in, int64_t T) {
  if (cfg_.routing.method == RoutingMethod::kPrecomputed) {
    ids_in_ = in.topk_ids.ptr<const int32_t>();
    weights_in_ = in.topk_weights.ptr<const float>();
    return;
  }
  const float* logits = in.router_logits.ptr<const float>();
  if (in.router_logits.dtype == DType::kBF16) {
    const auto* bits = in.router_logits.ptr<const uint16_t>();
    for (int64_t i = 0; i < T * E_; ++i) logits_[i] = bf16_to_float(bits[i]);
    logits = logits_.data();
  }
  const float* bias =
      in.correction_bias.defined() ? in.correction_bias.ptr<const float>() : nullptr;
  route_cpu(cfg_.routing, logits, bias, T, ids_.data(), weights_.data());
  ids_in_ = ids_.data();
  weights_in_ = weights_.data();
}

// Counting sort of the (t, k) pairs by local expert (stable: tokens ascending), shared experts
// after them with every token; rejects invalid ids and experts that were never loaded.
void CpuBackend::assign_rows(int64_t T) {
  std::fill(cursor_.begin(), cursor_.end(), 0);
  for (int64_t i = 0; i < T * K_; ++i) {
    const int32_t id = ids_in_[i];
    SERVEKIT_CHECK(id >= -1 && id < E_, "moe.forward: topk_ids[", i / K_, ", ", i % K_, "]=", id,
                   " must be -1 (no expert) or a global expert id in [0, ", E_, ")");
    const int64_t l = static_cast<int64_t>(id) - offset_;
    if (id >= 0 && l >= 0 && l < L_) {
      SERVEKIT_CHECK(experts_[l] != nullptr, "moe.forward: token ", i / K_, " is routed to expert ",
                     id, " (local ", l, ") which was never loaded (load_expert)");
      ++cursor_[l];
    }
  }
  for (int s = 0; s < S_; ++s) {
    SERVEKIT_CHECK(experts_[L_ + s] != nullptr, "moe.forward: shared expert ", s,
                   " was never loaded (load_shared_expert)");
    cursor_[L_ + s] = T;
  }
  begin_[0] = 0;
  for (int e = 0; e < L_ + S_; ++e) {
    begin_[e + 1] = begin_[e] + cursor_[e];
    cursor_[e] = begin_[e];
  }
  for (int64_t i = 0; i < T * K_; ++i) {
    const int64_t l = static_cast<int64_t>(ids_in_[i]) - offset_;
    if (ids_in_[i] < 0 || l < 0 || l >= L_) {
      row_of_[i] = -1;
      continue;
    }
    const int64_t r = cursor_[l]++;
    row_of_[i] = static_cast<int32_t>(r);
    row_token_[r] = static_cast<int32_t>(i / K_);
  }
  for (int s = 0; s < S_; ++s)
    for (int64_t t = 0; t < T; ++t) row_token_[begin_[L_ + s] + t] = static_cast<int32_t>(t);
}

// Per-row formats split over threads; fp8_per_tensor needs one amax over the whole buffer.
void CpuBackend::fake_quantize_rows(float* x, int64_t rows, int64_t cols) {
  const QuantMethod m = cfg_.quant.method;
  if (rows == 0) return;
  if (m == QuantMethod::kFP8PerTensor) {
    fake_quantize_activations(m, x, rows, cols);
    return;
  }
  constexpr int64_t kRowsPerTask = 16;
  parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, int) {
    const int64_t r0 = task * kRowsPerTask, r1 = std::min(rows, r0 + kRowsPerTask);
    fake_quantize_activations(m, x + r0 * cols, r1 - r0, cols);
  });
}

void CpuBackend::quantize_input(const MoEInputs& in, int64_t T) {
  const auto* bits = in.hidden.ptr<const uint16_t>();
  for (int64_t i = 0; i < T * H_; ++i) x_[i] = bf16_to_float(bits[i]);
  fake_quantize_rows(x_.data(), T, H_);
}

void CpuBackend::first_gemm(int64_t task, Scratch& s) {
  const int64_t chunks = (I_ + kColumnChunk - 1) / kColumnChunk;
  const int e = static_cast<int>(tasks_[task] / chunks);
  const int64_t j0 = (tasks_[task] % chunks) * kColumnChunk;
  const int64_t nj = std::min(kColumnChunk, I_ - j0);
  const PreparedExpert& ex = *experts_[e];
  float* wg = s.w.data();
  float* wu = wg + nj * H_;
  dequantize_rows(ex.w13, j0, j0 + nj, wg);
  if (gated_) dequantize_rows(ex.w13, I_ + j0, I_ + j0 + nj, wu);
  const bool bias = !ex.w13_bias.empty();
  const int64_t r0 = begin_[e], m = begin_[e + 1] - begin_[e];
  auto x_of = [&](int64_t i) { return x_.data() + row_token_[r0 + i] * H_; };
  // Row tiles outermost so the tile's inputs stay in cache while the chunk's weights stream.
  for (int64_t t0 = 0; t0 < m; t0 += kRowTile) {
    const int64_t tm = std::min<int64_t>(kRowTile, m - t0);
    auto x_tile = [&](int64_t i) { return x_of(t0 + i); };
    for (int64_t j = 0; j < nj; ++j) {
      const float bg = bias ? ex.w13_bias[j0 + j] : 0.0f;
      if (!gated_) {
        dot_tiles(tm, x_tile, wg + j * H_, H_, [&](int64_t i, float h) {
          act_[(r0 + t0 + i) * I_ + j0 + j] = activate(cfg_.activation, h + bg, 0.0f);
        });
        continue;
      }
      const float bu = bias ? ex.w13_bias[I_ + j0 + j] : 0.0f;
      dot_tiles(tm, x_tile, wg + j * H_, H_, [&](int64_t i, float g) { s.h[i] = g + bg; });
      dot_tiles(tm, x_tile, wu + j * H_, H_, [&](int64_t i, float u) {
        act_[(r0 + t0 + i) * I_ + j0 + j] = activate(cfg_.activation, s.h[i], u + bu);
      });
    }
  }
}

void CpuBackend::second_gemm_and_combine(int64_t chunk, int64_t T, Scratch& s, uint16_t* out) {
  const int64_t n0 = chunk * kColumnChunk, nn = std::min(kColumnChunk, H_ - n0);
  float* y = s.y.data();  // [rows, kColumnChunk]
  for (int e = 0; e < L_ + S_; ++e) {
    const int64_t r0 = begin_[e], m = begin_[e + 1] - begin_[e];
    if (m == 0) continue;
    const PreparedExpert& ex = *experts_[e];
    dequantize_rows(ex.w2, n0, n0 + nn, s.w.data());
    const bool bias = !ex.w2_bias.empty();
    for (int64_t t0 = 0; t0 < m; t0 += kRowTile) {
      const int64_t tm = std::min<int64_t>(kRowTile, m - t0);
      auto a_of = [&](int64_t i) { return act_.data() + (r0 + t0 + i) * I_; };
      for (int64_t n = 0; n < nn; ++n) {
        const float b = bias ? ex.w2_bias[n0 + n] : 0.0f;
        dot_tiles(tm, a_of, s.w.data() + n * I_, I_,
                  [&](int64_t i, float v) { y[(r0 + t0 + i) * kColumnChunk + n] = v + b; });
      }
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < nn; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K_; ++k) {
        const int32_t r = row_of_[t * K_ + k];
        if (r >= 0) acc += weights_in_[t * K_ + k] * y[r * kColumnChunk + n];
      }
      for (int sh = 0; sh < S_; ++sh) acc += y[(begin_[L_ + sh] + t) * kColumnChunk + n];
      out[t * H_ + n0 + n] = float_to_bf16(acc);
    }
  }
}

void CpuBackend::forward(const MoEInputs& in, TensorView out, void*) {
  const int64_t T = in.hidden.shape[0];
  route(in, T);
  assign_rows(T);
  quantize_input(in, T);

  const int64_t chunks = (I_ + kColumnChunk - 1) / kColumnChunk;
  tasks_.clear();
  for (int e = 0; e < L_ + S_; ++e)
    if (begin_[e + 1] > begin_[e])
      for (int64_t c = 0; c < chunks; ++c) tasks_.push_back(e * chunks + c);
  parallel_for(static_cast<int64_t>(tasks_.size()),
               [&](int64_t task, int worker) { first_gemm(task, scratch_[worker]); });

  fake_quantize_rows(act_.data(), begin_[L_ + S_], I_);

  auto* o = out.ptr<uint16_t>();
  parallel_for((H_ + kColumnChunk - 1) / kColumnChunk, [&](int64_t chunk, int worker) {
    second_gemm_and_combine(chunk, T, scratch_[worker], o);
  });
}

}  // namespace

std::unique_ptr<MoEBackend> make_cpu_backend(const MoEConfig& cfg) {
  return std::make_unique<CpuBackend>(cfg);
}

}  // namespace servekit
