// The static (small-batch) MoE GEMM: one template for both GEMMs and every weight format.
//
// Bandwidth first. Each active expert's weights cross HBM once per call for all of its rows:
// a unit (128 weight rows of one task) is streamed by 8 warps, one m16 tile each, with 16-byte
// loads already in mma fragment order (static_layout.h) and kDepth k-blocks in flight per warp
// in a register ring; 4-bit and fp8 codes are decoded in registers; the tensor cores (mma.sync)
// multiply them by the task's <= 32 activation rows, staged once per unit in shared memory.
// Work is spread over every SM whatever the expert count by cutting the list of (unit, k-block)
// steps into equal CTA ranges (stream-K, static_tasks.h); a unit cut between CTAs is summed by
// the CTA that finishes it last, reading the parts in CTA order, so results are deterministic.
//
// Kernel flow per CTA: issue the first batch of loads; wait for the previous kernel (PDL);
// then for each unit of its range: stage the activations, run its k-blocks in batches of kDepth
// (computing slot j, then refilling it with the next batch's step j, which may belong to the
// next unit), and finish it (epilogue, or hand the partial sums to the finishing CTA).
#pragma once

#include "cuda/kernels/static/static_epilogue.cuh"
#include "cuda/kernels/static/static_loaders.cuh"
#include "cuda/kernels/static/static_stage.cuh"

namespace servekit::cuda::static_moe {

// A warp's tile of one unit.
struct StaticTileRef {
  const uint8_t* codes = nullptr;  // lane's first 16 bytes of the tile's k-block 0
  int32_t scales = 0;  // the lane's scales of k-block 0 at codes + scales (matrices < 2 GiB)
  bool live = false;   // the tile exists and its expert is loaded
};

// Units are numbered column-group-major: unit u is task u % ntasks, column group u / ntasks.
// A task's units are therefore ntasks apart in the step list and land on different CTAs, so the
// activation staging of a many-row task (a shared expert, a hot expert: up to 32 rows, restaged
// at every unit) is spread over the grid instead of piling up on the one or two CTAs whose
// ranges would hold its units if they were consecutive (task-major order measured 2.9 ms for
// deepseek-v3 GEMM1 at 32 tokens against ~0.9 ms of weight streaming, docs/perf-notes.md).
__device__ __forceinline__ int static_unit_task(int unit, int ntasks) {
  return unit % ntasks;
}
__device__ __forceinline__ int static_unit_group(int unit, int ntasks) {
  return unit / ntasks;
}

template <StaticFormat F, bool kDown>
__device__ __forceinline__ StaticTileRef static_tile_ref(const StaticGemmParams& p, int unit,
                                                         int ntasks, int warp, int lane) {
  const StaticTask task = p.tasks[static_unit_task(unit, ntasks)];
  const int tile = static_unit_group(unit, ntasks) * kStaticWarps + warp;
  const StaticExpertPtrs e = p.experts[task.group];
  const uint8_t* base = kDown ? e.w2 : e.w13;
  StaticTileRef r;
  r.live = base != nullptr && tile < p.tiles;
  if (r.live) {
    const int64_t first = static_code_block_offset(F, p.tiles, p.kblocks, tile, 0);
    r.codes = base + first + lane * 16;
    r.scales = static_cast<int32_t>(p.code_bytes + tile * p.tile_scale_bytes - first - lane * 16 +
                                    static_lane_scale_offset(F, 0, lane >> 2, lane & 3));
  }
  return r;
}

// Scale pairs (StaticLoader::kScalePairs: a scale block spans two k-blocks and the ring is an
// even number deep): batches start at even k-blocks, so ring slots 2i and 2i + 1 always hold
// the two k-blocks of one scale block, and only the odd slot loads the scales, for both. The
// even slot reads them from the odd slot, whose refill comes after the even slot is computed.
template <StaticFormat F>
__device__ __forceinline__ constexpr int static_scale_slot(int j) {
  return StaticLoader<F>::kScalePairs ? (j | 1) : j;
}

// One batch of ring loads: k-blocks kb .. kb + kDepth - 1 of a tile, of which slots lo .. rem - 1
// are loaded (lo > 0 only for the first batch of a CTA whose range starts at an odd k-block under
// scale pairs). The k-block stride is a compile-time constant (static_kblock_stride), so slot j's
// code and scale addresses are the batch's two base addresses plus immediate offsets, and its
// predicate is one compare of j with rem.
struct StaticBatch {
  const uint8_t* codes;   // the lane's codes of k-block kb
  const uint8_t* scales;  // the lane's scale block of k-block kb (rounded down to a pair)
  int lo, rem;
  int odd;  // kb & 1 for scale blocks of two k-blocks without scale pairs (fp8_block128)
};
template <StaticFormat F>
__device__ __forceinline__ StaticBatch static_batch(const StaticTileRef& ref, int kb, int kb_lo,
                                                    int kb1) {
  constexpr int kScaleKBlocks = static_scale_block_kblocks(F);
  StaticBatch b;
  b.codes = ref.codes + static_cast<int64_t>(kb) * static_kblock_stride(F);
  b.scales = ref.codes + (ref.scales + (kb / kScaleKBlocks) * static_scale_block_bytes(F));
  b.lo = kb_lo - kb;
  b.rem = ref.live ? kb1 - kb : 0;
  b.odd = kb & (kScaleKBlocks - 1);
  return b;
}

// Loads slot j of batch b into a ring slot (codes and the lane's scales, static_layout.h).
template <StaticFormat F>
__device__ __forceinline__ void static_issue(uint4 (&raw)[StaticLoader<F>::kLoads],
                                             typename StaticLoader<F>::Scale& sc,
                                             const StaticBatch& b, int j) {
  using L = StaticLoader<F>;
  constexpr int kScaleKBlocks = static_scale_block_kblocks(F);
  constexpr int kScaleBytes = static_scale_block_bytes(F);
  const StaticPred pred{j, b.rem, j, b.lo};  // lo <= j < rem
  const uint8_t* codes = b.codes + j * static_kblock_stride(F);
#pragma unroll
  for (int q = 0; q < L::kLoads; ++q) ldg_stream_pred(raw[q], codes + q * 512, pred);
  if constexpr (L::kScalePairs) {  // the odd slot loads the pair's block for both
    if (j & 1)
      L::load_scale(b.scales + (j / 2) * kScaleBytes, sc, StaticPred{j - 1, b.rem, j, b.lo});
  } else if constexpr (kScaleKBlocks == 1) {
    L::load_scale(b.scales + j * kScaleBytes, sc, pred);
  } else {
    L::load_scale(b.scales + ((b.odd + j) / kScaleKBlocks) * kScaleBytes, sc, pred);
  }
}

// acc[nt] += (the k-block's weights) . (activation tile nt) for the task's nts token tiles;
// kNts > 0 fixes the count at compile time (straight-line code, see static_unit_kloop).
// bk: the window's k-block (byte 16t of lane t); row_off: the lane's row g; tile_stride: 8 rows;
// last_off: the task's last row. Rows past the task read the last row again instead of testing:
// a B column only feeds the output column of its token, which is never stored.
// xs: fp8_block128's activation scales of the k-block's chunk, from token 2t on.
template <StaticFormat F, int kNts>
__device__ __forceinline__ void static_mma_kblock(const uint4 (&raw)[StaticLoader<F>::kLoads],
                                                  const typename StaticLoader<F>::Scale& sc,
                                                  const uint8_t* bk, int row_off, int tile_stride,
                                                  int last_off, const float* xs, int nts,
                                                  float (&acc)[4][4]) {
  using L = StaticLoader<F>;
  uint32_t a[4][4];
  L::frags(raw, sc, a);
  float rs[2][2];  // promotion scales [row g / g+8][half]
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) rs[r][h] = L::row_scale(sc, r, h);
#pragma unroll
  for (int nt = 0; nt < (kNts > 0 ? kNts : 4); ++nt) {
    if (kNts == 0 && nt >= nts) break;
    const uint8_t* b = bk + min(row_off + nt * tile_stride, last_off);
    const uint4 b0 = lds128(b), b1 = lds128(b + 64);
    // With one token tile the k-block's second half accumulates into acc[1] (free in that
    // k-loop; the caller folds it into acc[0]), so each k-block's dependent mma chain is two
    // long instead of four.
    float(&hi)[4] = acc[kNts == 1 ? 1 : nt];
    if constexpr (L::kPromote == 0) {
      mma16<L::kF16>(acc[nt], a[0], b0.x, b0.y);
      mma16<L::kF16>(acc[nt], a[1], b0.z, b0.w);
      mma16<L::kF16>(hi, a[2], b1.x, b1.y);
      mma16<L::kF16>(hi, a[3], b1.z, b1.w);
    } else {
      float2 x = make_float2(1.0f, 1.0f);
      if constexpr (L::kActScales) x = *reinterpret_cast<const float2*>(xs + nt * 8);
      // c += d x the promotion scales of half h (and the activation scales).
      auto promote = [&](float(&c)[4], const float(&d)[4], int h) {
        if constexpr (L::kActScales) {
          c[0] = fmaf(d[0], rs[0][h] * x.x, c[0]);
          c[1] = fmaf(d[1], rs[0][h] * x.y, c[1]);
          c[2] = fmaf(d[2], rs[1][h] * x.x, c[2]);
          c[3] = fmaf(d[3], rs[1][h] * x.y, c[3]);
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) c[i] = fmaf(d[i], rs[i >> 1][h], c[i]);
        }
      };
      float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma16<L::kF16>(d, a[0], b0.x, b0.y);
      mma16<L::kF16>(d, a[1], b0.z, b0.w);
      if constexpr (L::kPromote == 2 || kNts == 1) {
        promote(acc[nt], d, 0);
#pragma unroll
        for (int i = 0; i < 4; ++i) d[i] = 0.0f;
      }
      mma16<L::kF16>(d, a[2], b1.x, b1.y);
      mma16<L::kF16>(d, a[3], b1.z, b1.w);
      promote(hi, d, L::kPromote - 1);
    }
  }
}

// The state one unit's k-loop reads (and the window it may slide), gathered for
// static_unit_kloop.
struct StaticUnitLoop {
  int u, u_last, kb0, kb1, last_kb1, kblocks, ntasks;
  int w0, w1, win, row_stride, row_off, last_off;
  bool live;
  int warp, lane, g, t;
  float act_scale;
  uint8_t* sB;
  float* sXs;
};

// One unit's k-blocks, kDepth at a time: compute slot j of the ring, then refill it with the
// next batch's step j (this unit's, or the next unit's first). kNts: the token tiles when fixed
// at compile time (1: the decode case of one row per expert), 0: read from the task.
template <StaticFormat F, bool kDown, int kNts>
__device__ __forceinline__ void static_unit_kloop(
    const StaticGemmParams& p, const StaticTask& task, StaticUnitLoop& s,
    uint4 (&ring)[StaticLoader<F>::kDepth][StaticLoader<F>::kLoads],
    typename StaticLoader<F>::Scale (&sring)[StaticLoader<F>::kDepth], StaticTileRef& ref,
    float (&acc)[4][4]) {
  constexpr int D = StaticLoader<F>::kDepth;
  const uint8_t* bk = s.sB + 16 * s.t;
  const int nts = (task.rows + 7) / 8;
  constexpr int kAlign = StaticLoader<F>::kScalePairs ? 2 : 1;
  for (int kb = s.kb0 & ~(kAlign - 1); kb < s.kb1; kb += D) {
    // The batch after this one: the same unit, or the first of the next.
    int nu = s.u;
    int nkb = kb + D, nkb1 = s.kb1;
    if (nkb >= s.kb1) {
      nu = s.u + 1;
      nkb = 0;
      nkb1 = nu == s.u_last ? s.last_kb1 : s.kblocks;
    }
    const StaticTileRef nref =
        nu == s.u ? ref
                  : (nu <= s.u_last ? static_tile_ref<F, kDown>(p, nu, s.ntasks, s.warp, s.lane)
                                    : StaticTileRef{});
    const StaticBatch nb = static_batch<F>(nref, nkb, nkb, nkb1);
    if (kb + D > s.w1 && s.w1 < s.kb1) {  // the batch leaves the staged window: slide it
      __syncthreads();
      s.w0 = kb & ~1;
      s.w1 = s.w0 + s.win;
      static_stage<F, kDown>(p, task, s.w0, min(s.w1, s.kb1), s.sB, s.row_stride, s.sXs,
                             s.act_scale);
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < D; ++j) {
      if constexpr (kAlign == 1) {
        if (s.live && kb + j < s.kb1) {
          const int kbl = kb + j - s.w0;
          static_mma_kblock<F, kNts>(ring[j], sring[j], bk + kbl * 128, s.row_off, 8 * s.row_stride,
                                     s.last_off, s.sXs + (kbl / 2) * 32 + 2 * s.t, nts, acc);
        }
      } else {
        if (s.live && kb + j < s.kb1 && kb + j >= s.kb0) {  // the first k-block may be odd
          const int kbl = kb + j - s.w0;
          static_mma_kblock<F, kNts>(ring[j], sring[static_scale_slot<F>(j)], bk + kbl * 128,
                                     s.row_off, 8 * s.row_stride, s.last_off,
                                     s.sXs + (kbl / 2) * 32 + 2 * s.t, nts, acc);
        }
      }
      static_issue<F>(ring[j], sring[j], nb, j);
    }
    ref = nref;
  }
}

// SERVEKIT_DIAG_STATIC_TIMES: thread 0 stamps the global timer into the CTA's slot s. Reads the
// pointer from the parameters at every stamp, so no register holds it across the k-loops.
__device__ __forceinline__ void static_diag_stamp(const StaticGemmParams& p, int s) {
  if (p.diag_times != nullptr && threadIdx.x == 0)
    p.diag_times[static_cast<int64_t>(blockIdx.x) * kStaticDiagSlots + s] = globaltimer_ns();
}
__device__ __forceinline__ void static_diag_cta(const StaticGemmParams& p, int units) {
  if (p.diag_times != nullptr && threadIdx.x == 0) {
    uint64_t* slot = p.diag_times + static_cast<int64_t>(blockIdx.x) * kStaticDiagSlots;
    slot[kStaticDiagStamps] = sm_id();
    slot[kStaticDiagStamps + 1] = static_cast<uint64_t>(units);
  }
}

// The fp8_per_tensor scale of this GEMM's activations from the previous kernel's maxima.
__device__ __forceinline__ float static_act_scale(const StaticGemmParams& p, uint32_t* red) {
  uint32_t m = 0;
  for (int i = threadIdx.x; i < p.amax_in_count; i += blockDim.x) m = max(m, p.amax_in[i]);
  return fp8_scale_of_amax_bits(cta_max_u32(m, red));
}

// The CTA's range of (unit, k-block) steps: units u_first..u_last, the first from k-block
// first_kb0 and the last up to last_kb1 (stream-K, static_tasks.h). Steps and units fit 32 bits
// (validate_static_desc bounds them).
struct StaticCtaRange {
  int ntasks, kblocks, total, u_first, u_last, first_kb0, last_kb1;
};

// The partition table's copy in shared memory (static_cta_start): a static address, so no
// register holds it across the k-loops.
__device__ __forceinline__ int32_t* static_partition_smem() {
  __shared__ int32_t begins[kStaticPartitionStride];
  return begins;
}

// The CTA partition for the fix-up's walks: the shared copy of the table (the planner's, or the
// uniform partition's computed by static_cta_start), so the fix-up has one code path and no
// 64-bit divisions.
__device__ __forceinline__ StaticPartition static_partition() {
  return StaticPartition{static_partition_smem(), static_cast<int>(gridDim.x)};
}

__device__ __forceinline__ StaticCtaRange static_cta_range(const StaticGemmParams& p, int cta,
                                                           int grid) {
  StaticCtaRange r;
  r.ntasks = *p.num_tasks;
  r.kblocks = p.kblocks;
  r.total = r.ntasks * p.ngroups * r.kblocks;
  int s_begin = 0, s_end = 0;
  if (p.cta_begins != nullptr) {  // the table's own entries, from global memory
    s_begin = p.cta_begins[cta];
    s_end = p.cta_begins[cta + 1];
  } else if (r.total) {
    s_begin = static_cast<int>(static_cta_begin(cta, r.total, grid));
    s_end = static_cast<int>(static_cta_begin(cta + 1, r.total, grid));
  }
  r.u_first = s_begin / r.kblocks;
  r.u_last = s_end > s_begin ? (s_end - 1) / r.kblocks : r.u_first - 1;
  r.first_kb0 = static_cast<int>(s_begin - r.u_first * r.kblocks);
  r.last_kb1 = static_cast<int>(s_end - r.u_last * r.kblocks);
  return r;
}

// GEMM1, one thread per CTA, before the dependency wait (StaticGemmParams::shared_prefetch):
// asks L2 for the CTA's equal slice of the shared experts' W13 codes, in pieces of at most 64 KB
// within one expert (16-byte multiples).
__device__ __forceinline__ void static_shared_prefetch(const StaticGemmParams& p) {
  constexpr int64_t kChunk = 64 * 1024;
  const int64_t per = p.shared_code_bytes, total = per * p.shared_count;
  const int64_t slice = (total / 16 + gridDim.x - 1) / gridDim.x * 16;
  const int64_t end = min(total, (blockIdx.x + 1) * slice);
  for (int64_t o = blockIdx.x * slice; o < end;) {
    const int s = static_cast<int>(o / per);
    const int64_t off = o - s * per, len = min(min(end - o, per - off), kChunk);
    const uint8_t* base = p.experts[p.shared_first + s].w13;
    if (base != nullptr) bulk_prefetch_l2(base + off, static_cast<uint32_t>(len));
    o += len;
  }
}

// The start both GEMM kernels share: the entry stamp, GEMM1's dependency wait (its task list
// and partition table come from the planner; GEMM2 reads them before its own wait, since the
// planner finished before GEMM1 triggered), the CTA's range, and the partition table's copy
// into shared memory for the fix-up (by the compute threads; visible to them after the barrier
// that precedes the first unit's staging; the grid is at most kStaticMaxPartitionGrid).
template <bool kDown>
__device__ __forceinline__ StaticCtaRange static_cta_start(const StaticGemmParams& p) {
  static_diag_stamp(p, 0);
  if constexpr (!kDown) {
    if (p.shared_prefetch != 0 && threadIdx.x == 0) static_shared_prefetch(p);
    pdl_wait();
    pdl_trigger();
  }
  const StaticCtaRange r = static_cta_range(p, blockIdx.x, gridDim.x);
  if (threadIdx.x < kStaticThreads)
    for (int i = threadIdx.x; i <= static_cast<int>(gridDim.x); i += kStaticThreads)
      static_partition_smem()[i] =
          p.cta_begins != nullptr ? p.cta_begins[i]
                                  : static_cast<int32_t>(static_cta_begin(i, r.total, gridDim.x));
  return r;
}

// The float4 index in p.partials of the lane's partial sums of unit u that CTA c stored
// (static_finish_unit; the workspace holds grid x 2 x kStaticWarps x 4 x 32 < 2^31 float4).
__device__ __forceinline__ int32_t static_part_index(const StaticCtaRange& r, int u, int c,
                                                     const StaticPartition& part, int warp,
                                                     int lane) {
  const int cs = static_partial_slot(u, c, r.kblocks, part);
  return ((c * 2 + cs) * kStaticWarps + warp) * 4 * 32 + lane;
}

// acc (zero) += the parts of unit u in CTA (= k) order, so results are deterministic.
// kStaticFixupChunk CTAs at a time: the chunk's indices from the shared-memory table, then all
// its loads of a token tile, then the sums in order, so a chunk is one round trip to L2 where
// part-by-part code paid one per part (a unit cut into 2-4 parts at one token).
constexpr int kStaticFixupChunk = 4;
__device__ __forceinline__ void static_fixup(const StaticGemmParams& p, const StaticCtaRange& r,
                                             int u, const StaticSegment& seg,
                                             const StaticPartition& part, int warp, int lane,
                                             int nts, float (&acc)[4][4]) {
  const float4* partials = reinterpret_cast<const float4*>(p.partials);
  for (int c0 = seg.first_cta; c0 <= seg.last_cta; c0 += kStaticFixupChunk) {
    int32_t at[kStaticFixupChunk];  // -1: no part
#pragma unroll
    for (int j = 0; j < kStaticFixupChunk; ++j) {
      const int c = c0 + j;
      at[j] = c <= seg.last_cta && static_cta_has_steps(c, part)
                  ? static_part_index(r, u, c, part, warp, lane)
                  : -1;
    }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      if (nt >= nts) break;
      float4 v[kStaticFixupChunk];
#pragma unroll
      for (int j = 0; j < kStaticFixupChunk; ++j)
        v[j] =
            at[j] >= 0 ? __ldcg(partials + at[j] + nt * 32) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int j = 0; j < kStaticFixupChunk; ++j)
        if (at[j] >= 0)
          acc[nt][0] += v[j].x, acc[nt][1] += v[j].y, acc[nt][2] += v[j].z, acc[nt][3] += v[j].w;
    }
  }
}

// The part-by-part loop (StaticGemmParams::serial_tail).
__device__ __forceinline__ void static_fixup_serial(const StaticGemmParams& p,
                                                    const StaticCtaRange& r, int u,
                                                    const StaticSegment& seg,
                                                    const StaticPartition& part, int warp, int lane,
                                                    int nts, float (&acc)[4][4]) {
  for (int c = seg.first_cta; c <= seg.last_cta; ++c) {
    if (!static_cta_has_steps(c, part)) continue;
    const float4* src =
        reinterpret_cast<const float4*>(p.partials) + static_part_index(r, u, c, part, warp, lane);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
      if (nt < nts) {
        const float4 v = __ldcg(src + nt * 32);
        acc[nt][0] += v.x, acc[nt][1] += v.y, acc[nt][2] += v.z, acc[nt][3] += v.w;
      }
  }
}

// Finishes unit u after its k-loop over [kb0, kb1): here if this CTA computed all of it, else by
// the last of its CTAs, which sums the parts in CTA (= k) order, so results are deterministic;
// then the epilogue and, for GEMM2 with the fused combine, the column group's combine by the CTA
// that finishes its last unit. sync() is the barrier of the CTA's compute threads (the ring
// kernel's producer warp is not one of them); last_flag is a shared int; amax: GEMM1's max |h|
// bits so far (fp8_per_tensor), updated.
template <bool kDown, typename Sync>
__device__ __forceinline__ void static_finish_unit(const StaticGemmParams& p,
                                                   const StaticCtaRange& r, const StaticTask& task,
                                                   int u, int kb0, int kb1, int tile, int nts,
                                                   float act_scale, float (&acc)[4][4],
                                                   int& last_flag, uint32_t& amax, Sync sync) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int cta = blockIdx.x;
  bool finish = kb0 == 0 && kb1 == r.kblocks;
  if (!finish) {
    const int slot = u == r.u_first ? 0 : 1;
    float4* mine = reinterpret_cast<float4*>(p.partials) +
                   ((static_cast<int64_t>(cta) * 2 + slot) * kStaticWarps + warp) * 4 * 32 + lane;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
      if (nt < nts) mine[nt * 32] = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
    sync();  // the partials above, before thread 0's release
    const StaticPartition part = static_partition();
    const StaticSegment seg = static_segment(u, cta, r.kblocks, part);
    if (threadIdx.x == 0)
      last_flag =
          atomic_add_acq_rel_gpu(p.unit_counters + u, 1) == static_unit_parts(seg, part) - 1;
    sync();  // thread 0's acquire, before every thread's reads of the other parts
    finish = last_flag;
    if (finish) {
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
      if (p.serial_tail) {
        static_fixup_serial(p, r, u, seg, part, warp, lane, nts, acc);
      } else {
        static_fixup(p, r, u, seg, part, warp, lane, nts, acc);
      }
      if (threadIdx.x == 0) p.unit_counters[u] = 0;  // ready for the next launch
    }
  }
  if (finish && tile < p.tiles) {
    const StaticExpertPtrs e = p.experts[task.group];
    if constexpr (kDown) {
      static_gemm2_epilogue(p, task, tile, acc, e.w2_alpha * act_scale);
    } else {
      amax = max(amax, static_gemm1_epilogue(p, task, tile, acc, e.w13_alpha * act_scale));
    }
  }
  if (kDown && finish && p.out != nullptr) {  // the column group's last unit combines it
    sync();  // the epilogue's y32 stores, before thread 0's release
    const int cg = static_unit_group(u, r.ntasks);
    if (threadIdx.x == 0)
      last_flag = atomic_add_acq_rel_gpu(p.column_counters + cg, 1) == r.ntasks - 1;
    sync();  // thread 0's acquire, before every thread reads the other units' y32
    if (last_flag) {
      static_combine_columns(p, cg);
      if (threadIdx.x == 0) p.column_counters[cg] = 0;
    }
  }
}

// Two CTAs per SM (kStaticMaxCtasPerSm): the dynamic shared memory, 1 KB the runtime reserves per
// CTA, 1 KB for the small static variables, and the partition table's copy (static_cta_start).
static_assert(2 * (kStaticSmemBytes + 2 * 1024 + kStaticPartitionStride * 4) <= 227 * 1024,
              "two CTAs per SM");

template <StaticFormat F, bool kDown>
__global__ void __launch_bounds__(kStaticThreads, 2)
    static_gemm_kernel(const __grid_constant__ StaticGemmParams p) {
  using L = StaticLoader<F>;
  constexpr int D = L::kDepth;
  constexpr bool kPerTensor = F == StaticFormat::kFP8PerTensor;
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* sB = smem;
  float* sXs = reinterpret_cast<float*>(smem + kStaticWindowBytes);
  __shared__ uint32_t red[32];
  __shared__ int last_flag;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int grid = gridDim.x, cta = blockIdx.x;
  const StaticCtaRange r = static_cta_start<kDown>(p);
  const int ntasks = r.ntasks, kblocks = r.kblocks, total = r.total;
  const int u_first = r.u_first, u_last = r.u_last;
  const int first_kb0 = r.first_kb0, last_kb1 = r.last_kb1;

  uint4 ring[D][L::kLoads];
  typename L::Scale sring[D];
  StaticTileRef ref;
  if (u_first <= u_last) {  // prologue: the first batch of loads, before the dependency wait
    ref = static_tile_ref<F, kDown>(p, u_first, ntasks, warp, lane);
    const int kb1 = u_first == u_last ? last_kb1 : kblocks;
    // The k-loop's first batch (from an even k-block under scale pairs).
    const int kb = L::kScalePairs ? first_kb0 & ~1 : first_kb0;
    const StaticBatch b = static_batch<F>(ref, kb, first_kb0, kb1);
#pragma unroll
    for (int j = 0; j < D; ++j) static_issue<F>(ring[j], sring[j], b, j);
  }
  if constexpr (kDown) {
    pdl_wait();  // h and its maxima come from GEMM1
    pdl_trigger();
  }
  static_diag_stamp(p, 1);
  static_diag_stamp(p, 2);
  static_diag_cta(p, u_last - u_first + 1);
  const float act_scale = kPerTensor ? static_act_scale(p, red) : 1.0f;

  if (kDown && total == 0 && p.out != nullptr) {  // nothing routed here: the output is zero
    for (int64_t i = cta * kStaticThreads + threadIdx.x; i < p.tokens * p.n;
         i += static_cast<int64_t>(grid) * kStaticThreads)
      p.out[i] = 0;
  }

  uint32_t amax = 0;
  for (int u = u_first; u <= u_last; ++u) {
    const int kb0 = u == u_first ? first_kb0 : 0, kb1 = u == u_last ? last_kb1 : kblocks;
    const StaticTask task = p.tasks[static_unit_task(u, ntasks)];
    const int tile = static_unit_group(u, ntasks) * kStaticWarps + warp;
    const int nts = (task.rows + 7) / 8;
    const bool live = ref.live;
    const int win = static_window_kblocks(task.rows, kblocks);
    const int row_stride = static_row_stride(win);
    const int row_off = g * row_stride, last_off = (task.rows - 1) * row_stride;
    int w0 = kb0 & ~1, w1 = w0 + win;
    __syncthreads();  // the previous unit's readers are done with the window
    static_stage<F, kDown>(p, task, w0, min(w1, kb1), sB, row_stride, sXs, act_scale);
    __syncthreads();

    float acc[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;

    StaticUnitLoop s{u,    u_last, kb0, kb1,        last_kb1,  kblocks,  ntasks,
                     w0,   w1,     win, row_stride, row_off,   last_off, live,
                     warp, lane,   g,   t,          act_scale, sB,       sXs};
    if (nts == 1) {  // warp-uniform: the common decode case gets straight-line code
      static_unit_kloop<F, kDown, 1>(p, task, s, ring, sring, ref, acc);
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // the k-blocks' second halves (static_mma_kblock)
        acc[0][i] += acc[1][i];
        acc[1][i] = 0.0f;
      }
    } else {
      static_unit_kloop<F, kDown, 0>(p, task, s, ring, sring, ref, acc);
    }
    static_diag_stamp(p, 2);

    static_finish_unit<kDown>(p, r, task, u, kb0, kb1, tile, nts, act_scale, acc, last_flag, amax,
                              [] { __syncthreads(); });
  }
  if (!kDown && p.amax_out != nullptr) {
    amax = cta_max_u32(amax, red);
    if (threadIdx.x == 0) p.amax_out[cta] = amax;
  }
  static_diag_stamp(p, 3);
}

}  // namespace servekit::cuda::static_moe
