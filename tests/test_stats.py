from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fqa_analysis.core.stats import bootstrap_means, holm, paired_bootstrap, resample_indices


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3*0.01=0.03, 2*0.03=0.06, max(0.06, 1*0.04)=0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]


def _holm_by_rejection(p: list[float]) -> list[float]:
    """Holm's adjusted p from its definition, an oracle independent of the step-down formula.

    Holm at level a rejects the smallest p while it is below a / m, then the next while below
    a / (m - 1), and so on; a hypothesis's adjusted p is the smallest a at which it is rejected.
    The candidates for that a are the values (m - k) * p_(k) and 1.
    """
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    levels = sorted({min(1.0, (m - k) * p[i]) for k, i in enumerate(order)} | {1.0})

    def rejected(a: float) -> set[int]:
        out: set[int] = set()
        for k, i in enumerate(order):
            if p[i] * (m - k) > a:  # p_(k) > a / (m - k): stop, keep the rest
                break
            out.add(i)
        return out

    return [min([a for a in levels if i in rejected(a)], default=1.0) for i in range(m)]


def test_holm_equals_its_definition_on_random_families() -> None:
    rng = np.random.default_rng(0)
    for m in (1, 2, 3, 5, 8, 13):
        for _ in range(50):
            p = rng.uniform(0, 0.2, m).round(3).tolist()  # rounded: ties among the p-values
            assert holm(p).tolist() == pytest.approx(_holm_by_rejection(p), abs=1e-12), p


def test_point_estimates_and_win_tie_loss_by_hand() -> None:
    values = pd.DataFrame({"base": [1, 0, 1, 0, 1], "sys": [1, 1, 0, 1, 1]})
    frame = paired_bootstrap(values, "base", n_resamples=500, seed=1).to_frame()
    assert frame.loc["sys", "mean"] == pytest.approx(0.8)
    assert frame.loc["sys", "delta"] == pytest.approx(0.2)
    assert (frame.loc["sys", "wins"], frame.loc["sys", "ties"], frame.loc["sys", "losses"]) == (2, 2, 1)
    assert np.isnan(frame.loc["base", "p_value"])


def test_macro_needs_strata_and_averages_stratum_means() -> None:
    values = pd.DataFrame({"a": [1, 1, 1, 0], "b": [1, 0, 0, 0]})
    strata = ["X", "X", "X", "Y"]
    with pytest.raises(ValueError, match="strata"):
        paired_bootstrap(values, "a", average="macro")
    cmp = paired_bootstrap(values, "a", strata=strata, average="macro", n_resamples=200)
    assert cmp.mean["a"] == pytest.approx(0.5)  # (1 + 0) / 2
    assert cmp.mean["b"] == pytest.approx(1 / 6)  # (1/3 + 0) / 2


def test_stratified_resamples_stay_within_their_stratum() -> None:
    idx, blocks = resample_indices(5, 50, np.random.default_rng(0), strata=["b", "a", "b", "a", "a"])
    a_block, b_block = blocks
    assert set(idx[:, a_block].ravel()) <= {1, 3, 4}
    assert set(idx[:, b_block].ravel()) <= {0, 2}


def test_same_seed_same_numbers_and_paired_resampling() -> None:
    rng = np.random.default_rng(5)
    values = pd.DataFrame({"a": rng.integers(0, 2, 300), "b": rng.integers(0, 2, 300)})
    values["c"] = values["a"]  # identical system: every resample gives delta 0 exactly
    first = paired_bootstrap(values, "a", n_resamples=1000, seed=3).to_frame()
    second = paired_bootstrap(values, "a", n_resamples=1000, seed=3).to_frame()
    pd.testing.assert_frame_equal(first, second)
    assert first.loc["c", ["delta_ci_low", "delta_ci_high"]].tolist() == [0.0, 0.0]
    assert first.loc["c", "p_value"] == 1.0


def test_clear_effect_is_significant_and_null_effect_is_not() -> None:
    base = np.array([1, 0] * 200)
    strong = base.copy()
    strong[1:120:2] = 1  # 60 extra questions right, none lost
    values = pd.DataFrame({"base": base, "strong": strong, "same": base})
    cmp = paired_bootstrap(values, "base", n_resamples=2000, seed=0)
    assert cmp.p_value["strong"] == pytest.approx(1 / 2001)  # no resample as extreme: the +1 floor
    assert holm([cmp.p_value["strong"], cmp.p_value["same"]]).tolist() == pytest.approx([2 / 2001, 1.0])
    assert cmp.p_value["same"] == 1.0


def test_ci_agrees_with_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(11)
    sample = rng.binomial(1, 0.65, size=800).astype(float)
    ours = bootstrap_means(pd.DataFrame({"x": sample}), n_resamples=10_000, seed=0).loc["x"]
    ref = sps.bootstrap(
        (sample,), np.mean, method="percentile", n_resamples=10_000, confidence_level=0.95, random_state=0
    ).confidence_interval
    assert ours["ci_low"] == pytest.approx(ref.low, abs=0.004)
    assert ours["ci_high"] == pytest.approx(ref.high, abs=0.004)


def test_accuracy_with_ci_per_test_set_and_overall() -> None:
    from fqa_analysis.core.metrics import accuracy_with_ci

    rows = []
    # Domain A: 4 questions, system x right on 3, y on 1. Domain Q (not in overall): 2 questions.
    for domain, rights in (("A", {"x": [1, 1, 1, 0], "y": [1, 0, 0, 0]}), ("Q", {"x": [0, 0], "y": [1, 1]})):
        for system, values in rights.items():
            for qid, v in enumerate(values):
                rows.append(
                    {"rqa": system, "domain": domain, "split": "test", "question_id": qid, "correct": v}
                )
    # Domain B (in overall): 2 questions, x right on 0, y on 2.
    for system, values in {"x": [0, 0], "y": [1, 1]}.items():
        for qid, v in enumerate(values):
            rows.append({"rqa": system, "domain": "B", "split": "test", "question_id": qid, "correct": v})
    table = accuracy_with_ci(pd.DataFrame(rows), "rqa", overall_domains=["A", "B"], n_resamples=300)
    acc = table.set_index(["system", "test_set"])["accuracy"]
    assert acc[("x", "A")] == 0.75 and acc[("y", "Q")] == 1.0
    assert acc[("x", "overall (micro)")] == pytest.approx(3 / 6)  # 3 of the 6 questions of A and B
    assert acc[("x", "overall (macro)")] == pytest.approx((0.75 + 0.0) / 2)
    assert acc[("y", "overall (macro)")] == pytest.approx((0.25 + 1.0) / 2)
    row = table.set_index(["system", "test_set"]).loc[("x", "A")]
    assert row["ci_low"] <= 0.75 <= row["ci_high"] and row["n"] == 4


def test_minimal_detectable_effect_is_about_2_8_standard_errors() -> None:
    """400 paired questions, a difference of 1 on half: SE = 0.5 / 20 = 0.025, MDE ≈ (1.96 + 0.84) SE."""
    values = pd.DataFrame({"base": np.zeros(400), "sys": np.tile([0.0, 1.0], 200)})
    result = paired_bootstrap(values, "base", n_resamples=10_000, seed=0)
    assert result.mde["sys"] == pytest.approx((1.959964 + 0.841621) * 0.025, abs=0.004)
    assert np.isnan(result.mde["base"])
    # four times the questions halve it
    bigger = paired_bootstrap(pd.concat([values] * 4, ignore_index=True), "base", n_resamples=10_000, seed=0)
    assert bigger.mde["sys"] == pytest.approx(result.mde["sys"] / 2, rel=0.08)


def test_unpaired_difference_resamples_each_sample_apart_and_refuses_an_empty_one() -> None:
    from fqa_analysis.core.stats import unpaired_difference

    # a: shares 0.75 (3 of 4), b: 0.25 (1 of 4): difference 0.5 by hand; seeded, so repeatable
    first = unpaired_difference([1, 1, 1, 0], [0, 0, 0, 1], n_resamples=2000)
    assert first[0] == pytest.approx(0.5)
    assert first == unpaired_difference([1, 1, 1, 0], [0, 0, 0, 1], n_resamples=2000)
    # each mean moves in steps of 1/4, so the resampled difference does in steps of 1/4
    assert first[1] < 0.5 < first[2] and (4 * first[1]) % 1 == 0 and (4 * first[2]) % 1 == 0
    with pytest.raises(ValueError, match="non-empty"):
        unpaired_difference([], [1.0])


def test_paired_bootstrap_p_is_the_shift_method_count_over_its_resamples() -> None:
    """The p-value recounted by hand from the same resample matrix: (1 + #{|d* - d| >= |d|}) / (B + 1)."""
    system = np.array([1, 1, 0, 1, 1, 0, 1, 1, 0, 1], dtype=float)
    base = np.array([0, 1, 0, 0, 1, 1, 0, 1, 0, 0], dtype=float)
    result = paired_bootstrap(pd.DataFrame({"base": base, "sys": system}), "base", n_resamples=300, seed=7)
    idx, _ = resample_indices(len(system), 300, np.random.default_rng(7))
    observed = float((system - base).mean())  # 0.3
    resampled = (system - base)[idx].mean(axis=1)
    extreme = int((np.abs(resampled - observed) >= abs(observed) - 1e-12).sum())
    assert observed == pytest.approx(0.3)
    assert result.delta["sys"] == pytest.approx(observed)
    assert result.p_value["sys"] == pytest.approx((1 + extreme) / 301)
    assert 0 < extreme < 300  # an intermediate p, not the floor nor 1


def test_seed_bootstrap_with_one_seed_everywhere_is_the_paired_bootstrap() -> None:
    from fqa_analysis.core.stats import seed_bootstrap

    rng = np.random.default_rng(3)
    values = pd.DataFrame({"base": rng.integers(0, 2, 300), "x": rng.integers(0, 2, 300)}).astype(float)
    strata = ["a"] * 100 + ["b"] * 200
    one = paired_bootstrap(values, "base", strata, "macro", n_resamples=500, seed=4)
    two = seed_bootstrap({c: values[c].to_numpy()[None, :] for c in values}, "base", strata, "macro", 500, 4)
    assert one.to_frame().equals(two.to_frame())  # NaN (the baseline's p) counts as equal here


def test_seed_bootstrap_draws_each_systems_seeds_and_widens_the_interval_by_their_spread() -> None:
    from fqa_analysis.core.stats import seed_bootstrap

    # 200 questions; x's three seeds answer 60%, 50% and 40% of them right, every question alike
    # within a seed; the baseline (one seed) answers 50%. Seed-averaged, x equals the baseline on
    # every question's mean except where the seeds split.
    n = 200
    base = np.tile([1.0, 0.0], n // 2)[None, :]
    x = np.vstack(
        [
            np.r_[np.ones(120), np.zeros(80)],
            np.r_[np.ones(100), np.zeros(100)],
            np.r_[np.ones(80), np.zeros(120)],
        ]
    )
    r = seed_bootstrap({"base": base, "x": x}, "base", n_resamples=4000, seed=0)
    assert r.delta["x"] == pytest.approx(0.0) and r.mean["x"] == pytest.approx(0.5)
    # a seed draw alone moves x's mean by up to +-0.1 (all three draws of the 60% or the 40% seed):
    # the interval must hold such draws, far wider than the questions' spread of a seed average
    low, high = r.delta_ci["x"]
    assert low < -0.05 and high > 0.05
    seed_means = x.mean(axis=1)
    # by hand: the resampled seed mean is the mean of 3 draws from {0.6, 0.5, 0.4}; its sd is
    # sd(seeds, ddof=0) / sqrt(3) = 0.0816 / 1.732 = 0.0471; the delta's bootstrap sd holds it
    d_sd = (high - low) / 3.92
    assert d_sd > 0.9 * np.std(seed_means) / np.sqrt(3)


def test_seed_bootstrap_refuses_systems_on_different_questions() -> None:
    from fqa_analysis.core.stats import seed_bootstrap

    with pytest.raises(ValueError, match="same questions"):
        seed_bootstrap({"a": np.zeros((2, 5)), "b": np.zeros((1, 4))}, "a")
    with pytest.raises(ValueError, match="baseline 'c'"):
        seed_bootstrap({"a": np.zeros((2, 5))}, "c")
