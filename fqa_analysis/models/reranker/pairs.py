"""Training data of the feedback rerankers (pure: no torch, no model).

* Which feedback a protocol trains on (ARCHITECTURE.md#training-protocols): ``paper`` = every
  domain's feedback_train, model selection on feedback_valid; ``available`` = WHO feedback_train +
  the four feedback_valid files, model selection on a held-out 20% of those questions (grouped by
  question, stratified by domain, fixed seed). Test files are never used.
* The target of each loss: ``kl`` = the annotators' rating distribution; ``ce_annotator`` = one
  one-hot example per annotator rating; ``ce_majority`` = the one-hot majority label (ties to the
  lower rating, :func:`fqa_analysis.core.ratings.majority_label`).
* Pseudo-ratings for the vanilla reranker (no feedback): from the QA train sets, the gold passage
  is rated Excellent and negatives drawn from an RQA's top non-gold candidates Bad
  (:func:`draw_negatives`).

Example:
    >>> item = RatedPair("WHO", "q", "a", ("Excellent", "Acceptable"), "feedback")
    >>> [t.tolist() for _, _, t in training_examples([item], "kl")]
    [[0.0, 0.0, 0.5, 0.5]]
    >>> [t.tolist() for _, _, t in training_examples([item], "ce_annotator")]
    [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
    >>> [t.tolist() for _, _, t in training_examples([item], "ce_majority")]
    [[0.0, 0.0, 1.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fqa_analysis.core.ratings import LABELS, majority_label, rating_distribution, rating_prior, rating_value
from fqa_analysis.data import FEEDBACK_DOMAINS, FeedbackItem, FeedbackSplit, QASplit

__all__ = [
    "LOSSES",
    "FeedbackExperiment",
    "Loss",
    "RatedPair",
    "draw_negatives",
    "feedback_experiments",
    "feedback_item_sets",
    "feedback_training_sets",
    "holdout_by_question",
    "pseudo_rated_pairs",
    "question_fraction",
    "question_groups",
    "random_removal",
    "training_examples",
    "training_prior",
]


Loss = Literal["kl", "ce_annotator", "ce_majority"]


LOSSES: tuple[str, ...] = ("kl", "ce_annotator", "ce_majority")


@dataclass(frozen=True)
class RatedPair:
    """A (question, passage) pair with its ratings, from feedback or pseudo-rated QA data."""

    domain: str
    question: str
    passage_text: str
    ratings: tuple[str, ...]
    source: str


def _pair(item: FeedbackItem) -> RatedPair:
    return RatedPair(item.domain, item.question, item.passage.text, item.ratings, "feedback")


def holdout_by_question(
    items: Sequence[FeedbackItem], fraction: float = 0.2, seed: int = 0
) -> tuple[list[FeedbackItem], list[FeedbackItem]]:
    """Split items into (train, held-out), whole questions at a time, stratified by domain.

    In every domain ``round(fraction * questions)`` questions (at least one when the domain has
    two or more) are drawn with a generator seeded by ``seed``; all items of a drawn question
    are held out, so no question is on both sides.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    rng = np.random.default_rng(seed)
    held: set[tuple[str, str]] = set()
    for domain in sorted({it.domain for it in items}):
        questions = sorted({it.question for it in items if it.domain == domain})
        n = round(fraction * len(questions))
        if len(questions) >= 2:
            n = min(max(n, 1), len(questions) - 1)
        for i in rng.choice(len(questions), size=n, replace=False):
            held.add((domain, questions[int(i)]))
    train = [it for it in items if (it.domain, it.question) not in held]
    select = [it for it in items if (it.domain, it.question) in held]
    return train, select


def feedback_item_sets(
    protocol: str,
    train: Sequence[FeedbackSplit],
    valid: Sequence[FeedbackSplit],
    fraction: float = 0.2,
    seed: int = 0,
) -> tuple[list[FeedbackItem], list[FeedbackItem]]:
    """The (training, model-selection) feedback items of a protocol (ARCHITECTURE.md#training-protocols).

    Rerankers and explainers share this split, so neither ever selects on items the other
    trained on.

    Args:
        protocol: ``paper`` or ``available``.
        train: The feedback_train splits that exist.
        valid: The feedback_valid splits of the four domains.
        fraction: Held-out share of questions (``available`` only).
        seed: Seed of the held-out draw (``available`` only).
    """
    if protocol == "paper":
        domains = {s.domain for s in train}
        missing = [d for d in FEEDBACK_DOMAINS if d not in domains]
        if missing:
            raise ValueError(f"the paper protocol needs feedback_train of every domain; missing: {missing}")
        return [it for s in train for it in s.items], [it for s in valid for it in s.items]
    if protocol == "available":
        pool = [it for s in train if s.domain == "WHO" for it in s.items]
        pool += [it for s in valid for it in s.items]
        return holdout_by_question(pool, fraction, seed)
    raise ValueError(f"unknown protocol {protocol!r}; use 'paper' or 'available'")


def training_prior(
    protocol: str,
    train: Sequence[FeedbackSplit],
    valid: Sequence[FeedbackSplit],
    fraction: float = 0.2,
    seed: int = 0,
) -> np.ndarray:
    """The training prior of a protocol: the average rating distribution of its training items.

    The constant a rating model trained on that feedback must beat (it predicts the same
    distribution for every pair); the chapters score it with
    :func:`~fqa_analysis.core.reranking.constant_rating_quality`. Arguments as
    :func:`feedback_item_sets`, whose training items it averages (each item weighs as one).
    """
    fit, _ = feedback_item_sets(protocol, train, valid, fraction, seed)
    return rating_prior([it.ratings for it in fit])


def feedback_training_sets(
    protocol: str,
    train: Sequence[FeedbackSplit],
    valid: Sequence[FeedbackSplit],
    fraction: float = 0.2,
    seed: int = 0,
) -> tuple[list[RatedPair], list[RatedPair]]:
    """The (training, model-selection) rated pairs of a protocol (see :func:`feedback_item_sets`)."""
    fit, select = feedback_item_sets(protocol, train, valid, fraction, seed)
    return [_pair(it) for it in fit], [_pair(it) for it in select]


def pseudo_rated_pairs(
    splits: Sequence[QASplit], negatives: dict[tuple[str, int], Sequence[int]], per_question: int = 1
) -> list[RatedPair]:
    """Pseudo-ratings from QA data: the gold passage Excellent, RQA top non-gold candidates Bad.

    Args:
        splits: QA train splits.
        negatives: For (domain, question_id), the RQA's ranked passage ids (best first).
        per_question: Bad examples per question (the first non-gold candidates).
    """
    pairs = []
    for split in splits:
        for q in split.questions:
            pairs.append(
                RatedPair(
                    split.domain, q.question, split.passages[q.passage_id].text, ("Excellent",), "pseudo"
                )
            )
            ranked = negatives.get((split.domain, q.question_id), [])
            bad = [pid for pid in ranked if pid != q.passage_id][:per_question]
            pairs += [
                RatedPair(split.domain, q.question, split.passages[pid].text, ("Bad",), "pseudo")
                for pid in bad
            ]
    return pairs


def question_groups(pairs: Sequence[RatedPair]) -> list[list[int]]:
    """Listwise groups of pseudo pairs: per question, the Excellent pair's index first, then its negatives.

    A question with no Excellent pair or no other pair forms no group (a listwise term over one
    candidate is constant). Groups keep the order in which their questions first appear.

    Example:
        >>> ps = [RatedPair("A", q, p, (r,), "pseudo") for q, p, r in
        ...       [("q1", "a", "Bad"), ("q1", "g", "Excellent"), ("q2", "g", "Excellent"),
        ...        ("q1", "b", "Bad"), ("q3", "c", "Bad")]]
        >>> question_groups(ps)
        [[1, 0, 3]]
    """
    members: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(pairs):
        members.setdefault((p.domain, p.question), []).append(i)
    groups = []
    for idx in members.values():
        gold = [i for i in idx if pairs[i].ratings == ("Excellent",)]
        if len(gold) == 1 and len(idx) > 1:
            groups.append(gold + [i for i in idx if i != gold[0]])
    return groups


def draw_negatives(ranked: Sequence[int], gold: int, pool: int, n: int, seed: Sequence[int]) -> list[int]:
    """``n`` negatives drawn without replacement from the top ``pool`` non-gold of an RQA ranking.

    Why a draw and not simply the top ``n``: the RQA's very first non-gold candidates of a FAQ
    collection are often near-duplicates of the gold (another section of the same page); drawing
    from a wider pool of hard candidates gives the reranker varied, still hard, contrasts.

    Args:
        ranked: Passage ids, best first (at least ``pool + 1`` of them when the pool allows).
        gold: The gold passage id (skipped wherever it is ranked).
        pool: How many of the top non-gold candidates to draw from.
        n: Negatives to draw (all of the pool when it has fewer).
        seed: Seed of this question's draw (e.g. ``[seed, question index]``), so the draw does not
            depend on which other questions are in the set.

    Returns:
        The drawn passage ids, in ranking order.

    Example:
        >>> draw_negatives([7, 3, 5, 9], gold=3, pool=3, n=3, seed=[0])
        [7, 5, 9]
        >>> len(draw_negatives(list(range(20)), gold=0, pool=10, n=3, seed=[0, 1]))
        3
    """
    if n < 1 or pool < n:
        raise ValueError(f"need 1 <= n <= pool, got n={n}, pool={pool}")
    candidates = [pid for pid in ranked if pid != gold][:pool]
    if len(candidates) <= n:
        return candidates
    picked = np.random.default_rng(list(seed)).choice(len(candidates), size=n, replace=False)
    return [candidates[i] for i in sorted(int(i) for i in picked)]


def training_examples(pairs: Sequence[RatedPair], loss: str) -> list[tuple[str, str, np.ndarray]]:
    """``(question, passage_text, target distribution)`` per training example for a loss."""
    out: list[tuple[str, str, np.ndarray]] = []
    eye = np.eye(len(LABELS))
    for p in pairs:
        if loss == "kl":
            out.append((p.question, p.passage_text, rating_distribution(p.ratings)))
        elif loss == "ce_annotator":
            out += [(p.question, p.passage_text, eye[rating_value(r)]) for r in p.ratings]
        elif loss == "ce_majority":
            out.append(
                (p.question, p.passage_text, eye[rating_value(majority_label(p.ratings, tie="lower"))])
            )
        else:
            raise ValueError(f"unknown loss {loss!r}; use one of {', '.join(LOSSES)}")
    return out


def question_fraction(pairs: Sequence[RatedPair], fraction: float, seed: int) -> list[RatedPair]:
    """The pairs of a seeded share of each domain's questions; nested across fractions.

    Every domain's questions are put in one order drawn from ``seed``; a fraction keeps the first
    ``round(fraction * n)`` of them (at least one), so with one seed the 10% set lies inside the
    25% set, and so on: a learning curve then measures more data, not different data. Pair order
    is kept, so ``fraction = 1`` returns ``pairs`` unchanged (and a model trained on it is the
    full model, from the cache).

    Example:
        >>> ps = [RatedPair("A", f"q{i}", "p", ("Bad",), "feedback") for i in range(10)]
        >>> len(question_fraction(ps, 0.25, 0)), question_fraction(ps, 1.0, 0) == ps
        (2, True)
        >>> set(question_fraction(ps, 0.1, 3)) <= set(question_fraction(ps, 0.5, 3))
        True
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    kept: set[tuple[str, str]] = set()
    for domain in sorted({p.domain for p in pairs}):
        questions = sorted({p.question for p in pairs if p.domain == domain})
        order = np.random.default_rng([seed, 23]).permutation(len(questions))
        n = max(1, round(fraction * len(questions)))
        kept |= {(domain, questions[int(i)]) for i in order[:n]}
    return [p for p in pairs if (p.domain, p.question) in kept]


def random_removal(pairs: Sequence[RatedPair], n: int, seed: int) -> list[RatedPair]:
    """The pairs less ``n`` drawn at random from every domain (order kept): a size-matched control.

    Example:
        >>> ps = [RatedPair(d, f"q{i}", "p", ("Bad",), "feedback") for d in "AB" for i in range(4)]
        >>> len(random_removal(ps, 3, 0))
        5
    """
    if not 0 <= n < len(pairs):
        raise ValueError(f"can remove 0..{len(pairs) - 1} of {len(pairs)} pairs, asked for {n}")
    dropped = set(np.random.default_rng([seed, 29]).choice(len(pairs), size=n, replace=False).tolist())
    return [p for i, p in enumerate(pairs) if i not in dropped]


@dataclass(frozen=True)
class FeedbackExperiment:
    """One reranker training run of the feedback-size and transfer experiments.

    Attributes:
        experiment: ``fraction`` (share of training questions), ``leave_out`` (one domain's
            feedback removed from training and model selection) or ``size_control`` (as many
            training pairs removed at random from all domains, the same selection set).
        setting: The fraction (``"0.25"``) or the domain left out (``"WHO"``).
        seed: Seed of the draw and of the training.
        fit: Training pairs.
        select: Model-selection pairs.
    """

    experiment: str
    setting: str
    seed: int
    fit: list[RatedPair]
    select: list[RatedPair]


def feedback_experiments(
    fit: Sequence[RatedPair],
    select: Sequence[RatedPair],
    fractions: Sequence[float],
    seeds: Sequence[int],
    domains: Sequence[str] = FEEDBACK_DOMAINS,
    transfer: bool = True,
) -> list[FeedbackExperiment]:
    """The runs of the learning-curve and leave-one-domain-out experiments.

    Leaving a domain out removes its pairs from training *and* model selection, so nothing of
    that domain's feedback reaches the model. The size control removes the same number of
    training pairs at random from all domains and selects on the same pairs as the leave-out run:
    the two differ only in *which* feedback is missing, which separates "this domain's feedback"
    from "less feedback".

    Raises:
        ValueError: A domain without training pairs (nothing to leave out).
    """
    runs = [
        FeedbackExperiment("fraction", f"{f:g}", s, question_fraction(fit, f, s), list(select))
        for f in fractions
        for s in seeds
    ]
    if not transfer:
        return runs
    for domain in domains:
        own = sum(p.domain == domain for p in fit)
        if own == 0:
            raise ValueError(f"no training feedback of domain {domain!r} to leave out")
        others = [p for p in fit if p.domain != domain]
        select_others = [p for p in select if p.domain != domain]
        for s in seeds:
            runs.append(FeedbackExperiment("leave_out", domain, s, others, select_others))
            runs.append(
                FeedbackExperiment("size_control", domain, s, random_removal(fit, own, s), select_others)
            )
    return runs
