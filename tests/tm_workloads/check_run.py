#!/usr/bin/env python3
"""Runs a transactional workload program (build/bench/intset, bank, tx-machias, their -itm
and -notm twins) and checks what it promises: exit status, exactly one JSON object on stdout in the
shape of DESIGN.md, "valid": true, and the options it was given echoed in the JSON.

  check_run.py [options] -- PROGRAM [ARGS...]
    --each NAME=V1,V2,...  run once per value of --NAME (several --each: the product);
                           NAME=@ takes every choice that PROGRAM --help lists for --NAME
    --env VAR=VALUE        set in the program's environment
    --help-test            check that PROGRAM --help prints a usage text and exits 0
    --bad "ARGS"           check that PROGRAM ARGS exits 2 with a message on stderr and
                           nothing on stdout (repeatable)
    --says TEXT            the message of the --bad before it is one line holding TEXT
    --expect KEY.KEY=V     check that the JSON holds V (a JSON literal, else a string) at
                           that path, e.g. tm.privatization=false (repeatable)
--duration and --ops values are multiplied by TXALLOC_TEST_SCALE (sanitizer builds run
shorter); so are --range and --initial values above 4096 and 2048 (the work of building the
initial structure), never below those: small ranges are there to make conflicts frequent."""
import itertools
import json
import os
import re
import shlex
import subprocess
import sys

TIMEOUT_S = 120
# Size flags scaled like --duration, and the least value scaling leaves them (the initial
# floor is half the range floor, so a scaled --initial never exceeds a scaled --range).
SCALED_SIZE_FLOORS = {"--range": 4096, "--initial": 2048}


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def scaled(args):
    scale = float(os.environ.get("TXALLOC_TEST_SCALE", "1") or 1)
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a == "--duration":
            out[i + 1] = "%g" % max(0.05, float(out[i + 1]) * scale)
        elif a == "--ops":
            out[i + 1] = "%d" % max(1000, int(int(out[i + 1]) * scale))
        elif a in SCALED_SIZE_FLOORS:
            n, floor = int(out[i + 1]), SCALED_SIZE_FLOORS[a]
            out[i + 1] = "%d" % max(min(n, floor), int(n * scale))
    return out


def run(cmd, env):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=TIMEOUT_S, text=True)
    return p


def help_choices(program, env, name):
    p = run([program, "--help"], env)
    m = re.search(r"--%s\s.*?\[([^;\]]+)" % re.escape(name.replace("_", "-")), p.stdout)
    if not m or "|" not in m.group(1):
        fail("%s --help lists no choices for --%s" % (program, name))
    choices = m.group(1).split("|")
    if name == "tm" and "rtm" in choices and not cpu_runs_rtm():
        # The backend refuses to start there (tests/tm/test_rtm_choice.c checks how).
        print("check_run: --tm=rtm left out: this CPU does not run RTM", file=sys.stderr)
        choices.remove("rtm")
    return choices


def cpu_runs_rtm():
    """The kernel lists the rtm flag only where TSX is present and enabled."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " rtm" in line for line in f)
    except OSError:
        return False


def given_flags(args):
    """{name: value} of the flags in args, names with '_' for '-': --name=value, --name value,
    and a bare --name (a boolean flag: "1") before another flag or at the end."""
    flags = {}
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if not a.startswith("--"):
            continue
        name, eq, value = a[2:].partition("=")
        if not eq:
            if i < len(args) and not args[i].startswith("--"):
                value = args[i]
                i += 1
            else:
                value = "1"
        flags[name.replace("-", "_")] = value
    return flags


def flag_value(args, name):
    return given_flags(args).get(name.replace("-", "_"))


def check_json(cmd, p):
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        fail("expected exactly one JSON line on stdout, got %d:\n%s" % (len(lines), p.stdout))
    try:
        d = json.loads(lines[0])
    except ValueError as e:
        fail("stdout is not JSON (%s): %s" % (e, lines[0][:500]))
    for key in ("workload", "params", "threads", "allocator", "tm", "results", "memory", "valid"):
        if key not in d:
            fail("JSON lacks %r: %s" % (key, lines[0][:500]))
    for key in ("ops_per_s", "time_s", "cpu_s"):
        if key not in d["results"]:
            fail("results lack %r" % key)
    # The workers ran: the process used CPU time during the timed span.
    if not d["results"]["cpu_s"] > 0:
        fail("results.cpu_s is %r, not positive" % d["results"]["cpu_s"])
    if d["valid"] is not True:
        fail("run not valid: %s" % d.get("error", lines[0][:500]))
    tm = d["tm"]
    if tm.get("backend") == "libitm":
        if tm.get("method") != (os.environ.get("ITM_DEFAULT_METHOD") or "default"):
            fail("tm.method %r does not match ITM_DEFAULT_METHOD" % tm.get("method"))
    elif tm.get("backend") == "none":  # the -notm build: no TM, one thread, nothing counted
        if d["threads"] != 1 or "tm_stats" in d or "commits" in d["results"]:
            fail("the build without a TM reports threads %r or TM counts" % d["threads"])
    else:
        for key in ("commits", "aborts", "abort_rate"):
            if key not in d["results"]:
                fail("results lack %r" % key)
        stats = d.get("tm_stats")
        if not stats or "aborts_by_cause" not in stats or "false_conflict_share" not in stats:
            fail("tm_stats missing or incomplete")
        if stats["commits"] <= 0:
            fail("no commits counted")
        # "tm" is the configuration in force, "tm_options" the option values as given:
        # the options on the command line must come back in the latter.
        options = d.get("tm_options")
        if not isinstance(options, dict) or "design" not in options:
            fail("tm_options missing or incomplete")
        # The configuration in force: the front-end's keys and txmem's, then the backend's
        # own (the STM's design and privatization; none for glock).
        keys = ["backend", "cm", "nesting", "txmem", "safe_reuse", "txmem_membarrier"]
        if tm.get("backend") == "stm":
            keys += ["design", "privatization", "shift", "ort_log2"]
        for key in keys:
            if key not in tm:
                fail("tm lacks %r" % key)
        for key, given in given_flags(cmd[1:]).items():
            if key in options and str(options[key]).lower() != given.lower():
                if not (isinstance(options[key], bool) and given in ("0", "1")
                        and options[key] == (given == "1")):
                    fail("tm_options.%s is %r, the command line said %r"
                         % (key, options[key], given))
    params = d["params"]
    for name, value in params.items():
        given = flag_value(cmd[1:], name)
        if given is not None and str(value) != given and name not in ("node_size",):
            fail("params.%s is %r, the command line said %r" % (name, value, given))
    return d


def check_expected(d, expected):
    for path, want in expected:
        node = d
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                fail("JSON has no %s" % path)
            node = node[part]
        if node != want:
            fail("%s is %r, expected %r" % (path, node, want))


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        fail("usage: check_run.py [options] -- PROGRAM [ARGS...]")
    sep = argv.index("--")
    opts, cmd = argv[:sep], argv[sep + 1:]
    program, base = cmd[0], cmd[1:]
    env = dict(os.environ)
    each, bad, expected, help_test = [], [], [], False
    i = 0
    while i < len(opts):
        o = opts[i]
        if o == "--each":
            name, _, values = opts[i + 1].partition("=")
            each.append((name, values))
            i += 2
        elif o == "--env":
            var, _, value = opts[i + 1].partition("=")
            env[var] = value
            os.environ[var] = value
            i += 2
        elif o == "--bad":
            bad.append((shlex.split(opts[i + 1]), None))
            i += 2
        elif o == "--says":
            if not bad:
                fail("--says needs a --bad before it")
            bad[-1] = (bad[-1][0], opts[i + 1])
            i += 2
        elif o == "--expect":
            path, _, text = opts[i + 1].partition("=")
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            expected.append((path, value))
            i += 2
        elif o == "--help-test":
            help_test = True
            i += 1
        else:
            fail("unknown option " + o)

    if help_test:
        p = run([program, "--help"], env)
        if p.returncode != 0 or "usage" not in p.stdout:
            fail("--help: exit %d, stdout %r" % (p.returncode, p.stdout[:200]))
    for args, says in bad:
        p = run([program] + args, env)
        if p.returncode != 2 or p.stdout.strip() or not p.stderr.strip():
            fail("%s: exit %d (2 expected), stdout %r, stderr %r"
                 % (args, p.returncode, p.stdout[:200], p.stderr[:200]))
        if says is not None and (says not in p.stderr or len(p.stderr.splitlines()) != 1):
            fail("%s: the message is not one line holding %r: %r" % (args, says, p.stderr[:500]))
    if help_test or bad:
        if not each and not base:
            print("ok", file=sys.stderr)
            return

    axes = []
    for name, values in each:
        vals = help_choices(program, env, name) if values == "@" else values.split(",")
        axes.append([(name, v) for v in vals])
    runs = 0
    for combo in itertools.product(*axes) if axes else [()]:
        args = list(base)
        for name, value in combo:
            args.append("--%s=%s" % (name, value))
        full = [program] + scaled(args)
        p = run(full, env)
        if p.returncode != 0:
            fail("exit %d\nstderr: %s\nstdout: %s" % (p.returncode, p.stderr[-2000:], p.stdout[-2000:]))
        d = check_json(full, p)
        check_expected(d, expected)
        print("  ok: %s ops/s, valid" % round(d["results"]["ops_per_s"]), file=sys.stderr)
        runs += 1
    print("%d runs ok" % runs, file=sys.stderr)


if __name__ == "__main__":
    main()
