// The fp8_block128 scale producer (the mainloop's auxiliary load warp) for tiles whose scale
// count per k-tile is not a multiple of 32: fp8_block128's swap-AB tile, whose 144 tokens each
// carry their own 1x128 activation scale. Internal header of sm90_grouped_gemm.cuh.
//
// Why: CUTLASS 4.2's sm90 ptr-array blockwise producer (load_auxiliary) partitions a tile's scales
// over the warp's 32 lanes with a TiledCopy whose tiler must divide the count. 144 = 4.5 x 32, so
// CuTe extends the division to 5 x 32 and lanes 16-31 copy a fifth scale each to shared offsets
// 144-159 of the stage (checked on the host, session 50: partition_D of a 144-float stage gives
// lane 16 offsets 16, 48, 80, 112, 144): the first 16 scales of the next stage, or past the
// buffer after the last stage, with the values of tokens 144-159 of the group, predicated only
// against the group's end. A silent wrong answer, not a crash. Its predicates also compare the
// wrong element of the coordinate tensor (grouped_gemm.h, kBlockScaleTailFloats).
//
// This producer does the same copies (cp.async of one fp32 scale, arriving on the stage's
// barrier as the base's 33 producer events expect: the TMA warp's one, each lane's one) with an
// explicit loop: entry e < ScaleMsPerTile + ScaleNsPerTile of a k-tile is lane e % 32's; entry
// e < ScaleMsPerTile is the scale of the tile's weight block (or row) e, the others the scale of
// the tile's token (or column block) e - ScaleMsPerTile; an entry whose element lies past the
// operand's extent is not copied (its shared slot keeps a stale value that multiplies only
// accumulator values past M or N, which the epilogue never stores). The consumer side is the
// base's.
#pragma once

#include <cutlass/arch/barrier.h>
#include <cutlass/cutlass.h>
#include <cute/arch/copy_sm80.hpp>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

template <class Base>
struct ExactScaleLoadMainloop : Base {
  using MainloopPipeline = typename Base::MainloopPipeline;
  using PipelineState = typename Base::PipelineState;
  using TensorStorage = typename Base::TensorStorage;
  using Params = typename Base::Params;
  using TileShape = typename Base::TileShape;
  using SmemLayoutSFA = typename Base::SmemLayoutSFA;
  using SmemLayoutSFB = typename Base::SmemLayoutSFB;
  using Scale = typename Base::ElementBlockScale;

  static constexpr int kScalesA = Base::ScaleMsPerTile;
  static constexpr int kScalesB = Base::ScaleNsPerTile;
  static constexpr int kStepA = Base::ScaleGranularityM;
  static constexpr int kStepB = Base::ScaleGranularityN;
  static_assert(Base::NumProducerThreadEvents == 33,
                "one TMA arrival and one per lane of the auxiliary warp");

  template <class TensorA, class TensorB, class TensorSFA, class TensorSFB, class KTileIterator,
            class BlockCoord>
  CUTLASS_DEVICE void load_auxiliary(
      Params const& /*params*/, MainloopPipeline pipeline, PipelineState smem_pipe_write,
      cute::tuple<TensorA, TensorB, TensorSFA, TensorSFB> const& load_inputs,
      BlockCoord const& blk_coord, KTileIterator k_tile_iter, int k_tile_count, int lane,
      uint32_t /*block_rank_in_cluster*/, TensorStorage& shared_tensors) {
    using namespace cute;
    Tensor sSFA = make_tensor(make_smem_ptr(shared_tensors.smem_SFA.data()), SmemLayoutSFA{});
    Tensor sSFB = make_tensor(make_smem_ptr(shared_tensors.smem_SFB.data()), SmemLayoutSFB{});
    // The group's scales by element coordinate: (M, K, L) and (N, K, L), each mode's value the
    // element's index (a mode of shape (vec, blocks) maps it to its block).
    Tensor mSFA = get<2>(load_inputs);
    Tensor mSFB = get<3>(load_inputs);
    const int extent_a = static_cast<int>(size<0>(mSFA));  // M rounded up to whole blocks
    const int extent_b = static_cast<int>(size<0>(mSFB));
    const int m0 = static_cast<int>(get<0>(blk_coord)) * size<0>(TileShape{});
    const int n0 = static_cast<int>(get<1>(blk_coord)) * size<1>(TileShape{});
    const auto l = get<3>(blk_coord);

    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      const int k = static_cast<int>(*k_tile_iter) * size<2>(TileShape{});
      CUTLASS_PRAGMA_UNROLL
      for (int e = lane; e < kScalesA + kScalesB; e += 32) {
        const bool a = e < kScalesA;
        const int i = a ? e : e - kScalesA;
        const int at = a ? m0 + i * kStepA : n0 + i * kStepB;
        if (at < (a ? extent_a : extent_b)) {
          const Scale* src = a ? &mSFA(at, k, l) : &mSFB(at, k, l);
          Scale* dst = a ? &sSFA(i * kStepA, 0, stage) : &sSFB(i * kStepB, 0, stage);
          SM80_CP_ASYNC_CACHEALWAYS<Scale>::copy(*src, *dst);
        }
      }
      pipeline.producer_commit(smem_pipe_write, cutlass::arch::cpasync_barrier_arrive_noinc);
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace servekit::cuda::gemm
