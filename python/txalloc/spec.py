"""Study specs: what to run.

A spec is a TOML file (or the name of a bundled one in `txalloc/specs/`). It names the
allocators, thread counts, repetitions and a list of `[[run]]` entries, each a workload
with parameter values (a list of values is a sweep). Workloads and allocators come from
the registries `txalloc/workloads.toml` and `txalloc/allocators.toml`; a spec may add or
replace entries with its own `[workload.NAME]` / `[allocator.NAME]` tables (same format).

Every problem found while loading is a SpecError whose message names the file, the place
in it and the problem; nothing is run before the whole spec has been checked.
"""

from __future__ import annotations

import itertools
import json
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .cachegrind import Measurement, SettingsError, parse_measurement
from .paths import PACKAGE_DIR

SPECS_DIR = PACKAGE_DIR / "specs"
WORKLOADS_FILE = PACKAGE_DIR / "workloads.toml"
ALLOCATORS_FILE = PACKAGE_DIR / "allocators.toml"

PARAM_TYPES = ("int", "float", "str", "bool")
GROUPS = ("alloc", "tm")
MODES = ("normal", "quick", "full")
# --quick / --full when a spec does not say: repetitions and the scale of scaled parameters.
DEFAULT_MODES = {
    "quick": {"repetitions": 2, "scale": 0.25},
    "full": {"repetitions": 10, "scale": 3.0},
}


class SpecError(Exception):
    """A spec or registry that cannot be run; the message says where and why."""


# ---------------------------------------------------------------------------------------
# Definitions


@dataclass(frozen=True)
class ParamDef:
    name: str
    flag: str | None  # command-line flag, or None when the value goes to `env`
    type: str
    default: Any = None
    choices: tuple = ()
    scale: bool = False  # value multiplied by the study scale (--quick / --full)
    doc: str = ""
    env: str | None = None  # environment variable that carries the value (instead of a flag)


@dataclass(frozen=True)
class WorkloadDef:
    name: str
    program: tuple[str, ...]  # candidates, first found wins; relative = under build/bench
    group: str  # "alloc" or "tm"
    metric: str  # key of the JSON's "results"
    higher_is_better: bool
    threads_flag: str | None
    args: tuple[str, ...]
    params: dict[str, ParamDef]
    description: str = ""
    verify_allocator: bool = True
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AllocatorDef:
    name: str
    library: str | None  # None: the system malloc; "@build/x.so": build dir; "a:b": both, in order
    package: str | None  # Debian package that provides the library
    env: dict[str, str] = field(default_factory=dict)
    reported: str = ""  # the allocator.name the bench probe must print; default: name
    description: str = ""

    @property
    def expected_name(self) -> str:
        return self.reported or self.name


@dataclass(frozen=True)
class RunEntry:
    workload: str
    params: dict[str, list]  # every parameter of the workload, each a list of values
    threads: list[int]
    repetitions: int | None  # None: the spec's
    timeout_s: float | None
    only_if_missing: str | None = None  # run only when this workload's program is not built
    allocators: list[str] | None = None  # None: the spec's
    cachegrind: Measurement | None = None  # also count cache misses of each row under cachegrind


@dataclass(frozen=True)
class SynccharRuns:
    """The spec's `[syncchar]` table: after the timed cells, record a short glock run of each
    TM row with the Syncchar recorder (syncchar_study.py) and report I_n/D_n per workload."""

    sample: int = 10  # percent of blocks recorded (TXALLOC_SYNCCHAR_SAMPLE)
    duration: float = 0.2  # seconds: a `scale` float parameter (--duration) is cut to this


@dataclass
class Spec:
    name: str
    source: str  # file the spec came from
    description: str
    repetitions: int
    timeout_s: float
    allocators: list[str]
    threads: list[int]
    modes: dict[str, dict]
    runs: list[RunEntry]
    workloads: dict[str, WorkloadDef]
    allocator_defs: dict[str, AllocatorDef]
    env: dict[str, str]
    raw: dict  # the spec file as loaded, kept in the study record
    syncchar: SynccharRuns | None = None  # None: no Syncchar runs


@dataclass(frozen=True)
class Row:
    """One line of the result tables: a workload with fixed parameters at a thread count."""

    workload: str
    params: tuple[tuple[str, Any], ...]  # sorted (name, value)
    threads: int
    repetitions: int
    timeout_s: float
    only_if_missing: str | None = field(default=None, compare=False)
    allocators: tuple[str, ...] = field(default=(), compare=False)  # the allocators it runs under
    cachegrind: Measurement | None = field(default=None, compare=False)

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def config_label(self) -> str:
        """Workload and parameters, without threads."""
        return config_label(self.workload, self.params_dict)

    @property
    def label(self) -> str:
        return f"{self.config_label} t={self.threads}"


def config_label(workload: str, params: dict[str, Any], shown: list[str] | None = None) -> str:
    keys = shown if shown is not None else sorted(params)
    parts = [f"{k}={_fmt_value(params[k])}" for k in keys if k in params]
    return workload + (" " + " ".join(parts) if parts else "")


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def cell_key(workload: str, params: dict, threads: int, allocator: str, rep: int) -> str:
    """Identity of one run in results.jsonl (what resuming skips)."""
    return json.dumps([workload, params, threads, allocator, rep], sort_keys=True)


# ---------------------------------------------------------------------------------------
# Checking values


def _where(ctx: str, key: str) -> str:
    return f"{ctx}.{key}" if ctx else key


def _type_name(v: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "list", dict: "table"}.get(
        type(v), type(v).__name__
    )


def _check_keys(table: dict, allowed: set[str], ctx: str, origin: str) -> None:
    for k in table:
        if k not in allowed:
            raise SpecError(
                f"{origin}: {_where(ctx, k) if ctx else k}: unknown key '{k}' "
                f"(allowed here: {', '.join(sorted(allowed))})"
            )


def _expect(v: Any, types: tuple, what: str, ctx: str, origin: str) -> Any:
    # bool is an int to isinstance, but not to a spec
    if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
        raise SpecError(f"{origin}: {ctx}: expected {what}, got {_type_name(v)} {v!r}")
    return v


def _str_list(v: Any, ctx: str, origin: str) -> list[str]:
    if isinstance(v, str):
        return [v]
    _expect(v, (list,), "a string or a list of strings", ctx, origin)
    for i, item in enumerate(v):
        _expect(item, (str,), "a string", f"{ctx}[{i}]", origin)
    return list(v)


def _threads_list(v: Any, ctx: str, origin: str) -> list[int]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    _expect(v, (list,), "a thread count or a list of them", ctx, origin)
    if not v:
        raise SpecError(f"{origin}: {ctx}: the list of thread counts is empty")
    for i, t in enumerate(v):
        _expect(t, (int,), "a positive integer", f"{ctx}[{i}]", origin)
        if t < 1:
            raise SpecError(f"{origin}: {ctx}[{i}]: thread count must be >= 1, got {t}")
    return list(v)


def check_param_value(p: ParamDef, v: Any, ctx: str, origin: str) -> Any:
    """The value converted to the parameter's type, or SpecError naming the problem."""
    if p.type == "int":
        _expect(v, (int,), f"an integer for parameter '{p.name}'", ctx, origin)
    elif p.type == "float":
        _expect(v, (int, float), f"a number for parameter '{p.name}'", ctx, origin)
        v = float(v)
    elif p.type == "str":
        _expect(v, (str,), f"a string for parameter '{p.name}'", ctx, origin)
    elif p.type == "bool":
        _expect(v, (bool,), f"true or false for parameter '{p.name}'", ctx, origin)
    if p.choices and v not in p.choices:
        raise SpecError(
            f"{origin}: {ctx}: {v!r} is not a valid value of parameter '{p.name}' "
            f"(choices: {', '.join(map(str, p.choices))})"
        )
    return v


# ---------------------------------------------------------------------------------------
# Registries


def _load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None


_PARAM_KEYS = {"flag", "env", "type", "default", "choices", "scale", "doc"}
_WORKLOAD_KEYS = {
    "program",
    "group",
    "metric",
    "better",
    "threads_flag",
    "args",
    "params",
    "description",
    "verify_allocator",
    "env",
}
_ALLOCATOR_KEYS = {"library", "package", "env", "reported", "description"}


def parse_workload(name: str, t: Any, origin: str) -> WorkloadDef:
    ctx = f"workload.{name}"
    _expect(t, (dict,), "a table", ctx, origin)
    _check_keys(t, _WORKLOAD_KEYS, ctx, origin)
    if "program" not in t:
        raise SpecError(f"{origin}: {ctx}: missing 'program' (the bench program's name under build/bench)")
    program = _str_list(t["program"], f"{ctx}.program", origin)
    group = _expect(t.get("group", "alloc"), (str,), "a string", f"{ctx}.group", origin)
    if group not in GROUPS:
        raise SpecError(f"{origin}: {ctx}.group: '{group}' is not one of {', '.join(GROUPS)}")
    metric = _expect(t.get("metric", "time_s"), (str,), "a string", f"{ctx}.metric", origin)
    better = _expect(t.get("better", "lower"), (str,), "a string", f"{ctx}.better", origin)
    if better not in ("lower", "higher"):
        raise SpecError(f"{origin}: {ctx}.better: must be 'lower' or 'higher', got '{better}'")
    threads_flag = t.get("threads_flag", "--threads")
    if threads_flag is not None and threads_flag != "":
        _expect(threads_flag, (str,), "a string", f"{ctx}.threads_flag", origin)
    else:
        threads_flag = None
    args = _str_list(t.get("args", []), f"{ctx}.args", origin)
    env = _expect(t.get("env", {}), (dict,), "a table", f"{ctx}.env", origin)
    for k, v in env.items():
        _expect(v, (str,), "a string", f"{ctx}.env.{k}", origin)
    params: dict[str, ParamDef] = {}
    ptable = _expect(t.get("params", {}), (dict,), "a table", f"{ctx}.params", origin)
    for pname, pt in ptable.items():
        pctx = f"{ctx}.params.{pname}"
        _expect(pt, (dict,), "a table", pctx, origin)
        _check_keys(pt, _PARAM_KEYS, pctx, origin)
        if ("flag" in pt) == ("env" in pt):
            raise SpecError(
                f"{origin}: {pctx}: needs exactly one of 'flag' (command-line flag) or 'env' (environment variable)"
            )
        ptype = pt.get("type", "int")
        if ptype not in PARAM_TYPES:
            raise SpecError(f"{origin}: {pctx}.type: '{ptype}' is not one of {', '.join(PARAM_TYPES)}")
        choices = tuple(pt.get("choices", ()))
        p = ParamDef(
            name=pname,
            flag=_expect(pt["flag"], (str,), "a string", f"{pctx}.flag", origin) if "flag" in pt else None,
            env=_expect(pt["env"], (str,), "a string", f"{pctx}.env", origin) if "env" in pt else None,
            type=ptype,
            choices=choices,
            scale=_expect(pt.get("scale", False), (bool,), "true or false", f"{pctx}.scale", origin),
            doc=pt.get("doc", ""),
        )
        if p.scale and p.type not in ("int", "float"):
            raise SpecError(f"{origin}: {pctx}.scale: only int and float parameters can scale")
        default = pt.get("default")
        if default is not None:
            default = check_param_value(p, default, f"{pctx}.default", origin)
        params[pname] = ParamDef(**{**p.__dict__, "default": default})
    return WorkloadDef(
        name=name,
        program=tuple(program),
        group=group,
        metric=metric,
        higher_is_better=(better == "higher"),
        threads_flag=threads_flag,
        args=tuple(args),
        params=params,
        description=t.get("description", ""),
        verify_allocator=_expect(
            t.get("verify_allocator", True), (bool,), "true or false", f"{ctx}.verify_allocator", origin
        ),
        env=dict(env),
    )


def parse_allocator(name: str, t: Any, origin: str) -> AllocatorDef:
    ctx = f"allocator.{name}"
    _expect(t, (dict,), "a table", ctx, origin)
    _check_keys(t, _ALLOCATOR_KEYS, ctx, origin)
    library = t.get("library", "")
    _expect(library, (str,), "a string", f"{ctx}.library", origin)
    package = t.get("package", "")
    _expect(package, (str,), "a string", f"{ctx}.package", origin)
    env = _expect(t.get("env", {}), (dict,), "a table", f"{ctx}.env", origin)
    for k, v in env.items():
        _expect(v, (str,), "a string", f"{ctx}.env.{k}", origin)
    return AllocatorDef(
        name=name,
        library=library or None,
        package=package or None,
        env=dict(env),
        reported=_expect(t.get("reported", ""), (str,), "a string", f"{ctx}.reported", origin),
        description=t.get("description", ""),
    )


def load_registries(extra: dict | None = None, origin: str = "") -> tuple[dict, dict]:
    """Bundled workloads and allocators, with a spec's own `workload`/`allocator` tables
    replacing or adding entries."""
    wdata = _load_toml(WORKLOADS_FILE).get("workload", {})
    adata = _load_toml(ALLOCATORS_FILE).get("allocator", {})
    workloads = {n: parse_workload(n, t, str(WORKLOADS_FILE)) for n, t in wdata.items()}
    allocators = {n: parse_allocator(n, t, str(ALLOCATORS_FILE)) for n, t in adata.items()}
    if extra:
        w_extra = _expect(extra.get("workload", {}), (dict,), "a table", "workload", origin)
        a_extra = _expect(extra.get("allocator", {}), (dict,), "a table", "allocator", origin)
        for n, t in w_extra.items():
            workloads[n] = parse_workload(n, t, origin)
        for n, t in a_extra.items():
            allocators[n] = parse_allocator(n, t, origin)
    return workloads, allocators


# ---------------------------------------------------------------------------------------
# Specs

_SPEC_KEYS = {
    "name",
    "description",
    "repetitions",
    "timeout_s",
    "allocators",
    "threads",
    "modes",
    "run",
    "workload",
    "allocator",
    "env",
    "syncchar",
}
_SYNCCHAR_KEYS = {"sample", "duration"}
_RUN_KEYS = {
    "workload",
    "params",
    "threads",
    "repetitions",
    "timeout_s",
    "only_if_missing",
    "allocators",
    "cachegrind",
}
_MODE_KEYS = {"repetitions", "scale"}


def bundled_specs() -> list[str]:
    return sorted(p.stem for p in SPECS_DIR.glob("*.toml"))


def resolve_spec_path(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or "/" in name_or_path or p.exists():
        if not p.is_file():
            raise SpecError(f"{name_or_path}: no such spec file")
        return p
    bundled = SPECS_DIR / f"{name_or_path}.toml"
    if not bundled.is_file():
        raise SpecError(
            f"unknown spec '{name_or_path}': neither a file nor a bundled spec (bundled: {', '.join(bundled_specs())})"
        )
    return bundled


def load_spec(name_or_path: str) -> Spec:
    path = resolve_spec_path(name_or_path)
    return parse_spec(_load_toml(path), str(path), default_name=path.stem)


def _positive_int(v: Any, ctx: str, origin: str) -> int:
    _expect(v, (int,), "a positive integer", ctx, origin)
    if v < 1:
        raise SpecError(f"{origin}: {ctx}: must be >= 1, got {v}")
    return v


def _positive_number(v: Any, ctx: str, origin: str) -> float:
    _expect(v, (int, float), "a positive number", ctx, origin)
    if v <= 0:
        raise SpecError(f"{origin}: {ctx}: must be > 0, got {v}")
    return float(v)


def parse_spec(data: dict, origin: str, default_name: str = "study") -> Spec:
    _check_keys(data, _SPEC_KEYS, "", origin)
    workloads, allocator_defs = load_registries(data, origin)
    name = _expect(data.get("name", default_name), (str,), "a string", "name", origin)
    repetitions = _positive_int(data.get("repetitions", 3), "repetitions", origin)
    timeout_s = _positive_number(data.get("timeout_s", 120), "timeout_s", origin)
    allocators = _str_list(data.get("allocators", list(allocator_defs)), "allocators", origin)
    for i, a in enumerate(allocators):
        if a not in allocator_defs:
            raise SpecError(
                f"{origin}: allocators[{i}]: unknown allocator '{a}' (known: {', '.join(sorted(allocator_defs))})"
            )
    if len(set(allocators)) != len(allocators):
        raise SpecError(f"{origin}: allocators: an allocator is listed twice")
    threads = _threads_list(data.get("threads", [1]), "threads", origin)
    env = _expect(data.get("env", {}), (dict,), "a table", "env", origin)
    for k, v in env.items():
        _expect(v, (str,), "a string", f"env.{k}", origin)

    modes = {m: dict(v) for m, v in DEFAULT_MODES.items()}
    for m, t in _expect(data.get("modes", {}), (dict,), "a table", "modes", origin).items():
        if m not in ("quick", "full"):
            raise SpecError(f"{origin}: modes.{m}: unknown mode (modes: quick, full)")
        _expect(t, (dict,), "a table", f"modes.{m}", origin)
        _check_keys(t, _MODE_KEYS, f"modes.{m}", origin)
        if "repetitions" in t:
            modes[m]["repetitions"] = _positive_int(t["repetitions"], f"modes.{m}.repetitions", origin)
        if "scale" in t:
            modes[m]["scale"] = _positive_number(t["scale"], f"modes.{m}.scale", origin)

    runs_data = data.get("run", [])
    _expect(runs_data, (list,), "a list of [[run]] tables", "run", origin)
    if not runs_data:
        raise SpecError(f"{origin}: the spec has no [[run]] entries: nothing to run")
    runs = [parse_run(i, r, workloads, threads, origin, allocator_defs) for i, r in enumerate(runs_data)]
    syncchar = None
    if "syncchar" in data:
        t = _expect(data["syncchar"], (dict,), "a table", "syncchar", origin)
        _check_keys(t, _SYNCCHAR_KEYS, "syncchar", origin)
        syncchar = SynccharRuns(
            sample=_positive_int(t.get("sample", 10), "syncchar.sample", origin),
            duration=_positive_number(t.get("duration", 0.2), "syncchar.duration", origin),
        )
        if syncchar.sample > 100:
            raise SpecError(f"{origin}: syncchar.sample: a percentage, 1 to 100, got {syncchar.sample}")
    return Spec(
        name=name,
        source=origin,
        description=data.get("description", ""),
        repetitions=repetitions,
        timeout_s=timeout_s,
        allocators=allocators,
        threads=threads,
        modes=modes,
        runs=runs,
        workloads=workloads,
        allocator_defs=allocator_defs,
        env=dict(env),
        raw=data,
        syncchar=syncchar,
    )


def parse_run(
    i: int, r: Any, workloads: dict[str, WorkloadDef], threads: list[int], origin: str, allocator_defs: dict
) -> RunEntry:
    ctx = f"run[{i}]"
    _expect(r, (dict,), "a table", ctx, origin)
    _check_keys(r, _RUN_KEYS, ctx, origin)
    if "workload" not in r:
        raise SpecError(f"{origin}: {ctx}: missing 'workload'")
    wname = _expect(r["workload"], (str,), "a string", f"{ctx}.workload", origin)
    if wname not in workloads:
        raise SpecError(f"{origin}: {ctx}.workload: unknown workload '{wname}' (known: {', '.join(sorted(workloads))})")
    w = workloads[wname]
    given = _expect(r.get("params", {}), (dict,), "a table", f"{ctx}.params", origin)
    params: dict[str, list] = {}
    for pname, v in given.items():
        if pname not in w.params:
            known = ", ".join(sorted(w.params)) or "none"
            raise SpecError(
                f"{origin}: {ctx}.params.{pname}: workload '{wname}' has no parameter '{pname}' "
                f"(its parameters: {known})"
            )
        values = v if isinstance(v, list) else [v]
        if not values:
            raise SpecError(f"{origin}: {ctx}.params.{pname}: empty list of values")
        params[pname] = [
            check_param_value(
                w.params[pname], x, f"{ctx}.params.{pname}" + (f"[{j}]" if isinstance(v, list) else ""), origin
            )
            for j, x in enumerate(values)
        ]
    for pname, p in w.params.items():
        if pname not in params and p.default is not None:
            params[pname] = [p.default]
    return RunEntry(
        workload=wname,
        params=params,
        threads=_threads_list(r["threads"], f"{ctx}.threads", origin) if "threads" in r else list(threads),
        repetitions=_positive_int(r["repetitions"], f"{ctx}.repetitions", origin) if "repetitions" in r else None,
        timeout_s=_positive_number(r["timeout_s"], f"{ctx}.timeout_s", origin) if "timeout_s" in r else None,
        only_if_missing=_known_workload(r.get("only_if_missing"), workloads, f"{ctx}.only_if_missing", origin),
        allocators=_known_allocators(r["allocators"], allocator_defs, f"{ctx}.allocators", origin)
        if "allocators" in r
        else None,
        cachegrind=_cachegrind(r["cachegrind"], w, f"{ctx}.cachegrind", origin) if "cachegrind" in r else None,
    )


def _cachegrind(t: Any, w: WorkloadDef, ctx: str, origin: str) -> Measurement:
    try:
        m = parse_measurement(t)
    except SettingsError as e:
        raise SpecError(f"{origin}: {_where(ctx, e.key) if e.key else ctx}: {e}") from None
    for name in (m.per, *m.omit, *dict(m.params)):
        if name not in w.params:
            raise SpecError(
                f"{origin}: {ctx}: workload '{w.name}' has no parameter '{name}' "
                f"(its parameters: {', '.join(sorted(w.params)) or 'none'})"
            )
    if w.params[m.per].type != "int":
        raise SpecError(f"{origin}: {ctx}.per: parameter '{m.per}' is not an integer count")
    checked = tuple((n, check_param_value(w.params[n], v, f"{ctx}.params.{n}", origin)) for n, v in m.params)
    return replace(m, params=checked)


def _known_allocators(v: Any, defs: dict, ctx: str, origin: str) -> list[str]:
    names = _str_list(v, ctx, origin)
    for i, a in enumerate(names):
        if a not in defs:
            raise SpecError(f"{origin}: {ctx}[{i}]: unknown allocator '{a}' (known: {', '.join(sorted(defs))})")
    return names


def _known_workload(v: Any, workloads: dict, ctx: str, origin: str) -> str | None:
    if v is None:
        return None
    _expect(v, (str,), "a workload name", ctx, origin)
    if v not in workloads:
        raise SpecError(f"{origin}: {ctx}: unknown workload '{v}' (known: {', '.join(sorted(workloads))})")
    return v


# ---------------------------------------------------------------------------------------
# Expansion


def scaled(p: ParamDef, v: Any, scale: float) -> Any:
    if not p.scale or scale == 1.0:
        return v
    if p.type == "int":
        return max(1, int(round(v * scale)))
    return float(f"{v * scale:.6g}")


def mode_settings(spec: Spec, mode: str) -> tuple[int | None, float]:
    """(repetitions override or None, scale) for a mode."""
    if mode not in MODES:
        raise SpecError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
    if mode == "normal":
        return None, 1.0
    m = spec.modes[mode]
    return m["repetitions"], m["scale"]


def expand_rows(spec: Spec, mode: str = "normal") -> list[Row]:
    """Every (workload, parameter combination, threads) of the spec, in spec order, with
    scaled parameters applied and duplicates removed."""
    reps_override, scale = mode_settings(spec, mode)
    rows: list[Row] = []
    seen: set = set()
    for run in spec.runs:
        w = spec.workloads[run.workload]
        names = list(run.params)
        for combo in itertools.product(*(run.params[n] for n in names)):
            values = {n: scaled(w.params[n], v, scale) for n, v in zip(names, combo, strict=True)}
            for t in run.threads:
                reps = reps_override or run.repetitions or spec.repetitions
                row = Row(
                    workload=run.workload,
                    params=tuple(sorted(values.items())),
                    threads=t,
                    repetitions=reps,
                    timeout_s=run.timeout_s or spec.timeout_s,
                    only_if_missing=run.only_if_missing,
                    allocators=tuple(run.allocators or spec.allocators),
                    cachegrind=run.cachegrind,
                )
                ident = (row.workload, row.params, row.threads)
                if ident not in seen:
                    seen.add(ident)
                    rows.append(row)
    return rows


def shell_line(env: dict[str, str], argv: list[str]) -> str:
    """A run as a shell line: its own environment, then the command."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + " ".join(shlex.quote(a) for a in argv)


def command_line(w: WorkloadDef, program: str, params: dict[str, Any], threads: int) -> list[str]:
    argv = [program, *w.args]
    for name in sorted(params):
        p = w.params[name]
        v = params[name]
        if p.flag is None:
            continue  # passed in the environment (parameter_environment)
        if p.type == "bool":
            if v:
                argv.append(p.flag)
        else:
            argv += [p.flag, str(v)]
    if w.threads_flag:
        argv += [w.threads_flag, str(threads)]
    return argv


def parameter_environment(w: WorkloadDef, params: dict[str, Any]) -> dict[str, str]:
    """The environment variables that carry parameters declared with `env`."""
    env = {}
    for name, v in params.items():
        p = w.params[name]
        if p.env:
            env[p.env] = ("1" if v else "0") if p.type == "bool" else str(v)
    return env
