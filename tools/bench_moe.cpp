#include "bench_moe.h"

#ifdef SERVEKIT_WITH_CUDA

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "bench_check.h"
#include "core/env.h"
#include "core/presets.h"
#include "cuda/bench/l2_flush.h"
#include "cuda/device_buffer.h"
#include "cuda/dynamic_options.h"
#include "cuda/peer/cublas_moe.h"
#include "cuda/runtime.h"
#include "cuda/static_moe.h"
#include "servekit/servekit.h"

namespace servekit::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using cuda::DeviceBuffer;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { SERVEKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

// A captured forward; empty when capture failed (the row then times direct calls).
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

const char* path_name(MoEPath p) {
  switch (p) {
    case MoEPath::kAuto:
      return "auto";
    case MoEPath::kStatic:
      return "static";
    case MoEPath::kDynamic:
      return "dynamic";
  }
  return "?";
}

// FNV-1a over the row's identity: every row draws its own inputs, the same for every path. A
// "biased" row draws the "uniform" row's inputs (only its correction bias differs), so it repeats
// what "uniform" measured before session 44.
uint64_t row_seed(uint64_t base, const std::string& preset, QuantMethod q, int64_t tokens,
                  RoutingSkew skew) {
  uint64_t h = 1469598103934665603ull ^ base;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  for (char c : preset) mix(static_cast<unsigned char>(c));
  mix(static_cast<uint64_t>(q));
  mix(static_cast<uint64_t>(tokens));
  mix(static_cast<uint64_t>(skew == RoutingSkew::kBiased ? RoutingSkew::kUniform : skew));
  return h;
}

// Generates every routed and shared expert on `threads` threads and loads it. With
// `concurrent_loads`, load_expert runs on all threads at once (4-8x faster for 257 DeepSeek
// experts: its host quantization is the slow part); that needs load_expert to be safe for
// distinct experts, see BenchOptions::parallel_load. Otherwise loads take a lock and only the
// generation overlaps.
void load_all_experts(MoELayer& layer, bool with_bias, uint64_t seed, int threads,
                      bool concurrent_loads) {
  const MoEConfig& cfg = layer.config();
  const int L = cfg.experts.local_num_experts, S = cfg.experts.num_shared_experts;
  std::atomic<int> next{0};
  std::mutex load_mu, err_mu;
  std::exception_ptr error;
  auto work = [&] {
    try {
      for (int i = next++; i < L + S; i = next++) {
        const int index =
            i < L ? cfg.experts.local_expert_offset + i : cfg.routing.num_experts + (i - L);
        HostExpert e = make_random_expert(cfg, seed, index, with_bias);
        const ExpertWeightsView v = e.view(cfg);
        std::unique_lock<std::mutex> lock(load_mu, std::defer_lock);
        if (!concurrent_loads) lock.lock();
        if (i < L) {
          layer.load_expert(i, v);
        } else {
          layer.load_shared_expert(i - L, v);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mu);
      if (!error) error = std::current_exception();
      next = L + S;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, std::min(threads, L + S)); ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

struct Timing {
  double median_us = kNaN, min_us = kNaN;
};

// SERVEKIT_DIAG_BENCH_WARM_L2=1 (a diagnostic, never for reported rows): no L2 flush before
// the timed calls, so that a row's time with and without the flush shows what its cold start
// costs (kernel code and small inputs fetched from DRAM).
bool warm_l2_diag() {
  static const bool warm = [] {
    const bool on = env_int("SERVEKIT_DIAG_BENCH_WARM_L2", 0, 1, 0) != 0;
    if (on)
      std::fprintf(stderr, "bench: SERVEKIT_DIAG_BENCH_WARM_L2=1: no L2 flush (diagnostic)\n");
    return on;
  }();
  return warm;
}

// Times `launch` with CUDA events around each call, an L2 flush before each (outside the
// events), after `warmup` untimed calls. Median of `repeats`.
template <typename Launch>
Timing time_cold(Launch&& launch, cuda::L2Flusher& flusher, cudaStream_t s, int warmup,
                 int repeats) {
  for (int i = 0; i < warmup; ++i) {
    flusher.flush(s);
    launch(s);
  }
  const bool flush = !warm_l2_diag();
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(repeats), nullptr);
  struct Cleanup {
    std::vector<cudaEvent_t>& ev;
    ~Cleanup() {
      for (cudaEvent_t e : ev)
        if (e) cudaEventDestroy(e);
    }
  } cleanup{ev};
  for (auto& e : ev) SERVEKIT_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < repeats; ++i) {
    if (flush) flusher.flush(s);
    SERVEKIT_CUDA_CHECK(cudaEventRecord(ev[2 * i], s));
    launch(s);
    SERVEKIT_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], s));
  }
  SERVEKIT_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> us(static_cast<size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    float ms = 0;
    SERVEKIT_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us[i] = 1000.0 * ms;
  }
  std::sort(us.begin(), us.end());
  Timing t;
  const size_t n = us.size();
  t.median_us = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
  t.min_us = us.front();
  return t;
}

// The launch-and-events part of every row: a graph whose only node is a 4-byte memset, timed
// by time_cold like a layer (RunInfo::one_node_graph_us).
double time_one_node_graph(cuda::L2Flusher& flusher, cudaStream_t s, const BenchOptions& opt) {
  void* word = nullptr;
  SERVEKIT_CUDA_CHECK(cudaMalloc(&word, 4));
  struct Free {
    void* p;
    ~Free() { cudaFree(p); }
  } free_word{word};
  Graph g;
  SERVEKIT_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const cudaError_t set = cudaMemsetAsync(word, 0, 4, s);
  SERVEKIT_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph));
  SERVEKIT_CUDA_CHECK(set);
  SERVEKIT_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  const Timing t =
      time_cold([&](cudaStream_t st) { SERVEKIT_CUDA_CHECK(cudaGraphLaunch(g.exec, st)); }, flusher,
                s, opt.warmup, opt.repeats);
  return t.median_us;
}

std::vector<uint16_t> download_bf16(const void* d, size_t n, cudaStream_t s) {
  std::vector<uint16_t> h(n);
  SERVEKIT_CUDA_CHECK(cudaMemcpyAsync(h.data(), d, n * 2, cudaMemcpyDeviceToHost, s));
  SERVEKIT_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

// Captures `run` on stream s into g; on failure (an API the layer or cuBLAS cannot capture)
// returns the reason and leaves g empty, so the caller times direct calls instead.
template <typename Run>
std::string capture(Graph& g, cudaStream_t s, Run&& run) {
  try {
    SERVEKIT_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      run(s);
    } catch (...) {
      cudaStreamEndCapture(s, &g.graph);
      throw;
    }
    SERVEKIT_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph));
    SERVEKIT_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
    return "";
  } catch (const std::exception& e) {
    cudaGetLastError();
    if (g.exec) cudaGraphExecDestroy(g.exec);
    g.exec = nullptr;
    return e.what();
  }
}

// "graph", or "stream (...)" with the reason capture failed.
std::string timing_name(const std::string& capture_error) {
  return capture_error.empty() ? "graph" : "stream (graph capture failed: " + capture_error + ")";
}

struct PeerResult {
  std::string name, note;
  double us = kNaN, rel_l2 = kNaN;
  std::string timing;
};

// Everything one (preset, quant) group shares across its rows.
struct Group {
  const Preset* preset;
  MoEConfig cfg;
  std::unique_ptr<peer::CublasMoE> peer;
  std::string peer_note;                                             // why there is no peer
  std::map<std::pair<int64_t, RoutingSkew>, PeerResult> peer_cache;  // shared across paths
};

void run_peer(Group& g, const RefCheck& check, const MoEInputs& in, const TensorView& out,
              const BenchOptions& opt, cuda::L2Flusher& flusher, cudaStream_t s, BenchRow& row) {
  const auto key = std::make_pair(row.tokens, parse_routing_skew(row.routing));
  PeerResult p;
  if (auto it = g.peer_cache.find(key); it != g.peer_cache.end()) {
    p = it->second;
  } else if (!g.peer || !g.peer->available()) {
    p.name = "none";
    p.note = g.peer ? g.peer->note() : g.peer_note;
  } else {
    try {
      g.peer->plan(in, s);
      // The first run is direct: it settles the peer's choices (grouped or per-expert GEMMs).
      SERVEKIT_CUDA_CHECK(cudaMemsetAsync(out.data, 0xFF, out.nbytes(), s));
      g.peer->run(in, out, s);
      const std::vector<uint16_t> first = download_bf16(out.data, out.numel(), s);
      p.rel_l2 = check.rel_l2(first, out.size(1));
      // Timed like the layer: graph replays when cuBLAS captures, so neither pays launch costs.
      Graph graph;
      p.timing = timing_name(capture(graph, s, [&](cudaStream_t st) { g.peer->run(in, out, st); }));
      const Timing t = time_cold(
          [&](cudaStream_t st) {
            if (graph.exec) {
              SERVEKIT_CUDA_CHECK(cudaGraphLaunch(graph.exec, st));
            } else {
              g.peer->run(in, out, st);
            }
          },
          flusher, s, opt.warmup, opt.repeats);
      p.us = t.median_us;
      p.name = g.peer->name();
      p.note = g.peer->note();
      if (download_bf16(out.data, out.numel(), s) != first)
        p.note += std::string(p.note.empty() ? "" : "; ") + "replays differ from the first run";
      // A wrong peer is reported, not failed: its rel_l2 and bound are in the row.
      if (!(p.rel_l2 <= std::max(check.gate, g.peer->tolerance())))
        std::fprintf(stderr, "bench: WARNING: peer %s is wrong on %s %s T=%lld: rel_l2 %.3e\n",
                     p.name.c_str(), row.preset.c_str(), row.quant.c_str(),
                     static_cast<long long>(row.tokens), p.rel_l2);
    } catch (const std::exception& e) {
      cudaGetLastError();
      p = PeerResult{"none", std::string("peer failed: ") + e.what(), kNaN, kNaN, ""};
    }
    g.peer_cache[key] = p;
  }
  row.peer = p.name;
  row.peer_note = p.note;
  row.peer_us = p.us;
  row.peer_rel_l2 = p.rel_l2;
  row.peer_timing = p.timing;
  row.peer_tolerance = std::max(check.gate, g.peer && g.peer->available()
                                                ? g.peer->tolerance()
                                                : peer::peer_tolerance(g.cfg.quant.method));
}

void run_row(MoELayer& layer, Group& g, const BenchOptions& opt, int check_tokens, int threads,
             cuda::L2Flusher& flusher, cudaStream_t s, BenchRow& row, RoutingSkew skew) {
  const MoEConfig& cfg = g.cfg;
  const int64_t T = row.tokens, H = cfg.experts.hidden_size;
  const int E = cfg.routing.num_experts, K = cfg.routing.top_k;
  const Device dev = Device::cuda(opt.device);
  const uint64_t seed = row_seed(opt.seed, row.preset, cfg.quant.method, T, skew);

  const std::vector<uint16_t> hidden = make_hidden(seed, T, H);
  const std::vector<float> logits = make_router_logits(seed + 1, T, E, skew, K);
  // The correction bias (a model parameter: the group's seed, not the row's) at the routing kind's
  // scale; empty when the routing method reads none.
  const std::vector<float> bias =
      routing_uses_bias(cfg.routing.method)
          ? make_correction_bias(opt.seed, E, correction_bias_scale(skew))
          : std::vector<float>{};
  DeviceBuffer d_hidden(hidden.size() * 2), d_logits(logits.size() * 4), d_out(hidden.size() * 2);
  DeviceBuffer d_bias(bias.size() * 4);
  SERVEKIT_CUDA_CHECK(
      cudaMemcpy(d_hidden.get(), hidden.data(), hidden.size() * 2, cudaMemcpyHostToDevice));
  SERVEKIT_CUDA_CHECK(
      cudaMemcpy(d_logits.get(), logits.data(), logits.size() * 4, cudaMemcpyHostToDevice));
  if (!bias.empty())
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(d_bias.get(), bias.data(), bias.size() * 4, cudaMemcpyHostToDevice));
  MoEInputs in;
  in.hidden = TensorView::contiguous(d_hidden.get(), DType::kBF16, {T, H}, dev);
  in.router_logits = TensorView::contiguous(d_logits.get(), DType::kF32, {T, E}, dev);
  if (!bias.empty())
    in.correction_bias = TensorView::contiguous(d_bias.get(), DType::kF32, {E}, dev);
  const TensorView out = TensorView::contiguous(d_out.get(), DType::kBF16, {T, H}, dev);

  // Floors from the experts this batch really touches (host routing, same ids as the device's).
  std::vector<int32_t> ids(static_cast<size_t>(T * K));
  std::vector<float> weights(ids.size());
  route_cpu(cfg.routing, logits.data(), bias.empty() ? nullptr : bias.data(), T, ids.data(),
            weights.data());
  row.touched_experts = count_touched_experts(ids.data(), T, K, cfg.experts.local_expert_offset,
                                              cfg.experts.local_num_experts);
  row.expert_rows = expert_row_stats(ids.data(), T, K, cfg.experts.local_expert_offset,
                                     cfg.experts.local_num_experts);
  row.floor = moe_floor(cfg, T, row.touched_experts, g.preset->has_bias, Ceilings{});
  row.flop = executed_flop(cfg, T);
  row.kernels = layer.kernels(T);

  Graph graph;
  row.timing = timing_name(capture(graph, s, [&](cudaStream_t st) { layer.forward(in, out, st); }));
  auto launch = [&](cudaStream_t st) {
    if (graph.exec) {
      SERVEKIT_CUDA_CHECK(cudaGraphLaunch(graph.exec, st));
    } else {
      layer.forward(in, out, st);
    }
  };

  // The checked run: poisoned output (0xFFFF is a bf16 NaN), one replay, reference.
  SERVEKIT_CUDA_CHECK(cudaMemsetAsync(out.data, 0xFF, out.nbytes(), s));
  launch(s);
  const std::vector<uint16_t> first = download_bf16(out.data, out.numel(), s);
  const RefCheck check = reference_check(layer, hidden, logits, bias, T, check_tokens,
                                         opt.fp8_tensor_full_check, threads);
  row.rel_l2 = check.rel_l2(first, H);
  row.tolerance = check.tolerance;
  row.check = check.how;

  const Timing t = time_cold(launch, flusher, s, opt.warmup, opt.repeats);
  row.us = t.median_us;
  row.us_min = t.min_us;
  row.repeats = opt.repeats;
  // Every replay must produce the checked bits: the last one is compared in full.
  row.deterministic = download_bf16(out.data, out.numel(), s) == first;
  // SERVEKIT_DIAG_STATIC_TIMES: where the last replay's static GEMM CTAs spent their time.
  const std::string diag = cuda::static_diag_times_report();
  if (!diag.empty()) std::printf("%s", diag.c_str());

  const RowVerdict verdict =
      row_verdict(row.rel_l2, check.gate, row.deterministic, cuda::dynamic_stop_from_env(),
                  row.kernels.rfind("dynamic", 0) == 0);
  row.status = verdict.status;
  row.error = verdict.error;
  if (opt.peer) run_peer(g, check, in, out, opt, flusher, s, row);
}

QuantConfig quant_for(const Preset& p, const std::string& name, int group_size) {
  QuantConfig q;
  q.method = name == "default" ? p.default_quant : parse_quant(name);
  if (q.method == QuantMethod::kInt4W4A16) q.group_size = group_size;
  return q;
}

// The state of one benchmark run: the rows so far, the device resources every row shares.
class Runner {
 public:
  Runner(const BenchOptions& opt, cuda::L2Flusher& flusher, cudaStream_t stream)
      : opt_(opt), flusher_(flusher), stream_(stream) {
    threads_ = opt.threads > 0
                   ? opt.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  // Every row of one (preset, quant) of a spec: one layer per path (sized for the spec's largest
  // token count) and one peer for all paths.
  void run_group(const RowSpec& spec, const Preset& preset, const QuantConfig& quant) {
    Group g;
    g.preset = &preset;
    const int64_t max_tokens = *std::max_element(spec.tokens.begin(), spec.tokens.end());
    std::string group_error, group_status = "error";
    for (MoEPath path : spec.paths) {
      std::unique_ptr<MoELayer> layer;
      // Loading is the slow part (host generation + quantization of every expert): predict it
      // from the rate seen so far and do not start a layer that cannot finish in the budget.
      const double params = expert_params(preset);
      if (group_error.empty() && !over_budget(seconds_per_param_ * params)) {
        try {
          const auto tl = Clock::now();
          layer = build_layer(g, quant, path, max_tokens, group_status);
          seconds_per_param_ = std::max(seconds_per_param_, seconds_since(tl) / params);
        } catch (const std::exception& e) {
          cudaGetLastError();
          group_error = group_status == "unsupported"
                            ? std::string(e.what())
                            : std::string("layer setup failed: ") + e.what();
        }
      }
      for (RoutingSkew skew : spec.routings)
        for (int64_t T : spec.tokens) {
          BenchRow row;
          row.preset = preset.name;
          row.quant = std::string(quant_name(quant.method));
          row.group_size = quant.method == QuantMethod::kInt4W4A16 ? quant.group_size : 0;
          row.routing = routing_skew_name(skew);
          row.path = path_name(path);
          row.tokens = T;
          if (!group_error.empty()) {
            row.status = group_status;
            row.error = group_error;
          } else if (!layer || over_budget()) {
            row.status = "skipped";
            row.error = "time budget of " + fmt("%.0f", opt_.max_seconds) + " s spent";
          } else {
            try {
              run_row(*layer, g, opt_, spec.check_tokens, threads_, flusher_, stream_, row, skew);
            } catch (const std::exception& e) {
              cudaGetLastError();
              row.status = "error";
              row.error = e.what();
            }
          }
          report(std::move(row));
        }
    }
  }

  std::vector<BenchRow> take_rows() { return std::move(rows_); }

 private:
  // Whether `more` seconds of work would end past the time budget.
  bool over_budget(double more = 0) const {
    return opt_.max_seconds > 0 && seconds_since(t0_) + more > opt_.max_seconds;
  }

  static double expert_params(const Preset& p) {
    const double I = static_cast<double>(p.intermediate), H = static_cast<double>(p.hidden);
    const double R = (activation_is_gated(p.activation) ? 2.0 : 1.0) * I;
    return (p.num_experts + p.num_shared) * (R * H + H * I);
  }

  // A format the preset's shapes cannot take (e.g. H = 2880 with 128-blocks) sets `status` to
  // "unsupported" before throwing; any other failure throws with status left as "error".
  std::unique_ptr<MoELayer> build_layer(Group& g, const QuantConfig& quant, MoEPath path,
                                        int64_t max_tokens, std::string& status) {
    const auto tl = Clock::now();
    ExecutionConfig exec;
    exec.max_num_tokens = max_tokens;
    exec.device = Device::cuda(opt_.device);
    exec.path = path;
    exec.keep_host_weights = true;
    try {
      g.cfg = validate_moe_config(preset_config(*g.preset, quant, exec));
    } catch (const Error&) {
      status = "unsupported";
      throw;
    }
    auto layer = std::make_unique<MoELayer>(g.cfg);
    load_all_experts(*layer, g.preset->has_bias, opt_.seed, threads_, opt_.parallel_load);
    std::fprintf(
        stderr, "bench: %s %s path %s: %d experts loaded in %.1f s, %.2f GB on the device\n",
        g.preset->name.c_str(), std::string(quant_name(quant.method)).c_str(), path_name(path),
        g.cfg.experts.local_num_experts + g.cfg.experts.num_shared_experts, seconds_since(tl),
        static_cast<double>(layer->device_weight_bytes()) / 1e9);
    if (opt_.peer && !g.peer && g.peer_note.empty()) {
      const auto tp = Clock::now();
      try {
        g.peer = std::make_unique<peer::CublasMoE>(*layer, threads_);
      } catch (const std::exception& e) {
        cudaGetLastError();
        g.peer_note = std::string("peer construction failed: ") + e.what();
      }
      std::fprintf(stderr, "bench: peer %s ready in %.1f s%s%s\n",
                   g.peer ? g.peer->name().c_str() : "none", seconds_since(tp),
                   g.peer_note.empty() ? "" : ": ", g.peer_note.c_str());
    }
    return layer;
  }

  void report(BenchRow row) {
    std::printf("%s\n", table_line(row).c_str());
    if (row.status == "fail" || row.status == "error" || row.status == "stopped")
      std::printf("  ^ %s: %s\n", row.status.c_str(), row.error.c_str());
    std::fflush(stdout);
    rows_.push_back(std::move(row));
    if (opt_.on_row) opt_.on_row(rows_);
  }

  const BenchOptions& opt_;
  cuda::L2Flusher& flusher_;
  cudaStream_t stream_;
  int threads_ = 1;
  Clock::time_point t0_ = Clock::now();
  double seconds_per_param_ = 0;  // slowest layer set-up seen so far
  std::vector<BenchRow> rows_;
};

}  // namespace

std::vector<BenchRow> run_moe_bench(const BenchOptions& opt, RunInfo& info) {
  SERVEKIT_CHECK(cuda_device_count() > opt.device, "CUDA device ", opt.device,
                 " is not available (", cuda_device_count(), " device(s) visible)");
  for (const RowSpec& spec : opt.specs) {  // fail on a bad name before any work
    for (const auto& p : spec.presets) find_preset(p);
    for (const auto& q : spec.quants)
      if (q != "default") parse_quant(q);
  }
  SERVEKIT_CUDA_CHECK(cudaSetDevice(opt.device));
  cudaDeviceProp prop{};
  SERVEKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, opt.device));
  info.device = prop.name;
  if (!ceilings_describe(info.device))
    std::fprintf(
        stderr,
        "bench: warning: floors use the H200's ceilings (BENCH.md: read %.2f TB/s, bf16 %.0f "
        "and fp8 %.0f TFLOP/s); on this %s, floor_us and time/floor are not this card's\n",
        info.ceilings.read_TBps, info.ceilings.bf16_TFLOPs, info.ceilings.fp8_TFLOPs,
        info.device.c_str());
  cuda::L2Flusher flusher(opt.device);
  info.l2_flush_bytes = flusher.bytes();
  Stream stream;
  info.one_node_graph_us = time_one_node_graph(flusher, stream.s, opt);
  std::fprintf(stderr, "bench: one-node graph (4-byte memset), timed as the rows: %.1f us\n",
               info.one_node_graph_us);
  Runner runner(opt, flusher, stream.s);
  std::printf("%s\n", table_header().c_str());
  std::fflush(stdout);
  for (const RowSpec& spec : opt.specs)
    for (const std::string& preset_name : spec.presets) {
      const Preset& preset = find_preset(preset_name);
      std::vector<QuantMethod> done;  // "default" may name a format also listed explicitly
      for (const std::string& name : spec.quants) {
        const QuantConfig quant = quant_for(preset, name, spec.group_size);
        if (std::find(done.begin(), done.end(), quant.method) != done.end()) continue;
        done.push_back(quant.method);
        runner.run_group(spec, preset, quant);
      }
    }
  return runner.take_rows();
}

}  // namespace servekit::bench

#else  // no CUDA backend in this build

namespace servekit::bench {

std::vector<BenchRow> run_moe_bench(const BenchOptions&, RunInfo&) {
  SERVEKIT_FAIL(
      "bench: this build has no CUDA backend (configured without nvcc); the "
      "benchmark needs a GPU build");
}

}  // namespace servekit::bench

#endif
