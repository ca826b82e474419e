"""Stage ``beyond`` of ``fqa run``: the retraining and deeper scoring behind "Beyond the paper".

Built on the rqa and rerank stages (their results and model caches); every model is trained once
and cached by content, so a rerun costs seconds. Outputs (added to ``results/``):

* ``feedback_experiments.parquet``: P_phi of feedback rerankers (KL loss) trained on part of the
  feedback, on one RQA system's top-k candidates of the feedback-domain test questions. Runs:
  nested, domain-stratified fractions of the training questions (the learning curve; fraction 1
  is the ``feedback_kl`` model of the rerank stage), every feedback domain left out of training
  and model selection (transfer), and a size-matched control per domain (as many training pairs
  removed at random from all domains). One row per (experiment, setting, seed, question,
  candidate); P_theta and the gold flag are in ``candidates.parquet`` (join on the question keys
  and ``rqa_rank``).
* ``feedback_experiment_ratings.parquet``: the same models' P_phi on every feedback_test item.
* ``selection_predictions.parquet``: every rerank-stage model's P_phi on its own model-selection
  pairs with their target distribution: held-out data to fit a rating temperature on.
* ``deep_candidates.parquet``: the top ``depth`` (20) candidates of every RQA system on the
  feedback-domain test questions, in the candidates contract, plus ``p_rqa_t1`` (P_theta at
  temperature 1, i.e. unscaled, on the RQA's own rows); for one RQA system also reranked by
  ``combined`` (every seed). Ranks 1..5 equal ``candidates.parquet`` (checked).

The stage is a list of runs (:func:`beyond_runs`): ``selection/<variant>/seed<N>`` (a rerank model's
selection pairs), ``<experiment>/<setting>/seed<N>`` (one experiment model) and
``deep/<variant>/seed<N>`` (one rerank model on the deep candidates). ``--beyond-runs`` computes
some of them; runs accumulate in ``results/`` as in every stage (a run's rows replace that run's
rows, another configuration is refused unless ``--replace``), and the manifest lists the runs
present, the commit of each and the runs still planned. A session on a fresh machine must first
retrain the rerank stage's models (the relevance model alone is an hour on 2 cores), so the stage
lands in parts.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_parquet, default_cache_root
from fqa_analysis.core.calibration import pool_softmax
from fqa_analysis.core.candidates import NO_RERANKER, RATING_COLUMNS, validate_candidates
from fqa_analysis.core.results import load_table
from fqa_analysis.models.reranker.encoder import PairStates, encode_pairs, pair_id
from fqa_analysis.models.reranker.inputs import RerankInputs, example_ids, rerank_inputs, variant_examples
from fqa_analysis.models.reranker.network import CACHE_VERSION
from fqa_analysis.models.reranker.pairs import FeedbackExperiment, feedback_experiments
from fqa_analysis.models.reranker.scoring import score_cached, stored_probabilities
from fqa_analysis.models.reranker.store import TrainedModel, stage_model, train_or_load
from fqa_analysis.models.reranker.variants import RELEVANCE_SEED, VARIANTS, RerankRunConfig
from fqa_analysis.models.retrieval import (
    FineTuneConfig,
    HybridSystem,
    RQASystem,
    ScoreCache,
    candidate_rows,
    make_system,
)
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import (
    accumulated_entry,
    add_compute_times,
    kept_run_commits,
    kept_run_timings,
    provenance,
    update_manifest,
)
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = [
    "RUN_FIELDS",
    "RUN_KINDS",
    "BeyondRunConfig",
    "RunSelectionError",
    "beyond_runs",
    "chosen_runs",
    "config_record",
    "experiment_name",
    "plan_units",
    "run_beyond",
]

#: Columns of the experiment tables that name a run.
EXPERIMENT_KEYS: list[str] = ["experiment", "setting", "seed"]

#: The first part of every run name of the stage (:func:`beyond_runs`).
RUN_KINDS: tuple[str, ...] = ("selection", "fraction", "leave_out", "size_control", "deep")


class RunSelectionError(ValueError):
    """``--beyond-runs`` names no run of the stage (refused before any work)."""


#: Config fields that only say which runs ran: runs that differ in nothing else sit side by side.
RUN_FIELDS: tuple[str, ...] = (
    "runs",
    "fractions",
    "seeds",
    "transfer",
    "deep_rerankers",
    "rerank.variants",
    "rerank.seeds",
    "rerank.score_rqa",
)


@dataclass(frozen=True)
class BeyondRunConfig:
    """What ``fqa run beyond`` computes.

    Attributes:
        rerank: The rerank stage's settings (models, seeds, subset, protocol split): the stage
            reuses its models and cached lower-layer states, so these must match that run.
        rqa: The RQA system whose candidates the experiment rerankers rescore.
        fractions: Shares of the training questions for the learning curve.
        seeds: Seeds of every experiment run. One by default: each fully trained run costs
            about four minutes on a 2-core CPU (training plus scoring 12k pairs), and 33 runs
            (3 seeds) would take the stage past its 90-minute budget; the chapters compare
            settings by paired bootstrap over questions, which needs no second seed.
        transfer: Run leave-one-domain-out and its size-matched control.
        depth: Candidates kept per question in ``deep_candidates.parquet``.
        deep_rerankers: Rerank-stage variants that rescore the deep candidates of ``rqa``.
        runs: Which of the stage's runs (:func:`beyond_runs`) to compute, as shell-style
            patterns (``deep/*``, ``selection/*_scratch/*``); None: all of them.
    """

    rerank: RerankRunConfig = field(default_factory=RerankRunConfig)
    rqa: str = "hybrid"
    fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)
    seeds: tuple[int, ...] = (0,)
    transfer: bool = True
    depth: int = 20
    # One reranker, the paper's best: a second one's top-20 rows would push results/ past 20 MB.
    deep_rerankers: tuple[str, ...] = ("combined",)
    runs: tuple[str, ...] | None = None


def experiment_name(run: FeedbackExperiment) -> str:
    """The run name of one experiment model: ``<experiment>/<setting>/seed<N>``."""
    return f"{run.experiment}/{run.setting}/seed{run.seed}"


def beyond_runs(config: BeyondRunConfig, experiments: Sequence[FeedbackExperiment]) -> list[str]:
    """Every run of the stage under ``config``, in the order a full run computes them.

    Example:
        >>> from fqa_analysis.models.reranker.variants import RerankRunConfig
        >>> rerank = RerankRunConfig(variants=("combined",), seeds=(0,))
        >>> beyond_runs(BeyondRunConfig(rerank=rerank), [])
        ['selection/combined/seed0', 'deep/combined/seed0']
    """
    deep = [f"deep/{v}/seed{s}" for v in config.deep_rerankers for s in config.rerank.seeds_of(v)]
    return (
        [f"selection/{v}/seed{s}" for v, s in config.rerank.runs()]
        + [experiment_name(r) for r in experiments]
        + deep
    )


def chosen_runs(planned: Sequence[str], patterns: Sequence[str] | None) -> list[str]:
    """The planned runs that ``patterns`` name (all when None), in the planned order.

    Raises:
        RunSelectionError: A pattern that names none of them (the message lists the forms).

    Example:
        >>> chosen_runs(["selection/a/seed0", "deep/a/seed0", "deep/a/seed1"], ["deep/*"])
        ['deep/a/seed0', 'deep/a/seed1']
    """
    if patterns is None:
        return list(planned)
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(r, pattern) for r in planned):
            raise RunSelectionError(
                f"--beyond-runs: {pattern!r} names none of the beyond stage's runs; they are "
                "selection/<variant>/seed<N>, fraction/<share>/seed<N>, leave_out/<domain>/seed<N>, "
                f"size_control/<domain>/seed<N> and deep/<variant>/seed<N> ({len(planned)} now, e.g. "
                f"{', '.join(planned[:2])})"
            )
    return [r for r in planned if any(fnmatch.fnmatchcase(r, p) for p in patterns)]


def _parse_model_run(run: str) -> tuple[str, int]:
    """``(variant, seed)`` of a ``selection/<variant>/seed<N>`` or ``deep/<variant>/seed<N>`` run."""
    _, variant, seed = run.split("/")
    return variant, int(seed.removeprefix("seed"))


def _needs_relevance(run: str) -> bool:
    """Whether computing ``run`` needs the relevance model (every experiment continues from it)."""
    if not run.startswith(("selection/", "deep/")):
        return True
    variant, _ = _parse_model_run(run)
    return variant == "vanilla" or VARIANTS[variant].start == "relevance"


def _run_model(
    inputs: RerankInputs,
    states: PairStates,
    config: BeyondRunConfig,
    cache_root: Path,
    run: str,
    timings: dict[str, Any],
    from_cache: dict[str, bool],
) -> TrainedModel:
    """The rerank stage's model behind a selection or deep run, from its cache (else retrained)."""
    variant, seed = _parse_model_run(run)
    with stage(timings, f"{run}/model"):
        model = stage_model(inputs, variant, seed, states, config.rerank, cache_root)
    from_cache[f"{run}/model"] = model.from_cache
    return model


def _selection_rows(
    inputs: RerankInputs,
    states: PairStates,
    config: BeyondRunConfig,
    cache_root: Path,
    runs: Sequence[str],
    timings: dict[str, Any],
    from_cache: dict[str, bool],
) -> pd.DataFrame:
    """Per ``selection/<variant>/seed<N>`` run, that rerank model's P_phi on its model-selection pairs."""
    targets = [f"target_{c[2:]}" for c in RATING_COLUMNS]
    frames = [pd.DataFrame(columns=["reranker", "seed", "domain", "pair_id", *targets, *RATING_COLUMNS])]
    for run in runs:
        variant, seed = _parse_model_run(run)
        model = _run_model(inputs, states, config, cache_root, run, timings, from_cache)
        _, select = variant_examples(inputs, variant)
        select_pairs = inputs.sources[VARIANTS[variant].source][1]
        with stage(timings, f"{run}/score"):
            ids = [i for i, _ in select]
            probs, from_cache[f"{run}/score"] = score_cached(
                model.folder, model.weights, ids, states, config.rerank.model
            )
        target = np.stack([t for _, t in select])
        frames.append(
            pd.DataFrame(
                {
                    "reranker": variant,
                    "seed": seed,
                    "domain": [p.domain for p in select_pairs],
                    "pair_id": ids,
                    **{c: target[:, j] for j, c in enumerate(targets)},
                    **dict(zip(RATING_COLUMNS, stored_probabilities(probs).T, strict=True)),
                }
            )
        )
    return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)


def _experiment_rows(
    inputs: RerankInputs,
    states: PairStates,
    config: BeyondRunConfig,
    cache_root: Path,
    runs: Sequence[FeedbackExperiment],
    relevance: TrainedModel | None,
    timings: dict[str, Any],
    from_cache: dict[str, bool],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Train (or load) the given experiment runs; P_phi on the RQA's candidates and on feedback_test.

    Every run continues from ``relevance``, the one relevance model (loaded once by the caller).

    Raises:
        ValueError: ``runs`` is not empty and ``relevance`` is None, or the RQA system has no rows.
    """
    if runs and relevance is None:
        raise ValueError("the experiment runs continue from the relevance model: load it first")
    init = None if relevance is None else (relevance.folder, relevance.weights)
    mine = (inputs.rqa_rows["rqa"] == config.rqa) & inputs.rqa_rows["domain"].isin(data.FEEDBACK_DOMAINS)
    rows = inputs.rqa_rows.loc[mine, ["domain", "split", "question_id", "rqa_rank", "passage_id"]]
    row_ids = [i for i, m in zip(inputs.cand_ids, mine, strict=True) if m]
    if not row_ids:
        raise ValueError(
            f"candidates.parquet has no rows of RQA system {config.rqa!r}; run `fqa run rqa` first"
        )
    score_ids = sorted(set(row_ids) | set(inputs.test_ids))
    position = {pid: i for i, pid in enumerate(score_ids)}
    cand_frames = [pd.DataFrame(columns=[*rows.columns, *EXPERIMENT_KEYS, *RATING_COLUMNS])]
    rating_frames = [pd.DataFrame(columns=[*EXPERIMENT_KEYS, "domain", "item_id", *RATING_COLUMNS])]
    record = {}
    for run in runs:
        name = experiment_name(run)
        examples, select_ids = example_ids(run.fit, "kl"), example_ids(run.select, "kl")
        with stage(timings, f"{name}/train"):
            # warm-started like the rerank stage's feedback_kl: from the one relevance model
            trained = train_or_load(
                "feedback_kl",
                run.seed,
                examples,
                select_ids,
                states,
                config.rerank.model,
                cache_root,
                init=init,
            )
        from_cache[f"{name}/train"] = trained.from_cache
        with stage(timings, f"{name}/score"):
            probs, from_cache[f"{name}/score"] = score_cached(
                trained.folder, trained.weights, score_ids, states, config.rerank.model
            )
        record[name] = {
            "fit_pairs": len(run.fit),
            "select_pairs": len(run.select),
            "history": trained.history,
        }
        tags: dict[str, Any] = {"experiment": run.experiment, "setting": run.setting, "seed": run.seed}
        p_rows = stored_probabilities(probs[[position[i] for i in row_ids]])
        cand_frames.append(rows.assign(**tags, **dict(zip(RATING_COLUMNS, p_rows.T, strict=True))))
        p_test = stored_probabilities(probs[[position[i] for i in inputs.test_ids]])
        rating_frames.append(
            pd.DataFrame(
                {
                    **tags,
                    "domain": [it.domain for it in inputs.test_items],
                    "item_id": [it.item_id for it in inputs.test_items],
                    **dict(zip(RATING_COLUMNS, p_test.T, strict=True)),
                }
            )
        )
    return (
        pd.concat([f for f in cand_frames if len(f)] or cand_frames[:1], ignore_index=True),
        pd.concat([f for f in rating_frames if len(f)] or rating_frames[:1], ignore_index=True),
        record,
    )


def _rqa_stage(out_dir: Path) -> dict[str, Any]:
    """The manifest entry of the rqa stage that wrote ``out_dir``."""
    path = out_dir / "manifest.json"
    try:
        entry: dict[str, Any] = json.loads(path.read_text())["stages"]["rqa"]
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: no readable rqa stage ({exc!r}); run `fqa run rqa` first") from exc
    return entry


def _restored_system(
    name: str, entry: dict[str, Any], train: list[data.QASplit], valid: list[data.QASplit], cache_root: Path
) -> RQASystem:
    """An RQA system as the rqa stage fitted it, so its test scores come from the score cache.

    The hybrid's fusion weight and temperatures are read from the manifest instead of refitted
    (a refit re-encodes every valid passage: minutes); the restored fingerprint must equal the
    recorded one, else the cache would silently hold another system's scores.
    """
    finetune = FineTuneConfig(**entry["config"]["finetune"])
    system = make_system(name, finetune)
    recorded = entry["systems"][name]
    if isinstance(system, HybridSystem):
        system.dense.fit(train, valid, cache_root)  # cached weights: loads, never trains
        system.weight = float(recorded["fit"]["weight"])
        system.temperatures = tuple(float(t) for t in recorded["fit"]["temperatures"])  # type: ignore[assignment]
    else:
        system.fit(train, valid, cache_root)
    if json.loads(json.dumps(system.fingerprint())) != recorded["fingerprint"]:
        raise ValueError(
            f"RQA system {name!r} does not match the rqa stage's manifest (another code version or cache); "
            "rerun `fqa run rqa` before `fqa run beyond`"
        )
    return system


def _deep_rqa_rows(
    data_dir: Path, out_dir: Path, depth: int, cache_root: Path
) -> tuple[pd.DataFrame, dict[tuple[str, str], data.QASplit]]:
    """Top-``depth`` rows of every RQA system (feedback domains), P_theta fitted and at T = 1.

    The score matrices come from the rqa stage's cache and the temperatures from its
    ``rqa_temperatures.parquet``, so the first five rows reproduce ``candidates.parquet``.

    Returns:
        The rows, and the test splits they come from (their pools name the passages).
    """
    entry = _rqa_stage(out_dir)
    systems, subset = list(entry["config"]["systems"]), entry["config"]["subset"]
    temperatures = load_table(out_dir, "rqa_temperatures.parquet").set_index("rqa")["temperature"]
    protocol = data.training_protocol(data_dir)
    splits = {
        (d, s): data.load_qa_split(data_dir, d, s).first(subset)
        for d in data.DOMAINS
        for s in data.qa_splits(d)
    }
    train = [splits[(d, "train")] for d in data.DOMAINS]
    valid = [splits[(d, "valid")] for d in data.DOMAINS]
    tests = [splits[(d, s)] for d in data.FEEDBACK_DOMAINS for s in data.test_splits(d)]
    scores_cache = ScoreCache(cache_root)
    frames = []
    for name in systems:
        system = _restored_system(name, entry, train, valid, cache_root)
        seed = int(entry["systems"][name]["seed"])
        run = {"protocol": protocol, "rqa": name, "reranker": NO_RERANKER, "seed": seed}
        for split in tests:
            scores = scores_cache.get(system, split.question_texts, split.passage_texts)
            rows = candidate_rows(split, scores, float(temperatures[name]), run, depth)
            untempered = pool_softmax(scores.astype(np.float64), 1.0)
            rows["p_rqa_t1"] = untempered[np.arange(len(split.questions)).repeat(depth), rows["passage_id"]]
            frames.append(rows)
    return pd.concat(frames, ignore_index=True), {(t.domain, t.split): t for t in tests}


def _reused_deep_rqa_rows(out_dir: Path, candidates: pd.DataFrame, depth: int) -> pd.DataFrame | None:
    """The RQA rows of an earlier ``deep_candidates.parquet`` in ``out_dir``, when still valid.

    The RQA systems' top-``depth`` rows depend on the rqa stage only, not on any reranker; their
    recomputation needs every RQA model (the fine-tuned MiniLM retrains for about an hour when its
    cache is gone). They are reused when the file holds ``depth`` ranks of every RQA system and
    its top ranks still equal ``candidates.parquet`` (the same passages, P_theta equal at the file's
    float32 precision): a changed rqa stage changes those.

    Returns:
        The rows (reranker ``none``), or ``None`` when there is no such file or it is stale.
    """
    path = out_dir / "deep_candidates.parquet"
    if not path.exists():
        return None
    old = load_table(out_dir, "deep_candidates.parquet")
    old = old[old["reranker"] == NO_RERANKER].reset_index(drop=True)
    top = candidates[
        (candidates["reranker"] == NO_RERANKER) & candidates["domain"].isin(data.FEEDBACK_DOMAINS)
    ]
    ranks = old.groupby("rqa")["rqa_rank"].max()
    if set(ranks.index) != set(top["rqa"]) or (ranks != depth).any():
        return None
    missing, stale = _top_row_mismatches(old, top, np.float32, rtol=1e-6, atol=0.0)
    return old if not missing and not stale else None


def _top_row_mismatches(
    deep: pd.DataFrame, top: pd.DataFrame, dtype: type, rtol: float, atol: float
) -> tuple[bool, int]:
    """Whether any of the RQA rows ``top`` is missing from ``deep``, and how many differ there.

    A row differs when its passage or its P_theta (compared as ``dtype``) does.
    """
    keys = ["rqa", "domain", "split", "question_id", "rqa_rank"]
    merged = top.merge(deep[deep["rqa_rank"] <= top["rqa_rank"].max()], on=keys, suffixes=("", "_deep"))
    stale = (merged["passage_id"] != merged["passage_id_deep"]) | ~np.isclose(
        merged["p_rqa"].astype(dtype), merged["p_rqa_deep"].astype(dtype), rtol=rtol, atol=atol
    )
    return len(merged) != len(top), int(stale.sum())


def _test_pools(
    data_dir: Path, rows: pd.DataFrame, subset: int | None
) -> dict[tuple[str, str], data.QASplit]:
    """The test splits that ``rows`` come from (their pools name the passages)."""
    pairs = rows[["domain", "split"]].drop_duplicates().itertuples(index=False)
    return {(d, s): data.load_qa_split(data_dir, d, s).first(subset) for d, s in pairs}


def _check_against_candidates(deep: pd.DataFrame, candidates: pd.DataFrame, out_dir: Path) -> None:
    """The deep table's top rows must be the candidate table's (else one of them is stale)."""
    top = candidates[
        (candidates["reranker"] == NO_RERANKER) & candidates["domain"].isin(data.FEEDBACK_DOMAINS)
    ]
    # np.isclose's default rtol (1e-5) with atol 1e-9, as this check always used
    missing, stale = _top_row_mismatches(deep, top, np.float64, rtol=1e-5, atol=1e-9)
    if missing or stale:
        raise ValueError(
            f"{out_dir / 'candidates.parquet'}: its top candidates differ from the RQA scores in the cache "
            f"({stale} of {len(top)} rows); rerun `fqa run rqa` and `fqa run rerank` "
            "before `fqa run beyond`"
        )


def _deep_reranked_rows(
    deep: pd.DataFrame,
    inputs: RerankInputs,
    states: PairStates,
    config: BeyondRunConfig,
    pools: dict[tuple[str, str], data.QASplit],
    cache_root: Path,
    runs: Sequence[str],
    timings: dict[str, Any],
    from_cache: dict[str, bool],
) -> tuple[pd.DataFrame, int]:
    """The deep candidates of ``config.rqa`` rescored by each ``deep/<variant>/seed<N>`` run's model.

    Ranks 1..5 take the P_phi of ``candidates.parquet`` itself (the rerank stage's numbers, to the
    bit, with no model needed to reproduce them); ranks 6..``depth`` are scored, the pairs the
    model scored before read from its score cache.

    Returns:
        The reranked rows, and how many of their pairs the rerank stage never encoded.
    """
    mine = deep[deep["rqa"] == config.rqa].reset_index(drop=True)
    keys = ["domain", "split", "question_id", "rqa_rank"]
    texts = [
        pools[(d, s)].passages[int(p)].text
        for d, s, p in zip(mine["domain"], mine["split"], mine["passage_id"], strict=True)
    ]
    ids = [pair_id(q, p) for q, p in zip(mine["question"], texts, strict=True)]
    old = set(inputs.score_ids)
    new_pairs = sorted({(q, p) for q, p, i in zip(mine["question"], texts, ids, strict=True) if i not in old})
    if not runs:
        return mine.iloc[:0].assign(reranker=pd.Series(dtype=str), seed=pd.Series(dtype=int)), len(new_pairs)
    with stage(timings, "deep/lower_layers"):
        extra = encode_pairs(new_pairs, config.rerank.model, cache_root)
    from_cache["deep/lower_layers"] = extra.from_cache
    both = PairStates.union(states, extra)
    top = int(inputs.candidates["rqa_rank"].max())
    below = (mine["rqa_rank"] > top).to_numpy()
    below_ids = sorted({i for i, b in zip(ids, below, strict=True) if b})
    frames = []
    for run in runs:
        variant, seed = _parse_model_run(run)
        stage_rows = inputs.candidates[
            (inputs.candidates["rqa"] == config.rqa)
            & (inputs.candidates["reranker"] == variant)
            & (inputs.candidates["seed"] == seed)
        ]
        upper = mine.loc[~below, keys + ["passage_id"]].merge(
            stage_rows[keys + ["passage_id", *RATING_COLUMNS]], on=keys, how="left", suffixes=("", "_c")
        )
        if upper[RATING_COLUMNS].isna().any().any() or (upper["passage_id"] != upper["passage_id_c"]).any():
            raise ValueError(
                f"candidates.parquet lacks (or differs from) {variant} seed {seed}'s rows of RQA "
                f"{config.rqa!r}; "
                f"run `fqa run rerank` with that variant and seed before `fqa run beyond`"
            )
        model = _run_model(inputs, states, config, cache_root, run, timings, from_cache)
        with stage(timings, f"{run}/score"):
            probs, from_cache[f"{run}/score"] = score_cached(
                model.folder, model.weights, below_ids, both, config.rerank.model
            )
        lookup = dict(zip(below_ids, stored_probabilities(probs), strict=True))
        p_phi = np.zeros((len(mine), len(RATING_COLUMNS)), dtype=np.float32)
        p_phi[~below] = upper[RATING_COLUMNS].to_numpy(np.float32)
        if below.any():  # none at --depth 5
            p_phi[below] = np.stack([lookup[i] for i, b in zip(ids, below, strict=True) if b])
        frames.append(
            mine.assign(reranker=variant, seed=seed, **dict(zip(RATING_COLUMNS, p_phi.T, strict=True)))
        )
    return pd.concat(frames, ignore_index=True), len(new_pairs)


def _kept_earlier(
    path: Path, run_of: Callable[[pd.DataFrame], pd.Series], earlier: set[str]
) -> pd.DataFrame | None:
    """Rows of the earlier table at ``path`` of the ``earlier`` runs (kept beside this run's)."""
    if not earlier or not path.exists():
        return None
    old = pd.read_parquet(path)
    return old[run_of(old).isin(earlier)]


def _joined(earlier: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """This run's rows after the earlier runs' kept ones (one dtype per column on both sides)."""
    if earlier is None or earlier.empty:
        return new
    if new.empty:
        return earlier.reset_index(drop=True)
    return pd.concat([earlier, new.astype(earlier.dtypes.to_dict())], ignore_index=True)


def _model_run(prefix: str) -> Callable[[pd.DataFrame], pd.Series]:
    """The run name of each row of a table keyed by ``reranker`` and ``seed``."""
    return lambda f: prefix + f["reranker"].astype(str) + "/seed" + f["seed"].astype(str)


def _experiment_run(f: pd.DataFrame) -> pd.Series:
    """The run name of each row of an experiment table."""
    return f["experiment"].astype(str) + "/" + f["setting"].astype(str) + "/seed" + f["seed"].astype(str)


def plan_units(config: BeyondRunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them.

    The experiments are named as :func:`~fqa_analysis.models.reranker.pairs.feedback_experiments`
    names them, without reading the data (the plan reads no model input).

    Example:
        >>> from fqa_analysis.models.reranker.variants import RerankRunConfig
        >>> rerank = RerankRunConfig(variants=("combined",), seeds=(0,))
        >>> plan_units(BeyondRunConfig(rerank=rerank, fractions=(0.5,), transfer=False))
        ['selection/combined/seed0', 'fraction/0.5/seed0', 'deep/combined/seed0']
    """
    shells = [
        FeedbackExperiment("fraction", f"{f:g}", s, [], []) for f in config.fractions for s in config.seeds
    ]
    if config.transfer:
        shells += [
            FeedbackExperiment(kind, domain, s, [], [])
            for domain in data.FEEDBACK_DOMAINS
            for s in config.seeds
            for kind in ("leave_out", "size_control")
        ]
    return chosen_runs(beyond_runs(config, shells), config.runs)


def config_record(config: BeyondRunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return asdict(config)


def run_beyond(
    data_dir: Path,
    out_dir: Path,
    config: BeyondRunConfig | None = None,
    cache_root: Path | None = None,
    replace_runs: bool = False,
) -> dict[str, Any]:
    """Run (some of) the beyond stage on top of the rqa and rerank stages' results in ``out_dir``.

    Runs accumulate (:func:`~fqa_analysis.stages.manifest.accumulated_entry`): the chosen runs'
    rows replace their earlier rows, the folder's other runs stay when they share this
    configuration; under another configuration the run is refused before any work unless
    ``replace_runs``, which drops them.

    Raises:
        ConfigurationMismatchError: ``out_dir`` holds the stage under another configuration.
        RunSelectionError: A ``config.runs`` pattern that names no run of the stage.
    """
    config = config or BeyondRunConfig()
    cache_root = cache_root or default_cache_root()
    recorded_config = config_record(config)
    previous = accumulated_entry(out_dir, "beyond", recorded_config, RUN_FIELDS, replace_runs)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        inputs = rerank_inputs(data_dir, out_dir, config.rerank, cache_root)
    fit, select = inputs.sources["feedback"]
    experiments = feedback_experiments(fit, select, config.fractions, config.seeds, transfer=config.transfer)
    planned = beyond_runs(config, experiments)
    ran = chosen_runs(planned, config.runs)
    earlier = set(previous.get("run_commits", {})) - set(ran)
    with stage(timings, "lower_layers"):  # the rerank stage's cache: the same pairs, the same key
        states = encode_pairs(inputs.all_pairs, config.rerank.model, cache_root)
    from_cache["lower_layers"] = states.from_cache
    relevance = None
    if any(_needs_relevance(r) for r in ran):
        # in a step of its own (trained only when the cache lacks it): the rerank stage's model
        with stage(timings, "relevance_model"):
            relevance = stage_model(inputs, "vanilla", RELEVANCE_SEED, states, config.rerank, cache_root)
        from_cache["relevance_model"] = relevance.from_cache
    selection = _selection_rows(
        inputs,
        states,
        config,
        cache_root,
        [r for r in ran if r.startswith("selection/")],
        timings,
        from_cache,
    )
    chosen_experiments = [e for e in experiments if experiment_name(e) in set(ran)]
    experiment_rows, experiment_ratings, records = _experiment_rows(
        inputs, states, config, cache_root, chosen_experiments, relevance, timings, from_cache
    )
    with stage(timings, "deep/rqa"):
        reused = _reused_deep_rqa_rows(out_dir, inputs.candidates, config.depth)
        if reused is None:
            deep, pools = _deep_rqa_rows(data_dir, out_dir, config.depth, cache_root)
            _check_against_candidates(deep, inputs.candidates, out_dir)
        else:
            deep = reused
            pools = _test_pools(data_dir, deep, _rqa_stage(out_dir)["config"]["subset"])
    from_cache["deep/rqa"] = reused is not None
    reranked, new_pairs = _deep_reranked_rows(
        deep,
        inputs,
        states,
        config,
        pools,
        cache_root,
        [r for r in ran if r.startswith("deep/")],
        timings,
        from_cache,
    )
    deep_path = out_dir / "deep_candidates.parquet"
    kept = _kept_earlier(deep_path, _model_run("deep/"), earlier)
    reranked["p_rqa_t1"] = np.nan  # the RQA's own rows carry it
    # float32 P_theta (the exact float64 values were checked against candidates.parquet above) and
    # question-major rows keep results/ under 20 MB (ARCHITECTURE.md#results-contract); readers
    # must not rely on row order. Every part in one dtype, so that concatenating never depends on
    # which parts hold only nulls (pandas deprecates that).
    stored = {"p_rqa": np.float32, "p_rqa_t1": np.float32, **{c: np.float32 for c in RATING_COLUMNS}}
    parts = [deep[deep["reranker"] == NO_RERANKER], kept, reranked]
    deep = pd.concat([f.astype(stored) for f in parts if f is not None and len(f)], ignore_index=True)
    validate_candidates(deep, deep_path)
    order = ["protocol", "domain", "split", "question_id", "rqa", "rqa_rank", "reranker", "seed"]
    experiments_path = out_dir / "feedback_experiments.parquet"
    ratings_path = out_dir / "feedback_experiment_ratings.parquet"
    selection_path = out_dir / "selection_predictions.parquet"
    experiment_rows = _joined(_kept_earlier(experiments_path, _experiment_run, earlier), experiment_rows)
    experiment_ratings = _joined(_kept_earlier(ratings_path, _experiment_run, earlier), experiment_ratings)
    selection = _joined(_kept_earlier(selection_path, _model_run("selection/"), earlier), selection)
    atomic_write_parquet(deep_path, deep.sort_values(order, ignore_index=True))
    atomic_write_parquet(
        experiments_path,
        experiment_rows.sort_values(
            ["domain", "split", "question_id", "rqa_rank", *EXPERIMENT_KEYS], ignore_index=True
        ),
    )
    atomic_write_parquet(ratings_path, experiment_ratings)
    atomic_write_parquet(selection_path, selection)
    if earlier:
        timings = kept_run_timings(previous, earlier, timings, from_cache)
        earlier_records = previous.get("experiment_runs", {})
        records = {**{k: earlier_records[k] for k in earlier if k in earlier_records}, **records}
    # Steps are named per run, so which runs ran is not part of the comparison.
    add_compute_times(out_dir / "manifest.json", "beyond", timings, from_cache, recorded_config, RUN_FIELDS)
    record = provenance(timings, CACHE_VERSION)
    # in the plan's order
    kept_runs = list(dict.fromkeys(r for r in planned + sorted(earlier) if r in earlier))
    run_commits = kept_run_commits(previous, kept_runs, list(ran), record["git_commit"])
    entry = {
        "stage": "beyond",
        "protocol": inputs.protocol,
        "config": recorded_config,
        "experiment_runs": records,
        "run_commits": run_commits,
        "planned": [r for r in planned if r not in run_commits],
        "deep_new_pairs": new_pairs,
        "deep_rqa_rows": "reused from the earlier deep_candidates.parquet (top ranks checked against "
        "candidates.parquet)"
        if reused is not None
        else "computed from the rqa stage's models",
        **record,
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(cache_root, "beyond", recorded_config, RUN_FIELDS, data_fingerprint(data_dir), ran)
    update_manifest(out_dir / "manifest.json", "beyond", entry)
    return entry
