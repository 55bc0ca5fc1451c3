// The fp8_block128 consumer mainloop of a 128x256 tile with the per-128-K promotion overlapped with
// the warp group's own next wgmma: the tile's N is issued in four 64-column quarters, and each
// quarter's result is promoted while the next quarter's wgmma runs. Internal header of
// sm90_grouped_gemm.cuh; a build-time alternative to sm90_blockwise_halves.cuh
// (-DSERVEKIT_DIAG_FP8_QUARTERS=1) until a GPU has measured it (docs/perf-notes.md, fifty-second
// pass).
//
// Why: the halves mainloop issues a half's four m64n128k32 wgmma, waits for them and only then
// promotes (64 FFMA per thread), so a warp group's tensor-core work stops during its own
// promotion, and the two consumer groups, which wait on the same stage, tend to promote at the
// same time. Two m64n128 result fragments would overlap it, but need 128 + 2 x 64 registers per
// thread, past the 232 of the schedule. Quarters need 128 + 2 x 32, as many as the halves'
// 128 + 64: quarter q's wgmma goes into fragment q % 2, and quarter q - 1's (the other fragment,
// complete after warpgroup_wait<1>) is promoted while it runs. Only a k-tile's last quarter is
// promoted with no wgmma of its own group in flight (32 FFMA per thread per k-tile, against 2 x 64
// in the halves mainloop). Carrying that quarter over into the next k-tile (promoted under its
// first quarter) makes ptxas serialize every wgmma of the loop (C7514, CUDA 13.0). The cost:
// m64n64 wgmma read the warp group's 64x128 A stage four times per k-tile instead of twice.
//
// Accumulator layout as in the halves mainloop: a thread's values of the 64x256 atom are (2
// columns, 2 rows, 32 column groups of 8); quarter q's m64n64 values (2, 2, 8) are column groups
// 8q..8q+7, i.e. flat values 32q..32q+31. Each quarter sums the same k32 wgmma per output as a
// half does, and the promotion's FMA is the same, so results equal the halves mainloop's.
// Release contract as the base's: every stage but the last of the work tile is released here, the
// last by the base's mma_tail.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

template <class Base>
struct QuartersPromotionMainloop : Base {
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

  static constexpr int kQuarterN = 64;
  static_assert(cute::size<0>(TileShape{}) == 128 && cute::size<1>(TileShape{}) == 4 * kQuarterN,
                "the quarters mainloop is written for a 128x256 tile");
  static_assert(Base::ScaleNsPerTile == 2, "one b_scale per 128-column half");
  static_assert(Base::ScaleMsPerTile == 128, "one a_scale per row");
  static_assert(Base::ScalePromotionInterval == 4, "the promotion must run every 128 K");
  static_assert(cute::size(typename Base::TiledMma{}) == 2 * cutlass::NumThreadsPerWarpGroup,
                "two consumer warp groups (cooperative), 64 rows each");

  // Two warp groups along M, each issuing m64n64k32 wgmma on one quarter of the tile's N.
  using QuarterMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<typename Base::ElementA, typename Base::ElementB, float,
                                 cute::Shape<cute::_128, cute::Int<kQuarterN>, cute::_128>,
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
    // operand's dimension (stride 0), as in sm90_blockwise_overlap.cuh; partitioned by the
    // quarter MMA, so mode 2 is the quarter and quarters 2n, 2n + 1 read b_scale n.
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

    QuarterMma quarter_mma;
    const int warp_group = __shfl_sync(0xffffffff, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    auto group_mma = quarter_mma.get_slice(warp_group * cutlass::NumThreadsPerWarpGroup);
    auto thread_c = quarter_mma.get_slice(thread_idx);
    Tensor tCsSFA = thread_c.partition_C(sSFA);  // (MMA, 1, 4, (BLK_K, PIPE))
    Tensor tCsSFB = thread_c.partition_C(sSFB);  // (MMA, 1, 4, (BLK_K, PIPE))
    Tensor tCrA = group_mma.make_fragment_A(group_mma.partition_A(sA));  // (MMA, 1, 4, PIPE)
    Tensor tCrB = group_mma.make_fragment_B(group_mma.partition_B(sB));  // (MMA, 4, 4, PIPE)
    static_assert(size<1>(decltype(tCrA){}) == 1 && size<1>(decltype(tCrB){}) == 4);

    // Two quarter results, alternating, and a_scale * b_scale per value for each half of the
    // k-tile (the broadcast columns have stride 0, so only the thread's two distinct rows take
    // registers).
    Tensor frag0 = partition_fragment_C(quarter_mma, Shape<_128, Int<kQuarterN>>{});  // (MMA,1,1)
    Tensor frag1 = make_fragment_like(frag0);
    static_assert(4 * size(decltype(frag0){}) == size(FrgTensorC{}),
                  "the accumulator must be the four quarters' values");
    Tensor a_scale = make_tensor_like<Scale>(tCsSFA(_, _0{}, _0{}, _0{}));
    Tensor cur0 = make_tensor_like(a_scale);
    Tensor cur1 = make_tensor_like(a_scale);
    static_assert(size(decltype(a_scale){}) == size(decltype(frag0){}));

    clear(accum);
    if (k_tile_count <= 0) return;

    auto load_scales = [&](int stage) {
      copy(tCsSFA(_, _0{}, _0{}, make_coord(_0{}, stage)), a_scale);
      const Scale b0 = tCsSFB(_0{}, _0{}, _0{}, make_coord(_0{}, stage));
      const Scale b1 = tCsSFB(_0{}, _0{}, _2{}, make_coord(_0{}, stage));
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(filter_zeros(a_scale)); ++i) {
        filter_zeros(cur0)(i) = filter_zeros(a_scale)(i) * b0;
        filter_zeros(cur1)(i) = filter_zeros(a_scale)(i) * b1;
      }
    };
    auto issue = [&](auto& frag, int q, int stage) {
      warpgroup_fence_operand(frag);
      warpgroup_arrive();
      quarter_mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTLASS_PRAGMA_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        // (V, M) x (V, N) => (V, M, N) with N the one m64n64 block of quarter q.
        Tensor b_quarter =
            make_tensor(tCrB(_, q, kb, stage).data(), Layout<Shape<_1, _1>, Stride<_0, _0>>{});
        cute::gemm(quarter_mma, tCrA(_, _, kb, stage), b_quarter, frag);
        quarter_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(frag);
    };
    // accum's quarter q (flat values 32q..32q+31) += frag * scale.
    auto promote = [&](auto& frag, int q, auto const& scale) {
      warpgroup_fence_operand(frag);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(frag); ++i) {
        const int a = q * size(frag) + i;
        accum(a) = fmaf(frag(i), scale(i), accum(a));
      }
    };

    PipelineState smem_pipe_release = smem_pipe_read;
    bool holding = false;  // whether the previous k-tile's stage is still held
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int stage = smem_pipe_read.index();
      issue(frag0, 0, stage);
      load_scales(stage);
      // The previous k-tile's wgmma all completed before its last promotion.
      if (holding) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
      holding = true;
      issue(frag1, 1, stage);
      warpgroup_wait<1>();
      promote(frag0, 0, cur0);
      issue(frag0, 2, stage);
      warpgroup_wait<1>();
      promote(frag1, 1, cur0);
      issue(frag1, 3, stage);
      warpgroup_wait<1>();
      promote(frag0, 2, cur1);
      warpgroup_wait<0>();
      promote(frag1, 3, cur1);
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(accum);
    // The last stage stays held: the base's mma_tail releases it.
  }
};

}  // namespace servekit::cuda::gemm
