"""Issue 6 analyses (fqa_analysis.beyond) and the experiment design (rerank_data), on hand-made tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.beyond import (
    apply_rating_temperatures,
    compare_within,
    cross_domain_weight,
    depth_curve,
    experiment_candidates,
    failure_categories,
    fit_rating_temperature,
    rating_temperatures,
    scale_ratings,
    top1_confidence,
    weight_optima,
    with_unscaled_rqa,
)
from fqa_analysis.candidates import RATING_COLUMNS
from fqa_analysis.rerank import PairStates
from fqa_analysis.rerank_data import RatedPair, feedback_experiments, question_fraction, random_removal


def _candidates(reranker: str = "x", seed: int = 0) -> pd.DataFrame:
    """Two questions of domain A, three candidates each; the gold is rank 2 (q0) and rank 1 (q1)."""
    return pd.DataFrame(
        {
            "protocol": "available",
            "rqa": "r",
            "reranker": reranker,
            "seed": seed,
            "domain": "A",
            "split": "test",
            "question_id": [0, 0, 0, 1, 1, 1],
            "question": ["q0"] * 3 + ["q1"] * 3,
            "passage_id": [10, 11, 12, 20, 21, 22],
            "rqa_rank": [1, 2, 3, 1, 2, 3],
            "p_rqa": [0.5, 0.3, 0.1, 0.6, 0.2, 0.1],
            "p_bad": [0.5, 0.0, 0.5, 0.0, 0.5, 0.5],
            "p_could_be_improved": 0.0,
            "p_acceptable": 0.0,
            "p_excellent": [0.5, 1.0, 0.5, 1.0, 0.5, 0.5],
            "is_gold": [False, True, False, True, False, False],
        }
    )


def test_temperature_scaling_keeps_the_argmax_and_the_fit_recovers_a_known_temperature() -> None:
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]])
    hot = scale_ratings(probs, 2.0)
    assert (hot.argmax(axis=1) == probs.argmax(axis=1)).all()
    # T = 2 takes square roots: [sqrt(.7), sqrt(.1) x 3] renormalised
    root = np.sqrt([0.7, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(hot[1], root / root.sum())
    np.testing.assert_allclose(scale_ratings(probs, 1000.0), 0.25, atol=1e-3)
    # targets that ARE the T = 2 version: the cross-entropy minimum is at T = 2 (KL = 0 there)
    t, before, after = fit_rating_temperature(probs, hot)
    assert t == pytest.approx(2.0, abs=1e-3)
    assert after < before
    with pytest.raises(ValueError, match="positive"):
        scale_ratings(probs, 0.0)


def test_rating_temperatures_are_fitted_per_run_and_applied_to_reranked_rows_only() -> None:
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
    selection = pd.DataFrame(
        {
            "reranker": "x",
            "seed": 0,
            **dict(zip(RATING_COLUMNS, probs.T, strict=True)),
            **{
                "target_" + c[2:]: v for c, v in zip(RATING_COLUMNS, scale_ratings(probs, 0.5).T, strict=True)
            },
        }
    )
    temps = rating_temperatures(selection)
    assert temps["temperature"].iloc[0] == pytest.approx(0.5, abs=1e-3)
    table = pd.concat([_candidates("none").assign(**{c: np.nan for c in RATING_COLUMNS}), _candidates()])
    scaled = apply_rating_temperatures(table.reset_index(drop=True), temps.assign(temperature=2.0))
    assert scaled.loc[scaled["reranker"] == "none", RATING_COLUMNS].isna().all().all()
    # [0.5, 0, 0, 0.5] stays [0.5, ~0, ~0, 0.5]; a one-hot stays one-hot (the floor is 1e-6)
    first = scaled[scaled["reranker"] == "x"].iloc[0]
    assert first["p_excellent"] == pytest.approx(0.5, abs=2e-3)
    with pytest.raises(ValueError, match="no rating temperature"):
        apply_rating_temperatures(_candidates(seed=1), temps)


def test_unscaled_rqa_probabilities_replace_p_rqa() -> None:
    cands = _candidates()
    deep = _candidates("none").assign(p_rqa_t1=[0.4, 0.4, 0.2, 0.5, 0.3, 0.2])
    out = with_unscaled_rqa(cands, deep)
    assert out["p_rqa"].tolist() == [0.4, 0.4, 0.2, 0.5, 0.3, 0.2]
    with pytest.raises(ValueError, match="lacks candidates"):
        with_unscaled_rqa(cands, deep.iloc[:4])


def test_top1_confidence_takes_rank_one_of_the_rqa_alone() -> None:
    conf = top1_confidence(_candidates("none"))
    assert conf["confidence"].tolist() == [0.5, 0.6]
    assert conf["correct"].tolist() == [0.0, 1.0]


def test_compare_within_corrects_over_the_whole_table() -> None:
    rows = []
    for g, gain in (("a", 1), ("b", 0)):
        for q in range(40):
            rows.append(
                {"g": g, "s": "base", "domain": "D", "split": "test", "question_id": q, "correct": q % 2}
            )
            rows.append(
                {
                    "g": g,
                    "s": "new",
                    "domain": "D",
                    "split": "test",
                    "question_id": q,
                    "correct": max(q % 2, gain),
                }
            )
    table = compare_within(pd.DataFrame(rows), ["g"], "s", "base", n_resamples=999).set_index(["g", "s"])
    assert table.loc[("a", "new"), "delta"] == pytest.approx(0.5)
    assert table.loc[("b", "new"), "delta"] == 0.0
    # two comparisons in the family: the smaller p is doubled by Holm
    assert table.loc[("a", "new"), "p_holm"] == pytest.approx(2 * table.loc[("a", "new"), "p_value"])
    assert np.isnan(table.loc[("a", "base"), "p_value"])


def test_weight_optimum_ties_go_to_the_weight_nearest_one_half() -> None:
    curve = pd.DataFrame({"g": "a", "w": [0.0, 0.3, 0.7, 1.0], "correct": [0, 1, 1, 0]})
    best = weight_optima(curve, ["g"]).iloc[0]
    assert best["best_w"] == 0.3  # 0.3 and 0.7 tie and are equally near 0.5: the smaller
    assert np.isnan(best["accuracy_at_half"]) and best["accuracy_at_0"] == 0.0


def test_cross_domain_weight_uses_the_other_domains_choice() -> None:
    rows = []
    for domain, best in (("A", 0.0), ("B", 1.0)):
        for w in (0.0, 0.5, 1.0):
            rows.append(
                {"protocol": "p", "rqa": "r", "reranker": "x", "seed": 0, "domain": domain, "split": "test",
                 "question_id": 0, "w": w, "correct": float(w == best)}
            )  # fmt: skip
    out = cross_domain_weight(pd.DataFrame(rows), domains=("A", "B")).set_index(["domain", "w_rule"])
    # A is answered with B's best weight (1.0), which is wrong on A; and vice versa
    assert out.loc[("A", "tuned"), "chosen_w"] == 1.0 and out.loc[("A", "tuned"), "correct"] == 0.0
    assert out.loc[("B", "tuned"), "chosen_w"] == 0.0 and out.loc[("B", "tuned"), "correct"] == 0.0
    assert out.loc[("A", "sum"), "correct"] == 0.0


def test_depth_curve_reranks_the_top_k_and_reports_recall_as_ceiling() -> None:
    deep = _candidates().assign(p_rqa_t1=0.0)
    curve = depth_curve(deep, [1, 2, 3]).sort_values(["question_id", "depth"])
    # q0: gold at rank 2 with P(Exc) 1.0: 0.3 + 1.0 beats 0.5 + 0.5 from depth 2 on
    q0 = curve[curve["question_id"] == 0]
    assert q0["correct"].tolist() == [False, True, True]
    assert q0["ceiling"].tolist() == [False, True, True]
    assert curve[curve["question_id"] == 1]["correct"].all()


def test_experiment_candidates_borrow_p_theta_and_gold_from_the_rqa_rows() -> None:
    base = _candidates("none").assign(**{c: np.nan for c in RATING_COLUMNS}, rqa="hybrid")
    exp = base[["domain", "split", "question_id", "rqa_rank", "passage_id"]].assign(
        experiment="fraction", setting="0.5", seed=1, **{c: 0.25 for c in RATING_COLUMNS}
    )
    out = experiment_candidates(exp, base)
    assert set(out["reranker"]) == {"fraction:0.5"}
    assert out["p_rqa"].tolist() == base["p_rqa"].tolist() and out["is_gold"].sum() == 2
    with pytest.raises(ValueError, match="does not match"):
        experiment_candidates(exp.assign(passage_id=exp["passage_id"] + 1), base)


def test_failure_categories_need_every_gold_rank() -> None:
    outcomes = pd.DataFrame(
        {"rqa": "r", "domain": "A", "split": "test", "question_id": [0], "correct": [False]}
    )
    ranks = pd.DataFrame({"rqa": "r", "domain": "A", "split": "test", "question_id": [1], "gold_rank": [3]})
    with pytest.raises(ValueError, match="rqa_ranks"):
        failure_categories(outcomes, ranks)


def _pairs() -> list[RatedPair]:
    return [
        RatedPair(d, f"{d}{q}", f"p{i}", ("Bad", "Excellent"), "feedback")
        for d, n in (("A", 10), ("B", 20))
        for q in range(n)
        for i in range(2)
    ]


def test_question_fractions_are_nested_and_stratified_by_domain() -> None:
    pairs = _pairs()
    small, large = question_fraction(pairs, 0.1, 4), question_fraction(pairs, 0.5, 4)
    # round(0.1 * 10) = 1 question of A, 2 of B; two pairs per question
    assert sorted(p.domain for p in small) == ["A"] * 2 + ["B"] * 4
    assert set(small) <= set(large) and len(large) == 2 * (5 + 10)
    assert question_fraction(pairs, 0.1, 4) == small  # seeded
    with pytest.raises(ValueError, match="fraction"):
        question_fraction(pairs, 0.0, 0)


def test_transfer_runs_leave_a_domain_out_and_controls_remove_as_many_pairs() -> None:
    pairs = _pairs()
    select = [RatedPair(d, f"s{d}", "p", ("Bad",), "feedback") for d in "AB"]
    runs = feedback_experiments(pairs, select, [0.5, 1.0], [0, 1], domains=("A", "B"))
    assert len(runs) == 2 * 2 + 2 * 2 * 2
    out = next(r for r in runs if r.experiment == "leave_out" and r.setting == "A" and r.seed == 0)
    control = next(r for r in runs if r.experiment == "size_control" and r.setting == "A" and r.seed == 0)
    assert {p.domain for p in out.fit} == {"B"} and {p.domain for p in out.select} == {"B"}
    assert len(control.fit) == len(out.fit) == 40 and control.select == out.select
    assert {p.domain for p in control.fit} == {"A", "B"}
    full = next(r for r in runs if r.experiment == "fraction" and r.setting == "1")
    assert full.fit == pairs
    assert len(random_removal(pairs, 5, 0)) == 55
    with pytest.raises(ValueError, match="no training feedback"):
        feedback_experiments(pairs, select, [1.0], [0], domains=("C",))


def test_pair_states_union_serves_both_caches(tmp_path: Path) -> None:
    for name, length in (("a", 3), ("b", 5)):
        folder = tmp_path / name
        folder.mkdir()
        np.save(folder / "hidden_0.npy", np.full((1, 6, 2), length, dtype=np.float16))
        np.save(folder / "lengths_0.npy", np.array([length], dtype=np.int32))
    a = PairStates(tmp_path / "a", {"x": (0, 0), "shared": (0, 0)}, 1)
    b = PairStates(tmp_path / "b", {"y": (0, 0), "shared": (0, 0)}, 1)
    both = PairStates.union(a, b)
    assert both.length("x") == 3 and both.length("y") == 5
    assert both.length("shared") == 3  # the first cache wins
    hidden, mask = both.batch(["y", "x"])
    assert hidden.shape == (2, 5, 2) and mask.sum().item() == 8
