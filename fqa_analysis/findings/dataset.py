"""The data chapter: what the public files hold, worded for the sentence the chapter opens with."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from fqa_analysis.core.ratings import unanimous_by_raters
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = ["answer_sentence"]


def answer_sentence(items: pd.DataFrame, train_domains: Collection[str]) -> str:
    """The chapter's answer in one sentence (at most 30 words).

    Args:
        items: Every rated item of the feedback files present
            (:func:`~fqa_analysis.core.ratings.item_ratings`: ``n_ratings``, ``unanimous``, ``split``).
        train_domains: The feedback domains whose ``feedback_train`` the data folder holds.

    Example:
        >>> items = pd.DataFrame({"split": ["train", "valid", "test", "test"], "n_ratings": [2, 2, 3, 3],
        ...                       "unanimous": [True, False, True, False]})
        >>> print(answer_sentence(items, ["WHO"]))  # doctest: +NORMALIZE_WHITESPACE
        The public files hold 4 rated answers; all their annotators agree on 50-50% of them, and the
        training feedback of Australia, CDC and UK is missing.
    """
    shares = unanimous_by_raters(items)["share"]
    lacking = [d for d in FEEDBACK_DOMAINS if d not in set(train_domains)]
    names = ", ".join(lacking[:-1]) + f" and {lacking[-1]}" if len(lacking) > 1 else "".join(lacking)
    missing = f", and the training feedback of {names} is missing" if lacking else ""
    return (
        f"The public files hold {len(items):,} rated answers; all their annotators agree on "
        f"{100 * shares.min():.0f}-{100 * shares.max():.0f}% of them{missing}."
    )
