// Environment switches (core/env.h): what is read as a value, and that anything else is refused
// with the variable's name rather than silently read as 0 or the default.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "core/env.h"

namespace servekit {
namespace {

TEST(EnvInt, ParsesWholeDecimalIntegersInRange) {
  EXPECT_EQ(parse_env_int("0", 0, 3), 0);
  EXPECT_EQ(parse_env_int("3", 0, 3), 3);
  EXPECT_EQ(parse_env_int("+2", 0, 3), 2);
  EXPECT_EQ(parse_env_int("-1", -1, 100), -1);
  EXPECT_EQ(parse_env_int("007", 0, 10), 7);
  EXPECT_EQ(parse_env_int("100", 0, 100), 100);
}

TEST(EnvInt, RefusesAnythingElse) {
  for (const char* bad : {"", "x", "1x", " 1", "1 ", "1.0", "0x10", "+", "-", "--1", "abc"})
    EXPECT_FALSE(parse_env_int(bad, -100, 100).has_value()) << "'" << bad << "'";
  EXPECT_FALSE(parse_env_int("4", 0, 3).has_value());
  EXPECT_FALSE(parse_env_int("-1", 0, 3).has_value());
  EXPECT_FALSE(parse_env_int("101", 0, 100).has_value());
  EXPECT_FALSE(parse_env_int("99999999999999999999", 0, 1LL << 62).has_value());  // overflow
  EXPECT_FALSE(parse_env_int(nullptr, 0, 1).has_value());
}

class EnvIntVariable : public ::testing::Test {
 protected:
  static constexpr const char* kName = "SERVEKIT_TEST_ENV_INT";
  void TearDown() override { unsetenv(kName); }
};

TEST_F(EnvIntVariable, UnsetOrEmptyGivesTheFallback) {
  unsetenv(kName);
  EXPECT_EQ(env_int(kName, 0, 3, 0), 0);
  EXPECT_EQ(env_int(kName, 0, 100, -1), -1);  // a fallback outside the range marks "unset"
  setenv(kName, "", 1);
  EXPECT_EQ(env_int(kName, 0, 3, 2), 2);
}

TEST_F(EnvIntVariable, ValueInRangeIsRead) {
  setenv(kName, "2", 1);
  EXPECT_EQ(env_int(kName, 0, 3, 0), 2);
  setenv(kName, "0", 1);
  EXPECT_EQ(env_int(kName, 0, 3, 1), 0);
}

TEST_F(EnvIntVariable, BadValueThrowsNamingTheVariableAndTheRange) {
  for (const char* bad : {"yes", "4", "-1", "1x"}) {
    setenv(kName, bad, 1);
    try {
      env_int(kName, 0, 3, 0);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(kName), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("from 0 to 3"), std::string::npos) << msg;
    }
  }
}

// env_choice: unset gives the caller's value, a set one goes through the parser (empty included),
// a refused one throws "NAME='value' must be <expected>".
TEST_F(EnvIntVariable, ChoiceGoesThroughItsParser) {
  auto parse = [](std::string_view s) -> std::optional<int> {
    if (s.empty() || s == "auto") return 0;
    if (s == "64") return 64;
    return std::nullopt;
  };
  unsetenv(kName);
  EXPECT_EQ(env_choice(kName, -1, parse, "auto or 64"), -1);
  setenv(kName, "", 1);
  EXPECT_EQ(env_choice(kName, -1, parse, "auto or 64"), 0);
  setenv(kName, "64", 1);
  EXPECT_EQ(env_choice(kName, -1, parse, "auto or 64"), 64);
  setenv(kName, "65", 1);
  try {
    env_choice(kName, -1, parse, "auto or 64");
    ADD_FAILURE() << "no error for '65'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(kName) + "='65' must be auto or 64"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace servekit
