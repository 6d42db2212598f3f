"""From the raw records of a study to the numbers of its report: per-row summaries,
ratios to the best allocator, geometric means, the best/worst table, TM abort figures."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from . import stats
from .runner import metric_value
from .spec import WorkloadDef, config_label


@dataclass
class TmFigures:
    runs: int
    commits: int
    aborts: int
    true_conflicts: int | None
    false_conflicts: int | None
    unknown_conflicts: int  # conflicts the runtime could not classify
    aborts_by_cause: dict[str, float]  # mean aborts per run, by cause

    @property
    def abort_rate(self) -> float | None:
        attempts = self.commits + self.aborts
        return self.aborts / attempts if attempts else None

    @property
    def false_share(self) -> float | None:
        """False conflicts among all conflicts (true + false + unclassified)."""
        if self.true_conflicts is None or self.false_conflicts is None:
            return None
        total = self.true_conflicts + self.false_conflicts + self.unknown_conflicts
        return self.false_conflicts / total if total else None


@dataclass
class RowResult:
    workload: str
    group: str
    params: dict[str, Any]
    threads: int
    label: str  # workload and the parameters that vary in this study
    metric: str
    higher_is_better: bool
    summaries: dict[str, stats.Summary] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    tm: dict[str, TmFigures] = field(default_factory=dict)
    peak_rss_kib: dict[str, float] = field(default_factory=dict)
    throughput: dict[str, float] = field(default_factory=dict)  # median results.ops_per_s
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def config_key(self) -> tuple:
        return (self.workload, tuple(sorted(self.params.items())))

    @property
    def best(self) -> str | None:
        return min(self.ratios, key=self.ratios.get) if self.ratios else None

    @property
    def worst(self) -> str | None:
        return max(self.ratios, key=self.ratios.get) if self.ratios else None

    def standing(self, allocator: str) -> str | None:
        """How an allocator of this row compares with the row's best, by their 95 % confidence
        intervals: "best" (the best, its interval clear of every other allocator's), "tie"
        (its interval and the best's overlap; the best itself when any other ties with it),
        "behind" (clear of the best's, and worse), or "undecided" (an interval unknown, or no
        other allocator to compare with). None when it has no result in this row."""
        if allocator not in self.ratios:
            return None
        best = self.summaries[self.best]
        if allocator != self.best:
            overlap = stats.intervals_overlap(self.summaries[allocator], best)
            return "undecided" if overlap is None else "tie" if overlap else "behind"
        others = [self.standing(a) for a in self.ratios if a != allocator]
        if "tie" in others:
            return "tie"
        if not others or "undecided" in others:
            return "undecided"
        return "best"

    def tied_with_best(self) -> list[str]:
        """The other allocators whose interval overlaps the best's."""
        tied = [a for a in self.ratios if a != self.best and self.standing(a) == "tie"]
        return sorted(tied, key=self.ratios.get)


@dataclass
class Analysis:
    allocators: list[str]
    rows: list[RowResult]
    failures: list[dict]
    records: int


def _varying_params(records: list[dict]) -> dict[str, list[str]]:
    seen: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for r in records:
        for k, v in (r.get("params") or {}).items():
            seen[r["workload"]][k].add(repr(v))
    return {w: sorted(k for k, vals in ps.items() if len(vals) > 1) for w, ps in seen.items()}


def _tm_figures(results: list[dict]) -> TmFigures | None:
    tms = [r.get("tm_stats") for r in results if isinstance(r.get("tm_stats"), dict)]
    if not tms:
        return None
    commits = sum(int(t.get("commits", 0) or 0) for t in tms)
    aborts = sum(int(t.get("aborts", 0) or 0) for t in tms)
    has_conflicts = all("true_conflicts" in t and "false_conflicts" in t for t in tms)
    by_cause: dict[str, float] = defaultdict(float)
    for t in tms:
        for cause, n in (t.get("aborts_by_cause") or {}).items():
            if isinstance(n, (int, float)):
                by_cause[cause] += n / len(tms)
    return TmFigures(
        runs=len(tms),
        commits=commits,
        aborts=aborts,
        true_conflicts=sum(int(t["true_conflicts"]) for t in tms) if has_conflicts else None,
        false_conflicts=sum(int(t["false_conflicts"]) for t in tms) if has_conflicts else None,
        unknown_conflicts=sum(int(t.get("unknown_conflicts", 0) or 0) for t in tms),
        aborts_by_cause=dict(by_cause),
    )


def analyze(records: list[dict], workloads: dict[str, WorkloadDef], allocators: list[str]) -> Analysis:
    """`allocators`: the study's allocators in their spec order (columns of the tables)."""
    varying = _varying_params(records)
    rows: dict[tuple, RowResult] = {}
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    results: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    failures = []
    for rec in records:
        wname = rec["workload"]
        w = workloads.get(wname)
        params = rec.get("params") or {}
        ident = (wname, tuple(sorted(params.items())), rec["threads"])
        if ident not in rows:
            rows[ident] = RowResult(
                workload=wname,
                group=w.group if w else "alloc",
                params=params,
                threads=rec["threads"],
                label=config_label(wname, params, varying.get(wname, [])),
                metric=w.metric if w else "time_s",
                higher_is_better=w.higher_is_better if w else False,
            )
        row = rows[ident]
        if rec.get("status") != "ok":
            failures.append(rec)
            row.failures[rec["allocator"]] = row.failures.get(rec["allocator"], 0) + 1
            continue
        v = metric_value(rec.get("result") or {}, row.metric)
        if v is None:
            continue
        values[ident][rec["allocator"]].append(v)
        results[ident][rec["allocator"]].append(rec["result"])

    for ident, row in rows.items():
        for a, vals in values[ident].items():
            row.summaries[a] = stats.summarize(vals)
            tm = _tm_figures(results[ident][a])
            if tm is not None:
                row.tm[a] = tm
            rss = [
                float(r["memory"]["peak_rss_kib"])
                for r in results[ident][a]
                if isinstance(r.get("memory"), dict) and isinstance(r["memory"].get("peak_rss_kib"), (int, float))
            ]
            if rss:
                row.peak_rss_kib[a] = stats.median(rss)
            rates = [metric_value(r, "ops_per_s") for r in results[ident][a]]
            if rates and all(v is not None for v in rates):
                row.throughput[a] = stats.median(rates)
        row.ratios = stats.slowdown_ratios({a: s.median for a, s in row.summaries.items()}, row.higher_is_better)

    known = list(allocators) + sorted({r["allocator"] for r in records} - set(allocators))
    ordered = sorted(rows.values(), key=lambda r: (_first_index(records, r), r.threads))
    return Analysis(known, ordered, failures, len(records))


def _first_index(records: list[dict], row: RowResult) -> int:
    for i, r in enumerate(records):
        if r["workload"] == row.workload and (r.get("params") or {}) == row.params:
            return i
    return len(records)


def geometric_means(rows: list[RowResult], allocators: list[str]) -> dict[str, tuple[float, int]]:
    """Per allocator: geometric mean of its ratios to the best over the rows where it has
    one, and how many rows that is."""
    out = {}
    for a in allocators:
        rs = [r.ratios[a] for r in rows if a in r.ratios]
        out[a] = (stats.geometric_mean(rs), len(rs)) if rs else (math.nan, 0)
    return out


@dataclass
class BestWorst:
    label: str
    best: str
    worst: str
    perf_diff_pct: float
    threads: int
    ties: list[str]  # allocators whose 95 % interval overlaps the best's


def best_worst_table(rows: list[RowResult]) -> list[BestWorst]:
    """The paper's table (Baldassin et al. 2015, Tables 3 and 6): for each workload
    configuration, the thread count that gave the best performance, and at that thread
    count the best and worst allocators and how much the worst is behind the best.
    The best thread count is the one with the highest throughput (ops_per_s) when the
    rows report it: a time comparison across thread counts is unfair to workloads whose
    work grows with the threads."""
    by_config: dict[tuple, list[RowResult]] = defaultdict(list)
    for r in rows:
        if len(r.ratios) >= 2:
            by_config[r.config_key].append(r)
    table = []
    for rs in by_config.values():
        if all(r.best in r.throughput for r in rs):
            chosen = max(rs, key=lambda r: r.throughput[r.best])
        elif rs[0].higher_is_better:
            chosen = max(rs, key=lambda r: r.summaries[r.best].median)
        else:
            chosen = min(rs, key=lambda r: r.summaries[r.best].median)
        label = chosen.label
        table.append(
            BestWorst(
                label,
                chosen.best,
                chosen.worst,
                (chosen.ratios[chosen.worst] - 1.0) * 100.0,
                chosen.threads,
                chosen.tied_with_best(),
            )
        )
    return table
