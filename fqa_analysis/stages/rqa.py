"""Stage ``rqa`` of ``fqa run``: the RQA systems' candidates, ranks and temperatures.

For every RQA system, fit (cached), score the QA valid sets to fit
a temperature, score every test file against its whole domain pool, and write

* ``candidates.parquet``: the top-k rows with ``reranker = "none"`` (ARCHITECTURE.md#results-contract);
* ``rqa_ranks.parquet``: per (system, test question) the rank of the gold passage in its domain
  pool (recall@k for any k) and in the pooled corpus of the four feedback domains (the MTEB
  FeedbackQARetrieval view);
* ``rqa_temperatures.parquet``: per system the fitted temperature and the valid NLL before/after;
* ``manifest.json``: configs, seeds, versions, input hashes, git commit, per-stage time/memory.

Every score matrix is cached under a key of (system fingerprint, file content, subset, code
version), so a second run, or a run resumed after an interruption, recomputes nothing done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import (
    atomic_write_parquet,
    default_cache_root,
    file_sha256,
)
from fqa_analysis.core.calibration import (
    expected_calibration_error,
    fit_temperature,
    gold_ranks,
    pool_softmax,
    top1_accuracy,
    top_k,
)
from fqa_analysis.core.candidates import (
    NO_RERANKER,
)
from fqa_analysis.models.retrieval import (
    CACHE_VERSION,
    SYSTEMS,
    FineTuneConfig,
    RQASystem,
    ScoreCache,
    candidate_rows,
    make_system,
)
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import accumulated_entry, add_compute_times, provenance, update_manifest
from fqa_analysis.stages.outputs import write_candidates
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = ["RUN_FIELDS", "RQARunConfig", "config_record", "plan_units", "run_rqa"]

K = 5


@dataclass(frozen=True)
class RQARunConfig:
    """What ``fqa run rqa`` computes.

    Attributes:
        systems: RQA systems to run.
        k: Candidates kept per question.
        subset: Keep only the first N questions of every split (CI smoke runs); None for all.
        seed: Training seed (recorded in the ``seed`` column; 0 for untrained systems).
        finetune: Fine-tuning settings of ``minilm_ft``.
    """

    systems: tuple[str, ...] = SYSTEMS
    k: int = K
    subset: int | None = None
    seed: int = 0
    finetune: FineTuneConfig = field(default_factory=FineTuneConfig)


def _confidence_summary(
    blocks: Sequence[np.ndarray], golds: Sequence[np.ndarray], temperature: float, tag: str
) -> dict[str, float]:
    """Mean top-1 probability and its ECE on the valid sets at a temperature (what T does)."""
    top1, correct = [], []
    for scores, gold in zip(blocks, golds, strict=True):
        probs = pool_softmax(scores.astype(np.float64), temperature)
        best = top_k(scores, 1)[:, 0]
        top1.append(probs[np.arange(len(best)), best])
        correct.append(best == gold)
    conf, hit = np.concatenate(top1), np.concatenate(correct)
    return {
        f"valid_top1_p_{tag}": float(conf.mean()),
        f"valid_ece_{tag}": expected_calibration_error(conf, hit),
    }


def _merge_rows(path: Path, new: pd.DataFrame, owned: pd.DataFrame) -> pd.DataFrame:
    """Replace the rows this run owns (same protocol, rqa, reranker 'none') in an existing table."""
    if not path.exists():
        return new
    old = pd.read_parquet(path)
    mask = np.zeros(len(old), dtype=bool)
    for _, row in owned.iterrows():
        mask |= (
            (old["protocol"] == row["protocol"]).to_numpy()
            & (old["rqa"] == row["rqa"]).to_numpy()
            & (old["reranker"] == row["reranker"]).to_numpy()
        )
    return pd.concat([old[~mask], new], ignore_index=True)


def _kept_system_rows(path: Path, systems: Sequence[str], keep: bool) -> list[pd.DataFrame]:
    """The rows of an rqa-stage table of the systems this run does not compute, when they are kept."""
    if not keep or not path.exists():
        return []
    old = pd.read_parquet(path)
    return [old[~old["rqa"].isin(list(systems))]]


#: Config fields that only say which runs ran: runs that differ in nothing else sit side by side.
RUN_FIELDS: tuple[str, ...] = ("systems",)


def plan_units(config: RQARunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them."""
    return list(config.systems)


def config_record(config: RQARunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return {
        "systems": list(config.systems),
        "k": config.k,
        "subset": config.subset,
        "seed": config.seed,
        "finetune": config.finetune.__dict__,
    }


def run_rqa(
    data_dir: Path,
    out_dir: Path,
    config: RQARunConfig | None = None,
    cache_root: Path | None = None,
    replace_runs: bool = False,
) -> dict[str, Any]:
    """Run the RQA stage; return its manifest entry. See the module docstring for outputs.

    Runs accumulate as in every stage (:func:`~fqa_analysis.stages.manifest.accumulated_entry`):
    this run's systems replace their rows in every table; the folder's other systems stay when they
    were computed under this configuration; under another one the run is refused before any work
    unless ``replace_runs``, which drops them.

    Raises:
        ConfigurationMismatchError: ``out_dir`` holds the stage under another configuration.
    """
    config = config or RQARunConfig()
    cache_root = cache_root or default_cache_root()
    record = config_record(config)
    earlier = accumulated_entry(out_dir, "rqa", record, RUN_FIELDS, replace_runs)
    protocol = data.training_protocol(data_dir)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "load_data"):
        splits = {
            (d, s): data.load_qa_split(data_dir, d, s).first(config.subset)
            for d in data.DOMAINS
            for s in data.qa_splits(d)
        }
    train = [splits[(d, "train")] for d in data.DOMAINS]
    valid = [splits[(d, "valid")] for d in data.DOMAINS]
    tests = [splits[(d, s)] for d in data.DOMAINS for s in data.test_splits(d)]
    inputs = {str(s.path.relative_to(data_dir)): file_sha256(s.path) for s in splits.values()}
    scores_cache = ScoreCache(cache_root)
    candidate_frames, rank_frames, temp_rows, systems_record = [], [], [], {}
    for name in config.systems:
        system = make_system(name, config.finetune)
        seed = config.seed if name in ("minilm_ft", "hybrid") else 0
        with stage(timings, f"{name}/fit"):
            fit_record = system.fit(train, valid, cache_root)
        # bm25 and minilm have nothing to fit; hybrid refits its fusion weight every run.
        from_cache[f"{name}/fit"] = bool(fit_record.get("from_cache", name in ("bm25", "minilm")))
        scores_cache.all_cached()  # fitting may score (hybrid); count from here
        with stage(timings, f"{name}/valid+temperature"):
            blocks = [scores_cache.get(system, s.question_texts, s.passage_texts) for s in valid]
            golds = [s.gold_ids for s in valid]
            fit = fit_temperature([b.astype(np.float64) for b in blocks], golds)
            from_cache[f"{name}/valid+temperature"] = scores_cache.all_cached()
            valid_acc = top1_accuracy(blocks, golds)
        temp_rows.append(
            {
                "rqa": name,
                "temperature": fit.temperature,
                "valid_nll_t1": fit.nll_at_1,
                "valid_nll_fitted": fit.nll_fitted,
                "valid_questions": fit.n_questions,
                "valid_acc1": valid_acc,
                **_confidence_summary(blocks, golds, 1.0, "t1"),
                **_confidence_summary(blocks, golds, fit.temperature, "fitted"),
            }
        )
        run = {"protocol": protocol, "rqa": name, "reranker": NO_RERANKER, "seed": seed}
        with stage(timings, f"{name}/test"):
            test_scores = {}
            for split in tests:
                sc = scores_cache.get(system, split.question_texts, split.passage_texts)
                test_scores[(split.domain, split.split)] = sc
                candidate_frames.append(candidate_rows(split, sc, fit.temperature, run, config.k))
            from_cache[f"{name}/test"] = scores_cache.all_cached()
        with stage(timings, f"{name}/pooled"):
            rank_frames.append(_ranks(system, tests, test_scores, scores_cache, name, protocol, seed))
            from_cache[f"{name}/pooled"] = scores_cache.all_cached()
        systems_record[name] = {"fingerprint": system.fingerprint(), "fit": fit_record, "seed": seed}
    candidates = pd.concat(candidate_frames, ignore_index=True)
    owned = candidates[["protocol", "rqa", "reranker"]].drop_duplicates()
    merged = _merge_rows(out_dir / "candidates.parquet", candidates, owned)
    if replace_runs:  # the other systems' RQA rows were computed under another configuration
        merged = merged[merged["rqa"].isin(list(config.systems)) | (merged["reranker"] != NO_RERANKER)]
    write_candidates(out_dir, merged)
    keep = bool(earlier)
    for name, frames in (
        ("rqa_ranks.parquet", rank_frames),
        ("rqa_temperatures.parquet", [pd.DataFrame(temp_rows)]),
    ):
        kept = _kept_system_rows(out_dir / name, config.systems, keep)
        atomic_write_parquet(out_dir / name, pd.concat([*kept, *frames], ignore_index=True))
    add_compute_times(out_dir / "manifest.json", "rqa", timings, from_cache, record, RUN_FIELDS)
    if keep:  # the other systems' records and step costs, as their run left them
        others = [n for n in earlier.get("systems", {}) if n not in config.systems]
        systems_record = {**{n: earlier["systems"][n] for n in others}, **systems_record}
        carried = {k: v for k, v in earlier.get("timings", {}).items() if k.split("/")[0] in others}
        timings = {**carried, **timings}
        record["systems"] = [n for n in SYSTEMS if n in systems_record]
    entry = {
        "stage": "rqa",
        "protocol": protocol,
        "config": record,
        "systems": systems_record,
        "inputs_sha256": inputs,
        **provenance(timings, CACHE_VERSION),
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(cache_root, "rqa", record, RUN_FIELDS, data_fingerprint(data_dir), plan_units(config))
    update_manifest(out_dir / "manifest.json", "rqa", entry)
    return entry


def _ranks(
    system: RQASystem,
    tests: Sequence[data.QASplit],
    test_scores: dict[tuple[str, str], np.ndarray],
    scores_cache: ScoreCache,
    name: str,
    protocol: str,
    seed: int,
) -> pd.DataFrame:
    """Gold ranks in the domain pool, and in the pooled corpus of the four feedback domains."""
    pooled_splits = [s for s in tests if s.domain in data.FEEDBACK_DOMAINS]
    corpus = [text for s in pooled_splits for text in s.passage_texts]
    offsets = np.cumsum([0] + [len(s.passages) for s in pooled_splits])
    questions = [text for s in pooled_splits for text in s.question_texts]
    pooled_gold = np.concatenate([s.gold_ids + off for s, off in zip(pooled_splits, offsets, strict=False)])
    pooled = gold_ranks(scores_cache.get(system, questions, corpus), pooled_gold)
    pooled_rank = {}
    pos = 0
    for s in pooled_splits:
        for q in s.questions:
            pooled_rank[(s.domain, s.split, q.question_id)] = int(pooled[pos])
            pos += 1
    rows = []
    for s in tests:
        ranks = gold_ranks(test_scores[(s.domain, s.split)], s.gold_ids)
        for q, r in zip(s.questions, ranks, strict=True):
            rows.append(
                {
                    "protocol": protocol,
                    "rqa": name,
                    "seed": seed,
                    "domain": s.domain,
                    "split": s.split,
                    "question_id": q.question_id,
                    "pool_size": len(s.passages),
                    "gold_rank": int(r),
                    "gold_rank_pooled": pooled_rank.get((s.domain, s.split, q.question_id)),
                }
            )
    frame = pd.DataFrame(rows)
    frame["gold_rank_pooled"] = frame["gold_rank_pooled"].astype("Int64")
    return frame
