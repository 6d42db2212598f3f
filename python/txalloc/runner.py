"""Running a study: the schedule of cells, one subprocess per cell, results appended to
results.jsonl as they come so that an interrupted study resumes where it stopped.

A cell is one run of one workload, with fixed parameters and thread count, under one
allocator, for one repetition. Within a repetition every row runs under every allocator
before the next repetition starts, and the allocator order rotates from row to row and
repetition to repetition, so slow drift of the machine (thermal, other load) falls evenly
on all allocators instead of on whichever always runs last.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import allocators as alloc_mod
from . import cachegrind
from .progress import Progress
from .spec import Row, Spec, WorkloadDef, cell_key, command_line, config_label, expand_rows, parameter_environment

RESULTS_FILE = "results.jsonl"
CACHEGRIND_FILE = "cachegrind.jsonl"  # one record per cachegrind measurement (row, allocator)
STUDY_FILE = "study.json"
STDERR_KEEP = 4000  # characters of a failing cell's stderr kept in the record


@dataclass
class Plan:
    spec: Spec
    mode: str
    rows: list[Row]  # rows whose workload program exists
    allocators: list[alloc_mod.FoundAllocator]  # available, in spec order
    missing_allocators: list[alloc_mod.FoundAllocator]
    programs: dict[str, str]  # workload -> program path
    notes: list[str] = field(default_factory=list)
    skipped_workloads: dict[str, str] = field(default_factory=dict)
    valgrind: str | None = None  # None: no cachegrind measurement runs


def _help_text(program: str) -> str | None:
    try:
        r = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return None
    return (r.stdout or "") + (r.stderr or "")


def find_program(w: WorkloadDef, bench_dir: Path) -> str | None:
    for candidate in w.program:
        p = Path(candidate)
        if not p.is_absolute():
            p = bench_dir / p
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def make_plan(
    spec: Spec,
    mode: str,
    build_dir: Path,
    allocator_names: list[str] | None = None,
    check_help: bool = True,
) -> Plan:
    """`allocator_names` (--allocators) restricts every row to those allocators."""
    bench_dir = build_dir / "bench"
    rows = expand_rows(spec, mode)
    if allocator_names:
        rows = [replace(r, allocators=tuple(a for a in r.allocators if a in allocator_names)) for r in rows]
        rows = [r for r in rows if r.allocators]
    names = list(dict.fromkeys(a for r in rows for a in r.allocators))
    found = alloc_mod.locate_all([spec.allocator_defs[n] for n in names], build_dir)
    available = [f for f in found if f.available]
    missing = [f for f in found if not f.available]
    notes = [f"allocator {f.name} skipped: {f.missing_reason}" for f in missing]
    # A run entry marked only_if_missing = W stands in for W when W's program is not built.
    rows = [r for r in rows if not (r.only_if_missing and find_program(spec.workloads[r.only_if_missing], bench_dir))]
    for stand_in, missing_one in dict.fromkeys((r.workload, r.only_if_missing) for r in rows if r.only_if_missing):
        notes.append(f"workload {stand_in} runs in place of {missing_one}, which is not built")
    programs: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for wname in dict.fromkeys(r.workload for r in rows):
        prog = find_program(spec.workloads[wname], bench_dir)
        if prog is None:
            w = spec.workloads[wname]
            where = ", ".join(str(bench_dir / p) if not Path(p).is_absolute() else p for p in w.program)
            skipped[wname] = f"program not built ({where})"
        else:
            programs[wname] = prog
    for wname, why in skipped.items():
        notes.append(f"workload {wname} skipped: {why}")
    rows = [r for r in rows if r.workload in programs]
    if check_help:
        rows = _drop_rows_with_unknown_flags(spec, rows, programs, notes)
    valgrind = None
    measured = [r for r in rows if r.cachegrind]
    if measured:
        valgrind = cachegrind.find_valgrind()
        if valgrind is None:
            notes.append(
                f"valgrind not found: the cachegrind measurements of {len(measured)} rows are skipped, "
                "so the report has no cache misses (scripts/install-deps.sh installs valgrind)"
            )
    return Plan(spec, mode, rows, available, missing, programs, notes, skipped, valgrind)


def _mentions(text: str, flag: str) -> bool:
    """`flag` appears in `text` as a whole flag (--size does not match --node-size)."""
    return re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text) is not None


def _row_flags(w: WorkloadDef, row: Row) -> set[str]:
    used = {w.threads_flag} if w.threads_flag else set()
    used |= {w.params[name].flag for name, _ in row.params if w.params[name].flag}
    used |= {a.split("=", 1)[0] for a in w.args if a.startswith("--")}
    return used


def _drop_rows_with_unknown_flags(spec: Spec, rows: list[Row], programs: dict[str, str], notes: list[str]) -> list[Row]:
    """Catches a registry that no longer matches its program: a row is run only when every
    flag it passes appears in the program's --help (a program without --help text is
    trusted)."""
    helps = {w: _help_text(p) for w, p in programs.items()}
    kept = []
    reported: set = set()
    for r in rows:
        text = helps.get(r.workload)
        absent = sorted(f for f in _row_flags(spec.workloads[r.workload], r) if text and not _mentions(text, f))
        if not absent:
            kept.append(r)
            continue
        key = (r.workload, tuple(absent))
        if key not in reported:
            reported.add(key)
            notes.append(
                f"workload {r.workload}: rows using {', '.join(absent)} skipped: "
                f"{programs[r.workload]} --help does not mention them (registry out of date?)"
            )
    return kept


@dataclass(frozen=True)
class Cell:
    row: Row
    allocator: alloc_mod.FoundAllocator
    rep: int

    @property
    def key(self) -> str:
        return cell_key(self.row.workload, self.row.params_dict, self.row.threads, self.allocator.name, self.rep)


def schedule(plan: Plan) -> list[Cell]:
    cells: list[Cell] = []
    max_reps = max((r.repetitions for r in plan.rows), default=0)
    for rep in range(max_reps):
        for i, row in enumerate(plan.rows):
            allocs = [a for a in plan.allocators if a.name in row.allocators]
            if rep >= row.repetitions or not allocs:
                continue
            shift = (rep + i) % len(allocs)
            for a in allocs[shift:] + allocs[:shift]:
                cells.append(Cell(row, a, rep))
    return cells


def parse_output(stdout: str) -> dict | None:
    """The workload's JSON object: the whole of stdout, or else its last line that is one."""
    text = stdout.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def cell_environment(
    plan: Plan, w: WorkloadDef, params: dict[str, Any], allocator: alloc_mod.FoundAllocator, base_env: dict[str, str]
) -> dict[str, str]:
    """The caller's environment, then the spec's, the workload's, the parameters' and last
    the allocator's (its LD_PRELOAD and options)."""
    env = dict(base_env)
    env.update(plan.spec.env)
    env.update(w.env)
    env.update(parameter_environment(w, params))
    return allocator.environment(env)


def run_cell(cell: Cell, plan: Plan, base_env: dict[str, str]) -> dict[str, Any]:
    row = cell.row
    w = plan.spec.workloads[row.workload]
    argv = command_line(w, plan.programs[row.workload], row.params_dict, row.threads)
    env = cell_environment(plan, w, row.params_dict, cell.allocator, base_env)
    record: dict[str, Any] = {
        "key": cell.key,
        "workload": row.workload,
        "params": row.params_dict,
        "threads": row.threads,
        "allocator": cell.allocator.name,
        "rep": cell.rep,
        "argv": argv,
        "preload": cell.allocator.path,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    run_program(argv, env, row.timeout_s, w, cell.allocator, record)
    return record


def run_program(
    argv: list[str],
    env: dict[str, str],
    timeout_s: float,
    w: WorkloadDef,
    allocator: alloc_mod.FoundAllocator,
    record: dict[str, Any],
) -> None:
    """Runs one workload process and adds to `record` its wall time, exit status, stderr
    tail, JSON object (`result`) and `status`: "ok", or what went wrong, with `error`."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            start_new_session=True,  # its own process group: a timeout kills all of it
        )
    except OSError as e:
        record.update(status="failed", returncode=None, wall_s=0.0, error=f"cannot start: {e}", stderr="")
        return
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    record["wall_s"] = round(time.monotonic() - t0, 4)
    record["returncode"] = proc.returncode
    record["stderr"] = (stderr or "")[-STDERR_KEEP:]
    result = parse_output(stdout or "")
    if result is not None:
        record["result"] = result

    if timed_out:
        record.update(status="timeout", error=f"no result after {timeout_s:g} s; killed")
    elif proc.returncode < 0:
        sig = -proc.returncode
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = str(sig)
        record.update(status="crashed", error=f"killed by signal {signame}")
    elif proc.returncode != 0:
        record.update(status="failed", error=f"exit status {proc.returncode}")
    elif result is None:
        record.update(status="bad-output", error="stdout holds no JSON object")
    elif result.get("valid") is False:
        record.update(status="invalid", error="the workload's own end-of-run check failed (valid: false)")
    elif w.verify_allocator and _served_by(result) != allocator.definition.expected_name:
        record.update(
            status="wrong-allocator",
            error=f"asked for {allocator.definition.expected_name}, "
            f"served by {_served_by(result) or 'unknown (no allocator.name)'}",
        )
    elif metric_value(result, w.metric) is None:
        record.update(status="bad-output", error=f"results.{w.metric} missing or not a number")
    else:
        record["status"] = "ok"
    if record["status"] == "ok":
        record["stderr"] = record["stderr"][-500:]


def _served_by(result: dict) -> str | None:
    a = result.get("allocator")
    return a.get("name") if isinstance(a, dict) else None


def metric_value(result: dict, metric: str) -> float | None:
    v = (result.get("results") or {}).get(metric)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def load_records(study_dir: Path, name: str = RESULTS_FILE) -> list[dict]:
    path = study_dir / name
    records = []
    if not path.exists():
        return records
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption: that cell runs again
    return records


def end_torn_line(study_dir: Path, name: str = RESULTS_FILE) -> None:
    """After an interruption the file may end inside a record: end that line, so the next
    record starts on its own (the torn one is ignored when loading and its cell reruns)."""
    path = study_dir / name
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")


def append_record(study_dir: Path, record: dict, name: str = RESULTS_FILE) -> None:
    with open(study_dir / name, "a") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


@dataclass(frozen=True)
class CachegrindJob:
    """The cachegrind measurement of one row under one allocator: two runs (cachegrind.py)."""

    row: Row
    allocator: alloc_mod.FoundAllocator

    @property
    def key(self) -> str:
        return json.dumps(
            ["cachegrind", self.row.workload, self.row.params_dict, self.row.threads, self.allocator.name],
            sort_keys=True,
        )


def cachegrind_jobs(plan: Plan) -> list[CachegrindJob]:
    if plan.valgrind is None:
        return []
    return [
        CachegrindJob(row, a)
        for row in plan.rows
        if row.cachegrind
        for a in plan.allocators
        if a.name in row.allocators
    ]


def run_cachegrind(job: CachegrindJob, plan: Plan, base_env: dict[str, str]) -> dict[str, Any]:
    """Runs the job's two runs; the record holds each run (argv, status, counts) and, when
    both are ok, `per_unit`: the counts per unit of the varied parameter."""
    row, m = job.row, job.row.cachegrind
    w = plan.spec.workloads[row.workload]
    record: dict[str, Any] = {
        "key": job.key,
        "workload": row.workload,
        "params": row.params_dict,
        "threads": row.threads,
        "allocator": job.allocator.name,
        "per": m.per,
        "unit": m.unit,
        "values": list(m.values),
        "geometry": {"D1": m.d1, "I1": m.i1, "LL": m.ll},
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="txalloc-cachegrind-") as tmp:
        for value in m.values:
            params = m.run_params(row.params_dict, value)
            out_file = os.path.join(tmp, f"cachegrind.out.{value}")
            argv = cachegrind.command(
                plan.valgrind, m, out_file, command_line(w, plan.programs[row.workload], params, row.threads)
            )
            run: dict[str, Any] = {"argv": argv, "params": params}
            env = cell_environment(plan, w, params, job.allocator, base_env)
            run_program(argv, env, m.timeout_s or row.timeout_s, w, job.allocator, run)
            run.pop("result", None)  # the counts are what this run is for
            if run["status"] == "ok":
                try:
                    with open(out_file) as f:
                        run["counts"] = cachegrind.parse_counts(f.read())
                except (OSError, ValueError) as e:
                    run.update(status="bad-output", error=f"cachegrind output: {e}")
            record["runs"].append(run)
            if run["status"] != "ok":
                record.update(status=run["status"], error=f"{m.per}={value}: {run.get('error', '')}")
                return record
    low, high = (r["counts"] for r in record["runs"])
    record["per_unit"] = cachegrind.per_unit(low, high, m.values[1] - m.values[0])
    record["status"] = "ok"
    return record


def load_cachegrind_records(study_dir: Path) -> list[dict]:
    return load_records(study_dir, CACHEGRIND_FILE)


def execute_cachegrind(plan: Plan, study_dir: Path, stream, jobs: int | None = None) -> int:
    """Runs every cachegrind job not yet in cachegrind.jsonl, `jobs` at a time (default: the
    usable CPUs): the counts are simulated, so runs side by side do not disturb them."""
    end_torn_line(study_dir, CACHEGRIND_FILE)
    done = {r.get("key") for r in load_cachegrind_records(study_dir)}
    todo = [j for j in cachegrind_jobs(plan) if j.key not in done]
    if not todo:
        return 0
    print(f"txalloc: cachegrind: {len(todo)} measurements (two runs each) under {plan.valgrind}", file=stream)
    progress = Progress(len(todo), 0, stream)
    base_env = dict(os.environ)
    workers = jobs or len(os.sched_getaffinity(0))
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = {pool.submit(run_cachegrind, j, plan, base_env): j for j in todo}
        for future in as_completed(futures):
            job, record = futures[future], future.result()
            append_record(study_dir, record, CACHEGRIND_FILE)
            label = f"cachegrind {short_label(plan, job.row)} {job.allocator.name}"
            failed = record["status"] != "ok"
            progress.step(label, failed=failed)
            if failed:
                if progress.tty:
                    stream.write("\n")
                print(f"txalloc: measurement failed ({record['status']}): {label}: {record['error']}", file=stream)
    finally:
        # interrupted: the running measurements end, the queued ones never start
        pool.shutdown(wait=True, cancel_futures=True)
    progress.finish()
    return len(todo)


def short_label(plan: Plan, row: Row) -> str:
    """The row named by its workload and the parameters that vary among the plan's rows."""
    varying = [
        name
        for name, value in row.params
        if any(r.workload == row.workload and r.params_dict.get(name) != value for r in plan.rows)
    ]
    return f"{config_label(row.workload, row.params_dict, varying)} t={row.threads}"


def execute(plan: Plan, study_dir: Path, stream=None, max_cells: int | None = None) -> int:
    """Runs every cell of the plan not yet in results.jsonl, then the cachegrind
    measurements not yet in cachegrind.jsonl. Returns how many cells ran.
    `max_cells` stops early (tests use it to simulate an interruption)."""
    stream = stream if stream is not None else sys.stderr
    end_torn_line(study_dir)
    done = {r.get("key") for r in load_records(study_dir)}
    cells = schedule(plan)
    todo = [c for c in cells if c.key not in done]
    progress = Progress(len(cells), len(cells) - len(todo), stream)
    if todo and len(todo) < len(cells):
        print(f"txalloc: resuming: {len(cells) - len(todo)} of {len(cells)} cells already done", file=stream)
    base_env = dict(os.environ)
    ran = 0
    for cell in todo:
        if max_cells is not None and ran >= max_cells:
            break
        label = f"{short_label(plan, cell.row)} {cell.allocator.name} #{cell.rep + 1}"
        progress.show(label)
        record = run_cell(cell, plan, base_env)
        append_record(study_dir, record)
        ran += 1
        failed = record["status"] != "ok"
        progress.step(label, failed=failed)
        if failed:
            if progress.tty:
                stream.write("\n")
            print(f"txalloc: cell failed ({record['status']}): {label}: {record.get('error', '')}", file=stream)
    progress.finish()
    if max_cells is None or ran < max_cells:
        execute_cachegrind(plan, study_dir, stream)
    return ran
