// TMA read-bandwidth probe for docs/perf-notes.md (twenty-third pass): the grouped GEMM's
// weight (B) loads as the TMA engine issues them, on the H200's HBM. One CTA per SM, one thread
// issuing 2D/3D tensor loads of a 256-row x 64-element bf16 box (32 KB, 128-byte swizzle, the
// bf16 GEMM's B stage) into S shared-memory stages, waiting on each stage's mbarrier before
// reusing it; nothing computes. CTA c walks 256-row tiles c, c + grid, ...; per tile its k-steps
// in order, as a GEMM CTA walks its K loop.
//   row-major: the weights as [rows, pitch] (K contiguous), box (64, 256) at (64 k, 256 t);
//   pre-tiled: each k-step's 32 KB contiguous, a 3D map (64, 256, blocks), box at (0, 0, block).
// 1 GiB of weights (past the 50 MB L2), the best of 5 timed runs after a warm-up. Build and run
// on the device:
//   nvcc -O3 -arch=sm_90a -o tmabw bench/tools/tmabw.cu && ./tmabw
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "probe_util.cuh"

constexpr int kBoxBytes = 256 * 64 * 2;
constexpr int kMaxStages = 6;

// tiles of 256 rows, ksteps boxes each; pretiled picks the 3D coordinates.
__global__ void __launch_bounds__(32, 1)
    tma_read_kernel(const __grid_constant__ CUtensorMap map, int tiles, int ksteps, int stages,
                    bool pretiled) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxStages];
  if (threadIdx.x != 0) return;
  const uint32_t base = (smem_u32(smem) + 1023u) & ~1023u;  // the 128-byte swizzle's alignment
  for (int s = 0; s < stages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bars[s])));
  asm volatile("fence.mbarrier_init.release.cluster;\n fence.proxy.async.shared::cta;" ::
                   : "memory");
  int issued = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x)
    for (int k = 0; k < ksteps; ++k, ++issued) {
      const int s = issued % stages;
      const uint32_t bar = smem_u32(&bars[s]);
      if (issued >= stages) bar_wait(bar, ((issued / stages) - 1) & 1);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
                   "r"(kBoxBytes)
                   : "memory");
      const uint32_t dst = base + s * kBoxBytes;
      if (pretiled) {
        asm volatile(
            "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
            "l"(&map), "r"(bar), "r"(0), "r"(0), "r"(t * ksteps + k)
            : "memory");
      } else {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
            "l"(&map), "r"(bar), "r"(k * 64), "r"(t * 256)
            : "memory");
      }
    }
  // Drain: wait for the last load of every stage.
  for (int i = issued > stages ? issued - stages : 0; i < issued; ++i)
    bar_wait(smem_u32(&bars[i % stages]), (i / stages) & 1);
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const EncodeTiled encode = tensor_map_encoder();
  const size_t bytes = size_t{1} << 30;
  void* a = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  CHECK(cudaFuncSetAttribute(tma_read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kMaxStages * kBoxBytes + 1024));
  const cuuint32_t box2[2] = {64, 256}, box3[3] = {64, 256, 1}, one[3] = {1, 1, 1};
  // Row pitches of the presets' weights, in bytes: 4096 (bf16 K = 2048, qwen3-30b GEMM1), 7168
  // (fp8 K = 7168, deepseek-v3 GEMM1), 8192 (bf16 K = 4096, mixtral GEMM1), 14336 (bf16
  // K = 7168). An fp8 B stage (256 x 128 e4m3) has the bf16 box's shape in bytes.
  for (size_t pitch : {4096, 7168, 8192, 14336}) {
    const int ksteps = static_cast<int>(pitch / 128);
    const int tiles = static_cast<int>(bytes / (256 * pitch));
    const double gb = double(tiles) * 256 * pitch / 1e9;
    for (bool pretiled : {false, true}) {
      CUtensorMap map{};
      CUresult r;
      if (pretiled) {
        const cuuint64_t dims[3] = {64, 256, cuuint64_t(tiles) * ksteps};
        const cuuint64_t strides[2] = {128, kBoxBytes};
        r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, a, dims, strides, box3, one,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      } else {
        const cuuint64_t dims[2] = {pitch / 2, cuuint64_t(tiles) * 256};
        const cuuint64_t strides[1] = {pitch};
        r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, a, dims, strides, box2, one,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      }
      if (r != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", int(r));
        return 1;
      }
      for (int stages : {2, 4, 6}) {
        auto launch = [&] {
          tma_read_kernel<<<sms, 32, stages * kBoxBytes + 1024>>>(map, tiles, ksteps, stages,
                                                                  pretiled);
        };
        const float best_ms = best_of_5_ms(launch);
        std::printf("tma pitch %5zu B, %d stages, %-9s %.3f GB in %8.1f us: %.2f TB/s\n", pitch,
                    stages, pretiled ? "pretiled" : "row-major", gb, best_ms * 1e3, gb / best_ms);
      }
    }
  }
  return 0;
}
