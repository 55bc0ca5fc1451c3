// Device primitives of the static MoE kernels: streaming loads, tensor-core mma, programmatic
// dependent launch, and the deterministic amax used by the fp8 activation quantizers.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/static/static_params.h"

namespace servekit::cuda::static_moe {

// Weights are read once per call: 16-byte loads that skip L1 (no reuse there) but keep L2's
// default policy, so a skewed expert's second task may still hit L2. All weight and scale loads
// are predicated (PTX @p): nothing is read and v keeps its value when pred is false, so the k-loop
// issues its refills as straight-line code instead of branching around them (a branch costs BSSY /
// BRA / BSYNC per k-block and stops the scheduler mixing the address arithmetic with the decode).
__device__ __forceinline__ void ldg_stream_if(uint4& v, const void* p, bool pred) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\t"
      "@q ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
      : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)
      : "l"(p), "r"(static_cast<int>(pred)));
}
__device__ __forceinline__ void ldg_u32_if(uint32_t& v, const void* p, bool pred) {
  asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q ld.global.nc.u32 %0, [%1];\n\t}"
               : "+r"(v)
               : "l"(p), "r"(static_cast<int>(pred)));
}
__device__ __forceinline__ void ldg_u64_if(uint2& v, const void* p, bool pred) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %3, 0;\n\t"
      "@q ld.global.nc.v2.u32 {%0, %1}, [%2];\n\t}"
      : "+r"(v.x), "+r"(v.y)
      : "l"(p), "r"(static_cast<int>(pred)));
}

// One thread's arrival on a counter other CTAs also arrive on: an atomic add with release and
// acquire semantics at gpu scope. Called by one thread between two CTA barriers, it publishes
// what the whole CTA stored before the first barrier (release is cumulative over the barrier)
// and, for the CTA that arrives last, makes every other CTA's published stores visible to the
// whole CTA after the second barrier. This is the pattern of cooperative groups' grid barrier
// with one fence.acq_rel where a __threadfence() (fence.sc, every thread) stood on each side.
__device__ __forceinline__ int32_t atomic_add_acq_rel_gpu(int32_t* counter, int32_t v) {
  int32_t old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(counter), "r"(v)
               : "memory");
  return old;
}

// The same loads under the predicate (a < rem) && (c >= lo), computed inside the asm: with a and
// c compile-time slot numbers (after unrolling) and lo = 0 this is one ISETP with an immediate,
// where a bool argument costs a select and a second compare (the asm cannot take a predicate).
struct StaticPred {
  int a, rem, c, lo;
};
__device__ __forceinline__ void ldg_stream_pred(uint4& v, const void* p, StaticPred pr) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.lt.s32 q, %5, %6;\n\tsetp.ge.and.s32 q, %7, %8, q;\n\t"
      "@q ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
      : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)
      : "l"(p), "r"(pr.a), "r"(pr.rem), "r"(pr.c), "r"(pr.lo));
}
__device__ __forceinline__ void ldg_u32_pred(uint32_t& v, const void* p, StaticPred pr) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.lt.s32 q, %2, %3;\n\tsetp.ge.and.s32 q, %4, %5, q;\n\t"
      "@q ld.global.nc.u32 %0, [%1];\n\t}"
      : "+r"(v)
      : "l"(p), "r"(pr.a), "r"(pr.rem), "r"(pr.c), "r"(pr.lo));
}
__device__ __forceinline__ void ldg_u64_pred(uint2& v, const void* p, StaticPred pr) {
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.lt.s32 q, %3, %4;\n\tsetp.ge.and.s32 q, %5, %6, q;\n\t"
      "@q ld.global.nc.v2.u32 {%0, %1}, [%2];\n\t}"
      : "+r"(v.x), "+r"(v.y)
      : "l"(p), "r"(pr.a), "r"(pr.rem), "r"(pr.c), "r"(pr.lo));
}

__device__ __forceinline__ uint4 lds128(const void* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// D += A * B, m16n8k16, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// D += A * B, m16n8k16, f16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <bool kF16>
__device__ __forceinline__ void mma16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1) {
  if constexpr (kF16) {
    mma_f16(d, a, b0, b1);
  } else {
    mma_bf16(d, a, b0, b1);
  }
}

// Two e4m3 codes (the low 16 bits) as f16x2, exactly.
__device__ __forceinline__ uint32_t f16x2_of_e4m3x2(uint32_t codes) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(codes & 0xFFFFu), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// bf16x2 multiply (exact for the 4-bit weight folds; subnormal inputs are kept).
__device__ __forceinline__ uint32_t hmul2_bf16(uint32_t a, uint32_t b) {
  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a),
                                   *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}
__device__ __forceinline__ uint32_t hsub2_bf16(uint32_t a, uint32_t b) {
  const __nv_bfloat162 r = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&a),
                                   *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}
// (x & kMask) | kBits in ONE instruction (LOP3, lut 0xEA = (a & b) | c). Written as PTX because
// ptxas, left to itself, spends an AND and an OR rather than hold one constant in a register.
template <uint32_t kMask, uint32_t kBits>
__device__ __forceinline__ uint32_t and_or(uint32_t x) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(x), "n"(kMask), "n"(kBits));
  return r;
}
__device__ __forceinline__ float bf16_bits_to_float(uint32_t bits16) {
  return __uint_as_float(bits16 << 16);
}
// The eight bf16 values of a 16-byte load, in memory order.
__device__ __forceinline__ void bf16x8_to_float(const uint4& a, float (&v)[8]) {
  const uint32_t w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = bf16_bits_to_float(w[i] & 0xFFFFu);
    v[2 * i + 1] = bf16_bits_to_float(w[i] >> 16);
  }
}

// The GPU's global nanosecond timer (for the SERVEKIT_DIAG_STATIC_TIMES stamps only).
__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The SM this thread runs on (diagnostic stamps only).
__device__ __forceinline__ uint32_t sm_id() {
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

// A prefix kernel's stamp s (static_params.h: kStaticPrefixStamps) by thread 0, when stamps is
// set; slot kStaticPrefixStamps gets the SM id with the first stamp.
__device__ __forceinline__ void static_prefix_stamp(uint64_t* stamps, int s) {
  if (stamps == nullptr || threadIdx.x != 0) return;
  stamps[s] = globaltimer_ns();
  if (s == 0) stamps[kStaticPrefixStamps] = sm_id();
}

// |x| as ordered bits: non-negative floats order as their bit patterns and NaN patterns lie
// above inf, so an integer max finds the amax, or a NaN/inf marker, in any order.
__device__ __forceinline__ uint32_t abs_bits(float x) {
  return __float_as_uint(x) & 0x7FFFFFFFu;
}
// quant.h's fp8 scale: amax / 448, 1 when that is 0; NaN when the amax is inf or NaN.
__device__ __forceinline__ float fp8_scale_of_amax_bits(uint32_t amax_bits) {
  if (amax_bits >= 0x7F800000u) return __uint_as_float(0x7FC00000u);
  const float s = __uint_as_float(amax_bits) / 448.0f;
  return s == 0.0f ? 1.0f : s;
}
// The e4m3 codes of a / s and b / s (round to nearest even, saturating, as quant.h's encoder),
// as f16x2.
__device__ __forceinline__ uint32_t f16x2_e4m3_of(float a, float b, float s) {
  return f16x2_of_e4m3x2(
      __nv_cvt_float2_to_fp8x2(make_float2(a / s, b / s), __NV_SATFINITE, __NV_E4M3));
}

// fp8_block128 quantization of one 128-column chunk of a row held by a half-warp (8 values per
// lane, absent columns as 0): the chunk's scale from its amax (a 4-step shuffle within the
// half-warp) and the lane's 8 e4m3 codes as f16 pairs. Shared by the GEMM staging and the
// planner's pre-quantization, so both give the same bits.
__device__ __forceinline__ float static_block128_quant8(const float (&v)[8], unsigned half_mask,
                                                        uint4& codes) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) m = max(m, abs_bits(v[i]));
  for (int o = 8; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(half_mask, m, o));
  const float s = fp8_scale_of_amax_bits(m);
  codes = make_uint4(f16x2_e4m3_of(v[0], v[1], s), f16x2_e4m3_of(v[2], v[3], s),
                     f16x2_e4m3_of(v[4], v[5], s), f16x2_e4m3_of(v[6], v[7], s));
  return s;
}

// ---- the shared-memory weight ring (static_ring.cuh): mbarriers and bulk copies -------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}
// Makes the initialised barriers visible to the async proxy (the bulk copies' complete_tx).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
// Spins until the phase of the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred q;\n\tmbarrier.try_wait.parity.shared::cta.b64 q, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, q;\n\t}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
// One bulk copy global -> shared (16-byte aligned, a multiple of 16 bytes), counted on bar,
// kept in L2 as evict-first (the weights are read once per call).
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes,
                                              uint64_t* bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
      "[%1], %2, [%3], %4;" ::"r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(policy)
      : "memory");
}
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// Asks L2 for `bytes` of global memory at src (16-byte aligned, a multiple of 16 bytes) at the
// normal eviction priority: a hint, nothing waits for it and nothing lands in shared memory.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
// Barrier of the CTA's first `threads` threads (named barrier 1; 0 is __syncthreads).
template <int kThreads>
__device__ __forceinline__ void named_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
}

// Max over a CTA of per-thread values (all threads call it); smem: 32 words.
__device__ __forceinline__ uint32_t cta_max_u32(uint32_t v, uint32_t* smem) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (threadIdx.x % 32 == 0) smem[warp] = v;
  __syncthreads();
  uint32_t m = 0;
  for (int w = 0; w < warps; ++w) m = max(m, smem[w]);
  return m;
}

}  // namespace servekit::cuda::static_moe
