"""Scores over the candidate table and top-1 selection (pure functions, no models).

The paper's combined score (ARCHITECTURE.md#protocol)::

    S(A | Q, A_set) = P_theta(A | Q, A_set) + P_phi(y = Excellent | Q, A)

``P_theta`` is the column ``p_rqa`` (softmax over the whole domain pool), ``P_phi`` the
reranker's rating distribution. The ablation replaces P(Excellent) by the normalised expected
rating E[y]/3 with y in 0..3.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"p_rqa": [0.6, 0.3], "p_bad": [0.5, 0.0],
    ...                    "p_could_be_improved": [0.0, 0.0], "p_acceptable": [0.0, 0.2],
    ...                    "p_excellent": [0.5, 0.8]})
    >>> combined_score(df).round(2).tolist()
    [1.1, 1.1]
    >>> combined_score(df, reranker_score="expected_rating").round(4).tolist()
    [1.1, 1.2333]

"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import QUESTION_KEYS, RATING_COLUMNS, RUN_KEYS

__all__ = [
    "RerankerScore",
    "combined_score",
    "expected_rating_score",
    "p_excellent_score",
    "select_top1",
]

RerankerScore = Literal["p_excellent", "expected_rating"]


def p_excellent_score(df: pd.DataFrame) -> pd.Series:
    """The reranker's P(y = Excellent | Q, A), the paper's choice."""
    return df["p_excellent"].astype(float)


def expected_rating_score(df: pd.DataFrame) -> pd.Series:
    """Normalised expected rating E[y]/3 in [0, 1], with Bad 0 .. Excellent 3."""
    probs = df[RATING_COLUMNS].to_numpy(dtype=float)
    return pd.Series(probs @ np.arange(4.0) / 3.0, index=df.index, name="expected_rating")


def combined_score(
    df: pd.DataFrame,
    reranker_score: RerankerScore = "p_excellent",
    weight: float | None = None,
) -> pd.Series:
    """The score a reranked system ranks candidates by.

    Args:
        df: Candidate rows with ``p_rqa`` and, for reranked runs, the four rating columns.
        reranker_score: ``p_excellent`` (paper) or ``expected_rating`` (ablation).
        weight: None for the paper's plain sum ``p_rqa + s``; a number w in [0, 1] for
            ``(1 - w) * p_rqa + w * s`` (w = 0.5 ranks exactly like the sum).

    Returns:
        The score per row; rows whose rating columns are null (reranker ``none``) get
        ``p_rqa``, so the RQA alone ranks by its own probability.

    """
    if weight is not None and not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must lie in [0, 1], got {weight}")
    if reranker_score == "p_excellent":
        rerank = p_excellent_score(df)
    elif reranker_score == "expected_rating":
        rerank = expected_rating_score(df)
    else:
        raise ValueError(f"unknown reranker score {reranker_score!r}; use 'p_excellent' or 'expected_rating'")
    p_rqa = df["p_rqa"].astype(float)
    score = p_rqa + rerank if weight is None else (1.0 - weight) * p_rqa + weight * rerank
    return score.fillna(p_rqa).rename("score")


def select_top1(df: pd.DataFrame, score: pd.Series | None = None) -> pd.DataFrame:
    """Pick each question's answer: the highest score, ties to the better RQA rank.

    Tie rule: among candidates with exactly equal scores the one the RQA ranked higher
    (smaller ``rqa_rank``) wins, so a reranker that cannot separate two candidates leaves the
    RQA's order alone.

    Args:
        df: Candidate rows (ARCHITECTURE.md#results-contract).
        score: A score per row (same index); defaults to :func:`combined_score`.

    Returns:
        One row per (run, question): run and question keys, ``passage_id`` and ``rqa_rank``
        of the pick, ``correct`` (the pick is gold) and ``gold_in_topk``.

    """
    score = combined_score(df) if score is None else score
    keys = RUN_KEYS + QUESTION_KEYS
    work = df[keys + ["passage_id", "rqa_rank", "is_gold"]].assign(_score=score.to_numpy())
    work = work.sort_values(keys + ["_score", "rqa_rank"], ascending=[True] * len(keys) + [False, True])
    gold_in_topk = work.groupby(keys, sort=False)["is_gold"].any()
    picked = work.drop_duplicates(keys, keep="first").set_index(keys)
    out = picked[["passage_id", "rqa_rank"]].copy()
    out["correct"] = picked["is_gold"].astype(bool)
    out["gold_in_topk"] = gold_in_topk.reindex(out.index).astype(bool)
    return out.reset_index()
