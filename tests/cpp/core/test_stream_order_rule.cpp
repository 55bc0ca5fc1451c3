// StreamOrderRule (src/cuda/stream_order_rule.h), the rule of the CUDA backend's stream order
// (on unless SERVEKIT_FORWARD_STREAM_ORDER=0): a forward waits for the last eager forward's event
// only on another stream; a captured forward neither waits nor records, and leaves the last
// stream as it was. Pure C++: runs without CUDA.
#include <gtest/gtest.h>

#include "cuda/stream_order_rule.h"

namespace servekit::cuda {
namespace {

constexpr unsigned long long kA = 11, kB = 12;

// One call: whether it waited; whether it recorded is checked against `records`.
bool call(StreamOrderRule& rule, bool capturing, unsigned long long stream, bool records) {
  const bool waited = rule.begin(capturing, stream);
  EXPECT_EQ(rule.end(), records);
  return waited;
}

TEST(StreamOrderRule, OneStreamNeverWaits) {
  StreamOrderRule rule;
  EXPECT_FALSE(call(rule, false, kA, true));  // the first call: nothing to wait for
  EXPECT_FALSE(call(rule, false, kA, true));
  EXPECT_FALSE(call(rule, false, kA, true));
}

TEST(StreamOrderRule, AnotherStreamWaitsForTheLastCall) {
  StreamOrderRule rule;
  EXPECT_FALSE(call(rule, false, kA, true));
  EXPECT_TRUE(call(rule, false, kB, true));   // after A's call
  EXPECT_FALSE(call(rule, false, kB, true));  // B again: the stream orders it
  EXPECT_TRUE(call(rule, false, kA, true));   // back to A: waits for B's call
}

TEST(StreamOrderRule, ACapturedCallNeitherWaitsNorRecords) {
  StreamOrderRule rule;
  EXPECT_FALSE(call(rule, true, kB, false));  // captured first: nothing recorded yet
  EXPECT_FALSE(call(rule, false, kA, true));  // so the first eager call waits for nothing
  EXPECT_FALSE(call(rule, true, kB, false));  // captured on B after A's call: no wait
  EXPECT_FALSE(call(rule, false, kA, true));  // the capture did not make B the last stream
  EXPECT_TRUE(call(rule, false, kB, true));   // an eager call on B still waits for A's
}

TEST(StreamOrderRule, ACallThatNeverEndsRecordsNothing) {
  StreamOrderRule rule;
  EXPECT_FALSE(call(rule, false, kA, true));
  EXPECT_TRUE(rule.begin(false, kB));  // B's call throws before its end: A stays the last
  EXPECT_TRUE(call(rule, false, kB, true));
  EXPECT_FALSE(call(rule, false, kB, true));
}

}  // namespace
}  // namespace servekit::cuda
