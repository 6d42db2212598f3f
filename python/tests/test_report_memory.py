"""Memory-metric rows (idle-owners' rss_after_mib) in a report: their own table with their
own unit and geometric means, out of the time rows' table and means."""

import json
from pathlib import Path

from study_records import run_record

from txalloc.report import is_memory_metric, metric_unit, render
from txalloc.runner import RESULTS_FILE, STUDY_FILE


def test_units_come_from_the_metric_names():
    assert metric_unit("time_s") == "s"
    assert metric_unit("ops_per_s") == "ops/s"
    assert metric_unit("rss_after_mib") == "MiB"
    assert metric_unit("peak_rss_kib") == "KiB"
    assert metric_unit("pressure_peak_bytes") == "B"
    assert metric_unit("latency") == "latency"
    assert is_memory_metric("rss_after_mib") and is_memory_metric("pressure_peak_bytes")
    assert not is_memory_metric("time_s") and not is_memory_metric("ops_per_s")


def _record(workload: str, params: dict, threads: int, allocator: str, rep: int, results: dict) -> dict:
    result = {
        "workload": workload,
        "threads": threads,
        "allocator": {"name": allocator, "path": "/x"},
        "results": results,
        "memory": {"peak_rss_kib": 1000},
        "valid": True,
    }
    return run_record(workload, params, threads, allocator, rep, result)


def _study(tmp_path: Path) -> Path:
    """A rendered study of one time row (threadtest: jemalloc twice glibc's time) and one
    memory row (idle-owners: glibc four times jemalloc's resident set)."""
    spec = {
        "name": "mem",
        "allocators": ["glibc", "jemalloc"],
        "threads": [1],
        "repetitions": 3,
        "run": [
            {"workload": "threadtest", "params": {"rounds": 10}},
            {"workload": "idle-owners", "threads": [4], "params": {"mib": 64, "settle": 1}},
        ],
    }
    study = {
        "spec": spec,
        "spec_name": "mem",
        "spec_source": "mem.toml",
        "mode": "normal",
        "allocators": ["glibc", "jemalloc"],
        "metadata": {},
    }
    (tmp_path / STUDY_FILE).write_text(json.dumps(study))
    tt = {"rounds": 10, "objects": 30000, "size": 8}
    io = {"mib": 64, "freers": 4, "min": 16, "max": 512, "settle": 1}
    records = []
    for rep, jitter in enumerate((0.0, 0.01, -0.01)):
        for alloc, t, rss in (("glibc", 1.0, 400.0), ("jemalloc", 2.0, 100.0)):
            records.append(_record("threadtest", tt, 1, alloc, rep, {"time_s": t + jitter, "ops": 10}))
            results = {"time_s": 0.5, "ops": 10, "ops_per_s": 20.0, "rss_after_mib": rss + 10 * jitter}
            records.append(_record("idle-owners", io, 4, alloc, rep, results))
    (tmp_path / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    return render(tmp_path)


def _section(report: str, heading: str) -> str:
    start = report.index(heading)
    end = report.find("\n## ", start + 1)
    return report[start : end if end >= 0 else None]


def test_memory_rows_have_their_own_table(tmp_path):
    report = _study(tmp_path).read_text()
    time_part = _section(report, "## Allocator suite: ratio to the best allocator")
    memory_part = _section(report, "## Allocator suite: memory, ratio to the best allocator")
    # the time table: threadtest only, glibc best, jemalloc 2x; its means ignore the memory row
    assert "| threadtest | 1 | 1.00 s | **1.00** | 2.00 |" in time_part
    assert "idle-owners" not in time_part
    assert "| *geometric mean, all rows*" not in time_part  # one thread count: no overall line
    assert "*geometric mean, 4 threads*" not in time_part
    # the memory table: idle-owners in MiB, jemalloc best, glibc 4x, and its own mean
    assert "| idle-owners | 4 | 100 MiB | 4.00 | **1.00** |" in memory_part
    assert "| *geometric mean, 4 threads* | 4 |  | *4.00* | *1.00* |" in memory_part
    assert "`idle-owners`: `rss_after_mib`" in memory_part
    assert "| idle-owners | 4 | rss_after_mib | 400 (mean 400" in memory_part
    # the memory section follows the time section
    assert report.index("memory, ratio to the best") > report.index("Allocator suite: ratio to the best")


def test_peak_rss_has_a_ratio_table(tmp_path):
    """threadtest: glibc and jemalloc both peak at 1000 KiB in _study, so both are 1.00;
    the table sits in the time rows' section and leaves idle-owners (a memory row) out."""
    report = _study(tmp_path).read_text()
    part = _section(report, "### Allocator suite: peak resident memory, ratio to the least")
    lines = [line for line in part.splitlines() if line.startswith("| threadtest")]
    assert lines == ["| threadtest | 1 | 1000 | 1.00 | 1.00 |"]
    assert "idle-owners" not in part
    assert "| *geometric mean, 1 thread* | 1 |  | *1.00* | *1.00* |" in part


def test_peak_rss_ratios_and_means():
    from txalloc.analysis import RowResult
    from txalloc.report import peak_rss_ratio_table

    def row(threads: int, rss: dict) -> RowResult:
        return RowResult(
            workload="w",
            group="alloc",
            params={},
            threads=threads,
            label="w",
            metric="time_s",
            higher_is_better=False,
            peak_rss_kib=rss,
        )

    table = peak_rss_ratio_table(
        [row(1, {"a": 100.0, "b": 400.0}), row(2, {"a": 200.0, "b": 100.0}), row(2, {"a": 300.0})], ["a", "b"]
    )
    assert "| w | 1 | 100 | 1.00 | 4.00 |" in table
    assert "| w | 2 | 100 | 2.00 | 1.00 |" in table
    assert "| w | 2 | 300 | 1.00 | – |" in table
    assert "| *geometric mean, 2 threads* | 2 |  | *1.41* | *1.00* |" in table
    assert "| *geometric mean, all rows* |  |  | *1.26* | *2.00* |" in table
