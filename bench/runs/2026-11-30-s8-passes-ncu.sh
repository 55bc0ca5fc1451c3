#!/usr/bin/env bash
# Device call, session 8: in-kernel durations (ncu, kernels serialised, caches flushed) of the
# dynamic path's fixed passes at decode sizes, to set against their graph-timed increments from
# SERVEKIT_DIAG_DYNAMIC_STOP (docs/perf-notes.md, eighth pass): is the activation's ~10 us the
# kernel or the graph node around it? deepseek-v3 fp8_block128 at 8 tokens, one forward.
# Run (carry [".deps"], timeout_s 240): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-passes-ncu.sh
# Output: OUT/ncu.csv, OUT/ncu.log, OUT/table.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/ncu.log"
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/ncu.log"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
timeout 150 "$NCU" --clock-control none --csv --page raw \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size \
  --kernel-name 'regex:route|plan|gather_rows|write_group_arguments|device_kernel|activation_rows|combine_rows' \
  --launch-count 10 --log-file "$OUT/ncu.csv" \
  "$B/servekit" bench moe --preset deepseek-v3 --quant fp8_block128 --tokens 8 --routing uniform \
  --path dynamic --repeats 1 --warmup 0 --peer off --check-tokens 1 >>"$OUT/ncu.log" 2>&1
echo "ncu rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/ncu.log"
python3 - "$OUT/ncu.csv" >"$OUT/table.txt" 2>&1 <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
hdr = rows[0]
def col(name):
    return next(i for i, h in enumerate(hdr) if h == name)
k, t, g, b = col("Kernel Name"), col("gpu__time_duration.sum"), col("launch__grid_size"), col("dram__bytes_read.sum")
for r in rows[2:]:
    print(f"{r[k][:70]:70} {r[t]:>10} ns  grid {r[g]:>6}  dram read {r[b]}")
PY
cat "$OUT/table.txt"
