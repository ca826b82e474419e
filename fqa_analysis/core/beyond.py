"""Analyses beyond the paper: calibration, weight, depth, feedback size, transfer, failures.

Pure functions over ``results/`` tables; no torch, no model.

Conventions shared by every function here:

* "overall" is the four feedback domains' test questions (1,992), micro-averaged unless said;
* outcomes of a reranker with several training seeds are averaged per question before any
  bootstrap (:func:`~fqa_analysis.core.metrics.seed_averaged`), so a test asks whether the method
  helps as trained with several seeds;
* comparisons go through :func:`~fqa_analysis.core.compare.compare` (paired bootstrap stratified
  by test set, Holm over the family it names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from fqa_analysis.core.calibration import expected_calibration_error
from fqa_analysis.core.candidates import NO_RERANKER, QUESTION_KEYS, RATING_COLUMNS, RUN_KEYS
from fqa_analysis.core.compare import seed_mean
from fqa_analysis.core.stats import (
    bootstrap_means,
    resample_indices,
)
from fqa_analysis.core.sweeps import candidate_blocks, depth_sweep, weight_sweep
from fqa_analysis.data import FEEDBACK_DOMAINS, QASplit

__all__ = [
    "SCALINGS",
    "TRANSFER_RUNS",
    "accuracy_by",
    "apply_rating_temperatures",
    "best_run",
    "calibration_table",
    "calibration_variants",
    "cross_domain_weight",
    "depth_curve",
    "ece_with_ci",
    "experiment_candidates",
    "failure_categories",
    "fit_rating_temperature",
    "item_outcomes",
    "page_overlap",
    "rating_temperatures",
    "scale_ratings",
    "top1_confidence",
    "transfer_outcomes",
    "weight_curve",
    "weight_optima",
    "weight_stability",
    "with_unscaled_rqa",
]

#: Smallest probability a rating is taken to have before its logarithm (stored P_phi is rounded
#: to 1e-5, so an exact 0 can occur).
_FLOOR = 1e-6


# --------------------------------------------------------------------------- calibration
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


# --------------------------------------------------------------------------- combination weight
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


# --------------------------------------------------------------------------- depth
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


# --------------------------------------------------------------------------- experiments
def experiment_candidates(
    experiments: pd.DataFrame, candidates: pd.DataFrame, rqa: str = "hybrid"
) -> pd.DataFrame:
    """The experiment rerankers' P_phi as candidate rows (``reranker = "<experiment>:<setting>"``).

    P_theta, the gold flag and the question come from the RQA's own rows in ``candidates``.

    Raises:
        ValueError: Experiment rows without a matching candidate (tables from different runs).
    """
    keys = ["domain", "split", "question_id", "rqa_rank"]
    base = candidates[(candidates["rqa"] == rqa) & (candidates["reranker"] == NO_RERANKER)]
    base = base.drop(columns=[*RATING_COLUMNS, "reranker", "seed"])
    out = experiments.merge(base, on=keys, how="left", suffixes=("", "_rqa"), validate="many_to_one")
    if out["p_rqa"].isna().any() or (out["passage_id"] != out["passage_id_rqa"]).any():
        raise ValueError(
            f"feedback_experiments.parquet does not match the {rqa} rows of candidates.parquet; "
            "rerun `fqa run beyond`"
        )
    out["reranker"] = out["experiment"] + ":" + out["setting"]
    return out.drop(columns=["passage_id_rqa"])


# --------------------------------------------------------------------------- failures
def failure_categories(outcomes: pd.DataFrame, ranks: pd.DataFrame, depth: int = 20) -> pd.DataFrame:
    """Why each question is answered wrongly: the gold passage's rank decides.

    Categories: ``correct``; ``misranked`` (gold in the top 5, another passage picked);
    ``near miss`` (gold at rank 6..``depth``: a deeper reranker could reach it); ``retrieval
    miss`` (gold below ``depth``).

    Args:
        outcomes: Per-question outcomes of one run (``rqa``, question keys, ``correct``).
        ranks: ``rqa_ranks.parquet`` (gold rank of every RQA system and question).
        depth: Where a near miss ends.

    Example:
        >>> o = pd.DataFrame({"rqa": "r", "domain": "A", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "correct": [True, False, False, False]})
        >>> r = pd.DataFrame({"rqa": "r", "domain": "A", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "gold_rank": [1, 3, 9, 40]})
        >>> failure_categories(o, r)["category"].tolist()
        ['correct', 'misranked', 'near miss', 'retrieval miss']
    """
    keys = ["rqa", *QUESTION_KEYS]
    out = outcomes.merge(ranks[[*keys, "gold_rank"]], on=keys, how="left", validate="many_to_one")
    if out["gold_rank"].isna().any():
        raise ValueError("rqa_ranks.parquet lacks questions of the outcomes; rerun `fqa run rqa`")
    rank = out["gold_rank"].to_numpy(int)
    correct = out["correct"].to_numpy(bool)
    out["category"] = np.select(
        [correct, rank <= 5, rank <= depth], ["correct", "misranked", "near miss"], "retrieval miss"
    )
    return out


def accuracy_by(
    outcomes: pd.DataFrame,
    by: Sequence[str],
    column: str = "correct",
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean of ``column`` per group with a percentile bootstrap CI over its questions.

    Seeds are averaged per question first (when a ``seed`` column is present); resampling is
    stratified by test set, so each group's CI is that of its micro average.

    Returns:
        ``by`` columns, ``n`` (questions), ``mean``, ``ci_low``, ``ci_high``.

    Example:
        >>> out = pd.DataFrame({"g": ["a"] * 4, "domain": "D", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "correct": [1, 1, 1, 0]})
        >>> accuracy_by(out, ["g"], n_resamples=200)[["n", "mean"]].values.tolist()
        [[4.0, 0.75]]
    """
    work = seed_mean(outcomes, [*by, *QUESTION_KEYS], column)
    rows = []
    for values, block in work.groupby(list(by), sort=False):
        strata = (block["domain"].astype(str) + "/" + block["split"].astype(str)).tolist()
        means = bootstrap_means(
            block[[column]].reset_index(drop=True), strata, "micro", n_resamples, seed, confidence
        )
        labels = values if isinstance(values, tuple) else (values,)
        row: dict[str, object] = dict(zip(by, labels, strict=True))
        row["n"] = float(len(block))
        row.update({str(k): float(v) for k, v in means.iloc[0].items()})
        rows.append(row)
    return pd.DataFrame(rows)


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


#: The four scorings of the temperature experiment, as named in its tables.
SCALINGS: tuple[str, ...] = ("as run", "P_theta at T=1", "P_phi scaled", "both")


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


def weight_stability(curve: pd.DataFrame) -> pd.DataFrame:
    """Best w overall, per domain and per seed, for every (rqa, reranker) of a weight curve.

    Returns:
        One row per (rqa, reranker): ``best_w``, ``best_accuracy``, ``accuracy_at_half``,
        ``accuracy_at_0``, then ``w*<domain>`` and ``w*seed<seed>`` columns.
    """
    keys = ["rqa", "reranker"]
    out = weight_optima(curve, keys).set_index(keys)
    for by in ("domain", "seed"):
        per = weight_optima(curve, [*keys, by]).pivot_table(index=keys, columns=by, values="best_w")
        per.columns = [f"w*{'seed' if by == 'seed' else ''}{c}" for c in per.columns]
        out = out.join(per)
    return out.reset_index()


def item_outcomes(per_item: pd.DataFrame) -> pd.DataFrame:
    """Per-item rating scores keyed like questions (``split = "feedback_test"``, ``question_id = item_id``).

    So :func:`~fqa_analysis.core.compare.compare` and :func:`accuracy_by` work on feedback_test
    items unchanged.
    """
    return per_item.rename(columns={"item_id": "question_id"}).assign(split="feedback_test")


#: How the transfer experiment's runs are named in its tables.
TRANSFER_RUNS: dict[str, str] = {
    "none": "RQA alone",
    "fraction": "all feedback",
    "leave_out": "without own domain",
    "size_control": "size-matched control",
}


def transfer_outcomes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """For every domain, its questions (or items) under the four transfer runs.

    Args:
        outcomes: Per-question (or per-item) rows whose ``reranker`` is ``none`` or
            ``<experiment>:<setting>`` (:func:`experiment_candidates`).

    Returns:
        The rows of ``none`` and ``fraction:1`` for every domain, and of ``leave_out:<d>`` and
        ``size_control:<d>`` for domain d only, with ``training`` naming the run
        (:data:`TRANSFER_RUNS`).
    """
    label = outcomes["reranker"].astype(str)
    kind = label.str.split(":").str[0]
    setting = label.str.split(":").str[1]
    own = (kind.isin(["leave_out", "size_control"]) & (setting == outcomes["domain"])) | (
        label == "fraction:1"
    )
    keep = own | (label == NO_RERANKER)
    return outcomes[keep.to_numpy()].assign(training=kind[keep].map(TRANSFER_RUNS).to_numpy())


def best_run(outcomes: pd.DataFrame, domains: Sequence[str] = FEEDBACK_DOMAINS) -> tuple[str, str]:
    """The (rqa, reranker) with the highest seed-averaged micro accuracy over ``domains``.

    Example:
        >>> o = pd.DataFrame({"rqa": ["a", "a", "b", "b"], "reranker": "none", "domain": "D",
        ...     "correct": [1, 0, 1, 1]})
        >>> best_run(o, ["D"])
        ('b', 'none')
    """
    acc = outcomes[outcomes["domain"].isin(list(domains))].groupby(["rqa", "reranker"])["correct"].mean()
    best = acc.index[int(np.argmax(acc.to_numpy()))]
    return str(best[0]), str(best[1])


def page_overlap(categorised: pd.DataFrame, splits: Mapping[tuple[str, str], QASplit]) -> pd.DataFrame:
    """Name the picked and the gold passage of every question and say whether they share a page.

    FAQ collections split one page into many passages; a wrong answer from the gold's own page
    is a near miss a user may still find useful, one from another page is not.

    Returns:
        ``categorised`` with ``gold_id``, ``picked`` and ``gold`` (``title | headers``) and
        ``same_page`` (same ``page_title``).
    """
    gold_ids, picked, gold, same = [], [], [], []
    positions = {
        key: {q.question_id: i for i, q in enumerate(split.questions)} for key, split in splits.items()
    }
    for d, s, q, p in zip(
        categorised["domain"],
        categorised["split"],
        categorised["question_id"],
        categorised["passage_id"],
        strict=True,
    ):
        split = splits[(str(d), str(s))]
        g = split.questions[positions[(str(d), str(s))][int(q)]].passage_id
        a, b = split.passages[int(p)], split.passages[g]
        gold_ids.append(g)
        picked.append(" | ".join([a.page_title, *a.section_headers]))
        gold.append(" | ".join([b.page_title, *b.section_headers]))
        same.append(a.page_title == b.page_title)
    return categorised.assign(gold_id=gold_ids, picked=picked, gold=gold, same_page=same)
