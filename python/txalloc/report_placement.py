"""The study's placement figures: after the timed runs, one short extra run per TM workload
and allocator under the placement tracer (placement.py), recorded in placement.jsonl and
shown in the report's "Placement" section (L1 imbalance, stripe sharing, ORT entries shared
between threads).

Which run: for each TM workload of the plan, its first row at the highest thread count,
with the work knobs cut short (a `scale` parameter: floats to at most SHORT_SECONDS,
integers to a quarter), under every allocator of that row. Placement is read at the peak of
live objects, when the structure is built, so a short run shows what a long one would.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from . import placement
from .errors import UserError
from .runner import Plan
from .spec import Row, WorkloadDef, command_line, parameter_environment, shell_line

PLACEMENT_FILE = "placement.jsonl"
SHORT_SECONDS = 0.2
TIMEOUT_S = 60.0


def _short_params(w: WorkloadDef, params: dict[str, Any]) -> dict[str, Any]:
    short = dict(params)
    for name, v in params.items():
        p = w.params.get(name)
        if p is None or not p.scale or isinstance(v, bool):
            continue
        if isinstance(v, float):
            short[name] = min(v, SHORT_SECONDS)
        elif isinstance(v, int):
            short[name] = max(1, v // 4)
    return short


def placement_rows(plan: Plan) -> list[Row]:
    """Per TM workload, its first row at the highest thread count."""
    chosen: dict[str, Row] = {}
    for row in plan.rows:
        if plan.spec.workloads[row.workload].group != "tm":
            continue
        best = chosen.get(row.workload)
        if best is None or row.threads > best.threads:
            chosen[row.workload] = row
    return list(chosen.values())


def _key(workload: str, allocator: str) -> str:
    return json.dumps([workload, allocator])


def load_records(study_dir: Path) -> list[dict]:
    path = Path(study_dir) / PLACEMENT_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # cut short by an interruption: that run is made again
    return records


def command_text(record: dict) -> str:
    """The command that reproduces one placement run (from the repository root)."""
    tool = ["txalloc", "placement", "--allocator", record["allocator"], "--"]
    return shell_line(record["env"], tool + record["argv"])


def run_all(plan: Plan, study_dir: Path, build_dir: Path, stream=None) -> int:
    """Runs the placement runs not yet in placement.jsonl; returns how many ran."""
    stream = stream if stream is not None else sys.stderr
    tracer = Path(build_dir) / placement.TRACER
    rows = placement_rows(plan)
    if not rows:
        return 0
    if not tracer.is_file():
        print(f"txalloc: placement runs skipped: {tracer} not built", file=stream)
        return 0
    done = {r.get("key") for r in load_records(study_dir)}
    todo = [(row, a) for row in rows for a in plan.allocators if a.name in row.allocators]
    todo = [(row, a) for row, a in todo if _key(row.workload, a.name) not in done]
    if todo:
        print(f"txalloc: placement: {len(todo)} short runs under the tracer", file=stream)
    for row, allocator in todo:
        w = plan.spec.workloads[row.workload]
        params = _short_params(w, row.params_dict)
        argv = command_line(w, plan.programs[row.workload], params, row.threads)
        env = {**plan.spec.env, **w.env, **parameter_environment(w, params)}
        record: dict[str, Any] = {
            "key": _key(row.workload, allocator.name),
            "workload": row.workload,
            "row": row.label,
            "params": params,
            "threads": row.threads,
            "allocator": allocator.name,
            "argv": argv,
            "env": env,
        }
        try:
            result, proc = placement.analyse_command(
                argv,
                allocator.environment({**os.environ, **env}),
                Path(build_dir),
                placement.Geometry(),
                "peak",
                timeout_s=TIMEOUT_S,
            )
            record.update(status="ok" if proc.returncode == 0 else "failed", result=result)
            if proc.returncode != 0:
                record["error"] = f"exit status {proc.returncode}"
        except UserError as e:
            record.update(status="failed", error=str(e))
        with open(Path(study_dir) / PLACEMENT_FILE, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    return len(todo)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def section(study_dir: Path) -> str:
    """The report's Placement section, or "" when the study made no placement runs."""
    records = [r for r in load_records(study_dir) if r.get("status") == "ok" and "result" in r]
    failed = [r for r in load_records(study_dir) if r.get("status") != "ok"]
    if not records and not failed:
        return ""
    g = placement.Geometry()
    out = [
        "\n## Placement\n\n"
        f"Where each allocator put the objects of one short run per TM workload (`txalloc placement`, "
        f"docs/placement.md), at the peak of live objects. L1: {g.sets} sets x {g.line} B, over all live "
        f"objects: sets used, and max/mean objects per set (1 = even). Stripes: {1 << g.shift}-byte "
        f"(shift {g.shift}); the share of small objects (<= {g.small_max} B) sharing one with another "
        f"live object, and the part of it where a sharer is another thread's. ORT: entries of a "
        f"2^{g.ort_log2} table that more than one thread's objects map to. Objects that a TM's own "
        "allocation layer serves without malloc (the txalloc-txmem column) are not seen.\n\n"
    ]
    header = [
        "workload",
        "allocator",
        "live objects",
        "L1 sets used",
        "L1 max/mean",
        "small sharing a stripe",
        "of them cross-thread",
        "ORT entries of >1 thread",
    ]
    rows = []
    for r in records:
        res = r["result"]
        overall, s, o = res["l1"]["overall"], res["stripes"], res["ort"]
        mm = overall["max_over_mean"]
        rows.append(
            [
                r["row"],
                r["allocator"],
                str(res["point"]["live_objects"]),
                f"{overall['sets_used']}/{len(overall['histogram'])}",
                "–" if mm is None else f"{mm:.2f}",
                f"{_pct(s['shared_share'])} of {s['small_objects']}",
                _pct(s["cross_thread_share"]),
                f"{o['multi_thread_entries']} ({_pct(o['multi_thread_share'])})",
            ]
        )
    out.append("| " + " | ".join(header) + " |\n|" + "|".join("---" for _ in header) + "|\n")
    out += ["| " + " | ".join(row) + " |\n" for row in rows]
    out.append("\nCommands (from the repository root; add `--json FILE --png FILE` for the full figures):\n\n")
    out += [f"- `{command_text(r)}`\n" for r in records]
    if failed:
        out.append("\nPlacement runs that failed:\n\n")
        out += [f"- {r['row']} under {r['allocator']}: {r.get('error', r.get('status'))}\n" for r in failed]
    return "".join(out)
