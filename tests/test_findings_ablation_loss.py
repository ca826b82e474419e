"""The loss ablation's sentences, checked on hand-made test tables (values computed by hand)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from handmade import comparison

from fqa_analysis.core.compare import Comparison
from fqa_analysis.findings.ablation_loss import LossPage, answer_sentence, findings_lines, missing_losses


def _test(metric: str, subset: str, reranker: str, delta: float, p_holm: float, mde: float = 0.0) -> dict:
    return {
        "metric": metric,
        "subset": subset,
        "reranker": reranker,
        "baseline": "feedback_kl",
        "n": 100,
        "mean": 0.7 + delta,
        "baseline_mean": 0.7,
        "delta": delta,
        "delta_ci_low": delta - 0.01,
        "delta_ci_high": delta + 0.01,
        "p_value": p_holm / 2,
        "p_holm": p_holm,
        "p_holm_bound": False,
        "mde": mde,
    }


def _tests(majority_kl_p: float, seeds_p: float) -> pd.DataFrame:
    """feedback_ce_majority's KL +0.043 (p as given); feedback_ce_annotator's KL -0.020 (p 0.001)."""
    rows = []
    for subset in ("all", "unanimous", "disagree"):
        rows.append(_test("kl", subset, "feedback_ce_annotator", -0.020, 0.001))
        rows.append(
            _test("kl", subset, "feedback_ce_majority", 0.043, majority_kl_p if subset == "all" else 0.5)
        )
        rows.append(_test("correct", subset, "feedback_ce_annotator", 0.004, 0.6, 0.01))
        rows.append(_test("correct", subset, "feedback_ce_majority", 0.010, 0.3, 0.02))
    seeded = pd.DataFrame(rows)
    seeded.loc[seeded["metric"] == "kl", "p_holm"] = seeds_p
    return pd.DataFrame(rows), seeded


def _qa(p_majority_minilm: float) -> Comparison:
    rows = {
        ("hybrid", "feedback_ce_annotator"): (0.002, 0.9, 0.004),
        ("hybrid", "feedback_ce_majority"): (0.001, 0.9, 0.005),
        ("minilm", "feedback_ce_annotator"): (-0.003, 0.8, 0.006),
        ("minilm", "feedback_ce_majority"): (-0.009, p_majority_minilm, 0.007),
    }
    table = pd.DataFrame(
        [
            {
                "delta": d,
                "delta_ci_low": d - 0.004,
                "delta_ci_high": d + 0.004,
                "p_value": p / 2,
                "p_holm": p,
                "mde": m,
            }
            for d, p, m in rows.values()
        ],
        index=pd.MultiIndex.from_tuples(rows, names=["rqa", "reranker"]),
    )
    # two rows per RQA system, Holm over the two losses within each: a family of 2
    return replace(comparison(table, "reranker", "each loss vs feedback_kl, per rqa"), family_size=2)


def _page(majority_kl_p: float = 0.0002, seeds_p: float = 0.04, qa_p: float = 0.01) -> LossPage:
    losses = ["feedback_kl", "feedback_ce_annotator", "feedback_ce_majority"]
    quality = pd.DataFrame(
        {
            "reranker": losses,
            "subset": "all",
            "accuracy": [0.50, 0.52, 0.55],
            "macro_f1": [0.30, 0.31, 0.28],
            "kl": [0.680, 0.660, 0.723],
            "ece_excellent": [0.05, 0.06, 0.09],
        }
    )
    # two predictions each: feedback_kl and feedback_ce_annotator predict Excellent then Bad (50% each);
    # feedback_ce_majority predicts Bad for both (its seeds 0 and 1): collapsed
    predictions = pd.DataFrame(
        {
            "reranker": [r for r in losses for _ in range(2)],
            "seed": [0, 0, 0, 0, 0, 1],
            "p_bad": [0.1, 0.9, 0.2, 0.8, 0.9, 0.8],
            "p_could_be_improved": 0.0,
            "p_acceptable": 0.1,
            "p_excellent": [0.8, 0.0, 0.7, 0.1, 0.0, 0.1],
        }
    )
    tests, seed_tests = _tests(majority_kl_p, seeds_p)
    return LossPage(
        results=Path("results"),
        stage={},
        variants=losses,
        losses=losses,
        absent=[],
        predictions=predictions,
        items=pd.DataFrame(),
        joined=pd.DataFrame(),
        quality=quality,
        tests=tests,
        seed_tests=seed_tests,
        qa=_qa(qa_p),
    )


def test_the_answer_says_how_far_the_majority_label_moves_the_ratings_and_where_qa_changes() -> None:
    # +0.043 nats, worse (Holm p 0.00020); QA: feedback_ce_majority's rows only, significant on minilm
    assert answer_sentence(_page()) == (
        "Majority-label cross-entropy rates 0.043 nats further from the annotators than KL (Holm p 0.00020); "
        "its QA accuracy differs from KL's on 1 of 2 RQA systems."
    )
    assert len(answer_sentence(_page()).split()) <= 30


def test_an_answer_not_told_apart_says_as_close() -> None:
    assert answer_sentence(_page(majority_kl_p=0.4, qa_p=0.5)) == (
        "Majority-label cross-entropy rates as close to the annotators as KL (+0.043 nats, Holm p 0.40); "
        "its QA accuracy differs from KL's on 0 of 2 RQA systems."
    )


def test_the_findings_state_the_plain_answer_the_best_loss_and_the_collapse() -> None:
    lines = findings_lines(_page())
    # 1 of 4 pairs differs (<= 4 // 4): barely matters; the three nulls. MDE 0.40 to 0.60 points; the
    # largest |delta| of KL on all items is 0.043; feedback_ce_annotator's 0.660 is the lowest KL
    assert lines[0] == (
        "**In plain words:** the loss barely matters for QA accuracy (different from `feedback_kl` in 1 of 4 "
        "(RQA, loss) pairs; MDE of the others 0.40 to 0.60 points), and it moves the ratings' KL to the "
        "annotators by at most 0.043 nats on all items (`feedback_kl`: 0.680); the lowest KL is "
        "`feedback_ce_annotator`'s."
    )
    # feedback_ce_annotator is below feedback_kl over items; with seeds resampled (p 0.04) it stays
    assert lines[1].startswith(
        "**Which loss?** The lowest KL to the annotators on feedback_test is `feedback_ce_annotator`'s "
        "(0.660 nats"
    )
    assert (
        "`feedback_ce_annotator`'s is significantly below `feedback_kl`'s on all items; with each loss's "
        "seeds resampled too, `feedback_ce_annotator` stays below it" in lines[1]
    )
    assert (
        lines[2] == "Losses present: `feedback_kl`, `feedback_ce_annotator`, `feedback_ce_majority` (seeds: "
        "feedback_kl 0; feedback_ce_annotator 0; feedback_ce_majority 0, 1)."
    )
    assert lines[-2].startswith(
        "QA accuracy against feedback_kl: significantly different in 1 of 4 (RQA, loss) pairs"
    )
    assert (
        lines[-2]
        .replace("\xa0", " ")
        .endswith(
            ": minilm + `feedback_ce_majority` -0.90 points, unadjusted CI [-1.30, -0.50], Holm p 0.010."
        )
    )
    assert lines[-1] == (
        "Collapsed to one rating: `feedback_ce_majority` predicts Bad for 100% of the items (its accuracy "
        "and macro-F1 are those of always predicting that rating)."
    )


def test_a_folder_without_a_cross_entropy_loss_is_named_with_the_command(tmp_path: Path) -> None:
    pd.DataFrame({"reranker": ["vanilla", "feedback_kl"], "seed": [0, 0]}).to_parquet(
        tmp_path / "rating_predictions.parquet"
    )
    assert missing_losses(tmp_path) == ["feedback_ce_annotator", "feedback_ce_majority"]
    from fqa_analysis.findings.ablation_loss import loss_page

    with pytest.raises(
        ValueError, match=r"needs feedback_ce_annotator, feedback_ce_majority; `fqa run rerank --variants"
    ):
        loss_page(tmp_path)
