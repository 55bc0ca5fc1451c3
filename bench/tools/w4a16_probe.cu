// Probe for docs/perf-notes.md (forty-fifth pass): would CUTLASS 4.2's sm90 ptr-array
// mixed-input grouped GEMM carry the dynamic path's 4-bit formats? Today that path runs int4
// weights dequantized to bf16 at load (four times the bytes and the memory). The kernel here
// reads int4 weights (two's complement, low nibble first, [N, K] K-major) with one bf16 scale
// per 128 (or 64) K elements, converts them in registers and runs wgmma against bf16 rows; the
// same tile on bf16 weights is the comparison. One configuration per build (CFG):
//   0 int4 cooperative 128x64x64          3 int4 ping-pong 64x64x64 (reordered)
//   1 int4 cooperative 128x64x64 reordered 4 bf16 cooperative 128x64x64
//   2 int4 cooperative 128x128x64 reordered 5 bf16 cooperative 128x128x64
//   6 int4 cooperative 128x256x64 reordered (session 45's Next: half the conversions per FLOP
//     of the 128x128 tile where experts hold 256+ rows)
// The weights are the kernel's A (the narrow operand must be A in the ptr-array kernels: they
// cannot swap M and N back), so each group computes D_gᵀ [N, M_g] = W_g · X_gᵀ, written
// column-major, i.e. D_g [M_g, N] row-major as the layer wants it. The scales are [K/G, N] per
// expert (N contiguous: the collective's scale stride is (1, N)), the transpose of
// QuantizedMatrix's [N, K/G]. "Reordered" stores each expert's codes in the order the collective
// loads them into registers (cutlass::reorder_tensor), a one-off step at weight load.
// Output: first a check of every configuration against a plain device reference (groups of 0 to
// 511 rows, G = 64 and 128 where the tile's K allows), then the MoE shapes (qwen3-235b-a22b's and
// kimi-k2's GEMM1 and GEMM2, 128 / 384 experts) at 256-4096 tokens of top-8 rows spread
// multinomially over the experts: µs (best of 5 after a warm-up; the weights are 1.2-22 GB, far
// past the L2), the weight bytes' TB/s and TFLOP/s.
// Build and run on the device (~1-2 min a configuration; build them in parallel):
//   nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I.deps/cutlass/include \
//     -I.deps/cutlass/tools/util/include -DCFG=1 -o w4a16_1 bench/tools/w4a16_probe.cu
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/util/device_memory.h>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/mixed_dtype_utils.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "probe_util.cuh"

#ifndef CFG
#define CFG 1
#endif

using namespace cute;
using Problem = cutlass::gemm::GroupProblemShape<Shape<int, int, int>>;
using BF = cutlass::bfloat16_t;
using I4 = cutlass::int4b_t;

constexpr bool kInt4 = CFG <= 3 || CFG == 6;
constexpr bool kReorder = (CFG >= 1 && CFG <= 3) || CFG == 6;
constexpr bool kCoop = CFG != 3;
constexpr int kTileM = CFG == 3 ? 64 : 128;
constexpr int kTileN = CFG == 6 ? 256 : (CFG == 2 || CFG == 5) ? 128 : 64;
constexpr const char* kName[] = {
    "int4 coop 128x64x64",        "int4 coop 128x64x64 reordered", "int4 coop 128x128x64 reordered",
    "int4 pp 64x64x64 reordered", "bf16 coop 128x64x64",           "bf16 coop 128x128x64",
    "int4 coop 128x256x64 reordered"};

using TileMNK = Shape<Int<kTileM>, Int<kTileN>, _64>;
using Cluster = Shape<_1, _1, _1>;
using KSched = std::conditional_t<kCoop, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
                                  cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>;
using ESched = std::conditional_t<kCoop, cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
                                  cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;
// Kernel A: weights [N, K] K-major; B: rows [M_g, K] K-major; D: [N, M_g] column-major.
using LayoutW = cutlass::layout::RowMajor;
using LayoutX = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::ColumnMajor;
using StrideW = cute::remove_pointer_t<cutlass::detail::TagToStrideA_t<LayoutW*>>;
// Each thread's 8 codes of a k-step adjacent in memory (two 4-value runs), for one 32-bit load.
using Shuffle = Layout<Shape<_2, _4>, Stride<_4, _1>>;
using AtomW =
    decltype(cutlass::compute_memory_reordering_atom<BF, Layout<Shape<_1, _1>>, Shuffle>());
using ReorderedW =
    decltype(cute::tile_to_shape(AtomW{}, Layout<Shape<int, int, Int<1>>, StrideW>{}));
using MainLayoutW = std::conditional_t<kReorder, ReorderedW*, LayoutW*>;

using Fusion = cutlass::epilogue::fusion::Sm90EVT<
    cutlass::epilogue::fusion::Sm90Compute<cutlass::epilogue::thread::Identity, BF, float,
                                           cutlass::FloatRoundStyle::round_to_nearest>,
    cutlass::epilogue::fusion::Sm90AccFetch>;
using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileMNK, Cluster,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD*, 8, BF, LayoutD*,
    8, ESched, Fusion>::CollectiveOp;
using ElementW = std::conditional_t<kInt4, cute::tuple<I4, BF>, BF>;
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementW,
    std::conditional_t<kInt4, MainLayoutW, LayoutW*>, kInt4 ? 32 : 8, BF, LayoutX*, 8, float,
    TileMNK, Cluster,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename Epilogue::SharedStorage))>,
    KSched>::CollectiveOp;

template <class T, class = void>
struct ScaleStrideOf {
  using type = int;  // bf16 weights: no scales
};
template <class T>
struct ScaleStrideOf<T, std::void_t<typename T::StrideScale>> {
  using type = typename T::StrideScale;
};

// Deterministic fill: codes uniform bytes, scales and rows small bf16 values.
__device__ inline uint32_t mix(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x);
}
__global__ void fill_bytes(uint8_t* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<uint8_t>(mix(i, seed));
}
__global__ void fill_bf16(BF* p, int64_t n, uint32_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = BF(lo + (hi - lo) * (mix(i, seed) & 0xFFFF) / 65535.0f);
}

// out[m, n] = sum_k x[m, k] w[n, k], the int4 weight as bf16(code * scale) (the collective
// converts and scales in bf16).
__global__ void reference(const BF* x, const void* w, const BF* s_kn, float* out, int rows, int n,
                          int k, int g) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c >= n || r >= rows) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) {
    float wv;
    if constexpr (kInt4) {
      const uint8_t byte = static_cast<const uint8_t*>(w)[(int64_t{c} * k + i) / 2];
      int q = (i & 1) ? byte >> 4 : byte & 15;
      q -= (q & 8) << 1;
      wv = float(BF(float(q) * float(s_kn[int64_t{i / g} * n + c])));
    } else {
      wv = float(static_cast<const BF*>(w)[int64_t{c} * k + i]);
    }
    acc += float(x[int64_t{r} * k + i]) * wv;
  }
  out[int64_t{r} * n + c] = acc;
}

constexpr int64_t weight_bytes(int64_t n, int64_t k) {
  return kInt4 ? n * k / 2 : n * k * 2;
}
void grid_fill(uint8_t* p, int64_t bytes, uint32_t seed) {
  fill_bytes<<<1024, 256>>>(p, bytes, seed);
  CHECK(cudaGetLastError());
}

// One grouped GEMM over `rows[e]` rows per expert; weights (and scales) per expert already on the
// device. Keeps its argument arrays; run() launches. A template on the mainloop so that the
// branches of the other weight format are not instantiated.
template <class ML>
struct GroupedT {
  using K = cutlass::gemm::kernel::GemmUniversal<Problem, ML, Epilogue>;
  using G = cutlass::gemm::device::GemmUniversalAdapter<K>;
  using SA = typename K::InternalStrideA;
  using SB = typename K::InternalStrideB;
  using SD = typename K::InternalStrideD;
  using SS = typename ScaleStrideOf<ML>::type;
  int experts, n, k, g;
  std::vector<int> rows;
  GroupedT(int experts_, int n_, int k_, int g_, std::vector<int> rows_)
      : experts(experts_), n(n_), k(k_), g(g_), rows(std::move(rows_)) {}
  cutlass::DeviceAllocation<typename Problem::UnderlyingProblemShape> shapes;
  cutlass::DeviceAllocation<const void*> pa, pb, ps;
  cutlass::DeviceAllocation<void*> pd;
  cutlass::DeviceAllocation<SA> sa;
  cutlass::DeviceAllocation<SB> sb;
  cutlass::DeviceAllocation<SD> sd;
  cutlass::DeviceAllocation<SS> ss;
  cutlass::device_memory::allocation<uint8_t> workspace;
  G gemm;

  bool setup(const uint8_t* w, const BF* s, const BF* x, BF* d, std::vector<ReorderedW>* layouts) {
    std::vector<typename Problem::UnderlyingProblemShape> hp(experts);
    std::vector<const void*> ha(experts), hb(experts), hs(experts);
    std::vector<void*> hd(experts);
    std::vector<SA> hsa(experts);
    std::vector<SB> hsb(experts);
    std::vector<SD> hsd(experts);
    std::vector<SS> hss(experts);
    int64_t off = 0;
    for (int e = 0; e < experts; ++e) {
      hp[e] = make_shape(n, rows[e], k);
      ha[e] = w + e * weight_bytes(n, k);
      hb[e] = x + off * k;
      hs[e] = kInt4 ? s + int64_t{e} * (k / g) * n : nullptr;
      hd[e] = d + off * n;
      if constexpr (kReorder)
        hsa[e] = (*layouts)[e];
      else
        hsa[e] = cutlass::make_cute_packed_stride(SA{}, make_shape(n, k, 1));
      hsb[e] = cutlass::make_cute_packed_stride(SB{}, make_shape(rows[e], k, 1));
      hsd[e] = cutlass::make_cute_packed_stride(SD{}, make_shape(n, rows[e], 1));
      if constexpr (kInt4) hss[e] = cutlass::make_cute_packed_stride(SS{}, make_shape(n, k / g, 1));
      off += rows[e];
    }
    shapes.reset(experts);
    pa.reset(experts), pb.reset(experts), ps.reset(experts), pd.reset(experts);
    sa.reset(experts), sb.reset(experts), sd.reset(experts), ss.reset(experts);
    shapes.copy_from_host(hp.data());
    pa.copy_from_host(ha.data()), pb.copy_from_host(hb.data()), ps.copy_from_host(hs.data());
    pd.copy_from_host(hd.data());
    sa.copy_from_host(hsa.data()), sb.copy_from_host(hsb.data()), sd.copy_from_host(hsd.data());
    ss.copy_from_host(hss.data());
    typename G::Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
    args.problem_shape = {experts, shapes.get(), nullptr};  // shapes on the device only
    using PA = typename ML::Arguments;
    if constexpr (kInt4)
      args.mainloop = PA{reinterpret_cast<const I4**>(pa.get()),
                         sa.get(),
                         reinterpret_cast<const BF**>(pb.get()),
                         sb.get(),
                         reinterpret_cast<const BF**>(ps.get()),
                         ss.get(),
                         g};
    else
      args.mainloop = PA{reinterpret_cast<const BF**>(pa.get()), sa.get(),
                         reinterpret_cast<const BF**>(pb.get()), sb.get()};
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = nullptr;
    args.epilogue.ptr_D = reinterpret_cast<BF**>(pd.get());
    args.epilogue.dD = sd.get();
    args.hw_info.device_id = 0;
    args.hw_info.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);
    workspace.reset(G::get_workspace_size(args));
    if (gemm.can_implement(args) != cutlass::Status::kSuccess) return false;
    return gemm.initialize(args, workspace.get()) == cutlass::Status::kSuccess;
  }
  void run() {
    if (gemm.run() != cutlass::Status::kSuccess) {
      std::fprintf(stderr, "gemm.run failed\n");
      std::exit(1);
    }
  }
};
using Grouped = GroupedT<Mainloop>;

// Weights and scales of `experts` experts, random, reordered if the configuration wants it.
struct Weights {
  cutlass::DeviceAllocation<uint8_t> codes;
  cutlass::DeviceAllocation<BF> scales;
  std::vector<ReorderedW> layouts;
  cutlass::DeviceAllocation<uint8_t> plain;  // kept for the reference when reordered
  Weights(int experts, int n, int k, int g, bool keep_plain) {
    const int64_t per = weight_bytes(n, k);
    codes.reset(experts * per);
    if constexpr (kInt4) {
      grid_fill(codes.get(), experts * per, 7);
      scales.reset(int64_t{experts} * (k / g) * n);
      fill_bf16<<<1024, 256>>>(scales.get(), scales.size(), 11, -0.02f, 0.02f);
    } else {
      fill_bf16<<<1024, 256>>>(reinterpret_cast<BF*>(codes.get()), experts * per / 2, 7, -0.15f,
                               0.15f);
    }
    CHECK(cudaGetLastError());
    if constexpr (kReorder) {
      if (keep_plain) {
        plain.reset(experts * per);
        CHECK(cudaMemcpy(plain.get(), codes.get(), experts * per, cudaMemcpyDeviceToDevice));
      }
      cutlass::DeviceAllocation<uint8_t> tmp(per);
      auto shape_w = make_shape(n, k, Int<1>{});
      auto plain_layout =
          make_layout(shape_w, cutlass::make_cute_packed_stride(StrideW{}, make_shape(n, k, 1)));
      for (int e = 0; e < experts; ++e) {
        layouts.push_back(tile_to_shape(AtomW{}, shape_w));
        uint8_t* w = codes.get() + e * per;
        CHECK(cudaMemcpy(tmp.get(), w, per, cudaMemcpyDeviceToDevice));
        cutlass::reorder_tensor(reinterpret_cast<const I4*>(tmp.get()), plain_layout,
                                reinterpret_cast<I4*>(w), layouts.back());
      }
      CHECK(cudaDeviceSynchronize());
    }
  }
  const uint8_t* reference_codes() const { return kReorder ? plain.get() : codes.get(); }
};

bool check(int g) {
  const std::vector<int> rows = {37, 0, 300, 1, 129, 8, 0, 64, 511, 17};
  const int experts = rows.size(), n = 768, k = 2048;
  int64_t total = 0;
  for (int r : rows) total += r;
  Weights w(experts, n, k, g, true);
  cutlass::DeviceAllocation<BF> x(total * k), d(total * n);
  cutlass::DeviceAllocation<float> ref(total * n);
  fill_bf16<<<1024, 256>>>(x.get(), x.size(), 3, -1.f, 1.f);
  CHECK(cudaMemset(d.get(), 0xFF, d.bytes()));  // poison: NaN bf16
  Grouped gg(experts, n, k, g, rows);
  if (!gg.setup(w.codes.get(), w.scales.get(), x.get(), d.get(), &w.layouts)) {
    std::printf("%s G=%d: can_implement or initialize failed\n", kName[CFG], g);
    return false;
  }
  gg.run();
  int64_t off = 0;
  for (int e = 0; e < experts; ++e) {
    if (rows[e] > 0)
      reference<<<dim3((n + 127) / 128, rows[e]), 128>>>(
          x.get() + off * k, w.reference_codes() + e * weight_bytes(n, k),
          kInt4 ? w.scales.get() + int64_t{e} * (k / g) * n : nullptr, ref.get() + off * n, rows[e],
          n, k, g);
    off += rows[e];
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<BF> hd(total * n);
  std::vector<float> hr(total * n);
  d.copy_to_host(hd.data());
  ref.copy_to_host(hr.data());
  // Relative L2 of the error: the kernel rounds D to bf16 (2^-9 relative) and sums in another
  // order; 1e-2 is the layer's int4 tolerance and far below a wrong code, scale or row (~1).
  double err = 0, norm = 0;
  int64_t unwritten = 0;
  for (int64_t i = 0; i < total * n; ++i) {
    const double v = float(hd[i]);
    if (!std::isfinite(v)) ++unwritten;
    err += (v - hr[i]) * (v - hr[i]);
    norm += double(hr[i]) * hr[i];
  }
  const double rel = std::sqrt(err / norm);
  const bool ok = unwritten == 0 && rel < 1e-2;
  std::printf("check %s G=%d: rel_l2 %.2e, unwritten %lld: %s\n", kName[CFG], g, rel,
              static_cast<long long>(unwritten), ok ? "ok" : "FAILED");
  return ok;
}

void time_shape(const char* name, int experts, int n, int k, const std::vector<int>& tokens) {
  const int g = 128, top_k = 8;
  Weights w(experts, n, k, g, false);
  const int64_t max_rows = int64_t{tokens.back()} * top_k;
  cutlass::DeviceAllocation<BF> x(max_rows * k), d(max_rows * n);
  fill_bf16<<<1024, 256>>>(x.get(), x.size(), 5, -1.f, 1.f);
  for (int t : tokens) {
    std::mt19937 rng(t);
    std::vector<int> rows(experts, 0);
    // Top-8 of 128 or 384 experts for each token, uniformly (distinct experts per token).
    std::vector<int> ids(experts);
    for (int i = 0; i < t; ++i) {
      for (int e = 0; e < experts; ++e) ids[e] = e;
      for (int j = 0; j < top_k; ++j) {
        std::swap(ids[j], ids[j + rng() % (experts - j)]);
        ++rows[ids[j]];
      }
    }
    Grouped gg(experts, n, k, g, rows);
    if (!gg.setup(w.codes.get(), w.scales.get(), x.get(), d.get(), &w.layouts)) {
      std::printf("%s T=%d: setup failed\n", name, t);
      continue;
    }
    const float ms = best_of_5_ms([&] { gg.run(); });
    int active = 0;
    for (int r : rows) active += r > 0;
    const double bytes = double(active) * (weight_bytes(n, k) + (kInt4 ? 2.0 * n * k / g : 0));
    const double flop = 2.0 * t * top_k * n * k;
    std::printf("%-28s %-22s T=%5d rows=%6d %9.1f us %6.2f TB/s weights %6.1f TFLOP/s\n",
                kName[CFG], name, t, t * top_k, ms * 1e3, bytes / ms / 1e9, flop / ms / 1e9);
  }
}

int main() {
  bool ok = true;
  for (int g : {64, 128}) ok &= check(g);
  if (!ok) return 1;
  const std::vector<int> tokens = {256, 512, 1024, 2048, 4096};
  time_shape("qwen3-235b GEMM1", 128, 3072, 4096, tokens);
  time_shape("qwen3-235b GEMM2", 128, 4096, 1536, tokens);
  time_shape("kimi-k2 GEMM1", 384, 4096, 7168, tokens);
  time_shape("kimi-k2 GEMM2", 384, 7168, 2048, tokens);
  return 0;
}
