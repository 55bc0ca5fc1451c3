// The accumulator layout that GEMM1's fused activation store (kernels/gemm/sm90_act_epilogue.cuh)
// relies on, checked on the host with CuTe for the TiledMma of every kernel that fuses: the
// 128x256 cooperative tiles of bf16 and fp8_block128, bf16's swap-AB tiles (cooperative, its
// pair, ping-pong) and the int4 GEMM's tiles. No GPU needed: partition_C of an identity tensor
// is host code, so this runs (and can fail) on every machine, the CI's included.
//
// The fact: within each m64 atom a thread's flat value v = 4j + 2q + b (b, q < 2) sits at row
// r0 + 8q and column c0 + 8j + b, with (r0, c0) the coordinate of its first value and c0 < 8. A
// store that steps by compile-time offsets from one pointer per row (instead of looking every
// value's coordinate up) is right exactly when this holds.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#include <gtest/gtest.h>

#include <string>

#include "cuda/gemm_tile_config.h"
#include "cuda/kernels/gemm/grouped_gemm_runner.cuh"
#include "cuda/kernels/gemm/w4a16_gemm.cuh"

namespace servekit::cuda {
namespace {

// Checks the fact above for every thread of TiledMma over a TileM x TileN tile; values per atom
// along M: the first mode of the partition (its second mode counts the atoms along M).
template <class TiledMma, int TileM, int TileN>
void expect_atom_layout(const std::string& name) {
  using namespace cute;
  TiledMma mma;
  const auto shape = make_shape(Int<TileM>{}, Int<TileN>{});
  int checked = 0;
  for (int t = 0; t < int(size(mma)); ++t) {
    auto coord = mma.get_thread_slice(t).partition_C(make_identity_tensor(shape));
    constexpr int kPerAtom = decltype(size<0>(coord))::value;
    static_assert(kPerAtom % 4 == 0, "an m64 atom holds (2, 2, N/8) values per thread");
    for (int m = 0; m < int(size<1>(coord)); ++m) {
      const int r0 = get<0>(coord(0, m, 0));
      const int c0 = get<1>(coord(0, m, 0));
      ASSERT_LT(c0, 8) << name << " thread " << t;
      ASSERT_EQ(r0 % 16, (t % 32) / 4) << name << " thread " << t;  // rows r and r + 8 of a warp
      for (int v = 0; v < kPerAtom; ++v) {
        const int j = v / 4, q = (v / 2) % 2, b = v % 2;
        ASSERT_EQ(int(get<0>(coord(v, m, 0))), r0 + 8 * q) << name << " thread " << t << " v " << v;
        ASSERT_EQ(int(get<1>(coord(v, m, 0))), c0 + 8 * j + b)
            << name << " thread " << t << " v " << v;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, TileM * TileN) << name << ": every tile element once";
}

template <GemmOperand Op, int TileM, int TileN, int TileK, int CM, int CN, GemmSchedule S,
          bool Swap>
using GroupedMma = typename gemm::Sm90GroupedGemm<Op, TileM, TileN, TileK, CM, CN, S,
                                                  Swap>::CollectiveMainloop::TiledMma;

template <GemmOperand Op, GemmTileConfig (*Config)(GemmOperand)>
void expect_grouped_tile(const std::string& name) {
  constexpr GemmTileConfig t = Config(Op);
  expect_atom_layout<GroupedMma<Op, t.tile_m, t.tile_n, t.tile_k, t.cluster_m, t.cluster_n,
                                t.schedule, t.swap_ab>,
                     t.tile_m, t.tile_n>(name);
}

constexpr GemmTileConfig swap_pp_64(GemmOperand op) { return swap_pp_tile_config(op, 64); }

TEST(ActEpilogueLayout, EveryFusedTileHoldsItsValuesAtCompileTimeOffsets) {
  expect_grouped_tile<GemmOperand::kBF16, compiled_tile_config>("bf16 128x256");
  expect_grouped_tile<GemmOperand::kFP8Block128, compiled_tile_config>("fp8_block128 128x256");
  expect_grouped_tile<GemmOperand::kBF16, swap_ab_tile_config>("bf16 swap-AB");
  expect_grouped_tile<GemmOperand::kBF16, swap_pair_tile_config>("bf16 swap-AB pair");
  expect_grouped_tile<GemmOperand::kBF16, swap_pp_64>("bf16 swap-AB ping-pong");
  expect_atom_layout<typename gemm::W4A16Kernel<64, 1>::Mainloop::TiledMma, 128, 64>("int4 64");
  expect_atom_layout<typename gemm::W4A16Kernel<128, 2>::Mainloop::TiledMma, 128, 128>(
      "int4 128");
  expect_atom_layout<typename gemm::W4A16Kernel<256, 2>::Mainloop::TiledMma, 128, 256>(
      "int4 256");
}

}  // namespace
}  // namespace servekit::cuda
