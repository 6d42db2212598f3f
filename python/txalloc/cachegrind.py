"""Cache misses without hardware counters: a workload run under valgrind's cachegrind with a
fixed cache geometry, so the counts depend on the addresses the allocator handed out and
not on the host's caches.

A spec asks for it per `[[run]]` entry (`cachegrind = { per = "traversals", values = [100,
1100] }`). Each row of that entry is then run twice under every allocator, with the
parameter `per` at each of the two values; the difference of the two runs' counts, divided
by the difference of the values, is the count per unit of `per` (per traversal, per
operation): the set-up phase, identical in both runs, cancels out.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

# Haswell's (Dice et al.'s i7-4770): 32 KiB 8-way L1s and an 8 MiB 16-way L3, 64-byte
# lines. I1 and LL are given too, so that valgrind never takes them from the host.
DEFAULT_D1 = "32768,8,64"
DEFAULT_I1 = "32768,8,64"
DEFAULT_LL = "8388608,16,64"

_KEYS = {"per", "unit", "values", "omit", "params", "d1", "i1", "ll", "timeout_s"}


class SettingsError(ValueError):
    """A cachegrind table that cannot be run; `key` is where in the table (may be empty)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Measurement:
    """What a spec asks: two runs with parameter `per` at `values`, without the parameters
    in `omit` (e.g. a duration that would override the count), with `params` changed."""

    per: str
    values: tuple[int, int]
    omit: tuple[str, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    d1: str = DEFAULT_D1
    i1: str = DEFAULT_I1
    ll: str = DEFAULT_LL
    timeout_s: float | None = None
    unit: str = ""  # what one unit of `per` is called in the report ("traversal"); default: per

    def run_params(self, row_params: dict[str, Any], value: int) -> dict[str, Any]:
        """The parameters of one of the two runs of a row."""
        params = {k: v for k, v in row_params.items() if k not in self.omit}
        params.update(self.params)
        params[self.per] = value
        return params


def _geometry(table: dict, key: str, default: str) -> str:
    text = table.get(key, default)
    if not isinstance(text, str):
        raise SettingsError(key, f"expected a string 'size,ways,line', got {text!r}")
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise SettingsError(key, f"expected 'size,ways,line' in bytes, ways and bytes, got {text!r}")
    size, ways, line = (int(p) for p in parts)
    if size % (ways * line):
        raise SettingsError(key, f"{text!r}: the size is not a whole number of sets of {ways} lines of {line} B")
    return ",".join(str(p) for p in (size, ways, line))


def parse_measurement(table: Any) -> Measurement:
    """The measurement a `cachegrind` table of a spec describes. Checks the table alone;
    the spec checks `per`, `omit` and `params` against the workload's parameters."""
    if not isinstance(table, dict):
        raise SettingsError("", f"expected a table, got {table!r}")
    for k in table:
        if k not in _KEYS:
            raise SettingsError(k, f"unknown key '{k}' (allowed here: {', '.join(sorted(_KEYS))})")
    per = table.get("per")
    if not isinstance(per, str) or not per:
        raise SettingsError("per", "missing: the parameter whose two values the runs differ by")
    values = table.get("values")
    if (
        not isinstance(values, list)
        or len(values) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)
        or values[0] >= values[1]
    ):
        raise SettingsError("values", f"expected two positive integers, the smaller first, got {values!r}")
    omit = table.get("omit", [])
    if not isinstance(omit, list) or not all(isinstance(o, str) for o in omit):
        raise SettingsError("omit", f"expected a list of parameter names, got {omit!r}")
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise SettingsError("params", f"expected a table of parameter values, got {params!r}")
    unit = table.get("unit", per)
    if not isinstance(unit, str) or not unit:
        raise SettingsError("unit", f"expected a name for one unit of '{per}', got {unit!r}")
    timeout = table.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise SettingsError("timeout_s", f"expected a positive number, got {timeout!r}")
    return Measurement(
        per=per,
        values=(values[0], values[1]),
        omit=tuple(omit),
        params=tuple(sorted(params.items())),
        d1=_geometry(table, "d1", DEFAULT_D1),
        i1=_geometry(table, "i1", DEFAULT_I1),
        ll=_geometry(table, "ll", DEFAULT_LL),
        timeout_s=float(timeout) if timeout is not None else None,
        unit=unit,
    )


def find_valgrind() -> str | None:
    return shutil.which("valgrind")


def command(valgrind: str, m: Measurement, out_file: str, argv: list[str]) -> list[str]:
    return [
        valgrind,
        "--tool=cachegrind",
        "--cache-sim=yes",
        f"--D1={m.d1}",
        f"--I1={m.i1}",
        f"--LL={m.ll}",
        f"--cachegrind-out-file={out_file}",
        *argv,
    ]


def parse_counts(text: str) -> dict[str, int]:
    """The whole-program counts of a cachegrind output file: its `events:` line names them,
    its `summary:` line gives them (Ir, D1mr, D1mw, ...)."""
    events: list[str] | None = None
    summary: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split(":", 1)[1].split()
        elif line.startswith("summary:"):
            summary = line.split(":", 1)[1].split()
    if events is None or summary is None:
        raise ValueError("not a cachegrind output: no 'events:' or no 'summary:' line")
    if len(events) != len(summary):
        raise ValueError(f"cachegrind output: {len(events)} events but {len(summary)} summary counts")
    try:
        return {e: int(n) for e, n in zip(events, summary, strict=True)}
    except ValueError:
        raise ValueError(f"cachegrind output: a summary count is not an integer: {' '.join(summary)}") from None


def per_unit(low: dict[str, int], high: dict[str, int], units: int) -> dict[str, float]:
    """Counts per unit of the varied parameter: (high - low) / units, for the events both
    runs counted."""
    if units <= 0:
        raise ValueError(f"the two runs must differ by at least one unit, not {units}")
    return {e: (high[e] - low[e]) / units for e in low if e in high}


def d1_misses(counts: dict[str, float]) -> float | None:
    """L1 data misses, reads and writes (None when the cache simulation did not run)."""
    if "D1mr" not in counts or "D1mw" not in counts:
        return None
    return counts["D1mr"] + counts["D1mw"]
