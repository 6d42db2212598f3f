"""The study's Placement section: which runs it makes, how they are cut short, what the
report shows, and that resuming does not repeat them."""

import json
import shutil

import pytest

from txalloc import cli, placement, report_placement, runner
from txalloc.paths import default_build_dir
from txalloc.spec import load_registries, load_spec

TRACER = default_build_dir() / placement.TRACER

SPEC = """
allocators = ["fast", "slow"]
threads = [1, 2]
repetitions = 1
[[run]]
workload = "fake"
params = { value = 0.01 }
[[run]]
workload = "faketm"
params = { value = [0.01, 0.02], mode = "tm" }
"""


def test_short_params_cut_only_the_work_knobs():
    workloads, _ = load_registries()
    intset, machias = workloads["intset"], workloads["tx-machias"]
    short = report_placement._short_params(intset, {"duration": 0.4, "update": 60, "structure": "list"})
    assert short == {"duration": 0.2, "update": 60, "structure": "list"}
    assert report_placement._short_params(intset, {"duration": 0.1})["duration"] == 0.1
    assert report_placement._short_params(machias, {"ops": 200000})["ops"] == 50000


def test_one_row_per_tm_workload_at_the_most_threads(write_spec, study_env):
    spec = load_spec(str(write_spec(SPEC)))
    plan = runner.make_plan(spec, "normal", study_env)
    rows = report_placement.placement_rows(plan)
    assert [(r.workload, r.threads, r.params_dict["value"]) for r in rows] == [("faketm", 2, 0.01)]


def test_section_from_records(tmp_path):
    trace = tmp_path / "t"
    placement.write_trace(trace, [(0, 0x1000, 16, 1, 1), (1, 0x1010, 16, 2, 1)])
    result = placement.analyse(placement.read_trace(trace), placement.Geometry())
    ok = {
        "key": "k1",
        "status": "ok",
        "row": "intset structure=list t=2",
        "allocator": "glibc",
        "argv": ["build/bench/intset", "--threads", "2"],
        "env": {"TXALLOC_TXMEM": "wrap"},
        "result": result,
    }
    bad = {**ok, "key": "k2", "status": "failed", "allocator": "mimalloc", "error": "exit status 1"}
    del bad["result"]
    (tmp_path / report_placement.PLACEMENT_FILE).write_text(json.dumps(ok) + "\n" + json.dumps(bad) + "\n{cut")
    text = report_placement.section(tmp_path)
    assert "\n## Placement\n" in text
    assert "| intset structure=list t=2 | glibc | 2 | 1/64 | 64.00 | 100.0% of 2 | 100.0% | 1 (100.0%) |" in text
    assert "`TXALLOC_TXMEM=wrap txalloc placement --allocator glibc -- build/bench/intset --threads 2`" in text
    assert "intset structure=list t=2 under mimalloc: exit status 1" in text


def test_no_section_without_placement_runs(tmp_path):
    assert report_placement.section(tmp_path) == ""


@pytest.mark.skipif(not TRACER.is_file(), reason=f"{TRACER} not built")
def test_study_makes_placement_runs_once(write_spec, study_env, tmp_path):
    shutil.copy(TRACER, study_env / placement.TRACER)
    spec = write_spec(SPEC)
    out = tmp_path / "out"
    assert cli.main(["study", str(spec), "--out", str(out), "--build-dir", str(study_env)]) == 0
    (study_dir,) = out.iterdir()
    recs = report_placement.load_records(study_dir)
    assert sorted(r["allocator"] for r in recs) == ["fast", "slow"]
    assert all(r["status"] == "ok" and r["workload"] == "faketm" and r["threads"] == 2 for r in recs), recs
    # the fake workload is a Python program: the interpreter's own objects are traced
    assert all(r["result"]["point"]["live_objects"] > 100 for r in recs)
    report = (study_dir / "report.md").read_text()
    assert "\n## Placement\n" in report and "txalloc placement --allocator fast --" in report
    plan = runner.make_plan(load_spec(str(spec)), "normal", study_env)
    assert report_placement.run_all(plan, study_dir, study_env) == 0  # resuming repeats none


def test_study_without_placement(write_spec, study_env, tmp_path):
    (study_env / placement.TRACER).write_bytes(b"")  # would fail if it were preloaded
    out = tmp_path / "out"
    assert (
        cli.main(["study", str(write_spec(SPEC)), "--out", str(out), "--build-dir", str(study_env), "--no-placement"])
        == 0
    )
    (study_dir,) = out.iterdir()
    assert not (study_dir / report_placement.PLACEMENT_FILE).exists()
    assert "## Placement" not in (study_dir / "report.md").read_text()


def test_missing_tracer_skips_placement(write_spec, study_env, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["study", str(write_spec(SPEC)), "--out", str(out), "--build-dir", str(study_env)]) == 0
    assert "placement runs skipped" in capsys.readouterr().err
    (study_dir,) = out.iterdir()
    assert "## Placement" not in (study_dir / "report.md").read_text()
