// Probe (session 49, compile only): does CUTLASS 4.2's sm90 ptr-array blockwise FP8 mainloop take a
// swap-AB fp8_block128 tile: weights along M (A = W [N_out, K], 128x128 scale blocks), tokens
// along N (B = x [tokens, K] K-major, 1x128 scales: SFB is then the layout our activation scales
// already have, [K/128, rows] per group), D = (x W^T)^T column-major?
// Build: nvcc -DTN=144 -isystem=.deps/cutlass/include -isystem=.deps/cutlass/tools/util/include
//   -O3 --generate-code=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -std=c++17
//   -Xptxas -v bench/tools/fp8_swap_probe.cu -o /tmp/fp8_swap_probe   (~2 min here)
// Session 49: 128x144x128, 2x1 cluster, cooperative: 168 registers, no spill, 6 stages, 224256
// bytes of shared memory; ScaleMsPerTile 1, ScaleNsPerTile 144. Running it prints those and
// exits 1 (can_implement of empty arguments); it launches nothing.
// Session 50: compiling is not enough. That mainloop's scale producer splits the tile's 144
// token scales over 32 lanes as 5 x 32, so lanes 16-31 write shared offsets 144-159, the next
// stage's first 16 scales (docs/upstream-cutlass.md, report 3). The swap-AB fp8 tile of
// bench/runs/s50-fp8-swap.patch (grouped_gemm_fp8_block128_swap.cu) replaces that producer.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#ifndef TN
#define TN 144
#endif
using namespace cute;
using FP8 = cutlass::float_e4m3_t;
using BF = cutlass::bfloat16_t;
using ProblemShape = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
using TileShape = Shape<_128, Int<TN>, _128>;
using ClusterShape = Shape<_2, _1, _1>;
using LA = cutlass::layout::RowMajor;     // weights [M=N_out, K]
using LB = cutlass::layout::ColumnMajor;  // tokens [N, K], K-major
using LD = cutlass::layout::ColumnMajor;  // D^T
using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<128, 1, 128>;
using LSFA = decltype(ScaleConfig::deduce_layoutSFA());
using LSFB = decltype(ScaleConfig::deduce_layoutSFB());
using Fusion = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::Identity, BF, float,
                                           cutlass::FloatRoundStyle::round_to_nearest>,
    cutlass::epilogue::fusion::Sm90AccFetch>;
using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LD*, 8, BF, LD*, 8,
    cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
using Main = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, FP8, cute::tuple<LA*, LSFA*>, 16, FP8,
    cute::tuple<LB*, LSFB*>, 16, float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename Epi::SharedStorage))>,
    cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, Main, Epi>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
int main(int argc, char**) {
  printf("stages %d ScaleMsPerTile %d ScaleNsPerTile %d smem %zu\n",
         int(Main::DispatchPolicy::Stages), int(Main::ScaleMsPerTile), int(Main::ScaleNsPerTile),
         sizeof(typename Kernel::SharedStorage));
  typename Gemm::Arguments args{};
  Gemm g;
  if (argc > 5) (void)g.run();
  return g.can_implement(args) == cutlass::Status::kSuccess ? 0 : 1;
}
