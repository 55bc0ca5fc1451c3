// Host-side CUDA runtime helpers: checked calls, device properties. Internal header; included
// only by CUDA-enabled translation units (the CUDA runtime header is not part of the public API).
#pragma once

#include <string>

namespace servekit::cuda {

// Number of visible devices; 0 when the driver or a device is missing (never throws).
int device_count_noexcept();
// "cutlass 4.2.0"
std::string cutlass_version_string();

// Throws servekit::Error "<call> failed: <cudaGetErrorString> (file:line)" unless err == 0.
void check(int err, const char* call, const char* file, int line);

}  // namespace servekit::cuda

#define SERVEKIT_CUDA_CHECK(call) ::servekit::cuda::check(static_cast<int>(call), #call, __FILE__, __LINE__)
