"""Accuracy per test set, overall micro and macro, and recall@k (pure functions).

Conventions:
    * A *test set* is one (domain, split) pair: the four feedback domains have one test file
      each, Quebec has two (old and new FAQ collection).
    * ``micro`` = share of all questions answered correctly (big domains weigh more);
      ``macro`` = unweighted mean of the per-test-set accuracies.

Example:
    >>> import pandas as pd
    >>> out = pd.DataFrame({"protocol": "p", "rqa": "r", "reranker": "none", "seed": 0,
    ...     "domain": ["A", "A", "A", "B"], "split": "test", "question_id": [0, 1, 2, 0],
    ...     "correct": [True, True, False, False]})
    >>> overall_accuracy(out, "micro")["accuracy"].item(), overall_accuracy(out, "macro")["accuracy"].item()
    (0.5, 0.3333333333333333)

"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import QUESTION_KEYS, RUN_KEYS
from fqa_analysis.core.compare import estimate, wide_outcomes
from fqa_analysis.core.stats import Average
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "accuracy_by_test_set",
    "accuracy_table",
    "accuracy_with_ci",
    "overall_accuracy",
    "ranking_metrics",
    "recall_at_k",
    "recall_curve",
    "test_set_label",
]

TEST_SET = ["domain", "split"]


def accuracy_by_test_set(outcomes: pd.DataFrame, column: str = "correct") -> pd.DataFrame:
    """Accuracy of every run on every test set: run keys, domain, split, ``n``, ``accuracy``."""
    grouped = outcomes.groupby(RUN_KEYS + TEST_SET, sort=False)[column]
    out = grouped.agg(n="size", accuracy="mean").reset_index()
    out["accuracy"] = out["accuracy"].astype(float)
    return out


def overall_accuracy(
    outcomes: pd.DataFrame, average: Average = "micro", column: str = "correct"
) -> pd.DataFrame:
    """Accuracy of every run over all test sets in ``outcomes``, micro or macro.

    Filter ``outcomes`` to the test sets that make up "overall" first (the paper's overall is
    the four feedback domains).
    """
    if average == "micro":
        out = outcomes.groupby(RUN_KEYS, sort=False)[column].agg(n="size", accuracy="mean").reset_index()
    elif average == "macro":
        per_set = accuracy_by_test_set(outcomes, column)
        out = (
            per_set.groupby(RUN_KEYS, sort=False)
            .agg(n=("n", "sum"), accuracy=("accuracy", "mean"))
            .reset_index()
        )
    else:
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    out["accuracy"] = out["accuracy"].astype(float)
    out["average"] = average
    return out


def accuracy_table(
    outcomes: pd.DataFrame, column: str = "correct", label: Sequence[str] = ("domain",)
) -> pd.DataFrame:
    """Wide table for display: one row per run, a column per test set, then micro and macro."""
    per_set = accuracy_by_test_set(outcomes, column)
    per_set["test_set"] = per_set[list(label)].astype(str).agg("/".join, axis=1)
    order = list(dict.fromkeys(per_set["test_set"]))
    wide = per_set.pivot_table(index=RUN_KEYS, columns="test_set", values="accuracy", sort=False)
    wide = wide[order]
    for average in ("micro", "macro"):
        overall = overall_accuracy(outcomes, average, column).set_index(RUN_KEYS)["accuracy"]
        wide[f"overall ({average})"] = overall
    wide.columns.name = None
    return wide.reset_index()


def recall_at_k(candidates: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per question: is the gold passage among the RQA's top k (the ceiling of reranking)?

    Returns:
        One row per (run, question) with a boolean column ``correct`` (named so that the
        accuracy helpers aggregate it), and ``k``.

    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    keys = RUN_KEYS + QUESTION_KEYS
    hit = candidates["is_gold"].astype(bool) & (candidates["rqa_rank"] <= k)
    out = hit.groupby([candidates[c] for c in keys], sort=False).any().rename("correct")
    return out.reset_index().assign(k=k)


def recall_curve(ranks: pd.DataFrame, ks: Sequence[int], by: Sequence[str] = ("rqa",)) -> pd.DataFrame:
    """Recall@k (share of questions whose gold rank is <= k) for every k, micro over rows.

    Args:
        ranks: One row per question with a 1-based ``gold_rank`` (e.g. ``rqa_ranks.parquet``).
        ks: The cut-offs.
        by: Grouping columns (one curve per group).

    Example:
        >>> r = pd.DataFrame({"rqa": "x", "gold_rank": [1, 2, 7, 30]})
        >>> recall_curve(r, [1, 5, 10])["recall"].tolist()
        [0.25, 0.5, 0.75]
    """
    rows = []
    for key, group in ranks.groupby(list(by), sort=False):
        key_t = key if isinstance(key, tuple) else (key,)
        for k in ks:
            rows.append((*key_t, k, float((group["gold_rank"] <= k).mean()), len(group)))
    return pd.DataFrame(rows, columns=[*by, "k", "recall", "n"])


def ranking_metrics(gold_rank: pd.Series) -> dict[str, float]:
    """P@1, nDCG@10 and recall@5 of one relevant passage per question, from its 1-based rank.

    With a single relevant passage nDCG@10 is ``1 / log2(rank + 1)`` when rank <= 10, else 0
    (the ideal DCG is 1). This is the MTEB FeedbackQARetrieval setting.

    Example:
        >>> m = ranking_metrics(pd.Series([1, 3, 20]))
        >>> round(m["p@1"], 4), round(m["ndcg@10"], 4), round(m["recall@5"], 4)
        (0.3333, 0.5, 0.6667)
    """
    r = gold_rank.astype(float).to_numpy()
    gain = np.where(r <= 10, 1.0 / np.log2(r + 1.0), 0.0)
    return {
        "p@1": float(np.mean(r == 1)),
        "ndcg@10": float(np.mean(gain)),
        "recall@5": float(np.mean(r <= 5)),
        "n": float(len(r)),
    }


def test_set_label(domain: str, split: str) -> str:
    """How a test set is named in tables: the domain, plus the split when it is not ``test``.

    Example:
        >>> test_set_label("UK", "test"), test_set_label("Quebec", "test_new_faq_coll4")
        ('UK', 'Quebec (test_new_faq_coll4)')
    """
    return domain if split == "test" else f"{domain} ({split})"


test_set_label.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def accuracy_with_ci(
    outcomes: pd.DataFrame,
    system: str,
    overall_domains: Sequence[str] = FEEDBACK_DOMAINS,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    column: str = "correct",
) -> pd.DataFrame:
    """Accuracy with percentile bootstrap CIs per test set, and overall micro and macro.

    A layout of :func:`~fqa_analysis.core.compare.estimate` (questions in key order, so the CIs
    do not depend on the order of the input's rows).

    Args:
        outcomes: Per-question outcomes of several systems (same questions for all).
        system: The column naming a system.
        overall_domains: Domains that make up "overall" (the paper's four feedback domains).
        n_resamples: Bootstrap resamples.
        seed: Seed of the resampling.
        confidence: CI level.
        column: The outcome column.

    Returns:
        Long table: ``system, test_set, n, accuracy, ci_low, ci_high``; the overall rows are
        named ``overall (micro)`` and ``overall (macro)``, resampled within test sets.
    """
    wide_outcomes(outcomes, system, column)  # every system answers the same questions, once
    rows = []

    def ci(table: pd.DataFrame, by: list[str], strata: Sequence[str], average: Average) -> pd.DataFrame:
        return estimate(
            table, by, value=column, strata=strata, seeds=None, average=average,
            n_resamples=n_resamples, seed=seed, confidence=confidence,
        )  # fmt: skip

    for r in ci(outcomes, [system, "domain", "split"], (), "micro").itertuples(index=False):
        label = test_set_label(str(r.domain), str(r.split))
        rows.append((getattr(r, system), label, r.n, r.mean, r.ci_low, r.ci_high))
    overall = outcomes[outcomes["domain"].isin(list(overall_domains))]
    for average in ("micro", "macro"):
        for r in ci(overall, [system], ("domain", "split"), average).itertuples(index=False):
            rows.append((getattr(r, system), f"overall ({average})", r.n, r.mean, r.ci_low, r.ci_high))
    return pd.DataFrame(rows, columns=["system", "test_set", "n", "accuracy", "ci_low", "ci_high"])
