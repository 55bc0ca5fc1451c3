// Dispatch of GroupedGemm::create to the per-format instantiations, and the per-run choice
// between a format's tiles (bf16: three or four, fp8_block128: two).
#include "core/env.h"
#include "cuda/gemm_tile_pick.h"
#include "cuda/grouped_gemm.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

#include <atomic>
#include <cstdlib>
#include <optional>

namespace servekit::cuda {

namespace {

// SERVEKIT_GEMM_TILE=large|small|swap|pair forces one tile (A/B measurements; a tile the format
// lacks falls back to the 128-row one, pair to the swap tile first); unset, empty or auto: the
// per-run pick. Any other value is an error, not a silent auto.
// SERVEKIT_DIAG_GEMM_TILE_UNFUSED, where set, does the same for the GEMMs whose shape fuses no
// activation (the MoE layer's GEMM2) in place of SERVEKIT_GEMM_TILE, so that an A/B can give the
// layer's two GEMMs different tiles in one binary.
GemmTileChoice tile_choice_from_env(const GroupedGemmShape& shape) {
  const char* name = "SERVEKIT_GEMM_TILE";
  if (!shape.act.enabled && std::getenv("SERVEKIT_DIAG_GEMM_TILE_UNFUSED") != nullptr)
    name = "SERVEKIT_DIAG_GEMM_TILE_UNFUSED";
  return env_choice(name, GemmTileChoice::kAuto, parse_gemm_tile_choice,
                    "auto, large, small, swap or pair");
}

// SERVEKIT_GEMM_PAIR_PICK=auto|host|device (GemmPairPick; unset or empty: auto). Any other value
// is an error.
GemmPairPick pair_pick_from_env() {
  return env_choice("SERVEKIT_GEMM_PAIR_PICK", GemmPairPick::kAuto, parse_gemm_pair_pick,
                    "auto, host or device");
}

// SERVEKIT_GEMM_PP_TILE_K=auto|64|128 (unset or empty: auto, returned as 0). Any other value is
// an error.
int swap_pp_tile_k_from_env() {
  return env_choice("SERVEKIT_GEMM_PP_TILE_K", 0, parse_swap_pp_tile_k, "auto, 64 or 128");
}

using Factory = std::unique_ptr<GroupedGemm> (*)(const GroupedGemmShape&, int);

// bf16's swap-AB factory: the ping-pong tile at the device's k-step, or the cooperative one.
Factory bf16_swap_factory(const GroupedGemmShape& shape, int device) {
  if (!shape.swap_pingpong) return make_grouped_gemm_bf16_swap;
  return swap_pp_tile_k(device) == 128 ? make_grouped_gemm_bf16_swap_pp_k128
                                       : make_grouped_gemm_bf16_swap_pp;
}

// A format's instantiations over one shape (the 128-row tile, and the 64-row, swap-AB and pair
// swap-AB tiles where the format has them: a null factory means none); each run picks by its
// expected rows per group (choose_gemm_tile). The runners own separate argument arrays, so
// alternating between them needs no ordering.
class TileChoosingGemm final : public GroupedGemm {
 public:
  TileChoosingGemm(const GroupedGemmShape& shape, int device, Factory large, Factory small,
                   Factory swap, Factory pair, GemmTileChoice choice, GemmPairPick pair_pick)
      : large_(large(shape, device)),
        small_(small ? small(shape, device) : nullptr),
        swap_(swap ? swap(shape, device) : nullptr),
        pair_(pair ? pair(shape, device) : nullptr),
        choice_(choice),
        pair_pick_(pair_pick) {}

  void run(const GroupedGemmOperands& ops, cudaStream_t stream) const override {
    if (device_picks(ops.rows_hint)) {
      // Both tiles on the same operands; each setup kernel counts the groups' token tiles and
      // only one of the two GEMMs gets non-empty groups (GemmRunGate). The pair's launches wait
      // for the 2x1 GEMM in stream order (no PDL), so whatever follows on the stream, PDL or
      // not, comes after both.
      GroupedGemmOperands o = ops;
      o.gate = GemmRunGate::kUnlessPairPays;
      swap_->run(o, stream);
      o.gate = GemmRunGate::kIfPairPays;
      o.pdl = false;
      pair_->run(o, stream);
      return;
    }
    pick(ops.rows_hint).run(ops, stream);
  }
  std::string tile_name(int64_t rows_hint) const override {
    if (device_picks(rows_hint))
      return gemm_tile_name(swap_->config().tile) + " or " + gemm_tile_name(pair_->config().tile) +
             " (device pick)";
    return GroupedGemm::tile_name(rows_hint);
  }
  const GroupedGemmShape& shape() const override { return large_->shape(); }
  GemmConfig config(int64_t rows_hint) const override { return pick(rows_hint).config(); }
  bool fuses_activation(int64_t rows_hint) const override {
    return pick(rows_hint).fuses_activation();
  }

 private:
  const GroupedGemm& pick(int64_t rows_hint) const {
    switch (kind_for_hint(rows_hint)) {
      case GemmTileKind::kSmall:
        if (small_) return *small_;
        break;
      case GemmTileKind::kSwapPair:
        if (pair_) return *pair_;
        if (swap_) return *swap_;
        break;
      case GemmTileKind::kSwapOrPair:  // run() launches both (device_picks); config() is the 2x1's
        if (swap_) return *swap_;
        break;
      case GemmTileKind::kSwap:
        if (swap_) return *swap_;
        break;
      case GemmTileKind::kLarge:
        break;
    }
    return *large_;
  }

  // Whether a run of rows_hint launches the 2x1 swap tile and its pair, for the device to pick.
  bool device_picks(int64_t rows_hint) const {
    return kind_for_hint(rows_hint) == GemmTileKind::kSwapOrPair && swap_ && pair_;
  }
  // kind_for on a run's rows_hint (0: the shape's capacity_rows).
  GemmTileKind kind_for_hint(int64_t rows_hint) const {
    return kind_for(rows_hint > 0 ? rows_hint : large_->shape().capacity_rows);
  }

  // choose_gemm_tile's padding model costs 2-10 us of host time (it sums over the spread of a
  // group's rows), and a forward asks 2-3 times with the same rows: the last answer is kept,
  // packed as (rows << 3) | kind in one atomic for concurrent forwards.
  GemmTileKind kind_for(int64_t rows) const {
    const int64_t last = last_pick_.load(std::memory_order_relaxed);
    if (last >= 0 && last >> 3 == rows) return static_cast<GemmTileKind>(last & 7);
    // The 128-row tile's fused epilogue tips the balance only where the swap-AB tile has none.
    const bool large_fuses_alone =
        large_->fuses_activation() && !(swap_ && swap_->fuses_activation());
    const GroupedGemmShape& s = large_->shape();
    const GemmTileKind kind = choose_gemm_tile(s.operand, rows / s.num_groups, large_fuses_alone,
                                               choice_, swap_ != nullptr && s.swap_pingpong,
                                               routed_rows_per_group(s.routing, rows, s.num_groups),
                                               s.routing.shared_groups, pair_pick_);
    last_pick_.store(rows << 3 | static_cast<int64_t>(kind), std::memory_order_relaxed);
    return kind;
  }

  std::unique_ptr<GroupedGemm> large_, small_, swap_, pair_;
  GemmTileChoice choice_;
  GemmPairPick pair_pick_;
  mutable std::atomic<int64_t> last_pick_{-1};
};

}  // namespace

int swap_pp_tile_k(int device) {
  const int forced = swap_pp_tile_k_from_env();
  if (forced != 0) return forced;
  cudaDeviceProp prop{};
  SERVEKIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return swap_pp_tile_k_for_device(prop.name);
}

std::unique_ptr<GroupedGemm> GroupedGemm::create(const GroupedGemmShape& shape, int device) {
  const GemmTileChoice choice = tile_choice_from_env(shape);  // a bad value throws for every format
  const GemmPairPick pair_pick = pair_pick_from_env();
  swap_pp_tile_k_from_env();  // a bad value throws for every format, as the two above
  const GemmRoutingHint& r = shape.routing;
  const bool no_hint = r.top_k == 0 && r.shared_groups == 0 && r.experts == 0;
  SERVEKIT_CHECK(
      no_hint || (r.top_k >= 1 && r.experts >= 1 && r.shared_groups >= 0 &&
                  r.shared_groups < shape.num_groups),
      "grouped_gemm: routing hint top_k ", r.top_k, ", shared_groups ", r.shared_groups,
      ", experts ", r.experts, " over ", shape.num_groups,
      " groups: need all 0, or top_k >= 1, experts >= 1 and 0 <= shared_groups < groups");
  switch (shape.operand) {
    // Shape errors are the same for every tile; the large runner reports them first.
    case GemmOperand::kBF16:
      return std::make_unique<TileChoosingGemm>(
          shape, device,
          shape.act.interleave_rows == 64 ? make_grouped_gemm_bf16_w64 : make_grouped_gemm_bf16,
          make_grouped_gemm_bf16_small_m, bf16_swap_factory(shape, device),
          // The pair only where a run can pick it (a GEMM on the ping-pong swap tile has none;
          // the host pick none with shared-expert groups).
          !shape.swap_pingpong && ((kAutoSwapPair && pair_pick_may_run_pair(
                                                         pair_pick, shape.routing.shared_groups)) ||
                                   choice == GemmTileChoice::kPair)
              ? make_grouped_gemm_bf16_swap_pair
              : nullptr,
          choice, pair_pick);
    case GemmOperand::kFP8PerTensor:
      return make_grouped_gemm_fp8_per_tensor(shape, device);
    case GemmOperand::kFP8Block128:
      return std::make_unique<TileChoosingGemm>(shape, device, make_grouped_gemm_fp8_block128,
                                                make_grouped_gemm_fp8_block128_small_m, nullptr,
                                                nullptr, choice, pair_pick);
  }
  SERVEKIT_FAIL("grouped_gemm: unknown operand ", static_cast<int>(shape.operand));
}

}  // namespace servekit::cuda
