"""Helpers for the harness tests: an executable fake workload and spec files using it."""

import os
import stat
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def fake_program(tmp_path: Path) -> Path:
    """The fake workload as an executable run by this interpreter."""
    prog = tmp_path / "bin" / "fake"
    prog.parent.mkdir()
    prog.write_text(f"#!{sys.executable}\n" + (HERE / "fake_workload.py").read_text())
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return prog


FAKE_ALLOCATORS = """
[allocator.fast]
env = { FAKE_ALLOCATOR = "fast", FAKE_FACTOR = "1" }

[allocator.slow]
env = { FAKE_ALLOCATOR = "slow", FAKE_FACTOR = "2" }

[allocator.liar]
env = { FAKE_ALLOCATOR = "someone-else", FAKE_FACTOR = "1" }

[allocator.ghost]
library = "libghost-allocator-that-does-not-exist.so.9"
package = "libghost9"
"""


def fake_workload_table(program: Path, name: str = "fake", group: str = "alloc") -> str:
    return f"""
[workload.{name}]
program = "{program}"
group = "{group}"
metric = "time_s"
params.value = {{ flag = "--value", type = "float", default = 1.0, scale = true }}
params.mode = {{ flag = "--mode", type = "str", default = "ok", \
                 choices = ["ok", "crash", "fail", "hang", "garbage", "invalid", "tm"] }}
params.sleep = {{ flag = "--sleep", type = "float" }}
"""


@pytest.fixture
def write_spec(tmp_path: Path, fake_program: Path):
    """write_spec(body) -> path of a spec whose registry has the fake workload and the
    fake allocators (fast, slow, liar, ghost) besides the bundled ones."""

    def write(body: str, name: str = "spec.toml") -> Path:
        path = tmp_path / name
        path.write_text(
            body
            + fake_workload_table(fake_program)
            + fake_workload_table(fake_program, "faketm", "tm")
            + FAKE_ALLOCATORS
        )
        return path

    return write


@pytest.fixture
def study_env(tmp_path: Path, monkeypatch):
    """An empty build directory and no TXALLOC_ variables from the caller."""
    build = tmp_path / "build"
    (build / "bench").mkdir(parents=True)
    for k in list(os.environ):
        if k.startswith("TXALLOC_"):
            monkeypatch.delenv(k, raising=False)
    return build
