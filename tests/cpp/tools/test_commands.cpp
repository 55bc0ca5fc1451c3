// The sub-commands run in-process: bad arguments give exit code 2 and one error line; a small
// layer runs and passes its check.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commands.h"

namespace servekit::cli {
namespace {

struct Result {
  int code;
  std::string out, err;
};

Result run(int (*cmd)(int, char**), std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = cmd(static_cast<int>(argv.size()), argv.data());
  Result r{code, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

// Expects exit code 2 and exactly one line "servekit: error: ...<needle>...".
void expect_bad_arguments(const std::vector<std::string>& words, const std::string& needle) {
  const Result r = run(cmd_moe, words);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("servekit: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(MoECommand, BadArguments) {
  expect_bad_arguments({"moe", "--tokens", "4"}, "--preset is required");
  expect_bad_arguments({"moe", "--preset", "no-such-model"}, "no-such-model");
  expect_bad_arguments({"moe", "--preset", "tiny", "--quant", "fp16"}, "fp16");
  expect_bad_arguments({"moe", "--preset", "tiny", "--frobnicate", "1"}, "--frobnicate");
  expect_bad_arguments({"moe", "--preset", "tiny", "--tokens", "0"}, "--tokens=0");
  expect_bad_arguments({"moe", "--preset", "tiny", "--tokens", "many"}, "--tokens='many'");
  expect_bad_arguments({"moe", "--preset", "tiny", "--tokens"}, "--tokens is missing");
  expect_bad_arguments({"moe", "--preset", "tiny", "--device", "tpu"}, "--device='tpu'");
  expect_bad_arguments({"moe", "--preset", "tiny", "--routing", "zipf"}, "--routing='zipf'");
  expect_bad_arguments({"moe", "--preset", "tiny", "--group-size", "64"}, "--group-size");
  expect_bad_arguments({"moe", "--preset", "tiny", "--check=1"}, "--check takes no value");
}

// gpt-oss-120b has H = 2880, not a multiple of the 128-column blocks of fp8_block128; the layer
// rejects the configuration before any weight is generated.
TEST(MoECommand, CombinationTheLayerRejects) {
  const Result r = run(cmd_moe, {"moe", "--preset", "gpt-oss-120b", "--tokens", "1", "--quant",
                                 "fp8_block128", "--device", "cpu"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("servekit: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("2880"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(MoECommand, TinyLayerRunsAndPassesItsCheck) {
  const Result r = run(cmd_moe, {"moe", "--preset", "tiny", "--tokens", "7", "--quant",
                                 "int4_w4a16", "--group-size", "32", "--device", "cpu", "--routing",
                                 "skewed", "--seed", "5", "--check", "--repeats", "1"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("tiny"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int4_w4a16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skewed"), std::string::npos) << r.out;
  const size_t last = r.out.rfind('\n', r.out.size() - 2);
  const std::string last_line = r.out.substr(last == std::string::npos ? 0 : last + 1);
  EXPECT_EQ(last_line.rfind("check: pass rel_l2=", 0), 0u) << r.out;
  EXPECT_NE(last_line.find(" tol="), std::string::npos) << r.out;
}

TEST(MoECommand, HelpExitsZero) {
  const Result r = run(cmd_moe, {"moe", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--preset NAME"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tiny"), std::string::npos) << r.out;
}

TEST(InfoCommand, PrintsVersionAndDevicesAndRejectsFlags) {
  const Result ok = run(cmd_info, {"info"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("servekit 0."), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("cuda devices:"), std::string::npos) << ok.out;
  const Result bad = run(cmd_info, {"info", "--verbose"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown flag --verbose"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace servekit::cli
