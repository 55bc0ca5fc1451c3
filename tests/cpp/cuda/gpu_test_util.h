// Shared helpers of the GPU tests: skip with a visible message when no device is present.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "servekit/servekit.h"

// Skips the current test (visibly, in the gtest output and ctest log) without a CUDA device.
#define SERVEKIT_REQUIRE_GPU()                                                                \
  do {                                                                                        \
    if (::servekit::cuda_device_count() == 0)                                                 \
      GTEST_SKIP() << "no CUDA device: GPU test skipped (run scripts/gpu-check.sh on a GPU)"; \
  } while (0)

namespace servekit::testing {

// Sets an environment variable for one scope (the settings servekit reads at construction,
// e.g. SERVEKIT_GEMM_TILE), or unsets it where value is null, and restores the old value, or its
// absence, when the scope ends, also when an ASSERT leaves the test early.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace servekit::testing
