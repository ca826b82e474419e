"""Stage ``rerank`` of ``fqa run``: train every reranker variant x seed once, score every RQA.

The paper's decoupling: one trained reranker rescores the candidates of every RQA system; it is
never retrained per RQA. Outputs (appended to ``results/``):

* ``candidates.parquet``: for each RQA system x variant x seed, the RQA's top-k rows with the
  reranker's four ``p_*`` columns filled;
* ``rating_predictions.parquet``: P_phi for every feedback_test item (3 annotators each) per
  variant x seed, for the rating-quality analysis;
* ``manifest.json``: stage ``rerank`` with configs, per-step wall time and memory.

Variants (:data:`~fqa_analysis.models.reranker.variants.VARIANTS`, declared with what they
train on in :mod:`fqa_analysis.models.reranker.variants`: training data, loss, starting point):

* ``vanilla``, the relevance model every other reranker starts from: QA data only, no feedback
  (pseudo-ratings from the QA train sets of ``relevance_domains``: the gold passage Excellent,
  ``pseudo_negatives`` drawn from the negative source's top non-gold passages Bad), trained from
  MiniLM with the ``relevance_loss`` recipe (listwise by default,
  :func:`~fqa_analysis.models.reranker.network.train_reranker`);
* ``feedback_kl``, ``feedback_ce_annotator``, ``feedback_ce_majority``: the feedback alone under
  three losses, continued from the one relevance model (``vanilla`` of seed 0, shared by every seed);
* ``combined``: the feedback plus as many replayed pseudo pairs, KL, continued from ``vanilla``;
* ``feedback_kl_scratch``, ``feedback_ce_annotator_scratch``, ``feedback_ce_majority_scratch``: the
  paper-faithful rows, the same feedback losses trained from MiniLM with a fresh head.

Why the warm start: MiniLM is a sentence-embedding checkpoint, not a relevance model, and fine-tuned
on about 1,500 rated pairs it learns almost nothing (gold-vs-candidates AUC about 0.55); the paper
starts from a pretrained BART-large, a practitioner from a pretrained cross-encoder, and neither can
be downloaded here, so the project trains its own relevance model on QA data first.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis.cache import atomic_write_parquet, default_cache_root
from fqa_analysis.core.candidates import RATING_COLUMNS
from fqa_analysis.models.reranker.encoder import PairStates, encode_pairs
from fqa_analysis.models.reranker.inputs import RerankInputs, rerank_inputs
from fqa_analysis.models.reranker.network import CACHE_VERSION
from fqa_analysis.models.reranker.scoring import has_scores, score_cached, stored_probabilities
from fqa_analysis.models.reranker.store import WarmStart, stage_model, warm_start
from fqa_analysis.models.reranker.variants import RELEVANCE_SEED, VARIANTS, RerankRunConfig, planned_runs
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import (
    accumulated_entry,
    add_compute_times,
    kept_run_commits,
    kept_run_timings,
    manifest_entry,
    model_training_compute,
    provenance,
    update_manifest,
)
from fqa_analysis.stages.outputs import write_candidates
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = ["RUN_FIELDS", "config_record", "plan_units", "run_rerank"]


#: Config fields that may differ between two runs whose models sit side by side in results/.
RUN_FIELDS: tuple[str, ...] = ("variants", "seeds", "score_rqa")


def _kept_rows(frame: pd.DataFrame, stale: set[str], runs: set[str]) -> pd.DataFrame:
    """Rows of ``frame`` to keep: other rerankers' (e.g. the RQA alone), and the kept ``runs``'."""
    run = frame["reranker"].astype(str) + "/seed" + frame["seed"].astype(str)
    out = frame[~frame["reranker"].isin(stale) | run.isin(runs)].copy()
    # one dtype for P_phi on both sides (a table from an older rqa stage has float64 NaNs there)
    out[RATING_COLUMNS] = out[RATING_COLUMNS].astype(np.float32)
    return out


def plan_units(config: RerankRunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them."""
    return [f"{v}/seed{s}" for v, s in config.runs()]


def config_record(config: RerankRunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return {**asdict(config), "variants": {v: VARIANTS[v].record() for v in config.variants}}


def _warm_start(
    inputs: RerankInputs,
    states: PairStates,
    config: RerankRunConfig,
    cache_root: Path,
    relevance_seed: int,
    runs: list[tuple[str, int]],
    timings: dict[str, Any],
    from_cache: dict[str, bool],
) -> WarmStart:
    """The relevance model of ``relevance_seed`` as the warm variants continue from it, timed.

    Where this run does not train that ``vanilla`` itself before its warm variants, the relevance
    model gets a step of its own (trained only when the cache lacks it), so that a warm variant's
    training step times that variant alone; so does the pass of its lower layers over every pair
    under ``warm_frozen_layers``. The steps of seed :data:`RELEVANCE_SEED` keep their names
    (``relevance_model``, ``relevance_lower_layers``); another seed's carry ``/seed<k>``.
    """
    suffix = "" if relevance_seed == RELEVANCE_SEED else f"/seed{relevance_seed}"
    trained_first = ("vanilla", relevance_seed) in runs and runs[0][0] == "vanilla"
    if not trained_first:
        with stage(timings, f"relevance_model{suffix}"):
            relevance = stage_model(inputs, "vanilla", relevance_seed, states, config, cache_root)
        from_cache[f"relevance_model{suffix}"] = relevance.from_cache
    if not config.warm_frozen_layers:
        return warm_start(inputs, states, config, cache_root, relevance_seed)
    with stage(timings, f"relevance_lower_layers{suffix}"):
        warm = warm_start(inputs, states, config, cache_root, relevance_seed)
    from_cache[f"relevance_lower_layers{suffix}"] = warm.states.from_cache
    return warm


def run_rerank(
    data_dir: Path,
    out_dir: Path,
    config: RerankRunConfig | None = None,
    cache_root: Path | None = None,
    replace_runs: bool = False,
) -> dict[str, Any]:
    """Run the rerank stage on top of the rqa stage's candidates in ``out_dir``.

    Runs accumulate (:func:`~fqa_analysis.stages.manifest.accumulated_entry`): this run's
    ``variant/seedN`` rows replace their earlier rows, the folder's other runs stay when they
    share this configuration; under another configuration the run is refused before any work
    unless ``replace_runs``, which drops them.

    Raises:
        ConfigurationMismatchError: ``out_dir`` holds the stage under another configuration.
    """
    config = config or RerankRunConfig()
    cache_root = cache_root or default_cache_root()
    recorded_config = config_record(config)
    previous = accumulated_entry(out_dir, "rerank", recorded_config, RUN_FIELDS, replace_runs)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        inputs = rerank_inputs(data_dir, out_dir, config, cache_root)
    protocol, candidates, rqa_rows = inputs.protocol, inputs.candidates, inputs.rqa_rows
    cand_ids, test_items, test_ids, sources = (
        inputs.cand_ids,
        inputs.test_items,
        inputs.test_ids,
        inputs.sources,
    )
    with stage(timings, "lower_layers"):
        states = encode_pairs(inputs.all_pairs, config.model, cache_root)
    from_cache["lower_layers"] = states.from_cache
    score_ids = inputs.score_ids
    position = {pid: i for i, pid in enumerate(score_ids)}
    new_rows, prediction_rows, histories = [], [], {}
    extended: set[str] = set()  # score steps that only added pairs to an earlier scoring
    # the relevance model(s) as the warm variants continue from them, each loaded once: one model
    # (seed RELEVANCE_SEED) for every seed, or under relevance_per_seed the one of the run's seed
    warms: dict[int, WarmStart] = {}
    planned = config.runs()
    for variant, seed in planned:
        run_states, run_model, warm = states, config.model, None
        if VARIANTS[variant].start == "relevance":
            relevance_seed = config.relevance_seed(seed)
            if relevance_seed not in warms:
                warms[relevance_seed] = _warm_start(
                    inputs, states, config, cache_root, relevance_seed, planned, timings, from_cache
                )
            warm = warms[relevance_seed]
            run_states, run_model = warm.states, warm.model
        with stage(timings, f"{variant}/seed{seed}/train"):
            trained = stage_model(inputs, variant, seed, states, config, cache_root, warm)
        weights, history, folder = trained.weights, trained.history, trained.folder
        cached = trained.from_cache
        from_cache[f"{variant}/seed{seed}/train"] = cached
        histories[f"{variant}/seed{seed}"] = history
        step = f"{variant}/seed{seed}/score"
        if has_scores(folder):
            extended.add(step)
        with stage(timings, step):
            probs, cached = score_cached(folder, weights, score_ids, run_states, run_model)
        from_cache[step] = cached
        rows = rqa_rows.copy()
        rows["reranker"], rows["seed"] = variant, seed
        rows[RATING_COLUMNS] = stored_probabilities(probs[[position[i] for i in cand_ids]])
        new_rows.append(rows)
        test_probs = stored_probabilities(probs[[position[i] for i in test_ids]])
        prediction_rows.append(
            pd.DataFrame(
                {
                    "protocol": protocol,
                    "reranker": variant,
                    "seed": seed,
                    "domain": [it.domain for it in test_items],
                    "item_id": [it.item_id for it in test_items],
                    "passage_id": [it.passage.passage_id for it in test_items],
                    **{c: test_probs[:, j] for j, c in enumerate(RATING_COLUMNS)},
                }
            )
        )
    reranked = pd.concat(new_rows, ignore_index=True)
    predictions = pd.concat(prediction_rows, ignore_index=True)
    ran = {f"{v}/seed{s}" for v, s in config.runs()}
    earlier_runs = set(previous.get("histories", {})) - ran
    # runs of another configuration (or another code's variants) never sit beside this one's
    stale = set(VARIANTS) | set(manifest_entry(out_dir, "rerank").get("config", {}).get("variants", {}))
    table = pd.concat(
        [
            _kept_rows(candidates, stale, earlier_runs),
            reranked.astype({c: np.float32 for c in RATING_COLUMNS}),
        ],
        ignore_index=True,
    )
    write_candidates(out_dir, table)
    old_predictions = out_dir / "rating_predictions.parquet"
    kept_predictions = (
        _kept_rows(pd.read_parquet(old_predictions), stale, earlier_runs)
        if old_predictions.exists()
        else None
    )
    parts = (
        [predictions]
        if kept_predictions is None or kept_predictions.empty
        else [kept_predictions, predictions]
    )
    atomic_write_parquet(old_predictions, pd.concat(parts, ignore_index=True))
    if earlier_runs:
        histories = {**{k: previous["histories"][k] for k in earlier_runs}, **histories}
        timings = kept_run_timings(previous, earlier_runs, timings, from_cache)
    # the record names the runs present (accumulated or not) and those the default plan still lacks
    runs = {r.split("/")[0] for r in histories}
    recorded_config["variants"] = {v: VARIANTS[v].record() for v in VARIANTS if v in runs}
    recorded_config["seeds"] = sorted({int(r.split("/seed")[1]) for r in histories})
    # Steps are named per variant and seed, so which ones ran is not part of the comparison; the
    # scored RQA systems change no model, and a score step that adds pairs extends the last one.
    add_compute_times(
        out_dir / "manifest.json",
        "rerank",
        timings,
        from_cache,
        recorded_config,
        RUN_FIELDS,
        frozenset(extended),
    )
    model_training_compute(timings, histories)
    record = provenance(timings, CACHE_VERSION)
    run_commits = kept_run_commits(
        previous,
        [r for r in histories if r in earlier_runs],
        [r for r in histories if r not in earlier_runs],
        record["git_commit"],
    )
    entry = {
        "stage": "rerank",
        "protocol": protocol,
        "config": recorded_config,
        "training_pairs": {k: [len(f), len(s)] for k, (f, s) in sources.items()},
        "scored_pairs": len(score_ids),
        "histories": histories,
        "run_commits": run_commits,
        "planned": [r for r in planned_runs() if r not in histories],
        **record,
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(
        cache_root, "rerank", recorded_config, RUN_FIELDS, data_fingerprint(data_dir), plan_units(config)
    )
    update_manifest(out_dir / "manifest.json", "rerank", entry)
    return entry
