"""Execute notebooks in place and store their outputs (what nbval later compares).

Usage:
    python tools/execute_notebooks.py book/*.ipynb
    python tools/execute_notebooks.py NOTEBOOK -p NAME VALUE [-p NAME VALUE ...] [--output COPY.ipynb]

``-p`` sets a parameter of a page, as papermill does: a cell holding ``NAME = VALUE`` is inserted after
the page's cell tagged ``parameters`` (tagged ``injected-parameters``), so the page is re-executed with
that setting; VALUE is read as a Python literal (``0.25``, ``None``, ``'expected_rating'``) and
otherwise as a string. ``--output`` writes the executed copy elsewhere and leaves the notebook as it is.
A failing cell ends in one line (the page's error, such as a results file it lacks), exit code 1.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def literal(text: str) -> object:
    """A parameter's value: a Python literal where ``text`` is one, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def inject(nb: nbformat.NotebookNode, parameters: dict[str, object], path: Path) -> None:
    """Insert the ``NAME = VALUE`` cell after the notebook's cell tagged ``parameters``."""
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not tagged:
        raise SystemExit(f"error: {path} has no cell tagged 'parameters': its settings cannot be set with -p")
    source = "# Parameters set with -p (tools/execute_notebooks.py)\n" + "\n".join(
        f"{name} = {value!r}" for name, value in parameters.items()
    )
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters", "hide-input"]})
    nb.cells.insert(tagged[0] + 1, cell)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute notebooks and store their outputs.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    parser.add_argument("--output", type=Path, help="write the executed notebook here (one notebook only)")
    args = parser.parse_args(argv)
    if args.output and len(args.notebooks) > 1:
        parser.error("--output takes one notebook")
    parameters = {name: literal(value) for name, value in args.p}
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        if parameters:
            inject(nb, parameters, path)
        try:
            NotebookClient(
                nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            ).execute()
        except CellExecutionError as exc:
            # the cell's error in one line (a chapter shows a DataError as its message alone: the file,
            # the item and the command that writes it); the notebook is left as it was
            # the page's own one-line account (core.results prints it), else the exception itself
            said = [line for line in str(exc.traceback).splitlines() if line.startswith("DataError: ")]
            print(f"error: {path}: {said[-1] if said else f'{exc.ename}: {exc.evalue}'}", file=sys.stderr)
            return 1
        target = args.output or path
        nbformat.write(nb, target)
        print(f"executed {path}" + (f" into {target}" if target != path else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
