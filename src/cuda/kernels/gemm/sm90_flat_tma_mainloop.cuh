// The bf16 grouped GEMM's producer with one TMA descriptor per operand for the whole run, instead
// of CUTLASS's per-group descriptors. Internal header of sm90_grouped_gemm.cuh.
//
// CUTLASS 4.2's ptr-array mainloop keeps one descriptor per operand and CTA in global memory and
// rewrites both whenever the CTA's next tile lies in another group: the group's pointers, shape
// and strides are read from the argument arrays, written into a copy in shared memory, copied out
// with a release fence of the tensormap proxy, and acquired again before the next TMA load. With
// ~12-16 tiles per expert over 132 persistent CTAs (qwen3-30b-a3b) every tile changes group. The
// group-switch probe (bench/tools/gemm_groups.cpp, docs/perf-notes.md, thirty-seventh pass)
// measured the cost with the weights in L2, on an H100: qwen3-30b's GEMM1 16.9 against 15.6 us
// per tile and SM (the same tiles in one group), GEMM2 7.55 against 6.08.
//
// Here both operands are tensors of the whole run, described once on the host:
//   rows    the permuted rows [capacity_rows, K] (row-major); group g's tile rows start at
//           group_offsets[g]: a tile reads past its group's last row into the next group's rows
//           (or, past capacity_rows, TMA's zero fill). Those rows only reach output rows the
//           epilogue does not store (it clips at the group's M), since a GEMM row depends on its
//           own input row alone.
//   weights every group's [N, K] stacked as [G * N, K] rows, group g's starting at g *
//           weight_group_rows (N when packed, 0 when every group shares one matrix; a stride of
//           whole rows otherwise): a weight tile that ends past N reads the next group's rows into
//           output columns the epilogue clips likewise.
// On a group change the producer re-bases its two coordinate tensors (one load of
// group_offsets[g]), and the tensormap calls of the kernel become no-ops. The descriptors live in
// the kernel parameters (__grid_constant__), so the runner rebuilds them whenever the operand
// pointers change (grouped_gemm_runner.cuh). The consumer side (mma), the shared storage and the
// epilogue are the base's.
//
// A/B build only (-DSERVEKIT_DIAG_PARTIAL_N=1, swap-AB tiles on this producer: the ping-pong one,
// and with -DSERVEKIT_DIAG_FLAT_TMA=3 the cooperative one too): the partial token tile. A group's
// last token tile holds rows - n * BLK_N real rows, the rest pad it (uniform routing pads
// qwen3-30b's groups to 1.19x their rows at 2048 tokens and 1.13x at 8192, and these widths to
// 1.08x and 1.04x: bench/tools/padding_sim.py --tiles 144 --widths 48,96,128), and the base's wgmma
// multiplies all BLK_N columns. Here the producer writes each k-tile's count of real token rows
// into a ring beside the stages (valid_n, 2 x Stages entries, written before the stage's arrive,
// whose release the consumer's wait acquires), and the consumer reads it at a tile's first k-tile
// and runs the whole tile with the narrowest wgmma of 48, 96, 128 or BLK_N columns that covers it:
// the same shared-memory descriptors (the first columns of the B stage), the first columns of the
// accumulators (a wgmma fragment of N columns is the first N / 2 values of a wider one). The
// columns it leaves are tokens past the group, which no epilogue stores.
#ifndef SERVEKIT_DIAG_PARTIAL_N
#define SERVEKIT_DIAG_PARTIAL_N 0
#endif
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

#include "cuda/gemm_tile_config.h"

namespace servekit::cuda::gemm {

// Base: the collective CUTLASS's builder returns for a bf16 ptr-array kernel. RowsAreA: the
// kernel's A operand is the rows (plain tiles); false for swap-AB, where A is the weights.
template <class Base, bool RowsAreA>
struct FlatTmaMainloop : Base {
  using ClusterShape = typename Base::DispatchPolicy::ClusterShape;
  using typename Base::GmemTiledCopyA;
  using typename Base::GmemTiledCopyB;
  using typename Base::InternalElementA;
  using typename Base::InternalElementB;
  using typename Base::InternalStrideA;
  using typename Base::InternalStrideB;
  using typename Base::MainloopPipeline;
  using typename Base::PipelineState;
  using typename Base::SmemLayoutA;
  using typename Base::SmemLayoutB;
  using typename Base::TiledMma;
  using typename Base::TileShape;

  static constexpr bool kFlatTma = true;
  static constexpr int kStages = Base::DispatchPolicy::Stages;
  static constexpr int kBlkN = cute::size<1>(TileShape{});
  static constexpr bool kPartialN = !RowsAreA && SERVEKIT_DIAG_PARTIAL_N != 0;

  // The base's stages, and with the partial token tile the ring of real-row counts (see the top).
  struct PartialTensorStorage : Base::TensorStorage {
    int32_t valid_n[2 * kStages];
  };
  using TensorStorage =
      cute::conditional_t<kPartialN, PartialTensorStorage, typename Base::TensorStorage>;
  // This producer keeps no descriptors in shared memory, so with the ring the base's two (256
  // bytes) go: the ring's 128 then leave the kernels' shared storage as large as before (the
  // cooperative 256x144 swap tile is at the 227 KB limit with 4 stages).
  struct NoTensorMapStorage {};
  using TensorMapStorage =
      cute::conditional_t<kPartialN, NoTensorMapStorage, typename Base::TensorMapStorage>;

  struct Arguments : Base::Arguments {
    const void* rows = nullptr;  // [rows_capacity, K]
    int64_t rows_capacity = 0;
    const void* weights =
        nullptr;  // group g's [N, K] at row g * weight_group_rows of [weight_rows, K]
    int64_t weight_rows = 0;
    int64_t weight_group_rows = 0;
    int64_t k = 0;
    const int32_t* group_offsets = nullptr;  // [G + 1]
  };

  struct Params : Base::Params {
    const int32_t* group_offsets = nullptr;
    int32_t weight_group_rows = 0;
    int32_t a_rows = 1, b_rows = 1;  // rows of the kernel's A and B tensors (their TMA boxes' M/N)
  };

  // The base's descriptors are built with placeholders (as CUTLASS does for grouped GEMMs); with
  // the operands given they describe the whole rows and weights tensors instead.
  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape problem_shapes, Arguments const& args,
                                        void* workspace) {
    using namespace cute;
    Params p;
    static_cast<typename Base::Params&>(p) =
        Base::to_underlying_arguments(problem_shapes, args, workspace);
    p.group_offsets = args.group_offsets;
    p.weight_group_rows = static_cast<int32_t>(args.weight_group_rows);
    if (args.rows == nullptr || args.weights == nullptr) return p;
    const int32_t k = static_cast<int32_t>(args.k);
    const int32_t a_rows = static_cast<int32_t>(RowsAreA ? args.rows_capacity : args.weight_rows);
    const int32_t b_rows = static_cast<int32_t>(RowsAreA ? args.weight_rows : args.rows_capacity);
    const void* a_ptr = RowsAreA ? args.rows : args.weights;
    const void* b_ptr = RowsAreA ? args.weights : args.rows;
    Tensor tensor_a = make_tensor(static_cast<InternalElementA const*>(a_ptr),
                                  make_layout(make_shape(a_rows, k, int32_t(1)),
                                              InternalStrideA{int64_t{k}, Int<1>{}, Int<0>{}}));
    Tensor tensor_b = make_tensor(static_cast<InternalElementB const*>(b_ptr),
                                  make_layout(make_shape(b_rows, k, int32_t(1)),
                                              InternalStrideB{int64_t{k}, Int<1>{}, Int<0>{}}));
    p.tma_load_a = make_tma_copy(GmemTiledCopyA{}, tensor_a, SmemLayoutA{}(_, _, Int<0>{}),
                                 make_shape(shape<0>(TileShape{}), shape<2>(TileShape{})),
                                 size<1>(ClusterShape{}));
    p.tma_load_b = make_tma_copy(GmemTiledCopyB{}, tensor_b, SmemLayoutB{}(_, _, Int<0>{}),
                                 make_shape(shape<1>(TileShape{}), shape<2>(TileShape{})),
                                 size<0>(ClusterShape{}));
    p.a_rows = a_rows;
    p.b_rows = b_rows;
    return p;
  }

  // The tiled coordinate tensors of A and B, their rows shifted by (a_row0, b_row0): the same
  // types for every shift, so the kernel can keep them across groups.
  CUTLASS_DEVICE static auto tiled_inputs(Params const& params, int32_t k, int32_t a_row0,
                                          int32_t b_row0) {
    using namespace cute;
    using X = Underscore;
    Tensor mA = domain_offset(make_coord(a_row0, int32_t(0), int32_t(0)),
                              params.tma_load_a.get_tma_tensor(make_shape(params.a_rows, k, 1)));
    Tensor mB = domain_offset(make_coord(b_row0, int32_t(0), int32_t(0)),
                              params.tma_load_b.get_tma_tensor(make_shape(params.b_rows, k, 1)));
    Tensor gA_mkl = local_tile(mA, TileShape{}, make_coord(_, _, _), Step<_1, X, _1>{});
    Tensor gB_nkl = local_tile(mB, TileShape{}, make_coord(_, _, _), Step<X, _1, _1>{});
    return cute::make_tuple(gA_mkl, gB_nkl);  // (BLK_M,BLK_K,m,k,l), (BLK_N,BLK_K,n,k,l)
  }

  template <class ProblemShape_MNKL>
  CUTLASS_DEVICE auto load_init(ProblemShape_MNKL const& problem_shape_MNKL,
                                Params const& params) const {
    return tiled_inputs(params, static_cast<int32_t>(cute::get<2>(problem_shape_MNKL)), 0, 0);
  }

  // On a group change: the rows operand starts at the group's first row, the weights at its
  // matrix.
  template <class InputTensors, class ProblemShape_MNKL>
  CUTLASS_DEVICE InputTensors tensors_perform_update(InputTensors const& /*input_tensors*/,
                                                     Params const& params,
                                                     ProblemShape_MNKL problem_shape_mnkl,
                                                     int32_t next_batch) {
    const int32_t row0 = params.group_offsets[next_batch];
    const int32_t weight_row0 = next_batch * params.weight_group_rows;
    return tiled_inputs(params, static_cast<int32_t>(cute::get<2>(problem_shape_mnkl)),
                        RowsAreA ? row0 : weight_row0, RowsAreA ? weight_row0 : row0);
  }

  // No per-CTA descriptors: the loads use the parameters' ones.
  CUTLASS_DEVICE auto tensormaps_init(Params const&, TensorMapStorage&, int32_t, int32_t) {
    return cute::make_tuple(static_cast<cute::TmaDescriptor*>(nullptr),
                            static_cast<cute::TmaDescriptor*>(nullptr));
  }
  template <class TensorMaps, class ProblemShape_MNKL>
  CUTLASS_DEVICE void tensormaps_perform_update(TensorMapStorage&, Params const&, TensorMaps const&,
                                                ProblemShape_MNKL, int32_t) {}
  template <class TensorMaps>
  CUTLASS_DEVICE void tensormaps_cp_fence_release(TensorMapStorage&, TensorMaps const&) {}
  template <class TensorMaps>
  CUTLASS_DEVICE void tensormaps_fence_acquire(TensorMaps const&) {}

  // The base's producer loop with the parameters' descriptors.
  template <class TensorA, class TensorB, class TensorMaps, class KTileIterator, class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline,
                           PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB> const& load_inputs,
                           TensorMaps const& /*input_tensormaps*/, BlockCoord const& blk_coord,
                           KTileIterator k_tile_iter, int k_tile_count, int /*thread_idx*/,
                           uint32_t block_rank_in_cluster, TensorStorage& shared_tensors) {
    using namespace cute;
    if (!cute::elect_one_sync()) return;
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});
    constexpr uint32_t cluster_x = get<0>(ClusterShape{});
    const uint2 block_id = {block_rank_in_cluster % cluster_x, block_rank_in_cluster / cluster_x};
    auto block_tma_a = params.tma_load_a.get_slice(block_id.y);
    auto block_tma_b = params.tma_load_b.get_slice(block_id.x);
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    Tensor gA = get<0>(load_inputs)(_, _, m_coord, _, l_coord);  // (BLK_M,BLK_K,k)
    Tensor gB = get<1>(load_inputs)(_, _, n_coord, _, l_coord);  // (BLK_N,BLK_K,k)
    Tensor tAgA = block_tma_a.partition_S(gA);                   // (TMA,TMA_M,TMA_K,k)
    Tensor tAsA = block_tma_a.partition_D(sA);                   // (TMA,TMA_M,TMA_K,PIPE)
    Tensor tBgB = block_tma_b.partition_S(gB);                   // (TMA,TMA_N,TMA_K,k)
    Tensor tBsB = block_tma_b.partition_D(sB);                   // (TMA,TMA_N,TMA_K,PIPE)
    uint16_t mcast_mask_a = 0, mcast_mask_b = 0;
    if constexpr (cute::is_same_v<GmemTiledCopyA, SM90_TMA_LOAD_MULTICAST>) {
      auto block_layout = Layout<ClusterShape>{};  // (m,n) -> block_id
      for (int n = 0; n < size<1>(block_layout); ++n)
        mcast_mask_a |= uint16_t(1) << block_layout(block_id.x, n, Int<0>{});
    }
    if constexpr (cute::is_same_v<GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
      auto block_layout = Layout<ClusterShape>{};
      for (int m = 0; m < size<0>(block_layout); ++m)
        mcast_mask_b |= uint16_t(1) << block_layout(m, block_id.y, Int<0>{});
    }
    int32_t valid = kBlkN;  // the tile's real token rows (kPartialN)
    if constexpr (kPartialN) {
      const int32_t g = static_cast<int32_t>(l_coord);
      const int32_t rows = params.group_offsets[g + 1] - params.group_offsets[g];
      valid = cute::min(int32_t{kBlkN}, rows - static_cast<int32_t>(n_coord) * int32_t{kBlkN});
    }
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      if constexpr (kPartialN) {
        // Entry of this k-tile's stage and pass: written before the acquire's arrive (release),
        // read after the consumer's wait (acquire). The producer's phase starts inverted.
        shared_tensors.valid_n[smem_pipe_write.index() + kStages * (smem_pipe_write.phase() ^ 1)] =
            valid;
      }
      pipeline.producer_acquire(smem_pipe_write);
      using BarrierType = typename MainloopPipeline::ProducerBarrierType;
      BarrierType* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      copy(params.tma_load_a.with(*tma_barrier, mcast_mask_a), tAgA(_, _, _, *k_tile_iter),
           tAsA(_, _, _, stage));
      copy(params.tma_load_b.with(*tma_barrier, mcast_mask_b), tBgB(_, _, _, *k_tile_iter),
           tBsB(_, _, _, stage));
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }

  // The consumer: the base's, or with the partial token tile the narrowest wgmma that covers the
  // tile's real rows (see the top of the file).
  template <class FrgTensorC>
  CUTLASS_DEVICE void mma(MainloopPipeline pipeline, PipelineState smem_pipe_read,
                          FrgTensorC& accum, int k_tile_count, int thread_idx,
                          TensorStorage& shared_tensors, Params const& params) {
    if constexpr (kPartialN) {
      if (k_tile_count > 0) {
        // Waiting here and again in the chosen loop is one wait: the phase cannot move on before
        // this consumer releases the stage.
        auto token = pipeline.consumer_try_wait(smem_pipe_read);
        pipeline.consumer_wait(smem_pipe_read, token);
        const int valid =
            shared_tensors.valid_n[smem_pipe_read.index() + kStages * smem_pipe_read.phase()];
        const int width = partial_token_width(valid, kBlkN);  // gemm_tile_config.h
        if constexpr (kBlkN > 48) {
          if (width == 48)
            return mma_n<48>(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx,
                             shared_tensors);
        }
        if constexpr (kBlkN > 96) {
          if (width == 96)
            return mma_n<96>(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx,
                             shared_tensors);
        }
        if constexpr (kBlkN > 128) {
          if (width == 128)
            return mma_n<128>(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx,
                              shared_tensors);
        }
      }
    }
    Base::mma(pipeline, smem_pipe_read, accum, k_tile_count, thread_idx, shared_tensors, params);
  }

 private:
  // The base's pipelined k-loop (K_PIPE_MMAS wgmma batches in flight, the prologue's stages
  // released by mma_tail) with an m64 x kN wgmma over the first kN columns of B and of the
  // accumulators.
  template <int kN, class FrgTensorC>
  CUTLASS_DEVICE void mma_n(MainloopPipeline pipeline, PipelineState smem_pipe_read,
                            FrgTensorC& accum, int k_tile_count, int thread_idx,
                            TensorStorage& shared_tensors) {
    using namespace cute;
    // The base's warp groups along M (1 for ping-pong, 2 for the cooperative 256-row tile).
    constexpr int kWarpGroups = size(TiledMma{}) / cutlass::NumThreadsPerWarpGroup;
    using AtomLayout = Layout<Shape<Int<kWarpGroups>, _1, _1>>;
    using MmaN = decltype(make_tiled_mma(
        SM90::GMMA::ss_op_selector<typename TiledMma::ValTypeA, typename TiledMma::ValTypeB,
                                   typename TiledMma::ValTypeC,
                                   Shape<Int<size<0>(TileShape{})>, Int<kN>, _16>>(),
        AtomLayout{}));
    constexpr int kPipeMmas = Base::K_PIPE_MMAS;
    Tensor sA = make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), SmemLayoutA{});
    Tensor sB_full = make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), SmemLayoutB{});
    // The first kN token rows of every stage: (kN, BLK_K, PIPE) -> sB_full's (n, k, pipe).
    Tensor sB = make_tensor(
        sB_full.data(),
        composition(sB_full.layout(),
                    make_layout(make_shape(Int<kN>{}, size<1>(sB_full), size<2>(sB_full)),
                                make_stride(_1{}, Int<kBlkN>{},
                                            Int<kBlkN* decltype(size<1>(sB_full))::value>{}))));
    static_assert(size(MmaN{}) == size(TiledMma{}), "the base's warp groups");
    MmaN tiled_mma;
    const int warp_group =
        __shfl_sync(0xffffffffu, thread_idx / cutlass::NumThreadsPerWarpGroup, 0);
    auto thread_mma = tiled_mma.get_slice(warp_group * cutlass::NumThreadsPerWarpGroup);
    Tensor tCsA = thread_mma.partition_A(sA);  // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = thread_mma.partition_B(sB);  // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrA = thread_mma.make_fragment_A(tCsA);
    Tensor tCrB = thread_mma.make_fragment_B(tCsB);
    // The first kN columns of the tile's accumulators: a kN-column fragment's values are the
    // first kN / 2 of each m64 atom's, so its layout with the full fragment's strides.
    auto frag_n = partition_fragment_C(tiled_mma, Shape<Int<size<0>(TileShape{})>, Int<kN>>{});
    Tensor acc = make_tensor(accum.data(), make_layout(shape(frag_n), stride(accum.layout())));
    CUTE_STATIC_ASSERT_V(size<1>(tCsA) == size<1>(acc));   // M
    CUTE_STATIC_ASSERT_V(size<1>(tCsB) == size<2>(acc));   // N
    CUTE_STATIC_ASSERT_V(size<2>(tCsA) == size<2>(tCsB));  // K

    PipelineState smem_pipe_release = smem_pipe_read;
    const int prologue = cute::min(kPipeMmas, k_tile_count);
    tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
    warpgroup_fence_operand(acc);
    {
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);
      const int stage = smem_pipe_read.index();
      warpgroup_arrive();
      CUTLASS_PRAGMA_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), acc);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(acc);
    CUTLASS_PRAGMA_UNROLL
    for (int p = prologue - 1; p > 0; --p) {
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);
      const int stage = smem_pipe_read.index();
      warpgroup_arrive();
      cute::gemm(tiled_mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), acc);
      warpgroup_commit_batch();
      ++smem_pipe_read;
    }
    warpgroup_fence_operand(acc);
    CUTLASS_PRAGMA_NO_UNROLL
    for (k_tile_count -= prologue; k_tile_count > 0; --k_tile_count) {
      auto token = pipeline.consumer_try_wait(smem_pipe_read);
      pipeline.consumer_wait(smem_pipe_read, token);
      const int stage = smem_pipe_read.index();
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      cute::gemm(tiled_mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), acc);
      warpgroup_commit_batch();
      warpgroup_wait<kPipeMmas>();  // the stage released below is no longer read
      warpgroup_fence_operand(acc);
      pipeline.consumer_release(smem_pipe_release);
      ++smem_pipe_read;
      ++smem_pipe_release;
    }
    // Drained here, not in mma_tail: the branches of mma() meet after this, and a register move
    // there while a wgmma still writes the accumulators would make ptxas serialize every wgmma
    // of the kernel (C7515). mma_tail's wait is then a no-op; it still releases the prologue's
    // stages.
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
  }
};

}  // namespace servekit::cuda::gemm
