"""The placement analyser (`txalloc placement`, docs/placement.md): runs a program under
the placement tracer (build/libplacement-trace.so) over any allocator, reads the trace of
its allocations and frees, rebuilds the set of live objects at a chosen point and reports
where the allocator put them:

- the histogram of object base addresses over the L1 sets, per size class, with its
  imbalance (max/mean objects per set, share of sets used);
- the share of small objects that share an ORT stripe with another live object, split into
  cross-thread (some sharer belongs to another thread) and same-thread (all sharers are
  the object's own thread's);
- the ORT entries (stripe mod table size, TinySTM's shift-mask map) that objects of more
  than one thread map to.

The chosen point is by default the peak of live objects: the TM workloads build their
structure, run, and may tear it down before exit, so the peak is when the structure the
transactions traverse is whole; `exit` (what is left at the end) and a sequence number are
the alternatives.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import UserError

TRACER = "libplacement-trace.so"
TRACE_VARIABLE = "PLACEMENT_TRACE"  # path prefix; the tracer writes PREFIX.<pid>
MAGIC = b"TXPLACE1"
VERSION = 1
HEADER = struct.Struct("<8sIIQQ")  # magic, version, record size, pid, reserved
RECORD = np.dtype(
    [("seq", "<u8"), ("addr", "<u8"), ("size", "<u8"), ("tid", "<u4"), ("kind", "<u2"), ("align_log2", "<u2")]
)
KINDS = {1: "malloc", 2: "calloc", 3: "realloc", 4: "aligned", 5: "free"}
FREE = 5
NEVER = np.iinfo(np.uint64).max  # end of an object that is never freed

# Size classes: powers of two up to 4 KiB. Fine enough to separate objects within a line
# (<= 64 B, where stripes matter) from multi-line ones (where the stride decides the sets),
# and close to the class spacing of the allocators compared, without a class per allocator.
CLASS_BOUNDS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def class_labels() -> list[str]:
    lows = (1, *(b + 1 for b in CLASS_BOUNDS))
    return [f"{lo}-{hi}" for lo, hi in zip(lows, CLASS_BOUNDS, strict=False)] + [f"{CLASS_BOUNDS[-1] + 1}+"]


@dataclass(frozen=True)
class Geometry:
    sets: int = 64  # L1 sets
    line: int = 64  # bytes per line
    shift: int = 5  # stripe = 2^shift bytes
    ort_log2: int = 20  # ORT entries = 2^ort_log2
    small_max: int = 64  # objects up to this size count as small (stripe sharing)

    def check(self) -> Geometry:
        for name, v, lo, hi in (
            ("--sets", self.sets, 1, 1 << 20),
            ("--line", self.line, 1, 1 << 16),
            ("--shift", self.shift, 0, 40),
            ("--ort-log2", self.ort_log2, 0, 28),
            ("--small", self.small_max, 1, 1 << 30),
        ):
            if not lo <= v <= hi:
                raise UserError(f"placement: {name} must be in {lo}..{hi}, got {v}")
        if self.line & (self.line - 1):
            raise UserError(f"placement: --line must be a power of two, got {self.line}")
        return self


# ---------------------------------------------------------------------------------------
# The trace


def read_trace(path: Path) -> np.ndarray:
    """The records of a trace file, in sequence order; a UserError naming the file when it
    is not a trace."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise UserError(f"placement: cannot read trace {path}: {e.strerror or e}") from e
    if len(data) < HEADER.size or data[:8] != MAGIC:
        raise UserError(f"placement: {path} is not a placement trace (no {MAGIC.decode()} header)")
    _, version, record_size, _, _ = HEADER.unpack_from(data)
    if version != VERSION or record_size != RECORD.itemsize:
        raise UserError(
            f"placement: {path}: trace version {version} with {record_size}-byte records; "
            f"this analyser reads version {VERSION} with {RECORD.itemsize}-byte records"
        )
    body = memoryview(data)[HEADER.size :]
    whole = len(body) // RECORD.itemsize * RECORD.itemsize  # a cut-short last record is dropped
    events = np.frombuffer(body[:whole], dtype=RECORD)
    return events[np.argsort(events["seq"], kind="stable")]


def write_trace(path: Path, records: list[tuple], pid: int = 1) -> None:
    """Writes a trace file from (seq, addr, size, tid, kind[, align_log2]) tuples (tests)."""
    rows = [tuple(r) + (0,) * (6 - len(r)) for r in records]
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, VERSION, RECORD.itemsize, pid, 0))
        f.write(np.array(rows, dtype=RECORD).tobytes())


# ---------------------------------------------------------------------------------------
# Live objects


@dataclass
class Objects:
    """Objects of a trace: one entry per allocation, with the sequence number it ends at."""

    addr: np.ndarray
    size: np.ndarray
    tid: np.ndarray
    start: np.ndarray  # seq of the allocation
    end: np.ndarray  # seq of the free (or of the next allocation at the address), NEVER if none

    def live_at(self, seq: int) -> Objects:
        keep = (self.start <= seq) & (seq < self.end)
        return Objects(self.addr[keep], self.size[keep], self.tid[keep], self.start[keep], self.end[keep])

    def __len__(self) -> int:
        return len(self.addr)


def objects_of(events: np.ndarray) -> Objects:
    """Pairs each allocation with the next event at its address: its free, or (when a free
    went unseen) the next allocation there. Frees of addresses never seen allocated are
    ignored."""
    order = np.lexsort((events["seq"], events["addr"]))
    ev = events[order]
    n = len(ev)
    same_next = np.zeros(n, dtype=bool)
    if n > 1:
        same_next[:-1] = ev["addr"][1:] == ev["addr"][:-1]
    end = np.full(n, NEVER, dtype=np.uint64)
    end[:-1][same_next[:-1]] = ev["seq"][1:][same_next[:-1]]
    alloc = ev["kind"] != FREE
    a = ev[alloc]
    return Objects(
        a["addr"].astype(np.uint64),
        a["size"].astype(np.uint64),
        a["tid"].astype(np.uint32),
        a["seq"].astype(np.uint64),
        end[alloc],
    )


def live_count_peak(objects: Objects) -> tuple[int, int]:
    """(seq, live objects) at the first moment the number of live objects is highest."""
    if len(objects) == 0:
        return 0, 0
    starts = np.sort(objects.start)
    ends = np.sort(objects.end[objects.end != NEVER])
    # live after the allocation at each start: started up to it, minus ended up to it
    live = np.arange(1, len(starts) + 1) - np.searchsorted(ends, starts, side="right")
    i = int(np.argmax(live))
    return int(starts[i]), int(live[i])


def choose_point(objects: Objects, events: np.ndarray, at: str) -> tuple[str, int]:
    """('peak'|'exit'|'seq', sequence number) for --at."""
    if at == "peak":
        return "peak", live_count_peak(objects)[0]
    last = int(events["seq"][-1]) if len(events) else 0
    if at == "exit":
        return "exit", last
    try:
        seq = int(at)
    except ValueError:
        raise UserError(f"placement: --at must be peak, exit or a sequence number, got '{at}'") from None
    if seq < 0:
        raise UserError(f"placement: --at: a sequence number is >= 0, got {seq}")
    return "seq", seq


# ---------------------------------------------------------------------------------------
# The measures


def size_class(size: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.array(CLASS_BOUNDS, dtype=np.uint64), size, side="left")


def _imbalance(histogram: np.ndarray) -> dict[str, Any]:
    n = int(histogram.sum())
    used = int(np.count_nonzero(histogram))
    sets = len(histogram)
    return {
        "objects": n,
        "sets_used": used,
        "sets_used_share": used / sets,
        "max_per_set": int(histogram.max()) if n else 0,
        "max_over_mean": float(histogram.max() * sets / n) if n else None,
    }


def l1_histograms(live: Objects, g: Geometry) -> dict[str, Any]:
    """Base addresses over the L1 sets: overall and per size class (classes with objects)."""
    sets = (live.addr // np.uint64(g.line)) % np.uint64(g.sets)
    classes = size_class(live.size)
    labels = class_labels()
    per_class = []
    for c in range(len(labels)):
        mask = classes == c
        if not mask.any():
            continue
        h = np.bincount(sets[mask].astype(np.int64), minlength=g.sets)
        per_class.append({"class": labels[c], **_imbalance(h), "histogram": h.tolist()})
    overall = np.bincount(sets.astype(np.int64), minlength=g.sets)
    return {"overall": {**_imbalance(overall), "histogram": overall.tolist()}, "classes": per_class}


def stripe_sharing(live: Objects, g: Geometry) -> dict[str, Any]:
    """Small objects whose stripes (the 2^shift-byte spans their bytes touch) also hold
    another live object. Cross-thread: some sharer was allocated by another thread;
    same-thread: all sharers by the object's own thread."""
    order = np.argsort(live.addr, kind="stable")
    start = live.addr[order].astype(np.int64)
    end = start + np.maximum(live.size[order], 1).astype(np.int64)  # exclusive
    tid = live.tid[order]
    reach = np.maximum.accumulate(end) if len(end) else end  # tolerant of overlaps
    small = np.nonzero(live.size[order] <= g.small_max)[0]
    lo = (start[small] >> g.shift) << g.shift
    hi = (((end[small] - 1) >> g.shift) + 1) << g.shift
    first = np.searchsorted(reach, lo, side="right")  # first object ending after lo
    last = np.searchsorted(start, hi, side="left") - 1  # last object starting before hi
    shared = last > first  # the object itself is one of them
    # thread changes between neighbours, counted from the lowest address: the objects
    # first..last (which include the small object itself) are all of one thread exactly
    # when no change lies between them
    changes = np.concatenate(([0], np.cumsum(tid[1:] != tid[:-1]))) if len(tid) else np.zeros(0, dtype=np.int64)
    cross = shared & (changes[last] - changes[first] > 0)
    n = len(small)
    n_shared, n_cross = int(shared.sum()), int(cross.sum())

    def share(k: int) -> float | None:
        return k / n if n else None

    return {
        "small_objects": n,
        "shared": n_shared,
        "cross_thread": n_cross,
        "same_thread": n_shared - n_cross,
        "shared_share": share(n_shared),
        "cross_thread_share": share(n_cross),
        "same_thread_share": share(n_shared - n_cross),
    }


def ort_threads(live: Objects, g: Geometry) -> dict[str, Any]:
    """ORT entries that live objects of more than one thread map to (every stripe an object
    touches, entry = stripe mod 2^ort_log2)."""
    entries = 1 << g.ort_log2
    s0 = (live.addr >> np.uint64(g.shift)).astype(np.int64)
    s1 = ((live.addr + np.maximum(live.size, 1) - np.uint64(1)) >> np.uint64(g.shift)).astype(np.int64)
    count = s1 - s0 + 1
    hit_by = np.zeros(entries, dtype=np.int32)
    threads = np.unique(live.tid)
    for t in threads:
        mine = live.tid == t
        diff = np.zeros(entries + 1, dtype=np.int64)
        full = count[mine] >= entries
        if full.any():
            diff[0] += 1
            diff[entries] -= 1
        e0 = s0[mine][~full] % entries
        e1 = e0 + count[mine][~full]
        wraps = e1 > entries
        np.add.at(diff, e0, 1)
        np.add.at(diff, np.minimum(e1, entries), -1)
        np.add.at(diff, np.zeros(int(wraps.sum()), dtype=np.int64), 1)
        np.add.at(diff, e1[wraps] - entries, -1)
        hit_by += (np.cumsum(diff[:entries]) > 0).astype(np.int32)
    hit = int(np.count_nonzero(hit_by))
    multi = int(np.count_nonzero(hit_by > 1))
    return {
        "threads": len(threads),
        "entries": entries,
        "entries_hit": hit,
        "multi_thread_entries": multi,
        "multi_thread_share": multi / hit if hit else None,
    }


def analyse(events: np.ndarray, g: Geometry, at: str = "peak") -> dict[str, Any]:
    """Every measure at the chosen point, as the JSON the command writes."""
    objects = objects_of(events)
    how, seq = choose_point(objects, events, at)
    live = objects.live_at(seq)
    return {
        "geometry": asdict(g),
        "point": {"at": how, "seq": seq, "live_objects": len(live), "events": len(events)},
        "threads": int(len(np.unique(live.tid))),
        "size_classes": class_labels(),
        "l1": l1_histograms(live, g),
        "stripes": stripe_sharing(live, g),
        "ort": ort_threads(live, g),
    }


# ---------------------------------------------------------------------------------------
# Running a program under the tracer


def tracer_path(build_dir: Path) -> Path:
    path = build_dir / TRACER
    if not path.is_file():
        raise UserError(f"placement: {path} not built (run `make`, or name another --build-dir)")
    return path


def run_traced(
    command: list[str], env: dict[str, str], tracer: Path, trace_dir: Path, timeout_s: float | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """Runs command with the tracer preloaded in front of env's LD_PRELOAD (the allocator
    under test); returns the finished process and its trace file (that of its own pid; the
    traces of children it exec'd lie beside it)."""
    env = dict(env)
    prior = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = str(tracer) + (":" + prior if prior else "")
    prefix = trace_dir / "trace"
    env[TRACE_VARIABLE] = str(prefix)
    try:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise UserError(f"placement: cannot run {command[0]}: {e.strerror or e}") from e
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    return done, Path(f"{prefix}.{proc.pid}")


def analyse_command(
    command: list[str], env: dict[str, str], build_dir: Path, g: Geometry, at: str = "peak", timeout_s=None
) -> tuple[dict[str, Any], subprocess.CompletedProcess]:
    """Runs command under the tracer in a temporary directory and analyses its trace."""
    tracer = tracer_path(build_dir)
    with tempfile.TemporaryDirectory(prefix="txalloc-placement-") as tmp:
        done, trace = run_traced(command, env, tracer, Path(tmp), timeout_s)
        if not trace.is_file():
            raise UserError(
                f"placement: {command[0]} left no trace (exit status {done.returncode}; "
                "a static program, or one that ended by a signal before any buffer filled?)"
            )
        result = analyse(read_trace(trace), g, at)
    result["returncode"] = done.returncode
    return result, done


# ---------------------------------------------------------------------------------------
# Output


def summary_text(result: dict[str, Any]) -> str:
    p, s, o, overall = result["point"], result["stripes"], result["ort"], result["l1"]["overall"]
    g = result["geometry"]

    def pct(v):
        return "–" if v is None else f"{100 * v:.1f}%"

    lines = [
        f"live objects at {p['at']} (seq {p['seq']} of {p['events']} events): {p['live_objects']}, "
        f"{result['threads']} threads",
        f"L1 {g['sets']} sets x {g['line']} B: {overall['sets_used']} sets used, "
        f"max/mean {overall['max_over_mean'] or 0:.2f}",
    ]
    for c in result["l1"]["classes"]:
        lines.append(
            f"  {c['class']:>10} B: {c['objects']:8} objects, {c['sets_used']:4} sets used, "
            f"max/mean {c['max_over_mean']:.2f}"
        )
    lines.append(
        f"small objects (<= {g['small_max']} B) sharing a {1 << g['shift']}-byte stripe: "
        f"{pct(s['shared_share'])} of {s['small_objects']} (cross-thread {pct(s['cross_thread_share'])}, "
        f"same-thread {pct(s['same_thread_share'])})"
    )
    lines.append(
        f"ORT entries (2^{g['ort_log2']}) hit by more than one thread: {o['multi_thread_entries']} "
        f"of {o['entries_hit']} hit ({pct(o['multi_thread_share'])})"
    )
    return "\n".join(lines) + "\n"


def write_heat_map(result: dict[str, Any], path: Path, title: str = "") -> Path:
    """Objects per L1 set (x) and size class (y), one row per class with objects."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    classes = result["l1"]["classes"]
    g = result["geometry"]
    grid = np.array([c["histogram"] for c in classes] or [[0] * g["sets"]], dtype=float)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.4 * len(grid)))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_yticks(range(len(classes)), [f"{c['class']} B" for c in classes])
    ax.set_xlabel(f"L1 set ({g['sets']} sets x {g['line']} B lines)")
    ax.set_title(title or f"object base addresses over L1 sets at {result['point']['at']}")
    fig.colorbar(im, ax=ax, label="objects")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"placement: cannot write {path}: {e.strerror or e}") from e
    finally:
        plt.close(fig)
    return path
