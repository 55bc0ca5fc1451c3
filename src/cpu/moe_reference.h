// The naive fp64 reference of the MoE layer: the oracle of every test and of `servekit moe
// --check`. It recomputes routing with route_cpu, dequantizes the layer's prepared weights
// (quant.h) and simulates the format's activation quantization exactly as quant.h specifies,
// doing everything else in double precision, one token and one expert at a time. Internal
// header.
#pragma once

#include <cstdint>
#include <vector>

#include "servekit/moe.h"

namespace servekit {

// Host inputs of the reference. hidden: [T, H] fp32 values (already bf16-representable);
// logits [T, E] fp32 and bias [E] (or nullptr) for routed methods; ids/weights [T, K] for
// kPrecomputed.
struct ReferenceInputs {
  const float* hidden = nullptr;
  int64_t tokens = 0;
  const float* logits = nullptr;
  const float* bias = nullptr;
  const int32_t* ids = nullptr;
  const float* weights = nullptr;
};

// out: [T, H] in double. Needs the prepared host copy of every expert routed to
// (layer.prepared_expert); throws servekit::Error if one is missing.
std::vector<double> moe_reference(const MoELayer& layer, const ReferenceInputs& in);

// The activation of moe.h in fp64: g the gate half, u the up half (ignored for kReLU2).
double reference_activation(Activation a, double g, double u);

// ||out - ref|| / ||ref|| over all elements (NaN in out gives +inf).
double relative_l2(const float* out, const double* ref, int64_t n);

// Relative-L2 tolerance of a layer output against moe_reference, per format and backend (the
// CUDA backend rounds both GEMM outputs to bf16, the CPU backend keeps them in fp32), with the
// reason beside each value in the definition.
double moe_tolerance(QuantMethod m, DeviceType backend = DeviceType::kCPU);

}  // namespace servekit
