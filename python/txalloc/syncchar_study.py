"""The study's Syncchar runs (docs/syncchar.md, "In the study"): when the spec has a
`[syncchar]` table, after the timed cells, each TM row of txalloc's runtime gets two short
runs at its highest thread count under one allocator (txalloc when the row has it):

- the lock run with the recorder on (TXALLOC_SYNCCHAR, at the spec's sampling rate): the
  trace Syncchar predicts the TM's behaviour from, kept under syncchar/ in the study;
- the same run without the recorder: the lock's rate, against which the report sets the
  TM rows' measured rates (report_syncchar.py).

The timed cells themselves run without the recorder, so their figures stay as they are; the
study grows by these runs only. Lock runs are `tm=glock` (the paper's setting: a lock-based
program predicts TM). A `scale` float parameter (the run's duration) is cut to the spec's
`duration`; the other parameters are the row's. Records go to syncchar.jsonl, one per row."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import allocators as alloc_mod
from .runner import Plan, load_records, metric_value, run_program, short_label
from .spec import Row, WorkloadDef, command_line, parameter_environment

SYNCCHAR_FILE = "syncchar.jsonl"
TRACE_DIR = "syncchar"
TIMEOUT_S = 60.0
LOCK_BACKEND = "glock"
PREFERRED_ALLOCATOR = "txalloc"


def recordable(w: WorkloadDef) -> bool:
    """A TM workload on txalloc's runtime (the recorder is part of it): one that takes the
    backend as its `tm` parameter. libitm's workloads do not."""
    return w.group == "tm" and "tm" in w.params


@dataclass(frozen=True)
class Job:
    row: Row  # the row at its configuration's highest thread count
    allocator: alloc_mod.FoundAllocator
    label: str  # the workload and the parameters that vary among the study's rows

    @property
    def key(self) -> str:
        row = self.row
        return json.dumps([row.workload, row.params_dict, row.threads, self.allocator.name], sort_keys=True)

    @property
    def trace_name(self) -> str:
        label = f"{self.label}-t{self.row.threads}-{self.allocator.name}"
        return re.sub(r"[^A-Za-z0-9.=-]+", "_", label).strip("_") + ".trace"


def jobs(plan: Plan) -> list[Job]:
    """One job per TM configuration (workload and parameters) that the recorder can see and
    that does not itself run the lock."""
    if plan.spec.syncchar is None:
        return []
    chosen: dict[str, Row] = {}
    for row in plan.rows:
        if not recordable(plan.spec.workloads[row.workload]) or row.params_dict.get("tm") == LOCK_BACKEND:
            continue
        k = json.dumps([row.workload, row.params_dict], sort_keys=True)
        if k not in chosen or row.threads > chosen[k].threads:
            chosen[k] = row
    out = []
    for row in chosen.values():
        allocs = [a for a in plan.allocators if a.name in row.allocators]
        if not allocs:
            continue
        preferred = [a for a in allocs if a.name == PREFERRED_ALLOCATOR]
        label = short_label(plan, row).rsplit(" t=", 1)[0]
        out.append(Job(row, (preferred or allocs)[0], label))
    return out


def lock_params(w: WorkloadDef, params: dict[str, Any], duration: float) -> dict[str, Any]:
    """The row's parameters under the lock, with scaled float parameters cut to `duration`."""
    out = dict(params)
    for name, v in params.items():
        p = w.params.get(name)
        if p is not None and p.scale and isinstance(v, float):
            out[name] = min(v, duration)
    out["tm"] = LOCK_BACKEND
    return out


def compress(trace: Path) -> Path:
    """Replaces the trace by its gzip (sorted address lists shrink about 6 times; the
    analyser reads either)."""
    packed = trace.with_name(trace.name + ".gz")
    with open(trace, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    trace.unlink()
    return packed


def run_job(job: Job, plan: Plan, study_dir: Path, base_env: dict[str, str]) -> dict[str, Any]:
    """The recorded lock run and the plain one; the record says how each went and holds the
    plain run's metric as `lock_metric`."""
    cfg = plan.spec.syncchar
    row = job.row
    w = plan.spec.workloads[row.workload]
    params = lock_params(w, row.params_dict, cfg.duration)
    argv = command_line(w, plan.programs[row.workload], params, row.threads)
    own_env = {**plan.spec.env, **w.env, **parameter_environment(w, params)}
    trace = Path(study_dir) / TRACE_DIR / job.trace_name
    trace.parent.mkdir(exist_ok=True)
    trace.unlink(missing_ok=True)  # a run cut short may have left part of one
    trace.with_name(trace.name + ".gz").unlink(missing_ok=True)
    recorder = {
        "TXALLOC_SYNCCHAR": str(trace.resolve()),
        "TXALLOC_SYNCCHAR_SAMPLE": str(cfg.sample),
        # I_n and D_n need no object names; the allocation records would be most of a fast
        # workload's trace
        "TXALLOC_SYNCCHAR_OBJECTS": "0",
    }
    record: dict[str, Any] = {
        "key": job.key,
        "workload": row.workload,
        "row": job.label,
        "params": row.params_dict,
        "threads": row.threads,
        "allocator": job.allocator.name,
        "sample": cfg.sample,
        "metric": w.metric,
        "trace": f"{TRACE_DIR}/{job.trace_name}.gz",
        "argv": argv,
        "env": {**own_env, **recorder},
    }
    recorded: dict[str, Any] = {}
    recorded_env = job.allocator.environment({**base_env, **own_env, **recorder})
    run_program(argv, recorded_env, TIMEOUT_S, w, job.allocator, recorded)
    if recorded["status"] != "ok":
        record.update(status=recorded["status"], error=f"recorded lock run: {recorded.get('error', '')}")
        return record
    if not trace.is_file():
        record.update(status="failed", error=f"recorded lock run wrote no trace ({trace})")
        return record
    compress(trace)
    plain: dict[str, Any] = {}
    run_program(argv, job.allocator.environment({**base_env, **own_env}), TIMEOUT_S, w, job.allocator, plain)
    if plain["status"] != "ok":
        record.update(status=plain["status"], error=f"lock run: {plain.get('error', '')}")
        return record
    record["lock_metric"] = metric_value(plain["result"], w.metric)
    record["status"] = "ok"
    return record


def run_all(plan: Plan, study_dir: Path, stream=None) -> int:
    """Runs the jobs not yet in syncchar.jsonl; returns how many ran."""
    stream = stream if stream is not None else sys.stderr
    done = {r.get("key") for r in load_records(Path(study_dir), SYNCCHAR_FILE)}
    todo = [j for j in jobs(plan) if j.key not in done]
    if not todo:
        return 0
    print(
        f"txalloc: syncchar: {len(todo)} short {LOCK_BACKEND} runs recorded at {plan.spec.syncchar.sample} %, "
        "and as many without the recorder",
        file=stream,
    )
    base_env = dict(os.environ)
    for job in todo:
        record = run_job(job, plan, Path(study_dir), base_env)
        with open(Path(study_dir) / SYNCCHAR_FILE, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        if record["status"] != "ok":
            print(f"txalloc: syncchar run failed: {record['row']}: {record['error']}", file=stream)
    return len(todo)
