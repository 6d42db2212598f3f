#!/usr/bin/env python3
"""Proves that check_layering.py catches what breaks the rule: runs it on a small tree of
src/ with one file per case and compares the violations it reports with the expected
ones, then on the same tree without the bad files, which must pass.

usage: test_check_layering.py CHECKER RULES
"""
import pathlib
import subprocess
import sys
import tempfile

# path -> (text, violation expected on line 2?)
CASES = {
    "util/ok.c": ('#include <stdio.h>\n#include "util/message.h"\n'
                  '#include "txalloc/txalloc.h"\n#include "alloc/alloc_options.def"\n', False),
    "txmem/narrow.c": ('#include "txmem/txmem_internal.h"\n#include "alloc/alloc_direct.h"\n',
                       False),
    "tm/public.c": ('#include "tm/tm_internal.h"\n#include "txalloc/txmem.h"\n', False),
    "alloc/upward.c": ('#include "alloc/internal.h"\n#include "tm/tm_internal.h"\n', True),
    "txmem/wide.c": ('#include "txmem/txmem_internal.h"\n#include "alloc/internal.h"\n', True),
    "tm/into_txmem.h": ('#include "tm/tm_internal.h"\n#include <txmem/txmem_internal.h>\n',
                        True),
    "os/relative.c": ('#include "os/os_mem.h"\n#include "../alloc/internal.h"\n', True),
    "util/upward.def": ('/* table */\n#include "txmem/txmem_internal.h"\n', True),
}


def run(checker, rules, src):
    return subprocess.run([sys.executable, checker, rules, str(src)], capture_output=True,
                          text=True)


def write(src, cases):
    for rel, (text, _) in cases.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def main(checker, rules):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "bad" / "src"
        write(src, CASES)
        (src / "stray").mkdir()
        (src / "stray" / "x.c").write_text("int x;\n")
        r = run(checker, rules, src)
        reported = {line.split(": ")[0] for line in r.stdout.splitlines() if ": " in line}
        expected = {f"src/{rel}:2" for rel, (_, bad) in CASES.items() if bad} | {"src/stray/x.c"}
        if r.returncode != 1:
            failures.append(f"a tree with violations: exit {r.returncode}, expected 1")
        if reported - {"layering"} != expected:
            failures.append(f"reported {sorted(reported)}, expected {sorted(expected)}\n"
                            f"{r.stdout}{r.stderr}")

        good = pathlib.Path(tmp) / "good" / "src"
        write(good, {rel: case for rel, case in CASES.items() if not case[1]})
        r = run(checker, rules, good)
        if r.returncode != 0:
            failures.append(f"a tree without violations: exit {r.returncode}\n{r.stdout}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"check_layering caught all {len(expected)} violations and passed the rest")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
