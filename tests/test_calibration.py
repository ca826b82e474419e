from __future__ import annotations

import numpy as np
import pytest

from fqa_analysis.core.calibration import fit_temperature, gold_nll, gold_ranks, pool_softmax, top_k


def test_pool_softmax_by_hand() -> None:
    p = pool_softmax(np.array([[np.log(3.0), 0.0]]), temperature=1.0)
    assert p[0].tolist() == pytest.approx([0.75, 0.25])
    # T = 2 halves the log-odds: odds 3 -> sqrt(3)
    p2 = pool_softmax(np.array([[np.log(3.0), 0.0]]), temperature=2.0)
    assert p2[0, 0] / p2[0, 1] == pytest.approx(np.sqrt(3.0))
    with pytest.raises(ValueError):
        pool_softmax(np.zeros((1, 2)), temperature=0.0)


def test_gold_nll_by_hand() -> None:
    scores = np.array([[np.log(3.0), 0.0], [0.0, 0.0]])
    # -log(0.75) and -log(0.5)
    assert gold_nll(scores, np.array([0, 1]), 1.0) == pytest.approx((-np.log(0.75) - np.log(0.5)) / 2)


def test_fit_temperature_recovers_the_generating_temperature() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4000, 6)) * 3.0
    probs = pool_softmax(logits, 1.0)
    gold = np.array([rng.choice(6, p=row) for row in probs])
    # Scores are the true logits scaled by 1/4: the right temperature is 0.25.
    fit = fit_temperature([logits / 4.0], [gold])
    assert fit.temperature == pytest.approx(0.25, rel=0.08)
    assert fit.nll_fitted < fit.nll_at_1
    assert fit.n_questions == 4000


def test_top_k_and_gold_ranks_share_the_tie_rule() -> None:
    scores = np.array([[1.0, 5.0, 5.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert top_k(scores, 2).tolist() == [[1, 2], [0, 1]]
    assert gold_ranks(scores, np.array([0, 3])).tolist() == [3, 4]
