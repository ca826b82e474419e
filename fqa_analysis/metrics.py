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
from typing import Literal

import pandas as pd

from fqa_analysis.candidates import QUESTION_KEYS, RUN_KEYS

__all__ = ["accuracy_by_test_set", "accuracy_table", "overall_accuracy", "recall_at_k"]

Average = Literal["micro", "macro"]
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
