"""A stand-in bench program for the harness tests: the DESIGN.md JSON contract, with
behaviour chosen by flags so tests can provoke every outcome.

  --threads N      thread count (echoed; time_s is divided by it)
  --value V        base time in seconds; time_s = V * $FAKE_FACTOR / threads
  --mode M         ok | crash (SIGSEGV) | fail (exit 1) | hang (sleep) | garbage (no JSON)
                   | invalid (valid: false) | tm (adds tm_stats)
  --sleep S        sleep S seconds first (so a test can interrupt a study)
The allocator it reports is $FAKE_ALLOCATOR (default glibc), as the real probe would.
"""

import json
import os
import signal
import sys
import time


def main() -> int:
    args = {"threads": "1", "value": "1.0", "mode": "ok", "sleep": "0"}
    argv = sys.argv[1:]
    if "--help" in argv:
        print("usage: fake [--threads N] [--value V] [--mode M] [--sleep S]")
        return 0
    i = 0
    while i < len(argv):
        name = argv[i][2:]
        if name not in args or i + 1 >= len(argv):
            print(f"fake: bad argument {argv[i]}", file=sys.stderr)
            return 2
        args[name] = argv[i + 1]
        i += 2
    threads = int(args["threads"])
    mode = args["mode"]
    time.sleep(float(args["sleep"]))
    print(f"fake: running mode {mode}", file=sys.stderr)
    if mode == "crash":
        sys.stderr.write("fake: about to crash\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "fail":
        print("fake: self-check failed", file=sys.stderr)
        return 1
    if mode == "hang":
        time.sleep(60)
    if mode == "garbage":
        print("this is not json")
        return 0
    factor = float(os.environ.get("FAKE_FACTOR", "1"))
    t = float(args["value"]) * factor / threads
    out = {
        "workload": "fake",
        "params": {"value": float(args["value"]), "mode": mode, "knob": os.environ.get("FAKE_KNOB")},
        "threads": threads,
        "allocator": {"name": os.environ.get("FAKE_ALLOCATOR", "glibc"), "path": "/fake"},
        "results": {"ops": 1000, "ops_per_s": 1000 / t, "time_s": t},
        "memory": {"peak_rss_kib": 1024 * factor},
        "valid": mode != "invalid",
    }
    if mode == "tm":
        out["tm_stats"] = {
            "commits": 900,
            "aborts": 100 * int(factor),
            "aborts_by_cause": {"read-conflict": 60 * int(factor), "write-conflict": 40 * int(factor)},
            "true_conflicts": 75 * int(factor),
            "false_conflicts": 25 * int(factor),
        }
    print(json.dumps(out))
    return 1 if mode == "invalid" else 0


if __name__ == "__main__":
    sys.exit(main())
