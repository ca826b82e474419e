"""The explain stage's adoption rule over its held-out levers table.

Pure: the stage adopts a decoding with it (``stages.explain.adopt_policy``) and the explanations
chapter shows, for every policy row, which of the rule's bars it misses, so a reader sees why the
adopted row won without recomputing the rule.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["OWN_BARS", "REFERENCE_BARS", "policy_misses", "rule_bars"]

#: The reference rows whose value a policy must reach, and on which column (the issue's bars).
REFERENCE_BARS: tuple[tuple[str, str], ...] = (
    ("retrieval_same_rating", "embedding_sim"),
    ("template", "rouge_l"),
)
#: Rows of the generator's own decoding whose value a policy must reach, and on which column: the
#: share of explanations without a non-word at least greedy decoding's (a blind reading found the
#: sampled candidates less fluent than greedy, with words no text holds).
OWN_BARS: tuple[tuple[str, str], ...] = (("greedy", "no_nonword"),)


def policy_misses(levers: pd.DataFrame, human_consistency: Mapping[str, float]) -> list[list[str] | None]:
    """For each row of a levers table, the adoption rule's bars it misses (None: not a policy).

    A row with a ``policy`` must reach, for each rating, the humans' consistency (the consistency
    classifier's accuracy on held-out human explanations of that rating; a rating whose column
    is absent or NaN does not block), the rating-filtered retrieval explainer's embedding
    similarity and the template's ROUGE-L (each where its ``reference: <name>`` row is present).
    A missed bar is named by its column (``consistent_Bad``, ``embedding_sim``, ``rouge_l``).

    Example:
        >>> levers = pd.DataFrame({
        ...     "lever": ["a", "b", "reference: template"],
        ...     "policy": ["every row", "every row", ""],
        ...     "consistent_Bad": [0.9, 0.5, 1.0], "embedding_sim": [0.5, 0.5, 0.3],
        ...     "rouge_l": [0.3, 0.1, 0.2]})
        >>> policy_misses(levers, {"Bad": 0.7, "overall": 0.6})
        [[], ['consistent_Bad', 'rouge_l'], None]
    """
    policy = levers["policy"].fillna("").astype(str).to_numpy() if "policy" in levers else np.array([])
    bars = rule_bars(levers, human_consistency)
    misses: list[list[str] | None] = []
    for at in range(len(levers)):
        if not len(policy) or not policy[at]:
            misses.append(None)
            continue
        # a NaN value (e.g. a rating without held-out rows) does not block: `<` is False for NaN
        misses.append([column for column, bar in bars if float(levers[column].iloc[at]) < bar])
    return misses


def rule_bars(levers: pd.DataFrame, human_consistency: Mapping[str, float]) -> list[tuple[str, float]]:
    """The adoption rule's bars on a levers table: ``(column, value a policy must reach)``.

    Per rating with a ``consistent_<rating>`` column, the humans' consistency (a NaN does not make
    a bar); then each :data:`REFERENCE_BARS` column at its ``reference: <name>`` row, where present.
    :func:`policy_misses` checks rows against them; the chapter prints a row's margins over them.

    Example:
        >>> levers = pd.DataFrame({"lever": ["a", "reference: template"], "consistent_Bad": [0.9, 1.0],
        ...     "embedding_sim": [0.5, 0.3], "rouge_l": [0.3, 0.2]})
        >>> rule_bars(levers, {"Bad": 0.7, "overall": 0.6})
        [('consistent_Bad', 0.7), ('rouge_l', 0.2)]
    """
    bars: list[tuple[str, float]] = [
        (f"consistent_{rating}", float(human))
        for rating, human in human_consistency.items()
        if f"consistent_{rating}" in levers.columns and np.isfinite(human)
    ]
    rows = [(f"reference: {reference}", column) for reference, column in REFERENCE_BARS] + list(OWN_BARS)
    for lever, column in rows:
        if column not in levers.columns:  # a table from before the column was measured
            continue
        value = levers.loc[levers["lever"] == lever, column].to_numpy(dtype=float)
        if len(value) and np.isfinite(value[0]):
            bars.append((column, float(value[0])))
    return bars
