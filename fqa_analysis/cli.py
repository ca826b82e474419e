"""The ``fqa`` command line.

    fqa data fetch [--data-dir DIR] [--from MIRROR]   fill the data folder, verified
    fqa data check [--data-dir DIR]                   validate and count everything

Exit codes: 0 success, 1 bad data (a message per problem, no traceback), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from fqa_analysis import data
from fqa_analysis.datacheck import check_data
from fqa_analysis.errors import DataError
from fqa_analysis.fetch import fetch

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fqa", description="FeedbackQA evaluation toolkit")
    sub = parser.add_subparsers(dest="group", required=True)
    data_p = sub.add_parser("data", help="fetch and check the FeedbackQA data")
    data_sub = data_p.add_subparsers(dest="command", required=True)
    dir_help = f"data folder (default: ${data.ENV_DATA_DIR}, else {data.default_cache_dir()})"
    fetch_p = data_sub.add_parser("fetch", help="download (or copy from a mirror) and verify")
    fetch_p.add_argument("--data-dir", type=Path, help=dir_help)
    fetch_p.add_argument(
        "--from", dest="source", type=Path, help="copy from this local mirror instead of downloading"
    )
    check_p = data_sub.add_parser("check", help="validate every file and print counts")
    check_p.add_argument("--data-dir", type=Path, help=dir_help)
    return parser


def _fetch_dest(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    env = os.environ.get(data.ENV_DATA_DIR)
    return Path(env) if env else data.default_cache_dir()


def _cmd_fetch(args: argparse.Namespace) -> int:
    dest = _fetch_dest(args.data_dir)
    report = fetch(dest, args.source)
    print(
        f"{dest}: {len(report.fetched)} file(s) written, {len(report.verified)} already verified, "
        f"{len(report.unavailable)} not in the mirror"
    )
    for name in report.unavailable:
        print(f"  not available from the mirror (absent upstream copy): {name}")
    for problem in report.problems:
        print(problem.message(), file=sys.stderr)
    return 1 if report.problems else 0


def _cmd_check(args: argparse.Namespace) -> int:
    data_dir = data.resolve_data_dir(args.data_dir)
    report = check_data(data_dir)
    print(f"data: {data_dir}")
    if not report.counts.empty:
        print(report.display_counts().to_string(index=False))
    for note in report.notes:
        print(f"note: {note}")
    if report.problems:
        print(f"\n{len(report.problems)} problem(s):", file=sys.stderr)
        for problem in report.problems:
            print(f"- {problem.message()}", file=sys.stderr)
        return 1
    print("ok: every file is valid")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = _parser().parse_args(argv)
    commands = {("data", "fetch"): _cmd_fetch, ("data", "check"): _cmd_check}
    try:
        return commands[(args.group, args.command)](args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
