import math
import random

import pytest

from vilbias.metrics.agreement import cohen_kappa, krippendorff_alpha_nominal


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_matches_scikit_learn(seed):
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(seed)
    a = [rng.choice(["biased", "not_biased"]) for _ in range(200)]
    b = [x if rng.random() < 0.8 else rng.choice(["biased", "not_biased"]) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_known_values():
    assert cohen_kappa(["x", "y", "x", "y"], ["x", "y", "x", "y"]) == 1.0
    assert cohen_kappa(["x", "y"], ["y", "x"]) == -1.0
    # 2x2 table [[20, 5], [10, 15]]: po = 0.7, pe = 0.5 -> kappa 0.4
    a = ["B"] * 25 + ["N"] * 25
    b = ["B"] * 20 + ["N"] * 5 + ["B"] * 10 + ["N"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert math.isnan(cohen_kappa([], [])) and math.isnan(cohen_kappa(["B", "B"], ["B", "B"]))
    with pytest.raises(ValueError):
        cohen_kappa(["B"], [])


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers,
# 12 units, missing values; nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def test_krippendorff_published_example():
    assert krippendorff_alpha_nominal(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_matches_the_krippendorff_package():
    import krippendorff
    import numpy as np

    rng = random.Random(3)
    data = [[rng.choice(["B", "N", None]) for _ in range(40)] for _ in range(3)]
    codes = {"B": 1.0, "N": 0.0, None: np.nan}
    expected = krippendorff.alpha(reliability_data=np.array([[codes[v] for v in row] for row in data]), level_of_measurement="nominal")
    assert krippendorff_alpha_nominal(data) == pytest.approx(expected, abs=1e-9)
    assert krippendorff_alpha_nominal([r for r in np.array(KRIPPENDORFF_2011, dtype=object)]) == pytest.approx(
        krippendorff.alpha(reliability_data=np.array(KRIPPENDORFF_2011, dtype=float), level_of_measurement="nominal")
    )


def test_krippendorff_edge_cases():
    assert krippendorff_alpha_nominal([["B", "N", "B"], ["B", "N", "B"]]) == 1.0
    assert math.isnan(krippendorff_alpha_nominal([["B", "B"], ["B", "B"]]))  # one value only
    assert math.isnan(krippendorff_alpha_nominal([["B", None], [None, "N"]]))  # nothing pairable
    with pytest.raises(ValueError):
        krippendorff_alpha_nominal([["B"], ["B", "N"]])
