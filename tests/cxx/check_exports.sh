#!/usr/bin/env bash
# usage: check_exports.sh LIBRARY...
# Each library (libtxalloc.so, libtxalloc-itm.so) defines and exports the 20 replaceable
# global allocation functions of C++17 under their x86-64 mangled names, needs no C++
# runtime (no libstdc++ in DT_NEEDED, only weak references to it), and a C program that
# preloads it does not load libstdc++.
set -euo pipefail
if [ $# -eq 0 ] || [ "$1" = --help ]; then
  echo "usage: $0 LIBRARY...  (checks the C++ operators libtxalloc.so exports)"
  [ $# -eq 0 ] && exit 2 || exit 0
fi

expected=(
  _Znwm _Znam _ZnwmRKSt9nothrow_t _ZnamRKSt9nothrow_t
  _ZnwmSt11align_val_t _ZnamSt11align_val_t
  _ZnwmSt11align_val_tRKSt9nothrow_t _ZnamSt11align_val_tRKSt9nothrow_t
  _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t
  _ZdlPvSt11align_val_t _ZdaPvSt11align_val_t _ZdlPvmSt11align_val_t _ZdaPvmSt11align_val_t
  _ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
)

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

for lib in "$@"; do
  [ -f "$lib" ] || { echo "$0: no such library: $lib" >&2; exit 2; }
  # Defined, global, default-visibility dynamic symbols (the version suffix stripped).
  defined=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" {sub(/@.*/, "", $3); print $3}')
  for name in "${expected[@]}"; do
    grep -qx -- "$name" <<<"$defined" || fail "$lib does not export $name"
  done
  # No operator beyond the 20 (a typo in a mangled name would export a stray one).
  extra=$(grep -E '^_Z(n[wa]|d[la])' <<<"$defined" | grep -vxF -f <(printf '%s\n' "${expected[@]}") || true)
  [ -z "$extra" ] || fail "$lib exports unexpected operators: $extra"

  # Whole outputs in variables: grep -q closing a pipe early would fail it (pipefail).
  needed=$(readelf -d "$lib" | grep NEEDED || true)
  if grep -q 'libstdc++' <<<"$needed"; then fail "$lib needs libstdc++"; fi
  undefined=$(nm -D --undefined-only "$lib")
  for name in _ZSt15get_new_handlerv _ZSt17__throw_bad_allocv; do
    grep -qE "^ +w $name\$" <<<"$undefined" || fail "$lib: $name is not a weak reference"
  done

  maps=$(LD_PRELOAD="$lib" cat /proc/self/maps)
  grep -qF "$(basename "$lib")" <<<"$maps" || fail "$lib was not preloaded into cat"
  if grep -q 'libstdc++' <<<"$maps"; then fail "preloading $lib loads libstdc++"; fi
done

if [ "$failures" -ne 0 ]; then
  echo "$failures failures" >&2
  exit 1
fi
echo "ok: $# libraries export the ${#expected[@]} operators and need no C++ runtime"
