from __future__ import annotations

import pandas as pd
import pytest

from fqa_analysis.core import ratings
from fqa_analysis.data import FEEDBACK_COLUMNS


def _frame(items: list[list[str]], domain: str = "WHO") -> pd.DataFrame:
    rows = [
        (domain, "test", i, f"q{i}", 0, "passage", a, label, "e")
        for i, labels in enumerate(items)
        for a, label in enumerate(labels)
    ]
    return pd.DataFrame(rows, columns=FEEDBACK_COLUMNS)


def test_scale_and_distribution() -> None:
    assert [ratings.rating_value(x) for x in ratings.LABELS] == [0, 1, 2, 3]
    assert ratings.rating_distribution(["Bad", "Excellent", "Excellent"]).tolist() == [1 / 3, 0, 0, 2 / 3]
    with pytest.raises(ValueError, match="unknown rating label 'Good'"):
        ratings.rating_distribution(["Good"])
    with pytest.raises(ValueError, match="at least one rating"):
        ratings.rating_distribution([])


def test_majority_tie_rule() -> None:
    assert ratings.majority_label(["Acceptable", "Excellent"]) == "Acceptable"
    assert ratings.majority_label(["Acceptable", "Excellent"], tie="higher") == "Excellent"
    assert ratings.majority_label(["Bad", "Acceptable", "Excellent"]) == "Bad"
    assert ratings.majority_label(["Bad", "Excellent", "Excellent"], tie="lower") == "Excellent"


def test_item_ratings_collapses_annotators() -> None:
    out = ratings.item_ratings(_frame([["Excellent", "Acceptable"], ["Bad", "Bad"]]))
    first = out.iloc[0]
    assert first["n_ratings"] == 2
    assert (first["p_acceptable"], first["p_excellent"]) == (0.5, 0.5)
    assert first["expected_rating"] == 2.5
    assert first["majority"] == "Acceptable"
    assert not first["unanimous"]
    assert out.iloc[1]["unanimous"] and out.iloc[1]["majority"] == "Bad"


def test_agreement_by_hand() -> None:
    # Items (0,0), (3,3), (0,3). Coincidences: o00=2, o33=2, o03=o30=1, n0=n3=3, n=6.
    # Ordinal delta^2(0,3) = (n0+n1+n2+n3 - (n0+n3)/2)^2 = (6-3)^2 = 9.
    # D_o = (1*9 + 1*9)/6 = 3; D_e = (3*3*9*2)/(6*5) = 5.4; alpha = 1 - 3/5.4 = 4/9.
    frame = _frame([["Bad", "Bad"], ["Excellent", "Excellent"], ["Bad", "Excellent"]])
    out = ratings.agreement(frame).iloc[0]
    assert out["items"] == 3 and out["ratings_per_item"] == 2
    assert out["unanimous"] == pytest.approx(2 / 3)
    assert out["pairwise"] == pytest.approx(2 / 3)
    assert out["alpha_ordinal"] == pytest.approx(4 / 9)


def test_pairwise_agreement_with_three_annotators() -> None:
    # (E, E, A): pairs EE agree, EA, EA disagree -> 1/3 agree.
    out = ratings.agreement(_frame([["Excellent", "Excellent", "Acceptable"]]), by=["domain"])
    assert out.iloc[0]["pairwise"] == pytest.approx(1 / 3)
    assert out.iloc[0]["unanimous"] == 0.0


def test_rating_quality_by_hand() -> None:
    import numpy as np

    pred = np.array([[0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.5, 0.5]])
    ann = np.array([[0.5, 0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0]])
    q = ratings.rating_quality(pred, ann, ["Bad", "Excellent"])
    # KL item 1: 0.5 ln(0.5/0.25) * 2 = ln 2; item 2: 1 * ln(1/0.5) = ln 2 -> mean ln 2.
    assert q["kl"] == pytest.approx(np.log(2))
    # argmax: item 1 ties -> first class (Bad) = majority; item 2 ties 2/3 -> Acceptable != Excellent.
    assert q["accuracy"] == 0.5
    # classes: Bad (tp 1) F1 = 1; Acceptable (fp 1) F1 = 0; Excellent (fn 1) F1 = 0 -> 1/3.
    assert q["macro_f1"] == pytest.approx(1 / 3)
    # P(Excellent) 0.25 vs share 0.5 (bin 2), 0.5 vs 1.0 (bin 5): (0.25 + 0.5) / 2.
    assert q["ece_excellent"] == pytest.approx(0.375)
