// GEMM1's activation in the epilogue of the 128x256 cooperative tile and of bf16's 256x144
// swap-AB tile: the w13 bias, the gated activation (moe.h) and the quantization of the
// intermediate into GEMM2's input, written from the accumulators instead of a bf16 [rows, 2I]
// tensor that a separate pass reads back. Internal header of sm90_grouped_gemm.cuh.
//
// Layout it relies on: W13 interleaved in 128-row blocks (expert_layout.h,
// interleaved_w13_row), so 256 consecutive weight rows hold gate columns [128n, 128n + 128) of
// the intermediate in their first half and the matching up columns in their second.
// - 128x256 tile (weights along N): each warp group owns 64x256 of the tile as the m64n256
//   atom's (2 columns, 2 rows, 32 column groups of 8) values per thread, so a thread holds gate
//   column c at flat value v and up column c at v + 64: the pairing is local. Output tile n is
//   one 128-column scale block of the intermediate, and a row's 128 values sit in the four lanes
//   of a quad, so the 1x128 amax is two shuffles.
// - With the 64-row interleave (when GEMM1 uses the ping-pong swap-AB tile, below), gate column c
//   of the 128x256 tile pairs with up column c + 64 instead (flat v + 32), gate columns [0, 64)
//   and [128, 192) (a second bf16 instantiation of the tile, make_grouped_gemm_bf16_w64).
// - 256x144 swap-AB tile (weights along M, tokens along N; bf16 intermediate only): the tiled
//   MMA of the two warp groups covers 128 rows and repeats once along M, so warp group w holds
//   weight rows [64w, 64w + 64) at flat values v < 72 and rows [128 + 64w, 192 + 64w) at v + 72
//   (CuTe's partition_C, checked on the host when this was written): gate row r and up row r
//   are again one thread's, 72 values apart. A thread's two values of one row are two tokens,
//   and the lane four apart holds the next row (the next intermediate column) for the same
//   tokens; one shuffle makes each a bf16 pair of one token. The 1x128 amax of the e4m3 formats
//   would span both warp groups, so those keep the separate pass on this tile (the runner's
//   fuses_activation). The ping-pong 128x144 swap tile (swap_pp_tile_config) has one warp group
//   a tile, rows r at v < 72 and r + 64 at v + 72: it needs W13 interleaved in 64-row blocks, and
//   then fuses the same way.
// - The int4 GEMM's tiles (w4a16_gemm.cuh: 128 weight rows x 64, 128 or 256 tokens, weights along
//   M; bf16 intermediate only): each warp group holds 64 weight rows as one m64 atom, so no thread
//   holds rows 64 or 128 apart. Within the atom a thread holds rows r and r + 8 (r % 16 < 8) at
//   flat values v and v + 2 (v % 4 < 2). With W13 interleaved in 8-row blocks (kInterleave 8)
//   those are the gate and up rows of one intermediate column: the pairing is local again, and a
//   tile's 128 weight rows are 64 intermediate columns.
//
// Bits: the same as GEMM1 storing bf16 followed by the activation pass (activation_rows.cuh):
// each accumulator is rounded to bf16 first, the bias added in fp32, the activation and the
// quantization are the pass's functions (activate, fp8_scale_of, max_nan, to_e4m3 of x times
// the reciprocal scale). The GPU tests compare the two paths bit for bit.
//
// Per run the fusion is on when the runner's setup kernel wrote a non-null ptr_out for the
// tile's group (all groups of a run alike); the intermediate's stores go straight from registers
// to global memory (4-byte bf16 pairs or 2-byte e4m3 pairs), rows past the group's end and the
// cluster's tile past N not written. Staging each warp's 16 rows in D's free shared memory
// and writing whole 128-byte lines instead was measured level to 1.3% slower (session 26,
// docs/perf-notes.md): L2 takes the partial-sector writes well, and the staging round trip
// lies on the epilogue's critical path. A fused tile writes no D (GEMM1's bf16 output): its
// only duty left from CUTLASS's store() is releasing the epilogue load stages (store() below).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>

#include "cuda/kernels/activation_math.cuh"
#include "cuda/kernels/quant/row_quant.cuh"
#include "cuda/moe_quant.h"
#include "servekit/moe.h"

namespace servekit::cuda::gemm {

// The epilogue's part of the kernel parameters. The pointer arrays are the runner's, [G] each,
// rewritten per run by its setup kernel.
struct ActEpilogueParams {
  ActFormat format = ActFormat::kBF16;          // kBF16, kFP8Block128 or kFP8Block128AsBF16
  Activation activation = Activation::kSwiGLU;  // gated
  int cols = 0;                       // I = N / 2, a multiple of 128 (64 on the int4 GEMM's tiles)
  void* const* ptr_out = nullptr;     // group's first intermediate row, or null: unfused
  float* const* ptr_scale = nullptr;  // kFP8Block128: group's block of 1x128 scales
  const float* const* ptr_bias = nullptr;  // group's w13 bias [2I] (logical order), or null
};

// kSwapAB: Base is the epilogue of a swap-AB tile (see the top of the file). kInterleave: the rows
// of W13's gate/up blocks the store is compiled for (a bf16 swap tile's is half its weight rows,
// the int4 GEMM's 8). One store per kernel: compiling the 128x256 tile's for both interleaves
// behind a run-time switch made ptxas spill ~300 bytes (session 34), so bf16 has a 128x256
// instantiation per interleave.
template <class Base, bool kSwapAB = false, int kInterleave = 128>
struct ActEpilogue : Base {
  static_assert(kInterleave == 64 || kInterleave == 128 || (kSwapAB && kInterleave == 8),
                "W13 interleaves 64 or 128 rows, or 8 on the int4 GEMM's swap-AB tiles");
  using LoadPipeline = typename Base::LoadPipeline;
  using LoadPipelineState = typename Base::LoadPipelineState;
  using StorePipeline = typename Base::StorePipeline;
  using StorePipelineState = typename Base::StorePipelineState;
  using TensorStorage = typename Base::TensorStorage;

  // The int4 GEMM's tiles pair gate and up rows within one m64 atom (the top of the file).
  static constexpr bool kAtomPairs = kInterleave == 8;

  struct Arguments : Base::Arguments {
    ActEpilogueParams act{};
  };
  struct Params : Base::Params {
    ActEpilogueParams act{};
  };

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_shape, Arguments const& args,
                                        void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) =
        Base::to_underlying_arguments(problem_shape, args, workspace);
    p.act = args.act;
    return p;
  }

  CUTLASS_HOST_DEVICE
  ActEpilogue(Params const& params, TensorStorage& shared)
      : Base(params, shared), act_(params.act) {}

  // Epilogue subtiles per tile: the load stages the producer warp commits per tile.
  static constexpr int kSubtiles = static_cast<int>(cute::size<0>(typename Base::CtaTileMNK{}) /
                                                    cute::size<0>(typename Base::EpilogueTile{})) *
                                   static_cast<int>(cute::size<1>(typename Base::CtaTileMNK{}) /
                                                    cute::size<1>(typename Base::EpilogueTile{}));
  static_assert(!Base::DispatchPolicy::ReuseSmemC,
                "the fused tile's stage release follows store() without smem reuse");

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma, class TensorMapD>
  CUTLASS_DEVICE auto store(LoadPipeline load_pipeline, LoadPipelineState load_state,
                            StorePipeline store_pipeline, StorePipelineState store_state,
                            ProblemShapeMNKL problem_shape_mnkl, TileShapeMNK tile_shape_mnk,
                            TileCoordMNKL tile_coord_mnkl,
                            cute::Tensor<AccEngine, AccLayout> accumulators, TiledMma tiled_mma,
                            int thread_idx, TensorStorage& shared_tensors,
                            TensorMapD const& store_tensormap, int subtile_idx = -1) {
    const int group = static_cast<int>(cute::get<3>(tile_coord_mnkl));
    void* out = act_.ptr_out == nullptr ? nullptr : act_.ptr_out[group];
    if (out == nullptr) {
      return Base::store(load_pipeline, load_state, store_pipeline, store_state, problem_shape_mnkl,
                         tile_shape_mnk, tile_coord_mnkl, accumulators, tiled_mma, thread_idx,
                         shared_tensors, store_tensormap, subtile_idx);
    }
    // The fused tile stores no D. CUTLASS's store() also does the consumer half of the epilogue
    // load pipeline: with per-group alpha/beta pointer arrays (the ptr-array LinearCombination)
    // the fusion reports a producer load, so the epilogue's producer warp acquires and commits
    // one load stage per epilogue subtile of every tile, C or no C, and waits for the math
    // warps to release them. (Since session 26 the formats that fuse take a fusion without
    // loads, sm90_grouped_gemm.cuh, and the release below compiles to nothing; it stays for any
    // fusion that loads.) A tile that skipped store() never released its stages: the
    // producer warp waited forever and the kernel hung (session 24; found in session 25 with
    // cuda-gdb: every warp of the stuck CTAs had exited but the epilogue producer, waiting on
    // an empty barrier). So the fused tile releases its subtiles' stages itself, half before
    // its store (the producer filled those during the mainloop) and half after (by then the
    // producer has refilled them).
    constexpr int kHalf = kSubtiles / 2;
    load_state = release_load_stages<kHalf>(load_pipeline, load_state);
    fused_store(out, group, problem_shape_mnkl, tile_shape_mnk, tile_coord_mnkl, accumulators,
                tiled_mma, thread_idx);
    load_state = release_load_stages<kSubtiles - kHalf>(load_pipeline, load_state);
    return cute::make_tuple(load_state, store_state);
  }

 private:
  // store()'s consumer side of the epilogue load pipeline for N subtiles, without the data
  // (there is no C): wait for the producer's commit, release the stage.
  template <int N>
  CUTLASS_DEVICE LoadPipelineState release_load_stages(LoadPipeline& pipeline,
                                                       LoadPipelineState state) const {
    if (!Base::is_producer_load_needed()) return state;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) {
      pipeline.consumer_wait(state);
      pipeline.consumer_release(state);
      ++state;
    }
    return state;
  }

  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma>
  CUTLASS_DEVICE void fused_store(void* out, int group, ProblemShapeMNKL problem_shape_mnkl,
                                  TileShapeMNK tile_shape_mnk, TileCoordMNKL tile_coord_mnkl,
                                  cute::Tensor<AccEngine, AccLayout> const& acc, TiledMma tiled_mma,
                                  int thread_idx) const {
    using namespace cute;
    if constexpr (kSwapAB) {
      fused_store_swap(out, problem_shape_mnkl, tile_shape_mnk, tile_coord_mnkl, acc, tiled_mma,
                       thread_idx);
    } else {
      fused_store_large(out, group, problem_shape_mnkl, tile_shape_mnk, tile_coord_mnkl, acc,
                        tiled_mma, thread_idx);
    }
  }

  // The 128x256 tile: tile coordinate n is the 128-column block n of the intermediate.
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma>
  CUTLASS_DEVICE void fused_store_large(void* out, int group, ProblemShapeMNKL problem_shape_mnkl,
                                        TileShapeMNK tile_shape_mnk, TileCoordMNKL tile_coord_mnkl,
                                        cute::Tensor<AccEngine, AccLayout> const& acc,
                                        TiledMma tiled_mma, int thread_idx) const {
    using namespace cute;
    static_assert(size<0>(TileShapeMNK{}) == 128 && size<1>(TileShapeMNK{}) == 256,
                  "the fused activation is written for the 128x256 tile");
    // (2 columns, 2 rows, 32 column groups of 8) per thread, one MMA along M and N.
    static_assert(
        size(AccLayout{}) == 128 && size<1>(AccLayout{}) == 1 && size<2>(AccLayout{}) == 1,
        "one m64n256 accumulator fragment per thread");
    const int block = static_cast<int>(get<1>(tile_coord_mnkl));  // 128-column block of I
    // A 1x2 cluster rounds the tiles along N up to even: the second CTA's tile past N (N / 256
    // odd) holds no output column.
    if (block * 128 >= act_.cols) return;
    Tile t;
    t.out = out;
    t.group = group;
    t.rows = static_cast<int>(get<0>(problem_shape_mnkl));
    t.row0 = static_cast<int>(get<0>(tile_coord_mnkl)) * 128;
    t.block = block;
    t.bias = act_.ptr_bias == nullptr ? nullptr : act_.ptr_bias[group];
    auto thr_mma = tiled_mma.get_thread_slice(thread_idx);
    auto coord = thr_mma.partition_C(make_identity_tensor(take<0, 2>(tile_shape_mnk)));
    with_activation(t.bias != nullptr, [&](auto kind, auto has_bias) {
      store_tile<decltype(kind)::value, decltype(has_bias)::value, kInterleave>(t, acc, coord);
    });
  }

  // The swap-AB tiles (bf16 intermediate): tile coordinate m is kRows weight rows, i.e. the
  // kRows / 2-column block m of the intermediate (256 rows with bf16's cooperative tile, 128 with
  // its ping-pong one and the int4 GEMM's); n is a tile of the group's tokens.
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma>
  CUTLASS_DEVICE void fused_store_swap(void* out, ProblemShapeMNKL problem_shape_mnkl,
                                       TileShapeMNK tile_shape_mnk, TileCoordMNKL tile_coord_mnkl,
                                       cute::Tensor<AccEngine, AccLayout> const& acc,
                                       TiledMma tiled_mma, int thread_idx) const {
    using namespace cute;
    constexpr int kRows = static_cast<int>(size<0>(TileShapeMNK{}));
    if constexpr (kAtomPairs) {
      // The int4 GEMM's tile: one m64 atom per warp group, gate row r at flat v, up at v + 2.
      static_assert(kRows == 128, "the int4 GEMM's tile has 128 weight rows");
      static_assert(
          size<1>(AccLayout{}) == 1 && size<2>(AccLayout{}) == 1 && size<0>(AccLayout{}) % 4 == 0,
          "one m64nN accumulator fragment per thread");
    } else {
      // The gate rows of a tile are its first kRows / 2 (the interleave's block): 256 rows with
      // the 128-row interleave (two warp groups, rows r and r + 128 per thread), 128 with the
      // 64-row one (one warp group, rows r and r + 64).
      static_assert(kRows == 2 * kInterleave,
                    "a swap-AB tile holds one gate block and its up block");
      // Two m64 atoms along M per thread (rows r and r + kRows / 2), one along N.
      static_assert(
          size<1>(AccLayout{}) == 2 && size<2>(AccLayout{}) == 1 && size<0>(AccLayout{}) % 4 == 0,
          "two m64nN accumulator fragments along M per thread");
    }
    // Flat values a thread holds gate rows in (all of them, or the first atom's), and how far
    // each gate value's up value lies.
    constexpr int kValues = static_cast<int>(kAtomPairs ? size(AccLayout{}) : size<0>(AccLayout{}));
    constexpr int kUp = kAtomPairs ? 2 : kValues;
    // The tile's first intermediate column. A 2x1 cluster rounds the weight tiles up to even: the
    // second CTA's tile past N (an odd number of weight tiles) holds no output column.
    const int col0 = static_cast<int>(get<0>(tile_coord_mnkl)) * (kRows / 2);
    if (col0 >= act_.cols) return;
    const int tokens = static_cast<int>(get<1>(problem_shape_mnkl));
    const int tok0 =
        static_cast<int>(get<1>(tile_coord_mnkl)) * static_cast<int>(size<1>(TileShapeMNK{}));
    const int group = static_cast<int>(get<3>(tile_coord_mnkl));
    const float* bias = act_.ptr_bias == nullptr ? nullptr : act_.ptr_bias[group];
    auto thr_mma = tiled_mma.get_thread_slice(thread_idx);
    auto coord = thr_mma.partition_C(make_identity_tensor(take<0, 2>(tile_shape_mnk)));
    with_activation(bias != nullptr, [&](auto kind, auto has_bias) {
      store_swap<decltype(kind)::value, decltype(has_bias)::value, kValues, kUp>(
          out, col0, tokens, tok0, bias, acc, coord);
    });
  }

  // f(kind, has_bias) with the tile's activation and whether it has a bias as compile-time
  // constants (std::integral_constant<Activation, A>, std::bool_constant): both stores pick them
  // once per tile, not per value.
  template <class F>
  CUTLASS_DEVICE void with_activation(bool has_bias, F&& f) const {
    auto with_bias = [&](auto kind) {
      if (has_bias) {
        f(kind, std::true_type{});
      } else {
        f(kind, std::false_type{});
      }
    };
    switch (act_.activation) {
      case Activation::kSwiGLU:
        return with_bias(std::integral_constant<Activation, Activation::kSwiGLU>{});
      case Activation::kGeGLU:
        return with_bias(std::integral_constant<Activation, Activation::kGeGLU>{});
      default:  // kSwiGLUOAI (the runner accepts gated activations only)
        return with_bias(std::integral_constant<Activation, Activation::kSwiGLUOAI>{});
    }
  }

  // act(bf16(gate) + bias, bf16(up) + bias) of one value: the activation pass's arithmetic
  // (activation_rows.cuh), so that the fused tile and the pass agree bit for bit. Without a bias
  // nothing is added (+ 0.0f would turn a -0 into +0).
  template <Activation A, bool kBias>
  static CUTLASS_DEVICE float act_pair_value(float gate, float up, float gate_bias, float up_bias) {
    float g = __bfloat162float(__float2bfloat16_rn(gate));
    float u = __bfloat162float(__float2bfloat16_rn(up));
    if constexpr (kBias) {
      g += gate_bias;
      u += up_bias;
    }
    return activate<A>(g, u);
  }

  // The fused tiles' stores: st.global.cg (L2 only: GEMM2 reads the intermediate from L2 or
  // DRAM, never from this SM's L1), predicated on `keep` instead of a branch around each store.
  // No "memory" clobber: nothing in the epilogue reads what these write, and a clobber would
  // make the compiler reload the bias after every store.
  static CUTLASS_DEVICE void store_b32_if(void* p, uint32_t v, bool keep) {
    asm volatile(
        "{\n .reg .pred k;\n setp.ne.b32 k, %2, 0;\n @k st.global.cg.b32 [%0], %1;\n}\n" ::"l"(p),
        "r"(v), "r"(static_cast<int>(keep)));
  }
  static CUTLASS_DEVICE void store_b16_if(void* p, uint16_t v, bool keep) {
    asm volatile(
        "{\n .reg .pred k;\n setp.ne.b32 k, %2, 0;\n @k st.global.cg.b16 [%0], %1;\n}\n" ::"l"(p),
        "h"(v), "r"(static_cast<int>(keep)));
  }
  static CUTLASS_DEVICE uint32_t bf16_pair_bits(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }

  // The swap-AB tiles. In the m64nN atom a thread's flat value 4j + 2q + b is weight row r0 + 8q
  // and token column t0 + 8j + b (r0, t0: its values' first row and column, coord(0); the test
  // ActEpilogueLayout checks this on the host for every fusing kernel's TiledMma). So a
  // thread's gate values are rows r0 (q = 0) and, unless the tile pairs rows within the atom
  // (kAtomPairs: q = 1 is the up row), r0 + 8: one or two intermediate columns per thread per
  // tile, whose biases are read once. Flat values v, v + 1 (v = 4j + 2q) are tokens t, t + 1 of
  // one column, whose up values are kUp further; the lane four apart (threadIdx bit 2) holds
  // row r ^ 1 (the next column) of the same tokens. The lane with r even keeps token t and
  // receives its partner's (t, r + 1); the other keeps token t + 1 and receives (t + 1, r - 1):
  // each stores one bf16 pair of one token, 8 tokens further per j.
  template <Activation A, bool kBias, int kValues, int kUp, class AccTensor, class CoordTensor>
  CUTLASS_DEVICE void store_swap(void* out, int col0, int tokens, int tok0, const float* bias,
                                 AccTensor const& acc, CoordTensor const& coord) const {
    constexpr int kRowsPerThread = kAtomPairs ? 1 : 2;
    const int cols = act_.cols;
    const int odd = (threadIdx.x >> 2) & 1;
    // The token this lane stores at j = 0.
    const int token0 = tok0 + static_cast<int>(cute::get<1>(coord(0))) + odd;
    const int64_t token_step = int64_t{8} * cols;  // elements from j to j + 1
    __nv_bfloat16* base[kRowsPerThread];
    float gate_bias[kRowsPerThread], up_bias[kRowsPerThread];
    CUTLASS_PRAGMA_UNROLL
    for (int q = 0; q < kRowsPerThread; ++q) {
      const int c = col0 + inter_column<kInterleave>(static_cast<int>(cute::get<0>(coord(2 * q))));
      base[q] = static_cast<__nv_bfloat16*>(out) + int64_t{token0} * cols + (c - odd);
      gate_bias[q] = kBias ? __ldg(bias + c) : 0.0f;
      up_bias[q] = kBias ? __ldg(bias + cols + c) : 0.0f;
    }
    CUTLASS_PRAGMA_UNROLL
    for (int j = 0; j < kValues / 4; ++j) {
      const bool keep = token0 + 8 * j < tokens;
      CUTLASS_PRAGMA_UNROLL
      for (int q = 0; q < kRowsPerThread; ++q) {
        const int v = 4 * j + 2 * q;
        const float a = act_pair_value<A, kBias>(acc(v), acc(v + kUp), gate_bias[q], up_bias[q]);
        const float b =
            act_pair_value<A, kBias>(acc(v + 1), acc(v + 1 + kUp), gate_bias[q], up_bias[q]);
        const float recv = __shfl_xor_sync(0xffffffffu, odd ? a : b, 4);
        store_b32_if(base[q] + j * token_step,
                     odd ? bf16_pair_bits(recv, b) : bf16_pair_bits(a, recv), keep);
      }
    }
  }

  struct Tile {
    void* out = nullptr;
    int group = 0, rows = 0, row0 = 0, block = 0;
    const float* bias = nullptr;
  };

  // The 128x256 tile's gate values with W13 in W-row blocks: the k-th (k < 64) is flat value
  // gate_value<W>(k), its up value W / 2 further. The m64n256 atom puts column 8j + 2q + b at flat
  // 4j + 2q' + b (q' the row bit): with the 128-row interleave the gate columns are [0, 128) = flat
  // [0, 64) and up is 128 columns (64 values) on; with the 64-row one the gate columns are [0, 64)
  // and [128, 192) = flat [0, 32) and [64, 96), up 64 columns (32 values) on.
  template <int W>
  static constexpr CUTLASS_HOST_DEVICE int gate_value(int k) {
    return W == 128 ? k : (k & 31) | ((k >> 5) << 6);
  }
  // Column of the 128-column block of the intermediate that tile column c (a gate column) holds.
  template <int W>
  static constexpr CUTLASS_HOST_DEVICE int inter_column(int c) {
    return c / (2 * W) * W + c % (2 * W);
  }

  // Gate value k = 4j + 2q + b (flat gate_value<W>(k)) is row r0 + 8q, intermediate column
  // c0 + 8j + b of the 128-column block, for both interleaves (r0, c0: coord(0)'s row and
  // column; c0 < 8, where inter_column<W> is the identity, and it is linear over a gate block;
  // the atom's part of this is the test ActEpilogueLayout's).
  // So a thread's values are two rows of 32 column pairs: one pointer per row, a compile-time
  // offset per pair, the four biases of a column pair read once for both rows. bf16 computes and
  // stores a pair per step; the e4m3 formats keep the 64 activated values for the 1x128 amax
  // (the gate and up accumulators each value consumes are dead after it, so the peak stays near
  // the 128 accumulators).
  template <Activation A, bool kBias, int W, class AccTensor, class CoordTensor>
  CUTLASS_DEVICE void store_tile(Tile const& t, AccTensor const& acc,
                                 CoordTensor const& coord) const {
    constexpr int kPairs = 16;  // column pairs per row: 64 gate values = 2 rows x 16 x 2
    const int cols = act_.cols;
    const int r0 = t.row0 + static_cast<int>(cute::get<0>(coord(0)));
    const int c0 = t.block * 128 + static_cast<int>(cute::get<1>(coord(0)));
    // Rows past the group's end are neither stored nor part of the amax (their accumulators are
    // the mainloop's zero-filled rows, but the pass never sees them either).
    const bool keep[2] = {r0 < t.rows, r0 + 8 < t.rows};
    // f(j, q, y0, y1): the activated values of column pair j (columns c0 + 8j, + 1) of row q.
    auto each_pair = [&](auto&& f) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < kPairs; ++j) {
        float gb[2] = {0.0f, 0.0f}, ub[2] = {0.0f, 0.0f};
        if constexpr (kBias) {
          CUTLASS_PRAGMA_UNROLL
          for (int b = 0; b < 2; ++b) {
            gb[b] = __ldg(t.bias + c0 + 8 * j + b);
            ub[b] = __ldg(t.bias + cols + c0 + 8 * j + b);
          }
        }
        CUTLASS_PRAGMA_UNROLL
        for (int q = 0; q < 2; ++q) {
          const int v = gate_value<W>(4 * j + 2 * q);
          f(j, q, act_pair_value<A, kBias>(acc(v), acc(v + W / 2), gb[0], ub[0]),
            act_pair_value<A, kBias>(acc(v + 1), acc(v + 1 + W / 2), gb[1], ub[1]));
        }
      }
    };
    // The first element of rows r0 and r0 + 8 in the intermediate, for elements of type T.
    auto row_bases = [&](auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      return cute::array<T*, 2>{out + int64_t{r0} * cols + c0, out + int64_t{r0 + 8} * cols + c0};
    };
    if (act_.format == ActFormat::kBF16) {
      const auto base = row_bases(static_cast<__nv_bfloat16*>(t.out));
      each_pair([&](int j, int q, float y0, float y1) {
        store_b32_if(base[q] + 8 * j, bf16_pair_bits(y0, y1), keep[q]);
      });
      return;
    }

    // 1x128 blocks: the thread's two rows, amax over the quad that shares them.
    float y[2][2 * kPairs];
    float amax[2] = {0.0f, 0.0f};
    each_pair([&](int j, int q, float y0, float y1) {
      y[q][2 * j] = y0;
      y[q][2 * j + 1] = y1;
      amax[q] = quant::max_nan(amax[q], quant::max_nan(fabsf(y0), fabsf(y1)));
    });
    float scale[2], inv[2];
    CUTLASS_PRAGMA_UNROLL
    for (int q = 0; q < 2; ++q) {
      if (!keep[q]) amax[q] = 0.0f;
      amax[q] = quant::max_nan(amax[q], __shfl_xor_sync(0xffffffffu, amax[q], 1));
      amax[q] = quant::max_nan(amax[q], __shfl_xor_sync(0xffffffffu, amax[q], 2));
      scale[q] = quant::fp8_scale_of(amax[q]);
      inv[q] = 1.0f / scale[q];
    }
    if (act_.format == ActFormat::kFP8Block128) {
      const auto base = row_bases(static_cast<uint8_t*>(t.out));
      CUTLASS_PRAGMA_UNROLL
      for (int q = 0; q < 2; ++q) {
        CUTLASS_PRAGMA_UNROLL
        for (int j = 0; j < kPairs; ++j) {
          const uint16_t lo = quant::to_e4m3(y[q][2 * j] * inv[q]);
          const uint16_t hi = quant::to_e4m3(y[q][2 * j + 1] * inv[q]);
          store_b16_if(base[q] + 8 * j, static_cast<uint16_t>(lo | (hi << 8)), keep[q]);
        }
      }
      if ((threadIdx.x & 3) == 0) {  // a_block_scale_index within the group's block
        float* s = act_.ptr_scale[t.group] + int64_t{t.block} * t.rows;
        CUTLASS_PRAGMA_UNROLL
        for (int q = 0; q < 2; ++q) {
          if (keep[q]) s[r0 + 8 * q] = scale[q];
        }
      }
      return;
    }
    // kFP8Block128AsBF16: the e4m3 round trip, dequantized value rounded to bf16.
    const auto base = row_bases(static_cast<__nv_bfloat16*>(t.out));
    CUTLASS_PRAGMA_UNROLL
    for (int q = 0; q < 2; ++q) {
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < kPairs; ++j) {
        const float a = quant::from_e4m3(quant::to_e4m3(y[q][2 * j] * inv[q])) * scale[q];
        const float b = quant::from_e4m3(quant::to_e4m3(y[q][2 * j + 1] * inv[q])) * scale[q];
        store_b32_if(base[q] + 8 * j, bf16_pair_bits(a, b), keep[q]);
      }
    }
  }

  ActEpilogueParams act_;
};

}  // namespace servekit::cuda::gemm
