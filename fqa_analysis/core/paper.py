"""The paper's reported numbers (Li et al., Findings of ACL 2022), for tables that set ours beside them.

Overall test accuracy in %, BERT RQA (the paper's Table of reranking results).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fqa_analysis.core.compare import significance_counts
from fqa_analysis.core.report import change_text, holm_p_text

__all__ = [
    "CLAIM_VERDICTS",
    "PAPER_GAINS",
    "PAPER_OVERALL_ACCURACY",
    "TABLE2_ROWS",
    "ClaimCheck",
    "loss_check",
    "score_rule_check",
    "table2_check",
]

PAPER_OVERALL_ACCURACY: dict[str, float] = {
    "rqa_alone": 64.75,
    "feedback_reranker": 66.59,
    "vanilla_reranker": 65.98,
    "combined_reranker": 67.97,
}

#: The paper's gain of each reranker over its own RQA alone, in points.
PAPER_GAINS: dict[str, float] = {
    name: round(value - PAPER_OVERALL_ACCURACY["rqa_alone"], 2)
    for name, value in PAPER_OVERALL_ACCURACY.items()
    if name != "rqa_alone"
}


#: The three verdicts a claim of the paper gets here.
CLAIM_VERDICTS: tuple[str, ...] = ("reproduced", "not reproduced", "not testable here")


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of the paper beside what this project finds, with a verdict.

    Attributes:
        claim: What the paper says, with its numbers.
        found: What we find, with the numbers and their CI.
        verdict: One of :data:`CLAIM_VERDICTS`.
        why: The verdict's reason in a clause, shown after it (empty: none given).
    """

    claim: str
    found: str
    verdict: str
    why: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in CLAIM_VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is none of {CLAIM_VERDICTS}")

    def markdown(self) -> str:
        """The three-line box a chapter shows near its top (a MyST admonition).

        Example:
            >>> print(ClaimCheck("a", "b", "reproduced").markdown())
            ```{admonition} The paper's claim, tested here
            - **The paper:** a
            - **Here:** b
            - **Verdict: reproduced**
            ```
        """
        return (
            "```{admonition} The paper's claim, tested here\n"
            f"- **The paper:** {self.claim}\n- **Here:** {self.found}\n- **Verdict: {self.verdict}**"
            + (f": {self.why}" if self.why else "")
            + "\n```"
        )


#: Table 2's rows in the paper's words, in the order it reports them, with this project's variants.
TABLE2_ROWS: dict[str, tuple[str, str]] = {
    "none": ("RQA alone", "rqa_alone"),
    "vanilla": ("+ VanillaReranker", "vanilla_reranker"),
    "feedback_kl": ("+ FeedbackReranker", "feedback_reranker"),
    "combined": ("+ CombinedReranker", "combined_reranker"),
}


def table2_check(accuracy: Mapping[str, float], contribution: Mapping[str, Any], rqa: str) -> ClaimCheck:
    """The paper's Table 2 (its four rows, their order, and the feedback's contribution) against ours.

    Args:
        accuracy: Our accuracy (share) of the RQA alone (``none``), ``vanilla``, ``feedback_kl``
            and ``combined`` on ``rqa``.
        contribution: The comparison row of ``combined`` against ``vanilla`` on ``rqa`` (``delta``,
            its CI, ``p_holm``): the feedback's contribution.
        rqa: The RQA system.

    Returns:
        Reproduced where ``combined`` is significantly better than ``vanilla`` (Holm p < 0.05), the
        paper's central claim; not reproduced otherwise. The orders are named either way.

    Example:
        >>> acc = {"none": 0.646, "vanilla": 0.654, "feedback_kl": 0.650, "combined": 0.651}
        >>> row = {"delta": -0.0027, "delta_ci_low": -0.0099, "delta_ci_high": 0.0045, "p_holm": 1.0,
        ...        "mde": 0.0131}
        >>> check = table2_check(acc, row, "hybrid")
        >>> check.verdict, check.found.split(";")[1].split(": ")[1]
        ('not reproduced', 'RQA alone < + FeedbackReranker < + CombinedReranker < + VanillaReranker')
        >>> print(check.why)  # doctest: +NORMALIZE_WHITESPACE
        the feedback's contribution is not told apart from zero, and its 95% CI ends at +0.45,
        below the paper's +1.99
    """
    paper = " < ".join(
        TABLE2_ROWS[k][0]
        for k in sorted(TABLE2_ROWS, key=lambda k: PAPER_OVERALL_ACCURACY[TABLE2_ROWS[k][1]])
    )
    ours = " < ".join(TABLE2_ROWS[k][0] for k in sorted(TABLE2_ROWS, key=lambda k: accuracy[k]))
    figures = ", ".join(
        f"{TABLE2_ROWS[k][0]} {PAPER_OVERALL_ACCURACY[v]:.2f}" for k, (_, v) in TABLE2_ROWS.items()
    )
    ours_figures = ", ".join(f"{TABLE2_ROWS[k][0]} {100 * accuracy[k]:.2f}" for k in TABLE2_ROWS)
    better = contribution["p_holm"] < 0.05 and contribution["delta"] > 0
    gain = PAPER_OVERALL_ACCURACY["combined_reranker"] - PAPER_OVERALL_ACCURACY["vanilla_reranker"]
    high = 100 * contribution["delta_ci_high"]
    why = (
        "the feedback's contribution is significant"
        if better
        else "the feedback's contribution is not told apart from zero"
        + (f", and its 95% CI ends at {high:+.2f}, below the paper's {gain:+.2f}" if high < gain else "")
    )
    return ClaimCheck(
        claim=f"with its BERT RQA, {figures}; order: {paper}; the feedback adds {gain:+.2f} points to "
        "the QA-only reranker (Combined minus Vanilla).",
        found=f"on {rqa}, {ours_figures} (ours: VanillaReranker = vanilla, FeedbackReranker = feedback_kl, "
        f"CombinedReranker = combined, seeds averaged); order of the point estimates: {ours}; the feedback "
        f"adds {change_text(contribution)}.",
        verdict="reproduced" if better else "not reproduced",
        why=why,
    )


def score_rule_check(table: Any, rqa: str) -> ClaimCheck:
    """The paper's scoring rule claim: P(Excellent) beats the normalised expected rating E[y]/3.

    Args:
        table: The score ablation's comparison rows (``rqa``, ``reranker``, ``delta`` = E[y]/3 minus
            P(Excellent) as a share, its CI, ``p_holm``), one Holm family over every row.
        rqa: The RQA system whose rows the box names.

    Returns:
        Reproduced where P(Excellent) is significantly better (E[y]/3 significantly worse) in most
        (RQA, reranker) pairs; not reproduced otherwise.

    Example:
        >>> import pandas as pd
        >>> t = pd.DataFrame({"rqa": ["hybrid", "bm25"], "reranker": ["x", "x"], "delta": [-0.001, 0.002],
        ...     "delta_ci_low": [-0.004, -0.001], "delta_ci_high": [0.002, 0.005], "p_holm": [0.9, 0.6],
        ...     "mde": [0.006, 0.006]})
        >>> score_rule_check(t, "hybrid").verdict
        'not reproduced'
    """
    # E[y]/3 minus P(Excellent): a "worse" row is one where P(Excellent) is significantly better
    counts = significance_counts(table)
    worse, better = counts["worse"], counts["better"]
    rows = table[table["rqa"] == rqa]
    span = f"{100 * rows['delta'].min():+.2f} to {100 * rows['delta'].max():+.2f}"
    nulls = table[table["p_holm"] >= 0.05]
    # a pair where both rules pick the same passage everywhere has no spread and no MDE ("—")
    mdes = nulls["mde"][nulls["mde"] > 0] if "mde" in nulls else pd.Series(dtype=float)
    null_words = (
        f"; no measurable difference either way in {'all' if len(nulls) == len(table) else 'the other'} "
        f"{len(nulls)}"
        + (f" (MDE {100 * mdes.min():.2f} to {100 * mdes.max():.2f} points)" if len(mdes) else "")
        if len(nulls)
        else ""
    )
    return ClaimCheck(
        claim="ranking the candidates by P(Excellent) beats ranking them by the normalised expected rating "
        "(E[y]/3, Bad = 0 .. Excellent = 3).",
        found=f"E[y]/3 minus P(Excellent) is {span} points on {rqa} over the rerankers; over all "
        f"{len(table)} (RQA, reranker) pairs P(Excellent) is significantly better in {worse} and worse in "
        f"{better} (Holm over the {len(table)}){null_words}.",
        verdict="reproduced" if worse > len(table) / 2 else "not reproduced",
    )


def loss_check(kl_row: Mapping[str, Any], kl_row_seeds: Mapping[str, Any]) -> ClaimCheck:
    """The paper's loss claim: plain cross-entropy on the majority label calibrates worse than KL.

    Args:
        kl_row: ``feedback_ce_majority`` against ``feedback_kl`` in KL to the annotators on
            feedback_test (paired over items, seeds averaged): ``delta`` (nats), its CI, ``p_holm``.
        kl_row_seeds: The same comparison with each loss's seeds resampled too.

    Returns:
        Reproduced where the cross-entropy model's KL is significantly higher under both tests.

    Example:
        >>> row = {"delta": 0.043, "delta_ci_low": 0.032, "delta_ci_high": 0.053, "p_holm": 0.0002}
        >>> loss_check(row, {**row, "p_holm": 0.04}).verdict
        'reproduced'
    """
    worse = all(r["p_holm"] < 0.05 and r["delta"] > 0 for r in (kl_row, kl_row_seeds))
    return ClaimCheck(
        claim="training on the majority label with plain cross-entropy, ignoring how the annotators' "
        "ratings spread, fits their rating distribution worse than KL to that distribution (as "
        "tested here: the KL to the annotators on feedback_test).",
        found="how far the rating distribution is from the annotators' (KL on feedback_test), the "
        "majority-label model's minus the KL-trained one's: "
        f"{change_text(kl_row, 1.0, 3, 'nats')}; with each loss's seeds resampled too, Holm p "
        f"{holm_p_text(kl_row_seeds)}.",
        verdict="reproduced" if worse else "not reproduced",
    )
