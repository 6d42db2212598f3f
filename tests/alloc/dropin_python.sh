# Drop-in: python3 running a threaded, allocation-heavy script under LD_PRELOAD=libtxalloc.so
# prints exactly what it prints with glibc malloc, and txalloc's statistics show it served
# the interpreter. Also the README's one-liner: the digit count of 0..10^6-1, 5888890.
#
# Workload: 8 threads (more than cores; the GIL switches between them every few ms, so
# objects are freed by other threads than the ones that made them) each build dicts of
# strings, lists of tuples, bytes joins and a sorted list from a seeded random.Random,
# hand half of their objects to a shared queue consumed by the next thread, and return a
# digest; the main thread prints the digests in thread order. PYTHONMALLOC=malloc sends
# every object (not only those above 512 B) to malloc.
set -euo pipefail
source "$(dirname "$0")/support/dropin_common.sh"
command -v python3 >/dev/null || { echo "python3 missing" >&2; exit 2; }

ROUNDS=$(dropin_scaled 40 8)
cat >"$DROPIN_TMP/threads.py" <<'PY'
import hashlib, queue, random, sys, threading
rounds = int(sys.argv[1])
n = 8
queues = [queue.Queue() for _ in range(n)]
digests = [None] * n

def work(i):
    rng = random.Random(1000 + i)
    h = hashlib.sha256()
    for r in range(rounds):
        d = {}
        for k in range(2000):
            key = "k%d_%d" % (rng.randrange(5000), k % 7)
            d[key] = [str(rng.random()) * rng.randrange(1, 6), (k, r, key)]
        items = sorted(d.items())
        blob = b"".join(("%s=%s;" % (k, v[1])).encode() for k, v in items[:500])
        h.update(blob)
        queues[(i + 1) % n].put(items[::2])       # freed by the next thread
        got = queues[i].get()   # the previous thread's items of round r: deterministic
        h.update(("%d:%s" % (len(got), got[0][0] if got else "")).encode())
        del d, items, blob
    digests[i] = h.hexdigest()

threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join()
for i, d in enumerate(digests):
    print(i, d)
PY
dropin_compare python_threads 100000 env PYTHONMALLOC=malloc python3 "$DROPIN_TMP/threads.py" "$ROUNDS"

# The README's one-liner, verbatim.
out=$(LD_PRELOAD=$TXALLOC_LIB TXALLOC_STATS=1 python3 -c 'print(sum(len(str(i)) for i in range(10**6)))' 2>"$DROPIN_TMP/oneliner.err")
if [[ "$out" != 5888890 ]]; then dropin_fail "python one-liner printed '$out', want 5888890"; fi
mallocs=$(dropin_stats_mallocs "$DROPIN_TMP/oneliner.err")
if ((mallocs < 1000)); then
  dropin_fail "python one-liner: no txalloc statistics ($mallocs mallocs)"
  cat "$DROPIN_TMP/oneliner.err" >&2
fi
echo "python one-liner: $out, $mallocs mallocs by txalloc" >&2
dropin_finish
