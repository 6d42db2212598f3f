"""PNG figures of a study (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .analysis import Analysis, RowResult, geometric_means  # noqa: E402

_METRIC_LABELS = {"time_s": "time (s), lower is better", "ops_per_s": "operations/s, higher is better"}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80]


def _save(fig, path: Path) -> Path:
    """Lays the figure out, writes it to path as PNG and releases it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _colors(allocators: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    return {a: cmap(i % 10) for i, a in enumerate(allocators)}


def scaling_plots(an: Analysis, out: Path) -> list[Path]:
    """Per workload: the mean of its metric against threads, one line per allocator, 95 % CI
    bars of the mean; one
    panel per parameter combination."""
    colors = _colors(an.allocators)
    by_workload: dict[str, dict[str, list[RowResult]]] = defaultdict(lambda: defaultdict(list))
    for r in an.rows:
        by_workload[r.workload][r.label].append(r)
    paths = []
    for wname, configs in by_workload.items():
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


def abort_plots(an: Analysis, out: Path) -> list[Path]:
    """For TM rows: aborted share of attempts split by cause (stacked) and the share of
    conflicts that were false, per configuration and allocator."""
    paths = []
    tm_rows = [r for r in an.rows if r.tm]
    for threads in sorted({r.threads for r in tm_rows}):
        rows = [r for r in tm_rows if r.threads == threads]
        allocs = [a for a in an.allocators if any(a in r.tm for r in rows)]
        causes = sorted({c for r in rows for f in r.tm.values() for c, n in f.aborts_by_cause.items() if n})
        bars = [(r, a) for r in rows for a in allocs if a in r.tm]
        if not bars:
            continue
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(7.0, 0.28 * len(bars)), 7.0), sharex=True)
        xs = list(range(len(bars)))
        bottom = [0.0] * len(bars)
        cmap = plt.get_cmap("tab20")
        for ci, cause in enumerate(causes or ["aborts"]):
            ys = []
            for r, a in bars:
                f = r.tm[a]
                runs_attempts = (f.commits + f.aborts) / f.runs if f.runs else 0
                n = f.aborts_by_cause.get(cause, 0.0) if causes else f.aborts / max(1, f.runs)
                ys.append(100.0 * n / runs_attempts if runs_attempts else 0.0)
            ax1.bar(xs, ys, bottom=bottom, label=cause, color=cmap(ci % 20))
            bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
        ax1.set_ylabel("aborts, % of attempts")
        ax1.legend(fontsize=7, ncol=4)
        ax1.grid(axis="y", alpha=0.3)
        ax1.set_title(f"TM aborts by cause, {threads} thread{'s' if threads > 1 else ''}")
        shares = [r.tm[a].false_share for r, a in bars]
        ax2.bar(xs, [100.0 * s if s is not None else 0.0 for s in shares], color="tab:red")
        ax2.set_ylabel("false conflicts, % of conflicts")
        ax2.grid(axis="y", alpha=0.3)
        ax2.set_xticks(xs)
        ax2.set_xticklabels([f"{r.label} | {a}" for r, a in bars], rotation=60, ha="right", fontsize=6)
        paths.append(_save(fig, out / f"aborts-t{threads}.png"))
    return paths


def render_all(an: Analysis, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    return scaling_plots(an, out) + ratio_plots(an, out) + abort_plots(an, out)
