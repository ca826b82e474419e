"""Explainers: a natural-language explanation of an answer's rating (loads models).

Every explainer answers ``explain(question, passage, rating) -> text`` (and ``explain_many`` for
a batch):

* :class:`TemplateExplainer`: one fixed sentence per rating (the floor any learned explainer
  must beat);
* :class:`RetrievalExplainer`: the explanation of the most similar rated (question, passage)
  pair of the training feedback (MiniLM embeddings of question + passage, cosine), by default
  among pairs that got the same rating;
* :class:`GeneratorExplainer`: an encoder-decoder warm-started from two copies of
  all-MiniLM-L6-v2 (no English seq2seq weights are on PyPI), fine-tuned on
  (question, passage) -> explanation with the rating as the decoder's forced prefix, one
  example per annotator; greedy decoding, or the pick of a :class:`CandidateChooser` among
  the greedy and several sampled explanations.

Training data are the reranker's: :func:`~fqa_analysis.models.reranker.pairs.feedback_item_sets` (same
protocol, same held-out questions for choosing the generator's epoch); feedback_test is never
trained on.
"""

from __future__ import annotations

import json
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import atomic_write_json, content_key
from fqa_analysis.core.ratings import LABELS
from fqa_analysis.core.text_metrics import nonwords, opening_counts, opening_of
from fqa_analysis.data import FeedbackItem
from fqa_analysis.models.checkpoint import TrainingCheckpoint, epoch_start, position
from fqa_analysis.models.reranker.encoder import bf16_autocast
from fqa_analysis.models.retrieval import DenseConfig, DenseSystem, minilm_path
from fqa_analysis.models.sampling import NucleusSampler
from fqa_analysis.profiling import labelled, peak_rss_mb

__all__ = [
    "RATING_PREFIX",
    "TEMPLATES",
    "CandidateChooser",
    "DecodeConfig",
    "Explainer",
    "ExplanationExample",
    "GeneratorConfig",
    "GeneratorExplainer",
    "RetrievalExplainer",
    "TemplateExplainer",
    "encoder_inputs",
    "explanation_examples",
    "new_encoder_decoder",
    "pair_text",
    "train_generator",
]

CACHE_VERSION = "explain-2"

#: The template baseline's sentence per rating (written by hand from the label definitions).
TEMPLATES: dict[str, str] = {
    "Excellent": "The answer directly addresses the question and gives the information asked for.",
    "Acceptable": "The answer addresses the question but leaves out some details.",
    "Could be Improved": "The answer is related to the question but does not fully answer it.",
    "Bad": "The answer does not address the question.",
}


@dataclass(frozen=True)
class ExplanationExample:
    """One annotator's rating of a (question, passage) pair and its explanation."""

    domain: str
    question: str
    passage_text: str
    rating: str
    explanation: str


def explanation_examples(items: Sequence[FeedbackItem]) -> list[ExplanationExample]:
    """One example per annotator of every item (each explanation explains its own rating).

    Example:
        >>> from fqa_analysis.data import FeedbackItem, Passage
        >>> p = Passage("WHO", 0, "https://x", "t", (), "c")
        >>> it = FeedbackItem("WHO", "valid", 0, "q?", p, ("Bad", "Excellent"), ("no.", "yes."))
        >>> [(e.rating, e.explanation) for e in explanation_examples([it])]
        [('Bad', 'no.'), ('Excellent', 'yes.')]
    """
    return [
        ExplanationExample(it.domain, it.question, it.passage.text, r, e)
        for it in items
        for r, e in zip(it.ratings, it.explanations, strict=True)
    ]


class Explainer(ABC):
    """Explains a rating of an answer: ``explain(question, passage, rating) -> text``."""

    name: str

    def explain(self, question: str, passage: str, rating: str) -> str:
        """The explanation of one rated answer."""
        return self.explain_many([(question, passage, rating)])[0]

    @abstractmethod
    def explain_many(self, rows: Sequence[tuple[str, str, str]]) -> list[str]:
        """Explanations of many ``(question, passage, rating)`` rows, in order."""


def _check_ratings(rows: Sequence[tuple[str, str, str]]) -> None:
    unknown = sorted({r for _, _, r in rows if r not in LABELS})
    if unknown:
        raise ValueError(f"unknown rating(s) {unknown}; explainers take one of {list(LABELS)}")


class TemplateExplainer(Explainer):
    """One fixed sentence per rating (:data:`TEMPLATES`).

    Example:
        >>> TemplateExplainer().explain("q?", "passage", "Bad")
        'The answer does not address the question.'
    """

    name = "template"

    def explain_many(self, rows: Sequence[tuple[str, str, str]]) -> list[str]:
        """The rating's template sentence for every row."""
        _check_ratings(rows)
        return [TEMPLATES[r] for _, _, r in rows]


def pair_text(question: str, passage: str) -> str:
    """The text a pair is embedded as: question, newline, passage."""
    return f"{question}\n{passage}"


class RetrievalExplainer(Explainer):
    """The explanation of the nearest training pair (MiniLM cosine), optionally of the same rating.

    Args:
        examples: Training explanations.
        same_rating: Search only pairs with the rating being explained (falls back to all
            pairs when no training pair has that rating).
        encoder: A MiniLM bi-encoder (zero-shot by default); embeddings are memoised.
        max_len: Token limit of a (question, passage) text.
    """

    def __init__(
        self,
        examples: Sequence[ExplanationExample],
        same_rating: bool = True,
        encoder: DenseSystem | None = None,
        max_len: int = 256,
    ) -> None:
        if not examples:
            raise ValueError("the retrieval explainer needs at least one training explanation")
        self.examples = list(examples)
        self.same_rating = same_rating
        self.name = "retrieval_same_rating" if same_rating else "retrieval_any_rating"
        self.encoder = encoder or DenseSystem(DenseConfig())
        self.max_len = max_len
        self._keys: np.ndarray | None = None

    def _train_vectors(self) -> np.ndarray:
        if self._keys is None:
            texts = [pair_text(e.question, e.passage_text) for e in self.examples]
            self._keys = self.encoder.encode(texts, self.max_len, "explanation pairs")
        return self._keys

    def nearest(self, rows: Sequence[tuple[str, str, str]]) -> list[int]:
        """Index of the training example each row borrows its explanation from."""
        _check_ratings(rows)
        keys = self._train_vectors()
        queries = self.encoder.encode([pair_text(q, p) for q, p, _ in rows], self.max_len, "queries")
        sims = queries @ keys.T
        ratings = np.array([e.rating for e in self.examples])
        out = []
        for i, (_, _, rating) in enumerate(rows):
            row = sims[i].copy()
            if self.same_rating and (ratings == rating).any():
                row[ratings != rating] = -np.inf
            out.append(int(np.argmax(row)))  # ties -> the first training example
        return out

    def explain_many(self, rows: Sequence[tuple[str, str, str]]) -> list[str]:
        """The nearest training pair's explanation for every row."""
        return [self.examples[i].explanation for i in self.nearest(rows)]


#: The decoder's forced first tokens for each rating. The decoder reads the rating from its own
#: prefix through self-attention, which is pretrained, rather than only through cross-attention
#: to the encoder, which starts untrained: with the rating in the encoder input alone, three
#: epochs gave one stock sentence whatever the rating.
RATING_PREFIX: dict[str, str] = {
    "Excellent": "excellent:",
    "Acceptable": "acceptable:",
    "Could be Improved": "could be improved:",
    "Bad": "bad:",
}


@dataclass(frozen=True)
class GeneratorConfig:
    """How the MiniLM2MiniLM explanation generator is trained (everything its cache key reads)."""

    source_max_len: int = 160
    target_max_len: int = 40
    epochs: int = 6
    #: (question, passage) pairs per optimiser step; each brings the explanations of all of its
    #: annotators, which share one encoder pass (the encoder is most of the compute).
    batch_pairs: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    seed: int = 0
    threads: int = 2
    #: bfloat16 autocast: on CUDA only (:func:`~fqa_analysis.models.reranker.encoder.uses_bf16`).
    bf16: bool = False
    #: Stop after this many optimiser steps (smoke runs); None trains every epoch.
    max_steps: int | None = None


@dataclass(frozen=True)
class DecodeConfig:
    """How a trained generator writes an explanation (not part of the training cache key).

    The greedy explanation is always the first candidate; ``candidates`` more are sampled
    (nucleus ``top_p``) and a :class:`CandidateChooser` keeps one, for the rows whose greedy
    explanation the chooser's classifier does not read as their rating (every row with
    ``sample_all``). ``candidates = 0`` is greedy decoding.
    """

    max_new_tokens: int = 40
    no_repeat_ngram_size: int = 3
    repetition_penalty: float = 1.0
    candidates: int = 4
    top_p: float = 0.9
    sample_all: bool = False
    seed: int = 0
    #: Weight of the chooser's penalty against openings the generator over-uses: a candidate loses
    #: ``opening_weight`` x the share of the rows whose greedy explanation opens with its first
    #: four words (0: no penalty, the earlier behaviour).
    opening_weight: float = 0.0
    #: Weight of the chooser's similarity-to-the-pair term beside its rating classifier's log
    #: probability (1: the earlier behaviour). A cosine lies in [-1, 1] while a log probability
    #: spans several units, so the levers table tries weights up to 10.
    sim_weight: float = 1.0
    #: Weight of the chooser's penalty against words no training text holds: a candidate loses
    #: ``nonword_weight`` x its number of :func:`~fqa_analysis.core.text_metrics.nonwords`
    #: (0: no penalty, the earlier behaviour).
    nonword_weight: float = 0.0


@dataclass(frozen=True)
class _Pair:
    """A (question, passage) pair and its annotators' (rating, explanation) targets."""

    question: str
    passage_text: str
    targets: tuple[tuple[str, str], ...]


def _pairs(examples: Sequence[ExplanationExample]) -> list[_Pair]:
    """Examples grouped by (question, passage), in order of first appearance."""
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for e in examples:
        grouped.setdefault((e.question, e.passage_text), []).append((e.rating, e.explanation))
    return [_Pair(q, p, tuple(t)) for (q, p), t in grouped.items()]


def encoder_inputs(tokenizer: Any, pairs: Sequence[tuple[str, str]], max_len: int) -> Any:
    """Encoder input: the question as the first segment, the passage (truncated) as the second.

    Shared with the explain-then-rate model, so both read a pair the same way.
    """
    return tokenizer(
        [q for q, _ in pairs],
        [p for _, p in pairs],
        padding=True,
        truncation="only_second",
        max_length=max_len,
        return_tensors="pt",
    )


def _prefix_ids(tokenizer: Any, rating: str) -> list[int]:
    """``[CLS]`` followed by the rating's prefix tokens: what the decoder is forced to start with."""
    return [tokenizer.cls_token_id, *tokenizer(RATING_PREFIX[rating], add_special_tokens=False)["input_ids"]]


def _decoder_batch(tokenizer: Any, targets: Sequence[tuple[str, str]], max_len: int) -> tuple[Any, Any, Any]:
    """Decoder inputs, attention mask and labels for (rating, explanation) targets.

    Each sequence is ``[CLS] prefix explanation [SEP]``; the labels score the explanation and
    ``[SEP]`` only (-100 on the forced prefix and the padding).
    """
    import torch

    seqs, starts = [], []
    for rating, text in targets:
        prefix = _prefix_ids(tokenizer, rating)
        body = tokenizer(text, add_special_tokens=False, truncation=True, max_length=max_len)["input_ids"]
        seqs.append([*prefix, *body, tokenizer.sep_token_id])
        starts.append(len(prefix))
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(seqs), width - 1), -100, dtype=torch.long)
    for i, (seq, start) in enumerate(zip(seqs, starts, strict=True)):
        ids[i, : len(seq)] = torch.tensor(seq)
        # labels[j] is the token after position j; the first explanation token sits at `start`
        labels[i, start - 1 : len(seq) - 1] = torch.tensor(seq[start:])
    mask = (ids != tokenizer.pad_token_id).long()
    return ids[:, :-1], mask[:, :-1], labels


def new_encoder_decoder(tokenizer: Any) -> Any:
    """A fresh MiniLM-to-MiniLM encoder-decoder (the decoder gains new cross-attention weights).

    Shared with the explain-then-rate model, which starts from the same architecture.
    """
    from transformers import EncoderDecoderModel
    from transformers.utils import logging

    path = str(minilm_path())
    level = logging.get_verbosity()
    logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # the decoder's new cross-attention weights are expected
    try:
        model = EncoderDecoderModel.from_encoder_decoder_pretrained(path, path)
    finally:
        logging.set_verbosity(level)
    _set_special_tokens(model, tokenizer)
    return model


def _set_special_tokens(model: Any, tokenizer: Any) -> None:
    model.config.decoder_start_token_id = tokenizer.cls_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = tokenizer.sep_token_id
    model.generation_config.decoder_start_token_id = tokenizer.cls_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.sep_token_id


def _loss(model: Any, tokenizer: Any, pairs: Sequence[_Pair], config: GeneratorConfig) -> Any:
    """Teacher-forced token cross-entropy over every target of the pairs; one encoder pass per pair.

    Computed here rather than by ``EncoderDecoderModel``, whose built-in loss path warns on
    every call.
    """
    import torch

    src = encoder_inputs(tokenizer, [(p.question, p.passage_text) for p in pairs], config.source_max_len)
    counts = torch.tensor([len(p.targets) for p in pairs])
    decoder_in, decoder_mask, labels = _decoder_batch(
        tokenizer, [t for p in pairs for t in p.targets], config.target_max_len
    )
    with bf16_autocast(config.bf16):
        hidden = model.encoder(
            input_ids=src["input_ids"], attention_mask=src["attention_mask"]
        ).last_hidden_state
        out = model(
            encoder_outputs=(hidden.repeat_interleave(counts, dim=0),),
            attention_mask=src["attention_mask"].repeat_interleave(counts, dim=0),
            decoder_input_ids=decoder_in,
            decoder_attention_mask=decoder_mask,
        )
    return torch.nn.functional.cross_entropy(
        out.logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100
    )


def _select_loss(model: Any, tokenizer: Any, select: Sequence[_Pair], config: GeneratorConfig) -> float:
    """Mean token loss on the held-out pairs (weighted by their number of targets)."""
    import torch

    model.eval()
    total, n = 0.0, 0
    with torch.inference_mode():
        for lo in range(0, len(select), 16):
            batch = select[lo : lo + 16]
            weight = sum(len(p.targets) for p in batch)
            total += float(_loss(model, tokenizer, batch, config)) * weight
            n += weight
    return total / max(n, 1)


#: Called after every epoch with the model and tokenizer; returns held-out figures for the history.
EpochMonitor = Callable[[Any, Any], dict[str, float]]


def train_generator(
    fit: Sequence[ExplanationExample],
    select: Sequence[ExplanationExample],
    config: GeneratorConfig,
    cache_root: Path,
    monitor: EpochMonitor | None = None,
    stop_after_steps: int | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Fine-tune the generator (cached by content; the epoch with the lowest held-out loss is kept).

    Checkpoints every few minutes into its cache folder and resumes from there to the same
    weights (:class:`~fqa_analysis.models.checkpoint.TrainingCheckpoint`).

    Args:
        fit: Training explanations (one per annotator).
        select: Held-out explanations: choose the epoch.
        config: Training settings.
        cache_root: Root of the model cache (``explainer/<key>`` below it).
        monitor: Optional held-out figures per epoch (for example decoded consistency);
            recorded in the history, not used to choose the epoch.
        stop_after_steps: Checkpoint and stop after this many steps (tests of the resume).

    Returns:
        ``(folder of the saved model, history)``; the history holds per-epoch loss, held-out
        loss, the monitor's figures and wall times, the whole training's wall time ``train_s``
        and peak memory, and ``from_cache``.
    """
    import torch
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup

    key = content_key(CACHE_VERSION, asdict(config), [asdict(e) for e in fit], [asdict(e) for e in select])
    folder = cache_root / "explainer" / key
    if (folder / "history.json").exists():
        history = json.loads((folder / "history.json").read_text())
        return folder / "best", {**history, "from_cache": True}
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    model = new_encoder_decoder(tokenizer)
    fit_pairs, select_pairs = _pairs(fit), _pairs(select)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = (len(fit_pairs) + config.batch_pairs - 1) // config.batch_pairs
    total = steps_per_epoch * config.epochs if config.max_steps is None else config.max_steps
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(config.warmup * total), total
    )
    rng = np.random.default_rng([config.seed, 29])
    epochs: list[dict[str, float]] = []
    best_loss, step, start_epoch = float("inf"), 0, 0
    tmp = folder / "best.tmp"  # the best epoch so far, on disk: a resumed run finds it there
    # a run stopped mid-training resumes from its last checkpoint, to the same weights
    checkpoint = TrainingCheckpoint(folder / "checkpoint.pt", stop_after_steps=stop_after_steps)
    resume = checkpoint.restore(model, optimizer, scheduler, rng)
    if resume is not None:
        epochs, best_loss = resume["epochs"], resume["best_loss"]
        step, start_epoch = resume["step"], resume["epoch"]
        started -= resume["train_s"]
    for epoch in range(start_epoch, config.epochs):
        if step >= total:
            break
        model.train()
        order, first, losses, elapsed = epoch_start(resume, epoch, rng, len(fit_pairs))
        t0 = time.perf_counter() - elapsed
        for lo in tqdm(
            range(first, len(order), config.batch_pairs),
            desc=labelled(f"epoch {epoch + 1}/{config.epochs}"),
            leave=False,
        ):
            if step >= total:
                break
            batch = [fit_pairs[int(i)] for i in order[lo : lo + config.batch_pairs]]
            loss = _loss(model, tokenizer, batch, config)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            step += 1
            if checkpoint.due(step):
                loop = position(epoch, order, lo + config.batch_pairs, losses, t0)
                loop.update(
                    epochs=epochs, best_loss=best_loss, step=step, train_s=time.perf_counter() - started
                )
                checkpoint.save(step, model, optimizer, scheduler, rng, loop)
        train_s = time.perf_counter() - t0
        held = _select_loss(model, tokenizer, select_pairs, config)
        record = {"epoch": epoch + 1, "loss": float(np.mean(losses)), "select_loss": held, "wall_s": train_s}
        if monitor is not None:
            record.update(monitor(model.eval(), tokenizer))
        record["eval_s"] = time.perf_counter() - t0 - train_s
        epochs.append(record)
        if held < best_loss:
            best_loss = held
            shutil.rmtree(tmp, ignore_errors=True)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
    shutil.rmtree(folder / "best", ignore_errors=True)
    tmp.replace(folder / "best")  # a finished model appears at once
    history = {
        "epochs": epochs,
        "best_select_loss": best_loss,
        "steps": step,
        "examples": len(fit),
        "pairs": len(fit_pairs),
        # what computing this model cost, so that a run served from the cache can report it
        "train_s": time.perf_counter() - started,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    atomic_write_json(folder / "history.json", history)  # written last: marks the cache entry done
    checkpoint.clear()
    return folder / "best", {**history, "from_cache": False}


class CandidateChooser:
    """Keeps the candidate explanation that a rating classifier and the pair's topic agree on.

    Score of a candidate for a row rated r: ``log P(r | text) + sim_weight * cos(text, pair)
    - opening_weight * share(opening) - nonword_weight * nonwords(text)``, where nonwords counts
    the candidate's words absent from ``known`` (:func:`~fqa_analysis.core.text_metrics.nonwords`)
    and share is how many of the rows' greedy explanations
    (the generator's own corpus) open with the candidate's first four words
    (:func:`~fqa_analysis.core.text_metrics.opening_of`),
    where P comes from a TF-IDF (word 1-2 gram) logistic regression trained on human training
    explanations only, and cos is the MiniLM cosine between the explanation and its
    ``question + passage``. The classifier deliberately differs from the evaluation's
    consistency classifier (MiniLM embeddings), which never sees generated text either.

    Args:
        examples: Human training explanations.
        encoder: MiniLM bi-encoder for the similarity term.
        sim_weight: Weight of the similarity term (0: classifier only).
        rating_weight: Weight of the classifier term (0: similarity only).
        opening_weight: Weight of the penalty against over-used openings (0: none).
        nonword_weight: Weight of the penalty per word absent from ``known`` (0: none).
        known: The :func:`~fqa_analysis.core.text_metrics.lexicon` of words (needed for a
            non-word penalty).
    """

    def __init__(
        self,
        examples: Sequence[ExplanationExample],
        encoder: DenseSystem,
        sim_weight: float = 1.0,
        rating_weight: float = 1.0,
        opening_weight: float = 0.0,
        nonword_weight: float = 0.0,
        known: frozenset[str] = frozenset(),
    ) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        if not examples:
            raise ValueError("the candidate chooser needs at least one training explanation")
        self.classifier = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
            LogisticRegression(max_iter=2000, C=1.0),
        ).fit([e.explanation for e in examples], [e.rating for e in examples])
        self.encoder = encoder
        self.sim_weight = sim_weight
        self.rating_weight = rating_weight
        self.opening_weight = opening_weight
        if nonword_weight and not known:
            raise ValueError("a non-word penalty needs a lexicon of known words (`known`)")
        self.nonword_weight, self.known = nonword_weight, known

    def with_weights(
        self,
        rating_weight: float,
        sim_weight: float,
        opening_weight: float = 0.0,
        nonword_weight: float = 0.0,
    ) -> CandidateChooser:
        """The same fitted chooser with other weights (no refitting)."""
        if nonword_weight and not self.known:
            raise ValueError("a non-word penalty needs a lexicon of known words (`known`)")
        other = object.__new__(CandidateChooser)
        other.__dict__.update(
            self.__dict__,
            rating_weight=rating_weight,
            sim_weight=sim_weight,
            opening_weight=opening_weight,
            nonword_weight=nonword_weight,
        )
        return other

    def accuracy(self, examples: Sequence[ExplanationExample]) -> float:
        """The rating classifier's accuracy on (held-out) human explanations; NaN for none."""
        if not examples:
            return float("nan")
        predicted = self.classifier.predict([e.explanation for e in examples])
        return float(np.mean([p == e.rating for p, e in zip(predicted, examples, strict=True)]))

    def agrees(self, rows: Sequence[tuple[str, str, str]], texts: Sequence[str]) -> np.ndarray:
        """Whether the classifier reads each text as its row's rating."""
        predicted = self.classifier.predict(list(texts)) if texts else np.array([])
        return np.array([p == r for p, (_, _, r) in zip(predicted, rows, strict=True)], dtype=bool)

    def choose(
        self,
        rows: Sequence[tuple[str, str, str]],
        candidates: Sequence[Sequence[str]],
        corpus: Sequence[str] | None = None,
    ) -> list[int]:
        """Index of the kept candidate of every row (ties -> the earlier candidate, greedy first).

        ``corpus``: the texts whose openings count as over-used (default: every row's first
        candidate, its greedy explanation); a caller choosing for some rows only passes the greedy
        explanations of all rows.
        """
        flat = [c for cands in candidates for c in cands]
        overuse = np.zeros(len(flat))
        if self.opening_weight:
            shares = opening_counts([c[0] for c in candidates] if corpus is None else list(corpus))
            overuse = np.array([shares.get(opening_of(c), 0.0) for c in flat])
        classes = list(self.classifier.classes_)
        log_p = np.log(np.clip(self.classifier.predict_proba(flat), 1e-12, None))
        sims = np.zeros(len(flat))
        if self.sim_weight:
            # the encoder memoises its vectors: every weighting of the levers table encodes once
            texts = self.encoder.encode(flat, 64, "candidates")
            pairs = self.encoder.encode([pair_text(q, p) for q, p, _ in rows], 128, "pairs")
            owner = np.repeat(np.arange(len(rows)), [len(c) for c in candidates])
            sims = np.einsum("ij,ij->i", texts, pairs[owner])
        unknown = np.zeros(len(flat))
        if self.nonword_weight:
            unknown = np.array([len(nonwords(c, self.known)) for c in flat], dtype=float)
        out, lo = [], 0
        for (_, _, rating), cands in zip(rows, candidates, strict=True):
            hi = lo + len(cands)
            rated = log_p[lo:hi, classes.index(rating)] if rating in classes else np.zeros(hi - lo)
            score = self.rating_weight * rated + self.sim_weight * sims[lo:hi]
            score = score - self.opening_weight * overuse[lo:hi] - self.nonword_weight * unknown[lo:hi]
            out.append(int(np.argmax(score)))
            lo = hi
        return out


class GeneratorExplainer(Explainer):
    """A trained MiniLM2MiniLM generator (see :func:`train_generator`).

    The decoder starts from the rating's forced prefix (:data:`RATING_PREFIX`), which is cut
    from the text. With ``decode.candidates > 0`` a :class:`CandidateChooser` picks among the
    greedy explanation and the sampled ones in :meth:`explain_many` (which raises without one);
    :meth:`candidates_many` returns every candidate and needs no chooser.
    """

    name = "generator"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        decode: DecodeConfig,
        chooser: CandidateChooser | None = None,
        source_max_len: int = GeneratorConfig.source_max_len,
        bf16: bool = True,
    ) -> None:
        self.model, self.tokenizer = model.eval(), tokenizer
        self.decode, self.chooser = decode, chooser
        self.source_max_len, self.bf16 = source_max_len, bf16

    @classmethod
    def load(
        cls,
        model_dir: Path,
        config: GeneratorConfig,
        decode: DecodeConfig,
        chooser: CandidateChooser | None = None,
    ) -> GeneratorExplainer:
        """The generator saved in ``model_dir`` by :func:`train_generator`."""
        import torch
        from transformers import AutoTokenizer, EncoderDecoderModel

        torch.set_num_threads(config.threads)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = EncoderDecoderModel.from_pretrained(model_dir)
        _set_special_tokens(model, tokenizer)
        return cls(model, tokenizer, decode, chooser, config.source_max_len, config.bf16)

    def _generate(
        self, rows: Sequence[tuple[str, str, str]], sample: bool, batch_size: int = 32
    ) -> list[list[str]]:
        """Greedy (one text per row) or ``decode.candidates`` sampled texts per row.

        Identical rows are generated once. Rows are batched by rating (one forced prefix per
        batch) and length. Sampled candidates are nucleus draws (:class:`.sampling.NucleusSampler`,
        seeded per batch, so a call is deterministic) after the no-repeat and repetition-penalty
        processors, as ``transformers``' own sampler would draw them, without its full-vocabulary
        sort at every step.
        """
        import torch
        from transformers import LogitsProcessorList
        from transformers.modeling_outputs import BaseModelOutput

        unique = list(dict.fromkeys(rows))
        order = sorted(
            range(len(unique)), key=lambda i: (unique[i][2], len(unique[i][0]) + len(unique[i][1]))
        )
        batches: list[list[int]] = []
        for i in order:
            if batches and len(batches[-1]) < batch_size and unique[batches[-1][0]][2] == unique[i][2]:
                batches[-1].append(i)
            else:
                batches.append([i])
        d = self.decode
        k = d.candidates if sample else 1
        found: list[list[str]] = [[] for _ in unique]
        ends = (self.tokenizer.sep_token_id, self.tokenizer.pad_token_id)
        desc = "explain (sampled)" if sample else "explain"
        with torch.inference_mode():
            for b, idx in enumerate(tqdm(batches, desc=labelled(desc), disable=len(batches) <= 1)):
                src = encoder_inputs(self.tokenizer, [unique[i][:2] for i in idx], self.source_max_len)
                prefix = torch.tensor([_prefix_ids(self.tokenizer, unique[idx[0]][2])] * len(idx) * k)
                how: dict[str, Any] = {"input_ids": src["input_ids"], "attention_mask": src["attention_mask"]}
                with bf16_autocast(self.bf16):
                    if sample:
                        # the encoder reads each pair once; its k candidates share that pass, and
                        # the sampler draws them in the nucleus (see fqa_analysis.models.sampling)
                        hidden = self.model.encoder(**how).last_hidden_state.repeat_interleave(k, dim=0)
                        how = {
                            "encoder_outputs": BaseModelOutput(last_hidden_state=hidden),
                            "attention_mask": src["attention_mask"].repeat_interleave(k, dim=0),
                            "logits_processor": LogitsProcessorList(
                                [NucleusSampler(d.top_p, seed=d.seed * 100_003 + b, end_ids=ends)]
                            ),
                        }
                    out = self.model.generate(
                        decoder_input_ids=prefix,
                        max_new_tokens=d.max_new_tokens,
                        no_repeat_ngram_size=d.no_repeat_ngram_size,
                        repetition_penalty=d.repetition_penalty,
                        num_beams=1,
                        do_sample=False,
                        **how,
                    )
                texts = self.tokenizer.batch_decode(
                    out[:, prefix.shape[1] :],
                    skip_special_tokens=True,
                    clean_up_tokenization_spaces=True,  # "doesn ' t" -> "doesn't"
                )
                for j, i in enumerate(idx):
                    found[i] = [t.strip() for t in texts[j * k : (j + 1) * k]]
        by_row = dict(zip(unique, found, strict=True))
        return [list(by_row[r]) for r in rows]

    def candidates_many(self, rows: Sequence[tuple[str, str, str]]) -> list[list[str]]:
        """Every row's candidates: the greedy explanation, then ``decode.candidates`` sampled ones."""
        _check_ratings(rows)
        greedy = self._generate(rows, sample=False)
        if not self.decode.candidates:
            return greedy
        return [g + s for g, s in zip(greedy, self._generate(rows, sample=True), strict=True)]

    def explain_many(self, rows: Sequence[tuple[str, str, str]]) -> list[str]:
        """One explanation per row.

        Greedy decoding; with ``decode.candidates`` and a chooser, rows whose greedy explanation
        the chooser's classifier does not read as their rating (every row with
        ``decode.sample_all``) get sampled candidates, and the chooser keeps one of greedy +
        samples. Sampling only where greedy disagrees keeps most of the gain of sampling every
        row at a fraction of its cost (the held-out levers table measures both).
        """
        return self.explain_and_greedy(rows)[0]

    def explain_and_greedy(self, rows: Sequence[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
        """:meth:`explain_many`'s explanations and the greedy ones they were chosen against.

        The greedy explanation is decoded for every row anyway (it is the first candidate), so
        keeping it costs nothing; the explain stage stores it, for the reader who asks what the
        chooser changed (the book's blind reading of greedy against the adopted decoding).
        """
        _check_ratings(rows)
        if self.decode.candidates and self.chooser is None:
            # checked before any decoding: only choosing needs the chooser (candidates_many does not)
            raise ValueError("sampled candidates need a CandidateChooser (or DecodeConfig(candidates=0))")
        greedy = [c[0] for c in self._generate(rows, sample=False)]
        if not self.decode.candidates or self.chooser is None:
            return list(greedy), greedy
        redo = [
            i for i, ok in enumerate(self.chooser.agrees(rows, greedy)) if self.decode.sample_all or not ok
        ]
        if not redo:
            return list(greedy), greedy
        subset = [rows[i] for i in redo]
        candidates = [[greedy[i], *s] for i, s in zip(redo, self._generate(subset, sample=True), strict=True)]
        out = list(greedy)
        # openings count as over-used by their share of every row's greedy explanation
        picks = self.chooser.choose(subset, candidates, corpus=greedy)
        for i, c, k in zip(redo, candidates, picks, strict=True):
            out[i] = c[k]
        return out, greedy
