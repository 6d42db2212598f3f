"""Ratio tables: the best is bold only when its 95 % interval is clear of the others'."""

from txalloc import stats
from txalloc.analysis import RowResult, best_worst_table
from txalloc.report import TIE_MARK, ratio_table


def row(runs: dict[str, list[float]], threads: int = 1) -> RowResult:
    """A time_s row (lower is better) with these runs per allocator."""
    r = RowResult("w", "alloc", {}, threads, "w", "time_s", False)
    r.summaries = {a: stats.summarize(v) for a, v in runs.items()}
    r.ratios = stats.slowdown_ratios({a: s.median for a, s in r.summaries.items()}, False)
    return r


def cells(r: RowResult, allocs: list[str]) -> list[str]:
    line = ratio_table(None, [r], allocs).splitlines()[2]
    return [c.strip() for c in line.strip("|").split("|")][3:]


def test_clear_winner_is_bold():
    r = row({"a": [1.0, 1.01, 0.99], "b": [2.0, 2.02, 1.98]})
    assert r.standing("a") == "best" and r.standing("b") == "behind"
    assert cells(r, ["a", "b"]) == ["**1.00**", "2.00"]


def test_overlapping_intervals_are_ties_and_nothing_is_bold():
    # a is best by its median, but c's interval reaches into a's; b is clearly behind
    r = row({"a": [1.0, 1.1, 0.9], "b": [3.0, 3.01, 2.99], "c": [1.05, 1.3, 0.95]})
    assert [r.standing(x) for x in "abc"] == ["tie", "behind", "tie"]
    assert r.tied_with_best() == ["c"]
    assert cells(r, ["a", "b", "c"]) == [f"1.00 {TIE_MARK}", "3.00", f"1.05 {TIE_MARK}"]
    assert not any("**" in c for c in cells(r, ["a", "b", "c"]))


def test_without_intervals_nothing_is_decided():
    one_run = row({"a": [1.0], "b": [2.0]})
    assert one_run.standing("a") == "undecided" and one_run.standing("b") == "undecided"
    assert cells(one_run, ["a", "b"]) == ["1.00", "2.00"]
    alone = row({"a": [1.0, 1.1]})
    assert alone.standing("a") == "undecided" and alone.standing("z") is None
    # one allocator without an interval leaves the best undecided, not a winner
    partly = row({"a": [1.0, 1.0], "b": [2.0, 2.0], "c": [3.0]})
    assert [partly.standing(x) for x in "abc"] == ["undecided", "behind", "undecided"]


def test_best_worst_table_names_the_ties():
    tied = row({"a": [1.0, 1.1, 0.9], "b": [3.0, 3.01, 2.99], "c": [1.05, 1.3, 0.95]})
    (bw,) = best_worst_table([tied])
    assert (bw.best, bw.worst, bw.ties) == ("a", "b", ["c"])
