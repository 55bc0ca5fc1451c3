// Repack of quant.h's plain weight layout into the static kernels' fragment-ordered layout.
// Runs once per expert at load time; clarity over speed.
#include "cuda/static_pack.h"

#include <cstring>

#include "servekit/error.h"

namespace servekit::cuda {
namespace sm = static_moe;
using sm::StaticFormat;

StaticFormat static_format(const QuantConfig& q) {
  validate_quant_config(q);
  switch (q.method) {
    case QuantMethod::kBF16:
      return StaticFormat::kBF16;
    case QuantMethod::kFP8PerTensor:
      return StaticFormat::kFP8PerTensor;
    case QuantMethod::kFP8Block128:
      return StaticFormat::kFP8Block128;
    case QuantMethod::kMXFP4W4A16:
      return StaticFormat::kMXFP4;
    case QuantMethod::kNVFP4W4A16:
      return StaticFormat::kNVFP4;
    case QuantMethod::kInt4W4A16:
      return q.group_size == 32   ? StaticFormat::kInt4G32
             : q.group_size == 64 ? StaticFormat::kInt4G64
                                  : StaticFormat::kInt4G128;
    case QuantMethod::kMXFP4W4A8:
      break;
  }
  SERVEKIT_FAIL("static moe: quant ", quant_name(q.method),
                " has no static kernel (supported: bf16, fp8_per_tensor, fp8_block128, "
                "mxfp4_w4a16, nvfp4_w4a16, int4_w4a16)");
}

namespace {

// Element (r, k) of the plain layout.
struct PlainReader {
  const QuantizedMatrix& m;
  uint16_t bf16(int64_t r, int64_t k) const {
    const size_t i = 2 * static_cast<size_t>(r * m.cols + k);
    return static_cast<uint16_t>(m.codes[i] | (m.codes[i + 1] << 8));
  }
  uint8_t byte(int64_t r, int64_t k) const { return m.codes[static_cast<size_t>(r * m.cols + k)]; }
  uint8_t nibble(int64_t r, int64_t k) const {
    const uint8_t b = m.codes[static_cast<size_t>((r * m.cols + k) / 2)];
    return (k % 2 == 0) ? (b & 0xF) : (b >> 4);
  }
  // Scale byte(s) of group grp (k / block) of row r, for the per-row formats.
  uint8_t scale_u8(int64_t r, int64_t grp, int64_t groups) const {
    return m.scales[static_cast<size_t>(r * groups + grp)];
  }
  uint16_t scale_bf16(int64_t r, int64_t grp, int64_t groups) const {
    const size_t i = 2 * static_cast<size_t>(r * groups + grp);
    return static_cast<uint16_t>(m.scales[i] | (m.scales[i + 1] << 8));
  }
  float scale_block128(int64_t r, int64_t kb128) const {
    float s;
    std::memcpy(
        &s,
        m.scales.data() + sizeof(float) * static_cast<size_t>((r / 128) * (m.cols / 128) + kb128),
        sizeof(float));
    return s;
  }
};

// nvfp4 block scale (e4m3 byte) -> the 8-bit code of static_layout.h: 2^e * 1.m3 with
// u = (e + 9) << 3 | m3. Zero maps to code 0 with *zero_block set (the caller clears the codes).
uint8_t nv_scale_code(uint8_t b, bool* zero_block) {
  SERVEKIT_CHECK((b & 0x80) == 0 && (b & 0x7F) != 0x7F, "static moe: nvfp4 block scale 0x",
                 std::hex, static_cast<int>(b), " is negative or NaN; the static kernel folds ",
                 "only finite non-negative scales");
  const int e_field = (b >> 3) & 0xF, mant = b & 7;
  *zero_block = (e_field == 0 && mant == 0);
  if (*zero_block) return 0;
  int e, m3;
  if (e_field > 0) {
    e = e_field - 7;
    m3 = mant;
  } else {  // subnormal m/8 * 2^-6: normalise around the top set bit p of m
    const int p = mant >= 4 ? 2 : mant >= 2 ? 1 : 0;
    e = p - 9;
    m3 = ((mant - (1 << p)) << (3 - p)) & 7;
  }
  return static_cast<uint8_t>(((e + 9) << 3) | m3);
}

void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>(v >> 8);
}

void pack_codes(const PlainReader& in, const sm::StaticMatrixGeometry& geo, uint8_t* out,
                const std::vector<uint8_t>& zero_blocks) {
  const StaticFormat f = geo.format;
  for (int64_t i = 0; i < geo.tiles; ++i)
    for (int64_t kb = 0; kb < geo.kblocks; ++kb)
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        uint8_t* base =
            out + sm::static_code_block_offset(f, geo.tiles, geo.kblocks, i, kb) + lane * 16;
        // Byte o of the lane's k-block bytes lives in kload o / 16.
        auto at = [&](int o) { return base + (o / 16) * 512 + o % 16; };
        if (!sm::static_is_4bit(f)) {
          for (int s = 0; s < 4; ++s)
            for (int q = 0; q < 4; ++q)
              for (int h = 0; h < 2; ++h) {
                const int64_t r = sm::static_tile_row(geo, i, sm::static_frag_row(g, q));
                const int64_t k = kb * 64 + sm::static_frag_col(s, t, q) + h;
                const int o = sm::static_code_offset(f, s, q, h);
                if (f == StaticFormat::kBF16) {
                  put_u16(at(o), in.bf16(r, k));
                } else {
                  *at(o) = in.byte(r, k);
                }
              }
        } else {
          const bool int4 = sm::static_is_int4(f);
          for (int s = 0; s < 4; ++s) {
            uint32_t w = 0;
            for (int q = 0; q < 4; ++q)
              for (int h = 0; h < 2; ++h) {
                const int64_t r = sm::static_tile_row(geo, i, sm::static_frag_row(g, q));
                const int64_t k = kb * 64 + sm::static_frag_col(s, t, q) + h;
                uint32_t c = in.nibble(r, k);
                if (int4) {
                  w |= (c ^ 8u) << sm::static_int4_bit(q, h);  // two's complement -> code + 8
                  continue;
                }
                if (!zero_blocks.empty() &&
                    zero_blocks[static_cast<size_t>(r * (geo.cols / 16) + k / 16)])
                  c = 0;
                for (int bit = 0; bit < 4; ++bit)
                  if ((c >> bit) & 1u) w |= 1u << sm::static_e2m1_bit(q, h, bit);
              }
            std::memcpy(base + 4 * s, &w, sizeof(w));
          }
        }
      }
}

void pack_scales(const PlainReader& in, const sm::StaticMatrixGeometry& geo, uint8_t* out,
                 std::vector<uint8_t>* zero_blocks) {
  const StaticFormat f = geo.format;
  if (sm::static_scale_block_bytes(f) == 0) return;
  const int64_t per_kb = sm::static_scale_block_kblocks(f);
  const int64_t sblocks = (geo.kblocks + per_kb - 1) / per_kb;
  const int64_t tile_bytes = sblocks * sm::static_scale_block_bytes(f);
  if (f == StaticFormat::kNVFP4) {  // recode every scale first, noting the zero blocks
    const int64_t groups = geo.cols / 16;
    zero_blocks->assign(static_cast<size_t>(geo.rows * groups), 0);
    for (int64_t r = 0; r < geo.rows; ++r)
      for (int64_t grp = 0; grp < groups; ++grp) {
        bool zero = false;
        nv_scale_code(in.scale_u8(r, grp, groups), &zero);
        (*zero_blocks)[static_cast<size_t>(r * groups + grp)] = zero ? 1 : 0;
      }
  }
  for (int64_t i = 0; i < geo.tiles; ++i)
    for (int64_t kb = 0; kb < geo.kblocks; kb += per_kb)
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        uint8_t* p = out + i * tile_bytes + sm::static_lane_scale_offset(f, kb, g, t);
        const int64_t rg = sm::static_tile_row(geo, i, g), rg8 = sm::static_tile_row(geo, i, g + 8);
        const int64_t rows2[2] = {rg, rg8};
        switch (f) {
          case StaticFormat::kMXFP4:
            for (int rr = 0; rr < 2; ++rr)
              for (int h = 0; h < 2; ++h) {
                const uint8_t e = in.scale_u8(rows2[rr], kb * 2 + h, geo.cols / 32);
                SERVEKIT_CHECK(e <= sm::kMXMaxScaleCode, "static moe: mxfp4 scale code ",
                               static_cast<int>(e), " (2^", static_cast<int>(e) - 127, ") at row ",
                               rows2[rr], " exceeds the static kernel's limit ",
                               sm::kMXMaxScaleCode, " (2^63)");
                p[2 * rr + h] = e;
              }
            break;
          case StaticFormat::kNVFP4:
            for (int rr = 0; rr < 2; ++rr)
              for (int h = 0; h < 2; ++h) {
                bool zero = false;
                p[2 * rr + h] = nv_scale_code(
                    in.scale_u8(rows2[rr], kb * 4 + 2 * h + t / 2, geo.cols / 16), &zero);
              }
            break;
          case StaticFormat::kInt4G32:
            for (int rr = 0; rr < 2; ++rr)
              for (int h = 0; h < 2; ++h)
                put_u16(p + 2 * (2 * rr + h), in.scale_bf16(rows2[rr], kb * 2 + h, geo.cols / 32));
            break;
          case StaticFormat::kInt4G64:
            for (int rr = 0; rr < 2; ++rr)
              put_u16(p + 2 * rr, in.scale_bf16(rows2[rr], kb, geo.cols / 64));
            break;
          case StaticFormat::kInt4G128:
            for (int rr = 0; rr < 2; ++rr)
              put_u16(p + 2 * rr, in.scale_bf16(rows2[rr], kb / 2, geo.cols / 128));
            break;
          case StaticFormat::kFP8Block128: {
            const float s[2] = {in.scale_block128(sm::static_tile_row(geo, i, 0), kb / 2),
                                in.scale_block128(sm::static_tile_row(geo, i, 8), kb / 2)};
            std::memcpy(p, s, sizeof(s));
            break;
          }
          default:
            break;
        }
      }
}

}  // namespace

StaticPackedMatrix pack_static_matrix(const QuantizedMatrix& m, bool gated) {
  const QuantConfig q{m.method, m.group_size};
  const StaticFormat f = static_format(q);
  SERVEKIT_CHECK(m.cols % 64 == 0, "static moe: weight cols=", m.cols, " must be a multiple of 64");
  SERVEKIT_CHECK(m.rows % 16 == 0, "static moe: weight rows=", m.rows, " must be a multiple of 16");
  SERVEKIT_CHECK(!gated || (m.rows / 2) % 8 == 0, "static moe: gated W13 rows=", m.rows,
                 " must be 2I with I a multiple of 8");
  StaticPackedMatrix out;
  out.geom = sm::static_geometry(f, m.rows, m.cols, gated);
  out.bytes.assign(static_cast<size_t>(out.geom.code_bytes + out.geom.scale_bytes), 0);
  const PlainReader in{m};
  std::vector<uint8_t> zero_blocks;
  pack_scales(in, out.geom, out.bytes.data() + out.geom.code_bytes, &zero_blocks);
  pack_codes(in, out.geom, out.bytes.data(), zero_blocks);
  switch (f) {
    case StaticFormat::kFP8PerTensor:
      out.alpha = m.tensor_scale;
      break;
    case StaticFormat::kMXFP4:
      out.alpha = sm::kStaticFoldAlpha;
      break;
    case StaticFormat::kNVFP4:
      out.alpha = sm::kStaticFoldAlpha * m.tensor_scale;
      break;
    default:
      out.alpha = 1.0f;
      break;
  }
  return out;
}

}  // namespace servekit::cuda
