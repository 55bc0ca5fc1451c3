// `servekit moe` — builds one preset MoE layer with random weights, runs it on the CPU or a CUDA
// device, times it and optionally checks it against the fp64 reference.
//
// Only the experts the random router logits actually select are generated and loaded, so a
// deepseek-v3 layer (256 experts, ~44 GB in bf16) on a few tokens fits in a small machine.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "args.h"
#include "commands.h"
#include "core/presets.h"
#include "core/random_data.h"
#include "cpu/moe_reference.h"
#include "servekit/servekit.h"

#ifdef SERVEKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda/device_buffer.h"
#include "cuda/runtime.h"
#endif

namespace servekit::cli {
namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 20;
constexpr uint16_t kBF16NaN = 0x7FC0;  // poisons the output: an element never written fails

const std::vector<FlagSpec> kMoEFlags = {
    {"preset", true},  {"tokens", true}, {"quant", true},  {"group-size", true}, {"device", true},
    {"routing", true}, {"seed", true},   {"check", false}, {"threads", true},    {"repeats", true},
};

void print_moe_usage() {
  std::string preset_names, quant_names;
  // Appended piecewise: `" " + std::string(...)` trips a GCC 12 -Wrestrict false positive.
  for (const Preset& p : presets()) preset_names.append(" ").append(p.name);
  for (QuantMethod m : all_quant_methods()) quant_names.append(" ").append(quant_name(m));
  std::printf(
      "usage: servekit moe --preset NAME [flags]\n"
      "Builds one MoE layer of a model preset with random weights (only the experts the random\n"
      "router selects are generated), runs it, and prints its time.\n"
      "  --preset NAME        one of:%s\n"
      "  --tokens N           tokens in the batch, >= 1 (default 8)\n"
      "  --quant Q            one of:%s\n"
      "                       (default: the preset's checkpoint format)\n"
      "  --group-size G       int4_w4a16 only: 32, 64 or 128 (default 128)\n"
      "  --device D           auto | cpu | cuda (default auto: cuda when built with CUDA and a\n"
      "                       device is present, else cpu)\n"
      "  --routing R          uniform | skewed | one (every token on one expert) | balanced |\n"
      "                       biased (uniform logits, a U(-0.1, 0.1) correction bias) router\n"
      "                       logits (default uniform)\n"
      "  --seed S             seed of weights and inputs (default 1)\n"
      "  --threads N          host threads for the CPU backend and for generating weights,\n"
      "                       0 = all hardware threads (default 0)\n"
      "  --repeats R          timed runs after one warm-up; the median is reported\n"
      "                       (default 20 on cuda, 3 on cpu)\n"
      "  --check              compare the output against the fp64 reference; the last line is\n"
      "                       'check: pass|FAIL rel_l2=<error> tol=<tolerance>'\n"
      "Exit status: 0 ok, 1 check failed or run-time error, 2 bad arguments.\n",
      preset_names.c_str(), quant_names.c_str());
}

Device resolve_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  const bool have_gpu = built_with_cuda() && cuda_device_count() > 0;
  if (name == "auto") return have_gpu ? Device::cuda(0) : Device::cpu();
  SERVEKIT_CHECK(built_with_cuda(),
                 "flag --device=cuda: this build has no CUDA backend (valid here: auto, cpu)");
  SERVEKIT_CHECK(have_gpu, "flag --device=cuda: no CUDA device found (valid here: auto, cpu)");
  return Device::cuda(0);
}

// Everything decided from the command line, before any weight is generated.
struct MoERun {
  const Preset* preset = nullptr;
  MoEConfig cfg;
  int64_t tokens = 0;
  RoutingSkew skew = RoutingSkew::kUniform;
  uint64_t seed = 0;
  bool check = false;
  int repeats = 0;
};

MoERun parse_moe_run(int argc, char** argv) {
  const Args args(argc, argv, kMoEFlags);
  SERVEKIT_CHECK(args.has("preset"), "flag --preset is required (see servekit moe --help)");
  MoERun run;
  run.preset = &find_preset(args.get_string("preset", ""));
  run.tokens = args.get_int("tokens", 8, 1, kMaxTokens);

  QuantConfig quant;
  quant.method =
      args.has("quant") ? parse_quant(args.get_string("quant", "")) : run.preset->default_quant;
  if (args.has("group-size")) {
    SERVEKIT_CHECK(quant.method == QuantMethod::kInt4W4A16,
                   "flag --group-size applies only to --quant int4_w4a16, not ",
                   quant_name(quant.method));
    quant.group_size = static_cast<int>(args.get_int("group-size", 128, 1, 1 << 20));
  }

  ExecutionConfig exec;
  exec.device = resolve_device(args.get_choice("device", "auto", {"auto", "cpu", "cuda"}));
  exec.max_num_tokens = run.tokens;
  exec.num_threads = static_cast<int>(args.get_int("threads", 0, 0, 4096));
  run.check = args.has("check");
  exec.keep_host_weights = run.check;  // the reference reads the prepared host copy
  run.skew = parse_routing_skew(
      args.get_choice("routing", "uniform", {"uniform", "skewed", "one", "balanced", "biased"}));
  run.seed = args.get_uint("seed", 1);
  run.repeats =
      static_cast<int>(args.get_int("repeats", exec.device.is_cuda() ? 20 : 3, 1, 100000));
  // Rejects combinations the layer cannot run (e.g. fp8_block128 with H % 128 != 0) here, so
  // they count as bad arguments.
  run.cfg = validate_moe_config(preset_config(*run.preset, quant, exec));
  return run;
}

// Host threads for the CPU backend and for generating weights: --threads, 0 = all.
unsigned host_threads(const ExecutionConfig& exec) {
  return exec.num_threads > 0 ? static_cast<unsigned>(exec.num_threads)
                              : std::max(1u, std::thread::hardware_concurrency());
}

// Host-side inputs of one run, generated from the seed.
struct HostInputs {
  std::vector<uint16_t> hidden;  // [T, H] bf16 bits
  std::vector<float> logits;     // [T, E]
  std::vector<float> bias;       // [E], empty when the routing method reads none
};

HostInputs make_inputs(const MoERun& run) {
  const RoutingConfig& r = run.cfg.routing;
  HostInputs in;
  in.hidden = make_hidden(run.seed, run.tokens, run.cfg.experts.hidden_size);
  in.logits = make_router_logits(run.seed, run.tokens, r.num_experts, run.skew, r.top_k);
  if (routing_uses_bias(r.method))
    in.bias = make_correction_bias(run.seed, r.num_experts, correction_bias_scale(run.skew));
  return in;
}

// Generates and loads experts[i] for every i, on `threads` host threads (MoELayer::load_expert
// may run concurrently for distinct experts; generating deepseek-v3's experts one by one takes
// minutes). An index >= E_local is shared expert index - E_local. Rethrows the first error.
void load_experts(MoELayer& layer, const MoERun& run, const std::vector<int>& experts,
                  unsigned threads) {
  const MoEConfig& cfg = run.cfg;
  const int local_experts = cfg.experts.local_num_experts;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (size_t i = next++; i < experts.size() && !failed; i = next++) {
      try {
        const int index = experts[i];
        const bool shared = index >= local_experts;
        // Random weights are keyed by global id, shared experts following the routed ones.
        const int global = shared ? cfg.routing.num_experts + (index - local_experts)
                                  : cfg.experts.local_expert_offset + index;
        HostExpert e = make_random_expert(cfg, run.seed, global, run.preset->has_bias);
        if (shared)
          layer.load_shared_expert(index - local_experts, e.view(cfg));
        else
          layer.load_expert(index, e.view(cfg));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, experts.size()); ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// Routes on the host exactly as the layer will, and loads only the local experts selected, plus
// every shared expert. Returns the number of distinct routed experts loaded.
int load_touched_experts(MoELayer& layer, const MoERun& run, const HostInputs& in,
                         unsigned threads) {
  const MoEConfig& cfg = run.cfg;
  const int k = cfg.routing.top_k;
  std::vector<int32_t> ids(static_cast<size_t>(run.tokens * k));
  std::vector<float> weights(ids.size());
  route_cpu(cfg.routing, in.logits.data(), in.bias.empty() ? nullptr : in.bias.data(), run.tokens,
            ids.data(), weights.data());

  const int offset = cfg.experts.local_expert_offset;
  const int local_experts = cfg.experts.local_num_experts;
  std::vector<bool> touched(static_cast<size_t>(local_experts), false);
  for (int32_t id : ids) {
    const int local = id - offset;
    if (id >= 0 && local >= 0 && local < local_experts) touched[local] = true;
  }
  std::vector<int> experts;
  for (int local = 0; local < local_experts; ++local)
    if (touched[local]) experts.push_back(local);
  const int routed = static_cast<int>(experts.size());
  for (int s = 0; s < cfg.experts.num_shared_experts; ++s) experts.push_back(local_experts + s);
  load_experts(layer, run, experts, threads);
  return routed;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

MoEInputs input_views(const MoERun& run, const void* hidden, const void* logits, const void* bias,
                      Device dev) {
  const int64_t t = run.tokens, h = run.cfg.experts.hidden_size;
  const int64_t e = run.cfg.routing.num_experts;
  MoEInputs views;
  views.hidden = TensorView::contiguous(const_cast<void*>(hidden), DType::kBF16, {t, h}, dev);
  views.router_logits = TensorView::contiguous(const_cast<void*>(logits), DType::kF32, {t, e}, dev);
  if (bias)
    views.correction_bias = TensorView::contiguous(const_cast<void*>(bias), DType::kF32, {e}, dev);
  return views;
}

// One warm-up, then `repeats` timed forwards on the host clock; returns times in ms.
std::vector<double> time_cpu(MoELayer& layer, const MoERun& run, const HostInputs& in,
                             std::vector<uint16_t>& out) {
  const MoEInputs views = input_views(run, in.hidden.data(), in.logits.data(),
                                      in.bias.empty() ? nullptr : in.bias.data(), Device::cpu());
  const TensorView out_view =
      TensorView::contiguous(out.data(), DType::kBF16, {run.tokens, run.cfg.experts.hidden_size});
  layer.forward(views, out_view);
  std::vector<double> ms;
  for (int r = 0; r < run.repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    layer.forward(views, out_view);
    const auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return ms;
}

#ifdef SERVEKIT_WITH_CUDA
class Event {
 public:
  Event() { SERVEKIT_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// As time_cpu, on the device with CUDA events; out comes back to the host.
std::vector<double> time_cuda(MoELayer& layer, const MoERun& run, const HostInputs& in,
                              std::vector<uint16_t>& out) {
  const Device dev = run.cfg.exec.device;
  SERVEKIT_CUDA_CHECK(cudaSetDevice(dev.index));
  const size_t out_bytes = out.size() * sizeof(uint16_t);
  const auto d_hidden =
      cuda::DeviceBuffer::copy_of(in.hidden.data(), in.hidden.size() * sizeof(uint16_t));
  const auto d_logits =
      cuda::DeviceBuffer::copy_of(in.logits.data(), in.logits.size() * sizeof(float));
  const auto d_bias = cuda::DeviceBuffer::copy_of(in.bias.data(), in.bias.size() * sizeof(float));
  const auto d_out = cuda::DeviceBuffer::copy_of(out.data(), out_bytes);  // carries the poison
  const MoEInputs views = input_views(run, d_hidden.get(), d_logits.get(), d_bias.get(), dev);
  const TensorView out_view = TensorView::contiguous(
      d_out.get(), DType::kBF16, {run.tokens, run.cfg.experts.hidden_size}, dev);

  const Event start, stop;
  layer.forward(views, out_view);
  SERVEKIT_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int r = 0; r < run.repeats; ++r) {
    SERVEKIT_CUDA_CHECK(cudaEventRecord(start.get()));
    layer.forward(views, out_view);
    SERVEKIT_CUDA_CHECK(cudaEventRecord(stop.get()));
    SERVEKIT_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float elapsed = 0;
    SERVEKIT_CUDA_CHECK(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
    ms.push_back(elapsed);
  }
  SERVEKIT_CUDA_CHECK(cudaMemcpy(out.data(), d_out.get(), out_bytes, cudaMemcpyDeviceToHost));
  return ms;
}
#endif

std::string device_label(const ExecutionConfig& exec) {
  if (exec.device.is_cuda()) return exec.device.str();
  return "cpu (" + std::to_string(host_threads(exec)) + " threads)";
}

// Prints a two-line table, each column as wide as the wider of its header and value.
void print_table(const std::vector<std::pair<std::string, std::string>>& cols) {
  std::string header, row;
  for (const auto& [name, value] : cols) {
    const size_t w = std::max(name.size(), value.size()) + 2;
    header += name + std::string(w - name.size(), ' ');
    row += value + std::string(w - value.size(), ' ');
  }
  while (!header.empty() && header.back() == ' ') header.pop_back();
  while (!row.empty() && row.back() == ' ') row.pop_back();
  std::printf("%s\n%s\n", header.c_str(), row.c_str());
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Compares out against moe_reference; prints the check line and returns whether it passed.
bool check_output(const MoELayer& layer, const MoERun& run, const HostInputs& in,
                  const std::vector<uint16_t>& out) {
  std::vector<float> hidden(in.hidden.size()), out_f(out.size());
  std::transform(in.hidden.begin(), in.hidden.end(), hidden.begin(), bf16_to_float);
  std::transform(out.begin(), out.end(), out_f.begin(), bf16_to_float);
  ReferenceInputs ref_in;
  ref_in.hidden = hidden.data();
  ref_in.tokens = run.tokens;
  ref_in.logits = in.logits.data();
  ref_in.bias = in.bias.empty() ? nullptr : in.bias.data();
  const std::vector<double> ref = moe_reference(layer, ref_in);
  const double err = relative_l2(out_f.data(), ref.data(), static_cast<int64_t>(out_f.size()));
  const double tol = moe_tolerance(run.cfg.quant.method, run.cfg.exec.device.type);
  const bool pass = err <= tol;  // false for NaN too
  std::printf("check: %s rel_l2=%.3e tol=%.3e\n", pass ? "pass" : "FAIL", err, tol);
  return pass;
}

int execute(MoELayer& layer, const MoERun& run) {
  const HostInputs in = make_inputs(run);
  const int touched = load_touched_experts(layer, run, in, host_threads(run.cfg.exec));
  std::vector<uint16_t> out(in.hidden.size(), kBF16NaN);
#ifdef SERVEKIT_WITH_CUDA
  const std::vector<double> ms = run.cfg.exec.device.is_cuda() ? time_cuda(layer, run, in, out)
                                                               : time_cpu(layer, run, in, out);
#else
  const std::vector<double> ms = time_cpu(layer, run, in, out);
#endif
  const double t_ms = median(ms);
  std::string experts = std::to_string(touched) + "/" + std::to_string(run.cfg.routing.num_experts);
  if (run.cfg.experts.num_shared_experts > 0)
    experts += " +" + std::to_string(run.cfg.experts.num_shared_experts) + " shared";
  print_table({
      {"preset", run.preset->name},
      {"quant", std::string(quant_name(run.cfg.quant.method))},
      {"device", device_label(run.cfg.exec)},
      {"routing", routing_skew_name(run.skew)},
      {"tokens", std::to_string(run.tokens)},
      {"experts touched", experts},
      {"time (ms)", fixed(t_ms, 3)},
      {"tokens/s", fixed(static_cast<double>(run.tokens) / (t_ms * 1e-3), 0)},
  });
  std::printf("(median of %d run%s after one warm-up)\n", run.repeats, run.repeats == 1 ? "" : "s");
  if (const size_t bytes = layer.device_weight_bytes(); bytes > 0)
    std::printf("expert weights on the device: %.1f MB (MoELayer::device_weight_bytes)\n",
                static_cast<double>(bytes) / 1e6);
  if (!run.check) return 0;
  return check_output(layer, run, in, out) ? 0 : 1;
}

}  // namespace

int cmd_moe(int argc, char** argv) {
  if (wants_help(argc, argv)) {
    print_moe_usage();
    return 0;
  }
  MoERun run;
  std::unique_ptr<MoELayer> layer;
  try {
    run = parse_moe_run(argc, argv);
    layer = std::make_unique<MoELayer>(run.cfg);
  } catch (const std::exception& e) {
    return report_error(without_location(e.what()), 2);
  }
  try {
    return execute(*layer, run);
  } catch (const std::exception& e) {
    return report_error(e.what(), 1);
  }
}

}  // namespace servekit::cli
