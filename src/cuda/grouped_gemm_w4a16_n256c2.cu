// The int4-weight grouped GEMM's 256-token tile in clusters of two weight tiles that share the
// token tile by TMA multicast (kernels/gemm/w4a16_gemm.cuh): make_grouped_gemm_w4a16's default
// (SERVEKIT_GEMM_W4A16_CLUSTER=1 runs the 256x1 one instead).
#include "cuda/kernels/gemm/w4a16_gemm.cuh"

namespace servekit::cuda::gemm {

std::unique_ptr<GroupedGemm> make_w4a16_runner_n256c2(const GroupedGemmShape& shape, int device) {
  return std::make_unique<W4A16Runner<256, 2>>(shape, device);
}

}  // namespace servekit::cuda::gemm
