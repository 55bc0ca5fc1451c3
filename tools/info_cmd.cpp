// `servekit info` — version, build configuration and the CUDA devices this process can see.
#include <cstdio>
#include <exception>
#include <thread>

#include "args.h"
#include "commands.h"
#include "servekit/servekit.h"

#ifdef SERVEKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda/runtime.h"
#endif

namespace servekit::cli {
namespace {

void print_devices() {
  std::printf("cpu: %u hardware threads\n", std::thread::hardware_concurrency());
#ifdef SERVEKIT_WITH_CUDA
  const int n = cuda_device_count();
  if (n == 0) {
    std::printf("cuda devices: no CUDA device\n");
    return;
  }
  std::printf("cuda devices: %d\n", n);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    SERVEKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    std::printf("  cuda:%d  %s, %d SMs, %.1f GiB, compute capability %d.%d\n", i, prop.name,
                prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), prop.major,
                prop.minor);
  }
#else
  std::printf("cuda devices: no CUDA device (CPU-only build)\n");
#endif
}

}  // namespace

int cmd_info(int argc, char** argv) {
  if (wants_help(argc, argv)) {
    std::printf(
        "usage: servekit info\nPrints the version, the build configuration and the CUDA "
        "devices found.\n");
    return 0;
  }
  try {
    const Args args(argc, argv, {});
  } catch (const std::exception& e) {
    return report_error(without_location(e.what()), 2);
  }
  try {
    std::fputs(build_info().c_str(), stdout);
    print_devices();
  } catch (const std::exception& e) {
    return report_error(e.what(), 1);
  }
  return 0;
}

}  // namespace servekit::cli
