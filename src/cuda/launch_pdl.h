// One kernel launch with programmatic dependent launch (PDL), shared by the launchers of the
// plan, the static path and the dynamic path's passes (device side: kernels/pdl.cuh). Internal
// header for CUDA translation units.
#pragma once

#include <utility>

#include <cuda_runtime.h>

#include "core/env.h"
#include "cuda/runtime.h"

namespace servekit::cuda {

// Diagnostic SERVEKIT_DIAG_CARVEOUT=<0..100>: every launch below asks for that shared-memory
// carveout, in percent of the SM's unified L1 / shared memory
// (cudaLaunchAttributePreferredSharedMemoryCarveout; 100 = the largest shared-memory
// configuration). Unset or empty: no preference, the driver's choice; any other value is an
// error (core/env.h). An SM switches configuration only while idle, so kernels of one chain that
// get different configurations can wait for each other's SMs to drain (docs/perf-notes.md,
// nineteenth pass). Read once per process.
inline int diag_carveout() {
  static const int v = static_cast<int>(env_int("SERVEKIT_DIAG_CARVEOUT", 0, 100, -1));
  return v;
}

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
  cudaLaunchAttribute attrs[2]{};
  unsigned n = 0;
  if (pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (const int carveout = diag_carveout(); carveout >= 0) {
    attrs[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attrs[n].val.sharedMemCarveout = static_cast<unsigned>(carveout);
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  SERVEKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace servekit::cuda
