#include <gtest/gtest.h>

#include "servekit/servekit.h"

namespace servekit {
namespace {

TEST(TensorView, ContiguousStridesAndNumel) {
  float buf[24];
  auto t = TensorView::contiguous(buf, DType::kF32, {2, 3, 4});
  EXPECT_EQ(t.ndim, 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.nbytes(), 96u);
  t.strides[2] = 2;
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.str(), "[2, 3, 4] f32 cpu");
}

TEST(TensorView, RejectsNegativeExtentAndTooManyDims) {
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kF32, {2, -1}), Error);
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kF32, {1, 1, 1, 1, 1, 1, 1}), Error);
}

TEST(DType, SizesAndPacking) {
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kE2M1x2), 1u);
  EXPECT_EQ(dtype_pack(DType::kInt4x2), 2);
  EXPECT_EQ(dtype_pack(DType::kF8E4M3), 1);
  EXPECT_EQ(dtype_name(DType::kUE8M0), "ue8m0");
}

TEST(BuildInfo, Reports) {
  EXPECT_NE(build_info().find("servekit"), std::string::npos);
  EXPECT_GE(cuda_device_count(), 0);
}

}  // namespace
}  // namespace servekit
