// One call at a time into an object whose calls share state (MoELayer::forward and the layer's
// one workspace): a call that starts while another is inside throws servekit::Error instead of
// racing with it. It sees calls that overlap on the host (several host threads); the device work
// of calls made one after another on different CUDA streams is the caller's to order
// (include/servekit/moe.h, forward). Pure C++: tested on the CPU (tests/cpp/core).
#pragma once

#include <atomic>

#include "servekit/error.h"

namespace servekit {

class ExclusiveCall {
 public:
  // Holds the call for the Scope's lifetime. Throws servekit::Error, "<what>: <why>", when another
  // Scope of the same ExclusiveCall is alive; the other Scope keeps the call.
  class Scope {
   public:
    Scope(ExclusiveCall& call, const char* what, const char* why) : busy_(call.busy_) {
      SERVEKIT_CHECK(!busy_.exchange(true, std::memory_order_acquire), what, ": ", why);
    }
    ~Scope() { busy_.store(false, std::memory_order_release); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::atomic<bool>& busy_;
  };

 private:
  std::atomic<bool> busy_{false};
};

}  // namespace servekit
