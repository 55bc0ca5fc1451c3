// servekit/tensor.h — a non-owning view of a strided tensor on the host or a CUDA device.
//
// The library never owns caller memory: every op takes TensorViews (data pointer, dtype, shape,
// strides in elements, device). Shapes count storage elements (see dtype.h for packed types).
// An empty view (data == nullptr, ndim == 0) stands for "not given" in optional arguments.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "servekit/dtype.h"
#include "servekit/error.h"

namespace servekit {

enum class DeviceType : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // CUDA ordinal; 0 for the CPU

  static Device cpu() { return {DeviceType::kCPU, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::kCUDA, i}; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const {
    return type == DeviceType::kCPU ? std::string("cpu") : "cuda:" + std::to_string(index);
  }
};

struct TensorView {
  static constexpr int kMaxDims = 6;

  void* data = nullptr;
  DType dtype = DType::kF32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<int64_t, kMaxDims> strides{};  // in storage elements
  Device device{};

  // A contiguous (row-major) view. Throws servekit::Error for more than kMaxDims dimensions
  // or a negative extent.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::cpu()) {
    TensorView t;
    SERVEKIT_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), "tensor: ndim=", shape.size(),
                   " exceeds the maximum of ", kMaxDims);
    t.data = data;
    t.dtype = dtype;
    t.device = device;
    t.ndim = static_cast<int>(shape.size());
    int i = 0;
    for (int64_t s : shape) {
      SERVEKIT_CHECK(s >= 0, "tensor: dimension ", i, " has negative extent ", s);
      t.shape[i++] = s;
    }
    int64_t stride = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      t.strides[d] = stride;
      stride *= t.shape[d];
    }
    return t;
  }

  bool defined() const { return data != nullptr || ndim > 0; }
  int64_t size(int d) const { return shape[d < 0 ? d + ndim : d]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool is_contiguous() const {
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != stride) return false;
      stride *= shape[d];
    }
    return true;
  }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  // "[8, 7168] bf16 cuda:0"
  std::string str() const {
    std::string s = "[";
    for (int d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s + "] " + std::string(dtype_name(dtype)) + " " + device.str();
  }
};

}  // namespace servekit
