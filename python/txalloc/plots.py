"""PNG figures of a study (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .analysis import Analysis, RowResult, TmFigures, geometric_means  # noqa: E402
from .row_figures import RowFigures, row_key  # noqa: E402
from .spec import config_label  # noqa: E402

_METRIC_LABELS = {"time_s": "time (s), lower is better", "ops_per_s": "operations/s, higher is better"}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80]


def _save(fig, path: Path) -> Path:
    """Lays the figure out (unless it has its own layout engine), writes it to path as PNG
    and releases it."""
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _colors(allocators: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    return {a: cmap(i % 10) for i, a in enumerate(allocators)}


def scaling_plots(an: Analysis, out: Path) -> list[Path]:
    """Per workload: the mean of its metric against threads, one line per allocator, 95 % CI
    bars of the mean; one panel per parameter combination. A workload run at one thread
    count that sweeps a numeric parameter is left to sweep_plots."""
    colors = _colors(an.allocators)
    by_workload: dict[str, dict[str, list[RowResult]]] = defaultdict(lambda: defaultdict(list))
    for r in an.rows:
        by_workload[r.workload][r.label].append(r)
    paths = []
    for wname, configs in by_workload.items():
        rows = [r for rs in configs.values() for r in rs]
        if len({r.threads for r in rows}) == 1 and sweep_parameter(rows) is not None:
            continue  # one point a panel: its sweep plot shows these rows
        n = len(configs)
        cols = min(3, n)
        nrows = math.ceil(n / cols)
        fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.4 * nrows), squeeze=False)
        for ax, (label, rows) in zip(axes.flat, configs.items(), strict=False):  # spare axes are hidden
            rows = sorted(rows, key=lambda r: r.threads)
            for a in an.allocators:
                pts = [(r.threads, r.summaries[a]) for r in rows if a in r.summaries]
                if not pts:
                    continue
                xs = [p[0] for p in pts]
                ys = [p[1].mean for p in pts]  # the mean, which the CI is about
                err = [0.0 if math.isnan(p[1].ci_half_width) else p[1].ci_half_width for p in pts]
                ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=a, color=colors[a])
            ax.set_title(label, fontsize=9)
            ax.set_xlabel("threads")
            ax.set_xticks(sorted({r.threads for r in rows}))
            ax.set_ylabel(_METRIC_LABELS.get(rows[0].metric, rows[0].metric) + "\nmean, 95 % CI", fontsize=8)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        axes.flat[0].legend(fontsize=7)
        paths.append(_save(fig, out / f"scaling-{_slug(wname)}.png"))
    return paths


def ratio_plots(an: Analysis, out: Path) -> list[Path]:
    """Per thread count and group: each row's ratio to its best allocator (1 = best), and
    the geometric mean per allocator."""
    colors = _colors(an.allocators)
    paths = []
    keys = sorted({(r.group, r.threads) for r in an.rows if r.ratios})
    for group, threads in keys:
        rows = [r for r in an.rows if r.group == group and r.threads == threads and r.ratios]
        allocs = [a for a in an.allocators if any(a in r.ratios for r in rows)]
        gm = geometric_means(rows, allocs)
        labels = [r.label for r in rows] + ["geometric mean"]
        width = 0.8 / max(1, len(allocs))
        fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(labels) * max(1, len(allocs)) / 2), 4.2))
        for i, a in enumerate(allocs):
            ys = [r.ratios.get(a, math.nan) for r in rows] + [gm[a][0]]
            xs = [j + (i - (len(allocs) - 1) / 2) * width for j in range(len(labels))]
            ax.bar(xs, ys, width=width, label=a, color=colors[a])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=40, ha="right", fontsize=7)
        ax.set_ylabel("ratio to the best allocator (1 = best)")
        ax.set_title(f"{group} workloads, {threads} thread{'s' if threads > 1 else ''}")
        ax.legend(fontsize=7, ncol=min(6, len(allocs)))
        ax.grid(axis="y", alpha=0.3)
        paths.append(_save(fig, out / f"ratios-{group}-t{threads}.png"))
    return paths


@dataclass
class AbortPanel:
    """One panel of an abort plot: the rows of one workload that share the values of its
    categorical parameters (for intset: one structure), each with a short label naming
    only what varies inside the panel, one parameter a line."""

    title: str
    groups: list[tuple[str, RowResult]]


def _varying(rows: list[RowResult], names: list[str]) -> list[str]:
    return [k for k in names if len({repr(r.params.get(k)) for r in rows}) > 1]


def abort_panels(rows: list[RowResult]) -> list[AbortPanel]:
    """Splits the rows of one thread count into panels: one per workload and combination of
    the string-valued parameters that vary (structure, design, ...), so that each panel
    compares like with like and gets a y-axis scaled to its own abort rates."""
    by_workload: dict[str, list[RowResult]] = defaultdict(list)
    for r in rows:
        by_workload[r.workload].append(r)
    panels = []
    for wname, wrows in by_workload.items():
        names = sorted({k for r in wrows for k in r.params})
        keys = [k for k in _varying(wrows, names) if any(isinstance(r.params.get(k), str) for r in wrows)]
        by_key: dict[tuple, list[RowResult]] = defaultdict(list)
        for r in wrows:
            by_key[tuple(r.params.get(k) for k in keys)].append(r)
        for key, prows in by_key.items():
            title = config_label(wname, {k: v for k, v in zip(keys, key, strict=True) if v is not None})
            inner = [k for k in _varying(prows, names) if k not in keys]
            groups = [("\n".join(f"{k}={r.params[k]}" for k in inner if k in r.params) or "all", r) for r in prows]
            panels.append(AbortPanel(title, groups))
    return panels


def _abort_shares(f: TmFigures, causes: list[str]) -> list[float]:
    """Per cause, aborts as a percentage of attempts (one share, all aborts, without causes)."""
    attempts = (f.commits + f.aborts) / f.runs if f.runs else 0
    if not attempts:
        return [0.0] * max(1, len(causes))
    if not causes:
        return [100.0 * f.aborts / f.runs / attempts]
    return [100.0 * f.aborts_by_cause.get(c, 0.0) / attempts for c in causes]


def _draw_abort_panel(ax_aborts, ax_false, panel: AbortPanel, allocs: list[str], causes: list[str]) -> None:
    # bars of one row side by side (one per allocator, same place in every group), a gap between rows
    stride = len(allocs) + 1
    bars = [(g * stride + i, row, a) for g, (_, row) in enumerate(panel.groups) for i, a in enumerate(allocs)]
    bars = [(x, row, a) for x, row, a in bars if a in row.tm]
    xs = [x for x, _, _ in bars]
    shares = [_abort_shares(row.tm[a], causes) for _, row, a in bars]
    bottom = [0.0] * len(bars)
    cause_colors = plt.get_cmap("tab20")
    for ci, cause in enumerate(causes or ["aborts"]):
        ys = [s[ci] for s in shares]
        ax_aborts.bar(xs, ys, bottom=bottom, width=0.85, color=cause_colors(ci % 20), label=cause)
        bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
    ax_aborts.set_ylim(0, max(bottom, default=0) * 1.1 or 1.0)  # its own scale: a list aborts far more than a hash
    ax_aborts.set_ylabel("aborts,\n% of attempts", fontsize=8)
    ax_aborts.set_title(panel.title, fontsize=9, loc="left", fontweight="bold")
    ax_aborts.grid(axis="y", alpha=0.3)
    ax_aborts.tick_params(labelbottom=False)
    centers = [g * stride + (len(allocs) - 1) / 2 for g in range(len(panel.groups))]
    top = ax_aborts.secondary_xaxis("top")
    top.set_xticks(centers, [label for label, _ in panel.groups], fontsize=7)
    top.tick_params(length=0)

    false = [row.tm[a].false_share for _, row, a in bars]
    # one neutral colour: the allocator is named under each bar, and colours above are causes
    ax_false.bar(xs, [100.0 * s if s is not None else math.nan for s in false], width=0.85, color="dimgray")
    ax_false.set_ylim(0, 100)
    ax_false.set_ylabel("false conflicts,\n% of conflicts", fontsize=8)
    ax_false.grid(axis="y", alpha=0.3)
    ax_false.set_xticks(xs, [a for _, _, a in bars], rotation=90, fontsize=7)
    ax_false.set_xlim(-1, len(panel.groups) * stride - 1)


def abort_plots(an: Analysis, out: Path) -> list[Path]:
    """Per thread count, one panel per workload and structure (see abort_panels): the
    aborted share of attempts split by cause (stacked), and below it the share of conflicts
    that were false, one bar per allocator in each row's group."""
    paths = []
    tm_rows = [r for r in an.rows if r.tm]
    for threads in sorted({r.threads for r in tm_rows}):
        rows = [r for r in tm_rows if r.threads == threads]
        allocs = [a for a in an.allocators if any(a in r.tm for r in rows)]
        causes = sorted({c for r in rows for f in r.tm.values() for c, n in f.aborts_by_cause.items() if n})
        panels = abort_panels(rows)
        # room for each group's label (up to ~20 characters a line) and each allocator's bar
        group_width = max(0.16 * (len(allocs) + 1), 1.0)
        widest = max(len(p.groups) for p in panels) * group_width
        heights = [2.8, 2.4] * len(panels)
        fig, axes = plt.subplots(
            2 * len(panels),
            1,
            figsize=(max(7.0, widest + 1.5), sum(heights) + 0.8),
            gridspec_kw={"height_ratios": heights},
            squeeze=False,
            layout="constrained",
        )
        for i, panel in enumerate(panels):
            ax_aborts, ax_false = axes[2 * i, 0], axes[2 * i + 1, 0]
            ax_false.sharex(ax_aborts)
            _draw_abort_panel(ax_aborts, ax_false, panel, allocs, causes)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        title = f"TM aborts by cause, {threads} thread{'s' if threads > 1 else ''} (each panel on its own scale)"
        fig.legend(handles, labels, loc="outside upper center", ncol=min(4, len(labels)), fontsize=8, title=title)
        paths.append(_save(fig, out / f"aborts-t{threads}.png"))
    return paths


def sweep_parameter(rows: list[RowResult]) -> str | None:
    """The numeric parameter the rows of one workload sweep (the one with the most values;
    node_size in Dice et al.'s figures), or None when no number varies."""
    counts = {}
    for name in sorted({k for r in rows for k in r.params}):
        values = {r.params.get(name) for r in rows}
        if len(values) > 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            counts[name] = len(values)
    return max(counts, key=lambda k: (counts[k], k)) if counts else None


@dataclass
class SweepSeries:
    """One line of plots against the swept parameter: its y label and how to read it."""

    ylabel: str
    value: object  # (RowResult, RowFigures | None, allocator) -> float | None


def _metric(r: RowResult, f: RowFigures | None, a: str) -> float | None:
    return r.summaries[a].median if a in r.summaries else None


def _capacity(r: RowResult, f: RowFigures | None, a: str) -> float | None:
    h = f.htm.get(a) if f else None
    return None if h is None or h.capacity_share is None else 100.0 * h.capacity_share


def _elided(r: RowResult, f: RowFigures | None, a: str) -> float | None:
    h = f.htm.get(a) if f else None
    return None if h is None or h.elided_share is None else 100.0 * h.elided_share


def _misses(r: RowResult, f: RowFigures | None, a: str) -> float | None:
    return f.misses.get(a) if f else None


def _sets_used(r: RowResult, f: RowFigures | None, a: str) -> float | None:
    return f.placement.get(a, {}).get("l1_sets_used") if f else None


def sweep_series(rows: list[RowResult], figures: dict[tuple, RowFigures]) -> list[SweepSeries]:
    """The metric, then each figure that some of the rows have: capacity aborts per attempt
    and elided share (hardware TM), L1 misses (cachegrind), L1 sets used (placement)."""
    figs = [f for r in rows if (f := figures.get(row_key(r.workload, r.params, r.threads)))]
    metric = rows[0].metric
    series = [SweepSeries(_METRIC_LABELS.get(metric, metric) + "\n(median)", _metric)]
    if any(f.htm for f in figs):
        series.append(SweepSeries("capacity aborts,\n% of attempts", _capacity))
        series.append(SweepSeries("elided sections,\n% of sections", _elided))
    if any(f.misses for f in figs):
        unit = next((f.unit for f in figs if f.unit), "unit")
        series.append(SweepSeries(f"L1 data misses\nper {unit} (cachegrind)", _misses))
    if any(f.placement for f in figs):
        series.append(SweepSeries("L1 sets used\nby the nodes", _sets_used))
    return series


def sweep_plots(an: Analysis, figures: dict[tuple, RowFigures], out: Path) -> list[Path]:
    """Per workload that sweeps a numeric parameter: each series against it, one line per
    allocator (Dice et al. 2016, Figures 1 and 2); a column per combination of the other
    parameters that vary and the thread count."""
    colors = _colors(an.allocators)
    by_workload: dict[str, list[RowResult]] = defaultdict(list)
    for r in an.rows:
        if r.summaries:
            by_workload[r.workload].append(r)
    paths = []
    for wname, rows in by_workload.items():
        x = sweep_parameter(rows)
        if x is None:
            continue
        others = [k for k in _varying(rows, sorted({k for r in rows for k in r.params})) if k != x]
        columns: dict[tuple, list[RowResult]] = defaultdict(list)
        for r in rows:
            columns[(tuple(r.params.get(k) for k in others), r.threads)].append(r)
        series = sweep_series(rows, figures)
        fig, axes = plt.subplots(
            len(series), len(columns), figsize=(6.5 * len(columns), 2.6 * len(series) + 0.6), squeeze=False
        )
        for col, ((key, threads), crows) in enumerate(columns.items()):
            crows = sorted(crows, key=lambda r: r.params[x])
            title = config_label(wname, {k: v for k, v in zip(others, key, strict=True) if v is not None})
            axes[0, col].set_title(f"{title}, {threads} thread{'s' if threads > 1 else ''}", fontsize=9)
            for i, s in enumerate(series):
                ax = axes[i, col]
                for a in an.allocators:
                    pts = [
                        (r.params[x], v)
                        for r in crows
                        if (v := s.value(r, figures.get(row_key(r.workload, r.params, r.threads)), a)) is not None
                    ]
                    if pts:
                        xs, ys = zip(*pts, strict=True)
                        ax.plot(xs, ys, marker=".", markersize=4, linewidth=1, label=a, color=colors[a])
                ax.set_ylabel(s.ylabel, fontsize=8)
                ax.grid(alpha=0.3)
                ax.set_ylim(bottom=0)
            axes[-1, col].set_xlabel(x)
        axes[0, 0].legend(fontsize=7, ncol=min(3, len(an.allocators)))
        paths.append(_save(fig, out / f"sweep-{_slug(wname)}.png"))
    return paths


def render_all(an: Analysis, out: Path, figures: dict[tuple, RowFigures] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    return scaling_plots(an, out) + ratio_plots(an, out) + abort_plots(an, out) + sweep_plots(an, figures or {}, out)
