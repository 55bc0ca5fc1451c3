// Pair probe for docs/perf-notes.md (forty-second pass): the bf16 grouped GEMM on deepseek-v3's
// shapes with the 2x1 cooperative swap tile (SERVEKIT_GEMM_TILE=swap) against its pair (=pair),
// to say why the pair made deepseek-v3's layer 8% slower (all of it GEMM1's) while it made
// gpt-oss-120b's and qwen3-235b's 6-12% faster: deepseek-v3's shared-expert group (8192 rows, the
// last group), or its shape (K = 7168).
//
// Layouts, each on its own weights (from HBM, as in the layer), group sizes drawn once (seed 1)
// around 256 rows (sd 16, as uniform routing of 8192 tokens at top-8 over 256 experts):
//   routed   256 groups of ~256 rows
//   +shared  the same and one group of 8192 rows after them (the layer's order)
//   shared   the 8192-row group alone
// Shapes: deepseek-v3 GEMM1 (N = 2I = 4096, K = H = 7168, the SwiGLU fused in the epilogue as
// in the layer) and GEMM2 (N = 7168, K = 2048); qwen3-235b GEMM1 (N = 3072, K = 4096, 128 groups)
// as the control where the layer measured the pair faster. The two tiles alternate over three
// rounds in one process; each row is the median of 10 runs (CUDA events) after 3 warm-up runs,
// back to back (the operands are 0.5-16 GB, far past the 50 MB L2).
//
// Build and run on the device after scripts/build.sh (BUILD_DIR=build), all on one line:
//   g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_pair.cpp
//   build/libservekit.a -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread
//   -o gemm_pair && ./gemm_pair
#include <cmath>
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

// `count` random bf16 in [-1, 1) on the device: a 32 MB random block from the host, repeated
// by device copies (the MMAs see random bits; the addresses are all distinct, so HBM serves them).
uint16_t* random_bf16(size_t count) {
  const size_t block = std::min<size_t>(count, size_t{16} << 20);
  std::vector<uint16_t> h(block);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (auto& v : h) v = servekit::float_to_bf16(unit(rng));
  uint16_t* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, count * 2));
  CHECK_CUDA(cudaMemcpy(d, h.data(), block * 2, cudaMemcpyHostToDevice));
  for (size_t done = block; done < count; done += block)
    CHECK_CUDA(
        cudaMemcpy(d + done, d, std::min(block, count - done) * 2, cudaMemcpyDeviceToDevice));
  return d;
}

// Group sizes: `routed` groups around `mean` rows (normal, sd sqrt(mean), seed 1), then
// `shared_rows` in one more group if non-zero.
std::vector<int64_t> group_rows(int routed, double mean, int64_t shared_rows) {
  std::vector<int64_t> rows;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> dist(mean, std::sqrt(mean));
  for (int g = 0; g < routed; ++g) rows.push_back(std::max<int64_t>(0, std::llround(dist(rng))));
  if (shared_rows > 0) rows.push_back(shared_rows);
  return rows;
}

void run_layout(const char* label, int64_t n, int64_t k, bool fused,
                const std::vector<int64_t>& rows) {
  const int groups = static_cast<int>(rows.size());
  std::vector<int32_t> off(rows.size() + 1, 0);
  for (size_t g = 0; g < rows.size(); ++g) off[g + 1] = off[g] + static_cast<int32_t>(rows[g]);
  const int64_t total = off.back();
  uint16_t* a = random_bf16(static_cast<size_t>(total * k));
  uint16_t* b = random_bf16(static_cast<size_t>(groups) * n * k);
  uint16_t* d = nullptr;
  uint16_t* act = nullptr;
  int32_t* d_off = nullptr;
  CHECK_CUDA(cudaMalloc(&d, static_cast<size_t>(total * n) * 2));
  if (fused) CHECK_CUDA(cudaMalloc(&act, static_cast<size_t>(total * n / 2) * 2));
  CHECK_CUDA(cudaMalloc(&d_off, off.size() * 4));
  CHECK_CUDA(cudaMemcpy(d_off, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
  GroupedGemmShape shape{GemmOperand::kBF16, groups, n, k, total};
  if (fused)
    shape.act = {true, servekit::Activation::kSwiGLU, servekit::cuda::ActFormat::kBF16, 128};
  GroupedGemmOperands ops;
  ops.group_offsets = d_off;
  ops.a = a;
  ops.b = b;
  ops.d = d;
  ops.act_out = act;
  ops.rows_hint = total;
  const char* tiles[] = {"swap", "pair"};
  for (int round = 1; round <= 3; ++round)
    for (const char* tile : tiles) {
      setenv("SERVEKIT_GEMM_TILE", tile, 1);  // read by create()
      auto gemm = GroupedGemm::create(shape, 0);
      const auto cfg = gemm->config(total);
      const double us = median_run_us([&] { gemm->run(ops, nullptr); }, 3, 10);
      std::printf(
          "%-10s G=%-4d rows=%-6lld round %d  %-4s cluster %dx%d  %9.1f us  %6.1f TFLOP/s\n", label,
          groups, static_cast<long long>(total), round, tile, cfg.tile.cluster_m,
          cfg.tile.cluster_n, us, 2.0 * total * n * k / us / 1e6);
      std::fflush(stdout);
    }
  unsetenv("SERVEKIT_GEMM_TILE");
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(d));
  if (act) CHECK_CUDA(cudaFree(act));
  CHECK_CUDA(cudaFree(d_off));
}

}  // namespace

int main() {
  try {
    const auto routed = group_rows(256, 256.0, 0);
    const auto with_shared = group_rows(256, 256.0, 8192);
    const std::vector<int64_t> shared_only{8192};
    run_layout("ds-g1", 4096, 7168, true, routed);
    run_layout("ds-g1+sh", 4096, 7168, true, with_shared);
    run_layout("ds-g1-sh", 4096, 7168, true, shared_only);
    run_layout("ds-g2", 7168, 2048, false, routed);
    run_layout("ds-g2+sh", 7168, 2048, false, with_shared);
    run_layout("q235-g1", 3072, 4096, true, group_rows(128, 256.0, 0));
  } catch (const servekit::Error& e) {
    std::fprintf(stderr, "gemm_pair: %s\n", e.what());
    return 1;
  }
  return 0;
}
