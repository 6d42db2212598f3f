"""Cachegrind measurements: the output parser on a fixed sample, the per-unit difference,
the spec's `cachegrind` table, and a study that runs them through a stand-in valgrind."""

import json
import stat
import sys
from pathlib import Path

import pytest

from txalloc import cachegrind, cli, runner
from txalloc.cachegrind import SettingsError, parse_measurement

# The head and tail of a real cachegrind 3.19 output file (ring, 1000 traversals).
SAMPLE = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: D1 cache:         32768 B, 64 B, 8-way associative
desc: LL cache:         8388608 B, 64 B, 16-way associative
cmd: build/bench/ring --node-size 1024 --traversals 1000
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=???
fn=0x0000000000001ab0
0 3 1 1 0 0 0 1 0 0
fl=/work/bench/tm/ring.c
fn=traverse
104 2 0 0 0 0 0 0 0 0
summary: 1350798 2204 1968 558949 6863 2504 56098 2986 2656
"""


def test_parse_counts_reads_the_summary_by_event_name():
    counts = cachegrind.parse_counts(SAMPLE)
    assert counts == {
        "Ir": 1350798,
        "I1mr": 2204,
        "ILmr": 1968,
        "Dr": 558949,
        "D1mr": 6863,
        "DLmr": 2504,
        "Dw": 56098,
        "D1mw": 2986,
        "DLmw": 2656,
    }
    assert cachegrind.d1_misses(counts) == 6863 + 2986


def test_parse_counts_rejects_what_is_not_cachegrind_output():
    with pytest.raises(ValueError, match="no 'events:'"):
        cachegrind.parse_counts("summary: 1 2 3\n")
    with pytest.raises(ValueError, match="2 events but 3"):
        cachegrind.parse_counts("events: Ir D1mr\nsummary: 1 2 3\n")
    with pytest.raises(ValueError, match="not an integer"):
        cachegrind.parse_counts("events: Ir D1mr\nsummary: 1 x\n")


def test_per_unit_is_the_difference_over_the_units():
    low = {"Ir": 1000, "D1mr": 300, "D1mw": 100}
    high = {"Ir": 6000, "D1mr": 1300, "D1mw": 600, "Bc": 5}
    per = cachegrind.per_unit(low, high, 1000)
    assert per == {"Ir": 5.0, "D1mr": 1.0, "D1mw": 0.5}  # only events both runs counted
    assert cachegrind.d1_misses(per) == 1.5
    assert cachegrind.d1_misses({"Ir": 1.0}) is None  # no cache simulation
    with pytest.raises(ValueError):
        cachegrind.per_unit(low, high, 0)


def test_measurement_table_and_the_runs_it_makes():
    m = parse_measurement({"per": "traversals", "values": [100, 1100], "omit": ["duration"], "unit": "traversal"})
    assert (m.per, m.values, m.omit, m.unit) == ("traversals", (100, 1100), ("duration",), "traversal")
    assert (m.d1, m.i1, m.ll) == ("32768,8,64", "32768,8,64", "8388608,16,64")
    row = {"node_size": 1024, "duration": 0.25, "read_only": False}
    assert m.run_params(row, 100) == {"node_size": 1024, "read_only": False, "traversals": 100}
    argv = cachegrind.command("/usr/bin/valgrind", m, "/tmp/out", ["ring", "--traversals", "100"])
    assert argv[:7] == [
        "/usr/bin/valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--D1=32768,8,64",
        "--I1=32768,8,64",
        "--LL=8388608,16,64",
        "--cachegrind-out-file=/tmp/out",
    ]
    assert argv[7:] == ["ring", "--traversals", "100"]
    assert parse_measurement({"per": "ops", "values": [1, 2]}).unit == "ops"  # unit defaults to per


@pytest.mark.parametrize(
    "table, key, message",
    [
        ({"values": [1, 2]}, "per", "missing"),
        ({"per": "n", "values": [5]}, "values", "two positive integers"),
        ({"per": "n", "values": [9, 2]}, "values", "the smaller first"),
        ({"per": "n", "values": [1, 2], "colour": 1}, "colour", "unknown key"),
        ({"per": "n", "values": [1, 2], "d1": "32768,8"}, "d1", "size,ways,line"),
        ({"per": "n", "values": [1, 2], "d1": "1000,8,64"}, "d1", "whole number of sets"),
        ({"per": "n", "values": [1, 2], "timeout_s": 0}, "timeout_s", "positive"),
    ],
)
def test_bad_measurement_tables_name_the_key(table, key, message):
    with pytest.raises(SettingsError, match=message) as e:
        parse_measurement(table)
    assert e.value.key == key


# A stand-in valgrind: runs the program and writes a cachegrind file whose D1 misses grow
# by 3 + 2 = 5 per unit of --value, times $FAKE_FACTOR, over a set-up of 1500.
FAKE_VALGRIND = """
import os, subprocess, sys
args = sys.argv[1:]
at = next(i for i, a in enumerate(args) if a.startswith("--cachegrind-out-file="))
out, program = args[at].split("=", 1)[1], args[at + 1 :]
n = int(float(program[program.index("--value") + 1]))
f = float(os.environ.get("FAKE_FACTOR", "1"))
code = subprocess.call(program)
with open(out, "w") as o:
    o.write("events: Ir D1mr D1mw\\n")
    o.write(f"summary: {10 * n} {int(1000 + 3 * n * f)} {int(500 + 2 * n * f)}\\n")
sys.exit(code)
"""

CG_WORKLOAD = """
[workload.fakecg]
program = "{program}"
group = "tm"
metric = "time_s"
params.count = {{ flag = "--value", type = "int" }}
params.mode = {{ flag = "--mode", type = "str", default = "ok" }}
params.duration = {{ flag = "--sleep", type = "float", default = 0.0 }}
"""


@pytest.fixture
def fake_valgrind(tmp_path: Path, monkeypatch) -> Path:
    bindir = tmp_path / "vgbin"
    bindir.mkdir()
    prog = bindir / "valgrind"
    prog.write_text(f"#!{sys.executable}\n" + FAKE_VALGRIND)
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    return prog


def cg_spec(write_spec, fake_program: Path) -> Path:
    return write_spec(
        """
name = "cg"
allocators = ["fast", "slow"]
repetitions = 2
[[run]]
workload = "fakecg"
params = { duration = 0.0 }
cachegrind = { per = "count", unit = "step", values = [100, 300], omit = ["duration"] }
"""
        + CG_WORKLOAD.format(program=fake_program)
    )


def test_study_counts_misses_per_unit_and_reports_them(write_spec, fake_program, fake_valgrind, study_env, tmp_path):
    spec = cg_spec(write_spec, fake_program)
    assert cli.main(["study", str(spec), "--out", str(tmp_path / "out"), "--build-dir", str(study_env)]) == 0
    (study_dir,) = list((tmp_path / "out").iterdir())
    measured = {r["allocator"]: r for r in runner.load_cachegrind_records(study_dir)}
    assert set(measured) == {"fast", "slow"}
    fast = measured["fast"]
    assert fast["status"] == "ok" and fast["per"] == "count" and fast["unit"] == "step"
    assert [r["params"] for r in fast["runs"]] == [{"count": c, "mode": "ok"} for c in (100, 300)]  # no duration
    assert fast["runs"][0]["argv"][0] == str(fake_valgrind)
    assert fast["per_unit"] == {"Ir": 10.0, "D1mr": 3.0, "D1mw": 2.0}
    assert cachegrind.d1_misses(measured["slow"]["per_unit"]) == 10.0

    report = (study_dir / "report.md").read_text()
    assert "## L1 data misses per step (cachegrind)" in report
    assert "| fakecg | 1 | 5.0 | 10.0 |" in report
    assert "2 of 2 measurements ok" in report
    assert "--cachegrind-out-file=OUT" in report  # the command behind the table, as one would type it
    assert (study_dir / "plots" / "ratios-tm-t1.png").is_file()

    # resuming runs no measurement twice
    before = (study_dir / runner.CACHEGRIND_FILE).read_text()
    assert cli.main(["study", "--resume", str(study_dir)]) == 0
    assert (study_dir / runner.CACHEGRIND_FILE).read_text() == before


def test_a_failed_measurement_is_recorded_with_its_run(write_spec, fake_program, fake_valgrind, study_env, tmp_path):
    spec = write_spec(
        """
allocators = ["fast"]
repetitions = 1
[[run]]
workload = "fakecg"
cachegrind = { per = "count", values = [1, 2], params = { mode = "fail" } }
"""
        + CG_WORKLOAD.format(program=fake_program)
    )
    assert cli.main(["study", str(spec), "--out", str(tmp_path / "out"), "--build-dir", str(study_env)]) == 0
    (study_dir,) = list((tmp_path / "out").iterdir())
    (rec,) = runner.load_cachegrind_records(study_dir)
    assert rec["status"] == "failed" and rec["error"] == "count=1: exit status 1"
    assert len(rec["runs"]) == 1 and "per_unit" not in rec
    assert "0 of 1 measurements ok" in (study_dir / "report.md").read_text()


def test_without_valgrind_the_study_says_so_and_runs_the_rest(
    write_spec, fake_program, study_env, tmp_path, monkeypatch
):
    monkeypatch.setattr(cachegrind, "find_valgrind", lambda: None)
    spec = cg_spec(write_spec, fake_program)
    assert cli.main(["study", str(spec), "--out", str(tmp_path / "out"), "--build-dir", str(study_env)]) == 0
    (study_dir,) = list((tmp_path / "out").iterdir())
    assert len(runner.load_records(study_dir)) == 4 and not runner.load_cachegrind_records(study_dir)
    report = (study_dir / "report.md").read_text()
    assert "valgrind not found: the cachegrind measurements of 1 rows are skipped" in report
    assert "## L1 data misses per step (cachegrind)\n\nNot measured" in report
    assert json.loads((study_dir / "study.json").read_text())["notes"]
