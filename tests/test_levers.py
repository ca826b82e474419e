"""The explain stage's adoption rule (core.levers.policy_misses, stages.explain.adopt_policy)."""

import math

import pandas as pd

from fqa_analysis.core.levers import policy_misses
from fqa_analysis.stages.explain import adopt_policy


def _levers() -> pd.DataFrame:
    # bars: Bad 0.7 (humans), similarity 0.46 (retrieval), ROUGE-L 0.22 (template)
    return pd.DataFrame(
        {
            "lever": ["greedy", "p1", "p2", "p3", "reference: template", "reference: retrieval_same_rating"],
            "chosen": [False, True, False, False, False, False],
            "policy": [None, "every row", "every row", "where greedy disagrees", "", ""],
            "consistent_Bad": [0.9, 0.8, 0.69, math.nan, 1.0, 0.8],
            "embedding_sim": [0.5, 0.47, 0.48, 0.459, 0.26, 0.46],
            "rouge_l": [0.3, 0.225, 0.219, 0.23, 0.22, 0.19],
            "opening_share": [0.3, 0.17, 0.07, 0.24, 0.3, 0.02],
        }
    )


def test_policy_misses_names_each_missed_bar_and_skips_non_policies() -> None:
    misses = policy_misses(_levers(), {"Bad": 0.7, "overall": 0.6})
    # p2: 0.69 < 0.7 and 0.219 < 0.22; p3: NaN Bad does not block, 0.459 < 0.46
    assert misses == [None, [], ["consistent_Bad", "rouge_l"], ["embedding_sim"], None, None]


def test_adopt_policy_takes_the_qualifying_row_even_when_another_opens_less() -> None:
    # p2 has the lowest opening share but misses two bars; p1 is the only row that qualifies
    assert adopt_policy(_levers(), {"Bad": 0.7}) == "p1"
    # with a lower Bad bar p2 still misses ROUGE-L
    assert adopt_policy(_levers(), {"Bad": 0.5}) == "p1"


def test_a_policy_must_write_no_more_nonwords_than_greedy() -> None:
    levers = _levers().assign(no_nonword=[0.95, 0.96, 0.9, 0.95, 1.0, 0.99])
    # p1 keeps 0.96 >= greedy's 0.95; p3 ties greedy (0.95 is not below it)
    assert policy_misses(levers, {"Bad": 0.7})[:4] == [
        None,
        [],
        ["consistent_Bad", "rouge_l", "no_nonword"],
        ["embedding_sim"],
    ]
    levers.loc[1, "no_nonword"] = 0.94  # p1 now writes more non-words than greedy: nothing qualifies
    assert adopt_policy(levers, {"Bad": 0.7}) is None
    # a table from before the column (no no_nonword) applies no such bar
    assert adopt_policy(levers.drop(columns="no_nonword"), {"Bad": 0.7}) == "p1"


def test_missing_reference_row_does_not_apply_its_bar() -> None:
    levers = _levers()
    levers = levers[levers["lever"] != "reference: template"].reset_index(drop=True)
    assert policy_misses(levers, {"Bad": 0.5})[:4] == [None, [], [], ["embedding_sim"]]
    assert adopt_policy(levers, {"Bad": 0.5}) == "p2"
