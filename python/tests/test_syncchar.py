"""The Syncchar analysis on hand-built traces whose answers are known (docs/syncchar.md)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from syncchar_traces import alloc_record, build, header, section, thread_record, write

from txalloc import cli, syncchar
from txalloc.errors import UserError


def overall(trace, n, **kw):
    r = syncchar.analyse(trace, threads=[n], symbolize=False, **kw)
    return r["overall"][str(n)]


# ---- The model's definitions ----


def sets_of(reads, writes):
    return frozenset(reads) | frozenset(writes), tuple(sorted(writes))


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_disjoint_sets_are_independent(n):
    i_n, d_n = syncchar.metrics_of_sets([sets_of([8 * k + 4096], [8 * k]) for k in range(n)])
    assert (i_n, d_n) == (n, 0.0)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_all_conflicting_density_is_their_number(n):
    i_n, d_n = syncchar.metrics_of_sets([sets_of([], [64]) for _ in range(n)])
    assert i_n == 0
    assert d_n == pytest.approx(n)  # |C_n|


@pytest.mark.parametrize("n", [2, 3, 5, 8, 32])
def test_star_density_is_two(n):
    # One writer of x, n - 1 readers of it: the writer contributes (n-1)/(n-1) = 1, each
    # reader 1/(n-1), n-1 of them: 1. The readers do not conflict with each other.
    sets = [sets_of([], [64])] + [sets_of([64], []) for _ in range(n - 1)]
    i_n, d_n = syncchar.metrics_of_sets(sets)
    assert i_n == 0
    assert d_n == pytest.approx(2.0)


def test_density_divides_by_the_conflicting_sections_not_the_sample():
    # Two conflicting pairs among six: C_n = 4, each of them conflicts with 1 of the
    # other 3: D_n = 4 * (1/3).
    sets = [sets_of([], [8]), sets_of([8], []), sets_of([], [16]), sets_of([], [16])]
    sets += [sets_of([], [100 * 8]), sets_of([200 * 8], [])]
    i_n, d_n = syncchar.metrics_of_sets(sets)
    assert i_n == 2
    assert d_n == pytest.approx(4 / 3)


def test_readers_alone_never_conflict():
    assert syncchar.metrics_of_sets([sets_of([8, 16], []) for _ in range(4)]) == (4.0, 0.0)


# ---- Whole traces ----


def test_trace_disjoint(tmp_path):
    t = build(tmp_path, 4, 64, lambda t, k: ([], [4096 * (t + 1)]))
    for n in (1, 2, 4):
        row = overall(t, n)
        assert row["samples"] > 0
        assert (row["I_n"], row["D_n"]) == (n, 0.0)


def test_trace_all_conflicting(tmp_path):
    t = build(tmp_path, 4, 64, lambda t, k: ([8], [64]))
    row = overall(t, 4)
    assert row["samples"] == 64  # one window of 256 sections, one section per thread per group
    assert (row["I_n"], row["D_n"]) == (0.0, 4.0)


def test_trace_star(tmp_path):
    t = build(tmp_path, 4, 64, lambda t, k: ([], [64]) if t == 0 else ([64], []))
    row = overall(t, 4)
    assert (row["I_n"], row["D_n"]) == (0.0, 2.0)


def test_windows_follow_the_trace_or_the_option(tmp_path):
    t = build(tmp_path, 2, 100, lambda t, k: ([], [8 * t]), window=50)
    assert syncchar.analyse(t, threads=[2], symbolize=False)["window"] == 50
    assert overall(t, 2)["samples"] == 100  # 4 windows of 50 sections, 25 pairs each
    assert overall(t, 2, window=200)["samples"] == 100


def test_sampling_at_100_percent_equals_exhaustive(tmp_path):
    rng = np.random.default_rng(7)
    table = [[int(x) for x in rng.integers(0, 40, size=6)] for _ in range(4 * 200)]
    t = build(tmp_path, 4, 200, lambda t, k: ([8 * x for x in table[4 * k + t][:4]], [8 * table[4 * k + t][5]]))
    exhaustive = syncchar.analyse(t, threads=[2, 4], symbolize=False)
    sampled = syncchar.analyse(t, threads=[2, 4], sample=100, symbolize=False)
    assert sampled["overall"] == exhaustive["overall"]
    # A quarter of the sections estimates the same figures (seeded: deterministic).
    quarter = syncchar.analyse(t, threads=[2, 4], sample=25, symbolize=False)
    for n in ("2", "4"):
        assert quarter["overall"][n]["D_n"] == pytest.approx(exhaustive["overall"][n]["D_n"], rel=0.25)
        assert quarter["overall"][n]["samples"] < exhaustive["overall"][n]["samples"]


def test_prediction_is_the_papers_formula(tmp_path):
    # Two threads, each 1 s: acq 0.3, held 0.4, other 0.3; every pair conflicts on one
    # word (D_2 = 2): TM time (0.3 + 0.4) * 2 / 2 + 0.3 = 1.0, no speed-up; disjoint: 0.65.
    for writes, tm_time in ((lambda t: [64]), 1.0), ((lambda t: [64 * (t + 1)]), 0.65):
        recs = [section(t + 1, 10 * k + t, [], writes(t)) for k in range(50) for t in range(2)]
        recs += [thread_record(t + 1, 50, 300_000_000, 400_000_000, 0, 1_000_000_000) for t in range(2)]
        p = syncchar.analyse(syncchar.read_trace(write(tmp_path, recs)), threads=[2], symbolize=False)["prediction"]
        assert p["tm_time_s"] == pytest.approx(tm_time)
        assert p["speedup"] == pytest.approx(1.0 / tm_time)


def test_false_conflicts_and_the_objects_behind_them(tmp_path):
    # Two threads write different words of one 32-byte stripe: no word is shared, the
    # stripe is; the words belong to two 16-byte objects allocated at site 0x401234.
    recs = [alloc_record(1, 0x10000, 16, 0x401234, 1), alloc_record(2, 0x10010, 16, 0x401234, 2)]
    recs += [section(t + 1, 10 * k + t, [], [0x10000 + 16 * t]) for k in range(20) for t in range(2)]
    recs += [thread_record(t + 1, 20, 0, 2000, 0, 1000) for t in range(2)]
    r = syncchar.analyse(syncchar.read_trace(write(tmp_path, recs)), threads=[2], unit="word", symbolize=False)
    assert r["overall"]["2"]["D_n"] == 0.0
    stripe = r["false_conflicts"]["stripe"]
    assert stripe["word_conflicts"] == 0
    assert stripe["false_conflicts"] == stripe["conflicts"] == 20
    top = stripe["top"][0]
    assert top["unit"] == "0x10000"
    assert {o["base"] for o in top["objects"]} == {"0x10000", "0x10010"}
    assert all(o["site"] == "0x401234" and o["size"] == 16 for o in top["objects"])
    assert r["granularity"]["stripe"]["D_n"] == 2.0
    # The same trace analysed by stripe sees the conflicts, and the hot spot is the stripe.
    s = syncchar.analyse(syncchar.read_trace(write(tmp_path, recs)), threads=[2], symbolize=False)
    assert s["unit"] == "stripe"
    assert s["hot_spots"][0]["unit"] == "0x10000"
    assert s["hot_spots"][0]["share"] == 1.0
    assert s["table8"]["addresses_by_share_of_conflicts"]["100%"] == 1


def test_cancelled_sections_are_left_out(tmp_path):
    recs = [section(t + 1, 10 * k + t, [], [64], flags=syncchar.FLAG_CANCELLED) for k in range(5) for t in range(2)]
    recs += [section(t + 1, 100 + 10 * k + t, [], [64 * (t + 1)]) for k in range(5) for t in range(2)]
    recs += [thread_record(t + 1, 10, 0, 100, 0, 1000) for t in range(2)]
    r = syncchar.analyse(syncchar.read_trace(write(tmp_path, recs)), threads=[2], symbolize=False)
    assert r["overall"]["2"]["D_n"] == 0.0


def test_not_a_trace(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"hello")
    with pytest.raises(UserError, match="not a Syncchar trace"):
        syncchar.read_trace(p)
    p.write_bytes(header() + struct.pack("<Q", 1 | 800 << 32))
    with pytest.raises(UserError, match="damaged"):
        syncchar.read_trace(p)


# ---- The command ----


def test_cli_writes_json_report_and_plots(tmp_path, capsys):
    t = build(tmp_path, 2, 40, lambda t, k: ([8], [64 * (t + 1)]))
    out = tmp_path / "o.json"
    rc = cli.main(
        ["syncchar", t.path, "--threads", "1,2", "--json", str(out), "--plots", str(tmp_path / "p"), "--no-symbols"]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["overall"]["2"]["I_n"] == 2.0
    assert "Data independence" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["t-in-dn.png", "t-speedup.png"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--threads", "2,x"], "--threads takes numbers"),
        (["--threads", "0"], "thread counts of 1 or more"),
        (["--window", "1"], "--window must be at least 2"),
        (["--sample", "0"], "--sample is a percentage"),
        (["--unit", "page"], "invalid choice"),
    ],
)
def test_cli_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    t = build(tmp_path, 2, 4, lambda t, k: ([], [8]))
    with pytest.raises(SystemExit) as e:
        rc = cli.main(["syncchar", t.path, *args])
        raise SystemExit(rc)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


def test_cli_missing_trace(tmp_path, capsys):
    assert cli.main(["syncchar", str(tmp_path / "none")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_the_recorders_own_time_is_not_the_programs(tmp_path):
    # 1 s per thread of which the recorder took 0.2: the lock run lasted 0.8.
    recs = [section(t + 1, 10 * k + t, [], [64 * (t + 1)]) for k in range(10) for t in range(2)]
    recs += [thread_record(t + 1, 10, 0, 400_000_000, 0, 1_000_000_000, recording=200_000_000) for t in range(2)]
    run = syncchar.LockRun.of(syncchar.read_trace(write(tmp_path, recs)))
    assert run.elapsed_s == pytest.approx(0.8)
    assert run.other_s == pytest.approx(0.4)


def test_the_parallel_phase_leaves_out_set_up(tmp_path):
    # Thread 1 fills the structure alone, then threads 2 and 3 run together.
    recs = [section(1, k, [], [8]) for k in range(100)]
    recs += [section(t, 1000 + 10 * k + t, [], [64 * t]) for k in range(20) for t in (2, 3)]
    recs += [thread_record(1, 100, 0, 50, 0, 100)]
    recs += [thread_record(t, 20, 0, 100, 1000, 1300) for t in (2, 3)]
    trace = syncchar.read_trace(write(tmp_path, recs))
    assert syncchar.parallel_phase(trace) == [2, 3]
    r = syncchar.analyse(trace, threads=[2], symbolize=False)
    assert r["threads_recorded"] == 2
    assert r["overall"]["2"]["samples"] == 20
