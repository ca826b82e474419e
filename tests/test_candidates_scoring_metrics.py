from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.core.candidates import CANDIDATE_COLUMNS, validate_candidates
from fqa_analysis.core.metrics import accuracy_by_test_set, accuracy_table, overall_accuracy, recall_at_k
from fqa_analysis.core.scoring import combined_score, expected_rating_score, select_top1
from fqa_analysis.errors import DataError


def _table(reranker: str = "r") -> pd.DataFrame:
    """Two questions of domain A, one of domain B, k=3.

    A/0: gold at rank 2. RQA alone picks rank 1 (wrong); the reranker lifts rank 2 (right).
    A/1: gold at rank 1, scores tie after reranking -> tie goes to rank 1 (right).
    B/0: gold not in the top 3 -> wrong whatever happens.
    """
    rows = []
    spec = {
        ("A", 0): [(10, 0.5, 0.1, False), (11, 0.3, 0.9, True), (12, 0.1, 0.2, False)],
        ("A", 1): [(20, 0.4, 0.5, True), (21, 0.3, 0.6, False), (22, 0.2, 0.0, False)],
        ("B", 0): [(30, 0.6, 0.9, False), (31, 0.2, 0.9, False), (32, 0.1, 0.9, False)],
    }
    for (domain, qid), cands in spec.items():
        for rank, (pid, p_rqa, p_exc, gold) in enumerate(cands, start=1):
            rest = (1 - p_exc) / 3
            probs = [rest, rest, rest, p_exc] if reranker != "none" else [np.nan] * 4
            rows.append(
                ("available", "bm25", reranker, 0, domain, "test", qid, "q", pid, rank, p_rqa, *probs, gold)
            )
    return pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)


def test_validate_accepts_contract_and_returns_k() -> None:
    assert validate_candidates(_table()) == 3
    assert validate_candidates(_table("none")) == 3


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda df: df.drop(columns="p_rqa"), "missing column"),
        (lambda df: df.drop(index=0), "2 candidate rows where the rest of the table has k=3"),
        (lambda df: df.assign(rqa_rank=[1, 1, 3] * 3), "rqa_rank is not 1..3"),
        (lambda df: df.assign(is_gold=[True] * 9), "more than one gold row"),
        (lambda df: df.assign(p_excellent=0.99), "do not sum to 1"),
    ],
)
def test_validate_rejects_broken_tables(mutate: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        validate_candidates(mutate(_table()))  # type: ignore[operator]


def test_scores_by_hand() -> None:
    df = _table()
    # A/0 rank 2: 0.3 + 0.9 = 1.2; expected rating = (0*0.0333+1*0.0333+2*0.0333+3*0.9)/3 = 0.9333
    assert combined_score(df).iloc[1] == pytest.approx(1.2)
    assert expected_rating_score(df).iloc[1] == pytest.approx((0.1 / 3 + 0.2 / 3 + 2.7) / 3)
    assert combined_score(df, weight=0.25).iloc[1] == pytest.approx(0.75 * 0.3 + 0.25 * 0.9)
    assert combined_score(_table("none")).tolist() == _table("none")["p_rqa"].tolist()
    with pytest.raises(ValueError, match="weight"):
        combined_score(df, weight=1.5)


def test_select_top1_and_tie_rule() -> None:
    out = select_top1(_table()).set_index(["domain", "question_id"])
    # A/0: 0.6, 1.2, 0.3 -> rank 2, gold.
    assert out.loc[("A", 0), "rqa_rank"] == 2 and out.loc[("A", 0), "correct"]
    # A/1: 0.9, 0.9, 0.2 -> tie, rank 1 wins, gold.
    assert out.loc[("A", 1), "rqa_rank"] == 1 and out.loc[("A", 1), "correct"]
    assert not out.loc[("B", 0), "correct"] and not out.loc[("B", 0), "gold_in_topk"]
    alone = select_top1(_table("none")).set_index(["domain", "question_id"])
    assert alone["correct"].tolist() == [False, True, False]


def test_accuracy_micro_macro_by_hand() -> None:
    outcomes = pd.concat([select_top1(_table()), select_top1(_table("none"))])
    per_set = accuracy_by_test_set(outcomes).set_index(["reranker", "domain"])["accuracy"]
    assert per_set[("r", "A")] == 1.0 and per_set[("r", "B")] == 0.0
    assert per_set[("none", "A")] == 0.5
    micro = overall_accuracy(outcomes, "micro").set_index("reranker")["accuracy"]
    macro = overall_accuracy(outcomes, "macro").set_index("reranker")["accuracy"]
    assert micro["r"] == pytest.approx(2 / 3) and macro["r"] == pytest.approx(0.5)
    assert micro["none"] == pytest.approx(1 / 3) and macro["none"] == pytest.approx(0.25)
    table = accuracy_table(outcomes).set_index("reranker")
    assert list(table.columns[-4:]) == ["A", "B", "overall (micro)", "overall (macro)"]
    assert table.loc["r", "overall (macro)"] == pytest.approx(0.5)


def test_recall_at_k() -> None:
    df = _table("none")
    assert recall_at_k(df, 1)["correct"].tolist() == [False, True, False]
    assert recall_at_k(df, 2)["correct"].tolist() == [True, True, False]
    with pytest.raises(ValueError):
        recall_at_k(df, 0)


def test_recall_curve_and_ranking_metrics_by_hand() -> None:
    from fqa_analysis.core.metrics import ranking_metrics, recall_curve

    ranks = pd.DataFrame({"rqa": ["a"] * 4 + ["b"] * 2, "gold_rank": [1, 2, 5, 11, 3, 1]})
    curve = recall_curve(ranks, [1, 2, 10]).set_index(["rqa", "k"])["recall"]
    assert curve[("a", 1)] == 0.25 and curve[("a", 2)] == 0.5 and curve[("a", 10)] == 0.75
    assert curve[("b", 2)] == 0.5
    m = ranking_metrics(pd.Series([2, 11]))
    assert m["ndcg@10"] == pytest.approx((1 / np.log2(3)) / 2)
    assert m["p@1"] == 0.0 and m["recall@5"] == 0.5
