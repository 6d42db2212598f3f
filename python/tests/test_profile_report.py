"""The report sections of a STAMP-style study on synthetic results: the allocation profile
by region (Baldassin et al. 2015, Table 5) and the best/worst table (Tables 3 and 6)."""

from txalloc import stats
from txalloc.analysis import RowResult, best_worst_table
from txalloc.report_profile import BUCKETS, mean_profile, section, table


def profile(seq: int, par: int, tx: int, tx_frees: int) -> dict:
    """seq allocations of 100 bytes, par of 40, tx of 10 (tx_frees freed in transactions)."""

    def region(n: int, size: int, bucket: str, frees: int) -> dict:
        return {
            "mallocs": n,
            "frees": frees,
            "bytes": n * size,
            "sizes": {k: (n if k == bucket else 0) for k in BUCKETS},
        }

    return {"seq": region(seq, 100, "128", 0), "par": region(par, 40, "64", par), "tx": region(tx, 10, "16", tx_frees)}


def record(workload: str, allocator: str, threads: int, prof: dict | None, status: str = "ok") -> dict:
    result = {"results": {"time_s": 1.0}}
    if prof is not None:
        result["alloc_profile"] = prof
    return {
        "workload": workload,
        "params": {"txmem": "wrap"},
        "threads": threads,
        "allocator": allocator,
        "status": status,
        "result": result,
    }


def tm_row(workload: str = "vacation", threads: int = 2, group: str = "tm") -> RowResult:
    return RowResult(workload, group, {"txmem": "wrap"}, threads, workload, "time_s", False)


def lines(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]


def test_profile_rows_are_means_over_the_rows_runs():
    records = [
        record("vacation", "glibc", 2, profile(1, 6, 2, 2)),
        record("vacation", "txalloc", 2, profile(1, 6, 4, 2)),  # more aborted attempts
        record("vacation", "txalloc", 1, profile(9, 9, 9, 9)),  # another row
        record("vacation", "mimalloc", 2, profile(99, 99, 99, 99), status="timeout"),
    ]
    seq, par, tx = lines(table([tm_row()], records))
    assert seq == ["vacation", "2", "seq", "0", "0", "0", "1", "0", "0", "0", "0", "1", "0", "100", "2"]
    assert par == ["vacation", "2", "par", "0", "0", "6", "0", "0", "0", "0", "0", "6", "6", "240", "2"]
    assert tx == ["vacation", "2", "tx", "3", "0", "0", "0", "0", "0", "0", "0", "3", "2", "30", "2"]


def test_mean_profile_counts_missing_keys_as_zero():
    mean = mean_profile([{"tx": {"mallocs": 4, "sizes": {"16": 4}}}, {}])
    assert mean["tx"]["mallocs"] == 2 and mean["tx"]["16"] == 2
    assert mean["seq"]["frees"] == 0 and mean["par"]["larger"] == 0


def test_no_section_without_profiles_or_for_allocator_workloads():
    assert section([tm_row()], [record("vacation", "glibc", 2, None)]) == ""
    alloc_row = tm_row("threadtest", group="alloc")
    assert section([alloc_row], [record("threadtest", "glibc", 2, profile(1, 1, 1, 1))]) == ""
    text = section([tm_row()], [record("vacation", "glibc", 2, profile(1, 2, 3, 3))])
    assert "Table 5" in text and "| vacation | 2 | tx |" in text


def timed_row(threads: int, runs: dict[str, list[float]], work: float) -> RowResult:
    """A fixed-work row (time_s, lower is better): throughput is work / time."""
    r = RowResult("vacation", "tm", {"txmem": "wrap"}, threads, "vacation", "time_s", False)
    r.summaries = {a: stats.summarize(v) for a, v in runs.items()}
    r.ratios = stats.slowdown_ratios({a: s.median for a, s in r.summaries.items()}, False)
    r.throughput = {a: work / s.median for a, s in r.summaries.items()}
    return r


def test_best_worst_picks_the_best_thread_count_and_its_allocators():
    one = timed_row(1, {"glibc": [2.0, 2.0, 2.0], "txalloc": [1.9, 1.9, 1.9]}, 100.0)
    two = timed_row(2, {"glibc": [1.5, 1.5, 1.5], "txalloc": [1.2, 1.2, 1.2], "tcmalloc": [1.3, 1.3, 1.3]}, 100.0)
    (bw,) = best_worst_table([one, two])
    assert (bw.threads, bw.best, bw.worst) == (2, "txalloc", "glibc")
    assert abs(bw.perf_diff_pct - 25.0) < 1e-9  # 1.5 s against 1.2 s
    assert bw.ties == []
