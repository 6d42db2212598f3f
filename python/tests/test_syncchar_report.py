"""The study's Syncchar runs and the report's Syncchar section (syncchar_study.py,
report_syncchar.py), on a fake TM workload that "records" hand-built traces whose I_n, D_n
and predicted speed-ups are known."""

from __future__ import annotations

import gzip
import json
import stat
import sys
from pathlib import Path

import pytest
from syncchar_traces import build_bytes

from txalloc import cli, runner, syncchar, syncchar_study
from txalloc.spec import load_spec

# The fake TM workload: under --tm glock it copies $FAKE_TRACES/<structure>.trace to the
# recorder's file when TXALLOC_SYNCCHAR names one, and reports 1000 ops/s (a recorded run
# reports 1, so that a measured speed-up taken from it would show); under the STM it reports
# 400 ops/s at 1 thread and 1500 at 2.
FAKE_SYNC = """
import json, os, shutil, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
if "--help" in sys.argv:
    print("usage: fakesync --threads N --structure S --duration D --tm T")
    sys.exit(0)
threads = int(args["--threads"])
tm = args.get("--tm", "stm")
trace = os.environ.get("TXALLOC_SYNCCHAR")
if tm == "glock":
    if trace:
        assert os.environ["TXALLOC_SYNCCHAR_SAMPLE"] == "10"
        shutil.copyfile(os.path.join(os.environ["FAKE_TRACES"], args["--structure"] + ".trace"), trace)
    rate = 1.0 if trace else 1000.0
else:
    assert not trace, "a timed cell must not record"
    rate = {1: 400.0, 2: 1500.0}[threads]
print(json.dumps({
    "workload": "fakesync",
    "threads": threads,
    "params": {"duration": float(args["--duration"]), "tm": tm},
    "allocator": {"name": os.environ.get("FAKE_ALLOCATOR", "glibc")},
    "results": {"ops_per_s": rate},
    "valid": True,
}))
"""

WORKLOAD = """
[workload.fakesync]
program = "{program}"
group = "tm"
metric = "ops_per_s"
better = "higher"
params.structure = {{ flag = "--structure", type = "str" }}
params.duration = {{ flag = "--duration", type = "float", default = 1.0, scale = true }}
params.tm = {{ flag = "--tm", type = "str", choices = ["stm", "glock"] }}
"""


@pytest.fixture
def sync_spec(tmp_path: Path, write_spec):
    """A spec of the fake TM workload over two structures, whose traces are: `disjoint`,
    two threads that never share a unit (I_n = n, D_n = 0); `conflict`, every section writes
    the same unit (I_2 = 0, D_2 = 2). Both: 64 rounds a thread, each section held 100 ns of
    every 10 us."""
    prog = tmp_path / "bin" / "fakesync"
    prog.parent.mkdir(exist_ok=True)
    prog.write_text(f"#!{sys.executable}\n{FAKE_SYNC}")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "disjoint.trace").write_bytes(build_bytes(2, 64, lambda t, k: ([], [4096 * (t + 1)])))
    (traces / "conflict.trace").write_bytes(build_bytes(2, 64, lambda t, k: ([8], [64])))

    def spec(syncchar: bool = True, params: str = 'structure = ["disjoint", "conflict"], duration = 1.0') -> Path:
        return write_spec(
            f"""
allocators = ["fast"]
threads = [1, 2]
repetitions = 1
env = {{ FAKE_TRACES = "{traces}" }}
{"[syncchar]" if syncchar else ""}
{"sample = 10" if syncchar else ""}
[[run]]
workload = "fakesync"
params = {{ {params} }}
"""
            + WORKLOAD.format(program=prog)
        )

    return spec


def run_study(spec: Path, out: Path, build: Path) -> Path:
    assert cli.main(["study", str(spec), "--out", str(out), "--build-dir", str(build)]) == 0
    (study_dir,) = list(out.iterdir())
    return study_dir


def table_rows(report: str) -> list[list[str]]:
    part = report.split("## Syncchar", 1)[1].split("\n\n", 2)[2]
    lines = [line for line in part.split("\n\n", 1)[0].splitlines() if line.startswith("| ")][1:]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def test_section_gives_known_independence_density_and_speedups(sync_spec, study_env, tmp_path):
    study_dir = run_study(sync_spec(), tmp_path / "out", study_env)
    (disjoint, conflict) = runner.load_records(study_dir, syncchar_study.SYNCCHAR_FILE)
    assert disjoint["status"] == "ok", disjoint.get("error")
    # the row at its highest thread count, under the lock, cut to the spec's duration
    assert disjoint["threads"] == 2 and disjoint["lock_metric"] == 1000.0
    argv = " ".join(disjoint["argv"])
    assert "--tm glock" in argv and "--duration 0.2" in argv and "--structure disjoint" in argv
    assert disjoint["env"]["TXALLOC_SYNCCHAR_SAMPLE"] == "10"
    assert (study_dir / disjoint["trace"]).read_bytes()[:2] == syncchar.GZIP_MAGIC

    report = (study_dir / "report.md").read_text()
    assert "## Syncchar: data independence" in report
    # predicted: lock 2 blocks per 10 us; TM n / (100 ns * max(D_n, 1) + 9900 ns).
    # measured: STM 400 and 1500 ops/s over the plain lock run's 1000.
    assert table_rows(report) == [
        ["fakesync structure=disjoint", "1", "128", "1.00", "0.00", "0.50", "0.40", "25%"],
        ["fakesync structure=disjoint", "2", "64", "2.00", "0.00", "1.00", "1.50", "33%"],
        ["fakesync structure=conflict", "1", "128", "1.00", "0.00", "0.50", "0.40", "25%"],
        ["fakesync structure=conflict", "2", "64", "0.00", "2.00", "0.99", "1.50", "34%"],
    ]
    assert "Geometric-mean error at the recorded thread count: 34% over 2 workloads" in report
    # the command behind the table: the recorded run and its analysis
    assert "TXALLOC_SYNCCHAR_SAMPLE=10" in report and "--tm glock" in report
    assert f"txalloc syncchar {study_dir / disjoint['trace']} --threads 1,2" in report


def test_report_rerenders_from_the_traces_and_says_what_is_missing(sync_spec, study_env, tmp_path):
    study_dir = run_study(sync_spec(), tmp_path / "out", study_env)
    first = (study_dir / "report.md").read_text()
    assert cli.main(["report", str(study_dir)]) == 0
    assert (study_dir / "report.md").read_text() == first
    # a trace gone: its row is named with the reason, the other stays
    (disjoint, conflict) = runner.load_records(study_dir, syncchar_study.SYNCCHAR_FILE)
    (study_dir / disjoint["trace"]).unlink()
    assert cli.main(["report", str(study_dir)]) == 0
    report = (study_dir / "report.md").read_text()
    assert [r[0] for r in table_rows(report)] == ["fakesync structure=conflict"] * 2
    assert "fakesync structure=disjoint t=2: syncchar: cannot read" in report
    # every trace gone: one line instead of the section
    (study_dir / conflict["trace"]).unlink()
    assert cli.main(["report", str(study_dir)]) == 0
    report = (study_dir / "report.md").read_text()
    assert "## Syncchar" not in report
    assert "Syncchar: no I_n/D_n section: no trace could be analysed (" in report
    # no run at all (a study stopped before them)
    (study_dir / syncchar_study.SYNCCHAR_FILE).unlink()
    assert cli.main(["report", str(study_dir)]) == 0
    report = (study_dir / "report.md").read_text()
    lines = [line for line in report.splitlines() if "Syncchar" in line]
    assert lines == [
        "Syncchar: no I_n/D_n section: no Syncchar run was made (the study stopped before them; "
        "`txalloc study --resume` makes them)."
    ]


def test_no_section_without_a_recordable_row_or_without_the_request(sync_spec, write_spec, study_env, tmp_path):
    # rows that run the lock themselves are not predicted: nothing to record
    study_dir = run_study(sync_spec(params='structure = "disjoint", tm = "glock"'), tmp_path / "a", study_env)
    assert not (study_dir / syncchar_study.SYNCCHAR_FILE).exists()
    report = (study_dir / "report.md").read_text()
    assert "Syncchar: no I_n/D_n section: no TM row of this study runs a TM on txalloc's runtime" in report
    # a TM workload that does not run on txalloc's runtime (no `tm` parameter)
    spec = write_spec('allocators = ["fast"]\n[syncchar]\n[[run]]\nworkload = "faketm"\nparams = { mode = "tm" }\n')
    report = (run_study(spec, tmp_path / "b", study_env) / "report.md").read_text()
    assert "Syncchar: no I_n/D_n section: no TM row of this study runs a TM on txalloc's runtime" in report
    # a spec that asks for no Syncchar runs: no runs, no word of it
    study_dir = run_study(sync_spec(syncchar=False), tmp_path / "c", study_env)
    assert not (study_dir / syncchar_study.SYNCCHAR_FILE).exists()
    assert "Syncchar" not in (study_dir / "report.md").read_text()


def test_the_default_study_records_at_a_low_rate():
    spec = load_spec("default")
    assert spec.syncchar is not None and spec.syncchar.sample == 10 and spec.syncchar.duration == 0.2


@pytest.mark.parametrize(
    "table, message",
    [
        ("syncchar = 3", "syncchar: expected a table"),
        ("[syncchar]\nrate = 3", "syncchar.rate: unknown key 'rate'"),
        ("[syncchar]\nsample = 101", "syncchar.sample: a percentage, 1 to 100"),
        ("[syncchar]\nduration = 0", "syncchar.duration: must be > 0"),
    ],
)
def test_bad_syncchar_tables_are_spec_errors(write_spec, study_env, tmp_path, capsys, table, message):
    spec = write_spec(f'{table}\n[[run]]\nworkload = "fake"\n')
    assert cli.main(["study", str(spec), "--out", str(tmp_path / "o"), "--build-dir", str(study_env)]) == 2
    assert message in capsys.readouterr().err


def test_a_gzipped_trace_reads_as_the_plain_one(tmp_path):
    raw = build_bytes(2, 8, lambda t, k: ([8], [64 * t]))
    (tmp_path / "a.trace").write_bytes(raw)
    (tmp_path / "a.trace.gz").write_bytes(gzip.compress(raw))
    plain = syncchar.analyse(syncchar.read_trace(tmp_path / "a.trace"), threads=[2], symbolize=False)
    packed = syncchar.analyse(syncchar.read_trace(tmp_path / "a.trace.gz"), threads=[2], symbolize=False)
    assert json.dumps(plain["overall"]) == json.dumps(packed["overall"])
    (tmp_path / "cut.trace.gz").write_bytes(gzip.compress(raw)[:40])
    with pytest.raises(syncchar.UserError, match="cannot read"):
        syncchar.read_trace(tmp_path / "cut.trace.gz")


def test_overview_caps_the_sections_it_analyses(tmp_path):
    raw = build_bytes(2, 500, lambda t, k: ([], [4096 * (t + 1)]))
    (tmp_path / "t.trace").write_bytes(raw)
    trace = syncchar.read_trace(tmp_path / "t.trace")
    full = syncchar.overview(trace, [1, 2])
    capped = syncchar.overview(trace, [1, 2], max_sections=200)
    assert full["sections_analysed"] == 1000 and full["analysis_sample_percent"] == 100.0
    assert 150 <= capped["sections_analysed"] <= 250 and capped["analysis_sample_percent"] == 20.0
    assert capped["overall"]["2"]["I_n"] == full["overall"]["2"]["I_n"] == 2.0
