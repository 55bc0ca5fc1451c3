// How many SMs a persistent grouped GEMM can use per cluster shape: cudaOccupancyMaxActiveClusters
// for a CTA like the GEMMs' (384 threads, 227 KB of dynamic shared memory, one CTA per SM) in
// clusters of 1, 2 and 4 CTAs. A cluster must fit whole in one GPC, so where a GPC's SM count is
// not a multiple of the cluster size the rest of its SMs idle; the runner launches max active
// clusters x cluster size CTAs (grouped_gemm_runner.cuh). Session 35 measured the ping-pong swap
// tile 2.6-4.8% slower in a 4x1 cluster than in 2x1; this says how much of that the SMs explain.
// Build and run (device): nvcc -O3 -arch=sm_90a -o /tmp/cluster_occupancy
// bench/tools/cluster_occupancy.cu && /tmp/cluster_occupancy
#include "probe_util.cuh"

__global__ void one_cta_per_sm(int* out) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0 && out != nullptr) out[blockIdx.x] = smem[0];
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const int smem = 227 * 1024;
  const void* kernel = reinterpret_cast<const void*>(one_cta_per_sm);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::printf("%s: %d SMs; CTA of 384 threads, %d bytes of shared memory\n", prop.name, sms, smem);
  std::printf("cluster  max_active_clusters  SMs_used  SMs_idle\n");
  const int shapes[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {8, 1}};
  for (const auto& s : shapes) {
    cudaLaunchConfig_t launch{};
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = s[0];
    attr.val.clusterDim.y = s[1];
    attr.val.clusterDim.z = 1;
    launch.gridDim = dim3(s[0], s[1], 1);
    launch.blockDim = dim3(384, 1, 1);
    launch.dynamicSmemBytes = smem;
    launch.attrs = &attr;
    launch.numAttrs = 1;
    int clusters = 0;
    CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch));
    const int used = clusters * s[0] * s[1];
    std::printf("%dx%d      %19d  %8d  %8d\n", s[0], s[1], clusters, used, sms - used);
  }
  return 0;
}
