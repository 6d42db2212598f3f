"""The abort plot's layout: one panel per workload and structure, short group labels."""

from txalloc.analysis import RowResult, TmFigures
from txalloc.plots import abort_panels


def tm_row(**params) -> RowResult:
    row = RowResult("intset", "tm", params, 2, "unused", "ops_per_s", True)
    row.tm["glibc"] = TmFigures(1, 90, 10, 5, 5, 0, {"read_locked": 10.0})
    return row


def test_abort_panels_split_by_structure_and_label_what_varies_inside():
    rows = [tm_row(structure=s, update=u, initial=4096) for s in ("list", "hash") for u in (0, 60)]
    rows += [tm_row(structure="list", update=60, shift=sh) for sh in (3, 4)]
    panels = abort_panels(rows)
    assert [p.title for p in panels] == ["intset structure=list", "intset structure=hash"]
    lst, hsh = panels
    # initial is absent from the shift rows, so it varies inside the list panel
    assert [label for label, _ in lst.groups] == [
        "initial=4096\nupdate=0",
        "initial=4096\nupdate=60",
        "shift=3\nupdate=60",
        "shift=4\nupdate=60",
    ]
    assert [label for label, _ in hsh.groups] == ["update=0", "update=60"]
    assert [r.params["update"] for _, r in hsh.groups] == [0, 60]


def test_abort_panels_of_a_workload_without_categories():
    rows = [tm_row(update=u) for u in (0, 20)] + [tm_row(update=0)]
    rows[2].workload = "bank"
    panels = abort_panels(rows)
    assert [p.title for p in panels] == ["intset", "bank"]
    assert [label for label, _ in panels[0].groups] == ["update=0", "update=20"]
    assert [label for label, _ in panels[1].groups] == ["all"]
