"""What the reranker variants train and score on.

:func:`rerank_inputs` loads the training sources (the feedback, ``feedback_training_sets``; the
pseudo pairs of the QA-train questions, :func:`pseudo_pairs`, negatives from
:func:`ranked_passages`; their mix for ``combined``), the RQA systems' candidates
(:func:`candidate_texts`) and feedback_test; :func:`variant_examples` turns a variant's source
into its training and model-selection examples under its loss.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import (
    atomic_write_json,
    content_key,
    default_cache_root,
)
from fqa_analysis.core.calibration import top_k
from fqa_analysis.core.results import load_candidates
from fqa_analysis.models.reranker.encoder import pair_id
from fqa_analysis.models.reranker.pairs import (
    RatedPair,
    draw_negatives,
    feedback_training_sets,
    pseudo_rated_pairs,
    training_examples,
)
from fqa_analysis.models.reranker.variants import NEGATIVE_SOURCES, VARIANTS, RerankRunConfig

__all__ = [
    "NEGATIVES_VERSION",
    "RerankInputs",
    "candidate_texts",
    "example_ids",
    "is_held_out",
    "pseudo_pairs",
    "ranked_passages",
    "relevance_splits",
    "replay_sample",
    "rerank_inputs",
    "variant_examples",
]


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
