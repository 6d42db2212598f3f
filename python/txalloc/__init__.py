"""txalloc study harness: runs the bench programs across allocators, threads and TM
settings, and writes a report (see docs/study.md)."""

__version__ = "0.1.0"
