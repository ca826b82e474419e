"""P_theta over a whole pool, temperature fitting by NLL, and top-k extraction (pure NumPy).

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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = [
    "TemperatureFit",
    "expected_calibration_error",
    "fit_temperature",
    "gold_nll",
    "gold_ranks",
    "pool_softmax",
    "reliability",
    "top1_accuracy",
    "top_k",
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
