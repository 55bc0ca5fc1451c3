// fp8_block128's GEMM2 input quantized once: h [rows, I] fp32 -> e4m3 codes (as f16 bits) and
// one scale per row per 128 columns, so GEMM2 stages a copy instead of re-quantizing the same
// h rows at every unit (docs/static_moe.md). Same arithmetic as the staging
// (static_block128_quant8), so the bits GEMM2 multiplies are unchanged.
#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_launch.h"
#include "cuda/runtime.h"

#include <algorithm>

namespace servekit::cuda::static_moe {
namespace {

constexpr int kHQuantThreads = 256;

__global__ void __launch_bounds__(kHQuantThreads) static_hquant_kernel(const StaticHQuant q) {
  pdl_wait();  // h comes from GEMM1
  pdl_trigger();
  const int64_t rows = q.group_offsets[q.num_groups];  // rows in use this call
  const int64_t kchunks = (q.inter + 127) / 128, chunks = rows * kchunks;
  const int l = threadIdx.x % 16;
  const unsigned half_mask = 0xFFFFu << (16 * ((threadIdx.x / 16) & 1));
  constexpr int kHalves = kHQuantThreads / 16;
  // Whole half-warps iterate together (the bound is per half-warp), as the shuffle needs.
  for (int64_t i = blockIdx.x * int64_t{kHalves} + threadIdx.x / 16; i < chunks;
       i += gridDim.x * int64_t{kHalves}) {
    const int64_t r = i / kchunks, c = i % kchunks, col = c * 128 + l * 8;
    const bool in = col < q.inter;
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (in) {
      const float4* src = reinterpret_cast<const float4*>(q.h + r * q.inter + col);
      const float4 a = __ldg(src), b = __ldg(src + 1);
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z,
      v[7] = b.w;
    }
    uint4 codes;
    const float s = static_block128_quant8(v, half_mask, codes);
    if (in) *reinterpret_cast<uint4*>(q.hq + r * q.inter + col) = codes;
    if (l == 0) q.hs[i] = s;
  }
}

}  // namespace

void launch_static_hquant(const StaticHQuant& q, int64_t max_rows, int max_ctas, bool pdl,
                          cudaStream_t stream) {
  const int64_t chunks = max_rows * ((q.inter + 127) / 128);
  const int64_t per_cta = kHQuantThreads / 16;
  const int grid = static_cast<int>(std::min<int64_t>((chunks + per_cta - 1) / per_cta, max_ctas));
  launch_pdl(static_hquant_kernel, grid < 1 ? 1 : grid, kHQuantThreads, 0, pdl, stream, q);
}

}  // namespace servekit::cuda::static_moe
