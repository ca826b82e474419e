"""The trained part of a reranker: the layers above the cached states and a 4-way rating head.

P_phi(y | Q, A) is the softmax of the head; the loss is the cross-entropy with a soft target,
which for the ``kl`` target (the annotator distribution) has the same gradients as
KL(target || P_phi), and for one-hot targets is plain cross-entropy; the relevance model adds
:func:`listwise_loss`. :func:`train_reranker` keeps the epoch with the lowest held-out KL and
resumes from its checkpoint; :func:`predict` gives P_phi for pair ids.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
from tqdm import tqdm

from fqa_analysis.core.ratings import mean_kl
from fqa_analysis.models.checkpoint import TrainingCheckpoint, epoch_start, position
from fqa_analysis.models.reranker.encoder import PairStates, RerankConfig, bf16_autocast
from fqa_analysis.models.retrieval import minilm_path
from fqa_analysis.profiling import labelled

__all__ = [
    "CACHE_VERSION",
    "EXCELLENT",
    "N_CLASSES",
    "SCORE_BATCH",
    "TrainingRun",
    "listwise_loss",
    "predict",
    "train_reranker",
]


#: Version of the trained rerankers and their predictions (4: full fine-tuning, warm starts).
CACHE_VERSION = "rerank-4"


N_CLASSES = 4


#: Pairs per batch when scoring (sorted by length first, so a batch pads little).
SCORE_BATCH = 64


class _Top:
    """The trainable part: the top transformer layers of MiniLM and a 4-way head on [CLS]."""

    def __init__(self, config: RerankConfig, seed: int) -> None:
        import torch
        from transformers import AutoModel

        torch.manual_seed(seed)
        base = AutoModel.from_pretrained(minilm_path())
        self.base = base
        trained = base.encoder.layer[config.frozen_layers : config.encoder_layers]
        self.layers = torch.nn.ModuleList(copy.deepcopy(trained))
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


class TrainingRun(NamedTuple):
    """What :func:`train_reranker` returns."""

    #: The state dict of the epoch kept (the lowest held-out KL).
    weights: dict[str, Any]
    #: Per epoch: mean training loss, held-out KL, seconds; ``best_select_kl``, ``steps``.
    history: dict[str, Any]
    #: The kept epoch's P_phi of the selection pairs, in their order.
    select_probs: np.ndarray


def train_reranker(
    examples: Sequence[tuple[str, np.ndarray]],
    select: Sequence[tuple[str, np.ndarray]],
    states: PairStates,
    config: RerankConfig,
    seed: int,
    init: dict[str, Any] | None = None,
    groups: Sequence[Sequence[int]] | None = None,
    checkpoint: TrainingCheckpoint | None = None,
) -> TrainingRun:
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
        The best epoch's weights, the history and that epoch's P_phi of the selection pairs (the
        selection pass scored them; stored, they are not scored again).

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
    best_probs = np.zeros((0, N_CLASSES))
    history: list[dict[str, float]] = []
    best_kl, step, start_epoch = float("inf"), 0, 0
    checkpoint = checkpoint or TrainingCheckpoint(None)
    resume = checkpoint.restore(top.modules, optimizer, scheduler, rng)
    if resume is not None:
        best, history, best_kl = resume["best"], resume["history"], resume["best_kl"]
        best_probs = resume.get("best_probs", best_probs)
        step, start_epoch = resume["step"], resume["epoch"]
    for epoch in range(start_epoch, config.epochs):
        if step >= total:
            break
        top.modules.train()
        order, first, losses, elapsed = epoch_start(resume, epoch, rng, len(units))
        t0 = time.perf_counter() - elapsed
        batches = range(first, len(order), per_batch)
        for lo in tqdm(batches, desc=labelled(f"epoch {epoch + 1}/{config.epochs}"), leave=False):
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
                loop.update(best=best, best_probs=best_probs, history=history, best_kl=best_kl, step=step)
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
            best_kl, best_probs = kl, probs
            best = {k: v.detach().cpu().clone() for k, v in top.modules.state_dict().items()}
    return TrainingRun(best, {"epochs": history, "best_select_kl": best_kl, "steps": step}, best_probs)


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
            range(0, len(order), SCORE_BATCH),
            desc=labelled("score pairs"),
            unit="batch",
            disable=len(ids) < 5000,
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
