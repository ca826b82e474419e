"""Sweeps over the candidate table: the combination weight and the reranking depth.

:func:`weight_curve`, :func:`weight_optima`, :func:`weight_stability` and
:func:`cross_domain_weight` (w chosen on the other domains) study S = (1 - w) P_theta + w P_phi;
:func:`depth_curve` reranks the top k for every k. They run on the vectorised blocks below.

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

from fqa_analysis.core.candidates import NO_RERANKER, QUESTION_KEYS, RATING_COLUMNS, RUN_KEYS
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "CandidateBlocks",
    "candidate_blocks",
    "cross_domain_weight",
    "depth_curve",
    "depth_sweep",
    "weight_curve",
    "weight_optima",
    "weight_stability",
    "weight_sweep",
]


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


def weight_curve(candidates: pd.DataFrame, weights: Sequence[float]) -> pd.DataFrame:
    """Per question and w, correctness of S = (1 - w) P_theta + w P(Excellent) (feedback domains).

    Returns:
        Long table: run keys, question keys, ``w``, ``correct`` (reranked runs only).
    """
    rated = candidates[(candidates["reranker"] != NO_RERANKER) & candidates["domain"].isin(FEEDBACK_DOMAINS)]
    return weight_sweep(candidate_blocks(rated), weights)


def weight_optima(curve: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The best w per group (micro accuracy over the group's questions and seeds).

    Tie rule: among weights with the same accuracy, the one closest to the paper's 0.5 (then the
    smaller), so a flat curve reports 0.5 rather than an arbitrary end.

    Returns:
        ``by`` columns, ``best_w``, ``best_accuracy``, ``accuracy_at_half`` (w = 0.5, NaN when
        not swept), ``accuracy_at_0`` (the RQA alone).

    Example:
        >>> c = pd.DataFrame({"g": "a", "w": [0.0, 0.5, 1.0] * 2, "correct": [1, 1, 0, 0, 1, 0]})
        >>> weight_optima(c, ["g"])[["best_w", "best_accuracy"]].values.tolist()
        [[0.5, 1.0]]
    """
    acc = curve.groupby([*by, "w"], sort=False)["correct"].mean().reset_index()
    acc["_distance"] = (acc["w"] - 0.5).abs().round(9)  # 0.7 - 0.5 < 0.5 - 0.3 in floating point
    acc = acc.sort_values(
        [*by, "correct", "_distance", "w"], ascending=[True] * len(by) + [False, True, True]
    )
    best = acc.drop_duplicates(list(by), keep="first").rename(
        columns={"w": "best_w", "correct": "best_accuracy"}
    )
    at = acc.pivot_table(index=list(by), columns="w", values="correct")
    best = best.set_index(list(by))
    best["accuracy_at_half"] = at[0.5] if 0.5 in at.columns else np.nan
    best["accuracy_at_0"] = at[0.0] if 0.0 in at.columns else np.nan
    return best.drop(columns="_distance").reset_index()


def cross_domain_weight(curve: pd.DataFrame, domains: Sequence[str] = FEEDBACK_DOMAINS) -> pd.DataFrame:
    """Tune w on three domains, apply it to the fourth: an honest estimate of what tuning buys.

    For every (protocol, rqa, reranker) and held-out domain, w is chosen by
    :func:`weight_optima` on the other domains' questions (all seeds); the held-out domain's
    questions are then answered at that w. The result pairs, per question, the tuned outcome
    with the paper's sum (w = 0.5).

    Returns:
        Per-question outcomes with ``w_rule`` in {``sum``, ``tuned``}, the run and question
        keys, ``correct`` and ``chosen_w`` (the w the tuned rule used for that domain).
    """
    keys = [k for k in RUN_KEYS if k != "seed"]
    frames = []
    for domain in domains:
        train = curve[curve["domain"] != domain]
        test = curve[curve["domain"] == domain]
        chosen = weight_optima(train, keys)[[*keys, "best_w"]]
        tuned = test.merge(chosen, on=keys)
        tuned = tuned[np.isclose(tuned["w"], tuned["best_w"])]
        frames.append(tuned.assign(w_rule="tuned", chosen_w=tuned["best_w"]).drop(columns="best_w"))
        half = test[np.isclose(test["w"], 0.5)]
        frames.append(half.assign(w_rule="sum", chosen_w=0.5))
    return pd.concat(frames, ignore_index=True).drop(columns="w")


def weight_stability(curve: pd.DataFrame) -> pd.DataFrame:
    """Best w overall, per domain and per seed, for every (rqa, reranker) of a weight curve.

    Returns:
        One row per (rqa, reranker): ``best_w``, ``best_accuracy``, ``accuracy_at_half``,
        ``accuracy_at_0``, then ``w*<domain>`` and ``w*seed<seed>`` columns, and how far the best w
        moves between domains (``w_range_domains``) and between seeds (``w_range_seeds``, 0 with
        one seed): the largest minus the smallest.
    """
    keys = ["rqa", "reranker"]
    out = weight_optima(curve, keys).set_index(keys)
    for by in ("domain", "seed"):
        per = weight_optima(curve, [*keys, by]).pivot_table(index=keys, columns=by, values="best_w")
        per.columns = [f"w*{'seed' if by == 'seed' else ''}{c}" for c in per.columns]
        out = out.join(per)
        out[f"w_range_{by}s"] = per.max(axis=1) - per.min(axis=1)
    return out.reset_index()


def depth_curve(deep: pd.DataFrame, depths: Sequence[int]) -> pd.DataFrame:
    """Per question and depth k, correctness of reranking the RQA's top k (the paper's sum).

    Args:
        deep: ``deep_candidates.parquet`` (any k); only its reranked runs are swept.
        depths: Depths to evaluate (1 = the RQA alone).

    Returns:
        Long table: run and question keys, ``depth``, ``correct``, ``ceiling`` (gold within the
        top k: recall@k, what a perfect reranker would reach).
    """
    rated = deep[deep["reranker"] != NO_RERANKER]
    return depth_sweep(candidate_blocks(rated), depths)
