"""The placement tracer and analyser end to end, on tests/placement/placement_target.c:
page-aligned objects whose classes, sets and threads are known (skipped when the build
lacks the tracer or the program)."""

import json
import os
from pathlib import Path

import pytest

from txalloc import cli, placement
from txalloc.paths import default_build_dir

BUILD = default_build_dir()
TARGET = BUILD / "tests" / "placement_target"
TRACER = BUILD / placement.TRACER

pytestmark = pytest.mark.skipif(not (TARGET.is_file() and TRACER.is_file()), reason=f"{TARGET} or {TRACER} not built")


def run(tmp_path: Path, *options: str) -> dict:
    out = tmp_path / "r.json"
    assert cli.main(["placement", "--build-dir", str(BUILD), "--json", str(out), *options, "--", str(TARGET)]) == 0
    return json.loads(out.read_text())


def classes(result: dict) -> dict:
    return {c["class"]: c for c in result["l1"]["classes"]}


@pytest.mark.parametrize("allocator", ["glibc", "txalloc"])
def test_known_placement_at_peak_and_exit(tmp_path, allocator):
    if allocator == "txalloc" and not (BUILD / "libtxalloc.so").is_file():
        pytest.skip("libtxalloc.so not built")
    peak = run(tmp_path, "--allocator", allocator)
    assert peak["allocator"] == allocator and peak["returncode"] == 0
    c = classes(peak)
    # 40 objects of 1500 B from the main thread, 24 of 3000 B (one reallocated to 3100 B)
    # from the second: all page-aligned, so all on set 0
    assert c["1025-2048"]["objects"] == 40 and c["1025-2048"]["histogram"][0] == 40
    assert c["2049-4096"]["objects"] == 24 and c["2049-4096"]["histogram"][0] == 24
    assert c["2049-4096"]["sets_used"] == 1 and c["2049-4096"]["max_over_mean"] == 64.0
    assert peak["point"]["at"] == "peak" and peak["threads"] >= 2
    end = classes(run(tmp_path, "--allocator", allocator, "--at", "exit"))
    assert end["1025-2048"]["objects"] == 20 and end["2049-4096"]["objects"] == 24


def test_geometry_reaches_the_histogram(tmp_path):
    # 4096-byte alignment over 128 sets x 64 B (8 KiB): sets 0 and 64 only
    c = classes(run(tmp_path, "--sets", "128"))["1025-2048"]
    assert len(c["histogram"]) == 128 and c["histogram"][0] + c["histogram"][64] == 40
    assert c["sets_used"] <= 2


def test_trace_per_process_and_each_thread_recorded(tmp_path):
    done, trace = placement.run_traced([str(TARGET)], dict(os.environ), TRACER, tmp_path)
    assert done.returncode == 0 and trace.is_file() and trace.suffix[1:].isdigit()  # trace.<pid>
    events = placement.read_trace(trace)
    kinds = {placement.KINDS[k] for k in events["kind"]}
    assert {"aligned", "realloc", "free"} <= kinds
    # sequence numbers are unique, and the second thread's records are there
    assert len(set(events["seq"].tolist())) == len(events)
    assert len(set(events["tid"].tolist())) >= 2


def test_missing_tracer_is_a_user_error(tmp_path, capsys):
    assert cli.main(["placement", "--build-dir", str(tmp_path), "--", str(TARGET)]) == 2
    assert "libplacement-trace.so not built" in capsys.readouterr().err


def test_unknown_allocator(tmp_path, capsys):
    assert cli.main(["placement", "--build-dir", str(BUILD), "--allocator", "nosuch", "--", str(TARGET)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown allocator 'nosuch'" in err


STRESS = BUILD / "tests" / "placement_stress"


@pytest.mark.skipif(not STRESS.is_file(), reason=f"{STRESS} not built")
def test_every_event_of_racing_threads_and_none_of_a_forked_child(tmp_path):
    # tests/placement/placement_stress.c: 3 waves x 4 threads, each 5000 objects of 24 B
    # all freed (half of them by another thread) and 10 of 777 B kept; a forked child
    # allocates 100 more of 777 B, which must not appear
    done, trace = placement.run_traced([str(STRESS)], dict(os.environ), TRACER, tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [trace.name]  # the child wrote none
    events = placement.read_trace(trace)
    assert events["seq"].tolist() == list(range(len(events)))  # none lost, none twice
    stress = events[events["size"] == 24]
    kept = events[events["size"] == 777]
    assert len(stress) == 3 * 4 * 5000 and len(kept) == 3 * 4 * 10
    assert len(set(stress["tid"].tolist())) >= 4
    end = placement.analyse(events, placement.Geometry(), "exit")
    live = {c["class"]: c["objects"] for c in end["l1"]["classes"]}
    assert live.get("17-32", 0) == 0 and live["513-1024"] == 120
