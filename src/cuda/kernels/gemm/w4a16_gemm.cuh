// The int4-weight grouped GEMM's runner (make_grouped_gemm_w4a16, grouped_gemm.h) for one token
// tile width: CUTLASS 4.2's ptr-array mixed-input mainloop (sm90_mma_array_tma_gmma_rs_
// warpspecialized_mixed_input.hpp). Both operands arrive by TMA; the consumer warps load the int4
// codes from shared memory into registers, convert each to bf16, multiply it by its group's bf16
// scale and feed the result to wgmma as the register-sourced operand against the bf16 rows in
// shared memory. So the weights cross HBM as 4-bit codes (a quarter of the dequantized bf16 copy
// the dynamic path read before) and the tensor cores see exactly quant.h's dequantized weight
// rounded to bf16.
//
// The narrow operand must be the kernel's A (the ptr-array kernels cannot swap M and N back), so
// each group computes D_gᵀ [N, M_g] = W_g · X_gᵀ with a column-major D, which is D_g [M_g, N]
// row-major: the tile's M is weight rows, its N tokens. The codes are stored in the order the
// consumer threads load them into registers (w4a16_reorder_codes: each thread's codes of a
// k-step adjacent, one 32-bit shared-memory load per 8 codes), the same order for both token
// tiles. The weight scales are [K/G, N] per expert (the collective's scale stride is (1, N): N
// contiguous). Group shapes are read on the device; N, K and G are the same for every group,
// which the collective assumes (it builds its tiled views from the first tile's group).
// GEMM1's gated activation can run in the epilogue (sm90_act_epilogue.cuh, kW4A16Interleave: W13
// interleaved in 8-row gate/up blocks), writing the bf16 intermediate instead of D.
// Included by grouped_gemm_w4a16.cu (64-token tile, the per-run pick) and grouped_gemm_w4a16_n*.cu
// (the other tiles): one heavy instantiation each.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <cutlass/util/mixed_dtype_utils.hpp>

#include "cuda/grouped_gemm.h"
#include "cuda/kernels/gemm/cutlass_setup.cuh"
#include "cuda/kernels/gemm/sm90_act_epilogue.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda::gemm {

using namespace cute;

// The compiled tiles: 128 weight rows x 64, 128 or 256 tokens x 64 K, cooperative (two consumer
// warp groups of 64 weight rows), in clusters of 1 or (128 and 256 tokens) 2 weight tiles that
// share their token tile by TMA multicast.
constexpr GemmTileConfig w4a16_tile(int tile_n, int cluster_m) {
  return {128, tile_n, 64, cluster_m, 1, GemmSchedule::kCooperative, true};
}

using W4BF = cutlass::bfloat16_t;
using W4I4 = cutlass::int4b_t;
using W4Problem = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
// Kernel A: the weights [N, K] K-major; B: the rows [M_g, K] K-major; D: [N, M_g] column-major.
using W4LayoutW = cutlass::layout::RowMajor;
using W4LayoutX = cutlass::layout::ColumnMajor;
using W4LayoutD = cutlass::layout::ColumnMajor;
using W4StrideW = cute::remove_pointer_t<cutlass::detail::TagToStrideA_t<W4LayoutW*>>;
// The reordered codes: each thread's 8 codes of a k-step adjacent (two runs of 4), on the MMA's
// A layout (CUTLASS's compute_memory_reordering_atom); the layout of one [N, K] matrix.
using W4Shuffle = Layout<Shape<_2, _4>, Stride<_4, _1>>;
using W4AtomW =
    decltype(cutlass::compute_memory_reordering_atom<W4BF, Layout<Shape<_1, _1>>, W4Shuffle>());
using W4ReorderedW =
    decltype(cute::tile_to_shape(W4AtomW{}, Layout<Shape<int, int, Int<1>>, W4StrideW>{}));
inline W4ReorderedW w4a16_reordered_layout(int n, int k) {
  return tile_to_shape(W4AtomW{}, make_shape(n, k, Int<1>{}));
}

template <int TileN, int ClusterM>
struct W4A16Kernel {
  static constexpr GemmTileConfig kTile = w4a16_tile(TileN, ClusterM);
  using BF = W4BF;
  using I4 = W4I4;
  using Problem = W4Problem;
  using TileShape = Shape<_128, Int<TileN>, _64>;
  using ClusterShape = Shape<Int<ClusterM>, _1, _1>;
  using LayoutX = W4LayoutX;
  using LayoutD = W4LayoutD;

  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::Identity, BF, float,
                                             cutlass::FloatRoundStyle::round_to_nearest>,
      cutlass::epilogue::fusion::Sm90AccFetch>;
  using BuiltEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD*, 8, BF,
      LayoutD*, 8, cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
  // CUTLASS's epilogue, or per run (a non-null act_out) the fused activation.
  using Epilogue = ActEpilogue<BuiltEpilogue, true, static_cast<int>(kW4A16Interleave)>;
  // A is (int4 codes, bf16 scale): the builder picks the mixed-input mainloop in its
  // convert-and-scale mode; 32 codes = 16 bytes of alignment.
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cute::tuple<I4, BF>, W4ReorderedW*, 32,
      BF, LayoutX*, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Problem, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using StrideA = typename GemmKernel::InternalStrideA;
  using StrideB = typename GemmKernel::InternalStrideB;
  using StrideD = typename GemmKernel::InternalStrideD;
  using StrideS = typename Mainloop::StrideScale;
  using ProblemSize = typename Problem::UnderlyingProblemShape;

  static_assert(!Mainloop::SwapAB, "the int4 weights must be the kernel's A operand");
  static_assert(Mainloop::KernelConversionMode == cutlass::detail::ConversionMode::ConvertAndScale,
                "int4 with bf16 scales, no zero points");
  static_assert(std::is_same_v<StrideA, W4ReorderedW>,
                "the weights' stride is the reordered layout");
};

template <class K>
struct W4A16Arrays {
  typename K::ProblemSize* problem = nullptr;
  const W4I4** a = nullptr;
  const W4BF** b = nullptr;
  const W4BF** s = nullptr;
  W4BF** d = nullptr;
  typename K::StrideA* stride_a = nullptr;
  typename K::StrideB* stride_b = nullptr;
  typename K::StrideD* stride_d = nullptr;
  typename K::StrideS* stride_s = nullptr;
  void** act_out = nullptr;          // fused activation: group's first intermediate row, or null
  const float** act_bias = nullptr;  // group's w13 bias [N] (logical order), or null
};

// One thread per group: M_g from the offsets and group g's pointers; act_out (bf16 [rows, n / 2])
// null for a run without the fused activation.
template <class K>
__global__ void write_w4a16_arguments(W4A16Arrays<K> arr, const int32_t* offsets,
                                      const uint8_t* codes, const W4BF* rows, const W4BF* scales,
                                      W4BF* d, W4BF* act_out, const float* act_bias, int groups,
                                      int n, int k, int group) {
  pdl_wait();  // the offsets come from the plan; the previous GEMM may still read the arrays
  pdl_trigger();
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    const int begin = offsets[g];
    arr.problem[g] = make_shape(n, offsets[g + 1] - begin, k);
    arr.a[g] = reinterpret_cast<const W4I4*>(codes + int64_t{g} * n * (k / 2));
    arr.b[g] = rows + int64_t{begin} * k;
    arr.s[g] = scales + int64_t{g} * (k / group) * n;
    arr.d[g] = d + int64_t{begin} * n;
    arr.act_out[g] = act_out == nullptr ? nullptr : act_out + int64_t{begin} * (n / 2);
    arr.act_bias[g] = act_bias == nullptr ? nullptr : act_bias + int64_t{g} * n;
  }
}

template <int TileN, int ClusterM>
class W4A16Runner final : public GroupedGemm {
  using K = W4A16Kernel<TileN, ClusterM>;
  using BF = W4BF;
  using I4 = W4I4;
  using GemmKernel = typename K::GemmKernel;
  using Gemm = typename K::Gemm;
  using StrideA = typename K::StrideA;
  using StrideB = typename K::StrideB;
  using StrideD = typename K::StrideD;
  using StrideS = typename K::StrideS;
  using ProblemSize = typename K::ProblemSize;

 public:
  W4A16Runner(const GroupedGemmShape& shape, int device) : shape_(shape), device_(device) {
    std::string why;
    SERVEKIT_CHECK(w4a16_gemm_supported(shape.n, shape.k, shape.weight_group, &why),
                   "grouped_gemm w4a16: ", why);
    SERVEKIT_CHECK(
        shape.operand == GemmOperand::kBF16 && shape.num_groups > 0 && !shape.swap_pingpong,
        "grouped_gemm w4a16: needs bf16 rows, at least one group and no ping-pong swap "
        "tile (operand ",
        static_cast<int>(shape.operand), ", groups ", shape.num_groups, ")");
    SERVEKIT_CHECK(!shape.act.enabled || w4a16_fuses_activation_on(shape),
                   "grouped_gemm w4a16: the fused activation needs a gated activation, a bf16 "
                   "intermediate, W13 in blocks of ",
                   kW4A16Interleave, " rows and n % 128 == 0 (n=", shape.n, ", interleave ",
                   shape.act.interleave_rows, ")");
    config_.tile = K::kTile;
    SERVEKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    allocate();
    build_params();
  }
  ~W4A16Runner() override {
    if (block_ != nullptr) cudaFree(block_);
  }

  void run(const GroupedGemmOperands& ops, cudaStream_t stream) const override {
    SERVEKIT_CHECK(ops.group_offsets && ops.a && ops.b && ops.d && ops.b_group_scale,
                   "grouped_gemm w4a16: group_offsets, a, b, b_group_scale and d are required");
    SERVEKIT_CHECK(ops.act_out == nullptr || shape_.act.enabled,
                   "grouped_gemm w4a16: act_out given, but shape.act is disabled");
    SERVEKIT_CHECK(ops.gate == GemmRunGate::kAlways, "grouped_gemm w4a16: no gated runs");
    SERVEKIT_CHECK(ops.b_group_stride == -1,
                   "grouped_gemm w4a16: b_group_stride must be -1 (packed), got ",
                   ops.b_group_stride);
    launch_pdl(write_w4a16_arguments<K>, 1, 256, 0, ops.pdl, stream, arrays_, ops.group_offsets,
               static_cast<const uint8_t*>(ops.b), static_cast<const BF*>(ops.a),
               static_cast<const BF*>(ops.b_group_scale), static_cast<BF*>(ops.d),
               static_cast<BF*>(ops.act_out), ops.act_bias, shape_.num_groups,
               static_cast<int>(shape_.n), static_cast<int>(shape_.k), shape_.weight_group);
    // No PDL: CUTLASS's ptr-array kernels execute no griddepcontrol.wait, so the GEMM starts
    // only once the setup kernel has finished.
    launch_checked<Gemm>(params_, stream, false, "grouped_gemm w4a16");
  }

  const GroupedGemmShape& shape() const override { return shape_; }
  GemmConfig config(int64_t /*rows_hint*/) const override { return config_; }
  bool fuses_activation(int64_t /*rows_hint*/) const override { return shape_.act.enabled; }
  std::string tile_name(int64_t /*rows_hint*/) const override {
    return gemm_tile_name(config_.tile) + " int4 weights";
  }

 private:
  // Every per-group array and the CUTLASS workspace in one allocation; the strides, the same for
  // every group, written once.
  void allocate() {
    const size_t g = static_cast<size_t>(shape_.num_groups);
    BlockLayout block;
    const size_t o_problem = block.reserve(g * sizeof(ProblemSize));
    const size_t o_a = block.reserve(g * sizeof(void*)), o_b = block.reserve(g * sizeof(void*));
    const size_t o_s = block.reserve(g * sizeof(void*)), o_d = block.reserve(g * sizeof(void*));
    const size_t o_sa = block.reserve(g * sizeof(StrideA)),
                 o_sb = block.reserve(g * sizeof(StrideB));
    const size_t o_sd = block.reserve(g * sizeof(StrideD)),
                 o_ss = block.reserve(g * sizeof(StrideS));
    const size_t o_act = block.reserve(g * sizeof(void*)),
                 o_bias = block.reserve(g * sizeof(void*));
    const size_t o_workspace = block.end();
    // The arrays' addresses are all the arguments need to size the workspace.
    char* const null_base = nullptr;
    set_arrays(null_base, o_problem, o_a, o_b, o_s, o_d, o_sa, o_sb, o_sd, o_ss, o_act, o_bias);
    workspace_bytes_ = Gemm::get_workspace_size(make_arguments(0));
    block_ = zeroed_block(o_workspace + workspace_bytes_);
    auto* base = static_cast<char*>(block_);
    set_arrays(base, o_problem, o_a, o_b, o_s, o_d, o_sa, o_sb, o_sd, o_ss, o_act, o_bias);
    workspace_ = base + o_workspace;

    const int n = static_cast<int>(shape_.n), k = static_cast<int>(shape_.k);
    const std::vector<StrideA> sa(g, w4a16_reordered_layout(n, k));
    const std::vector<StrideB> sb(g,
                                  cutlass::make_cute_packed_stride(StrideB{}, make_shape(1, k, 1)));
    const std::vector<StrideD> sd(g,
                                  cutlass::make_cute_packed_stride(StrideD{}, make_shape(n, 1, 1)));
    const std::vector<StrideS> ss(
        g, cutlass::make_cute_packed_stride(StrideS{}, make_shape(n, k / shape_.weight_group, 1)));
    upload(arrays_.stride_a, sa);
    upload(arrays_.stride_b, sb);
    upload(arrays_.stride_d, sd);
    upload(arrays_.stride_s, ss);
  }
  void set_arrays(char* base, size_t o_problem, size_t o_a, size_t o_b, size_t o_s, size_t o_d,
                  size_t o_sa, size_t o_sb, size_t o_sd, size_t o_ss, size_t o_act, size_t o_bias) {
    arrays_.problem = reinterpret_cast<ProblemSize*>(base + o_problem);
    arrays_.a = reinterpret_cast<const I4**>(base + o_a);
    arrays_.b = reinterpret_cast<const BF**>(base + o_b);
    arrays_.s = reinterpret_cast<const BF**>(base + o_s);
    arrays_.d = reinterpret_cast<BF**>(base + o_d);
    arrays_.stride_a = reinterpret_cast<StrideA*>(base + o_sa);
    arrays_.stride_b = reinterpret_cast<StrideB*>(base + o_sb);
    arrays_.stride_d = reinterpret_cast<StrideD*>(base + o_sd);
    arrays_.stride_s = reinterpret_cast<StrideS*>(base + o_ss);
    arrays_.act_out = reinterpret_cast<void**>(base + o_act);
    arrays_.act_bias = reinterpret_cast<const float**>(base + o_bias);
  }
  template <class T>
  static void upload(T* dst, const std::vector<T>& src) {
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice));
  }

  typename GemmKernel::Arguments make_arguments(int max_active_clusters) const {
    typename GemmKernel::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    // Null host shapes: the scheduler reads M_g on the device.
    args.problem_shape = {shape_.num_groups, arrays_.problem, nullptr};
    args.mainloop = {arrays_.a, arrays_.stride_a, arrays_.b,          arrays_.stride_b,
                     arrays_.s, arrays_.stride_s, shape_.weight_group};
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = nullptr;
    args.epilogue.ptr_D = arrays_.d;
    args.epilogue.dD = arrays_.stride_d;
    // Null arrays when the shape asks for no fusion: every tile takes CUTLASS's epilogue.
    ActEpilogueParams& act = args.epilogue.act;
    act.format = ActFormat::kBF16;
    act.activation = shape_.act.activation;
    act.cols = static_cast<int>(shape_.n / 2);
    act.ptr_out = shape_.act.enabled ? arrays_.act_out : nullptr;
    act.ptr_bias = arrays_.act_bias;
    args.hw_info.device_id = device_;
    args.hw_info.sm_count = sm_count_;
    args.hw_info.max_active_clusters = max_active_clusters;
    return args;
  }

  // Host-side setup done once: shared-memory opt-in, occupancy of the cluster launch, CUTLASS's
  // checks, Params. With device-only problem shapes CUTLASS's can_implement checks nothing per
  // group (w4a16_gemm_supported in the constructor holds its rules for N, K and the group).
  void build_params() {
    const int smem = opt_in_shared_memory<GemmKernel>();
    params_ =
        checked_params<Gemm, GemmKernel>(make_arguments(max_active_clusters<GemmKernel>(
                                             ClusterM, 1, smem, "grouped_gemm w4a16", device_)),
                                         workspace_, "grouped_gemm w4a16", shape_.n, shape_.k);
  }

  GroupedGemmShape shape_;
  int device_ = 0;
  int sm_count_ = 0;
  GemmConfig config_{};
  void* block_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  W4A16Arrays<K> arrays_{};
  typename GemmKernel::Params params_{};
};

// The compiled runners, one per translation unit: tokens x cluster 64x1 (grouped_gemm_w4a16.cu),
// 128x1 (_n128.cu), 256x1 (_n256.cu), 128x2 (_n128c2.cu), 256x2 (_n256c2.cu).
std::unique_ptr<GroupedGemm> make_w4a16_runner_n64(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_w4a16_runner_n128(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_w4a16_runner_n256(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_w4a16_runner_n128c2(const GroupedGemmShape& shape, int device);
std::unique_ptr<GroupedGemm> make_w4a16_runner_n256c2(const GroupedGemmShape& shape, int device);

}  // namespace servekit::cuda::gemm
