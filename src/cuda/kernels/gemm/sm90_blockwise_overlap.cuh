// The fp8_block128 consumer mainloop with the per-128-K promotion overlapped with the next
// k-tile's wgmma. Internal header of sm90_grouped_gemm.cuh.
//
// Blockwise fp8 scaling cannot fold the scales into the epilogue: the weight scale changes every
// 128 columns of K, so each k-tile's wgmma result (fp32, in registers) is multiplied by
// a_scale[row] * b_scale and added into the tile's accumulator before the next k-tile. CUTLASS
// 4.2's blockwise mainloop issues the k-tile's wgmma, waits for it (warpgroup_wait<0>) and then
// promotes, so the tensor cores idle while both consumer warp groups run their promotion FMAs
// (the two groups of the cooperative schedule wait on the same stage, so they promote at the
// same time): 64 FFMA per thread per k-tile against ~512 cycles of wgmma per k-tile on a
// 128x128x128 tile, up to ~30% of the mainloop.
//
// This mainloop keeps two wgmma result fragments and alternates them: k-tile t's wgmma is issued
// into one while k-tile t-1's (in the other, already complete after warpgroup_wait<1>) is
// promoted, so the FMAs run under the tensor cores' work. Registers per consumer thread of a
// 128x128 tile: 64 accumulator + 2 x 64 fragments = 192 of the schedule's 232.
//
// The class derives from the mainloop CUTLASS's collective builder returns and replaces only its
// consumer side (mma); the producer (TMA loads of A, B and the scales), shared storage, Params
// and tensormap handling are the base's. mma keeps the base's release contract: every stage but
// the last of the work tile is released here, the last by the base's mma_tail.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

template <class Base>
struct OverlappedPromotionMainloop : Base {
  using MainloopPipeline = typename Base::MainloopPipeline;
  using PipelineState = typename Base::PipelineState;
  using TensorStorage = typename Base::TensorStorage;
  using Params = typename Base::Params;
  using TiledMma = typename Base::TiledMma;
  using TileShape = typename Base::TileShape;
  using SmemLayoutA = typename Base::SmemLayoutA;
  using SmemLayoutB = typename Base::SmemLayoutB;
  using SmemLayoutSFA = typename Base::SmemLayoutSFA;
  using SmemLayoutSFB = typename Base::SmemLayoutSFB;
  using Scale = typename Base::ElementBlockScale;

  // One b_scale per tile (tile N within one 128-column scale block) and one a_scale per row.
  static_assert(Base::ScaleNsPerTile == 1, "the overlapped promotion takes one b_scale per tile");
  static_assert(Base::ScalePromotionInterval == 4, "the promotion must run every 128 K");

  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx,
                          TensorStorage& shared_tensors, Params const& /*params*/) {
    using namespace cute;
    static_assert(is_rmem<FrgTensorC>::value, "the accumulator must live in registers");

    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});
    // The stages' scales seen as (BLK_M, BLK_N, (BLK_K, PIPE)) tensors broadcast along the
    // other operand's dimension (stride 0), so the accumulator's partition applies to them.
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

    TiledMma tiled_mma;
    const int warp_group = __shfl_sync(0xffffffff, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    auto group_mma = tiled_mma.get_slice(warp_group * cutlass::NumThreadsPerWarpGroup);
    auto thread_c = tiled_mma.get_slice(thread_idx);
    Tensor tCsSFA = thread_c.partition_C(sSFA);  // (MMA, MMA_M, MMA_N, (BLK_K, PIPE))
    Tensor tCsSFB = thread_c.partition_C(sSFB);
    Tensor tCrA = group_mma.make_fragment_A(group_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCrB = group_mma.make_fragment_B(group_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE)

    // Two wgmma result fragments and the scales of the k-tile each holds (a_scale * b_scale
    // per row; the broadcast dimension has stride 0, so only the distinct rows take registers).
    Tensor frag0 = make_fragment_like(accum);
    Tensor frag1 = make_fragment_like(accum);
    Tensor scale0 = make_tensor_like<Scale>(tCsSFA(_, _, _, _0{}));
    Tensor scale1 = make_tensor_like<Scale>(tCsSFA(_, _, _, _0{}));
    Tensor scale_b = make_tensor_like<Scale>(tCsSFB(_, _, _, _0{}));

    clear(accum);
    if (k_tile_count <= 0) return;

    auto load_scales = [&](auto& scale, int stage) {
      copy(tCsSFA(_, _, _, make_coord(_0{}, stage)), scale);
      copy(tCsSFB(_, _, _, make_coord(_0{}, stage)), scale_b);
      const Scale b = scale_b(_0{});
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(filter_zeros(scale)); ++i) filter_zeros(scale)(i) *= b;
    };
    auto issue = [&](auto& frag, int stage) {
      warpgroup_fence_operand(frag);
      warpgroup_arrive();
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTLASS_PRAGMA_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), frag);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(frag);
    };
    auto promote = [&](auto& frag, auto const& scale) {
      warpgroup_fence_operand(frag);
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(accum); ++i) accum(i) = fmaf(frag(i), scale(i), accum(i));
    };

    PipelineState smem_pipe_release = smem_pipe_read;
    bool holding = false;  // whether a stage before the current one is still held
    // The next stage's data, then its scales and wgmma into `frag`; then wait until only that
    // wgmma is in flight, release the previous stage (none before the first) and promote the
    // previous fragment.
    auto step = [&](auto& frag, auto& scale, auto& prev_frag, auto const& prev_scale) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      const int stage = smem_pipe_read.index();
      load_scales(scale, stage);
      issue(frag, stage);
      ++smem_pipe_read;
      warpgroup_wait<1>();
      if (holding) {
        pipeline.consumer_release(smem_pipe_release);
        ++smem_pipe_release;
      }
      holding = true;
      promote(prev_frag, prev_scale);
    };

    // No wgmma is in flight when the loop starts: the first step "promotes" frag0 = 0 with scale
    // 0 (64 wasted FMAs per work tile). With k-tile 0 issued before the loop instead, ptxas
    // (CUDA 13.0) waits for that wgmma at the loop's entry (warning C7517, "warpgroup.wait is
    // injected ... to allow use of registers defined by GMMA").
    clear(frag0);
    clear(scale0);
    int left = k_tile_count;
    CUTLASS_PRAGMA_NO_UNROLL
    for (; left >= 2; left -= 2) {
      step(frag1, scale1, frag0, scale0);
      step(frag0, scale0, frag1, scale1);
    }
    if (left == 1) {
      step(frag1, scale1, frag0, scale0);
      warpgroup_wait<0>();
      promote(frag1, scale1);
    } else {
      warpgroup_wait<0>();
      promote(frag0, scale0);
    }
    warpgroup_fence_operand(accum);
    // The last stage stays held: the base's mma_tail releases it.
  }
};

}  // namespace servekit::cuda::gemm
