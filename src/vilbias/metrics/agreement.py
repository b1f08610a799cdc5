"""Agreement statistics, as pure functions.

:func:`cohen_kappa` compares two raters on the same items (the automated label against the
reviewed one; the paper reports 0.72). :func:`krippendorff_alpha_nominal` measures agreement
among any number of reviewers with missing ratings (the overlap set shared by all reviewers).
Both are checked against known values in ``tests/review/test_agreement.py``: scikit-learn's
``cohen_kappa_score`` and Krippendorff's own worked example (2011, "Computing Krippendorff's
Alpha-Reliability", nominal α = 0.743).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two equally long label sequences; NaN when it is undefined
    (no items, or both raters always give one and the same label)."""
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs paired ratings, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if expected == 1.0:
        return math.nan
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha_nominal(reliability_data: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha for nominal data.

    Args:
        reliability_data: One row per coder, one column per unit; ``None`` marks a missing
            rating. Units with fewer than two ratings are not pairable and are left out.

    Returns:
        Alpha in (-1, 1]; NaN when there is nothing to compare or only one value occurs.
    """
    if not reliability_data:
        return math.nan
    width = len(reliability_data[0])
    if any(len(row) != width for row in reliability_data):
        raise ValueError("every coder row must have one entry per unit")
    coincidence: Counter[tuple[Hashable, Hashable]] = Counter()
    for u in range(width):
        values = [row[u] for row in reliability_data if row[u] is not None]
        m = len(values)
        if m < 2:
            continue
        for i, c in enumerate(values):
            for j, k in enumerate(values):
                if i != j:
                    coincidence[(c, k)] += 1.0 / (m - 1)
    n_c: Counter[Hashable] = Counter()
    for (c, _), w in coincidence.items():
        n_c[c] += w
    n = sum(n_c.values())
    if n <= 1:
        return math.nan
    disagree_observed = sum(w for (c, k), w in coincidence.items() if c != k)
    disagree_expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    if disagree_expected == 0:
        return math.nan
    return 1.0 - (n - 1) * disagree_observed / disagree_expected
