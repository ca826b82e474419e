"""Vectorised sweeps over the candidate table: combination weight and reranking depth.

:func:`candidate_blocks` reshapes ``candidates.parquet`` into one block of k rows per (run,
question), in RQA-rank order; every sweep then picks each question's answer with one
``argmax`` per setting instead of a pandas sort, so a 21-point weight sweep over 1.4M rows takes
seconds. ``argmax`` returns the first maximum, which is the better RQA rank: the same tie rule as
:func:`fqa_analysis.core.scoring.select_top1`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import QUESTION_KEYS, RATING_COLUMNS, RUN_KEYS

__all__ = ["CandidateBlocks", "candidate_blocks", "depth_sweep", "weight_sweep"]


@dataclass(frozen=True)
class CandidateBlocks:
    """The candidate table as arrays of shape (questions, k).

    Attributes:
        keys: One row per (run, question): run and question keys.
        p_rqa: P_theta of each candidate, RQA-rank order.
        ratings: P_phi of each candidate, shape (questions, k, 4); NaN for the RQA alone.
        gold: Whether each candidate is the gold passage.
    """

    keys: pd.DataFrame
    p_rqa: np.ndarray
    ratings: np.ndarray
    gold: np.ndarray

    def reranker_score(self, rule: str = "p_excellent") -> np.ndarray:
        """P(Excellent) or E[y]/3 of each candidate, shape (questions, k)."""
        if rule == "p_excellent":
            return self.ratings[:, :, 3]
        if rule == "expected_rating":
            out: np.ndarray = self.ratings @ np.arange(4.0) / 3.0
            return out
        raise ValueError(f"unknown reranker score {rule!r}; use 'p_excellent' or 'expected_rating'")


def candidate_blocks(candidates: pd.DataFrame) -> CandidateBlocks:
    """Reshape a contract-valid candidate table (every question has exactly k rows).

    Raises:
        ValueError: Questions with different numbers of candidates.
    """
    keys = RUN_KEYS + QUESTION_KEYS
    ordered = candidates.sort_values([*keys, "rqa_rank"], kind="stable")
    sizes = ordered.groupby(keys, sort=False).size()
    if sizes.nunique() != 1:
        raise ValueError(
            f"every question needs the same number of candidates; found {sorted(sizes.unique())}; "
            "validate the table with fqa_analysis.core.candidates.validate_candidates"
        )
    k = int(sizes.iloc[0])
    n = len(sizes)
    return CandidateBlocks(
        keys=sizes.index.to_frame(index=False),
        p_rqa=ordered["p_rqa"].to_numpy(dtype=float).reshape(n, k),
        ratings=ordered[RATING_COLUMNS].to_numpy(dtype=float).reshape(n, k, len(RATING_COLUMNS)),
        gold=ordered["is_gold"].to_numpy(dtype=bool).reshape(n, k),
    )


def weight_sweep(
    blocks: CandidateBlocks, weights: Sequence[float], rule: str = "p_excellent"
) -> pd.DataFrame:
    """Per (run, question) correctness of S = (1 - w) P_theta + w score, for every w.

    w = 0 is the RQA alone, w = 0.5 ranks like the paper's plain sum, w = 1 the reranker alone.

    Returns:
        Long table: the keys, ``w`` and ``correct``, for the rows of reranked runs.

    Example:
        >>> df = pd.DataFrame({"protocol": "p", "rqa": "r", "reranker": "x", "seed": 0, "domain": "A",
        ...     "split": "test", "question_id": 0, "passage_id": [1, 2], "rqa_rank": [1, 2],
        ...     "p_rqa": [0.6, 0.2], "p_bad": 0.0, "p_could_be_improved": 0.0,
        ...     "p_acceptable": [1.0, 0.0], "p_excellent": [0.0, 1.0], "is_gold": [False, True]})
        >>> weight_sweep(candidate_blocks(df), [0.0, 0.25, 0.5, 1.0])["correct"].tolist()
        [False, False, True, True]
    """
    rated = ~np.isnan(blocks.ratings[:, 0, 0])
    score = blocks.reranker_score(rule)[rated]
    p, gold = blocks.p_rqa[rated], blocks.gold[rated]
    keys = blocks.keys.loc[rated].reset_index(drop=True)
    frames: list[pd.DataFrame] = []
    for w in weights:
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"weights must lie in [0, 1], got {w}")
        pick = np.argmax((1.0 - w) * p + w * score, axis=1)
        frames.append(keys.assign(w=float(w), correct=gold[np.arange(len(pick)), pick]))
    return pd.concat(frames, ignore_index=True)


def depth_sweep(blocks: CandidateBlocks, depths: Sequence[int], rule: str = "p_excellent") -> pd.DataFrame:
    """Per (run, question) correctness when only the RQA's top d candidates are reranked (paper's sum).

    d = 1 is the RQA alone; d = k reranks every candidate. Also returns ``ceiling``: whether the
    gold passage is within the top d (recall@d).

    Example:
        >>> df = pd.DataFrame({"protocol": "p", "rqa": "r", "reranker": "x", "seed": 0, "domain": "A",
        ...     "split": "test", "question_id": 0, "passage_id": [1, 2, 3], "rqa_rank": [1, 2, 3],
        ...     "p_rqa": [0.5, 0.3, 0.1], "p_bad": [1.0, 1.0, 0.0], "p_could_be_improved": 0.0,
        ...     "p_acceptable": 0.0, "p_excellent": [0.0, 0.0, 1.0], "is_gold": [False, False, True]})
        >>> depth_sweep(candidate_blocks(df), [1, 2, 3])[["correct", "ceiling"]].values.tolist()
        [[False, False], [False, False], [True, True]]
    """
    k = blocks.p_rqa.shape[1]
    rated = ~np.isnan(blocks.ratings[:, 0, 0])
    s = blocks.p_rqa[rated] + blocks.reranker_score(rule)[rated]
    gold = blocks.gold[rated]
    keys = blocks.keys.loc[rated].reset_index(drop=True)
    frames: list[pd.DataFrame] = []
    for d in depths:
        if not 1 <= d <= k:
            raise ValueError(f"depth must lie in 1..{k}, got {d}")
        pick = np.argmax(s[:, :d], axis=1)
        frames.append(
            keys.assign(
                depth=int(d), correct=gold[np.arange(len(pick)), pick], ceiling=gold[:, :d].any(axis=1)
            )
        )
    return pd.concat(frames, ignore_index=True)
