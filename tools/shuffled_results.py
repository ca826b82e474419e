"""Copy a results folder with every table's rows shuffled (seeded): what ``make nbval`` executes the book on.

The book must show the same pages whatever order a stage wrote its rows in and whatever order a
filesystem lists a folder's files in (``fqa_analysis.core.results.load_table`` reads every table in
one canonical order; every listing in the package and the book is sorted, which
``tests/test_determinism.py`` checks). nbval compares each chapter's outputs, executed on this copy,
with the outputs stored from the committed folder, so a page that depends on row order fails there.

Usage: python tools/shuffled_results.py SRC DST [--seed N]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def shuffled_copy(src: Path, dst: Path, seed: int = 0) -> int:
    """Copy ``src`` to ``dst`` (replacing it), shuffling the rows of every Parquet and CSV table.

    Files are visited in reverse name order (the opposite of a sorted listing) so that nothing here
    leans on the order either. Returns the number of tables shuffled.
    """
    if not src.is_dir():
        raise SystemExit(f"error: {src} is not a results folder (give the folder that holds manifest.json)")
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    rng = np.random.default_rng(seed)
    shuffled = 0
    for path in sorted(dst.rglob("*"), reverse=True):
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            frame.iloc[rng.permutation(len(frame))].to_parquet(path, index=False)
        elif path.suffix == ".csv" and path.name.startswith("judge_"):
            # a judge's labels: rows in any order are the same labels (key.csv keeps its order: it is the sheet)
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            frame.iloc[rng.permutation(len(frame))].to_csv(path, index=False)
        else:
            continue
        shuffled += 1
    return shuffled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    count = shuffled_copy(args.src, args.dst, args.seed)
    print(f"{args.dst}: {count} tables with their rows shuffled (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
