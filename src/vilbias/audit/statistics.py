"""The audit's statistics: Wilson intervals for rates and for S (a mean over activities), Newcombe's
interval for differences, the smoothed log odds with Woolf's interval, Fisher's exact and the
two-proportion z test, Benjamini-Hochberg q-values (statsmodels and scipy underneath)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


def fisher_p(a: int, b: int, c: int, d: int) -> float | None:
    """Two-sided Fisher exact p of ``[[a, b], [c, d]]``; None when a row is empty."""
    if a + b == 0 or c + d == 0:
        return None
    from scipy.stats import fisher_exact

    return float(fisher_exact([[a, b], [c, d]]).pvalue)


def two_proportion_p(x1: int, n1: int, x2: int, n2: int) -> float | None:
    """Two-sided pooled two-proportion z-test (the paper's test for text vs image); None when
    undefined (an empty sample, or both proportions 0 or 1)."""
    if n1 == 0 or n2 == 0:
        return None
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return None
    from scipy.stats import norm

    return float(2 * norm.sf(abs((x1 / n1 - x2 / n2) / se)))


def add_q_values(records: list[dict[str, Any]], p: str = "p", q: str = "q") -> list[dict[str, Any]]:
    """Benjamini-Hochberg q-values over the records' p-values (records without one get None)."""
    tested = [r for r in records if r.get(p) is not None]
    if tested:
        from scipy.stats import false_discovery_control

        for r, value in zip(tested, false_discovery_control([r[p] for r in tested], method="bh"), strict=True):
            r[q] = float(value)
    for r in records:
        r.setdefault(q, None)
    return records


def wilson(selected: float, offered: float, alpha: float) -> tuple[float, float]:
    """Wilson score interval of ``selected / offered`` in percent (statsmodels; a non-integer
    ``offered`` is an effective sample size)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(selected, offered, alpha=alpha, method="wilson")
    return 100 * float(low), 100 * float(high)


Cells = dict[str, list[int]]
"""activity -> [n_response, n_option] of one identity."""


def mean_rate(cells: Cells) -> float | None:
    """VIGNETTE's S: the mean over the activities of the per-activity rates, in percent."""
    rates = [k / n for k, n in cells.values() if n]
    return 100 * sum(rates) / len(rates) if rates else None


def mean_rate_interval(cells: Cells, alpha: float) -> tuple[float | None, float | None]:
    """Wilson interval of S at the Kish effective sample size (:func:`effective_size`): S is a
    proportion whose questions weigh ``1 / (|A| n_a)`` each, and unequal weights carry less
    information than as many equal ones. With equal counts per activity (or one activity) this
    is the ordinary Wilson interval of the pooled rate; unlike a bootstrap over questions it does
    not collapse to a point when every answer in a cell agrees, which is the rule with one to a
    few questions per cell."""
    s, n_eff = effective_size(cells)
    if s is None:
        return None, None
    return wilson(s / 100 * n_eff, n_eff, alpha)


def effective_size(cells: Cells) -> tuple[float | None, float]:
    """``(S, n_eff)``: S and the Kish effective sample size ``|A|^2 / sum_a 1/n_a`` of its questions
    (each weighs ``1 / (|A| n_a)``)."""
    ns = [n for _, n in cells.values() if n]
    s = mean_rate(cells)
    return s, (len(ns) ** 2 / sum(1 / n for n in ns) if ns else 0.0)


def difference_interval(first: Cells, second: Cells, alpha: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``S(first) - S(second)`` (points; statsmodels
    ``confint_proportions_2indep(method="newcomb")``): the two Wilson intervals of S, at their
    effective sizes, combined by the method of variance estimates recovery. The two sides are
    disjoint sets of questions (with / without the partner, high / low traits); for text vs image
    they are the same questions asked twice, which makes it conservative."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    (s1, n1), (s2, n2) = effective_size(first), effective_size(second)
    low, high = confint_proportions_2indep(s1 / 100 * n1, n1, s2 / 100 * n2, n2, method="newcomb", compare="diff",
                                           alpha=alpha)
    return 100 * float(low), 100 * float(high)


def smoothed_log_odds(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """``ln(odds_a / odds_b)``, ``odds_x = (k_x + 1) / (n_x - k_x + 1)`` (VIGNETTE's add-one smoothing)."""
    return math.log((k_a + 1) / (n_a - k_a + 1)) - math.log((k_b + 1) / (n_b - k_b + 1))


def log_odds_interval(k_a: int, n_a: int, k_b: int, n_b: int, alpha: float) -> tuple[float, float]:
    """Woolf's logit interval of the add-one-smoothed 2x2 table (statsmodels ``Table2x2``):
    ``log odds +- z * sqrt(sum of 1 / smoothed cell)``, the same smoothing as the value."""
    import numpy as np
    from statsmodels.stats.contingency_tables import Table2x2

    table = Table2x2(np.array([[k_a + 1, n_a - k_a + 1], [k_b + 1, n_b - k_b + 1]], dtype=float), shift_zeros=False)
    low, high = table.log_oddsratio_confint(alpha=alpha)
    return float(low), float(high)


def pooled(cells: Cells) -> tuple[int, int]:
    return sum(k for k, _ in cells.values()), sum(n for _, n in cells.values())


@dataclass
class MetricOptions:
    alpha: float = field(default=0.05, metadata={
        "help": "Significance threshold: p < alpha is marked significant (plots, summary counts), and every "
                "interval is a (1 - alpha) interval."})

    def validate(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"--alpha must be between 0 and 1 (exclusive), not {self.alpha}")
