"""Analyses of the rerank stage main table, score ablation, rating quality per loss.

Pure functions over ``results/`` tables (no models): the book's reranking chapters call them,
and the tests check them on tiny hand-made tables.

* :func:`score_outcomes`: each question's pick under a scoring rule (the paper's
  ``P_theta + P(Excellent)``, the ablation's ``P_theta + E[y]/3``, or a weighted mix).
* :func:`seed_table`: accuracy per test set and overall (micro, macro), mean and sd over seeds.
* :func:`compare_to_baseline`: paired bootstrap of every reranker against the RQA alone, on
  seed-averaged per-question outcomes, Holm-corrected within each RQA system.
* :func:`reranker_quality`: per trained model, how well P(Excellent) tells the gold passage from
  the RQA's other candidates (AUC), and what it picks alone and added to P_theta.
* :func:`score_ablation`: P(Excellent) against E[y]/3 for every (RQA, reranker), Holm over all.
* :func:`rating_quality_table` / :func:`per_item_rating_scores`: how well each reranker's
  P_phi matches the three annotators of feedback_test, on all items and by agreement.
* :func:`pick_disagreement`: where a reranker alone and the RQA pick different passages, who is
  right, and whom the paper's sum follows: why a reranker adds what it adds.
* :func:`rerank_targets`: the project's targets for the rerankers (AUC, KL against a constant,
  the reranker alone, the reranked gain), each measured value beside its goal.
* :func:`recipe_outcomes` / :func:`recipe_table`: the relevance model's recipes on held-out
  QA-train questions (``relevance_recipes.parquet``): AUC, the gold picked alone, reciprocal rank.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import NO_RERANKER, RATING_COLUMNS, RUN_KEYS
from fqa_analysis.core.compare import Comparison, compare
from fqa_analysis.core.metrics import accuracy_by_test_set, overall_accuracy, test_set_label
from fqa_analysis.core.ratings import LABELS, kl_rows, rating_quality, rating_value
from fqa_analysis.core.scoring import (
    RerankerScore,
    combined_score,
    expected_rating_score,
    p_excellent_score,
    select_top1,
)
from fqa_analysis.core.stats import Average
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "AGREEMENT_SUBSETS",
    "BOOK_SCORING",
    "FEEDBACK_CLAIM",
    "auc",
    "best_feedback_gain",
    "ceiling_share",
    "compare_family",
    "compare_to_baseline",
    "constant_predictions",
    "constant_quality_by_subset",
    "constant_rating_quality",
    "feedback_pairs",
    "freezing_effect",
    "item_comparison",
    "join_annotators",
    "loss_comparisons",
    "mean_rating_distribution",
    "model_kl",
    "per_item_rating_scores",
    "pick_disagreement",
    "prior_comparison",
    "rating_quality_table",
    "recipe_comparison",
    "recipe_outcomes",
    "recipe_table",
    "rerank_targets",
    "reranker_quality",
    "run_measures",
    "score_ablation",
    "score_outcomes",
    "score_separation",
    "scoring_note",
    "seed_table",
]

#: Subsets of feedback_test items by annotator agreement.
AGREEMENT_SUBSETS: tuple[str, ...] = ("all", "unanimous", "disagree")


#: The scoring settings of the book's pages (their ``parameters`` cells hold these values): the
#: reranker's part of S, the weight of the sum (None: the paper's plain sum) and the RQA candidates
#: the reranker rescores.
BOOK_SCORING: dict[str, Any] = {"SCORE": "p_excellent", "WEIGHT": None, "DEPTH": 5}


def scoring_note(score: str, weight: float | None, depth: int, k: int = 5) -> str | None:
    """Check a page's scoring parameters; name those that differ from the book's (None: none does).

    A reader changes a page's ``parameters`` cell and re-executes it to get an ablation from the
    stored predictions; the page then says, under its findings, that it shows other settings.

    Raises:
        ValueError: A value the parameter does not allow (one line: the parameter, the value, the range).

    Example:
        >>> scoring_note("p_excellent", None, 5) is None
        True
        >>> scoring_note("expected_rating", 0.25, 3)  # doctest: +NORMALIZE_WHITESPACE
        "*This page was executed with settings other than the book's: SCORE = 'expected_rating' (book:
        'p_excellent'), WEIGHT = 0.25 (book: None), DEPTH = 3 (book: 5); every computed table, test and
        finding on it uses them (its fixed text describes the book's).*"
        >>> scoring_note("p_excellent", 2.0, 5)
        Traceback (most recent call last):
        ...
        ValueError: WEIGHT = 2.0: allowed None (the paper's sum P_theta + score) or a number in [0, 1]
    """
    if score not in ("p_excellent", "expected_rating"):
        raise ValueError(
            f"SCORE = {score!r}: allowed 'p_excellent' (the paper's) or 'expected_rating' (E[y]/3)"
        )
    if weight is not None and not (isinstance(weight, int | float) and 0.0 <= weight <= 1.0):
        raise ValueError(
            f"WEIGHT = {weight!r}: allowed None (the paper's sum P_theta + score) or a number in [0, 1]"
        )
    if not isinstance(depth, int) or not 1 <= depth <= k:
        raise ValueError(
            f"DEPTH = {depth!r}: allowed an integer in 1..{k} (the candidates stored per question)"
        )
    given = {"SCORE": score, "WEIGHT": weight, "DEPTH": depth}
    changed = [f"{n} = {v!r} (book: {BOOK_SCORING[n]!r})" for n, v in given.items() if v != BOOK_SCORING[n]]
    if not changed:
        return None
    return (
        f"*This page was executed with settings other than the book's: {', '.join(changed)}; every computed "
        "table, test and finding on it uses them (its fixed text describes the book's).*"
    )


def score_outcomes(
    candidates: pd.DataFrame, reranker_score: RerankerScore = "p_excellent", weight: float | None = None
) -> pd.DataFrame:
    """Each (run, question)'s pick under a scoring rule (see :func:`.scoring.combined_score`).

    Rows of the RQA alone (reranker ``none``) rank by ``p_rqa`` whatever the rule.
    """
    return select_top1(candidates, combined_score(candidates, reranker_score, weight))


def seed_table(outcomes: pd.DataFrame, overall_domains: Sequence[str] = FEEDBACK_DOMAINS) -> pd.DataFrame:
    """Accuracy per test set and overall, mean and sample sd over each system's seeds.

    Args:
        outcomes: Per-question outcomes (:func:`score_outcomes`), several seeds per run.
        overall_domains: Domains that make up "overall" (the paper's four feedback domains).

    Returns:
        Long table ``protocol, rqa, reranker, test_set, mean, sd, seeds``; test sets are named
        as elsewhere in the book (``WHO``, ``Quebec (test_old_faq_coll4)``, ``overall (micro)``).
        A single-seed system (the RQA alone) has sd 0.

    Example:
        >>> out = pd.DataFrame({"protocol": "p", "rqa": "r", "reranker": "x", "seed": [0, 0, 0, 1, 1, 1],
        ...     "domain": ["A", "A", "B"] * 2, "split": "test", "question_id": [0, 1, 0] * 2,
        ...     "correct": [1, 1, 0, 1, 0, 0]})
        >>> t = seed_table(out, ["A", "B"]).set_index("test_set")
        >>> [float(t.loc[s, "mean"]) for s in ("A", "overall (micro)", "overall (macro)")]
        [0.75, 0.5, 0.375]
        >>> round(float(t.loc["overall (micro)", "sd"]), 4)  # seeds 2/3 and 1/3
        0.2357
    """
    keys = [k for k in RUN_KEYS if k != "seed"]
    per_set = accuracy_by_test_set(outcomes)
    labels = zip(per_set["domain"], per_set["split"], strict=True)
    per_set["test_set"] = [test_set_label(d, s) for d, s in labels]
    parts = [per_set[[*RUN_KEYS, "test_set", "accuracy"]]]
    overall = outcomes[outcomes["domain"].isin(list(overall_domains))]
    for average in ("micro", "macro"):
        acc = overall_accuracy(overall, average)
        parts.append(acc[RUN_KEYS + ["accuracy"]].assign(test_set=f"overall ({average})"))
    long = pd.concat(parts, ignore_index=True)
    grouped = long.groupby([*keys, "test_set"], sort=False)["accuracy"]
    out = grouped.agg(mean="mean", sd="std", seeds="size").reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    return out


def _members(systems: pd.Series, baseline: str) -> str:
    """The systems a family compares with ``baseline``, named when few (a signature's family).

    Example:
        >>> _members(pd.Series(["kl", "ce", "ce", "maj"]), "kl")
        'ce, maj'
        >>> _members(pd.Series(list("abcde")), "a")
        'each of the 4 other rerankers'
    """
    others = sorted(set(systems) - {baseline})
    return ", ".join(others) if len(others) <= 3 else f"each of the {len(others)} other rerankers"


def compare_to_baseline(
    outcomes: pd.DataFrame,
    baseline: str = "none",
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    average: Average = "micro",
    n_resamples: int = 10_000,
    seed: int = 0,
    commit: str | None = None,
    resample_seeds: bool = False,
) -> Comparison:
    """Every reranker against ``baseline`` within each RQA system, over the overall questions.

    :func:`~fqa_analysis.core.compare.compare` on the overall questions: outcomes are first
    averaged over seeds per question (0, 1/3, 2/3, 1 with three seeds), so the test asks whether
    the reranker helps *as trained with several seeds*, not one lucky seed. Resampling is
    stratified by test set; Holm corrects over the rerankers of one RQA system. With
    ``resample_seeds`` each reranker's seeds are resampled too
    (:func:`~fqa_analysis.core.stats.seed_bootstrap`).

    Returns:
        The comparison; its table is indexed by ``rqa, reranker``.
    """
    overall = outcomes[outcomes["domain"].isin(list(overall_domains))]
    family = (
        "each reranker vs the RQA alone, per RQA"
        if baseline == NO_RERANKER
        else f"{_members(overall['reranker'], baseline)} vs {baseline}, per RQA"
    )
    settings = {"average": average, "n_resamples": n_resamples, "seed": seed, "commit": commit}
    settings["resample_seeds"] = resample_seeds
    return _per_rqa(overall, baseline=baseline, family="within", describe=family, **settings)


#: The paper's claim that feedback adds to QA data: these rerankers against the relevance model.
FEEDBACK_CLAIM: tuple[str, ...] = ("combined", "feedback_kl")


def feedback_pairs(present: Collection[str]) -> list[tuple[str, str]]:
    """The pairs the book tests the paper's claim with (:func:`compare_family`).

    Each of :data:`FEEDBACK_CLAIM` present against ``vanilla``; none without ``vanilla``.

    Example:
        >>> feedback_pairs({"vanilla", "feedback_kl", "feedback_ce_majority"})
        [('feedback_kl', 'vanilla')]
        >>> feedback_pairs({"combined", "feedback_kl"})
        []
    """
    if "vanilla" not in present:
        return []
    return [(s, "vanilla") for s in FEEDBACK_CLAIM if s in present]


def best_feedback_gain(gains: pd.DataFrame) -> tuple[str, bool] | None:
    """The reranker trained on feedback with the largest Δ over the RQA alone, and whether it is a gain.

    Args:
        gains: One RQA system's rows of a :func:`compare_to_baseline` table (indexed by reranker).

    Returns:
        ``(reranker, significant gain)`` (Holm p < 0.05 and Δ > 0), or None without a feedback
        reranker (``vanilla``, trained on QA data alone, is not one).

    Example:
        >>> g = pd.DataFrame({"delta": [0.009, 0.006, 0.002], "p_holm": [0.2, 0.01, 0.9]},
        ...                  index=["vanilla", "combined", "feedback_kl"])
        >>> best_feedback_gain(g)
        ('combined', True)
        >>> best_feedback_gain(g.loc[["vanilla"]]) is None
        True
    """
    fed = gains[[name != "vanilla" for name in gains.index]]
    if fed.empty:
        return None
    deltas = fed["delta"].to_numpy(dtype=float)
    at = int(np.argmax(deltas))
    p_holm = float(fed["p_holm"].to_numpy(dtype=float)[at])
    return str(fed.index[at]), bool(p_holm < 0.05 and deltas[at] > 0)


def compare_family(
    outcomes: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    average: Average = "micro",
    n_resamples: int = 10_000,
    seed: int = 0,
    commit: str | None = None,
    resample_seeds: bool = False,
) -> Comparison:
    """Each ``(reranker, baseline)`` pair within every RQA system, Holm over the whole family.

    The paper's claim that feedback adds to QA data is such a family: ``combined`` and
    ``feedback_kl`` against ``vanilla`` on every RQA system. As :func:`compare_to_baseline`
    (seed-averaged per-question outcomes, paired bootstrap stratified by test set), but Holm
    corrects over every (RQA, pair) row together, not per RQA. ``resample_seeds``: each reranker's
    training seeds are resampled too (:func:`~fqa_analysis.core.stats.seed_bootstrap`).

    Returns:
        The comparison; its table is indexed by ``rqa, reranker`` with each row's ``baseline``.

    Raises:
        ValueError: A reranker of ``pairs`` has no rows in ``outcomes``.
    """
    overall = outcomes[outcomes["domain"].isin(list(overall_domains))]
    family = ", ".join(f"{s} vs {b}" for s, b in pairs) + ", on every RQA"
    settings = {"average": average, "n_resamples": n_resamples, "seed": seed, "commit": commit}
    return _per_rqa(
        overall, pairs=pairs, family="table", describe=family, resample_seeds=resample_seeds, **settings
    )


def _per_rqa(outcomes: pd.DataFrame, **how: Any) -> Comparison:
    """:func:`~fqa_analysis.core.compare.compare` of rerankers within every RQA system."""
    return compare(outcomes, system="reranker", within=["rqa"], **how)


def score_ablation(
    candidates: pd.DataFrame,
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    n_resamples: int = 10_000,
    seed: int = 0,
    commit: str | None = None,
    weight: float | None = None,
) -> Comparison:
    """P(Excellent) against E[y]/3 as the reranker's score, for every (RQA, reranker).

    Both rules add the score to P_theta (``weight`` None, the paper's sum) or weigh the two
    (``(1 - w) P_theta + w score``), as :func:`score_outcomes` reads it.

    Per (RQA, reranker): seed-averaged outcomes under both rules over the overall questions,
    a paired bootstrap (stratified by test set) of ``expected_rating - p_excellent``; Holm
    corrects over every (RQA, reranker) pair of the table.

    Returns:
        The comparison of ``rule`` ``expected_rating`` against ``p_excellent`` (table indexed by
        ``rqa, reranker, rule``; ``mean`` is E[y]/3's accuracy, ``baseline_mean``
        P(Excellent)'s), with one more column, ``changed_picks``: the share of questions x seeds
        whose answer differs between the two rules.
    """
    rated = candidates[candidates["reranker"] != "none"]
    rated = rated[rated["domain"].isin(list(overall_domains))]
    picks = {rule: score_outcomes(rated, rule, weight) for rule in ("p_excellent", "expected_rating")}
    keys = [*RUN_KEYS, "domain", "split", "question_id"]
    joined = picks["p_excellent"].merge(picks["expected_rating"], on=keys, suffixes=("_pe", "_er"))
    changed = (
        joined.assign(changed=joined["passage_id_pe"] != joined["passage_id_er"])
        .groupby(["rqa", "reranker"], sort=False)["changed"]
        .mean()
    )
    # one long table: both rules' picks, in the order of the joined questions
    both = pd.concat(
        [
            joined.rename(columns={f"correct{sfx}": "correct"}).assign(rule=rule)[[*keys, "rule", "correct"]]
            for rule, sfx in (("p_excellent", "_pe"), ("expected_rating", "_er"))
        ],
        ignore_index=True,
    )
    cmp = compare(
        both,
        system="rule",
        baseline="p_excellent",
        within=["rqa", "reranker"],
        family="table",
        describe="E[y]/3 vs P(Excellent), every (RQA, reranker)",
        n_resamples=n_resamples,
        seed=seed,
        commit=commit,
    )
    table = cmp.table.copy()
    table["changed_picks"] = [float(changed[(r, v)]) for r, v, _ in table.index]
    return replace(cmp, table=table)


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC: the chance a random positive outscores a random negative (ties count half).

    Example:
        >>> auc(np.array([0.9, 0.5, 0.5, 0.1]), np.array([True, True, False, False]))
        0.875
    """
    from scipy.stats import rankdata

    pos = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(score, dtype=float))
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def score_separation(
    candidates: pd.DataFrame, overall_domains: Sequence[str] = FEEDBACK_DOMAINS
) -> pd.DataFrame:
    """Why one reranker score beats the other: how each separates gold from the other candidates.

    Per (RQA, reranker), over the top-k candidates of the overall questions: the AUC of
    P(Excellent) and of E[y]/3 for gold vs non-gold candidates, and the mean within-question
    standard deviation of each score and of ``p_rqa`` (how strongly a score can reorder the
    RQA's list: a score that barely varies across a question's candidates leaves P_theta in charge).
    Each is computed per seed and averaged over the reranker's seeds, as every per-model number of
    the book is (pooling the seeds' candidates into one AUC would give another number).

    Returns:
        ``rqa, reranker, auc_p_excellent, auc_expected_rating, spread_p_rqa,
        spread_p_excellent, spread_expected_rating``.
    """
    rated = candidates[(candidates["reranker"] != "none") & candidates["domain"].isin(list(overall_domains))]
    rated = rated.assign(
        pe=p_excellent_score(rated), er=expected_rating_score(rated), p=rated["p_rqa"].astype(float)
    )
    rows = []
    for (rqa, reranker, seed), block in rated.groupby(["rqa", "reranker", "seed"], sort=False):
        gold = block["is_gold"].to_numpy(dtype=bool)
        spread = block.groupby([*RUN_KEYS, "domain", "split", "question_id"], sort=False)[
            ["p", "pe", "er"]
        ].std()
        rows.append(
            {
                "rqa": rqa,
                "reranker": reranker,
                "seed": seed,
                "auc_p_excellent": auc(block["pe"].to_numpy(), gold),
                "auc_expected_rating": auc(block["er"].to_numpy(), gold),
                "spread_p_rqa": float(spread["p"].mean()),
                "spread_p_excellent": float(spread["pe"].mean()),
                "spread_expected_rating": float(spread["er"].mean()),
            }
        )
    per_seed = pd.DataFrame(rows)
    return (
        per_seed.groupby(["rqa", "reranker"], sort=False)
        .mean(numeric_only=True)
        .drop(columns="seed")
        .reset_index()
    )


def reranker_quality(
    candidates: pd.DataFrame,
    rqa: str = "hybrid",
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    reranker_score: RerankerScore = "p_excellent",
    weight: float | None = None,
) -> pd.DataFrame:
    """Per reranker and seed, on one RQA system's top-k of the overall questions.

    * ``auc``: ROC AUC of P(Excellent), gold vs the other candidates of the top k (pooled over
      questions; questions without the gold in the top k contribute negatives only);
    * ``alone``: accuracy@1 of the reranker alone, argmax P(Excellent) (ties to the better RQA rank);
    * ``reranked``: accuracy@1 of the paper's S = P_theta + P(Excellent) (or of another rule:
      ``reranker_score`` and ``weight``, as :func:`score_outcomes` reads them);
    * ``rqa_alone`` and ``random_in_topk`` (recall@k / k): the two references.

    Accuracies are micro over the overall questions (every question of a domain without its gold
    in the top k counts as wrong).

    Returns:
        ``reranker, seed, auc, alone, reranked, rqa_alone, random_in_topk``, one row per model.

    Example:
        >>> rows = pd.DataFrame({"protocol": "p", "rqa": "h", "seed": 0, "domain": "A", "split": "test",
        ...     "question_id": [0, 0, 1, 1], "passage_id": [1, 2, 1, 2], "rqa_rank": [1, 2, 1, 2],
        ...     "p_rqa": [0.6, 0.4, 0.7, 0.3], "is_gold": [False, True, True, False],
        ...     "reranker": "x", "p_bad": [0.8, 0.1, 0.5, 0.6], "p_could_be_improved": 0.0,
        ...     "p_acceptable": 0.0, "p_excellent": [0.2, 0.9, 0.5, 0.4]})
        >>> none = rows.assign(reranker="none", p_bad=np.nan, p_excellent=np.nan)
        >>> q = reranker_quality(pd.concat([none, rows]), "h", ["A"]).iloc[0]
        >>> float(q.auc), float(q.alone), float(q.reranked), float(q.rqa_alone), float(q.random_in_topk)
        (1.0, 1.0, 1.0, 0.5, 0.5)
    """
    mine = candidates[(candidates["rqa"] == rqa) & candidates["domain"].isin(list(overall_domains))]
    if mine.empty:
        raise ValueError(f"no candidate rows of RQA system {rqa!r} in the overall domains")
    none = mine[mine["reranker"] == "none"]
    base = select_top1(none, none["p_rqa"].astype(float))
    rqa_alone = float(base["correct"].mean())
    random_pick = float(base["gold_in_topk"].mean()) / float(mine["rqa_rank"].max())
    rated = mine[mine["reranker"] != "none"]
    keys = ["reranker", "seed"]
    separation = pd.Series(
        {
            key: auc(b["p_excellent"].to_numpy(dtype=float), b["is_gold"].to_numpy(dtype=bool))
            for key, b in rated.groupby(keys, sort=False)
        },
        dtype=float,
    ).rename_axis(keys)
    table = pd.DataFrame(
        {
            "auc": separation,
            "alone": select_top1(rated, p_excellent_score(rated)).groupby(keys, sort=False)["correct"].mean(),
            "reranked": score_outcomes(rated, reranker_score, weight)
            .groupby(keys, sort=False)["correct"]
            .mean(),
        }
    )
    return table.assign(rqa_alone=rqa_alone, random_in_topk=random_pick).reset_index()


def join_annotators(predictions: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """Attach the annotators' distribution, majority and agreement to each prediction row.

    Args:
        predictions: ``rating_predictions.parquet`` (``reranker, seed, domain, item_id, p_*``).
        items: :func:`~fqa_analysis.core.ratings.item_ratings` of feedback_test.

    Returns:
        The predictions with ``a_bad .. a_excellent`` (annotator shares), ``majority`` and
        ``unanimous``.

    Raises:
        ValueError: A prediction has no annotated item (predictions and data do not match).
    """
    ann = items[["domain", "item_id", *RATING_COLUMNS, "majority", "unanimous"]].rename(
        columns={c: "a_" + c[2:] for c in RATING_COLUMNS}
    )
    out = predictions.merge(ann, on=["domain", "item_id"], how="left", validate="many_to_one")
    missing = out["majority"].isna()
    if missing.any():
        first = out[missing].iloc[0]
        raise ValueError(
            f"{int(missing.sum())} prediction row(s) have no annotated feedback_test item, e.g. "
            f"domain={first['domain']} item_id={first['item_id']}; rerun `fqa run rerank` on the "
            "same data directory the book reads"
        )
    return out


def _subsets(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    unanimous = frame["unanimous"].astype(bool)
    return {"all": frame, "unanimous": frame[unanimous], "disagree": frame[~unanimous]}


def constant_quality_by_subset(distribution: Sequence[float], items: pd.DataFrame) -> pd.DataFrame:
    """:func:`constant_rating_quality` on every agreement subset (:data:`AGREEMENT_SUBSETS`).

    Returns:
        One row per subset (index ``subset``), the columns of :func:`constant_rating_quality`.
    """
    rows = {name: constant_rating_quality(distribution, part) for name, part in _subsets(items).items()}
    return pd.DataFrame(rows).T.rename_axis("subset")


def constant_rating_quality(distribution: Sequence[float], items: pd.DataFrame) -> dict[str, float]:
    """:func:`~fqa_analysis.core.ratings.rating_quality` of one distribution predicted for every item.

    The floor a rating model must beat (e.g. the training label prior, or always one label).

    Args:
        distribution: P(y) over Bad .. Excellent.
        items: :func:`~fqa_analysis.core.ratings.item_ratings` rows (annotator shares, ``majority``).

    Example:
        >>> items = pd.DataFrame({"p_bad": [1.0, 0.5], "p_could_be_improved": 0.0,
        ...     "p_acceptable": 0.0, "p_excellent": [0.0, 0.5], "majority": ["Bad", "Bad"]})
        >>> q = constant_rating_quality([0.5, 0.0, 0.0, 0.5], items)
        >>> q["accuracy"], round(q["kl"], 4)  # KL = (ln 2 + 0) / 2
        (1.0, 0.3466)
    """
    predicted = np.tile(np.asarray(distribution, dtype=float), (len(items), 1))
    return rating_quality(predicted, items[RATING_COLUMNS].to_numpy(), items["majority"].tolist())


def constant_predictions(
    distribution: Sequence[float], items: pd.DataFrame, name: str = "prior"
) -> pd.DataFrame:
    """One distribution predicted for every item, as ``rating_predictions.parquet`` rows (seed 0).

    So a constant (the training label prior) enters the same paired tests as the rerankers.

    Args:
        distribution: P(y) over Bad .. Excellent.
        items: Rows with ``domain`` and ``item_id`` (e.g. :func:`~fqa_analysis.core.ratings.item_ratings`).
        name: The ``reranker`` value of the rows.

    Example:
        >>> items = pd.DataFrame({"domain": ["A", "B"], "item_id": [3, 5]})
        >>> rows = constant_predictions([0.4, 0.1, 0.1, 0.4], items)
        >>> rows[["reranker", "seed", "domain", "item_id", "p_bad", "p_excellent"]].values.tolist()
        [['prior', 0, 'A', 3, 0.4, 0.4], ['prior', 0, 'B', 5, 0.4, 0.4]]
    """
    if len(distribution) != len(RATING_COLUMNS):
        raise ValueError(f"a rating distribution has {len(RATING_COLUMNS)} entries, got {len(distribution)}")
    rows = items[["domain", "item_id"]].reset_index(drop=True).assign(reranker=name, seed=0)
    for column, p in zip(RATING_COLUMNS, distribution, strict=True):
        rows[column] = float(p)
    return rows[["reranker", "seed", "domain", "item_id", *RATING_COLUMNS]]


def rating_quality_table(joined: pd.DataFrame, bins: int = 10) -> pd.DataFrame:
    """Rating quality per reranker, seed and agreement subset (see :func:`rating_quality`).

    Args:
        joined: :func:`join_annotators` output.
        bins: Bins of the calibration error of P(Excellent).

    Returns:
        ``reranker, seed, subset, n, accuracy, macro_f1, kl, ece_excellent``.
    """
    ann_cols = ["a_" + c[2:] for c in RATING_COLUMNS]
    rows = []
    for (reranker, seed), block in joined.groupby(["reranker", "seed"], sort=False):
        for subset, part in _subsets(block).items():
            if part.empty:
                continue
            q = rating_quality(
                part[RATING_COLUMNS].to_numpy(), part[ann_cols].to_numpy(), part["majority"].tolist(), bins
            )
            rows.append({"reranker": reranker, "seed": seed, "subset": subset, "n": len(part), **q})
    return pd.DataFrame(rows)


def per_item_rating_scores(joined: pd.DataFrame, by_seed: bool = False) -> pd.DataFrame:
    """Per item and reranker, seed-averaged: KL(annotators || P_phi) and argmax = majority.

    These per-item values are what a paired bootstrap between losses resamples. With ``by_seed``
    each seed keeps its own row (a ``seed`` column), for a test that resamples seeds too.

    Returns:
        ``reranker, domain, item_id, unanimous, kl, correct`` (and ``seed`` with ``by_seed``).

    Example:
        >>> j = pd.DataFrame({"reranker": "x", "seed": [0, 1], "domain": "A", "item_id": 0,
        ...     "p_bad": [0.5, 0.1], "p_could_be_improved": 0.0, "p_acceptable": 0.0,
        ...     "p_excellent": [0.5, 0.9], "a_bad": 0.0, "a_could_be_improved": 0.0,
        ...     "a_acceptable": 0.0, "a_excellent": 1.0, "majority": "Excellent", "unanimous": True})
        >>> r = per_item_rating_scores(j).iloc[0]
        >>> # KL = (ln 2 + ln(1/0.9)) / 2; seed 0's argmax tie goes to Bad (wrong), seed 1 is right
        >>> round(float(r["kl"]), 4), float(r["correct"])
        (0.3993, 0.5)
    """
    pred = joined[RATING_COLUMNS].to_numpy(dtype=float)
    ann = joined[["a_" + c[2:] for c in RATING_COLUMNS]].to_numpy(dtype=float)
    kl = kl_rows(ann, pred)
    truth = np.array([rating_value(m) for m in joined["majority"]])
    frame = joined[["reranker", "seed", "domain", "item_id", "unanimous"]].assign(
        kl=kl, correct=(pred.argmax(axis=1) == truth).astype(float)
    )
    keys = ["reranker", "seed", "domain", "item_id"] if by_seed else ["reranker", "domain", "item_id"]
    return (
        frame.groupby(keys, sort=False)
        .agg(unanimous=("unanimous", "first"), kl=("kl", "mean"), correct=("correct", "mean"))
        .reset_index()
    )


def item_comparison(
    per_item: pd.DataFrame,
    baseline: str,
    metric: str,
    family: str,
    commit: str | None = None,
    resample_seeds: bool = False,
) -> Comparison:
    """Every other reranker against ``baseline`` on one per-item rating score, paired over items.

    :func:`~fqa_analysis.core.compare.compare` on :func:`per_item_rating_scores` rows (already
    averaged over each reranker's seeds per item), stratified by domain, Holm over the rerankers;
    the signature names the family as ``family`` says and the seeds as averaged per item.

    Example:
        >>> per_item = pd.DataFrame({"reranker": ["kl"] * 2 + ["ce"] * 2, "domain": "A",
        ...     "item_id": [0, 1] * 2, "kl": [0.2, 0.4, 0.1, 0.7]})
        >>> cmp = item_comparison(per_item, "kl", "kl", "ce vs kl")
        >>> round(float(cmp.table["delta"].iloc[0]), 3), "seeds:mean per item" in cmp.signature()
        (0.1, True)

    With ``resample_seeds`` (rows of :func:`per_item_rating_scores` ``by_seed``), each reranker's
    seeds are resampled too (:func:`~fqa_analysis.core.stats.seed_bootstrap`).
    """
    cmp = compare(
        per_item,
        system="reranker",
        baseline=baseline,
        value=metric,
        keys=["domain", "item_id"],
        strata=["domain"],
        commit=commit,
        resample_seeds=resample_seeds,
    )
    return replace(cmp, family=family, seeds=cmp.seeds if resample_seeds else "mean per item")


def prior_comparison(
    predictions: pd.DataFrame,
    prior: Sequence[float],
    items: pd.DataFrame,
    rerankers: Collection[str],
    commit: str | None = None,
) -> Comparison:
    """Each of ``rerankers`` against the training prior in KL to the annotators, paired over items.

    The prior (:func:`constant_predictions`) is the constant a rating model must beat; Holm over
    the rerankers compared (:func:`item_comparison`).

    Args:
        predictions: ``rating_predictions.parquet`` rows.
        prior: The training prior, P(y) over Bad .. Excellent.
        items: :func:`~fqa_analysis.core.ratings.item_ratings` of the items compared on.
        rerankers: The rerankers compared (those absent from ``predictions`` are left out).
        commit: Code version recorded in the signature.

    Example:
        >>> from fqa_analysis.core.ratings import item_ratings
        >>> items = item_ratings(pd.DataFrame({"domain": "A", "split": "test", "item_id": [0, 0, 1, 1],
        ...     "rating": ["Excellent", "Excellent", "Bad", "Excellent"]}))
        >>> pred = constant_predictions([0.1, 0.1, 0.1, 0.7], items, name="m")
        >>> cmp = prior_comparison(pred, [0.25] * 4, items, ["m"])
        >>> # KL per item: log(1/0.7) and .5 log(.5/.1) + .5 log(.5/.7) against log 4 and log 2
        >>> round(float(cmp.table.loc["m", "delta"]), 3)
        -0.543
        >>> one = prior_comparison(pred[pred["item_id"] == 0], [0.25] * 4, items, ["m"])  # item 0 rated only
        >>> int(one.table.loc["m", "n"]), round(float(one.table.loc["m", "delta"]), 3)  # log(1/0.7) - log 4
        (1, -1.03)
    """
    rows = predictions[predictions["reranker"].isin(list(rerankers))]
    if rows.empty:
        raise ValueError(f"no rating predictions of {sorted(rerankers)} to compare with the training prior")
    # the prior on the items the rerankers rated (a --subset run rates only some of feedback_test)
    rated = items.merge(rows[["domain", "item_id"]].drop_duplicates(), on=["domain", "item_id"])
    scores = per_item_rating_scores(
        join_annotators(pd.concat([rows, constant_predictions(prior, rated)]), rated)
    )
    return item_comparison(
        scores, "prior", "kl", "each reranker trained on feedback vs the training prior", commit
    )


def loss_comparisons(
    per_item: pd.DataFrame,
    baseline: str = "feedback_kl",
    metrics: Sequence[str] = ("kl", "correct"),
    commit: str | None = None,
    resample_seeds: bool = False,
) -> pd.DataFrame:
    """Every other reranker against ``baseline`` per (metric, agreement subset), paired over items.

    The loss ablation's test family: :func:`~fqa_analysis.core.compare.compare` on the seed-averaged
    per-item scores of :func:`per_item_rating_scores`, stratified by domain, Holm over the rerankers
    within one (metric, subset).

    Args:
        per_item: :func:`per_item_rating_scores` rows of ``baseline`` and the rerankers it is
            compared with.
        baseline: The reranker every other is compared with.
        metrics: Per-item columns to compare (``kl``: lower is better; ``correct``).
        commit: Code version recorded in each comparison's signature.
        resample_seeds: Resample each reranker's seeds as well as the items (``per_item`` from
            :func:`per_item_rating_scores` with ``by_seed``): a difference within the seeds' spread
            is then not told apart.

    Returns:
        The comparisons' tables, reset, stacked, with ``metric`` and ``subset`` columns; the
        comparisons' signature (one family per (metric, subset), all alike) in ``attrs["signature"]``.

    Example:
        >>> per_item = pd.DataFrame({"reranker": ["kl"] * 4 + ["ce"] * 4, "domain": "A",
        ...     "item_id": [0, 1, 2, 3] * 2, "unanimous": [True, True, False, False] * 2,
        ...     "kl": [0.2, 0.4, 0.6, 0.8, 0.1, 0.3, 0.9, 0.9], "correct": [1.0, 0, 1, 0, 1, 1, 0, 0]})
        >>> t = loss_comparisons(per_item, baseline="kl").set_index(["metric", "subset", "reranker"])
        >>> t["delta"].round(3).tolist()  # ce - kl: all, unanimous, disagree; then argmax accuracy
        [0.05, -0.1, 0.2, 0.0, 0.5, -0.5]
    """
    parts = []
    family = f"{_members(per_item['reranker'], baseline)} vs {baseline}, per metric and agreement subset"
    for metric in metrics:
        for subset, part in _subsets(per_item).items():
            cmp = item_comparison(part, baseline, metric, family, commit, resample_seeds)
            parts.append(cmp.table.reset_index().assign(metric=metric, subset=subset))
    out = pd.concat(parts, ignore_index=True)
    out.attrs["signature"] = cmp.signature()
    return out


def ceiling_share(table: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """Share of the gap between the RQA alone and its top-k ceiling (recall@k) a reranker closes.

    A top-k reranker is right at most where the gold passage is among the k; a negative share
    means it moves right answers out of first place more often than it brings gold ones in.

    Args:
        table: Rows with ``rqa, reranker, mean, baseline_mean`` (a
            :func:`compare_to_baseline` table, reset).
        outcomes: :func:`score_outcomes` rows of the RQA alone (``reranker == "none"``, with
            ``gold_in_topk``), on the questions the table averages.

    Returns:
        ``rqa`` x ``reranker`` shares.

    Example:
        >>> table = pd.DataFrame({"rqa": "bm25", "reranker": ["a", "b"], "mean": [0.6, 0.45],
        ...                       "baseline_mean": 0.5})
        >>> alone = pd.DataFrame({"rqa": "bm25", "reranker": "none", "gold_in_topk": [1, 1, 1, 0]})
        >>> ceiling_share(table, alone).loc["bm25"].round(2).tolist()  # (0.6 - 0.5) / (0.75 - 0.5)
        [0.4, -0.2]
    """
    alone = outcomes[outcomes["reranker"] == "none"]
    ceiling = alone.groupby("rqa")["gold_in_topk"].mean()
    closed = table.assign(
        closed=(table["mean"] - table["baseline_mean"]) / (table["rqa"].map(ceiling) - table["baseline_mean"])
    )
    return closed.pivot(index="rqa", columns="reranker", values="closed")


def mean_rating_distribution(candidates: pd.DataFrame) -> pd.DataFrame:
    """Each reranker's P_phi averaged over the candidates it rescored (every RQA system and seed).

    Where a reranker puts mass on the middle ratings, E[y]/3 and P(Excellent) can rank apart.

    Returns:
        One row per reranker (order of first appearance), Bad .. Excellent.

    Example:
        >>> c = pd.DataFrame({"reranker": ["x", "x"], "p_bad": [0.5, 0.1], "p_could_be_improved": 0.0,
        ...                   "p_acceptable": [0.2, 0.0], "p_excellent": [0.3, 0.9]})
        >>> mean_rating_distribution(c).loc["x"].round(2).tolist()
        [0.3, 0.0, 0.1, 0.6]
    """
    rated = candidates[candidates["reranker"] != "none"]
    mass = rated.groupby("reranker", sort=False)[list(RATING_COLUMNS)].mean()
    return mass.set_axis(list(LABELS), axis=1)


def model_kl(joined: pd.DataFrame) -> pd.Series:
    """Mean KL(annotators || P_phi) over feedback_test items of every model (reranker and seed).

    Args:
        joined: :func:`join_annotators` of ``rating_predictions.parquet``.

    Returns:
        Indexed by ``reranker, seed``, in order of first appearance.

    Example:
        >>> j = pd.DataFrame({"reranker": "x", "seed": [0, 1], "domain": "A", "item_id": 0,
        ...     "p_bad": [0.5, 0.1], "p_could_be_improved": 0.0, "p_acceptable": 0.0,
        ...     "p_excellent": [0.5, 0.9], "a_bad": 0.0, "a_could_be_improved": 0.0,
        ...     "a_acceptable": 0.0, "a_excellent": 1.0, "majority": "Excellent", "unanimous": True})
        >>> model_kl(j).round(4).tolist()  # ln 2, ln(1/0.9)
        [0.6931, 0.1054]
    """
    pred = joined[RATING_COLUMNS].to_numpy(dtype=float)
    ann = joined[["a_" + c[2:] for c in RATING_COLUMNS]].to_numpy(dtype=float)
    frame = joined[["reranker", "seed"]].assign(kl=kl_rows(ann, pred))
    return frame.groupby(["reranker", "seed"], sort=False)["kl"].mean()


#: Columns of ``relevance_recipes.parquet`` that name one held-out question.
RECIPE_QUESTION_KEYS: tuple[str, ...] = ("recipe", "seed", "domain", "question_id")


def recipe_outcomes(rows: pd.DataFrame) -> pd.DataFrame:
    """Per recipe, seed and held-out question: is the gold ranked first by P(Excellent), and its 1/rank.

    Ties go to the candidate with the better (smaller) ``rank`` of the ranking the candidates came
    from, as everywhere in the book.

    Args:
        rows: ``relevance_recipes.parquet``: ``recipe, seed, domain, question_id, rank, is_gold``
            and the four ``p_*`` columns, one gold row per question.

    Returns:
        ``recipe, seed, domain, question_id, correct (1/0), reciprocal_rank``.

    Raises:
        ValueError: A question without exactly one gold row.

    Example:
        >>> rows = pd.DataFrame({"recipe": "r", "seed": 0, "domain": "WHO", "question_id": [1, 1, 2, 2],
        ...     "rank": [1, 2, 1, 2], "is_gold": [False, True, False, True],
        ...     "p_bad": 0.0, "p_could_be_improved": 0.0, "p_acceptable": 0.0,
        ...     "p_excellent": [0.2, 0.7, 0.4, 0.4]})
        >>> out = recipe_outcomes(rows)  # question 2: a tie, and the other candidate has the better rank
        >>> out["correct"].tolist(), out["reciprocal_rank"].tolist()
        ([1, 0], [1.0, 0.5])
    """
    keys = list(RECIPE_QUESTION_KEYS)
    golds = rows.groupby(keys, sort=False)["is_gold"].sum()
    if (golds != 1).any():
        bad = golds[golds != 1].index[0]
        raise ValueError(
            f"relevance_recipes.parquet: question {dict(zip(keys, bad, strict=True))} has {int(golds[bad])} "
            "gold rows (expected exactly one); rerun `fqa run relevance`"
        )
    ordered = rows.sort_values([*keys, "rank"]).assign(pe=lambda d: d["p_excellent"].astype(float))
    out = []
    for key, block in ordered.groupby(keys, sort=False):
        pe = block["pe"].to_numpy()
        gold = block["is_gold"].to_numpy(dtype=bool)
        g = float(pe[gold][0])
        g_rank = block["rank"].to_numpy()[gold][0]
        # candidates ahead of the gold: a higher P(Excellent), or an equal one with a better rank
        ahead = int(((pe > g) | ((pe == g) & (block["rank"].to_numpy() < g_rank))).sum())
        out.append(
            {
                **dict(zip(keys, key, strict=True)),
                "correct": int(ahead == 0),
                "reciprocal_rank": 1 / (1 + ahead),
            }
        )
    return pd.DataFrame(out)


def recipe_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The recipe table: per recipe, AUC, accuracy alone and MRR on the held-out questions.

    ``auc`` pools every question's candidates (gold vs the others, P(Excellent)); ``alone`` is
    the share of questions whose gold P(Excellent) ranks first; ``mrr`` the mean reciprocal rank
    of the gold. :func:`recipe_comparison` tests the differences in ``alone``.

    Returns:
        One row per recipe (index ``recipe``, in the rows' order): ``questions, auc, alone, mrr``.
    """
    outcomes = recipe_outcomes(rows)
    table = []
    for recipe, block in rows.groupby("recipe", sort=False):
        mine = outcomes[outcomes["recipe"] == recipe]
        table.append(
            {
                "recipe": recipe,
                "questions": len(mine),
                "auc": auc(block["p_excellent"].to_numpy(dtype=float), block["is_gold"].to_numpy(dtype=bool)),
                "alone": float(mine["correct"].mean()),
                "mrr": float(mine["reciprocal_rank"].mean()),
            }
        )
    return pd.DataFrame(table).set_index("recipe")


def recipe_comparison(
    rows: pd.DataFrame, baseline: str, n_resamples: int = 10_000, commit: str | None = None
) -> Comparison:
    """Each recipe's ``alone`` (the gold picked first) against ``baseline``'s, paired over questions.

    Unstratified paired bootstrap over the held-out questions (one seed each), Holm over the
    other recipes.

    Raises:
        ValueError: ``baseline`` is not a recipe of ``rows``, or the recipes scored different
            held-out questions.
    """
    recipes = list(dict.fromkeys(rows["recipe"]))
    if baseline not in recipes:
        raise ValueError(f"baseline recipe {baseline!r} is not in the table ({recipes})")
    keys = ["seed", "domain", "question_id"]
    outcomes = recipe_outcomes(rows)
    try:
        return compare(
            outcomes,
            system="recipe",
            baseline=baseline,
            keys=keys,
            strata=(),
            seeds=None,
            describe=f"every recipe vs {baseline}",
            n_resamples=n_resamples,
            commit=commit,
        )
    except ValueError as err:
        raise ValueError(
            f"the recipes scored different held-out questions ({err}); rerun `fqa run relevance` for all"
        ) from err


def rerank_targets(
    quality: pd.DataFrame,
    gains: pd.DataFrame,
    rating_kl: pd.Series,
    constant_kl: float,
    feedback: Sequence[str],
    rating_model: str = "feedback_kl",
) -> pd.DataFrame:
    """The rerankers' targets, each measured value beside its goal (NaN where a run is missing).

    1. every feedback-trained reranker in ``feedback`` separates the gold passage: the lowest of
       their seed-mean AUCs >= 0.80;
    2. ``rating_model``'s KL to the annotators is at least 0.05 nats below the best constant
       predictor's (measured: constant KL minus its KL);
    3. the best reranker alone (argmax P(Excellent), seed mean) picks the gold for >= 60%;
    4. the best reranked system gains >= 1.0 point over the RQA alone, significant after Holm.

    Args:
        quality: :func:`reranker_quality` rows of one RQA system (``reranker, seed, auc, alone``).
        gains: That RQA's rows of :func:`compare_to_baseline` (index ``reranker``; ``delta``,
            ``p_holm``).
        rating_kl: Mean KL(annotators || P_phi) on feedback_test per reranker.
        constant_kl: The best constant predictor's KL on the same items.
        feedback: The rerankers target 1 is about, those continued from the relevance model (the
            ones present are measured).
        rating_model: The reranker target 2 is about.

    Returns:
        ``target, goal, measured, met, p_holm`` (``measured`` in shares and nats as given; ``met``
        None where nothing was measured; ``p_holm`` of the best gain on row 4), indexed 1..4.

    Example:
        >>> q = pd.DataFrame({"reranker": ["a", "a", "b"], "seed": [0, 1, 0],
        ...                   "auc": [0.8, 0.9, 0.7], "alone": [0.5, 0.7, 0.4]})
        >>> g = pd.DataFrame({"delta": [0.012, 0.02], "p_holm": [0.01, 0.2]}, index=["a", "b"])
        >>> t = rerank_targets(q, g, pd.Series({"a": 0.6}), 0.7, ["a", "b"], rating_model="a")
        >>> t["measured"].round(3).tolist(), t["met"].tolist()
        ([0.7, 0.1, 0.6, 0.02], [False, True, True, False])
    """
    means = quality.groupby("reranker", sort=False)[["auc", "alone"]].mean()
    present = [r for r in feedback if r in means.index]
    lowest_auc = float(means.loc[present, "auc"].min()) if present else float("nan")
    margin = constant_kl - float(rating_kl[rating_model]) if rating_model in rating_kl.index else float("nan")
    best_alone = float(means["alone"].max()) if len(means) else float("nan")
    if len(gains):
        deltas = gains["delta"].astype(float)
        top = deltas.idxmax()
        best_gain, best_p = float(deltas[top]), float(gains["p_holm"].astype(float)[top])
    else:
        best_gain, best_p = float("nan"), float("nan")
    rows = [
        (
            "lowest AUC of the feedback rerankers continued from the relevance model",
            "≥ 0.80",
            lowest_auc,
            lowest_auc >= 0.80,
        ),
        (f"{rating_model}'s KL, below the constant's by", "≥ 0.05 nats", margin, margin >= 0.05),
        ("best reranker alone", "≥ 60%", best_alone, best_alone >= 0.60),
        (
            "best reranked gain over the RQA alone",
            "≥ +1.00 points, Holm p < 0.05",
            best_gain,
            best_gain >= 0.01 and best_p < 0.05,
        ),
    ]
    table = pd.DataFrame(
        [
            {"target": t, "goal": goal, "measured": value, "met": None if np.isnan(value) else bool(met)}
            for t, goal, value, met in rows
        ],
        index=pd.RangeIndex(1, len(rows) + 1, name="target no."),
    )
    table["p_holm"] = [np.nan, np.nan, np.nan, best_p]
    return table


def pick_disagreement(
    candidates: pd.DataFrame,
    rqa: str = "hybrid",
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    reranker_score: RerankerScore = "p_excellent",
    weight: float | None = None,
) -> pd.DataFrame:
    """Per reranker and seed: the questions where it alone and the RQA pick differently, and who is right.

    The paper's sum can only gain where the reranker alone (argmax P(Excellent)) disagrees with the
    RQA's first place; there it gains when it follows a right reranker and loses when it follows
    a wrong one. Over one RQA system's overall questions.

    Returns:
        ``reranker, seed, questions, disagree, reranker_right, rqa_right, sum_follows_reranker,
        sum_gain`` (``sum_gain``: questions the sum gets right that the RQA gets wrong, minus the
        reverse; divided by ``questions`` it is the sum's change in accuracy).

    Example:
        >>> rows = pd.DataFrame({"protocol": "p", "rqa": "h", "seed": 0, "domain": "A", "split": "test",
        ...     "question_id": [0, 0, 1, 1], "passage_id": [1, 2, 1, 2], "rqa_rank": [1, 2, 1, 2],
        ...     "p_rqa": [0.5, 0.4, 0.9, 0.1], "is_gold": [False, True, True, False],
        ...     "reranker": "x", "p_bad": 0.0, "p_could_be_improved": 0.0,
        ...     "p_acceptable": 0.0, "p_excellent": [0.2, 0.9, 0.1, 0.6]})
        >>> none = rows.assign(reranker="none", p_excellent=np.nan)
        >>> r = pick_disagreement(pd.concat([none, rows]), "h", ["A"]).iloc[0]
        >>> # q0: the reranker alone is right, the sum (0.7 vs 1.3) follows it; q1: it is wrong, the
        >>> # sum (1.0 vs 0.7) keeps the RQA's right pick
        >>> cols = ["disagree", "reranker_right", "rqa_right", "sum_follows_reranker", "sum_gain"]
        >>> [int(r[c]) for c in cols]
        [2, 1, 1, 1, 1]
    """
    mine = candidates[(candidates["rqa"] == rqa) & candidates["domain"].isin(list(overall_domains))]
    keys = ["domain", "split", "question_id"]
    none = mine[mine["reranker"] == "none"]
    base = select_top1(none, none["p_rqa"].astype(float)).set_index(keys)
    rated = mine[mine["reranker"] != "none"]
    alone = select_top1(rated, p_excellent_score(rated))
    summed = score_outcomes(rated, reranker_score, weight)  # the paper's sum, or the page's rule
    rows = []
    for (reranker, seed), block in alone.groupby(["reranker", "seed"], sort=False):
        block = block.set_index(keys)
        picked_sum = summed[(summed["reranker"] == reranker) & (summed["seed"] == seed)].set_index(keys)
        rqa_pick = base.loc[block.index]
        differ = block["passage_id"].to_numpy() != rqa_pick["passage_id"].to_numpy()
        follows = picked_sum.loc[block.index, "passage_id"].to_numpy() == block["passage_id"].to_numpy()
        sum_right = picked_sum.loc[block.index, "correct"].to_numpy(bool)
        rqa_right = rqa_pick["correct"].to_numpy(bool)
        rows.append(
            {
                "reranker": reranker,
                "seed": seed,
                "questions": len(block),
                "disagree": int(differ.sum()),
                "reranker_right": int((differ & block["correct"].to_numpy(bool)).sum()),
                "rqa_right": int((differ & rqa_right).sum()),
                "sum_follows_reranker": int((differ & follows).sum()),
                "sum_gain": int((sum_right & ~rqa_right).sum() - (~sum_right & rqa_right).sum()),
            }
        )
    return pd.DataFrame(rows)


#: How far a frozen configuration may move each measure and still be adopted (the rerank issue's
#: rule): ROC AUC and feedback_test KL by less than 0.005, S-accuracy@1 by less than 0.2 points.
FREEZING_TOLERANCE: dict[str, float] = {"auc": 0.005, "kl": 0.005, "reranked": 0.002}


def freezing_effect(full: pd.DataFrame, frozen: pd.DataFrame) -> pd.DataFrame:
    """Each frozen configuration of a reranker beside the same reranker with every layer trained.

    Args:
        full: One row per reranker (index), every layer trained: ``auc``, ``kl`` (mean
            KL(annotators || P_phi) on feedback_test), ``reranked`` (S-accuracy@1 as a share),
            ``train_s``, ``score_s``.
        frozen: The same columns and ``frozen_layers``, one row per (frozen_layers, reranker) with
            the reranker as index.

    Returns:
        Per ``frozen_layers, reranker``: the frozen ``auc``, ``kl``, ``reranked`` and their changes
        ``d_auc``, ``d_kl``, ``d_reranked`` (frozen minus full), ``speedup`` (full train + score
        seconds over frozen's), and ``within`` (every change inside :data:`FREEZING_TOLERANCE`).
        Rerankers without a full row are left out.

    Example:
        >>> full = pd.DataFrame({"auc": [0.80], "kl": [0.70], "reranked": [0.650], "train_s": [300.0],
        ...                      "score_s": [500.0]}, index=["kl_model"])
        >>> frozen = pd.DataFrame({"frozen_layers": [4, 5], "auc": [0.803, 0.79], "kl": [0.702, 0.70],
        ...     "reranked": [0.651, 0.650], "train_s": [100.0, 50.0], "score_s": [100.0, 50.0]},
        ...     index=["kl_model", "kl_model"])
        >>> out = freezing_effect(full, frozen)
        >>> out[["d_auc", "d_kl", "speedup"]].round(3).values.tolist(), out["within"].tolist()
        ([[0.003, 0.002, 4.0], [-0.01, 0.0, 8.0]], [True, False])
    """
    rows = []
    for name, row in frozen.iterrows():
        if name not in full.index:
            continue
        base = full.loc[str(name)]
        changes = {f"d_{m}": float(row[m]) - float(base[m]) for m in FREEZING_TOLERANCE}
        rows.append(
            {
                "frozen_layers": int(row["frozen_layers"]),
                "reranker": name,
                **{m: float(row[m]) for m in FREEZING_TOLERANCE},
                **changes,
                "speedup": (float(base["train_s"]) + float(base["score_s"]))
                / (float(row["train_s"]) + float(row["score_s"])),
                # NaN (a measure missing) is never within
                "within": all(abs(changes[f"d_{m}"]) < tol for m, tol in FREEZING_TOLERANCE.items()),
            }
        )
    return pd.DataFrame(rows).set_index(["frozen_layers", "reranker"]) if rows else pd.DataFrame()


def run_measures(
    candidates: pd.DataFrame,
    predictions: pd.DataFrame,
    items: pd.DataFrame,
    stage: dict[str, Any],
    rqa: str = "hybrid",
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    seeds: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Per reranker of one rerank-stage results folder, seed-averaged: what a configuration is judged on.

    Args:
        candidates: The folder's ``candidates.parquet``.
        predictions: Its ``rating_predictions.parquet``.
        items: :func:`~fqa_analysis.core.ratings.item_ratings` of feedback_test.
        stage: Its manifest's ``rerank`` entry (the steps' ``compute_s``).
        rqa: The RQA system the AUC and S-accuracy are measured on.
        overall_domains: Domains of the overall.
        seeds: Only these seeds' runs (None: every seed).

    Returns:
        Index ``reranker``: ``auc`` and ``reranked`` (:func:`reranker_quality`, as shares), ``kl``
        (mean KL(annotators || P_phi) on feedback_test, :func:`per_item_rating_scores`),
        ``train_s`` and ``score_s`` (the mean over its seeds of its steps' compute seconds).
    """
    quality = reranker_quality(candidates, rqa, overall_domains)
    if seeds is not None:
        quality = quality[quality["seed"].isin(list(seeds))]
        predictions = predictions[predictions["seed"].isin(list(seeds))]
    out = quality.groupby("reranker", sort=False)[["auc", "reranked"]].mean()
    if out.empty:  # no reranker of these seeds rescored the RQA system
        return pd.DataFrame(columns=["auc", "reranked", "kl", "train_s", "score_s"])
    per_item = per_item_rating_scores(join_annotators(predictions, items))
    out["kl"] = per_item.groupby("reranker")["kl"].mean()
    timings = stage["timings"]

    def seconds(name: str, seed: int, step: str) -> float:
        record = timings[f"{name}/seed{seed}/{step}"]
        return float(record.get("compute_s", record["wall_s"]))  # compute_s: carried over from a cached step

    seeds_run = quality.groupby("reranker", sort=False)["seed"].apply(list)
    for step in ("train", "score"):
        out[f"{step}_s"] = [
            float(np.mean([seconds(n, int(s), step) for s in seeds_run[n]])) for n in out.index
        ]
    return out
