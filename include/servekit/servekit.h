// servekit/servekit.h — umbrella header and build information.
#pragma once

#include <string>

#include "servekit/dtype.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/moe.h"
#include "servekit/quant.h"
#include "servekit/routing.h"
#include "servekit/tensor.h"

namespace servekit {

// "0.1.0"
const char* version();
// Whether this build contains the CUDA backend.
bool built_with_cuda();
// Number of CUDA devices visible (0 in a CPU-only build or when no driver/device is present;
// never throws).
int cuda_device_count();
// One line per fact: version, compiler, CUDA toolkit, target archs, CUTLASS version.
std::string build_info();

}  // namespace servekit
