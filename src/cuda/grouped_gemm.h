// Grouped GEMM on Hopper tensor cores for the MoE dynamic path. Internal header (host C++,
// includes the CUDA runtime header but no CUTLASS).
//
//   for g in [0, G):  D[off[g]:off[g+1], :] = alpha_g * A[off[g]:off[g+1], :] · B[g]ᵀ
//
// with the group offsets read on the device: a run never synchronises with the host and
// allocates nothing (CUDA-graph capturable). Shapes and layouts:
//   A  [rows, K] row-major (K-major): bf16, or e4m3 for the fp8 operands
//   B  [G, N, K] row-major per group (K-major, "y = x · Wᵀ"), same element type as A
//   D  [rows, N] row-major bf16; rows outside [0, off[G]) are not written
//   fp8_per_tensor: alpha_g = a_scale[0] * b_scale[g] (device fp32)
//   fp8_block128:   value = code * scale per block; activation scales grouped MN-major
//                   (a_block_scale_index), weight scales [G, K/128, ceil(N/128)] (MN-major,
//                   b_block_scale_index), fp32, followed by kBlockScaleTailFloats readable
//                   floats (allocate gemm_b_block_scale_floats(G, N, K))
// K and N must be multiples of gemm_k_multiple / gemm_n_multiple (gemm_tile_config.h); all
// pointers 16-byte aligned.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <cuda_runtime.h>

#include "cuda/gemm_tile_config.h"
#include "cuda/moe_quant.h"
#include "servekit/moe.h"

#if defined(__CUDACC__)
#define SERVEKIT_HOST_DEVICE __host__ __device__
#else
#define SERVEKIT_HOST_DEVICE
#endif

namespace servekit::cuda {

// GEMM1's activation fused into the epilogue (MoE layer): with it, a run also writes
//   out[r, c] = quantize(act(bf16(D[r, gate c]) + bias[g, c], bf16(D[r, up c]) + bias[g, I + c]))
// for c < I = N / 2, bit for bit what launch_activation_quantize on D would give. B must be
// interleaved in blocks of act.interleave_rows rows (interleaved_w13_row). Only the
// instantiations with gemm_tile_fuses_activation do it (fuses_activation below).
struct GemmActFusion {
  bool enabled = false;
  Activation activation = Activation::kSwiGLU;  // gated
  ActFormat format = ActFormat::kBF16;          // kBF16, kFP8Block128 or kFP8Block128AsBF16
  // Rows of B's gate/up interleave (w13_interleave_rows): 128, or 64 (bf16 only); 8 for the int4
  // GEMM (kW4A16Interleave). Each tile fuses only on the interleave it is compiled for: create()
  // builds bf16's 128x256 tile for this one; the swap-AB tiles have their own (cooperative 128,
  // ping-pong 64).
  int interleave_rows = 128;
};

struct GroupedGemmShape {
  GemmOperand operand = GemmOperand::kBF16;
  int num_groups = 0;  // G
  int64_t n = 0, k = 0;
  // Largest off[G] the caller will pass, and a bound on A: A must hold capacity_rows rows (bf16's
  // swap-AB tiles describe A as [capacity_rows, K] once and read rows past a group's end, up to
  // capacity_rows, into outputs they do not store; sm90_flat_tma_mainloop.cuh). Also the tuning
  // hint when a run gives no rows_hint.
  int64_t capacity_rows = 0;
  // bf16: create() builds the ping-pong swap-AB tile (swap_pp_tile_config) instead of the
  // cooperative one as the per-run swap choice (use_swap_pingpong picks it for a shape).
  bool swap_pingpong = false;
  // Requires a gated activation, n % 256 == 0, a format that matches the operand (kFP8Block128
  // with fp8_block128, the bf16 formats with bf16) and interleave_rows 128 (or 64 with bf16);
  // create() throws otherwise.
  GemmActFusion act{};
  // The MoE routing behind the groups (gemm_tile_config.h), for the tile pick only: with it the
  // pair swap tile is judged on a routed group's rows, without the shared experts' groups.
  // create() throws unless every field is 0 or top_k >= 1, shared_groups in [0, G) and
  // experts >= 1.
  GemmRoutingHint routing{};
  // make_grouped_gemm_w4a16 only: K elements per bf16 weight scale (64 or 128); 0 elsewhere.
  int weight_group = 0;
};

// Whether a run does its work (GroupedGemmOperands::gate): always, or only when / unless the
// groups' rows, read on the device, make the pair swap tile pay against the 2x1 one
// (pair_gate_pays over swap_gate_tiles and pair_gate_tiles, gemm_tile_config.h). A run that does
// not gives every group 0 rows: its kernel launches, finds no tile and writes nothing. Create()'s
// GEMM runs the 2x1 swap tile gated kUnlessPairPays and then the pair gated kIfPairPays on the
// same operands (GemmTileKind::kSwapOrPair), so exactly one of them writes the result.
enum class GemmRunGate : uint8_t { kAlways, kIfPairPays, kUnlessPairPays };

struct GroupedGemmOperands {               // all device pointers
  const int32_t* group_offsets = nullptr;  // [G + 1], non-decreasing, off[0] = 0
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  // Elements from group g's B to group g + 1's: -1 (the default) is N * K, B packed as [G, N, K];
  // 0 gives every group the one matrix B[0] (the GEMM probe, bench/tools/gemm_groups.cpp, uses it
  // to time group switches with the weights in L2); any other value must be a multiple of K of at
  // least N * K (whole rows of padding). Only B moves: fp8 scales stay per group.
  int64_t b_group_stride = -1;
  const float* a_scale = nullptr;        // fp8_per_tensor: [1]
  const float* b_scale = nullptr;        // fp8_per_tensor: [G]
  const float* a_block_scale = nullptr;  // fp8_block128: [rows * K/128], a_block_scale_index
  // fp8_block128: [G * K/128 * ceil(N/128)] + kBlockScaleTailFloats (gemm_b_block_scale_floats)
  const float* b_block_scale = nullptr;
  // make_grouped_gemm_w4a16: bf16 weight scales [G, K/weight_group, N] (N contiguous: the
  // transpose of quant.h's [N, K/G] per expert, w4a16_gemm_layout).
  const void* b_group_scale = nullptr;
  // Host-side tuning hint, never read on the device and never changing results: the rows this
  // run is expected to carry (e.g. tokens x top-k); 0 means shape.capacity_rows. It picks the
  // tile (choose_gemm_tile, gemm_tile_pick.h): bf16 runs with at most kSmallMTileMaxRows rows
  // per group use the 64-row tile, runs whose groups pad less in 144-token tiles the swap-AB one.
  int64_t rows_hint = 0;
  // Fused activation (shape.act enabled and fuses_activation(rows_hint)): act_out non-null
  // runs it, writing act_out [rows, N/2] (bf16, or e4m3 for kFP8Block128) and, for
  // kFP8Block128, act_out_scale [rows * N/256] (a_block_scale_index with K/128 = N/256), instead
  // of D: a fused run writes nothing to d (which stays required: the non-fused tiles of the
  // same GEMM object use it).
  // act_bias: [G, N] fp32 in logical order (gate then up), or null.
  void* act_out = nullptr;
  float* act_out_scale = nullptr;
  const float* act_bias = nullptr;
  // Host-side: see GemmRunGate (callers of create()'s GEMM leave it kAlways).
  GemmRunGate gate = GemmRunGate::kAlways;
  // Launch with programmatic dependent launch (kernels/pdl.cuh): the setup and GEMM kernels may
  // start while the previous kernel on the stream runs, and wait for it before reading. Only
  // when the previous operation on the stream is a kernel. Never changes results.
  bool pdl = false;
};

// Elements from group g's B to group g + 1's for a b_group_stride (-1: packed, N * K).
SERVEKIT_HOST_DEVICE inline int64_t b_group_elements(int64_t b_group_stride, int64_t n, int64_t k) {
  return b_group_stride < 0 ? n * k : b_group_stride;
}

// Position of the 1x128 activation scale of permuted row `row` (in group g, whose rows are
// [group_begin, group_begin + group_rows)) and K block kb: group g's scales form an [K/128,
// M_g] MN-major block starting at group_begin * K/128.
SERVEKIT_HOST_DEVICE inline int64_t a_block_scale_index(int64_t group_begin, int64_t group_rows,
                                                        int64_t k_blocks, int64_t row, int64_t kb) {
  return group_begin * k_blocks + kb * group_rows + (row - group_begin);
}

// Position of the 128x128 weight scale of block (nb, kb) of group g.
SERVEKIT_HOST_DEVICE inline int64_t b_block_scale_index(int64_t g, int64_t n_blocks,
                                                        int64_t k_blocks, int64_t nb, int64_t kb) {
  return (g * k_blocks + kb) * n_blocks + nb;
}

// Readable floats the fp8_block128 kernels need after the last weight scale. CUTLASS 4.2's
// ptr-array blockwise producer (load_auxiliary) predicates its 128-column weight-scale loads by
// the wrong element of the coordinate tensor, so a tile that overhangs N by a whole block loads
// the blocks past ceil(N/128) too: up to TileN / 128 * ClusterN - 1 floats (3 for the 128x256
// tile in its 1x2 cluster) past group g's last k-block row. Inside the array those are the next
// row's scales; after the last group's last row they are past the end (compute-sanitizer
// memcheck, session 38: N = 2880, one float). The values only multiply accumulator columns past
// N, which the epilogue never stores (GroupedGemmCuda.BGroupStride fills this tail with NaN).
// The runner checks every block-scaled tile against this bound at compile time.
inline constexpr int64_t kBlockScaleTailFloats = 4;

// Floats to allocate for b_block_scale: G * K/128 * ceil(N/128) + kBlockScaleTailFloats.
inline int64_t gemm_b_block_scale_floats(int64_t groups, int64_t n, int64_t k) {
  return groups * (k / 128) * ((n + 127) / 128) + kBlockScaleTailFloats;
}

// One grouped GEMM problem bound to a device: owns the per-group argument arrays and the
// CUTLASS workspace (allocated once, at construction), and launches on any stream.
class GroupedGemm {
 public:
  // Throws servekit::Error for an unsupported shape (naming N, K and the required multiple) or
  // a CUDA failure. device: CUDA ordinal (must be current when run() is called).
  static std::unique_ptr<GroupedGemm> create(const GroupedGemmShape& shape, int device);
  virtual ~GroupedGemm() = default;

  // Enqueues the GEMM (a setup kernel that writes the per-group arguments from the offsets,
  // then the CUTLASS kernel). Throws servekit::Error for a null required operand or a launch
  // failure; never synchronises.
  virtual void run(const GroupedGemmOperands& ops, cudaStream_t stream) const = 0;

  virtual const GroupedGemmShape& shape() const = 0;
  // The configuration a run with this rows_hint uses (0: capacity_rows).
  virtual GemmConfig config(int64_t rows_hint = 0) const = 0;
  // Whether a run with this rows_hint can take act_out (shape.act enabled and the tile it
  // picks has the fused epilogue); a run with act_out where this is false throws.
  virtual bool fuses_activation(int64_t rows_hint = 0) const = 0;
  // What a run with this rows_hint launches, for MoELayer::kernels: gemm_tile_name of config()'s
  // tile, or, where the device picks between the 2x1 swap tile and its pair (kSwapOrPair),
  // "<swap tile> or <pair tile> (device pick)"; config() then describes the 2x1 swap tile.
  virtual std::string tile_name(int64_t rows_hint = 0) const {
    return gemm_tile_name(config(rows_hint).tile);
  }
};

// The k-step (64 or 128) of the ping-pong swap tile that create() builds on a device:
// SERVEKIT_GEMM_PP_TILE_K=64|128 when set, else swap_pp_tile_k_for_device of the device's name
// (gemm_tile_config.h; unset, empty or auto). Throws servekit::Error for any other value, or when
// the device's properties cannot be read.
int swap_pp_tile_k(int device);

// Per-format factories, one CUTLASS instantiation each (grouped_gemm_<format>.cu).
// create() returns, for bf16 and fp8_block128, a GroupedGemm holding the format's
// instantiations (128-row and 64-row tiles, and for bf16 the swap-AB tile and, where that is the
// cooperative one, its pair in a 1x2 cluster; gemm_tile_config.h) that picks one per run
// (choose_gemm_tile on rows_hint / G). SERVEKIT_GEMM_TILE=large, =small, =swap or =pair, read at
// create, forces one of them (for A/B measurements; a tile the format lacks falls back to the
// 128-row one, "pair" to the swap tile first); unset, empty or auto leaves the per-run pick, and
// any other value makes create() throw servekit::Error, for every format.
// SERVEKIT_DIAG_GEMM_TILE_UNFUSED (A/B only) does the same for the GEMMs without a fused
// activation (the layer's GEMM2) in place of SERVEKIT_GEMM_TILE;
// SERVEKIT_GEMM_PAIR_PICK=host|device says who picks between the 2x1 swap tile and its pair
// (GemmPairPick); the ping-pong swap tile's k-step is swap_pp_tile_k(device). The factories below
// build one instantiation each (the tests use them to cover every tile).
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_small_m(const GroupedGemmShape& shape,
                                                            int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pp(const GroupedGemmShape& shape,
                                                            int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pp_k128(const GroupedGemmShape& shape,
                                                                 int device);
// The cooperative swap-AB tile in a 1x2 cluster along the tokens (swap_pair_tile_config).
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_swap_pair(const GroupedGemmShape& shape,
                                                              int device);
// The 128x256 bf16 tile with its fused activation on W13 in 64-row blocks (create() takes it as
// the large tile when shape.act.interleave_rows == 64).
std::unique_ptr<GroupedGemm> make_grouped_gemm_bf16_w64(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_per_tensor(const GroupedGemmShape& shape,
                                                              int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128(const GroupedGemmShape& shape,
                                                            int device);
std::unique_ptr<GroupedGemm> make_grouped_gemm_fp8_block128_small_m(const GroupedGemmShape& shape,
                                                                    int device);

// int4 weights with one bf16 scale per weight_group K elements, against bf16 rows (int4_w4a16
// with group 64 or 128 on the dynamic path; grouped_gemm_w4a16.cu: CUTLASS's ptr-array
// mixed-input mainloop, which converts each code to bf16 and multiplies it by its scale in
// bf16 -- bf16(code * scale), the value quant.h's dequantization rounds to bf16 -- before the
// wgmma). Operands: shape.operand kBF16 (A and D as for bf16); B [G, N, K/2] int4x2 (two's
// complement, low nibble first, K-major, each expert's codes reordered by w4a16_reorder_codes);
// b_group_scale as above; b_group_stride -1. The kernel's A is the weights (the narrow operand must
// be; it computes D_gᵀ = B_g · A_gᵀ, written as D_g row-major). With shape.act enabled
// (w4a16_fuses_activation_on) every tile can run GEMM1's gated activation in its epilogue: a run
// with act_out (bf16 [rows, N/2]) and act_bias as for the other GEMMs writes the intermediate and
// no D; W13 must be interleaved in kW4A16Interleave-row blocks (interleave_w4a16_w13). No gate, no
// PDL on the GEMM itself (its setup kernel takes ops.pdl). create() never returns it: the layer
// asks for it. Throws servekit::Error unless w4a16_gemm_supported(n, k, weight_group), and for a
// shape.act it cannot fuse.
std::unique_ptr<GroupedGemm> make_grouped_gemm_w4a16(const GroupedGemmShape& shape, int device);

// W13's gate/up interleave for the int4 GEMM's fused activation: 8-row blocks, the rows r and
// r + 8 one thread holds in an m64 wgmma atom (sm90_act_epilogue.cuh).
inline constexpr int64_t kW4A16Interleave = 8;
// Whether make_grouped_gemm_w4a16 fuses shape.act: a gated activation into a bf16 intermediate,
// W13 in kW4A16Interleave-row blocks, N = 2I a whole number of 128-row weight tiles (I % 64 == 0).
inline bool w4a16_fuses_activation_on(const GroupedGemmShape& shape) {
  return shape.act.enabled && activation_is_gated(shape.act.activation) &&
         shape.act.format == ActFormat::kBF16 && shape.act.interleave_rows == kW4A16Interleave &&
         shape.n % 128 == 0;
}

// make_grouped_gemm_w4a16 runs one of three tiles, 128 weight rows by 64, 128 or 256 tokens
// (w4a16_gemm.cuh), by the expected rows of a routed group (routed_rows_per_group of rows_hint, or
// of capacity_rows): the 64-token tile up to kW4A16NarrowTileMaxRows, the 128-token one up to
// kW4A16MidTileMaxRows, the 256-token one above. bench/tools/w4a16_probe.cu on an H100
// (ab/2026-12-06-s45-w4a16): the 64-token tile is 16-19% faster at 16-43 rows per expert
// (qwen3-235b at 256-512 tokens, kimi-k2 to 2048), the 128-token one 17% faster at 64 rows, where
// Poisson rows spill past one 64-token tile on about half the experts, and 33-43% at 85-256. The
// 256-token tile converts each weight once per 256 tokens instead of 128 but pads more: the layer
// on an H100 (qwen3-235b, uniform, ab/2026-12-06-s46-n256), 128 / 256 tile, us: 256 rows per
// expert (4096 tokens) 2754.5 / 2952.7, the 256 tile 7% slower (about half the experts spill past
// 256 rows into a nearly empty second tile); 512 rows (8192 tokens) 5253.7 / 4919.0, 6% faster.
// The bound sits between the two (a second lease, ab/2026-12-06-s46-n144, two rounds: 8192
// tokens 5324.2, 5100.5 on the 128 tile, 4948.1, 4927.3 on the pick's 256). A 144-token tile
// (two of them hold the 256-288 rows that spill into a third 128-token tile) measured 4-43%
// slower than the 128 one at 64-512 rows on the same lease and was dropped.
// SERVEKIT_GEMM_W4A16_TILE (64, 128 or 256) forces one tile for every run; auto or unset is the
// pick. The pick never changes results.
inline constexpr int64_t kW4A16NarrowTileMaxRows = 44;
inline constexpr int64_t kW4A16MidTileMaxRows = 384;
constexpr int w4a16_tile_n(int64_t rows_per_group) {
  return rows_per_group <= kW4A16NarrowTileMaxRows ? 64
         : rows_per_group <= kW4A16MidTileMaxRows  ? 128
                                                   : 256;
}
// SERVEKIT_GEMM_W4A16_TILE's values: "auto" or empty 0 (the pick), "64", "128", "256" that tile;
// anything else nullopt (make_grouped_gemm_w4a16 throws, naming the variable).
constexpr std::optional<int> parse_w4a16_tile(std::string_view s) {
  if (s.empty() || s == "auto") return 0;
  if (s == "64") return 64;
  if (s == "128") return 128;
  if (s == "256") return 256;
  return std::nullopt;
}

// The cluster of the 128- and 256-token tiles: 1, or 2 weight tiles that share the token tile by
// TMA multicast (the token tile is 80% of a k-step's bytes: 128 x 64 bf16 against 128 x 64 int4,
// and each weight tile of an expert re-reads it from L2). Measured on an H100 (qwen3-235b int4,
// uniform, ab/2026-12-06-s46-cluster, us, two rounds, cluster 1 / 2): 1024 tokens 1102.5, 1101.1
// / 1018.1, 1012.1; 2048 1630.5, 1633.6 / 1518.2, 1555.1; 4096 2828.7, 2726.5 / 2602.1, 2682.9;
// 8192 4925.5, 4849.0 / 4654.3, 4642.4 (5-8% faster); kimi-k2 4096 8094.0 / 7872.0. So 2.
// SERVEKIT_GEMM_W4A16_CLUSTER=1|2 overrides; results are identical either way.
inline constexpr int kW4A16ClusterDefault = 2;
constexpr std::optional<int> parse_w4a16_cluster(std::string_view s) {
  if (s.empty()) return kW4A16ClusterDefault;
  if (s == "1") return 1;
  if (s == "2") return 2;
  return std::nullopt;
}

// Reorders one expert's [n, k] int4 codes (quant.h's packing, n * k / 2 bytes at `codes`, device
// memory) in place into the order make_grouped_gemm_w4a16's kernels load them (each thread's codes
// of a k-step adjacent); the layer does it once per matrix at load. Synchronises the device.
// Throws servekit::Error for bad sizes.
void w4a16_reorder_codes(void* codes, int64_t n, int64_t k);

// Whether make_grouped_gemm_w4a16 takes a weight of N x K with `group` K elements per scale:
// group 64 or 128 (the kernel's k-step is 64, and a scale group must be whole k-steps), K a
// multiple of group, N a multiple of 16 (the reordered codes come in 16-row atoms,
// w4a16_reorder_codes; 16-byte rows of D and of the scales), N and K positive and N * K below
// 2^31 (the reordered layout's offsets are int). `why` (if given) says what fails.
inline bool w4a16_gemm_supported(int64_t n, int64_t k, int group, std::string* why = nullptr) {
  std::string reason;
  if (group != 64 && group != 128)
    reason = "weight group " + std::to_string(group) + " is not 64 or 128";
  else if (n <= 0 || k <= 0 || n >= (int64_t{1} << 31) || k >= (int64_t{1} << 31) ||
           n * k >= (int64_t{1} << 31))
    reason = "n=" + std::to_string(n) + " k=" + std::to_string(k) +
             " must be positive with n * k below 2^31";
  else if (k % group != 0)
    reason = "k=" + std::to_string(k) + " is not a multiple of the weight group " +
             std::to_string(group);
  else if (n % 16 != 0)
    reason = "n=" + std::to_string(n) + " is not a multiple of 16";
  if (why != nullptr) *why = reason;
  return reason.empty();
}

}  // namespace servekit::cuda
