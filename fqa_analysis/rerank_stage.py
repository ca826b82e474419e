"""Stage ``rerank`` of ``fqa run``: train every reranker variant x seed once, score every RQA.

The paper's decoupling: one trained reranker rescores the candidates of every RQA system; it is
never retrained per RQA. Outputs (appended to ``results/``):

* ``candidates.parquet``: for each RQA system x variant x seed, the RQA's top-k rows with the
  reranker's four ``p_*`` columns filled;
* ``rating_predictions.parquet``: P_phi for every feedback_test item (3 annotators each) per
  variant x seed, for the rating-quality analysis;
* ``manifest.json``: stage ``rerank`` with configs, per-step wall time and memory.

Variants: ``feedback_kl``, ``feedback_ce_annotator``, ``feedback_ce_majority`` (feedback only,
three losses); ``vanilla`` (pseudo-ratings from the QA train sets, no feedback: gold passage
Excellent, BM25's top non-gold passage Bad); ``combined`` (pseudo-ratings + feedback, KL).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_npy, atomic_write_parquet, content_key, default_cache_root
from fqa_analysis.calibration import top_k
from fqa_analysis.candidates import RATING_COLUMNS
from fqa_analysis.pipeline import _add_compute_times, _update_manifest, provenance, write_candidates
from fqa_analysis.profiling import stage
from fqa_analysis.rerank import (
    CACHE_VERSION,
    PairStates,
    RerankConfig,
    encode_pairs,
    model_key,
    pair_id,
    predict,
    train_reranker,
)
from fqa_analysis.rerank_data import RatedPair, feedback_training_sets, pseudo_rated_pairs, training_examples
from fqa_analysis.results import load_candidates
from fqa_analysis.retrieval import BM25System

__all__ = [
    "VARIANTS",
    "RerankInputs",
    "RerankRunConfig",
    "example_ids",
    "rerank_inputs",
    "run_rerank",
    "score_cached",
    "stored_probabilities",
    "train_or_load",
    "variant_examples",
]

#: variant -> (training data, loss)
VARIANTS: dict[str, tuple[str, str]] = {
    "feedback_kl": ("feedback", "kl"),
    "feedback_ce_annotator": ("feedback", "ce_annotator"),
    "feedback_ce_majority": ("feedback", "ce_majority"),
    "vanilla": ("pseudo", "kl"),
    "combined": ("both", "kl"),
}


@dataclass(frozen=True)
class RerankRunConfig:
    """What ``fqa run rerank`` computes.

    Attributes:
        variants: Reranker variants to train.
        seeds: Training seeds of every variant.
        model: Cross-encoder settings.
        subset: First N questions of every test split and N items of every feedback split (CI).
        pseudo_questions: QA-train questions (all domains, seeded draw) that give pseudo-ratings.
        pseudo_negatives: Bad pseudo-examples per question (BM25's top non-gold passages).
        holdout: Held-out share of questions for model selection (``available`` protocol).
    """

    variants: tuple[str, ...] = tuple(VARIANTS)
    seeds: tuple[int, ...] = (0, 1, 2)
    model: RerankConfig = field(default_factory=RerankConfig)
    subset: int | None = None
    pseudo_questions: int = 2000
    pseudo_negatives: int = 1
    holdout: float = 0.2


def _pseudo_pairs(data_dir: Path, config: RerankRunConfig) -> tuple[list[RatedPair], list[RatedPair]]:
    """Pseudo-rated (fit, select) pairs from a seeded draw of QA-train questions (BM25 negatives)."""
    splits = [data.load_qa_split(data_dir, d, "train") for d in data.DOMAINS]
    rng = np.random.default_rng(0)
    everyone = [(s.domain, q.question_id) for s in splits for q in s.questions]
    n = min(config.pseudo_questions if config.subset is None else config.subset * 2, len(everyone))
    chosen = {everyone[int(i)] for i in rng.choice(len(everyone), size=n, replace=False)}
    kept = []
    negatives: dict[tuple[str, int], Sequence[int]] = {}
    bm25 = BM25System()
    for s in splits:
        qs = [q for q in s.questions if (s.domain, q.question_id) in chosen]
        if not qs:
            continue
        scores = bm25.score([q.question for q in qs], s.passage_texts)
        ranked = top_k(scores, config.pseudo_negatives + 1)
        negatives.update(
            {(s.domain, q.question_id): list(map(int, r)) for q, r in zip(qs, ranked, strict=True)}
        )
        kept.append(data.QASplit(s.domain, s.split, s.path, tuple(qs), s.passages))
    pairs = pseudo_rated_pairs(kept, negatives, config.pseudo_negatives)
    held = {q for q in sorted({p.question for p in pairs}) if int(pair_id(q, "")[:8], 16) % 10 == 0}
    return [p for p in pairs if p.question not in held], [p for p in pairs if p.question in held]


#: P_phi is stored rounded to this many decimals, as float32.
STORED_DECIMALS = 5


def stored_probabilities(probs: np.ndarray) -> np.ndarray:
    """P_phi as stored in results/: float32 rounded to 1e-5.

    Why: 15 reranker runs x 86,700 candidate rows of full-precision floats do not compress (52 MB);
    rounded, the table is about 10 MB (DESIGN §4: results/ under 20 MB). A pick could change only
    where two candidates' scores differ by less than 1e-5; on the full run none did (0 of 260,100
    reranked outcomes, under either scoring rule). Rows still sum to 1 within 2e-5.

    Example:
        >>> out = stored_probabilities(np.array([[0.1234567, 0.8765433]]))
        >>> out.dtype, out.astype(float).round(7).tolist()
        (dtype('float32'), [[0.12346, 0.87654]])
    """
    return np.round(np.asarray(probs, dtype=np.float64), STORED_DECIMALS).astype(np.float32)


def example_ids(pairs: Sequence[RatedPair], loss: str) -> list[tuple[str, np.ndarray]]:
    """``(pair id, target distribution)`` training examples of rated pairs under a loss."""
    return [(pair_id(q, p), t) for q, p, t in training_examples(pairs, loss)]


@dataclass(frozen=True)
class RerankInputs:
    """Everything the rerank stage (and the stages built on its models) trains and scores on.

    Attributes:
        protocol: Training protocol (DESIGN §3).
        candidates: The candidate table as the rqa (and earlier rerank) stages left it.
        rqa_rows: Its rows of the RQA systems alone (reranker ``none``).
        cand_ids: Pair id of every row of ``rqa_rows``.
        test_items: Every feedback_test item.
        test_ids: Pair id of every test item.
        sources: Training source -> (fit pairs, model-selection pairs).
        all_pairs: Every (question, passage text) pair whose lower-layer states are cached.
    """

    protocol: str
    candidates: pd.DataFrame
    rqa_rows: pd.DataFrame
    cand_ids: list[str]
    test_items: list[data.FeedbackItem]
    test_ids: list[str]
    sources: dict[str, tuple[list[RatedPair], list[RatedPair]]]
    all_pairs: list[tuple[str, str]]

    @cached_property  # read by every scoring call of the beyond stage: sorted once
    def score_ids(self) -> list[str]:
        """The pair ids every trained reranker scores (candidates and feedback_test), sorted."""
        return sorted(set(self.cand_ids) | set(self.test_ids))


def rerank_inputs(data_dir: Path, out_dir: Path, config: RerankRunConfig) -> RerankInputs:
    """Load the training sources, the rqa stage's candidates and the test items (no model)."""
    protocol = data.training_protocol(data_dir)
    candidates = load_candidates(out_dir)  # the rqa stage's output, contract-checked
    fb = data.all_feedback(data_dir, config.subset)
    fb_fit, fb_select = feedback_training_sets(protocol, fb["train"], fb["valid"], config.holdout)
    ps_fit, ps_select = _pseudo_pairs(data_dir, config)
    rqa_rows = candidates[candidates["reranker"] == "none"].reset_index(drop=True)
    pools = {(d, s): data.load_qa_split(data_dir, d, s) for d in data.DOMAINS for s in data.test_splits(d)}
    cand_text = [
        pools[(d, s)].passages[int(pid)].text
        for d, s, pid in zip(rqa_rows["domain"], rqa_rows["split"], rqa_rows["passage_id"], strict=True)
    ]
    cand_ids = [pair_id(q, p) for q, p in zip(rqa_rows["question"], cand_text, strict=True)]
    test_items = [it for f in fb["test"] for it in f.items]
    sources = {
        "feedback": (fb_fit, fb_select),
        "pseudo": (ps_fit, ps_select),
        "both": (ps_fit + fb_fit, fb_select),
    }
    all_pairs = [(p.question, p.passage_text) for f, s in sources.values() for p in f + s]
    all_pairs += list(zip(rqa_rows["question"], cand_text, strict=True))
    all_pairs += [(it.question, it.passage.text) for it in test_items]
    return RerankInputs(
        protocol,
        candidates,
        rqa_rows,
        cand_ids,
        test_items,
        [pair_id(it.question, it.passage.text) for it in test_items],
        sources,
        all_pairs,
    )


def variant_examples(
    inputs: RerankInputs, variant: str
) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """A variant's (training, model-selection) examples: its data source under its loss (selection: KL)."""
    source, loss = VARIANTS[variant]
    fit_pairs, select_pairs = inputs.sources[source]
    return example_ids(fit_pairs, loss), example_ids(select_pairs, "kl")


def train_or_load(
    name: str,
    seed: int,
    examples: Sequence[tuple[str, np.ndarray]],
    select: Sequence[tuple[str, np.ndarray]],
    states: PairStates,
    model: RerankConfig,
    cache_root: Path,
) -> tuple[dict[str, Any], dict[str, Any], Path, bool]:
    """Train one reranker, or load it when one with the same content key was trained before.

    The key covers the code version, the model settings, ``name``, the seed and every training
    and selection example, so two runs that train on the same data share one model.

    Returns:
        ``(weights, history, cache folder, from_cache)``.
    """
    import torch

    key = content_key(
        CACHE_VERSION,
        model_key(model),
        name,
        seed,
        [(i, t.tolist()) for i, t in examples],
        [(i, t.tolist()) for i, t in select],
    )
    folder = cache_root / "rerankers" / key
    if (folder / "weights.pt").exists():
        weights = torch.load(folder / "weights.pt", weights_only=False)
        history = torch.load(folder / "history.pt", weights_only=False)
        return weights, history, folder, True
    weights, history = train_reranker(examples, select, states, model, seed)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(history, folder / "history.pt")
    torch.save(weights, folder / "weights.tmp")
    (folder / "weights.tmp").replace(folder / "weights.pt")  # written last: marks the model done
    return weights, history, folder, False


def score_cached(
    folder: Path,
    weights: dict[str, Any],
    ids: Sequence[str],
    states: PairStates,
    model: RerankConfig,
    superset: Sequence[str] | None = None,
) -> tuple[np.ndarray, bool]:
    """P_phi of a trained reranker for ``ids``, cached beside its weights under the ids' key.

    Args:
        folder: The model's cache folder.
        weights: Its weights.
        ids: Pair ids to score.
        states: Lower-layer states covering ``ids``.
        model: Settings.
        superset: Ids of an earlier scoring of this model (e.g. the rerank stage's). When it is
            cached and covers ``ids``, those probabilities are reused, so a pair keeps the exact
            P_phi it has in ``candidates.parquet`` (rescoring in other batches can move it by
            about 1e-4 under bfloat16).

    Returns:
        ``(probabilities of shape (len(ids), 4), from_cache)``.
    """
    path = folder / f"pred_{content_key(list(ids))}.npy"
    if path.exists():
        return np.load(path), True
    if superset is not None:
        known = folder / f"pred_{content_key(list(superset))}.npy"
        where = {pid: i for i, pid in enumerate(superset)}
        if known.exists() and all(pid in where for pid in ids):
            return np.load(known)[[where[pid] for pid in ids]], True
    probs = predict(weights, ids, states, model).astype(np.float32)
    atomic_write_npy(path, probs)
    return probs, False


def run_rerank(
    data_dir: Path, out_dir: Path, config: RerankRunConfig | None = None, cache_root: Path | None = None
) -> dict[str, Any]:
    """Run the rerank stage on top of the rqa stage's candidates in ``out_dir``."""
    config = config or RerankRunConfig()
    cache_root = cache_root or default_cache_root()
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        inputs = rerank_inputs(data_dir, out_dir, config)
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
    for variant in config.variants:
        examples, select = variant_examples(inputs, variant)
        for seed in config.seeds:
            with stage(timings, f"{variant}/seed{seed}/train"):
                weights, history, folder, cached = train_or_load(
                    variant, seed, examples, select, states, config.model, cache_root
                )
            from_cache[f"{variant}/seed{seed}/train"] = cached
            histories[f"{variant}/seed{seed}"] = history
            with stage(timings, f"{variant}/seed{seed}/score"):
                probs, cached = score_cached(folder, weights, score_ids, states, config.model)
            from_cache[f"{variant}/seed{seed}/score"] = cached
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
    kept = candidates[~candidates["reranker"].isin(config.variants)].copy()
    # one dtype for P_phi on both sides (a table from an older rqa stage has float64 NaNs there)
    kept[RATING_COLUMNS] = kept[RATING_COLUMNS].astype(np.float32)
    table = pd.concat([kept, reranked], ignore_index=True)
    write_candidates(out_dir, table)
    atomic_write_parquet(
        out_dir / "rating_predictions.parquet", pd.concat(prediction_rows, ignore_index=True)
    )
    config_record = {**asdict(config), "variants": {v: VARIANTS[v] for v in config.variants}}
    # Steps are named per variant and seed, so which ones ran is not part of the comparison.
    _add_compute_times(
        out_dir / "manifest.json", "rerank", timings, from_cache, config_record, ("variants", "seeds")
    )
    entry = {
        "stage": "rerank",
        "protocol": protocol,
        "config": config_record,
        "training_pairs": {k: [len(f), len(s)] for k, (f, s) in sources.items()},
        "scored_pairs": len(score_ids),
        "histories": histories,
        **provenance(timings, CACHE_VERSION),
    }
    _update_manifest(out_dir / "manifest.json", "rerank", entry)
    return entry
