#!/usr/bin/env bash
# Installs what the build, the tests and the study need on Debian 12 (apt-get), and only
# what is missing. Works as root (no sudo needed) and as a user with sudo.
set -euo pipefail

# valgrind: the study's cachegrind measurements (the ring spec's L1 misses); without it the
# study skips them and says so.
packages=(cmake ninja-build gcc make git pkg-config clang-format clang g++ python3 python3-venv
          python3-pip perl libjemalloc2 libtcmalloc-minimal4 libtbbmalloc2 libmimalloc2.0 valgrind)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || {
    echo "install-deps: not root and no sudo; as root run: apt-get install -y ${missing[*]}" >&2
    exit 1
  }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q "${missing[@]}"
