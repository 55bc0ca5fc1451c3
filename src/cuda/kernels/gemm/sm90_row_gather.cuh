// The bf16 grouped GEMM's producer with the token rows gathered by the TMA: the MoE layer's
// GEMM1 reads its rows straight from the hidden states, row r of the permuted problem being
// hidden[row_source[r]], instead of from a gathered copy that a separate kernel wrote (the copy
// is T*K*H*2 bytes written and read again: ~19 us of qwen3-30b's bf16 layer at 2048 tokens and
// ~83 at 8192; docs/perf-notes.md, twenty-seventh and twenty-eighth passes). Internal header of
// sm90_grouped_gemm.cuh.
//
// How: the token operand's k-tile in shared memory is TileRows rows of 64 bf16 (128 bytes each,
// 128-byte swizzle), row i at byte i * 128 of the stage. Each row is one TMA load of a 64 x 1
// box of hidden [source_rows, K] with the same swizzle; the swizzle follows the shared-memory
// address (16-byte chunk c of the row lands at chunk c ^ ((address / 128) % 8)), so a one-row load
// to row i's line lands where the box load of the whole tile would put it (measured with
// bench/tools/tma_rowgather.cu). The 32 lanes of the producer warp issue the rows of this CTA's
// slice of the tile, with the multicast of the box load they replace: the CTAs of a cluster that
// share the token tile each load 1/cluster of its rows into all of them. Rows past the group's
// end are loaded from row source_rows, out of bounds, which the TMA fills with zeros without
// reading memory (the epilogue stores none of them). The weight operand keeps CUTLASS's box load
// from the per-group tensor map. The stage's transaction bytes are the box load's, so the
// pipeline (and the consumer side) is unchanged.
//
// Whether a run gathers is a run-time choice: with params.gather.row_source null the base's
// producer runs, reading the operand from the per-group pointers (the runner's run() sets it).
#pragma once

#include <cstdint>

#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

struct RowGatherParams {
  cute::TmaDescriptor map{};               // source [source_rows, K] bf16, box 64 x 1, SW128
  const int32_t* row_source = nullptr;     // [rows]: source row of permuted row r; null: off
  const int32_t* group_offsets = nullptr;  // [G + 1]
  int32_t source_rows = 0;
};

// Base: CUTLASS's ptr-array TMA mainloop (CollectiveMma<MainloopSm90ArrayTmaGmmaWarpSpecialized..>)
// for bf16. kTokensAreB: the token rows are the B operand (swap-AB tiles), else A.
template <class Base, bool kTokensAreB>
struct RowGatherMainloop : Base {
  using MainloopPipeline = typename Base::MainloopPipeline;
  using PipelineState = typename Base::PipelineState;
  using TensorStorage = typename Base::TensorStorage;
  using TileShape = typename Base::TileShape;
  using ClusterShape = typename Base::DispatchPolicy::ClusterShape;
  using SmemLayoutTokens =
      cute::conditional_t<kTokensAreB, typename Base::SmemLayoutB, typename Base::SmemLayoutA>;

  using Arguments = typename Base::Arguments;
  struct Params : Base::Params {
    RowGatherParams gather;
  };

  static constexpr int kRows = cute::size<0>(SmemLayoutTokens{});
  static constexpr int kStageElems = kRows * cute::size<1>(SmemLayoutTokens{});
  static_assert(cute::is_same_v<typename Base::ElementA, cutlass::bfloat16_t> &&
                    cute::is_same_v<typename Base::ElementB, cutlass::bfloat16_t>,
                "the row gather is written for bf16 operands");
  static_assert(cute::size<1>(SmemLayoutTokens{}) == 64,
                "one k-tile row must be one 128-byte swizzle line (tile K = 64 bf16)");
  // Along which cluster dimension the token tile is shared (multicast) and how it is split.
  static constexpr int kShare =
      kTokensAreB ? cute::size<0>(ClusterShape{}) : cute::size<1>(ClusterShape{});
  static_assert(kRows % kShare == 0, "the token tile must split evenly across the cluster");
  static constexpr int kSlice = kRows / kShare;
  static_assert((kShare > 1) ==
                    cute::is_same_v<cute::conditional_t<kTokensAreB, typename Base::GmemTiledCopyB,
                                                        typename Base::GmemTiledCopyA>,
                                    cute::SM90_TMA_LOAD_MULTICAST>,
                "the token tile is multicast exactly when the cluster shares it");
  static constexpr int kPerLane = (kSlice + 31) / 32;

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape problem_shapes, Arguments const& args,
                                        void* workspace) {
    Params p;
    static_cast<typename Base::Params&>(p) =
        Base::to_underlying_arguments(problem_shapes, args, workspace);
    return p;
  }

  // The base's tensors plus (first row, rows) of the current group, set per group below.
  template <class ProblemShape_MNKL>
  CUTLASS_DEVICE auto load_init(ProblemShape_MNKL const& problem_shape_MNKL,
                                Params const& params) const {
    auto base = Base::load_init(problem_shape_MNKL, params);
    return cute::make_tuple(cute::get<0>(base), cute::get<1>(base), int2{0, 0});
  }

  template <class InputTensors, class ProblemShape_MNKL>
  CUTLASS_DEVICE InputTensors tensors_perform_update(InputTensors const& inputs,
                                                     Params const& params,
                                                     ProblemShape_MNKL /*problem_shape_mnkl*/,
                                                     int32_t next_batch) {
    int2 group{0, 0};
    if (params.gather.row_source != nullptr) {
      group.x = params.gather.group_offsets[next_batch];
      group.y = params.gather.group_offsets[next_batch + 1] - group.x;
    }
    return cute::make_tuple(cute::get<0>(inputs), cute::get<1>(inputs), group);
  }

  // Producer: called by the whole producer warp (thread_idx is its lane).
  template <class TensorA, class TensorB, class TensorMapA, class TensorMapB, class KTileIterator,
            class BlockCoord>
  CUTLASS_DEVICE void load(Params const& params, MainloopPipeline pipeline,
                           PipelineState smem_pipe_write,
                           cute::tuple<TensorA, TensorB, int2> const& load_inputs,
                           cute::tuple<TensorMapA, TensorMapB> const& input_tensormaps,
                           BlockCoord const& blk_coord, KTileIterator k_tile_iter, int k_tile_count,
                           int thread_idx, uint32_t block_rank_in_cluster,
                           TensorStorage& shared_tensors) {
    using namespace cute;
    if (params.gather.row_source == nullptr) {
      Base::load(params, pipeline, smem_pipe_write,
                 make_tuple(get<0>(load_inputs), get<1>(load_inputs)), input_tensormaps, blk_coord,
                 k_tile_iter, k_tile_count, thread_idx, block_rank_in_cluster, shared_tensors);
      return;
    }
    const int lane = thread_idx % 32;
    constexpr uint32_t cluster_x = size<0>(ClusterShape{});
    const uint2 cid = {block_rank_in_cluster % cluster_x, block_rank_in_cluster / cluster_x};
    auto [m_coord, n_coord, k_coord, l_coord] = blk_coord;
    auto block_layout = Layout<ClusterShape>{};  // (m, n) -> block id

    // The weight operand: CUTLASS's box load, as in the base.
    Tensor sA =
        make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    Tensor sB =
        make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
    // Multicast masks as the base computes them: A is shared along the cluster's N, B along M.
    uint16_t mask_a = 0, mask_b = 0;
    if constexpr (cute::is_same_v<typename Base::GmemTiledCopyA, SM90_TMA_LOAD_MULTICAST>) {
      for (int n = 0; n < size<1>(block_layout); ++n)
        mask_a |= uint16_t(1) << block_layout(cid.x, n, Int<0>{});
    }
    if constexpr (cute::is_same_v<typename Base::GmemTiledCopyB, SM90_TMA_LOAD_MULTICAST>) {
      for (int m = 0; m < size<0>(block_layout); ++m)
        mask_b |= uint16_t(1) << block_layout(m, cid.y, Int<0>{});
    }
    const uint16_t weight_mask = kTokensAreB ? mask_a : mask_b;
    const uint16_t token_mask = kTokensAreB ? mask_b : mask_a;
    auto weight_tma = [&]() {
      if constexpr (kTokensAreB) {
        auto block_tma = params.tma_load_a.get_slice(cid.y);
        Tensor g = get<0>(load_inputs)(_, _, m_coord, _, l_coord);
        return make_tuple(block_tma.partition_S(g), block_tma.partition_D(sA));
      } else {
        auto block_tma = params.tma_load_b.get_slice(cid.x);
        Tensor g = get<1>(load_inputs)(_, _, n_coord, _, l_coord);
        return make_tuple(block_tma.partition_S(g), block_tma.partition_D(sB));
      }
    }();
    Tensor tWg = get<0>(weight_tma);
    Tensor tWs = get<1>(weight_tma);

    // This CTA's rows of the token tile: slice `slice` of kShare, up to kPerLane per lane.
    const int2 group = get<2>(load_inputs);
    const int slice = kTokensAreB ? cid.x : cid.y;
    const int tile_row0 = (kTokensAreB ? int(n_coord) : int(m_coord)) * kRows;
    int32_t src[kPerLane];
    int line[kPerLane];
    CUTLASS_PRAGMA_UNROLL
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + 32 * j;  // within the slice
      line[j] = slice * kSlice + i;
      const int r = tile_row0 + line[j];
      src[j] = i < kSlice && r < group.y ? params.gather.row_source[group.x + r]
                                         : params.gather.source_rows;
    }
    const uint64_t map = reinterpret_cast<uint64_t>(&params.gather.map);
    const uint32_t tokens_smem = cute::cast_smem_ptr_to_uint(
        kTokensAreB ? shared_tensors.smem_B.data() : shared_tensors.smem_A.data());

    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      pipeline.producer_acquire(smem_pipe_write);  // every lane waits; lane 0 expects the bytes
      using BarrierType = typename MainloopPipeline::ProducerBarrierType;
      BarrierType* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      const int k_tile = *k_tile_iter;
      if (lane == 0) {
        if constexpr (kTokensAreB) {
          copy(params.tma_load_a.with(get<0>(input_tensormaps), *tma_barrier, weight_mask),
               tWg(_, _, _, k_tile), tWs(_, _, _, stage));
        } else {
          copy(params.tma_load_b.with(get<1>(input_tensormaps), *tma_barrier, weight_mask),
               tWg(_, _, _, k_tile), tWs(_, _, _, stage));
        }
      }
      const uint32_t bar = cute::cast_smem_ptr_to_uint(tma_barrier);
      const int col = k_tile * 64;
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < kPerLane; ++j) {
        if (lane + 32 * j < kSlice) {
          const uint32_t dst = tokens_smem + uint32_t((stage * kRows + line[j]) * 128);
          if constexpr (kShare > 1) {
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
                "l"(map), "r"(bar), "r"(col), "r"(src[j]), "h"(token_mask)
                : "memory");
          } else {
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
                "l"(map), "r"(bar), "r"(col), "r"(src[j])
                : "memory");
          }
        }
      }
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace servekit::cuda::gemm
