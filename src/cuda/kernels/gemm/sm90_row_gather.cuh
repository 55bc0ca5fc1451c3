// The bf16 grouped GEMM's producer gathering the token rows itself: the MoE layer's
// GEMM1 reads its rows straight from the hidden states, row r of the permuted problem being
// hidden[row_source[r]], instead of from a gathered copy that a separate kernel wrote (the copy
// is T*K*H*2 bytes written and read again: ~19 us of qwen3-30b's bf16 layer at 2048 tokens and
// ~83 at 8192; docs/perf-notes.md, twenty-seventh and twenty-eighth passes). Internal header of
// sm90_grouped_gemm.cuh.
//
// How: the token operand's k-tile in shared memory is TileRows rows of 64 bf16 (128 bytes each,
// 128-byte swizzle: 16-byte chunk c of row i at byte i * 128 + (c ^ (i % 8)) * 16 of the stage).
// The producer warp fills it with cp.async, 16 bytes a lane: each instruction covers four rows,
// eight lanes a row (one 128-byte line each), so a k-tile of 144 rows is 36 instructions a lane.
// Rows past the group's end are zero-filled (src-size 0) without reading memory; the epilogue
// stores none of them. Each lane's cp.async.mbarrier.arrive (the counting form: +1 on the stage's
// full barrier now, -1 when its copies land) holds the stage until its copies landed; lane 0's
// arrive of the pipeline (producer_acquire) expects only the weight tile's bytes
// (tma_transaction_bytes, set by the runner for gathered runs), and the weight TMA is issued
// after the whole warp has arrived, so the stage cannot complete early. The weight operand keeps
// CUTLASS's box load from the per-group tensor map. Consumers read the stage after the barrier
// as CUTLASS's cp.async GMMA mainloop does.
//
// Why not TMA: one-row TMA loads (a 64 x 1 box each) land in the right swizzled place, but the
// TMA unit takes ~27 ns per load: 144 rows a k-step cost 3.9 us per SM against 0.54 us for one box
// load of the gathered copy (bench/tools/tma_rowgather.cu), and the layer ran 1.6-2x slower
// (docs/perf-notes.md, twenty-eighth pass).
//
// Whether a run gathers is a run-time choice: with params.gather.row_source null the base's
// producer runs, reading the operand from the per-group pointers (the runner's run() sets it).
#pragma once

#include <cstdint>

#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>

namespace servekit::cuda::gemm {

struct RowGatherParams {
  const char* source = nullptr;            // [source rows, K] bf16, 16-byte aligned
  int64_t row_bytes = 0;                   // K * 2
  const int32_t* row_source = nullptr;     // [rows]: source row of permuted row r; null: off
  const int32_t* group_offsets = nullptr;  // [G + 1]
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
  using SmemLayoutWeights =
      cute::conditional_t<kTokensAreB, typename Base::SmemLayoutA, typename Base::SmemLayoutB>;

  using Arguments = typename Base::Arguments;
  struct Params : Base::Params {
    RowGatherParams gather;
  };

  static constexpr int kRows = cute::size<0>(SmemLayoutTokens{});
  static_assert(cute::is_same_v<typename Base::ElementA, cutlass::bfloat16_t> &&
                    cute::is_same_v<typename Base::ElementB, cutlass::bfloat16_t>,
                "the row gather is written for bf16 operands");
  static_assert(cute::size<1>(SmemLayoutTokens{}) == 64,
                "one k-tile row must be one 128-byte swizzle line (tile K = 64 bf16)");
  static_assert(kRows % 4 == 0, "four rows per cp.async instruction of the warp");
  // Bytes the stage's TMA brings when the token rows come by cp.async: the weight tile's.
  static constexpr uint32_t kWeightTmaBytes =
      uint32_t(cute::size<0>(SmemLayoutWeights{}) * cute::size<1>(SmemLayoutWeights{}) * 2);

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
    const auto m_coord = get<0>(blk_coord);
    const auto n_coord = get<1>(blk_coord);
    const auto l_coord = get<3>(blk_coord);

    // The weight operand: CUTLASS's box load, as in the base (multicast mask included).
    Tensor sA =
        make_tensor(make_smem_ptr(shared_tensors.smem_A.data()), typename Base::SmemLayoutA{});
    Tensor sB =
        make_tensor(make_smem_ptr(shared_tensors.smem_B.data()), typename Base::SmemLayoutB{});
    uint16_t weight_mask = 0;
    auto block_layout = Layout<ClusterShape>{};  // (m, n) -> block id
    using WeightCopy = cute::conditional_t<kTokensAreB, typename Base::GmemTiledCopyA,
                                           typename Base::GmemTiledCopyB>;
    if constexpr (cute::is_same_v<WeightCopy, SM90_TMA_LOAD_MULTICAST>) {
      if constexpr (kTokensAreB) {
        for (int n = 0; n < size<1>(block_layout); ++n)
          weight_mask |= uint16_t(1) << block_layout(cid.x, n, Int<0>{});
      } else {
        for (int m = 0; m < size<0>(block_layout); ++m)
          weight_mask |= uint16_t(1) << block_layout(m, cid.y, Int<0>{});
      }
    }
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

    // The tile's rows [tile_row0, tile_row0 + kRows) of the group; rows past its end (or past
    // the tile, none) are zero-filled.
    const int2 group = get<2>(load_inputs);
    const int tile_row0 = (kTokensAreB ? int(n_coord) : int(m_coord)) * kRows;
    const int32_t* row_source = params.gather.row_source + group.x + tile_row0;
    const int rows_here = group.y - tile_row0;
    const int chunk = lane % 8, quad = lane / 8;  // this lane's 16 bytes of rows 4j + quad
    const char* source = params.gather.source + chunk * 16;
    const int row_bytes = static_cast<int>(params.gather.row_bytes);  // < 2^31 (runner)
    const uint32_t tokens_smem = cute::cast_smem_ptr_to_uint(
        kTokensAreB ? shared_tensors.smem_B.data() : shared_tensors.smem_A.data());

    CUTLASS_PRAGMA_NO_UNROLL
    for (; k_tile_count > 0; --k_tile_count) {
      // Every lane waits for the stage to be free; lane 0 arrives, expecting the weight bytes.
      pipeline.producer_acquire(smem_pipe_write);
      using BarrierType = typename MainloopPipeline::ProducerBarrierType;
      BarrierType* tma_barrier = pipeline.producer_get_barrier(smem_pipe_write);
      const int stage = smem_pipe_write.index();
      const int k_tile = *k_tile_iter;
      const uint32_t stage_smem = tokens_smem + uint32_t(stage * kRows * 128);
      const char* column = source + int64_t{k_tile} * 128;
      // The row indices come from L1 every k-tile: kept in registers, or hoisted by the compiler,
      // they spill (the producer warp group has 40 registers).
#pragma unroll 4
      for (int j = 0; j < kRows / 4; ++j) {
        const int row = 4 * j + quad;
        const int32_t s = row < rows_here ? __ldg(row_source + row) : -1;
        const uint32_t dst = stage_smem + uint32_t(row * 128 + ((chunk ^ (row % 8)) << 4));
        const char* src = column + (s >= 0 ? static_cast<int64_t>(s) * row_bytes : 0);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                     "r"(s >= 0 ? 16 : 0)
                     : "memory");
      }
      asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(
                       cute::cast_smem_ptr_to_uint(tma_barrier))
                   : "memory");
      __syncwarp();
      if (lane == 0) {
        if constexpr (kTokensAreB) {
          copy(params.tma_load_a.with(get<0>(input_tensormaps), *tma_barrier, weight_mask),
               tWg(_, _, _, k_tile), tWs(_, _, _, stage));
        } else {
          copy(params.tma_load_b.with(get<1>(input_tensormaps), *tma_barrier, weight_mask),
               tWg(_, _, _, k_tile), tWs(_, _, _, stage));
        }
      }
      ++k_tile_iter;
      ++smem_pipe_write;
    }
  }
};

}  // namespace servekit::cuda::gemm
