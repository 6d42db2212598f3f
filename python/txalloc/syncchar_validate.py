"""Syncchar's validation (§4 of the paper) on txalloc's workloads: predict the STM's speed-up
over the lock from a recorded glock run, measure it, and report the error per workload and
the geometric mean (docs/syncchar.md, "Validation").

Per workload and repetition: a glock run with the recorder on (the trace the prediction
comes from), a glock run and an stm run without it (the measured speed-up: stm ops/s over
glock ops/s), and one-thread runs of both, from which a second, calibrated prediction takes
the STM's own cost per block (the model assumes a TM section costs what the locked one
does). Medians over the repetitions."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import tempfile
from pathlib import Path

from . import syncchar
from .errors import UserError

WORKLOADS: dict[str, list[str]] = {
    **{
        f"intset-{s}-{u}": ["intset", f"--structure={s}", f"--update={u}"]
        for s in ("list", "hash", "rbtree", "skiplist")
        for u in (20, 60)
    },
    "bank": ["bank"],
    "avl": ["avl"],
    # The STAMP-style applications: a fixed amount of work (no --duration), their medium input.
    **{name: [name, "--size=medium"] for name in ("vacation", "intruder", "refine")},
}
FIXED_WORK = {"vacation", "intruder", "refine"}


def _run(build_dir: Path, argv: list[str], threads: int, duration: float, extra: list[str]) -> dict:
    program = build_dir / "bench" / argv[0]
    if not program.is_file():
        raise UserError(f"syncchar: {program} is not built (make, or --build-dir)")
    timing = [] if argv[0] in FIXED_WORK else [f"--duration={duration}"]
    cmd = [str(program), *argv[1:], f"--threads={threads}", *timing, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise UserError(f"syncchar: {' '.join(cmd)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def calibrated_time(run: syncchar.LockRun, d_n: float, n: int, k: float) -> float:
    """The paper's time with each critical section k times as long under the TM."""
    return (run.acq_s + run.held_s) * k * max(d_n, 1.0) / n + run.other_s


def section_cost_ratio(run: syncchar.LockRun, glock1: float, stm1: float) -> float:
    """k such that one thread's block costs h + o under glock and k h + o under the STM (h,
    o: held and other time per block of the recorded run), from the one-thread rates."""
    h, o = run.held_s / run.sections, run.other_s / run.sections
    if h <= 0 or stm1 <= 0:
        return 1.0
    return max(((h + o) * glock1 / stm1 - o) / h, 0.0)


def validate(
    build_dir: Path,
    names: list[str],
    threads: int = 2,
    duration: float = 0.3,
    repetitions: int = 3,
    sample: int = 10,
) -> list[dict]:
    rows = []
    for name in names:
        argv = WORKLOADS[name]
        predicted, calibrated, measured, d_ns = [], [], [], []
        for _ in range(repetitions):
            with tempfile.TemporaryDirectory() as tmp:
                trace_path = Path(tmp) / "t.trace"
                _run(
                    build_dir,
                    argv,
                    threads,
                    duration,
                    ["--tm=glock", f"--syncchar={trace_path}", f"--syncchar-sample={sample}"],
                )
                trace = syncchar.read_trace(trace_path)
            result = syncchar.analyse(trace, threads=[threads], symbolize=False)
            p = result["prediction"]
            lock = _run(build_dir, argv, threads, duration, ["--tm=glock"])["results"]["ops_per_s"]
            stm = _run(build_dir, argv, threads, duration, ["--tm=stm"])["results"]["ops_per_s"]
            lock1 = _run(build_dir, argv, 1, duration, ["--tm=glock"])["results"]["ops_per_s"]
            stm1 = _run(build_dir, argv, 1, duration, ["--tm=stm"])["results"]["ops_per_s"]
            run = syncchar.LockRun(**result["lock_run"])
            k = section_cost_ratio(run, lock1, stm1)
            predicted.append(p["speedup"])
            calibrated.append(run.elapsed_s / calibrated_time(run, p["D_n"], threads, k))
            measured.append(stm / lock)
            d_ns.append(p["D_n"])
        row = {
            "name": name,
            "D_n": statistics.median(d_ns),
            "predicted": statistics.median(predicted),
            "calibrated": statistics.median(calibrated),
            "measured": statistics.median(measured),
        }
        row["error"] = abs(row["predicted"] - row["measured"]) / row["measured"]
        row["calibrated_error"] = abs(row["calibrated"] - row["measured"]) / row["measured"]
        rows.append(row)
    return rows


def geometric_mean(values: list[float]) -> float:
    """Of errors: a zero error counts as 0.1 % (a geometric mean of anything with 0 is 0)."""
    vals = [max(v, 1e-3) for v in values]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan


def markdown(rows: list[dict], threads: int) -> str:
    lines = [
        f"| workload | D_{threads} | predicted | calibrated | measured (stm / glock) | error | calibrated error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['D_n']:.2f} | {r['predicted']:.2f} | {r['calibrated']:.2f} | {r['measured']:.2f} "
            f"| {100 * r['error']:.0f} % | {100 * r['calibrated_error']:.0f} % |"
        )
    g = geometric_mean([r["error"] for r in rows])
    gc = geometric_mean([r["calibrated_error"] for r in rows])
    lines.append(f"| geometric mean | | | | | {100 * g:.0f} % | {100 * gc:.0f} % |")
    return "\n".join(lines) + "\n"
