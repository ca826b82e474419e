"""Start a results folder for one varied difference (a "factor run"): the RQA systems' own candidates.

A factor run changes one setting of the rerank stage (``--layers 2``, ``--max-len 256``, ...) and
trains ``vanilla``, ``feedback_kl`` and ``combined`` anew in a folder of its own, so the book's
configuration in ``results/`` stays as it is. The rerank stage rescores the candidates it finds in
its ``--out`` folder; this tool writes them there: the RQA systems alone (reranker ``none``) on the
feedback domains' test questions, for the systems the run rescores (the hybrid by default). Only
those rows: the folder stays about 0.7 MB once the run has added its three rerankers' rows.

Usage:
    python tools/factor_folder.py results/factors/layers2 [--from results] [--rqa hybrid]
    .venv/bin/fqa run rerank --out results/factors/layers2 --layers 2 \\
        --variants vanilla,feedback_kl,combined --seeds 0 --rescore hybrid
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from fqa_analysis.cache import atomic_write_parquet
from fqa_analysis.core.candidates import NO_RERANKER, validate_candidates
from fqa_analysis.core.results import load_candidates
from fqa_analysis.data import FEEDBACK_DOMAINS

#: The RQA system a factor run rescores: the book's strongest, the one its comparisons are about
#: (a second system's rows would take results/ past 20 MB over a few factor runs).
FACTOR_RQA: tuple[str, ...] = ("hybrid",)


def factor_candidates(source: Path, rqa: tuple[str, ...] = FACTOR_RQA) -> pd.DataFrame:
    """The RQA-alone rows of ``source``'s candidates for ``rqa`` on the feedback domains.

    Raises:
        DataError: ``source`` has no valid ``candidates.parquet``.
        SystemExit: ``source`` lacks one of the systems.
    """
    frame = load_candidates(source)
    alone = frame[(frame["reranker"] == NO_RERANKER) & frame["domain"].isin(FEEDBACK_DOMAINS)]
    missing = sorted(set(rqa) - set(alone["rqa"]))
    if missing:
        raise SystemExit(
            f"error: {source / 'candidates.parquet'} has no rows of RQA system(s) {', '.join(missing)}; "
            f"run `fqa run rqa --out {source}` first or pick --rqa from {', '.join(sorted(set(alone['rqa'])))}"
        )
    rows = alone[alone["rqa"].isin(rqa)].reset_index(drop=True)
    validate_candidates(rows, source / "candidates.parquet")
    return rows


def main(argv: list[str] | None = None) -> int:
    """Write ``DEST/candidates.parquet``; refuses a folder that already holds one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path, help="the factor run's results folder (created)")
    parser.add_argument("--from", dest="source", type=Path, default=Path("results"), help="results folder")
    parser.add_argument(
        "--rqa", default=",".join(FACTOR_RQA), help=f"RQA systems (default: {','.join(FACTOR_RQA)})"
    )
    args = parser.parse_args(argv)
    target = args.dest / "candidates.parquet"
    if target.exists():
        print(f"error: {target} exists; a factor folder is started once (remove it to start afresh)")
        return 2
    rows = factor_candidates(args.source, tuple(args.rqa.split(",")))
    args.dest.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(target, rows)
    print(f"{target}: {len(rows):,} rows ({', '.join(sorted(set(rows['rqa'])))} alone, feedback domains)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
