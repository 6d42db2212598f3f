"""Syncchar (Porter and Witchel, ISPASS 2010) on a trace recorded by the TM runtime
(TXALLOC_SYNCCHAR=FILE; docs/syncchar.md): data independence I_n and conflict density D_n
per site and overall, the predicted TM time and speed-up against the recorded lock run,
hot spots (Table 8), and false conflicts (stripe or line sharing without word sharing).

The model, as the paper defines it:
- a sample of n critical sections that could run together; two sections conflict when the
  write set of one meets the address set (reads and writes) of the other;
- C_n: the sections of the sample in at least one conflict; I_n = n - |C_n|;
- D_n = sum over x in C_n of (conflicts of x with the rest of C_n) / (|C_n| - 1), 0 when
  C_n is empty (every section conflicts with every other: D_n = |C_n|; a star, one writer
  and n - 1 readers of what it writes: D_n = 1 + (n - 1) / (n - 1) = 2);
- predicted TM time (acq + held) * max(D_n, 1) / n + other (acq: waiting for the lock,
  held: holding it, other: the rest of the thread's time).

Samples: the sections of each site, in the order they began, are cut into windows (512 by
default); a window's sections are dealt round the threads (one section per thread in turn,
each thread's in a seeded random order) and cut into groups of n, so that a group holds
sections of distinct threads while threads remain; every group is one sample. I_n and D_n
are the means over the samples. A group of more sections than the trace has threads takes
several sections of a thread: sections of one window are taken as able to run together.
"""

from __future__ import annotations

import array
import bisect
import gzip
import json
import math
import random
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import UserError

MAGIC = b"TXSYNCH1"
GZIP_MAGIC = b"\x1f\x8b"
HEADER_BYTES = 64
UNITS = {0: "word", 1: "line", 2: "stripe"}
KIND_SECTION, KIND_THREAD, KIND_ALLOC, KIND_FREE, KIND_MAPS = 1, 2, 3, 4, 5
FLAG_READ_ONLY, FLAG_IRREVOCABLE, FLAG_CANCELLED, FLAG_TRUNCATED = 1, 2, 4, 8
DEFAULT_THREADS = (1, 2, 4, 8, 16, 32)
TABLE8_BUCKETS = ("0-19%", "20-39%", "40-59%", "60-79%", "80-99%", "100%")


@dataclass
class Section:
    thread: int
    flags: int
    site: int
    begin_ns: int
    acq_ns: int
    held_ns: int
    retries: int
    reads: np.ndarray  # sorted units, none of them written
    writes: np.ndarray  # sorted units
    _coarse: dict = field(default_factory=dict, repr=False)

    def sets(self, shift: int, base_shift: int) -> tuple[frozenset, tuple]:
        """(address set, write set) in units of 2^shift bytes (shift >= the trace's unit), as
        Python ints: the write sets are short, the membership tests against the address sets
        many."""
        key = shift
        if key not in self._coarse:
            if shift == base_shift:
                w = tuple(self.writes.tolist())
                both = frozenset(self.reads.tolist()).union(w)
            else:
                s = np.uint64(shift)
                w = tuple(sorted(set(((self.writes >> s) << s).tolist())))
                both = frozenset(((self.reads >> s) << s).tolist()).union(w)
            self._coarse[key] = (both, w)
        return self._coarse[key]


@dataclass
class ThreadTotals:
    thread: int
    sections: int
    sampled: int
    aborts: int
    acq_ns: int
    held_ns: int
    first_ns: int
    last_ns: int
    record_ns: int = 0  # the recorder's own time on the thread (sorting, copying sets)


@dataclass
class Trace:
    path: str
    unit: str
    unit_shift: int
    stm_shift: int
    sample_percent: int
    window: int
    pid: int
    backend: str
    start_ns: int
    sections: list[Section]
    threads: dict[int, ThreadTotals]
    allocs: list[tuple[int, int, int, int, int]]  # (ptr, size, site, time_ns, thread)
    frees: list[tuple[int, int]]  # (ptr, time_ns)
    maps: str


def read_trace(path: Path) -> Trace:
    """The trace at path, as the recorder wrote it or compressed with gzip; a UserError
    naming the file when it is not one."""
    try:
        data = path.read_bytes()
        if data[:2] == GZIP_MAGIC:
            data = gzip.decompress(data)
    except OSError as e:  # gzip's errors (BadGzipFile, EOFError) included
        raise UserError(f"syncchar: cannot read {path}: {e.strerror or e}") from None
    except EOFError:
        raise UserError(f"syncchar: cannot read {path}: the compressed trace is cut short") from None
    if len(data) < HEADER_BYTES or data[:8] != MAGIC:
        raise UserError(f"syncchar: {path} is not a Syncchar trace (no TXSYNCH1 header)")
    head = np.frombuffer(data[8:40], dtype="<u4")
    version, header_bytes, unit, unit_shift, stm_shift, sample, window, pid = (int(x) for x in head)
    if version != 1 or header_bytes != HEADER_BYTES:
        raise UserError(f"syncchar: {path}: trace version {version} is not supported")
    backend = data[40:56].split(b"\0", 1)[0].decode(errors="replace")
    start_ns = int(np.frombuffer(data[56:64], dtype="<u8")[0])
    body = data[HEADER_BYTES:]
    if len(body) % 8:
        raise UserError(f"syncchar: {path} is truncated (not a whole number of words)")
    words = np.frombuffer(body, dtype="<u8")  # the sets: views, not copies
    w = array.array("Q", body)  # the fields: Python ints, fast to index
    if sys.byteorder != "little":
        w.byteswap()
    sections: list[Section] = []
    threads: dict[int, ThreadTotals] = {}
    allocs, frees, maps = [], [], ""
    i, n = 0, len(w)
    while i < n:
        w0 = w[i]
        kind, length = w0 & 0xFFFFFFFF, (w0 >> 32) // 8
        if length < 1 or i + length > n:
            raise UserError(f"syncchar: {path} is damaged at byte {HEADER_BYTES + 8 * i}")
        if kind == KIND_ALLOC:
            allocs.append((w[i + 2], w[i + 1] >> 32, w[i + 3], w[i + 4], w[i + 1] & 0xFFFFFFFF))
        elif kind == KIND_SECTION:
            nr, nw = w[i + 7] & 0xFFFFFFFF, w[i + 7] >> 32
            sections.append(
                Section(
                    thread=w[i + 1] & 0xFFFFFFFF,
                    flags=w[i + 1] >> 32,
                    site=w[i + 2],
                    begin_ns=w[i + 3],
                    acq_ns=w[i + 4],
                    held_ns=w[i + 5],
                    retries=w[i + 6],
                    reads=words[i + 8 : i + 8 + nr],
                    writes=words[i + 8 + nr : i + 8 + nr + nw],
                )
            )
        elif kind == KIND_FREE:
            frees.append((w[i + 2], w[i + 3]))
        elif kind == KIND_THREAD:
            t = ThreadTotals(*w[i + 1 : i + 10])
            threads[t.thread] = t  # the last record of a thread holds its final counts
        elif kind == KIND_MAPS:
            maps = body[8 * (i + 2) : 8 * (i + 2) + w[i + 1]].decode(errors="replace")
        i += length
    return Trace(
        path=str(path),
        unit=UNITS.get(unit, "?"),
        unit_shift=unit_shift,
        stm_shift=stm_shift,
        sample_percent=sample,
        window=window,
        pid=pid,
        backend=backend,
        start_ns=start_ns,
        sections=sections,
        threads=threads,
        allocs=allocs,
        frees=frees,
        maps=maps,
    )


# ---- The model on one sample ----


def conflict_units(x: tuple[frozenset, tuple], y: tuple[frozenset, tuple]) -> set[int]:
    """The units on which two sections (address set, write set) conflict: x's writes in y's
    address set, and y's writes in x's."""
    (xa, xw), (ya, yw) = x, y
    return {u for u in xw if u in ya} | {u for u in yw if u in xa}


def sample_metrics(conflicts: list[list[bool]]) -> tuple[float, float]:
    """(I_n, D_n) of one sample, from its symmetric conflict matrix."""
    n = len(conflicts)
    involved = [i for i in range(n) if any(conflicts[i][j] for j in range(n) if j != i)]
    c = len(involved)
    if c == 0:
        return float(n), 0.0
    density = sum(sum(conflicts[i][j] for j in involved if j != i) / (c - 1) for i in involved)
    return float(n - c), density


def metrics_of_sets(sets: list[tuple[frozenset, tuple]]) -> tuple[float, float]:
    """(I_n, D_n) of address sets given as (address set, write set) arrays."""
    n = len(sets)
    m = [[False] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            m[i][j] = m[j][i] = bool(conflict_units(sets[i], sets[j]))
    return sample_metrics(m)


# ---- Samples: windows and groups ----


def deal_groups(window: list[Section], n: int, rng: random.Random) -> list[list[Section]]:
    """The window's sections dealt round the threads and cut into groups of n (a partial
    last group is dropped)."""
    by_thread: dict[int, list[Section]] = defaultdict(list)
    for s in window:
        by_thread[s.thread].append(s)
    queues = []
    for t in sorted(by_thread):
        q = by_thread[t][:]
        rng.shuffle(q)
        queues.append(q)
    order: list[Section] = []
    while queues:
        rng.shuffle(queues)
        for q in queues:
            order.append(q.pop())
        queues = [q for q in queues if q]
    return [order[k : k + n] for k in range(0, len(order) - n + 1, n)]


def windows(sections: list[Section], size: int) -> list[list[Section]]:
    ordered = sorted(sections, key=lambda s: (s.begin_ns, s.thread))
    return [ordered[k : k + size] for k in range(0, len(ordered), size)]


@dataclass
class Tally:
    """Means over the samples at one n, and what the hot-spot report needs."""

    samples: int = 0
    i_sum: float = 0.0
    d_sum: float = 0.0
    pairs: int = 0
    conflicting_pairs: int = 0
    unit_hits: Counter = field(default_factory=Counter)
    workset_units: Counter = field(default_factory=Counter)  # unit -> samples it appeared in
    workset_sizes: list[int] = field(default_factory=list)
    aborted: int = 0  # sections of the samples whose block aborted at least once (stm traces)
    in_conflict: int = 0  # sections in C_n

    def add(self, group: list[Section], shift: int, base_shift: int, keep_units: bool) -> None:
        sets = [s.sets(shift, base_shift) for s in group]
        n = len(group)
        m = [[False] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                units = conflict_units(sets[i], sets[j])
                self.pairs += 1
                if units:
                    m[i][j] = m[j][i] = True
                    self.conflicting_pairs += 1
                    if keep_units:
                        self.unit_hits.update(units)
        i_n, d_n = sample_metrics(m)
        self.samples += 1
        self.i_sum += i_n
        self.d_sum += d_n
        self.in_conflict += n - int(i_n)
        self.aborted += sum(1 for s in group if s.retries)
        if keep_units:
            for a, _ in sets:
                self.workset_sizes.append(len(a))
                self.workset_units.update(a)

    @property
    def i_n(self) -> float:
        return self.i_sum / self.samples if self.samples else math.nan

    @property
    def d_n(self) -> float:
        return self.d_sum / self.samples if self.samples else math.nan


def tally(
    sections: list[Section],
    n: int,
    window: int,
    shift: int,
    base_shift: int,
    seed: int = 1,
    keep_units: bool = False,
) -> Tally:
    t = Tally()
    rng = random.Random(seed * 1000003 + n)
    for w in windows(sections, window):
        if n == 1:
            for s in w:
                t.add([s], shift, base_shift, keep_units)
            continue
        for g in deal_groups(w, n, rng):
            t.add(g, shift, base_shift, keep_units)
    return t


def subsample(sections: list[Section], percent: float, seed: int = 1) -> list[Section]:
    """The sections a sampling rate of `percent` keeps: each by a seeded draw (100: all)."""
    if percent >= 100:
        return list(sections)
    rng = random.Random(seed)
    return [s for s in sections if rng.random() * 100 < percent]


# ---- Prediction ----


@dataclass
class LockRun:
    """What the recorded run measured, per thread means: the elapsed time from a thread's
    first block to its last, the time it waited for (acq) and held (held) its blocks, the
    rest (other), and its blocks."""

    threads: int
    elapsed_s: float
    acq_s: float
    held_s: float
    other_s: float
    sections: float

    @classmethod
    def of(cls, trace: Trace, phase: list[int] | None = None) -> LockRun:
        ts = [t for t in trace.threads.values() if t.sections and (phase is None or t.thread in phase)]
        if not ts:
            raise UserError(f"syncchar: {trace.path} has no thread totals (was the run cut short?)")
        k = len(ts)
        elapsed = sum((t.last_ns - t.first_ns) for t in ts) / k / 1e9
        acq = sum(t.acq_ns for t in ts) / k / 1e9
        held = sum(t.held_ns for t in ts) / k / 1e9
        recording = sum(t.record_ns for t in ts) / k / 1e9
        # The recorder's own time is neither the program's work nor the lock's.
        elapsed -= recording
        return cls(k, elapsed, acq, held, max(elapsed - acq - held, 0.0), sum(t.sections for t in ts) / k)


def parallel_phase(trace: Trace) -> list[int]:
    """The threads of the run's parallel phase: those whose span (first block to last)
    contains the moment the most spans overlap. A workload's set-up on the main thread
    (intset's initial inserts) and its final checks fall outside, as STAMP times only its
    parallel phase."""
    spans = [(t.first_ns, t.last_ns, t.thread) for t in trace.threads.values() if t.sections]
    if not spans:
        return []
    best = max((f for f, _, _ in spans), key=lambda p: sum(1 for f, last, _ in spans if f <= p <= last))
    return sorted(t for f, last, t in spans if f <= best <= last)


def predicted_time(run: LockRun, d_n: float, n: int) -> float:
    """The paper's (acq + held) * max(D_n, 1) / n + other, per thread."""
    return (run.acq_s + run.held_s) * max(d_n, 1.0) / n + run.other_s


def predicted_throughput(run: LockRun, d_n: float, n: int) -> float:
    """Blocks per second of n threads under TM: each block's critical part takes its held
    time times max(D_n, 1) (the serial schedule of its conflicts), spread over n threads,
    plus its other time; at the recorded thread count with a saturated lock this is the
    paper's formula."""
    per_block_held = run.held_s / run.sections
    per_block_other = run.other_s / run.sections
    return n / (per_block_held * max(d_n, 1.0) + per_block_other)


# ---- Object and code names ----


@dataclass
class Mapping:
    start: int
    end: int
    offset: int
    path: str


def parse_maps(text: str) -> list[Mapping]:
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or "x" not in parts[1]:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        out.append(Mapping(lo, hi, int(parts[2], 16), parts[5].strip()))
    return out


class Symbolizer:
    """Code addresses as module+offset and, where addr2line is installed, function and line."""

    def __init__(self, maps: str, use_addr2line: bool = True):
        self.maps = parse_maps(maps)
        self.addr2line = shutil.which("addr2line") if use_addr2line else None
        self.cache: dict[int, str] = {}

    def name(self, addr: int) -> str:
        if addr in self.cache:
            return self.cache[addr]
        text = f"0x{addr:x}"
        for m in self.maps:
            if m.start <= addr < m.end:
                off = addr - m.start + m.offset
                text = f"{Path(m.path).name}+0x{off:x}"
                where = self._line(m.path, off - 1)  # the call, one byte before the return address
                if where:
                    text += f" ({where})"
                break
        self.cache[addr] = text
        return text

    def _line(self, path: str, off: int) -> str | None:
        if not self.addr2line or not Path(path).is_file():
            return None
        try:
            out = subprocess.run(
                [self.addr2line, "-f", "-C", "-s", "-e", path, f"0x{off:x}"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.split("\n")
        except (OSError, subprocess.SubprocessError):
            return None
        if len(out) >= 2 and out[0] != "??":
            return f"{out[0]} {out[1]}".strip()
        return None


class ObjectIndex:
    """tm_malloc's objects: for an address, the newest object allocated over it (an address
    reused by many objects names the last; their sizes and sites are usually the same)."""

    SCAN = 64  # distinct object starts looked at below an address

    def __init__(self, allocs: list[tuple[int, int, int, int, int]]):
        newest: dict[int, tuple[int, int, int]] = {}
        for ptr, size, site, time_ns, _ in allocs:
            old = newest.get(ptr)
            if old is None or time_ns >= old[2]:
                newest[ptr] = (size, site, time_ns)
        self.ptrs = sorted(newest)
        self.objects = newest

    def owner(self, addr: int, unit_bytes: int) -> tuple[int, int, int] | None:
        """(base, size, site) of an object overlapping [addr, addr + unit_bytes)."""
        k = bisect.bisect_right(self.ptrs, addr + unit_bytes - 1)
        best = None
        for ptr in reversed(self.ptrs[max(k - self.SCAN, 0) : k]):
            size, site, time_ns = self.objects[ptr]
            if addr < ptr + max(size, 1) and (best is None or time_ns > best[3]):
                best = (ptr, size, site, time_ns)
        return None if best is None else best[:3]


# ---- The whole analysis ----


def _unit_shifts(trace: Trace) -> dict[str, int]:
    """The units the trace's sets can be seen at: its own and the coarser of line and stripe."""
    out = {trace.unit: trace.unit_shift}
    for name, shift in (("stripe", trace.stm_shift), ("line", 6)):
        if shift >= trace.unit_shift:
            out.setdefault(name, shift)
    return out


def _table8(t: Tally) -> dict:
    if not t.conflicting_pairs:
        shares = dict.fromkeys(TABLE8_BUCKETS, 0)
    else:
        shares = dict.fromkeys(TABLE8_BUCKETS, 0)
        for unit in t.workset_units:
            p = 100.0 * t.unit_hits.get(unit, 0) / t.conflicting_pairs
            b = 5 if p >= 100 else min(int(p // 20), 4)
            shares[TABLE8_BUCKETS[b]] += 1
    return {
        "addresses_by_share_of_conflicts": shares,
        "avg_workset_units": float(np.mean(t.workset_sizes)) if t.workset_sizes else 0.0,
        "conflicts_sampled": t.conflicting_pairs,
    }


def phase_sections(trace: Trace, sample: float = 100.0, seed: int = 1) -> tuple[list[int], list[Section]]:
    """The threads of the parallel phase and their sections that the analysis samples: not
    cancelled, begun within the phase, kept by a sampling rate of `sample`; a UserError
    when none is left."""
    phase = parallel_phase(trace)
    span = [(t.first_ns, t.last_ns) for t in trace.threads.values() if t.thread in phase]
    lo, hi = (min(f for f, _ in span), max(last for _, last in span)) if span else (0, 0)
    sections = [
        s for s in trace.sections if not s.flags & FLAG_CANCELLED and s.thread in phase and lo <= s.begin_ns <= hi
    ]
    sections = subsample(sections, sample, seed)
    if not sections:
        raise UserError(f"syncchar: {trace.path} holds no recorded section")
    return phase, sections


def overall_rows(
    sections: list[Section], run: LockRun, threads: list[int], window: int, shift: int, base: int, seed: int = 1
) -> dict[str, dict]:
    """Per n: the samples, I_n, D_n, the share of conflicting pairs and the predicted speed-up
    (n threads under TM over the recorded lock run)."""
    overall: dict[str, dict] = {}
    for n in threads:
        t = tally(sections, n, window, shift, base, seed)
        row = {"samples": t.samples, "I_n": t.i_n, "D_n": t.d_n, "conflict_rate": _ratio(t.conflicting_pairs, t.pairs)}
        if t.samples:
            lock_throughput = run.threads * run.sections / run.elapsed_s
            row["predicted_speedup"] = predicted_throughput(run, t.d_n, n) / lock_throughput
        overall[str(n)] = row
    return overall


def overview(
    trace: Trace, threads: list[int], window: int | None = None, seed: int = 1, max_sections: int | None = None
) -> dict:
    """The figures of analyse() a study report needs, without the costlier ones (hot spots,
    units, false conflicts, sites): the unit (the STM's stripe, as analyse's default), the
    window, the recorded thread count, the sections analysed, and `overall` per n. With
    max_sections, a trace holding more sections is analysed at the sampling rate that keeps
    about that many (seeded, as --sample)."""
    window = window or trace.window or 512
    shifts = _unit_shifts(trace)
    unit = "stripe" if "stripe" in shifts else trace.unit
    phase, sections = phase_sections(trace, 100.0, seed)
    sample = 100.0
    if max_sections and len(sections) > max_sections:
        sample = 100.0 * max_sections / len(sections)
        sections = subsample(sections, sample, seed)
    run = LockRun.of(trace, phase)
    return {
        "unit": unit,
        "window": window,
        "threads_recorded": run.threads,
        "sections_analysed": len(sections),
        "analysis_sample_percent": sample,
        "overall": overall_rows(sections, run, list(threads), window, shifts[unit], trace.unit_shift, seed),
    }


def analyse(
    trace: Trace,
    threads: list[int] | None = None,
    window: int | None = None,
    unit: str = "auto",
    sample: float = 100.0,
    hot: int = 10,
    seed: int = 1,
    symbolize: bool = True,
) -> dict:
    """Every figure of the report, as a JSON-ready dict."""
    threads = list(threads or DEFAULT_THREADS)
    window = window or trace.window or 512
    shifts = _unit_shifts(trace)
    if unit == "auto":
        unit = "stripe" if "stripe" in shifts else trace.unit
    if unit not in shifts:
        raise UserError(
            f"syncchar: a trace recorded by {trace.unit} cannot be analysed by {unit} "
            f"(possible: {', '.join(sorted(shifts))})"
        )
    shift = shifts[unit]
    base = trace.unit_shift
    phase, sections = phase_sections(trace, sample, seed)
    run = LockRun.of(trace, phase)
    sym = Symbolizer(trace.maps, symbolize)
    objects = ObjectIndex(trace.allocs)
    n_here = run.threads
    overall = overall_rows(sections, run, threads, window, shift, base, seed)

    # At the recorded thread count: the paper's prediction, hot spots, false conflicts.
    here = tally(sections, max(n_here, 2), window, shift, base, seed, keep_units=True)
    prediction = None
    if here.samples:
        d = here.d_n if n_here >= 2 else 0.0
        t_tm = predicted_time(run, d, n_here)
        prediction = {
            "threads": n_here,
            "D_n": d,
            "lock_time_s": run.elapsed_s,
            "acq_s": run.acq_s,
            "held_s": run.held_s,
            "other_s": run.other_s,
            "tm_time_s": t_tm,
            "speedup": run.elapsed_s / t_tm if t_tm > 0 else math.nan,
        }
    unit_bytes = 1 << shift
    hot_rows = []
    for u, hits in here.unit_hits.most_common(hot):
        row = {"unit": f"0x{u:x}", "share": hits / here.conflicting_pairs, "conflicts": hits}
        owner = objects.owner(u, unit_bytes)
        if owner:
            row["object"] = {"base": f"0x{owner[0]:x}", "size": owner[1], "site": sym.name(owner[2])}
        hot_rows.append(row)

    granularity = {}
    for name, sh in sorted(shifts.items(), key=lambda kv: kv[1]):
        g = tally(sections, max(n_here, 2), window, sh, base, seed)
        granularity[name] = {"conflict_rate": _ratio(g.conflicting_pairs, g.pairs), "D_n": g.d_n, "I_n": g.i_n}
    false_conflicts = _false_conflicts(sections, max(n_here, 2), window, trace, seed, objects, sym)

    per_site = []
    by_site: dict[int, list[Section]] = defaultdict(list)
    for s in sections:
        by_site[s.site].append(s)
    for site, secs in sorted(by_site.items(), key=lambda kv: -len(kv[1])):
        rows = {}
        for n in threads:
            t = tally(secs, n, window, shift, base, seed)
            rows[str(n)] = {"samples": t.samples, "I_n": t.i_n, "D_n": t.d_n}
        per_site.append(
            {
                "site": sym.name(site),
                "sections": len(secs),
                "held_ns_mean": float(np.mean([s.held_ns for s in secs])),
                "aborted_share": _ratio(sum(1 for s in secs if s.retries), len(secs)),
                "avg_workset_units": float(np.mean([len(s.reads) + len(s.writes) for s in secs])),
                "by_threads": rows,
            }
        )

    return {
        "trace": trace.path,
        "backend": trace.backend,
        "unit_recorded": trace.unit,
        "unit": unit,
        "stm_shift": trace.stm_shift,
        "sample_percent": trace.sample_percent,
        "analysis_sample_percent": sample,
        "window": window,
        "threads_recorded": n_here,
        "parallel_phase_threads": phase,
        "sections_recorded": len(trace.sections),
        "sections_total": sum(t.sections for t in trace.threads.values()),
        "aborted_share": _ratio(sum(1 for s in sections if s.retries), len(sections)),
        "lock_run": run.__dict__,
        "overall": overall,
        "prediction": prediction,
        "table8": _table8(here),
        "hot_spots": hot_rows,
        "granularity": granularity,
        "false_conflicts": false_conflicts,
        "sites": per_site,
    }


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def _false_conflicts(
    sections: list[Section], n: int, window: int, trace: Trace, seed: int, objects: ObjectIndex, sym: Symbolizer
) -> dict:
    """Pairs that conflict on a stripe (or line) but on no word: which stripes, which
    objects. Needs a trace recorded by word."""
    if trace.unit != "word":
        return {"available": False, "why": f"recorded by {trace.unit}: words are unknown"}
    out: dict = {"available": True}
    rng = random.Random(seed * 1000003 + n)
    base = trace.unit_shift
    for name, shift in (("stripe", trace.stm_shift), ("line", 6)):
        pairs = word_pairs = coarse_pairs = 0
        culprits: Counter = Counter()
        for w in windows(sections, window):
            for g in deal_groups(w, n, random.Random(rng.random())):
                for i in range(len(g)):
                    for j in range(i + 1, len(g)):
                        pairs += 1
                        words = conflict_units(g[i].sets(base, base), g[j].sets(base, base))
                        coarse = conflict_units(g[i].sets(shift, base), g[j].sets(shift, base))
                        word_pairs += bool(words)
                        coarse_pairs += bool(coarse)
                        if coarse and not words:
                            culprits.update(coarse)
        false_pairs = coarse_pairs - word_pairs
        rows = []
        for u, k in culprits.most_common(5):
            row = {"unit": f"0x{u:x}", "false_conflicts": k}
            owners = _objects_in(objects, u, 1 << shift, sym)
            if owners:
                row["objects"] = owners
            rows.append(row)
        out[name] = {
            "bytes": 1 << shift,
            "pairs": pairs,
            "word_conflicts": word_pairs,
            "conflicts": coarse_pairs,
            "false_conflicts": false_pairs,
            "false_share": _ratio(false_pairs, coarse_pairs),
            "top": rows,
        }
    return out


def _objects_in(objects: ObjectIndex, unit: int, unit_bytes: int, sym: Symbolizer) -> list[dict]:
    """The tm_malloc objects (newest at each word) that share a unit, and their sites."""
    seen = {}
    for a in range(unit, unit + unit_bytes, 8):
        o = objects.owner(a, 8)
        if o and o[0] not in seen:
            seen[o[0]] = {"base": f"0x{o[0]:x}", "size": o[1], "site": sym.name(o[2])}
    return list(seen.values())


# ---- Output ----


def _f(x: float, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def markdown(result: dict) -> str:
    r = result
    lines = [
        f"# Syncchar: {Path(r['trace']).name}",
        "",
        f"Backend `{r['backend']}`, {r['threads_recorded']} threads in the parallel phase, "
        f"{r['sections_total']} blocks in all "
        f"({r['sections_recorded']} recorded at {r['sample_percent']} %), units: recorded by "
        f"{r['unit_recorded']}, analysed by {r['unit']}; window {r['window']} sections.",
        "",
        "## Data independence and conflict density",
        "",
        "| n | samples | I_n | D_n | conflicting pairs | predicted TM speed-up vs the recorded lock run |",
        "|---|---|---|---|---|---|",
    ]
    for n, row in r["overall"].items():
        lines.append(
            f"| {n} | {row['samples']} | {_f(row['I_n'])} | {_f(row['D_n'])} | {_f(100 * row['conflict_rate'], 1)} % "
            f"| {_f(row.get('predicted_speedup', math.nan))} |"
        )
    p = r["prediction"]
    if p:
        lines += [
            "",
            f"## Prediction at {p['threads']} threads (the paper's formula)",
            "",
            f"Lock run per thread: {_f(p['lock_time_s'], 4)} s = acq {_f(p['acq_s'], 4)} s + held "
            f"{_f(p['held_s'], 4)} s + other {_f(p['other_s'], 4)} s; D_n = {_f(p['D_n'])}; predicted TM time "
            f"(acq + held) * max(D_n, 1) / n + other = {_f(p['tm_time_s'], 4)} s: speed-up "
            f"**{_f(p['speedup'])}** over the lock.",
        ]
    t8 = r["table8"]
    lines += [
        "",
        "## Hot spots (Table 8)",
        "",
        "| share of conflicts | addresses |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in t8["addresses_by_share_of_conflicts"].items()],
        "",
        f"Average work set: {_f(t8['avg_workset_units'], 1)} units; conflicts sampled: {t8['conflicts_sampled']}.",
        "",
        "| unit | share | object (base, size, allocation site) |",
        "|---|---|---|",
    ]
    for h in r["hot_spots"]:
        o = h.get("object")
        obj = f"{o['base']}, {o['size']} B, {o['site']}" if o else "-"
        lines.append(f"| {h['unit']} | {_f(100 * h['share'], 1)} % | {obj} |")
    lines += ["", "## Conflicts by unit", "", "| unit | conflicting pairs | I_n | D_n |", "|---|---|---|---|"]
    for name, g in r["granularity"].items():
        lines.append(f"| {name} | {_f(100 * g['conflict_rate'], 1)} % | {_f(g['I_n'])} | {_f(g['D_n'])} |")
    fc = r["false_conflicts"]
    lines += ["", "## False conflicts (shared stripe or line, no shared word)", ""]
    if not fc.get("available"):
        lines.append(f"Not available: {fc['why']}.")
    else:
        for name in ("stripe", "line"):
            f = fc[name]
            lines.append(
                f"- {name} of {f['bytes']} B: {f['conflicts']} conflicting pairs of {f['pairs']}, "
                f"{f['false_conflicts']} of them false ({_f(100 * f['false_share'], 1)} %)"
            )
            for row in f["top"]:
                objs = "; ".join(f"{o['base']} ({o['size']} B, {o['site']})" for o in row.get("objects", []))
                lines.append(f"  - {row['unit']}: {row['false_conflicts']} false conflicts; objects: {objs or '-'}")
    lines += [
        "",
        "## Sites",
        "",
        "| site | blocks recorded | mean held (ns) | aborted | work set | "
        + " | ".join(f"D_{n}" for n in r["overall"])
        + " |",
        "|---|---|---|---|---|" + "---|" * len(r["overall"]),
    ]
    for s in r["sites"]:
        ds = " | ".join(_f(v["D_n"]) for v in s["by_threads"].values())
        lines.append(
            f"| {s['site']} | {s['sections']} | {_f(s['held_ns_mean'], 0)} | {_f(100 * s['aborted_share'], 1)} % "
            f"| {_f(s['avg_workset_units'], 1)} | {ds} |"
        )
    return "\n".join(lines) + "\n"


def write_plots(result: dict, out_dir: Path, stem: str) -> list[Path]:
    """I_n and D_n against n, and the predicted speed-up against n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [int(n) for n in result["overall"]]
    rows = list(result["overall"].values())
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(ns, [r["I_n"] for r in rows], marker="o", label="I_n (data independence)")
    ax.plot(ns, [r["D_n"] for r in rows], marker="s", label="D_n (conflict density)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (sections run together)")
    ax.legend()
    ax.set_title(stem)
    fig.tight_layout()
    first = out_dir / f"{stem}-in-dn.png"
    fig.savefig(first, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(ns, [r.get("predicted_speedup", math.nan) for r in rows], marker="o", label="predicted TM")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("threads")
    ax.set_ylabel("speed-up over the recorded lock run")
    ax.legend()
    ax.set_title(stem)
    fig.tight_layout()
    second = out_dir / f"{stem}-speedup.png"
    fig.savefig(second, dpi=110)
    plt.close(fig)
    return [first, second]


def write_validation_plot(rows: list[dict], path: Path) -> Path:
    """Predicted against measured speed-up per workload (rows: name, predicted, measured)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["predicted"] for r in rows], 0.4, label="predicted (Syncchar)")
    ax.bar(x + 0.2, [r["measured"] for r in rows], 0.4, label="measured (stm / glock)")
    ax.set_xticks(x, [r["name"] for r in rows], rotation=30, ha="right")
    ax.set_ylabel("speed-up over glock")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def dump_json(result: dict, path: Path) -> None:
    def clean(x):
        if isinstance(x, float) and math.isnan(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    path.write_text(json.dumps(clean(result), indent=2) + "\n")
