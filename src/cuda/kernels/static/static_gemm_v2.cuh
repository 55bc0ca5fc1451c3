// The static MoE GEMM, v2: the weights stream through a shared-memory ring filled by bulk copies
// (TMA) instead of the per-warp register ring of v1 (static_gemm.cuh; same work, same results).
//
// Why: v1 keeps 6-8 16-byte loads per lane in flight (<= 64 KB per SM), each an instruction, and
// its unit switch chases task -> expert -> weights before the next loads issue; every stall of
// the consumers (activation staging, fix-up) also stops the issue of loads. Here one producer
// warp walks the CTA's step list on its own and keeps kSlots steps (~64 KB per CTA, ~128 KB per
// SM at 2 CTAs) in flight, one bulk copy per step (a step's 8 tiles are one contiguous block,
// static_layout.h) plus the step's scales (cp.async, too small for a bulk copy). The 8 consumer
// warps read their fragments from the slot, decode and multiply exactly as v1 (the same
// loaders and static_mma_kblock), and release the slot.
//
// Ring protocol, slot s = i % kSlots for the CTA's i-th step, use n = i / kSlots:
//   full[s]  expects 1 arrival (the producer's elected lane, with the step's code bytes as
//            transaction count) + 32 for scaled formats (each producer lane's cp.async arrival);
//            consumers wait for its phase n (parity n & 1).
//   empty[s] expects all 256 consumer threads, each after its last read of the slot; the
//            producer waits for phase n - 1 (parity (n & 1) ^ 1, immediate for n = 0) before
//            refilling. Every consumer waits full before arriving on empty, so no arrival can
//            count toward the wrong phase, and nobody runs two phases ahead.
// The producer never joins a consumer barrier (consumers sync on named barrier 1, 256 threads),
// so staging, fix-ups and epilogues never stop the weight stream.
//
// Activations: staged as in v1 (static_stage.cuh) into a smaller window (the ring takes the
// rest of the shared memory), but only when the unit's task or k range is not already staged:
// consecutive units of a CTA are mostly the same task (unit-major order), so a task whose rows
// fit the window across K is staged and quantized once per CTA instead of once per unit.
#pragma once

#include "cuda/kernels/static/static_gemm.cuh"
#include "cuda/kernels/static/static_pipe.cuh"

namespace servekit::cuda::static_moe {

constexpr int kStaticV2Threads = kStaticThreads + 32;  // 8 consumer warps + 1 producer warp
constexpr int kStaticV2WindowBytes = 40 * 1024;
constexpr int kStaticRingBytes = 64 * 1024;
constexpr int kStaticMaxSlots = 16;
// 112 KB: two CTAs per SM (2 x (112 KB + static + 1 KB reserved) <= 228 KB).
constexpr int kStaticV2SmemBytes = kStaticV2WindowBytes + kStaticScaleBytes + kStaticRingBytes;

template <StaticFormat F>
struct StaticRing {
  static constexpr int kBlk = static_cast<int>(static_kblock_code_bytes(F));
  static constexpr int kCodeBytes = kStaticWarps * kBlk;          // codes of one step
  static constexpr int kScaleTile = static_scale_block_bytes(F);  // per tile; 0: no scales
  static constexpr int kSlotBytes = (kCodeBytes + kStaticWarps * kScaleTile + 127) / 128 * 128;
  static constexpr int kSlots = kStaticRingBytes / kSlotBytes < kStaticMaxSlots
                                    ? kStaticRingBytes / kSlotBytes
                                    : kStaticMaxSlots;
  static constexpr int kChunk = kScaleTile >= 16 ? 16 : 8;  // cp.async size of the scales
  static constexpr int kChunksPerTile = kScaleTile > 0 ? kScaleTile / kChunk : 1;
  static constexpr uint32_t kFullArrivals = kScaleTile > 0 ? 33 : 1;
  static_assert(kSlots >= 2 && kStaticWarps * kChunksPerTile <= 32, "ring geometry");
};

// Max over the consumer warps (threads 0..255 call it).
__device__ __forceinline__ uint32_t static_consumer_max(uint32_t v, uint32_t* red) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  named_sync(kStaticThreads);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  named_sync(kStaticThreads);
  uint32_t m = 0;
  for (int w = 0; w < kStaticWarps; ++w) m = max(m, red[w]);
  return m;
}

// The producer warp: one bulk copy of the step's codes (lane 0) and the step's scales (one
// cp.async piece per lane) into the next slot, for steps [s_begin, s_end) in order.
template <StaticFormat F, bool kDown>
__device__ __forceinline__ void static_produce(const StaticGemmParams& p, int s_begin, int s_end,
                                               uint8_t* ring, uint64_t* full, uint64_t* empty,
                                               int lane) {
  using R = StaticRing<F>;
  const int kblocks = p.kblocks;
  int u = -1, gt = 0;  // the current unit and its live tiles (0: the expert has no weights)
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  for (int s = s_begin, i = 0; s < s_end; ++s, ++i) {
    const int su = s / kblocks, kb = s - su * kblocks;
    if (su != u) {
      u = su;
      const StaticTask task = p.tasks[u / p.ngroups];
      const int grp = u % p.ngroups;
      const StaticExpertPtrs e = p.experts[task.group];
      const uint8_t* base = kDown ? e.w2 : e.w13;
      gt = base != nullptr ? static_cast<int>(static_group_tiles(p.tiles, grp)) : 0;
      if (base != nullptr) {
        codes = base + static_code_block_offset(F, p.tiles, kblocks, grp * kStaticWarps, 0);
        scales =
            base + p.code_bytes + static_cast<int64_t>(grp) * kStaticWarps * p.tile_scale_bytes;
      }
    }
    const int slot = i % R::kSlots;
    mbar_wait(&empty[slot], ((i / R::kSlots) & 1) ^ 1);
    uint8_t* dst = ring + slot * R::kSlotBytes;
    if (lane == 0) {
      if (gt > 0) {
        const uint32_t bytes = static_cast<uint32_t>(gt * R::kBlk);
        mbar_arrive_expect_tx(&full[slot], bytes);
        bulk_copy_g2s(dst, codes + static_cast<int64_t>(kb) * bytes, bytes, &full[slot]);
      } else {
        mbar_arrive(&full[slot]);
      }
    }
    if constexpr (R::kScaleTile > 0) {
      const int j = lane / R::kChunksPerTile, c = lane % R::kChunksPerTile;
      if (j < gt) {
        const int64_t off = static_cast<int64_t>(j) * p.tile_scale_bytes +
                            (kb / static_scale_block_kblocks(F)) * R::kScaleTile + c * R::kChunk;
        cp_async_g2s<R::kChunk>(dst + R::kCodeBytes + j * R::kScaleTile + c * R::kChunk,
                                scales + off);
      }
      cp_async_arrive_noinc(&full[slot]);
    }
  }
  if constexpr (R::kScaleTile > 0) asm volatile("cp.async.wait_all;" ::: "memory");
}

template <StaticFormat F, bool kDown>
__global__ void __launch_bounds__(kStaticV2Threads, 2)
    static_gemm_v2_kernel(const __grid_constant__ StaticGemmParams p) {
  using L = StaticLoader<F>;
  using R = StaticRing<F>;
  constexpr bool kPerTensor = F == StaticFormat::kFP8PerTensor;
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* sB = smem;
  float* sXs = reinterpret_cast<float*>(smem + kStaticV2WindowBytes);
  uint8_t* ring = smem + kStaticV2WindowBytes + kStaticScaleBytes;
  __shared__ __align__(8) uint64_t full[R::kSlots];
  __shared__ __align__(8) uint64_t empty[R::kSlots];
  __shared__ uint32_t red[32];
  __shared__ int last_flag;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < R::kSlots; ++s) {
      mbar_init(&full[s], R::kFullArrivals);
      mbar_init(&empty[s], kStaticThreads);
    }
    mbar_init_fence();
  }
  __syncthreads();  // the last CTA-wide barrier: the producer warp leaves the consumers here

  const int grid = gridDim.x, cta = blockIdx.x;
  // GEMM1's task list comes from the planner. GEMM2 reads it (and streams weights) before its
  // wait: the planner finished before GEMM1 triggered; only h and its maxima come from GEMM1.
  if (!kDown || warp < kStaticWarps) pdl_wait();
  pdl_trigger();
  const int ntasks = *p.num_tasks;
  const int kblocks = p.kblocks;
  const int total = ntasks * p.ngroups * kblocks;
  const int s_begin = total ? static_cast<int>(static_cta_begin(cta, total, grid)) : 0;
  const int s_end = total ? static_cast<int>(static_cta_begin(cta + 1, total, grid)) : 0;
  if (warp == kStaticWarps) {
    static_produce<F, kDown>(p, s_begin, s_end, ring, full, empty, lane);
    return;
  }

  const int g = lane >> 2, t = lane & 3;
  const int u_first = s_begin / kblocks;
  const int u_last = s_end > s_begin ? (s_end - 1) / kblocks : u_first - 1;
  const int first_kb0 = s_begin - u_first * kblocks;
  const int last_kb1 = s_end - u_last * kblocks;

  float act_scale = 1.0f;
  if constexpr (kPerTensor) {
    uint32_t m = 0;
    for (int i = threadIdx.x; i < p.amax_in_count; i += kStaticThreads) m = max(m, p.amax_in[i]);
    act_scale = fp8_scale_of_amax_bits(static_consumer_max(m, red));
  }
  if (kDown && total == 0 && p.out != nullptr) {  // nothing routed here: the output is zero
    for (int64_t i = cta * kStaticThreads + threadIdx.x; i < p.tokens * p.n;
         i += static_cast<int64_t>(grid) * kStaticThreads)
      p.out[i] = 0;
  }

  uint32_t amax = 0;
  int staged_task = -1, staged_w0 = 0, staged_end = 0;  // what the window holds
  int i = 0;                                            // the CTA's step count: ring position
  for (int u = u_first; u <= u_last; ++u) {
    const int kb0 = u == u_first ? first_kb0 : 0, kb1 = u == u_last ? last_kb1 : kblocks;
    const int ti = u / p.ngroups;
    const StaticTask task = p.tasks[ti];
    const int tile = static_cast<int>(u % p.ngroups) * kStaticWarps + warp;
    const StaticExpertPtrs e = p.experts[task.group];
    const bool live = (kDown ? e.w2 : e.w13) != nullptr && tile < p.tiles;
    const int nts = (task.rows + 7) / 8;
    const int win = static_window_kblocks(task.rows, kblocks, kStaticV2WindowBytes);
    const int row_stride = static_row_stride(win);
    const uint8_t* bk = sB + 16 * t;
    const int row_off = g * row_stride, last_off = (task.rows - 1) * row_stride;
    int w0 = staged_w0;
    if (ti != staged_task || kb0 < staged_w0 || kb1 > staged_end) {
      w0 = kb0 & ~1;
      staged_task = ti;
      staged_w0 = w0;
      staged_end = min(w0 + win, kb1);
      named_sync(kStaticThreads);  // the previous unit's readers are done with the window
      static_stage_window<F, kDown, static_stage_batch<F>()>(p, task, w0, staged_end, sB,
                                                             row_stride, sXs, act_scale);
      named_sync(kStaticThreads);
    }
    int w1 = w0 + win;

    float acc[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[nt][j] = 0.0f;

    for (int kb = kb0; kb < kb1; ++kb, ++i) {
      if (kb >= w1) {  // the step leaves the staged window (kb == w1, even): slide it
        w0 = kb;
        w1 = w0 + win;
        staged_w0 = w0;
        staged_end = min(w1, kb1);
        named_sync(kStaticThreads);
        static_stage_window<F, kDown, static_stage_batch<F>()>(p, task, w0, staged_end, sB,
                                                               row_stride, sXs, act_scale);
        named_sync(kStaticThreads);
      }
      const int slot = i % R::kSlots;
      mbar_wait(&full[slot], (i / R::kSlots) & 1);
      if (live) {
        const uint8_t* src = ring + slot * R::kSlotBytes;
        uint4 raw[L::kLoads];
#pragma unroll
        for (int q = 0; q < L::kLoads; ++q)
          raw[q] = lds128(src + warp * R::kBlk + q * 512 + lane * 16);
        const int sc_off = static_cast<int>(static_lane_scale_offset(F, kb, g, t)) -
                           (kb / static_scale_block_kblocks(F)) * R::kScaleTile;
        const typename L::Scale sc =
            L::scale_at(src + R::kCodeBytes + warp * R::kScaleTile + sc_off);
        const int kbl = kb - w0;
        static_mma_kblock<F>(raw, sc, bk + kbl * 128, row_off, 8 * row_stride, last_off,
                             sXs + (kbl / 2) * 32 + 2 * t, nts, acc);
      }
      mbar_arrive(&empty[slot]);  // this thread's reads of the slot are done
    }

    // Finish the unit: here if this CTA computed all of it, else by the last of its CTAs.
    bool finish = kb0 == 0 && kb1 == kblocks;
    if (!finish) {
      const int slot = u == u_first ? 0 : 1;
      float4* mine = reinterpret_cast<float4*>(p.partials) +
                     ((static_cast<int64_t>(cta) * 2 + slot) * kStaticWarps + warp) * 4 * 32 + lane;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
        if (nt < nts) mine[nt * 32] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
      __threadfence();
      named_sync(kStaticThreads);
      const StaticSegment seg = static_segment(u, cta, kblocks, total, grid);
      if (threadIdx.x == 0)
        last_flag = atomicAdd(p.unit_counters + u, 1) == static_unit_parts(seg, total, grid) - 1;
      named_sync(kStaticThreads);
      finish = last_flag;
      if (finish) {
        __threadfence();
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[nt][j] = 0.0f;
        for (int c = seg.first_cta; c <= seg.last_cta; ++c) {  // in k order: deterministic
          if (!static_cta_has_steps(c, total, grid)) continue;
          const int cs = static_partial_slot(u, c, kblocks, total, grid);
          const float4* part = reinterpret_cast<const float4*>(p.partials) +
                               ((static_cast<int64_t>(c) * 2 + cs) * kStaticWarps + warp) * 4 * 32 +
                               lane;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            if (nt < nts) {
              const float4 v = __ldcg(part + nt * 32);
              acc[nt][0] += v.x, acc[nt][1] += v.y, acc[nt][2] += v.z, acc[nt][3] += v.w;
            }
        }
        if (threadIdx.x == 0) p.unit_counters[u] = 0;  // ready for the next launch
      }
    }
    if (finish && tile < p.tiles) {
      if constexpr (kDown) {
        static_gemm2_epilogue(p, task, tile, acc, e.w2_alpha * act_scale);
      } else {
        amax = max(amax, static_gemm1_epilogue(p, task, tile, acc, e.w13_alpha * act_scale));
      }
    }
    if (kDown && finish && p.out != nullptr) {  // the column group's last unit combines it
      __threadfence();
      named_sync(kStaticThreads);
      const int cg = static_cast<int>(u % p.ngroups);
      if (threadIdx.x == 0) last_flag = atomicAdd(p.column_counters + cg, 1) == ntasks - 1;
      named_sync(kStaticThreads);
      if (last_flag) {
        __threadfence();
        static_combine_columns(p, cg);
        if (threadIdx.x == 0) p.column_counters[cg] = 0;
      }
    }
  }
  if (!kDown && p.amax_out != nullptr) {
    amax = static_consumer_max(amax, red);
    if (threadIdx.x == 0) p.amax_out[cta] = amax;
  }
}

}  // namespace servekit::cuda::static_moe
