"""Statistics for a study: summaries of repeated measurements and comparisons between
allocators.

Everything here is plain Python (no scipy): the Student t quantile comes from the
regularized incomplete beta function, evaluated by its continued fraction (modified Lentz
method) and inverted by bisection, which is exact to ~1e-12 for the sample sizes a study
uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_EPS = 1e-15
_TINY = 1e-300


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (converges for x < (a+1)/(a+b+2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        # even step
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        # odd step
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            return h
    return h


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0):
        raise ValueError("a and b must be positive")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t distribution with df degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    x = df / (df + t * t)
    tail = 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (inverse CDF), for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie strictly between 0 and 1")
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:  # bracket: the quantile grows without bound as df -> 0
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 in the denominator); 0 for a single value."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def confidence_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Two-sided Student t confidence interval for the mean. With one value the interval is
    unknown and reported as (nan, nan)."""
    n = len(values)
    if n < 2:
        return (math.nan, math.nan)
    m = mean(values)
    half = t_quantile(0.5 + level / 2.0, n - 1) * stdev(values) / math.sqrt(n)
    return (m - half, m + half)


def geometric_mean(values: Iterable[float]) -> float:
    vals = list(values)
    if not vals:
        return math.nan
    if any(v <= 0 for v in vals):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in vals) / len(vals))


@dataclass(frozen=True)
class Summary:
    """The repetitions of one cell (workload, parameters, threads, allocator)."""

    n: int
    mean: float
    median: float
    stdev: float
    ci_low: float
    ci_high: float

    @property
    def ci_half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2.0


def intervals_overlap(a: Summary, b: Summary) -> bool | None:
    """Whether the confidence intervals of a and b share a point: then the data do not tell
    them apart. None when either interval is unknown (fewer than 2 values)."""
    bounds = (a.ci_low, a.ci_high, b.ci_low, b.ci_high)
    if any(math.isnan(v) for v in bounds):
        return None
    return a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    lo, hi = confidence_interval(values, level)
    return Summary(len(values), mean(values), median(values), stdev(values), lo, hi)


def slowdown_ratios(medians: dict[str, float], higher_is_better: bool) -> dict[str, float]:
    """Each allocator's ratio to the best one of its row, oriented so that 1.0 is the best
    and larger is worse: time / best time, or best throughput / throughput."""
    usable = {k: v for k, v in medians.items() if v is not None and v > 0 and math.isfinite(v)}
    if not usable:
        return {}
    if higher_is_better:
        best = max(usable.values())
        return {k: best / v for k, v in usable.items()}
    best = min(usable.values())
    return {k: v / best for k, v in usable.items()}
