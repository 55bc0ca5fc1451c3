// Version, build configuration and device discovery.
#include <sstream>

#include "servekit/servekit.h"

#ifdef SERVEKIT_WITH_CUDA
#include "cuda/runtime.h"
#endif

namespace servekit {

const char* version() { return SERVEKIT_VERSION; }

bool built_with_cuda() {
#ifdef SERVEKIT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef SERVEKIT_WITH_CUDA
  return cuda::device_count_noexcept();
#else
  return 0;
#endif
}

std::string build_info() {
  std::ostringstream os;
  os << "servekit " << version() << "\n";
  os << "compiler: " << SERVEKIT_CXX_COMPILER << "\n";
#ifdef SERVEKIT_WITH_CUDA
  os << "cuda backend: yes (nvcc " << SERVEKIT_CUDA_VERSION << ", archs " << SERVEKIT_CUDA_ARCHS
     << ", " << cuda::cutlass_version_string() << ")\n";
#else
  os << "cuda backend: no (CPU-only build)\n";
#endif
  return os.str();
}

}  // namespace servekit
