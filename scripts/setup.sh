#!/usr/bin/env bash
# Installs everything servekit's build and tests need on a fresh Debian machine:
#   system packages from the Debian archive (only when something is missing), and the CUTLASS
#   headers from the PyPI package nvidia-cutlass, unpacked into .deps/cutlass (git-ignored).
# Idempotent: a second run does nothing but check. Arguments name further tools a script needs
# (scripts/valgrind.sh: valgrind), each a Debian package of the command's name, installed the
# same way when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

CUTLASS_VERSION=4.2.0.0
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v python3 >/dev/null || need+=(python3)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
[ -f /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
for tool in "$@"; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]} from the Debian archive"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

if [ ! -f .deps/cutlass/include/cutlass/cutlass.h ] ||
   [ "$(cat .deps/cutlass/VERSION 2>/dev/null)" != "$CUTLASS_VERSION" ]; then
  echo "setup: fetching CUTLASS headers (PyPI nvidia-cutlass==$CUTLASS_VERSION)"
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "nvidia-cutlass==$CUTLASS_VERSION"
  rm -rf .deps/cutlass && mkdir -p .deps/cutlass
  python3 - "$tmp"/nvidia_cutlass-*.whl .deps/cutlass <<'PY'
import sys, zipfile, os
whl, dst = sys.argv[1], sys.argv[2]
prefixes = {"cutlass_library/source/include/": "include/",
            "cutlass_library/source/tools/util/include/": "tools/util/include/"}
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        for src, out in prefixes.items():
            if name.startswith(src) and not name.endswith("/"):
                path = os.path.join(dst, out, name[len(src):])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with z.open(name) as f, open(path, "wb") as g:
                    g.write(f.read())
PY
  echo "$CUTLASS_VERSION" > .deps/cutlass/VERSION
  rm -rf "$tmp"
fi
echo "setup: ok"
