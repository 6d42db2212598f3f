"""Hand-built Syncchar traces (docs/syncchar.md, "Trace format") for the tests."""

from __future__ import annotations

import struct

from txalloc import syncchar


def header(unit=0, unit_shift=3, stm_shift=5, sample=100, window=512, backend=b"glock"):
    return b"TXSYNCH1" + struct.pack("<8I16sQ", 1, 64, unit, unit_shift, stm_shift, sample, window, 1234, backend, 1000)


def section(thread, begin, reads=(), writes=(), site=0x400000, acq=0, held=100, retries=0, flags=0):
    reads, writes = sorted(set(reads) - set(writes)), sorted(set(writes))
    words = [0, thread | flags << 32, site, begin, acq, held, retries, len(reads) | len(writes) << 32]
    words += reads + writes
    words[0] = 1 | (8 * len(words)) << 32
    return struct.pack(f"<{len(words)}Q", *words)


def thread_record(thread, sections, acq, held, first, last, sampled=None, aborts=0, recording=0):
    words = [2 | 80 << 32, thread, sections, sections if sampled is None else sampled, aborts, acq, held, first, last]
    return struct.pack("<10Q", *words, recording)


def alloc_record(thread, ptr, size, site, time):
    return struct.pack("<5Q", 3 | 40 << 32, thread | size << 32, ptr, site, time)


def write(tmp_path, records, **kw):
    path = tmp_path / "t.trace"
    path.write_bytes(header(**kw) + b"".join(records))
    return path


def build_bytes(threads, rounds, sets, **kw) -> bytes:
    """`rounds` rounds of one section per thread, a round every 10 us, each section held
    100 ns; sets(t, k) -> (reads, writes). kw: the header's fields."""
    recs = []
    for k in range(rounds):
        for t in range(threads):
            r, w = sets(t, k)
            recs.append(section(t + 1, 10_000 * k + t, r, w))
    for t in range(threads):
        recs.append(thread_record(t + 1, rounds, 0, 100 * rounds, 0, 10_000 * rounds))
    return header(**kw) + b"".join(recs)


def build(tmp_path, threads, rounds, sets, **kw):
    """build_bytes()'s trace, written and read back."""
    path = tmp_path / "t.trace"
    path.write_bytes(build_bytes(threads, rounds, sets, **kw))
    return syncchar.read_trace(path)
