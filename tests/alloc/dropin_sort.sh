# Drop-in: coreutils sort of a large generated file under LD_PRELOAD=libtxalloc.so gives
# byte-identical output to sort with glibc malloc, and txalloc's statistics show it served
# sort.
#
# Workload: a deterministic file of 300000 lines (about 8 MB; scaled by
# TXALLOC_TEST_SCALE) of random words and numbers made by awk; sorted plainly, numerically
# on a key, uniquely, and with two threads and a small buffer (forcing temporary files and
# merges).
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"

LINES=$(dropin_scaled 300000 60000)
awk -v n="$LINES" 'BEGIN { srand(42); for (i = 0; i < n; i++) printf "%s%d %d %.4f\n", \
  substr("abcdefghijklmnopqrstuvwxyz", 1 + int(rand() * 26), 1 + int(rand() * 8)), \
  int(rand() * 100000), int(rand() * 1000000), rand() }' >"$DROPIN_TMP/input.txt"
cd "$DROPIN_TMP"
dropin_compare sort_plain 10 sort input.txt
dropin_compare sort_numeric_key 10 sort -k2,2n -k1,1 input.txt
dropin_compare sort_unique 10 sort -u -k1,1 input.txt
dropin_compare sort_parallel 10 sort --parallel=2 -S 8M -T "$DROPIN_TMP" -k3,3g input.txt
dropin_finish
