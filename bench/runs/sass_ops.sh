#!/usr/bin/env bash
# Opcode counts per kernel of `cuobjdump -sass` text on stdin: lines "LABEL KERNEL OPCODE COUNT",
# plus "LABEL KERNEL TOTAL COUNT", sorted by kernel then count. Used by ab-trees.sh (SASS=1) and
# next-sass.sh. Usage: cuobjdump -sass OBJ | bash bench/runs/sass_ops.sh LABEL
awk -v f="${1:-sass}" '/Function :/ {k=$3}
  /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*\*\// {
    line=$0; sub(/^[ \t]*\/\*[0-9a-f]+\*\/[ \t]*/, "", line); sub(/^@!?U?P[0-9T] +/, "", line);
    split(line, w, /[ .;]/); if (w[1] != "") { n[k" "w[1]]++; t[k]++ } }
  END { for (x in n) print f, x, n[x]; for (x in t) print f, x, "TOTAL", t[x] }' |
  sort -k2,2 -k4,4nr
