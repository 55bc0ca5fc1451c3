// Group-switch probe for docs/perf-notes.md (thirty-seventh pass): what a grouped GEMM tile costs
// when the group changes between a CTA's tiles, against the same tiles in one group.
//
// CUTLASS's sm90 ptr-array kernels keep one TMA descriptor per operand and CTA, and rewrite it
// whenever a CTA's next tile is in another group (tensormaps_perform_update, then a release and
// an acquire fence of the tensormap proxy; the epilogue's store descriptor likewise). With ~12-16
// tiles per expert over 132 persistent CTAs, every tile of qwen3-30b's GEMMs changes group. The
// probe times the bf16 GEMM (src/cuda/grouped_gemm.h, the tile forced by SERVEKIT_GEMM_TILE /
// SERVEKIT_GEMM_SWAP as the caller sets them) on the same number of tiles laid out three ways:
//   groups  G groups of R rows, every group on one weight matrix (b_group_stride = 0): the weights
//           stay in L2, every tile switches group;
//   one     one group of G * R rows on that matrix: the same tiles and MMAs, no switch;
//   own     G groups of R rows, each on its own weights (the MoE layer's case, weights from HBM).
// R = 144 fills the swap-AB tiles' token tile exactly, so `groups` and `one` have the same tile
// count. Each row: median of 30 timed runs (CUDA events) after 5 warm-up runs, the runs back to
// back (no L2 flush: `groups` and `one` are meant to hit L2; `own` reads 0.4-0.8 GB of weights,
// past the 60 MB L2).
//
// Build and run on the device after scripts/build.sh (BUILD_DIR=build-dev), all on one line:
//   g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_groups.cpp
//   build-dev/libservekit.a -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread
//   -o gemm_groups && SERVEKIT_GEMM_TILE=swap ./gemm_groups
// SERVEKIT_GEMM_SWAP=auto|cooperative|pingpong picks the swap-AB tile as in the MoE layer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
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

// Random bf16 in [-1, 1) on the device (never zeros: the MMAs run as on real data).
uint16_t* random_bf16(size_t count, uint64_t seed) {
  std::vector<uint16_t> h(count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (auto& v : h) v = servekit::float_to_bf16(unit(rng));
  uint16_t* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, count * 2));
  CHECK_CUDA(cudaMemcpy(d, h.data(), count * 2, cudaMemcpyHostToDevice));
  return d;
}

struct Layout {
  const char* name;
  int groups;    // G of the GEMM
  int64_t rows;  // rows per group
  bool shared;   // b_group_stride = 0
};

servekit::cuda::GemmSwapChoice swap_choice() {
  const char* v = std::getenv("SERVEKIT_GEMM_SWAP");
  const auto c = servekit::cuda::parse_gemm_swap_choice(v ? v : "auto");
  SERVEKIT_CHECK(c.has_value(), "SERVEKIT_GEMM_SWAP='", v,
                 "' must be auto, cooperative or pingpong");
  return *c;
}

bool g_once = false;  // --once: one run per layout and no timing (for ncu)

// Median µs of one GEMM run.
double time_run(const GroupedGemm& gemm, const GroupedGemmOperands& ops) {
  if (g_once) {
    gemm.run(ops, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    return 0.0;
  }
  return median_run_us([&] { gemm.run(ops, nullptr); }, 5, 30);
}

void run_shape(const char* label, int64_t n, int64_t k, int groups, int64_t rows_per_group) {
  const int64_t total_rows = groups * rows_per_group;
  uint16_t* a = random_bf16(static_cast<size_t>(total_rows * k), 1);
  uint16_t* b = random_bf16(static_cast<size_t>(groups * n * k), 2);
  uint16_t* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, static_cast<size_t>(total_rows * n) * 2));
  const Layout layouts[] = {{"groups", groups, rows_per_group, true},
                            {"one", 1, total_rows, true},
                            {"own", groups, rows_per_group, false}};
  for (const Layout& l : layouts) {
    std::vector<int32_t> off(static_cast<size_t>(l.groups) + 1);
    for (int g = 0; g <= l.groups; ++g)
      off[static_cast<size_t>(g)] = static_cast<int32_t>(g * l.rows);
    int32_t* d_off = nullptr;
    CHECK_CUDA(cudaMalloc(&d_off, off.size() * 4));
    CHECK_CUDA(cudaMemcpy(d_off, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
    GroupedGemmShape shape{GemmOperand::kBF16, l.groups, n, k, total_rows};
    shape.swap_pingpong =
        servekit::cuda::use_swap_pingpong(GemmOperand::kBF16, n, k, swap_choice());
    auto gemm = GroupedGemm::create(shape, 0);
    GroupedGemmOperands ops;
    ops.group_offsets = d_off;
    ops.a = a;
    ops.b = b;
    ops.d = d;
    ops.rows_hint = total_rows;
    ops.b_group_stride = l.shared ? 0 : -1;
    const auto cfg = gemm->config(total_rows).tile;
    const double us = time_run(*gemm, ops);
    const int64_t token_tiles = (l.rows + cfg.token_rows() - 1) / cfg.token_rows();
    const int64_t weight_rows = cfg.swap_ab ? cfg.tile_m : cfg.tile_n;
    const int64_t tiles = l.groups * token_tiles * ((n + weight_rows - 1) / weight_rows);
    const double tflops = 2.0 * total_rows * n * k / us / 1e6;
    const double weight_tbps = (l.shared ? 1.0 : l.groups) * n * k * 2 / us / 1e6;
    std::printf(
        "%-6s %-6s G=%-4d rows=%-6lld tile %dx%d%s%s  tiles %-5lld  %9.1f us  %6.1f TFLOP/s"
        "  %5.2f TB/s weights  %6.2f us/tile/SM\n",
        label, l.name, l.groups, static_cast<long long>(l.rows), cfg.tile_m, cfg.tile_n,
        cfg.swap_ab ? " swap" : "",
        cfg.schedule == servekit::cuda::GemmSchedule::kPingpong ? " pp" : " coop",
        static_cast<long long>(tiles), us, tflops, weight_tbps, us * 132.0 / tiles);
    CHECK_CUDA(cudaFree(d_off));
  }
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  g_once = argc > 1 && std::string(argv[1]) == "--once";
  try {
    // qwen3-30b-a3b: GEMM1 (N = 2I = 1536, K = H = 2048) and GEMM2 (N = H = 2048, K = I = 768),
    // 128 experts of 144 rows (~2300 tokens), then deepseek-v3's bf16 GEMM2 (N = 7168, K = 2048).
    run_shape("q30-g1", 1536, 2048, 128, 144);
    run_shape("q30-g2", 2048, 768, 128, 144);
    run_shape("ds-g2", 7168, 2048, 64, 288);
  } catch (const servekit::Error& e) {
    std::fprintf(stderr, "gemm_groups: %s\n", e.what());
    return 1;
  }
  return 0;
}
