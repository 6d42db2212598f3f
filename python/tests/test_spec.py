import pytest

from txalloc.spec import SpecError, bundled_specs, expand_rows, load_spec, parse_spec

BASE = """
allocators = ["glibc"]
threads = [1, 2]
"""


def check_error(write_spec, body: str, *fragments: str) -> str:
    path = write_spec(body)
    with pytest.raises(SpecError) as e:
        load_spec(str(path))
    msg = str(e.value)
    assert str(path) in msg, msg  # names the file
    for f in fragments:
        assert f in msg, msg
    return msg


def test_bundled_specs_load_and_expand():
    assert {"default", "alloc", "intset", "machias"} <= set(bundled_specs())
    for name in bundled_specs():
        spec = load_spec(name)
        assert spec.runs
        for mode in ("normal", "quick", "full"):
            assert expand_rows(spec, mode)


def test_unknown_workload(write_spec):
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "nosuch"\n',
        "run[0].workload",
        "unknown workload 'nosuch'",
        "threadtest",
    )


def test_unknown_allocator(write_spec):
    check_error(
        write_spec,
        'allocators = ["glibc", "hoard"]\n[[run]]\nworkload = "fake"\n',
        "allocators[1]",
        "unknown allocator 'hoard'",
        "jemalloc",
    )


def test_unknown_parameter(write_spec):
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "threadtest"\nparams = { rounds = 5, colour = 3 }\n',
        "run[0].params.colour",
        "has no parameter 'colour'",
        "rounds",
    )


def test_wrong_type(write_spec):
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "threadtest"\nparams = { rounds = "many" }\n',
        "run[0].params.rounds",
        "expected an integer",
        "'many'",
    )
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "threadtest"\nparams = { rounds = [1, 2.5] }\n',
        "run[0].params.rounds[1]",
        "expected an integer",
    )
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "threadtest"\nparams = { rounds = true }\n',
        "expected an integer",
        "boolean",
    )
    check_error(
        write_spec, 'repetitions = "three"\n[[run]]\nworkload = "fake"\n', "repetitions", "expected a positive integer"
    )


def test_bad_choice(write_spec):
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "intset"\nparams = { structure = "btree" }\n',
        "'btree' is not a valid value of parameter 'structure'",
        "rbtree",
    )


def test_bad_threads_and_keys(write_spec):
    check_error(write_spec, 'threads = [1, 0]\n[[run]]\nworkload = "fake"\n', "threads[1]", ">= 1")
    check_error(write_spec, 'repetition = 3\n[[run]]\nworkload = "fake"\n', "unknown key 'repetition'", "repetitions")
    check_error(write_spec, BASE + '[[run]]\nworkload = "fake"\nthread = [1]\n', "run[0]", "unknown key 'thread'")
    check_error(write_spec, BASE, "no [[run]] entries")


def test_bad_registry_entry(write_spec):
    entry = '[[run]]\nworkload = "w"\n[workload.w]\nprogram = "w"\nparams.x = { type = "int" }\n'
    check_error(write_spec, BASE + entry, "workload.w.params.x", "exactly one of 'flag'")
    check_error(
        write_spec,
        BASE + '[[run]]\nworkload = "w"\n[workload.w]\nprogram = "w"\nbetter = "faster"\n',
        "workload.w.better",
        "'lower' or 'higher'",
    )


def test_not_toml_and_unknown_name(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("allocators = [\n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(str(p))
    with pytest.raises(SpecError, match="unknown spec 'nosuchspec'.*default"):
        load_spec("nosuchspec")


def test_expansion_sweeps_defaults_and_scale(write_spec):
    path = write_spec("""
allocators = ["fast", "slow"]
threads = [1, 2]
repetitions = 4
modes.quick = { repetitions = 2, scale = 0.5 }
[[run]]
workload = "fake"
params = { value = [1.0, 2.0], mode = "ok" }
[[run]]
workload = "fake"
threads = [4]
repetitions = 7
""")
    spec = load_spec(str(path))
    rows = expand_rows(spec)
    assert [(r.params_dict["value"], r.threads, r.repetitions) for r in rows] == [
        (1.0, 1, 4),
        (1.0, 2, 4),
        (2.0, 1, 4),
        (2.0, 2, 4),
        (1.0, 4, 7),
    ]
    assert all(r.params_dict["mode"] == "ok" for r in rows)  # the default filled in
    quick = expand_rows(spec, "quick")
    assert [(r.params_dict["value"], r.repetitions) for r in quick] == [
        (0.5, 2),
        (0.5, 2),
        (1.0, 2),
        (1.0, 2),
        (0.5, 2),
    ]


def test_parse_spec_from_data():
    spec = parse_spec({"allocators": ["glibc"], "run": [{"workload": "threadtest"}]}, "inline")
    assert spec.allocators == ["glibc"]
    assert expand_rows(spec)[0].params_dict["rounds"] == 800


def test_run_level_allocators(write_spec, study_env):
    from txalloc import runner

    spec = load_spec(
        str(
            write_spec("""
allocators = ["fast", "slow"]
threads = [1]
repetitions = 1
[[run]]
workload = "fake"
[[run]]
workload = "faketm"
allocators = ["slow", "liar"]
""")
        )
    )
    plan = runner.make_plan(spec, "normal", study_env)
    assert [a.name for a in plan.allocators] == ["fast", "slow", "liar"]
    cells = [(c.row.workload, c.allocator.name) for c in runner.schedule(plan)]
    assert sorted(cells) == [("fake", "fast"), ("fake", "slow"), ("faketm", "liar"), ("faketm", "slow")]
    plan = runner.make_plan(spec, "normal", study_env, ["fast", "liar"])  # --allocators
    cells = [(c.row.workload, c.allocator.name) for c in runner.schedule(plan)]
    assert sorted(cells) == [("fake", "fast"), ("faketm", "liar")]
    path = write_spec('[[run]]\nworkload = "fake"\nallocators = ["fast", "hoard"]\n', "bad.toml")
    with pytest.raises(SpecError, match=r"run\[0\].allocators\[1\]: unknown allocator 'hoard'"):
        load_spec(str(path))
