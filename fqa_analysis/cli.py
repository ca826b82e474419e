"""The ``fqa`` command line.

    fqa data fetch [--data-dir DIR] [--from MIRROR]   fill the data folder, verified
    fqa data check [--data-dir DIR]                   validate and count everything
    fqa run [all|rqa|rerank|explain|beyond] [--subset N]   run the pipeline (cached, resumable)

Exit codes: 0 success, 1 bad data (a message per problem, no traceback), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fqa_analysis import data
from fqa_analysis.datacheck import check_data
from fqa_analysis.errors import DataError
from fqa_analysis.explain import GeneratorConfig
from fqa_analysis.fetch import fetch
from fqa_analysis.rerank import RerankConfig
from fqa_analysis.rerank_stage import VARIANTS
from fqa_analysis.retrieval import SYSTEMS, FineTuneConfig

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

    run_p = sub.add_parser("run", help="run pipeline stages (cached, resumable)")
    run_p.add_argument(
        "stage",
        nargs="?",
        default="all",
        choices=["all", "rqa", "rerank", "explain", "beyond"],
        help="stage (default: all, in order rqa, rerank, explain, beyond)",
    )
    run_p.add_argument("--data-dir", type=Path, help=dir_help)
    run_p.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: results)")
    run_p.add_argument(
        "--cache-dir", type=Path, help="model-output cache (default: $FQA_CACHE_DIR or ~/.cache)"
    )
    run_p.add_argument("--subset", type=int, help="only the first N questions of every split (CI smoke runs)")
    run_p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated RQA systems")
    run_p.add_argument("--seed", type=int, default=0, help="training seed")
    run_p.add_argument("--epochs", type=int, default=FineTuneConfig.epochs, help="fine-tuning epochs")
    run_p.add_argument("--max-steps", type=int, help="stop every training after N steps (smoke runs)")
    run_p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated reranker variants")
    run_p.add_argument("--seeds", default="0,1,2", help="comma-separated reranker training seeds")
    run_p.add_argument(
        "--frozen-layers", type=int, default=RerankConfig.frozen_layers, help="reranker layers run once"
    )
    run_p.add_argument("--rerank-epochs", type=int, default=RerankConfig.epochs, help="reranker epochs")
    run_p.add_argument(
        "--explain-epochs", type=int, default=GeneratorConfig.epochs, help="explanation generator epochs"
    )
    run_p.add_argument(
        "--fractions",
        default="0.1,0.25,0.5,1",
        help="beyond stage: shares of the training feedback for the learning curve",
    )
    run_p.add_argument(
        "--depth", type=int, default=20, help="beyond stage: candidates kept for the top-k sweep"
    )
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


def _cmd_run(args: argparse.Namespace) -> int:
    from fqa_analysis.pipeline import RQARunConfig, run_rqa

    data_dir = data.resolve_data_dir(args.data_dir)
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        print(f"error: unknown system(s) {unknown}; choose from {', '.join(SYSTEMS)}", file=sys.stderr)
        return 2
    if args.stage in ("all", "rqa"):
        finetune = FineTuneConfig(epochs=args.epochs, seed=args.seed, max_steps=args.max_steps)
        config = RQARunConfig(systems=systems, subset=args.subset, seed=args.seed, finetune=finetune)
        _report(run_rqa(data_dir, args.out, config, args.cache_dir))
    from fqa_analysis.rerank_stage import RerankRunConfig, run_rerank

    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        print(f"error: unknown variant(s) {bad}; choose from {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    model = RerankConfig(
        frozen_layers=args.frozen_layers, epochs=args.rerank_epochs, max_steps=args.max_steps
    )
    seeds = tuple(int(s) for s in args.seeds.split(","))
    rerank = RerankRunConfig(variants=variants, seeds=seeds, model=model, subset=args.subset)
    if args.stage in ("all", "rerank"):
        _report(run_rerank(data_dir, args.out, rerank, args.cache_dir))
    if args.stage in ("all", "explain"):
        from fqa_analysis.explain_stage import ExplainRunConfig, run_explain

        generator = GeneratorConfig(epochs=args.explain_epochs, max_steps=args.max_steps)
        explain = ExplainRunConfig(generator=generator, subset=args.subset)
        _report(run_explain(data_dir, args.out, explain, args.cache_dir))
    if args.stage in ("all", "beyond"):
        from fqa_analysis.beyond_stage import BeyondRunConfig, run_beyond

        try:
            fractions = tuple(float(f) for f in args.fractions.split(","))
        except ValueError:
            print(
                f"error: --fractions takes numbers such as 0.1,0.5,1; got {args.fractions!r}", file=sys.stderr
            )
            return 2
        beyond = BeyondRunConfig(rerank=rerank, fractions=fractions, seeds=seeds, depth=args.depth)
        _report(run_beyond(data_dir, args.out, beyond, args.cache_dir))
    return 0


def _report(entry: dict[str, Any]) -> None:
    for name, timing in entry["timings"].items():
        print(f"{name:36s} {timing['wall_s']:9.1f} s  peak {timing['peak_rss_mb']:8.1f} MiB")
    print(f"stage {entry['stage']} done")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = _parser().parse_args(argv)
    if args.group == "run":
        args.command = "run"
    commands = {("data", "fetch"): _cmd_fetch, ("data", "check"): _cmd_check, ("run", "run"): _cmd_run}
    try:
        return commands[(args.group, args.command)](args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
