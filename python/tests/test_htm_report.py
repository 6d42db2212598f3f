"""The htm spec's report on hand-made results: the elided share and capacity aborts per
attempt, the nodes' placement, the cachegrind misses, and the plots against node size."""

import csv
import json
from pathlib import Path

import pytest
from study_records import run_record

from txalloc import plots, report, runner
from txalloc.analysis import analyze
from txalloc.row_figures import collect, row_key
from txalloc.spec import load_spec

ALLOCS = ["glibc", "txalloc"]


def ring_params(size: int) -> dict:
    return {"duration": 0.5, "node_size": size, "tm": "tle", "use_tm": True}


def avl_params(size: int) -> dict:
    return {"duration": 0.5, "node_size": size, "tm": "tle"}


def record(workload, params, threads, allocator, rep, ops, commits, on_lock, aborts, capacity, placement=None):
    result = {
        "workload": workload,
        "allocator": {"name": allocator},
        "tm": {"backend": "tle"},
        "results": {"ops_per_s": ops, "time_s": 0.5, **(placement or {})},
        "tm_stats": {
            "commits": commits,
            "commits_irrevocable": on_lock,
            "aborts": aborts,
            "aborts_by_cause": {"capacity": capacity, "conflict": aborts - capacity, "unfriendly": 0},
            "true_conflicts": 0,
            "false_conflicts": 0,
            "unknown_conflicts": aborts - capacity,
        },
        "valid": True,
    }
    return run_record(workload, params, threads, allocator, rep, result)


CROWDED = {"l1_sets_used": 4, "max_nodes_per_set": 32, "lines_touched": 128, "pages_touched": 16}
SPREAD = {"l1_sets_used": 64, "max_nodes_per_set": 2, "lines_touched": 128, "pages_touched": 17}


def records() -> list[dict]:
    recs = []
    for size in (512, 1024):
        p = ring_params(size)
        # glibc: rep 0 takes the lock in 400 of 1000 sections, rep 1 in none of 3000, so the
        # elided share is 3600 / 4000 = 90 % (not the mean of the two runs' shares, 80 %)
        recs.append(record("ring", p, 1, "glibc", 0, 1000.0, 1000, 400, 500, 400, CROWDED))
        recs.append(record("ring", p, 1, "glibc", 1, 3000.0, 3000, 0, 0, 0, CROWDED))
        recs.append(record("ring", p, 1, "txalloc", 0, 5000.0, 5000, 0, 50, 0, SPREAD))
    for threads in (1, 2):
        for size in (64, 1024):
            p = avl_params(size)
            recs.append(record("avl", p, threads, "glibc", 0, 2e5, 1000, 250, 100, 100))
            recs.append(record("avl", p, threads, "txalloc", 0, 4e5, 1000, 0, 0, 0))
    return recs


def measurement(size: int, allocator: str, d1: float) -> dict:
    return {
        "key": json.dumps(["cachegrind", "ring", size, allocator]),
        "workload": "ring",
        "params": ring_params(size),
        "threads": 1,
        "allocator": allocator,
        "per": "traversals",
        "unit": "traversal",
        "values": [100, 1100],
        "geometry": {"D1": "32768,8,64", "I1": "32768,8,64", "LL": "8388608,16,64"},
        "runs": [{"argv": ["valgrind", "--cachegrind-out-file=/tmp/x/out.1100", "ring"], "status": "ok"}],
        "status": "ok",
        "per_unit": {"D1mr": d1, "D1mw": 0.5},
    }


@pytest.fixture
def study_dir(tmp_path: Path) -> Path:
    spec = load_spec("htm")
    study = {
        "spec": spec.raw,
        "spec_name": "htm",
        "spec_source": spec.source,
        "mode": "normal",
        "allocators": None,
        "allocators_available": ALLOCS,
        "metadata": {},
        "command": "txalloc study htm",
        "cells_planned": len(records()),
    }
    (tmp_path / runner.STUDY_FILE).write_text(json.dumps(study))
    for r in records():
        runner.append_record(tmp_path, r)
    for size, glibc, txalloc in ((512, 3.0, -0.52), (1024, 127.5, 1.0)):
        runner.append_record(tmp_path, measurement(size, "glibc", glibc), runner.CACHEGRIND_FILE)
        runner.append_record(tmp_path, measurement(size, "txalloc", txalloc), runner.CACHEGRIND_FILE)
    return tmp_path


def test_elided_share_sums_sections_and_capacity_is_per_attempt():
    figures = collect(records(), [])
    glibc = figures[row_key("ring", ring_params(1024), 1)].htm["glibc"]
    assert (glibc.sections, glibc.elided, glibc.attempts, glibc.capacity_aborts) == (4000, 3600, 4500, 400)
    assert glibc.elided_share == 0.9 and glibc.capacity_share == 400 / 4500
    txalloc = figures[row_key("ring", ring_params(1024), 1)].htm["txalloc"]
    assert (txalloc.elided_share, txalloc.capacity_share) == (1.0, 0.0)
    assert figures[row_key("ring", ring_params(512), 1)].placement["glibc"] == CROWDED
    assert not figures[row_key("avl", avl_params(64), 2)].placement  # avl reports no placement


def test_records_of_other_backends_give_no_elision_figures():
    rec = record("ring", ring_params(64), 1, "glibc", 0, 1.0, 10, 0, 0, 0)
    rec["result"]["tm"]["backend"] = "stm"
    assert collect([rec], []) == {}


def test_report_has_the_elision_placement_and_misses_tables(study_dir):
    text = report.render(study_dir).read_text()
    assert "- command: `txalloc study htm`" in text  # the command behind the tables
    assert "### Hardware TM: elided share of sections / capacity aborts per attempt" in text
    assert "| workload | threads | glibc: elided / capacity | txalloc: elided / capacity |" in text
    assert "| ring node_size=1024 | 1 | 90.0% / 8.9% | 100.0% / 0.0% |" in text
    assert "| avl node_size=64 | 2 | 75.0% / 9.1% | 100.0% / 0.0% |" in text
    assert "| ring node_size=512 | 1 | 4 / 32 / 128 / 16 | 64 / 2 / 128 / 17 |" in text
    assert "## L1 data misses per traversal (cachegrind)" in text
    assert "| ring node_size=1024 | 1 | 128.0 | 1.5 |" in text
    assert "| ring node_size=512 | 1 | 3.5 | 0.0 |" in text  # -0.52 + 0.5: below zero by a hair
    assert "`traversals` = 100 and 1100" in text and "/ 1000" in text
    assert "valgrind --cachegrind-out-file=OUT ring" in text
    assert "![sweep-ring](plots/sweep-ring.png)" in text and "![sweep-avl](plots/sweep-avl.png)" in text
    for name in ("sweep-ring.png", "sweep-avl.png", "aborts-t1.png", "aborts-t2.png", "scaling-avl.png"):
        assert (study_dir / "plots" / name).stat().st_size > 0
    assert not (study_dir / "plots" / "scaling-ring.png").exists()  # one thread count: the sweep shows it

    with open(study_dir / "row_figures.csv") as f:
        rows = {(r["label"], r["threads"], r["allocator"]): r for r in csv.DictReader(f)}
    g = rows[("ring node_size=1024", "1", "glibc")]
    assert float(g["elided_share"]) == 0.9 and float(g["l1d_misses"]) == 128.0 and g["misses_per"] == "traversal"
    assert g["l1_sets_used"] == "4.0" and rows[("avl node_size=64", "2", "txalloc")]["l1d_misses"] == ""


def test_sweep_plots_follow_dice_figures_1_and_2(study_dir):
    recs = runner.load_records(study_dir)
    spec = load_spec("htm")
    an = analyze(recs, spec.workloads, ALLOCS)
    figures = collect(recs, runner.load_cachegrind_records(study_dir))
    ring = [r for r in an.rows if r.workload == "ring"]
    avl = [r for r in an.rows if r.workload == "avl"]
    assert plots.sweep_parameter(ring) == "node_size" and plots.sweep_parameter(avl) == "node_size"
    labels = [s.ylabel.split("\n")[0] for s in plots.sweep_series(ring, figures)]
    assert labels == [
        "operations/s, higher is better",
        "capacity aborts,",
        "elided sections,",
        "L1 data misses",
        "L1 sets used",
    ]
    assert [s.ylabel.split("\n")[0] for s in plots.sweep_series(avl, figures)] == labels[:3]
    (study_dir / "plots").mkdir()
    (path,) = [p for p in plots.sweep_plots(an, figures, study_dir / "plots") if p.name == "sweep-avl.png"]
    assert path.stat().st_size > 0


def test_a_spec_without_sweeps_draws_no_sweep_plot():
    rec = record("ring", ring_params(64), 1, "glibc", 0, 1.0, 10, 0, 0, 0)
    an = analyze([rec], load_spec("htm").workloads, ["glibc"])
    assert plots.sweep_parameter(an.rows) is None
