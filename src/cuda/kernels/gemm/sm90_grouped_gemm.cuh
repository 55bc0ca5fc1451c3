// CUTLASS 3.x kernel types of the sm90 grouped GEMM (TMA + wgmma, warp-specialized, persistent
// over all groups), as templates on the operand format and the tile configuration
// (gemm_tile_config.h). Problem sizes and per-group pointers live in device arrays, so the
// kernel reads each group's M on the device and the host never sees the routing.
//
// Layouts (CUTLASS names): A RowMajor [M_g, K] (K-major), B ColumnMajor i.e. [N, K] K-major
// (y = x · Wᵀ), D RowMajor [M_g, N] bf16, no C operand. fp8_block128 scales are MN-major, as
// the sm90 blockwise mainloop derives them from (M_g, N, K): SFA of group g is [K/128, M_g]
// (row r of the group at kb * M_g + r), SFB [K/128, ceil(N/128)].
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "cuda/gemm_tile_config.h"
#include "cuda/kernels/gemm/sm90_act_epilogue.cuh"
#include "cuda/kernels/gemm/sm90_blockwise_halves.cuh"
#include "cuda/kernels/gemm/sm90_blockwise_overlap.cuh"
#include "cuda/kernels/gemm/sm90_flat_tma_mainloop.cuh"
#include "cuda/kernels/gemm/sm90_group_scalar.cuh"
#include "cuda/kernels/pdl.cuh"

namespace servekit::cuda::gemm {

template <GemmOperand Op>
struct OperandElement {
  using type = cutlass::float_e4m3_t;
};
template <>
struct OperandElement<GemmOperand::kBF16> {
  using type = cutlass::bfloat16_t;
};

// Kernel and epilogue schedules per (operand, schedule).
template <GemmOperand Op, GemmSchedule S>
struct Schedules;
template <>
struct Schedules<GemmOperand::kBF16, GemmSchedule::kCooperative> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
};
template <>
struct Schedules<GemmOperand::kBF16, GemmSchedule::kPingpong> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
};
template <>
struct Schedules<GemmOperand::kFP8PerTensor, GemmSchedule::kCooperative> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8FastAccum;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
};
template <>
struct Schedules<GemmOperand::kFP8PerTensor, GemmSchedule::kPingpong> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8FastAccum;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
};
template <>
struct Schedules<GemmOperand::kFP8Block128, GemmSchedule::kCooperative> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative;
};
template <>
struct Schedules<GemmOperand::kFP8Block128, GemmSchedule::kPingpong> {
  using Kernel = cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8BlockScaledAccum;
  using Epilogue = cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong;
};

// A CUTLASS kernel that takes part in a programmatic-dependent-launch chain (kernels/pdl.cuh).
// CUTLASS 4.2's ptr-array sm90 kernels execute no griddepcontrol.wait, so launched with PDL they
// could read their A operand (and the group arguments) before the previous kernel wrote them:
// this wrapper waits first, then lets the next kernel launch (its CTAs queue behind this
// persistent grid and wait for its completion). Without PDL both instructions are no-ops.
template <class Base>
struct PdlKernel : Base {
  CUTLASS_DEVICE void operator()(typename Base::Params const& params, char* smem) {
    pdl_wait();
    pdl_trigger();
    Base::operator()(params, smem);
  }
};

// SwapAB (bf16 only): the kernel computes D_gᵀ [N, M_g] = B_g · A_gᵀ, the weights as its A and
// the group's rows as its N, so a group's rows fill a tile of TileN tokens (any multiple of 8)
// instead of whole 64-row wgmma blocks; D_gᵀ column-major is D_g row-major. The runner swaps the
// problem sizes and pointers (write_group_arguments).
// Interleave: the rows of W13's gate/up blocks the fused activation is compiled for (the 128x256
// tile; a swap-AB tile's is half its weight rows).
template <GemmOperand Op, int TileM, int TileN, int TileK, int ClusterM, int ClusterN,
          GemmSchedule Sched, bool SwapAB = false, int Interleave = 128>
struct Sm90GroupedGemm {
  static_assert(!SwapAB || Op == GemmOperand::kBF16, "swap-AB is written for bf16 only");
  static constexpr bool kSwapAB = SwapAB;
  // Preconditions of the sm90 collectives, checked here so a bad config fails with a message.
  static_assert(TileM % 64 == 0, "wgmma tiles M in multiples of 64");
  static_assert(Sched != GemmSchedule::kCooperative || TileM >= 128,
                "the cooperative schedule splits M across two warp groups");
  static_assert(TileK * gemm_operand_bytes(Op) % 128 == 0,
                "tile K must fill whole 128-byte swizzle rows");
  static_assert(Op != GemmOperand::kFP8Block128 || (TileK == 128 && TileN % 128 == 0),
                "blockwise scaling needs tile K == 128 and tile N a multiple of 128");

  static constexpr GemmOperand kOperand = Op;
  static constexpr GemmTileConfig kTile{TileM, TileN, TileK, ClusterM, ClusterN, Sched, SwapAB};
  static constexpr bool kBlockScaled = Op == GemmOperand::kFP8Block128;
  static constexpr bool kGroupAlpha = Op == GemmOperand::kFP8PerTensor;

  using ElementAB = typename OperandElement<Op>::type;
  using ElementD = cutlass::bfloat16_t;
  using ElementAcc = float;
  using ElementScale = float;
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;  // (M,N,K)
  using TileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<TileK>>;
  using ClusterShape = cute::Shape<cute::Int<ClusterM>, cute::Int<ClusterN>, cute::_1>;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD =
      cute::conditional_t<SwapAB, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlignAB = 128 / cutlass::sizeof_bits<ElementAB>::value;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;

  // 1x128 activation and 128x128 weight scale blocks, both MN-major (see the top of the file).
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());

  using KernelSchedule = typename Schedules<Op, Sched>::Kernel;
  using EpilogueSchedule = typename Schedules<Op, Sched>::Epilogue;

  // D = alpha * acc with alpha per group (fp8_per_tensor), else D = acc; no source C.
  // CUTLASS's ptr-array LinearCombination reads alpha and beta through
  // Sm90ScalarBroadcastPtrArray, which reports a producer load: the epilogue's producer warp then
  // commits one load stage per epilogue subtile of every tile and the math warps wait for and
  // release each one, with no data behind them. So the formats with alpha = 1 take the plain
  // conversion of the accumulator (an EVT of one node), and fp8_per_tensor multiplies by its
  // group's alpha read in the math warps (Sm90GroupScalar, sm90_group_scalar.cuh): neither loads
  // anything, so the producer warp stays idle. Measured on the H200 against LinearCombination
  // (us, two rounds a row): session 26 (ab/2026-12-02-s26-epi-*, with that call's staged fused
  // store) qwen3-30b bf16 2048 tokens 512.8 / 511.5 vs 519.2 / 518.2, 8192 1298.4 / 1291.5 vs
  // 1306.9 / 1307.7, deepseek-v3 fp8_block128 8192 9082.6 / 9126.9 vs 9274.9 / 9286.7; session 27
  // (ab/2026-12-03-s27-evt-epi) qwen3-30b fp8_per_tensor 2048 368.1 / 367.2 vs 369.4 / 369.3, 8192
  // 953.2 / 948.9 vs 960.0 / 958.4.
  using FusionOp = cute::conditional_t<
      kGroupAlpha,
      cutlass::epilogue::fusion::Sm90EVT<
          cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, ElementD, ElementAcc,
                                                 cutlass::FloatRoundStyle::round_to_nearest>,
          Sm90GroupScalar<ElementAcc>, cutlass::epilogue::fusion::Sm90AccFetch>,
      cutlass::epilogue::fusion::Sm90EVT<
          cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::Identity, ElementD,
                                                 ElementAcc,
                                                 cutlass::FloatRoundStyle::round_to_nearest>,
          cutlass::epilogue::fusion::Sm90AccFetch>>;
  // Epilogue subtile. The bf16 128x256 cooperative tile takes 128x64 subtiles (4 a tile, two
  // 16 KB D stages) instead of the builder's 128x32 (8 a tile, each a TMA store and its
  // synchronisation): the kernel's shared memory grows from 215040 to 232448 bytes, the limit, and
  // keeps 4 mainloop stages. fp8_block128 would drop to 3 stages (233984 bytes), so it and every
  // other tile keep the builder's choice. Measured on the H200 (session 26,
  // ab/2026-12-02-s26-epitile-*, two rounds, us): qwen3-30b bf16 2048 tokens 493.1 / 492.1 vs
  // 498.5 / 496.0, 8192 1267.6 / 1265.9 vs 1272.9 / 1271.2. A/B: -DSERVEKIT_DIAG_EPI_TILE_N=0
  // gives the builder's subtile back.
#ifndef SERVEKIT_DIAG_EPI_TILE_N
#define SERVEKIT_DIAG_EPI_TILE_N 64
#endif
  static constexpr int kEpiTileN = Op == GemmOperand::kBF16 && TileM == 128 && TileN == 256 &&
                                           Sched == GemmSchedule::kCooperative
                                       ? SERVEKIT_DIAG_EPI_TILE_N
                                       : 0;
  // The swap-AB tile's D is column-major, for which the builder picks 128x16 subtiles (18 a
  // 256x144 tile, each a TMA store and its synchronisation); 128x48 makes it 6, and the kernel
  // keeps its 4 mainloop stages (ptxas: 168 registers, 0 spill). Measured on the H200 (session
  // 27, ab/2026-12-03-s27-evt-epi, dynamic bf16 layer, two rounds, us, 128x48 vs 128x16):
  // qwen3-30b 2048 tokens 475.3 / 475.2 vs 481.9 / 482.2, qwen3-235b 2048 1495.3 / 1495.0 vs
  // 1502.5 / 1500.0, gpt-oss-120b 4096 1982.9 / 1985.1 vs 1994.9 / 1997.2. A/B:
  // -DSERVEKIT_DIAG_SWAP_EPI_N=0 gives the builder's subtile back (72 and 144 also divide the
  // tile).
#ifndef SERVEKIT_DIAG_SWAP_EPI_N
#define SERVEKIT_DIAG_SWAP_EPI_N 48
#endif
  static constexpr int kSwapEpiN = SwapAB ? SERVEKIT_DIAG_SWAP_EPI_N : 0;
  static constexpr int kEpiN = SwapAB ? kSwapEpiN : kEpiTileN;
  // Subtile rows: the builder takes 128 for the cooperative schedules, 64 for ping-pong (bf16's
  // ping-pong swap-AB tile; the 64-row tiles keep the builder's choice).
  static constexpr int kEpiM = Sched == GemmSchedule::kPingpong ? 64 : 128;
  using EpilogueTile =
      cute::conditional_t<kEpiN == 0, cutlass::epilogue::collective::EpilogueTileAuto,
                          cute::Shape<cute::Int<kEpiM>, cute::Int<kEpiN == 0 ? 32 : kEpiN>>>;
  using BuiltEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape, EpilogueTile,
      ElementAcc, ElementAcc, void, LayoutD*, kAlignD, ElementD, LayoutD*, kAlignD,
      EpilogueSchedule, FusionOp>::CollectiveOp;
  // The 128x256 cooperative tiles of bf16 and fp8_block128 and bf16's two swap-AB tiles can also
  // run GEMM1's activation in their epilogue (sm90_act_epilogue.cuh, gemm_tile_fuses_activation),
  // chosen per run.
  static constexpr bool kActEpilogue = gemm_tile_fuses_activation(Op, kTile);
  static constexpr int kInterleave = SwapAB ? TileM / 2 : Interleave;
  using CollectiveEpilogue =
      cute::conditional_t<kActEpilogue, ActEpilogue<BuiltEpilogue, SwapAB, kInterleave>,
                          BuiltEpilogue>;

  using StageCount = cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
      sizeof(typename CollectiveEpilogue::SharedStorage))>;
  using MainloopLayoutA =
      cute::conditional_t<kBlockScaled, cute::tuple<LayoutA*, LayoutSFA*>, LayoutA*>;
  using MainloopLayoutB =
      cute::conditional_t<kBlockScaled, cute::tuple<LayoutB*, LayoutSFB*>, LayoutB*>;
  using BuiltMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, MainloopLayoutA, kAlignAB,
      ElementAB, MainloopLayoutB, kAlignAB, ElementAcc, TileShape, ClusterShape, StageCount,
      KernelSchedule>::CollectiveOp;
  // The cooperative fp8_block128 tiles replace CUTLASS's consumer mainloop: 128x256 (the
  // compiled one) promotes in 128-column halves (sm90_blockwise_halves.cuh), 128x128 overlaps
  // each k-tile's promotion with the next k-tile's wgmma (sm90_blockwise_overlap.cuh; kept for
  // A/B runs of the tile width). The ping-pong 64-row tile runs at decode sizes, where reading
  // the weights bounds it, and keeps CUTLASS's mainloop.
  static constexpr bool kOverlapPromotion = kBlockScaled && Sched == GemmSchedule::kCooperative;
  static constexpr bool kHalvesPromotion = kOverlapPromotion && TileN == 256;
  // bf16's producer with one descriptor per operand for the whole run instead of CUTLASS's
  // per-group ones (sm90_flat_tma_mainloop.cuh). On by default for both swap-AB tiles, where it
  // was measured faster; SERVEKIT_DIAG_FLAT_TMA (a build flag) = 0 turns it off, 2 puts it on every
  // bf16 tile, 3 on the ping-pong swap tile only (the default of sessions 37-40).
  // Ping-pong swap (session 37, H200, ab/2026-12-05-s37-flat, dynamic bf16 layer at 2048 tokens,
  // us, flat vs not): qwen3-30b 444.3, 444.2 vs 453.4, 452.5. Every bf16 tile flat on the same
  // lease: qwen3-235b (cooperative swap) 1524.4, 1517.8, 1520.8 vs 1505.2, 1512.7, 1507.8;
  // mixtral-8x7b (128x256) 2528.4 vs 2456.3. Cooperative swap (session 41, H100,
  // ab/2026-12-06-s41-flat-coop, two rounds each, flat vs ping-pong-only): deepseek-v3 2048
  // 9363, 9391 vs 9327, 9357; 4096 12400, 12469 vs 13250, 13292; 8192 15500, 15558 vs 15885,
  // 15928; qwen3-235b 2048 2009, 2012 vs 2031, 2027; gpt-oss-120b 4096 2840, 2835 vs 2964, 2963.
#ifndef SERVEKIT_DIAG_FLAT_TMA
#define SERVEKIT_DIAG_FLAT_TMA 1
#endif
  static constexpr bool kFlatTma =
      Op == GemmOperand::kBF16 &&
      (SERVEKIT_DIAG_FLAT_TMA == 2 || (SERVEKIT_DIAG_FLAT_TMA == 1 && SwapAB) ||
       (SERVEKIT_DIAG_FLAT_TMA == 3 && SwapAB && Sched == GemmSchedule::kPingpong));
  using PlainMainloop =
      cute::conditional_t<kFlatTma, FlatTmaMainloop<BuiltMainloop, !SwapAB>, BuiltMainloop>;
  using CollectiveMainloop = cute::conditional_t<
      kHalvesPromotion, HalvesPromotionMainloop<BuiltMainloop>,
      cute::conditional_t<kOverlapPromotion, OverlappedPromotionMainloop<BuiltMainloop>,
                          PlainMainloop>>;

  // CUTLASS's blockwise scale producer, which the block-scaled mainloops above inherit, copies a
  // tile's scales within their stage only for counts it can split over 32 lanes.
  template <class Mainloop>
  static constexpr bool scale_producer_fits() {
    if constexpr (kBlockScaled) {
      return stock_scale_producer_fits(Mainloop::ScaleMsPerTile) &&
             stock_scale_producer_fits(Mainloop::ScaleNsPerTile);
    } else {
      return true;
    }
  }
  static_assert(scale_producer_fits<BuiltMainloop>(),
                "CUTLASS's blockwise scale producer would copy this tile's scales past their "
                "stage (stock_scale_producer_fits, gemm_tile_config.h)");

  using GemmKernel = PdlKernel<
      cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  using StrideA = typename GemmKernel::InternalStrideA;
  using StrideB = typename GemmKernel::InternalStrideB;
  using StrideD = typename GemmKernel::InternalStrideD;
  using ProblemSize = typename ProblemShape::UnderlyingProblemShape;
};

}  // namespace servekit::cuda::gemm
