// Probe for docs/perf-notes.md (twenty-seventh pass, Next 1): can a GEMM's token-side TMA loads
// gather the rows themselves, one 128-byte row per TMA load, instead of one box load from a
// gathered copy of the rows?
//   1. Layout. One CTA loads 144 rows of x [T, K] bf16, picked by a random index list, with 144
//      one-row boxes (64 columns, 128-byte swizzle) to consecutive 128-byte rows of a 1024-aligned
//      buffer, and the same rows from a gathered contiguous copy with one 64 x 144 box. Prints
//      whether the two buffers are byte-identical, and whether both match the swizzle the GEMM
//      expects (16-byte chunk c of row r at chunk c ^ (r & 7) of its 128-byte line).
//   2. Rate. One CTA per SM walks token tiles of 144 rows through K = 2048 in 64-column k-steps
//      (18 KB a step), S stages, nothing consuming: the gathered form issues 144 one-row loads a
//      step from the 32 lanes of one warp (x: 8192 x 2048 bf16, 33.5 MB, L2-resident as in the
//      layer), the box form one 64 x 144 box from the gathered copy (268 MB, from HBM). Prints
//      microseconds per k-step per SM; a 256 x 144 x 64 bf16 GEMM k-step takes ~1 us at
//      ~600 TFLOP/s, so the gathered form keeps up if it stays well under that.
// Build and run on the device:
//   nvcc -O3 -arch=sm_90a -o tma_rowgather bench/tools/tma_rowgather.cu && ./tma_rowgather
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "probe_util.cuh"

constexpr int kRows = 144;                 // tokens of the swap-AB tile
constexpr int kLine = 128;                 // bytes of one row per k-step (64 bf16)
constexpr int kStepBytes = kRows * kLine;  // 18432
constexpr int kMaxStages = 8;

__device__ inline void expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ inline void load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}

__device__ inline void init_bars(uint64_t* bars, int n) {
  for (int s = 0; s < n; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bars[s])));
  asm volatile("fence.mbarrier_init.release.cluster;\n fence.proxy.async.shared::cta;" ::
                   : "memory");
}

// 1. One warp: buffer A by 144 one-row loads of x at rows idx[i], buffer B by one box of the
// gathered copy; both copied out raw.
__global__ void __launch_bounds__(32, 1) layout_kernel(const __grid_constant__ CUtensorMap rows_map,
                                                       const __grid_constant__ CUtensorMap box_map,
                                                       const int* idx, int kstep, uint8_t* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[2];
  uint8_t* buf =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem) + 1023) & ~uintptr_t{1023});
  const uint32_t a = smem_u32(buf), b = a + kStepBytes;  // 18432 = 18 x 1024: b stays aligned
  if (threadIdx.x == 0) {
    init_bars(bars, 2);
    expect_bytes(smem_u32(&bars[0]), kStepBytes);
    expect_bytes(smem_u32(&bars[1]), kStepBytes);
  }
  __syncwarp();
  for (int i = threadIdx.x; i < kRows; i += 32)
    load_2d(a + i * kLine, &rows_map, smem_u32(&bars[0]), kstep * 64, idx[i]);
  if (threadIdx.x == 0) load_2d(b, &box_map, smem_u32(&bars[1]), kstep * 64, 0);
  bar_wait(smem_u32(&bars[0]), 0);
  bar_wait(smem_u32(&bars[1]), 0);
  for (int i = threadIdx.x; i < 2 * kStepBytes / 16; i += 32)
    reinterpret_cast<uint4*>(out)[i] = reinterpret_cast<const uint4*>(buf)[i];
}

// 2. One CTA per SM, one warp: token tiles t = blockIdx.x, + gridDim.x, ... of 144 rows, ksteps
// each, through `stages` stage buffers; gather: 144 one-row loads of x at idx[t * 144 + i]
// (lanes split the rows), else one box of the gathered copy at row t * 144.
__global__ void __launch_bounds__(32, 1)
    rate_kernel(const __grid_constant__ CUtensorMap rows_map,
                const __grid_constant__ CUtensorMap box_map, const int* idx, int tiles, int ksteps,
                int stages, bool gather) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxStages];
  const uint32_t base = (smem_u32(smem) + 1023u) & ~1023u;
  if (threadIdx.x == 0) init_bars(bars, stages);
  __syncwarp();
  int issued = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    int my_rows[(kRows + 31) / 32];
    for (int j = 0; j * 32 + static_cast<int>(threadIdx.x) < kRows; ++j)
      my_rows[j] = idx[t * kRows + j * 32 + threadIdx.x];
    for (int k = 0; k < ksteps; ++k, ++issued) {
      const int s = issued % stages;
      const uint32_t bar = smem_u32(&bars[s]), dst = base + s * kStepBytes;
      if (issued >= stages) bar_wait(bar, ((issued / stages) - 1) & 1);
      if (threadIdx.x == 0) expect_bytes(bar, kStepBytes);
      __syncwarp();
      if (gather) {
        for (int j = 0; j * 32 + static_cast<int>(threadIdx.x) < kRows; ++j)
          load_2d(dst + (j * 32 + threadIdx.x) * kLine, &rows_map, bar, k * 64, my_rows[j]);
      } else if (threadIdx.x == 0) {
        load_2d(dst, &box_map, bar, k * 64, t * kRows);
      }
    }
  }
  for (int i = issued > stages ? issued - stages : 0; i < issued; ++i)
    bar_wait(smem_u32(&bars[i % stages]), (i / stages) & 1);
}

// A [rows, cols] bf16 row-major map with a (64, box_rows) box and the 128-byte swizzle.
CUtensorMap make_map(EncodeTiled encode, void* p, uint64_t rows, uint64_t cols, uint32_t box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {64, box_rows}, one[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, p, dims, strides, box, one,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", int(r));
    std::exit(1);
  }
  return map;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const EncodeTiled encode = tensor_map_encoder();
  const int tokens = 8192, cols = 2048, ksteps = cols / 64;
  // The routed rows of qwen3-30b at 8192 tokens (top-8): 65536 rows = 455 whole tiles of 144.
  const int tiles = 455, routed = tiles * kRows;
  std::mt19937 rng(27);
  std::vector<uint16_t> x(size_t(tokens) * cols);
  for (auto& v : x) v = static_cast<uint16_t>(rng());
  std::vector<int> idx(routed);
  for (auto& i : idx) i = static_cast<int>(rng() % tokens);
  std::vector<uint16_t> g(size_t(routed) * cols);
  for (int r = 0; r < routed; ++r)
    std::memcpy(&g[size_t(r) * cols], &x[size_t(idx[r]) * cols], cols * 2);
  uint16_t *dx = nullptr, *dg = nullptr;
  int* didx = nullptr;
  uint8_t* dout = nullptr;
  CHECK(cudaMalloc(&dx, x.size() * 2));
  CHECK(cudaMalloc(&dg, g.size() * 2));
  CHECK(cudaMalloc(&didx, idx.size() * sizeof(int)));
  CHECK(cudaMalloc(&dout, 2 * kStepBytes));
  CHECK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dg, g.data(), g.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(didx, idx.data(), idx.size() * sizeof(int), cudaMemcpyHostToDevice));
  const CUtensorMap rows_map = make_map(encode, dx, tokens, cols, 1);
  const CUtensorMap box_map = make_map(encode, dg, routed, cols, kRows);

  // 1. Layout, at k-step 5 of the first tile.
  const int kstep = 5;
  CHECK(cudaFuncSetAttribute(layout_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             2 * kStepBytes + 1024));
  CHECK(cudaMemset(dout, 0xEE, 2 * kStepBytes));
  layout_kernel<<<1, 32, 2 * kStepBytes + 1024>>>(rows_map, box_map, didx, kstep, dout);
  CHECK(cudaDeviceSynchronize());
  std::vector<uint8_t> out(2 * kStepBytes);
  CHECK(cudaMemcpy(out.data(), dout, out.size(), cudaMemcpyDeviceToHost));
  const bool same = std::memcmp(out.data(), out.data() + kStepBytes, kStepBytes) == 0;
  long bad_swizzle[2] = {0, 0};
  for (int buf = 0; buf < 2; ++buf)
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < 8; ++c) {
        const uint8_t* want =
            reinterpret_cast<const uint8_t*>(&g[size_t(r) * cols + kstep * 64 + c * 8]);
        const uint8_t* got = out.data() + buf * kStepBytes + r * kLine + ((c ^ (r & 7)) * 16);
        bad_swizzle[buf] += std::memcmp(want, got, 16) != 0;
      }
  std::printf(
      "layout: one-row loads %s the box load; chunks off the expected swizzle: rows %ld, "
      "box %ld (of %d)\n",
      same ? "EQUAL" : "DIFFER from", bad_swizzle[0], bad_swizzle[1], kRows * 8);

  // 2. Rate.
  CHECK(cudaFuncSetAttribute(rate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kMaxStages * kStepBytes + 1024));
  for (bool gather : {false, true})
    for (int stages : {2, 4, 8}) {
      auto launch = [&] {
        rate_kernel<<<sms, 32, stages * kStepBytes + 1024>>>(rows_map, box_map, didx, tiles, ksteps,
                                                             stages, gather);
      };
      const float best_ms = best_of_5_ms(launch);
      const double steps_per_sm = double((tiles + sms - 1) / sms) * ksteps;
      const double gb = double(tiles) * ksteps * kStepBytes / 1e9;
      std::printf("rate: %-8s %d stages: %8.1f us, %.2f TB/s, %.3f us per k-step per SM\n",
                  gather ? "gather" : "box", stages, best_ms * 1e3, gb / best_ms,
                  best_ms * 1e3 / steps_per_sm);
    }
  return 0;
}
