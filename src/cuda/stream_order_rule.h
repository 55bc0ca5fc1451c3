// The rule of cuda::StreamOrder (stream_order.h) without its CUDA calls: which call waits for the
// previous call's event and which records one. Pure C++ (no CUDA headers), so the CPU tests
// (tests/cpp/core/test_stream_order_rule.cpp) check the rule the CUDA backend runs.
#pragma once

namespace servekit::cuda {

class StreamOrderRule {
 public:
  // A call starts on the stream with id `stream` (cudaStreamGetId; any value while capturing).
  // Returns whether its stream must wait for the event of the last call that recorded one: a
  // call outside a capture on another stream than that call's.
  bool begin(bool capturing, unsigned long long stream) {
    capturing_ = capturing;
    if (capturing_) return false;
    current_ = stream;
    return recorded_ && current_ != last_;
  }

  // The call's launches are enqueued. Returns whether to record the event on its stream: a call
  // outside a capture (a captured call leaves the last stream as it was).
  bool end() {
    if (capturing_) return false;
    recorded_ = true;
    last_ = current_;
    return true;
  }

 private:
  bool recorded_ = false;                      // some call outside a capture has recorded the event
  bool capturing_ = false;                     // the current call is being captured
  unsigned long long last_ = 0, current_ = 0;  // stream ids of that call and the current one
};

}  // namespace servekit::cuda
