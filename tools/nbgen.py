"""Tiny helpers to write a notebook from a list of cells (outputs are added by `make notebooks`)."""

from pathlib import Path

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell


def write(path: str, cells: list) -> None:
    nb = nbf.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    Path(path).write_text(nbf.writes(nb))


def frozen_rerankers_note(what: str) -> nbf.NotebookNode:
    """A warning cell: ``what`` was computed on the earlier frozen-layer rerankers (issue 11)."""
    return md(
        "```{admonition} These rerankers are the previous, frozen-layer ones\n"
        ":class: warning\n\n"
        f"{what} The reranking chapters now use fully fine-tuned rerankers; this stage has not been re-run on "
        "them yet. Until it is, the chapter reads the frozen rerankers' candidate rows "
        "(`results/frozen5_candidates.parquet`, kept from commit c6e5a17) beside its own artifacts, so every "
        "number on this page describes the same models.\n"
        "```"
    )


def hidden(source: str) -> nbf.NotebookNode:
    """A code cell whose input the book folds away (tag ``hide-input``): its output is what matters."""
    cell = code(source)
    cell.metadata["tags"] = ["hide-input"]
    return cell
