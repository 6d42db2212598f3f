"""The bundled ring and htm specs, and how a spec asks for a cachegrind measurement."""

import pytest

from txalloc.spec import SpecError, expand_rows, load_spec

ALL_PEERS = ["glibc", "jemalloc", "tcmalloc", "tbbmalloc", "mimalloc", "txalloc"]


def test_ring_spec_sweeps_every_64_bytes_and_1008_without_tm():
    spec = load_spec("ring")
    rows = expand_rows(spec)
    sizes = [r.params_dict["node_size"] for r in rows]
    assert sizes == sorted([*range(64, 4097, 64), 1008])
    assert all(r.workload == "ring" and r.threads == 1 and r.allocators == tuple(ALL_PEERS) for r in rows)
    params = rows[0].params_dict
    assert "use_tm" not in params and "tm" not in params  # a pthread mutex
    assert params["read_only"] is False  # each step writes `value`


def test_ring_spec_measures_misses_per_traversal_without_the_duration():
    (row, *_) = expand_rows(load_spec("ring"), "quick")
    m = row.cachegrind
    assert (m.per, m.unit, m.values, m.omit) == ("traversals", "traversal", (100, 1100), ("duration",))
    assert (m.d1, m.i1, m.ll) == ("32768,8,64", "32768,8,64", "8388608,16,64")
    assert row.params_dict["duration"] == 0.0625  # quick mode scales the timed runs only
    assert m.run_params(row.params_dict, 1100) == {"node_size": 64, "read_only": False, "traversals": 1100}


def test_htm_spec_sweeps_ring_and_avl_under_tle():
    rows = expand_rows(load_spec("htm"))
    ring = [r for r in rows if r.workload == "ring"]
    avl = [r for r in rows if r.workload == "avl"]
    assert {r.params_dict["tm"] for r in rows} == {"tle"}
    assert all(r.params_dict["use_tm"] for r in ring)
    assert 1008 in {r.params_dict["node_size"] for r in ring}
    assert {r.threads for r in avl} == {1, 2}
    assert not any(r.cachegrind for r in rows)


@pytest.mark.parametrize(
    "table, message",
    [
        ('{ per = "laps", values = [1, 2] }', "run[0].cachegrind: workload 'ring' has no parameter 'laps'"),
        ('{ per = "duration", values = [1, 2] }', "run[0].cachegrind.per: parameter 'duration' is not an integer"),
        ('{ per = "traversals", values = [2] }', "run[0].cachegrind.values: expected two positive integers"),
        ('{ per = "traversals", values = [1, 2], omit = ["speed"] }', "has no parameter 'speed'"),
        ('{ per = "traversals", values = [1, 2], params = { nodes = "many" } }', "cachegrind.params.nodes"),
        ('{ per = "traversals", values = [1, 2], cache = 1 }', "run[0].cachegrind.cache: unknown key"),
    ],
)
def test_bad_cachegrind_tables_are_spec_errors(write_spec, table, message):
    path = write_spec(f"""
[[run]]
workload = "ring"
cachegrind = {table}
""")
    with pytest.raises(SpecError) as e:
        load_spec(str(path))
    assert message in str(e.value) and str(path) in str(e.value)
