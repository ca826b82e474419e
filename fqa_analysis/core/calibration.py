"""Calibration: P_theta over a whole pool, temperatures, reliability and ECE, top-k extraction.

The first part is pure NumPy and serves the RQA systems; the second (from :func:`scale_ratings`
on) works on the results tables: temperature scaling of the reranker's rating distribution
fitted on each model's selection pairs, top-1 confidence, ECE with a bootstrap CI, and the
candidate table under every combination of P_theta's and P_phi's scaling.

``P_theta(A | Q, A_set) = softmax(score(Q, A) / T)`` over ALL passages of the question's domain
file (ARCHITECTURE.md#protocol). For systems whose scores are not log-probabilities (BM25, cosine) one
temperature T per system is fitted on the QA valid sets by minimising the negative
log-likelihood of the gold passage; T changes the probabilities the reranker is added to, not
the RQA's own ranking.

Example:
    >>> import numpy as np
    >>> p = pool_softmax(np.array([[2.0, 0.0, 0.0]]), temperature=1.0)
    >>> p.round(4).tolist()
    [[0.787, 0.1065, 0.1065]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from fqa_analysis.core.candidates import NO_RERANKER, QUESTION_KEYS, RATING_COLUMNS
from fqa_analysis.core.stats import resample_indices
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "SCALINGS",
    "TemperatureFit",
    "apply_rating_temperatures",
    "calibration_table",
    "calibration_variants",
    "ece_with_ci",
    "expected_calibration_error",
    "fit_rating_temperature",
    "fit_temperature",
    "gold_nll",
    "gold_ranks",
    "pool_softmax",
    "rating_temperatures",
    "reliability",
    "scale_ratings",
    "top1_accuracy",
    "top1_confidence",
    "top_k",
    "with_unscaled_rqa",
]


def pool_softmax(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row-wise softmax of ``scores / temperature`` (numerically stable).

    Args:
        scores: (questions, passages) scores over the whole pool.
        temperature: T > 0; larger T flattens the distribution.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    z = scores / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def gold_nll(scores: np.ndarray, gold: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of the gold passages under ``pool_softmax``."""
    z = scores / temperature
    z = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=1))
    return float(np.mean(log_norm - z[np.arange(len(gold)), gold]))


@dataclass(frozen=True)
class TemperatureFit:
    """A fitted temperature and what it does to the validation NLL."""

    temperature: float
    nll_at_1: float
    nll_fitted: float
    n_questions: int


def fit_temperature(
    score_blocks: list[np.ndarray], gold_blocks: list[np.ndarray], bounds: tuple[float, float] = (1e-3, 1e3)
) -> TemperatureFit:
    """Fit one temperature over several pools (one block per valid file) by minimising the NLL.

    The search is over log T (bounded), so the fit is scale-free and deterministic.

    Args:
        score_blocks: Per file, the (questions, pool) score matrix.
        gold_blocks: Per file, the gold passage index of each question.
        bounds: Range of T searched.
    """
    n = sum(len(g) for g in gold_blocks)
    if n == 0:
        raise ValueError("no validation questions to fit a temperature on")

    def total(log_t: float) -> float:
        t = float(np.exp(log_t))
        return sum(gold_nll(s, g, t) * len(g) for s, g in zip(score_blocks, gold_blocks, strict=True)) / n

    res = minimize_scalar(
        total, bounds=(np.log(bounds[0]), np.log(bounds[1])), method="bounded", options={"xatol": 1e-6}
    )
    t_hat = float(np.exp(res.x))
    return TemperatureFit(t_hat, total(0.0), total(float(res.x)), n)


def top1_accuracy(score_blocks: Sequence[np.ndarray], gold_blocks: Sequence[np.ndarray]) -> float:
    """Share of questions, over all blocks, whose gold passage ranks first (ties as in :func:`top_k`).

    Example:
        >>> top1_accuracy([np.array([[2.0, 1.0], [0.0, 0.0]])], [np.array([0, 1])])
        0.5
    """
    hits = [gold_ranks(s, g) == 1 for s, g in zip(score_blocks, gold_blocks, strict=True)]
    return float(np.mean(np.concatenate(hits)))


def _order(scores: np.ndarray) -> np.ndarray:
    """Pool order per question: higher score first, ties to the lower passage id (stable)."""
    return np.argsort(-scores, axis=1, kind="stable")


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best passages per question (ties to the lower passage id).

    Example:
        >>> top_k(np.array([[0.0, 3.0, 3.0, 1.0]]), 3).tolist()
        [[1, 2, 3]]
    """
    return _order(scores)[:, :k]


def gold_ranks(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """1-based rank of each question's gold passage in the same order as :func:`top_k`.

    Example:
        >>> gold_ranks(np.array([[0.0, 3.0, 3.0, 1.0]]), np.array([2])).tolist()
        [2]
    """
    order = _order(scores)
    ranks: np.ndarray = (np.argmax(order == gold[:, None], axis=1) + 1).astype(int)
    return ranks


def reliability(
    confidence: np.ndarray, correct: np.ndarray, bins: int = 10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Equal-width reliability bins: mean confidence, accuracy and count per bin (empty bins: NaN).

    Example:
        >>> conf, acc, n = reliability(np.array([0.05, 0.15, 0.95, 0.85]), np.array([0, 0, 1, 0]), bins=2)
        >>> conf.round(6).tolist(), acc.tolist(), n.tolist()
        ([0.1, 0.9], [0.0, 0.5], [2, 2])
    """
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    n = np.bincount(which, minlength=bins)
    with np.errstate(invalid="ignore"):
        mean_conf = np.bincount(which, weights=confidence, minlength=bins) / n
        acc = np.bincount(which, weights=correct, minlength=bins) / n
    return mean_conf, acc, n


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """ECE: the count-weighted mean |accuracy - confidence| over equal-width bins.

    Example:
        >>> conf, hit = np.array([0.05, 0.15, 0.95, 0.85]), np.array([0, 0, 1, 0])
        >>> round(expected_calibration_error(conf, hit, bins=2), 6)  # (2 * 0.1 + 2 * 0.4) / 4
        0.25
    """
    conf, acc, n = reliability(confidence, correct, bins)
    used = n > 0
    return float(np.sum(n[used] * np.abs(acc[used] - conf[used])) / np.sum(n))


#: Smallest probability a rating is taken to have before its logarithm (stored P_phi is rounded
#: to 1e-5, so an exact 0 can occur).
_FLOOR = 1e-6


#: The four scorings of the temperature experiment, as named in its tables.
SCALINGS: tuple[str, ...] = ("as run", "P_theta at T=1", "P_phi scaled", "both")


def scale_ratings(probs: np.ndarray, temperature: float) -> np.ndarray:
    """Temperature-scale rating distributions: softmax(log p / T).

    For p = softmax(z) this is exactly softmax(z / T), so stored probabilities suffice.
    T > 1 flattens, T < 1 sharpens; the argmax never changes.

    Example:
        >>> scale_ratings(np.array([[0.2, 0.8]]), 1.0).round(6).tolist()
        [[0.2, 0.8]]
        >>> scale_ratings(np.array([[0.2, 0.8]]), 2.0).round(4).tolist()  # sqrt(.2), sqrt(.8) renormalised
        [[0.3333, 0.6667]]
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    logits = np.log(np.clip(np.asarray(probs, dtype=float), _FLOOR, 1.0)) / temperature
    logits -= logits.max(axis=-1, keepdims=True)
    out: np.ndarray = np.exp(logits)
    out /= out.sum(axis=-1, keepdims=True)
    return out


def _cross_entropy(targets: np.ndarray, probs: np.ndarray) -> float:
    return float(-(targets * np.log(np.clip(probs, _FLOOR, 1.0))).sum(axis=1).mean())


def fit_rating_temperature(
    probs: np.ndarray, targets: np.ndarray, bounds: tuple[float, float] = (0.05, 20.0)
) -> tuple[float, float, float]:
    """The temperature minimising the cross-entropy to target distributions (= their KL + const).

    Returns:
        ``(temperature, cross-entropy at T = 1, cross-entropy at the fitted T)``.

    Example:
        >>> p = np.array([[0.1, 0.9], [0.9, 0.1]])
        >>> t, before, after = fit_rating_temperature(p, np.array([[0.3, 0.7], [0.7, 0.3]]))
        >>> round(t, 2), after < before  # overconfident: flattened (T > 1)
        (2.59, True)
    """
    probs, targets = np.asarray(probs, dtype=float), np.asarray(targets, dtype=float)
    if len(probs) == 0:
        raise ValueError("no held-out pairs to fit a rating temperature on")
    res = minimize_scalar(
        lambda log_t: _cross_entropy(targets, scale_ratings(probs, float(np.exp(log_t)))),
        bounds=(np.log(bounds[0]), np.log(bounds[1])),
        method="bounded",
        options={"xatol": 1e-6},
    )
    t = float(np.exp(res.x))
    return t, _cross_entropy(targets, probs), _cross_entropy(targets, scale_ratings(probs, t))


def rating_temperatures(selection: pd.DataFrame) -> pd.DataFrame:
    """Fit one rating temperature per (reranker, seed) on its model-selection pairs.

    Args:
        selection: ``selection_predictions.parquet`` (``p_*`` and ``target_*`` columns).

    Returns:
        ``reranker, seed, n, temperature, ce_t1, ce_fitted``.
    """
    targets = ["target_" + c[2:] for c in RATING_COLUMNS]
    rows = []
    for (reranker, seed), block in selection.groupby(["reranker", "seed"], sort=False):
        t, before, after = fit_rating_temperature(
            block[RATING_COLUMNS].to_numpy(float), block[targets].to_numpy(float)
        )
        rows.append(
            {
                "reranker": reranker,
                "seed": seed,
                "n": len(block),
                "temperature": t,
                "ce_t1": before,
                "ce_fitted": after,
            }
        )
    return pd.DataFrame(rows)


def apply_rating_temperatures(candidates: pd.DataFrame, temperatures: pd.DataFrame) -> pd.DataFrame:
    """Candidates with every reranked run's P_phi scaled by its own (reranker, seed) temperature.

    Raises:
        ValueError: A reranked run without a fitted temperature.
    """
    lookup = {
        (str(r), int(s)): float(t) for r, s, t in temperatures[["reranker", "seed", "temperature"]].values
    }
    rated = (candidates["reranker"] != NO_RERANKER).to_numpy()
    runs = list(zip(candidates["reranker"].astype(str), candidates["seed"].astype(int), strict=True))
    missing = sorted({run for run, r in zip(runs, rated, strict=True) if r and run not in lookup})
    if missing:
        raise ValueError(f"no rating temperature for reranker/seed {missing[0]}; fit it first")
    probs = candidates[RATING_COLUMNS].to_numpy(float)
    temps = np.array([lookup.get(run, 1.0) for run in runs])
    for t in np.unique(temps[rated]):
        rows = rated & (temps == t)
        probs[rows] = scale_ratings(probs[rows], float(t))
    out = candidates.copy()
    out[RATING_COLUMNS] = probs
    return out


def with_unscaled_rqa(candidates: pd.DataFrame, deep: pd.DataFrame) -> pd.DataFrame:
    """Candidates with ``p_rqa`` replaced by P_theta at temperature 1 (``deep_candidates.p_rqa_t1``).

    Only questions the deep table covers (the feedback domains) are kept.

    Raises:
        ValueError: A candidate the deep table lacks (the two tables come from different runs).
    """
    keys = ["rqa", "domain", "split", "question_id", "passage_id"]
    t1 = deep.loc[deep["reranker"] == NO_RERANKER, keys + ["p_rqa_t1"]]
    mine = candidates[candidates["domain"].isin(t1["domain"].unique())]
    out = mine.merge(t1, on=keys, how="left", validate="many_to_one")
    if out["p_rqa_t1"].isna().any():
        raise ValueError(
            "deep_candidates.parquet lacks candidates of candidates.parquet; rerun `fqa run beyond` "
            "after the rqa and rerank stages"
        )
    return out.assign(p_rqa=out["p_rqa_t1"]).drop(columns="p_rqa_t1")


def top1_confidence(candidates: pd.DataFrame, column: str = "p_rqa") -> pd.DataFrame:
    """The RQA alone's top-ranked candidate per question: its probability and whether it is gold.

    Returns:
        ``rqa, domain, split, question_id, confidence, correct``.
    """
    top = candidates[(candidates["reranker"] == NO_RERANKER) & (candidates["rqa_rank"] == 1)]
    return top[["rqa", *QUESTION_KEYS]].assign(
        confidence=top[column].to_numpy(float), correct=top["is_gold"].to_numpy(float)
    )


def ece_with_ci(
    confidence: np.ndarray,
    correct: np.ndarray,
    bins: int = 10,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> tuple[float, float, float]:
    """ECE with a percentile bootstrap CI over units (questions or items).

    Example:
        >>> conf = np.array([0.05, 0.15, 0.95, 0.85] * 10)
        >>> ece, lo, hi = ece_with_ci(conf, np.array([0, 0, 1, 0] * 10), bins=2, n_resamples=200)
        >>> round(ece, 6), lo <= ece <= hi
        (0.25, True)
    """
    conf, hit = np.asarray(confidence, dtype=float), np.asarray(correct, dtype=float)
    idx, _ = resample_indices(len(conf), n_resamples, np.random.default_rng(seed))
    boot = [expected_calibration_error(conf[i], hit[i], bins) for i in idx]
    alpha = (1 - confidence_level) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return expected_calibration_error(conf, hit, bins), float(lo), float(hi)


def calibration_table(
    confidences: Mapping[str, pd.DataFrame], bins: int = 10, n_resamples: int = 2000
) -> pd.DataFrame:
    """ECE (with bootstrap CI) of the RQA's top-1 probability under each temperature setting.

    Args:
        confidences: Setting name -> :func:`top1_confidence` output (several RQA systems).
        bins: Equal-width bins.
        n_resamples: Bootstrap resamples of the ECE's CI (questions).

    Returns:
        ``rqa, scaling, n, mean_confidence, accuracy, ece, ece_ci_low, ece_ci_high``.
    """
    rows = []
    for scaling, frame in confidences.items():
        for rqa, block in frame.groupby("rqa", sort=False):
            conf, hit = block["confidence"].to_numpy(float), block["correct"].to_numpy(float)
            ece, lo, hi = ece_with_ci(conf, hit, bins, n_resamples)
            rows.append(
                {
                    "rqa": rqa,
                    "scaling": scaling,
                    "n": len(block),
                    "mean_confidence": float(conf.mean()),
                    "accuracy": float(hit.mean()),
                    "ece": ece,
                    "ece_ci_low": lo,
                    "ece_ci_high": hi,
                }
            )
    return pd.DataFrame(rows)


def calibration_variants(
    candidates: pd.DataFrame, deep: pd.DataFrame, temperatures: pd.DataFrame
) -> pd.DataFrame:
    """Per-question outcomes of every reranked run under four temperature settings.

    ``as run``: P_theta at the temperature fitted on the QA valid sets (what every other chapter
    uses) plus raw P(Excellent); ``P_theta at T=1``: the unscaled softmax, the paper's literal
    recipe; ``P_phi scaled``: P(Excellent) after the rating temperature fitted on each model's
    selection pairs (:func:`rating_temperatures`); ``both``.

    Returns:
        :func:`~fqa_analysis.core.reranking.score_outcomes` rows of the feedback-domain
        questions with a ``scaling`` column.
    """
    from fqa_analysis.core.reranking import score_outcomes

    rated = candidates[(candidates["reranker"] != NO_RERANKER) & candidates["domain"].isin(FEEDBACK_DOMAINS)]
    unscaled = with_unscaled_rqa(rated, deep)
    tables = {
        "as run": rated,
        "P_theta at T=1": unscaled,
        "P_phi scaled": apply_rating_temperatures(rated, temperatures),
        "both": apply_rating_temperatures(unscaled, temperatures),
    }
    return pd.concat(
        [score_outcomes(t).assign(scaling=name) for name, t in tables.items()], ignore_index=True
    )
