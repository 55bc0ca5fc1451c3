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
//
// Rows past a group's end. A group of m rows ends in a tile with m % 128 valid rows (when not
// 0); the warp group that owns rows 64..127 of a tile with at most 64 valid rows has nothing to
// compute, yet CUTLASS's mainloop runs its wgmma over the zero-filled rows. Here the scale
// producer (load_auxiliary, replacing the base's) stores -0.0f as the a_scale of every row past
// the group's end, copied from global memory by the same cp.async that brings the real scales
// (so the stage's full barrier orders it), and a warp group whose first row carries that mark
// at the tile's first k-tile skips the tile's wgmma and promotions: it only waits for and
// releases the stages. Its accumulator stays 0; the epilogue's TMA store writes no row past the
// group's end. The other warp group's wgmma then has the tensor cores to itself. Real a_scales
// are never -0.0f (the quantizers divide an absolute maximum: +0 at least; grouped_gemm.h).
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

// The a_scale of a row past its group's end, in global memory for cp.async (internal linkage:
// one copy per translation unit, which is all a load needs).
static __device__ const float kRowPastEndScale = -0.0f;
static __device__ const float kZeroScale = 0.0f;  // the b_scale of a half past N
// Session 23's A/B (SERVEKIT_DIAG_FP8_IDLE, set by grouped_gemm_fp8_block128.cu): 0 the scale
// producer below and the idle warp group, 1 CUTLASS's scale producer and no idling, 2 the scale
// producer below without idling. Removed after the run.
static __device__ int kDiagIdleMode = 0;
constexpr uint32_t kRowPastEndBits = 0x80000000u;

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
  static constexpr int kTileM = 128;
  static constexpr int kTileK = 128;

  // One 4-byte cp.async (cached at all levels, as the base's scale copy) global -> shared.
  CUTLASS_DEVICE static void copy_scale(float* dst, const float* src) {
    const uint32_t d = cute::cast_smem_ptr_to_uint(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
  }
  static_assert(cute::size<0>(TileShape{}) == 128 && cute::size<1>(TileShape{}) == 2 * kHalfN,
                "the halves mainloop is written for a 128x256 tile");
  static_assert(Base::ScaleNsPerTile == 2, "one b_scale per 128-column half");
  static_assert(Base::ScaleMsPerTile == 128, "one a_scale per row");
  static_assert(Base::ScalePromotionInterval == 4, "the promotion must run every 128 K");
  static_assert(cute::size(typename Base::TiledMma{}) == 2 * cutlass::NumThreadsPerWarpGroup,
                "two consumer warp groups (cooperative), 64 rows each");
  static_assert(cute::is_same_v<Scale, float>, "the row-past-end mark is a float -0");

  // The scale producer (one warp, thread_idx = lane): per k-tile of the work tile, the 128
  // a_scales (4 rows per lane; -0 from kRowPastEndScale past the group's M rows) and the two
  // b_scales (lanes 0 and 1; +0 past N, whose columns TMA fills with zeros) into the stage by
  // 4-byte cp.async, then the lane's cp.async arrive on the stage's full barrier, as the base.
  template <class TensorA, class TensorB, class TensorSFA, class TensorSFB, class KTileIterator,
            class BlockCoord>
  CUTLASS_DEVICE void load_auxiliary(
      Params const& params_, MainloopPipeline pipeline, PipelineState smem_pipe_write,
      cute::tuple<TensorA, TensorB, TensorSFA, TensorSFB> const& inputs,
      BlockCoord const& blk_coord, KTileIterator k_tile_iter, int k_tile_count, int thread_idx,
      uint32_t rank_, TensorStorage& shared_tensors) {
    if (kDiagIdleMode == 1) {  // A/B baseline of session 23 (removed after the run)
      Base::load_auxiliary(params_, pipeline, smem_pipe_write, inputs, blk_coord, k_tile_iter,
                           k_tile_count, thread_idx, rank_, shared_tensors);
      return;
    }
    using namespace cute;
    Tensor sSFA = make_tensor(make_smem_ptr(shared_tensors.smem_SFA.data()), SmemLayoutSFA{});
    Tensor sSFB = make_tensor(make_smem_ptr(shared_tensors.smem_SFB.data()), SmemLayoutSFB{});
    // (scale_m, k, l) and (scale_n, k, l) over the group's M x K and N x K: natural coordinates
    // (row, k element, 0).
    auto const& mSFA = get<2>(inputs);
    auto const& mSFB = get<3>(inputs);
    const int rows = static_cast<int>(size<0>(mSFA));
    const int cols = static_cast<int>(size<0>(mSFB));
    const int row0 = static_cast<int>(get<0>(blk_coord)) * kTileM;
    const int col0 = static_cast<int>(get<1>(blk_coord)) * 2 * kHalfN;
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      const int k = static_cast<int>(*k_tile_iter) * kTileK;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kTileM / 32; ++i) {
        const int r = thread_idx + 32 * i;
        const float* src = row0 + r < rows ? &mSFA(row0 + r, k, 0) : &kRowPastEndScale;
        copy_scale(&sSFA(r, 0, stage), src);
      }
      if (thread_idx < 2) {
        const int c = col0 + thread_idx * kHalfN;
        const float* src = c < cols ? &mSFB(c, k, 0) : &kZeroScale;
        copy_scale(&sSFB(thread_idx * kHalfN, 0, stage), src);
      }
      pipeline.producer_commit(smem_pipe_write, cutlass::arch::cpasync_barrier_arrive_noinc);
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }

  // Two warp groups along M, each issuing m64n128k32 wgmma on one half of the tile's N.
  using HalfMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<typename Base::ElementA, typename Base::ElementB, float,
                                 cute::Shape<cute::_128, cute::Int<kHalfN>, cute::_128>,
                                 cute::GMMA::Major::K, cute::GMMA::Major::K>(),
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));

  // A warp group with no rows in the tile: the first stage already waited for, each later one
  // waited for and the previous released; the last stays held for the base's mma_tail.
  CUTLASS_DEVICE static void idle_stages(MainloopPipeline& pipeline, PipelineState smem_pipe_read,
                                         int k_tile_count) {
    PipelineState smem_pipe_release = smem_pipe_read;
    ++smem_pipe_read;
    CUTLASS_PRAGMA_NO_UNROLL
    for (--k_tile_count; k_tile_count > 0; --k_tile_count) {
      pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
      ++smem_pipe_read;
      pipeline.consumer_release(smem_pipe_release);
      ++smem_pipe_release;
    }
  }

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

    // Rows past the end are a suffix of the tile, so the warp group's first row decides, at the
    // first stage; all 128 threads read the same word, so the whole group takes one branch.
    const int mode = kDiagIdleMode;
    pipeline.consumer_wait(smem_pipe_read, pipeline.consumer_try_wait(smem_pipe_read));
    {
      Tensor sSFA_rows = make_tensor(make_smem_ptr(shared_tensors.smem_SFA.data()), sfa_layout);
      const int first_row = warp_group * (kTileM / 2);
      if (mode == 0 &&
          __float_as_uint(sSFA_rows(first_row, 0, smem_pipe_read.index())) == kRowPastEndBits) {
        idle_stages(pipeline, smem_pipe_read, k_tile_count);
        return;
      }
    }
    PipelineState smem_pipe_release = smem_pipe_read;
    bool holding = false;  // whether the previous k-tile's stage is still held
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      // (The first stage's wait above completed: this one returns at once.)
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
