// GEMM1's activation in the epilogue of the 128x256 cooperative tile: the w13 bias, the gated
// activation (moe.h) and the quantization of the intermediate into GEMM2's input, written from
// the accumulators instead of a bf16 [rows, 2I] tensor that a separate pass reads back. Internal
// header of sm90_grouped_gemm.cuh.
//
// Layout it relies on: W13 interleaved in 128-row blocks (expert_layout.h,
// interleaved_w13_row), so output tile n (256 columns) holds gate columns [128n, 128n + 128) in
// its first half and the matching up columns in its second. Each warp group owns 64x256 of the
// tile as the m64n256 atom's (2 columns, 2 rows, 32 column groups of 8) values per thread, so a
// thread holds gate column c at flat value v and up column c at v + 64: the pairing is local.
// Output tile n is one 128-column scale block of the intermediate, and a row's 128 values sit
// in the four lanes of a quad, so the 1x128 amax is two shuffles.
//
// Bits: the same as GEMM1 storing bf16 followed by the activation pass (activation_rows.cuh):
// each accumulator is rounded to bf16 first, the bias added in fp32, the activation and the
// quantization are the pass's functions (activate, fp8_scale_of, max_nan, to_e4m3 of x times
// the reciprocal scale). The GPU test compares the two paths bit for bit.
//
// Per run the fusion is on when the runner's setup kernel wrote a non-null ptr_out for the
// tile's group (all groups of a run alike); otherwise the tile goes through CUTLASS's TMA
// epilogue into D unchanged. Stores go straight from registers to global memory (4-byte bf16
// pairs or 2-byte e4m3 pairs); rows past the group's end are not written.
#pragma once

#include <cuda_bf16.h>

#include <cutlass/arch/barrier.h>
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
  int cols = 0;                                 // I = N / 2, a multiple of 128
  void* const* ptr_out = nullptr;               // group's first intermediate row, or null: unfused
  float* const* ptr_scale = nullptr;            // kFP8Block128: group's block of 1x128 scales
  const float* const* ptr_bias = nullptr;       // group's w13 bias [2I] (logical order), or null
  int diag = 0;  // SERVEKIT_DIAG_FUSED_EPI (debugging): 1 no stores, 2 return at once, 4 D too
};

template <class Base>
struct ActEpilogue : Base {
  using LoadPipeline = typename Base::LoadPipeline;
  using LoadPipelineState = typename Base::LoadPipelineState;
  using StorePipeline = typename Base::StorePipeline;
  using StorePipelineState = typename Base::StorePipelineState;
  using TensorStorage = typename Base::TensorStorage;

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
    fused_store(out, group, problem_shape_mnkl, tile_shape_mnk, tile_coord_mnkl, accumulators,
                tiled_mma, thread_idx);
    if (act_.diag == 4 || act_.diag == 5) {  // debugging: D as well (the run must pass d); 5:
      // CUTLASS's store with every subtile skipped
      return Base::store(load_pipeline, load_state, store_pipeline, store_state, problem_shape_mnkl,
                         tile_shape_mnk, tile_coord_mnkl, accumulators, tiled_mma, thread_idx,
                         shared_tensors, store_tensormap, act_.diag == 5 ? 1 << 30 : subtile_idx);
    }
    if (act_.diag == 6) {  // debugging: the two warp groups meet as in CUTLASS's store
      cutlass::arch::NamedBarrier::sync(cute::size(TiledMma{}),
                                        cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);
    }
    return cute::make_tuple(load_state, store_state);
  }

 private:
  template <class ProblemShapeMNKL, class TileShapeMNK, class TileCoordMNKL, class AccEngine,
            class AccLayout, class TiledMma>
  CUTLASS_DEVICE void fused_store(void* out, int group, ProblemShapeMNKL problem_shape_mnkl,
                                  TileShapeMNK tile_shape_mnk, TileCoordMNKL tile_coord_mnkl,
                                  cute::Tensor<AccEngine, AccLayout> const& acc, TiledMma tiled_mma,
                                  int thread_idx) const {
    using namespace cute;
    static_assert(size<0>(TileShapeMNK{}) == 128 && size<1>(TileShapeMNK{}) == 256,
                  "the fused activation is written for the 128x256 tile");
    // (2 columns, 2 rows, 32 column groups of 8) per thread, one MMA along M and N.
    static_assert(
        size(AccLayout{}) == 128 && size<1>(AccLayout{}) == 1 && size<2>(AccLayout{}) == 1,
        "one m64n256 accumulator fragment per thread");
    constexpr int kHalf = 64;  // flat values of the gate half

    const int rows = static_cast<int>(get<0>(problem_shape_mnkl));
    const int row0 = static_cast<int>(get<0>(tile_coord_mnkl)) * 128;
    const int block = static_cast<int>(get<1>(tile_coord_mnkl));  // 128-column block of I
    const int cols = act_.cols;
    const int col0 = block * 128;
    // A 1x2 cluster rounds the tiles along N up to even: the second CTA's tile past N (N / 256
    // odd) holds no output column.
    if (col0 >= cols || act_.diag == 2) return;
    const float* bias = act_.ptr_bias == nullptr ? nullptr : act_.ptr_bias[group];

    auto thr_mma = tiled_mma.get_thread_slice(thread_idx);
    Tensor coord = thr_mma.partition_C(make_identity_tensor(take<0, 2>(tile_shape_mnk)));

    // y[v] for the gate half's flat values v: row of v is coord(v)'s, column coord(v) in [0, 128).
    // The activation is picked once per tile, not per value.
    float y[kHalf];
    switch (act_.activation) {
      case Activation::kSwiGLU:
        activate_half<Activation::kSwiGLU>(y, acc, coord, bias, col0, cols);
        break;
      case Activation::kGeGLU:
        activate_half<Activation::kGeGLU>(y, acc, coord, bias, col0, cols);
        break;
      default:  // kSwiGLUOAI (the runner accepts gated activations only)
        activate_half<Activation::kSwiGLUOAI>(y, acc, coord, bias, col0, cols);
        break;
    }

    if (act_.diag == 1) {  // keep y live without storing it
      float sum = 0.0f;
      for (int v = 0; v < kHalf; ++v) sum += y[v];
      if (sum == 12345.678f) *static_cast<float*>(out) = sum;
      return;
    }
    if (act_.format == ActFormat::kBF16) {
      auto* o = static_cast<__nv_bfloat16*>(out);
      CUTLASS_PRAGMA_UNROLL
      for (int v = 0; v < kHalf; v += 2) {  // values v, v + 1: columns c, c + 1 of one row
        const int r = static_cast<int>(get<0>(coord(v)));
        const int c = static_cast<int>(get<1>(coord(v)));
        if (row0 + r < rows) {
          *reinterpret_cast<__nv_bfloat162*>(o + int64_t{row0 + r} * cols + col0 + c) =
              __floats2bfloat162_rn(y[v], y[v + 1]);
        }
      }
      return;
    }

    // 1x128 blocks: the thread's two rows (flat bit 1), amax over the quad that shares them.
    float amax[2] = {0.0f, 0.0f};
    CUTLASS_PRAGMA_UNROLL
    for (int v = 0; v < kHalf; ++v) {
      const int r = static_cast<int>(get<0>(coord(v)));
      if (row0 + r < rows) amax[(v >> 1) & 1] = quant::max_nan(amax[(v >> 1) & 1], fabsf(y[v]));
    }
    float scale[2], inv[2];
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < 2; ++i) {
      amax[i] = quant::max_nan(amax[i], __shfl_xor_sync(0xffffffffu, amax[i], 1));
      amax[i] = quant::max_nan(amax[i], __shfl_xor_sync(0xffffffffu, amax[i], 2));
      scale[i] = quant::fp8_scale_of(amax[i]);
      inv[i] = 1.0f / scale[i];
    }
    if (act_.format == ActFormat::kFP8Block128) {
      auto* o = static_cast<uint8_t*>(out);
      CUTLASS_PRAGMA_UNROLL
      for (int v = 0; v < kHalf; v += 2) {
        const int r = static_cast<int>(get<0>(coord(v)));
        const int c = static_cast<int>(get<1>(coord(v)));
        const int i = (v >> 1) & 1;
        if (row0 + r < rows) {
          const uint16_t pair = static_cast<uint16_t>(quant::to_e4m3(y[v] * inv[i])) |
                                static_cast<uint16_t>(quant::to_e4m3(y[v + 1] * inv[i]) << 8);
          *reinterpret_cast<uint16_t*>(o + int64_t{row0 + r} * cols + col0 + c) = pair;
        }
      }
      if ((threadIdx.x & 3) == 0) {  // a_block_scale_index within the group's block
        float* s = act_.ptr_scale[group] + int64_t{block} * rows;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < 2; ++i) {
          const int r = static_cast<int>(get<0>(coord(2 * i)));
          if (row0 + r < rows) s[row0 + r] = scale[i];
        }
      }
      return;
    }
    // kFP8Block128AsBF16: the e4m3 round trip, dequantized value rounded to bf16.
    auto* o = static_cast<__nv_bfloat16*>(out);
    CUTLASS_PRAGMA_UNROLL
    for (int v = 0; v < kHalf; v += 2) {
      const int r = static_cast<int>(get<0>(coord(v)));
      const int c = static_cast<int>(get<1>(coord(v)));
      const int i = (v >> 1) & 1;
      if (row0 + r < rows) {
        const float a = quant::from_e4m3(quant::to_e4m3(y[v] * inv[i])) * scale[i];
        const float b = quant::from_e4m3(quant::to_e4m3(y[v + 1] * inv[i])) * scale[i];
        *reinterpret_cast<__nv_bfloat162*>(o + int64_t{row0 + r} * cols + col0 + c) =
            __floats2bfloat162_rn(a, b);
      }
    }
  }

  // y[v] = act(bf16(gate) + bias, bf16(up) + bias) for the gate half's 64 flat values.
  template <Activation A, class AccTensor, class CoordTensor>
  CUTLASS_DEVICE static void activate_half(float* y, AccTensor const& acc, CoordTensor const& coord,
                                           const float* bias, int col0, int cols) {
    constexpr int kHalf = 64;
    CUTLASS_PRAGMA_UNROLL
    for (int v = 0; v < kHalf; ++v) {
      float g = __bfloat162float(__float2bfloat16_rn(acc(v)));
      float u = __bfloat162float(__float2bfloat16_rn(acc(v + kHalf)));
      if (bias != nullptr) {
        const int c = static_cast<int>(cute::get<1>(coord(v)));
        g += bias[col0 + c];
        u += bias[cols + col0 + c];
      }
      y[v] = activate<A>(g, u);
    }
  }

  ActEpilogueParams act_;
};

}  // namespace servekit::cuda::gemm
