"""Stage ``explain_rate`` of ``fqa run``: the explain-then-rate reranker, trained, scored, explained.

Trains :class:`~fqa_analysis.models.explain_rate.ExplainRateModel` on the same feedback and
held-out split as the rate-only ``feedback_kl`` reranker (one model per seed), and rescores the
RQA systems' top 5 on the four feedback domains with the same sum, S = P_theta + P(Excellent).

Outputs (in the results folder), named by the model's form (``ExplainRateConfig.form``, see
:mod:`fqa_analysis.models.explain_rate`): ``<name>`` is ``explain_rate`` for ours (the head reads
the model's own explanation while training, and sees the encoder's summary of the pair beside
the decoder's state; reranker ``feedback_explain_rate``) and ``explain_rate_paper`` for the
paper's (the head reads the annotators' explanations, teacher-forced, and sees the decoder's
state alone; reranker ``feedback_explain_rate_paper``):

* ``<name>_candidates.parquet``: candidate rows (the contract of ``candidates.parquet``), one per
  RQA system, seed and candidate;
* ``<name>_predictions.parquet``: per seed and feedback_test item, P_phi, the explanation the
  model wrote before rating it, and the rating the explain stage's consistency classifier
  (trained on human explanations) reads in that explanation;
* the manifest entry ``<name>``: config, per-seed training histories, time and memory.

Every model's scores are cached beside its weights in chunks (resumable; a pair is generated and
rated once per model, whichever RQA system proposed it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_parquet, content_key, default_cache_root
from fqa_analysis.core.candidates import RATING_COLUMNS, validate_candidates
from fqa_analysis.core.ratings import LABELS
from fqa_analysis.core.results import lever_step_name, load_candidates
from fqa_analysis.models.explain_rate import (
    CACHE_VERSION,
    ExplainRateConfig,
    ExplainRateModel,
    rated_explanations,
    train_explain_rate,
)
from fqa_analysis.models.explainer import explanation_examples
from fqa_analysis.models.explanation_scoring import Embedder, rating_classifier
from fqa_analysis.models.reranker.encoder import pair_id
from fqa_analysis.models.reranker.inputs import candidate_texts
from fqa_analysis.models.reranker.pairs import feedback_item_sets
from fqa_analysis.models.reranker.scoring import stored_probabilities
from fqa_analysis.models.reranker.store import relevance_model
from fqa_analysis.models.reranker.variants import RELEVANCE_SEED, RerankRunConfig
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import add_compute_times, provenance, update_manifest
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = [
    "KL_TOLERANCE",
    "RERANKER",
    "RUN_FIELDS",
    "ExplainRateRunConfig",
    "adopt_lever",
    "config_record",
    "lever_configs",
    "lever_measurement",
    "lever_name",
    "output_name",
    "plan_units",
    "reranker_name",
    "run_explain_rate",
]

#: The ``reranker`` value of our form's rows.
RERANKER = "feedback_explain_rate"
#: Pairs generated and rated per cached chunk of a model's scores.
CHUNK = 512


#: Config fields that only say which runs ran: which seeds ran, and the rerank stage's settings that
#: do not change the relevance model.
RUN_FIELDS: tuple[str, ...] = ("seeds", "relevance.variants", "relevance.seeds", "relevance.score_rqa")


@dataclass(frozen=True)
class ExplainRateRunConfig:
    """What ``fqa run explain_rate`` computes.

    Attributes:
        model: Model and training settings.
        seeds: Training seeds (the rate-only rerankers have three).
        rqa: RQA systems whose top 5 the model rescores: the two best, which the chapters
            compare; generating an explanation for every candidate is the stage's dearest step
            (a pair two systems share is generated once).
        subset: First N items of every feedback split and of every test set (CI smoke runs).
        holdout: Held-out share of questions (``available`` protocol), as for the rerankers.
        start: ``relevance``: the encoder's layers start from the one relevance model (shared by every seed)
            (the rerank stage's ``vanilla``, which the rate-only ``feedback_kl`` continues from:
            the two are compared on equal footing); ``minilm``: from MiniLM.
        relevance: The rerank stage's settings that name the relevance model (its recipe).
        unlikelihood_levers: Our form only: weights of the unlikelihood term against shared
            openings (:func:`~fqa_analysis.models.explain_rate.opening_unlikelihood`) that seed 0
            also trains with, beside ``model.opening_unlikelihood``; :func:`adopt_lever`
            then chooses the lever every seed trains with.
        top_p_levers: Our form only: nucleus masses of the explanation the model writes
            (``model.own_top_p``: a seeded draw in training, which the rating head reads, and at
            inference) that seed 0 also trains with, at ``model``'s unlikelihood weight; measured
            and chosen beside the unlikelihood weights. Both lists empty: ``model`` as it is.
    """

    model: ExplainRateConfig = field(default_factory=ExplainRateConfig)
    seeds: tuple[int, ...] = (0, 1, 2)
    rqa: tuple[str, ...] = ("hybrid", "minilm_ft")
    subset: int | None = None
    holdout: float = 0.2
    start: str = "relevance"
    relevance: RerankRunConfig = field(default_factory=RerankRunConfig)
    # weights 1 and 4 were measured at c22be43 (held-out top opening 79% and 93%, against weight
    # 2's 39%) and left out: each costs a seed-0 training (13-21 min on 2 cores)
    unlikelihood_levers: tuple[float, ...] = (2.0,)
    top_p_levers: tuple[float, ...] = (0.5, 0.9)


#: Held-out KL a lever may add over the configured setting's (the first row) and still be
#: adopted (nats): the rating must not get worse for the explanations to get more varied.
KL_TOLERANCE = 0.005


def lever_configs(config: ExplainRateRunConfig) -> list[ExplainRateConfig]:
    """The model settings seed 0 trains with to choose every seed's: the configured one first.

    Then one per unlikelihood weight (``model``'s decoding) and one per nucleus mass (``model``'s
    weight); a setting listed twice is trained once. None beyond ``model`` for the paper's form
    (its head reads the annotators' explanations, not its own).

    Example:
        >>> run = ExplainRateRunConfig(unlikelihood_levers=(0.0, 2.0), top_p_levers=(0.5,))
        >>> [(c.opening_unlikelihood, c.own_top_p) for c in lever_configs(run)]
        [(0.0, None), (2.0, None), (0.0, 0.5)]
    """
    base = config.model
    if base.head_reads != "own" or not (config.unlikelihood_levers or config.top_p_levers):
        return [base]
    configs = [
        base,
        *(replace(base, opening_unlikelihood=w) for w in config.unlikelihood_levers),
        *(replace(base, own_top_p=p) for p in config.top_p_levers),
    ]
    return list(dict.fromkeys(configs))


def lever_name(model: ExplainRateConfig) -> str:
    """A lever's name in the stage's timings: its unlikelihood weight, and its nucleus mass if any.

    Example:
        >>> lever_name(ExplainRateConfig(opening_unlikelihood=2.0))
        'unlikelihood2'
        >>> lever_name(ExplainRateConfig(own_top_p=0.5))
        'unlikelihood0_top_p0.5'
    """
    return lever_step_name(model.opening_unlikelihood, model.own_top_p)


def adopt_lever(levers: pd.DataFrame) -> int:
    """The position of the lever every seed trains with, from seed 0's held-out measurements.

    The first row is the configured setting. A lever qualifies when its held-out KL (generated
    explanations, the epoch kept) is at most the first row's plus :data:`KL_TOLERANCE`; of those,
    the one whose held-out explanations share their most common opening least (ties: the first).

    Args:
        levers: One row per lever: ``select_kl``, ``select_opening_share``.

    Example:
        >>> levers = pd.DataFrame({"weight": [0.0, 1.0, 3.0], "select_kl": [0.70, 0.703, 0.75],
        ...                        "select_opening_share": [1.0, 0.4, 0.1]})
        >>> adopt_lever(levers)  # the third varies most but rates worse
        1
    """
    base = float(levers["select_kl"].iloc[0])
    order = pd.Series(range(len(levers)), index=levers.index)
    ok = levers.assign(_order=order)[levers["select_kl"] <= base + KL_TOLERANCE]
    return int(ok.sort_values(["select_opening_share", "_order"])["_order"].iloc[0])


def lever_measurement(model: ExplainRateConfig, history: dict[str, Any]) -> dict[str, Any]:
    """One row of the levers' table: seed 0's held-out measurements at the epoch kept.

    Args:
        model: The settings the model trained with (its unlikelihood weight and nucleus mass).
        history: Its training history (:func:`~fqa_analysis.models.explain_rate.train_explain_rate`).

    Example:
        >>> history = {"best_select_kl": 0.90, "train_s": 60.0, "epochs": [
        ...     {"select_kl": 0.90, "select_distinct": 0.02, "select_opening_share": 0.9},
        ...     {"select_kl": 0.95, "select_distinct": 0.15, "select_opening_share": 0.2}]}
        >>> row = lever_measurement(ExplainRateConfig(opening_unlikelihood=4.0), history)
        >>> row["weight"], row["top_p"], row["select_opening_share"], row["epoch_kept"]  # lower KL
        (4.0, None, 0.9, 1)
    """
    kept = min(range(len(history["epochs"])), key=lambda i: history["epochs"][i]["select_kl"])
    epoch = history["epochs"][kept]
    return {
        "weight": model.opening_unlikelihood,
        "top_p": model.own_top_p,  # None: greedy
        "select_kl": history["best_select_kl"],
        "select_distinct": epoch.get("select_distinct", float("nan")),
        "select_opening_share": epoch.get("select_opening_share", float("nan")),
        "epoch_kept": kept + 1,
        "epochs": len(history["epochs"]),
        "train_s": history.get("train_s", float("nan")),
    }


def output_name(form: str) -> str:
    """Prefix of a form's result files and its manifest entry.

    Example:
        >>> output_name("ours"), output_name("paper"), output_name("own-decoder")
        ('explain_rate', 'explain_rate_paper', 'explain_rate_own-decoder')
    """
    return "explain_rate" if form == "ours" else f"explain_rate_{form}"


def reranker_name(form: str) -> str:
    """The ``reranker`` value of a form's rows.

    Example:
        >>> reranker_name("ours"), reranker_name("paper")
        ('feedback_explain_rate', 'feedback_explain_rate_paper')
    """
    return RERANKER if form == "ours" else f"{RERANKER}_{form}"


def _scores(model: ExplainRateModel, folder: Path, pairs: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """P_phi and the written explanation of every pair (by pair id), computed once per model.

    Pairs the model has not scored are generated and rated in chunks of :data:`CHUNK`, each
    written atomically under the model's cache folder (a killed run resumes at its chunk).
    """
    parts = sorted(folder.glob("scores_*.parquet"))
    known = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True) if parts else None
    done = set() if known is None else set(known["pair_id"])
    missing = sorted(set(pairs) - done)
    for lo in range(0, len(missing), CHUNK):
        ids = missing[lo : lo + CHUNK]
        probs, texts = model.predict([pairs[i] for i in ids], progress=True)
        chunk = pd.DataFrame({"pair_id": ids, "explanation": texts})
        chunk[RATING_COLUMNS] = probs
        atomic_write_parquet(folder / f"scores_{content_key(ids)}.parquet", chunk)
        known = chunk if known is None else pd.concat([known, chunk], ignore_index=True)
    if known is None:  # nothing to score
        return pd.DataFrame({"pair_id": [], "explanation": [], **{c: [] for c in RATING_COLUMNS}})
    return known


def plan_units(config: ExplainRateRunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them."""
    # seed 0 measures the levers first where there is a choice to make (more than one setting)
    return (["levers"] if len(lever_configs(config)) > 1 else []) + [f"seed{s}" for s in config.seeds]


def config_record(config: ExplainRateRunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return asdict(config)


def run_explain_rate(
    data_dir: Path, out_dir: Path, config: ExplainRateRunConfig | None = None, cache_root: Path | None = None
) -> dict[str, Any]:
    """Run the explain_rate stage on top of the rqa stage's candidates in ``out_dir``."""
    config = config or ExplainRateRunConfig()
    name, reranker = output_name(config.model.form), reranker_name(config.model.form)
    cache_root = cache_root or default_cache_root()
    protocol = data.training_protocol(data_dir)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        candidates = load_candidates(out_dir)
        rqa_rows, texts = candidate_texts(data_dir, candidates, config.rqa, data.FEEDBACK_DOMAINS)
        cand_pairs = list(zip(rqa_rows["question"], texts, strict=True))
        fb = data.all_feedback(data_dir, config.subset)
        fit_items, select_items = feedback_item_sets(protocol, fb["train"], fb["valid"], config.holdout)
        fit, select = rated_explanations(fit_items), rated_explanations(select_items)
        test_items = [it for f in fb["test"] for it in f.items]
        test_pairs = [(it.question, it.passage.text) for it in test_items]
        pairs = {pair_id(q, p): (q, p) for q, p in [*cand_pairs, *test_pairs]}
    embedder = Embedder()
    with stage(timings, "rating_classifier"):
        classifier = rating_classifier(embedder, explanation_examples(fit_items))
    candidate_rows, prediction_rows, histories = [], [], {}
    if config.start not in ("relevance", "minilm"):
        raise ValueError(f"unknown start {config.start!r}; use 'relevance' or 'minilm'")
    init = None
    if config.start == "relevance":
        with stage(timings, "relevance_model"):
            # the one relevance model, shared by every seed (as the rerank stage's variants)
            relevance = relevance_model(data_dir, config.relevance, RELEVANCE_SEED, cache_root)
        from_cache["relevance_model"] = relevance.from_cache
        init = (relevance.folder, relevance.weights)
    model_config, levers = config.model, []
    lever_settings = lever_configs(config)
    if len(lever_settings) > 1:
        # seed 0 with each lever, measured on the held-out pairs; the lever adopted trains every seed
        for lever in lever_settings:
            step = f"levers/{lever_name(lever)}/train"
            with stage(timings, step):
                _, _, history = train_explain_rate(fit, select, lever, config.seeds[0], cache_root, init)
            from_cache[step] = bool(history["from_cache"])
            levers.append(lever_measurement(lever, history))
        model_config = lever_settings[adopt_lever(pd.DataFrame(levers))]
        # the adopted lever's seed-0 model is seed 0's model: its training counts once, as seed 0's
        adopted_step = f"levers/{lever_name(model_config)}/train"
        timings.pop(adopted_step, None)
        from_cache.pop(adopted_step, None)
    for seed in config.seeds:
        with stage(timings, f"seed{seed}/train"):
            model, folder, history = train_explain_rate(fit, select, model_config, seed, cache_root, init)
        from_cache[f"seed{seed}/train"] = bool(history["from_cache"])
        histories[f"seed{seed}"] = {k: v for k, v in history.items() if k != "from_cache"}
        with stage(timings, f"seed{seed}/score"):
            before = len(list(folder.glob("scores_*.parquet")))
            scored = _scores(model, folder, pairs).set_index("pair_id")
        from_cache[f"seed{seed}/score"] = len(list(folder.glob("scores_*.parquet"))) == before
        probs = scored[RATING_COLUMNS].to_numpy(np.float32)
        position = {pid: i for i, pid in enumerate(scored.index)}
        rows = rqa_rows.copy()
        rows["reranker"], rows["seed"] = reranker, seed
        rows[RATING_COLUMNS] = stored_probabilities(probs[[position[pair_id(q, p)] for q, p in cand_pairs]])
        candidate_rows.append(rows)
        test_at = [position[pair_id(q, p)] for q, p in test_pairs]
        texts = scored["explanation"].to_numpy()[test_at].tolist()
        with stage(timings, f"seed{seed}/explanation_ratings"):
            read = classifier.predict(embedder.vectors(texts)) if texts else np.zeros(0, int)
        test_probs = stored_probabilities(probs[test_at])
        prediction_rows.append(
            pd.DataFrame(
                {
                    "protocol": protocol,
                    "reranker": reranker,
                    "seed": seed,
                    "domain": [it.domain for it in test_items],
                    "item_id": [it.item_id for it in test_items],
                    "passage_id": [it.passage.passage_id for it in test_items],
                    **{c: test_probs[:, j] for j, c in enumerate(RATING_COLUMNS)},
                    "explanation": texts,
                    "explanation_rating": [LABELS[int(k)] for k in read],
                }
            )
        )
    table = pd.concat(candidate_rows, ignore_index=True)
    path = out_dir / f"{name}_candidates.parquet"
    validate_candidates(table, path)
    atomic_write_parquet(path, table)
    atomic_write_parquet(
        out_dir / f"{name}_predictions.parquet", pd.concat(prediction_rows, ignore_index=True)
    )
    recorded_config = config_record(config)
    add_compute_times(out_dir / "manifest.json", name, timings, from_cache, recorded_config, RUN_FIELDS)
    entry = {
        "stage": name,
        "protocol": protocol,
        "config": recorded_config,
        "training_pairs": [len(fit), len(select)],
        "training_explanations": sum(len(p.explanations) for p in fit),
        "scored_pairs": len(pairs),
        "histories": histories,
        # seed 0's held-out measurements of the levers, and the lever every seed used
        "levers": levers,
        "opening_unlikelihood": model_config.opening_unlikelihood,
        "own_top_p": model_config.own_top_p,
        **provenance(timings, CACHE_VERSION),
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(
        cache_root, name, recorded_config, RUN_FIELDS, data_fingerprint(data_dir), plan_units(config)
    )
    update_manifest(out_dir / "manifest.json", name, entry)
    return entry
