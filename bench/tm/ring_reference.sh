#!/usr/bin/env bash
# ring_reference.sh: the ring's traversal rate per node size under the reference placement
# (ring --arena), glibc's malloc and txalloc (LD_PRELOAD=build/libtxalloc.so), so that what
# the allocator costs is told apart from what the machine costs (docs/results/placement.md).
#
#   bench/tm/ring_reference.sh [--build DIR] [--runs N] [--duration S] [--sizes "S1 S2 ..."]
#
# Node sizes 64..4096 in steps of 64, and 1008, by default. Each size runs the three
# placements N times (default 3), interleaved, --duration seconds each (default 0.2). The
# table (markdown, stdout) gives per size the median traversals per second of each, the
# pages the touched lines lie on (results.pages_touched), and txalloc / arena; then each
# placement's worst/best rate over the sizes. Progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build"
runs=3
duration=0.2
sizes="$(seq -s ' ' 64 64 4096) 1008"
while [ $# -gt 0 ]; do
  case "$1" in
  --build) build=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --duration) duration=$2; shift 2 ;;
  --sizes) sizes=$2; shift 2 ;;
  --help | -h) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "ring_reference.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "ring_reference.sh: --runs must be a positive integer" >&2; exit 2; }
ring="$build/bench/ring"
lib="$build/libtxalloc.so"
[ -x "$ring" ] || { echo "ring_reference.sh: $ring not built" >&2; exit 2; }
[ -r "$lib" ] || { echo "ring_reference.sh: $lib not built" >&2; exit 2; }

for s in $sizes; do
  [[ "$s" =~ ^[0-9]+$ ]] && [ "$s" -ge 16 ] && [ "$s" -le 4096 ] ||
    { echo "ring_reference.sh: --sizes: '$s' is not a node size in 16..4096" >&2; exit 2; }
done

# Each run appends "SIZE PLACEMENT JSON" to the raw file; one pass reads them at the end.
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
count=$(wc -w <<< "$sizes")
i=0
for s in $sizes; do
  i=$((i + 1))
  echo "ring_reference.sh: node size $s ($i of $count)" >&2
  for _ in $(seq "$runs"); do
    echo "$s arena $("$ring" --arena --node-size "$s" --duration "$duration" 2>/dev/null)" >> "$raw"
    echo "$s glibc $("$ring" --node-size "$s" --duration "$duration" 2>/dev/null)" >> "$raw"
    echo "$s txalloc $(LD_PRELOAD="$lib" "$ring" --node-size "$s" --duration "$duration" 2>/dev/null)" >> "$raw"
  done
done

python3 - "$raw" "$runs" "$duration" <<'PY'
import json, statistics, sys
from collections import defaultdict
rates, pages = defaultdict(list), {}
for line in open(sys.argv[1]):
    size, who, record = line.split(" ", 2)
    results = json.loads(record)["results"]
    rates[(int(size), who)].append(float(results["traversals_per_s"]))
    pages[(int(size), who)] = int(results["pages_touched"])
who = ("arena", "glibc", "txalloc")
sizes = sorted({s for s, _ in rates})
med = {k: statistics.median(v) for k, v in rates.items()}
print(f"ring, 128 nodes, mutex, 1 thread; median of {sys.argv[2]} runs of {sys.argv[3]} s, interleaved.\n")
print("| node size | arena traversals/s | glibc | txalloc | pages: arena / glibc / txalloc | txalloc / arena |")
print("|---:|---:|---:|---:|---|---:|")
for s in sizes:
    r = [med[(s, w)] for w in who]
    p = " / ".join(str(pages[(s, w)]) for w in who)
    print(f"| {s} | {r[0]/1e6:.2f}M | {r[1]/1e6:.2f}M | {r[2]/1e6:.2f}M | {p} | {r[2]/r[0]:.2f} |")
print()
for w in who:
    v = [med[(s, w)] for s in sizes]
    print(f"- {w}: worst/best rate over the sizes {min(v)/max(v):.2f}")
PY
