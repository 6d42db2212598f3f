"""The placement analyser on hand-built traces, whose figures are known exactly."""

import json
from pathlib import Path

import numpy as np
import pytest

from txalloc import cli, placement
from txalloc.errors import UserError

MALLOC, REALLOC, FREE = 1, 3, 5


def trace_of(tmp_path: Path, records: list[tuple], name: str = "t.trace") -> Path:
    path = tmp_path / name
    placement.write_trace(path, records)
    return path


def analysed(tmp_path: Path, records: list[tuple], g: placement.Geometry | None = None, at="peak") -> dict:
    return placement.analyse(placement.read_trace(trace_of(tmp_path, records)), g or placement.Geometry(), at)


def allocations(addresses, size, tid=1, first_seq=0):
    return [(first_seq + i, a, size, tid, MALLOC) for i, a in enumerate(addresses)]


def test_l1_histogram_per_size_class(tmp_path):
    base = 0x100000  # 4 KiB aligned: set 0
    lines = allocations([base + 64 * i for i in range(64)], 48)  # one object per set
    strided = allocations([base + 0x10000 + 1024 * i for i in range(8)], 1024, first_seq=100)
    r = analysed(tmp_path, lines + strided)
    by_class = {c["class"]: c for c in r["l1"]["classes"]}
    assert set(by_class) == {"33-64", "513-1024"}
    small, big = by_class["33-64"], by_class["513-1024"]
    assert small["histogram"] == [1] * 64
    assert (small["sets_used"], small["max_per_set"], small["max_over_mean"]) == (64, 1, 1.0)
    # 1 KiB stride over 64 x 64 B sets: sets 0, 16, 32, 48, two objects each
    assert [s for s, n in enumerate(big["histogram"]) if n] == [0, 16, 32, 48]
    assert (big["sets_used"], big["sets_used_share"], big["max_per_set"]) == (4, 4 / 64, 2)
    assert big["max_over_mean"] == pytest.approx(16.0)
    overall = r["l1"]["overall"]
    assert overall["objects"] == 72 and overall["sets_used"] == 64 and overall["max_per_set"] == 3


def test_l1_geometry_is_an_option(tmp_path):
    r = analysed(
        tmp_path, allocations([0x100000 + 1024 * i for i in range(8)], 1024), placement.Geometry(sets=16, line=128)
    )
    (c,) = r["l1"]["classes"]
    assert [s for s, n in enumerate(c["histogram"]) if n] == [0, 8]
    assert len(c["histogram"]) == 16


# Stripes of 32 bytes (shift 5). Thread 1 owns A, A+16, B, C and D+24 (24 bytes, over two
# stripes); thread 2 owns B+16 and a 100-byte object at D+48, which shares D+24's second
# stripe and is not small itself.
A, B, C, D = 0x10000, 0x20000, 0x30000, 0x40000
SHARING = [
    (0, A, 16, 1, MALLOC),
    (1, A + 16, 16, 1, MALLOC),  # same stripe, same thread
    (2, B, 16, 1, MALLOC),
    (3, B + 16, 16, 2, MALLOC),  # same stripe, other thread
    (4, C, 16, 1, MALLOC),  # alone
    (5, D + 24, 24, 1, MALLOC),
    (6, D + 48, 100, 2, MALLOC),
]


def test_stripe_sharing_same_and_cross_thread(tmp_path):
    s = analysed(tmp_path, SHARING)["stripes"]
    assert s["small_objects"] == 6
    assert (s["shared"], s["cross_thread"], s["same_thread"]) == (5, 3, 2)
    assert s["shared_share"] == pytest.approx(5 / 6)
    assert s["cross_thread_share"] == pytest.approx(3 / 6)
    assert s["same_thread_share"] == pytest.approx(2 / 6)


def test_stripe_sharing_depends_on_shift_and_bound(tmp_path):
    # 16-byte stripes: no object shares one (D+24's last stripe ends where D+48 begins)
    s = analysed(tmp_path, SHARING, placement.Geometry(shift=4))["stripes"]
    assert (s["small_objects"], s["shared"]) == (6, 0)
    # 64-byte stripes: C is still alone
    s = analysed(tmp_path, SHARING, placement.Geometry(shift=6))["stripes"]
    assert (s["shared"], s["cross_thread"], s["same_thread"]) == (5, 3, 2)
    # 16-byte bound: D+24 is not small any more
    s = analysed(tmp_path, SHARING, placement.Geometry(small_max=16))["stripes"]
    assert (s["small_objects"], s["shared"], s["cross_thread"]) == (5, 4, 2)


def test_ort_entries_of_more_than_one_thread(tmp_path):
    o = analysed(tmp_path, SHARING)["ort"]
    # thread 1: stripes 0x800, 0x1000, 0x1800, 0x2000, 0x2001; thread 2: 0x1000, 0x2001..0x2004
    assert (o["threads"], o["entries_hit"], o["multi_thread_entries"]) == (2, 8, 2)
    assert o["multi_thread_share"] == pytest.approx(2 / 8)


def test_ort_entries_wrap_around_the_table(tmp_path):
    g = placement.Geometry(ort_log2=2)  # 4 entries of 32-byte stripes: a 128-byte period
    records = [
        (0, 0x1000 + 3 * 32, 64, 1, MALLOC),  # stripes 3 and 4: entries 3 and 0
        (1, 0x2000 + 32, 8, 2, MALLOC),  # entry 1
        (2, 0x3000, 8, 2, MALLOC),  # entry 0
    ]
    o = analysed(tmp_path, records, g)["ort"]
    assert (o["entries_hit"], o["multi_thread_entries"]) == (3, 1)
    records.append((3, 0x9000, 1000, 3, MALLOC))  # 32 stripes: every entry
    o = analysed(tmp_path, records, g)["ort"]
    assert (o["threads"], o["entries_hit"], o["multi_thread_entries"]) == (3, 4, 3)  # entry 2: thread 3 only


LIFE = [
    (0, 0x1000, 16, 1, MALLOC),
    (1, 0x2000, 16, 1, MALLOC),
    (2, 0x3000, 16, 2, MALLOC),
    (3, 0x1000, 0, 1, FREE),
    (4, 0x1000, 32, 2, MALLOC),  # the address reused
    (5, 0x2000, 0, 2, FREE),  # realloc: the old object, then the new one
    (6, 0x4000, 64, 2, REALLOC),
    (7, 0x5000, 16, 1, MALLOC),  # peak: 4 live
    (8, 0x9999, 0, 1, FREE),  # never allocated: ignored
    (9, 0x5000, 0, 1, FREE),
    (10, 0x3000, 0, 2, FREE),
]


def test_live_objects_at_peak_exit_and_a_sequence_number(tmp_path):
    r = analysed(tmp_path, LIFE)
    assert r["point"] == {"at": "peak", "seq": 7, "live_objects": 4, "events": 11}
    r = analysed(tmp_path, LIFE, at="exit")
    assert (r["point"]["seq"], r["point"]["live_objects"]) == (10, 2)  # 0x1000 (32 B) and 0x4000
    assert {c["class"]: c["objects"] for c in r["l1"]["classes"]} == {"17-32": 1, "33-64": 1}
    r = analysed(tmp_path, LIFE, at="2")
    assert (r["point"]["at"], r["point"]["live_objects"]) == ("seq", 3)


def test_records_in_any_order_and_an_unseen_free(tmp_path):
    # threads flush their buffers at different times: the file is not in seq order
    shuffled = [LIFE[i] for i in (7, 0, 10, 3, 1, 9, 2, 5, 4, 8, 6)]
    assert analysed(tmp_path, shuffled)["point"]["seq"] == 7
    # an allocation at an address still live (its free went unseen) ends the first object
    twice = [(0, 0x1000, 16, 1, MALLOC), (1, 0x1000, 16, 1, MALLOC)]
    assert analysed(tmp_path, twice, at="exit")["point"]["live_objects"] == 1


def test_a_trace_cut_short_loses_only_its_last_record(tmp_path):
    path = trace_of(tmp_path, LIFE)
    path.write_bytes(path.read_bytes()[:-5])
    assert len(placement.read_trace(path)) == len(LIFE) - 1


def test_not_a_trace(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"hello world, this is not a trace at all")
    with pytest.raises(UserError, match="not a placement trace"):
        placement.read_trace(path)
    with pytest.raises(UserError, match="cannot read"):
        placement.read_trace(tmp_path / "missing")


def test_empty_trace(tmp_path):
    r = analysed(tmp_path, [])
    assert r["point"]["live_objects"] == 0
    assert r["stripes"]["shared_share"] is None and r["ort"]["entries_hit"] == 0


def test_cli_writes_json_and_png(tmp_path, capsys):
    trace = trace_of(tmp_path, SHARING)
    out, png = tmp_path / "r.json", tmp_path / "h.png"
    assert cli.main(["placement", "--trace", str(trace), "--json", str(out), "--png", str(png)]) == 0
    r = json.loads(out.read_text())
    assert r["stripes"]["shared"] == 5 and r["trace"] == str(trace)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "sharing a 32-byte stripe: 83.3% of 6" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sets", "0"], "--sets must be in"),
        (["--sets", "x"], "--sets takes an integer"),
        (["--line", "48"], "--line must be a power of two"),
        (["--at", "middle"], "--at must be peak, exit or a sequence number"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--allocator", "txalloc"], "--allocator applies to a program run"),
        (["--", "true"], "either --trace FILE or -- PROGRAM ARGS"),
    ],
)
def test_bad_options_one_line_exit_2(tmp_path, capsys, args, message):
    trace = trace_of(tmp_path, SHARING)
    assert cli.main(["placement", "--trace", str(trace), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("txalloc: error: placement: ")
    assert message in lines[0]


def test_nothing_to_analyse(capsys):
    assert cli.main(["placement"]) == 2
    assert "nothing to analyse" in capsys.readouterr().err


def test_size_classes_cover_every_size():
    sizes = np.array([0, 1, 16, 17, 64, 65, 4096, 4097, 1 << 40], dtype=np.uint64)
    labels = placement.class_labels()
    assert [labels[c] for c in placement.size_class(sizes)] == [
        "1-16",
        "1-16",
        "1-16",
        "17-32",
        "33-64",
        "65-128",
        "2049-4096",
        "4097+",
        "4097+",
    ]
