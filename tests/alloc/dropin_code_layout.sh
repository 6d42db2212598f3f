#!/usr/bin/env bash
# usage: dropin_code_layout.sh [LIBRARY]   (default: $TXALLOC_LIB)
# The code footprint of libtxalloc.so (docs/allocator.md, "Code footprint"): its executable
# segment is aligned to 64 KiB, and everything a program that only allocates runs (the
# malloc and C++ entry points, the allocator's txa_/txalloc_ functions, the constructors
# and what they call, DT_INIT and DT_FINI) lies in the segment's first 64 KiB, the kernel's
# fault-around window; .rodata starts a window and ends its mapping, apart from the unwind
# tables.
set -euo pipefail
if [ "${1:-}" = --help ]; then
  echo "usage: $0 [LIBRARY]  (checks that libtxalloc.so keeps the allocator's code in one 64 KiB window; default \$TXALLOC_LIB)"
  exit 0
fi
lib=${1:-${TXALLOC_LIB:-}}
[ -n "$lib" ] || { echo "$0: no library given and TXALLOC_LIB unset" >&2; exit 2; }
[ -f "$lib" ] || { echo "$0: no such library: $lib" >&2; exit 2; }
window=$((0x10000))

# The executable PT_LOAD: its virtual address and alignment.
read -r text_start text_align < <(readelf -lW "$lib" |
  awk '$1 == "LOAD" && $(NF-1) ~ /E/ {print $3, $NF}')
[ -n "${text_start:-}" ] || { echo "FAIL: $lib has no executable segment" >&2; exit 1; }
failures=0
if (( text_align < window || text_start % window != 0 )); then
  echo "FAIL: executable segment at $text_start aligned to $text_align, not to 64 KiB" >&2
  failures=$((failures + 1))
fi

entry='malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc'
entry+='|pvalloc|malloc_usable_size|cfree'
startup='txmem_set_stale_hook|txmem_set_refill_hook|register_fork_handlers_early'
startup+='|tm_alloc_subscribe'
checked=0
while read -r addr type name; do
  case $type in t | T | w | W) ;; *) continue ;; esac
  if [[ $name =~ ^(txa_|txalloc_|_Zn[wa]|_Zd[la]) || $name =~ ^($entry|$startup)$ ]]; then
    checked=$((checked + 1))
    offset=$((0x$addr - text_start))
    if (( offset < 0 || offset >= window )); then
      echo "FAIL: $name at 0x$addr, $offset bytes into the text (window: $window)" >&2
      failures=$((failures + 1))
    fi
  fi
done < <(nm --defined-only "$lib")

# DT_INIT and DT_FINI, which the loader calls at load and at exit.
while read -r tag addr; do
  offset=$((addr - text_start))
  if (( offset < 0 || offset >= window )); then
    echo "FAIL: $tag at $addr, $offset bytes into the text (window: $window)" >&2
    failures=$((failures + 1))
  fi
done < <(readelf -dW "$lib" | awk '$2 == "(INIT)" || $2 == "(FINI)" {print $2, $3}')

# .rodata, which every program reads, starts a window and ends its read-only mapping, so
# that a fault on it maps .rodata alone; the unwind tables lie before it, in windows of
# their own (src/preload/unwind_window.ld).
read -r rodata_start rodata_size < <(readelf -SW "$lib" |
  awk '{sub(/^ *\[ *[0-9]+\] */, "")} $1 == ".rodata" {print "0x" $3, "0x" $5}')
read -r unwind_start < <(readelf -SW "$lib" |
  awk '{sub(/^ *\[ *[0-9]+\] */, "")} $1 == ".eh_frame_hdr" {print "0x" $3}')
if [ -z "${rodata_start:-}" ] || [ -z "${unwind_start:-}" ]; then
  echo "FAIL: $lib lacks .rodata or .eh_frame_hdr" >&2
  failures=$((failures + 1))
else
  rodata_end=$((rodata_start + rodata_size))
  segment_end=0
  while read -r vaddr filesz; do
    if (( vaddr <= rodata_start && rodata_start < vaddr + filesz )); then
      segment_end=$((vaddr + filesz))
    fi
  done < <(readelf -lW "$lib" | awk '$1 == "LOAD" {print $3, $5}')
  if (( rodata_start % window != 0 || segment_end != rodata_end )); then
    echo "FAIL: .rodata [$((rodata_start)), $rodata_end) does not start a window and end its segment (which ends at $segment_end)" >&2
    failures=$((failures + 1))
  elif (( unwind_start / window == rodata_start / window )); then
    echo "FAIL: .eh_frame_hdr at $unwind_start shares a 64 KiB window with .rodata" >&2
    failures=$((failures + 1))
  fi
fi

# A list that matched almost nothing would pass without checking anything.
if (( checked < 100 )); then
  echo "FAIL: only $checked allocator functions found in $lib (stripped?)" >&2
  failures=$((failures + 1))
fi
if (( failures )); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "ok: $checked allocator functions in the first 64 KiB of the text"
