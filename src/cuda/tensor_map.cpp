#include "cuda/tensor_map.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include "servekit/error.h"

namespace servekit::cuda {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's encoder through the runtime (the library does not link libcuda).
EncodeTiled encoder() {
  static const EncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                             cudaEnableDefault, &q);
    return err == cudaSuccess && q == cudaDriverEntryPointSuccess ? reinterpret_cast<EncodeTiled>(p)
                                                                  : nullptr;
  }();
  return fn;
}

}  // namespace

static_assert(sizeof(CUtensorMap) == kTensorMapBytes && alignof(CUtensorMap) >= kTensorMapAlign,
              "CUtensorMap layout");

void encode_bf16_row_map(void* map, const void* base, int64_t rows, int64_t cols) {
  SERVEKIT_CHECK(map != nullptr && reinterpret_cast<uintptr_t>(map) % kTensorMapAlign == 0,
                 "encode_bf16_row_map: map must be ", kTensorMapAlign, "-byte aligned");
  SERVEKIT_CHECK(base != nullptr && reinterpret_cast<uintptr_t>(base) % 16 == 0,
                 "encode_bf16_row_map: the source must be a 16-byte aligned device pointer");
  SERVEKIT_CHECK(rows > 0 && rows < (int64_t{1} << 31), "encode_bf16_row_map: rows=", rows,
                 " must be in [1, 2^31)");
  SERVEKIT_CHECK(cols >= 64 && cols < (int64_t{1} << 31) && cols % 8 == 0,
                 "encode_bf16_row_map: cols=", cols, " must be >= 64, < 2^31 and a multiple of 8");
  const EncodeTiled encode = encoder();
  SERVEKIT_CHECK(encode != nullptr,
                 "encode_bf16_row_map: the driver has no cuTensorMapEncodeTiled (CUDA >= 12.0)");
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};  // bytes between rows
  const cuuint32_t box[2] = {64, 1};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode(static_cast<CUtensorMap*>(map), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                            const_cast<void*>(base), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  SERVEKIT_CHECK(r == CUDA_SUCCESS, "encode_bf16_row_map: cuTensorMapEncodeTiled failed (",
                 static_cast<int>(r), ") for rows=", rows, " cols=", cols);
}

}  // namespace servekit::cuda
