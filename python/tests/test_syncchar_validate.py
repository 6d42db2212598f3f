"""The validation table's arithmetic and its command-line checks (docs/syncchar.md)."""

from __future__ import annotations

import pytest

from txalloc import cli, syncchar, syncchar_validate


def test_section_cost_ratio_recovers_the_stm_cost():
    # held 0.4 s and other 0.6 s over 100 blocks: h = 4 ms, o = 6 ms. A one-thread STM
    # whose blocks cost 3 h + o = 18 ms runs at 1/18 ms where glock runs at 1/10 ms.
    run = syncchar.LockRun(threads=2, elapsed_s=1.0, acq_s=0.0, held_s=0.4, other_s=0.6, sections=100)
    assert syncchar_validate.section_cost_ratio(run, 100.0, 1000 / 18) == pytest.approx(3.0)
    assert syncchar_validate.calibrated_time(run, 2.0, 2, 3.0) == pytest.approx(0.4 * 3 * 2 / 2 + 0.6)


def test_geometric_mean_of_errors():
    assert syncchar_validate.geometric_mean([0.1, 0.4]) == pytest.approx(0.2)
    assert syncchar_validate.geometric_mean([0.0, 0.1]) == pytest.approx((1e-3 * 0.1) ** 0.5)


def test_markdown_has_a_row_per_workload_and_the_mean():
    rows = [
        {
            "name": "a",
            "D_n": 1.0,
            "predicted": 1.5,
            "calibrated": 1.2,
            "measured": 1.0,
            "error": 0.5,
            "calibrated_error": 0.2,
        },
        {
            "name": "b",
            "D_n": 2.0,
            "predicted": 1.0,
            "calibrated": 1.0,
            "measured": 1.0,
            "error": 0.02,
            "calibrated_error": 0.02,
        },
    ]
    text = syncchar_validate.markdown(rows, 2)
    assert "| a | 1.00 | 1.50 |" in text
    assert "| geometric mean | | | | | 10 % | 6 % |" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--validate", "--workloads", "nope"], "unknown workload nope"),
        (["--validate", "--threads", "1"], "one thread count of 2 or more"),
        (["--validate", "some.trace"], "give no TRACE"),
        ([], "name a TRACE, or give --validate"),
        (["--validate", "--build-dir", "/nonexistent/build"], "does not exist"),
    ],
)
def test_validate_arguments(capsys, args, message):
    assert cli.main(["syncchar", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
