"""Explainers: a natural-language explanation of an answer's rating (issue 5; loads models).

Every explainer answers ``explain(question, passage, rating) -> text`` (and ``explain_many`` for
a batch):

* :class:`TemplateExplainer`: one fixed sentence per rating (the floor any learned explainer
  must beat);
* :class:`RetrievalExplainer`: the explanation of the most similar rated (question, passage)
  pair of the training feedback (MiniLM embeddings of question + passage, cosine), by default
  among pairs that got the same rating;
* :class:`GeneratorExplainer`: an encoder-decoder warm-started from two copies of
  all-MiniLM-L6-v2 (no English seq2seq weights are on PyPI), fine-tuned on
  (rating, question, passage) -> explanation, one example per annotator; greedy decoding.

Training data are the reranker's: :func:`~fqa_analysis.rerank_data.feedback_item_sets` (same
protocol, same held-out questions for choosing the generator's epoch); feedback_test is never
trained on.
"""

from __future__ import annotations

import json
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import atomic_write_json, content_key
from fqa_analysis.data import FeedbackItem
from fqa_analysis.ratings import LABELS
from fqa_analysis.rerank import bf16_autocast
from fqa_analysis.retrieval import DenseConfig, DenseSystem, minilm_path

__all__ = [
    "TEMPLATES",
    "Explainer",
    "ExplanationExample",
    "GeneratorConfig",
    "GeneratorExplainer",
    "RetrievalExplainer",
    "TemplateExplainer",
    "explanation_examples",
    "train_generator",
]

CACHE_VERSION = "explain-1"

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


@dataclass(frozen=True)
class GeneratorConfig:
    """Settings of the MiniLM2MiniLM explanation generator."""

    source_max_len: int = 160
    target_max_len: int = 40
    epochs: int = 3
    batch_size: int = 16
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    seed: int = 0
    threads: int = 2
    bf16: bool = True
    #: Greedy decoding, no repeated trigram, at most this many new tokens.
    max_new_tokens: int = 40
    no_repeat_ngram_size: int = 3
    #: Stop after this many optimiser steps (smoke runs); None trains every epoch.
    max_steps: int | None = None


def _source(tokenizer: Any, rows: Sequence[tuple[str, str, str]], config: GeneratorConfig) -> Any:
    """Encoder input: "rating: question" as the first segment, the passage as the second."""
    return tokenizer(
        [f"{r}: {q}" for q, _, r in rows],
        [p for _, p, _ in rows],
        padding=True,
        truncation="only_second",
        max_length=config.source_max_len,
        return_tensors="pt",
    )


def _new_model(tokenizer: Any) -> Any:
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


def _loss(model: Any, tokenizer: Any, batch: Sequence[ExplanationExample], config: GeneratorConfig) -> Any:
    """Teacher-forced token cross-entropy, padding ignored.

    Computed here rather than by ``EncoderDecoderModel``, whose built-in loss path warns on
    every call.
    """
    import torch

    src = _source(tokenizer, [(e.question, e.passage_text, e.rating) for e in batch], config)
    tgt = tokenizer(
        [e.explanation for e in batch],
        padding=True,
        truncation=True,
        max_length=config.target_max_len,
        return_tensors="pt",
    )
    labels = tgt["input_ids"][:, 1:]  # drop [CLS]: the decoder starts from it
    decoder_in = tgt["input_ids"][:, :-1]
    decoder_mask = tgt["attention_mask"][:, :-1]
    with bf16_autocast(config.bf16):
        out = model(
            input_ids=src["input_ids"],
            attention_mask=src["attention_mask"],
            decoder_input_ids=decoder_in,
            decoder_attention_mask=decoder_mask,
        )
    logits = out.logits.float()
    mask = tgt["attention_mask"][:, 1:].bool()
    return torch.nn.functional.cross_entropy(logits[mask], labels[mask])


def _select_loss(
    model: Any, tokenizer: Any, select: Sequence[ExplanationExample], config: GeneratorConfig
) -> float:
    import torch

    model.eval()
    total, n = 0.0, 0
    with torch.inference_mode():
        for lo in range(0, len(select), 32):
            batch = select[lo : lo + 32]
            total += float(_loss(model, tokenizer, batch, config)) * len(batch)
            n += len(batch)
    return total / max(n, 1)


def train_generator(
    fit: Sequence[ExplanationExample],
    select: Sequence[ExplanationExample],
    config: GeneratorConfig,
    cache_root: Path,
) -> tuple[Path, dict[str, Any]]:
    """Fine-tune the generator (cached by content; the epoch with the lowest held-out loss is kept).

    Returns:
        ``(folder of the saved model, history)``; the history holds per-epoch loss, held-out
        loss, wall time, and ``from_cache``.
    """
    import torch
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup

    key = content_key(CACHE_VERSION, asdict(config), [asdict(e) for e in fit], [asdict(e) for e in select])
    folder = cache_root / "explainer" / key
    if (folder / "history.json").exists():
        history = json.loads((folder / "history.json").read_text())
        return folder / "best", {**history, "from_cache": True}
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    model = _new_model(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = (len(fit) + config.batch_size - 1) // config.batch_size
    total = steps_per_epoch * config.epochs if config.max_steps is None else config.max_steps
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(config.warmup * total), total
    )
    rng = np.random.default_rng([config.seed, 29])
    epochs: list[dict[str, float]] = []
    best_loss, step = float("inf"), 0
    tmp = folder / "best.tmp"
    for epoch in range(config.epochs):
        if step >= total:
            break
        model.train()
        t0, losses = time.perf_counter(), []
        order = rng.permutation(len(fit))
        for lo in tqdm(
            range(0, len(order), config.batch_size), desc=f"explainer epoch {epoch + 1}", leave=False
        ):
            if step >= total:
                break
            loss = _loss(model, tokenizer, [fit[int(i)] for i in order[lo : lo + config.batch_size]], config)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            step += 1
        held = _select_loss(model, tokenizer, select, config)
        epochs.append(
            {
                "epoch": epoch + 1,
                "loss": float(np.mean(losses)),
                "select_loss": held,
                "wall_s": time.perf_counter() - t0,
            }
        )
        if held < best_loss:
            best_loss = held
            shutil.rmtree(tmp, ignore_errors=True)
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
    shutil.rmtree(folder / "best", ignore_errors=True)
    tmp.replace(folder / "best")  # a finished model appears at once
    history = {"epochs": epochs, "best_select_loss": best_loss, "steps": step, "examples": len(fit)}
    atomic_write_json(folder / "history.json", history)  # written last: marks the cache entry done
    return folder / "best", {**history, "from_cache": False}


class GeneratorExplainer(Explainer):
    """A trained MiniLM2MiniLM generator (see :func:`train_generator`), greedy decoding."""

    name = "generator"

    def __init__(self, model_dir: Path, config: GeneratorConfig) -> None:
        import torch
        from transformers import AutoTokenizer, EncoderDecoderModel

        torch.set_num_threads(config.threads)
        self.config = config
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = EncoderDecoderModel.from_pretrained(model_dir).eval()  # type: ignore[no-untyped-call]
        _set_special_tokens(self.model, self.tokenizer)

    def explain_many(self, rows: Sequence[tuple[str, str, str]], batch_size: int = 32) -> list[str]:
        """Greedy explanations, generated in length-sorted batches."""
        import torch

        _check_ratings(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]) + len(rows[i][1]))
        out = [""] * len(rows)
        with torch.inference_mode():
            for lo in tqdm(
                range(0, len(order), batch_size), desc="explain", disable=len(order) <= batch_size
            ):
                idx = order[lo : lo + batch_size]
                src = _source(self.tokenizer, [rows[i] for i in idx], self.config)
                with bf16_autocast(self.config.bf16):
                    generated = self.model.generate(
                        input_ids=src["input_ids"],
                        attention_mask=src["attention_mask"],
                        max_new_tokens=self.config.max_new_tokens,
                        num_beams=1,
                        do_sample=False,
                        no_repeat_ngram_size=self.config.no_repeat_ngram_size,
                    )
                texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
                for i, text in zip(idx, texts, strict=True):
                    out[i] = text.strip()
        return out
