#!/usr/bin/env python3
"""Runs build/bench/ring and checks what it promises whatever the allocator: exit 0, one
JSON object, "valid": true, every traversal counted, placement figures consistent with
each other and with the L1 geometry (sets used within the sets and the nodes, the fullest
set at least the pigeonhole bound, at least one line per set used and at most two per
node, at least one page and at most one per line), and with --tm the TM's statistics, aborts by cause including "capacity".

  check_ring.py [options] -- RING [ARGS...]
    --each NAME=V1,V2,...  run once per value of --NAME (several --each: the product)
    --env VAR=VALUE        set in the program's environment
    --expect KEY.KEY=V     the JSON holds V at that path (repeatable)
    --at-least KEY.KEY=N   the JSON holds a number >= N at that path (repeatable)
--duration values are multiplied by TXALLOC_TEST_SCALE (check_run.py's rule)."""
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_run import check_expected, fail, given_flags, run, scaled  # noqa: E402


def asks_for_tm(args):
    return any(a == "--tm" or a.startswith("--tm=") for a in args)


def check_placement(results, nodes):
    sets, used = results["l1_sets"], results["l1_sets_used"]
    fullest, lines = results["max_nodes_per_set"], results["lines_touched"]
    if not 1 <= used <= min(sets, nodes):
        fail("l1_sets_used %d outside [1, min(%d sets, %d nodes)]" % (used, sets, nodes))
    if not -(-nodes // used) <= fullest <= nodes - used + 1:
        fail("max_nodes_per_set %d impossible for %d nodes on %d sets" % (fullest, nodes, used))
    if not max(used, 1) <= lines <= 2 * nodes:
        fail("lines_touched %d outside [%d sets used, 2 x %d nodes]" % (lines, used, nodes))
    pages = results["pages_touched"]
    if not 1 <= pages <= lines:
        fail("pages_touched %d outside [1, %d lines touched]" % (pages, lines))


def check(cmd, p):
    if p.returncode != 0:
        fail("exit %d\nstderr: %s\nstdout: %s" % (p.returncode, p.stderr[-2000:], p.stdout[-2000:]))
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        fail("expected exactly one JSON line on stdout, got %d" % len(lines))
    d = json.loads(lines[0])
    if d.get("workload") != "ring" or d.get("valid") is not True:
        fail("not a valid ring run: %s" % d.get("error", lines[0][:500]))
    flags = given_flags(cmd[1:])
    params, results = d["params"], d["results"]
    nodes = params["nodes"]
    if "nodes" in flags and nodes != int(flags["nodes"]):
        fail("params.nodes %r, the command line said %s" % (nodes, flags["nodes"]))
    if "node_size" in flags and params["node_size"] != int(flags["node_size"]):
        fail("params.node_size %r, the command line said %s" % (params["node_size"],
                                                               flags["node_size"]))
    for key in ("ops", "traversals_per_s", "time_s", "cpu_s", "line", "l1_sets"):
        if key not in results:
            fail("results lack %r" % key)
    if "duration" not in flags and results["ops"] != d["threads"] * params["traversals"]:
        fail("%d traversals counted, %d threads x %d asked" % (results["ops"], d["threads"],
                                                               params["traversals"]))
    check_placement(results, nodes)
    if asks_for_tm(cmd[1:]):
        stats = d.get("tm_stats")
        if params["sync"] != "tm" or not stats or "capacity" not in stats["aborts_by_cause"]:
            fail("--tm: no tm_stats with aborts_by_cause.capacity")
        committed = stats["commits"]
        if committed != results["ops"]:
            fail("%d commits for %d traversals" % (committed, results["ops"]))
    elif params["sync"] != "mutex" or "tm_stats" in d or d["tm"].get("backend") != "none":
        fail("without --tm the run must use the mutex and report no TM")
    return d


def check_at_least(d, minima):
    for path, least in minima:
        node = d
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                fail("JSON has no %s" % path)
            node = node[part]
        if not isinstance(node, (int, float)) or node < least:
            fail("%s is %r, expected at least %r (node size %s)" % (path, node, least,
                                                                   d["params"]["node_size"]))


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_ring.py [options] -- RING [ARGS...]")
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    env = dict(os.environ)
    each, expected, minima = [], [], []
    for o, value in zip(opts[::2], opts[1::2]):
        if o == "--each":
            name, _, values = value.partition("=")
            each.append([(name, v) for v in values.split(",")])
        elif o == "--env":
            var, _, text = value.partition("=")
            env[var] = text
        elif o == "--expect":
            path, _, text = value.partition("=")
            try:
                expected.append((path, json.loads(text)))
            except ValueError:
                expected.append((path, text))
        elif o == "--at-least":
            path, _, text = value.partition("=")
            try:
                minima.append((path, json.loads(text)))
            except ValueError:
                minima.append((path, None))
            if not isinstance(minima[-1][1], (int, float)):
                fail("--at-least %s: not a number" % value)
        else:
            fail("unknown option " + o)
    if len(opts) % 2:
        fail("option %s lacks its value" % opts[-1])
    runs = 0
    for combo in itertools.product(*each):
        full = [cmd[0]] + scaled(cmd[1:] + ["--%s=%s" % nv for nv in combo])
        d = check(full, run(full, env))
        check_expected(d, expected)
        check_at_least(d, minima)
        print("  ok: %d of %d sets, %s traversals/s" % (d["results"]["l1_sets_used"],
              d["results"]["l1_sets"], round(d["results"]["traversals_per_s"])), file=sys.stderr)
        runs += 1
    print("%d runs ok" % runs, file=sys.stderr)


if __name__ == "__main__":
    main()
