"""Writing a study's outputs from its directory: results.csv (one line per run),
summary.csv (one line per row and allocator), plots/*.png and report.md. Everything here
reads only study.json and results.jsonl, so `txalloc report DIR` can re-render any time."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from . import plots, report_placement, report_profile, report_syncchar, stats
from .analysis import Analysis, RowResult, analyze, best_worst_table, geometric_means
from .errors import UserError
from .row_figures import PLACEMENT_FIELDS, RowFigures, row_key
from .row_figures import collect as collect_row_figures
from .runner import CACHEGRIND_FILE, RESULTS_FILE, STUDY_FILE, load_cachegrind_records, load_records
from .spec import Spec, parse_spec

# What `txalloc study` writes into every study record and what resuming and rendering read.
STUDY_KEYS = ("spec", "spec_name", "spec_source", "mode", "allocators", "metadata")


def load_study(study_dir: Path) -> dict:
    """The study record of study_dir; a UserError when it is missing or damaged."""
    path = study_dir / STUDY_FILE
    if not path.is_file():
        raise UserError(f"{study_dir}: not a study directory (no {STUDY_FILE})")
    try:
        study = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: damaged study record: not JSON ({e.msg}, line {e.lineno} column {e.colno})") from e
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: damaged study record: not text ({e.reason})") from e
    if not isinstance(study, dict):
        raise UserError(f"{path}: damaged study record: a JSON object expected")
    missing = [k for k in STUDY_KEYS if k not in study]
    if missing:
        raise UserError(f"{path}: damaged study record: no {', '.join(missing)}")
    return study


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if v == 0:
        return "0"
    mag = abs(v)
    if mag >= 1e6 or mag < 1e-3:
        return f"{v:.{digits}g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    return f"{v:.{decimals}f}"


def _pct(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{100.0 * v:.2f}%" if 0 < v < 0.01 else f"{100.0 * v:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


TIE_MARK = "≈"

# What the ratio tables' marks mean; printed under each of them.
RATIO_LEGEND = (
    "**Bold**: the row's best allocator, its 95 % confidence interval clear of every other "
    f"allocator's. {TIE_MARK}: tied with the best (their intervals overlap, so the runs do not tell "
    "them apart); when the best has a tie it is marked too, and nothing in the row is bold. "
    "Unmarked: behind the best, or undecided (an interval needs at least 2 runs)."
)


def _ratio_cell(r: RowResult, a: str) -> str:
    if a in r.ratios:
        text = f"{r.ratios[a]:.2f}"
        standing = r.standing(a)
        if standing == "best":
            return f"**{text}**"
        return f"{text} {TIE_MARK}" if standing == "tie" else text
    if r.failures.get(a):
        return "fail"
    return "–"


# Metric names end in their unit; a memory metric's rows are compared apart from the time
# and throughput rows (their ratios would otherwise enter the same geometric means).
_UNIT_SUFFIXES = (("_per_s", None), ("_mib", "MiB"), ("_kib", "KiB"), ("_bytes", "B"), ("_s", "s"))
MEMORY_UNITS = ("MiB", "KiB", "B")


def metric_unit(metric: str) -> str:
    """The unit a metric's name ends in ("ops_per_s" -> "ops/s", "time_s" -> "s",
    "rss_after_mib" -> "MiB"); the name itself when it names none."""
    for suffix, unit in _UNIT_SUFFIXES:
        if metric.endswith(suffix) and len(metric) > len(suffix):
            return unit or metric[: -len(suffix)] + "/s"
    return metric


def is_memory_metric(metric: str) -> bool:
    return metric_unit(metric) in MEMORY_UNITS


def _mean_rows(rows: list[RowResult], cells) -> list[list[str]]:
    """A table's closing rows: cells(subset) for the rows of each thread count, then for all
    rows when there are several thread counts."""
    out = []
    for t in sorted({r.threads for r in rows}):
        out.append(
            [f"*geometric mean, {t} thread{'s' if t > 1 else ''}*", str(t), ""]
            + cells([r for r in rows if r.threads == t])
        )
    if len({r.threads for r in rows}) > 1:
        out.append(["*geometric mean, all rows*", "", ""] + cells(rows))
    return out


def ratio_table(an: Analysis, rows: list[RowResult], allocs: list[str]) -> str:
    """Rows × allocators, each cell the median's ratio to the row's best (1.00 = best; bold
    when its interval is clear of the others', marked when tied: RATIO_LEGEND), then the
    geometric mean per allocator for each thread count and overall."""
    body = []
    for r in rows:
        unit = metric_unit(r.metric)
        best = r.summaries[r.best].median if r.best else None
        body.append(
            [r.label, str(r.threads), f"{_fmt(best)} {unit}" if best else "–"] + [_ratio_cell(r, a) for a in allocs]
        )

    def gm_cells(subset: list[RowResult]) -> list[str]:
        # an allocator with results in fewer rows than the others says over how many
        gm = geometric_means(subset, allocs)
        most = max((n for _, n in gm.values()), default=0)
        return [(f"*{g:.2f}*" + (f" ({n} rows)" if n < most else "")) if n else "–" for g, n in gm.values()]

    body += _mean_rows(rows, gm_cells)
    return _table(["workload", "threads", "best median"] + allocs, body)


def detail_table(rows: list[RowResult], allocs: list[str]) -> str:
    body = []
    for r in rows:
        cells = []
        for a in allocs:
            s = r.summaries.get(a)
            if s is None:
                cells.append("fail" if r.failures.get(a) else "–")
                continue
            ci = "" if math.isnan(s.ci_half_width) else f" ± {_fmt(s.ci_half_width, 2)}"
            cells.append(f"{_fmt(s.median)} (mean {_fmt(s.mean)}{ci}, n={s.n})")
        body.append([r.label, str(r.threads), r.metric] + cells)
    return _table(["workload", "threads", "metric"] + allocs, body)


def tm_table(rows: list[RowResult], allocs: list[str]) -> str:
    body = []
    for r in rows:
        cells = []
        for a in allocs:
            f = r.tm.get(a)
            if f is None:
                cells.append("–")
                continue
            cells.append(f"{_pct(f.abort_rate)} / {_pct(f.false_share)}")
        body.append([r.label, str(r.threads)] + cells)
    return _table(["workload", "threads"] + [f"{a}: aborts / false" for a in allocs], body)


def cause_table(rows: list[RowResult], allocs: list[str]) -> str:
    # causes that never occurred in these rows are left out
    causes = sorted({c for r in rows for f in r.tm.values() for c, n in f.aborts_by_cause.items() if n})
    if not causes:
        return ""
    body = []
    for r in rows:
        for a in allocs:
            f = r.tm.get(a)
            if f is None:
                continue
            body.append(
                [r.label, str(r.threads), a, _fmt(f.commits / max(1, f.runs))]
                + [_fmt(f.aborts_by_cause.get(c, 0.0)) for c in causes]
            )
    return _table(["workload", "threads", "allocator", "commits/run"] + [f"{c}/run" for c in causes], body)


def _figures_of(figures: dict[tuple, RowFigures], r: RowResult) -> RowFigures | None:
    return figures.get(row_key(r.workload, r.params, r.threads))


def htm_table(rows: list[RowResult], allocs: list[str], figures: dict[tuple, RowFigures]) -> str:
    """Rows on a hardware TM backend: per allocator, the elided share of the critical
    sections (those that committed without the lock) and the capacity aborts per attempt."""
    body = []
    for r in rows:
        f = _figures_of(figures, r)
        if f is None or not f.htm:
            continue
        cells = []
        for a in allocs:
            h = f.htm.get(a)
            cells.append(f"{_pct(h.elided_share)} / {_pct(h.capacity_share)}" if h else "–")
        body.append([r.label, str(r.threads)] + cells)
    if not body:
        return ""
    return _table(["workload", "threads"] + [f"{a}: elided / capacity" for a in allocs], body)


def placement_table(rows: list[RowResult], allocs: list[str], figures: dict[tuple, RowFigures]) -> str:
    """Where the allocator put the nodes: L1 sets used (of the workload's L1), the most
    nodes on one set, the lines and pages the nodes' accessed fields touch (medians over
    the runs)."""
    body = []
    for r in rows:
        f = _figures_of(figures, r)
        if f is None or not f.placement:
            continue
        cells = []
        for a in allocs:
            p = f.placement.get(a)
            cells.append(" / ".join(_count(p.get(k)) for k in PLACEMENT_FIELDS) if p else "–")
        body.append([r.label, str(r.threads)] + cells)
    if not body:
        return ""
    return _table(["workload", "threads"] + allocs, body)


def _without_out_file(argv: list[str]) -> list[str]:
    """The command as a reader would type it: the temporary output file left unnamed."""
    return [a.split("=", 1)[0] + "=OUT" if a.startswith("--cachegrind-out-file=") else a for a in argv]


def _per_unit(v: float | None) -> str:
    """One decimal; a difference of two runs can be a hair below zero, shown as 0.0."""
    if v is None:
        return "–"
    text = f"{v:.1f}"
    return "0.0" if text == "-0.0" else text


def _count(v: float | None) -> str:
    """A median of counts: whole when it is whole."""
    return "–" if v is None else str(int(v)) if float(v).is_integer() else f"{v:.1f}"


def misses_table(rows: list[RowResult], allocs: list[str], figures: dict[tuple, RowFigures]) -> str:
    body = []
    for r in rows:
        f = _figures_of(figures, r)
        if f is None or not f.misses:
            continue
        body.append([r.label, str(r.threads)] + [_per_unit(f.misses.get(a)) for a in allocs])
    if not body:
        return ""
    return _table(["workload", "threads"] + allocs, body)


def cachegrind_section(
    spec: Spec, rows: list[RowResult], allocs: list[str], figures: dict[tuple, RowFigures], measured: list[dict]
) -> str:
    """The L1 misses per unit that cachegrind counted, how, and the command behind them;
    or why there are none although the spec asks for them."""
    if not measured and not any(run.cachegrind for run in spec.runs):
        return ""
    ok = [m for m in measured if m.get("status") == "ok"]
    units = sorted({m.get("unit") or m["per"] for m in ok}) or sorted(
        {run.cachegrind.unit for run in spec.runs if run.cachegrind}
    )
    out = [f"\n## L1 data misses per {' / '.join(units)} (cachegrind)\n\n"]
    if not measured:
        out.append(
            "Not measured: the spec asks for cachegrind measurements, but none ran "
            "(valgrind missing, or the study was interrupted before them; see the notes).\n"
        )
        return "".join(out)
    example = ok[0] if ok else measured[0]
    low, high = example["values"]
    geometry = example.get("geometry") or {}
    out.append(
        f"Each row and allocator ran twice under valgrind's cachegrind, with `{example['per']}` = {low} and "
        f"{high}; the table gives (D1 read + write misses of the second run − those of the first) / "
        f"{high - low}, so the set-up both runs share (allocation, shuffle, checks) cancels out. "
        f"Simulated caches: D1 {geometry.get('D1')}, I1 {geometry.get('I1')}, LL {geometry.get('LL')} "
        f"(size in bytes, ways, line), whatever the host's. {len(ok)} of {len(measured)} measurements ok"
        f"{'; the failed ones are in ' + CACHEGRIND_FILE if len(ok) < len(measured) else ''}. "
        "The command of the second run of the first row:\n\n"
        f"```\n{' '.join(_without_out_file(example['runs'][-1]['argv']))}\n```\n\n"
    )
    out.append(misses_table(rows, allocs, figures))
    return "".join(out)


def write_row_figures_csv(study_dir: Path, an: Analysis, figures: dict[tuple, RowFigures]) -> None:
    with open(study_dir / "row_figures.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["workload", "label", "threads", "allocator", "elided_share", "capacity_share"]
            + list(PLACEMENT_FIELDS)
            + ["l1d_misses", "misses_per"]
        )
        for row in an.rows:
            figs = _figures_of(figures, row)
            if figs is None:
                continue
            for a in an.allocators:
                h, p, m = figs.htm.get(a), figs.placement.get(a, {}), figs.misses.get(a)
                if h is None and not p and m is None:
                    continue
                w.writerow(
                    [row.workload, row.label, row.threads, a]
                    + [h.elided_share if h else "", h.capacity_share if h else ""]
                    + [p.get(k, "") for k in PLACEMENT_FIELDS]
                    + (["", ""] if m is None else [m, figs.unit or ""])
                )


def memory_table(rows: list[RowResult], allocs: list[str]) -> str:
    body = []
    for r in rows:
        if not r.peak_rss_kib:
            continue
        body.append([r.label, str(r.threads)] + [_fmt(r.peak_rss_kib.get(a)) for a in allocs])
    return _table(["workload", "threads"] + [f"{a} (KiB)" for a in allocs], body) if body else ""


def peak_rss_ratio_table(rows: list[RowResult], allocs: list[str]) -> str:
    """Rows × allocators, each cell the allocator's median peak RSS over the row's smallest
    (1.00 = least memory), then the geometric mean per allocator for each thread count and
    overall: how much memory each allocator needs for the same work."""
    rows = [r for r in rows if r.peak_rss_kib]
    if not rows:
        return ""

    least = {id(r): min(r.peak_rss_kib.values()) for r in rows}
    ratios = {id(r): {a: v / least[id(r)] for a, v in r.peak_rss_kib.items() if least[id(r)] > 0} for r in rows}

    def gm_cells(subset: list[RowResult]) -> list[str]:
        cells = []
        for a in allocs:
            rs = [ratios[id(r)][a] for r in subset if a in ratios[id(r)]]
            cells.append(f"*{stats.geometric_mean(rs):.2f}*" if rs else "–")
        return cells

    body = []
    for r in rows:
        rr = ratios[id(r)]
        body.append(
            [r.label, str(r.threads), _fmt(least[id(r)])] + [f"{rr[a]:.2f}" if a in rr else "–" for a in allocs]
        )
    body += _mean_rows(rows, gm_cells)
    return _table(["workload", "threads", "least (KiB)"] + allocs, body)


def memory_section(title: str, rows: list[RowResult], cols: list[str], an: Analysis) -> str:
    """The rows whose metric is a memory figure (lower is better): their ratios to the best
    and their medians, apart from the time rows and their geometric means."""
    row_cols = [a for a in cols if any(a in r.summaries or a in r.failures for r in rows)]
    metrics = ", ".join(sorted({f"`{r.workload}`: `{r.metric}`" for r in rows}))
    return (
        f"\n## {title}: memory, ratio to the best allocator\n\n"
        f"Rows whose metric is an amount of memory ({metrics}); kept out of the time rows' "
        "geometric means. idle-owners' `rss_after_mib` is the resident set once other threads "
        "freed every object of the owners and the settling time passed, the owners alive and idle.\n\n"
        + ratio_table(an, rows, row_cols)
        + f"\n{RATIO_LEGEND}\n"
        + f"\n### {title}, memory: medians with mean ± 95 % confidence interval (Student t)\n\n"
        + detail_table(rows, row_cols)
    )


def _first_line(text: str | None) -> str:
    for line in (text or "").strip().splitlines()[::-1]:
        if line.strip():
            return line.strip()[:160].replace("|", "\\|")
    return ""


def failure_table(failures: list[dict]) -> str:
    body = []
    for f in failures:
        params = " ".join(f"{k}={v}" for k, v in sorted((f.get("params") or {}).items()))
        error = (f.get("error") or "").replace("|", "\\|")
        body.append(
            [
                f.get("status", "?"),
                f"{f['workload']} {params} t={f['threads']}",
                f["allocator"],
                str(f.get("rep", 0) + 1),
                error,
                _first_line(f.get("stderr")),
            ]
        )
    return _table(["status", "cell", "allocator", "rep", "error", "last stderr line"], body)


def write_csvs(study_dir: Path, records: list[dict], an: Analysis) -> None:
    param_names = sorted({k for r in records for k in (r.get("params") or {})})
    with open(study_dir / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "workload",
                *param_names,
                "threads",
                "allocator",
                "rep",
                "status",
                "wall_s",
                "time_s",
                "ops_per_s",
                "peak_rss_kib",
                "commits",
                "aborts",
                "true_conflicts",
                "false_conflicts",
                "error",
            ]
        )
        for r in records:
            res = r.get("result") or {}
            results = res.get("results") or {}
            tm = res.get("tm_stats") or {}
            mem = res.get("memory") or {}
            p = r.get("params") or {}
            w.writerow(
                [
                    r["workload"],
                    *[p.get(k, "") for k in param_names],
                    r["threads"],
                    r["allocator"],
                    r.get("rep", 0),
                    r.get("status"),
                    r.get("wall_s", ""),
                    results.get("time_s", ""),
                    results.get("ops_per_s", ""),
                    mem.get("peak_rss_kib", ""),
                    tm.get("commits", ""),
                    tm.get("aborts", ""),
                    tm.get("true_conflicts", ""),
                    tm.get("false_conflicts", ""),
                    r.get("error", ""),
                ]
            )
    with open(study_dir / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "workload",
                "label",
                "threads",
                "allocator",
                "metric",
                "n",
                "median",
                "mean",
                "stdev",
                "ci95_low",
                "ci95_high",
                "ratio_to_best",
                "abort_rate",
                "false_conflict_share",
                "peak_rss_kib",
                "failures",
                "vs_best",
            ]
        )
        for row in an.rows:
            for a in an.allocators:
                s = row.summaries.get(a)
                if s is None and not row.failures.get(a):
                    continue
                tm = row.tm.get(a)
                w.writerow(
                    [
                        row.workload,
                        row.label,
                        row.threads,
                        a,
                        row.metric,
                        s.n if s else 0,
                        s.median if s else "",
                        s.mean if s else "",
                        s.stdev if s else "",
                        s.ci_low if s else "",
                        s.ci_high if s else "",
                        row.ratios.get(a, ""),
                        tm.abort_rate if tm and tm.abort_rate is not None else "",
                        tm.false_share if tm and tm.false_share is not None else "",
                        row.peak_rss_kib.get(a, ""),
                        row.failures.get(a, 0),
                        row.standing(a) or "",
                    ]
                )


def _metadata_section(meta: dict[str, Any]) -> str:
    lines = ["## Machine and software\n"]
    simple = [
        ("CPU", meta.get("cpu_model")),
        ("cores", f"{meta.get('cores')} ({meta.get('cores_usable')} usable)"),
        ("kernel", meta.get("kernel")),
        ("compiler", meta.get("compiler")),
        ("glibc", meta.get("glibc")),
        ("python / matplotlib", f"{meta.get('python')} / {meta.get('matplotlib')}"),
        ("txalloc revision", meta.get("txalloc_revision") or "unknown (not a git checkout)"),
        ("build directory", meta.get("build_dir")),
    ]
    lines += [f"- **{k}**: {v}" for k, v in simple]
    env = meta.get("txalloc_env") or {}
    lines.append(f"- **TXALLOC_ environment**: {', '.join(f'{k}={v}' for k, v in env.items()) or 'none'}")
    lines.append("")
    caches = meta.get("caches") or []
    if caches:
        lines.append(
            _table(
                ["level", "type", "size", "ways", "line", "sets", "shared with CPUs"],
                [
                    [
                        c.get("level", ""),
                        c.get("type", ""),
                        c.get("size", ""),
                        c.get("ways", ""),
                        c.get("line_bytes", ""),
                        c.get("sets", ""),
                        c.get("shared_cpus", ""),
                    ]
                    for c in caches
                ],
            )
        )
    return "\n".join(lines) + "\n"


def _allocator_section(study: dict, an: Analysis, records: list[dict]) -> str:
    served = {}
    for r in records:
        if r.get("status") == "ok":
            served[r["allocator"]] = served.get(r["allocator"], 0) + 1
    body = []
    for a in study["metadata"].get("allocators", []):
        state = f"{served.get(a['name'], 0)} runs verified" if a["available"] else f"missing: {a.get('missing_reason')}"
        body.append(
            [
                a["name"],
                state,
                a.get("library") or "(system malloc)",
                f"{a.get('package') or ''} {a.get('package_version') or ''}".strip() or "–",
            ]
        )
    return _table(["allocator", "status", "library", "package version"], body)


def render(study_dir: Path) -> Path:
    study_dir = Path(study_dir)
    study = load_study(study_dir)
    records = load_records(study_dir)
    spec = parse_spec(study["spec"], study.get("spec_source", "study.json"), study.get("spec_name", "study"))
    allocs = study.get("allocators_available") or study.get("allocators") or []
    an = analyze(records, spec.workloads, allocs)
    cols = [a for a in an.allocators if any(a in r.summaries or a in r.failures for r in an.rows)] or allocs
    measured = load_cachegrind_records(study_dir)
    figures = collect_row_figures(records, measured)
    write_csvs(study_dir, records, an)
    write_row_figures_csv(study_dir, an, figures)
    plot_paths = plots.render_all(an, study_dir / "plots", figures)

    ok = sum(1 for r in records if r.get("status") == "ok")
    planned = study.get("cells_planned")
    out = [f"# Study `{study.get('spec_name')}`\n\n"]
    if spec.description:
        out.append(spec.description.strip() + "\n\n")
    out.append(
        f"- spec: `{study.get('spec_source')}`, mode **{study.get('mode')}**, "
        f"started {study.get('started')}, finished {study.get('finished') or 'not yet (interrupted?)'}\n"
        f"- runs recorded: {len(records)} of {planned} planned; {ok} ok, {len(records) - ok} failed\n"
        f"- command: `{study.get('command', '')}`\n"
        f"- environment set by the spec for every run: "
        f"{', '.join(f'`{k}={v}`' for k, v in sorted(spec.env.items())) or 'none'}\n"
        f"- each number is the median of the repetitions; ratios are to the best allocator of the "
        f"same row (1.00 = best, higher = worse: time/best time, or best throughput/throughput)\n"
    )
    if records and planned and len(records) < planned:
        out.append(f"\n**Incomplete study**: resume with `txalloc study --resume {study_dir}`.\n")
    notes = study.get("notes") or []
    if notes:
        out.append("\n## Notes\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    out.append("\n## Allocators\n\n" + _allocator_section(study, an, records))

    for group, title in (("alloc", "Allocator suite"), ("tm", "Transactional workloads")):
        rows = [r for r in an.rows if r.group == group]
        # The allocator suite's memory rows (idle-owners) get a table of their own.
        memory_rows = [r for r in rows if group == "alloc" and is_memory_metric(r.metric)]
        rows = [r for r in rows if not (group == "alloc" and is_memory_metric(r.metric))]
        memory = memory_section(title, memory_rows, cols, an) if memory_rows else ""
        if not rows:
            out.append(memory)
            continue
        group_cols = [a for a in cols if any(a in r.summaries or a in r.failures for r in rows)]
        out.append(
            f"\n## {title}: ratio to the best allocator\n\n" + ratio_table(an, rows, group_cols) + f"\n{RATIO_LEGEND}\n"
        )
        out.append(
            f"\n### {title}: medians with mean ± 95 % confidence interval (Student t)\n\n"
            + detail_table(rows, group_cols)
        )
        prt = peak_rss_ratio_table(rows, group_cols) if group == "alloc" else ""
        if prt:
            out.append(
                f"\n### {title}: peak resident memory, ratio to the least\n\n"
                "Each allocator's median peak RSS (`memory.peak_rss_kib`) over the row's smallest; "
                "the medians are in the section Peak resident memory.\n\n" + prt
            )
        if group == "tm" and not any(r.tm for r in rows):
            out.append("\nNo abort figures: these workloads reported no `tm_stats` (e.g. libitm counts nothing).\n")
        elif group == "tm":
            out.append("\n### Aborted share of attempts / false share of conflicts\n\n" + tm_table(rows, group_cols))
            ct = cause_table(rows, group_cols)
            if ct:
                out.append("\n### Aborts by cause (mean per run)\n\n" + ct)
            ht = htm_table(rows, group_cols, figures)
            if ht:
                out.append(
                    "\n### Hardware TM: elided share of sections / capacity aborts per attempt\n\n"
                    "Elided: critical sections that committed without taking the fallback lock, of all "
                    "sections (`tm_stats.commits` − `commits_irrevocable`, of `commits`). Capacity: "
                    "`aborts_by_cause.capacity` of all attempts (commits + aborts).\n\n" + ht
                )
        out.append(memory)
    pt = placement_table(an.rows, cols, figures)
    if pt:
        out.append(
            "\n## Node placement over the L1 sets: sets used / most nodes on one set / lines touched"
            " / pages touched\n\n"
            "From the workload's own results (median of the runs): `l1_sets_used` of the L1's sets "
            "that the node base addresses map to, `max_nodes_per_set`, and `lines_touched` and "
            "`pages_touched` by the fields a traversal reads and writes (pages beyond the data "
            "TLB's reach slow every allocator alike).\n\n" + pt
        )
    out.append(cachegrind_section(spec, an.rows, cols, figures, measured))
    out.append(report_placement.section(study_dir))
    out.append(report_profile.section(an.rows, records))
    out.append(report_syncchar.section(study_dir, spec, an.rows))
    bw = best_worst_table(an.rows)
    if bw:
        out.append(
            "\n## Best and worst allocator per workload (as in Baldassin et al. 2015, Tables 3 and 6)\n\n"
            + _table(
                ["workload", "best", "worst", "perf. diff.", "threads", "tied with the best"],
                [
                    [b.label, b.best, b.worst, f"{b.perf_diff_pct:.1f}%", str(b.threads), ", ".join(b.ties) or "–"]
                    for b in bw
                ],
            )
        )
    mt = memory_table(an.rows, cols)
    if mt:
        out.append("\n## Peak resident memory (median)\n\n" + mt)
    if an.failures:
        out.append(f"\n## Failed runs ({len(an.failures)})\n\n" + failure_table(an.failures))
    if plot_paths:
        out.append("\n## Plots\n\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in plot_paths) + "\n")
    out.append("\n" + _metadata_section(study.get("metadata") or {}))
    out.append("## Options\n\n```json\n" + json.dumps(study.get("options") or {}, indent=2, sort_keys=True) + "\n```\n")
    out.append(
        f"\nFiles: `{RESULTS_FILE}` (raw runs), `{CACHEGRIND_FILE}` (cachegrind measurements, when the spec "
        "asks for them), `results.csv`, `summary.csv`, `row_figures.csv` (elision, placement, misses), "
        "`study.json` (spec, options, metadata), `plots/`.\n"
    )
    path = study_dir / "report.md"
    path.write_text("".join(out))
    return path
