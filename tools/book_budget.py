"""Count what a reader meets on each book page, and the code behind it, against the report's budgets.

The budgets (the report issue): the main text, every page in ``_toc.yml`` outside the appendix,
at most 12,000 words and 35 tables in all; each chapter at most 1,800 words and 6 tables, the
introduction at most 1,200 words; the chapters' code (``book/**/*.py``) at most 1,500 lines in all,
no code cell over 40 lines.

Counted on the stored notebooks, as a reader meets them:

- **words**: whitespace-separated tokens (numbers count: a table of numbers is read too) of the
  markdown cells and of the code cells' outputs: Markdown, HTML (tags and ``<style>`` blocks
  removed), printed text, and plain text where an output has nothing richer;
- **tables**: ``<table`` elements in HTML outputs and Markdown pipe tables (a ``|---`` rule) in
  cells and outputs;
- **code**: non-blank lines of the code cells that are not comments (the jupytext source's code).

Usage:
    python tools/book_budget.py                 # every page, the budgets, what is over
    python tools/book_budget.py book/reranking.ipynb
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The budgets of the report issue.
MAIN_WORDS, MAIN_TABLES = 12_000, 35
CHAPTER_WORDS, CHAPTER_TABLES, INTRO_WORDS = 1_800, 6, 1_200
CODE_LINES, CELL_LINES = 1_500, 40

_TAG = re.compile(r"<[^>]+>")
_STYLE = re.compile(r"<style.*?</style>|<script.*?</script>", re.S)
_PIPE_RULE = re.compile(r"^\s*\|\s*:?-{3,}", re.M)


@dataclass(frozen=True)
class PageCounts:
    """What one page holds.

    Attributes:
        page: The notebook's path relative to the repository (``book/reranking.ipynb``).
        words: Words a reader meets (markdown cells and outputs).
        tables: Tables a reader meets.
        code: Code lines (non-blank, non-comment) of the page's code cells.
        long_cells: The line counts of the code cells over :data:`CELL_LINES`.
    """

    page: str
    words: int
    tables: int
    code: int
    long_cells: tuple[int, ...]


def _words(text: str) -> int:
    return len(text.split())


def _output_counts(output: dict) -> tuple[int, int]:
    """(words, tables) of one code-cell output, from its richest representation."""
    if output.get("output_type") == "stream":
        return _words("".join(output.get("text", ""))), 0
    data = output.get("data", {})
    if "text/html" in data:
        html = _STYLE.sub(" ", "".join(data["text/html"]))
        return _words(_TAG.sub(" ", html)), html.count("<table")
    if "text/markdown" in data:
        text = "".join(data["text/markdown"])
        return _words(_TAG.sub(" ", text)), len(_PIPE_RULE.findall(text))
    if "image/png" in data or "image/svg+xml" in data:
        return 0, 0  # a figure: its caption is in the cell's metadata, counted with the markdown
    if "text/plain" in data:
        return _words("".join(data["text/plain"])), 0
    return 0, 0


def code_lines(source: str) -> int:
    """Non-blank lines of a code cell that are not comments.

    >>> code_lines("# why\\nx = 1\\n\\n  # note\\ny = x  # inline\\n")
    2
    """
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def page_counts(notebook: Path) -> PageCounts:
    """Count one stored notebook (see the module docstring for what counts).

    Raises:
        SystemExit: The file is missing or not a notebook (the message names it).
    """
    try:
        cells = json.loads(notebook.read_text())["cells"]
    except (OSError, ValueError, KeyError) as err:
        raise SystemExit(f"error: {notebook}: not a readable notebook ({err}); run `make notebooks`") from err
    words = tables = code = 0
    long_cells: list[int] = []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += _words(_TAG.sub(" ", source))
            tables += len(_PIPE_RULE.findall(source))
        elif cell["cell_type"] == "code":
            lines = code_lines(source)
            code += lines
            if lines > CELL_LINES:
                long_cells.append(lines)
            caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", "")
            words += _words(caption)
            for output in cell.get("outputs", []):
                w, t = _output_counts(output)
                words, tables = words + w, tables + t
    try:
        page = str(notebook.resolve().relative_to(ROOT))
    except ValueError:
        page = str(notebook)
    return PageCounts(page, words, tables, code, tuple(long_cells))


def toc_pages(toc: Path = ROOT / "_toc.yml") -> tuple[list[Path], list[Path]]:
    """(main-text notebooks, appendix notebooks) in ``_toc.yml``'s order; Markdown pages are left out."""
    main: list[Path] = []
    appendix: list[Path] = []
    for line in toc.read_text().splitlines():
        match = re.match(r"\s*(?:-\s*file|root):\s*(\S+)", line)
        if match and (path := ROOT / f"{match.group(1)}.ipynb").exists():
            (appendix if "/appendix/" in match.group(1) else main).append(path)
    return main, appendix


def over_budget(counts: PageCounts) -> list[str]:
    """What one page exceeds: words, tables and long cells against a chapter's (or the intro's) budget."""
    intro = counts.page.endswith("intro.ipynb")
    words = INTRO_WORDS if intro else CHAPTER_WORDS
    found = []
    if counts.words > words:
        found.append(f"{counts.words:,} words > {words:,}")
    if counts.tables > CHAPTER_TABLES:
        found.append(f"{counts.tables} tables > {CHAPTER_TABLES}")
    if counts.long_cells:
        found.append(f"{len(counts.long_cells)} code cell(s) over {CELL_LINES} lines")
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the counts of each page and of the main text against the budgets (always exit 0)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="stored notebooks (default: every page)")
    args = parser.parse_args(argv)
    main_pages, appendix = toc_pages()
    pages = args.notebooks or [*main_pages, *appendix]
    rows = [page_counts(p) for p in pages]
    print(f"{'page':34s} {'words':>6s} {'tables':>6s} {'code':>5s}  over budget")
    for c in rows:
        print(f"{c.page:34s} {c.words:6,d} {c.tables:6d} {c.code:5d}  {'; '.join(over_budget(c)) or '-'}")
    main_rows = [c for c in rows if "/appendix/" not in c.page]
    words, tables = sum(c.words for c in main_rows), sum(c.tables for c in main_rows)
    code = sum(c.code for c in rows)
    print(
        f"main text: {words:,} words (budget {MAIN_WORDS:,}), {tables} tables (budget {MAIN_TABLES}); "
        f"code of the pages counted: {code:,} lines (budget {CODE_LINES:,} for the whole book)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
