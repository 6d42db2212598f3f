"""What the machine and the software were when a study ran: recorded once per study, so
that a result table always travels with the facts needed to interpret it."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _run(argv: list[str], cwd: Path | None = None) -> str | None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def cache_geometry() -> list[dict]:
    """Caches seen by CPU 0, from sysfs: level, type, size, ways, line, sets, shared CPUs."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    caches = []
    for d in sorted(base.glob("index*")):
        entry = {
            "level": _read(d / "level"),
            "type": _read(d / "type"),
            "size": _read(d / "size"),
            "ways": _read(d / "ways_of_associativity"),
            "line_bytes": _read(d / "coherency_line_size"),
            "sets": _read(d / "number_of_sets"),
            "shared_cpus": _read(d / "shared_cpu_list"),
        }
        caches.append({k: v for k, v in entry.items() if v is not None})
    return caches


def compiler(build_dir: Path) -> str | None:
    cache = _read(build_dir / "CMakeCache.txt") or ""
    cc = None
    for line in cache.splitlines():
        if line.startswith("CMAKE_C_COMPILER:"):
            cc = line.split("=", 1)[1].strip()
    version = _run([cc or "cc", "--version"])
    first = version.splitlines()[0] if version else None
    if cc and first:
        return f"{first} ({cc})"
    return first or cc


def glibc_version() -> str | None:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        return None


def git_revision(repo: Path) -> str | None:
    rev = _run(["git", "rev-parse", "HEAD"], cwd=repo)
    if not rev:
        return None
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
    return rev + ("-dirty" if dirty else "")


def collect(repo: Path, build_dir: Path, allocators: list, options: dict) -> dict:
    try:
        import matplotlib

        mpl = matplotlib.__version__
    except ImportError:
        mpl = None
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "caches": cache_geometry(),
        "kernel": f"{platform.system()} {platform.release()} {platform.version()}",
        "machine": platform.machine(),
        "compiler": compiler(build_dir),
        "glibc": glibc_version(),
        "python": sys.version.split()[0],
        "matplotlib": mpl,
        "txalloc_revision": git_revision(repo),
        "repo": str(repo),
        "build_dir": str(build_dir),
        "allocators": [
            {
                "name": a.name,
                "available": a.available,
                "library": a.path,
                "package": a.definition.package,
                "package_version": a.package_version,
                "missing_reason": a.missing_reason or None,
            }
            for a in allocators
        ],
        "txalloc_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("TXALLOC_")},
        "options": options,
    }
