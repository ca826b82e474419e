"""The one comparison API: compare() and Comparison, on tables small enough to check by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from fqa_analysis.core.compare import COLUMNS, Comparison, compare
from fqa_analysis.core.stats import holm, paired_bootstrap


def _two_groups() -> pd.DataFrame:
    rows = []
    for g, gain in (("a", 1), ("b", 0)):
        for q in range(40):
            base = {"g": g, "domain": "D", "split": "test", "question_id": q}
            rows.append({**base, "s": "base", "correct": q % 2})
            rows.append({**base, "s": "new", "correct": max(q % 2, gain)})
    return pd.DataFrame(rows)


def test_holm_over_the_table_or_within_each_group() -> None:
    whole = compare(_two_groups(), system="s", baseline="base", within=["g"], n_resamples=999)
    t = whole.table
    assert list(t.columns) == list(COLUMNS) and list(t.index.names) == ["g", "s"]
    assert t.loc[("a", "new"), "delta"] == pytest.approx(0.5) and t.loc[("b", "new"), "delta"] == 0.0
    assert t.loc[("a", "new"), "baseline_mean"] == 0.5 and t.loc[("a", "new"), "n"] == 40
    # two comparisons in the family: the smaller p is doubled by Holm
    assert t.loc[("a", "new"), "p_holm"] == pytest.approx(2 * t.loc[("a", "new"), "p_value"])
    assert whole.family_size == 2 and "|holm:2 (each other s vs base over every g)|" in whole.signature()
    per = compare(_two_groups(), system="s", baseline="base", within=["g"], family="within", n_resamples=999)
    assert per.table["p_holm"].tolist() == per.table["p_value"].tolist()  # families of one
    assert per.family_size == 1 and "|holm:1 (each other s vs base per g)|" in per.signature()


def test_numbers_are_the_paired_bootstraps() -> None:
    # the same resample matrix as paired_bootstrap on the wide table: identical CIs and p-values
    block = _two_groups().query("g == 'a'")
    cmp = compare(block, system="s", baseline="base", n_resamples=500, seed=4)
    wide = pd.DataFrame({s: block[block["s"] == s]["correct"].to_numpy() for s in ("base", "new")})
    ref = paired_bootstrap(wide, "base", ["D/test"] * 40, n_resamples=500, seed=4)
    row = cmp.table.loc["new"]
    assert (row["delta_ci_low"], row["delta_ci_high"]) == ref.delta_ci["new"]
    assert row["p_value"] == ref.p_value["new"] and (row["ci_low"], row["ci_high"]) == ref.ci["new"]
    assert row["mde"] == ref.mde["new"]  # a family of one: the MDE at 5%


def test_mde_is_taken_at_the_level_holm_asks_of_the_family() -> None:
    # two groups, Holm over the table (m = 2): each MDE at 5% / 2, as paired_bootstrap gives it
    whole = compare(_two_groups(), system="s", baseline="base", within=["g"], n_resamples=500, seed=4)
    per = compare(
        _two_groups(), system="s", baseline="base", within=["g"], family="within", n_resamples=500, seed=4
    )
    block = _two_groups().query("g == 'a'")
    wide = pd.DataFrame({s: block[block["s"] == s]["correct"].to_numpy() for s in ("base", "new")})
    at_half = paired_bootstrap(wide, "base", ["D/test"] * 40, n_resamples=500, seed=4, mde_alpha=0.025)
    at_five = paired_bootstrap(wide, "base", ["D/test"] * 40, n_resamples=500, seed=4)
    assert whole.table.loc[("a", "new"), "mde"] == at_half.mde["new"]
    assert per.table.loc[("a", "new"), "mde"] == at_five.mde["new"]  # families of one
    assert at_half.mde["new"] > at_five.mde["new"]  # a stricter level needs a larger difference


def test_seeds_are_averaged_per_question_first() -> None:
    # x right on question 0 in seed 0 only (1/3), on question 1 in every seed; base right on neither
    rows = [("base", 0, q, 0) for q in (0, 1)]
    rows += [("x", seed, 0, int(seed == 0)) for seed in range(3)] + [("x", seed, 1, 1) for seed in range(3)]
    long = pd.DataFrame(rows, columns=["s", "seed", "question_id", "correct"]).assign(
        domain="D", split="test"
    )
    cmp = compare(long, system="s", baseline="base", n_resamples=200)
    assert cmp.table.loc["x", "mean"] == pytest.approx(2 / 3) and cmp.table.loc["x", "n"] == 2
    assert "seeds:mean per question" in cmp.signature()
    unseeded = compare(long[long["seed"] == 0], system="s", baseline="base", seeds=None, n_resamples=200)
    assert unseeded.table.loc["x", "mean"] == 1.0 and "seeds:none" in unseeded.signature()


def test_pairs_and_item_keys() -> None:
    items = pd.DataFrame(
        {
            "m": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "domain": "D",
            "item_id": [0, 1, 2] * 3,
            "kl": [0.5, 0.5, 0.5, 0.2, 0.5, 0.2, 0.2, 0.2, 0.2],
        }
    )
    cmp = compare(
        items,
        system="m",
        pairs=[("b", "a"), ("c", "b")],
        value="kl",
        keys=["domain", "item_id"],
        strata=["domain"],
    )
    t = cmp.table
    assert t["baseline"].tolist() == ["a", "b"]
    assert t["delta"].round(6).tolist() == [-0.2, -0.1] and t["losses"].tolist() == [2, 1]
    assert t["p_holm"].tolist() == pytest.approx(holm(t["p_value"].tolist()).tolist())


def test_bad_requests_say_what_is_wrong() -> None:
    long = _two_groups()
    with pytest.raises(ValueError, match="exactly one of baseline"):
        compare(long, system="s")
    with pytest.raises(ValueError, match=r"no s = 'zzz' to compare with in \{'g': 'a'\}"):
        compare(long, system="s", baseline="zzz", within=["g"])
    with pytest.raises(ValueError, match="has no outcome for 1 question"):
        compare(long.drop(index=1), system="s", baseline="base", within=["g"])
    with pytest.raises(ValueError, match="question twice"):
        compare(pd.concat([long, long]), system="s", baseline="base", within=["g"], seeds=None)
    with pytest.raises(ValueError, match="strata"):
        compare(long, system="s", baseline="base", strata=["g"])


def test_comparison_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Comparison(pd.DataFrame(), "s", "correct", "f", 1, 10, 0, 0.95, "micro", (), "none")  # type: ignore[misc]


def _estimate_rows() -> pd.DataFrame:
    """Systems a and b on domain A (4 questions) and B (2); c on domain A only."""
    rows = []
    for system, per_domain in {
        "a": {"A": [1, 1, 1, 0], "B": [0, 0]},
        "b": {"A": [1, 0, 0, 0], "B": [1, 1]},
        "c": {"A": [1, 1, 1, 1]},
    }.items():
        for domain, values in per_domain.items():
            for qid, v in enumerate(values):
                row = {"s": system, "domain": domain, "split": "test", "question_id": qid, "correct": v}
                rows.append(row)
    return pd.DataFrame(rows)


def test_estimate_gives_each_groups_mean_over_its_own_questions() -> None:
    from fqa_analysis.core.compare import estimate

    table = estimate(_estimate_rows(), ["s"], n_resamples=500).set_index("s")
    assert table["n"].tolist() == [6, 6, 4]
    assert table["mean"].tolist() == pytest.approx([3 / 6, 3 / 6, 1.0])
    # every question of c is right: every resample's mean is 1
    assert (table.loc["c", "ci_low"], table.loc["c", "ci_high"]) == (1.0, 1.0)
    macro = estimate(_estimate_rows(), ["s"], average="macro", n_resamples=500).set_index("s")["mean"]
    assert macro.tolist() == pytest.approx([(0.75 + 0.0) / 2, (0.25 + 1.0) / 2, 1.0])


def test_estimate_does_not_depend_on_the_row_order() -> None:
    from fqa_analysis.core.compare import estimate

    rows = _estimate_rows()
    shuffled = rows.sample(frac=1.0, random_state=1)
    first = estimate(rows, ["s"], n_resamples=300).set_index("s").sort_index()
    second = estimate(shuffled, ["s"], n_resamples=300).set_index("s").sort_index()
    pd.testing.assert_frame_equal(first, second)


def test_estimate_groups_on_the_same_questions_share_their_resamples() -> None:
    from fqa_analysis.core.compare import estimate

    rows = _estimate_rows()
    twin = rows[rows["s"] == "a"].assign(s="a2")
    table = estimate(pd.concat([rows, twin]), ["s"], n_resamples=300).set_index("s")
    # the same outcomes under the same draws: the same interval, to the last bit
    assert table.loc["a", ["ci_low", "ci_high"]].tolist() == table.loc["a2", ["ci_low", "ci_high"]].tolist()


def test_estimate_refuses_a_question_twice_in_a_group() -> None:
    from fqa_analysis.core.compare import estimate

    rows = _estimate_rows()
    with pytest.raises(ValueError, match="twice in one group"):
        estimate(pd.concat([rows, rows]), ["s"])
    with pytest.raises(ValueError, match="no column"):
        estimate(rows, ["rqa"])


def test_a_p_at_the_bootstraps_floor_is_shown_as_a_bound() -> None:
    # group a: "new" gains on half the questions and never loses, so no resample is as extreme:
    # p = 1 / (B + 1) exactly, and Holm over two doubles it; group b: no difference, p = 1
    from fqa_analysis.core.report import comparison_table, holm_p_text

    cmp = compare(_two_groups(), system="s", baseline="base", within=["g"], n_resamples=999)
    assert cmp.table.loc[("a", "new"), "p_value"] == pytest.approx(1 / 1000)
    shown = comparison_table(cmp, wtl=False, raw_p=True)  # B read from the Comparison
    assert shown.loc[("a", "new"), ["p", "p (Holm)"]].tolist() == ["≤ 0.00100", "≤ 0.00200"]
    assert shown.loc[("b", "new"), ["p", "p (Holm)"]].tolist() == ["1.00", "1.00"]
    # a table without its Comparison: the raw p needs its B (the project's default is 10,000),
    # the Holm p carries its own mark (p_holm_bound, computed with the comparison's B)
    shown = comparison_table(cmp.table, wtl=False, raw_p=True).loc[("a", "new"), ["p", "p (Holm)"]]
    assert shown.tolist() == ["0.00100", "≤ 0.00200"]
    assert holm_p_text(cmp.table.loc[("a", "new")], n_resamples=None) == "≤ 0.0020"


def test_a_holm_p_carried_from_a_p_at_the_floor_is_a_bound_too() -> None:
    # Holm over [1, 1, 2] / (B + 1): the adjusted values are 3, 3, 3 / (B + 1) (the running
    # maximum carries 3 / (B + 1) to the third row, whose own term is 2 / (B + 1)): all bounds
    from fqa_analysis.core.stats import holm, holm_bound

    floor = 1 / 10_001
    p = [floor, floor, 2 * floor]
    assert holm(p) * 10_001 == pytest.approx([3, 3, 3])
    assert holm_bound(p, floor).tolist() == [True, True, True]
    # [1, 3] / (B + 1): the second row's own term 3 / (B + 1) exceeds 2 / (B + 1): an estimate
    assert holm_bound([floor, 3 * floor], floor).tolist() == [True, False]
    # a tie between a carried bound and an estimate is the estimate: [1, 1, 2] over four rows
    # -> terms 4, 3, 4 (the third row's 2 x 2): the value 4 / (B + 1) is attained exactly
    assert holm_bound([floor, floor, 2 * floor, 0.5], floor).tolist() == [True, True, False, False]
    # a value capped at 1 is 1: no bound is written
    assert not holm_bound([floor, 1.0], floor)[1]


def test_a_comparison_saved_as_json_reads_back_equal_and_words_its_verdicts() -> None:
    import json

    from fqa_analysis.core.compare import Comparison, compare

    # b is right on all 40 questions where a is right on 20: better; c is a, question for question
    a = [1, 0] * 20
    out = pd.DataFrame(
        {
            "sys": ["a"] * 40 + ["b"] * 40 + ["c"] * 40,
            "domain": "D",
            "split": "test",
            "question_id": list(range(40)) * 3,
            "correct": a + [1] * 40 + a,
        }
    )
    cmp = compare(out, system="sys", baseline="a", n_resamples=200)
    back = Comparison.from_dict(json.loads(json.dumps(cmp.to_dict())))
    assert back == cmp
    assert back.signature() == cmp.signature()
    verdicts = cmp.verdicts().to_dict()
    assert verdicts["b"] == "better"  # delta +0.5, Holm p at the bootstrap's floor
    assert verdicts["c"].startswith("not told apart (MDE ")  # delta 0


def _seeded(spread: int) -> pd.DataFrame:
    """300 questions; a (one seed) right on half; b's seeds on the first 165 - spread, 165, 165 + spread."""
    rows = []
    for q in range(300):
        rows.append({"s": "a", "seed": 0, "domain": "D", "split": "test", "question_id": q, "correct": q % 2})
        for k, right in enumerate([165 - spread, 165, 165 + spread]):
            rows.append(
                {
                    "s": "b",
                    "seed": k,
                    "domain": "D",
                    "split": "test",
                    "question_id": q,
                    "correct": int(q < right),
                }
            )
    return pd.DataFrame(rows)


def test_resampling_seeds_tells_a_difference_apart_only_beyond_the_seeds_spread() -> None:
    # b beats a by 5 points on the seed mean, whatever the spread between b's seeds
    tight, loose = _seeded(0), _seeded(60)
    for outcomes in (tight, loose):
        plain = compare(outcomes, system="s", baseline="a", n_resamples=2000)
        assert plain.table["delta"].iloc[0] == pytest.approx(0.05)
        assert plain.seeds == "mean per question"
    seeded_tight = compare(tight, system="s", baseline="a", n_resamples=2000, resample_seeds=True)
    seeded_loose = compare(loose, system="s", baseline="a", n_resamples=2000, resample_seeds=True)
    # identical seeds: nothing to resample, the same test as the seed mean's
    assert seeded_tight.table["p_value"].iloc[0] == pytest.approx(
        compare(tight, system="s", baseline="a", n_resamples=2000).table["p_value"].iloc[0]
    )
    # seeds 35%, 55%, 75%: a seed draw moves b by up to 20 points, so +5 is not told apart
    assert seeded_loose.table["p_value"].iloc[0] > 0.3
    assert seeded_loose.verdicts().iloc[0].startswith("not told apart")
    assert seeded_loose.seeds == "resampled (two-level bootstrap)"
    assert "seeds:resampled (two-level bootstrap)" in seeded_loose.signature()


def test_resampling_seeds_needs_every_seed_on_every_question() -> None:
    outcomes = _seeded(30)
    with pytest.raises(ValueError, match="every seed needs an outcome on every question"):
        compare(outcomes.drop(index=outcomes.index[-1]), system="s", baseline="a", resample_seeds=True)
    with pytest.raises(ValueError, match="resample_seeds needs a seeds column"):
        compare(outcomes.drop(columns="seed"), system="s", baseline="a", resample_seeds=True)


def test_a_comparison_table_shows_the_seed_resampled_holm_p_of_each_of_its_rows() -> None:
    from fqa_analysis.core.report import comparison_table, p_text

    loose = _seeded(60)
    plain = compare(loose, system="s", baseline="a", n_resamples=2000)
    seeded = compare(loose, system="s", baseline="a", n_resamples=2000, resample_seeds=True)
    shown = comparison_table(plain, wtl=False, seeds_resampled=seeded)
    assert shown.columns[-1] == "p (Holm), seeds resampled"
    # three significant digits, as the table's own Holm p
    assert shown.iloc[0, -1] == p_text(seeded.table["p_holm"].iloc[0], 3)
    assert float(shown.iloc[0, -1]) > 0.3  # not the plain test's p (seeds 35%, 55%, 75% right)
    assert "p (Holm), seeds resampled" not in comparison_table(plain).columns
