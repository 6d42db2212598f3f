import math

import pytest

from txalloc import stats

# Student t quantiles t(0.975, df) from standard tables.
T975 = {
    1: 12.7062047,
    2: 4.3026527,
    3: 3.1824463,
    4: 2.7764451,
    5: 2.5705818,
    9: 2.2621572,
    10: 2.2281389,
    29: 2.0452296,
    30: 2.0422725,
    100: 1.9839715,
}


@pytest.mark.parametrize("df,expected", sorted(T975.items()))
def test_t_quantile_matches_tables(df, expected):
    assert stats.t_quantile(0.975, df) == pytest.approx(expected, abs=2e-7)


def test_t_quantile_other_levels_and_symmetry():
    assert stats.t_quantile(0.95, 1) == pytest.approx(6.3137515, abs=1e-6)
    assert stats.t_quantile(0.995, 4) == pytest.approx(4.6040949, abs=1e-6)
    assert stats.t_quantile(0.025, 9) == pytest.approx(-2.2621572, abs=1e-6)
    assert stats.t_quantile(0.5, 7) == 0.0
    # Large df tends to the normal quantile.
    assert stats.t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)


def test_t_cdf_inverts_quantile():
    for df in (1, 3, 8, 40):
        for p in (0.6, 0.9, 0.975, 0.999):
            assert stats.t_cdf(stats.t_quantile(p, df), df) == pytest.approx(p, abs=1e-10)
    assert stats.t_cdf(0.0, 5) == pytest.approx(0.5)


def test_t_quantile_rejects_bad_arguments():
    with pytest.raises(ValueError):
        stats.t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        stats.t_quantile(0.9, 0)


def test_incomplete_beta_known_values():
    # I_0.5(2, 3) = sum_{j=2..4} C(4, j) / 16 = 11/16
    assert stats.regularized_incomplete_beta(2, 3, 0.5) == pytest.approx(0.6875, abs=1e-12)
    # I_x(1, 1) = x ; I_x(a, b) = 1 - I_{1-x}(b, a)
    assert stats.regularized_incomplete_beta(1, 1, 0.3) == pytest.approx(0.3, abs=1e-12)
    assert stats.regularized_incomplete_beta(2.5, 0.5, 0.8) == pytest.approx(
        1 - stats.regularized_incomplete_beta(0.5, 2.5, 0.2), abs=1e-12
    )


def test_confidence_interval_of_known_sample():
    lo, hi = stats.confidence_interval([1, 2, 3, 4, 5])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)  # t(0.975, 4) * s / sqrt(n)
    assert lo == pytest.approx(3 - half, abs=1e-6)
    assert hi == pytest.approx(3 + half, abs=1e-6)
    lo, hi = stats.confidence_interval([10.0, 12.0])
    assert (lo + hi) / 2 == pytest.approx(11.0)
    assert (hi - lo) / 2 == pytest.approx(12.7062047 * math.sqrt(2) / math.sqrt(2), abs=1e-6)


def test_single_value_has_no_interval():
    s = stats.summarize([4.0])
    assert s.n == 1 and s.median == 4.0 and s.stdev == 0.0
    assert math.isnan(s.ci_low) and math.isnan(s.ci_high)


def test_summary_median_mean_stdev():
    s = stats.summarize([3.0, 1.0, 2.0, 10.0])
    assert s.median == 2.5
    assert s.mean == 4.0
    assert s.stdev == pytest.approx(math.sqrt((1 + 9 + 4 + 36) / 3))
    assert stats.median([5, 1, 3]) == 3


def test_geometric_mean():
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geometric_mean([2.0, 2.0, 2.0]) == pytest.approx(2.0)
    assert math.isnan(stats.geometric_mean([]))
    with pytest.raises(ValueError):
        stats.geometric_mean([1.0, 0.0])


def test_slowdown_ratios_orientation():
    times = stats.slowdown_ratios({"a": 2.0, "b": 1.0, "c": 3.0}, higher_is_better=False)
    assert times == {"a": 2.0, "b": 1.0, "c": 3.0}
    rates = stats.slowdown_ratios({"a": 100.0, "b": 50.0}, higher_is_better=True)
    assert rates == {"a": 1.0, "b": 2.0}
    assert stats.slowdown_ratios({"a": 0.0}, higher_is_better=False) == {}
