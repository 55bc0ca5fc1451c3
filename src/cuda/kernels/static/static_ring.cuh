// The static MoE GEMM with a shared-memory weight ring fed by a producer warp (bf16; the other
// formats keep static_gemm_kernel's register ring, see static_uses_ring).
//
// Why. static_gemm_kernel keeps each warp's k-blocks in flight in registers and refills a slot
// only after computing it, so the weight stream of a CTA pauses whenever its warps do: at every
// unit boundary (staging, fix-up, epilogue, combine), at every window slide and while the
// slowest warp of a barrier catches up. Its CTA stamps put ~3 us on each unit boundary
// (docs/perf-notes.md), which for 4-bit units (~15 us of streaming each at 8 tokens) is a large
// share of the time. Here a ninth warp streams the CTA's k-blocks, in the order the consumers
// compute them, into a ring of shared-memory stages with bulk copies (one copy per k-block: the
// 8 tiles of a column group are contiguous, static_layout.h), and runs ahead of the consumers by
// up to the ring's depth, across unit boundaries, whatever the consumers are doing.
//
// Stage s holds one k-block of the unit: the codes of its 8 tiles (static_kblock_stride bytes,
// in global order). Formats with scales are not on the ring (static_uses_ring; the versions that
// staged scales too are branches wip/ring4 and wip/fp8-ring). full[s] completes when the copy
// has landed (the producer's arrive.expect_tx plus the copy's bytes); empty[s] when every lane
// of the 8 consumer warps has read its part of the stage into registers (ring_take). The phase bit
// of both flips at every pass over the ring.
//
// The consumer side is static_gemm_kernel's unit loop (stage the window, k-loop, fix-up,
// epilogue, combine) over the 8 consumer warps, with named barriers instead of __syncthreads.
#pragma once

#include "cuda/kernels/static/static_gemm.cuh"

namespace servekit::cuda::static_moe {

// bf16 only for now: with one 4 KB k-block and 8 scale-block copies per stage the 4-bit formats
// were 40-65% slower than with the register ring (docs/perf-notes.md, eleventh pass).
SERVEKIT_HD constexpr bool static_uses_ring(StaticFormat f) {
  return f == StaticFormat::kBF16;
}

constexpr int kRingThreads = kStaticThreads + 32;  // 8 consumer warps, then the producer warp
constexpr int kRingBytes = 48 * 1024;              // the weight stages
constexpr int kRingWindowBytes = 56 * 1024;        // the activation window
constexpr int kRingMaxStages = 32;
// Arrivals that free a stage: every lane of the 8 consumer warps (ring_take).
constexpr uint32_t kRingEmptyArrivals = kStaticWarps * 32;
constexpr int kRingSmemBytes = kRingBytes + kRingWindowBytes + 2 * kRingMaxStages * 8;
// Two CTAs per SM (the grid and the partials workspace assume kStaticMaxCtasPerSm = 2): an SM has
// 227 KB of shared memory, of which the runtime reserves 1 KB per CTA; 1 KB more for the small
// static shared variables, and the partition table's copy (static_cta_start).
static_assert(2 * (kRingSmemBytes + 2 * 1024 + kStaticPartitionStride * 4) <= 227 * 1024,
              "two ring CTAs per SM");

template <StaticFormat F>
constexpr int ring_stage_bytes() {
  static_assert(static_scale_block_bytes(F) == 0, "the ring stages codes only");
  return static_cast<int>(static_kblock_stride(F));
}
template <StaticFormat F>
constexpr int ring_stages() {
  return kRingBytes / ring_stage_bytes<F>();
}

// A consumer's position in the ring: stage and the parity of the pass over the ring.
struct RingCursor {
  int stage = 0;
  uint32_t phase = 0;
  template <int S>
  __device__ __forceinline__ void advance() {
    if (++stage == S) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// The lane's codes of the next stage, into registers; then the lane frees its part of the stage.
// Every lane arrives on the empty barrier (kRingEmptyArrivals), each after its own reads: with
// lane 0 arriving for the warp after a __syncwarp, compute-sanitizer's racecheck reported the
// producer's next bulk copy into the stage as racing with the other lanes' reads (millions of
// hazards per forward; a fence.proxy.async before the copy did not change that). Every lane
// arriving is clean under racecheck and measured level on the bf16 rows (session 54,
// docs/perf-notes.md).
template <StaticFormat F>
__device__ __forceinline__ void ring_take(const uint8_t* ring, uint64_t* full, uint64_t* empty,
                                          RingCursor& c, int warp, int lane,
                                          uint4 (&raw)[StaticLoader<F>::kLoads]) {
  using L = StaticLoader<F>;
  constexpr int S = ring_stages<F>();
  const uint8_t* st = ring + c.stage * ring_stage_bytes<F>();
  mbar_wait(full + c.stage, c.phase);
  const uint8_t* codes = st + warp * (L::kLoads * 512) + lane * 16;
#pragma unroll
  for (int q = 0; q < L::kLoads; ++q) raw[q] = lds128(codes + q * 512);
  mbar_arrive(empty + c.stage);
  c.advance<S>();
}

// The producer warp: every k-block of the CTA's range, in the consumers' order. Lane 0 copies
// the codes and arms the stage's barrier.
template <StaticFormat F, bool kDown>
__device__ void ring_produce(const StaticGemmParams& p, int ntasks, int kblocks, int u_first,
                             int u_last, int first_kb0, int last_kb1, uint8_t* ring, uint64_t* full,
                             uint64_t* empty, int lane) {
  constexpr int S = ring_stages<F>();
  constexpr int64_t kStride = static_kblock_stride(F);
  const uint64_t policy = l2_evict_first_policy();
  RingCursor c;
  for (int u = u_first; u <= u_last; ++u) {
    const int kb0 = u == u_first ? first_kb0 : 0, kb1 = u == u_last ? last_kb1 : kblocks;
    const StaticTask task = p.tasks[static_unit_task(u, ntasks)];
    const int grp = static_unit_group(u, ntasks);
    const StaticExpertPtrs e = p.experts[task.group];
    const uint8_t* base = kDown ? e.w2 : e.w13;
    const uint8_t* codes = base + static_cast<int64_t>(grp) * kblocks * kStride;
    for (int kb = kb0; kb < kb1; ++kb) {
      mbar_wait(empty + c.stage, c.phase ^ 1);  // a fresh barrier's previous phase is complete
      uint8_t* st = ring + c.stage * ring_stage_bytes<F>();
      if (lane == 0) {
        if (base != nullptr) {
          mbar_arrive_expect_tx(full + c.stage, static_cast<uint32_t>(kStride));
          bulk_copy_g2s(st, codes + kb * kStride, static_cast<uint32_t>(kStride), full + c.stage,
                        policy);
        } else {
          mbar_arrive(full + c.stage);  // an expert without weights here: nothing to compute
        }
      }
      __syncwarp();
      c.advance<S>();
    }
  }
}

// One unit's k-blocks on the consumer side (kNts as in static_unit_kloop).
template <StaticFormat F, bool kDown, int kNts>
__device__ __forceinline__ void ring_unit_kloop(const StaticGemmParams& p, const StaticTask& task,
                                                StaticUnitLoop& s, const uint8_t* ring,
                                                uint64_t* full, uint64_t* empty, RingCursor& c,
                                                float (&acc)[4][4]) {
  using L = StaticLoader<F>;
  const uint8_t* bk = s.sB + 16 * s.t;
  const int nts = (task.rows + 7) / 8;
  for (int kb = s.kb0; kb < s.kb1; ++kb) {
    if (kb >= s.w1) {  // the k-block leaves the staged window: slide it
      named_sync<kStaticThreads>();
      s.w0 = kb & ~1;
      s.w1 = s.w0 + s.win;
      static_stage<F, kDown>(p, task, s.w0, min(s.w1, s.kb1), s.sB, s.row_stride, s.sXs, 1.0f);
      named_sync<kStaticThreads>();
    }
    uint4 raw[L::kLoads];
    const typename L::Scale sc{};
    ring_take<F>(ring, full, empty, c, s.warp, s.lane, raw);
    if (s.live)
      static_mma_kblock<F, kNts>(raw, sc, bk + (kb - s.w0) * 128, s.row_off, 8 * s.row_stride,
                                 s.last_off, s.sXs, nts, acc);
  }
}

template <StaticFormat F, bool kDown>
__global__ void __launch_bounds__(kRingThreads, 2)
    static_ring_kernel(const __grid_constant__ StaticGemmParams p) {
  static_assert(static_uses_ring(F), "this format uses static_gemm_kernel");
  constexpr int S = ring_stages<F>();
  static_assert(S >= 2 && S <= kRingMaxStages, "ring stages");
  extern __shared__ __align__(128) uint8_t ring_smem[];
  uint8_t* ring = ring_smem;
  uint8_t* sB = ring_smem + kRingBytes;
  uint64_t* full = reinterpret_cast<uint64_t*>(ring_smem + kRingBytes + kRingWindowBytes);
  uint64_t* empty = full + kRingMaxStages;
  __shared__ int last_flag;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int grid = gridDim.x, cta = blockIdx.x;
  if (threadIdx.x == 0) {
    for (int i = 0; i < S; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, kRingEmptyArrivals);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const StaticCtaRange r = static_cta_start<kDown>(p);
  const int ntasks = r.ntasks, kblocks = r.kblocks, total = r.total;
  const int u_first = r.u_first, u_last = r.u_last;
  const int first_kb0 = r.first_kb0, last_kb1 = r.last_kb1;

  if (warp == kStaticWarps) {  // the producer (GEMM2's streams its weights before the wait)
    ring_produce<F, kDown>(p, ntasks, kblocks, u_first, u_last, first_kb0, last_kb1, ring, full,
                           empty, lane);
    return;
  }
  if constexpr (kDown) {
    pdl_wait();  // h comes from GEMM1
    pdl_trigger();
  }
  static_diag_stamp(p, 1);
  static_diag_stamp(p, 2);
  static_diag_cta(p, u_last - u_first + 1);

  if (kDown && total == 0 && p.out != nullptr) {  // nothing routed here: the output is zero
    for (int64_t i = cta * kStaticThreads + threadIdx.x; i < p.tokens * p.n;
         i += static_cast<int64_t>(grid) * kStaticThreads)
      p.out[i] = 0;
  }

  RingCursor c;
  for (int u = u_first; u <= u_last; ++u) {
    const int kb0 = u == u_first ? first_kb0 : 0, kb1 = u == u_last ? last_kb1 : kblocks;
    const StaticTask task = p.tasks[static_unit_task(u, ntasks)];
    const int tile = static_unit_group(u, ntasks) * kStaticWarps + warp;
    const int nts = (task.rows + 7) / 8;
    const StaticExpertPtrs ex = p.experts[task.group];
    const bool live = (kDown ? ex.w2 : ex.w13) != nullptr && tile < p.tiles;
    const int win = static_window_kblocks(task.rows, kblocks, kRingWindowBytes);
    const int row_stride = static_row_stride(win);
    const int row_off = g * row_stride, last_off = (task.rows - 1) * row_stride;
    const int w0 = kb0 & ~1, w1 = w0 + win;
    named_sync<kStaticThreads>();  // the previous unit's readers are done with the window
    static_stage<F, kDown>(p, task, w0, min(w1, kb1), sB, row_stride, nullptr, 1.0f);
    named_sync<kStaticThreads>();

    float acc[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;

    StaticUnitLoop s{u,    u_last, kb0, kb1,        last_kb1, kblocks,  ntasks,
                     w0,   w1,     win, row_stride, row_off,  last_off, live,
                     warp, lane,   g,   t,          1.0f,     sB,       nullptr};
    if (nts == 1) {  // warp-uniform: the common decode case gets straight-line code
      ring_unit_kloop<F, kDown, 1>(p, task, s, ring, full, empty, c, acc);
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // the k-blocks' second halves (static_mma_kblock)
        acc[0][i] += acc[1][i];
        acc[1][i] = 0.0f;
      }
    } else {
      ring_unit_kloop<F, kDown, 0>(p, task, s, ring, full, empty, c, acc);
    }
    static_diag_stamp(p, 2);

    uint32_t amax = 0;  // fp8_per_tensor's only, which is not on the ring
    static_finish_unit<kDown>(p, r, task, u, kb0, kb1, tile, nts, 1.0f, acc, last_flag, amax,
                              [] { named_sync<kStaticThreads>(); });
  }
  static_diag_stamp(p, 3);
}

}  // namespace servekit::cuda::static_moe
