"""The score ablation's chapter: P(Excellent) or the expected rating, worded.

The chapter computes the comparison (:func:`~fqa_analysis.core.reranking.score_ablation`); this
module puts its verdict into the sentence the chapter opens with.
"""

from __future__ import annotations

import pandas as pd

from fqa_analysis.core.compare import significance_counts

__all__ = ["answer_sentence"]


def answer_sentence(ablation: pd.DataFrame) -> str:
    """The chapter's answer in one sentence (at most 30 words), from the score ablation's table.

    Args:
        ablation: One row per (RQA, reranker): E[y]/3 minus P(Excellent) (``delta``, ``p_holm``,
            one Holm family over every row).

    Example:
        >>> t = pd.DataFrame({"delta": [0.002, -0.003, 0.004], "p_holm": [1.0, 0.6, 0.9]})
        >>> print(answer_sentence(t))  # doctest: +NORMALIZE_WHITESPACE
        Scoring by the expected rating instead of P(Excellent) changes reranked accuracy significantly
        in 0 of 3 (RQA, reranker) pairs (differences -0.30 to +0.40 points).
        >>> t["p_holm"] = [0.01, 0.02, 0.9]
        >>> print(answer_sentence(t))  # doctest: +NORMALIZE_WHITESPACE
        Scoring by the expected rating instead of P(Excellent) changes reranked accuracy significantly
        in 2 of 3 (RQA, reranker) pairs (better in 1, worse in 1; differences -0.30 to +0.40 points).
    """
    sig = significance_counts(ablation)
    changed = sig["better"] + sig["worse"]
    sides = f"better in {sig['better']}, worse in {sig['worse']}; " if changed else ""
    return (
        "Scoring by the expected rating instead of P(Excellent) changes reranked accuracy significantly in "
        f"{changed} of {sig['rows']} (RQA, reranker) pairs ({sides}differences "
        f"{100 * ablation['delta'].min():+.2f} to {100 * ablation['delta'].max():+.2f} points)."
    )
