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
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/gemm.h>
#include <cute/tensor.hpp>

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
  using typename Base::TensorMapStorage;
  using typename Base::TensorStorage;
  using typename Base::TileShape;

  static constexpr bool kFlatTma = true;

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
    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
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
};

}  // namespace servekit::cuda::gemm
