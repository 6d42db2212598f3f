"""End-to-end studies with the fake workload: outputs, failures, resume, TM columns."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from txalloc import cli, runner
from txalloc.spec import load_spec


def run_study(spec: Path, out: Path, build: Path, *extra: str) -> Path:
    assert cli.main(["study", str(spec), "--out", str(out), "--build-dir", str(build), *extra]) == 0
    (study_dir,) = list(out.iterdir())
    return study_dir


def records(study_dir: Path) -> list[dict]:
    return runner.load_records(study_dir)


def test_small_study_end_to_end(write_spec, study_env, tmp_path):
    spec = write_spec("""
name = "small"
description = "fake study"
allocators = ["fast", "slow", "ghost"]
threads = [1, 2]
repetitions = 3
[[run]]
workload = "fake"
params = { value = 0.5 }
""")
    study_dir = run_study(spec, tmp_path / "out", study_env)
    assert study_dir.name.startswith("small-")
    recs = records(study_dir)
    assert len(recs) == 2 * 2 * 3  # rows x available allocators x repetitions
    assert all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    assert Counter(r["allocator"] for r in recs) == {"fast": 6, "slow": 6}
    by = {(r["allocator"], r["threads"]): r["result"]["results"]["time_s"] for r in recs}
    assert by[("slow", 2)] == 0.5 and by[("fast", 1)] == 0.5

    report = (study_dir / "report.md").read_text()
    assert "| fake | 1 | 0.500 s | **1.00** | 2.00 |" in report
    assert "*geometric mean, 2 threads*" in report and "*2.00*" in report
    assert "ghost" in report and "missing" in report  # the missing peer is named, not fatal
    assert "| fake | fast | slow | 100.0% | 2 | – |" in report  # best/worst table: 2 threads fastest, no tie
    assert "**Bold**: the row's best allocator" in report  # the marks are explained
    assert "± " in report  # confidence intervals shown

    with open(study_dir / "summary.csv") as f:
        summary = list(csv.DictReader(f))
    slow1 = next(r for r in summary if r["allocator"] == "slow" and r["threads"] == "1")
    assert float(slow1["median"]) == 1.0 and float(slow1["ratio_to_best"]) == 2.0 and slow1["n"] == "3"
    with open(study_dir / "results.csv") as f:
        assert len(list(csv.DictReader(f))) == 12
    assert (study_dir / "plots" / "scaling-fake.png").stat().st_size > 1000
    assert (study_dir / "plots" / "ratios-alloc-t1.png").is_file()

    study = json.loads((study_dir / "study.json").read_text())
    meta = study["metadata"]
    for key in ("cpu_model", "cores", "caches", "kernel", "glibc", "txalloc_revision", "options"):
        assert key in meta
    ghost = next(a for a in meta["allocators"] if a["name"] == "ghost")
    assert not ghost["available"] and "libghost9" in ghost["missing_reason"]
    assert study["finished"]


def test_failing_cells_are_recorded_and_study_goes_on(write_spec, study_env, tmp_path):
    spec = write_spec("""
allocators = ["fast", "liar"]
threads = [1]
repetitions = 1
timeout_s = 1.5
[[run]]
workload = "fake"
params = { mode = ["ok", "crash", "fail", "garbage", "invalid", "hang"] }
""")
    t0 = time.monotonic()
    study_dir = run_study(spec, tmp_path / "out", study_env)
    assert time.monotonic() - t0 < 30
    recs = {(r["params"]["mode"], r["allocator"]): r for r in records(study_dir)}
    assert len(recs) == 12
    assert recs[("ok", "fast")]["status"] == "ok"
    assert recs[("ok", "liar")]["status"] == "wrong-allocator"
    assert "served by someone-else" in recs[("ok", "liar")]["error"]
    crash = recs[("crash", "fast")]
    assert crash["status"] == "crashed" and "SIGSEGV" in crash["error"]
    assert "about to crash" in crash["stderr"]
    assert recs[("fail", "fast")]["status"] == "failed" and "self-check failed" in recs[("fail", "fast")]["stderr"]
    assert recs[("garbage", "fast")]["status"] == "bad-output"
    assert recs[("invalid", "fast")]["status"] == "failed"  # exits 1, as real workloads do
    assert recs[("hang", "fast")]["status"] == "timeout"
    report = (study_dir / "report.md").read_text()
    assert "## Failed runs (11)" in report
    assert "about to crash" in report


def test_resume_after_interruption(write_spec, study_env, tmp_path):
    """A study killed mid-way (SIGKILL: no chance to clean up) resumes and runs each
    missing cell once; a line cut short at the kill is run again."""
    spec = write_spec("""
allocators = ["fast", "slow"]
threads = [1, 2]
repetitions = 3
[[run]]
workload = "fake"
params = { value = 0.25, sleep = 0.15 }
""")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(Path(cli.__file__).resolve().parent.parent))
    proc = subprocess.Popen(
        [sys.executable, "-m", "txalloc.cli", "study", str(spec), "--out", str(out), "--build-dir", str(study_env)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    results = None
    while time.monotonic() < deadline:
        found = list(out.glob("*/results.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= 4:
            results = found[0]
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert results is not None, "the study never got going"
    study_dir = results.parent
    before = records(study_dir)
    assert 4 <= len(before) < 12
    with open(results, "a") as f:
        f.write('{"key": "torn')  # what a kill during a write leaves

    assert cli.main(["study", "--resume", str(study_dir)]) == 0
    after = records(study_dir)
    assert len(after) == 12
    assert len({r["key"] for r in after}) == 12  # nothing ran twice
    assert after[: len(before)] == before  # the old records are kept as they were
    assert all(r["status"] == "ok" for r in after)
    report = (study_dir / "report.md").read_text()
    assert "12 of 12 planned" in report


def test_execute_stops_and_resumes_in_process(write_spec, study_env, tmp_path):
    spec = load_spec(
        str(
            write_spec("""
allocators = ["fast", "slow"]
threads = [1]
repetitions = 2
[[run]]
workload = "fake"
params = { value = [1.0, 2.0] }
""")
        )
    )
    plan = runner.make_plan(spec, "normal", study_env)
    study_dir = tmp_path / "s"
    study_dir.mkdir()
    with open(os.devnull, "w") as quiet:
        assert runner.execute(plan, study_dir, stream=quiet, max_cells=3) == 3
        assert runner.execute(plan, study_dir, stream=quiet) == 5
        assert runner.execute(plan, study_dir, stream=quiet) == 0
    assert len(records(study_dir)) == 8


def test_allocator_order_rotates(write_spec, study_env):
    spec = load_spec(
        str(
            write_spec("""
allocators = ["fast", "slow", "liar"]
threads = [1, 2]
repetitions = 3
[[run]]
workload = "fake"
""")
        )
    )
    plan = runner.make_plan(spec, "normal", study_env)
    cells = runner.schedule(plan)
    assert len(cells) == 2 * 3 * 3
    # Within each repetition every row runs under every allocator before the next one.
    assert [c.rep for c in cells] == sorted(c.rep for c in cells)
    firsts = Counter(cells[i].allocator.name for i in range(0, len(cells), 3))
    assert firsts == {"fast": 2, "slow": 2, "liar": 2}


def test_tm_columns_and_abort_plot(write_spec, study_env, tmp_path):
    spec = write_spec("""
allocators = ["fast", "slow"]
threads = [1, 2]
repetitions = 2
[[run]]
workload = "faketm"
params = { mode = "tm" }
""")
    study_dir = run_study(spec, tmp_path / "out", study_env)
    report = (study_dir / "report.md").read_text()
    assert "## Transactional workloads" in report
    # fast: 100 aborts of 1000 attempts, 25 of 100 conflicts false; slow: 200 of 1100, 50 of 200
    assert "| faketm | 1 | 10.0% / 25.0% | 18.2% / 25.0% |" in report
    assert "read-conflict/run" in report
    assert (study_dir / "plots" / "aborts-t1.png").is_file()
    with open(study_dir / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[0]["abort_rate"]) == 0.1


def test_report_rerenders_and_missing_programs_are_notes(write_spec, study_env, tmp_path):
    spec = write_spec("""
allocators = ["fast", "slow", "ghost", "jemalloc"]
threads = [1]
repetitions = 1
[[run]]
workload = "fake"
[[run]]
workload = "threadtest"
""")
    study_dir = run_study(spec, tmp_path / "out", study_env, "--allocators", "slow,fast,ghost")
    report = (study_dir / "report.md").read_text()
    assert "workload threadtest skipped: program not built" in report
    assert "allocator ghost skipped" in report
    assert "jemalloc" not in report  # --allocators restricted the study
    assert "Failed runs" not in report
    (study_dir / "report.md").unlink()
    for p in (study_dir / "plots").iterdir():
        p.unlink()
    assert cli.main(["report", str(study_dir)]) == 0
    assert (study_dir / "report.md").read_text() == report
    assert (study_dir / "plots" / "scaling-fake.png").is_file()


def test_rows_with_flags_unknown_to_the_program_are_skipped(write_spec, study_env, tmp_path):
    spec = write_spec("""
allocators = ["fast"]
threads = [1]
repetitions = 1
[[run]]
workload = "fake"
[[run]]
workload = "odd"
[workload.odd]
program = "../../bin/fake"
params.colour = { flag = "--colour", default = 3 }
""")
    # a relative program is looked up under <build>/bench
    study_dir = run_study(spec, tmp_path / "out", study_env)
    report = (study_dir / "report.md").read_text()
    assert "--colour" in report and "does not mention" in report
    assert {r["workload"] for r in records(study_dir)} == {"fake"}


def test_cli_errors_name_the_problem(write_spec, study_env, tmp_path, capsys):
    spec = write_spec('allocators = ["fast"]\n[[run]]\nworkload = "fake"\nparams = { value = "x" }\n')
    assert cli.main(["study", str(spec), "--out", str(tmp_path / "o"), "--build-dir", str(study_env)]) == 2
    err = capsys.readouterr().err
    assert "bad spec" in err and "run[0].params.value" in err and "expected a number" in err
    ok = write_spec('allocators = ["fast"]\n[[run]]\nworkload = "fake"\n', "ok.toml")
    assert cli.main(["study", str(ok), "--allocators", "fast,tcmaloc", "--build-dir", str(study_env)]) == 2
    assert "unknown allocator 'tcmaloc'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_parameters_can_travel_in_the_environment(write_spec, study_env, tmp_path):
    spec = write_spec("""
allocators = ["fast"]
threads = [1]
repetitions = 1
[[run]]
workload = "knobbed"
params = { knob = ["left", "right"] }
[workload.knobbed]
program = "../../bin/fake"
params.knob = { env = "FAKE_KNOB", type = "str" }
""")
    study_dir = run_study(spec, tmp_path / "out", study_env)
    recs = records(study_dir)
    assert sorted(r["result"]["params"]["knob"] for r in recs) == ["left", "right"]
    assert all("FAKE_KNOB" not in " ".join(r["argv"]) for r in recs)


def test_only_if_missing_stands_in_for_an_unbuilt_workload(write_spec, study_env, fake_program):
    body = """
allocators = ["fast"]
threads = [1]
[[run]]
workload = "wanted"
[[run]]
workload = "fake"
only_if_missing = "wanted"
[workload.wanted]
program = "PROGRAM"
"""
    spec = load_spec(str(write_spec(body.replace("PROGRAM", "/nonexistent/wanted"))))
    plan = runner.make_plan(spec, "normal", study_env)
    assert [r.workload for r in plan.rows] == ["fake"]
    assert "workload fake runs in place of wanted, which is not built" in plan.notes
    spec = load_spec(str(write_spec(body.replace("PROGRAM", str(fake_program)), "other.toml")))
    plan = runner.make_plan(spec, "normal", study_env)
    assert [r.workload for r in plan.rows] == ["wanted"]


def test_progress_in_a_log_is_throttled_and_has_an_eta():
    import io

    from txalloc.progress import Progress, format_duration

    out = io.StringIO()
    p = Progress(100, 0, out)
    for i in range(100):
        p.step(f"cell {i}", failed=(i == 50))
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # the first, the failure, the end
    assert "100/100 100%" in lines[-1] and "failed 1" in lines[-1] and "ETA 0:00" in lines[-1]
    assert format_duration(3725) == "1:02:05" and format_duration(None) == "--:--"


def test_dry_run_peers_and_specs_commands(write_spec, study_env, tmp_path, capsys):
    spec = write_spec(
        'allocators = ["fast", "slow"]\nthreads = [1, 2]\n[[run]]\nworkload = "fake"\nparams = { value = [1.0, 3.0] }\n'
    )
    assert (
        cli.main(
            ["study", str(spec), "--dry-run", "--quick", "--build-dir", str(study_env), "--out", str(tmp_path / "o")]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "mode quick: 4 rows, 2 allocators, 16 runs" in out
    assert "--value 0.75" in out and "--threads 2" in out
    assert not (tmp_path / "o").exists()  # nothing written
    assert cli.main(["peers", "--build-dir", str(study_env)]) == 0
    out = capsys.readouterr().out
    assert "glibc" in out and "txalloc    missing" in out
    assert cli.main(["specs"]) == 0
    assert "default" in capsys.readouterr().out
