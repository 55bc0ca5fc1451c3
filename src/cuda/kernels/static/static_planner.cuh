// The static path's planner: virtual-expert tasks from the plan's group offsets (CTA 0, unless
// the one-CTA route + plan kernel built them already: StaticPlanParams::tasks null), and
// for fp8_per_tensor the |x| maxima of the MoE input (every CTA one slice), for fp8_block128 x
// quantized once per token (GEMM1 then stages a copy instead of quantizing the same rows again
// for every unit). The task list: static_task_build.cuh.
#pragma once

#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_params.h"
#include "cuda/kernels/static/static_task_build.cuh"
#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticPlanThreads = kStaticTaskBuildThreads;

__global__ void __launch_bounds__(kStaticPlanThreads) static_plan_kernel(const StaticPlanParams p) {
  __shared__ uint32_t red[32];
  pdl_wait();  // the plan (and x) come from the previous kernels
  pdl_trigger();
  if (blockIdx.x == 0 && p.tasks != nullptr)
    static_build_tasks(p.group_offsets, p.num_groups,
                       {p.tasks, p.num_tasks, p.task_capacity, p.partition});

  // fp8_block128: each half-warp quantizes 128-column chunks of x rows; with more than one CTA,
  // CTA 0 builds the task list while the others quantize.
  const int q_first = p.xq != nullptr && gridDim.x > 1 ? 1 : 0;
  if (p.xq != nullptr && static_cast<int>(blockIdx.x) >= q_first) {
    const int64_t kchunks = (p.hidden + 127) / 128;
    const int64_t chunks = p.x_elems / p.hidden * kchunks;
    const int l = threadIdx.x % 16;
    const unsigned half_mask = 0xFFFFu << (16 * ((threadIdx.x / 16) & 1));
    constexpr int kHalves = kStaticPlanThreads / 16;
    // Whole half-warps iterate together (the bound is per half-warp), as the shuffle needs.
    for (int64_t i = (blockIdx.x - q_first) * int64_t{kHalves} + threadIdx.x / 16; i < chunks;
         i += (gridDim.x - q_first) * int64_t{kHalves}) {
      const int64_t t = i / kchunks, c = i % kchunks, col = c * 128 + l * 8;
      const bool in = col < p.hidden;
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (in) {
        const uint4 a = __ldg(reinterpret_cast<const uint4*>(p.x + t * p.hidden + col));
        const uint32_t w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          v[2 * k] = bf16_bits_to_float(w[k] & 0xFFFFu);
          v[2 * k + 1] = bf16_bits_to_float(w[k] >> 16);
        }
      }
      uint4 codes;
      const float s = static_block128_quant8(v, half_mask, codes);
      if (in) *reinterpret_cast<uint4*>(p.xq + t * p.hidden + col) = codes;
      if (l == 0) p.xs[i] = s;
    }
  }

  if (p.amax_slots != nullptr) {
    const int64_t per = (p.x_elems + gridDim.x - 1) / gridDim.x;
    const int64_t b = per * blockIdx.x, e = b + per < p.x_elems ? b + per : p.x_elems;
    uint32_t m = 0;
    for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x)
      m = max(m, abs_bits(bf16_bits_to_float(p.x[i])));
    m = cta_max_u32(m, red);
    if (threadIdx.x == 0) p.amax_slots[blockIdx.x] = m;
  }
}

}  // namespace servekit::cuda::static_moe
