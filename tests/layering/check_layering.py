#!/usr/bin/env python3
"""Checks every #include in src/ against the layering rule.

usage: check_layering.py RULES SRC_DIR

RULES is build/layers/rules.txt, generated from src/CMakeLists.txt's layer rules: one line
"<layer>: <allowed>..." per layer, where an allowed entry is a lower layer (any of its
headers) or one header ("alloc/alloc_direct.h"), and a line "*: <header>..." of headers
every layer may include. A file in src/<layer>/ may include its own layer, what its line
allows, the shared headers, and anything that names no layer (public txalloc/ headers,
system headers). A path with ".." is refused: it would step around the include
directories the build gives each layer. Every directory of src/ holding sources must be a
layer. Exit status 0 when every include keeps the rule, 1 otherwise (one line per
violation: file:line: what it includes, and what the rule allows).
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCE_SUFFIXES = {".c", ".h", ".S", ".def", ".inc"}


def read_rules(path):
    layers, shared = {}, set()
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, allowed = line.partition(":")
        if name.strip() == "*":
            shared = set(allowed.split())
        else:
            layers[name.strip()] = set(allowed.split())
    return layers, shared


def allowed_text(layer, layers, shared):
    return " ".join([layer + "/"] + sorted(layers[layer]) + sorted(shared))


def check(src, layers, shared):
    problems = []
    src = pathlib.Path(src)
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(src)
        layer = rel.parts[0] if len(rel.parts) > 1 else None
        if layer not in layers:
            problems.append(f"src/{rel}: src/{layer or '.'} is not a layer "
                            "(add its rule to src/CMakeLists.txt)")
            continue
        for number, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            target = m.group(1)
            first = target.split("/")[0]
            if ".." in target.split("/"):
                problems.append(f"src/{rel}:{number}: includes \"{target}\": a path with '..' "
                                "steps around the layer's include directory")
            elif "/" in target and first in layers and first != layer:
                if first not in layers[layer] and target not in layers[layer] | shared:
                    problems.append(f"src/{rel}:{number}: layer {layer} includes \"{target}\"; "
                                    f"it may include {allowed_text(layer, layers, shared)}")
    return problems


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    layers, shared = read_rules(argv[1])
    problems = check(argv[2], layers, shared)
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} include(s) break the rule of src/CMakeLists.txt")
        return 1
    print(f"layering: every include of {len(layers)} layers keeps the rule")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
