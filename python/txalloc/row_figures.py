"""Figures of a row beyond its metric, per allocator: the lock-elision figures of the
hardware TM backends, where the allocator put a workload's nodes (the fields the ring
reports), and the cache misses cachegrind counted. They are what Dice et al. (2016)
plot against node size in Figures 1 and 2."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import stats
from .cachegrind import d1_misses

# Backends whose tm_stats count commits on the fallback lock as commits_irrevocable and
# capacity aborts as aborts_by_cause.capacity.
HTM_BACKENDS = ("htm-emul", "tle", "rtm")
# Placement of the nodes over the L1 sets, as the ring's results report it.
PLACEMENT_FIELDS = ("l1_sets_used", "max_nodes_per_set", "lines_touched", "pages_touched")


def row_key(workload: str, params: dict[str, Any], threads: int) -> tuple:
    return (workload, tuple(sorted(params.items())), threads)


@dataclass
class HtmFigures:
    sections: int  # all critical sections (commits), summed over the runs
    elided: int  # those that committed without taking the lock
    attempts: int  # commits + aborts
    capacity_aborts: int

    @property
    def elided_share(self) -> float | None:
        return self.elided / self.sections if self.sections else None

    @property
    def capacity_share(self) -> float | None:
        """Capacity aborts per attempt."""
        return self.capacity_aborts / self.attempts if self.attempts else None


@dataclass
class RowFigures:
    htm: dict[str, HtmFigures] = field(default_factory=dict)
    placement: dict[str, dict[str, float]] = field(default_factory=dict)  # medians of PLACEMENT_FIELDS
    misses: dict[str, float] = field(default_factory=dict)  # L1 data misses per unit of `per`
    unit: str | None = None  # what `misses` are counted per (a traversal, an operation)


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _htm(results: list[dict]) -> HtmFigures | None:
    tms = [
        r["tm_stats"]
        for r in results
        if isinstance(r.get("tm_stats"), dict) and (r.get("tm") or {}).get("backend") in HTM_BACKENDS
    ]
    if not tms:
        return None
    commits = sum(_int(t.get("commits")) for t in tms)
    return HtmFigures(
        sections=commits,
        elided=commits - sum(_int(t.get("commits_irrevocable")) for t in tms),
        attempts=commits + sum(_int(t.get("aborts")) for t in tms),
        capacity_aborts=sum(_int((t.get("aborts_by_cause") or {}).get("capacity")) for t in tms),
    )


def _placement(results: list[dict]) -> dict[str, float]:
    out = {}
    for name in PLACEMENT_FIELDS:
        values = [
            float(v)
            for r in results
            if isinstance(v := (r.get("results") or {}).get(name), (int, float)) and not isinstance(v, bool)
        ]
        if values:
            out[name] = stats.median(values)
    return out


def collect(records: list[dict], cachegrind_records: list[dict]) -> dict[tuple, RowFigures]:
    """Per row (row_key) the figures of each allocator, from the ok runs and the ok
    cachegrind measurements; rows with none are left out."""
    results: dict[tuple, dict[str, list[dict]]] = {}
    for rec in records:
        if rec.get("status") == "ok" and isinstance(rec.get("result"), dict):
            key = row_key(rec["workload"], rec.get("params") or {}, rec["threads"])
            results.setdefault(key, {}).setdefault(rec["allocator"], []).append(rec["result"])
    figures: dict[tuple, RowFigures] = {}
    for key, by_allocator in results.items():
        f = RowFigures()
        for a, rs in by_allocator.items():
            if (h := _htm(rs)) is not None:
                f.htm[a] = h
            if p := _placement(rs):
                f.placement[a] = p
        if f.htm or f.placement:
            figures[key] = f
    for rec in cachegrind_records:
        misses = d1_misses(rec.get("per_unit") or {})
        if rec.get("status") != "ok" or misses is None:
            continue
        f = figures.setdefault(row_key(rec["workload"], rec.get("params") or {}, rec["threads"]), RowFigures())
        f.misses[rec["allocator"]] = misses
        f.unit = rec.get("unit") or rec.get("per")
    return figures
