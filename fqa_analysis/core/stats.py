"""Paired bootstrap over questions, percentile CIs, +1-corrected p-values and Holm.

All systems in a comparison are resampled with ONE index matrix drawn from ONE seeded
``numpy.random.default_rng``: resample b takes the same questions for every system, which is
what makes the comparison paired. With ``strata`` (for example the domain of each question)
questions are resampled within their stratum, so every resample keeps each domain's size;
this is required for the macro average and harmless for micro.

p-value (two-sided, shift method): under H0 the delta's bootstrap distribution is centred on
zero, so ``p = (1 + #{|delta*_b - delta_hat| >= |delta_hat|}) / (1 + B)``; the +1 keeps p
above zero with a finite number of resamples. :func:`holm` corrects a family: the caller names it
(:func:`fqa_analysis.core.compare.compare`, which Holm-corrects over the family it was asked for).

Example:
    >>> import pandas as pd
    >>> v = pd.DataFrame({"rqa": [1, 0, 1, 0] * 25, "rerank": [1, 1, 1, 0] * 25})
    >>> cmp = paired_bootstrap(v, baseline="rqa", n_resamples=2000, seed=0)
    >>> cmp.mean["rerank"], cmp.delta["rerank"], cmp.wins["rerank"], cmp.ties["rerank"], cmp.losses["rerank"]
    (0.75, 0.25, 25, 75, 0)

"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

__all__ = [
    "MDE_ALPHA",
    "MDE_POWER",
    "BootstrapResult",
    "bootstrap_means",
    "holm",
    "holm_bound",
    "minimal_detectable_effect",
    "paired_bootstrap",
    "resample_indices",
    "seed_bootstrap",
    "unpaired_difference",
]

Average = Literal["micro", "macro"]
_CHUNK = 1000  # resamples evaluated at a time, to bound memory on 2,000-question sets


def resample_indices(
    n: int, n_resamples: int, rng: np.random.Generator, strata: Sequence[object] | None = None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Draw the shared resample matrix.

    Args:
        n: Number of questions.
        n_resamples: Number of bootstrap resamples B.
        rng: The generator (seeded by the caller).
        strata: Optional label per question; resampling then happens within each label.

    Returns:
        ``(idx, blocks)``: ``idx`` of shape (B, n) holds question positions; ``blocks`` lists,
        per stratum, the columns of ``idx`` that belong to it (one block when unstratified).

    """
    if n == 0:
        raise ValueError("cannot bootstrap zero questions")
    if strata is None:
        return rng.integers(0, n, size=(n_resamples, n), dtype=np.int32), [np.arange(n)]
    labels = pd.Series(list(strata))
    if len(labels) != n:
        raise ValueError(f"strata has {len(labels)} labels for {n} questions")
    idx = np.empty((n_resamples, n), dtype=np.int32)
    blocks, start = [], 0
    for _, positions in labels.groupby(labels, sort=True).indices.items():
        positions = np.asarray(positions, dtype=np.int32)
        size = len(positions)
        idx[:, start : start + size] = positions[rng.integers(0, size, size=(n_resamples, size))]
        blocks.append(np.arange(start, start + size))
        start += size
    return idx, blocks


def _statistic(values: np.ndarray, idx: np.ndarray, blocks: list[np.ndarray], average: Average) -> np.ndarray:
    """Mean (micro) or mean of stratum means (macro) of ``values`` under each resample."""
    out = np.empty(len(idx))
    for lo in range(0, len(idx), _CHUNK):
        sample = values[idx[lo : lo + _CHUNK]]
        if average == "micro":
            out[lo : lo + _CHUNK] = sample.mean(axis=1)
        else:
            out[lo : lo + _CHUNK] = np.mean([sample[:, b].mean(axis=1) for b in blocks], axis=0)
    return out


def _point(values: np.ndarray, blocks: list[np.ndarray], order: np.ndarray, average: Average) -> float:
    ordered = values[order]
    if average == "micro":
        return float(ordered.mean())
    return float(np.mean([ordered[b].mean() for b in blocks]))


#: Power and two-sided level of the minimal detectable effect printed beside every null result.
MDE_POWER = 0.8
MDE_ALPHA = 0.05


def minimal_detectable_effect(
    centred: np.ndarray, power: float = MDE_POWER, alpha: float = MDE_ALPHA
) -> float:
    """The smallest true difference the shift-method bootstrap test detects with ``power``, by resampling.

    ``centred`` is the bootstrap distribution of the difference minus its point estimate: how far
    an estimate strays from the truth with these questions (and seeds). The test rejects when an
    estimate lies farther from 0 than ``c``, the ``1 - alpha`` quantile of ``|centred|``; a true
    difference Δ gives estimates Δ + ``centred``, which exceed ``c`` in a share ``power`` of
    resamples when Δ = c - (the ``1 - power`` quantile of ``centred``).

    Example:
        >>> # a symmetric spread of ±1 in equal parts: c = 1, the 20% quantile is -1, MDE = 2
        >>> float(minimal_detectable_effect(np.array([-1.0, 1.0] * 50)))
        2.0
    """
    if not (0 < power < 1 and 0 < alpha < 1):
        raise ValueError(f"power and alpha must lie in (0, 1), got {power}, {alpha}")
    critical = float(np.quantile(np.abs(centred), 1 - alpha))
    return critical - float(np.quantile(centred, 1 - power))


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (monotone, capped at 1).

    Example:
        >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
        [0.03, 0.06, 0.06]

    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        adjusted[i] = min(1.0, running)
    return adjusted


def holm_bound(p_values: Sequence[float], floor: float) -> np.ndarray:
    """Which of :func:`holm`'s adjusted p-values are upper bounds, not estimates.

    A p at the bootstrap's floor (``floor`` = 1 / (B + 1): no resample as extreme) is a bound, and
    so is its adjusted value (m - rank) * p. Holm's running maximum carries that value to the rows
    ranked after it: such a row's adjusted p is a bound too, unless a term that is an estimate
    (its own or an earlier row's) is as large. A value capped at 1 is not marked.

    Example:
        >>> floor = 1 / 10_001
        >>> holm_bound([floor, floor, 2 * floor], floor).tolist()  # third: 2 * floor < 3 * floor
        [True, True, True]
        >>> holm_bound([floor, 0.0004], floor).tolist()  # 0.0004 > 2 * floor: its own term
        [True, False]
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    bound = np.zeros(m, dtype=bool)
    running, running_bound = 0.0, False
    for rank, i in enumerate(np.argsort(p, kind="stable")):
        term = (m - rank) * p[i]
        at_floor = bool(p[i] <= floor * (1 + 1e-9))
        if term > running:
            running, running_bound = term, at_floor
        elif term == running:  # an estimate as large as the bound makes the value exact
            running_bound = running_bound and at_floor
        bound[i] = running_bound and running < 1.0
    return bound


def unpaired_difference(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``a`` minus mean of ``b``, with a percentile bootstrap CI, the two resampled apart.

    For two samples with no pairing between them (an explainer's items and people's explanations
    of the same rating): each resample draws ``len(a)`` values of ``a`` and ``len(b)`` of ``b``
    with replacement, independently, from one seeded generator.

    Returns:
        ``(difference, ci_low, ci_high)``.

    Raises:
        ValueError: An empty sample.

    Example:
        >>> unpaired_difference([1, 1, 1], [0, 0])  # no spread: the CI is the point
        (1.0, 1.0, 1.0)
        >>> d, lo, hi = unpaired_difference([0, 1] * 50, [0, 1] * 50)
        >>> d, lo < 0 < hi
        (0.0, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not len(x) or not len(y):
        raise ValueError(f"unpaired_difference needs two non-empty samples, got {len(x)} and {len(y)} values")
    rng = np.random.default_rng(seed)
    means_x = x[rng.integers(0, len(x), (n_resamples, len(x)))].mean(axis=1)
    means_y = y[rng.integers(0, len(y), (n_resamples, len(y)))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means_x - means_y, [tail, 1 - tail])
    return float(x.mean() - y.mean()), float(low), float(high)


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """Columns of one table compared with a baseline column over the same rows (:func:`paired_bootstrap`).

    Attributes hold one entry per system (the baseline included, with zero delta and no p). The
    book's comparisons go through :func:`fqa_analysis.core.compare.compare`, which builds on this
    and names the Holm family and every convention in its signature.
    """

    baseline: str
    systems: tuple[str, ...]
    n_questions: int
    n_resamples: int
    seed: int
    confidence: float
    average: str
    stratified: bool
    mean: dict[str, float]
    ci: dict[str, tuple[float, float]]
    delta: dict[str, float]
    delta_ci: dict[str, tuple[float, float]]
    p_value: dict[str, float]
    mde: dict[str, float]
    wins: dict[str, int]
    ties: dict[str, int]
    losses: dict[str, int]

    def to_frame(self) -> pd.DataFrame:
        """One row per system: mean and CI, delta to the baseline and CI, p, MDE, W/T/L."""
        rows = {
            s: {
                "mean": self.mean[s],
                "ci_low": self.ci[s][0],
                "ci_high": self.ci[s][1],
                "delta": self.delta[s],
                "delta_ci_low": self.delta_ci[s][0],
                "delta_ci_high": self.delta_ci[s][1],
                "p_value": self.p_value[s],
                "mde": self.mde[s],
                "wins": self.wins[s],
                "ties": self.ties[s],
                "losses": self.losses[s],
            }
            for s in self.systems
        }
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "system"
        return frame


def paired_bootstrap(
    values: pd.DataFrame,
    baseline: str,
    strata: Sequence[object] | None = None,
    average: Average = "micro",
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    mde_power: float = MDE_POWER,
    mde_alpha: float = MDE_ALPHA,
) -> BootstrapResult:
    """Compare every column of ``values`` with the ``baseline`` column, paired over rows.

    Besides the difference, its CI and p, each comparison gets its minimal detectable effect
    (:func:`minimal_detectable_effect`): the smallest true difference this test would find
    significant at ``mde_alpha`` in a share ``mde_power`` of resamples, so that a null result can be told
    from too few questions.

    Args:
        values: One row per question, one column per system, per-question outcomes (1/0 for
            accuracy, or any score). Must hold no missing values.
        baseline: Column to compare with; every other column is one comparison of the
            Holm family.
        strata: Optional label per row (e.g. domain); required for ``average="macro"``.
        average: ``micro`` (mean over questions) or ``macro`` (mean of stratum means).
        n_resamples: Bootstrap resamples B.
        seed: Seed of the one generator that draws the shared resample matrix.
        confidence: Level of the percentile intervals.
        mde_power: Power of the minimal detectable effect.
        mde_alpha: Two-sided level of the minimal detectable effect (unadjusted).

    Raises:
        ValueError: Unknown baseline, missing values, or macro without strata.

    """
    if baseline not in values.columns:
        raise ValueError(f"baseline {baseline!r} is not a column of values ({list(values.columns)})")
    if values.isna().any().any():
        raise ValueError("values hold missing outcomes; every system must answer every question")
    matrices = {str(c): values[c].to_numpy(dtype=float)[None, :] for c in values.columns}
    return _bootstrap(
        matrices, str(baseline), strata, average, n_resamples, seed, confidence, mde_power, mde_alpha
    )


def seed_bootstrap(
    outcomes: dict[str, np.ndarray],
    baseline: str,
    strata: Sequence[object] | None = None,
    average: Average = "micro",
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    mde_power: float = MDE_POWER,
    mde_alpha: float = MDE_ALPHA,
) -> BootstrapResult:
    """A two-level paired bootstrap: each system's training seeds, then the questions, resampled.

    :func:`paired_bootstrap` on seed-averaged outcomes asks whether a system *as trained with these
    seeds* beats the baseline; its interval knows nothing of how much another seed would change
    the system. Here every resample also draws each system's seeds with replacement (independently
    per system; the questions are drawn once for all, so the comparison stays paired), and the
    statistic is the mean over the drawn questions of each question's mean over the drawn seeds.
    A difference no larger than the spread between seeds is then not told apart. A system with one
    seed contributes no seed variation; with one seed everywhere the result equals
    :func:`paired_bootstrap`'s exactly (the question draws come first from the same generator).

    Args:
        outcomes: Per system, an array of shape (seeds, questions): each seed's per-question
            outcome, questions in the same order for every system.
        baseline: The system every other one is compared with.
        strata: Optional label per question (resampled within it), as in :func:`paired_bootstrap`.
        average: ``micro`` or ``macro``.
        n_resamples: Bootstrap resamples B.
        seed: Seed of the one generator (questions first, then each system's seeds).
        confidence: Level of the percentile intervals.
        mde_power: Power of the minimal detectable effect.
        mde_alpha: Its two-sided level.

    Raises:
        ValueError: Unknown baseline, arrays of different question counts, or missing values.

    Example:
        >>> # one question; system a's two seeds disagree (1 and 0), b's agree (0): the difference 0.5
        >>> # is as large as a's seed spread, so about half the resamples lie as far from it as 0
        >>> r = seed_bootstrap({"b": np.array([[0.0], [0.0]]), "a": np.array([[1.0], [0.0]])}, "b")
        >>> r.delta["a"], round(r.p_value["a"], 1)
        (0.5, 0.5)
    """
    if baseline not in outcomes:
        raise ValueError(f"baseline {baseline!r} is not one of the systems ({list(outcomes)})")
    sizes = {name: np.asarray(a).shape[-1] for name, a in outcomes.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"every system needs the same questions; question counts: {sizes}")
    matrices = {name: np.atleast_2d(np.asarray(a, dtype=float)) for name, a in outcomes.items()}
    if any(np.isnan(m).any() for m in matrices.values()):
        raise ValueError("outcomes hold missing values; every seed must answer every question")
    return _bootstrap(
        matrices, baseline, strata, average, n_resamples, seed, confidence, mde_power, mde_alpha
    )


def _seed_statistic(
    matrix: np.ndarray,
    weights: np.ndarray | None,
    idx: np.ndarray,
    blocks: list[np.ndarray],
    average: Average,
) -> np.ndarray:
    """:func:`_statistic` of a (seeds, questions) matrix, each resample weighting the seeds it drew."""
    if weights is None:  # one seed: exactly the one-level statistic
        return _statistic(matrix[0], idx, blocks, average)
    out = np.empty(len(idx))
    for lo in range(0, len(idx), _CHUNK):
        per_question = weights[lo : lo + _CHUNK] @ matrix  # (chunk, questions)
        sample = np.take_along_axis(per_question, idx[lo : lo + _CHUNK].astype(np.intp), axis=1)
        if average == "micro":
            out[lo : lo + _CHUNK] = sample.mean(axis=1)
        else:
            out[lo : lo + _CHUNK] = np.mean([sample[:, b].mean(axis=1) for b in blocks], axis=0)
    return out


def _bootstrap(
    matrices: dict[str, np.ndarray],
    baseline: str,
    strata: Sequence[object] | None,
    average: Average,
    n_resamples: int,
    seed: int,
    confidence: float,
    mde_power: float,
    mde_alpha: float,
) -> BootstrapResult:
    """The bootstrap behind :func:`paired_bootstrap` and :func:`seed_bootstrap`.

    ``matrices`` holds, per system, a (seeds, questions) array.
    """
    if average == "macro" and strata is None:
        raise ValueError("the macro average needs strata (the domain of each question)")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    n = next(iter(matrices.values())).shape[1]
    idx, blocks = resample_indices(n, n_resamples, rng, strata)
    # resample_indices groups columns by stratum; `order` maps those columns back to rows.
    if strata is None:
        order = np.arange(n)
    else:
        labels = pd.Series(list(strata))
        order = np.concatenate([np.asarray(p) for _, p in labels.groupby(labels, sort=True).indices.items()])
    # each system's seed draws, after the question draws (so one seed everywhere draws nothing more)
    weights = {
        name: rng.multinomial(len(m), np.full(len(m), 1 / len(m)), size=n_resamples) / len(m)
        if len(m) > 1
        else None
        for name, m in matrices.items()
    }
    alpha = (1 - confidence) / 2
    quantiles = [alpha, 1 - alpha]
    means = {name: m.mean(axis=0) for name, m in matrices.items()}  # each question's seed mean
    base_boot = _seed_statistic(matrices[baseline], weights[baseline], idx, blocks, average)
    base_point = _point(means[baseline], blocks, order, average)
    systems = tuple(matrices)
    mean, ci, delta, delta_ci, p, mde, wins, ties, losses = {}, {}, {}, {}, {}, {}, {}, {}, {}
    for s in systems:
        boot = base_boot if s == baseline else _seed_statistic(matrices[s], weights[s], idx, blocks, average)
        mean[s] = _point(means[s], blocks, order, average)
        lo, hi = np.quantile(boot, quantiles)
        ci[s] = (float(lo), float(hi))
        d_boot = boot - base_boot
        delta[s] = mean[s] - base_point
        lo, hi = np.quantile(d_boot, quantiles)
        delta_ci[s] = (float(lo), float(hi))
        if s == baseline:
            p[s], mde[s] = float("nan"), float("nan")
        else:
            extreme = np.abs(d_boot - delta[s]) >= abs(delta[s]) - 1e-12
            p[s] = float((1 + extreme.sum()) / (1 + n_resamples))
            mde[s] = minimal_detectable_effect(d_boot - delta[s], mde_power, mde_alpha)
        diff = means[s] - means[baseline]
        wins[s], ties[s], losses[s] = int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum())
    return BootstrapResult(
        baseline=baseline,
        systems=systems,
        n_questions=n,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        average=average,
        stratified=strata is not None,
        mean=mean,
        ci=ci,
        delta=delta,
        delta_ci=delta_ci,
        p_value=p,
        mde=mde,
        wins=wins,
        ties=ties,
        losses=losses,
    )


def bootstrap_means(
    values: pd.DataFrame,
    strata: Sequence[object] | None = None,
    average: Average = "micro",
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean and percentile CI of every column (no comparison): columns ``mean, ci_low, ci_high``."""
    cmp = paired_bootstrap(values, values.columns[0], strata, average, n_resamples, seed, confidence)
    return cmp.to_frame()[["mean", "ci_low", "ci_high"]]
