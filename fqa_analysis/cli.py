"""The ``fqa`` command line.

    fqa data fetch [--data-dir DIR] [--from MIRROR]   fill the data folder, verified
    fqa data check [--data-dir DIR]                   validate and count everything
    fqa run [all|rqa|relevance|rerank|explain|beyond|explain_rate] [--subset N]   run the pipeline

Exit codes: 0 success, 1 bad data (a message per problem, no traceback), 2 usage.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from fqa_analysis import data
from fqa_analysis.cache import ENV_CACHE_DIR, default_cache_root
from fqa_analysis.core.results import relevance_model_seconds, results_dir
from fqa_analysis.data.check import check_data
from fqa_analysis.data.fetch import fetch
from fqa_analysis.errors import DataError
from fqa_analysis.models.explain_rate import FORMS as EXPLAIN_RATE_FORMS
from fqa_analysis.models.explain_rate import ExplainRateConfig
from fqa_analysis.models.explainer import DecodeConfig, GeneratorConfig
from fqa_analysis.models.reranker.encoder import (
    DEVICES,
    MINILM_LAYERS,
    RerankConfig,
    resolve_device,
    uses_bf16,
)
from fqa_analysis.models.reranker.variants import (
    NEGATIVE_SOURCES,
    RELEVANCE_LOSSES,
    VARIANTS,
    RerankRunConfig,
)
from fqa_analysis.models.retrieval import SYSTEMS, FineTuneConfig
from fqa_analysis.profiling import announce, duration_text
from fqa_analysis.stages.beyond import RUN_KINDS, BeyondRunConfig, RunSelectionError
from fqa_analysis.stages.explain_rate import ExplainRateRunConfig
from fqa_analysis.stages.manifest import ConfigurationMismatchError, pinned_commit
from fqa_analysis.stages.plan import PlannedRun, data_fingerprint, plan_lines, plan_stage
from fqa_analysis.stages.relevance import RECIPES, RelevanceRunConfig
from fqa_analysis.stages.rqa import K, RQARunConfig

#: Defaults shown in ``--help`` come from these instances, so help and behaviour cannot drift apart.
_RERANK = RerankRunConfig()


def _listed(values: Sequence[object]) -> str:
    return ",".join(str(v) for v in values)


__all__ = ["main", "options_markdown", "parse_args", "stage_configs", "stage_modules"]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (argparse prints its whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fqa", description="FeedbackQA evaluation toolkit")
    sub = parser.add_subparsers(dest="group", required=True, parser_class=_Parser)
    data_p = sub.add_parser("data", help="fetch and check the FeedbackQA data")
    data_sub = data_p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    # the defaults in words, not this machine's paths: the README's options table is this help
    dir_help = (
        f"data folder (default: ${data.ENV_DATA_DIR}, else $XDG_CACHE_HOME or ~/.cache, "
        "then fqa-eval/feedbackqa)"
    )
    fetch_p = data_sub.add_parser("fetch", help="download (or copy from a mirror) and verify")
    fetch_p.add_argument("--data-dir", type=Path, help=dir_help)
    fetch_p.add_argument(
        "--from", dest="source", type=Path, help="copy from this local mirror instead of downloading"
    )
    check_p = data_sub.add_parser("check", help="validate every file and print counts")
    check_p.add_argument("--data-dir", type=Path, help=dir_help)

    run_p = sub.add_parser(
        "run",
        help="run pipeline stages (cached, resumable)",
        description="Run one stage of the pipeline, or all of them in order (`fqa run` = `fqa run all`). "
        "`fqa run STAGE --help` lists that stage's options.",
    )
    stage_sub = run_p.add_subparsers(dest="stage", metavar="STAGE", parser_class=_Parser)
    stage_parsers = [
        stage_sub.add_parser(
            name,
            help=STAGE_HELP[name],
            description=f"{STAGE_HELP[name]}. Defaults reproduce the committed results/ "
            "(results/manifest.json). Every option is checked before any work starts.",
        )
        for name in STAGES
    ]

    def add(*names: str, **kwargs: Any) -> None:
        """Add an option to every stage's parser, listed in the help of the stages that read it.

        Every stage parses every option, so that one a stage does not read is refused with the
        stages that do read it named (``_pointless``) rather than argparse's "unrecognized".
        """
        dest = kwargs.get("dest") or names[0].lstrip("-").replace("-", "_")
        kind = kwargs.get("type")
        if "metavar" not in kwargs and kind is not None and kwargs.get("action") is None:
            # N, W, LIST, DIR ... in the help and the README's table instead of the option's name
            kwargs = {**kwargs, "metavar": "DIR" if kind is Path else getattr(kind, "metavar", "VALUE")}
        for stage_p in stage_parsers:
            shown = dest in COMMON_OPTIONS or dest in STAGES[stage_p.prog.rsplit(" ", 1)[-1]]
            stage_p.add_argument(*names, **{**kwargs, **({} if shown else {"help": argparse.SUPPRESS})})

    add("--data-dir", type=Path, help=dir_help)
    add("--out", type=Path, default=Path("results"), help="results folder (default: %(default)s)")
    add(
        "--cache-dir",
        type=Path,
        help=f"model-output cache (default: ${ENV_CACHE_DIR}, else $XDG_CACHE_HOME or ~/.cache, then "
        "fqa-eval/runs)",
    )
    add(
        "--plan",
        action="store_true",
        help="check every option and input, then list each run the command would compute, read from the "
        "cache or find in --out, with its estimated time from recorded timings (float32, 2 CPU cores) and "
        "a total; computes nothing",
    )
    # Every option is parsed and range-checked here, before any work starts: a bad value ends in
    # one line naming the option, the value and what is allowed (exit 2), never in a traceback or
    # half an hour into a run. Defaults are None so that `_pointless` sees what was given.
    add(
        "--subset",
        type=_int_in(1),
        help="only the first N questions of every split, 1 or more (CI smoke runs; default: unset, "
        "every question)",
    )
    add(
        "--systems",
        type=_choices(SYSTEMS),
        help=f"comma-separated RQA systems (default: {','.join(SYSTEMS)})",
    )
    add("--seed", type=_int_in(0), help=f"RQA fine-tuning seed, 0 or more (default: {RQARunConfig.seed})")
    add(
        "--epochs",
        type=_int_in(1),
        help=f"RQA fine-tuning epochs of minilm_ft (and hybrid), 1 or more "
        f"(default: {FineTuneConfig.epochs})",
    )
    add(
        "--max-steps",
        type=_int_in(1),
        help="stop every training after N optimiser steps in all, 1 or more (smoke runs; default: unset, "
        "every epoch in full)",
    )
    add(
        "--replace",
        action="store_const",
        const=True,
        help="rqa / relevance / rerank / beyond: drop the earlier runs in --out when they were computed "
        "under another configuration (without it such a run is refused: a stage never mixes configurations)",
    )
    add(
        "--variants",
        type=_choices(tuple(VARIANTS)),
        help=f"comma-separated reranker variants (default: {','.join(VARIANTS)})",
    )
    add(
        "--seeds",
        type=_int_list,
        help="comma-separated reranker training seeds, integers 0 or more (default: each variant's own, "
        + "; ".join(f"{v} {_listed(var.seeds)}" for v, var in VARIANTS.items())
        + f"; explain_rate {_listed(ExplainRateRunConfig.seeds)}, its paper form "
        + f"{_listed(PAPER_FORM_SEEDS)})",
    )
    add(
        "--frozen-layers",
        type=_int_in(0, MINILM_LAYERS),
        help=f"reranker: lower transformer layers kept frozen, 0..{MINILM_LAYERS} (default: "
        f"{RerankConfig.frozen_layers}, every layer trained)",
    )
    add(
        "--warm-frozen-layers",
        type=_int_in(0, MINILM_LAYERS - 1),
        help="rerank stage: lower layers of the relevance model kept frozen in every variant "
        f"continued from it, 0..{MINILM_LAYERS - 1}; their states are computed once (default: "
        f"{RerankRunConfig.warm_frozen_layers}, every layer trained)",
    )
    add(
        "--relevance-per-seed",
        action="store_const",
        const=True,
        help="rerank stage: seed k of every variant continued from the relevance model starts from the "
        "relevance model of seed k, which vanilla then trains too (default: every seed starts from the "
        "one relevance model of seed 0); a run under it goes to a results folder of its own",
    )
    add(
        "--rerank-epochs",
        type=_int_in(1),
        help=f"reranker epochs (default: {RerankConfig.epochs}) of every variant but "
        + ", ".join(f"{v} ({n})" for v, n in _RERANK.variant_epochs.items())
        + " (RerankRunConfig.variant_epochs)",
    )
    add(
        "--max-len",
        type=_int_in(32, 512),
        help=f"reranker: tokens of question + passage, 32..512 (default: {RerankConfig.max_len})",
    )
    add(
        "--layers",
        type=_int_in(1, MINILM_LAYERS),
        help=f"reranker: MiniLM's first N transformer layers make the cross-encoder (its capacity), "
        f"1..{MINILM_LAYERS}; a measurement in a folder of its own (default: "
        f"{RerankConfig.encoder_layers}, the whole model)",
    )
    add(
        "--pseudo-negatives",
        type=_int_in(1, RerankRunConfig.negative_pool),
        help=f"reranker: pseudo negatives per QA-train question, 1..{RerankRunConfig.negative_pool} "
        f"(default: {RerankRunConfig.pseudo_negatives})",
    )
    add(
        "--relevance-loss",
        choices=list(RELEVANCE_LOSSES),
        help="relevance model (vanilla): pointwise (each pseudo pair's 4-way cross-entropy) or listwise "
        "(that plus a softmax over each question's gold and negatives) "
        f"(default: {RerankRunConfig.relevance_loss})",
    )
    add(
        "--negative-source",
        choices=list(NEGATIVE_SOURCES),
        help=f"relevance model: RQA system whose ranking gives the pseudo negatives (default: "
        f"{RerankRunConfig.negative_source})",
    )
    add(
        "--relevance-domains",
        type=_choices(data.DOMAINS),
        help="relevance model: domains whose QA-train questions give the pseudo pairs (default: "
        f"{','.join(RerankRunConfig.relevance_domains)})",
    )
    add(
        "--relevance-epochs",
        type=_int_in(1, 10),
        help="relevance model: epochs over the pseudo pairs, 1..10 (default: "
        f"{_RERANK.variant_epochs['vanilla']})",
    )
    add(
        "--recipes",
        type=_choices(tuple(RECIPES)),
        help=f"relevance stage: recipes to measure, of {','.join(RECIPES)} "
        f"(default: {','.join(RelevanceRunConfig.recipes)})",
    )
    add(
        "--rescore",
        type=_choices(SYSTEMS),
        help=f"RQA systems whose top {K} every reranker rescores (default: "
        f"{_listed(RerankRunConfig.score_rqa)}; explain_rate: {_listed(ExplainRateRunConfig.rqa)}; a pair "
        "two systems share is scored once)",
    )
    add(
        "--device",
        choices=list(DEVICES),
        help="reranker training and scoring: auto (CUDA where torch sees a GPU), cpu or cuda (default: auto)",
    )
    add(
        "--explain-epochs",
        type=_int_in(1),
        help=f"explanation generator epochs, 1 or more (default: {GeneratorConfig.epochs})",
    )
    add(
        "--explain-candidates",
        type=_int_in(0, 16),
        help="explanations sampled besides the greedy one, of which a rating classifier and the similarity "
        f"to the pair keep one, 0..16; 0 = greedy decoding (default: {DecodeConfig.candidates})",
    )
    add(
        "--explain-opening-weight",
        type=_float_in(0.0, 100.0),
        help="explanation chooser: penalty against openings the generator over-uses (their share of its "
        "greedy explanations, times this weight), 0..100; given, it fixes the decoding of feedback_test "
        "(default: the held-out levers adopt the policy, see the Explanations chapter)",
    )
    add(
        "--explain-sim-weight",
        type=_float_in(0.0, 100.0),
        help="explanation chooser: weight of the similarity to the pair beside the rating classifier's "
        "log probability, 0..100; given, it fixes the decoding of feedback_test (default: the held-out "
        f"levers adopt it; {DecodeConfig.sim_weight:g} where none qualifies)",
    )
    add(
        "--explain-nonword-weight",
        type=_float_in(0.0, 100.0),
        help="explanation chooser: penalty per word of a candidate that no training explanation, question "
        "or passage holds, 0..100; given, it fixes the decoding of feedback_test (default: the held-out "
        f"levers adopt it; {DecodeConfig.nonword_weight:g} where none qualifies)",
    )
    add(
        "--explain-rate-epochs",
        type=_int_in(1),
        help=f"explain-then-rate reranker epochs, 1 or more (default: {ExplainRateConfig.epochs})",
    )
    add(
        "--explain-rate-form",
        choices=list(EXPLAIN_RATE_FORMS),
        help="explain-then-rate reranker: ours (the rating head reads the model's own explanation while "
        "training and sees the encoder's summary of the pair; results explain_rate_*) or paper (the head "
        "reads the annotators' explanations, teacher-forced, and sees the decoder's state alone; results "
        f"explain_rate_paper_*) (default: {ExplainRateConfig().form}; `fqa run` without a stage runs both)",
    )
    add(
        "--explain-rate-unlikelihood",
        type=_float_in(0.0, 100.0),
        help="explain-then-rate reranker (our form): weight of an unlikelihood term against openings "
        "its own explanations share across a batch, 0..100 (default: chosen with the nucleus by seed 0's "
        "held-out levers; given by hand, neither is chosen)",
    )
    add(
        "--explain-rate-top-p",
        type=_float_in(0.01, 1.0),
        help="explain-then-rate reranker: nucleus mass of the explanation the model writes, in training "
        "(what the rating head reads, our form) and at inference, a seeded draw instead of the greedy "
        "sentence, 0.01..1 (default: chosen with the unlikelihood weight by seed 0's held-out levers; given "
        "by hand, neither is chosen and an unset one is greedy / 0)",
    )
    add(
        "--fractions",
        type=_fractions,
        help="beyond stage: shares in (0, 1] of the training feedback for the learning curve "
        f"(default: {_listed(BeyondRunConfig.fractions)})",
    )
    add(
        "--experiment-seeds",
        type=_int_list,
        help="beyond stage: seeds of each learning-curve and transfer run, integers 0 or more (default: "
        f"{_listed(BeyondRunConfig.seeds)}; the fraction-1 point reuses every --seeds model)",
    )
    add(
        "--beyond-runs",
        type=_patterns,
        help="beyond stage: comma-separated runs to compute, shell-style patterns over "
        "selection/<variant>/seed<N>, fraction/<share>/seed<N>, leave_out/<domain>/seed<N>, "
        "size_control/<domain>/seed<N>, deep/<variant>/seed<N> (default: all; runs accumulate in --out)",
    )
    add(
        "--depth",
        type=_int_in(5, 100),
        help=f"beyond stage: candidates kept for the top-k sweep, 5..100 (default: {BeyondRunConfig.depth})",
    )
    return parser


#: Seeds of the explain-then-rate model's paper form when ``--seeds`` is not given: one, since that
#: form rates every pair Bad whatever its seed (measured); our form, the one compared, has three.
PAPER_FORM_SEEDS: tuple[int, ...] = (0,)

#: The stages of ``fqa run`` and the options each one reads (``all`` reads every option).
_RERANK_OPTIONS = {
    "subset",
    "variants",
    "seeds",
    "frozen_layers",
    "rerank_epochs",
    "max_len",
    "layers",
    "pseudo_negatives",
    "relevance_loss",
    "negative_source",
    "relevance_domains",
    "relevance_epochs",
    "rescore",
    "device",
    "max_steps",
}
STAGES: dict[str, set[str]] = {
    "all": set(),
    "rqa": {"subset", "systems", "seed", "epochs", "max_steps", "replace"},
    # the recipes set the relevance options themselves; the model options are shared
    "relevance": {"subset", "recipes", "max_len", "layers", "device", "max_steps", "replace"},
    "rerank": _RERANK_OPTIONS | {"replace", "warm_frozen_layers", "relevance_per_seed"},
    "explain": {
        "subset",
        "explain_epochs",
        "explain_candidates",
        "explain_opening_weight",
        "explain_sim_weight",
        "explain_nonword_weight",
        "max_steps",
    },
    # the beyond stage loads (or trains) the rerank stage's models, so it reads their options too
    "beyond": _RERANK_OPTIONS | {"fractions", "experiment_seeds", "depth", "beyond_runs", "replace"},
    "explain_rate": {
        "subset",
        "seeds",
        "rescore",
        "device",
        "max_steps",
        "explain_rate_epochs",
        "explain_rate_form",
        "explain_rate_unlikelihood",
        "explain_rate_top_p",
        # the relevance model its encoder starts from
        "pseudo_negatives",
        "relevance_loss",
        "negative_source",
        "relevance_domains",
        "relevance_epochs",
    },
}
STAGES["all"] = set().union(*STAGES.values())
#: Options every stage reads (where the data, the results and the cache are).
COMMON_OPTIONS = frozenset({"data_dir", "out", "cache_dir", "plan"})
#: One line per stage: what it computes (its ``--help`` and ``fqa run --help``).
STAGE_HELP: dict[str, str] = {
    "all": "every stage, in order: rqa, relevance, rerank, explain, beyond, explain_rate",
    "rqa": "retrieval systems bm25, minilm, minilm_ft (fine-tuned) and hybrid: top-5 candidates and ranks",
    "relevance": "the relevance model's recipes, measured on held-out QA-train questions",
    "rerank": "the relevance model (vanilla) and the rerankers, each rescoring every RQA system",
    "explain": "explainers (template, retrieval, fine-tuned generator) scored against people",
    "beyond": "learning-curve, leave-one-domain-out and top-20 rerankers",
    "explain_rate": "the explain-then-rate reranker, rescoring hybrid and minilm_ft",
}


def _float_in(low: float, high: float) -> Any:
    """An argparse type: a finite number in ``low..high``."""
    allowed = f"{low:g}..{high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number (allowed: {allowed})") from None
        if not low <= value <= high:  # NaN fails both comparisons
            raise argparse.ArgumentTypeError(f"{text} is out of range (allowed: {allowed})")
        return value

    parse.metavar = "X"  # type: ignore[attr-defined]  # shown in the help
    return parse


def _int_in(low: int, high: int | None = None) -> Any:
    """An argparse type: an integer in ``low..high`` (``low`` or more when ``high`` is None)."""
    allowed = f"{low} or more" if high is None else f"{low}..{high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer (allowed: {allowed})") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is out of range (allowed: {allowed})")
        return value

    parse.metavar = "N"  # type: ignore[attr-defined]  # shown in the help
    return parse


def _items(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if any(not t for t in items) and any(items):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item (give a comma-separated list: a,b)")
    if not any(items):
        raise argparse.ArgumentTypeError(f"{text!r} names nothing (give a comma-separated list)")
    if len(set(items)) < len(items):
        raise argparse.ArgumentTypeError(f"{text!r} repeats an item")
    return items


def _choices(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> tuple[str, ...]:
        items = _items(text)
        bad = [i for i in items if i not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(bad)} (allowed: {', '.join(allowed)})")
        return tuple(items)

    parse.metavar = "LIST"  # type: ignore[attr-defined]  # shown in the help
    return parse


def _int_list(text: str) -> tuple[int, ...]:
    """Comma-separated integers >= 0, e.g. ``0,1,2``."""
    try:
        values = tuple(int(i) for i in _items(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers >= 0 (e.g. 0,1,2)"
        ) from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} has a negative seed (allowed: integers >= 0)")
    return values


_int_list.metavar = "LIST"  # type: ignore[attr-defined]


def _fractions(text: str) -> tuple[float, ...]:
    """Comma-separated shares in (0, 1], e.g. ``0.1,0.5,1``."""
    try:
        values = tuple(float(i) for i in _items(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers such as 0.1,0.5,1") from None
    if not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} has a share outside (0, 1]")
    return values


_fractions.metavar = "LIST"  # type: ignore[attr-defined]


def _patterns(text: str) -> tuple[str, ...]:
    """Comma-separated run patterns of the beyond stage, each of a known kind (``deep/*``)."""
    items = tuple(_items(text))
    bad = [i for i in items if not any(fnmatch.fnmatchcase(k, i.split("/")[0]) for k in RUN_KINDS)]
    if bad:
        raise argparse.ArgumentTypeError(
            f"{', '.join(bad)}: a run starts with one of {', '.join(RUN_KINDS)} (e.g. deep/combined/seed0, "
            "selection/*_scratch/*)"
        )
    return items


_patterns.metavar = "LIST"  # type: ignore[attr-defined]


def _pointless(args: argparse.Namespace) -> list[str]:
    """Options that were given but would have no effect on what this run computes.

    They are refused (a user who passes ``--fractions`` to the rqa stage expects it to matter).
    """
    notes = []
    reads = STAGES[args.stage]
    for name in sorted(STAGES["all"] - reads):
        if getattr(args, name) is not None:
            users = [s for s in STAGES if s != "all" and name in STAGES[s]]
            notes.append(
                f"--{name.replace('_', '-')} is read by stage {' / '.join(users)} only; "
                f"it has no effect on `fqa run {args.stage}`"
            )
    systems = args.systems or SYSTEMS
    if args.stage in ("all", "rqa") and not {"minilm_ft", "hybrid"} & set(systems):
        for name in ("epochs", "seed"):
            if getattr(args, name) is not None:
                notes.append(
                    f"--{name} sets the fine-tuning of minilm_ft / hybrid, which --systems "
                    f"{','.join(systems)} does not include: it has no effect"
                )
    if args.warm_frozen_layers is not None and args.stage == "all":
        # the other stages load the rerank stage's models with every layer: a frozen run is a
        # measurement in a folder of its own, not a setting for the whole pipeline
        notes.append(f"--warm-frozen-layers is read by `fqa run rerank` alone, not `fqa run {args.stage}`")
    if args.relevance_per_seed is not None and args.stage == "all":
        # the other stages continue from the one relevance model: per-seed starts are a measurement
        # of the rerank stage in a folder of its own, not a setting for the whole pipeline
        notes.append(f"--relevance-per-seed is read by `fqa run rerank` alone, not `fqa run {args.stage}`")
    if args.explain_rate_unlikelihood and args.stage == "explain_rate" and args.explain_rate_form == "paper":
        notes.append(
            "--explain-rate-unlikelihood acts on the explanations our form writes while training; "
            "the paper's form (--explain-rate-form paper) reads the annotators' instead"
        )
    if args.layers is not None and args.stage == "all":
        # the explain and explain_rate stages load the rerankers into a whole MiniLM
        notes.append(
            f"--layers is read by `fqa run rerank` and `fqa run relevance`, not `fqa run {args.stage}`"
        )
    layers = RerankConfig.encoder_layers if args.layers is None else args.layers
    for name in ("frozen_layers", "warm_frozen_layers"):
        value = getattr(args, name)
        if value is not None and value > layers - (name == "warm_frozen_layers"):
            notes.append(
                f"--{name.replace('_', '-')} {value} with --layers {layers}: the cross-encoder has "
                f"{layers} layers, so at most {layers - (name == 'warm_frozen_layers')} can be frozen"
            )
    if args.warm_frozen_layers and args.frozen_layers:
        notes.append(
            "--frozen-layers with --warm-frozen-layers would train the relevance model on MiniLM's "
            "frozen lower layers, leaving it none of its own to freeze"
        )
    return notes


def _folder_problem(path: Path, option: str) -> str | None:
    """Why ``path`` cannot be the folder a command writes to (None when it can).

    A folder that does not exist yet is created; one that exists must be a folder, and the nearest
    existing folder above it must be writable. Checked before any work, so a mistake costs nothing.

    Example:
        >>> _folder_problem(Path(__file__), "--out")  # doctest: +ELLIPSIS
        '--out .../cli.py is a file, not a folder; give a folder (it is created if missing)'
    """
    if path.exists() and not path.is_dir():
        return f"{option} {path} is a file, not a folder; give a folder (it is created if missing)"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{option} {path}: {existing} is not writable; give a folder you can write to"
    return None


def _fetch_dest(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    env = os.environ.get(data.ENV_DATA_DIR)
    return Path(env) if env else data.default_cache_dir()


def _cmd_fetch(args: argparse.Namespace) -> int:
    dest = _fetch_dest(args.data_dir)
    refused = _folder_problem(dest, "--data-dir")
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
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


def stage_configs(args: argparse.Namespace, device: str = "cpu") -> dict[str, Any]:
    """The configuration of every stage ``args`` runs, by stage name (explain_rate: one per form).

    Without options these are the configurations recorded in the committed ``results/manifest.json``
    (``tests/test_defaults.py``), so ``fqa run STAGE`` reproduces the book's results.
    """
    from fqa_analysis.stages.explain import ExplainRunConfig

    configs: dict[str, Any] = {}
    systems = args.systems or SYSTEMS
    seed = RQARunConfig.seed if args.seed is None else args.seed
    finetune = FineTuneConfig(
        epochs=args.epochs or FineTuneConfig.epochs, seed=seed, max_steps=args.max_steps
    )
    configs["rqa"] = RQARunConfig(systems=systems, subset=args.subset, seed=seed, finetune=finetune)
    defaults = RerankConfig()
    model = RerankConfig(
        frozen_layers=defaults.frozen_layers if args.frozen_layers is None else args.frozen_layers,
        epochs=args.rerank_epochs or defaults.epochs,
        max_len=args.max_len or defaults.max_len,
        encoder_layers=args.layers or defaults.encoder_layers,
        max_steps=args.max_steps,
        device=device,
        bf16=uses_bf16(device),
    )
    rerank = RerankRunConfig(
        variants=args.variants or tuple(VARIANTS),
        seeds=args.seeds or RerankRunConfig.seeds,
        model=model,
        subset=args.subset,
        pseudo_negatives=args.pseudo_negatives or RerankRunConfig.pseudo_negatives,
        relevance_loss=args.relevance_loss or RerankRunConfig.relevance_loss,
        negative_source=args.negative_source or RerankRunConfig.negative_source,
        relevance_domains=args.relevance_domains or RerankRunConfig.relevance_domains,
        score_rqa=args.rescore or RerankRunConfig.score_rqa,
        warm_frozen_layers=args.warm_frozen_layers or RerankRunConfig.warm_frozen_layers,
        relevance_per_seed=bool(args.relevance_per_seed),
    )
    if args.relevance_epochs is not None:
        rerank = replace(rerank, variant_epochs={**rerank.variant_epochs, "vanilla": args.relevance_epochs})
    configs["relevance"] = RelevanceRunConfig(
        recipes=args.recipes or RelevanceRunConfig.recipes, rerank=rerank
    )
    configs["rerank"] = rerank
    generator = GeneratorConfig(
        epochs=args.explain_epochs or GeneratorConfig.epochs, max_steps=args.max_steps
    )
    candidates = DecodeConfig.candidates if args.explain_candidates is None else args.explain_candidates
    weights = (args.explain_opening_weight, args.explain_sim_weight, args.explain_nonword_weight)
    opening, sim, nonword = (
        default if given is None else given
        for given, default in zip(
            weights,
            (DecodeConfig.opening_weight, DecodeConfig.sim_weight, DecodeConfig.nonword_weight),
            strict=True,
        )
    )
    decode = DecodeConfig(
        candidates=candidates, opening_weight=opening, sim_weight=sim, nonword_weight=nonword
    )
    # a weight given by hand fixes the decoding; otherwise the held-out levers adopt one
    by_hand = any(w is not None for w in weights)
    configs["explain"] = ExplainRunConfig(
        generator=generator, decode=decode, subset=args.subset, adopt=not by_hand
    )
    configs["beyond"] = BeyondRunConfig(
        rerank=rerank,
        fractions=args.fractions or BeyondRunConfig.fractions,
        seeds=args.experiment_seeds or BeyondRunConfig.seeds,
        depth=args.depth or BeyondRunConfig.depth,
        runs=args.beyond_runs,
    )
    # `fqa run` (all) runs both forms, which the chapter compares; the stage alone runs one
    forms = (
        [args.explain_rate_form or ExplainRateConfig().form]
        if args.stage == "explain_rate"
        else list(EXPLAIN_RATE_FORMS)
    )
    by_hand = args.explain_rate_unlikelihood is not None or args.explain_rate_top_p is not None
    explain_rate = []
    for form in forms:
        head_reads, head_input = EXPLAIN_RATE_FORMS[form]
        unchosen = by_hand or head_reads != "own"
        explain_rate.append(
            ExplainRateRunConfig(
                model=ExplainRateConfig(
                    epochs=args.explain_rate_epochs or ExplainRateConfig.epochs,
                    max_steps=args.max_steps,
                    device=device,
                    bf16=uses_bf16(device),
                    head_reads=head_reads,
                    head_input=head_input,
                    # our form only (the paper's reads the annotators' explanations, not its own)
                    opening_unlikelihood=(args.explain_rate_unlikelihood or 0.0)
                    if head_reads == "own"
                    else 0.0,
                    own_top_p=args.explain_rate_top_p,
                ),
                seeds=args.seeds or (PAPER_FORM_SEEDS if form == "paper" else ExplainRateRunConfig.seeds),
                # a weight or nucleus given by hand is used as it is; otherwise seed 0's held-out
                # levers choose them
                unlikelihood_levers=() if unchosen else ExplainRateRunConfig.unlikelihood_levers,
                top_p_levers=() if unchosen else ExplainRateRunConfig.top_p_levers,
                rqa=args.rescore or ExplainRateRunConfig.rqa,
                subset=args.subset,
                relevance=rerank,
            )
        )
    configs["explain_rate"] = explain_rate
    return {name: config for name, config in configs.items() if args.stage in ("all", name)}


def stage_modules() -> dict[str, ModuleType]:
    """Each stage's module by stage name, in the order ``fqa run`` runs them (imported when asked)."""
    from fqa_analysis.stages import beyond, explain, explain_rate, relevance, rerank, rqa

    return {
        "rqa": rqa,
        "relevance": relevance,
        "rerank": rerank,
        "explain": explain,
        "beyond": beyond,
        "explain_rate": explain_rate,
    }


def _committed_entry(out: Path, entry: str) -> dict[str, Any]:
    """A stage's entry in the committed results' manifest (else ``out``'s): the recorded timings."""
    from fqa_analysis.stages.manifest import manifest_entry

    try:
        committed = results_dir()
    except DataError:
        committed = out
    return manifest_entry(committed, entry)


#: The stages whose runs accumulate in a results folder, and which refuse another configuration.
ACCUMULATING = ("rqa", "relevance", "rerank", "beyond")


def _plan(
    configs: dict[str, Any], out: Path, cache_root: Path, data_dir: Path, replace_runs: bool
) -> list[PlannedRun]:
    """Every run of ``configs``: in ``out``, cached or to compute, with its estimated time.

    Raises:
        ConfigurationMismatchError: ``out`` holds an accumulating stage under another configuration
            and ``replace_runs`` is False (before any work, as the stage itself would refuse it).
    """
    from fqa_analysis.stages.manifest import accumulated_entry, manifest_entry

    modules = stage_modules()
    explain_rate = modules["explain_rate"]
    data_key = data_fingerprint(data_dir)
    plan: list[PlannedRun] = []
    for stage_name, stage_configs_ in configs.items():
        module = modules[stage_name]
        for config in stage_configs_ if stage_name == "explain_rate" else [stage_configs_]:
            entry = stage_name
            if stage_name == "explain_rate":
                entry = explain_rate.output_name(_form(config))
            record = module.config_record(config)
            if stage_name in ACCUMULATING:  # refused here, before any work, as the stage would refuse it
                accumulated_entry(out, entry, record, module.RUN_FIELDS, replace_runs)
            plan += plan_stage(
                entry,
                module.plan_units(config),
                record,
                module.RUN_FIELDS,
                manifest_entry(out, entry),
                _committed_entry(out, entry),
                cache_root,
                data_key,
            )
    return plan


def _cmd_run(args: argparse.Namespace) -> int:
    try:
        device = resolve_device(args.device or "auto")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pointless = _pointless(args)
    for note in pointless:
        print(f"error: {note}; leave it out", file=sys.stderr)
    if pointless:
        return 2
    configs = stage_configs(args, device)
    cache_root = args.cache_dir or default_cache_root()
    folders = [(args.out, "--out"), (cache_root, "--cache-dir")]
    problems = [p for p in (_folder_problem(path, option) for path, option in folders) if p]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 2
    data_dir = data.resolve_data_dir(args.data_dir)
    plan = _plan(configs, args.out, cache_root, data_dir, bool(args.replace))
    if args.plan:
        lines = plan_lines(plan)
        if args.stage in ("relevance", "beyond", "explain_rate"):
            # the book counts each model once: the relevance model in the rerank stage
            recorded = relevance_model_seconds(_committed_entry(args.out, "rerank"))
            lines.insert(
                -1,
                "note: the relevance model is counted in the rerank stage; on a cache without it, this "
                "stage trains it first" + (f" (about {duration_text(recorded)})" if recorded else ""),
            )
        for line in lines:
            print(line)
        return 0
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # its bars name no step: ours do
    calls = _stage_calls(configs, data_dir, args)
    # the code this command runs is the code as it starts, whatever is committed meanwhile
    with pinned_commit():
        _run_calls(calls, plan)
    return 0


def _run_calls(calls: list[tuple[str, Callable[[], Any]]], plan: list[PlannedRun]) -> None:
    """Run each stage call with its progress line, in order."""
    for number, (entry, call) in enumerate(calls, 1):
        runs = [p for p in plan if p.stage == entry and p.run != "(shared)"]
        todo = [p for p in plan if p.stage == entry and p.status == "compute"]
        seconds = sum(p.seconds or 0.0 for p in todo)
        computed = sum(p.run != "(shared)" for p in todo)
        print(
            f"fqa run · stage {number} of {len(calls)} · {entry}: {len(runs)} run(s), {computed} to compute"
            + (f" (about {duration_text(seconds)} by the plan)" if seconds else ""),
            file=sys.stderr,
            flush=True,
        )
        with announce(entry, seconds, [p.run for p in runs]):
            _report(call())


def _stage_calls(
    configs: dict[str, Any], data_dir: Path, args: argparse.Namespace
) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """Each stage run of ``configs`` as (manifest entry, the call that computes it), in order."""
    modules = stage_modules()
    rqa, relevance, rerank = modules["rqa"], modules["relevance"], modules["rerank"]
    explain, beyond, explain_rate = modules["explain"], modules["beyond"], modules["explain_rate"]
    out, cache, replace_runs = args.out, args.cache_dir, bool(args.replace)
    calls: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    if "rqa" in configs:
        calls.append(("rqa", partial(rqa.run_rqa, data_dir, out, configs["rqa"], cache, replace_runs)))
    if "relevance" in configs:
        run = partial(relevance.run_relevance, data_dir, out, configs["relevance"], cache, replace_runs)
        calls.append(("relevance", run))
    if "rerank" in configs:
        calls.append(
            ("rerank", partial(rerank.run_rerank, data_dir, out, configs["rerank"], cache, replace_runs))
        )
    if "explain" in configs:
        calls.append(("explain", partial(explain.run_explain, data_dir, out, configs["explain"], cache)))
    if "beyond" in configs:
        calls.append(
            ("beyond", partial(beyond.run_beyond, data_dir, out, configs["beyond"], cache, replace_runs))
        )
    for config in configs.get("explain_rate", []):
        entry = explain_rate.output_name(_form(config))
        calls.append((entry, partial(explain_rate.run_explain_rate, data_dir, out, config, cache)))
    return calls


def _form(config: Any) -> str:
    """The explain-then-rate form of a configuration (``ours`` or ``paper``)."""
    forms = {reads: form for form, reads in EXPLAIN_RATE_FORMS.items()}
    return forms[(config.model.head_reads, config.model.head_input)]


def _report(entry: dict[str, Any]) -> None:
    for name, timing in entry["timings"].items():
        print(f"{name:36s} {timing['wall_s']:9.1f} s  peak {timing['peak_rss_mb']:8.1f} MiB")
    print(f"stage {entry['stage']} done")


def options_markdown() -> str:
    """The options of ``fqa run`` as a Markdown table: option, the stages that read it, its help.

    The README's options table is this text (``tests/test_cli_options.py``), so the two cannot drift.
    """

    def sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        found: argparse.ArgumentParser = actions[0].choices[name]
        return found

    all_p = sub(sub(_parser(), "run"), "all")
    rows = ["| option | stages | what it sets (default, range) |", "|---|---|---|"]
    for action in all_p._actions:
        if not action.option_strings or action.dest == "help":
            continue
        dest = action.dest
        stages = (
            "every stage"
            if dest in COMMON_OPTIONS
            else ", ".join(s for s in STAGES if s != "all" and dest in STAGES[s])
        )
        shown = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}" if action.choices else "VALUE"
        )
        value = "" if action.nargs == 0 else f" {shown}"
        text = (
            " ".join((action.help or "").split())
            .replace("%(default)s", str(action.default))
            .replace("|", "/")
        )
        rows.append(f"| `{action.option_strings[0]}{value}` | {stages} | {text} |")
    return "\n".join(rows)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse a command line (``fqa run [options]`` is ``fqa run all [options]``); exit 2 on a usage error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    no_stage = len(argv) == 1 or (argv[1].startswith("-") and argv[1] not in ("-h", "--help"))
    if argv[:1] == ["run"] and no_stage:
        argv.insert(1, "all")
    return _parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = parse_args(argv)
    if args.group == "run":
        args.command = "run"
    commands = {("data", "fetch"): _cmd_fetch, ("data", "check"): _cmd_check, ("run", "run"): _cmd_run}
    try:
        return commands[(args.group, args.command)](args)
    except KeyboardInterrupt:
        # every artifact is written atomically and every step is cached as it finishes: a rerun
        # resumes, and nothing half-written is left behind
        print("\ninterrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (ConfigurationMismatchError, RunSelectionError) as exc:  # refused before any work: a usage error
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
