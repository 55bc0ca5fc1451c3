// The backend interface behind MoELayer. MoELayer validates arguments and quantizes canonical
// weights on the host (quant.h); a backend stores prepared experts in its own layout and runs
// forward. Internal header.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "servekit/moe.h"

namespace servekit {

class MoEBackend {
 public:
  virtual ~MoEBackend() = default;
  // index: routed local expert 0..E_local-1, or E_local + s for shared expert s. Must be safe
  // to call concurrently for distinct indices (see MoELayer::load_expert).
  virtual void load_expert(int index, std::shared_ptr<const PreparedExpert> expert) = 0;
  // Arguments are already validated by MoELayer (shapes, dtypes, devices, T <= capacity).
  virtual void forward(const MoEInputs& in, TensorView out, void* stream) = 0;
  // MoELayer::device_weight_bytes.
  virtual size_t device_weight_bytes() const { return 0; }
  // MoELayer::kernels; tokens already validated.
  virtual std::string kernels(int64_t /*tokens*/) const { return "cpu"; }
};

// cfg must come from validate_moe_config.
std::unique_ptr<MoEBackend> make_cpu_backend(const MoEConfig& cfg);
#ifdef SERVEKIT_WITH_CUDA
std::unique_ptr<MoEBackend> make_cuda_backend(const MoEConfig& cfg);
#endif

}  // namespace servekit
