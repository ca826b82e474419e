"""A blind reading of explanations by judges: the sheet they read, their labels, the scores.

The automatic measures of the explanations chapter (consistency by a classifier, similarity and
ROUGE-L to the annotators, variety, grounding) cannot tell a fluent, true explanation from a
string of the right words. This module draws a small seeded sample of feedback_test items and, for
each, one explanation from every source (people, the template, the rating-filtered retrieval
explainer, the generator, the explain-then-rate model), shuffles them behind row ids, and
writes a **sheet** that judges read without knowing the sources, and a **key** that maps row
ids back. Each judge writes one label per row and dimension (:data:`DIMENSIONS`); the book reads
the labels with :func:`fqa_analysis.core.results.load_audit` (every problem named with its file,
line and fix) and
scores them with :func:`audit_outcomes` and :func:`agreement`.

* :func:`audit_rows`: the sample (items stratified by their majority rating, drawn with a seed).
* :func:`sheet_markdown`: the blind sheet, one block per item.
* :func:`judgement_frame`: one judge's labels, checked against the key.
* :func:`audit_outcomes`: the labels as one 0-1 score per (row, dimension), averaged over judges.
* :func:`agreement` / :func:`cohen_kappa`: how far two judges agree, per dimension.

Example:
    >>> cohen_kappa([0, 1, 1, 0], [0, 1, 0, 0])  # observed 3/4, chance 1/2
    0.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fqa_analysis.core.ratings import LABELS, majority_label, predicted_rating
from fqa_analysis.data import FeedbackItem
from fqa_analysis.errors import DataError, DataProblem

__all__ = [
    "DIMENSIONS",
    "GREEDY",
    "KNOWN_SOURCES",
    "RUBRIC",
    "SOURCES",
    "AuditConfig",
    "agreement",
    "audit_outcomes",
    "audit_rows",
    "changed_rows",
    "cohen_kappa",
    "judgement_frame",
    "label_shares",
    "sheet_markdown",
    "source_means",
]

#: The sources of the explanations read, in the order the book shows them. ``people``: one of the
#: item's three annotators, drawn with the seed; ``explain_then_rate``: the explain-then-rate
#: model (our form) explaining its own rating.
SOURCES: tuple[str, ...] = ("people", "template", "retrieval_same_rating", "generator", "explain_then_rate")

#: The generator's greedy explanation (``results/explanation_greedy.parquet``): the first of the
#: candidates its chooser weighed. Read against the adopted decoding (``generator``) in a sheet
#: of its own, it asks what the chooser's variety cost.
GREEDY = "generator_greedy"

#: Every source a sheet can hold, in the order the book shows them.
KNOWN_SOURCES: tuple[str, ...] = (*SOURCES[:4], GREEDY, *SOURCES[4:])

#: What a judge labels, and the labels each dimension takes (higher is better). The book divides
#: a label by the dimension's highest, so every score lies in [0, 1].
DIMENSIONS: dict[str, tuple[int, ...]] = {
    "fluent": (0, 1, 2),
    "supports": (0, 1, 2),
    "accurate": (0, 1, 2),
    "specific": (0, 1),
}


#: What a judge reads before the sheet (written to ``rubric.md`` beside it, shown in the book).
RUBRIC = """\
Each block of the sheet is one question a user asked and the answer (a passage) the system gave.
Below it, several explanations of a rating of that answer, each with its row id and the rating it
comes with. They come from different sources, in a random order; judge each one on its own.
Label every row id on four dimensions (one CSV line per row id:
`row_id,fluent,supports,accurate,specific`):

- **fluent** (0-2): 2 = reads as fluent, coherent English (a typo is fine); 1 = understandable,
  with clear grammatical errors, a repeated or broken phrase; 0 = incoherent: garbled, or
  contradicts itself.
- **supports** (0-2): does it argue for the rating it comes with? 2 = yes (praise for Excellent,
  named gaps for Acceptable or Could be Improved, the answer missing the question for Bad);
  1 = neither: compatible with the rating but says nothing either way, or mixed; 0 = it argues
  for another rating (praises an answer rated Bad, calls an Excellent answer irrelevant).
  Judge the fit between the explanation and its rating, not whether you agree with the rating.
- **accurate** (0-2): are its claims about the question and the answer true, judged from the text
  shown? 2 = all true; 1 = partly true, or too vague to check; 0 = a claim is clearly false (it
  names something the answer does not contain, misstates the question, or says the answer covers
  what it does not, or misses what it covers).
- **specific** (0-1): 1 = it names something of this question or answer (a topic, a fact, a
  missing detail): it could not be pasted under most other answers; 0 = generic.
"""


@dataclass(frozen=True)
class AuditConfig:
    """Which items and explanations the sheet holds.

    Attributes:
        per_rating: Items drawn for each majority rating (so the rarer middle ratings are read too).
        seed: Seed of the item draw, of the annotator drawn for ``people`` and of the row order.
        explain_rate_seed: Training seed of the explain-then-rate model whose text is read.
        sources: The sources of each item's explanations (:data:`KNOWN_SOURCES`), in the key's order
            within an item. The items drawn do not depend on them: one seed draws the same items
            for every sheet.

    Raises:
        ValueError: An unknown or repeated source, or none.
    """

    per_rating: int = 10
    seed: int = 0
    explain_rate_seed: int = 0
    sources: tuple[str, ...] = SOURCES

    def __post_init__(self) -> None:
        unknown = [s for s in self.sources if s not in KNOWN_SOURCES]
        if unknown or not self.sources or len(set(self.sources)) != len(self.sources):
            raise ValueError(
                f"sources {list(self.sources)}: name each of {list(KNOWN_SOURCES)} at most once, at least one"
            )


def _explained_texts(
    explanations: pd.DataFrame,
    explain_rate: pd.DataFrame,
    explain_rate_seed: int,
    greedy: pd.DataFrame | None = None,
) -> dict[tuple[str, int, str], tuple[str, str]]:
    """``(domain, item_id, source) -> (rating, explanation)`` of the explainers and explain-then-rate.

    The explainers' majority-rating rows (with ``greedy``, the generator's greedy ones too, as
    :data:`GREEDY`), and the explain-then-rate model's rows of one seed with its most likely
    rating (the rating its explanation comes with).
    """
    every = explanations if greedy is None else pd.concat([explanations, greedy.assign(explainer=GREEDY)])
    majority_rows = every[every["rating_source"] == "majority"]
    texts = {
        (str(d), int(i), str(e)): (str(r), str(t))
        for d, i, e, r, t in majority_rows[
            ["domain", "item_id", "explainer", "rating", "explanation"]
        ].itertuples(index=False)
    }
    ours = explain_rate[explain_rate["seed"] == explain_rate_seed]
    for d, i, r, t in zip(
        ours["domain"], ours["item_id"], predicted_rating(ours), ours["explanation"], strict=True
    ):
        texts[(str(d), int(i), "explain_then_rate")] = (str(r), str(t))
    return texts


def audit_rows(
    items: Sequence[FeedbackItem],
    explanations: pd.DataFrame,
    explain_rate: pd.DataFrame,
    config: AuditConfig | None = None,
    greedy: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The sample: per drawn item, one explanation per source, shuffled behind row ids.

    Args:
        items: feedback_test items (question, passage, the annotators' ratings and explanations).
        explanations: ``results/explanations.parquet`` (the explainers, majority rating rows used).
        explain_rate: ``results/explain_rate_predictions.parquet`` (our form's rows of
            ``config.explain_rate_seed``; its rating is its most likely one).
        config: The draw.
        greedy: ``results/explanation_greedy.parquet``, needed when ``config.sources`` names
            :data:`GREEDY`.

    Returns:
        One row per (item, source): ``row_id`` (``r001`` ..., in shuffled order), ``stratum``
        (the item's majority rating), ``domain``, ``item_id``, ``source``, ``rating`` (the rating
        the explanation comes with), ``explanation``, ``question``, ``passage``; sorted by row id.

    Raises:
        ValueError: A rating with fewer items than ``per_rating``, or a drawn item some source
            has no explanation for.
    """
    config = config or AuditConfig()
    if GREEDY in config.sources and greedy is None:
        raise ValueError(f"source {GREEDY!r} needs the greedy explanations (explanation_greedy.parquet)")
    rng = np.random.default_rng(config.seed)
    ordered = sorted(items, key=lambda it: (it.domain, it.item_id))
    majority = [majority_label(it.ratings, tie="lower") for it in ordered]
    drawn: list[tuple[str, FeedbackItem]] = []
    for rating in LABELS:
        pool = [it for it, m in zip(ordered, majority, strict=True) if m == rating]
        if len(pool) < config.per_rating:
            raise ValueError(
                f"only {len(pool)} items have majority rating {rating!r}; per_rating is {config.per_rating}"
            )
        drawn += [
            (rating, pool[int(i)]) for i in sorted(rng.choice(len(pool), config.per_rating, replace=False))
        ]
    texts_now = _explained_texts(explanations, explain_rate, config.explain_rate_seed, greedy)
    rows = []
    for stratum, it in drawn:
        # drawn whether or not the sheet reads people, so that the draws after it do not depend on it
        annotator = int(rng.integers(len(it.ratings)))
        texts = {"people": (it.ratings[annotator], it.explanations[annotator])}
        for source in config.sources:
            if source == "people":
                continue
            key = (it.domain, it.item_id, source)
            if key in texts_now:
                texts[source] = texts_now[key]
            elif source == "explain_then_rate":
                raise ValueError(
                    f"explain_rate_predictions.parquet has no seed-{config.explain_rate_seed} row "
                    f"for {it.domain} item {it.item_id}"
                )
            else:
                where = "explanation_greedy.parquet" if source == GREEDY else "explanations.parquet"
                raise ValueError(f"{where} has no majority-rating row for {key}")
        for source in config.sources:
            rating, text = texts[source]
            rows.append(
                {
                    "stratum": stratum,
                    "domain": it.domain,
                    "item_id": it.item_id,
                    "source": source,
                    "rating": rating,
                    "explanation": text,
                    "question": it.question,
                    "passage": it.passage.text,
                }
            )
    frame = pd.DataFrame(rows)
    # row ids in a random order: neither the id nor the position within an item gives the source away
    frame.insert(0, "row_id", [f"r{k + 1:03d}" for k in rng.permutation(len(frame))])
    return frame.sort_values("row_id", ignore_index=True)


def changed_rows(
    key: pd.DataFrame,
    explanations: pd.DataFrame,
    explain_rate: pd.DataFrame,
    explain_rate_seed: int = 0,
    greedy: pd.DataFrame | None = None,
) -> list[str]:
    """Row ids of the key whose explanation or rating is no longer what the results hold.

    The judges read the results of one commit; a rerun of the explain or explain_rate stage
    changes the texts, and the labels then describe explanations the book no longer shows.
    People's rows come from the data, which do not change. Rows of :data:`GREEDY` count as changed
    when ``greedy`` (``explanation_greedy.parquet``) is not given.

    Example:
        >>> key = pd.DataFrame({"row_id": ["r1", "r2"], "domain": "WHO", "item_id": 0,
        ...     "source": ["generator", "explain_then_rate"], "rating": ["Bad", "Excellent"],
        ...     "explanation": ["no.", "yes."]})
        >>> expl = pd.DataFrame({"explainer": ["generator"], "rating_source": "majority", "domain": "WHO",
        ...     "item_id": 0, "rating": "Bad", "explanation": "not at all."})
        >>> ours = pd.DataFrame({"seed": [0], "domain": "WHO", "item_id": 0, "p_bad": 0.1,
        ...     "p_could_be_improved": 0.0, "p_acceptable": 0.0, "p_excellent": 0.9, "explanation": "yes."})
        >>> changed_rows(key, expl, ours)
        ['r1']
    """
    now = _explained_texts(explanations, explain_rate, explain_rate_seed, greedy)
    return [
        str(row.row_id)
        for row in key.itertuples()
        if row.source != "people"
        and now.get((str(row.domain), int(str(row.item_id)), str(row.source)))
        != (str(row.rating), str(row.explanation))
    ]


def sheet_markdown(rows: pd.DataFrame) -> str:
    """The blind sheet: one block per item (question, answer), its explanations by row id.

    Items appear in the order of their first row id, explanations by row id, and nothing names a
    source. Every explanation is shown lower-cased with its white space collapsed: the MiniLM
    generators write lower case only, so case would otherwise tell their texts from people's.

    Example:
        >>> rows = pd.DataFrame({"row_id": ["r002", "r001"], "domain": "WHO", "item_id": 3,
        ...     "question": "q?", "passage": "p.", "rating": ["Bad", "Excellent"],
        ...     "explanation": ["No.", "Yes,  it  does."]})
        >>> print(sheet_markdown(rows))
        ## Item 1
        <BLANKLINE>
        **Question:** q?
        <BLANKLINE>
        **Answer:** p.
        <BLANKLINE>
        - `r001` (rated Excellent): yes, it does.
        - `r002` (rated Bad): no.
        <BLANKLINE>
    """
    blocks = []
    ordered = rows.sort_values("row_id")
    for k, (_, item) in enumerate(ordered.groupby(["domain", "item_id"], sort=False), start=1):
        lines = [f"## Item {k}", "", f"**Question:** {item['question'].iloc[0]}", ""]
        lines += [f"**Answer:** {item['passage'].iloc[0]}", ""]
        lines += [
            f"- `{r.row_id}` (rated {r.rating}): {' '.join(str(r.explanation).lower().split())}"
            for r in item.itertuples()
        ]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def judgement_frame(records: Sequence[Mapping[str, str]], path: Path, row_ids: Sequence[str]) -> pd.DataFrame:
    """One judge's labels, checked: the rows of a CSV with ``row_id`` and one column per dimension.

    The file is read by :func:`fqa_analysis.core.results.load_audit` (core reads files only there);
    ``path`` names it in the errors.

    Args:
        records: The CSV's rows as dicts (``csv.DictReader``), in file order (line 2 first).
        path: The judge's file.
        row_ids: Every row id of the key; the file must label each exactly once.

    Returns:
        One row per row id (in the key's order): ``row_id``, the dimensions as ints and ``note``
        (the judge's optional words, empty where the file has none).

    Raises:
        DataError: A missing column, an unknown, duplicated or missing row id, or a label outside
            its dimension's labels; every problem names the file, the line and the fix.
    """
    fix = "relabel the row as the rubric (rubric.md beside the sheet) says"
    header = set(records[0]) if records else set()
    missing = [c for c in ("row_id", *DIMENSIONS) if c not in header]
    if missing:
        raise DataError(
            DataProblem(
                path, "header", f"missing column(s) {missing}", "add them: row_id, " + ", ".join(DIMENSIONS)
            )
        )
    known, seen, problems = set(row_ids), set(), []
    labels: dict[str, dict[str, int]] = {}
    notes: dict[str, str] = {}
    for line, record in enumerate(records, start=2):  # line 1 is the header
        rid = (record["row_id"] or "").strip()
        where = f"line {line} (row_id {rid!r})"
        if rid not in known:
            problems.append(
                DataProblem(path, where, "row id not in the key", "use the ids of the sheet (key.csv)")
            )
            continue
        if rid in seen:
            problems.append(DataProblem(path, where, "row id labelled twice", "keep one line per row id"))
            continue
        seen.add(rid)
        notes[rid] = (record.get("note") or "").strip()
        labels[rid] = {}
        for dim, allowed in DIMENSIONS.items():
            value = (record[dim] or "").strip()
            if value not in {str(a) for a in allowed}:
                problems.append(
                    DataProblem(path, where, f"{dim} is {value!r}, not one of {list(allowed)}", fix)
                )
            else:
                labels[rid][dim] = int(value)
    absent = [r for r in row_ids if r not in seen]
    if absent:
        shown = ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else "")
        problems.append(
            DataProblem(
                path,
                "(whole file)",
                f"{len(absent)} row id(s) of the key not labelled: {shown}",
                "label every row of the sheet",
            )
        )
    if problems:
        raise DataError(problems)
    return pd.DataFrame([{"row_id": r, **labels[r], "note": notes[r]} for r in row_ids])


def _aligned_labels(key: pd.DataFrame, judgements: Mapping[str, pd.DataFrame], dimension: str) -> np.ndarray:
    """``(judges, rows)``: each judge's labels of one dimension, in the key's row order."""
    return np.array(
        [j.set_index("row_id").loc[key["row_id"], dimension].to_numpy(float) for j in judgements.values()]
    )


def audit_outcomes(key: pd.DataFrame, judgements: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every (row, dimension)'s score in [0, 1], averaged over the judges.

    Args:
        key: The key (``row_id, stratum, domain, item_id, source, rating``).
        judgements: Judge name -> :func:`judgement_frame`'s frame.

    Returns:
        Long table: ``dimension, source, stratum, domain, item_id, score`` (the mean of the
        judges' labels, each divided by the dimension's highest label), one row per (row id,
        dimension): the outcomes :func:`~fqa_analysis.core.compare.compare` pairs over items.

    Example:
        >>> key = pd.DataFrame({"row_id": ["r1", "r2"], "stratum": "Bad", "domain": "WHO",
        ...     "item_id": 0, "source": ["people", "template"]})
        >>> a = pd.DataFrame({"row_id": ["r1", "r2"], "fluent": [2, 2], "supports": [2, 1],
        ...     "accurate": [2, 1], "specific": [1, 0]})
        >>> b = a.assign(fluent=[2, 1])
        >>> out = audit_outcomes(key, {"a": a, "b": b})
        >>> out[out["dimension"] == "fluent"]["score"].tolist()
        [1.0, 0.75]
    """
    if not judgements:
        raise ValueError("audit_outcomes needs at least one judge's labels")
    frames = []
    for dim, allowed in DIMENSIONS.items():
        labels = _aligned_labels(key, judgements, dim).mean(axis=0)
        frame = key[["source", "stratum", "domain", "item_id"]].copy()
        frame.insert(0, "dimension", dim)
        frame["score"] = labels / max(allowed)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def source_means(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Mean score per source (rows, :data:`KNOWN_SOURCES` order) and dimension (columns, :data:`DIMENSIONS`).

    Example:
        >>> out = pd.DataFrame({"dimension": ["fluent", "fluent", "fluent"], "source":
        ...     ["generator", "people", "people"], "score": [0.25, 1.0, 0.5]})
        >>> source_means(out)["fluent"].tolist()
        [0.75, 0.25]
    """
    table = outcomes.pivot_table(index="source", columns="dimension", values="score", aggfunc="mean")
    rows = [s for s in KNOWN_SOURCES if s in table.index]
    return table.reindex(index=rows, columns=[d for d in DIMENSIONS if d in table.columns])


def label_shares(key: pd.DataFrame, judgements: Mapping[str, pd.DataFrame], dimension: str) -> pd.DataFrame:
    """Per source, the share of its rows every judge gave the highest label, and the share every judge gave 0.

    What a mean score hides: 0.5 can be every row half-fluent or half the rows fluent and half
    incoherent.

    Returns:
        Indexed by ``source`` (:data:`KNOWN_SOURCES` order): ``top`` and ``zero``.

    Example:
        >>> key = pd.DataFrame({"row_id": ["r1", "r2", "r3"], "source": ["people", "people", "generator"]})
        >>> a = pd.DataFrame({"row_id": ["r1", "r2", "r3"], "fluent": [2, 2, 0]})
        >>> b = pd.DataFrame({"row_id": ["r1", "r2", "r3"], "fluent": [2, 1, 0]})
        >>> label_shares(key, {"a": a, "b": b}, "fluent").to_dict("index")
        {'people': {'top': 0.5, 'zero': 0.0}, 'generator': {'top': 0.0, 'zero': 1.0}}
    """
    top = max(DIMENSIONS[dimension])
    labels = _aligned_labels(key, judgements, dimension)
    frame = pd.DataFrame(
        {
            "source": key["source"].to_numpy(),
            "top": (labels == top).all(axis=0),
            "zero": (labels == 0).all(axis=0),
        }
    )
    shares = frame.groupby("source")[["top", "zero"]].mean()
    return shares.reindex([s for s in KNOWN_SOURCES if s in shares.index])


def cohen_kappa(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> float:
    """Cohen's kappa of two judges' labels of the same rows: (observed - chance) / (1 - chance).

    Chance agreement is the sum over labels of the product of the two judges' shares. ``nan``
    when chance agreement is 1 (both judges gave one and the same label to every row).

    Example:
        >>> cohen_kappa([2, 2, 1, 0], [2, 1, 1, 0])  # observed 3/4; chance (2*1 + 1*2 + 1*1)/16
        0.6363636363636364
    """
    x, y = np.asarray(a), np.asarray(b)
    if len(x) != len(y) or not len(x):
        raise ValueError(
            f"cohen_kappa needs two label lists of one non-zero length, got {len(x)} and {len(y)}"
        )
    observed = float((x == y).mean())
    chance = float(sum((x == v).mean() * (y == v).mean() for v in np.union1d(x, y)))
    return float("nan") if chance == 1.0 else (observed - chance) / (1.0 - chance)


def agreement(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """Per dimension, how two judges' labels of the same rows agree.

    Returns:
        Indexed by ``dimension``: ``same`` (share of rows with the same label) and ``kappa``
        (:func:`cohen_kappa`).
    """
    a, b = first.set_index("row_id"), second.set_index("row_id").loc[first["row_id"]]
    rows = {}
    for dim in DIMENSIONS:
        x, y = a[dim].to_numpy(), b[dim].to_numpy()
        rows[dim] = {"same": float((x == y).mean()), "kappa": cohen_kappa(x, y)}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "dimension"
    return frame
