// The static MoE kernels' device weight layout, checked on the CPU: pack_static_matrix (host)
// followed by an emulation of what the kernel does with the bytes (the decoders of
// static_layout.h, the scale folds and promotions, and mma m16n8k16 as the PTX ISA defines its
// fragments) must reproduce W . x of the plain quant.h layout. Written against quant.h's table
// with its own decoders, so it needs neither the quantizers nor a GPU. CUDA builds only (the
// packer belongs to the CUDA backend).
#include <gtest/gtest.h>

#ifdef SERVEKIT_WITH_CUDA

#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cuda/static_pack.h"

namespace servekit::cuda {
namespace {
namespace sm = static_moe;
using sm::StaticFormat;

// ---- independent decoders of quant.h's plain layout -----------------------------------------
double bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
double e4m3_value(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 0xF, m = b & 7;
  const double v = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
  return s ? -v : v;
}
double e2m1_value(uint8_t c) {
  static const double kMag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (c & 8) ? -kMag[c & 7] : kMag[c & 7];
}
int int4_value(uint8_t c) {
  return (c & 8) ? static_cast<int>(c & 0xF) - 16 : c & 0xF;
}

struct Case {
  QuantConfig q;
  bool gated;
  int64_t rows, cols;
};

// A random matrix in quant.h's layout, with the scales the kernel's folds must handle:
// mxfp4 codes 63..190 (2^-64..2^63), nvfp4 zero, subnormal and normal e4m3 scales.
QuantizedMatrix random_matrix(const Case& c, std::mt19937& rng) {
  QuantizedMatrix m;
  m.method = c.q.method;
  m.group_size = c.q.group_size;
  m.rows = c.rows;
  m.cols = c.cols;
  const size_t n = static_cast<size_t>(c.rows * c.cols);
  auto byte = [&] { return static_cast<uint8_t>(rng() & 0xFF); };
  switch (c.q.method) {
    case QuantMethod::kBF16:
      m.codes.resize(2 * n);
      for (size_t i = 0; i < n; ++i) {  // finite: exponent below 0xFF
        const uint16_t b = static_cast<uint16_t>((rng() & 0x3FFF) | 0x3000 | ((rng() & 1) << 15));
        m.codes[2 * i] = static_cast<uint8_t>(b & 0xFF);
        m.codes[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
      break;
    case QuantMethod::kFP8PerTensor:
    case QuantMethod::kFP8Block128:
      m.codes.resize(n);
      for (auto& b : m.codes) do
          b = byte();
        while ((b & 0x7F) == 0x7F);  // no NaN
      break;
    default:
      m.codes.resize(n / 2);
      for (auto& b : m.codes) b = byte();
      break;
  }
  auto put_f32 = [&](float v) {
    uint8_t raw[4];
    std::memcpy(raw, &v, 4);
    m.scales.insert(m.scales.end(), raw, raw + 4);
  };
  std::uniform_real_distribution<float> u(0.01f, 2.0f);
  switch (c.q.method) {
    case QuantMethod::kFP8PerTensor:
      m.tensor_scale = u(rng);
      break;
    case QuantMethod::kFP8Block128:
      for (int64_t i = 0; i < ((c.rows + 127) / 128) * (c.cols / 128); ++i) put_f32(u(rng));
      break;
    case QuantMethod::kMXFP4W4A16:
      for (int64_t i = 0; i < c.rows * c.cols / 32; ++i)
        m.scales.push_back(
            static_cast<uint8_t>(i % 7 == 0 ? (i % 2 ? 63 : 190) : 100 + rng() % 40));
      break;
    case QuantMethod::kNVFP4W4A16:
      m.tensor_scale = u(rng);
      for (int64_t i = 0; i < c.rows * c.cols / 16; ++i) {
        uint8_t s;
        do s = byte() & 0x7F;
        while (s == 0x7F);
        if (i % 11 == 0) s = 0;         // zero block
        if (i % 13 == 0) s = s & 0x07;  // subnormal (or zero)
        m.scales.push_back(s);
      }
      break;
    case QuantMethod::kInt4W4A16:
      for (int64_t i = 0; i < c.rows * c.cols / c.q.group_size; ++i) {
        const uint16_t b = static_cast<uint16_t>(0x3A00 + (rng() & 0x3FF));
        m.scales.push_back(static_cast<uint8_t>(b & 0xFF));
        m.scales.push_back(static_cast<uint8_t>(b >> 8));
      }
      break;
    default:
      break;
  }
  return m;
}

double plain_value(const QuantizedMatrix& m, int64_t r, int64_t k) {
  const size_t i = static_cast<size_t>(r * m.cols + k);
  auto f32 = [&](size_t idx) {
    float v;
    std::memcpy(&v, m.scales.data() + 4 * idx, 4);
    return static_cast<double>(v);
  };
  const uint8_t nib = (k % 2 == 0) ? (m.codes[i / 2] & 0xF) : (m.codes[i / 2] >> 4);
  switch (m.method) {
    case QuantMethod::kBF16:
      return bf16_value(static_cast<uint16_t>(m.codes[2 * i] | (m.codes[2 * i + 1] << 8)));
    case QuantMethod::kFP8PerTensor:
      return e4m3_value(m.codes[i]) * m.tensor_scale;
    case QuantMethod::kFP8Block128:
      return e4m3_value(m.codes[i]) *
             f32(static_cast<size_t>((r / 128) * (m.cols / 128) + k / 128));
    case QuantMethod::kMXFP4W4A16:
      return e2m1_value(nib) *
             std::ldexp(1.0, m.scales[static_cast<size_t>(r * (m.cols / 32) + k / 32)] - 127);
    case QuantMethod::kNVFP4W4A16:
      return e2m1_value(nib) *
             e4m3_value(m.scales[static_cast<size_t>(r * (m.cols / 16) + k / 16)]) * m.tensor_scale;
    case QuantMethod::kInt4W4A16: {
      const size_t s = static_cast<size_t>(r * (m.cols / m.group_size) + k / m.group_size);
      return int4_value(nib) *
             bf16_value(static_cast<uint16_t>(m.scales[2 * s] | (m.scales[2 * s + 1] << 8)));
    }
    default:
      return 0;
  }
}

// bf16 round-to-nearest-even of a double that must already be a bf16 value (exactness check).
bool is_bf16(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v) return false;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (u & 0xFFFF) == 0;
}

// ---- emulation of the kernel ----------------------------------------------------------------
// The A register values (as the tensor core sees them) of lane (g, t), k-block kb, tile i, and
// the fp32 factor the kernel applies to that register's products (promotion scale x alpha).
struct LaneFrags {
  double a[4][4][2];    // [step][reg][half]
  double factor[4][4];  // [step][reg]
};

LaneFrags emulate_lane(const StaticPackedMatrix& p, int64_t i, int64_t kb, int lane) {
  const StaticFormat f = p.geom.format;
  const int g = lane / 4, t = lane % 4;
  const uint8_t* lane_bytes = p.bytes.data() +
                              sm::static_code_block_offset(f, p.geom.tiles, p.geom.kblocks, i, kb) +
                              lane * 16;
  auto byte_at = [&](int o) { return lane_bytes[(o / 16) * 512 + o % 16]; };
  const int64_t tile_scales = p.geom.scale_bytes / p.geom.tiles;
  const uint8_t* sc = p.bytes.data() + p.geom.code_bytes + i * tile_scales +
                      sm::static_lane_scale_offset(f, static_cast<int>(kb), g, t);
  LaneFrags out{};
  for (int s = 0; s < 4; ++s) {
    uint32_t word = 0;
    std::memcpy(&word, lane_bytes + 4 * s, 4);
    uint32_t e2m1[4];
    sm::static_e2m1_unpack(word, e2m1);
    for (int q = 0; q < 4; ++q) {
      const int r = q & 1, h_blk = s >> 1;
      double factor = p.alpha;
      for (int h = 0; h < 2; ++h) {
        double v = 0;
        switch (f) {
          case StaticFormat::kBF16: {
            const int o = sm::static_code_offset(f, s, q, h);
            v = bf16_value(static_cast<uint16_t>(byte_at(o) | (byte_at(o + 1) << 8)));
            break;
          }
          case StaticFormat::kFP8PerTensor:
          case StaticFormat::kFP8Block128:
            v = e4m3_value(byte_at(sm::static_code_offset(f, s, q, h)));
            break;
          case StaticFormat::kMXFP4:
          case StaticFormat::kNVFP4: {
            const bool mx = f == StaticFormat::kMXFP4;
            const uint32_t fold =
                sm::static_fold_bits(sc[2 * r + h_blk], mx ? sm::kMXFoldMul : sm::kNVFoldMul,
                                     mx ? sm::kMXFoldAdd : sm::kNVFoldAdd);
            const double placed = bf16_value(static_cast<uint16_t>(e2m1[q] >> (16 * h)));
            const double folded = bf16_value(static_cast<uint16_t>(fold >> (16 * h)));
            v = placed * folded;
            EXPECT_TRUE(is_bf16(v)) << "the bf16 multiply of the fold must be exact";
            break;
          }
          default: {  // int4: (128 + code + 8) - 136
            const uint32_t w = sm::static_int4_unpack(word, q);
            v = bf16_value(static_cast<uint16_t>(w >> (16 * h))) - 136.0;
            break;
          }
        }
        out.a[s][q][h] = v;
      }
      if (f == StaticFormat::kFP8Block128) {
        float ws[2];
        std::memcpy(ws, sc, sizeof(ws));
        factor *= ws[r];
      } else if (sm::static_is_int4(f)) {
        const int idx = f == StaticFormat::kInt4G32 ? 2 * r + h_blk : r;
        factor *= bf16_value(static_cast<uint16_t>(sc[2 * idx] | (sc[2 * idx + 1] << 8)));
      }
      out.factor[s][q] = factor;
    }
  }
  return out;
}

// D[16][8] = W_tile(kb) . X^T as the kernel's mma steps compute it. x: [8][64] activations of the
// k-block (token n, column k), read by lane (g, t) as x[g][8t..8t+7] and x[g][32+8t..32+8t+7].
// PTX m16n8k16: A reg j of lane (g, t) holds (row g + 8 (j % 2), cols 2t + 8 (j / 2) + {0, 1});
// B reg j holds (k 2t + 8j + {0, 1}, n g); D element (row, n).
void emulate_kblock(const StaticPackedMatrix& p, int64_t i, int64_t kb, const double (&x)[8][64],
                    double (&d)[16][8]) {
  for (int s = 0; s < 4; ++s) {
    double a[16][16] = {}, fa[16][16] = {}, b[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int g = lane / 4, t = lane % 4;
      const LaneFrags lf = emulate_lane(p, i, kb, lane);
      for (int j = 0; j < 4; ++j)
        for (int h = 0; h < 2; ++h) {
          a[g + 8 * (j % 2)][2 * t + 8 * (j / 2) + h] = lf.a[s][j][h];
          fa[g + 8 * (j % 2)][2 * t + 8 * (j / 2) + h] = lf.factor[s][j];
        }
      // B registers: step s uses LDS chunk (s / 2), words 2 (s % 2) and 2 (s % 2) + 1.
      const int chunk = (s / 2) * 32 + 8 * t + 4 * (s % 2);
      for (int j = 0; j < 2; ++j)
        for (int h = 0; h < 2; ++h) b[2 * t + 8 * j + h][g] = x[g][chunk + 2 * j + h];
    }
    for (int r = 0; r < 16; ++r)
      for (int n = 0; n < 8; ++n)
        for (int k = 0; k < 16; ++k) d[r][n] += a[r][k] * fa[r][k] * b[k][n];
  }
}

// The case's name, for the test's name and for gtest's print of the parameter (which, without
// PrintTo, dumps the struct's bytes, its uninitialized padding included: valgrind reported it).
std::string case_name(const Case& c) {
  std::string name(quant_name(c.q.method));
  if (c.q.method == QuantMethod::kInt4W4A16) name += "_g" + std::to_string(c.q.group_size);
  return name + (c.gated ? "_gated_" : "_") + std::to_string(c.rows) + "x" + std::to_string(c.cols);
}
void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(c);
}

class StaticLayout : public ::testing::TestWithParam<Case> {};

TEST_P(StaticLayout, KernelEmulationMatchesPlainProduct) {
  const Case c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.rows * 131 + c.cols + static_cast<int>(c.q.method)));
  const QuantizedMatrix m = random_matrix(c, rng);
  const StaticPackedMatrix p = pack_static_matrix(m, c.gated);
  ASSERT_EQ(p.bytes.size(), static_cast<size_t>(p.geom.code_bytes + p.geom.scale_bytes));
  std::uniform_real_distribution<double> ux(-1.0, 1.0);
  for (int64_t i = 0; i < p.geom.tiles; ++i)
    for (int64_t kb = 0; kb < p.geom.kblocks; ++kb) {
      double x[8][64], d[16][8] = {};
      for (auto& row : x)
        for (double& v : row) v = ux(rng);
      emulate_kblock(p, i, kb, x, d);
      for (int r = 0; r < 16; ++r) {
        const int64_t row = sm::static_tile_row(p.geom, i, r);
        for (int n = 0; n < 8; ++n) {
          double ref = 0, mag = 0;
          for (int k = 0; k < 64; ++k) {
            const double w = plain_value(m, row, kb * 64 + k);
            ref += w * x[n][k];
            mag += std::fabs(w * x[n][k]);
          }
          // Products are exact in both; only the order of the double sums differs.
          ASSERT_NEAR(d[r][n], ref, 1e-12 * mag + 1e-300)
              << quant_name(c.q.method) << " tile " << i << " kb " << kb << " row " << row
              << " token " << n;
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, StaticLayout,
                         ::testing::Values(Case{{QuantMethod::kBF16, 128}, true, 32, 128},
                                           Case{{QuantMethod::kBF16, 128}, false, 16, 192},
                                           Case{{QuantMethod::kFP8PerTensor, 128}, true, 48, 192},
                                           Case{{QuantMethod::kFP8Block128, 128}, true, 160, 256},
                                           Case{{QuantMethod::kFP8Block128, 128}, false, 272, 128},
                                           Case{{QuantMethod::kMXFP4W4A16, 128}, true, 32, 192},
                                           Case{{QuantMethod::kMXFP4W4A16, 128}, false, 32, 64},
                                           Case{{QuantMethod::kNVFP4W4A16, 128}, true, 32, 192},
                                           Case{{QuantMethod::kInt4W4A16, 32}, true, 32, 192},
                                           Case{{QuantMethod::kInt4W4A16, 64}, false, 16, 128},
                                           Case{{QuantMethod::kInt4W4A16, 128}, true, 48, 384}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return case_name(info.param);
                         });

// Every column group is laid out as 8 tiles (a partial last group is zero-padded), so the kernel
// steps from one k-block of a tile to the next by the constant static_kblock_stride: the blocks
// of all tiles and k-blocks must be disjoint, inside code_bytes, and exactly that far apart.
TEST(StaticLayoutGeometry, KBlockStrideIsConstantAndBlocksAreDisjoint) {
  for (const StaticFormat f : {StaticFormat::kBF16, StaticFormat::kFP8Block128,
                               StaticFormat::kMXFP4, StaticFormat::kInt4G128}) {
    for (const int64_t rows : {16, 48, 128, 144, 2880}) {  // 1, 3, 8, 9 and 180 tiles
      const sm::StaticMatrixGeometry g = sm::static_geometry(f, rows, 256, false);
      const int64_t blk = sm::static_kblock_code_bytes(f);
      std::vector<uint8_t> used(static_cast<size_t>(g.code_bytes), 0);
      for (int64_t i = 0; i < g.tiles; ++i)
        for (int64_t kb = 0; kb < g.kblocks; ++kb) {
          const int64_t off = sm::static_code_block_offset(f, g.tiles, g.kblocks, i, kb);
          ASSERT_GE(off, 0);
          ASSERT_LE(off + blk, g.code_bytes) << "tiles " << g.tiles << " tile " << i;
          if (kb > 0) {
            ASSERT_EQ(off - sm::static_code_block_offset(f, g.tiles, g.kblocks, i, kb - 1),
                      sm::static_kblock_stride(f));
          }
          for (int64_t b = off; b < off + blk; ++b) {
            ASSERT_EQ(used[static_cast<size_t>(b)], 0) << "tile " << i << " kb " << kb;
            used[static_cast<size_t>(b)] = 1;
          }
        }
      // The padding is at most the missing tiles of the last group.
      const int64_t pad_tiles = (8 - g.tiles % 8) % 8;
      EXPECT_EQ(g.code_bytes, (g.tiles + pad_tiles) * g.kblocks * blk);
    }
  }
}

TEST(StaticPack, RejectsWhatTheKernelCannotRepresent) {
  std::mt19937 rng(3);
  QuantizedMatrix m = random_matrix(Case{{QuantMethod::kMXFP4W4A16, 128}, false, 16, 64}, rng);
  m.scales[5] = 191;  // 2^64: beyond the fold's bf16 exponent range
  EXPECT_THROW(pack_static_matrix(m, false), Error);
  QuantizedMatrix n = random_matrix(Case{{QuantMethod::kNVFP4W4A16, 128}, false, 16, 64}, rng);
  n.scales[3] = 0x7F;  // NaN
  EXPECT_THROW(pack_static_matrix(n, false), Error);
  QuantizedMatrix b = random_matrix(Case{{QuantMethod::kBF16, 128}, false, 16, 96}, rng);
  EXPECT_THROW(pack_static_matrix(b, false), Error);  // K = 96 is not a multiple of 64
  QuantizedMatrix w = random_matrix(Case{{QuantMethod::kMXFP4W4A8, 128}, false, 16, 64}, rng);
  EXPECT_THROW(pack_static_matrix(w, false), Error);
}

}  // namespace
}  // namespace servekit::cuda

#endif  // SERVEKIT_WITH_CUDA
