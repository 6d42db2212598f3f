#!/usr/bin/env python3
"""Checks the allocator workload programs (bench/alloc) from the outside, as the study
harness uses them: each run prints exactly one JSON object of the DESIGN.md shape, names
the allocator that really served it, checks its own data (valid) and exits 0; bad
arguments exit 2 with a message; --help exits 0 and names the scale knob.

usage: check_workloads.py BENCH_DIR MODE [LIBRARY...]
  MODE run      every program with small parameters at 1, 2 and 3 threads (more threads
                than this machine's cores), expecting the process's own malloc: glibc, or
                the sanitizer's in sanitizer builds.
  MODE args     bad arguments -> exit 2 and a message on stderr; --help -> exit 0; without
                txalloc in the process, TXALLOC_* variables change nothing.
  MODE preload  for each LIBRARY (NAME=PATH) that exists, LD_PRELOAD it and expect
                allocator.name == NAME; exit 77 (ctest: skipped) when none exists. Under
                txalloc, an unknown TXALLOC_* variable or a bad value refuses the run.
"""
import json
import os
import subprocess
import sys

# Small parameters per program: the other options, and the scale knob's value times
# TXALLOC_TEST_SCALE (the sanitizer runs set it below 1). Each run takes well under 1 s.
SMALL_KNOB = {
    "threadtest": 200, "larson": 10, "xmalloc": 200000, "prodcons-batch": 2000,
    "cache-scratch": 20000, "cache-thrash": 20000, "mallocperf": 1000000, "machias": 300000,
    "mstress": 200000, "binarytrees": 2, "jsonloop": 5, "kvstore": 100000, "rptest": 2000,
    "malloc-large": 200, "strbuild": 200000, "fragstress": 10, "idle-owners": 8,
    "cxx-nodes": 5,
}
SMALL_OTHER = {
    "threadtest": ["--objects=3000"],
    "larson": ["--rounds=2", "--objects=500"],
    "xmalloc": ["--queue=64"],
    "prodcons-batch": ["--batch=50", "--depth=4"],
    "cache-scratch": ["--repetitions=50"],
    "cache-thrash": ["--repetitions=50"],
    "mallocperf": ["--slots=200"],
    "machias": ["--sharing=50"],
    "mstress": ["--slots=200", "--transfer=1000"],
    "binarytrees": ["--depth=10"],
    "jsonloop": ["--items=300"],
    "kvstore": ["--keys=5000"],
    "rptest": ["--batch=32", "--depth=4"],
    "malloc-large": ["--live=4"],
    "strbuild": ["--builders=64", "--max=8192"],
    "fragstress": ["--objects=1000"],
    "idle-owners": ["--settle=0"],
    "cxx-nodes": ["--keys=300"],
}
SCALE_KNOB = {
    "threadtest": "rounds", "larson": "generations", "xmalloc": "objects",
    "prodcons-batch": "batches", "cache-scratch": "iterations", "cache-thrash": "iterations",
    "mallocperf": "ops", "machias": "pairs", "mstress": "steps", "binarytrees": "passes",
    "jsonloop": "rounds", "kvstore": "ops", "rptest": "batches", "malloc-large": "ops",
    "strbuild": "appends", "fragstress": "rounds", "idle-owners": "mib",
    "cxx-nodes": "rounds",
}
# Extra runs that exercise a knob's ends.
EXTRA = [
    ("machias", ["--pairs=30000", "--sharing=0"]),
    ("machias", ["--pairs=30000", "--sharing=100", "--window=1"]),
    ("larson", ["--generations=4", "--rounds=1", "--objects=200", "--min=1", "--max=1"]),
    ("mstress", ["--steps=20000", "--slots=64", "--longlived=0", "--transfer=1"]),
    ("threadtest", ["--rounds=5", "--objects=7", "--size=3000"]),
    ("kvstore", ["--ops=20000", "--keys=64", "--stripes=1", "--get=0", "--put=0", "--update=50"]),
    ("rptest", ["--batches=500", "--batch=1", "--depth=1", "--min=1", "--max=1"]),
    ("malloc-large", ["--ops=6", "--live=2", "--min=5242880", "--max=26214400"]),
    ("malloc-large", ["--ops=50", "--live=1", "--min=1", "--max=20000"]),
    ("strbuild", ["--appends=20000", "--min=1", "--max=1", "--piece=1"]),
    ("fragstress", ["--rounds=6", "--objects=2", "--min=64", "--max=64", "--keep=100"]),
    ("fragstress", ["--rounds=6", "--objects=500", "--free=100", "--realloc=100", "--keep=0"]),
    ("idle-owners", ["--mib=2", "--freers=1", "--settle=1", "--min=512", "--max=512"]),
]


def test_scale():
    try:
        v = float(os.environ.get("TXALLOC_TEST_SCALE", "1"))
    except ValueError:
        v = 1.0
    return v if v > 0 else 1.0


SMALL = {name: [f"--{SCALE_KNOB[name]}={max(1, int(SMALL_KNOB[name] * test_scale()))}"] +
         SMALL_OTHER[name] for name in SMALL_KNOB}
TOP_KEYS = ["workload", "params", "threads", "allocator", "results", "memory", "valid"]
SANITIZER_ALLOCATORS = {"tsan", "asan"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def run(bench_dir, name, args, env=None, timeout=120):
    exe = os.path.join(bench_dir, name)
    return subprocess.run([exe] + args, capture_output=True, text=True, env=env,
                          timeout=timeout)


def check_run(bench_dir, name, args, threads, expect, env=None):
    """Runs once; checks exit 0, one JSON object, keys, values; returns the object."""
    label = f"{name} {' '.join(args)} --threads={threads}"
    p = run(bench_dir, name, args + [f"--threads={threads}"], env)
    if p.returncode != 0:
        fail(f"{label}: exit {p.returncode}; stderr: {p.stderr.strip()[-2000:]}")
        return None
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        fail(f"{label}: expected one line of JSON on stdout, got {len(lines)}")
        return None
    try:
        obj = json.loads(lines[0])
    except json.JSONDecodeError as e:
        fail(f"{label}: stdout is not JSON ({e}): {lines[0][:200]}")
        return None
    missing = [k for k in TOP_KEYS if k not in obj]
    if missing:
        fail(f"{label}: missing keys {missing}")
        return None
    res = obj["results"]
    checks = [
        (obj["workload"] == name, f"workload {obj['workload']!r}"),
        (obj["threads"] == threads, f"threads {obj['threads']}"),
        (obj["valid"] is True, "valid is not true"),
        (SCALE_KNOB[name] in obj["params"], f"params lack the scale knob {SCALE_KNOB[name]}"),
        ("seed" in obj["params"] and "threads" not in obj["params"], "params: seed/threads"),
        (all(k in res for k in ("time_s", "ops", "ops_per_s")), f"results keys {list(res)}"),
        (isinstance(res.get("ops"), int) and res.get("ops", 0) > 0, "results.ops not > 0"),
        (isinstance(res.get("time_s"), (int, float)) and res.get("time_s", -1) >= 0,
         "results.time_s"),
        (obj["memory"].get("peak_rss_kib", 0) > 0, "memory.peak_rss_kib not > 0"),
        (obj["allocator"].get("name") in expect,
         f"allocator.name {obj['allocator'].get('name')!r} not in {sorted(expect)}"),
        (isinstance(obj["allocator"].get("path"), str), "allocator.path"),
    ]
    for ok, what in checks:
        if not ok:
            fail(f"{label}: {what}")
    return obj


def mode_run(bench_dir):
    expect = {"glibc"} | SANITIZER_ALLOCATORS
    for name, args in SMALL.items():
        for threads in (1, 2, 3):
            check_run(bench_dir, name, args, threads, expect)
    for name, args in EXTRA:
        check_run(bench_dir, name, args, 2, expect)
    # Same seed, same work: the deterministic counters agree between runs.
    a = check_run(bench_dir, "mallocperf", SMALL["mallocperf"] + ["--seed=7"], 2, expect)
    b = check_run(bench_dir, "mallocperf", SMALL["mallocperf"] + ["--seed=7"], 2, expect)
    c = check_run(bench_dir, "mallocperf", SMALL["mallocperf"] + ["--seed=8"], 2, expect)
    if a and b and c:
        if a["results"]["mallocs"] != b["results"]["mallocs"]:
            fail("mallocperf: same seed, different malloc counts")
        if a["results"]["mallocs"] == c["results"]["mallocs"]:
            fail("mallocperf: different seeds, same malloc counts (seed ignored?)")
    # The sharing knob moves frees between threads.
    s0 = check_run(bench_dir, "machias", ["--pairs=20000", "--sharing=0"], 2, expect)
    s100 = check_run(bench_dir, "machias", ["--pairs=20000", "--sharing=100"], 2, expect)
    if s0 and s0["results"]["remote_frees"] != 0:
        fail("machias --sharing=0: remote frees happened")
    if s100 and s100["results"]["remote_frees"] == 0:
        fail("machias --sharing=100: no remote frees")
    check_new_workloads(bench_dir, expect)


def results_of(bench_dir, name, args, threads, expect):
    obj = check_run(bench_dir, name, args, threads, expect)
    return obj["results"] if obj else None


def expect_equal(label, got, want):
    if got != want:
        fail(f"{label}: {got} != {want}")


def check_new_workloads(bench_dir, expect):
    """What each of kvstore, rptest, malloc-large, strbuild, fragstress and idle-owners
    counts follows from its parameters."""
    # kvstore: gets only on a full table hit every time, on an empty one never.
    full = results_of(bench_dir, "kvstore", ["--ops=5000", "--keys=500", "--fill=100", "--get=100",
                                        "--put=0", "--update=0"], 2, expect)
    if full:
        expect_equal("kvstore full table, gets only: hits", full["hits"], full["gets"])
        expect_equal("kvstore gets only: live keys", full["live_keys"], 500)
        expect_equal("kvstore gets only: puts+updates+deletes",
                     full["puts"] + full["updates"] + full["deletes"], 0)
    empty = results_of(bench_dir, "kvstore", ["--ops=5000", "--keys=500", "--fill=0", "--get=100",
                                         "--put=0", "--update=0"], 2, expect)
    if empty:
        expect_equal("kvstore empty table: hits", empty["hits"], 0)
    # One thread, same seed: the same choices; another seed: others.
    runs = [results_of(bench_dir, "kvstore", SMALL["kvstore"] + [f"--seed={s}"], 1, expect)
            for s in (5, 5, 6)]
    if all(runs):
        expect_equal("kvstore same seed: (hits, live keys)", (runs[0]["hits"], runs[0]["live_keys"]),
                     (runs[1]["hits"], runs[1]["live_keys"]))
        if (runs[0]["hits"], runs[0]["live_keys"]) == (runs[2]["hits"], runs[2]["live_keys"]):
            fail("kvstore: different seeds, same hits and live keys (seed ignored?)")
    # rptest: every batch of every thread passed once.
    r = results_of(bench_dir, "rptest", ["--batches=300", "--batch=10", "--depth=2"], 3, expect)
    if r:
        expect_equal("rptest batches passed", r["batches_passed"], 900)
        expect_equal("rptest objects passed", r["ops"], 9000)
    # malloc-large: a page word per started page, over 5-25 MiB blocks.
    m = results_of(bench_dir, "malloc-large", ["--ops=4", "--live=1", "--min=5242880",
                                               "--max=26214400"], 1, expect)
    if m:
        expect_equal("malloc-large frees", (m["mallocs"], m["frees"]), (4, 4))
        if not 4 * 5 * 256 <= m["pages_touched"] <= 4 * 25 * 256:
            fail(f"malloc-large: {m['pages_touched']} pages touched for 4 blocks of 5-25 MiB")
    # strbuild: small steps realloc far more often than geometric growth; shrink 0/100.
    small = results_of(bench_dir, "strbuild", ["--appends=20000", "--geometric=0", "--shrink=100"], 1, expect)
    geo = results_of(bench_dir, "strbuild", ["--appends=20000", "--geometric=100", "--shrink=0"], 1, expect)
    if small and geo:
        if not small["reallocs"] > 3 * geo["reallocs"]:
            fail(f"strbuild: small steps {small['reallocs']} reallocs, geometric {geo['reallocs']}")
        expect_equal("strbuild --shrink=100: shrinks", small["shrinks"], small["strings_finished"])
        expect_equal("strbuild --shrink=0: shrinks", geo["shrinks"], 0)
        if small["strings_finished"] == 0:
            fail("strbuild: no string finished")
    # fragstress: realloc percent of the slots every round; everything freed.
    f = results_of(bench_dir, "fragstress", ["--rounds=7", "--objects=400", "--realloc=25"], 2, expect)
    if f:
        expect_equal("fragstress reallocs", f["reallocs"], 2 * 7 * 100)
        expect_equal("fragstress frees", f["frees"], f["mallocs"])
    # idle-owners: the resident figures are there and the peak holds the objects.
    i = results_of(bench_dir, "idle-owners", ["--mib=16", "--settle=0"], 2, expect)
    if i:
        for key in ("rss_after_mib", "rss_peak_mib", "rss_after_free_mib", "rss_base_mib"):
            if not (isinstance(i.get(key), (int, float)) and i[key] > 0):
                fail(f"idle-owners: {key} = {i.get(key)!r}, expected > 0")
        if i.get("allocated_mib", 0) < 16 or i.get("rss_peak_mib", 0) < 0.9 * i.get("allocated_mib", 0):
            fail(f"idle-owners: allocated {i.get('allocated_mib')} MiB, peak {i.get('rss_peak_mib')} MiB")
        expect_equal("idle-owners ops", i["ops"], 2 * i["objects"])


BAD_ARGS = [
    ["--bogus"],
    ["--threads=0"],
    ["--threads=abc"],
    ["--threads"],
    ["--seed=-1"],
    ["stray"],
]


def mode_args(bench_dir):
    for name in SMALL:
        knob = SCALE_KNOB[name]
        for args in BAD_ARGS + [[f"--{knob}=0"], [f"--{knob}=12x"]]:
            p = run(bench_dir, name, args)
            if p.returncode != 2:
                fail(f"{name} {' '.join(args)}: exit {p.returncode}, expected 2")
            elif not p.stderr.strip() or p.stdout.strip():
                fail(f"{name} {' '.join(args)}: expected a message on stderr and no stdout")
        p = run(bench_dir, name, ["--help"])
        if p.returncode != 0 or "scale knob" not in p.stdout or f"--{knob}" not in p.stdout:
            fail(f"{name} --help: exit {p.returncode}, or no scale knob --{knob} in the text")
    for name in ("larson", "xmalloc", "mallocperf", "machias", "prodcons-batch", "rptest",
                 "malloc-large", "strbuild", "fragstress", "idle-owners"):
        p = run(bench_dir, name, ["--min=100", "--max=10"])
        if p.returncode != 2:
            fail(f"{name} --min > --max: exit {p.returncode}, expected 2")
    for name, args in (("machias", ["--sharing=101"]), ("kvstore", ["--get=60", "--put=30"]),
                       ("kvstore", ["--fill=101"]), ("fragstress", ["--objects=1"]),
                       ("idle-owners", ["--settle=-1"]), ("strbuild", ["--piece=65"])):
        p = run(bench_dir, name, args)
        if p.returncode != 2 or not p.stderr.strip() or p.stdout.strip():
            fail(f"{name} {' '.join(args)}: exit {p.returncode}, expected 2 and a message")
    for name in SMALL:
        expect_refusal(bench_dir, name, ["--bogus-flag"], None,
                       f"{name}: unknown option '--bogus-flag' (see --help)")
        expect_refusal(bench_dir, name, ["--threads"], None,
                       f"{name}: option '--threads' needs a value")
    # glibc serves the run: txalloc's variables concern no code in the process.
    env = dict(os.environ, TXALLOC_BOGUS_OPTION="1", TXALLOC_SECURE="maybe")
    check_run(bench_dir, "threadtest", SMALL["threadtest"], 1, {"glibc"} | SANITIZER_ALLOCATORS,
              env)


def expect_refusal(bench_dir, name, args, env, text):
    """PROGRAM ARGS exits 2, prints nothing on stdout, and its last line of stderr holds
    `text` (a preloaded txalloc warns on lines of its own before)."""
    p = run(bench_dir, name, args, env)
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if p.returncode != 2 or p.stdout.strip() or text not in last:
        fail(f"{name} {' '.join(args)}: exit {p.returncode} (2 expected), last line of stderr "
             f"{last!r} (expected {text!r})")


def mode_preload(bench_dir, libraries):
    found = 0
    for spec in libraries:
        lib_name, path = spec.split("=", 1)
        if not os.path.exists(path):
            print(f"skip {lib_name}: {path} not installed", file=sys.stderr)
            continue
        found += 1
        env = dict(os.environ, LD_PRELOAD=path)
        for name, args in SMALL.items():
            check_run(bench_dir, name, args, 2, {lib_name}, env)
        if lib_name == "txalloc":
            bad_value = dict(env, TXALLOC_SECURE="maybe")
            expect_refusal(bench_dir, "threadtest", SMALL["threadtest"], bad_value,
                           "threadtest: refusing to run: TXALLOC_SECURE=maybe: option secure:")
            unknown = dict(env, TXALLOC_BOGUS_OPTION="1")
            expect_refusal(bench_dir, "larson", SMALL["larson"], unknown,
                           "larson: refusing to run: unknown variable TXALLOC_BOGUS_OPTION")
    if not found:
        print("no library to preload is installed", file=sys.stderr)
        sys.exit(77)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    bench_dir, mode = sys.argv[1], sys.argv[2]
    if mode == "run":
        mode_run(bench_dir)
    elif mode == "args":
        mode_args(bench_dir)
    elif mode == "preload":
        mode_preload(bench_dir, sys.argv[3:])
    else:
        print(f"unknown mode {mode}", file=sys.stderr)
        sys.exit(2)
    print(f"{len(failures)} failures", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
