// The environment switches of the CUDA dynamic path (cuda/dynamic_options.h): what each value
// means, and that a typo is refused instead of silently meaning the default.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/dynamic_options.h"
#include "servekit/error.h"

namespace servekit::cuda {
namespace {

TEST(DynamicOptions, PdlIsOffUnlessSwitchedOn) {
  EXPECT_EQ(parse_dynamic_pdl(""), false);
  EXPECT_EQ(parse_dynamic_pdl("1"), true);
  EXPECT_EQ(parse_dynamic_pdl("on"), true);
  EXPECT_EQ(parse_dynamic_pdl("0"), false);
  EXPECT_EQ(parse_dynamic_pdl("off"), false);
  EXPECT_FALSE(parse_dynamic_pdl("yes").has_value());
  EXPECT_FALSE(parse_dynamic_pdl("2").has_value());
  EXPECT_FALSE(parse_dynamic_pdl("OFF").has_value());
}

// SERVEKIT_DYNAMIC_FUSED_ACT's parser (on by default): empty means the default given.
TEST(DynamicOptions, SwitchesTakeOnOrOff) {
  EXPECT_EQ(parse_dynamic_switch("", true), true);
  EXPECT_EQ(parse_dynamic_switch("", false), false);
  EXPECT_EQ(parse_dynamic_switch("0", true), false);
  EXPECT_EQ(parse_dynamic_switch("off", true), false);
  EXPECT_EQ(parse_dynamic_switch("1", false), true);
  EXPECT_EQ(parse_dynamic_switch("on", false), true);
  EXPECT_FALSE(parse_dynamic_switch("true", true).has_value());
  EXPECT_FALSE(parse_dynamic_switch("00", true).has_value());
}

TEST(DynamicOptions, StopNamesOneOfTheFivePasses) {
  EXPECT_EQ(parse_dynamic_stop(""), 0);
  for (int n = 0; n <= kDynamicStopPasses; ++n)
    EXPECT_EQ(parse_dynamic_stop(std::string(1, static_cast<char>('0' + n))), n);
  EXPECT_FALSE(parse_dynamic_stop("6").has_value());
  EXPECT_FALSE(parse_dynamic_stop("-1").has_value());
  EXPECT_FALSE(parse_dynamic_stop("12").has_value());
  EXPECT_FALSE(parse_dynamic_stop("gemm1").has_value());
}

// The readers the layer calls at construction: unset gives the default, a value its parse, a bad
// value an error naming the variable (the int4 GEMM's switch is on by default).
TEST(DynamicOptions, ReadersTakeTheEnvironment) {
  const char* name = "SERVEKIT_TEST_DYNAMIC_SWITCH";
  unsetenv(name);
  EXPECT_TRUE(dynamic_switch_from_env(name, true));
  EXPECT_FALSE(dynamic_switch_from_env(name, false));
  setenv(name, "", 1);
  EXPECT_TRUE(dynamic_switch_from_env(name, true));
  setenv(name, "0", 1);
  EXPECT_FALSE(dynamic_switch_from_env(name, true));
  setenv(name, "on", 1);
  EXPECT_TRUE(dynamic_switch_from_env(name, false));
  setenv(name, "yes", 1);
  try {
    dynamic_switch_from_env(name, true);
    ADD_FAILURE() << "a bad value was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  unsetenv(name);
  EXPECT_TRUE(kDynamicW4A16Default);
}

}  // namespace
}  // namespace servekit::cuda
