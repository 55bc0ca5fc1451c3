// Orders the device work of successive calls that share one workspace (a MoE layer's forwards,
// include/servekit/moe.h) when they come on different streams. Each call outside a graph capture
// records an event on its stream after its last launch; a call on another stream first makes
// its stream wait for that event, so its kernels start only after the previous call's have
// finished. Calls on one stream are ordered by the stream and wait for nothing.
//
// Streams are told apart by cudaStreamGetId, not by handle: cudaStreamPerThread is one handle
// for a different stream on every host thread, and a destroyed stream's handle may come back for
// a new one.
//
// Not in a graph capture: a capturing stream may not wait for an event recorded outside the
// capture, and an event recorded inside it cannot be waited for outside. A captured call neither
// waits nor records, so replays of captured calls are the caller's to order (moe.h), and the
// order of eager calls is unchanged by a capture in between.
//
// The rule (who waits, who records) is StreamOrderRule's, tested on the CPU. Internal header;
// plain C++ translation units may include it (CUDA runtime API only).
#pragma once

#include <cuda_runtime.h>

#include "cuda/runtime.h"
#include "cuda/stream_order_rule.h"

namespace servekit::cuda {

class StreamOrder {
 public:
  // enabled == false: before() and after() do nothing (the caller orders its calls).
  explicit StreamOrder(bool enabled) {
    if (enabled) SERVEKIT_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~StreamOrder() {
    if (done_ != nullptr) cudaEventDestroy(done_);
  }
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  // Before the call's first launch on `stream`, on the device the event was created on.
  void before(cudaStream_t stream) {
    if (done_ == nullptr) return;  // not enabled
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    SERVEKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    unsigned long long id = 0;
    const bool capturing = status != cudaStreamCaptureStatusNone;
    if (!capturing) SERVEKIT_CUDA_CHECK(cudaStreamGetId(stream, &id));
    if (rule_.begin(capturing, id)) SERVEKIT_CUDA_CHECK(cudaStreamWaitEvent(stream, done_, 0));
  }

  // After the call's last launch on the stream given to before().
  void after(cudaStream_t stream) {
    if (done_ != nullptr && rule_.end()) SERVEKIT_CUDA_CHECK(cudaEventRecord(done_, stream));
  }

 private:
  // The end of the last call outside a capture, once recorded; null when not enabled.
  cudaEvent_t done_ = nullptr;
  StreamOrderRule rule_;
};

}  // namespace servekit::cuda
