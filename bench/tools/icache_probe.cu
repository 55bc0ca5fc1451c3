// Cold-code probe for docs/perf-notes.md (twenty-ninth pass, Next): what straight-line code that
// runs once costs when its instructions are not cached. Session 29 timed one warp's ~1-2 KB
// one-shot chain at 11-16 us after the benchmark's L2 flush, and session 19 put ~5 us of the
// one-token routing on instruction fetch; neither measured the fetch itself. Here a kernel runs
// a chain of N steps of straight-line code (each step an add of a runtime value and an xor with
// its own constant: two SASS instructions, 32 bytes, that ptxas cannot fold), and its warp 0
// stamps the global timer around the chain. Cases, per N:
//   cold   after an L2 flush (a 256 MB write) and a different kernel of as much code on every SM
//          (so neither L2 nor the SMs' instruction caches hold the chain)
//   warm   the same launch again at once
//   l2cold after the L2 flush only (the SMs may still hold the lines)
// each on one CTA (one warp fetching) and on 2 CTAs per SM (every SM missing the same lines at
// once, like a GEMM's first code after its release). The per-KB cost of cold code is
// (cold - warm) / code KB. Build and run on the device:
//   nvcc -O3 -arch=sm_90a -o icache_probe bench/tools/icache_probe.cu && ./icache_probe
#include <algorithm>
#include <cstdio>
#include <utility>

#include "probe_util.cuh"

__device__ __forceinline__ uint64_t timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One step: x = (x + y) ^ kConst.
template <int kConst>
__device__ __forceinline__ void step(uint32_t& x, uint32_t y) {
  asm volatile("add.u32 %0, %0, %1;\n\txor.b32 %0, %0, %2;" : "+r"(x) : "r"(y), "n"(kConst));
}

template <uint32_t kSalt, int... Is>
__device__ __forceinline__ uint32_t chain(uint32_t x, uint32_t y,
                                          std::integer_sequence<int, Is...>) {
  (step<static_cast<int>((static_cast<uint32_t>(Is) * 2654435761u) ^ kSalt)>(x, y), ...);
  return x;
}

// out[blockIdx.x]: the chain's result (kept alive); ns[blockIdx.x]: warp 0's time in the chain.
template <int kSteps, uint32_t kSalt>
__global__ void straight(uint32_t y, uint32_t* out, uint64_t* ns) {
  const uint64_t t0 = timer_ns();
  const uint64_t c0 = clock64();
  const uint32_t x = chain<kSalt>(threadIdx.x, y, std::make_integer_sequence<int, kSteps>{});
  const uint64_t c1 = clock64();
  const uint64_t t1 = timer_ns();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = x;
    ns[blockIdx.x] = t1 - t0;
    ns[1024 + blockIdx.x] = c1 - c0;  // SM cycles: the global timer ticks in ~0.25 us steps
  }
}

__global__ void flush_kernel(uint4* b, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    b[i] = make_uint4(static_cast<unsigned>(i), 1, 2, 3);
}

// Jumps into cold code (session 30: one warp's top-k, a loop with data-dependent branches in a
// noinline function, took 4.6-6 us at a GEMM's start where the straight-line chains above cost
// nothing extra cold). kBlocks distinct noinline blocks of 16 steps (~512 bytes each), called
// through a table of function pointers in a runtime order: sequential (0, 1, 2, ...: the next
// block's code follows the previous one's) or scrambled (every call jumps somewhere else). The
// cold cost per block, (cold - warm) / kBlocks, is what each jump to code not yet fetched costs.
using BlockFn = uint32_t (*)(uint32_t, uint32_t);
template <int J>
__device__ __noinline__ uint32_t code_block(uint32_t x, uint32_t y) {
  return chain<0x9e3779b9u * (J + 1)>(x, y, std::make_integer_sequence<int, 16>{});
}
template <int... Js>
__global__ void fill_table(BlockFn* t, std::integer_sequence<int, Js...>) {
  ((t[Js] = &code_block<Js>), ...);
}
__global__ void jumpy(const BlockFn* t, const int* order, int n, uint32_t y, uint32_t* out,
                      uint64_t* ns) {
  const uint64_t t0 = timer_ns();
  const uint64_t c0 = clock64();
  uint32_t x = threadIdx.x;
  for (int i = 0; i < n; ++i) x = t[order[i]](x, y);
  const uint64_t c1 = clock64();
  const uint64_t t1 = timer_ns();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = x;
    ns[blockIdx.x] = t1 - t0;
    ns[1024 + blockIdx.x] = c1 - c0;
  }
}

struct Probe {
  uint4* flush = nullptr;
  size_t flush_n = 0;
  uint32_t* out = nullptr;
  uint64_t* ns = nullptr;
  int sms = 0;
};

void flush_l2(const Probe& p) {
  flush_kernel<<<p.sms * 4, 256>>>(p.flush, p.flush_n);
  CHECK(cudaDeviceSynchronize());
}

// Median and max of warp 0's chain time over the launch's CTAs, in us.
void report(const char* what, int steps, int ctas, const Probe& p) {
  uint64_t h[1024], c[1024];
  CHECK(cudaMemcpy(h, p.ns, sizeof(uint64_t) * ctas, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(c, p.ns + 1024, sizeof(uint64_t) * ctas, cudaMemcpyDeviceToHost));
  std::sort(h, h + ctas);
  std::sort(c, c + ctas);
  std::printf("steps %5d (%6.1f KB of code) %-12s ctas %4d: p50 %8.2f us max %8.2f us"
              "  cycles p50 %8llu max %8llu\n",
              steps, steps * 32 / 1024.0, what, ctas, h[ctas / 2] * 1e-3, h[ctas - 1] * 1e-3,
              static_cast<unsigned long long>(c[ctas / 2]),
              static_cast<unsigned long long>(c[ctas - 1]));
}

template <int kSteps>
void run(const Probe& p) {
  for (int ctas : {1, 2 * p.sms}) {
    // cold: L2 flushed, and every SM ran another kernel of as much code first
    flush_l2(p);
    straight<kSteps, 0x5bd1e995u><<<2 * p.sms, 32>>>(7, p.out, p.ns);
    CHECK(cudaDeviceSynchronize());
    flush_l2(p);
    straight<kSteps, 0u><<<ctas, 32>>>(3, p.out, p.ns);
    CHECK(cudaDeviceSynchronize());
    report("cold", kSteps, ctas, p);
    straight<kSteps, 0u><<<ctas, 32>>>(3, p.out, p.ns);
    CHECK(cudaDeviceSynchronize());
    report("warm", kSteps, ctas, p);
    flush_l2(p);
    straight<kSteps, 0u><<<ctas, 32>>>(3, p.out, p.ns);
    CHECK(cudaDeviceSynchronize());
    report("l2cold", kSteps, ctas, p);
  }
}

// kBlocks code blocks called in order (sequential) or in a fixed scramble, cold / warm as run().
template <int kBlocks>
void run_jumps(const Probe& p) {
  BlockFn* table = nullptr;
  int* order = nullptr;
  CHECK(cudaMalloc(&table, kBlocks * sizeof(BlockFn)));
  CHECK(cudaMalloc(&order, kBlocks * sizeof(int)));
  fill_table<<<1, 1>>>(table, std::make_integer_sequence<int, kBlocks>{});
  CHECK(cudaDeviceSynchronize());
  int h[kBlocks];
  for (int scrambled = 0; scrambled < 2; ++scrambled) {
    for (int i = 0; i < kBlocks; ++i) h[i] = scrambled ? (i * 37 + 11) % kBlocks : i;
    CHECK(cudaMemcpy(order, h, sizeof(h), cudaMemcpyHostToDevice));
    for (int ctas : {1, 2 * p.sms}) {
      flush_l2(p);
      straight<4096, 0x5bd1e995u><<<2 * p.sms, 32>>>(7, p.out, p.ns);  // evict the SMs' caches
      CHECK(cudaDeviceSynchronize());
      flush_l2(p);
      jumpy<<<ctas, 32>>>(table, order, kBlocks, 3, p.out, p.ns);
      CHECK(cudaDeviceSynchronize());
      report(scrambled ? "jmp-scr-cold" : "jmp-seq-cold", kBlocks * 16, ctas, p);
      jumpy<<<ctas, 32>>>(table, order, kBlocks, 3, p.out, p.ns);
      CHECK(cudaDeviceSynchronize());
      report(scrambled ? "jmp-scr-warm" : "jmp-seq-warm", kBlocks * 16, ctas, p);
    }
  }
  CHECK(cudaFree(table));
  CHECK(cudaFree(order));
}

int main() {
  Probe p;
  CHECK(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, 0));
  p.flush_n = (256u << 20) / sizeof(uint4);
  CHECK(cudaMalloc(&p.flush, p.flush_n * sizeof(uint4)));
  CHECK(cudaMalloc(&p.out, 1024 * sizeof(uint32_t)));
  CHECK(cudaMalloc(&p.ns, 2048 * sizeof(uint64_t)));
  std::printf("icache probe: %d SMs\n", p.sms);
  run<64>(p);
  run<256>(p);
  run<1024>(p);
  run<4096>(p);
  run_jumps<16>(p);   // 37 is coprime to every block count here
  run_jumps<64>(p);
  run_jumps<256>(p);
  CHECK(cudaGetLastError());
  return 0;
}
