// One kernel launch with programmatic dependent launch (PDL), shared by the launchers of the
// plan, the static path and the dynamic path's passes (device side: kernels/pdl.cuh). Internal
// header for CUDA translation units.
#pragma once

#include <utility>

#include <cuda_runtime.h>

#include "cuda/runtime.h"

namespace servekit::cuda {

// Launches kernel<<<grid, block, smem, stream>>>(args...). With pdl the launch may start while
// the previous kernel on the stream is still running; the kernel must then griddepcontrol.wait
// before reading that kernel's output.
template <typename... KernelArgs, typename... Args>
void launch_pdl(void (*kernel)(KernelArgs...), dim3 grid, int block, size_t smem, bool pdl,
                cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(static_cast<unsigned>(block));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  SERVEKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace servekit::cuda
