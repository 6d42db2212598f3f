"""The report's allocation profile by region (Baldassin et al. 2015, Table 5): for every TM
workload row, the calls that went through txmem (tm_malloc, tm_free, ...) in the sequential
phase, the parallel phase outside transactions and inside transactions, by requested size.
The runs' JSON carries them as "alloc_profile" (bench/common/bench_profile.h)."""

from __future__ import annotations

from .analysis import RowResult

REGIONS = ("seq", "par", "tx")
# The JSON's size keys (each bucket's largest request) and the table's headings.
BUCKETS = ("16", "32", "64", "128", "256", "1024", "4096", "larger")
HEADINGS = ("≤16", "≤32", "≤64", "≤128", "≤256", "≤1 KiB", "≤4 KiB", "larger")
TOTALS = ("mallocs", "frees", "bytes")


def _profiles(row: RowResult, records: list[dict]) -> list[dict]:
    out = []
    for r in records:
        if r.get("status") != "ok" or r["workload"] != row.workload or r["threads"] != row.threads:
            continue
        if (r.get("params") or {}) != row.params:
            continue
        p = (r.get("result") or {}).get("alloc_profile")
        if isinstance(p, dict):
            out.append(p)
    return out


def mean_profile(profiles: list[dict]) -> dict[str, dict[str, float]]:
    """Per region, the mean of each count (the buckets under their JSON keys, and the
    totals) over the profiles; a count a profile lacks counts as 0."""
    out: dict[str, dict[str, float]] = {}
    for region in REGIONS:
        cells = {}
        for key in BUCKETS:
            cells[key] = sum(float(((p.get(region) or {}).get("sizes") or {}).get(key, 0)) for p in profiles)
        for key in TOTALS:
            cells[key] = sum(float((p.get(region) or {}).get(key, 0)) for p in profiles)
        out[region] = {k: v / len(profiles) for k, v in cells.items()}
    return out


def _count(v: float) -> str:
    return f"{round(v):,}"


def table(rows: list[RowResult], records: list[dict]) -> str:
    """One line per TM row and region; "" when no run reported a profile."""
    header = ["workload", "threads", "region", *HEADINGS, "#mallocs", "#frees", "size (bytes)", "runs"]
    body = []
    for row in rows:
        if row.group != "tm":
            continue
        profiles = _profiles(row, records)
        if not profiles:
            continue
        mean = mean_profile(profiles)
        for region in REGIONS:
            cells = mean[region]
            body.append(
                [row.label, str(row.threads), region]
                + [_count(cells[k]) for k in BUCKETS]
                + [_count(cells[k]) for k in TOTALS]
                + [str(len(profiles))]
            )
    if not body:
        return ""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def section(rows: list[RowResult], records: list[dict]) -> str:
    """The report section, or "" when no TM run reported a profile."""
    t = table(rows, records)
    if not t:
        return ""
    return (
        "\n## Allocation profile by region (as in Baldassin et al. 2015, Table 5)\n\n"
        "Calls through the transactional allocation layer (tm_malloc, tm_free and their "
        "STAMP forms), by region: `seq` outside transactions before the threads start or after "
        "they join, `par` outside transactions while they run, `tx` inside transactions (every "
        "attempt, aborted ones included); allocations by requested size. Mean per run over the "
        "row's runs under every allocator, counted when the program wrote its result. Calls to "
        "the process's malloc made directly are not counted, but for STAMP's P_MALLOC and "
        "SEQ_MALLOC (and their frees), which report themselves as calls outside transactions."
        "\n\n" + t
    )
