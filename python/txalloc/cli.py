"""The `txalloc` command: `study`, `report`, `peers`, `specs`, `placement`, `syncchar`."""

from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from . import allocators as alloc_mod
from . import metadata, placement, report, report_placement, runner, syncchar, syncchar_study, syncchar_validate
from .errors import UserError
from .paths import default_build_dir, repo_root
from .spec import SpecError, bundled_specs, load_registries, load_spec, parse_spec


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def with_repetitions(raw: dict, n: int) -> dict:
    """The spec data with every repetition count (spec, runs, modes) set to n."""
    raw = copy.deepcopy(raw)
    raw["repetitions"] = n
    for run in raw.get("run", []):
        if isinstance(run, dict):
            run.pop("repetitions", None)
    modes = raw.setdefault("modes", {})
    for m in ("quick", "full"):
        if isinstance(modes.get(m, {}), dict):
            modes.setdefault(m, {})["repetitions"] = n
    return raw


def _parse_allocators(text: str | None, known: dict) -> list[str] | None:
    if not text:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in known:
            raise SpecError(f"--allocators: unknown allocator '{n}' (known: {', '.join(sorted(known))})")
    if not names:
        raise SpecError("--allocators: no allocator named")
    return list(dict.fromkeys(names))


def _existing_build_dir(path: Path) -> Path:
    """path, when it is a directory: a study needs the programs built there."""
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise UserError(f"build directory {path} {what} (build with `make`, or name another with --build-dir)")
    return path


def _create_study_dir(study_dir: Path, out: str | None) -> None:
    """Creates study_dir and the parents it lacks; a UserError naming --out when it cannot."""
    where = f"--out {out}" if out else str(study_dir.parent)
    try:
        study_dir.mkdir(parents=True, exist_ok=False)
    except (FileExistsError, NotADirectoryError) as e:
        if study_dir.is_dir():
            raise UserError(f"{study_dir} exists already; start the study again, or resume it with --resume") from e
        blocker = next((p for p in (study_dir, *study_dir.parents) if p.exists() and not p.is_dir()), None)
        in_the_way = blocker or e.filename
        raise UserError(f"cannot create the study directory under {where}: {in_the_way} is not a directory") from e
    except OSError as e:
        raise UserError(f"cannot create the study directory under {where}: {e.strerror or e}") from e


def _nothing_to_run(plan: runner.Plan, build_dir: Path) -> str:
    if not plan.rows:
        return f"no workload of the spec is built under {build_dir / 'bench'}"
    return "none of the study's allocators is available"


def cmd_study(args: argparse.Namespace) -> int:
    repo = repo_root()
    if args.resume:
        study_dir = Path(args.resume).resolve()
        study = report.load_study(study_dir)
        spec = parse_spec(study["spec"], study["spec_source"], study["spec_name"])
        mode = study["mode"]
        names = study["allocators"]
        recorded = study["metadata"].get("build_dir") if isinstance(study["metadata"], dict) else None
        if not args.build_dir and not recorded:
            raise UserError(f"{study_dir / runner.STUDY_FILE} names no build directory; give one with --build-dir")
        build_dir = _existing_build_dir(Path(args.build_dir).resolve() if args.build_dir else Path(recorded))
        if args.spec or args.quick or args.full or args.allocators:
            print(
                "txalloc: --resume continues the study as it was started; other study options are ignored",
                file=sys.stderr,
            )
    else:
        build_dir = _existing_build_dir(Path(args.build_dir).resolve() if args.build_dir else default_build_dir())
        spec = load_spec(args.spec or "default")
        if args.repetitions:
            spec = parse_spec(with_repetitions(spec.raw, args.repetitions), spec.source, spec.name)
        mode = "quick" if args.quick else "full" if args.full else "normal"
        names = _parse_allocators(args.allocators, spec.allocator_defs)
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        parent = Path(args.out).resolve() if args.out else repo / "results"
        study_dir = parent / f"{spec.name}-{stamp}"
        study = None

    plan = runner.make_plan(spec, mode, build_dir, names)
    if args.install_peers and plan.missing_allocators and not alloc_mod.install_missing(plan.missing_allocators):
        plan = runner.make_plan(spec, mode, build_dir, names)
    cells = runner.schedule(plan)
    for note in plan.notes:
        print(f"txalloc: {note}", file=sys.stderr)
    if args.dry_run:
        print(
            f"spec {spec.name} ({spec.source}), mode {mode}: {len(plan.rows)} rows, "
            f"{len(plan.allocators)} allocators, {len(cells)} runs"
        )
        for row in plan.rows:
            print(
                f"  {row.label} x{row.repetitions}: "
                + " ".join(
                    runner.command_line(
                        spec.workloads[row.workload], plan.programs[row.workload], row.params_dict, row.threads
                    )
                )
            )
        return 0

    if not cells:
        raise UserError(f"nothing to run: {_nothing_to_run(plan, build_dir)}")
    if study is None:
        _create_study_dir(study_dir, args.out)
        options = {
            "spec": args.spec or "default",
            "mode": mode,
            "allocators": names or "as in the spec",
            "out": str(study_dir),
            "build_dir": str(build_dir),
            "repetitions_override": args.repetitions,
        }
        study = {
            "spec_name": spec.name,
            "spec_source": spec.source,
            "spec": spec.raw,
            "mode": mode,
            "allocators": names,
            "allocators_available": [a.name for a in plan.allocators],
            "notes": plan.notes,
            "cells_planned": len(cells),
            "started": _now(),
            "finished": None,
            "command": "txalloc " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "options": options,
            "metadata": metadata.collect(repo, build_dir, plan.allocators + plan.missing_allocators, options),
        }
    else:
        study["notes"] = plan.notes
        study["allocators_available"] = [a.name for a in plan.allocators]
        study["cells_planned"] = len(cells)
    (study_dir / runner.STUDY_FILE).write_text(json.dumps(study, indent=2, sort_keys=True))
    print(
        f"txalloc: study {spec.name} ({mode}): {len(plan.rows)} rows, {len(plan.allocators)} allocators, "
        f"{len(cells)} runs, into {study_dir}",
        file=sys.stderr,
    )

    try:
        runner.execute(plan, study_dir)
        if not args.no_placement:
            report_placement.run_all(plan, study_dir, build_dir)
        syncchar_study.run_all(plan, study_dir)
    except KeyboardInterrupt:
        print(f"\ntxalloc: interrupted; resume with: txalloc study --resume {study_dir}", file=sys.stderr)
        report.render(study_dir)
        return 130
    study["finished"] = _now()
    (study_dir / runner.STUDY_FILE).write_text(json.dumps(study, indent=2, sort_keys=True))
    path = report.render(study_dir)
    print(f"txalloc: report: {path}", file=sys.stderr)
    print(path)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    path = report.render(Path(args.dir))
    print(path)
    return 0


def cmd_peers(args: argparse.Namespace) -> int:
    # the default build directory may not be built yet; one named on purpose must exist
    build_dir = _existing_build_dir(Path(args.build_dir).resolve()) if args.build_dir else default_build_dir()
    _, defs = load_registries()
    found = alloc_mod.locate_all(list(defs.values()), build_dir)
    if args.install:
        alloc_mod.install_missing(found)
        found = alloc_mod.locate_all(list(defs.values()), build_dir)
    for f in found:
        where = f.path or ("(system malloc)" if f.available else f.missing_reason)
        version = f" {f.definition.package} {f.package_version}" if f.package_version else ""
        print(f"{f.name:10} {'ok' if f.available else 'missing':8} {where}{version}")
    return 0


def cmd_specs(args: argparse.Namespace) -> int:
    for name in bundled_specs():
        spec = load_spec(name)
        first = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
        print(f"{name:10} {first}")
    return 0


def _int_option(name: str, text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UserError(f"placement: {name} takes an integer, got '{text}'") from None


def cmd_placement(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    g = placement.Geometry(
        sets=_int_option("--sets", args.sets),
        line=_int_option("--line", args.line),
        shift=_int_option("--shift", args.shift),
        ort_log2=_int_option("--ort-log2", args.ort_log2),
        small_max=_int_option("--small", args.small),
    ).check()
    if args.trace and command:
        raise UserError("placement: give either --trace FILE or -- PROGRAM ARGS, not both")
    if args.trace:
        if args.allocator:
            raise UserError("placement: --allocator applies to a program run, not to --trace")
        result = placement.analyse(placement.read_trace(Path(args.trace)), g, args.at)
        result["trace"] = args.trace
    elif command:
        build_dir = _existing_build_dir(Path(args.build_dir).resolve() if args.build_dir else default_build_dir())
        _, defs = load_registries()
        name = args.allocator or "glibc"
        if name not in defs:
            raise UserError(f"placement: unknown allocator '{name}' (known: {', '.join(sorted(defs))})")
        found = alloc_mod.locate(defs[name], build_dir)
        if not found.available:
            raise UserError(f"placement: allocator {name}: {found.missing_reason}")
        result, done = placement.analyse_command(command, found.environment(dict(os.environ)), build_dir, g, args.at)
        result["command"] = command
        result["allocator"] = name
        if done.returncode != 0:
            print(f"txalloc: placement: {command[0]} exited with status {done.returncode}", file=sys.stderr)
    else:
        raise UserError("placement: nothing to analyse: give -- PROGRAM ARGS, or --trace FILE")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.png:
        placement.write_heat_map(result, Path(args.png), " ".join(command) if command else args.trace)
    print(placement.summary_text(result), end="")
    return 0


def _one_line_error(prefix: str):
    """argparse's error(), printing one line and exiting 2 like every other user error."""

    def error(message: str):
        print(f"txalloc: error: {prefix}: {message}", file=sys.stderr)
        sys.exit(2)

    return error


def _add_placement_parser(sub) -> None:
    pl = sub.add_parser(
        "placement",
        help="where an allocator puts a program's objects: L1 sets, ORT stripes (docs/placement.md)",
        description="Runs PROGRAM under the placement tracer over an allocator and reports, for the objects "
        "live at a chosen point, the histogram of base addresses over L1 sets per size class, the share "
        "of small objects sharing an ORT stripe (same-thread, cross-thread) and the ORT entries hit by "
        "more than one thread. Usage: txalloc placement [options] -- PROGRAM ARGS",
    )
    pl.error = _one_line_error("placement")
    pl.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS", help="the program to run")
    pl.add_argument(
        "--allocator", metavar="NAME", help="allocator from allocators.toml to run it over (default: glibc)"
    )
    pl.add_argument("--build-dir", metavar="DIR", help="where libplacement-trace.so is (default: build/)")
    pl.add_argument("--trace", metavar="FILE", help="analyse this trace file instead of running a program")
    pl.add_argument(
        "--at",
        default="peak",
        metavar="POINT",
        help="the live objects at: peak (most objects live; default), exit, or a sequence number",
    )
    pl.add_argument("--sets", default="64", metavar="N", help="L1 sets (default 64)")
    pl.add_argument("--line", default="64", metavar="BYTES", help="L1 line size, a power of two (default 64)")
    pl.add_argument("--shift", default="5", metavar="N", help="stripe = 2^N bytes (default 5)")
    pl.add_argument("--ort-log2", default="20", metavar="N", help="ORT entries = 2^N (default 20)")
    pl.add_argument("--small", default="64", metavar="BYTES", help="small objects: up to this size (default 64)")
    pl.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    pl.add_argument("--png", metavar="FILE", help="write a heat map: objects per L1 set and size class")
    pl.set_defaults(func=cmd_placement)


def _threads_list(text: str) -> list[int]:
    try:
        ns = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"syncchar: --threads takes numbers separated by commas, got '{text}'") from None
    if not ns or any(n < 1 for n in ns):
        raise UserError(f"syncchar: --threads takes thread counts of 1 or more, got '{text}'")
    return sorted(set(ns))


def _cmd_syncchar_validate(args: argparse.Namespace) -> int:
    if args.trace:
        raise UserError("syncchar: --validate runs its own traces: give no TRACE")
    names = list(syncchar_validate.WORKLOADS) if not args.workloads else args.workloads.split(",")
    unknown = [n for n in names if n not in syncchar_validate.WORKLOADS]
    if unknown:
        known = ", ".join(syncchar_validate.WORKLOADS)
        raise UserError(f"syncchar: unknown workload {unknown[0]} (known: {known})")
    threads = _threads_list(args.threads or "2")
    if len(threads) != 1 or threads[0] < 2:
        raise UserError("syncchar: --validate takes one thread count of 2 or more (--threads 2)")
    if args.repetitions < 1 or args.duration <= 0:
        raise UserError("syncchar: --repetitions must be >= 1 and --duration > 0")
    build_dir = _existing_build_dir(Path(args.build_dir).resolve() if args.build_dir else default_build_dir())
    rows = syncchar_validate.validate(build_dir, names, threads[0], args.duration, args.repetitions)
    if args.json:
        syncchar.dump_json({"threads": threads[0], "rows": rows}, Path(args.json))
    if args.plots:
        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        syncchar.write_validation_plot(rows, out / "syncchar-validation.png")
    text = syncchar_validate.markdown(rows, threads[0])
    if args.report:
        Path(args.report).write_text(text)
    print(text, end="")
    return 0


def cmd_syncchar(args: argparse.Namespace) -> int:
    if args.validate:
        return _cmd_syncchar_validate(args)
    if not args.trace:
        raise UserError("syncchar: name a TRACE, or give --validate")
    threads = _threads_list(args.threads or ",".join(str(n) for n in syncchar.DEFAULT_THREADS))
    if args.window is not None and args.window < 2:
        raise UserError("syncchar: --window must be at least 2")
    if not 0 < args.sample <= 100:
        raise UserError("syncchar: --sample is a percentage in (0, 100]")
    trace = syncchar.read_trace(Path(args.trace))
    result = syncchar.analyse(
        trace,
        threads=threads,
        window=args.window,
        unit=args.unit,
        sample=args.sample,
        symbolize=not args.no_symbols,
    )
    text = syncchar.markdown(result)
    if args.json:
        syncchar.dump_json(result, Path(args.json))
    if args.report:
        Path(args.report).write_text(text)
    if args.plots:
        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        syncchar.write_plots(result, out, Path(args.trace).stem)
    print(text, end="")
    return 0


def _add_syncchar_parser(sub) -> None:
    sc = sub.add_parser(
        "syncchar",
        help="data independence, conflict density and predicted TM speed-up from a recorded run (docs/syncchar.md)",
        description="Analyses a trace written by a run with TXALLOC_SYNCCHAR=FILE (best under TXALLOC_TM=glock, "
        "the paper's setting): I_n and D_n per n, overall and per block site; the TM time and speed-up the "
        "model predicts against the recorded lock run; hot spots (Table 8) with the objects and allocation "
        "sites behind them; and false conflicts, pairs that share a stripe or line but no word.",
    )
    sc.error = _one_line_error("syncchar")
    sc.add_argument("trace", metavar="TRACE", nargs="?", help="the trace file")
    sc.add_argument(
        "--threads", metavar="N,N", help="sample sizes n (default 1,2,4,8,16,32; --validate: its threads, 2)"
    )
    sc.add_argument("--window", type=int, metavar="N", help="sections per site and window (default: the trace's)")
    sc.add_argument(
        "--unit",
        default="auto",
        choices=["auto", "word", "line", "stripe"],
        help="conflicts by this unit (default: the STM's stripe where the trace allows)",
    )
    sc.add_argument("--sample", type=float, default=100.0, metavar="PCT", help="analyse this share of the sections")
    sc.add_argument("--json", metavar="FILE", help="write every figure as JSON")
    sc.add_argument("--report", metavar="FILE", help="write the markdown report there too")
    sc.add_argument("--plots", metavar="DIR", help="write I_n/D_n and speed-up plots (PNG) there")
    sc.add_argument("--no-symbols", action="store_true", help="do not run addr2line on sites")
    v = sc.add_argument_group("validation (no TRACE): predict stm from glock runs, measure, compare")
    v.add_argument("--validate", action="store_true", help="run the validation table (docs/syncchar.md)")
    v.add_argument("--workloads", metavar="A,B", help="these workloads only (default: all of the table)")
    v.add_argument("--duration", type=float, default=0.3, metavar="S", help="seconds per run (default 0.3)")
    v.add_argument("--repetitions", type=int, default=3, metavar="N", help="runs per figure, medians (default 3)")
    v.add_argument("--build-dir", metavar="DIR", help="the CMake build directory (default: build/)")
    sc.set_defaults(func=cmd_syncchar)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="txalloc", description="txalloc study harness (see docs/study.md)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("study", help="run a study and write its report")
    s.add_argument(
        "spec", nargs="?", help=f"bundled spec name ({', '.join(bundled_specs())}) or TOML file; default: default"
    )
    s.add_argument("--out", metavar="DIR", help="write the study directory under DIR (default: results/)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="fewer repetitions, smaller workloads")
    g.add_argument("--full", action="store_true", help="more repetitions, larger workloads")
    s.add_argument("--allocators", metavar="A,B", help="compare only these allocators")
    s.add_argument("--repetitions", type=int, metavar="N", help="repetitions per cell, overriding the spec")
    s.add_argument("--resume", metavar="DIR", help="continue an interrupted study in DIR")
    s.add_argument("--build-dir", metavar="DIR", help="the CMake build directory (default: build/)")
    s.add_argument(
        "--install-peers",
        action="store_true",
        help="apt-get install missing peer allocators when root (else print how)",
    )
    s.add_argument("--dry-run", action="store_true", help="print the plan and the command lines; run nothing")
    s.add_argument(
        "--no-placement",
        action="store_true",
        help="skip the short placement run per TM workload and allocator (report section Placement)",
    )
    s.set_defaults(func=cmd_study)

    r = sub.add_parser("report", help="re-render the report of a study directory")
    r.add_argument("dir")
    r.set_defaults(func=cmd_report)

    pe = sub.add_parser("peers", help="list the allocators found on this machine")
    pe.add_argument("--install", action="store_true", help="apt-get install the missing ones when root")
    pe.add_argument("--build-dir", metavar="DIR")
    pe.set_defaults(func=cmd_peers)

    sp = sub.add_parser("specs", help="list the bundled specs")
    sp.set_defaults(func=cmd_specs)

    _add_placement_parser(sub)
    _add_syncchar_parser(sub)
    return p


def _error(message: str) -> int:
    """Prints one line on stderr; the exit status of a command the user can correct."""
    print(f"txalloc: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if getattr(args, "func", None) is cmd_placement:
            return _error(f"placement: unrecognized arguments: {' '.join(unknown)} (options go before --)")
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "repetitions", None) is not None and args.repetitions < 1:
        return _error("--repetitions must be >= 1")
    try:
        return args.func(args)
    except SpecError as e:
        return _error(f"bad spec: {e}")
    except UserError as e:
        return _error(str(e))
    except OSError as e:  # a file the harness could not read or write, named with its reason
        return _error(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))


if __name__ == "__main__":
    sys.exit(main())
