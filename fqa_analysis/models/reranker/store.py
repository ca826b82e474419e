"""Content-keyed reranker training: each model is trained once per key and loaded after.

:func:`train_or_load` trains (or loads) one model; :func:`train_relevance` and
:func:`relevance_model` the relevance model ``vanilla``; :func:`stage_model` a variant,
warm-started from the relevance model (:func:`warm_start`, with its lower layers frozen under
``warm_frozen_layers``). Every one returns a :class:`TrainedModel`. The rerank, relevance, beyond
and explain-then-rate stages share these keys, so no model is trained twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fqa_analysis.cache import content_key
from fqa_analysis.models.checkpoint import TrainingCheckpoint
from fqa_analysis.models.reranker.encoder import (
    PairStates,
    RerankConfig,
    encode_pairs,
    lower_layer_weights,
    model_key,
    upper_layer_weights,
)
from fqa_analysis.models.reranker.inputs import RerankInputs, example_ids, pseudo_pairs, variant_examples
from fqa_analysis.models.reranker.network import CACHE_VERSION, train_reranker
from fqa_analysis.models.reranker.pairs import RatedPair, question_groups
from fqa_analysis.models.reranker.scoring import remember_selection
from fqa_analysis.models.reranker.variants import RELEVANCE_SEED, VARIANTS, RerankRunConfig

__all__ = [
    "CHECKPOINT_FILE",
    "TrainedModel",
    "WarmStart",
    "relevance_model",
    "stage_model",
    "train_or_load",
    "train_relevance",
    "warm_start",
]


#: File in a model's cache folder holding its training checkpoint until the model is done.
CHECKPOINT_FILE = "checkpoint.pt"


@dataclass(frozen=True)
class TrainedModel:
    """One trained (or loaded) reranker.

    Attributes:
        weights: Its state dict (the trained layers and the head).
        history: Its training record (per epoch: loss, held-out KL, seconds; ``steps``).
        folder: Its cache folder (the name is its content key).
        from_cache: Whether it was loaded rather than trained now.
    """

    weights: dict[str, Any]
    history: dict[str, Any]
    folder: Path
    from_cache: bool


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
) -> TrainedModel:
    """Train one reranker, or load it when one with the same content key was trained before.

    ``states`` may be a function that encodes them: it is called only when the model must train.

    The key covers the code version, the model settings, ``name``, the seed, every training
    and selection example, the model it continues from (``init``: that model's cache folder
    name, itself a content key) and the listwise ``groups`` (see
    :func:`train_reranker`), so two runs that train on the same data share one model.

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
        return TrainedModel(weights, history, folder, True)
    if callable(states):
        states = states()
    folder.mkdir(parents=True, exist_ok=True)
    # a run stopped mid-training resumes from its last checkpoint, to the same weights
    checkpoint = TrainingCheckpoint(folder / CHECKPOINT_FILE)
    run = train_reranker(
        examples,
        select,
        states,
        model,
        seed,
        init=None if init is None else init[1],
        groups=groups,
        checkpoint=checkpoint,
    )
    # the selection pass scored the selection pairs: kept, so that no stage scores them again
    remember_selection(folder, [i for i, _ in select], run.select_probs)
    torch.save(run.history, folder / "history.pt")
    torch.save(run.weights, folder / "weights.tmp")
    (folder / "weights.tmp").replace(folder / "weights.pt")  # written last: marks the model done
    checkpoint.clear()
    return TrainedModel(run.weights, run.history, folder, False)


def relevance_model(data_dir: Path, config: RerankRunConfig, seed: int, cache_root: Path) -> TrainedModel:
    """One seed's relevance model (``vanilla``) under ``config``'s recipe: the stage's, from the cache.

    The same content key as the rerank stage's ``vanilla`` of that seed (and the relevance
    stage's recipe), so a stage built on it (explain-then-rate's encoder) loads the model those
    stages trained; it trains it (encoding its pairs first) only when none is cached.
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
) -> TrainedModel:
    """Train or load one seed's relevance model (``vanilla``) on its pseudo pairs under ``config``'s recipe.

    The one place that turns a recipe into the model's training call, so the rerank stage, the
    relevance stage and :func:`relevance_model` share its content key.
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
    warm: WarmStart | None = None,
) -> TrainedModel:
    """Train or load one variant x seed of the stage, warm-starting from the relevance model.

    A variant that starts from ``relevance`` first trains (or loads) the relevance model,
    ``vanilla`` of seed ``config.relevance_seed(seed)`` (:data:`RELEVANCE_SEED` for every seed
    unless ``relevance_per_seed``), and continues from its weights; ``vanilla`` itself trains with
    the listwise groups of its pseudo pairs under the ``listwise`` recipe. A caller that trains
    several warm variants passes that relevance model's :class:`WarmStart` (``warm``, made for
    ``config.relevance_seed(seed)``), so it is loaded once; without it, it is loaded (or trained) here.
    """
    if variant == "vanilla":
        return train_relevance(*inputs.sources["pseudo"], states, config, seed, cache_root)
    examples, select = variant_examples(inputs, variant)
    model = config.model
    init = None
    if VARIANTS[variant].start == "relevance":
        warm = warm or warm_start(inputs, states, config, cache_root, config.relevance_seed(seed))
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
    inputs: RerankInputs,
    states: PairStates,
    config: RerankRunConfig,
    cache_root: Path,
    relevance_seed: int = RELEVANCE_SEED,
) -> WarmStart:
    """The relevance model of ``relevance_seed`` (trained or loaded) as the warm variants continue from it.

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
    relevance = stage_model(inputs, "vanilla", relevance_seed, states, config, cache_root)
    v_weights, v_folder = relevance.weights, relevance.folder
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
