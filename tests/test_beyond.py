"""The beyond-the-paper analyses (core.calibration, core.sweeps, core.experiments, core.failures) and the
experiment design (models.reranker.pairs), on hand-made tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fqa_analysis import data
from fqa_analysis.core.calibration import (
    SCALINGS,
    apply_rating_temperatures,
    calibration_table,
    calibration_variants,
    fit_rating_temperature,
    rating_temperatures,
    scale_ratings,
    top1_confidence,
    with_unscaled_rqa,
)
from fqa_analysis.core.candidates import RATING_COLUMNS
from fqa_analysis.core.compare import estimate
from fqa_analysis.core.experiments import experiment_candidates, item_outcomes, transfer_outcomes
from fqa_analysis.core.failures import failure_categories, failure_examples, page_overlap
from fqa_analysis.core.sweeps import cross_domain_weight, depth_curve, weight_optima, weight_stability
from fqa_analysis.models.reranker.encoder import PairStates
from fqa_analysis.models.reranker.pairs import (
    RatedPair,
    feedback_experiments,
    question_fraction,
    random_removal,
)


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


def test_calibration_table_reports_ece_per_setting_and_system() -> None:
    conf = pd.DataFrame({"rqa": "r", "confidence": [0.05, 0.15, 0.95, 0.85] * 5, "correct": [0, 0, 1, 0] * 5})
    table = calibration_table({"fitted T": conf}, bins=2, n_resamples=200).iloc[0]
    assert table["ece"] == pytest.approx(0.25)  # (2 x 0.1 + 2 x 0.4) / 4, as in calibration's doctest
    assert table["accuracy"] == 0.25 and table["mean_confidence"] == pytest.approx(0.5)
    assert table["ece_ci_low"] <= 0.25 <= table["ece_ci_high"]


def test_calibration_variants_rescore_the_same_runs_four_ways() -> None:
    cands = _candidates().assign(domain="WHO")  # only the feedback domains are scored
    deep = _candidates("none").assign(domain="WHO", p_rqa_t1=[0.9, 0.05, 0.05, 0.6, 0.2, 0.1])
    temps = pd.DataFrame({"reranker": ["x"], "seed": [0], "temperature": [1.0]})
    out = calibration_variants(cands, deep, temps).set_index(["scaling", "question_id"])["correct"]
    assert set(out.index.get_level_values(0)) == set(SCALINGS)
    # as run: q0 picks the gold (0.3 + 1.0 > 0.5 + 0.5); at T = 1, 0.9 + 0.5 beats 0.05 + 1.0
    assert bool(out[("as run", 0)]) and not bool(out[("P_theta at T=1", 0)])
    assert bool(out[("P_phi scaled", 0)]) == bool(out[("as run", 0)])  # T = 1 changes nothing


def test_weight_stability_reports_the_best_weight_per_domain_and_seed() -> None:
    rows = []
    for domain, best in (("A", 0.0), ("B", 1.0)):
        for seed in (0, 1):
            for w in (0.0, 0.5, 1.0):
                rows.append(
                    {"rqa": "r", "reranker": "x", "seed": seed, "domain": domain, "question_id": 0, "w": w,
                     "correct": float(w == best)}
                )  # fmt: skip
    table = weight_stability(pd.DataFrame(rows)).iloc[0]
    assert table["w*A"] == 0.0 and table["w*B"] == 1.0
    assert table["best_w"] == 0.0  # 0.0 and 1.0 tie overall and are equally far from 0.5: the smaller
    assert table["w*seed0"] == 0.0 and table["accuracy_at_half"] == 0.0
    assert table["w_range_domains"] == 1.0 and table["w_range_seeds"] == 0.0  # both seeds tie: 0.0


def test_estimate_averages_seeds_per_question_first() -> None:
    out = pd.DataFrame(
        {
            "g": "a",
            "seed": [0, 1, 0, 1],
            "domain": "D",
            "split": "test",
            "question_id": [0, 0, 1, 1],
            "correct": [1, 0, 1, 1],
        }
    )
    row = estimate(out, ["g"], n_resamples=200).iloc[0]
    assert row["n"] == 2 and row["mean"] == 0.75


def test_transfer_outcomes_keep_each_domains_own_runs() -> None:
    rows = [
        {"reranker": r, "domain": d, "split": "test", "question_id": 0, "correct": 1.0}
        for d in ("A", "B")
        for r in ("none", "fraction:1", "fraction:0.5", "leave_out:A", "leave_out:B", "size_control:A")
    ]
    out = transfer_outcomes(pd.DataFrame(rows))
    a = out[out["domain"] == "A"].set_index("reranker")["training"].to_dict()
    assert a == {
        "none": "RQA alone",
        "fraction:1": "all feedback",
        "leave_out:A": "without own domain",
        "size_control:A": "size-matched control",
    }
    assert set(out[out["domain"] == "B"]["reranker"]) == {"none", "fraction:1", "leave_out:B"}
    assert item_outcomes(pd.DataFrame({"item_id": [7], "kl": [0.1]}))[
        ["question_id", "split"]
    ].values.tolist() == [[7, "feedback_test"]]


def test_page_overlap_names_both_passages(tiny_data: Path) -> None:
    split = data.load_qa_split(tiny_data, "WHO", "test")  # gold passages 0 and 1 (tinydata.qa_file)
    picks = pd.DataFrame({"domain": "WHO", "split": "test", "question_id": [0, 1], "passage_id": [0, 2]})
    out = page_overlap(picks, {("WHO", "test"): split})
    assert out["gold_id"].tolist() == [0, 1]
    assert out["same_page"].tolist() == [True, False]
    assert out["picked"].iloc[1] == "WHO page 2 | Header 2"


def test_failure_examples_read_the_splits_they_are_given(tiny_data: Path) -> None:
    split = data.load_qa_split(tiny_data, "WHO", "test")
    # question 0 right (gold passage 0 first), question 1 wrong (passage 2 first, gold 1 at rank 4)
    cands = pd.DataFrame(
        {
            "rqa": "r",
            "reranker": "none",
            "rqa_rank": 1,
            "domain": "WHO",
            "split": "test",
            "question_id": [0, 1],
            "question": ["q0", "q1"],
            "passage_id": [0, 2],
            "is_gold": [True, False],
        }
    )
    ranks = pd.DataFrame(
        {"rqa": "r", "domain": "WHO", "split": "test", "question_id": [0, 1], "gold_rank": [1, 4]}
    )
    out = failure_examples(cands, ranks, {("WHO", "test"): split}, "r", n=5)
    assert out[["question", "answered", "gold_rank"]].values.tolist() == [["q1", "WHO page 2 | Header 2", 4]]
    with pytest.raises(KeyError):
        failure_examples(cands, ranks, {}, "r")


def test_reranker_inference_is_deterministic_and_independent_of_the_batch(tmp_path: Path) -> None:
    """P_phi of a pair must not depend on which pairs share its batch (padding, dropout)."""
    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import _predict, _Top

    rng = np.random.default_rng(0)
    hidden = np.zeros((2, 12, 384), dtype=np.float16)
    hidden[0, :4] = rng.normal(size=(4, 384))
    hidden[1, :12] = rng.normal(size=(12, 384))
    np.save(tmp_path / "hidden_0.npy", hidden)
    np.save(tmp_path / "lengths_0.npy", np.array([4, 12], dtype=np.int32))
    states = PairStates(tmp_path, {"short": (0, 0), "long": (0, 1)}, 1)
    config = RerankConfig(bf16=False)
    top = _Top(config, seed=0)
    alone = _predict(top, ["short"], states, config)
    padded = _predict(top, ["long", "short"], states, config)[1:]
    again = _predict(top, ["short"], states, config)
    np.testing.assert_allclose(alone, padded, atol=1e-5)
    np.testing.assert_array_equal(alone, again)


def test_a_warm_start_continues_from_the_given_weights(tmp_path: Path) -> None:
    """`combined` continues from `vanilla`: with lr 0, training from init leaves init's predictions."""
    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import _Top, predict, train_reranker

    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(3, 6, 384)).astype(np.float16)
    np.save(tmp_path / "hidden_0.npy", hidden)
    np.save(tmp_path / "lengths_0.npy", np.array([6, 5, 4], dtype=np.int32))
    states = PairStates(tmp_path, {"a": (0, 0), "b": (0, 1), "c": (0, 2)}, 1)
    examples = [("a", np.array([0.0, 0.0, 0.0, 1.0])), ("b", np.array([1.0, 0.0, 0.0, 0.0]))]
    select = [("c", np.array([0.0, 0.0, 1.0, 0.0]))]
    config = RerankConfig(frozen_layers=5, epochs=1, bf16=False)
    other = _Top(config, seed=7)  # "vanilla": another initialisation of the head
    init = {k: v.detach().clone() for k, v in other.modules.state_dict().items()}
    frozen = RerankConfig(frozen_layers=5, epochs=1, bf16=False, lr=0.0)
    warm = train_reranker(examples, select, states, frozen, seed=0, init=init).weights
    cold = train_reranker(examples, select, states, frozen, seed=0).weights
    ids = ["a", "b", "c"]
    np.testing.assert_allclose(
        predict(warm, ids, states, config), predict(init, ids, states, config), atol=1e-6
    )
    assert not np.allclose(predict(cold, ids, states, config), predict(init, ids, states, config), atol=1e-3)


def test_deep_rqa_rows_are_reused_only_while_they_match_the_candidates(tmp_path: Path) -> None:
    from fqa_analysis.stages.beyond import _reused_deep_rqa_rows

    def rows(rqa: str, ranks: int, p_first: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "rqa": rqa,
                "reranker": "none",
                "domain": "WHO",
                "split": "test",
                "question_id": 0,
                "rqa_rank": range(1, ranks + 1),
                "passage_id": range(10, 10 + ranks),
                "p_rqa": [p_first] + [0.01] * (ranks - 1),
            }
        )

    candidates = pd.concat([rows("bm25", 2, 0.5), rows("hybrid", 2, 0.7)], ignore_index=True)
    deep = pd.concat([rows("bm25", 3, 0.5), rows("hybrid", 3, 0.7)], ignore_index=True)
    assert _reused_deep_rqa_rows(tmp_path, candidates, 3) is None  # no earlier file
    deep.astype({"p_rqa": np.float32}).to_parquet(tmp_path / "deep_candidates.parquet")
    reused = _reused_deep_rqa_rows(tmp_path, candidates, 3)
    assert reused is not None and len(reused) == 6
    assert _reused_deep_rqa_rows(tmp_path, candidates, 20) is None  # fewer ranks than asked for
    moved = candidates.assign(p_rqa=lambda f: f["p_rqa"].where(f["rqa"] != "hybrid", 0.71))
    assert _reused_deep_rqa_rows(tmp_path, moved, 3) is None  # the rqa stage changed since
    other = candidates.assign(passage_id=lambda f: f["passage_id"][::-1].to_numpy())
    assert _reused_deep_rqa_rows(tmp_path, other, 3) is None
    extra = pd.concat([candidates, rows("minilm", 2, 0.4)], ignore_index=True)
    assert _reused_deep_rqa_rows(tmp_path, extra, 3) is None  # a system the file lacks


def test_training_resumed_from_a_checkpoint_ends_with_the_weights_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    """Stopped mid-epoch (after step 3 of 2 epochs x 3 steps) and resumed: the same weights, bit for bit."""
    import torch

    from fqa_analysis.models.checkpoint import TrainingCheckpoint, TrainingInterruptedError
    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import train_reranker

    rng = np.random.default_rng(2)
    hidden = rng.normal(size=(6, 5, 384)).astype(np.float16)
    np.save(tmp_path / "hidden_0.npy", hidden)
    np.save(tmp_path / "lengths_0.npy", np.array([5, 4, 3, 5, 4, 2], dtype=np.int32))
    ids = ["a", "b", "c", "d", "e", "f"]
    states = PairStates(tmp_path, {pid: (0, i) for i, pid in enumerate(ids)}, 1)
    examples = [(pid, np.eye(4)[i % 4]) for i, pid in enumerate(ids[:5])]
    select = [("f", np.array([0.0, 0.0, 1.0, 0.0]))]
    # batch 2: three steps per epoch; dropout on, so the torch RNG state must be restored too
    config = RerankConfig(frozen_layers=5, epochs=2, batch_size=2, bf16=False, lr=1e-3)
    whole_run = train_reranker(examples, select, states, config, seed=0)
    whole, whole_history = whole_run.weights, whole_run.history
    checkpoint = tmp_path / "checkpoint.pt"
    with pytest.raises(TrainingInterruptedError):
        train_reranker(
            examples,
            select,
            states,
            config,
            seed=0,
            checkpoint=TrainingCheckpoint(checkpoint, stop_after_steps=4),
        )
    assert torch.load(checkpoint, weights_only=False)["loop"]["step"] == 4
    resumed_run = train_reranker(
        examples, select, states, config, seed=0, checkpoint=TrainingCheckpoint(checkpoint)
    )
    resumed, resumed_history = resumed_run.weights, resumed_run.history
    # the kept epoch's selection scores survive the interruption too
    np.testing.assert_array_equal(resumed_run.select_probs, whole_run.select_probs)
    assert resumed_history["steps"] == whole_history["steps"] == 6
    assert [e["select_kl"] for e in resumed_history["epochs"]] == [
        e["select_kl"] for e in whole_history["epochs"]
    ]
    for key, value in whole.items():
        assert torch.equal(value, resumed[key]), key


def test_an_interrupted_scoring_pass_resumes_with_the_missing_pairs_and_the_same_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fqa_analysis.models.reranker.network as reranker
    import fqa_analysis.models.reranker.scoring as variants
    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import _Top

    rng = np.random.default_rng(3)
    ids = [f"p{i}" for i in range(7)]
    hidden = rng.normal(size=(7, 5, 384)).astype(np.float16)
    np.save(tmp_path / "hidden_0.npy", hidden)
    np.save(tmp_path / "lengths_0.npy", np.array([5, 2, 4, 3, 5, 1, 2], dtype=np.int32))
    states = PairStates(tmp_path, {pid: (0, i) for i, pid in enumerate(ids)}, 1)
    config = RerankConfig(frozen_layers=5, bf16=False)
    weights = {k: v.detach().clone() for k, v in _Top(config, seed=0).modules.state_dict().items()}
    # batches of 2, saved every 2 batches: 7 pairs in two chunks of 4 and 3
    monkeypatch.setattr(reranker, "SCORE_BATCH", 2)
    monkeypatch.setattr(variants, "SCORE_CHUNK", 4)
    whole, _ = variants.score_cached(tmp_path / "whole", weights, ids, states, config)
    calls = []
    real_predict = variants.predict

    def predict_once(*args: object) -> np.ndarray:
        if calls:
            raise KeyboardInterrupt  # the session ends during the second chunk
        calls.append(1)
        return real_predict(*args)

    (tmp_path / "resumed").mkdir()
    (tmp_path / "whole").mkdir(exist_ok=True)
    monkeypatch.setattr(variants, "predict", predict_once)
    with pytest.raises(KeyboardInterrupt):
        variants.score_cached(tmp_path / "resumed", weights, ids, states, config)
    with np.load(tmp_path / "resumed" / variants.SCORES_FILE) as stored:
        assert len(stored["ids"]) == 4  # the first chunk was kept
    monkeypatch.setattr(variants, "predict", real_predict)
    resumed, from_cache = variants.score_cached(tmp_path / "resumed", weights, ids, states, config)
    assert not from_cache
    np.testing.assert_array_equal(resumed, whole)


def test_beyond_runs_are_chosen_by_pattern_and_an_unknown_one_is_refused() -> None:
    from fqa_analysis.models.reranker.pairs import FeedbackExperiment
    from fqa_analysis.models.reranker.variants import RerankRunConfig
    from fqa_analysis.stages.beyond import BeyondRunConfig, RunSelectionError, beyond_runs, chosen_runs

    config = BeyondRunConfig(rerank=RerankRunConfig(variants=("feedback_kl", "combined"), seeds=(0, 1)))
    experiments = [
        FeedbackExperiment("leave_out", "WHO", 0, [], []),
        FeedbackExperiment("fraction", "0.5", 0, [], []),
    ]
    planned = beyond_runs(config, experiments)
    assert planned == [
        "selection/feedback_kl/seed0",
        "selection/feedback_kl/seed1",
        "selection/combined/seed0",
        "selection/combined/seed1",
        "leave_out/WHO/seed0",
        "fraction/0.5/seed0",
        "deep/combined/seed0",
        "deep/combined/seed1",
    ]
    assert chosen_runs(planned, ["*/seed1", "leave_out/*"]) == [
        "selection/feedback_kl/seed1",
        "selection/combined/seed1",
        "leave_out/WHO/seed0",
        "deep/combined/seed1",
    ]
    with pytest.raises(RunSelectionError, match="'deep/vanilla/\\*' names none"):
        chosen_runs(planned, ["deep/vanilla/*"])


def test_kept_runs_rows_stay_and_the_recomputed_runs_rows_are_replaced(tmp_path: Path) -> None:
    from fqa_analysis.stages.beyond import _experiment_run, _joined, _kept_earlier

    earlier = pd.DataFrame(
        {
            "experiment": ["fraction", "fraction", "leave_out"],
            "setting": ["0.5", "1", "WHO"],
            "seed": [0, 0, 0],
            "p_bad": [0.1, 0.2, 0.3],
        }
    )
    path = tmp_path / "feedback_experiment_ratings.parquet"
    earlier.to_parquet(path)
    new = pd.DataFrame({"experiment": ["fraction"], "setting": ["0.5"], "seed": [0], "p_bad": [0.9]})
    kept = _kept_earlier(path, _experiment_run, {"leave_out/WHO/seed0"})
    joined = _joined(kept, new)
    # fraction 1 is no longer a run of the stage, fraction 0.5 is recomputed, leave_out is kept
    assert joined.to_dict("list") == {
        "experiment": ["leave_out", "fraction"],
        "setting": ["WHO", "0.5"],
        "seed": [0, 0],
        "p_bad": [0.3, 0.9],
    }
    assert _kept_earlier(path, _experiment_run, set()) is None
