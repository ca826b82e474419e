"""The reranking chapter's sentences, checked on hand-made comparison tables (values computed by hand)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from handmade import comparison

from fqa_analysis.core.compare import Comparison
from fqa_analysis.findings.reranking import (
    RerankingPage,
    answer_sentence,
    findings_lines,
    learned_line,
    ordered,
    seeds_text,
)


def _row(delta: float, p_holm: float, low: float, high: float, mde: float = 0.01, base: float = 0.6) -> dict:
    return {
        "baseline": "none",
        "n": 100,
        "mean": base + delta,
        "baseline_mean": base,
        "delta": delta,
        "delta_ci_low": low,
        "delta_ci_high": high,
        "p_value": p_holm / 2,
        "p_holm": p_holm,
        "p_holm_bound": False,
        "mde": mde,
    }


def _comparison(rows: dict[tuple[str, str], dict]) -> Comparison:
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["rqa", "reranker"])
    return comparison(table, "reranker", "hand-made")


# hybrid: combined +0.50 points (not significant), vanilla +1.00 (not significant), feedback_kl -0.20;
# bm25: vanilla +9.00 (significant), combined +8.00 (significant)
_MICRO = _comparison(
    {
        ("bm25", "vanilla"): _row(0.09, 0.001, 0.08, 0.10, base=0.3),
        ("bm25", "combined"): _row(0.08, 0.001, 0.07, 0.09, base=0.3),
        ("hybrid", "vanilla"): _row(0.01, 0.4, -0.002, 0.02),
        ("hybrid", "feedback_kl"): _row(-0.002, 1.0, -0.01, 0.006),
        ("hybrid", "combined"): _row(0.005, 1.0, -0.003, 0.013, mde=0.016),
    }
)
# combined vs vanilla: worse on bm25 (significant), not told apart on hybrid; with seeds resampled
# neither is told apart
_OVER = _comparison(
    {
        ("bm25", "combined"): _row(-0.01, 0.01, -0.015, -0.005),
        ("hybrid", "combined"): _row(-0.005, 1.0, -0.012, 0.002, mde=0.013),
        ("bm25", "feedback_kl"): _row(0.002, 1.0, -0.004, 0.008),
        ("hybrid", "feedback_kl"): _row(-0.004, 1.0, -0.011, 0.003),
    }
)
_OVER_SEEDS = _comparison(
    {
        ("bm25", "combined"): _row(-0.01, 0.2, -0.02, 0.001),
        ("hybrid", "combined"): _row(-0.005, 1.0, -0.013, 0.003),
        ("bm25", "feedback_kl"): _row(0.002, 1.0, -0.005, 0.009),
        ("hybrid", "feedback_kl"): _row(-0.004, 1.0, -0.012, 0.004),
    }
)


def _page(chosen: bool = False) -> RerankingPage:
    quality = pd.DataFrame(
        {
            "reranker": ["vanilla", "feedback_kl", "combined", "feedback_kl", "combined"],
            "seed": [0, 0, 0, 1, 1],
            "auc": [0.82, 0.80, 0.81, 0.82, 0.81],
            "alone": [0.60, 0.58, 0.59, 0.60, 0.59],
        }
    )
    empty = pd.DataFrame()
    return RerankingPage(
        results=Path("results"),
        score="p_excellent",
        weight=None,
        depth=5,
        settings_note=None,
        candidates=empty,
        stage={},
        systems=["bm25", "hybrid"],
        rescored=["bm25", "hybrid"],
        rerankers=["none", "vanilla", "feedback_kl", "combined"],
        rqa="hybrid",
        chosen=chosen,
        outcomes=empty,
        table=empty,
        micro=_MICRO,
        macro=_MICRO,
        quality=quality,
        items=empty,
        predictions=empty,
        rating_kl=pd.Series(dtype=float),
        prior=pd.Series(dtype=float).to_numpy(),
        prior_kl=0.0,
        over_qa=_OVER,
        over_qa_seeds=_OVER_SEEDS,
    )


def test_the_answer_is_the_feedbacks_own_contribution_beside_the_papers() -> None:
    # combined vs vanilla on hybrid: -0.50 [-1.20, +0.20], Holm p 1.00: not told apart
    row = _OVER.table.loc[("hybrid", "combined")]
    assert answer_sentence(row, "hybrid") == (
        "User feedback did not make the strongest QA system (hybrid) measurably more accurate: beyond QA "
        "data it changes accuracy@1 by -0.50 points (95% CI -1.20 to +0.20; paper +1.99)."
    )
    assert len(answer_sentence(row, "hybrid").split()) <= 30


def test_a_significant_contribution_says_made_more_or_less_accurate_and_names_a_chosen_system() -> None:
    # combined vs vanilla on bm25: -1.00 points, Holm p 0.01: significantly worse
    worse = _OVER.table.loc[("bm25", "combined")]
    assert answer_sentence(worse, "bm25", strongest=False).startswith(
        "User feedback made the QA system bm25 less accurate: beyond QA data it changes accuracy@1 by "
        "-1.00 points"
    )
    better = {**worse, "delta": 0.02, "delta_ci_low": 0.01, "delta_ci_high": 0.03}
    assert answer_sentence(better, "bm25", "feedback_kl").endswith(
        "by +2.00 points (95% CI +1.00 to +3.00; paper +0.61)."
    )
    assert "made the strongest QA system (bm25) more accurate" in answer_sentence(
        better, "bm25", "feedback_kl"
    )


def test_the_findings_state_each_comparison_from_its_row() -> None:
    lines = findings_lines(_page())
    assert lines[0].startswith(
        "**Against the RQA alone.** On the strongest RQA system here (hybrid, 60.00% alone), the best"
    )
    assert "`combined`, changes overall accuracy by +0.50 points, unadjusted CI [-0.30,\xa0+1.30]" in lines[0]
    assert (
        "not a significant change; the relevance model it continues from (`vanilla`, QA data only) +1.00"
        in lines[0]
    )
    # the weaker system with the largest change: bm25 + vanilla, +9.00
    assert lines[1].startswith(
        "On the weaker RQA systems the same rerankers help more: the largest change is bm25 + `vanilla`, "
        "+9.00 points"
    )
    # combined vs vanilla: worse on 1 of 2 systems over questions, on none with seeds resampled;
    # feedback_kl told apart nowhere; the paper's +1.99 = 67.97 - 65.98 and +0.61 = 66.59 - 65.98
    qa = lines[2].replace("\xa0", " ")
    assert qa.startswith(
        "**Does feedback add to QA data?** Against `vanilla` (the relevance model, QA data only) on hybrid: "
        "`combined` -0.50 points, unadjusted CI [-1.20, +0.20], Holm p 1.00, MDE 1.30; "
        "`feedback_kl` -0.40 points"
    )
    assert (
        "Over the RQA systems (Holm over 4), significantly `combined` better on 0 and worse on 1 of 2 "
        "(0 and 0 with its seeds resampled too); `feedback_kl` better on 0 and worse on 0 of 2 (0 and 0 "
        "with its seeds resampled too). The paper: +1.99 (CombinedReranker minus VanillaReranker), "
        "+0.61 (FeedbackReranker minus VanillaReranker)." in qa
    )
    assert len(lines) == 3


def test_what_the_rerankers_learned_is_read_from_their_seed_means() -> None:
    # feedback_kl and combined continue from the relevance model: AUC seed means 0.810 and 0.810;
    # alone 59.0% each; vanilla 0.820; no *_scratch reranker present
    assert learned_line(_page()) == (
        "**What the feedback rerankers learned.** Continued from the relevance model, they tell the gold "
        "passage from hybrid's other four candidates with AUC 0.810-0.810 and pick it alone for 59.0-59.0% "
        "of the questions; the relevance model itself 0.820."
    )


def test_a_chosen_system_is_named_as_chosen() -> None:
    assert findings_lines(_page(chosen=True))[0].startswith(
        "**Against the RQA alone.** On the RQA system chosen for this page"
    )


def test_rows_are_read_weakest_system_first_rerankers_as_declared() -> None:
    shuffled = _MICRO.table.iloc[[4, 0, 2, 3, 1]]
    assert list(ordered(shuffled, _page()).index) == [
        ("bm25", "vanilla"),
        ("bm25", "combined"),
        ("hybrid", "vanilla"),
        ("hybrid", "feedback_kl"),
        ("hybrid", "combined"),
    ]


@pytest.mark.parametrize(
    ("seeds", "text"),
    [
        ({"vanilla": [0]}, "`vanilla`: seed 0"),
        ({"a": [0, 1], "b": [2], "c": [0, 1]}, "`a`, `c`: seeds 0, 1; `b`: seed 2"),
    ],
)
def test_seeds_are_grouped_where_they_agree(seeds: dict[str, list[int]], text: str) -> None:
    assert seeds_text(seeds) == text
