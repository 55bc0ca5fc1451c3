#!/usr/bin/env bash
# Session 47, first call, any card: GEMM1's activation fused into the int4 GEMM's epilogue (W13
# in 8-row gate/up blocks, sm90_act_epilogue.cuh), and the whole GPU suite (sessions 46's review
# commits 04b7405, 4352249 and 2262ee4 and the pairs as the int4 GEMM's default never ran on a GPU).
#   1. the int4 GEMM's and the int4 layer's tests (the fused epilogue bit for bit against the pass
#      on every tile and cluster; the layer against the CPU reference, fused and not);
#   2. qwen3-235b int4, dynamic path, uniform, 1024-8192 tokens, fused (the default) and
#      SERVEKIT_DYNAMIC_FUSED_ACT=0 (the separate pass), two rounds; kimi-k2 int4 at 4096;
#   3. the whole GPU suite with what is left.
# On an H200 the issues' rows come after step 1 instead of steps 2-3 (scripts/gpu-check.sh's
# issues set, no tests: they ran in step 1 and on the H100s).
# Prediction: fused 3-5% faster at 2048-8192 tokens (GEMM1 writes I instead of 2I bf16 columns,
# and the pass's read of 2I and write of I go: ~0.6 GB of ~8 GB at 8192 tokens), level at 1024.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-15-s47-w4a16-act.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
B=build
work_dir w4a16act
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
say "$name"
build_tests "$W/build.log"
gtest_run w4a16 "$B" 'GroupedGemmCuda.W4A16*:GroupedGemmW4A16Layout.*:MoECuda.W4A16GemmOnAndOff:MoECuda.OddSizes:AllFormats/MoECudaQuant.*/int4_w4a16*' 200
if [[ $name == *H200* ]]; then
  env OUT="$OUT" BENCH_SET=issues RUN_TESTS=0 BUILD_DIR="$B" BUDGET_S=$(($(left) - 10)) \
    scripts/gpu-check.sh >"$W/gpu-check.log" 2>&1
  say "gpu-check rc=$?"
  exit 0
fi
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic)
for round in 0 1; do
  bench_row "q235-fused-$round" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- "${q235[@]}" --tokens 1024,2048,4096,8192
  bench_row "q235-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${q235[@]}" --tokens 1024,2048,4096,8192
done
kimi=(--preset kimi-k2 --quant int4_w4a16 --routing uniform --path dynamic --tokens 4096)
bench_row kimi-fused SERVEKIT_DYNAMIC_FUSED_ACT=1 -- "${kimi[@]}"
bench_row kimi-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${kimi[@]}"
t=$(($(left) - 15))
((t > 60)) && gpu_suite $t
say done
