"""Vectorised sweeps agree with the pandas top-1 selection, and with hand-computed cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.core.candidates import RATING_COLUMNS
from fqa_analysis.core.scoring import combined_score, select_top1
from fqa_analysis.core.sweeps import candidate_blocks, depth_sweep, weight_sweep


def _random_candidates(seed: int = 0, questions: int = 40, k: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        p = np.sort(rng.dirichlet(np.ones(k)))[::-1] * 0.9
        ratings = rng.dirichlet(np.ones(4), size=k)
        gold = int(rng.integers(0, k + 1))  # k: gold not in the top k
        for r in range(k):
            rows.append(
                {
                    "protocol": "p",
                    "rqa": "r",
                    "reranker": "x",
                    "seed": 0,
                    "domain": "A",
                    "split": "test",
                    "question_id": q,
                    "passage_id": 10 * q + r,
                    "rqa_rank": r + 1,
                    "p_rqa": p[r],
                    **dict(zip(RATING_COLUMNS, ratings[r], strict=True)),
                    "is_gold": r == gold,
                }
            )
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed)  # order must not matter


def test_half_weight_and_full_depth_match_the_paper_sum() -> None:
    cands = _random_candidates()
    expected = select_top1(cands).sort_values("question_id")["correct"].tolist()
    blocks = candidate_blocks(cands)
    sweep = weight_sweep(blocks, [0.5]).sort_values("question_id")
    assert sweep["correct"].tolist() == expected
    depth = depth_sweep(blocks, [5]).sort_values("question_id")
    assert depth["correct"].tolist() == expected
    er = select_top1(cands, combined_score(cands, "expected_rating")).sort_values("question_id")
    assert (
        weight_sweep(blocks, [0.5], "expected_rating").sort_values("question_id")["correct"].tolist()
        == er["correct"].tolist()
    )


def test_ends_of_the_sweeps() -> None:
    cands = _random_candidates(seed=1)
    blocks = candidate_blocks(cands)
    alone = weight_sweep(blocks, [0.0]).sort_values("question_id")
    top1_gold = cands[cands["rqa_rank"] == 1].sort_values("question_id")["is_gold"].tolist()
    assert alone["correct"].tolist() == top1_gold  # w = 0: the RQA's first candidate
    assert depth_sweep(blocks, [1]).sort_values("question_id")["correct"].tolist() == top1_gold
    ceiling = depth_sweep(blocks, [5])
    assert (ceiling["correct"] <= ceiling["ceiling"]).all()  # never above recall@5
    with pytest.raises(ValueError, match="depth must lie"):
        depth_sweep(blocks, [6])
    with pytest.raises(ValueError, match="weights must lie"):
        weight_sweep(blocks, [1.5])


def test_uneven_blocks_are_refused() -> None:
    cands = _random_candidates(questions=2)
    with pytest.raises(ValueError, match="same number of candidates"):
        candidate_blocks(cands.iloc[1:])
