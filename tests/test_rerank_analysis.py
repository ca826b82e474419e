"""Analyses of the rerank stage on tiny hand-made tables (values computed by hand)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.core.report import mean_sd_table
from fqa_analysis.core.reranking import (
    compare_to_baseline,
    join_annotators,
    per_item_rating_scores,
    rating_quality_table,
    rerank_targets,
    score_ablation,
    score_outcomes,
    seed_table,
)


def _row(q: int, pid: int, rank: int, p_rqa: float, ratings: list[float], gold: bool, **run: object) -> dict:
    base = {"protocol": "available", "rqa": "r", "reranker": "x", "seed": 0, **run}
    return {
        **base,
        "domain": "WHO",
        "split": "test",
        "question_id": q,
        "question": f"q{q}",
        "passage_id": pid,
        "rqa_rank": rank,
        "p_rqa": p_rqa,
        "p_bad": ratings[0],
        "p_could_be_improved": ratings[1],
        "p_acceptable": ratings[2],
        "p_excellent": ratings[3],
        "is_gold": gold,
    }


def _ablation_candidates() -> pd.DataFrame:
    # Question 0: the gold passage (rank 1, p_rqa .5) is rated Acceptable for sure: P(Exc) = 0,
    # E[y]/3 = 2/3 -> S_pe = 0.5, S_er = 1.1667. The non-gold one (p_rqa .4) is Bad or Excellent
    # half-half: P(Exc) = .5, E[y]/3 = .5 -> S_pe = S_er = 0.9. P(Excellent) picks the wrong one.
    # Question 1: both rules keep the gold rank-1 passage.
    return pd.DataFrame(
        [
            _row(0, 10, 1, 0.5, [0, 0, 1, 0], True),
            _row(0, 11, 2, 0.4, [0.5, 0, 0, 0.5], False),
            _row(1, 20, 1, 0.6, [0, 0, 0, 1], True),
            _row(1, 21, 2, 0.3, [1, 0, 0, 0], False),
        ]
    )


def test_score_outcomes_follow_the_rule() -> None:
    cands = _ablation_candidates()
    pe = score_outcomes(cands, "p_excellent")
    er = score_outcomes(cands, "expected_rating")
    assert pe["passage_id"].tolist() == [11, 20]
    assert er["passage_id"].tolist() == [10, 20]
    # w = 0 is the RQA alone: the rank-1 passages
    assert score_outcomes(cands, "p_excellent", weight=0.0)["rqa_rank"].tolist() == [1, 1]


def test_score_ablation_by_hand() -> None:
    cmp = score_ablation(_ablation_candidates(), overall_domains=["WHO"], n_resamples=200)
    row = cmp.table.iloc[0]
    assert cmp.table.index[0][2] == "expected_rating" and len(cmp.table) == 1
    assert (row["baseline_mean"], row["mean"], row["delta"]) == (0.5, 1.0, 0.5)
    assert (row["wins"], row["ties"], row["losses"]) == (1, 1, 0)
    assert row["changed_picks"] == 0.5
    assert row["p_holm"] == row["p_value"]  # a family of one


def _outcomes() -> pd.DataFrame:
    # RQA alone: 1 of 4 right. Reranker x, seeds 0..2: questions 0 and 1 right in every seed,
    # question 2 right in seed 0 only, question 3 never -> seed accuracies .75, .5, .5.
    rows = []
    for q, c in enumerate([1, 0, 0, 0]):
        rows.append(("none", 0, q, c))
    for seed in range(3):
        for q, c in enumerate([1, 1, int(seed == 0), 0]):
            rows.append(("x", seed, q, c))
    frame = pd.DataFrame(rows, columns=["reranker", "seed", "question_id", "correct"])
    domain = ["CDC", "CDC", "WHO", "WHO"]
    return frame.assign(
        protocol="available", rqa="r", split="test", domain=[domain[q] for q in frame["question_id"]]
    )


def test_seed_table_mean_and_sd() -> None:
    t = seed_table(_outcomes(), overall_domains=["CDC", "WHO"])
    x = t[(t["reranker"] == "x")].set_index("test_set")
    assert x.loc["overall (micro)", "mean"] == pytest.approx(7 / 12)
    assert x.loc["overall (micro)", "sd"] == pytest.approx(np.std([0.75, 0.5, 0.5], ddof=1))
    assert x.loc["CDC", "mean"] == 1.0 and x.loc["CDC", "sd"] == 0.0
    assert x.loc["WHO", "mean"] == pytest.approx(1 / 6)
    none = t[t["reranker"] == "none"].set_index("test_set")
    assert none.loc["overall (macro)", "mean"] == 0.25 and none.loc["overall (macro)", "seeds"] == 1
    wide = mean_sd_table(t)
    assert wide.loc[("r", "x"), "overall (micro)"] == "58.3\u00a0±\u00a014.4"
    assert wide.loc[("r", "none"), "CDC"] == "50.0"


def test_compare_to_baseline_uses_seed_averages() -> None:
    cmp = compare_to_baseline(_outcomes(), overall_domains=["CDC", "WHO"], n_resamples=500)
    table = cmp.table.loc["r"]
    # seed-averaged x: 1, 1, 1/3, 0 -> mean 7/12; none: 1/4
    assert table.loc["x", "mean"] == pytest.approx(7 / 12)
    assert table.loc["x", "delta"] == pytest.approx(7 / 12 - 1 / 4)
    assert (table.loc["x", "wins"], table.loc["x", "ties"], table.loc["x", "losses"]) == (2, 2, 0)
    assert table.loc["x", "baseline_mean"] == 0.25 and list(table.index) == ["x"]  # no self-comparison
    assert "strata:domain/split" in cmp.signature() and "seeds:mean per question" in cmp.signature()
    assert "holm:1 (each reranker vs the RQA alone, per RQA)" in cmp.signature()


def _items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "domain": ["WHO", "WHO"],
            "split": "test",
            "item_id": [0, 1],
            "p_bad": [0.0, 1 / 3],
            "p_could_be_improved": [0.0, 0.0],
            "p_acceptable": [0.0, 2 / 3],
            "p_excellent": [1.0, 0.0],
            "majority": ["Excellent", "Acceptable"],
            "unanimous": [True, False],
        }
    )


def _predictions(item_ids: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "reranker": "x",
            "seed": 0,
            "domain": "WHO",
            "item_id": item_ids,
            "p_bad": 0.0,
            "p_could_be_improved": 0.0,
            "p_acceptable": [0.5, 1.0][: len(item_ids)],
            "p_excellent": [0.5, 0.0][: len(item_ids)],
        }
    )


def test_rating_quality_by_agreement() -> None:
    joined = join_annotators(_predictions([0, 1]), _items())
    table = rating_quality_table(joined).set_index("subset")
    assert table.loc["all", "n"] == 2 and table.loc["unanimous", "n"] == 1
    # item 0: argmax tie Acceptable/Excellent -> Acceptable (first max), majority Excellent: wrong
    assert table.loc["unanimous", "accuracy"] == 0.0
    assert table.loc["disagree", "accuracy"] == 1.0
    # item 1: KL = 1/3 ln(1/3 / 1e-12) + 2/3 ln(2/3 / 1)
    expected = (1 / 3) * np.log((1 / 3) / 1e-12) + (2 / 3) * np.log(2 / 3)
    assert table.loc["disagree", "kl"] == pytest.approx(expected)
    per_item = per_item_rating_scores(joined).set_index("item_id")
    assert per_item.loc[0, "kl"] == pytest.approx(np.log(2))


def test_join_annotators_names_the_missing_item() -> None:
    with pytest.raises(ValueError, match="item_id=7"):
        join_annotators(_predictions([7]), _items())


def test_score_separation_by_hand() -> None:
    from fqa_analysis.core.reranking import score_separation

    t = score_separation(_ablation_candidates(), overall_domains=["WHO"]).iloc[0]
    # P(Excellent): gold 0 and 1, non-gold 0.5 and 0 -> pairs (gold > non-gold): 0<0.5 no, 0=0 half,
    # 1>0.5 yes, 1>0 yes -> 2.5 / 4
    assert t["auc_p_excellent"] == 0.625
    # E[y]/3: gold 2/3 and 1, non-gold 0.5 and 0 -> every gold wins
    assert t["auc_expected_rating"] == 1.0
    # within-question sd of p_rqa: |0.5 - 0.4| / sqrt(2) and |0.6 - 0.3| / sqrt(2)
    assert t["spread_p_rqa"] == pytest.approx((0.1 + 0.3) / 2 / np.sqrt(2))


def test_score_separation_averages_the_seeds_auc_instead_of_pooling_them() -> None:
    from fqa_analysis.core.reranking import score_separation

    one = _ablation_candidates()
    one = one[(one["reranker"] != "none") & (one["domain"] == "WHO")]
    # seed 1: the same candidates with P(Excellent) of every gold raised to 1 -> its AUC is 1.0
    other = one.assign(seed=one["seed"].max() + 1)
    other.loc[other["is_gold"].astype(bool), "p_excellent"] = 1.0
    t = score_separation(pd.concat([one, other]), overall_domains=["WHO"]).iloc[0]
    assert t["auc_p_excellent"] == pytest.approx((0.625 + 1.0) / 2)
    assert "seed" not in t.index


def test_compare_family_holms_over_every_rqa_and_pair() -> None:
    from fqa_analysis.core.reranking import compare_family
    from fqa_analysis.core.stats import holm

    one = _outcomes()
    # a second RQA system and a second reranker y (= x's outcomes with question 3 right in seed 1)
    y = one[one["reranker"] == "x"].assign(reranker="y")
    y.loc[(y["seed"] == 1) & (y["question_id"] == 3), "correct"] = 1
    both = pd.concat([one, y])
    outcomes = pd.concat([both, both.assign(rqa="s")], ignore_index=True)
    cmp = compare_family(outcomes, [("x", "none"), ("y", "x")], ["CDC", "WHO"], n_resamples=500)
    table = cmp.table.reset_index()
    assert table[["rqa", "reranker", "baseline"]].values.tolist() == [
        ["r", "x", "none"],
        ["r", "y", "x"],
        ["s", "x", "none"],
        ["s", "y", "x"],
    ]
    # y minus x, seed-averaged: question 3 gains 1/3 -> delta 1/12
    assert table["delta"].iloc[1] == pytest.approx(1 / 12)
    assert table["p_holm"].tolist() == pytest.approx(holm(table["p_value"].tolist()).tolist())
    assert cmp.family_size == 4 and "holm:4 (" in cmp.signature()
    with pytest.raises(ValueError, match=r"no reranker = \['z'\]"):
        compare_family(outcomes, [("z", "none")])


def test_rerank_targets_measure_each_goal_and_leave_missing_runs_unmeasured() -> None:
    quality = pd.DataFrame(
        {
            "reranker": ["kl", "kl", "comb"],
            "seed": [0, 1, 0],
            "auc": [0.82, 0.80, 0.85],
            "alone": [0.55, 0.57, 0.61],
        }
    )
    gains = pd.DataFrame({"delta": [0.011, 0.004], "p_holm": [0.03, 0.5]}, index=["comb", "kl"])
    table = rerank_targets(quality, gains, pd.Series({"kl": 0.70}), 0.76, ["kl", "comb", "absent"], "kl")
    # lowest seed-mean AUC: kl (0.82 + 0.80) / 2 = 0.81; KL margin 0.76 - 0.70 = 0.06;
    # best alone comb 0.61; best gain comb +0.011 with Holm p 0.03
    assert table["measured"].round(4).tolist() == [0.81, 0.06, 0.61, 0.011]
    assert table["met"].tolist() == [True, True, True, True]
    empty = rerank_targets(quality.iloc[:0], gains.iloc[:0], pd.Series(dtype=float), 0.76, ["kl"], "kl")
    assert empty["met"].tolist() == [None, None, None, None]


def test_run_measures_read_one_results_folder() -> None:
    from fqa_analysis.core.reranking import run_measures

    # the hand-made candidates of the score-rule ablation, read as the hybrid's in the WHO domain
    candidates = _ablation_candidates().assign(rqa="hybrid")
    none = candidates.assign(reranker="none", p_bad=np.nan, p_excellent=np.nan)
    stage = {
        "timings": {
            "x/seed0/train": {"wall_s": 1.0, "compute_s": 30.0},
            "x/seed0/score": {"wall_s": 5.0},  # a manifest step without compute_s counts its wall time
        }
    }
    out = run_measures(
        pd.concat([none, candidates]), _predictions([0, 1]), _items(), stage, "hybrid", ["WHO"]
    )
    row = out.loc["x"]
    # P(Excellent), pooled: golds {0, 1} against non-golds {0.5, 0}: gold 1 beats both (2), gold 0
    # loses to 0.5 (0) and ties 0 (0.5) -> AUC 2.5 / 4; S = p_rqa + P(Exc) picks 11 (0.9 > 0.5),
    # then 20: accuracy 1/2
    assert row["auc"] == pytest.approx(0.625) and row["reranked"] == pytest.approx(0.5)
    # KL of item 0: ln 2 (see test_rating_quality_by_agreement); item 1: 1/3 ln(1/3 / 1e-12) + 2/3 ln(2/3)
    item1 = (1 / 3) * np.log((1 / 3) / 1e-12) + (2 / 3) * np.log(2 / 3)
    assert row["kl"] == pytest.approx((np.log(2) + item1) / 2)
    assert (row["train_s"], row["score_s"]) == (30.0, 5.0)
    # a seed the folder does not hold leaves no reranker
    assert run_measures(
        pd.concat([none, candidates]), _predictions([0, 1]), _items(), stage, "hybrid", ["WHO"], seeds=[1]
    ).empty


def test_the_papers_gains_are_its_rerankers_over_its_rqa() -> None:
    from fqa_analysis.core.paper import PAPER_GAINS

    # Table of reranking results: 64.75 alone; 66.59, 65.98, 67.97 reranked
    assert PAPER_GAINS == {"feedback_reranker": 1.84, "vanilla_reranker": 1.23, "combined_reranker": 3.22}


def test_a_constant_prediction_is_scored_on_every_agreement_subset() -> None:
    from fqa_analysis.core.reranking import constant_quality_by_subset

    # two items: one unanimous Excellent, one split Bad / Excellent
    items = pd.DataFrame(
        {
            "domain": "A",
            "item_id": [0, 1],
            "p_bad": [0.0, 0.5],  # item_ratings' annotator shares
            "p_could_be_improved": 0.0,
            "p_acceptable": 0.0,
            "p_excellent": [1.0, 0.5],
            "majority": ["Excellent", "Bad"],
            "unanimous": [True, False],
        }
    )
    table = constant_quality_by_subset([0.5, 0.0, 0.0, 0.5], items)
    assert list(table.index) == ["all", "unanimous", "disagree"]
    # KL(target || constant): ln 2 for the unanimous item, 0 for the split one
    assert table.loc["unanimous", "kl"] == pytest.approx(np.log(2))
    assert table.loc["disagree", "kl"] == pytest.approx(0.0, abs=1e-9)
    assert table.loc["all", "kl"] == pytest.approx(np.log(2) / 2)


def test_per_item_scores_by_seed_and_a_loss_comparison_that_resamples_them() -> None:
    from fqa_analysis.core.reranking import loss_comparisons

    one = {"domain": "A", "item_id": 0, "p_could_be_improved": 0.0, "p_acceptable": 0.0, "a_bad": 0.0}
    one |= {"a_could_be_improved": 0.0, "a_acceptable": 0.0, "a_excellent": 1.0, "majority": "Excellent"}
    j = pd.DataFrame(
        [
            {**one, "reranker": "x", "seed": s, "p_bad": b, "p_excellent": 1 - b, "unanimous": True}
            for s, b in [(0, 0.5), (1, 0.1)]
        ]
    )
    rows = per_item_rating_scores(j, by_seed=True)
    # each seed's own KL: ln(1/0.5) and ln(1/0.9); seed 0's argmax tie goes to Bad
    assert rows["seed"].tolist() == [0, 1]
    assert rows["kl"].tolist() == pytest.approx([np.log(2), np.log(1 / 0.9)])
    assert rows["correct"].tolist() == [0.0, 1.0]
    # two rerankers on 40 items: ce's three seeds spread widely around kl's one
    items = [{"domain": "A", "item_id": i, "unanimous": i % 2 == 0} for i in range(40)]
    per_seed = pd.DataFrame(
        [{**it, "reranker": "kl", "seed": 0, "kl": 0.5, "correct": 1.0} for it in items]
        + [
            {**it, "reranker": "ce", "seed": s, "kl": 0.5 + d, "correct": 1.0}
            for it in items
            for s, d in enumerate([-0.3, 0.05, 0.4])
        ]
    )
    plain = loss_comparisons(
        per_seed.groupby(["reranker", "domain", "item_id"], sort=False)
        .mean(numeric_only=True)
        .reset_index()
        .assign(unanimous=lambda f: f["item_id"] % 2 == 0),
        "kl",
        ["kl"],
    )
    seeded = loss_comparisons(per_seed, "kl", ["kl"], resample_seeds=True)
    # the seed mean is +0.05 nats on every item: the item bootstrap calls it certain, seeds do not
    all_plain = plain.set_index("subset").loc["all"]
    all_seeded = seeded.set_index("subset").loc["all"]
    assert all_plain["delta"] == pytest.approx(0.05) and all_seeded["delta"] == pytest.approx(0.05)
    assert all_plain["p_holm"] < 0.01 and all_seeded["p_holm"] > 0.3
    assert "seeds:resampled (two-level bootstrap)" in seeded.attrs["signature"]


def test_table2_check_names_both_orders_and_reproduces_only_a_significant_contribution() -> None:
    from fqa_analysis.core.paper import ClaimCheck, table2_check

    acc = {"none": 0.60, "vanilla": 0.62, "feedback_kl": 0.63, "combined": 0.65}
    row = {"delta": 0.03, "delta_ci_low": 0.01, "delta_ci_high": 0.05, "p_holm": 0.004, "mde": 0.01}
    check = table2_check(acc, row, "hybrid")
    assert check.verdict == "reproduced"
    assert "order: RQA alone < + VanillaReranker < + FeedbackReranker < + CombinedReranker" in check.claim
    assert "the feedback adds +1.99 points" in check.claim
    assert check.found.startswith("on hybrid, RQA alone 60.00, + VanillaReranker 62.00")
    order = "RQA alone < + VanillaReranker < + FeedbackReranker < + CombinedReranker"
    assert f"order of the point estimates: {order}" in check.found
    assert "+3.00 points" in check.found.replace("\xa0", " ")
    assert check.why == "the feedback's contribution is significant"
    assert (
        check.markdown().splitlines()[3]
        == "- **Verdict: reproduced**: the feedback's contribution is significant"
    )
    # the same gain, not significant after Holm: not reproduced; its CI reaches +5.00, past the paper's
    # +1.99, so the reason says only that it is not told apart
    null = table2_check(acc, {**row, "p_holm": 0.2}, "hybrid")
    assert (null.verdict, null.why) == (
        "not reproduced",
        "the feedback's contribution is not told apart from zero",
    )
    # a CI that ends below the paper's +1.99 (at +1.50) says so
    short = table2_check(acc, {**row, "p_holm": 0.2, "delta_ci_high": 0.015}, "hybrid")
    assert short.why.endswith("and its 95% CI ends at +1.50, below the paper's +1.99")
    with pytest.raises(ValueError, match="verdict 'maybe'"):
        ClaimCheck("a", "b", "maybe")


def test_score_rule_and_loss_checks_by_hand() -> None:
    from fqa_analysis.core.paper import loss_check, score_rule_check

    # P(Excellent) significantly better (E[y]/3 - P(Exc) < 0, Holm p < 0.05) in 2 of 3 pairs: reproduced
    t = pd.DataFrame(
        {
            "rqa": ["hybrid", "hybrid", "bm25"],
            "reranker": ["x", "y", "x"],
            "delta": [-0.01, -0.02, 0.001],
            "p_holm": [0.01, 0.001, 0.8],
        }
    )
    check = score_rule_check(t, "hybrid")
    assert check.verdict == "reproduced"
    assert check.found.startswith("E[y]/3 minus P(Excellent) is -2.00 to -1.00 points on hybrid")
    assert "significantly better in 2 and worse in 0 (Holm over the 3)" in check.found
    assert score_rule_check(t.assign(p_holm=0.5), "hybrid").verdict == "not reproduced"
    # the loss: worse KL under the item bootstrap but not once seeds are resampled: not reproduced
    row = {"delta": 0.043, "delta_ci_low": 0.032, "delta_ci_high": 0.053, "p_holm": 0.0002}
    assert loss_check(row, {**row, "p_holm": 0.04}).verdict == "reproduced"
    assert loss_check(row, {**row, "p_holm": 0.2}).verdict == "not reproduced"
    assert "Holm p 0.20." in loss_check(row, {**row, "p_holm": 0.2}).found


def test_score_rule_check_counts_all_nulls_and_leaves_a_zero_mde_out() -> None:
    from fqa_analysis.core.paper import score_rule_check

    # two pairs, neither significant; the second has no spread (both rules pick alike): MDE 0
    t = pd.DataFrame(
        {
            "rqa": ["hybrid", "bm25"],
            "reranker": ["x", "x"],
            "delta": [-0.001, 0.0],
            "delta_ci_low": [-0.004, 0.0],
            "delta_ci_high": [0.002, 0.0],
            "p_holm": [0.9, 1.0],
            "mde": [0.006, 0.0],
        }
    )
    found = score_rule_check(t, "hybrid").found
    assert found.endswith(
        "(Holm over the 2); no measurable difference either way in all 2 (MDE 0.60 to 0.60 points)."
    )
