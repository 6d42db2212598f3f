"""The report's Syncchar section (Porter and Witchel, ISPASS 2010; docs/syncchar.md): per TM
workload of the study, data independence I_n and conflict density D_n from the trace of a
recorded lock run (syncchar_study.py), the speed-up the model predicts for n threads under
TM over that lock run, and the one the study measured: the row's median at n threads, under
the allocator the trace was recorded with, over the rate of the same lock run without the
recorder. Everything is computed from the study directory, so `txalloc report` redoes it."""

from __future__ import annotations

import math
from pathlib import Path

from . import stats, syncchar
from .analysis import RowResult
from .errors import UserError
from .runner import load_records
from .spec import Spec, shell_line
from .syncchar_study import LOCK_BACKEND, SYNCCHAR_FILE, recordable

# A trace of more recorded sections is analysed at the rate that keeps about this many: the
# figures settle long before, and the section's time stays a second or two per trace.
MAX_SECTIONS = 20000


def thread_counts(rows: list[RowResult]) -> list[int]:
    """n = 1, 2 and every thread count of the study's TM rows."""
    return sorted({1, 2} | {r.threads for r in rows if r.group == "tm"})


def measured_speedup(rec: dict, row: RowResult | None) -> float | None:
    """The row's median under the record's allocator over the plain lock run's, as a
    speed-up (a time metric inverted); None when either is missing."""
    lock = rec.get("lock_metric")
    if row is None or not lock:
        return None
    s = row.summaries.get(rec["allocator"])
    if s is None or not s.median:
        return None
    return s.median / lock if row.higher_is_better else lock / s.median


def _f(v: float | None, digits: int = 2) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _error(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or not measured:
        return None
    return abs(predicted - measured) / measured


def _no_section(spec: Spec, rows: list[RowResult]) -> str:
    """The one line said when the study asked for Syncchar runs and has nothing to show."""
    defs = spec.workloads
    if not any(
        r.group == "tm" and r.workload in defs and recordable(defs[r.workload]) and r.params.get("tm") != LOCK_BACKEND
        for r in rows
    ):
        why = (
            "no TM row of this study runs a TM on txalloc's runtime, whose front-end records the traces "
            f"(rows that run `{LOCK_BACKEND}` themselves are not predicted)"
        )
    else:
        why = "no Syncchar run was made (the study stopped before them; `txalloc study --resume` makes them)"
    return f"\nSyncchar: no I_n/D_n section: {why}.\n"


def section(study_dir: Path, spec: Spec, rows: list[RowResult]) -> str:
    """The section; one line saying why there is none when the spec asks for Syncchar runs
    and no trace can be analysed; "" when the spec asks for none and none were made."""
    records = load_records(Path(study_dir), SYNCCHAR_FILE)
    if not records:
        return _no_section(spec, rows) if spec.syncchar is not None else ""
    ns = thread_counts(rows)
    by_config = {(r.workload, tuple(sorted(r.params.items())), r.threads): r for r in rows}
    body: list[list[str]] = []
    errors_here: list[float] = []
    failed: list[str] = []
    shown: list[tuple[dict, dict]] = []
    for rec in records:
        if rec.get("status") != "ok":
            failed.append(f"{rec.get('row')} t={rec.get('threads')}: {rec.get('error', rec.get('status'))}")
            continue
        try:
            trace = syncchar.read_trace(Path(study_dir) / rec["trace"])
            view = syncchar.overview(trace, ns, max_sections=MAX_SECTIONS)
        except UserError as e:
            failed.append(f"{rec['row']} t={rec['threads']}: {e}")
            continue
        shown.append((rec, view))
        params = tuple(sorted(rec["params"].items()))
        for n in ns:
            o = view["overall"][str(n)]
            predicted = o.get("predicted_speedup")
            measured = measured_speedup(rec, by_config.get((rec["workload"], params, n)))
            error = _error(predicted, measured)
            if error is not None and n == view["threads_recorded"]:
                errors_here.append(error)
            body.append(
                [
                    rec["row"],
                    str(n),
                    str(o["samples"]),
                    _f(o["I_n"]),
                    _f(o["D_n"]),
                    _f(predicted),
                    _f(measured),
                    "–" if error is None else f"{100 * error:.0f}%",
                ]
            )
    if not shown:
        return "\nSyncchar: no I_n/D_n section: no trace could be analysed (" + "; ".join(failed) + ").\n"
    first = shown[0][0]
    header = ["workload", "n", "samples", "I_n", "D_n", "predicted", "measured", "error"]
    unit, window = shown[0][1]["unit"], shown[0][1]["window"]
    out = [
        "\n## Syncchar: data independence, conflict density, predicted TM speed-up (Porter and Witchel 2010)\n\n"
        f"For each TM workload, a short `{LOCK_BACKEND}` run at the row's highest thread count m under "
        f"{first['allocator']}, with the Syncchar recorder on at {first['sample']} % of the blocks "
        "(docs/syncchar.md). I_n (of n sections that could run together, those in no conflict) and D_n "
        "(conflict density) are means over the samples of the trace's parallel phase (of a trace with "
        f"more than {MAX_SECTIONS:,} sections, a seeded share of about that many), by "
        f"{unit} (what the STM conflicts on), in windows of {window} sections. *predicted*: the model's "
        "throughput with n threads under TM over the recorded lock run's (its `predicted_speedup`). "
        "*measured*: the study's median for the row at n threads under the same allocator over the rate "
        "of the same lock run without the recorder (one run; for a time metric, lock time over TM time). "
        "error: |predicted − measured| / measured; docs/syncchar.md (Validation) says where the model "
        "misses (it takes a TM section to cost what the locked one does). The timed cells ran without "
        "the recorder.\n\n",
        "| " + " | ".join(header) + " |\n|" + "|".join("---" for _ in header) + "|\n",
    ]
    out += ["| " + " | ".join(line) + " |\n" for line in body]
    positive = [v for v in errors_here if v > 0]
    gm = stats.geometric_mean(positive) if positive else None
    if gm is not None:
        out.append(
            f"\nGeometric-mean error at the recorded thread count: {100 * gm:.0f}% over {len(errors_here)} "
            "workloads (the paper's: 25 %).\n"
        )
    out.append(
        "\nCommands (from the repository root): each recorded run, then its analysis; the plain lock run is "
        "the same line without `TXALLOC_SYNCCHAR*`.\n\n"
    )
    threads_arg = ",".join(str(n) for n in ns)
    for rec, _ in shown:
        out.append(f"- `{shell_line(rec['env'], rec['argv'])}`\n")
        out.append(f"  `txalloc syncchar {Path(study_dir) / rec['trace']} --threads {threads_arg}`\n")
    if failed:
        out.append("\nSyncchar runs without a table row:\n\n" + "".join(f"- {f}\n" for f in failed))
    return "".join(out)
