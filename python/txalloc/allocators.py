"""Finding the allocators on this machine, their packages, and the environment that makes
a bench program run under one of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .spec import AllocatorDef

LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)


@dataclass
class FoundAllocator:
    definition: AllocatorDef
    path: str | None  # library file (None for the system malloc)
    available: bool
    missing_reason: str = ""
    package_version: str | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with this allocator preloaded in front of any LD_PRELOAD already there."""
        env = dict(base)
        if self.path:
            prior = env.get("LD_PRELOAD", "")
            env["LD_PRELOAD"] = self.path + (":" + prior if prior else "")
        env.update(self.definition.env)
        return env


def _ldconfig_cache() -> dict[str, str]:
    exe = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if not exe:
        return {}
    try:
        out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    cache: dict[str, str] = {}
    for line in out.splitlines():
        line = line.strip()
        if "=>" not in line:
            continue
        left, path = line.split("=>", 1)
        soname = left.split()[0]
        if "x86-64" in left or "64" in left or soname not in cache:
            cache.setdefault(soname, path.strip())
    return cache


_CACHE: dict[str, str] | None = None


def find_library(name: str) -> str | None:
    global _CACHE
    if os.path.isabs(name):
        return name if os.path.isfile(name) else None
    if _CACHE is None:
        _CACHE = _ldconfig_cache()
    if name in _CACHE and os.path.isfile(_CACHE[name]):
        return _CACHE[name]
    for d in LIBRARY_DIRS:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def package_version(package: str | None) -> str | None:
    if not package or not shutil.which("dpkg-query"):
        return None
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _locate_one(lib: str, build_dir: Path) -> tuple[str | None, str]:
    """(path, "") or (None, why it is missing) for one library of an allocator entry."""
    if lib.startswith("@build/"):
        path = build_dir / lib[len("@build/") :]
        return (str(path), "") if path.is_file() else (None, f"{path} not built (run `make`)")
    path = find_library(lib)
    return (path, "") if path else (None, f"{lib} not found")


def locate(definition: AllocatorDef, build_dir: Path) -> FoundAllocator:
    """Resolves the entry's library, or its ':'-separated list of libraries preloaded in that
    order (a shim in front of an allocator)."""
    if definition.library is None:
        return FoundAllocator(definition, None, True, package_version=package_version(definition.package))
    paths = []
    for lib in definition.library.split(":"):
        path, why = _locate_one(lib, build_dir)
        if path is None:
            hint = f" (Debian package {definition.package})" if definition.package and not lib.startswith("@") else ""
            return FoundAllocator(definition, None, False, why + hint)
        paths.append(path)
    return FoundAllocator(definition, ":".join(paths), True, package_version=package_version(definition.package))


def locate_all(definitions: list[AllocatorDef], build_dir: Path) -> list[FoundAllocator]:
    return [locate(d, build_dir) for d in definitions]


def install_missing(found: list[FoundAllocator], out=sys.stderr) -> list[str]:
    """Installs the Debian packages of the missing allocators when running as root with
    apt-get; otherwise says how to get them. Returns the packages that are still missing."""
    missing = [f.definition.package for f in found if not f.available and f.definition.package]
    if not missing:
        return []
    cmd = ["apt-get", "install", "-y", "-q", *missing]
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"txalloc: installing missing allocator packages: {' '.join(missing)}", file=out)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        try:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=False, timeout=600, stdout=subprocess.DEVNULL)
            r = subprocess.run(cmd, env=env, check=False, timeout=900, stdout=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            print(f"txalloc: apt-get failed ({e}); the study goes on without them", file=out)
            return missing
        if r.returncode == 0:
            global _CACHE
            _CACHE = None
            return []
        print(f"txalloc: apt-get exited with {r.returncode}; the study goes on without them", file=out)
        return missing
    print(
        "txalloc: allocators missing: "
        + ", ".join(f"{f.name} ({f.missing_reason})" for f in found if not f.available)
        + f"\n  to add them: sudo {' '.join(cmd)}\n  the study goes on with the others",
        file=out,
    )
    return missing
