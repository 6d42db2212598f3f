"""What a user meets when an argument or a file is wrong: one line on stderr,
`txalloc: error: ...`, exit status 2, no traceback and nothing half-written."""

import json
import os
import pathlib
import subprocess
import sys
from pathlib import Path

import pytest

from txalloc import cli

SPEC = """
allocators = ["fast"]
threads = [1]
repetitions = 1
[[run]]
workload = "fake"
params = { value = 0.01 }
"""


def error_line(capsys) -> str:
    """The one line the command printed on stderr, checked to be an error line."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("txalloc: error: "), lines[0]
    return lines[0]


def study(spec: Path, out: Path, build: Path) -> int:
    return cli.main(["study", str(spec), "--out", str(out), "--build-dir", str(build)])


@pytest.fixture
def spec(write_spec) -> Path:
    return write_spec(SPEC)


@pytest.fixture
def finished_study(spec, study_env, tmp_path, capsys) -> Path:
    assert study(spec, tmp_path / "out", study_env) == 0
    capsys.readouterr()
    (study_dir,) = (tmp_path / "out").iterdir()
    return study_dir


@pytest.mark.parametrize("below", ["", "sub"], ids=["the file", "below the file"])
def test_out_naming_a_regular_file(spec, study_env, tmp_path, capsys, below):
    blocker = tmp_path / "results.txt"
    blocker.write_text("not a directory")
    assert study(spec, blocker / below, study_env) == 2
    line = error_line(capsys)
    assert "--out" in line and f"{blocker} is not a directory" in line
    assert blocker.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere; test_out_refused_by_the_system covers it")
def test_out_in_a_directory_without_write_permission(spec, study_env, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert study(spec, locked, study_env) == 2
    finally:
        locked.chmod(0o700)
    assert "Permission denied" in error_line(capsys)
    assert list(locked.iterdir()) == []


def test_out_refused_by_the_system(spec, study_env, tmp_path, capsys, monkeypatch):
    """The same refusal as a read-only directory, made to happen for root too."""
    out = tmp_path / "out"
    real_mkdir = pathlib.Path.mkdir

    def refuse(self, *args, **kwargs):
        if self == out or out in self.parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", refuse)
    assert study(spec, out, study_env) == 2
    line = error_line(capsys)
    assert f"--out {out}" in line and "Permission denied" in line
    assert not out.exists()


DAMAGE = {
    "cut short": '{"spec": {"name": ',
    "not text": b"\xff\xfe\x00garbage",
    "not an object": "[1, 2]",
    "fields missing": json.dumps({"spec": {}, "mode": "normal"}),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
@pytest.mark.parametrize("command", ["resume", "report"])
def test_damaged_study_record(finished_study, capsys, damage, command):
    record = finished_study / "study.json"
    if isinstance(damage, bytes):
        record.write_bytes(damage)
    else:
        record.write_text(damage)
    report_before = (finished_study / "report.md").read_text()
    argv = ["study", "--resume", str(finished_study)] if command == "resume" else ["report", str(finished_study)]
    assert cli.main(argv) == 2
    line = error_line(capsys)
    assert f"{record}: damaged study record" in line
    assert (finished_study / "report.md").read_text() == report_before


def test_build_dir_that_does_not_exist(spec, tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    assert study(spec, tmp_path / "out", missing) == 2
    line = error_line(capsys)
    assert f"build directory {missing} does not exist" in line
    assert not (tmp_path / "out").exists()


def test_resume_whose_build_dir_is_gone(finished_study, study_env, capsys):
    study_env.rename(study_env.with_name("moved"))
    assert cli.main(["study", "--resume", str(finished_study)]) == 2
    assert f"build directory {study_env} does not exist" in error_line(capsys)


def test_nothing_to_run_is_an_error(write_spec, study_env, tmp_path, capsys):
    only_missing = write_spec(SPEC.replace('["fast"]', '["ghost"]'))
    assert study(only_missing, tmp_path / "out", study_env) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the note that says why ghost is missing
    assert last == "txalloc: error: nothing to run: none of the study's allocators is available"
    assert not (tmp_path / "out").exists()


def test_the_command_prints_no_traceback(finished_study):
    (finished_study / "study.json").write_text("{")
    env = dict(os.environ, PYTHONPATH=str(Path(cli.__file__).resolve().parent.parent))
    proc = subprocess.run(
        [sys.executable, "-m", "txalloc.cli", "report", str(finished_study)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"txalloc: error: {finished_study / 'study.json'}: damaged study record: not JSON (")
