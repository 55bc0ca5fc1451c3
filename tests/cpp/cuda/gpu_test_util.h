// Shared helpers of the GPU tests: skip with a visible message when no device is present.
#pragma once

#include <gtest/gtest.h>

#include "servekit/servekit.h"

// Skips the current test (visibly, in the gtest output and ctest log) without a CUDA device.
#define SERVEKIT_REQUIRE_GPU()                                                          \
  do {                                                                                  \
    if (::servekit::cuda_device_count() == 0)                                           \
      GTEST_SKIP() << "no CUDA device: GPU test skipped (run scripts/gpu-check.sh on a GPU)"; \
  } while (0)
