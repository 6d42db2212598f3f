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

# One run: "rate pages" from the ring's JSON.
one() {
  "$@" --duration "$duration" 2>/dev/null | python3 -c \
    'import json, sys; r = json.load(sys.stdin)["results"]; print(r["traversals_per_s"], r["pages_touched"])'
}

python3 - "$runs" "$sizes" <<'PY' > /dev/null || { echo "ring_reference.sh: bad --sizes" >&2; exit 2; }
import sys
assert all(16 <= int(s) <= 4096 for s in sys.argv[2].split())
PY

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
count=$(wc -w <<< "$sizes")
i=0
for s in $sizes; do
  i=$((i + 1))
  echo "ring_reference.sh: node size $s ($i of $count)" >&2
  for _ in $(seq "$runs"); do
    echo "$s arena $(one "$ring" --arena --node-size "$s")" >> "$raw"
    echo "$s glibc $(one "$ring" --node-size "$s")" >> "$raw"
    echo "$s txalloc $(LD_PRELOAD="$lib" one "$ring" --node-size "$s")" >> "$raw"
  done
done

python3 - "$raw" "$runs" "$duration" <<'PY'
import statistics, sys
from collections import defaultdict
rates, pages = defaultdict(list), {}
for line in open(sys.argv[1]):
    size, who, rate, page = line.split()
    rates[(int(size), who)].append(float(rate))
    pages[(int(size), who)] = int(page)
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
