// ExclusiveCall (src/core/exclusive_call.h): a second Scope while one is alive throws and leaves
// the call with the first; the call is free again after the first ends, by return or by throw.
#include <gtest/gtest.h>

#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/exclusive_call.h"

namespace servekit {
namespace {

// The message of the Error that constructing a Scope throws, or "" if it does not throw.
std::string second_scope_error(ExclusiveCall& call) {
  try {
    ExclusiveCall::Scope s(call, "moe.forward", "another forward of this layer is running");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExclusiveCall, SecondScopeThrowsAndTheFirstKeepsTheCall) {
  ExclusiveCall call;
  {
    ExclusiveCall::Scope first(call, "moe.forward", "busy");
    const std::string msg = second_scope_error(call);
    EXPECT_NE(msg.find("moe.forward: another forward of this layer is running"), std::string::npos)
        << msg;
    // The failed Scope did not release the call: a third attempt still throws.
    EXPECT_NE(second_scope_error(call), "");
  }
  EXPECT_EQ(second_scope_error(call), "");  // free once the first Scope ends
}

TEST(ExclusiveCall, AScopeLeftByAnExceptionFreesTheCall) {
  ExclusiveCall call;
  EXPECT_THROW(
      {
        ExclusiveCall::Scope s(call, "moe.forward", "busy");
        throw std::runtime_error("a failed forward");
      },
      std::runtime_error);
  EXPECT_EQ(second_scope_error(call), "");
}

TEST(ExclusiveCall, ACallFromAnotherThreadWhileOneIsInsideThrows) {
  ExclusiveCall call;
  std::promise<void> inside, leave;
  std::thread holder([&] {
    ExclusiveCall::Scope s(call, "moe.forward", "busy");
    inside.set_value();
    leave.get_future().wait();
  });
  inside.get_future().wait();
  EXPECT_NE(second_scope_error(call), "");
  leave.set_value();
  holder.join();
  EXPECT_EQ(second_scope_error(call), "");
}

}  // namespace
}  // namespace servekit
