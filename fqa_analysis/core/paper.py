"""The paper's reported numbers (Li et al., Findings of ACL 2022), for tables that set ours beside them.

Overall test accuracy in %, BERT RQA (the paper's Table of reranking results).
"""

from __future__ import annotations

__all__ = ["PAPER_GAINS", "PAPER_OVERALL_ACCURACY"]

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
