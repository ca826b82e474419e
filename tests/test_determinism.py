"""The same pages on every machine: one row order for every table, ties broken by a stated key,
sorted listings (the book itself is executed on a shuffled copy of results/ by ``make nbval``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.core.candidates import NO_RERANKER
from fqa_analysis.core.report import ranked_counts
from fqa_analysis.core.results import ROW_ORDER, load_table, sorted_rows
from fqa_analysis.models.explainer import ExplanationExample, RetrievalExplainer, TemplateExplainer
from fqa_analysis.models.reranker.variants import VARIANTS
from fqa_analysis.models.retrieval import SYSTEMS
from fqa_analysis.stages.relevance import RECIPES

ROOT = Path(__file__).resolve().parents[1]


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "explainer": ["generator", "template", "generator", "retrieval_any_rating", "template"],
            "seed": [1, 0, 0, 0, 0],
            "score": [0.5, np.nan, 0.25, 0.75, 0.125],
        }
    )


def test_sorted_rows_gives_one_order_whatever_the_order_in(tmp_path: Path) -> None:
    table = _table()
    expected = sorted_rows(table)
    # declared order for explainers; then seed; then score with the missing value last
    assert expected["explainer"].tolist() == [
        "template",
        "template",
        "retrieval_any_rating",
        "generator",
        "generator",
    ]
    assert expected["seed"].tolist() == [0, 0, 0, 0, 1]
    np.testing.assert_array_equal(expected["score"], [0.125, np.nan, 0.75, 0.25, 0.5])
    for seed in range(5):
        shuffled = table.iloc[np.random.default_rng(seed).permutation(len(table))]
        shuffled.to_parquet(tmp_path / "t.parquet")
        pd.testing.assert_frame_equal(load_table(tmp_path, "t.parquet"), expected)


def test_an_undeclared_value_follows_the_declared_ones_alphabetically() -> None:
    frame = pd.DataFrame({"explainer": ["zeta", "generator", "alpha", "template"]})
    assert sorted_rows(frame)["explainer"].tolist() == ["template", "generator", "alpha", "zeta"]


def test_ranked_counts_breaks_ties_by_value_not_by_row_order() -> None:
    values = pd.Series(["d", "c", "b", "c", "a", "d", "b"])
    assert ranked_counts(values).to_dict() == {"b": 2, "c": 2, "d": 2, "a": 1}
    assert list(ranked_counts(values[::-1].reset_index(drop=True)).index) == ["b", "c", "d", "a"]
    assert ranked_counts(values, normalize=True).round(4).tolist() == [0.2857, 0.2857, 0.2857, 0.1429]


def test_declared_orders_name_what_the_stages_write() -> None:
    assert set(ROW_ORDER["recipe"]) == set(RECIPES)
    assert ROW_ORDER["rqa"] == SYSTEMS
    assert ROW_ORDER["reranker"] == (NO_RERANKER, *VARIANTS)
    example = [ExplanationExample("WHO", "q", "p", "Bad", "e")]
    encoder: Any = object()  # never called: only the explainers' names are read
    retrieval = {RetrievalExplainer(example, same, encoder).name for same in (True, False)}
    written = {TemplateExplainer.name, *retrieval, "generator"}
    assert written | {"generator_greedy"} == set(ROW_ORDER["explainer"])


LISTING = re.compile(r"\.(r?glob|iterdir)\(|os\.(listdir|scandir)\(")


def test_every_folder_listing_is_sorted_or_only_counted() -> None:
    """A filesystem lists a folder in its own order; a listing that orders output must be sorted."""
    unsorted = []
    sources = [
        *(ROOT / "fqa_analysis").rglob("*.py"),
        *(ROOT / "book").rglob("*.py"),
        *(ROOT / "tools").glob("*.py"),
    ]
    for path in sorted(sources):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if LISTING.search(line) and "sorted(" not in line and "len(list(" not in line:
                unsorted.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert unsorted == []


def test_every_committed_table_names_the_command_that_writes_it(tmp_path: Path) -> None:
    from fqa_analysis.core.results import TABLE_COMMANDS
    from fqa_analysis.errors import DataError

    committed = {p.name for p in sorted((ROOT / "results").glob("*.parquet"))}
    assert committed == set(TABLE_COMMANDS)
    with pytest.raises(DataError, match=r"rqa_ranks\.parquet.*Fix: run `fqa run rqa --out "):
        load_table(tmp_path, "rqa_ranks.parquet")
