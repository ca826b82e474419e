from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fqa_analysis import data
from fqa_analysis.models.reranker.pairs import (
    RatedPair,
    feedback_training_sets,
    holdout_by_question,
    pseudo_rated_pairs,
    training_examples,
    training_prior,
)


def _items(tiny: Path, split: str) -> list[data.FeedbackSplit]:
    return [data.load_feedback_split(tiny, d, split) for d in data.FEEDBACK_DOMAINS]


def test_holdout_is_grouped_by_question_and_stratified(tiny_data: Path) -> None:
    items = [it for s in _items(tiny_data, "valid") for it in s.items]  # 4 domains x 2 questions x 2 items
    train, held = holdout_by_question(items, fraction=0.2, seed=0)
    assert len(train) + len(held) == len(items)
    held_q = {(it.domain, it.question) for it in held}
    assert not held_q & {(it.domain, it.question) for it in train}
    # round(0.2 * 2) = 0, raised to one question per domain: 4 questions, 2 items each.
    assert len(held_q) == 4 and len(held) == 8
    again, _ = holdout_by_question(items, fraction=0.2, seed=0)
    assert [it.item_id for it in again] == [it.item_id for it in train]


def test_available_protocol_uses_who_train_and_all_valid(tiny_data: Path) -> None:
    train = [data.load_feedback_split(tiny_data, "WHO", "train")]
    fit, select = feedback_training_sets("available", train, _items(tiny_data, "valid"))
    assert len(fit) + len(select) == 4 + 16
    assert {p.source for p in fit} == {"feedback"}
    with pytest.raises(ValueError, match="missing"):
        feedback_training_sets("paper", train, _items(tiny_data, "valid"))


def test_training_prior_averages_the_training_items_only(tiny_data: Path) -> None:
    train = [data.load_feedback_split(tiny_data, "WHO", "train")]
    valid = _items(tiny_data, "valid")
    # every item of the tiny data is rated (Excellent, Acceptable) in some order
    assert training_prior("available", train, valid).tolist() == [0.0, 0.0, 0.5, 0.5]
    # WHO train item 2 becomes (Bad, Bad); the held-out items become Bad too, and must not count
    fit, _ = holdout_by_question([it for s in [*train, *valid] for it in s.items], 0.2, 0)
    fit_ids = {(it.domain, it.split, it.item_id) for it in fit}

    def bad(split: data.FeedbackSplit, only: int | None) -> data.FeedbackSplit:
        items = tuple(
            replace(it, ratings=("Bad", "Bad"))
            if ((it.domain, it.split, it.item_id) not in fit_ids and only is None) or it.item_id == only
            else it
            for it in split.items
        )
        return replace(split, items=items)

    # 10 training items: 9 x (0, 0, .5, .5) and one (1, 0, 0, 0), each item one vote
    prior = training_prior("available", [bad(train[0], 2)], [bad(s, None) for s in valid])
    assert prior.round(6).tolist() == [0.1, 0.0, 0.45, 0.45]


def test_pseudo_ratings_gold_excellent_top_non_gold_bad(tiny_data: Path) -> None:
    split = data.load_qa_split(tiny_data, "WHO", "train")  # q0 gold 0, q1 gold 1
    pairs = pseudo_rated_pairs([split], {("WHO", 0): [0, 2, 1], ("WHO", 1): [1, 0]}, per_question=1)
    assert [(p.ratings, p.passage_text.split("\n")[0]) for p in pairs] == [
        (("Excellent",), "WHO page 0"),
        (("Bad",), "WHO page 2"),
        (("Excellent",), "WHO page 1"),
        (("Bad",), "WHO page 0"),
    ]


def test_majority_tie_goes_to_the_lower_rating() -> None:
    pair = RatedPair("WHO", "q", "a", ("Bad", "Excellent"), "feedback")
    (example,) = training_examples([pair], "ce_majority")
    assert example[2].tolist() == [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="unknown loss"):
        training_examples([pair], "mse")


def test_negatives_are_drawn_from_the_top_non_gold_only() -> None:
    from fqa_analysis.models.reranker.pairs import draw_negatives

    ranked = [4, 9, 2, 7, 1, 3, 8]  # gold 9 is second
    for seed in range(20):
        drawn = draw_negatives(ranked, gold=9, pool=4, n=2, seed=[seed])
        assert len(drawn) == 2 and set(drawn) <= {4, 2, 7, 1}  # the top 4 non-gold
        assert drawn == [pid for pid in ranked if pid in drawn]  # kept in ranking order
    assert draw_negatives(ranked, 9, 4, 2, [3]) == draw_negatives(ranked, 9, 4, 2, [3])  # seeded
    draws = {tuple(draw_negatives(ranked, 9, 4, 2, [s])) for s in range(20)}
    assert len(draws) > 1  # a draw, not always the first two
    assert draw_negatives([5, 6], gold=5, pool=3, n=3, seed=[0]) == [6]  # a small pool gives what it has
    with pytest.raises(ValueError, match="need 1 <= n <= pool"):
        draw_negatives(ranked, 9, pool=2, n=3, seed=[0])


def test_replay_sample_is_a_seeded_subset_in_order() -> None:
    from fqa_analysis.models.reranker.inputs import replay_sample

    pairs = [RatedPair("A", f"q{i}", "p", ("Bad",), "pseudo") for i in range(10)]
    out = replay_sample(pairs, 4, seed=1)
    assert len(out) == 4 and out == [p for p in pairs if p in out]
    assert out == replay_sample(pairs, 4, seed=1)
