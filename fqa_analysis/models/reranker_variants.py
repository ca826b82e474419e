"""The reranker variants of the study: what each one trains on, trained and scored once per content key.

One floor below the stages: the rerank stage trains and scores every variant x seed with these
functions, and the relevance, beyond and explain-then-rate stages reuse the same models through
them (the same content keys), so no stage imports another's helpers.

* :data:`VARIANTS` and :class:`RerankRunConfig`: each variant's training source, loss and
  starting point, and the settings every stage built on the rerankers shares;
* the training sources (:func:`rerank_inputs`): the feedback (``feedback_training_sets``), the
  pseudo pairs of the QA-train questions (:func:`pseudo_pairs`, negatives from
  :func:`ranked_passages`) and their mix; the RQA systems' candidates (:func:`candidate_texts`);
* :func:`train_or_load` (one content-keyed model), :func:`train_relevance` and
  :func:`relevance_model` (the relevance model ``vanilla``), :func:`stage_model` (a variant,
  warm-started from the relevance model, :func:`warm_start`, with its lower layers frozen under
  ``warm_frozen_layers``);
* :func:`score_cached`: P_phi of a model for pair ids, each pair scored once and stored beside
  the weights; :func:`stored_probabilities`, the rounding ``results/`` stores.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from tqdm import tqdm

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_json, atomic_write_npz, content_key, default_cache_root
from fqa_analysis.core.calibration import top_k
from fqa_analysis.core.results import load_candidates
from fqa_analysis.models.checkpoint import TrainingCheckpoint
from fqa_analysis.models.reranker import (
    CACHE_VERSION,
    SCORE_BATCH,
    PairStates,
    RerankConfig,
    encode_pairs,
    lower_layer_weights,
    model_key,
    pair_id,
    predict,
    train_reranker,
    upper_layer_weights,
)
from fqa_analysis.models.reranker_data import (
    RatedPair,
    draw_negatives,
    feedback_training_sets,
    pseudo_rated_pairs,
    question_groups,
    training_examples,
)
from fqa_analysis.models.retrieval import SYSTEMS

__all__ = [
    "CHECKPOINT_FILE",
    "NEGATIVES_VERSION",
    "NEGATIVE_SOURCES",
    "RELEVANCE_LOSSES",
    "RELEVANCE_SEED",
    "SCORES_FILE",
    "SCORE_CHUNK",
    "STORED_DECIMALS",
    "VARIANTS",
    "RerankInputs",
    "RerankRunConfig",
    "Variant",
    "WarmStart",
    "candidate_texts",
    "example_ids",
    "has_scores",
    "is_held_out",
    "planned_runs",
    "pseudo_pairs",
    "ranked_passages",
    "relevance_model",
    "relevance_splits",
    "replay_sample",
    "rerank_inputs",
    "score_cached",
    "stage_model",
    "stored_probabilities",
    "train_or_load",
    "train_relevance",
    "variant_examples",
    "warm_start",
]


class Variant(NamedTuple):
    """How one reranker variant is trained, and on which seeds it runs by default."""

    #: ``feedback``, ``pseudo`` (QA data) or ``both`` (feedback + as many replayed pseudo pairs).
    source: str
    #: Loss of its feedback (``kl``, ``ce_annotator``, ``ce_majority``); the pseudo pairs' is KL,
    #: plus the listwise term of the ``listwise`` relevance recipe.
    loss: str
    #: ``minilm`` (a fresh head on MiniLM) or ``relevance`` (the relevance model ``vanilla`` of
    #: seed :data:`RELEVANCE_SEED`, shared by every seed of the variant).
    start: str
    #: Seeds the stage trains when ``--seeds`` is not given.
    seeds: tuple[int, ...] = (0, 1, 2)


#: The one relevance model every warm-started variant continues from, whatever its own seed: it
#: stands in for a pretrained relevance cross-encoder, so the seeds vary the feedback training only.
RELEVANCE_SEED = 0

VARIANTS: dict[str, Variant] = {
    "vanilla": Variant("pseudo", "kl", "minilm", seeds=(RELEVANCE_SEED,)),
    "feedback_kl": Variant("feedback", "kl", "relevance"),
    "feedback_ce_annotator": Variant("feedback", "ce_annotator", "relevance"),
    "feedback_ce_majority": Variant("feedback", "ce_majority", "relevance"),
    "combined": Variant("both", "kl", "relevance"),
    "feedback_kl_scratch": Variant("feedback", "kl", "minilm"),
    "feedback_ce_annotator_scratch": Variant("feedback", "ce_annotator", "minilm", seeds=(0,)),
    "feedback_ce_majority_scratch": Variant("feedback", "ce_majority", "minilm", seeds=(0,)),
}


def planned_runs(variants: Sequence[str] = tuple(VARIANTS)) -> list[str]:
    """The ``variant/seedN`` runs the rerank stage trains by default, in declaration order.

    Example:
        >>> planned_runs(["vanilla", "feedback_kl"])
        ['vanilla/seed0', 'feedback_kl/seed0', 'feedback_kl/seed1', 'feedback_kl/seed2']
    """
    return [f"{v}/seed{s}" for v in variants for s in VARIANTS[v].seeds]


#: Losses of the relevance model (``vanilla``): ``pointwise`` (each pseudo pair's 4-way
#: cross-entropy alone) or ``listwise`` (that plus the softmax over each question's gold and
#: negatives of log P(Excellent)).
RELEVANCE_LOSSES: tuple[str, ...] = ("pointwise", "listwise")
#: Sources of the pseudo negatives: RQA systems that need no fine-tuned weights.
NEGATIVE_SOURCES: tuple[str, ...] = ("minilm", "bm25")


@dataclass(frozen=True)
class RerankRunConfig:
    """What ``fqa run rerank`` computes.

    Attributes:
        variants: Reranker variants to train.
        seeds: Training seeds of every variant; None trains each variant's own default seeds
            (:attr:`Variant.seeds`: the relevance model once, the feedback variants three times).
        model: Cross-encoder settings.
        subset: First N questions of every test split and N items of every feedback split (CI).
        pseudo_questions: QA-train questions of ``relevance_domains`` that give pseudo-ratings (a
            seeded draw); None takes all of them (9,467 in the five domains).
        pseudo_negatives: Bad pseudo-examples per question, drawn from ``negative_pool``.
        relevance_loss: The relevance model's recipe, one of :data:`RELEVANCE_LOSSES`.
        relevance_domains: Domains whose QA-train questions give the pseudo pairs. Quebec has no
            feedback and no test question in the overall, but its QA data is QA data.
        variant_epochs: Epochs of the variants that do not train ``model.epochs``: ``vanilla``
            (one pass over the pseudo pairs, the stage's dearest step), ``combined`` (one pass of
            the continuation over feedback + replay), ``feedback_ce_annotator`` and its scratch row
            (its epoch holds one example per annotator, two per item: one epoch is as many
            optimiser steps and views of each item as two epochs of the other feedback losses).
        negative_pool: How many of the negative source's top non-gold candidates they are drawn from.
        negative_source: RQA system whose ranking gives the negatives (one for every variant and
            seed, so no reranker depends on the RQA it rescores).
        score_domains: Domains whose test candidates every reranker rescores. Quebec has no
            feedback and the chapters' overall leaves it out, as the paper does; its rows would
            double the scoring time.
        score_rqa: RQA systems whose top-k every reranker rescores: all four, the paper's
            decoupling (one trained reranker serves every RQA system). Scoring a pair costs about
            as much as training on it (about 100 pairs/s on two cores) and a pair two systems share
            is scored once: the hybrid alone is 9,960 pairs, all four systems 20,073 (about 27
            more minutes over 15 models).
        holdout: Held-out share of questions for model selection (``available`` protocol).
    """

    variants: tuple[str, ...] = tuple(VARIANTS)
    seeds: tuple[int, ...] | None = None
    model: RerankConfig = field(default_factory=RerankConfig)
    subset: int | None = None
    pseudo_questions: int | None = None
    pseudo_negatives: int = 3
    relevance_loss: str = "listwise"
    relevance_domains: tuple[str, ...] = data.DOMAINS
    variant_epochs: dict[str, int] = field(
        default_factory=lambda: {
            "vanilla": 1,
            "combined": 1,
            "feedback_ce_annotator": 1,
            "feedback_ce_annotator_scratch": 1,
        }
    )
    negative_pool: int = 10
    negative_source: str = "minilm"
    score_domains: tuple[str, ...] = data.FEEDBACK_DOMAINS
    score_rqa: tuple[str, ...] = SYSTEMS
    holdout: float = 0.2
    #: Lower transformer layers of the relevance model that the warm-started variants keep frozen,
    #: 0..5: their states are computed once with the relevance model's weights and every warm
    #: variant and seed trains only the layers above them and the head (``vanilla`` and the
    #: ``_scratch`` rows are unaffected). 0, the default, trains every layer. Added after stages
    #: recorded their configurations: ``core.results.LATER_SETTINGS`` makes a record without it
    #: compare equal to one at 0 (this config never enters a cache key).
    warm_frozen_layers: int = 0

    def seeds_of(self, variant: str) -> tuple[int, ...]:
        """The seeds ``variant`` trains under this configuration."""
        return VARIANTS[variant].seeds if self.seeds is None else self.seeds

    def runs(self) -> list[tuple[str, int]]:
        """Every ``(variant, seed)`` this configuration trains, variants in their given order."""
        return [(v, s) for v in self.variants for s in self.seeds_of(v)]


#: Version of the pseudo-pair negatives' cache (2: one file per domain).
NEGATIVES_VERSION = "negatives-2"


def ranked_passages(
    splits: Sequence[data.QASplit], source: str, depth: int, cache_root: Path
) -> dict[str, list[list[int]]]:
    """Each split's top ``depth`` passages per question by an RQA system (cached per domain).

    The source encodes every pool passage once (about two minutes a domain for zero-shot MiniLM
    on two cores), so each domain's ranking is cached under the content of its questions, its pool
    and the source's settings: a run over more domains reuses the domains ranked before.

    Raises:
        ValueError: ``source`` needs fine-tuned weights (``minilm_ft``, ``hybrid``).
    """
    from fqa_analysis.models.retrieval import make_system  # loads a model only when not cached

    if source not in NEGATIVE_SOURCES:
        raise ValueError(
            f"negative source {source!r} needs fine-tuned weights or is unknown; use one of "
            f"{', '.join(NEGATIVE_SOURCES)}"
        )
    system = make_system(source)
    ranked: dict[str, list[list[int]]] = {}
    for s in splits:
        texts = ([q.question for q in s.questions], list(s.passage_texts))
        key = content_key(NEGATIVES_VERSION, system.fingerprint(), depth, s.domain, texts)
        path = cache_root / "pseudo_negatives" / f"{key}.json"
        if path.exists():
            ranked[s.domain] = json.loads(path.read_text())
            continue
        ranked[s.domain] = top_k(system.score(*texts), depth).tolist()
        atomic_write_json(path, ranked[s.domain])
    return ranked


def is_held_out(question: str) -> bool:
    """Whether a QA-train question is in the relevance model's held-out tenth (a hash of its text).

    The rule depends on the question alone, so a recipe with more domains or negatives holds out
    the same questions of the domains it shares with another, and the recipe table compares
    recipes on one held-out set.
    """
    return int(pair_id(question, "")[:8], 16) % 10 == 0


def _first_questions(split: data.QASplit, fit: int, held: int) -> data.QASplit:
    """``split`` narrowed to its first ``fit`` questions outside the held-out tenth and ``held`` inside."""
    kept, counts = [], {False: 0, True: 0}
    for q in split.questions:
        out = is_held_out(q.question)
        if counts[out] < (held if out else fit):
            kept.append(q)
            counts[out] += 1
    return data.QASplit(split.domain, split.split, split.path, tuple(kept), split.passages)


def relevance_splits(data_dir: Path, config: RerankRunConfig) -> list[data.QASplit]:
    """The QA-train splits of ``relevance_domains``, narrowed to the configured draw of questions."""
    splits = [data.load_qa_split(data_dir, d, "train") for d in config.relevance_domains]
    if config.subset is not None:
        # smoke runs: per domain the first `subset` training questions and a quarter as many
        # held-out ones, so that model selection and the recipe table have questions to score
        return [_first_questions(s, config.subset, max(1, config.subset // 4)) for s in splits]
    everyone = [(s.domain, q.question_id) for s in splits for q in s.questions]
    n = len(everyone) if config.pseudo_questions is None else config.pseudo_questions
    n = min(n, len(everyone))
    if n < len(everyone):
        rng = np.random.default_rng(0)
        chosen = {everyone[int(i)] for i in rng.choice(len(everyone), size=n, replace=False)}
        splits = [
            data.QASplit(
                s.domain,
                s.split,
                s.path,
                tuple(q for q in s.questions if (s.domain, q.question_id) in chosen),
                s.passages,
            )
            for s in splits
        ]
    return splits


def pseudo_pairs(
    data_dir: Path, config: RerankRunConfig, cache_root: Path
) -> tuple[list[RatedPair], list[RatedPair]]:
    """Pseudo-rated (fit, select) pairs from the QA-train questions of ``relevance_domains``.

    Gold = Excellent; ``pseudo_negatives`` drawn from the negative source's top ``negative_pool``
    non-gold = Bad. One question in ten (:func:`is_held_out`) is held out for model selection.
    """
    splits = relevance_splits(data_dir, config)
    ranked = ranked_passages(splits, config.negative_source, config.negative_pool + 1, cache_root)
    negatives: dict[tuple[str, int], Sequence[int]] = {}
    # the seed's first element is the domain's index in DOMAINS, so adding a domain changes no
    # other domain's draw
    for s in splits:
        d = data.DOMAINS.index(s.domain)
        # seeded by the question's own id (not its position in a drawn subset), as draw_negatives asks
        for q, ranking in zip(s.questions, ranked[s.domain], strict=True):
            negatives[(s.domain, q.question_id)] = draw_negatives(
                ranking, q.passage_id, config.negative_pool, config.pseudo_negatives, [d, q.question_id]
            )
    pairs = pseudo_rated_pairs(splits, negatives, config.pseudo_negatives)
    by_hash = sorted({p.question for p in pairs}, key=lambda q: pair_id(q, ""))
    held = {q for q in by_hash if is_held_out(q)}
    if not held and len(by_hash) >= 2:  # a small (smoke) draw still gets a selection set
        held = {by_hash[0]}
    return [p for p in pairs if p.question not in held], [p for p in pairs if p.question in held]


#: P_phi is stored rounded to this many decimals, as float32.
STORED_DECIMALS = 5


def stored_probabilities(probs: np.ndarray) -> np.ndarray:
    """P_phi as stored in results/: float32 rounded to 1e-5.

    Why: 15 reranker runs x 86,700 candidate rows of full-precision floats do not compress (52 MB);
    rounded, the table is about 10 MB (ARCHITECTURE.md#results-contract: results/ under 20 MB). A
    pick could change only where two candidates' scores differ by less than 1e-5; on the full run
    none did (0 of 260,100 reranked outcomes, under either scoring rule). Rows still sum to 1
    within 2e-5.

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
        protocol: Training protocol (ARCHITECTURE.md#training-protocols).
        candidates: The candidate table as the rqa (and earlier rerank) stages left it.
        rqa_rows: Its rows of the RQA systems alone (reranker ``none``).
        cand_ids: Pair id of every row of ``rqa_rows``.
        test_items: Every feedback_test item.
        test_ids: Pair id of every test item.
        sources: Training source -> (fit pairs, model-selection pairs).
        all_pairs: Every (question, passage text) pair whose lower-layer states are cached.
        scored_pairs: The pairs every trained reranker scores (candidates, then feedback_test).
    """

    protocol: str
    candidates: pd.DataFrame
    rqa_rows: pd.DataFrame
    cand_ids: list[str]
    test_items: list[data.FeedbackItem]
    test_ids: list[str]
    sources: dict[str, tuple[list[RatedPair], list[RatedPair]]]
    all_pairs: list[tuple[str, str]]
    scored_pairs: list[tuple[str, str]]

    def pairs_of(self, sources: Collection[str]) -> list[tuple[str, str]]:
        """The pairs of training ``sources`` (fit and selection), then every scored pair."""
        trained = [
            (p.question, p.passage_text) for s in sorted(sources) for part in self.sources[s] for p in part
        ]
        return trained + self.scored_pairs

    @cached_property  # read by every scoring call of the beyond stage: sorted once
    def score_ids(self) -> list[str]:
        """The pair ids every trained reranker scores (candidates and feedback_test), sorted."""
        return sorted(set(self.cand_ids) | set(self.test_ids))


def replay_sample(pseudo: Sequence[RatedPair], n: int, seed: int = 0) -> list[RatedPair]:
    """A seeded draw of ``n`` pseudo pairs (order kept), replayed beside the feedback of ``combined``.

    Example:
        >>> ps = [RatedPair("A", f"q{i}", "p", ("Bad",), "pseudo") for i in range(5)]
        >>> len(replay_sample(ps, 2)), replay_sample(ps, 9) == ps
        (2, True)
    """
    if n >= len(pseudo):
        return list(pseudo)
    kept = set(np.random.default_rng([seed, 31]).choice(len(pseudo), size=n, replace=False).tolist())
    return [p for i, p in enumerate(pseudo) if i in kept]


def candidate_texts(
    data_dir: Path, candidates: pd.DataFrame, systems: Sequence[str], domains: Sequence[str]
) -> tuple[pd.DataFrame, list[str]]:
    """The RQA systems' own candidate rows (reranker ``none``) in ``domains``, and each one's passage text.

    Raises:
        ValueError: ``candidates`` has no such rows (the rqa stage has not run for those systems).
    """
    rows = candidates[
        (candidates["reranker"] == "none")
        & candidates["domain"].isin(domains)
        & candidates["rqa"].isin(systems)
    ].reset_index(drop=True)
    if rows.empty:
        raise ValueError(
            f"candidates.parquet has no rows of RQA system(s) {list(systems)} in domains {list(domains)}; "
            "run `fqa run rqa` for them first"
        )
    pools = {
        (d, s): data.load_qa_split(data_dir, d, s)
        for d, s in rows[["domain", "split"]].drop_duplicates().values
    }
    texts = [
        pools[(d, s)].passages[int(pid)].text
        for d, s, pid in zip(rows["domain"], rows["split"], rows["passage_id"], strict=True)
    ]
    return rows, texts


def rerank_inputs(
    data_dir: Path, out_dir: Path, config: RerankRunConfig, cache_root: Path | None = None
) -> RerankInputs:
    """Load the training sources, the rqa stage's candidates and the test items.

    No reranker is loaded; the pseudo pairs' negatives come from the negative source's cached
    rankings (computed once, with the source's model, when not cached).
    """
    protocol = data.training_protocol(data_dir)
    candidates = load_candidates(out_dir)  # the rqa stage's output, contract-checked
    fb = data.all_feedback(data_dir, config.subset)
    fb_fit, fb_select = feedback_training_sets(protocol, fb["train"], fb["valid"], config.holdout)
    ps_fit, ps_select = pseudo_pairs(data_dir, config, cache_root or default_cache_root())
    rqa_rows, cand_text = candidate_texts(data_dir, candidates, config.score_rqa, config.score_domains)
    cand_ids = [pair_id(q, p) for q, p in zip(rqa_rows["question"], cand_text, strict=True)]
    test_items = [it for f in fb["test"] for it in f.items]
    sources = {
        "feedback": (fb_fit, fb_select),
        "pseudo": (ps_fit, ps_select),
        # continued from vanilla: the feedback and as many replayed pseudo pairs
        "both": (replay_sample(ps_fit, len(fb_fit)) + fb_fit, fb_select),
    }
    scored_pairs = list(zip(rqa_rows["question"], cand_text, strict=True))
    scored_pairs += [(it.question, it.passage.text) for it in test_items]
    all_pairs = [(p.question, p.passage_text) for f, s in sources.values() for p in f + s] + scored_pairs
    return RerankInputs(
        protocol,
        candidates,
        rqa_rows,
        cand_ids,
        test_items,
        [pair_id(it.question, it.passage.text) for it in test_items],
        sources,
        all_pairs,
        scored_pairs,
    )


def variant_examples(
    inputs: RerankInputs, variant: str
) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """A variant's (training, model-selection) examples: its data source under its loss (selection: KL)."""
    source, loss = VARIANTS[variant].source, VARIANTS[variant].loss
    fit_pairs, select_pairs = inputs.sources[source]
    return example_ids(fit_pairs, loss), example_ids(select_pairs, "kl")


def train_or_load(
    name: str,
    seed: int,
    examples: Sequence[tuple[str, np.ndarray]],
    select: Sequence[tuple[str, np.ndarray]],
    states: PairStates | Callable[[], PairStates],
    model: RerankConfig,
    cache_root: Path,
    init: tuple[Path, dict[str, Any]] | None = None,
    groups: Sequence[Sequence[int]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], Path, bool]:
    """Train one reranker, or load it when one with the same content key was trained before.

    ``states`` may be a function that encodes them: it is called only when the model must train.

    The key covers the code version, the model settings, ``name``, the seed, every training
    and selection example, the model it continues from (``init``: that model's cache folder
    name, itself a content key) and the listwise ``groups`` (see
    :func:`train_reranker`), so two runs that train on the same data share one model.

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
        *([] if init is None else [("init", init[0].name)]),
        *([] if groups is None else [("listwise", [list(g) for g in groups])]),
    )
    folder = cache_root / "rerankers" / key
    if (folder / "weights.pt").exists():
        weights = torch.load(folder / "weights.pt", weights_only=False)
        history = torch.load(folder / "history.pt", weights_only=False)
        return weights, history, folder, True
    if callable(states):
        states = states()
    folder.mkdir(parents=True, exist_ok=True)
    # a run stopped mid-training resumes from its last checkpoint, to the same weights
    checkpoint = TrainingCheckpoint(folder / CHECKPOINT_FILE)
    weights, history = train_reranker(
        examples,
        select,
        states,
        model,
        seed,
        init=None if init is None else init[1],
        groups=groups,
        checkpoint=checkpoint,
    )
    torch.save(history, folder / "history.pt")
    torch.save(weights, folder / "weights.tmp")
    (folder / "weights.tmp").replace(folder / "weights.pt")  # written last: marks the model done
    checkpoint.clear()
    return weights, history, folder, False


#: File in a model's cache folder holding its training checkpoint until the model is done.
CHECKPOINT_FILE = "checkpoint.pt"


def relevance_model(
    data_dir: Path, config: RerankRunConfig, seed: int, cache_root: Path
) -> tuple[dict[str, Any], dict[str, Any], Path, bool]:
    """One seed's relevance model (``vanilla``) under ``config``'s recipe: the stage's, from the cache.

    The same content key as the rerank stage's ``vanilla`` of that seed (and the relevance
    stage's recipe), so a stage built on it (explain-then-rate's encoder) loads the model those
    stages trained; it trains it (encoding its pairs first) only when none is cached.

    Returns:
        As :func:`train_or_load`.
    """
    fit, select = pseudo_pairs(data_dir, config, cache_root)
    pairs = [(p.question, p.passage_text) for p in fit + select]
    return train_relevance(
        fit, select, lambda: encode_pairs(pairs, config.model, cache_root), config, seed, cache_root
    )


def train_relevance(
    fit: Sequence[RatedPair],
    select: Sequence[RatedPair],
    states: PairStates | Callable[[], PairStates],
    config: RerankRunConfig,
    seed: int,
    cache_root: Path,
) -> tuple[dict[str, Any], dict[str, Any], Path, bool]:
    """Train or load one seed's relevance model (``vanilla``) on its pseudo pairs under ``config``'s recipe.

    The one place that turns a recipe into the model's training call, so the rerank stage, the
    relevance stage and :func:`relevance_model` share its content key.

    Returns:
        As :func:`train_or_load`.
    """
    model = replace(config.model, epochs=config.variant_epochs.get("vanilla", config.model.epochs))
    groups = question_groups(fit) if config.relevance_loss == "listwise" else None
    examples, select_examples = example_ids(fit, "kl"), example_ids(select, "kl")
    return train_or_load("vanilla", seed, examples, select_examples, states, model, cache_root, groups=groups)


def stage_model(
    inputs: RerankInputs,
    variant: str,
    seed: int,
    states: PairStates,
    config: RerankRunConfig,
    cache_root: Path,
) -> tuple[dict[str, Any], dict[str, Any], Path, bool]:
    """Train or load one variant x seed of the stage, warm-starting from the relevance model.

    A variant that starts from ``relevance`` first trains (or loads) the one relevance model,
    ``vanilla`` of seed :data:`RELEVANCE_SEED`, and continues from its weights whatever its own
    seed; ``vanilla`` itself trains with the listwise groups of its pseudo pairs under the
    ``listwise`` recipe.

    Returns:
        As :func:`train_or_load`.
    """
    if variant == "vanilla":
        return train_relevance(*inputs.sources["pseudo"], states, config, seed, cache_root)
    examples, select = variant_examples(inputs, variant)
    model = config.model
    init = None
    if VARIANTS[variant].start == "relevance":
        warm = warm_start(inputs, states, config, cache_root)
        init, states, model = (warm.folder, warm.weights), warm.states, warm.model
    if variant in config.variant_epochs:
        model = replace(model, epochs=config.variant_epochs[variant])
    return train_or_load(variant, seed, examples, select, states, model, cache_root, init)


@dataclass(frozen=True)
class WarmStart:
    """What a warm-started variant continues from, and the states and settings it trains on.

    Attributes:
        folder: The relevance model's cache folder (its name, a content key, enters the variant's key).
        weights: The weights the variant starts from: the relevance model's, or under
            ``warm_frozen_layers`` its layers above them and its head.
        states: Lower-layer states the variant trains and scores on: the stage's (the embedding
            lookup), or the relevance model's lower layers run once over every pair.
        model: The variant's settings (``frozen_layers`` = ``warm_frozen_layers``).
    """

    folder: Path
    weights: dict[str, Any]
    states: PairStates
    model: RerankConfig


def warm_start(
    inputs: RerankInputs, states: PairStates, config: RerankRunConfig, cache_root: Path
) -> WarmStart:
    """The relevance model (trained or loaded) as the warm-started variants continue from it.

    With ``config.warm_frozen_layers`` = k > 0 the relevance model's lower k layers are run once over
    every pair of ``inputs`` (cached, keyed by that model), so each warm variant and seed trains and
    scores only the 6 - k layers above them and the head.
    """
    k = config.warm_frozen_layers
    if k and config.model.frozen_layers:
        raise ValueError(
            f"warm_frozen_layers={k} needs a relevance model with every layer trained, not "
            f"frozen_layers={config.model.frozen_layers} (its lower layers would be MiniLM's)"
        )
    v_weights, _, v_folder, _ = stage_model(inputs, "vanilla", RELEVANCE_SEED, states, config, cache_root)
    if k == 0:
        return WarmStart(v_folder, v_weights, states, config.model)
    model = replace(config.model, frozen_layers=k)
    lower = (v_folder.name, lower_layer_weights(v_weights, k))
    # only the pairs a warm variant trains on and scores: the pseudo pairs (4 in 5 of all) only as
    # far as ``combined`` replays them; every warm variant's, so that one state cache serves any
    # subset of them (runs of other variants into the same folder reuse it)
    warm = {v.source for v in VARIANTS.values() if v.start == "relevance"}
    frozen_states = encode_pairs(inputs.pairs_of(warm), model, cache_root, lower=lower)
    return WarmStart(v_folder, upper_layer_weights(v_weights, k), frozen_states, model)


#: File in a model's cache folder holding every pair id it has scored and its P_phi.
SCORES_FILE = "scores.npz"
#: Pairs scored between two saves of ``scores.npz``: 64 whole batches of the model, about two
#: minutes on 2 cores in float32.
SCORE_CHUNK = 64 * SCORE_BATCH


def _stored_scores(folder: Path) -> dict[str, np.ndarray]:
    """The P_phi a model has stored for each pair id it scored (empty when none)."""
    path = folder / SCORES_FILE
    if not path.exists():
        return {}
    with np.load(path) as stored:
        return dict(zip(stored["ids"].tolist(), stored["probs"], strict=True))


def has_scores(folder: Path) -> bool:
    """Whether a model has scored any pair before (its ``scores.npz``)."""
    return (folder / SCORES_FILE).exists()


def score_cached(
    folder: Path,
    weights: dict[str, Any],
    ids: Sequence[str],
    states: PairStates,
    model: RerankConfig,
) -> tuple[np.ndarray, bool]:
    """P_phi of a trained reranker for ``ids``; only pairs it never scored are run through it.

    Every pair a model scores is stored beside its weights (``scores.npz``, keyed by pair id), so
    widening the scored set (``--rescore`` of another RQA system, the beyond stage's deeper
    candidates) costs only the new pairs, and a pair keeps the exact P_phi it has in
    ``candidates.parquet`` (rescoring it in other batches could move it by about 1e-4 under
    bfloat16). A pair's value therefore depends on the batch it was first scored in: the same
    command on the same cache gives the same numbers; a fresh cache may differ in the fourth
    decimal.

    Args:
        folder: The model's cache folder.
        weights: Its weights.
        ids: Pair ids to score.
        states: Lower-layer states covering the pairs not scored before.
        model: Settings.

    Returns:
        ``(probabilities of shape (len(ids), 4), from_cache)``: ``from_cache`` when no pair was
        scored now.
    """
    known = _stored_scores(folder)
    # in the order the model batches them (by length, stably from the id order), so that chunks of
    # whole batches score every pair exactly as one pass would
    missing = sorted(sorted(set(ids) - known.keys()), key=states.length)
    chunks = range(0, len(missing), SCORE_CHUNK)
    for lo in tqdm(chunks, desc="score pairs", unit="chunk", disable=len(chunks) < 2):
        part = missing[lo : lo + SCORE_CHUNK]
        known.update(zip(part, predict(weights, part, states, model).astype(np.float32), strict=True))
        # stored after every chunk: an interrupted pass resumes with the pairs still missing
        order = sorted(known)
        atomic_write_npz(folder / SCORES_FILE, ids=np.array(order), probs=np.stack([known[i] for i in order]))
    return np.stack([known[i] for i in ids]) if ids else np.zeros((0, 4), np.float32), not missing
