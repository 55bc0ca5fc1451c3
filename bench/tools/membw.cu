// Memory-bandwidth probe for docs/perf-notes.md (twenty-second pass): what the H200's HBM gives
// to a read-only, a write-only, a 1:1 copy and a 1:4 read:write stream (the shape of the
// dynamic path's token-major gather: one token row read, several rows written). 16-byte
// accesses, grid-stride, 8 CTAs of 256 threads per SM; 1 GiB buffers (well past the 50 MB L2);
// the best of 5 timed runs after a warm-up, by CUDA events.
// Session 23 added the grouped GEMM's weight-load shape: one persistent CTA per SM walks 256-row
// tiles of a row-major [rows, pitch] matrix, each k-step reading 128 bytes of every row (a TMA
// box of 256 x 128 B), against the same walk over a pre-tiled layout where each k-step's 32 KB
// is contiguous. Build and run on the device:
//   nvcc -O3 -arch=sm_90a -o membw bench/tools/membw.cu && ./membw
#include <cstdio>
#include <cstdlib>

#include "probe_util.cuh"

__global__ void read_kernel(const uint4* a, size_t n, uint4* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint4 v = a[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc;  // never, but not dead
}

__global__ void write_kernel(uint4* b, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    b[i] = make_uint4(static_cast<unsigned>(i), 1, 2, 3);
}

// Reads n / fan elements of a and writes each to fan places of b (b has n elements).
__global__ void fan_kernel(const uint4* a, uint4* b, size_t n, int fan) {
  const size_t m = n / fan;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < m;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint4 v = a[i];
    for (int f = 0; f < fan; ++f) b[f * m + i] = v;
  }
}

// One CTA per tile in turn (tile t on CTA t % gridDim.x); per k-step the 256 threads read the
// tile's 256 x 128 B: 8 x 16 B each. Row-major: row r of tile t at (t * 256 + r) * pitch, k-step
// k at + k * 128. Pre-tiled: k-step k of tile t is the 32 KB at (t * ksteps + k) * 32 KB.
__global__ void tile_read_kernel(const uint4* a, size_t tiles, int ksteps, size_t pitch16,
                                 bool pretiled, uint4* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x)
#pragma unroll 2
    for (int k = 0; k < ksteps; ++k) {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int flat = j * 256 + threadIdx.x;  // 16-byte piece of the 32 KB step
        const int r = flat / 8, c = flat % 8;
        const size_t i =
            pretiled ? (t * ksteps + k) * 2048 + flat : (t * 256 + r) * pitch16 + size_t{8} * k + c;
        v[j] = a[i];
      }
#pragma unroll
      for (int j = 0; j < 8; ++j)
        acc.x ^= v[j].x, acc.y ^= v[j].y, acc.z ^= v[j].z, acc.w ^= v[j].w;
    }
  if ((acc.x & acc.y & acc.z & acc.w) == 0xFFFFFFFFu) sink[0] = acc;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = size_t{1} << 30, n = bytes / sizeof(uint4);
  uint4 *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  const int grid = sms * 8, block = 256;
  auto best = [](auto launch) { return best_of_5_ms(launch); };
  const double gb = bytes / 1e9;
  float ms = best([&] { read_kernel<<<grid, block>>>(a, n, b); });
  std::printf("read   %.3f GB in %8.1f us: %.2f TB/s\n", gb, ms * 1e3, gb / ms);
  ms = best([&] { write_kernel<<<grid, block>>>(b, n); });
  std::printf("write  %.3f GB in %8.1f us: %.2f TB/s\n", gb, ms * 1e3, gb / ms);
  ms = best([&] { CHECK(cudaMemsetAsync(b, 0, bytes)); });
  std::printf("memset %.3f GB in %8.1f us: %.2f TB/s\n", gb, ms * 1e3, gb / ms);
  for (int fan : {1, 4, 9}) {
    ms = best([&] { fan_kernel<<<grid, block>>>(a, b, n, fan); });
    const double moved = gb + gb / fan;  // written + read
    std::printf("fan %d  %.3f GB written + %.3f read in %8.1f us: %.2f TB/s moved, %.2f written\n",
                fan, gb, gb / fan, ms * 1e3, moved / ms, gb / ms);
  }
  // Row pitches of the presets' weights: 1536 (int4 / fp8 K ~ 1.5-3K), 4096 (bf16 K = 2048,
  // qwen3-30b GEMM1), 7168 (fp8 K = 7168, deepseek-v3 GEMM1), 14336 (bf16 K = 7168).
  for (size_t pitch : {1536, 4096, 7168, 14336}) {
    const int ksteps = static_cast<int>(pitch / 128);
    const size_t tiles = bytes / (256 * pitch);
    const double tgb = tiles * 256 * pitch / 1e9;
    for (int ctas_per_sm : {1, 2})
      for (bool pretiled : {false, true}) {
        ms = best([&] {
          tile_read_kernel<<<sms * ctas_per_sm, 256>>>(a, tiles, ksteps, pitch / 16, pretiled, b);
        });
        std::printf("tiles pitch %5zu B, %d CTA/SM, %-9s %.3f GB in %8.1f us: %.2f TB/s\n", pitch,
                    ctas_per_sm, pretiled ? "pretiled" : "row-major", tgb, ms * 1e3, tgb / ms);
      }
  }
  return 0;
}
