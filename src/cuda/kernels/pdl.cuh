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
#pragma once

namespace servekit::cuda {

__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace servekit::cuda
