// Counter-based random data: value i of a (seed, stream) sequence is a SplitMix64 hash of the
// sequence key and i, so any slice is generated alone and fills may be split across threads
// without changing a single bit.
#include "core/random_data.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "servekit/formats.h"

namespace servekit {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// The SplitMix64 output function (Steele, Lea, Flood 2014).
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t sequence_key(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed + kGolden) ^ mix64(stream * kGolden + 0x632BE59BD9B4E019ull));
}

uint64_t hash_at(uint64_t key, uint64_t i) {
  return mix64(key + (i + 1) * kGolden);
}

// 24 random bits to the open interval (-1, 1), symmetric around 0.
float to_signed_unit(uint64_t bits24) {
  return static_cast<float>((static_cast<double>(bits24) + 0.5) * 0x1p-23 - 1.0);
}

// Streams of the generators below: a tag in the top byte keeps them apart.
enum StreamTag : uint64_t {
  kExpertTag = 1,
  kLogitsTag = 2,
  kShuffleTag = 3,
  kBiasTag = 4,
  kHiddenTag = 5,
};
uint64_t tagged(StreamTag tag, uint64_t id) {
  return (static_cast<uint64_t>(tag) << 56) | id;
}

// Runs f(begin, end) over [0, n), split across hardware threads for large n.
template <typename F>
void parallel_range(size_t n, F f) {
  constexpr size_t kSerialBelow = size_t{1} << 20;
  const size_t workers =
      n < kSerialBelow ? 1 : std::max<size_t>(1, std::thread::hardware_concurrency());
  if (workers == 1) {
    f(size_t{0}, n);
    return;
  }
  const size_t step = (n + workers - 1) / workers;
  std::vector<std::thread> threads;
  for (size_t b = step; b < n; b += step) threads.emplace_back(f, b, std::min(n, b + step));
  f(size_t{0}, std::min(n, step));
  for (std::thread& t : threads) t.join();
}

}  // namespace

void fill_uniform_f32(uint64_t seed, uint64_t stream, float* out, size_t n, float scale) {
  const uint64_t key = sequence_key(seed, stream);
  parallel_range(n, [=](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) out[i] = scale * to_signed_unit(hash_at(key, i) >> 40);
  });
}

void fill_uniform_bf16(uint64_t seed, uint64_t stream, uint16_t* out, size_t n, float scale) {
  const uint64_t key = sequence_key(seed, stream);
  parallel_range(n, [=](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i)
      out[i] = float_to_bf16(scale * to_signed_unit(hash_at(key, i) >> 40));
  });
}

void fill_normal_f32(uint64_t seed, uint64_t stream, float* out, size_t n, float stddev) {
  // Irwin-Hall: four U(-1, 1) have variance 4/3; two 64-bit hashes give the four 24-bit draws.
  const uint64_t key = sequence_key(seed, stream);
  const float norm = stddev / std::sqrt(4.0f / 3.0f);
  parallel_range(n, [=](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const uint64_t a = hash_at(key, 2 * i), c = hash_at(key, 2 * i + 1);
      const float sum = to_signed_unit(a >> 40) + to_signed_unit((a >> 8) & 0xFFFFFF) +
                        to_signed_unit(c >> 40) + to_signed_unit((c >> 8) & 0xFFFFFF);
      out[i] = norm * sum;
    }
  });
}

ExpertWeightsView HostExpert::view(const MoEConfig& cfg) {
  const int64_t R = w13_rows(cfg), H = cfg.experts.hidden_size, I = cfg.experts.intermediate_size;
  SERVEKIT_CHECK(
      w13.size() == static_cast<size_t>(R * H) && w2.size() == static_cast<size_t>(H * I),
      "HostExpert::view: weights hold ", w13.size(), " and ", w2.size(),
      " values, the config needs [", R, ", ", H, "] and [", H, ", ", I, "]");
  ExpertWeightsView v;
  v.w13 = TensorView::contiguous(w13.data(), DType::kBF16, {R, H});
  v.w2 = TensorView::contiguous(w2.data(), DType::kBF16, {H, I});
  if (!w13_bias.empty()) v.w13_bias = TensorView::contiguous(w13_bias.data(), DType::kF32, {R});
  if (!w2_bias.empty()) v.w2_bias = TensorView::contiguous(w2_bias.data(), DType::kF32, {H});
  return v;
}

HostExpert make_random_expert(const MoEConfig& cfg, uint64_t seed, int index, bool with_bias) {
  const int total = cfg.routing.num_experts + cfg.experts.num_shared_experts;
  SERVEKIT_CHECK(index >= 0 && index < total, "make_random_expert: index=", index,
                 " must be in [0, num_experts + num_shared_experts=", total, ")");
  const int64_t R = w13_rows(cfg), H = cfg.experts.hidden_size, I = cfg.experts.intermediate_size;
  const uint64_t id = static_cast<uint64_t>(index) << 2;
  HostExpert e;
  e.w13.resize(static_cast<size_t>(R * H));
  e.w2.resize(static_cast<size_t>(H * I));
  // Uniform weights of variance 1/fan_in keep x·Wᵀ at the variance of x.
  fill_uniform_bf16(seed, tagged(kExpertTag, id), e.w13.data(), e.w13.size(),
                    std::sqrt(3.0f / static_cast<float>(H)));
  fill_uniform_bf16(seed, tagged(kExpertTag, id + 1), e.w2.data(), e.w2.size(),
                    std::sqrt(3.0f / static_cast<float>(I)));
  if (with_bias) {
    // Biases U(-0.5, 0.5): large enough that dropping one is a visible error, small enough to
    // keep the activations O(1).
    e.w13_bias.resize(static_cast<size_t>(R));
    e.w2_bias.resize(static_cast<size_t>(H));
    fill_uniform_f32(seed, tagged(kExpertTag, id + 2), e.w13_bias.data(), e.w13_bias.size(), 0.5f);
    fill_uniform_f32(seed, tagged(kExpertTag, id + 3), e.w2_bias.data(), e.w2_bias.size(), 0.5f);
  }
  return e;
}

std::vector<float> make_router_logits(uint64_t seed, int64_t tokens, int num_experts,
                                      RoutingSkew skew, int top_k) {
  SERVEKIT_CHECK(tokens >= 0 && num_experts >= 1, "make_router_logits: tokens=", tokens,
                 " and num_experts=", num_experts, " must be >= 0 and >= 1");
  const bool balanced = skew == RoutingSkew::kBalanced;
  SERVEKIT_CHECK(!balanced || (top_k >= 1 && top_k <= num_experts),
                 "make_router_logits: balanced routing needs top_k in [1, num_experts=",
                 num_experts, "], got ", top_k);
  std::vector<float> logits(static_cast<size_t>(tokens * num_experts));
  fill_normal_f32(seed, tagged(kLogitsTag, 0), logits.data(), logits.size(),
                  balanced ? 0.1f : 1.0f);
  if (balanced) {
    for (int64_t t = 0; t < tokens; ++t) {
      float* row = logits.data() + t * num_experts;
      for (int e = 0; e < num_experts; ++e) row[e] -= 4.0f;
      const int64_t first = t * top_k % num_experts;
      for (int j = 0; j < top_k; ++j) row[(first + j) % num_experts] += 8.0f;
    }
  } else if (skew == RoutingSkew::kSkewed) {
    std::vector<int> perm(static_cast<size_t>(num_experts));
    std::iota(perm.begin(), perm.end(), 0);
    const uint64_t key = sequence_key(seed, tagged(kShuffleTag, 0));
    for (int j = num_experts - 1; j > 0; --j)
      std::swap(perm[j], perm[hash_at(key, static_cast<uint64_t>(j)) % (j + 1)]);
    for (int64_t t = 0; t < tokens; ++t)
      for (int j = 0; j < num_experts; ++j)
        logits[t * num_experts + perm[j]] += 6.0f / static_cast<float>(1 + j);
  } else if (skew == RoutingSkew::kOneExpert) {
    const uint64_t key = sequence_key(seed, tagged(kShuffleTag, 1));
    const int64_t hot = static_cast<int64_t>(hash_at(key, 0) % static_cast<uint64_t>(num_experts));
    for (float& v : logits) v -= 4.0f;
    for (int64_t t = 0; t < tokens; ++t) logits[t * num_experts + hot] += 34.0f;
  }
  return logits;
}

const char* routing_skew_name(RoutingSkew skew) {
  switch (skew) {
    case RoutingSkew::kUniform:
      return "uniform";
    case RoutingSkew::kSkewed:
      return "skewed";
    case RoutingSkew::kOneExpert:
      return "one";
    case RoutingSkew::kBalanced:
      return "balanced";
    case RoutingSkew::kBiased:
      return "biased";
  }
  return "?";
}

RoutingSkew parse_routing_skew(const std::string& name) {
  for (RoutingSkew s : {RoutingSkew::kUniform, RoutingSkew::kSkewed, RoutingSkew::kOneExpert,
                        RoutingSkew::kBalanced, RoutingSkew::kBiased})
    if (name == routing_skew_name(s)) return s;
  SERVEKIT_FAIL("routing=", name, " must be uniform, skewed, one, balanced or biased");
}

std::vector<float> make_correction_bias(uint64_t seed, int num_experts, float scale) {
  SERVEKIT_CHECK(scale >= 0.0f, "make_correction_bias: scale=", scale, " must be >= 0");
  std::vector<float> bias(static_cast<size_t>(std::max(num_experts, 0)));
  fill_uniform_f32(seed, tagged(kBiasTag, 0), bias.data(), bias.size(), scale);
  return bias;
}

float correction_bias_scale(RoutingSkew skew) {
  return skew == RoutingSkew::kUniform ? 0.001f : 0.1f;
}

std::vector<uint16_t> make_hidden(uint64_t seed, int64_t tokens, int64_t hidden) {
  SERVEKIT_CHECK(tokens >= 0 && hidden >= 0, "make_hidden: tokens=", tokens, " and hidden=", hidden,
                 " must be >= 0");
  std::vector<float> values(static_cast<size_t>(tokens * hidden));
  fill_normal_f32(seed, tagged(kHiddenTag, 0), values.data(), values.size(), 1.0f);
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bf16(values[i]);
  return bits;
}

}  // namespace servekit
