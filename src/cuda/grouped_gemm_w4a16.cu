// The int4-weight grouped GEMM (make_grouped_gemm_w4a16, grouped_gemm.h): the 64-token tile's
// runner (kernels/gemm/w4a16_gemm.cuh), the per-run pick between it and the 128- and 256-token
// tiles (grouped_gemm_w4a16_n128.cu, _n256.cu, or in clusters of two _n128c2.cu, _n256c2.cu), and
// the reorder of the codes at load.
#include "core/env.h"
#include "cuda/kernels/gemm/w4a16_gemm.cuh"

namespace servekit::cuda {
namespace gemm {

std::unique_ptr<GroupedGemm> make_w4a16_runner_n64(const GroupedGemmShape& shape, int device) {
  return std::make_unique<W4A16Runner<64, 1>>(shape, device);
}

namespace {

// Picks a tile per run by the expected rows of a routed group (w4a16_tile_n, grouped_gemm.h), or
// runs the one SERVEKIT_GEMM_W4A16_TILE names; the 128- and 256-token tiles in clusters of
// SERVEKIT_GEMM_W4A16_CLUSTER weight tiles.
class W4A16Choosing final : public GroupedGemm {
 public:
  W4A16Choosing(const GroupedGemmShape& shape, int device, int forced, int cluster)
      : forced_(forced),
        n64_(make_w4a16_runner_n64(shape, device)),
        n128_(cluster == 2 ? make_w4a16_runner_n128c2(shape, device)
                           : make_w4a16_runner_n128(shape, device)),
        n256_(cluster == 2 ? make_w4a16_runner_n256c2(shape, device)
                           : make_w4a16_runner_n256(shape, device)) {}
  void run(const GroupedGemmOperands& ops, cudaStream_t stream) const override {
    pick(ops.rows_hint).run(ops, stream);
  }
  const GroupedGemmShape& shape() const override { return n64_->shape(); }
  GemmConfig config(int64_t rows_hint) const override { return pick(rows_hint).config(rows_hint); }
  bool fuses_activation(int64_t rows_hint) const override {
    return n64_->fuses_activation(rows_hint);  // every tile alike
  }
  std::string tile_name(int64_t rows_hint) const override {
    return pick(rows_hint).tile_name(rows_hint);
  }

 private:
  const GroupedGemm& pick(int64_t rows_hint) const {
    const GroupedGemmShape& s = n64_->shape();
    const int64_t rows = rows_hint > 0 ? rows_hint : s.capacity_rows;
    const int tile =
        forced_ != 0 ? forced_ : w4a16_tile_n(routed_rows_per_group(s.routing, rows, s.num_groups));
    return tile == 64 ? *n64_ : tile == 128 ? *n128_ : *n256_;
  }
  int forced_;
  std::unique_ptr<GroupedGemm> n64_, n128_, n256_;
};

}  // namespace
}  // namespace gemm

std::unique_ptr<GroupedGemm> make_grouped_gemm_w4a16(const GroupedGemmShape& shape, int device) {
  const int forced =
      env_choice("SERVEKIT_GEMM_W4A16_TILE", 0, parse_w4a16_tile, "auto, 64, 128 or 256");
  const int cluster = env_choice("SERVEKIT_GEMM_W4A16_CLUSTER", kW4A16ClusterDefault,
                                 parse_w4a16_cluster, "1 or 2");
  return std::make_unique<gemm::W4A16Choosing>(shape, device, forced, cluster);
}

namespace {

// Element i = r * k + c of the plain codes goes to element layout(r, c, 0) of the reordered ones.
// Each thread ORs its nibble into a zeroed 32-bit word: two threads may share a byte, so a plain
// byte store would race; the nibbles are disjoint, so the result does not depend on the order.
__global__ void w4a16_reorder_kernel(const uint8_t* src, uint32_t* dst, int n, int k,
                                     gemm::W4ReorderedW layout) {
  const int64_t total = int64_t{n} * k;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t code = (src[i / 2] >> (4 * (i & 1))) & 15u;
    const int64_t o = layout(static_cast<int>(i / k), static_cast<int>(i % k), 0);
    atomicOr(&dst[o / 8], code << (4 * (o % 8)));
  }
}

}  // namespace

void w4a16_reorder_codes(void* codes, int64_t n, int64_t k) {
  SERVEKIT_CHECK(codes != nullptr && n > 0 && k > 0 && k % 64 == 0 && n * k < (int64_t{1} << 31),
                 "w4a16_reorder_codes: need codes, positive n and k, k a multiple of 64 and n * k "
                 "below 2^31, got n=",
                 n, " k=", k);
  const auto layout = gemm::w4a16_reordered_layout(static_cast<int>(n), static_cast<int>(k));
  SERVEKIT_CHECK(static_cast<int64_t>(cute::cosize(layout)) == n * k, "w4a16_reorder_codes: n=", n,
                 " k=", k,
                 " do not fill whole 16x16 reorder atoms (n and k must be multiples of 16)");
  const size_t bytes = static_cast<size_t>(n * k / 2);
  void* tmp = nullptr;
  SERVEKIT_CUDA_CHECK(cudaMalloc(&tmp, bytes));
  const cudaError_t set = cudaMemset(tmp, 0, bytes);
  if (set == cudaSuccess) {
    w4a16_reorder_kernel<<<1024, 256>>>(static_cast<const uint8_t*>(codes),
                                        static_cast<uint32_t*>(tmp), static_cast<int>(n),
                                        static_cast<int>(k), layout);
  }
  cudaError_t err = set != cudaSuccess ? set : cudaGetLastError();
  if (err == cudaSuccess) err = cudaMemcpy(codes, tmp, bytes, cudaMemcpyDeviceToDevice);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  cudaFree(tmp);
  SERVEKIT_CUDA_CHECK(err);
}

}  // namespace servekit::cuda
