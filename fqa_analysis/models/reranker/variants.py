"""The reranker variants of the study and the settings every stage built on them shares.

:data:`VARIANTS` holds one :class:`Variant` record per reranker: everything about it (training
source, loss, starting point, epochs, default seeds) in one place; :class:`RerankRunConfig` holds
the stage's settings (the cross-encoder, the relevance recipe, the pseudo pairs' negatives, what
is scored). Adding a variant is one entry here (ARCHITECTURE.md#adding-a-reranker-variant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fqa_analysis import data
from fqa_analysis.models.reranker.encoder import RerankConfig
from fqa_analysis.models.retrieval import SYSTEMS

__all__ = [
    "NEGATIVE_SOURCES",
    "RELEVANCE_LOSSES",
    "RELEVANCE_SEED",
    "VARIANTS",
    "RerankRunConfig",
    "Variant",
    "declared_epochs",
    "planned_runs",
]


@dataclass(frozen=True)
class Variant:
    """Everything about one reranker variant: what it trains on, from where, how long, which seeds.

    Attributes:
        source: ``feedback``, ``pseudo`` (QA data) or ``both`` (feedback + as many replayed
            pseudo pairs); a key of ``RerankInputs.sources``.
        loss: Loss of its feedback (``kl``, ``ce_annotator``, ``ce_majority``); the pseudo pairs'
            is KL, plus the listwise term of the ``listwise`` relevance recipe.
        start: ``minilm`` (a fresh head on MiniLM) or ``relevance`` (the relevance model
            ``vanilla`` of seed :data:`RELEVANCE_SEED`, shared by every seed of the variant).
        epochs: Passes over its training examples (the epoch kept is the one with the lowest
            held-out KL). ``vanilla``: one pass over the pseudo pairs (the stage's dearest step);
            ``combined``: one pass of the continuation over feedback + replay;
            ``feedback_ce_annotator`` and its scratch row: one, because its epoch holds one example
            per annotator (two per item), as many optimiser steps and views of each item as two
            epochs of the other feedback losses.
        seeds: Seeds the stage trains when ``--seeds`` is not given.
    """

    source: str
    loss: str
    start: str
    epochs: int = 2
    seeds: tuple[int, ...] = (0, 1, 2)

    def record(self) -> dict[str, Any]:
        """What the manifest records of the variant (``config.variants``)."""
        return asdict(self)


#: The one relevance model every warm-started variant continues from, whatever its own seed: it
#: stands in for a pretrained relevance cross-encoder, so the seeds vary the feedback training only.
RELEVANCE_SEED = 0

VARIANTS: dict[str, Variant] = {
    "vanilla": Variant("pseudo", "kl", "minilm", epochs=1, seeds=(RELEVANCE_SEED,)),
    "feedback_kl": Variant("feedback", "kl", "relevance"),
    "feedback_ce_annotator": Variant("feedback", "ce_annotator", "relevance", epochs=1),
    "feedback_ce_majority": Variant("feedback", "ce_majority", "relevance"),
    "combined": Variant("both", "kl", "relevance", epochs=1),
    "feedback_kl_scratch": Variant("feedback", "kl", "minilm"),
    "feedback_ce_annotator_scratch": Variant("feedback", "ce_annotator", "minilm", epochs=1, seeds=(0,)),
    "feedback_ce_majority_scratch": Variant("feedback", "ce_majority", "minilm", seeds=(0,)),
}


def declared_epochs() -> dict[str, int]:
    """The variants whose declared epochs differ from ``RerankConfig.epochs``, and theirs.

    The default of :attr:`RerankRunConfig.variant_epochs`, so a variant's epochs are declared once,
    in :data:`VARIANTS`, and the configuration records what every run trained.

    Example:
        >>> declared_epochs()["vanilla"], "feedback_kl" in declared_epochs()
        (1, False)
    """
    return {name: v.epochs for name, v in VARIANTS.items() if v.epochs != RerankConfig.epochs}


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
        variant_epochs: Epochs of the variants that do not train ``model.epochs``: by default
            those their :class:`Variant` declares (:func:`declared_epochs`); a relevance recipe
            (``--relevance-epochs``) sets ``vanilla``'s.
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
    variant_epochs: dict[str, int] = field(default_factory=declared_epochs)
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
    #: Whether seed k of every variant that continues from the relevance model starts from the
    #: relevance model of seed k (``vanilla`` then trains every seed they train), instead of the one
    #: relevance model of seed :data:`RELEVANCE_SEED` that every seed shares (False, the default and
    #: the book's results: the seeds' spread then never includes the starting point). Seed 0 is the
    #: same model either way, so its runs stay cached. Added after stages recorded their
    #: configurations: ``core.results.LATER_SETTINGS`` makes a record without it equal to False.
    relevance_per_seed: bool = False

    def seeds_of(self, variant: str) -> tuple[int, ...]:
        """The seeds ``variant`` trains under this configuration.

        Under :attr:`relevance_per_seed` with each variant's own seeds, ``vanilla`` trains every
        seed a warm variant of :attr:`variants` trains, so that each has its own starting point.

        Example:
            >>> both = ("vanilla", "feedback_kl")
            >>> RerankRunConfig(variants=both).seeds_of("vanilla")
            (0,)
            >>> RerankRunConfig(variants=both, relevance_per_seed=True).seeds_of("vanilla")
            (0, 1, 2)
        """
        if self.seeds is not None:
            return self.seeds
        if variant == "vanilla" and self.relevance_per_seed:
            warm = {s for v in self.variants if VARIANTS[v].start == "relevance" for s in VARIANTS[v].seeds}
            return tuple(sorted(warm | set(VARIANTS["vanilla"].seeds)))
        return VARIANTS[variant].seeds

    def relevance_seed(self, seed: int) -> int:
        """The seed of the relevance model a warm variant's run of ``seed`` continues from.

        Example:
            >>> RerankRunConfig().relevance_seed(2)
            0
            >>> RerankRunConfig(relevance_per_seed=True).relevance_seed(2)
            2
        """
        return seed if self.relevance_per_seed else RELEVANCE_SEED

    def runs(self) -> list[tuple[str, int]]:
        """Every ``(variant, seed)`` this configuration trains, variants in their given order."""
        return [(v, s) for v in self.variants for s in self.seeds_of(v)]
