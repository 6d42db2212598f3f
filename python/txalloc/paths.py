"""Where the repository, its build and its results are."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _looks_like_repo(p: Path) -> bool:
    return (p / "CMakeLists.txt").is_file() and (p / "python" / "pyproject.toml").is_file()


def repo_root() -> Path:
    """The txalloc checkout: $TXALLOC_REPO, else the first parent of the working directory
    that holds the project, else the checkout this package was installed from (editable
    install), else the working directory."""
    env = os.environ.get("TXALLOC_REPO")
    if env:
        return Path(env).resolve()
    cwd = Path.cwd().resolve()
    for p in (cwd, *cwd.parents):
        if _looks_like_repo(p):
            return p
    candidate = PACKAGE_DIR.parent.parent
    if _looks_like_repo(candidate):
        return candidate
    return cwd


def default_build_dir() -> Path:
    env = os.environ.get("TXALLOC_BUILD_DIR")
    return Path(env).resolve() if env else repo_root() / "build"
