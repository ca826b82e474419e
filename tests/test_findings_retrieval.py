"""The retrieval chapter's sentences, checked on a hand-made record (values computed by hand)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from handmade import comparison

from fqa_analysis.core.compare import Comparison
from fqa_analysis.findings.retrieval import RetrievalPage, answer_sentence, findings_lines


def _comparison(rows: dict[str, dict]) -> Comparison:
    return comparison(pd.DataFrame.from_dict(rows, orient="index"), "rqa", "every rqa vs bm25", seeds="none")


def _page(hybrid_micro: tuple[float, float, float] = (0.646, 0.624, 0.666)) -> RetrievalPage:
    acc = pd.DataFrame(
        [
            ("bm25", "overall (micro)", 0.433, 0.412, 0.455),
            ("bm25", "overall (macro)", 0.450, 0.430, 0.470),
            ("hybrid", "overall (micro)", *hybrid_micro),
            ("hybrid", "overall (macro)", 0.681, 0.660, 0.700),
        ],
        columns=["system", "test_set", "accuracy", "ci_low", "ci_high"],
    )
    # recall@5: bm25 70.0%, hybrid 85.5%
    curve = pd.DataFrame({"rqa": ["bm25", "hybrid"], "k": 5, "recall": [0.700, 0.855]})
    row = {"delta": 0.213, "delta_ci_low": 0.19, "delta_ci_high": 0.23, "p_value": 0.0001, "p_holm": 0.0001}
    return RetrievalPage(
        results=Path("results"),
        stage={
            "protocol": "available",
            "config": {"k": 5},
            "timings": {"a": {"wall_s": 1.0, "compute_s": 600.0}},
        },
        rqa_rows=pd.DataFrame(),
        ranks=pd.DataFrame(),
        temps=pd.DataFrame(),
        systems=["bm25", "hybrid"],
        acc=acc,
        comparison=_comparison({"hybrid": row}),
        fusion=None,
        curve=curve,
    )


def test_the_answer_sets_the_best_system_beside_the_papers_rqa_and_the_reranking_ceiling() -> None:
    # the paper's 64.75 lies inside hybrid's [62.4, 66.6]; 85.5 - 64.6 = 20.9 points to win
    assert answer_sentence(_page()) == (
        "Our best retrieval system (hybrid) answers 64.6% of the test questions, level with the paper's RQA "
        "(64.75%); a perfect top-5 reranker could add at most 20.9 points."
    )
    assert len(answer_sentence(_page()).split()) <= 30


def test_a_system_whose_interval_misses_the_papers_value_is_below_it() -> None:
    assert "answers 60.0% of the test questions, below the paper's RQA" in answer_sentence(
        _page((0.600, 0.580, 0.620))
    )


def test_the_findings_word_each_average_and_the_comparison() -> None:
    lines = findings_lines(_page())
    # micro: inside the CI; macro 68.1 [66.0, 70.0]: 64.75 is below the interval, so "above it"
    assert (
        "answers 64.6% of the test questions right, level with the paper's RQA (64.75%; inside our 95% CI)"
        in lines[0]
    )
    assert "on the macro average 68.1%, above it, outside our 95% CI" in lines[0]
    assert lines[1] == (
        "Overall accuracy@1 of the RQA alone (four feedback domains, micro, 95% CI): bm25 43.3 [41.2, 45.5]; "
        "hybrid 64.6 [62.4, 66.6]. The paper's BERT poly-encoder: 64.75."
    )
    assert lines[2].startswith(
        "The best system, hybrid, is 0.1 points below the paper's RQA (micro); against bm25: hybrid "
        "+21.3 points (Holm p"
    )
    assert lines[3] == (
        "Recall@5, the ceiling of a top-5 reranker: bm25 70.0%, hybrid 85.5%; the gap to accuracy@1 that "
        "feedback could win is 20.9 points for hybrid."
    )
    assert lines[4] == "Protocol `available`, k = 5; the stage cost 10 minutes of compute on this 2-core CPU."
