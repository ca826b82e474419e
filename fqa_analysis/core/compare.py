"""One way to compare systems: :func:`compare`, returning one :class:`Comparison`.

Every comparison in the book goes through :func:`compare`: per-question outcomes in a long table
(one row per system and question, optionally per training seed), a column naming the systems, a
baseline (or explicit pairs), optional groups compared separately (``within``), and the Holm
family the p-values are corrected over. It averages seeds per question, pairs the systems
question by question, runs :func:`~fqa_analysis.core.stats.paired_bootstrap` (one seeded resample
matrix shared by every system of a group, stratified by test set, +1 p-value) and Holm-corrects
over the family it was asked for, which its :meth:`Comparison.signature` names.

The table has one long schema (:data:`COLUMNS`), one row per compared system (never the baseline
against itself), indexed by the ``within`` columns and the system column.

Example:
    >>> out = pd.DataFrame({"sys": ["a"] * 4 + ["b"] * 4, "domain": "D", "split": "test",
    ...     "question_id": [0, 1, 2, 3] * 2, "correct": [0, 0, 1, 1, 1, 1, 1, 1]})
    >>> cmp = compare(out, system="sys", baseline="a", n_resamples=500)
    >>> row = cmp.table.loc["b"]
    >>> float(row["baseline_mean"]), float(row["mean"]), float(row["delta"]), int(row["wins"]), int(row["n"])
    (0.5, 1.0, 0.5, 2, 4)
    >>> cmp.family_size
    1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from fqa_analysis import __version__
from fqa_analysis.core.candidates import QUESTION_KEYS
from fqa_analysis.core.stats import (
    MDE_ALPHA,
    Average,
    BootstrapResult,
    bootstrap_means,
    holm,
    holm_bound,
    paired_bootstrap,
    seed_bootstrap,
)

__all__ = [
    "COLUMNS",
    "ITEM_KEYS",
    "N_RESAMPLES",
    "Comparison",
    "compare",
    "estimate",
    "seed_mean",
    "significance_counts",
    "verdict",
    "wide_outcomes",
]

#: Bootstrap resamples B of every CI and test a chapter prints (:func:`compare`, :func:`estimate`).
N_RESAMPLES = 10_000

#: The comparison table's columns, in order. ``n``: paired questions; ``mean`` (``ci_low``,
#: ``ci_high``): the system's mean outcome and its percentile CI; ``baseline_mean``: the
#: baseline's on the same questions; ``delta`` (``delta_ci_low``, ``delta_ci_high``): system minus
#: baseline and its percentile CI (unadjusted); ``p_value``: two-sided, shift method, +1 corrected;
#: ``p_holm``: Holm-adjusted over the comparison's family; ``p_holm_bound``: whether that value is
#: an upper bound, set by a p at the bootstrap's floor 1 / (B + 1)
#: (:func:`~fqa_analysis.core.stats.holm_bound`); ``mde``: the minimal detectable effect,
#: the smallest true |delta| the test finds at p < 0.05 / m in 80% of resamples, m the family's size
#: (the level Holm's first step asks of the smallest p: a smaller difference could not be
#: significant after the correction)
#: (:func:`~fqa_analysis.core.stats.minimal_detectable_effect`); ``wins, ties, losses``: questions where
#: the system's outcome is higher / equal / lower than the baseline's.
COLUMNS: tuple[str, ...] = (
    "baseline",
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "baseline_mean",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "p_value",
    "p_holm",
    "p_holm_bound",
    "mde",
    "wins",
    "ties",
    "losses",
)

#: Keys of the per-item tables of feedback_test (rating scores, explanation metrics).
ITEM_KEYS: tuple[str, ...] = ("domain", "item_id")

Family = Literal["table", "within"]


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """The result of :func:`compare`: the table and every convention behind it.

    Attributes:
        table: One row per compared system (schema :data:`COLUMNS`), indexed by the ``within``
            columns and the system column.
        system: The column whose values were compared.
        value: The outcome column compared.
        family: What the Holm family holds, in words (e.g. ``every reranker vs none, per rqa``).
        family_size: Comparisons in one Holm family.
        n_resamples: Bootstrap resamples B.
        seed: Seed of the resample matrix.
        confidence: Level of the percentile CIs.
        average: ``micro`` or ``macro`` over strata.
        strata: Columns questions were resampled within (empty: unstratified).
        seeds: How training seeds enter (``mean per question`` or ``none``).
        commit: The results' git commit, when the caller knows it.
        version: The fqa_analysis version that computed it.
    """

    table: pd.DataFrame
    system: str
    value: str
    family: str
    family_size: int
    n_resamples: int
    seed: int
    confidence: float
    average: str
    strata: tuple[str, ...]
    seeds: str
    commit: str | None = None
    version: str = __version__

    def signature(self) -> str:
        """A key:value line that identifies the computation, to print under a table.

        Example:
            >>> t = pd.DataFrame(columns=list(COLUMNS))
            >>> Comparison(table=t, system="s", value="correct", family="b vs a", family_size=1,
            ...     n_resamples=10, seed=0, confidence=0.95, average="micro", strata=("domain",),
            ...     seeds="none").signature().split("|")  # doctest: +NORMALIZE_WHITESPACE
            ['test:paired-bootstrap', 'p:two-sided,shift,+1', 'ci:95%-percentile,unadjusted', 'B:10',
             'seed:0', 'strata:domain', 'average:micro', 'seeds:none', 'holm:1 (b vs a)',
             'fqa_analysis:0.1.0', 'results:unknown']
        """
        fields = {
            "test": "paired-bootstrap",
            "p": "two-sided,shift,+1",
            "ci": f"{round(100 * self.confidence)}%-percentile,unadjusted",
            "B": str(self.n_resamples),
            "seed": str(self.seed),
            "strata": "/".join(self.strata) or "none",
            "average": self.average,
            "seeds": self.seeds,
            "holm": f"{self.family_size} ({self.family})",
            "fqa_analysis": self.version,
            "results": _short_commits(self.commit),
        }
        return "|".join(f"{k}:{v}" for k, v in fields.items())

    def verdicts(self, alpha: float = 0.05) -> pd.Series:
        """Each row's verdict: ``better``, ``worse`` or ``not told apart`` (:func:`verdict`)."""
        return self.table.apply(lambda row: verdict(row, alpha), axis=1).rename("verdict")

    def to_dict(self) -> dict[str, Any]:
        """The comparison as plain JSON-ready data (the table as records with its index).

        Example:
            >>> t = pd.DataFrame([{c: 1.0 for c in COLUMNS}], index=pd.Index(["b"], name="s"))
            >>> c = Comparison(table=t, system="s", value="correct", family="b vs a", family_size=1,
            ...     n_resamples=10, seed=0, confidence=0.95, average="micro", strata=(), seeds="none")
            >>> Comparison.from_dict(c.to_dict()) == c
            True
        """
        fields = {k: v for k, v in self.__dict__.items() if k != "table"}
        index = list(self.table.index.names)
        # numpy scalars as Python ones, so that json.dumps takes the record as it is
        records = [
            {k: v.item() if hasattr(v, "item") else v for k, v in row.items()}
            for row in self.table.reset_index().to_dict("records")
        ]
        return {**fields, "strata": list(self.strata), "index": index, "table": records}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Comparison:
        """The comparison :meth:`to_dict` wrote (a saved comparison read back)."""
        fields = {k: v for k, v in record.items() if k not in ("table", "index")}
        table = pd.DataFrame.from_records(record["table"]).set_index(record["index"])
        return cls(table=table, **{**fields, "strata": tuple(fields["strata"])})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comparison):
            return NotImplemented
        same_fields = all(getattr(self, k) == getattr(other, k) for k in self.__dict__ if k != "table")
        return same_fields and self.table.equals(other.table)

    __hash__ = None  # type: ignore[assignment]  # a table is not hashable


def verdict(row: Any, alpha: float = 0.05, with_mde: bool = True, higher_is_better: bool = True) -> str:
    """A comparison row in words: ``better``, ``worse`` or ``not told apart (MDE x)``.

    Better or worse where the Holm-adjusted p is below ``alpha`` (the sign of ``delta`` says which);
    otherwise not told apart, with the smallest difference the test could have found (the MDE)
    unless ``with_mde`` is False (a sentence that states the MDE already). ``higher_is_better``
    False: a measure where lower is better (a KL, an error).

    Example:
        >>> verdict({"delta": 0.02, "p_holm": 0.001, "mde": 0.01})
        'better'
        >>> verdict({"delta": -0.02, "p_holm": 0.01, "mde": 0.01})
        'worse'
        >>> verdict({"delta": 0.006, "p_holm": 0.4, "mde": 0.0159})
        'not told apart (MDE 0.0159)'
        >>> verdict({"delta": 0.006, "p_holm": 0.4, "mde": 0.0159}, with_mde=False)  # a sentence gives it
        'not told apart'
        >>> verdict({"delta": 0.04, "p_holm": 0.01}, higher_is_better=False)  # a KL that grew
        'worse'
    """
    delta, p_holm, mde = float(row["delta"]), float(row["p_holm"]), row.get("mde")
    if p_holm < alpha and delta != 0:
        return "better" if (delta > 0) == higher_is_better else "worse"
    shown = with_mde and mde is not None and pd.notna(mde)
    return "not told apart" + (f" (MDE {float(mde):.3g})" if shown else "")


def _short_commits(commit: str | None) -> str:
    """Each comma-separated commit to 12 hex digits, keeping a ``+dirty`` mark.

    Example:
        >>> _short_commits("0123456789abcdef0123+dirty,fedcba9876543210")
        '0123456789ab+dirty,fedcba987654'
    """
    if not commit:
        return "unknown"
    return ",".join(c[:12] + ("+dirty" if c.endswith("+dirty") else "") for c in commit.split(","))


def wide_outcomes(
    outcomes: pd.DataFrame, system: str, value: str = "correct", keys: Sequence[str] = tuple(QUESTION_KEYS)
) -> pd.DataFrame:
    """One row per question (index ``keys``, sorted), one column per value of ``system``.

    Raises:
        ValueError: A key or the value column is missing, a (system, question) appears twice, or
            a system lacks a question another system has (pairing would be wrong).

    Example:
        >>> long = pd.DataFrame({"s": ["a", "a", "b", "b"], "q": [0, 1, 0, 1], "v": [1, 0, 1, 1]})
        >>> wide_outcomes(long, "s", "v", ["q"]).values.tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    missing = [c for c in (*keys, system, value) if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes have no column(s) {missing} (have: {list(outcomes.columns)})")
    if outcomes.duplicated([*keys, system]).any():
        raise ValueError(
            f"outcomes hold a question twice for one {system}; average seeds first (compare(seeds='seed'))"
        )
    # rows sorted by the keys: the resample matrix draws positions, so a canonical order gives the
    # same numbers whatever order the caller's rows came in
    wide = outcomes.pivot_table(index=list(keys), columns=system, values=value, aggfunc="first")
    gaps = wide.isna().sum()
    if gaps.any():
        worst = gaps.idxmax()
        raise ValueError(
            f"{system} {worst!r} has no outcome for {int(gaps.max())} question(s) that other "
            f"values of {system} answered; compare systems on the same questions"
        )
    wide.columns.name = None
    return wide.astype(float)


def _seed_matrices(
    outcomes: pd.DataFrame, system: str, value: str, keys: Sequence[str], seeds: str
) -> dict[object, pd.DataFrame]:
    """Per value of ``system``, its outcomes as one row per question (sorted keys), one column per seed.

    Raises:
        ValueError: A seed of a system lacks a question that system's other seeds or another system
            answered (the two-level bootstrap pairs every seed with every question).
    """
    out: dict[object, pd.DataFrame] = {}
    for name, rows in outcomes.groupby(system, sort=False):
        if rows.duplicated([*keys, seeds]).any():
            raise ValueError(f"outcomes hold a question twice for one seed of {system} {name!r}")
        out[name] = rows.pivot_table(index=list(keys), columns=seeds, values=value, aggfunc="first")
    index = sorted(set().union(*(frame.index for frame in out.values())))
    for label, frame in out.items():
        if len(frame) != len(index) or frame.isna().any().any():
            raise ValueError(
                f"{system} {label!r}: every seed needs an outcome on every question the compared systems "
                "answered, to resample seeds"
            )
    return {label: frame.astype(float) for label, frame in out.items()}


def _seed_handling(seeded: bool, resampled: bool) -> str:
    """How training seeds enter a comparison, as its signature says it."""
    if resampled:
        return "resampled (two-level bootstrap)"
    return "mean per question" if seeded else "none"


def seed_mean(
    outcomes: pd.DataFrame, by: Sequence[str], value: str, seeds: str | None = "seed"
) -> pd.DataFrame:
    """Per ``by`` (system and question keys), ``value`` averaged over the ``seeds`` column.

    Unchanged when ``seeds`` is None or not a column. Groups keep their first-appearance order.

    Example:
        >>> long = pd.DataFrame({"q": [0, 0, 1], "seed": [0, 1, 0], "v": [1, 0, 1]})
        >>> seed_mean(long, ["q"], "v")["v"].tolist()
        [0.5, 1.0]
    """
    if seeds is None or seeds not in outcomes.columns:
        return outcomes
    return outcomes.groupby(list(dict.fromkeys(by)), sort=False)[value].mean().reset_index()


def compare(
    outcomes: pd.DataFrame,
    *,
    system: str,
    baseline: object | None = None,
    pairs: Sequence[tuple[object, object]] | None = None,
    within: Sequence[str] = (),
    family: Family = "table",
    describe: str | None = None,
    value: str = "correct",
    keys: Sequence[str] = tuple(QUESTION_KEYS),
    strata: Sequence[str] = ("domain", "split"),
    seeds: str | None = "seed",
    average: Average = "micro",
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    commit: str | None = None,
    resample_seeds: bool = False,
) -> Comparison:
    """Compare systems with a baseline (or explicit pairs), paired over questions, Holm over a family.

    Args:
        outcomes: Long table: ``within`` columns, ``system``, ``keys``, ``value`` and, for systems
            trained with several seeds, a ``seeds`` column.
        system: The column whose values are the compared systems (``reranker``, ``rule``, ...).
        baseline: The value of ``system`` every other value is compared with (in each group).
        pairs: Instead of ``baseline``: ``(system value, baseline value)`` pairs, each compared
            in every group.
        within: Columns whose values are compared separately (e.g. ``["rqa"]``: every reranker
            against the RQA alone within each RQA system).
        family: ``table``: Holm over every row of the table; ``within``: Holm within each group.
        describe: The family's members in words, for the signature (default: built from the
            arguments).
        value: The outcome column (1/0 accuracy, or any per-question score such as a KL).
        keys: The columns that identify a question.
        strata: Columns (a subset of ``keys``) questions are resampled within; empty for none.
        seeds: Column of training seeds; outcomes are averaged over it per question (0, 1/3, 2/3,
            1 with three seeds), so the test asks whether a system helps as trained with several
            seeds. ``None`` (or no such column): outcomes are used as they are.
        average: ``micro`` (mean over questions) or ``macro`` (mean of strata means).
        n_resamples: Bootstrap resamples B.
        seed: Seed of the resample matrix (the same for every group).
        confidence: Level of the percentile CIs.
        commit: The results' git commit (several comma-separated when the outcomes come from
            several stages), named in the signature.
        resample_seeds: Also resample each system's training seeds (a two-level bootstrap,
            :func:`~fqa_analysis.core.stats.seed_bootstrap`): the test then asks whether the
            systems differ more than another draw of seeds would make them, not only as trained
            with these seeds. Needs the ``seeds`` column and every seed on every question.

    Returns:
        The :class:`Comparison`.

    Raises:
        ValueError: Neither or both of ``baseline`` and ``pairs``; a group without the baseline;
            a strata column that is not a key; unpaired questions (see :func:`wide_outcomes`).

    Example:
        >>> out = pd.DataFrame({"g": ["x"] * 6 + ["y"] * 6, "s": (["a"] * 3 + ["b"] * 3) * 2,
        ...     "domain": "D", "split": "test", "question_id": [0, 1, 2] * 4,
        ...     "correct": [0, 0, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1]})
        >>> cmp = compare(out, system="s", baseline="a", within=["g"], n_resamples=200)
        >>> cmp.table["delta"].round(3).tolist(), cmp.family_size, list(cmp.table.index.names)
        ([1.0, -0.333], 2, ['g', 's'])
    """
    if (baseline is None) == (pairs is None):
        raise ValueError("give exactly one of baseline= (every other system against it) or pairs=")
    if not set(strata) <= set(keys):
        raise ValueError(f"strata {list(strata)} must be question keys ({list(keys)})")
    seeded = seeds is not None and seeds in outcomes.columns
    if resample_seeds and not seeded:
        raise ValueError(f"resample_seeds needs a seeds column ({seeds!r}) in the outcomes")
    # resampling seeds reads each seed's outcomes; otherwise a question's seeds are averaged first
    work = outcomes if resample_seeds else seed_mean(outcomes, [*within, system, *keys], value, seeds)
    groups = list(work.groupby(list(within), sort=False)) if within else [((), work)]
    plans = []
    for group_key, block in groups:
        present = list(dict.fromkeys(block[system]))
        todo = [(s, baseline) for s in present if s != baseline] if pairs is None else list(pairs)
        plans.append((group_key, block, present, todo))
    # The MDE is taken at the level Holm's first step asks of the family's smallest p (5% / m):
    # a true difference of the MDE is found in 80% of resamples at the level a lone comparison must meet.
    table_size = sum(len(todo) for *_, todo in plans)
    frames = []
    for group_key, block, present, todo in plans:
        labels: tuple[object, ...] = group_key if isinstance(group_key, tuple) else (group_key,)
        family_m = table_size if family == "table" else len(todo)
        where = f" in {dict(zip(within, labels, strict=True))}" if within else ""
        for base in dict.fromkeys(b for _, b in todo):
            if base not in present:
                raise ValueError(f"no {system} = {base!r} to compare with{where} (have: {present})")
            others = [s for s, b in todo if b == base]
            unknown = [s for s in others if s not in present]
            if unknown:
                raise ValueError(f"no {system} = {unknown}{where} (have: {present})")
            chosen = block[block[system].isin([base, *others])]
            boot: Callable[..., BootstrapResult]
            if resample_seeds:
                per_seed = _seed_matrices(chosen, system, value, keys, str(seeds))
                index = next(iter(per_seed.values())).index  # the questions, in their sorted order
                names = {str(c): c for c in per_seed}
                values: Any = {str(c): per_seed[c].to_numpy().T for c in [base, *others]}
                boot = seed_bootstrap
            else:
                wide = wide_outcomes(chosen, system, value, keys)
                index = wide.index
                # columns named by str(): a system value may be an int (a depth) or a float (a weight)
                names = {str(c): c for c in wide.columns}
                wide.columns = [str(c) for c in wide.columns]
                values = wide.reset_index(drop=True)[[str(base), *map(str, others)]]
                boot = paired_bootstrap
            where_rows = index.to_frame()[list(strata)].itertuples(index=False)
            labels_strata = ["/".join(map(str, row)) for row in where_rows] if strata else None
            mde_alpha = MDE_ALPHA / max(family_m, 1)
            result = boot(
                values, str(base), labels_strata, average, n_resamples, seed, confidence, mde_alpha=mde_alpha
            )
            frame = result.to_frame()
            rows = frame.drop(index=str(base)).assign(
                n=len(index), baseline_mean=frame.loc[str(base), "mean"]
            )
            rows["baseline"] = pd.Series([base] * len(rows), index=rows.index, dtype=object)
            rows.index = pd.Index([names[i] for i in rows.index], name=system)
            for col, label in zip(within, labels, strict=True):
                rows[col] = pd.Series([label] * len(rows), index=rows.index, dtype=object)
            frames.append(rows.reset_index())
    table = pd.concat(frames, ignore_index=True)
    floor = 1 / (n_resamples + 1)
    if family == "table":
        table["p_holm"] = holm(table["p_value"].tolist())
        table["p_holm_bound"] = holm_bound(table["p_value"].tolist(), floor)
        size = len(table)
    else:
        table["p_holm_bound"] = False
        for _, idx in table.groupby(list(within), sort=False).groups.items():
            table.loc[idx, "p_holm"] = holm(table.loc[idx, "p_value"].tolist())
            table.loc[idx, "p_holm_bound"] = holm_bound(table.loc[idx, "p_value"].tolist(), floor)
        size = int(table.groupby(list(within), sort=False).size().max())
    table = table.set_index([*within, system])[list(COLUMNS)]
    if describe is None:
        what = f"each other {system} vs {baseline}" if pairs is None else f"{len(pairs)} {system} pair(s)"
        per = f" per {'/'.join(within)}" if family == "within" else ""
        over = f" over every {'/'.join(within)}" if within and family == "table" else ""
        describe = f"{what}{per}{over}"
    return Comparison(
        table=table,
        system=system,
        value=value,
        family=describe,
        family_size=size,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        average=average,
        strata=tuple(strata),
        seeds=_seed_handling(seeded, resample_seeds),
        commit=commit,
    )


def significance_counts(table: pd.DataFrame, alpha: float = 0.05) -> dict[str, int]:
    """How many rows of a comparison table are significantly better, worse, or neither (Holm p).

    Example:
        >>> t = pd.DataFrame({"delta": [0.2, -0.1, 0.3], "p_holm": [0.01, 0.02, 0.4]})
        >>> significance_counts(t)
        {'better': 1, 'worse': 1, 'not significant': 1, 'rows': 3}
    """
    words = [verdict(row, alpha, with_mde=False) for _, row in table.iterrows()]
    return {
        "better": words.count("better"),
        "worse": words.count("worse"),
        "not significant": words.count("not told apart"),
        "rows": len(table),
    }


def estimate(
    outcomes: pd.DataFrame,
    by: Sequence[str] = (),
    *,
    value: str = "correct",
    keys: Sequence[str] = tuple(QUESTION_KEYS),
    strata: Sequence[str] = ("domain", "split"),
    seeds: str | None = "seed",
    average: Average = "micro",
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean of ``value`` per group of ``by``, with its percentile bootstrap CI over questions.

    The one way to a mean with its CI, under the conventions of :func:`compare`: training seeds
    are averaged per question first, questions are resampled within ``strata`` (so the CI is that
    of the ``average``), rows are taken in key order (the numbers do not depend on the input's row
    order), B = :data:`N_RESAMPLES` and one seed. Groups answering the same questions share one
    resample matrix.

    Args:
        outcomes: Long table: ``by`` columns, ``keys``, ``value`` and, optionally, ``seeds``.
        by: Columns whose value combinations are estimated separately (none: one overall mean).
        value: The outcome column (1/0 accuracy, a KL, a text metric).
        keys: The columns that identify a question (or an item).
        strata: Columns (a subset of ``keys``) questions are resampled within; empty for none.
        seeds: Column of training seeds averaged per question; None (or no such column): none.
        average: ``micro`` (mean over questions) or ``macro`` (mean of the strata's means).
        n_resamples: Bootstrap resamples B.
        seed: Seed of the resample matrix.
        confidence: Level of the percentile CI.

    Returns:
        ``by`` columns (groups in order of first appearance), ``n`` (questions), ``mean``,
        ``ci_low``, ``ci_high``.

    Raises:
        ValueError: A missing column, a strata column that is not a key, or a question twice in a
            group (without a ``seeds`` column to average it over).

    Example:
        >>> out = pd.DataFrame({"g": ["a"] * 4, "domain": "D", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "seed": [0, 0, 0, 0], "correct": [1, 1, 1, 0]})
        >>> estimate(out, ["g"], n_resamples=200)[["g", "n", "mean"]].values.tolist()
        [['a', 4, 0.75]]
    """
    missing = [c for c in (*by, *keys, value) if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes have no column(s) {missing} (have: {list(outcomes.columns)})")
    if not set(strata) <= set(keys):
        raise ValueError(f"strata {list(strata)} must be question keys ({list(keys)})")
    seeded = [seeds] if seeds is not None and seeds in outcomes.columns else []
    # only the seeds are averaged: any other repeat of a question would be averaged silently
    if outcomes.duplicated([*by, *keys, *seeded]).any():
        raise ValueError(
            f"outcomes hold a question twice in one group of {list(by)} (and seed); add the column "
            "that tells the rows apart to by="
        )
    work = seed_mean(outcomes, [*by, *keys], value, seeds)
    group_cols = list(by) or ["_all"]
    work = work.assign(_all=0) if not by else work
    # groups numbered in order of first appearance (a group column may also be a key)
    work = work.assign(_group=work.groupby(group_cols, sort=False).ngroup().to_numpy())
    order = work.drop_duplicates("_group").sort_values("_group")[group_cols].reset_index(drop=True)
    wide = work.pivot(index=list(keys), columns="_group", values=value).sort_index()
    wide.columns = pd.Index([f"g{g}" for g in wide.columns])
    # groups answering the same questions are resampled together: one matrix, the same draws
    shared: dict[bytes, list[str]] = {}
    for column in wide.columns:
        shared.setdefault(wide[column].notna().to_numpy().tobytes(), []).append(str(column))
    rows: dict[str, dict[str, float]] = {}
    for columns in shared.values():
        block = wide.loc[wide[columns[0]].notna(), columns]
        labels = ["/".join(map(str, r)) for r in block.index.to_frame()[list(strata)].itertuples(index=False)]
        means = bootstrap_means(
            block.reset_index(drop=True), labels if strata else None, average, n_resamples, seed, confidence
        )
        for group, r in means.iterrows():
            rows[str(group)] = {"n": len(block), **{str(k): float(v) for k, v in r.items()}}
    stats = pd.DataFrame([rows[f"g{g}"] for g in range(len(order))])
    out = pd.concat([order, stats], axis=1).drop(columns=["_all"], errors="ignore")
    return out.astype({"n": int})
