#include <cuda_runtime.h>

#include <cutlass/version.h>

#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {

int device_count_noexcept() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string cutlass_version_string() {
  return "cutlass " + std::to_string(CUTLASS_MAJOR) + "." + std::to_string(CUTLASS_MINOR) + "." +
         std::to_string(CUTLASS_PATCH);
}

void check(int err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw Error(detail::concat(call, " failed: ", cudaGetErrorName(static_cast<cudaError_t>(err)),
                             " (", cudaGetErrorString(static_cast<cudaError_t>(err)), ") (", file,
                             ":", line, ")"));
}

}  // namespace servekit::cuda
