#!/usr/bin/env sh
# Usage: expect_error.sh CODE PROGRAM ARGS...
# Passes when PROGRAM exits with CODE and prints exactly one line on stderr, starting with
# "servekit: error: " (the program's contract for bad arguments).
want=$1
shift
err=$("$@" 2>&1 >/dev/null)
rc=$?
lines=$(printf '%s\n' "$err" | wc -l)
echo "exit code $rc, stderr: $err"
[ "$rc" -eq "$want" ] || { echo "expected exit code $want"; exit 1; }
[ "$lines" -eq 1 ] || { echo "expected one line on stderr, got $lines"; exit 1; }
case $err in
  "servekit: error: "*) exit 0 ;;
  *) echo "expected the line to start with 'servekit: error: '"; exit 1 ;;
esac
