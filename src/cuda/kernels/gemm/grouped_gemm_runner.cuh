// Host runner of one Sm90GroupedGemm instantiation: allocates the per-group argument arrays and
// the CUTLASS workspace once, builds the kernel Params once (they only hold pointers to those
// arrays), and per run enqueues a one-block setup kernel that fills the arrays from the device
// group offsets followed by the persistent GEMM kernel. Included by exactly one .cu per format.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime.h>

#include <cutlass/util/packed_stride.hpp>

#include "cuda/grouped_gemm.h"
#include "cuda/kernels/gemm/cutlass_setup.cuh"
#include "cuda/kernels/gemm/sm90_grouped_gemm.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda::gemm {

// Device pointers into the runner's argument block.
template <class K>
struct GroupArgumentArrays {
  typename K::ProblemSize* problem_sizes = nullptr;
  const typename K::ElementAB** ptr_a = nullptr;
  const typename K::ElementAB** ptr_b = nullptr;
  typename K::ElementD** ptr_d = nullptr;
  typename K::StrideA* stride_a = nullptr;
  typename K::StrideB* stride_b = nullptr;
  typename K::StrideD* stride_d = nullptr;
  float* alpha = nullptr;             // fp8_per_tensor
  const float** alpha_ptr = nullptr;  // fp8_per_tensor: alpha_ptr[g] = &alpha[g]
  const float** ptr_sfa = nullptr;    // fp8_block128
  const float** ptr_sfb = nullptr;    // fp8_block128
  typename K::LayoutSFA* layout_sfa = nullptr;
  typename K::LayoutSFB* layout_sfb = nullptr;
  void** act_out = nullptr;          // fused activation (K::kActEpilogue): group's first row
  float** act_scale = nullptr;       // kFP8Block128: group's scale block
  const float** act_bias = nullptr;  // group's w13 bias row, or null
};

// Whether a run gated by ops.gate (GemmRunGate) does its work: with a gate, the CTA counts the
// token tiles the 2x1 swap tile and its pair would run over every group (gemm_tile_config.h,
// swap_gate_tiles / pair_gate_tiles) and applies pair_gate_pays. One CTA; every thread returns
// the same answer. Integer sums, so the 2x1 run and the pair run of a kSwapOrPair GEMM, reading
// the same offsets, always agree.
__device__ inline bool gated_run_works(const GroupedGemmOperands& ops, GemmOperand op,
                                       int num_groups) {
  if (ops.gate == GemmRunGate::kAlways) return true;
  __shared__ unsigned long long tiles[2];  // 2x1 swap tile, pair
  if (threadIdx.x < 2) tiles[threadIdx.x] = 0;
  __syncthreads();
  unsigned long long swap = 0, pair = 0;
  for (int g = threadIdx.x; g < num_groups; g += blockDim.x) {
    const int64_t m = ops.group_offsets[g + 1] - ops.group_offsets[g];
    swap += static_cast<unsigned long long>(swap_gate_tiles(op, m));
    pair += static_cast<unsigned long long>(pair_gate_tiles(op, m));
  }
  atomicAdd(&tiles[0], swap);
  atomicAdd(&tiles[1], pair);
  __syncthreads();
  const bool pays = pair_gate_pays(static_cast<int64_t>(tiles[1]), static_cast<int64_t>(tiles[0]));
  return pays == (ops.gate == GemmRunGate::kIfPairPays);
}

// One thread per group: M_g from the offsets (0 for every group when a gate says this run does
// no work: gated_run_works), then the pointers of group g. act_bytes: bytes of one
// fused-activation output element (1 for e4m3, 2 for bf16).
template <class K>
__global__ void write_group_arguments(GroupArgumentArrays<K> args, GroupedGemmOperands ops,
                                      int num_groups, int n, int k, int act_bytes) {
  pdl_wait();  // the offsets come from the plan; the previous GEMM may still read the arrays
  pdl_trigger();
  const bool works = gated_run_works(ops, K::kOperand, num_groups);
  for (int g = threadIdx.x; g < num_groups; g += blockDim.x) {
    const int begin = ops.group_offsets[g];
    const int m = works ? ops.group_offsets[g + 1] - begin : 0;
    const auto* rows = static_cast<const typename K::ElementAB*>(ops.a) + int64_t{begin} * k;
    const auto* weights = static_cast<const typename K::ElementAB*>(ops.b) +
                          g * b_group_elements(ops.b_group_stride, n, k);
    if constexpr (K::kSwapAB) {  // D_gᵀ = B_g · A_gᵀ: weights first, rows as N
      args.problem_sizes[g] = cute::make_shape(n, m, k);
      args.ptr_a[g] = weights;
      args.ptr_b[g] = rows;
    } else {
      args.problem_sizes[g] = cute::make_shape(m, n, k);
      args.ptr_a[g] = rows;
      args.ptr_b[g] = weights;
    }
    if constexpr (K::kActEpilogue) {
      const int cols = n / 2;  // I
      if (ops.act_out != nullptr) {
        args.act_out[g] = static_cast<char*>(ops.act_out) + int64_t{begin} * cols * act_bytes;
        args.act_scale[g] = ops.act_out_scale == nullptr
                                ? nullptr
                                : ops.act_out_scale + int64_t{begin} * (cols / 128);
        args.act_bias[g] = ops.act_bias == nullptr ? nullptr : ops.act_bias + int64_t{g} * n;
      } else {
        args.act_out[g] = nullptr;
      }
    }
    args.ptr_d[g] = static_cast<typename K::ElementD*>(ops.d) + int64_t{begin} * n;
    if constexpr (K::kGroupAlpha) args.alpha[g] = ops.a_scale[0] * ops.b_scale[g];
    if constexpr (K::kBlockScaled) {
      const int k_blocks = k / 128, n_blocks = (n + 127) / 128;
      args.ptr_sfa[g] = ops.a_block_scale + int64_t{begin} * k_blocks;
      args.ptr_sfb[g] = ops.b_block_scale + int64_t{g} * k_blocks * n_blocks;
      args.layout_sfa[g] = K::ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(m, n, k, 1));
      args.layout_sfb[g] = K::ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(m, n, k, 1));
    }
  }
}

template <class K>
class GroupedGemmRunner final : public GroupedGemm {
  using GemmKernel = typename K::GemmKernel;
  using Gemm = typename K::Gemm;
  static_assert(!K::kBlockScaled ||
                    K::kTile.tile_n / 128 * K::kTile.cluster_n - 1 <= kBlockScaleTailFloats,
                "grouped_gemm: this block-scaled tile can read more weight scales past the last "
                "group's than kBlockScaleTailFloats (grouped_gemm.h)");

 public:
  GroupedGemmRunner(const GroupedGemmShape& shape, int device) : shape_(shape), device_(device) {
    const GemmDesc desc{shape.operand, shape.n, shape.k, shape.num_groups,
                        shape.num_groups > 0 ? shape.capacity_rows / shape.num_groups : 0};
    SERVEKIT_CHECK(shape.operand == K::kOperand, "grouped_gemm: operand mismatch");
    SERVEKIT_CHECK(gemm_shape_supported(desc), "grouped_gemm: unsupported shape n=", shape.n,
                   " k=", shape.k, " groups=", shape.num_groups, ": need n % ",
                   gemm_n_multiple(shape.operand), " == 0 and k % ", gemm_k_multiple(shape.operand),
                   " == 0, all positive");
    SERVEKIT_CHECK(shape.n < (int64_t{1} << 31) && shape.k < (int64_t{1} << 31),
                   "grouped_gemm: n=", shape.n, " k=", shape.k, " exceed the int32 problem shape");
    config_ = choose_gemm_config(desc, K::kTile);
    if (shape.act.enabled) {
      const bool fp8 = shape.operand == GemmOperand::kFP8Block128;
      SERVEKIT_CHECK(activation_is_gated(shape.act.activation) && shape.n % 256 == 0 &&
                         (fp8 ? shape.act.format == ActFormat::kFP8Block128
                              : shape.operand == GemmOperand::kBF16 &&
                                    (shape.act.format == ActFormat::kBF16 ||
                                     shape.act.format == ActFormat::kFP8Block128AsBF16)),
                     "grouped_gemm: the fused activation needs a gated activation, n % 256 == 0 "
                     "(n=",
                     shape.n, ") and an output format matching the operand");
      SERVEKIT_CHECK(shape.act.interleave_rows == 128 ||
                         (shape.act.interleave_rows == 64 && shape.operand == GemmOperand::kBF16),
                     "grouped_gemm: the fused activation's W13 interleave is 128 rows, or 64 with "
                     "bf16; got ",
                     shape.act.interleave_rows);
    }
    SERVEKIT_CUDA_CHECK(
        cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    allocate_arguments();
    build_params();
  }

  ~GroupedGemmRunner() override {
    if (block_ != nullptr) cudaFree(block_);
  }

  void run(const GroupedGemmOperands& ops, cudaStream_t stream) const override {
    SERVEKIT_CHECK(ops.group_offsets && ops.a && ops.b && ops.d,
                   "grouped_gemm: group_offsets, a, b and d are required");
    SERVEKIT_CHECK(ops.act_out == nullptr || fuses_activation(),
                   "grouped_gemm: act_out given, but this GEMM has no fused activation "
                   "(shape.act disabled, or a tile without it)");
    SERVEKIT_CHECK(ops.act_out == nullptr || shape_.act.format != ActFormat::kFP8Block128 ||
                       ops.act_out_scale != nullptr,
                   "grouped_gemm: the fused kFP8Block128 activation needs act_out_scale");
    SERVEKIT_CHECK(
        ops.b_group_stride == -1 || ops.b_group_stride == 0 ||
            (ops.b_group_stride >= shape_.n * shape_.k && ops.b_group_stride % shape_.k == 0),
        "grouped_gemm: b_group_stride=", ops.b_group_stride,
        " must be -1 (packed), 0 (shared) or a multiple of k = ", shape_.k,
        " of at least n * k = ", shape_.n * shape_.k);
    SERVEKIT_CHECK(!K::kGroupAlpha || (ops.a_scale && ops.b_scale),
                   "grouped_gemm: fp8_per_tensor needs a_scale and b_scale");
    SERVEKIT_CHECK(!K::kBlockScaled || (ops.a_block_scale && ops.b_block_scale),
                   "grouped_gemm: fp8_block128 needs a_block_scale and b_block_scale");
    SERVEKIT_CHECK(ops.gate == GemmRunGate::kAlways || has_swap_pair_tile(shape_.operand),
                   "grouped_gemm: a gated run (GemmRunGate) needs a format with the pair swap "
                   "tile (bf16)");
    launch_pdl(write_group_arguments<K>, 1, 256, 0, ops.pdl, stream, arrays_, ops,
               shape_.num_groups, static_cast<int>(shape_.n), static_cast<int>(shape_.k),
               static_cast<int>(act_element_bytes(shape_.act.format)));
    if constexpr (kFlatTma) {
      launch_checked<Gemm>(flat_params(ops), stream, ops.pdl, "grouped_gemm");
    } else {
      launch_checked<Gemm>(params_, stream, ops.pdl, "grouped_gemm");
    }
  }

  const GroupedGemmShape& shape() const override { return shape_; }
  GemmConfig config(int64_t /*rows_hint*/) const override { return config_; }
  // A tile fuses only on the interleave it is compiled for (K::kInterleave; a swap-AB tile's is
  // half its weight rows), and a swap-AB tile bf16 intermediates only (sm90_act_epilogue.cuh);
  // otherwise the pass runs.
  bool fuses_activation(int64_t /*rows_hint*/ = 0) const override {
    return K::kActEpilogue && shape_.act.enabled && shape_.act.interleave_rows == K::kInterleave &&
           (!K::kSwapAB || shape_.act.format == ActFormat::kBF16);
  }

 private:
  static constexpr bool kFlatTma = K::kFlatTma;

  // The flat mainloop's descriptors describe the operands themselves (sm90_flat_tma_mainloop.cuh),
  // so the Params are rebuilt when a run's pointers or B's group stride differ from the last
  // run's (in the MoE layer they never do).
  typename GemmKernel::Params flat_params(const GroupedGemmOperands& ops) const {
    std::lock_guard<std::mutex> lock(flat_mutex_);
    // run() requires a non-null A, so a null flat_a_ means nothing is built yet.
    if (flat_a_ != nullptr && ops.a == flat_a_ && ops.b == flat_b_ &&
        ops.b_group_stride == flat_stride_)
      return flat_params_;
    auto args = make_arguments(max_active_clusters_);
    const int64_t n = shape_.n, k = shape_.k, g = shape_.num_groups;
    const int64_t group_rows = b_group_elements(ops.b_group_stride, n, k) / k;
    auto& m = args.mainloop;
    m.rows = ops.a;
    m.rows_capacity = shape_.capacity_rows;
    m.weights = ops.b;
    m.weight_group_rows = group_rows;
    m.weight_rows = (g - 1) * group_rows + n;
    m.k = k;
    m.group_offsets = ops.group_offsets;
    flat_params_ = GemmKernel::to_underlying_arguments(args, workspace_);
    flat_a_ = ops.a;
    flat_b_ = ops.b;
    flat_stride_ = ops.b_group_stride;
    return flat_params_;
  }

  // Carves every per-group array and the CUTLASS workspace out of one allocation.
  void allocate_arguments() {
    const size_t g = static_cast<size_t>(shape_.num_groups);
    BlockLayout block;
    const size_t o_problem = block.reserve(g * sizeof(typename K::ProblemSize));
    const size_t o_a = block.reserve(g * sizeof(void*));
    const size_t o_b = block.reserve(g * sizeof(void*));
    const size_t o_d = block.reserve(g * sizeof(void*));
    const size_t o_sa = block.reserve(g * sizeof(typename K::StrideA));
    const size_t o_sb = block.reserve(g * sizeof(typename K::StrideB));
    const size_t o_sd = block.reserve(g * sizeof(typename K::StrideD));
    const size_t o_alpha = block.reserve(g * sizeof(float));
    const size_t o_alpha_ptr = block.reserve(g * sizeof(void*));
    const size_t o_sfa = block.reserve(g * sizeof(void*));
    const size_t o_sfb = block.reserve(g * sizeof(void*));
    const size_t o_lsfa = block.reserve(g * sizeof(typename K::LayoutSFA));
    const size_t o_lsfb = block.reserve(g * sizeof(typename K::LayoutSFB));
    const size_t o_act_out = block.reserve(g * sizeof(void*));
    const size_t o_act_scale = block.reserve(g * sizeof(void*));
    const size_t o_act_bias = block.reserve(g * sizeof(void*));
    const size_t o_workspace = block.end();

    workspace_bytes_ = Gemm::get_workspace_size(make_arguments(0));
    block_ = zeroed_block(o_workspace + workspace_bytes_);
    auto* base = static_cast<char*>(block_);
    arrays_.problem_sizes = reinterpret_cast<typename K::ProblemSize*>(base + o_problem);
    arrays_.ptr_a = reinterpret_cast<const typename K::ElementAB**>(base + o_a);
    arrays_.ptr_b = reinterpret_cast<const typename K::ElementAB**>(base + o_b);
    arrays_.ptr_d = reinterpret_cast<typename K::ElementD**>(base + o_d);
    arrays_.stride_a = reinterpret_cast<typename K::StrideA*>(base + o_sa);
    arrays_.stride_b = reinterpret_cast<typename K::StrideB*>(base + o_sb);
    arrays_.stride_d = reinterpret_cast<typename K::StrideD*>(base + o_sd);
    arrays_.alpha = reinterpret_cast<float*>(base + o_alpha);
    arrays_.alpha_ptr = reinterpret_cast<const float**>(base + o_alpha_ptr);
    arrays_.ptr_sfa = reinterpret_cast<const float**>(base + o_sfa);
    arrays_.ptr_sfb = reinterpret_cast<const float**>(base + o_sfb);
    arrays_.layout_sfa = reinterpret_cast<typename K::LayoutSFA*>(base + o_lsfa);
    arrays_.layout_sfb = reinterpret_cast<typename K::LayoutSFB*>(base + o_lsfb);
    arrays_.act_out = reinterpret_cast<void**>(base + o_act_out);
    arrays_.act_scale = reinterpret_cast<float**>(base + o_act_scale);
    arrays_.act_bias = reinterpret_cast<const float**>(base + o_act_bias);
    workspace_ = base + o_workspace;

    // Strides do not depend on M (row-major A and D, K-major B): written once. Swapped, A is the
    // weights [N, K], B the rows (K-major) and D_gᵀ column-major with leading dimension N.
    const int n = static_cast<int>(shape_.n), k = static_cast<int>(shape_.k);
    std::vector<typename K::StrideA> sa(
        g, cutlass::make_cute_packed_stride(typename K::StrideA{}, cute::make_shape(1, k, 1)));
    std::vector<typename K::StrideB> sb(
        g, cutlass::make_cute_packed_stride(typename K::StrideB{}, cute::make_shape(n, k, 1)));
    std::vector<typename K::StrideD> sd(
        g,
        K::kSwapAB
            ? cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(n, 1, 1))
            : cutlass::make_cute_packed_stride(typename K::StrideD{}, cute::make_shape(1, n, 1)));
    std::vector<const float*> alpha_ptr(g);
    for (size_t i = 0; i < g; ++i) alpha_ptr[i] = arrays_.alpha + i;
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(arrays_.stride_a, sa.data(), g * sizeof(sa[0]), cudaMemcpyHostToDevice));
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(arrays_.stride_b, sb.data(), g * sizeof(sb[0]), cudaMemcpyHostToDevice));
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(arrays_.stride_d, sd.data(), g * sizeof(sd[0]), cudaMemcpyHostToDevice));
    SERVEKIT_CUDA_CHECK(
        cudaMemcpy(arrays_.alpha_ptr, alpha_ptr.data(), g * sizeof(void*), cudaMemcpyHostToDevice));
  }

  typename GemmKernel::Arguments make_arguments(int max_active_clusters) const {
    typename GemmKernel::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    // nullptr host problem shapes: the scheduler reads M on the device and launches one
    // persistent CTA per SM.
    args.problem_shape = {shape_.num_groups, arrays_.problem_sizes, nullptr};
    if constexpr (K::kBlockScaled) {
      args.mainloop = {arrays_.ptr_a,   arrays_.stride_a,   arrays_.ptr_b,   arrays_.stride_b,
                       arrays_.ptr_sfa, arrays_.layout_sfa, arrays_.ptr_sfb, arrays_.layout_sfb};
    } else {
      args.mainloop = {arrays_.ptr_a, arrays_.stride_a, arrays_.ptr_b, arrays_.stride_b};
    }
    if constexpr (K::kGroupAlpha) {  // EVT (scalar, acc) -> multiply: the scalar leaf's arguments
      args.epilogue.thread.op_0.ptr_array = arrays_.alpha_ptr;
    }
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = nullptr;
    args.epilogue.ptr_D = arrays_.ptr_d;
    args.epilogue.dD = arrays_.stride_d;
    if constexpr (K::kActEpilogue) {
      // Null arrays when the shape asks for no fusion: every tile takes CUTLASS's epilogue.
      gemm::ActEpilogueParams& act = args.epilogue.act;
      act.format = shape_.act.format;
      act.activation = shape_.act.activation;
      act.cols = static_cast<int>(shape_.n / 2);
      act.ptr_out = fuses_activation() ? arrays_.act_out : nullptr;
      act.ptr_scale = arrays_.act_scale;
      act.ptr_bias = arrays_.act_bias;
    }
    args.hw_info.device_id = device_;
    args.hw_info.sm_count = sm_count_;
    args.hw_info.max_active_clusters = max_active_clusters;
    using RasterOrder = typename GemmKernel::TileScheduler::RasterOrderOptions;
    args.scheduler.raster_order =
        config_.raster == GemmRaster::kAlongM ? RasterOrder::AlongM : RasterOrder::AlongN;
    args.scheduler.max_swizzle_size = config_.max_swizzle;
    return args;
  }

  // Host-side setup done once: shared-memory opt-in, occupancy of the cluster launch, Params.
  void build_params() {
    const int smem = opt_in_shared_memory<GemmKernel>();
    const int max_active_clusters = gemm::max_active_clusters<GemmKernel>(
        K::kTile.cluster_m, K::kTile.cluster_n, smem, "grouped_gemm", device_);
    max_active_clusters_ = max_active_clusters;
    params_ = checked_params<Gemm, GemmKernel>(make_arguments(max_active_clusters), workspace_,
                                               "grouped_gemm", shape_.n, shape_.k);
  }

  GroupedGemmShape shape_;
  int device_ = 0;
  int sm_count_ = 0;
  GemmConfig config_{};
  void* block_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  GroupArgumentArrays<K> arrays_{};
  typename GemmKernel::Params params_{};
  int max_active_clusters_ = 0;
  // The flat mainloop's Params of the last run's operands (flat_params).
  mutable std::mutex flat_mutex_;
  mutable typename GemmKernel::Params flat_params_{};
  mutable const void* flat_a_ = nullptr;
  mutable const void* flat_b_ = nullptr;
  mutable int64_t flat_stride_ = -1;
};

template <class K>
std::unique_ptr<GroupedGemm> make_runner(const GroupedGemmShape& shape, int device) {
  return std::make_unique<GroupedGemmRunner<K>>(shape, device);
}

// The runner of format Op's compiled tile (kind kLarge), its 64-row tile (kSmall,
// small_m_tile_config), its swap-AB tile (kSwap, swap_ab_tile_config) or that tile's pair
// (kSwapPair, swap_pair_tile_config); each grouped_gemm_<format>[_small_m|_swap|_swap_pair].cu
// instantiates one.
template <GemmOperand Op, GemmTileKind kKind>
std::unique_ptr<GroupedGemm> make_tile_runner(const GroupedGemmShape& shape, int device) {
  constexpr GemmTileConfig t = kKind == GemmTileKind::kSmall      ? small_m_tile_config(Op)
                               : kKind == GemmTileKind::kSwap     ? swap_ab_tile_config(Op)
                               : kKind == GemmTileKind::kSwapPair ? swap_pair_tile_config(Op)
                                                                  : compiled_tile_config(Op);
  static_assert(kKind != GemmTileKind::kSmall || has_small_m_tile(Op),
                "this format has no 64-row tile");
  static_assert(kKind != GemmTileKind::kSwap || has_swap_ab_tile(Op),
                "this format has no swap-AB tile");
  static_assert(kKind != GemmTileKind::kSwapPair || has_swap_pair_tile(Op),
                "this format has no pair swap-AB tile");
  return make_runner<Sm90GroupedGemm<Op, t.tile_m, t.tile_n, t.tile_k, t.cluster_m, t.cluster_n,
                                     t.schedule, t.swap_ab>>(shape, device);
}

// The runner of bf16's ping-pong swap-AB tile with k-steps of TileK (swap_pp_tile_config: 64 or
// 128); grouped_gemm_bf16_swap_pp[_k128].cu instantiate one each.
template <int TileK>
std::unique_ptr<GroupedGemm> make_swap_pp_runner(const GroupedGemmShape& shape, int device) {
  static_assert(TileK == 64 || TileK == 128, "the ping-pong swap tile has k-steps of 64 or 128");
  constexpr GemmTileConfig t = swap_pp_tile_config(GemmOperand::kBF16, TileK);
  return make_runner<Sm90GroupedGemm<GemmOperand::kBF16, t.tile_m, t.tile_n, t.tile_k, t.cluster_m,
                                     t.cluster_n, t.schedule, t.swap_ab>>(shape, device);
}

}  // namespace servekit::cuda::gemm
