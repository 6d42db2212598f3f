# Shared by the dropin_*.sh tests: run a real program with and without
# LD_PRELOAD=$TXALLOC_LIB, require the same exit status and the same output, and require
# txalloc's exit statistics (TXALLOC_STATS=1) to prove that txalloc served the program.
# Sourced; the caller sets `set -euo pipefail` first.

: "${TXALLOC_LIB:?TXALLOC_LIB must name libtxalloc.so}"
if [[ ! -f "$TXALLOC_LIB" ]]; then
  echo "dropin: TXALLOC_LIB=$TXALLOC_LIB does not exist" >&2
  exit 2
fi
export LC_ALL=C
# ctest passes these two; they are the test's, not txalloc options (txalloc warns about
# unknown TXALLOC_ variables), so the programs under test do not inherit them.
export -n TXALLOC_LIB TXALLOC_BUILD_DIR
DROPIN_TMP=$(mktemp -d "${TMPDIR:-/tmp}/txalloc-dropin.XXXXXX")
trap 'rm -rf "$DROPIN_TMP"' EXIT
DROPIN_FAILURES=0

# Work multiplier, as tests/check.h's check_scaled: TXALLOC_TEST_SCALE (default 1).
dropin_scaled() { # n floor
  awk -v n="$1" -v f="$2" -v s="${TXALLOC_TEST_SCALE:-1}" \
    'BEGIN { if (s <= 0) s = 1; v = int(n * s); if (v < f) v = f; print v }'
}

dropin_fail() {
  echo "FAIL: $*" >&2
  DROPIN_FAILURES=$((DROPIN_FAILURES + 1))
}

# The sum of every "mallocs" count in txalloc's stats text (several processes may each
# print theirs). Prints 0 when there is none.
dropin_stats_mallocs() { # stderr-file
  { grep -Eo '(^|[^a-z_])mallocs"?[[:space:]:=]+[0-9]+' "$1" || true; } |
    { grep -Eo '[0-9]+$' || true; } | awk '{ s += $1 } END { print s + 0 }'
}

# dropin_compare NAME MIN_MALLOCS CMD...: runs CMD plainly and preloaded (with stats), in
# the current directory; stdout and exit status must match, the preloaded run's stderr
# must carry txalloc statistics counting at least MIN_MALLOCS mallocs. The outputs stay in
# $DROPIN_TMP/NAME.{plain,txalloc}.{out,err} for the caller to inspect.
dropin_compare() {
  local name=$1 min=$2
  shift 2
  local base="$DROPIN_TMP/$name" rc_plain=0 rc_tx=0
  env -u LD_PRELOAD -u TXALLOC_STATS "$@" >"$base.plain.out" 2>"$base.plain.err" || rc_plain=$?
  env LD_PRELOAD="$TXALLOC_LIB" TXALLOC_STATS=1 "$@" >"$base.txalloc.out" 2>"$base.txalloc.err" ||
    rc_tx=$?
  if [[ $rc_plain != "$rc_tx" ]]; then
    dropin_fail "$name: exit status $rc_plain without txalloc, $rc_tx with it"
    tail -n 20 "$base.txalloc.err" >&2
  fi
  if ! cmp -s "$base.plain.out" "$base.txalloc.out"; then
    dropin_fail "$name: output differs under txalloc"
    diff "$base.plain.out" "$base.txalloc.out" | head -n 20 >&2
  fi
  if grep -q 'txalloc: .*\(invalid\|double free\|corrupt\)' "$base.txalloc.err"; then
    dropin_fail "$name: txalloc reported an error"
    grep 'txalloc: ' "$base.txalloc.err" | head -n 5 >&2
  fi
  local mallocs
  mallocs=$(dropin_stats_mallocs "$base.txalloc.err")
  if ((mallocs < min)); then
    dropin_fail "$name: txalloc statistics show $mallocs mallocs (want >= $min): not served by txalloc?"
    tail -n 30 "$base.txalloc.err" >&2
  fi
  echo "$name: exit $rc_tx, $(wc -c <"$base.txalloc.out") bytes of output identical, $mallocs mallocs by txalloc" >&2
}

dropin_finish() {
  if ((DROPIN_FAILURES)); then
    echo "$DROPIN_FAILURES failures" >&2
    exit 1
  fi
  echo "all drop-in checks passed" >&2
}
