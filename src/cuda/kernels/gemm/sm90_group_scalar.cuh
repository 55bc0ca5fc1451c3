// A leaf of a CUTLASS sm90 epilogue visitor tree (EVT): the current group's scalar, read by the
// math warps from a [G] array of pointers (fp8_per_tensor's alpha: act scale x weight scale of
// group g). Unlike CUTLASS 4.2's Sm90ScalarBroadcastPtrArray it reports no producer load, so the
// ptr-array epilogue's producer warp stays idle and the math warps do not wait on empty load
// stages every subtile (docs/perf-notes.md, twenty-fifth and twenty-sixth passes). Internal
// header of sm90_grouped_gemm.cuh.
#pragma once

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>

namespace servekit::cuda::gemm {

template <class Element>
struct Sm90GroupScalar {
  struct SharedStorage {};
  struct Arguments {
    Element const* const* ptr_array = nullptr;  // [G]: the scalar of group g at *ptr_array[g]
  };
  using Params = Arguments;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args,
                                                  void*) {
    return args;
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const& args) {
    return args.ptr_array != nullptr;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&) {
    return 0;
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*,
                                              cudaStream_t, cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }

  CUTLASS_HOST_DEVICE Sm90GroupScalar() {}
  CUTLASS_HOST_DEVICE Sm90GroupScalar(Params const& params, SharedStorage const&)
      : params_(params) {}

  CUTLASS_DEVICE bool is_producer_load_needed() const { return false; }
  CUTLASS_DEVICE bool is_C_load_needed() const { return false; }

  template <class... Args>
  CUTLASS_DEVICE auto get_producer_load_callbacks(
      cutlass::epilogue::fusion::ProducerLoadArgs<Args...> const&) {
    return cutlass::epilogue::fusion::EmptyProducerLoadCallbacks{};
  }

  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks {
    Element scalar;
    template <class ElementAccumulator, int FragmentSize>
    CUTLASS_DEVICE cutlass::Array<Element, FragmentSize> visit(
        cutlass::Array<ElementAccumulator, FragmentSize> const&, int, int, int) {
      cutlass::Array<Element, FragmentSize> out;
      out.fill(scalar);
      return out;
    }
  };

  // Once per tile: the tile's group is its L coordinate.
  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(
      cutlass::epilogue::fusion::ConsumerStoreArgs<Args...> const& args) {
    const int group = static_cast<int>(cute::get<3>(args.tile_coord_mnkl));
    ConsumerStoreCallbacks callbacks;
    callbacks.scalar = *params_.ptr_array[group];
    return callbacks;
  }

 private:
  Params params_{};
};

}  // namespace servekit::cuda::gemm
