"""Every book notebook is paired with its jupytext source, and the two hold the same cells."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(p for p in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]


def test_every_notebook_has_a_source_and_every_source_a_notebook() -> None:
    assert NOTEBOOKS, "no notebooks found under book/"
    sources = {p.relative_to(BOOK).with_suffix("") for p in BOOK.rglob("*.py")}
    assert sources == {p.relative_to(BOOK).with_suffix("") for p in NOTEBOOKS}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(BOOK).with_suffix("")))
def test_source_and_notebook_agree(notebook: Path) -> None:
    stored = nbformat.read(notebook, as_version=4)
    source = jupytext.read(notebook.with_suffix(".py"))
    assert stored.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    assert _cells(source) == _cells(stored), (
        f"{notebook.name} and {notebook.stem}.py differ: run `make notebooks` (or `jupytext --sync "
        f"{notebook.with_suffix('.py').relative_to(BOOK.parent)}`) and commit both"
    )
