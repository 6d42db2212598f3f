"""A one-line progress bar with ETA on stderr (when stderr is not a terminal, a line every
few seconds instead, so logs stay readable)."""

from __future__ import annotations

import sys
import time


def format_duration(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "--:--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:d}:{s:02d}"


class Progress:
    LOG_INTERVAL_S = 5.0

    def __init__(self, total: int, already_done: int = 0, stream=None, width: int = 28):
        self.total = total
        self.done = already_done
        self.start_done = already_done
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.started = time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.failures = 0
        self.last_logged = float("-inf")

    def eta(self) -> float | None:
        ran = self.done - self.start_done
        if ran <= 0:
            return None
        per_cell = (time.monotonic() - self.started) / ran
        return per_cell * (self.total - self.done)

    def line(self, label: str = "") -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = time.monotonic() - self.started
        fail = f" failed {self.failures}" if self.failures else ""
        return (
            f"[{bar}] {self.done}/{self.total} {frac * 100:3.0f}% "
            f"elapsed {format_duration(elapsed)} ETA {format_duration(self.eta())}{fail} {label}"
        ).rstrip()

    def step(self, label: str = "", failed: bool = False) -> None:
        self.done += 1
        if failed:
            self.failures += 1
        self.show(label, always=failed or self.done == self.total)

    def show(self, label: str = "", always: bool = False) -> None:
        """Redraws the bar. Without a terminal (a log) a line is written at most every
        LOG_INTERVAL_S seconds, and always when asked (a failure, the end)."""
        if not self.tty:
            now = time.monotonic()
            if not always and now - self.last_logged < self.LOG_INTERVAL_S:
                return
            self.last_logged = now
        text = self.line(label)
        if self.tty:
            self.stream.write("\r\x1b[K" + text[:200])
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
