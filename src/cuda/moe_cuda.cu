// CUDA MoE backend. Placeholder until the dynamic path lands: constructing it fails loudly.
#include "moe/backend.h"

namespace servekit {

std::unique_ptr<MoEBackend> make_cuda_backend(const MoEConfig&) {
  SERVEKIT_FAIL("moe: the CUDA backend is not implemented in this build yet; use device cpu");
}

}  // namespace servekit
