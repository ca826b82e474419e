"""The rating scale, per-item annotator distributions, majority labels, and agreement.

Scale: Bad 0, Could be Improved 1, Acceptable 2, Excellent 3 (ordinal).

Example:
    >>> rating_distribution(["Excellent", "Acceptable"]).tolist()
    [0.0, 0.0, 0.5, 0.5]
    >>> majority_label(["Excellent", "Acceptable"])          # tie: the lower rating wins
    'Acceptable'

"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd

from fqa_analysis.data import RATING_LABELS

__all__ = [
    "LABELS",
    "LABEL_VALUES",
    "agreement",
    "example_items",
    "explanation_lengths",
    "item_ratings",
    "kl_rows",
    "label_distribution",
    "macro_f1",
    "majority_label",
    "mean_kl",
    "predicted_rating",
    "rating_distribution",
    "rating_prior",
    "rating_quality",
    "rating_spread",
    "rating_value",
    "unanimous_by_raters",
]

#: Labels worst to best; the index of a label is its value on the ordinal scale.
LABELS: tuple[str, ...] = RATING_LABELS
LABEL_VALUES: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
TieRule = Literal["lower", "higher"]


def rating_value(label: str) -> int:
    """Value of a label on the 0..3 scale.

    Raises:
        ValueError: The label is not one of the four (exact spelling).

    """
    try:
        return LABEL_VALUES[label]
    except KeyError:
        raise ValueError(
            f"unknown rating label {label!r}; the labels are {', '.join(map(repr, LABELS))}"
        ) from None


def rating_distribution(labels: Sequence[str]) -> np.ndarray:
    """Share of annotators who gave each label, in scale order (the KL training target).

    Raises:
        ValueError: No labels, or an unknown label.

    """
    if len(labels) == 0:
        raise ValueError("an item needs at least one rating to have a distribution")
    counts = np.bincount([rating_value(x) for x in labels], minlength=len(LABELS))
    dist: np.ndarray = counts / counts.sum()
    return dist


def majority_label(labels: Sequence[str], tie: TieRule = "lower") -> str:
    """The most frequent label; among tied labels the lower (default) or higher one.

    The default ``lower`` is the conservative reading: with two annotators who disagree, the
    answer is only as good as its harsher rating. Train/valid items have two ratings, so the
    rule matters there; say which one a result used.

    Example:
        >>> majority_label(["Bad", "Excellent", "Excellent"])
        'Excellent'
        >>> majority_label(["Bad", "Excellent"], tie="higher")
        'Excellent'

    """
    dist = rating_distribution(labels)
    winners = np.flatnonzero(dist == dist.max())
    if tie == "lower":
        return LABELS[int(winners[0])]
    if tie == "higher":
        return LABELS[int(winners[-1])]
    raise ValueError(f"unknown tie rule {tie!r}; use 'lower' or 'higher'")


def item_ratings(feedback: pd.DataFrame) -> pd.DataFrame:
    """Collapse a :func:`~fqa_analysis.data.feedback_frame` to one row per item.

    Returns:
        Columns ``domain, split, item_id, n_ratings, p_bad, p_could_be_improved, p_acceptable,
        p_excellent, expected_rating, majority, unanimous``.

    """
    values = feedback["rating"].map(rating_value)
    onehot = pd.get_dummies(pd.Categorical(values, categories=list(range(len(LABELS))))).astype(float)
    onehot.columns = ["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]
    keys = ["domain", "split", "item_id"]
    frame = pd.concat([feedback[keys].reset_index(drop=True), onehot.reset_index(drop=True)], axis=1)
    frame["value"] = values.to_numpy()
    grouped = frame.groupby(keys, sort=False)
    out = grouped[list(onehot.columns)].mean()
    out.insert(0, "n_ratings", grouped.size())
    out["expected_rating"] = grouped["value"].mean()
    labels = feedback.groupby(keys, sort=False)["rating"].agg(list)
    out["majority"] = labels.map(majority_label)
    out["unanimous"] = labels.map(lambda xs: len(set(xs)) == 1)
    return out.reset_index()


def rating_spread(feedback: pd.DataFrame) -> pd.Series:
    """Share of items by how far apart their annotators' ratings lie (highest minus lowest, 0..3 steps).

    Example:
        >>> fb = pd.DataFrame({"domain": "WHO", "split": "test", "item_id": [0, 0, 1, 1, 2, 2],
        ...     "rating": ["Bad", "Bad", "Bad", "Could be Improved", "Bad", "Excellent"]})
        >>> rating_spread(fb).to_dict()
        {0: 0.3333333333333333, 1: 0.3333333333333333, 2: 0.0, 3: 0.3333333333333333}
    """
    values = feedback["rating"].map(rating_value)
    spread = values.groupby([feedback["domain"], feedback["split"], feedback["item_id"]]).agg(
        lambda v: int(v.max() - v.min())
    )
    return (
        spread.value_counts(normalize=True).reindex(range(len(LABELS)), fill_value=0.0).rename_axis("steps")
    )


def unanimous_by_raters(items: pd.DataFrame) -> pd.DataFrame:
    """Share of unanimous items per number of annotators, with the split(s) each count comes from.

    Two annotators agree more often than three by chance alone, so a share pooled over both kinds
    of item mixes the two; this keeps them apart.

    Args:
        items: :func:`item_ratings` output (``n_ratings``, ``unanimous``, ``split``).

    Returns:
        One row per number of annotators: ``share`` (unanimous), ``items``, ``splits`` (comma-joined).

    Example:
        >>> items = pd.DataFrame({"split": ["train", "valid", "test", "test"], "n_ratings": [2, 2, 3, 3],
        ...                       "unanimous": [True, False, True, True]})
        >>> shares = unanimous_by_raters(items)
        >>> shares["share"].to_dict(), shares["splits"].to_dict()
        ({2: 0.5, 3: 1.0}, {2: 'train, valid', 3: 'test'})
    """
    groups = items.groupby("n_ratings")
    return pd.DataFrame(
        {
            "share": groups["unanimous"].mean().astype(float),
            "items": groups.size().astype(int),
            "splits": groups["split"].agg(lambda s: ", ".join(dict.fromkeys(s))),
        }
    ).rename_axis("annotators")


def _pairwise_agreement(groups: list[list[int]]) -> float:
    agree = total = 0
    for values in groups:
        for a, b in combinations(values, 2):
            agree += a == b
            total += 1
    return agree / total if total else float("nan")


def agreement(feedback: pd.DataFrame, by: Sequence[str] = ("domain", "split")) -> pd.DataFrame:
    """Inter-annotator agreement per group.

    Columns: ``items``, ``ratings_per_item`` (most common count), ``unanimous`` (share of items
    whose annotators all agree), ``pairwise`` (share of agreeing annotator pairs) and
    ``alpha_ordinal`` (Krippendorff's alpha, ordinal metric, from the ``krippendorff``
    package). Annotator positions are not identities, which alpha does not need: it only
    compares values within an item.
    """
    rows = []
    for key, group in feedback.groupby(list(by), sort=False):
        per_item: pd.Series = group.groupby("item_id", sort=False)["rating"].agg(list)
        per_item = per_item.map(lambda xs: [rating_value(x) for x in xs])
        width = max(len(v) for v in per_item)
        matrix = np.full((width, len(per_item)), np.nan)
        for j, values in enumerate(per_item):
            matrix[: len(values), j] = values
        alpha = krippendorff.alpha(
            reliability_data=matrix,
            level_of_measurement="ordinal",
            value_domain=list(range(len(LABELS))),
        )
        key_t = key if isinstance(key, tuple) else (key,)
        rows.append(
            (
                *key_t,
                len(per_item),
                int(per_item.map(len).mode().iloc[0]),
                float(np.mean([len(set(v)) == 1 for v in per_item])),
                _pairwise_agreement(list(per_item)),
                float(alpha),
            )
        )
    return pd.DataFrame(
        rows, columns=[*by, "items", "ratings_per_item", "unanimous", "pairwise", "alpha_ordinal"]
    )


def label_distribution(feedback: pd.DataFrame, by: Sequence[str] = ("domain", "split")) -> pd.DataFrame:
    """Share of each label among all ratings of a group (rows: groups; columns: labels, ``n``).

    Example:
        >>> fb = pd.DataFrame({"domain": "WHO", "split": "test",
        ...                    "rating": ["Bad", "Excellent", "Excellent", "Acceptable"]})
        >>> label_distribution(fb).iloc[0].tolist()
        [0.25, 0.0, 0.25, 0.5, 4.0]
    """
    for label in feedback["rating"].unique():
        rating_value(label)  # refuse unknown labels before counting
    counts = pd.crosstab([feedback[c] for c in by], pd.Categorical(feedback["rating"], categories=LABELS))
    counts = counts.reindex(columns=list(LABELS), fill_value=0)
    shares = counts.div(counts.sum(axis=1), axis=0)
    shares["n"] = counts.sum(axis=1)
    shares.columns.name = None
    return shares


def explanation_lengths(feedback: pd.DataFrame) -> pd.DataFrame:
    """Add ``words`` (whitespace-separated tokens of the explanation) to a feedback frame.

    Example:
        >>> explanation_lengths(pd.DataFrame({"explanation": ["Gives links.", "  "]}))["words"].tolist()
        [2, 0]
    """
    return feedback.assign(words=feedback["explanation"].str.split().str.len().astype(int))


def example_items(feedback: pd.DataFrame, n: int = 3, seed: int = 0) -> pd.DataFrame:
    """Draw ``n`` items (seeded) with all their ratings and explanations side by side.

    Returns:
        One row per item: ``domain, split, question, passage_text, ratings, explanations``
        (the last two are lists, annotator order kept).
    """
    keys = ["domain", "split", "item_id"]
    items = feedback[keys].drop_duplicates()
    picked = items.sample(n=min(n, len(items)), random_state=seed)
    chosen = feedback.merge(picked, on=keys)
    out = chosen.groupby(keys, sort=False).agg(
        question=("question", "first"),
        passage_text=("passage_text", "first"),
        ratings=("rating", list),
        explanations=("explanation", list),
    )
    return out.reset_index().drop(columns="item_id")


def macro_f1(true: Sequence[int], pred: Sequence[int], n_classes: int = len(LABELS)) -> float:
    """Unweighted mean of per-class F1 over the classes that occur in ``true`` or ``pred``.

    Example:
        >>> round(macro_f1([0, 0, 3, 3], [0, 3, 3, 3]), 4)  # F1(0) = 2/3, F1(3) = 0.8
        0.7333
    """
    t, p = np.asarray(true), np.asarray(pred)
    scores = []
    for c in range(n_classes):
        tp = int(np.sum((t == c) & (p == c)))
        fp = int(np.sum((t != c) & (p == c)))
        fn = int(np.sum((t == c) & (p != c)))
        if tp + fp + fn == 0:
            continue
        scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores)) if scores else float("nan")


def predicted_rating(predictions: pd.DataFrame) -> pd.Series:
    """Each row's most likely rating (the argmax of its ``p_bad .. p_excellent``; ties to the lower).

    Example:
        >>> frame = pd.DataFrame({"p_bad": [0.5, 0.1], "p_could_be_improved": 0.0,
        ...     "p_acceptable": [0.0, 0.2], "p_excellent": [0.5, 0.7]})
        >>> predicted_rating(frame).tolist()
        ['Bad', 'Excellent']
    """
    columns = ["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]
    picks = predictions[columns].to_numpy(dtype=float).argmax(axis=1)
    return pd.Series([LABELS[k] for k in picks], index=predictions.index, name="rating")


def rating_prior(ratings: Sequence[Sequence[str]]) -> np.ndarray:
    """The average rating distribution of items (each item's annotators weigh as one item).

    What a model that learned nothing about the pair would predict: the constant every rating
    model is judged against.

    Example:
        >>> rating_prior([("Bad", "Bad"), ("Excellent", "Acceptable")]).tolist()
        [0.5, 0.0, 0.25, 0.25]
    """
    return np.asarray(np.mean([rating_distribution(r) for r in ratings], axis=0))


def kl_rows(target: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """KL(target || predicted) of every row in nats (0 log 0 = 0; predictions floored at 1e-12).

    Example:
        >>> target, predicted = np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[0.25, 0.75], [1.0, 0.0]])
        >>> kl_rows(target, predicted).round(4).tolist()
        [0.1438, 0.0]
    """
    t = np.asarray(target, dtype=float)
    p = np.maximum(np.asarray(predicted, dtype=float), 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(t > 0, t * (np.log(t) - np.log(p)), 0.0)
    out: np.ndarray = terms.sum(axis=1)
    return out


def mean_kl(target: np.ndarray, predicted: np.ndarray) -> float:
    """Mean over rows of :func:`kl_rows`.

    Example:
        >>> round(mean_kl(np.array([[0.5, 0.5]]), np.array([[0.25, 0.75]])), 4)
        0.1438
    """
    return float(kl_rows(target, predicted).mean())


def rating_quality(
    predicted: np.ndarray, annotators: np.ndarray, majority: Sequence[str], bins: int = 10
) -> dict[str, float]:
    """How well predicted rating distributions match the annotators.

    Args:
        predicted: (items, 4) predicted P(y), scale order Bad .. Excellent.
        annotators: (items, 4) annotator rating distributions.
        majority: Majority label per item (state its tie rule where shown).
        bins: Bins of the calibration error.

    Returns:
        ``accuracy`` (argmax = majority), ``macro_f1``, ``kl`` (mean KL(annotators || predicted),
        nats), and ``ece_excellent``: the count-weighted mean |predicted P(Excellent) - share of
        annotators who said Excellent| over equal-width bins of the prediction (calibration
        against the annotators' own spread, not a single label).

    Example:
        >>> pred = np.array([[0.1, 0.1, 0.1, 0.7], [0.7, 0.1, 0.1, 0.1]])
        >>> ann = np.array([[0.0, 0.0, 1/3, 2/3], [1.0, 0.0, 0.0, 0.0]])
        >>> q = rating_quality(pred, ann, ["Excellent", "Bad"], bins=10)
        >>> q["accuracy"], round(q["ece_excellent"], 4)
        (1.0, 0.0667)
    """
    pred = np.asarray(predicted, dtype=float)
    ann = np.asarray(annotators, dtype=float)
    truth = [rating_value(m) for m in majority]
    guess = pred.argmax(axis=1)
    conf, share = pred[:, 3], ann[:, 3]
    which = np.minimum((conf * bins).astype(int), bins - 1)
    n = np.bincount(which, minlength=bins)
    gap = np.abs(
        np.bincount(which, weights=conf, minlength=bins) - np.bincount(which, weights=share, minlength=bins)
    )
    return {
        "accuracy": float(np.mean(guess == np.asarray(truth))),
        "macro_f1": macro_f1(truth, guess.tolist()),
        "kl": mean_kl(ann, pred),
        "ece_excellent": float(gap.sum() / n.sum()),
    }
