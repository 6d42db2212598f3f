#!/usr/bin/env bash
# compare_itm.sh: txalloc's TM against GCC's libitm on the same intset code
# (docs/results/stm.md has its current tables).
#
#   bench/tm/compare_itm.sh [--build DIR] [--runs N] [--duration S]
#                           [--mode table|shift|itm] [--threads LIST] [--raw FILE]
#                           [-- EXTRA_INTSET_FLAGS...]
#
# --mode table (default): build/bench/intset (txalloc, default options plus EXTRA flags)
#   against build/bench/intset-itm with ITM_DEFAULT_METHOD=ml_wt and with libitm's
#   default method, at 1 and 2 threads, for list/hash/rbtree x 0/20/60 % updates (paper
#   sizes: 4096 keys of 8192). Each configuration runs N times (default 5), the three
#   programs interleaved run by run so that load on the machine hits them alike; the table
#   shows medians of ops/s, the ratio txalloc / libitm (the median of the ratios of runs
#   made back to back), the same ratio in CPU time per operation (results.cpu_s / ops:
#   less sensitive to other load on the machine), txalloc's abort rate and false-conflict
#   share, and the geometric mean of the ratios. When build/bench/intset-notm exists, the
#   1-thread rows also run it (the same code without any TM) with glibc's malloc, which
#   libitm's runs use, and with txalloc's (LD_PRELOAD=build/libtxalloc.so), which
#   txalloc's tm_malloc uses; a second table gives the CPU time per operation of each and
#   each TM's overhead over the run without a TM on its own allocator.
# --mode shift: the linked list, 60 % updates, 2 threads, 16-byte nodes, stripe shift 4
#   against 5 (Baldassin et al. Figure 6): medians of ops/s, abort rate, false-conflict
#   share and the speed-up of shift 4.
# --mode itm: the same intset-itm binary on libitm ml_wt and on txalloc through the GCC TM
#   ABI (LD_PRELOAD=build/libtxalloc-itm.so, docs/itm.md), against the native build
#   build/bench/intset, for list/hash/rbtree x 0/20/60 % updates at --threads (default
#   "1 2"): medians of ops/s, and txalloc-itm / ml_wt and txalloc-itm / native as medians
#   of the per-run ratios, in ops/s and in CPU time per operation.
# Every run's JSON line is appended to --raw FILE when given. Progress goes to stderr, the
# markdown table to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build"
runs=5
duration=1
mode=table
threads="1 2"
raw=""
while [ $# -gt 0 ]; do
  case "$1" in
  --build) build=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --duration) duration=$2; shift 2 ;;
  --mode) mode=$2; shift 2 ;;
  --raw) raw=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --help | -h) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --) shift; break ;;
  *) echo "compare_itm.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$mode" in table | shift | itm) ;; *) echo "compare_itm.sh: --mode table|shift|itm" >&2; exit 2 ;; esac
if [ "$mode" = itm ] && [ ! -r "$build/libtxalloc-itm.so" ]; then
  echo "compare_itm.sh: $build/libtxalloc-itm.so not built" >&2; exit 2
fi
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "compare_itm.sh: --runs must be a positive integer" >&2; exit 2; }
for prog in intset intset-itm; do
  [ -x "$build/bench/$prog" ] || { echo "compare_itm.sh: $build/bench/$prog not built" >&2; exit 2; }
done

exec python3 - "$build/bench" "$runs" "$duration" "$mode" "$raw" "$threads" "$@" <<'PYTHON'
import json, math, os, statistics, subprocess, sys

bench, runs, duration, mode, raw = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
thread_counts = [int(t) for t in sys.argv[6].split()]
extra = sys.argv[7:]
raw_file = open(raw, "a") if raw else None


def run(program, args, env_extra):
    env = dict(os.environ)
    env.pop("ITM_DEFAULT_METHOD", None)
    env.update(env_extra)
    cmd = [os.path.join(bench, program)] + args + ["--duration", duration]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    if p.returncode != 0:
        sys.exit("compare_itm.sh: %s failed (exit %d): %s" % (" ".join(cmd), p.returncode, p.stderr[-500:]))
    d = json.loads(p.stdout)
    if raw_file:
        raw_file.write(p.stdout.strip() + "\n")
    return d


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def pct(v):
    return "n/a" if v is None else "%.2f %%" % (100 * v)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def machine_note(load_before):
    print()
    print("Machine: %d CPUs; load average %s before, %s after (other processes share the machine)."
          % (os.cpu_count() or 0, load_before, loadavg()))


def txalloc_counts(d):
    stats = d.get("tm_stats", {})
    return d["results"].get("abort_rate"), stats.get("false_conflict_share")


def table():
    variants = [("txalloc", "intset", extra, {}),
                ("ml_wt", "intset-itm", [], {"ITM_DEFAULT_METHOD": "ml_wt"}),
                ("default", "intset-itm", [], {})]
    notm = os.access(os.path.join(bench, "intset-notm"), os.X_OK)
    preload = os.path.join(os.path.dirname(bench), "libtxalloc.so")
    baselines = [("notm", "intset-notm", [], {})]
    if os.access(preload, os.R_OK):
        baselines.append(("notm_txalloc", "intset-notm", [], {"LD_PRELOAD": preload}))
    rows, ratios_ml, ratios_def, ratios_cpu, costs = [], [], [], [], []
    for structure in ("list", "hash", "rbtree"):
        for update in (0, 20, 60):
            for threads in (1, 2):
                args = ["--structure", structure, "--update", str(update), "--threads", str(threads)]
                row_variants = variants + (baselines if notm and threads == 1 else [])
                got = {name: [] for name, _, _, _ in row_variants}
                tm_desc = None
                for r in range(runs):
                    for name, program, flags, env in row_variants:
                        d = run(program, args + ["--seed", str(r + 1)] + flags, env)
                        got[name].append(d)
                        if name == "txalloc":
                            tm_desc = d["tm"]
                ops = {n: median([d["results"]["ops_per_s"] for d in ds]) for n, ds in got.items()}
                abort = median([txalloc_counts(d)[0] for d in got["txalloc"]])
                false_share = median([txalloc_counts(d)[1] for d in got["txalloc"]])
                # Ratios pair the runs made back to back (the same moment of the machine's
                # load): the median of the per-run ratios, not a ratio of two medians that a
                # bimodal row (both threads on a core in some runs, not in others) can mix.
                per_run = lambda other: median([a["results"]["ops_per_s"] / b["results"]["ops_per_s"]
                                                for a, b in zip(got["txalloc"], got[other])])
                r_ml, r_def = per_run("ml_wt"), per_run("default")
                # The same comparison in CPU time per operation (all threads), which the load
                # of other processes moves much less than the wall-clock rate.
                cpu_per_op = lambda d: d["results"]["cpu_s"] / max(1, d["results"]["ops"])
                r_cpu = median([cpu_per_op(b) / cpu_per_op(a)
                                for a, b in zip(got["txalloc"], got["ml_wt"])])
                ratios_ml.append(r_ml)
                ratios_def.append(r_def)
                ratios_cpu.append(r_cpu)
                if "notm" in got:
                    costs.append(cost_row(structure, update, got, cpu_per_op))
                rows.append((structure, update, threads, ops["txalloc"], ops["ml_wt"], ops["default"],
                             r_ml, r_def, r_cpu, abort, false_share))
                print("%-6s %3d%% %dt: txalloc %.0f  ml_wt %.0f  default %.0f  ratio %.2f"
                      % (structure, update, threads, ops["txalloc"], ops["ml_wt"], ops["default"], r_ml),
                      file=sys.stderr, flush=True)
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    print("txalloc TM: %s; intset 4096 keys of 8192; median of %d runs of %s s each, interleaved;"
          " ratios: median of the per-run ratios." % (json.dumps(tm_desc), runs, duration))
    print()
    print("| structure | update | threads | txalloc ops/s | libitm ml_wt ops/s | libitm default ops/s "
          "| txalloc / ml_wt | txalloc / default | ml_wt / txalloc CPU per op "
          "| txalloc abort rate | false-conflict share |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s, u, t, a, m, dflt, rm, rd, rc, ab, fs in rows:
        print("| %s | %d %% | %d | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %s | %s |"
              % (s, u, t, a, m, dflt, rm, rd, rc, pct(ab), pct(fs)))
    print()
    print("Geometric mean of txalloc / libitm ml_wt: %.2f (min %.2f); of txalloc / libitm default: %.2f;"
          " of ml_wt / txalloc CPU time per operation: %.2f (min %.2f)"
          % (geo(ratios_ml), min(ratios_ml), geo(ratios_def), geo(ratios_cpu), min(ratios_cpu)))
    if costs:
        cost_table(costs)


def cost_row(structure, update, got, cpu_per_op):
    # What each TM adds to the workload's own cost, each over the run without a TM on the
    # allocator it uses itself: libitm allocates with glibc; txalloc's tm_malloc with
    # txalloc under its default txmem strategy (which packs 16-byte nodes two per 32 bytes,
    # where glibc takes 32 each: on the list, a traversal of cache misses, that alone is a
    # third of the time), with the process's malloc under the wrap strategies. Overheads
    # are medians of the differences of runs made back to back, as the ratios above.
    ns = lambda name: (1e9 * median([cpu_per_op(d) for d in got[name]])
                       if name in got else None)
    over = lambda tm, base: (1e9 * median([cpu_per_op(a) - cpu_per_op(b)
                                           for a, b in zip(got[tm], got[base])])
                             if base in got else None)
    own = "notm_txalloc" if got["txalloc"][0]["tm"].get("txmem") == "txalloc" else "notm"
    return (structure, update, ns("notm"), ns("notm_txalloc"), ns("txalloc"), ns("ml_wt"),
            over("txalloc", own), over("ml_wt", "notm"))


def cost_table(costs):
    fmt = lambda v: "n/a" if v is None else "%.1f" % v
    print()
    print("CPU time per operation at 1 thread (ns, medians): the workload without a TM"
          " (intset-notm: plain code) on glibc's malloc and on txalloc's (LD_PRELOAD of"
          " libtxalloc.so; n/a when it is not built), each TM, and each TM's overhead over"
          " the run without a TM on the allocator its own allocations use (libitm: glibc;"
          " txalloc: txalloc, or the process's malloc under --txmem wrap|wrap-cache).")
    print()
    print("| structure | update | no TM, glibc | no TM, txalloc | txalloc | libitm ml_wt "
          "| txalloc overhead | ml_wt overhead | ml_wt / txalloc overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s, u, base_glibc, base_txa, tx, ml, over_tx, over_ml in costs:
        ratio = ("%.2f" % (over_ml / over_tx)
                 if over_tx is not None and over_tx > 0 and over_ml > 0 else "n/a")
        print("| %s | %d %% | %s | %s | %.1f | %.1f | %s | %.1f | %s |"
              % (s, u, fmt(base_glibc), fmt(base_txa), tx, ml, fmt(over_tx), over_ml, ratio))


def shift():
    base = ["--structure", "list", "--update", "60", "--threads", "2", "--node-size", "16"]
    got = {4: [], 5: []}
    for r in range(runs):
        for s in (5, 4):
            got[s].append(run("intset", base + ["--seed", str(r + 1), "--shift", str(s)] + extra, {}))
    print("Linked list, 60 %% updates, 2 threads, 16-byte nodes; median of %d runs of %s s, interleaved."
          % (runs, duration))
    print()
    print("| shift | ops/s | abort rate | false-conflict share | false conflicts | true conflicts | unknown |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    ops = {}
    for s in (5, 4):
        ds = got[s]
        ops[s] = median([d["results"]["ops_per_s"] for d in ds])
        st = [d.get("tm_stats", {}) for d in ds]
        print("| %d | %.0f | %s | %s | %s | %s | %s |"
              % (s, ops[s], pct(median([d["results"].get("abort_rate") for d in ds])),
                 pct(median([x.get("false_conflict_share") for x in st])),
                 median([x.get("false_conflicts") for x in st]),
                 median([x.get("true_conflicts") for x in st]),
                 median([x.get("unknown_conflicts") for x in st])))
    print()
    print("Speed-up of shift 4 over shift 5 (Figure 6 plots this minus 1): %.3f" % (ops[4] / ops[5]))


def itm_table():
    preload = os.path.join(os.path.dirname(bench), "libtxalloc-itm.so")
    variants = [("native", "intset", extra, {}),
                ("txalloc_itm", "intset-itm", [], {"LD_PRELOAD": preload}),
                ("ml_wt", "intset-itm", [], {"ITM_DEFAULT_METHOD": "ml_wt"})]
    cpu_per_op = lambda d: d["results"]["cpu_s"] / max(1, d["results"]["ops"])
    rows, r_ml, r_nat = [], [], []
    for structure in ("list", "hash", "rbtree"):
        for update in (0, 20, 60):
            for threads in thread_counts:
                args = ["--structure", structure, "--update", str(update), "--threads", str(threads)]
                got = {name: [] for name, _, _, _ in variants}
                for r in range(runs):
                    for name, program, flags, env in variants:
                        got[name].append(run(program, args + ["--seed", str(r + 1)] + flags, env))
                ops = {n: median([d["results"]["ops_per_s"] for d in ds]) for n, ds in got.items()}
                ratio = lambda a, b: median([x["results"]["ops_per_s"] / y["results"]["ops_per_s"]
                                             for x, y in zip(got[a], got[b])])
                cpu = lambda a, b: median([cpu_per_op(y) / cpu_per_op(x) for x, y in zip(got[a], got[b])])
                row = (structure, update, threads, ops["ml_wt"], ops["txalloc_itm"], ops["native"],
                       ratio("txalloc_itm", "ml_wt"), ratio("txalloc_itm", "native"),
                       cpu("txalloc_itm", "ml_wt"), cpu("txalloc_itm", "native"))
                rows.append(row)
                r_ml.append(row[6])
                r_nat.append(row[7])
                print("%-6s %3d%% %dt: ml_wt %.0f  txalloc-itm %.0f  native %.0f" % row[:6],
                      file=sys.stderr, flush=True)
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    print("intset-itm on libitm ml_wt and on txalloc (LD_PRELOAD=libtxalloc-itm.so), and the native"
          " build (intset); 4096 keys of 8192; median of %d runs of %s s each, interleaved;"
          " ratios: medians of the per-run ratios (CPU: of CPU time per operation, inverted so"
          " that above 1 means txalloc-itm is faster)." % (runs, duration))
    print()
    print("| structure | update | threads | ml_wt ops/s | txalloc-itm ops/s | native ops/s "
          "| itm / ml_wt | itm / native | itm / ml_wt CPU | itm / native CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| %s | %d %% | %d | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f |" % row)
    print()
    print("Geometric means: txalloc-itm / ml_wt %.2f (min %.2f); txalloc-itm / native %.2f (min %.2f)"
          % (geo(r_ml), min(r_ml), geo(r_nat), min(r_nat)))


load_before = loadavg()
{"table": table, "shift": shift, "itm": itm_table}[mode]()
machine_note(load_before)
PYTHON
