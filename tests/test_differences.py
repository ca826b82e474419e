"""Why our numbers differ: factor runs and the power projection, on hand-made folders (values by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.core.differences import (
    PAPER_CONTRIBUTION,
    factor_setting,
    factor_table,
    power_projection,
)
from fqa_analysis.core.results import factor_folders

# Four WHO questions, two candidates each: (p_rqa of the gold, p_rqa of the other, gold's rank).
# The RQA alone is right on q1 and q2 (its gold ranks first there).
_QUESTIONS = {0: (0.4, 0.5), 1: (0.6, 0.3), 2: (0.5, 0.45), 3: (0.45, 0.5)}


def _rows(reranker: str, p_excellent: dict[int, tuple[float, float]]) -> list[dict]:
    rows = []
    for q, (gold, other) in _QUESTIONS.items():
        order = sorted([(gold, True), (other, False)], reverse=True)
        for rank, (p_rqa, is_gold) in enumerate(order, start=1):
            p_exc = None if reranker == "none" else p_excellent[q][0 if is_gold else 1]
            rows.append(
                {
                    "protocol": "available",
                    "rqa": "hybrid",
                    "reranker": reranker,
                    "seed": 0,
                    "domain": "WHO",
                    "split": "test",
                    "question_id": q,
                    "question": f"q{q}",
                    "passage_id": 10 * q + (0 if is_gold else 1),
                    "rqa_rank": rank,
                    "p_rqa": p_rqa,
                    "p_bad": None if p_exc is None else 1 - p_exc,
                    "p_could_be_improved": None if p_exc is None else 0.0,
                    "p_acceptable": None if p_exc is None else 0.0,
                    "p_excellent": p_exc,
                    "is_gold": is_gold,
                }
            )
    return rows


# S = p_rqa + P(Excellent). vanilla: right on q0 (0.4 + 0.5 > 0.5) and q2, wrong on q1 (0.6 < 0.3 + 0.5)
# and q3: 2/4. combined lifts every gold by 0.5: 4/4. feedback_kl adds nothing: the RQA's 2/4.
_VANILLA = {0: (0.5, 0.0), 1: (0.0, 0.5), 2: (0.5, 0.0), 3: (0.0, 0.0)}
_LIFT = {q: (0.5, 0.0) for q in _QUESTIONS}
_FLAT = {q: (0.0, 0.0) for q in _QUESTIONS}


def _folder(
    root: Path, combined: dict[int, tuple[float, float]], layers: int, variants: tuple[str, ...]
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tables = {"none": _FLAT, "vanilla": _VANILLA, "feedback_kl": _FLAT, "combined": combined}
    rows = [r for name in ("none", *variants) for r in _rows(name, tables[name])]
    frame = pd.DataFrame(rows).astype(
        {c: float for c in ("p_bad", "p_could_be_improved", "p_acceptable", "p_excellent")}
    )
    frame.to_parquet(root / "candidates.parquet", index=False)
    config = {"model": {"max_len": 128, "encoder_layers": layers}, "seeds": [0], "variants": list(variants)}
    # training time: vanilla's one epoch (its history's wall_s), the others' compute_s, in seconds
    histories = {"vanilla/seed0": {"best_select_kl": 0.25 * layers, "epochs": [{"wall_s": 600.0 * layers}]}}
    timings = {f"{v}/seed0/train": {"wall_s": 1.0, "compute_s": 60.0 * layers} for v in variants}
    timings["vanilla/seed0/train"] = {"wall_s": 600.0 * layers}
    entry = {"config": config, "histories": histories, "timings": timings}
    (root / "manifest.json").write_text(json.dumps({"stages": {"rerank": entry}}))
    return root


def test_a_factor_run_is_set_beside_the_book_with_its_changed_setting_in_words(tmp_path: Path) -> None:
    every = ("vanilla", "feedback_kl", "combined")
    results = _folder(tmp_path / "results", _LIFT, 6, every)
    _folder(results / "factors" / "layers2", _VANILLA, 2, every)  # combined = vanilla: no contribution
    _folder(results / "factors" / "running", _LIFT, 4, ("vanilla",))  # in progress: left out
    assert list(factor_folders(results)) == ["layers2", "running"]
    table, comparison = factor_table(results)
    assert list(table.index) == ["the book's configuration", "the first 2 of MiniLM's 6 layers"]
    book, small = table.loc["the book's configuration"], table.loc["the first 2 of MiniLM's 6 layers"]
    assert (book["rqa_alone"], book["vanilla"], book["feedback_kl"], book["combined"]) == (0.5, 0.5, 0.5, 1.0)
    assert (book["gain_delta"], book["contribution_delta"]) == (0.5, 0.5)
    assert (small["combined"], small["contribution_delta"], small["gain_delta"]) == (0.5, 0.0, 0.0)
    assert (book["relevance_kl"], small["relevance_kl"]) == (1.5, 0.5)
    # 600 s per layer for vanilla, 60 s per layer for each of the two others: 6 * 720 s, 2 * 720 s
    assert (book["train_minutes"], small["train_minutes"]) == (72.0, 24.0)
    # combined - vanilla per question: book 0, 1, 0, 1 -> sd of (0, 1, 0, 1) = sqrt(1/3)
    assert book["contribution_sd"] == pytest.approx(np.sqrt(1 / 3))
    assert comparison.family_size == 4  # two comparisons per setting, Holm over the table


def test_the_changed_setting_is_read_from_the_configurations_not_the_folder_name() -> None:
    book = {"model": {"max_len": 128, "encoder_layers": 6}, "seeds": [0, 1, 2], "score_rqa": ["bm25"]}
    run = {"model": {"max_len": 256, "encoder_layers": 6}, "seeds": [0], "score_rqa": ["hybrid"]}
    assert factor_setting(book, run) == {"model.max_len": 256}
    # a record written before encoder_layers existed is the whole model (core.results.LATER_SETTINGS)
    assert factor_setting({"model": {"max_len": 128}}, {"model": {"max_len": 128, "encoder_layers": 6}}) == {}


def test_the_projection_by_hand() -> None:
    # contributions 0, 1, 2 points at 100, 200, 400 pairs, each +-0.5: 1 point per doubling
    p = power_projection([100, 200, 400], [0.0, 1.0, 2.0], [0.5] * 3, sd=18.0, questions=1296, target=3.0)
    assert p.slope == pytest.approx(1.0) and p.pairs_for(3.0) == pytest.approx(800)
    # slope se = 1 / sqrt(sum w (x - xbar)^2) = 1 / sqrt(4 * 2); CI half-width 1.959964 * 0.353553
    assert (p.slope_low, p.slope_high) == pytest.approx((1 - 0.6929519, 1 + 0.6929519), abs=1e-6)
    assert p.rising
    # the optimistic line (upper slope) through (log2 200, 1 point): 200 * 2 ** (2 / 1.6929519)
    assert p.pairs_for(3.0, p.slope_high) == pytest.approx(200 * 2 ** (2 / 1.6929519), rel=1e-6)
    # se = 18 / 36 = 0.5; detectable = (1.959964 + 0.841621) * 0.5
    assert p.detectable == pytest.approx(1.4007925, abs=1e-6)
    # power at 3 points: Phi(3 / 0.5 - 1.959964) + Phi(-6 - 1.959964) = Phi(4.040036)
    assert p.power_at_target == pytest.approx(0.99997327, abs=1e-7)


def test_a_curve_that_does_not_rise_projects_only_from_the_upper_end_of_its_slope() -> None:
    p = power_projection(
        [153, 384, 771, 1545], [-0.35, -0.35, -0.15, -0.40], [0.45] * 4, sd=18.0, questions=1992
    )
    assert not p.rising and p.slope_low < 0 < p.slope_high
    assert p.pairs_for(1.99, p.slope_high) is not None and p.pairs_for(1.99, p.slope_high) > 1545
    # a falling line never reaches a gain
    assert p.pairs_for(1.99, p.slope_low) is None
    assert p.target == PAPER_CONTRIBUTION == 1.99


def test_a_projection_needs_two_amounts_and_their_errors() -> None:
    with pytest.raises(ValueError, match="at least two measured amounts"):
        power_projection([100, 100], [0.0, 1.0], [1.0, 1.0], sd=1.0, questions=10)
    with pytest.raises(ValueError, match="standard error above 0"):
        power_projection([100, 200], [0.0, 1.0], [1.0, 0.0], sd=1.0, questions=10)


def _measured() -> object:
    """A hand-made WhyWeDiffer: the book's contribution -0.1 points, a 2-layer run +0.4, a rising curve."""
    from fqa_analysis.core.differences import WhyWeDiffer

    def factor(changed: str, delta: float, combined: float) -> dict:
        return {
            "changed": changed,
            "relevance_kl": 0.3581,
            "prior_kl": 0.5623,
            "vanilla_auc": 0.818,
            "rqa_alone": 0.6456,
            "vanilla": combined - delta,
            "feedback_kl": 0.65,
            "combined": combined,
            "contribution_delta": delta,
            "contribution_delta_ci_low": delta - 0.01,
            "contribution_delta_ci_high": delta + 0.01,
            "contribution_p_holm": 0.85,
            "gain_delta": combined - 0.6456,
            "gain_delta_ci_low": combined - 0.6556,
            "gain_delta_ci_high": combined - 0.6356,
            "gain_p_holm": 0.0004,
            "train_minutes": 73.4,
        }

    factors = pd.DataFrame(
        [factor("", -0.001, 0.653), factor("model.encoder_layers", 0.004, 0.6)],
        index=["the book's configuration", "2 of 6 layers"],
    )
    curve = pd.DataFrame(
        {"pairs": [100, 200, 400], "delta": [0.0, 0.005, 0.01], "delta_ci_high": [0.004, 0.009, 0.0201]}
    )
    start = pd.Series(
        {"delta": 0.006, "delta_ci_low": -0.001, "delta_ci_high": 0.013, "p_holm": 0.1, "mde": 0.01}
    )
    return WhyWeDiffer(
        factors=factors,
        factor_comparison=None,  # type: ignore[arg-type]  # not read by the words
        curve=curve,
        curve_comparison=None,  # type: ignore[arg-type]
        projection=power_projection([100, 200, 400], [0.0, 0.5, 1.0], [0.2] * 3, sd=20.0, questions=1600),
        start=start,
        start_comparison=None,  # type: ignore[arg-type]
        rqa_gains=pd.Series({"hybrid": 0.0059, "bm25": 0.0728}),
        rqa="hybrid",
        training_pairs=400,
        questions=1600,
        contribution=pd.Series(
            {"delta": -0.0027, "delta_ci_low": -0.0099, "delta_ci_high": 0.0045, "p_holm": 1.0, "mde": 0.0131}
        ),
        contribution_family=8,
    )


def test_the_table_words_each_difference_from_its_measurement() -> None:
    from fqa_analysis.core.differences import difference_rows

    table = (
        difference_rows(_measured()).set_index("difference")["what varying it did"].str.replace("\xa0", " ")
    )
    assert table["the reranker's model"].endswith(
        "the book's configuration (6 layers, seed 0): the feedback's contribution -0.10 points "
        "[-1.10, +0.90], combined + hybrid 65.3%; "
        "2 of 6 layers: the feedback's contribution +0.40 points [-0.60, +1.40], combined + hybrid 60.0% "
        "(seed 0)"
    )
    assert table["input length"].startswith("not varied in these results: a run of its own trains")
    # a relevance model within 0.01 nats of its class prior's KL is said to have learned nothing
    w = _measured()
    w.factors.loc["2 of 6 layers", ["relevance_kl", "vanilla_auc"]] = [0.5614, 0.527]  # type: ignore[attr-defined]
    flagged = difference_rows(w).set_index("difference").loc["the reranker's model", "what varying it did"]  # type: ignore[arg-type]
    assert flagged.endswith(
        "60.0% (its relevance model learned nothing: held-out KL 0.561, as always predicting the pseudo "
        "pairs' label shares, 0.562; AUC 0.53) (seed 0)"
    )
    # 0.5 points per doubling, se 0.2 / sqrt(2) (weights 25, spread of log2 pairs 2): CI +-0.277
    assert "0.00 at 100, +0.50 at 200, +1.00 at 400" in table["training feedback"]
    assert "+0.50 points per doubling, 95% CI [+0.22, +0.78]" in table["training feedback"]
    slope_high = 0.5 + 1.959964 * 0.2 / np.sqrt(2)
    optimistic = 2 ** (np.log2(200) + (1.99 - 0.5) / slope_high)
    assert f"about {float(f'{optimistic:.2g}'):,.0f} rated pairs" in table["training feedback"]
    assert table["where the rerankers start"].endswith("Holm p 0.10, MDE 1.00 (not told apart)")
    assert table["RQA system"].endswith("+0.59 on hybrid, +7.28 on bm25")
    assert table["the relevance model's seed"].startswith("not varied in these results")
    from dataclasses import replace

    seeds = pd.DataFrame(
        [
            {
                "rqa": "hybrid",
                "seed": 1,
                "delta": -0.004,
                "delta_ci_low": -0.011,
                "delta_ci_high": 0.003,
                "p_holm": 0.52,
            }
        ]
    )
    seeded = difference_rows(replace(_measured(), relevance_seeds=seeds))  # type: ignore[type-var]
    assert seeded.set_index("difference").loc["the relevance model's seed", "what varying it did"].replace(
        "\xa0", " "
    ) == (
        "vanilla trained anew with another seed, reranking: seed 1 instead of 0 on hybrid: "
        "-0.40 points [-1.10, +0.30], Holm p 0.52"
    )
    # and, per seed, combined against vanilla from its own relevance model and from the shared one
    own = pd.DataFrame(
        [
            {
                "rqa": "hybrid",
                "seed": 1,
                "start": s,
                "delta": d,
                "delta_ci_low": d - 0.007,
                "delta_ci_high": d + 0.007,
            }
            | {"p_holm": p}
            for s, d, p in (("own", 0.002, 0.9), ("shared", -0.006, 0.2))
        ]
    )
    both = difference_rows(replace(_measured(), relevance_seeds=seeds, per_seed=own))  # type: ignore[type-var]
    assert (
        both.set_index("difference")
        .loc["the relevance model's seed", "what varying it did"]
        .replace("\xa0", " ")
        .endswith(
            "Holm p 0.52; the feedback's contribution (combined minus vanilla of the same start) on seed 1, "
            "hybrid, from its own seed's relevance model: +0.20 points [-0.50, +0.90], Holm p 0.90; on seed "
            "1, hybrid, from the shared seed-0 one: -0.60 points [-1.30, +0.10], Holm p 0.20"
        )
    )


def test_the_answer_names_the_largest_varied_contribution_and_whether_any_reaches_the_papers() -> None:
    from dataclasses import replace

    from fqa_analysis.core.differences import why_answer

    w = _measured()
    text = why_answer(w).replace("\xa0", " ")  # type: ignore[arg-type]
    # the book's number is the seed-averaged comparison, as the reranking chapter tests it
    assert text.startswith(
        "**The feedback's own contribution here (combined minus vanilla on hybrid, seeds averaged) is "
        "-0.27 points, unadjusted CI [-0.99, +0.45], Holm p 1.00, MDE 1.31, against the paper's +1.99"
    )
    assert "would detect with power 0.978" in text
    # the curve's 400-pair point: +1.00, CI up to +2.01 >= 1.99; the 2-layer run's +0.40 reaches +1.40 only
    assert "1 of the settings varied here reach it within their 95% CI (the largest: +1.00 points, " in text
    assert "feedback_kl on 400 rated pairs)." in text
    # rows "not varied" are named, and what cannot be obtained
    assert "Not varied yet: input length, negatives of the QA-only model, the relevance model's seed." in text
    assert text.endswith("BART-large and the paper's training feedback cannot be obtained here.**")
    lower = replace(w, curve=w.curve.assign(delta_ci_high=[0.004, 0.009, 0.0198]))  # type: ignore[type-var]
    assert "none of the settings varied here reaches it" in why_answer(lower)
    # a factor run whose relevance model learned nothing is left out of the largest
    blind = _measured()
    blind.factors.loc["2 of 6 layers", ["relevance_kl", "contribution_delta"]] = [0.5620, 0.05]  # type: ignore[attr-defined]
    assert "2 of 6 layers" not in why_answer(blind)  # type: ignore[arg-type]
    assert "2 of 6 layers (combined minus vanilla, seed 0)" in why_answer(  # type: ignore[arg-type]
        replace(_measured(), curve=w.curve.assign(delta=[-0.01] * 3, delta_ci_high=[0.0] * 3))  # type: ignore[type-var]
    )


def test_the_factor_view_shows_percent_and_each_comparison_with_its_interval() -> None:
    from fqa_analysis.core.differences import factor_view

    w = _measured()
    w.factors["combined_alone"] = [0.595, 0.5]  # type: ignore[attr-defined]
    view = factor_view(w).map(lambda v: v.replace("\xa0", " "))  # type: ignore[arg-type]
    book = view["the book's configuration"]
    assert list(view.columns) == ["the book's configuration", "2 of 6 layers"]
    assert (book["hybrid alone (%)"], book["+ combined (%)"], book["+ vanilla (%)"]) == (
        "64.6",
        "65.3",
        "65.4",
    )
    assert book["combined alone (%)"] == "59.5"
    assert book["contribution: combined - vanilla (points)"] == "-0.10 [-1.10, +0.90]"
    assert (book["its Holm p"], book["its Holm p "]) == ("0.85", "0.00040")
    assert book["relevance model's held-out KL (nats)"] == "0.358"
    assert book["the same, always predicting the pseudo pairs' label shares (nats)"] == "0.562"
    assert book["relevance model's AUC on the hybrid's top 5"] == "0.818"
    assert book["training the three models (min)"] == "73"
    assert view.columns.name == "setting" and view.index.name == "measure (seed 0)"


def test_contribution_points_list_the_factor_table_then_the_curve_in_points() -> None:
    from fqa_analysis.core.differences import contribution_points

    w = _measured()
    w.curve["delta_ci_low"] = [-0.004, 0.001, 0.0]  # type: ignore[attr-defined]
    w.curve["p_holm"] = [1.0, 0.2, 0.03]  # type: ignore[attr-defined]
    points = contribution_points(w)  # type: ignore[arg-type]
    assert list(points["label"]) == [
        "book's configuration (seed 0)",
        "2 of 6 layers",
        "100 rated pairs",
        "200 rated pairs",
        "400 rated pairs",
    ]
    assert list(points["family"]) == ["combined - vanilla"] * 2 + ["feedback_kl - vanilla"] * 3
    assert points["delta"].tolist() == pytest.approx([-0.1, 0.4, 0.0, 0.5, 1.0])
    assert points.loc[1, ["ci_low", "ci_high"]].tolist() == pytest.approx([-0.6, 1.4])
    assert points["significant"].tolist() == [False, False, False, False, True]


def test_the_relevance_models_other_seeds_are_compared_with_seed_0(tmp_path: Path) -> None:
    from fqa_analysis.core.differences import relevance_seed_spread

    every = ("vanilla", "feedback_kl", "combined")
    results = _folder(tmp_path / "results", _LIFT, 6, every)
    assert relevance_seed_spread(results) is None  # no folder: nothing to show
    # seed 1 of vanilla lifts every gold (right on all 4) where seed 0 is right on q0 and q2
    seeds = _folder(results / "relevance_seeds", _LIFT, 6, ("vanilla",))
    frame = pd.read_parquet(seeds / "candidates.parquet")
    vanilla = frame["reranker"] == "vanilla"
    frame.loc[vanilla, "p_excellent"] = frame["is_gold"].map({True: 0.5, False: 0.0})
    frame.loc[vanilla, "p_bad"] = 1 - frame.loc[vanilla, "p_excellent"]
    frame.loc[vanilla, "seed"] = 1
    frame.to_parquet(seeds / "candidates.parquet", index=False)
    table, comparison = relevance_seed_spread(results)  # type: ignore[misc]
    row = table.iloc[0]
    assert (row["rqa"], row["seed"], row["accuracy"], row["seed0"], row["delta"]) == (
        "hybrid",
        1,
        1.0,
        0.5,
        0.5,
    )
    assert comparison.family_size == 1


def test_a_folder_with_a_subset_of_the_runs_gets_a_note_of_what_it_lacks(tmp_path: Path) -> None:
    from fqa_analysis.core.differences import why_missing

    results = _folder(tmp_path / "results", _LIFT, 6, ("vanilla", "combined"))
    note = why_missing(results)
    assert note is not None and note.startswith("*Not computed in this results folder: this section needs ")
    # the rerankers it lacks, with the command, and the learning curve (no beyond stage here)
    assert "`feedback_kl`, `feedback_kl_scratch` (seed 0) rescoring hybrid" in note
    assert "`fqa run rerank --variants feedback_kl,feedback_kl_scratch`" in note
    assert "the beyond stage's learning-curve runs on these rerankers" in note


def test_the_contribution_per_seed_is_compared_from_its_own_start_and_from_the_shared_one(
    tmp_path: Path,
) -> None:
    from fqa_analysis.core.differences import per_seed_contribution

    every = ("vanilla", "feedback_kl", "combined")
    results = _folder(tmp_path / "results", _LIFT, 6, every)
    assert per_seed_contribution(results) is None  # no folder: nothing to show
    # the book's combined seed 1, continued from the shared seed-0 relevance model, adds nothing:
    # right where the RQA is (q1, q2), 2/4, as vanilla seed 0 (q0, q2)
    book = pd.read_parquet(results / "candidates.parquet")
    seed1 = pd.DataFrame(_rows("combined", _FLAT)).assign(seed=1)
    pd.concat([book, seed1.astype(book.dtypes.to_dict())], ignore_index=True).to_parquet(
        results / "candidates.parquet", index=False
    )
    # per seed: vanilla seed 1 as vanilla seed 0 (2/4), combined seed 1 from it lifts every gold (4/4)
    own = _folder(results / "relevance_per_seed", _LIFT, 6, ("vanilla", "combined"))
    frame = pd.read_parquet(own / "candidates.parquet")
    frame.loc[frame["reranker"] != "none", "seed"] = 1
    frame.to_parquet(own / "candidates.parquet", index=False)
    table, comparison = per_seed_contribution(results)  # type: ignore[misc]
    got = {(r["start"], r["seed"]): r["delta"] for _, r in table.iterrows()}
    assert got == {("own", 1): 0.5, ("shared", 1): 0.0}
    assert comparison.family_size == 2
    # vanilla seed 1 of that folder is the relevance model's other seed too: 2/4, as seed 0
    from fqa_analysis.core.differences import relevance_seed_spread

    spread, _ = relevance_seed_spread(results)  # type: ignore[misc]
    assert spread[["seed", "accuracy", "seed0", "delta"]].values.tolist() == [[1, 0.5, 0.5, 0.0]]
