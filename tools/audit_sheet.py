"""Write a blind explanation-audit sheet (core.audit) into results/explanation_audit/.

    .venv/bin/python tools/audit_sheet.py [--data-dir DIR] [--results results] [--per-rating 10] [--seed 0]
        [--sources people,template,...] [--folder explanation_audit]

The default sheet reads every source of ``core.audit.SOURCES``; the decoding sheet reads the
generator's adopted decoding against its greedy one, on the same items (one seed, one draw)::

    .venv/bin/python tools/audit_sheet.py --sources generator,generator_greedy \
        --folder explanation_audit_decoding

Writes ``sheet.md`` (what the judges read: no sources), ``rubric.md`` (core.audit.RUBRIC),
``key.csv`` (row id -> item, source, rating, explanation: not for the judges) and ``audit.json``
(the draw's settings and the commit of the results it read). The judges' labels go beside them as
``judge_<name>.csv``; the explanations chapter reads every such file.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_bytes, atomic_write_json
from fqa_analysis.core.audit import GREEDY, RUBRIC, SOURCES, AuditConfig, audit_rows, sheet_markdown
from fqa_analysis.core.results import AUDIT_FOLDER, load_stage, load_table
from fqa_analysis.errors import DataError


def main() -> None:
    """Write the sheet; a bad path, results folder or draw ends with one message naming it (exit 2)."""
    try:
        _write()
    except (DataError, ValueError) as err:  # a missing file, or too few items for the draw
        print(f"audit_sheet: {err}", file=sys.stderr)
        sys.exit(2)


def _write() -> None:
    """Draw the sample and write the sheet, rubric, key and settings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--per-rating", type=int, default=AuditConfig.per_rating)
    parser.add_argument("--seed", type=int, default=AuditConfig.seed)
    parser.add_argument(
        "--sources", default=",".join(SOURCES), help="comma-separated (core.audit.KNOWN_SOURCES)"
    )
    parser.add_argument("--folder", default=AUDIT_FOLDER, help="the sheet's folder inside --results")
    args = parser.parse_args()
    if args.per_rating < 1:
        parser.error(f"--per-rating must be at least 1, not {args.per_rating}")
    if not args.folder or "/" in args.folder or args.folder.startswith("."):
        parser.error(f"--folder must be a plain folder name, not {args.folder!r}")
    sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
    try:
        config = AuditConfig(per_rating=args.per_rating, seed=args.seed, sources=sources)
    except ValueError as err:
        parser.error(f"--sources: {err}")
    data_dir = data.resolve_data_dir(args.data_dir)
    items = [it for split in data.all_feedback(data_dir)["test"] for it in split.items]
    rows = audit_rows(
        items,
        load_table(args.results, "explanations.parquet"),
        load_table(args.results, "explain_rate_predictions.parquet"),
        config,
        load_table(args.results, "explanation_greedy.parquet") if GREEDY in sources else None,
    )
    out = args.results / args.folder
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / "sheet.md", ("# Explanations to judge\n\n" + sheet_markdown(rows)).encode())
    atomic_write_bytes(out / "rubric.md", ("# Rubric\n\n" + RUBRIC).encode())
    key = rows.drop(columns=["question", "passage"])
    atomic_write_bytes(out / "key.csv", key.to_csv(index=False).encode())
    commits = {s: load_stage(args.results, s)["git_commit"] for s in ("explain", "explain_rate")}
    atomic_write_json(
        out / "audit.json", {"config": asdict(config), "results_commits": commits, "rows": len(rows)}
    )
    print(f"{len(rows)} rows of {rows[['domain', 'item_id']].drop_duplicates().shape[0]} items -> {out}")


if __name__ == "__main__":
    main()
