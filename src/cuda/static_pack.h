// Host-side conversion of prepared experts (quant.h's plain layout) into the device layout of
// the static MoE kernels (kernels/static/static_layout.h). Pure C++: no CUDA runtime calls.
// Internal header of the CUDA backend.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/kernels/static/static_layout.h"
#include "servekit/moe.h"

namespace servekit::cuda {

// The static format of a quant config. Throws servekit::Error for mxfp4_w4a8 (fp8 activations
// on 4-bit weights have no static kernel) and for an invalid config.
static_moe::StaticFormat static_format(const QuantConfig& q);

// One matrix in the device layout: codes then scales, geom.code_bytes + geom.scale_bytes bytes.
struct StaticPackedMatrix {
  static_moe::StaticMatrixGeometry geom{};
  std::vector<uint8_t> bytes;
  // Factor of the matrix's accumulators: the fp8 tensor scale, 2^62 for the 4-bit fold
  // (times the nvfp4 tensor scale), 1 otherwise.
  float alpha = 1.0f;
};

// Repacks m ([N, K] in quant.h's layout). gated: m is the W13 of a gated activation (rows
// [0, N/2) gate, [N/2, N) up). Throws servekit::Error if K % 64 != 0, N % 16 != 0 (gated:
// N/2 % 8 != 0), for mxfp4_w4a8, an mxfp4 scale above 2^63 (code > 190) or a NaN or negative
// nvfp4 block scale (the kernel's scale fold cannot represent them).
StaticPackedMatrix pack_static_matrix(const QuantizedMatrix& m, bool gated);

}  // namespace servekit::cuda
