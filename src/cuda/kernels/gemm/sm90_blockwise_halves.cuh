// The fp8_block128 consumer mainloop of a 128x256 tile: the per-128-K promotion done in two
// 128-column halves, so a warp group holds its 64x256 accumulator (128 registers per thread)
// and one half's wgmma result (64) instead of a whole second 64x256 fragment. Internal header
// of sm90_grouped_gemm.cuh; fp8_block128's compiled tile since session 23 (docs/perf-notes.md,
// twenty-third pass).
//
// Why: the 128x128 tile with a 1x2 cluster reads 8 KB of A (multicast) + 16 KB of B from L2 per
// CTA and k-tile for 2 M MACs; a 128x256 tile with the same cluster reads 8 + 32 KB for 4 M MACs,
// 17% fewer L2 bytes per MAC, with every SM busy (a 1x4 cluster saved the same bytes but left
// 12 of the 132 SMs idle and lost). The cost: each warp group waits for its half's wgmma before
// promoting it, so the promotion no longer runs under its own group's next wgmma; the other
// consumer group's wgmma can fill the tensor cores meanwhile.
//
// Per k-tile and warp group: for each half n, four m64n128k32 wgmma into `part`, wait, then
// accum[half n] += part * a_scale[row] * b_scale[n]. The accumulator keeps the layout of the
// base's 64x256 atom: its values are (2 columns, 2 rows, 32 column groups of 8) per thread, and
// half n's m64n128 values (2, 2, 16) are column groups 16n..16n+15, i.e. flat values
// 64n..64n+63, so the base's epilogue reads it unchanged (checked by the GPU test against the
// CPU reference). Release contract as the base's: every stage but the last of the work tile is
// released here, the last by the base's mma_tail.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

template <class Base>
struct HalvesPromotionMainloop : Base {
  using MainloopPipeline = typename Base::MainloopPipeline;
  using PipelineState = typename Base::PipelineState;
  using TensorStorage = typename Base::TensorStorage;
  using Params = typename Base::Params;
  using TileShape = typename Base::TileShape;
  using SmemLayoutA = typename Base::SmemLayoutA;
  using SmemLayoutB = typename Base::SmemLayoutB;
  using SmemLayoutSFA = typename Base::SmemLayoutSFA;
  using SmemLayoutSFB = typename Base::SmemLayoutSFB;
  using Scale = typename Base::ElementBlockScale;

  static constexpr int kHalfN = 128;
  static_assert(cute::size<0>(TileShape{}) == 128 && cute::size<1>(TileShape{}) == 2 * kHalfN,
                "the halves mainloop is written for a 128x256 tile");
  static_assert(Base::ScaleNsPerTile == 2, "one b_scale per 128-column half");
  static_assert(Base::ScaleMsPerTile == 128, "one a_scale per row");
  static_assert(Base::ScalePromotionInterval == 4, "the promotion must run every 128 K");
  static_assert(cute::size(typename Base::TiledMma{}) == 2 * cutlass::NumThreadsPerWarpGroup,
                "two consumer warp groups (cooperative), 64 rows each");

  // Two warp groups along M, each issuing m64n128k32 wgmma on one half of the tile's N.
  using HalfMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<typename Base::ElementA, typename Base::ElementB, float,
                                 cute::Shape<cute::_128, cute::Int<kHalfN>, cute::_128>,
                                 cute::GMMA::Major::K, cute::GMMA::Major::K>(),
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx,
                          TensorStorage& shared_tensors, Params const& /*params*/) {
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulator must live in registers");

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});
    // The stages' scales as (BLK_M, BLK_N, (BLK_K, PIPE)) tensors broadcast along the other
    // operand's dimension (stride 0), as in sm90_blockwise_overlap.cuh.
    constexpr auto sfa_layout = SmemLayoutSFA{};
    constexpr auto sfb_layout = SmemLayoutSFB{};
    Tensor sSFA = make_tensor(
        make_smem_ptr(shared_tensors.smem_SFA.data()),
        make_layout(make_layout(shape<0>(sfa_layout), stride<0>(sfa_layout)),
                    make_layout(get<1>(TileShape{}), _0{}),
                    make_layout(make_shape(shape<1>(sfa_layout), shape<2>(sfa_layout)),
                                make_stride(stride<1>(sfa_layout), stride<2>(sfa_layout)))));
    Tensor sSFB = make_tensor(
        make_smem_ptr(shared_tensors.smem_SFB.data()),
        make_layout(make_layout(get<0>(TileShape{}), _0{}),
                    make_layout(shape<0>(sfb_layout), stride<0>(sfb_layout)),
                    make_layout(make_shape(shape<1>(sfb_layout), shape<2>(sfb_layout)),
                                make_stride(stride<1>(sfb_layout), stride<2>(sfb_layout)))));

    HalfMma half_mma;
    const int warp_group = __shfl_sync(0xffffffff, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    auto group_mma = half_mma.get_slice(warp_group * cutlass::NumThreadsPerWarpGroup);
    auto thread_c = half_mma.get_slice(thread_idx);
    Tensor tCsSFA = thread_c.partition_C(sSFA);  // (MMA, 1, 2, (BLK_K, PIPE))
    Tensor tCsSFB = thread_c.partition_C(sSFB);  // (MMA, 1, 2, (BLK_K, PIPE))
    Tensor tCrA = group_mma.make_fragment_A(group_mma.partition_A(sA));  // (MMA, 1, 4, PIPE)
    Tensor tCrB = group_mma.make_fragment_B(group_mma.partition_B(sB));  // (MMA, 2, 4, PIPE)
    static_assert(size<1>(decltype(tCrA){}) == 1 && size<1>(decltype(tCrB){}) == 2);

    // One half's wgmma result, and its a_scale * b_scale per value (the broadcast columns have
    // stride 0, so only the thread's two distinct rows take registers).
    Tensor part = partition_fragment_C(half_mma, Shape<_128, Int<kHalfN>>{});  // (MMA, 1, 1)
    static_assert(2 * size(decltype(part){}) == size(FrgTensorC{}),
                  "the accumulator must be the two halves' values");
    Tensor scale = make_tensor_like<Scale>(tCsSFA(_, _0{}, _0{}, _0{}));

    clear(accum);
    if (k_tile_count <= 0) return;

    PipelineState smem_pipe_release = smem_pipe_read;
    bool holding = false;  // whether the previous k-tile's stage is still held
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int stage = smem_pipe_read.index();
      CUTLASS_PRAGMA_UNROLL
      for (int n = 0; n < 2; ++n) {
        warpgroup_fence_operand(part);
        warpgroup_arrive();
        half_mma.accumulate_ = GMMA::ScaleOut::Zero;
        CUTLASS_PRAGMA_UNROLL
        for (int kb = 0; kb < size<2>(tCrA); ++kb) {
          // (V, M) x (V, N) => (V, M, N) with N the one m64n128 block of half n.
          Tensor b_half =
              make_tensor(tCrB(_, n, kb, stage).data(), Layout<Shape<_1, _1>, Stride<_0, _0>>{});
          cute::gemm(half_mma, tCrA(_, _, kb, stage), b_half, part);
          half_mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
        // The scales while the wgmma runs.
        copy(tCsSFA(_, _0{}, n, make_coord(_0{}, stage)), scale);
        const Scale b = tCsSFB(_0{}, _0{}, n, make_coord(_0{}, stage));
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(filter_zeros(scale)); ++i) filter_zeros(scale)(i) *= b;
        warpgroup_wait<0>();
        warpgroup_fence_operand(part);
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(part); ++i) {
          accum(n * size(part) + i) = fmaf(part(i), scale(i), accum(n * size(part) + i));
        }
      }
      ++smem_pipe_read;
      if (holding) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
      holding = true;
    }
    warpgroup_fence_operand(accum);
    // The last stage stays held: the base's mma_tail releases it.
  }
};

}  // namespace servekit::cuda::gemm
