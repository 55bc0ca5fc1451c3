#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args.h"
#include "servekit/error.h"

namespace servekit::cli {
namespace {

const std::vector<FlagSpec> kSpec = {
    {"tokens", true}, {"quant", true}, {"scale", true}, {"offset", true}, {"check", false}};

Args parse(const std::vector<std::string>& words) {
  return Args(words, kSpec);
}

// The message of the servekit::Error that fn throws ("" if it throws none).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const std::vector<std::string>& words) {
  return error_of([&] { parse(words); });
}

TEST(Args, SpaceAndEqualsFormsAndSwitches) {
  const Args a = parse({"--tokens", "17", "--quant=fp8_block128", "--check", "--scale=2.5"});
  EXPECT_EQ(a.get_int("tokens", 0), 17);
  EXPECT_EQ(a.get_string("quant", ""), "fp8_block128");
  EXPECT_TRUE(a.has("check"));
  EXPECT_DOUBLE_EQ(a.get_double("scale", 0), 2.5);
  EXPECT_FALSE(a.has("offset"));
}

TEST(Args, FallbacksWhenAbsent) {
  const Args a = parse({});
  EXPECT_FALSE(a.has("check"));
  EXPECT_EQ(a.get_int("tokens", 8, 1, 100), 8);
  EXPECT_EQ(a.get_uint("offset", 42u), 42u);
  EXPECT_EQ(a.get_string("quant", "bf16"), "bf16");
  EXPECT_EQ(a.get_choice("quant", "bf16", {"bf16", "int4"}), "bf16");
  EXPECT_DOUBLE_EQ(a.get_double("scale", -1.5), -1.5);
}

TEST(Args, NegativeNumberIsAValueNotAFlag) {
  const Args a = parse({"--offset", "-3", "--scale", "-0.25"});
  EXPECT_EQ(a.get_int("offset", 0), -3);
  EXPECT_DOUBLE_EQ(a.get_double("scale", 0), -0.25);
}

TEST(Args, UnknownFlagNamesItAndTheValidOnes) {
  const std::string msg = parse_error({"--tokens", "4", "--bogus", "1"});
  EXPECT_NE(msg.find("unknown flag --bogus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--tokens, --quant, --scale, --offset, --check"), std::string::npos) << msg;
}

TEST(Args, MissingValue) {
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"--tokens"}, {"--tokens", "--check"}, {"--tokens="}}) {
    const std::string msg = parse_error(words);
    EXPECT_NE(msg.find("flag --tokens is missing its value"), std::string::npos) << msg;
  }
}

TEST(Args, SwitchTakesNoValue) {
  const std::string msg = parse_error({"--check=yes"});
  EXPECT_NE(msg.find("flag --check takes no value, got 'yes'"), std::string::npos) << msg;
}

TEST(Args, RepeatedFlagAndPositionalArgument) {
  EXPECT_NE(parse_error({"--tokens", "1", "--tokens=2"}).find("--tokens given more than once"),
            std::string::npos);
  EXPECT_NE(parse_error({"tokens"}).find("unexpected argument 'tokens'"), std::string::npos);
  EXPECT_NE(parse_error({"-t", "3"}).find("unexpected argument '-t'"), std::string::npos);
  EXPECT_NE(parse_error({"--"}).find("unexpected argument '--'"), std::string::npos);
}

TEST(Args, BadNumbersNameTheFlagAndTheValue) {
  for (const std::string bad : {"abc", "5x", " 5", "+5", "1.5", "99999999999999999999"}) {
    const Args a = parse({"--tokens=" + bad});
    const std::string msg = error_of([&] { a.get_int("tokens", 0); });
    EXPECT_NE(msg.find("flag --tokens='" + bad + "' is not an integer"), std::string::npos) << msg;
  }
  const Args neg = parse({"--offset", "-1", "--scale", "x1"});
  EXPECT_NE(error_of([&] { neg.get_uint("offset", 0); }).find("--offset='-1'"), std::string::npos);
  EXPECT_NE(error_of([&] { neg.get_double("scale", 0); }).find("--scale='x1' is not a finite"),
            std::string::npos);
  const Args inf = parse({"--scale", "inf"});
  EXPECT_NE(error_of([&] { inf.get_double("scale", 0); }).find("not a finite number"),
            std::string::npos);
}

TEST(Args, IntegerRange) {
  const Args a = parse({"--tokens", "0"});
  const std::string msg = error_of([&] { a.get_int("tokens", 8, 1, 1024); });
  EXPECT_NE(msg.find("flag --tokens=0 is out of range [1, 1024]"), std::string::npos) << msg;
  EXPECT_EQ(parse({"--tokens", "1024"}).get_int("tokens", 8, 1, 1024), 1024);
}

TEST(Args, ChoiceListsTheValidValues) {
  const Args a = parse({"--quant", "fp16"});
  const std::string msg = error_of([&] { a.get_choice("quant", "bf16", {"bf16", "int4"}); });
  EXPECT_NE(msg.find("flag --quant='fp16' is not one of: bf16, int4"), std::string::npos) << msg;
}

TEST(Args, ArgvFormSkipsTheSubCommand) {
  const char* words[] = {"moe", "--tokens", "3"};
  const Args a(3, const_cast<char**>(words), kSpec);
  EXPECT_EQ(a.get_int("tokens", 0), 3);
}

TEST(Args, WantsHelp) {
  const char* with[] = {"moe", "--tokens", "3", "-h"};
  const char* without[] = {"moe", "--tokens", "3"};
  EXPECT_TRUE(wants_help(4, const_cast<char**>(with)));
  EXPECT_FALSE(wants_help(3, const_cast<char**>(without)));
}

TEST(Args, ReportErrorPrintsOneLine) {
  testing::internal::CaptureStderr();
  const int code = report_error("first\nsecond\n", 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err, "servekit: error: first; second\n");
}

TEST(Args, WithoutLocationDropsOnlyAFileLineSuffix) {
  EXPECT_EQ(without_location("flag --tokens=0 is out of range (/src/tools/args.cpp:79)"),
            "flag --tokens=0 is out of range");
  EXPECT_EQ(without_location("bad (valid: a, b)"), "bad (valid: a, b)");
  EXPECT_EQ(without_location("bad (valid: a:b)"), "bad (valid: a:b)");
  EXPECT_EQ(without_location("bad (x.cpp:12a)"), "bad (x.cpp:12a)");
  EXPECT_EQ(without_location("no suffix"), "no suffix");
  std::string thrown;
  try {
    SERVEKIT_FAIL("moe: experts.hidden_size=2880 must be a multiple of 128 (the weight block)");
  } catch (const Error& e) {
    thrown = e.what();
  }
  EXPECT_EQ(without_location(thrown),
            "moe: experts.hidden_size=2880 must be a multiple of 128 (the weight block)");
}

}  // namespace
}  // namespace servekit::cli
