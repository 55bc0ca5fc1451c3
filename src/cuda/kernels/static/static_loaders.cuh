// Weight-loader policies of the static MoE kernel: one per format, all with the same interface,
// so one kernel template (static_gemm.cuh) serves every format.
//
//   kLoads         16-byte code loads per lane per k-block (64 columns)
//   kDepth         k-blocks in flight per warp: 6-8 16-byte loads per lane, which with 16 warps
//                  per SM keeps 48-64 KB per SM in flight, 1.4-1.8x what Little's law asks at
//                  4.58 TB/s and ~1 us of loaded latency (35 KB per SM); as deep as 128
//                  registers allow without spilling (int4 needs more for its group scales)
//   kF16           the mma's 16-bit type: f16 (e4m3 codes, exact in f16) or bf16
//   Scale          the per-lane scale registers of one k-block; load_scale(p, sc, pr) fetches
//                  them from the lane's scale address p of the k-block (under the StaticPred pr)
//   frags()        the 16 A registers (16-bit pairs) of the k-block, 4 per mma step
//   kPromote       0: accumulate straight into the accumulators; 1 / 2: accumulate each
//                  k-block (1) or each half k-block (2) apart and add it times row_scale()
//                  (int4: code x bf16 scale is not exact in bf16, so scales go on in fp32)
//   kActScales     the promotion also multiplies by the activation scale of each token
//                  (fp8_block128's per-row, per-128-column scales)
//   kScalePairs    a scale block spans two k-blocks and only every other ring slot loads it
//                  (static_scale_slot, static_gemm.cuh); needs an even kDepth
// The 4-bit decoders are in static_layout.h (bit placement shared with the host packer).
#pragma once

#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_layout.h"

namespace servekit::cuda::static_moe {

struct NoScale {};

template <StaticFormat F>
struct StaticLoader;

template <>
struct StaticLoader<StaticFormat::kBF16> {
  static constexpr int kLoads = 4, kDepth = 2, kPromote = 0;
  static constexpr bool kScalePairs = false;
  static constexpr bool kF16 = false, kActScales = false;
  using Scale = NoScale;
  __device__ __forceinline__ static void load_scale(const uint8_t*, Scale&, StaticPred) {}
  __device__ __forceinline__ static void frags(const uint4 (&raw)[kLoads], const Scale&,
                                               uint32_t (&a)[4][4]) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      a[s][0] = raw[s].x;
      a[s][1] = raw[s].y;
      a[s][2] = raw[s].z;
      a[s][3] = raw[s].w;
    }
  }
  __device__ __forceinline__ static float row_scale(const Scale&, int, int) {
    return 1.0f;
  }
};

// e2m1 codes times a folded scale (mxfp4 and nvfp4 differ only in the fold constants).
template <uint32_t kMul, uint32_t kAdd>
struct E2M1Loader {
  static constexpr int kLoads = 1, kDepth = 8, kPromote = 0;
  static constexpr bool kScalePairs = false;
  static constexpr bool kF16 = false, kActScales = false;
  using Scale = uint32_t;  // bytes [g: h0, h1][g+8: h0, h1]
  __device__ __forceinline__ static void load_scale(const uint8_t* p, Scale& sc, StaticPred pr) {
    ldg_u32_pred(sc, p, pr);
  }
  __device__ __forceinline__ static void frags(const uint4 (&raw)[kLoads], const Scale& sc,
                                               uint32_t (&a)[4][4]) {
    // fold[r][h]: both halves = the bf16 of scale * 2^64 for row g / g+8, half h of the block.
    uint32_t fold[2][2];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        fold[r][h] = static_fold_bits(__byte_perm(sc, 0, 0x4440 + 2 * r + h), kMul, kAdd);
    const uint32_t w[4] = {raw[0].x, raw[0].y, raw[0].z, raw[0].w};
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      uint32_t v[4];
      static_e2m1_unpack(w[s], v);
#pragma unroll
      for (int q = 0; q < 4; ++q) a[s][q] = hmul2_bf16(v[q], fold[q & 1][s >> 1]);
    }
  }
  __device__ __forceinline__ static float row_scale(const Scale&, int, int) {
    return 1.0f;
  }
};

template <>
struct StaticLoader<StaticFormat::kMXFP4> : E2M1Loader<kMXFoldMul, kMXFoldAdd> {};
template <>
struct StaticLoader<StaticFormat::kNVFP4> : E2M1Loader<kNVFoldMul, kNVFoldAdd> {};

// int4 codes (stored + 8) as exact bf16 integers; the bf16 group scales are applied in fp32
// after each group's mma (kPromote 2 for 32-column groups, 1 for 64 and 128).
template <StaticFormat F>
struct Int4Loader {
  // k-blocks in flight: the most that fit 128 registers next to the promotion accumulators
  // without spilling (ptxas -v, sm_90a): 8 for 128-column groups (their scale pairs leave half
  // the ring's scale registers unused), 7 for 64, 6 for 32 (8-byte scales, a second promotion).
  static constexpr int kLoads = 1, kDepth = F == StaticFormat::kInt4G128  ? 8
                                            : F == StaticFormat::kInt4G64 ? 7
                                                                          : 6;
  static constexpr int kPromote = F == StaticFormat::kInt4G32 ? 2 : 1;
  static constexpr bool kScalePairs = F == StaticFormat::kInt4G128;
  static_assert(!kScalePairs || kDepth % 2 == 0, "scale pairs need an even ring");
  static constexpr bool kF16 = false, kActScales = false;
  using Scale = uint2;  // bf16: g32 [g: h0, h1][g+8: h0, h1]; g64 / g128 [g][g+8] in .x
  __device__ __forceinline__ static void load_scale(const uint8_t* p, Scale& sc, StaticPred pr) {
    if constexpr (F == StaticFormat::kInt4G32) {
      ldg_u64_pred(sc, p, pr);
    } else {
      ldg_u32_pred(sc.x, p, pr);
    }
  }
  __device__ __forceinline__ static void frags(const uint4 (&raw)[kLoads], const Scale&,
                                               uint32_t (&a)[4][4]) {
    const uint32_t w[4] = {raw[0].x, raw[0].y, raw[0].z, raw[0].w};
    constexpr uint32_t k136 = 0x43084308u;  // bf16x2 (136, 136)
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int q = 0; q < 4; ++q)  // static_int4_unpack, one LOP3 after the shift
        a[s][q] = hsub2_bf16(and_or<0x000F000Fu, 0x43004300u>(w[s] >> (4 * q)), k136);
  }
  // Scale of row r (0: g, 1: g + 8) for half h of the k-block.
  __device__ __forceinline__ static float row_scale(const Scale& sc, int r, int h) {
    if constexpr (F == StaticFormat::kInt4G32) {
      const uint32_t word = r == 0 ? sc.x : sc.y;
      return bf16_bits_to_float(h == 0 ? (word & 0xFFFFu) : (word >> 16));
    } else {
      return bf16_bits_to_float(r == 0 ? (sc.x & 0xFFFFu) : (sc.x >> 16));
    }
  }
};

template <>
struct StaticLoader<StaticFormat::kInt4G32> : Int4Loader<StaticFormat::kInt4G32> {};
template <>
struct StaticLoader<StaticFormat::kInt4G64> : Int4Loader<StaticFormat::kInt4G64> {};
template <>
struct StaticLoader<StaticFormat::kInt4G128> : Int4Loader<StaticFormat::kInt4G128> {};

// e4m3 codes widened to f16 (exact) in registers, one conversion per code pair; the
// activations are staged as f16 codes too. (sm_90 runs mma.sync e4m3 as exactly this, but
// converts A again for every token tile.) fp8_block128 accumulates each k-block apart and adds
// it times weight scale x activation scale (DeepSeek's per-block promotion).
template <StaticFormat F>
struct Fp8Loader {
  static constexpr int kLoads = 2, kDepth = 4;
  // fp8_block128's 128x128 scale blocks span two k-blocks (per_tensor has none to load).
  static constexpr bool kScalePairs = F == StaticFormat::kFP8Block128;
  static constexpr int kPromote = F == StaticFormat::kFP8Block128 ? 1 : 0;
  static constexpr bool kF16 = true;
  static constexpr bool kActScales = F == StaticFormat::kFP8Block128;
  using Scale = float2;  // block128: weight scales of tile rows 0..7 and 8..15; else unused
  __device__ __forceinline__ static void load_scale(const uint8_t* p, Scale& sc, StaticPred pr) {
    if constexpr (F == StaticFormat::kFP8Block128) {
      uint2 v = make_uint2(__float_as_uint(sc.x), __float_as_uint(sc.y));
      ldg_u64_pred(v, p, pr);
      sc = make_float2(__uint_as_float(v.x), __uint_as_float(v.y));
    } else {
      sc = make_float2(1.0f, 1.0f);
    }
  }

  __device__ __forceinline__ static void frags(const uint4 (&raw)[kLoads], const Scale&,
                                               uint32_t (&a)[4][4]) {
    // word 2s + (q >> 1) holds registers q & ~1 (low half) and q | 1 (high half) of step s
    const uint32_t w[8] = {raw[0].x, raw[0].y, raw[0].z, raw[0].w,
                           raw[1].x, raw[1].y, raw[1].z, raw[1].w};
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int q = 0; q < 4; ++q) a[s][q] = f16x2_of_e4m3x2(w[2 * s + (q >> 1)] >> (16 * (q & 1)));
  }
  __device__ __forceinline__ static float row_scale(const Scale& sc, int r, int) {
    return r == 0 ? sc.x : sc.y;
  }
};

template <>
struct StaticLoader<StaticFormat::kFP8PerTensor> : Fp8Loader<StaticFormat::kFP8PerTensor> {};
template <>
struct StaticLoader<StaticFormat::kFP8Block128> : Fp8Loader<StaticFormat::kFP8Block128> {};

}  // namespace servekit::cuda::static_moe
