"""Feedback rerankers: a MiniLM cross-encoder with a 4-way rating head (loads models).

The lower ``frozen_layers`` transformer layers of all-MiniLM-L6-v2 are run ONCE for every
(question, passage) pair any variant, seed or RQA system needs, and their outputs are cached on
disk (fp16, chunked, resumable); each reranker trains and scores the layers above them and the
head. The default, ``frozen_layers = 0``, trains all six transformer layers (only the embedding
lookup is cached): a reranker with frozen lower layers cannot tell a gold passage from the RQA's
other candidates (ROC AUC 0.54-0.57 with five frozen layers), so freezing is kept only as a fast
configuration for smoke runs and as the measured "capacity" row of the book.

P_phi(y | Q, A) is the softmax of the head; the loss is the cross-entropy with a soft target,
which for the ``kl`` target (the annotator distribution) has the same gradients as
KL(target || P_phi), and for one-hot targets is plain cross-entropy.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import OMIT_AT_DEFAULT, atomic_write_json, atomic_write_npy, config_key, content_key
from fqa_analysis.core.ratings import mean_kl
from fqa_analysis.models.checkpoint import TrainingCheckpoint, epoch_start, position
from fqa_analysis.models.retrieval import minilm_checkpoint, minilm_path

__all__ = [
    "PairStates",
    "RerankConfig",
    "bf16_autocast",
    "encode_pairs",
    "listwise_loss",
    "lower_layer_weights",
    "model_key",
    "pair_id",
    "predict",
    "resolve_device",
    "train_reranker",
    "upper_layer_weights",
    "uses_bf16",
]

#: Version of the trained rerankers and their predictions (4: full fine-tuning, warm starts).
CACHE_VERSION = "rerank-4"
#: Version of the cached lower-layer states; independent of the trained top, so a fix to
#: training or inference does not recompute the ten-minute lower-layer pass.
STATES_VERSION = "rerank-2"
N_CLASSES = 4
CHUNK = 512
#: Pairs per batch when scoring (sorted by length first, so a batch pads little).
SCORE_BATCH = 64


def uses_bf16(device: str) -> bool:
    """Whether a run on ``device`` uses bfloat16 autocast: on CUDA only, float32 on every CPU.

    Why one precision per device kind: a CPU with native bfloat16 (``avx512_bf16``) trains about
    twice as fast under autocast, but then the same command gives other numbers and other cache
    keys on a CPU without it (where emulated bf16 was 24x slower than float32). Everything the
    CPU computes for ``results/`` is therefore float32, whatever its flags; bfloat16 is used only
    for a whole stage run on a GPU.

    Example:
        >>> uses_bf16("cuda"), uses_bf16("cpu")
        (True, False)
    """
    return device == "cuda"


@dataclass(frozen=True)
class RerankConfig:
    """Cross-encoder reranker settings (shared by every variant and seed of a stage)."""

    max_len: int = 128
    frozen_layers: int = 0
    epochs: int = 2
    batch_size: int = 32
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    threads: int = 2
    #: What the rating head reads: ``cls`` (the first token, as BERT cross-encoders do) or ``mean``
    #: (the mean of the top layer's token states, the pooling all-MiniLM-L6-v2 was trained with;
    #: benchmarks/reranker_probe.py measured no real gain from it).
    pooling: str = field(default="cls", metadata=OMIT_AT_DEFAULT)
    #: Run the transformer layers under bfloat16 autocast; master weights, the loss and the cached
    #: states stay in float32 / fp16. On CUDA only (:func:`uses_bf16`): float32 on every CPU.
    bf16: bool = False
    #: Stop after this many optimiser steps (smoke runs); None trains every epoch.
    max_steps: int | None = None
    #: ``cpu`` or ``cuda`` (resolve ``auto`` with :func:`resolve_device` first). bfloat16 autocast
    #: on both; a model trained on another device is another model (its own cache key).
    device: str = field(default="cpu", metadata=OMIT_AT_DEFAULT)
    #: Score with int8 dynamic quantization of the linear layers (CPU only; training is
    #: unaffected). Measured by ``benchmarks/scoring_precision.py`` before it is adopted.
    int8_scoring: bool = field(default=False, metadata=OMIT_AT_DEFAULT)


DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` where torch sees a GPU, else ``cpu``; ``cuda`` without one is an error.

    Raises:
        ValueError: An unknown device name, or ``cuda`` on a machine where torch sees no GPU.

    Example:
        >>> resolve_device("cpu")
        'cpu'
    """
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
    if device == "cpu":
        return "cpu"
    import torch

    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ValueError(
            "--device cuda: torch sees no CUDA GPU on this machine (torch.cuda.is_available() is "
            "False); use --device cpu or auto, or install a CUDA build of torch"
        )
    return "cuda" if available else "cpu"


def model_key(config: RerankConfig) -> dict[str, Any]:
    """The settings a trained model's cache key depends on (:func:`~fqa_analysis.cache.config_key`).

    ``pooling``, ``device`` and ``int8_scoring`` came after models were cached: they are left out at
    their declared defaults (the behaviour of the earlier code), so those models keep their keys.

    Example:
        >>> "pooling" in model_key(RerankConfig()), model_key(RerankConfig(pooling="mean"))["pooling"]
        (False, 'mean')
    """
    return config_key(config)


def pair_id(question: str, passage: str) -> str:
    """Stable id of a (question, passage) pair."""
    return hashlib.sha1(f"{question}\x1f{passage}".encode()).hexdigest()


def bf16_autocast(enabled: bool, device: str = "cpu") -> Any:
    """bfloat16 autocast on ``device`` (``cpu`` or ``cuda``) when ``enabled`` (a no-op otherwise)."""
    import torch

    return torch.autocast(device, dtype=torch.bfloat16, enabled=enabled)


class PairStates:
    """Cached lower-layer hidden states of pairs: ``states(ids) -> (hidden, mask)`` tensors."""

    def __init__(
        self, folder: Path, index: dict[str, tuple[int, int]], n_chunks: int, from_cache: bool = False
    ) -> None:
        self.folder = folder
        #: True when every chunk was already on disk (nothing was computed).
        self.from_cache = from_cache
        self.index = index
        self._hidden = [np.load(folder / f"hidden_{i}.npy", mmap_mode="r") for i in range(n_chunks)]
        self._lengths = [np.load(folder / f"lengths_{i}.npy") for i in range(n_chunks)]

    @classmethod
    def union(cls, first: PairStates, second: PairStates) -> PairStates:
        """One view over two caches, so pairs encoded in separate runs serve one scoring pass.

        Where both hold a pair, ``first``'s states are used.
        """
        out = cls.__new__(cls)
        out.folder = first.folder
        out.from_cache = first.from_cache and second.from_cache
        shift = len(first._hidden)
        out.index = {pid: (c + shift, r) for pid, (c, r) in second.index.items()}
        out.index.update(first.index)
        out._hidden = first._hidden + second._hidden
        out._lengths = first._lengths + second._lengths
        return out

    def length(self, pid: str) -> int:
        """Token count of a pair."""
        c, r = self.index[pid]
        return int(self._lengths[c][r])

    def batch(self, ids: Sequence[str]) -> tuple[Any, Any]:
        """Hidden states padded to the longest pair of the batch, and the attention mask."""
        import torch

        lengths = [self.length(i) for i in ids]
        width = max(lengths)
        hidden = np.zeros((len(ids), width, self._hidden[0].shape[-1]), dtype=np.float32)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for j, (pid, n) in enumerate(zip(ids, lengths, strict=True)):
            c, r = self.index[pid]
            hidden[j, :n] = self._hidden[c][r, :n]
            mask[j, :n] = 1
        return torch.from_numpy(hidden), torch.from_numpy(mask)


def lower_layer_weights(weights: dict[str, Any], frozen_layers: int) -> dict[str, Any]:
    """A trained reranker's lower ``frozen_layers`` transformer layers, keyed as ``encoder.layer`` keys them.

    A reranker's state dict holds its transformer layers under ``0.{i}.`` (``i`` counted from the
    first trained layer) and its head under ``1.``; this picks the layers below ``frozen_layers``
    of a reranker trained with every layer (``frozen_layers = 0``).

    Example:
        >>> w = {"0.0.a": 1, "0.1.a": 2, "0.2.a": 3, "1.weight": 4}
        >>> lower_layer_weights(w, 2)
        {'0.a': 1, '1.a': 2}
    """
    return {
        f"{layer}.{rest}": value
        for name, value in weights.items()
        for layer, rest in [_layer_key(name)]
        if layer is not None and layer < frozen_layers
    }


def _layer_key(name: str) -> tuple[int | None, str]:
    """``0.{i}.rest`` -> ``(i, rest)`` (a transformer layer's weight); anything else -> ``(None, name)``."""
    group, layer, rest = name.split(".", 2) if name.count(".") >= 2 else (name, "", "")
    return (int(layer), rest) if group == "0" and layer.isdigit() else (None, name)


def upper_layer_weights(weights: dict[str, Any], frozen_layers: int) -> dict[str, Any]:
    """A trained reranker's layers from ``frozen_layers`` up and its head, renumbered for a frozen top.

    The weights a reranker with ``frozen_layers`` frozen layers continues from when its lower
    layers are those of ``weights`` (a model trained with every layer): layer ``i`` becomes
    ``i - frozen_layers``, the head is kept.

    Example:
        >>> w = {"0.0.a": 1, "0.1.a": 2, "0.2.a": 3, "1.weight": 4}
        >>> upper_layer_weights(w, 2)
        {'0.0.a': 3, '1.weight': 4}
    """
    out = {}
    for name, value in weights.items():
        layer, rest = _layer_key(name)
        if layer is None:
            out[name] = value
        elif layer >= frozen_layers:
            out[f"0.{layer - frozen_layers}.{rest}"] = value
    return out


def encode_pairs(
    pairs: Sequence[tuple[str, str]],
    config: RerankConfig,
    cache_root: Path,
    lower: tuple[str, dict[str, Any]] | None = None,
) -> PairStates:
    """Run the frozen lower layers over every distinct pair once (cached, chunked, resumable).

    Args:
        pairs: (question, passage) pairs; each distinct pair is encoded once.
        config: Settings (``frozen_layers`` layers are run; 0 runs the embedding lookup only).
        cache_root: Model-output cache.
        lower: ``(name, weights)`` of the layers to run instead of MiniLM's (from
            :func:`lower_layer_weights`: a trained reranker's lower layers); ``name`` (that model's
            cache folder name, a content key) enters the states' key.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    unique = sorted({(q, p) for q, p in pairs}, key=lambda qp: pair_id(*qp))
    ids = [pair_id(q, p) for q, p in unique]
    # the device and the checkpoint change the states too (kernels differ in the last bits)
    key = content_key(
        STATES_VERSION,
        config.max_len,
        config.frozen_layers,
        config.bf16,
        config.device,
        minilm_checkpoint(),
        ids,
        *([] if lower is None else [("lower", lower[0])]),
    )
    folder = cache_root / "rerank_states" / key
    n_chunks = (len(unique) + CHUNK - 1) // CHUNK
    index = {pid: (i // CHUNK, i % CHUNK) for i, pid in enumerate(ids)}
    todo = [c for c in range(n_chunks) if not (folder / f"lengths_{c}.npy").exists()]
    if todo:
        torch.set_num_threads(config.threads)
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        model = AutoModel.from_pretrained(minilm_path()).eval().to(config.device)
        model.encoder.layer = model.encoder.layer[: config.frozen_layers]
        if lower is not None:  # strict: every lower layer's every weight comes from the trained model
            model.encoder.layer.load_state_dict(lower[1])
        hidden_size = model.config.hidden_size
        with torch.inference_mode():
            for c in tqdm(todo, desc="lower layers", unit="chunk"):
                chunk = unique[c * CHUNK : (c + 1) * CHUNK]
                out = np.zeros((len(chunk), config.max_len, hidden_size), dtype=np.float16)
                lengths = np.zeros(len(chunk), dtype=np.int32)
                order = sorted(range(len(chunk)), key=lambda i: len(chunk[i][0]) + len(chunk[i][1]))
                for lo in range(0, len(order), 32):
                    rows = order[lo : lo + 32]
                    enc = tokenizer(
                        [chunk[i][0] for i in rows],
                        [chunk[i][1] for i in rows],
                        padding=True,
                        truncation="only_second",
                        max_length=config.max_len,
                        return_tensors="pt",
                    )
                    with bf16_autocast(config.bf16, config.device):
                        h = model(**enc.to(config.device)).last_hidden_state.float().cpu().numpy()
                    h = h.astype(np.float16)
                    n = enc["attention_mask"].sum(dim=1).cpu().numpy()
                    for j, i in enumerate(rows):
                        out[i, : n[j]] = h[j, : n[j]]
                        lengths[i] = n[j]
                atomic_write_npy(folder / f"hidden_{c}.npy", out)
                atomic_write_npy(folder / f"lengths_{c}.npy", lengths)  # written last: marks the chunk done
        atomic_write_json(folder / "info.json", {"pairs": len(unique), "config": asdict(config)})
    return PairStates(folder, index, n_chunks, from_cache=not todo)


class _Top:
    """The trainable part: the top transformer layers of MiniLM and a 4-way head on [CLS]."""

    def __init__(self, config: RerankConfig, seed: int) -> None:
        import torch
        from transformers import AutoModel

        torch.manual_seed(seed)
        base = AutoModel.from_pretrained(minilm_path())
        self.base = base
        self.layers = torch.nn.ModuleList(copy.deepcopy(base.encoder.layer[config.frozen_layers :]))
        hidden = base.config.hidden_size
        self.dropout = torch.nn.Dropout(base.config.hidden_dropout_prob)
        self.head = torch.nn.Linear(hidden, N_CLASSES)
        # The dropout belongs in `modules` so that .eval() switches it off at inference (it has no
        # parameters, and listed last it leaves the state-dict keys of layers and head unchanged).
        self.modules = torch.nn.ModuleList([self.layers, self.head, self.dropout]).to(config.device)
        self.device = config.device
        if config.pooling not in ("mean", "cls"):
            raise ValueError(f"unknown pooling {config.pooling!r}; use 'mean' or 'cls'")
        self.pooling = config.pooling

    def logits(self, hidden: Any, mask: Any) -> Any:
        from transformers.masking_utils import create_bidirectional_mask

        hidden, mask = hidden.to(self.device), mask.to(self.device)
        # the public form of what BertModel builds for its layers from a padding mask
        ext = create_bidirectional_mask(config=self.base.config, inputs_embeds=hidden, attention_mask=mask)
        h = hidden
        for layer in self.layers:
            out = layer(h, attention_mask=ext)
            h = out[0] if isinstance(out, tuple) else out
        if self.pooling == "cls":
            pooled = h[:, 0]
        else:
            weights = mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return self.head(self.dropout(pooled))


def train_reranker(
    examples: Sequence[tuple[str, np.ndarray]],
    select: Sequence[tuple[str, np.ndarray]],
    states: PairStates,
    config: RerankConfig,
    seed: int,
    init: dict[str, Any] | None = None,
    groups: Sequence[Sequence[int]] | None = None,
    checkpoint: TrainingCheckpoint | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train one reranker on cached states; keep the epoch with the lowest held-out KL.

    Pointwise (``groups`` None): each batch is ``batch_size`` examples and the loss is the
    cross-entropy of the 4-way head with each example's target. Listwise (``groups`` given, the
    relevance model's recipe): each batch is whole groups of about ``batch_size`` examples in all,
    and the loss adds to that pointwise term a listwise one, :func:`listwise_loss`, the softmax
    over each group's log P(Excellent) against its first member (the gold passage). Why both: the
    listwise term teaches the ranking the RQA's candidates need, the pointwise term keeps the head
    a calibrated 4-way rating that the feedback losses can continue from.

    Args:
        examples: ``(pair id, target distribution)`` training examples.
        select: Held-out ``(pair id, annotator distribution)`` for model selection.
        states: Cached lower-layer states covering every pair id.
        config: Settings.
        seed: Seed of the head's initialisation, dropout and batch order.
        init: Weights of a trained reranker to continue from (a warm start) instead of MiniLM
            with a fresh head.
        groups: Listwise groups of example indices, the positive first (every example in at most
            one group; examples outside every group are not trained on).
        checkpoint: Where to checkpoint
            (:class:`~fqa_analysis.models.checkpoint.TrainingCheckpoint`: the model, optimiser,
            scheduler, both RNGs, the epoch's order and position, the best epoch so far); when its
            file exists, training resumes from it and ends with the same weights as an
            uninterrupted run.

    Returns:
        ``(state_dict of the best epoch, history)``.

    Raises:
        TrainingInterruptedError: The checkpoint's ``stop_after_steps`` was reached.
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    torch.set_num_threads(config.threads)
    top = _Top(config, seed)
    if init is not None:
        top.modules.load_state_dict(init)
    params = list(top.modules.parameters())
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    units: list[list[int]] = (
        [[i] for i in range(len(examples))] if groups is None else [list(g) for g in groups]
    )
    per_batch = config.batch_size
    if groups is not None:  # whole groups, about batch_size examples per batch
        per_batch = max(1, round(config.batch_size / float(np.mean([len(g) for g in units]))))
    steps_per_epoch = (len(units) + per_batch - 1) // per_batch
    total = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(config.warmup * total), total
    )
    rng = np.random.default_rng([seed, 17])
    targets = np.stack([t for _, t in examples]).astype(np.float32)
    best: dict[str, Any] = {}
    history: list[dict[str, float]] = []
    best_kl, step, start_epoch = float("inf"), 0, 0
    checkpoint = checkpoint or TrainingCheckpoint(None)
    resume = checkpoint.restore(top.modules, optimizer, scheduler, rng)
    if resume is not None:
        best, history, best_kl = resume["best"], resume["history"], resume["best_kl"]
        step, start_epoch = resume["step"], resume["epoch"]
    for epoch in range(start_epoch, config.epochs):
        if step >= total:
            break
        top.modules.train()
        order, first, losses, elapsed = epoch_start(resume, epoch, rng, len(units))
        t0 = time.perf_counter() - elapsed
        batches = range(first, len(order), per_batch)
        for lo in tqdm(batches, desc=f"rerank epoch {epoch + 1}", leave=False):
            if step >= total:
                break
            chosen = [units[int(u)] for u in order[lo : lo + per_batch]]
            rows = np.array([i for unit in chosen for i in unit])
            hidden, mask = states.batch([examples[i][0] for i in rows])
            with bf16_autocast(config.bf16, config.device):
                logits = top.logits(hidden, mask)
            logp = torch.log_softmax(logits.float(), dim=-1)
            loss = -(torch.from_numpy(targets[rows]).to(config.device) * logp).sum(dim=-1).mean()
            if groups is not None:
                loss = loss + listwise_loss(logp[:, EXCELLENT], [len(unit) for unit in chosen])
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            step += 1
            if checkpoint.due(step):
                loop = position(epoch, order, lo + per_batch, losses, t0)
                loop.update(best=best, history=history, best_kl=best_kl, step=step)
                checkpoint.save(step, top.modules, optimizer, scheduler, rng, loop)
        # the selection pass draws no random numbers: the RNG state after it is the one before it
        probs = _predict(top, [s for s, _ in select], states, config)
        kl = mean_kl(np.stack([t for _, t in select]), probs)
        history.append(
            {
                "epoch": epoch + 1,
                "loss": float(np.mean(losses)),
                "select_kl": kl,
                "wall_s": time.perf_counter() - t0,
            }
        )
        if kl < best_kl:
            best_kl = kl
            best = {k: v.detach().cpu().clone() for k, v in top.modules.state_dict().items()}
    return best, {"epochs": history, "best_select_kl": best_kl, "steps": step}


#: Column of Excellent in the head's output (labels ordered Bad .. Excellent).
EXCELLENT = N_CLASSES - 1


def listwise_loss(log_p_excellent: Any, sizes: Sequence[int]) -> Any:
    """Mean over groups of the cross-entropy of softmax(log P(Excellent)) with the group's first member.

    Args:
        log_p_excellent: 1-D tensor, the groups' members one after another.
        sizes: Members per group, in order.

    Example:
        >>> import torch
        >>> lp = torch.log(torch.tensor([0.5, 0.5, 0.9, 0.1]))
        >>> round(float(listwise_loss(lp, [2, 2])), 4)  # (ln 2 + ln(1/0.9)) / 2 = 0.39925
        0.3993
    """
    import torch

    parts = torch.split(log_p_excellent, list(sizes))
    losses = [-torch.log_softmax(part, dim=0)[0] for part in parts if len(part) > 1]
    return torch.stack(losses).mean() if losses else log_p_excellent.sum() * 0.0


def _predict(top: _Top, ids: Sequence[str], states: PairStates, config: RerankConfig) -> np.ndarray:
    import torch

    top.modules.eval()
    order = sorted(range(len(ids)), key=lambda i: states.length(ids[i]))
    out = np.zeros((len(ids), N_CLASSES))
    with torch.inference_mode():
        # a progress bar only for the stage's big scoring passes, not the per-epoch selection sets
        for lo in tqdm(
            range(0, len(order), SCORE_BATCH), desc="score pairs", unit="batch", disable=len(ids) < 5000
        ):
            rows = order[lo : lo + SCORE_BATCH]
            hidden, mask = states.batch([ids[i] for i in rows])
            with bf16_autocast(config.bf16, config.device):
                logits = top.logits(hidden, mask)
            out[rows] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    return out


def predict(
    weights: dict[str, Any], ids: Sequence[str], states: PairStates, config: RerankConfig
) -> np.ndarray:
    """P_phi(y | Q, A) for every pair id (rows sum to 1), from trained weights."""
    top = _Top(config, seed=0)
    top.modules.load_state_dict(weights)
    if config.int8_scoring:
        if config.device != "cpu":
            raise ValueError("int8_scoring runs on the CPU only; use device 'cpu' or leave it off")
        import torch

        # in place: the transformer layers in `modules` are the ones `logits` runs
        quantize = torch.ao.quantization.quantize_dynamic
        quantize(top.modules, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)  # type: ignore[no-untyped-call]
        config = replace(config, bf16=False)
    return _predict(top, ids, states, config)
