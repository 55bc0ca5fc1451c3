// Device weight layout of the static MoE kernels, shared by the host repack (static_pack.cpp),
// the device loaders (static_loaders.cuh) and the CPU tests. Pure C++ with host/device helpers.
//
// A weight matrix W [N, K] (y = x . W^T) is cut into m16 tiles of 16 rows and k-blocks of 64
// columns. One warp streams one tile over its k-blocks; per k-block each lane loads its share
// with 16-byte loads, already in mma fragment order, so a load feeds the tensor cores with no
// shuffles. The warp-wide load of one kload is 512 contiguous bytes (32 lanes x 16 B), and the
// 8 tiles of a column group (the 8 warps of a CTA) are interleaved per k-block, so one CTA step
// reads one contiguous block of 8 x kloads x 512 bytes (fewer DRAM pages open at once):
//   codes  [column group][k-block][tile of the group][kload][lane][16 B]
//          (the last group may hold fewer than 8 tiles: static_code_block_offset)
//   scales [tile][scale block][...]             per format, see static_scale_*
// Requirements (checked by the host): K % 64 == 0, N % 16 == 0 (W13 of a gated activation:
// I % 8 == 0), so nothing is padded.
//
// W13 of a gated activation is re-ordered so that tile i holds gate rows 8i..8i+7 (tile rows
// 0..7) and up rows I+8i..I+8i+7 (tile rows 8..15): an mma accumulator then holds gate and up of
// the same column in one lane, and the activation needs no data exchange.
//
// K order. Every format goes to the tensor cores as 16-bit values (bf16, or f16 for e4m3 codes,
// which f16 holds exactly) through mma m16n8k16. The 64 columns of a k-block are split into 4
// mma steps s, and lane (g = lane / 4, t = lane % 4) holds in step s the columns
//   base(s, t) + {0, 1, 2, 3},  base = 8t + 4s (s < 2), 32 + 8t + 4(s - 2) (s >= 2)
// as the mma's logical columns {2t, 2t+1, 2t+8, 2t+9}. K is a reduction, so any permutation
// works if the activations use the same one: here lane t's activations are the contiguous
// columns 8t..8t+7 and 32+8t..32+8t+7 of the block, two 16-byte shared-memory loads.
#pragma once

#include <cstdint>

#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

// Weight formats of the static path (mxfp4_w4a8 is not one of them).
enum class StaticFormat : uint8_t {
  kBF16,
  kFP8PerTensor,
  kFP8Block128,
  kMXFP4,
  kNVFP4,
  kInt4G32,
  kInt4G64,
  kInt4G128,
};
constexpr int kNumStaticFormats = 8;

SERVEKIT_HD constexpr bool static_is_fp8(StaticFormat f) {
  return f == StaticFormat::kFP8PerTensor || f == StaticFormat::kFP8Block128;
}
SERVEKIT_HD constexpr bool static_is_4bit(StaticFormat f) {
  return f == StaticFormat::kMXFP4 || f == StaticFormat::kNVFP4 || f == StaticFormat::kInt4G32 ||
         f == StaticFormat::kInt4G64 || f == StaticFormat::kInt4G128;
}
SERVEKIT_HD constexpr bool static_is_int4(StaticFormat f) {
  return f == StaticFormat::kInt4G32 || f == StaticFormat::kInt4G64 || f == StaticFormat::kInt4G128;
}

// 16-byte loads per lane per k-block: 64 columns x 2 rows (g, g + 8) of the lane's elements.
SERVEKIT_HD constexpr int static_kloads(StaticFormat f) {
  return f == StaticFormat::kBF16 ? 4 : static_is_fp8(f) ? 2 : 1;
}
// Code bytes of one tile's k-block.
SERVEKIT_HD constexpr int64_t static_kblock_code_bytes(StaticFormat f) {
  return static_cast<int64_t>(static_kloads(f)) * 512;
}
// Bytes from one k-block of a tile to the next: every column group is laid out as 8 tiles, a
// last partial group included (its missing tiles are zero padding that no kernel reads), so the
// stride is a compile-time constant and the kernel's loads of a batch of k-blocks are one base
// address plus immediate offsets.
SERVEKIT_HD constexpr int64_t static_kblock_stride(StaticFormat f) {
  return kStaticWarps * static_kblock_code_bytes(f);
}
// Byte offset of tile i's k-block kb (static_kblock_code_bytes long): column group i / 8 holds
// its 8 tiles' k-block 0, then their k-block 1, and so on. `tiles` is unused since the padding;
// kept so that callers state the matrix they address.
SERVEKIT_HD constexpr int64_t static_code_block_offset(StaticFormat f, int64_t /*tiles*/,
                                                       int64_t kblocks, int64_t i, int64_t kb) {
  const int64_t grp = i / kStaticWarps, blk = static_kblock_code_bytes(f);
  return grp * kblocks * static_kblock_stride(f) + kb * static_kblock_stride(f) +
         (i % kStaticWarps) * blk;
}

// Scales. Each lane loads the scales of its two rows (g, g + 8) for the k-block:
//   mxfp4      u32 at tile_kb*32 + 4g: ue8m0 bytes [g: h0, h1][g+8: h0, h1], h = half of the
//              k-block (columns 0..31, 32..63), i.e. the 32-column group.
//   nvfp4      u32 at tile_kb*64 + 4(2g + t/2): codes (static_nv_scale_code) of the 16-column
//              groups t/2 (h = 0) and 2 + t/2 (h = 1), same byte order.
//   int4 g32   u64 at tile_kb*64 + 8g: bf16 [g: h0, h1][g+8: h0, h1].
//   int4 g64   u32 at tile_kb*32 + 4g: bf16 [g][g+8].
//   int4 g128  u32 at tile_kb2*32 + 4g (kb2 = kb / 2): bf16 [g][g+8].
//   fp8 block  float2 at tile_kb2*8, the same for all lanes: [tile rows 0..7][tile rows 8..15]
//              (the 128x128 blocks of the two halves; they differ for gated W13 tiles).
// Bytes of one scale block of a tile and k-blocks per scale block:
SERVEKIT_HD constexpr int static_scale_block_bytes(StaticFormat f) {
  switch (f) {
    case StaticFormat::kMXFP4:
      return 32;
    case StaticFormat::kNVFP4:
      return 64;
    case StaticFormat::kInt4G32:
      return 64;
    case StaticFormat::kInt4G64:
      return 32;
    case StaticFormat::kInt4G128:
      return 32;
    case StaticFormat::kFP8Block128:
      return 8;
    default:
      return 0;
  }
}
SERVEKIT_HD constexpr int static_scale_block_kblocks(StaticFormat f) {
  return (f == StaticFormat::kInt4G128 || f == StaticFormat::kFP8Block128) ? 2 : 1;
}
// Byte offset, within a tile's scales, of lane (g, t)'s scales for k-block kb.
SERVEKIT_HD constexpr int64_t static_lane_scale_offset(StaticFormat f, int kb, int g, int t) {
  const int64_t blk = kb / static_scale_block_kblocks(f);
  const int64_t base = blk * static_scale_block_bytes(f);
  switch (f) {
    case StaticFormat::kMXFP4:
      return base + 4 * g;
    case StaticFormat::kNVFP4:
      return base + 4 * (2 * g + t / 2);
    case StaticFormat::kInt4G32:
      return base + 8 * g;
    case StaticFormat::kInt4G64:
    case StaticFormat::kInt4G128:
      return base + 4 * g;
    default:
      return base;
  }
}

struct StaticMatrixGeometry {
  StaticFormat format;
  int64_t rows, cols;  // N, K
  bool gated;          // W13 of a gated activation (tile = 8 gate + 8 up rows)
  int64_t tiles, kblocks;
  int64_t code_bytes, scale_bytes;  // scales follow the codes in one buffer
};

SERVEKIT_HD StaticMatrixGeometry static_geometry(StaticFormat f, int64_t rows, int64_t cols,
                                                 bool gated) {
  StaticMatrixGeometry m{};
  m.format = f;
  m.rows = rows;
  m.cols = cols;
  m.gated = gated;
  m.tiles = rows / kStaticTileRows;
  m.kblocks = cols / kStaticKBlock;
  // Codes of whole column groups (static_code_block_offset): the tiles rounded up to 8.
  const int64_t padded_tiles = (m.tiles + kStaticWarps - 1) / kStaticWarps * kStaticWarps;
  m.code_bytes = padded_tiles * m.kblocks * static_kblock_code_bytes(f);
  const int64_t sblocks =
      (m.kblocks + static_scale_block_kblocks(f) - 1) / static_scale_block_kblocks(f);
  m.scale_bytes = m.tiles * sblocks * static_scale_block_bytes(f);
  return m;
}

// Matrix row of tile row r (0..15) of tile i.
SERVEKIT_HD constexpr int64_t static_tile_row(const StaticMatrixGeometry& m, int64_t i, int r) {
  if (!m.gated) return i * kStaticTileRows + r;
  const int64_t half = m.rows / 2;  // I
  return r < 8 ? 8 * i + r : half + 8 * i + (r - 8);
}

// ---- fragment maps ----------------------------------------------------------------------------

// Register q (0..3) of step s of lane (g, t) holds two consecutive columns of row g (q even) or
// g + 8 (q odd), starting at this k-block column; element h (0 = low half) is column +h.
SERVEKIT_HD constexpr int static_frag_row(int g, int q) {
  return (q & 1) ? g + 8 : g;
}
SERVEKIT_HD constexpr int static_frag_col(int s, int t, int q) {
  const int base = s < 2 ? 8 * t + 4 * s : 32 + 8 * t + 4 * (s - 2);
  return base + ((q >> 1) << 1);
}
// Byte offset, within the lane's bytes of a k-block (kloads x 16), of element h of register q of
// step s: bf16 2 bytes per element, e4m3 1 byte (the kernel widens each 2-byte pair to f16x2).
// 4-bit codes are placed bit by bit (static_e2m1_bit, static_int4_bit) in word s.
SERVEKIT_HD constexpr int static_code_offset(StaticFormat f, int s, int q, int h) {
  return f == StaticFormat::kBF16 ? s * 16 + q * 4 + h * 2 : s * 8 + q * 2 + h;
}

// ---- 4-bit codes ------------------------------------------------------------------------------
// The lane's 16 bytes are four 32-bit words, word s feeding mma step s; each word holds 8 codes,
// the 4 bf16x2 registers of the step. e2m1 codes are placed so that 3 of the 4 registers come
// out of the word with one shift and one mask (the 4th with three), which is what the
// dequantizer costs per element on a bandwidth-bound kernel. A register's bits are
// (sign << 15 | e1 e0 m << 6) per bf16 half: the e2m1 value times 2^-126 (e2m1's subnormal 0.5
// lands on bf16's subnormal range), which the scale multiply then lifts (static_loaders.cuh).
// Bit positions of the e2m1 code of register q, half h, for the code's bits 3 (sign), 2, 1, 0.
SERVEKIT_HD constexpr int static_e2m1_bit(int q, int h, int code_bit) {
  // [q][code_bit 3..0] for the low half; the high half is 16 above.
  constexpr int kPos[4][4] = {{15, 8, 7, 6}, {12, 5, 4, 3}, {9, 2, 1, 0}, {14, 13, 11, 10}};
  return kPos[q][3 - code_bit] + 16 * h;
}
// The four bf16x2 registers (value * 2^-126 each) of one word, in register order.
SERVEKIT_HD void static_e2m1_unpack(uint32_t w, uint32_t out[4]) {
  constexpr uint32_t kMask = 0x81C081C0u;
  out[0] = w & kMask;
  out[1] = (w << 3) & kMask;
  out[2] = (w << 6) & kMask;
  out[3] = ((w << 1) & 0x80008000u) | ((w >> 5) & 0x01000100u) | ((w >> 4) & 0x00C000C0u);
}
// int4 codes are stored biased (code + 8, 0..15): register q, half h holds nibble q of half h.
SERVEKIT_HD constexpr int static_int4_bit(int q, int h) {
  return 4 * q + 16 * h;
}
// bf16x2 (128 + biased code) of register q; the kernel subtracts 136 to get the code.
SERVEKIT_HD constexpr uint32_t static_int4_unpack(uint32_t w, int q) {
  return ((w >> (4 * q)) & 0x000F000Fu) | 0x43004300u;
}

// ---- 4-bit scales -----------------------------------------------------------------------------
// The weights go to the tensor cores as bf16 (value * 2^-126) * fold, fold = scale * 2^64 in
// bf16, so the product is value * scale * 2^-62 (a normal bf16, exact: at most 6 significant
// bits) and the accumulator is multiplied by 2^62 (static_alpha_fold) at the end. Each fold is
// one integer multiply-add from its byte: fold bits (both halves) = byte * mul + add.
constexpr float kStaticFoldAlpha = 4611686018427387904.0f;  // 2^62
// mxfp4: ue8m0 e -> 2^(e - 127 + 64): bf16 exponent field e + 64 (needs e <= 190).
constexpr uint32_t kMXFoldMul = 0x00800080u;
constexpr uint32_t kMXFoldAdd = (64u << 7) | (64u << 23);
constexpr int kMXMaxScaleCode = 190;
// nvfp4: the e4m3 scale, re-coded by the host as u = (e + 9) << 3 | m3 for a value 2^e * 1.m3
// (e in -9..8 covers e4m3's normals and subnormals); fold exponent field e + 64 + 127 = (u >> 3)
// + 182, mantissa m3 << 4.
constexpr uint32_t kNVFoldMul = 0x00100010u;
constexpr uint32_t kNVFoldAdd = (182u << 7) | (182u << 23);

SERVEKIT_HD constexpr uint32_t static_fold_bits(uint32_t code, uint32_t mul, uint32_t add) {
  return code * mul + add;
}

}  // namespace servekit::cuda::static_moe
