// Instantiation of the static MoE GEMM kernels for one format (one file per format keeps each
// translation unit's compile time and memory small).
#include "cuda/kernels/static/static_launch.cuh"

namespace servekit::cuda::static_moe {
template int static_grid<StaticFormat::kInt4G64>();
template void static_launch_gemms<StaticFormat::kInt4G64>(StaticLaunch&, cudaStream_t);
}  // namespace servekit::cuda::static_moe
