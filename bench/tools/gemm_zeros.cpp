// Probe for docs/perf-notes.md (fortieth pass): does a tensor-bound grouped GEMM run faster when
// the rows that only pad its tiles are zeros?
//
// At qwen3-30b-a3b 8192 tokens the layer's GEMMs are tensor-bound at a power-reduced SM clock
// (thirty-eighth and thirty-ninth passes: 1.52-1.59 GHz on an H100 under ncu), and ~11-13% of their
// MMAs run over rows that only pad a group to whole 144-token tiles (bench/tools/padding_sim.py).
// The ping-pong swap tile's flat producer fills those rows with the next group's real rows
// (sm90_flat_tma_mainloop.cuh). If a tensor core draws less power on zero operands, a layout that
// padded each group with zero rows would give the clock back some headroom. This probe asks that
// without touching the layer: the bf16 GEMM (src/cuda/grouped_gemm.h, the tile the MoE layer
// picks) on G groups of R = whole tiles of rows, their content three ways:
//   random  every row random in [-1, 1)
//   tail0   the last Z rows of every group zero (Z / R = the padding share), the rest random
//   zero    every row zero (the bound on what the data can give)
// Each variant is timed twice, interleaved (random, tail0, zero, random, tail0, zero; --reverse
// runs zero, tail0, random), with the
// weights on their own per group (from HBM, the layer's case) and shared by every group (in L2:
// tensor-bound only). Per variant: median µs of 40 runs after 10 warm-up runs, and the SM clock
// and board power nvidia-smi reports while a further 600 runs go back to back.
//
// Build and run on the device after scripts/build.sh (BUILD_DIR=build), all on one line:
//   g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_zeros.cpp
//   build/libservekit.a -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread
//   -o gemm_zeros && ./gemm_zeros
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/grouped_gemm.h"
#include "gemm_probe.h"
#include "servekit/error.h"
#include "servekit/formats.h"

namespace {

using servekit::cuda::GemmOperand;
using servekit::cuda::GroupedGemm;
using servekit::cuda::GroupedGemmOperands;
using servekit::cuda::GroupedGemmShape;

// Host bf16 rows: random in [-1, 1) (never zero), except the last `zero_tail` of every group of
// `rows` rows (all of them when zero_tail >= rows).
std::vector<uint16_t> rows_bf16(int groups, int64_t rows, int64_t k, int64_t zero_tail,
                                uint64_t seed) {
  std::vector<uint16_t> h(static_cast<size_t>(groups * rows * k));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int g = 0; g < groups; ++g)
    for (int64_t r = 0; r < rows; ++r) {
      uint16_t* row = h.data() + (g * rows + r) * k;
      const bool zero = r >= rows - zero_tail;
      for (int64_t c = 0; c < k; ++c) row[c] = zero ? 0 : servekit::float_to_bf16(unit(rng));
    }
  return h;
}

bool g_reverse = false;  // --reverse: zero, tail0, random in each round

struct Sample {
  double us = 0;
  double burst_us = 0;  // mean µs of a run over the 600 back-to-back runs
  char smi[96] = "-";   // nvidia-smi's "clocks.sm, power.draw" while the GEMM runs
};

// One line of `nvidia-smi --query-gpu=...`, without its newline ("-" when it fails).
void smi_query(const char* fields, char (&out)[96]) {
  std::snprintf(out, sizeof(out), "-");
  char cmd[160];
  std::snprintf(cmd, sizeof(cmd),
                "nvidia-smi --query-gpu=%s --format=csv,noheader -i 0 2>/dev/null", fields);
  FILE* f = popen(cmd, "r");
  if (f == nullptr) return;
  if (std::fgets(out, sizeof(out), f) != nullptr) {
    for (char* c = out; *c; ++c)
      if (*c == '\n') *c = 0;
  }
  pclose(f);
}

Sample time_run(const GroupedGemm& gemm, const GroupedGemmOperands& ops) {
  Sample s;
  s.us = median_run_us([&] { gemm.run(ops, nullptr); }, 10, 40);
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  // 600 runs back to back (0.1-0.5 s); nvidia-smi asked a quarter of the way through.
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < 600; ++i) gemm.run(ops, nullptr);
  CHECK_CUDA(cudaEventRecord(stop));
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(150 * s.us)));
  smi_query("clocks.sm,power.draw", s.smi);
  CHECK_CUDA(cudaEventSynchronize(stop));
  float burst_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&burst_ms, start, stop));
  s.burst_us = 1000.0 * burst_ms / 600;
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return s;
}

void run_shape(const char* label, int64_t n, int64_t k, int groups, int64_t rows,
               int64_t zero_tail) {
  const int64_t total_rows = groups * rows;
  const size_t a_bytes = static_cast<size_t>(total_rows * k) * 2;
  uint16_t *a_random = nullptr, *a_tail0 = nullptr, *a_zero = nullptr, *b = nullptr, *d = nullptr;
  CHECK_CUDA(cudaMalloc(&a_random, a_bytes));
  CHECK_CUDA(cudaMalloc(&a_tail0, a_bytes));
  CHECK_CUDA(cudaMalloc(&a_zero, a_bytes));
  {
    auto h = rows_bf16(groups, rows, k, 0, 1);
    CHECK_CUDA(cudaMemcpy(a_random, h.data(), a_bytes, cudaMemcpyHostToDevice));
    h = rows_bf16(groups, rows, k, zero_tail, 1);  // the same random rows before the tail
    CHECK_CUDA(cudaMemcpy(a_tail0, h.data(), a_bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(a_zero, 0, a_bytes));
    h = rows_bf16(groups, n, k, 0, 2);  // the weights: G x [N, K]
    CHECK_CUDA(cudaMalloc(&b, h.size() * 2));
    CHECK_CUDA(cudaMemcpy(b, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  }
  CHECK_CUDA(cudaMalloc(&d, static_cast<size_t>(total_rows * n) * 2));
  std::vector<int32_t> off(static_cast<size_t>(groups) + 1);
  for (int g = 0; g <= groups; ++g) off[static_cast<size_t>(g)] = static_cast<int32_t>(g * rows);
  int32_t* d_off = nullptr;
  CHECK_CUDA(cudaMalloc(&d_off, off.size() * 4));
  CHECK_CUDA(cudaMemcpy(d_off, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
  GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, total_rows};
  shape.swap_pingpong = servekit::cuda::use_swap_pingpong(GemmOperand::kBF16, n, k);
  auto gemm = GroupedGemm::create(shape, 0);
  const auto cfg = gemm->config(total_rows).tile;
  const double flop = 2.0 * static_cast<double>(total_rows) * n * k;
  for (const bool shared : {false, true}) {
    for (int round = 0; round < 2; ++round) {
      const struct {
        const char* name;
        const uint16_t* a;
      } variants[] = {{"random", a_random}, {"tail0", a_tail0}, {"zero", a_zero}};
      for (int i = 0; i < 3; ++i) {
        const auto& v = variants[g_reverse ? 2 - i : i];
        GroupedGemmOperands ops;
        ops.group_offsets = d_off;
        ops.a = v.a;
        ops.b = b;
        ops.d = d;
        ops.rows_hint = total_rows;
        ops.b_group_stride = shared ? 0 : -1;
        const Sample s = time_run(*gemm, ops);
        std::printf(
            "%-6s weights %-6s G=%-4d rows=%-5lld zero tail %-4lld tile %dx%d%s%s  %-6s round %d"
            "  %9.1f us  %6.1f TFLOP/s  burst %9.1f us  [%s]\n",
            label, shared ? "in-L2" : "own", groups, static_cast<long long>(rows),
            static_cast<long long>(zero_tail), cfg.tile_m, cfg.tile_n, cfg.swap_ab ? " swap" : "",
            cfg.schedule == servekit::cuda::GemmSchedule::kPingpong ? " pp" : " coop", v.name,
            round + 1, s.us, flop / s.us / 1e6, s.burst_us, s.smi);
        std::fflush(stdout);
      }
    }
  }
  CHECK_CUDA(cudaFree(d_off));
  CHECK_CUDA(cudaFree(a_random));
  CHECK_CUDA(cudaFree(a_tail0));
  CHECK_CUDA(cudaFree(a_zero));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  g_reverse = argc > 1 && std::string(argv[1]) == "--reverse";
  char name[96];
  smi_query("name,power.limit,clocks.max.sm", name);
  std::printf("device %s\n", name);
  try {
    // qwen3-30b-a3b at ~8192 tokens: 128 experts of 576 rows (4 whole 144-token tiles), the last
    // 64 of them zero in tail0 (11%, the padding of a 512-row group in 144-token tiles).
    // GEMM1 (N = 2I = 1536, K = H = 2048), then GEMM2 (N = H = 2048, K = I = 768).
    run_shape("q30-g1", 1536, 2048, 128, 576, 64);
    run_shape("q30-g2", 2048, 768, 128, 576, 64);
  } catch (const servekit::Error& e) {
    std::fprintf(stderr, "gemm_zeros: %s\n", e.what());
    return 1;
  }
  return 0;
}
