"""Tiny helpers to write a notebook from a list of cells (outputs are added by `make notebooks`)."""

from pathlib import Path

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell


def write(path: str, cells: list) -> None:
    nb = nbf.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    Path(path).write_text(nbf.writes(nb))


def hidden(source: str) -> nbf.NotebookNode:
    """A code cell whose input the book folds away (tag ``hide-input``): its output is what matters."""
    cell = code(source)
    cell.metadata["tags"] = ["hide-input"]
    return cell
