// Programmatic dependent launch (PDL), device side, for kernels launched with
// cudaLaunchAttributeProgrammaticStreamSerialization (launch_pdl.h).
//
// Rules every kernel of a PDL chain follows:
//   - pdl_wait() before touching any global memory that an earlier kernel of the stream writes
//     or reads (inputs, the plan, the workspace it will overwrite);
//   - pdl_wait() in every CTA before it exits, so that the kernel completes only after its
//     predecessor did: the next kernel's wait covers the whole chain behind it;
//   - pdl_trigger() may come anywhere: the dependent's CTAs only start once every CTA of this
//     grid has triggered or exited (all of them resident, so none can be starved), and they
//     wait for this grid's completion before reading anything.
// Both are no-ops in a launch that did not opt in.
// One exception to the first rule: a self-routed static GEMM1 (static_self_route.h) reads the
// layer's inputs (x, the logits) before its wait. Its predecessor, the route + plan kernel,
// triggers only after its own wait, so every kernel before it has completed when GEMM1 launches;
// GEMM1 reads nothing the route + plan kernel writes, and waits for it before it triggers.
#pragma once

namespace servekit::cuda {

__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace servekit::cuda
