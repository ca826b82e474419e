"""The explain-then-rate feedback reranker: write an explanation of a pair, then rate it.

The paper's second reranker form. An encoder-decoder (two all-MiniLM-L6-v2 copies, as the
explanation generator of :mod:`fqa_analysis.models.explainer`) reads (question, passage); its
decoder writes an explanation ``[CLS] text [SEP]`` with no rating in sight, and a 4-way rating
head reads the decoder's top-layer state at the closing ``[SEP]``, the state after the whole
explanation. P_phi(y | Q, A) is the softmax of that head.

Training: ``loss = KL(annotators || P_phi) + explanation_weight * token cross-entropy``, weight 1
as in the authors' configs; the rating target is the pair's annotator distribution, as for the
rate-only ``feedback_kl`` reranker, and the explanation tokens are every annotator's explanation,
teacher-forced (one encoder pass per pair). What the head reads while training is the setting
``head_reads``:

* ``"human"`` (the paper's form): the state after each annotator's explanation, teacher-forced.
  Measured here, this form fails: human explanations name their rating ("this answer is
  irrelevant"), so the head learns to read the rating off the words, while at inference it reads
  the model's own explanation, which is nearly the same sentence for every pair (exposure bias);
  its held-out KL was worse than predicting the label prior.
* ``"own"`` (the default): the state after the model's *own* greedy explanation of the pair,
  generated with the current weights at every step (no gradient through the generation), which
  is what the head reads at inference. The rating must then come from the pair, not from the
  annotators' words.

What the head sees is the setting ``head_input``: ``"decoder"`` (the paper's form: the decoder's
state after the explanation) or ``"decoder+encoder"`` (the default: that state beside the mean of
the encoder's states of the pair). The paper's BART has pretrained cross-attention; ours starts
untrained, and after two epochs the decoder's state carried nothing of the pair: with its own
explanations and the decoder state alone, the head learned the label prior and no more. The
encoder's summary gives the head the pair directly, while the rating still depends on the
explanation the model wrote.

At inference the explanation is generated greedily and the head reads the state after the
generated text, so the rating depends on what the model wrote. Greedy decoding of a decoder
trained on annotators' words writes nearly one sentence for every pair; with ``own_top_p`` the
model's own explanation is a seeded nucleus draw instead, both while training (so the head
learns to rate the varied texts it will read) and at inference. The epoch with the lowest
held-out KL *with generated explanations* is kept.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import OMIT_AT_DEFAULT, atomic_write_json, config_key, content_key
from fqa_analysis.core.ratings import mean_kl, rating_distribution
from fqa_analysis.core.text_metrics import distinct_share, opening_counts
from fqa_analysis.data import FeedbackItem
from fqa_analysis.models.checkpoint import TrainingCheckpoint, epoch_start, position
from fqa_analysis.models.explainer import encoder_inputs, new_encoder_decoder
from fqa_analysis.models.reranker.encoder import bf16_autocast
from fqa_analysis.models.reranker.network import N_CLASSES
from fqa_analysis.models.retrieval import minilm_path
from fqa_analysis.models.sampling import NucleusSampler
from fqa_analysis.profiling import labelled, peak_rss_mb

__all__ = [
    "FORMS",
    "HEAD_INPUTS",
    "HEAD_READS",
    "OPENING_TOKENS",
    "ExplainRateConfig",
    "ExplainRateModel",
    "RatedExplanations",
    "load_encoder_layers",
    "opening_unlikelihood",
    "rated_explanations",
    "train_explain_rate",
]

#: Version of the trained explain-then-rate models and their cached predictions. 2: the key leaves
#: ``head_reads``/``head_input`` out at their declared defaults (our form), not at the paper's form,
#: so a version-1 paper-form key must not be read as ours.
CACHE_VERSION = "explain-rate-2"
#: What the rating head can read while training (see the module docstring).
HEAD_READS = ("own", "human")
#: What the rating head can see (see the module docstring).
HEAD_INPUTS = ("decoder+encoder", "decoder")
#: Tokens of an explanation's opening that :func:`opening_unlikelihood` pushes down.
OPENING_TOKENS = 4
#: The two forms the stage runs by name, as ``(head_reads, head_input)``: ours (the default
#: settings) and the paper's.
FORMS = {"ours": ("own", "decoder+encoder"), "paper": ("human", "decoder")}


@dataclass(frozen=True)
class ExplainRateConfig:
    """Settings of the explain-then-rate reranker (its cache key: :func:`~fqa_analysis.cache.config_key`)."""

    source_max_len: int = 128
    target_max_len: int = 32
    epochs: int = 2
    #: (question, passage) pairs per optimiser step, each with all of its annotators' explanations.
    batch_pairs: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    #: Weight of the explanation tokens' cross-entropy beside the rating KL (1 in the authors' configs).
    explanation_weight: float = 1.0
    #: Length of a generated explanation at inference (greedy, no 3-gram repeated).
    max_new_tokens: int = 24
    threads: int = 2
    #: bfloat16 autocast: on CUDA only (:func:`~fqa_analysis.models.reranker.encoder.uses_bf16`).
    bf16: bool = False
    #: Stop after this many optimiser steps (smoke runs); None trains every epoch.
    max_steps: int | None = None
    #: ``cpu`` or ``cuda``; a model trained on another device is another model (its own cache key).
    device: str = field(default="cpu", metadata=OMIT_AT_DEFAULT)
    #: What the rating head reads while training: ``"own"`` (the model's greedy explanation) or
    #: ``"human"`` (the annotators' explanations, teacher-forced: the paper's form).
    head_reads: str = field(default="own", metadata=OMIT_AT_DEFAULT)
    #: What the rating head sees: ``"decoder+encoder"`` (the decoder's state after the
    #: explanation and the mean of the encoder's states of the pair) or ``"decoder"`` (the
    #: decoder's state alone, the paper's form).
    head_input: str = field(default="decoder+encoder", metadata=OMIT_AT_DEFAULT)
    #: Weight of an unlikelihood term against the model's own over-used openings (``head_reads
    #: = "own"`` only): the first :data:`OPENING_TOKENS` tokens of each greedy explanation it wrote
    #: for the batch are pushed down in proportion to how many of the batch's other explanations
    #: open the same way (:func:`opening_unlikelihood`). 0, the default, leaves training as it was.
    opening_unlikelihood: float = field(default=0.0, metadata=OMIT_AT_DEFAULT)
    #: Nucleus mass of the model's own explanation, in training (what the head reads, with
    #: ``head_reads="own"``) and at inference: a seeded draw
    #: (:class:`~fqa_analysis.models.sampling.NucleusSampler`) instead of the greedy sentence, so
    #: the head learns to rate the varied explanations it will read. None, the default: greedy.
    own_top_p: float | None = field(default=None, metadata=OMIT_AT_DEFAULT)

    @property
    def form(self) -> str:
        """``ours``, ``paper`` (see :data:`FORMS`), or ``<head_reads>-<head_input>`` for another mix.

        Example:
            >>> ExplainRateConfig().form, ExplainRateConfig(head_reads="human", head_input="decoder").form
            ('ours', 'paper')
            >>> ExplainRateConfig(head_input="decoder").form
            'own-decoder'
        """
        for name, settings in FORMS.items():
            if settings == (self.head_reads, self.head_input):
                return name
        return f"{self.head_reads}-{self.head_input.replace('+', '-')}"

    def __post_init__(self) -> None:
        if self.head_reads not in HEAD_READS:
            raise ValueError(f"head_reads must be one of {HEAD_READS}, not {self.head_reads!r}")
        if self.head_input not in HEAD_INPUTS:
            raise ValueError(f"head_input must be one of {HEAD_INPUTS}, not {self.head_input!r}")
        if not 0.0 <= self.opening_unlikelihood < float("inf"):
            raise ValueError(f"opening_unlikelihood must be >= 0, not {self.opening_unlikelihood!r}")
        if self.own_top_p is not None and not 0.0 < self.own_top_p <= 1.0:
            raise ValueError(f"own_top_p must be in (0, 1] or None (greedy), not {self.own_top_p!r}")
        if self.opening_unlikelihood and self.head_reads != "own":
            raise ValueError(
                "opening_unlikelihood acts on the model's own explanations: head_reads='own' only"
            )


@dataclass(frozen=True)
class RatedExplanations:
    """A (question, passage) pair, its annotators' rating distribution and their explanations."""

    question: str
    passage_text: str
    target: tuple[float, ...]
    explanations: tuple[str, ...]


def rated_explanations(items: Sequence[FeedbackItem]) -> list[RatedExplanations]:
    """Training pairs of the explain-then-rate model from feedback items (empty explanations dropped).

    Example:
        >>> from fqa_analysis.data import Passage
        >>> p = Passage("WHO", 0, "https://x", "t", (), "c")
        >>> it = FeedbackItem("WHO", "valid", 0, "q?", p, ("Bad", "Excellent"), ("no.", " "))
        >>> r = rated_explanations([it])[0]
        >>> r.target, r.explanations
        ((0.5, 0.0, 0.0, 0.5), ('no.',))
    """
    out = []
    for it in items:
        texts = tuple(e.strip() for e in it.explanations if e.strip())
        if texts:
            target = tuple(float(x) for x in rating_distribution(it.ratings))
            out.append(RatedExplanations(it.question, it.passage.text, target, texts))
    return out


def _decoder_batch(tokenizer: Any, texts: Sequence[str], max_len: int) -> tuple[Any, Any, Any, Any]:
    """Decoder inputs ``[CLS] text [SEP]``, their mask, next-token labels and the ``[SEP]`` positions.

    The labels score every explanation token and the closing ``[SEP]`` (-100 elsewhere); the
    rating head reads the state at the ``[SEP]`` input position.
    """
    import torch

    seqs = []
    for text in texts:
        body = tokenizer(text, add_special_tokens=False, truncation=True, max_length=max_len)["input_ids"]
        seqs.append([tokenizer.cls_token_id, *body, tokenizer.sep_token_id])
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    for i, seq in enumerate(seqs):
        ids[i, : len(seq)] = torch.tensor(seq)
        labels[i, : len(seq) - 1] = torch.tensor(seq[1:])  # position j predicts token j + 1
    mask = (ids != tokenizer.pad_token_id).long()
    last = torch.tensor([len(s) - 1 for s in seqs])
    return ids, mask, labels, last


def opening_unlikelihood(logits: Any, labels: Any, tokens: int = OPENING_TOKENS) -> Any:
    """Unlikelihood of openings shared across a batch of the model's own explanations.

    Greedy decoding from a weakly conditioned decoder writes the same sentence for every pair
    (the single-sentence collapse). For each explanation, its opening is its first ``tokens``
    label ids; its weight is the share of the batch's *other* explanations that open the same
    way (0 for a unique opening, 1 when every explanation shares it). The term is the weighted
    mean over explanations and opening positions of ``-log(1 - p(token))`` (Welleck et al., 2020),
    so it lowers the probability of the shared opening's tokens and leaves unique ones alone.

    Args:
        logits: ``(n, T, V)`` decoder logits over the explanations, teacher-forced.
        labels: ``(n, T)`` the next-token ids (-100 at padding), as :func:`_decoder_batch` gives.
        tokens: Length of the opening, in tokens.

    Returns:
        A scalar tensor (0 when fewer than two explanations).

    Example:
        >>> import torch
        >>> logits = torch.zeros(3, 2, 2)  # p = 0.5 for either token everywhere
        >>> labels = torch.tensor([[0, 1], [0, 1], [1, 1]])
        >>> # rows 0 and 1 share an opening: weight 1/2 each, row 2 is unique: weight 0
        >>> # mean over 3 rows x 2 positions of w * -log(0.5) = (0.5 + 0.5) * 2 * ln 2 / 6
        >>> round(float(opening_unlikelihood(logits, labels, tokens=2)), 4)
        0.231
    """
    import torch

    n = labels.shape[0]
    if n < 2:
        return logits.sum() * 0.0
    opening = labels[:, :tokens]
    same = (opening.unsqueeze(0) == opening.unsqueeze(1)).all(dim=-1).float()  # (n, n)
    weight = (same.sum(dim=1) - 1.0) / (n - 1)  # share of the other rows opening the same way
    valid = opening != -100
    probs = torch.softmax(logits[:, :tokens].float(), dim=-1)
    p = probs.gather(-1, opening.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    penalty = -torch.log((1.0 - p).clamp(min=1e-6)) * valid.float()
    return (weight.unsqueeze(1) * penalty).sum() / (n * tokens)


class ExplainRateModel:
    """The encoder-decoder and its rating head (see the module docstring)."""

    def __init__(self, tokenizer: Any, model: Any, config: ExplainRateConfig) -> None:
        import torch

        self.tokenizer, self.model, self.config = tokenizer, model.to(config.device), config
        hidden = model.config.decoder.hidden_size
        if config.head_input == "decoder+encoder":
            hidden += model.config.encoder.hidden_size
        self.dropout = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(hidden, N_CLASSES).to(config.device)
        self.modules = torch.nn.ModuleList([self.model, self.head, self.dropout])

    @classmethod
    def new(
        cls, config: ExplainRateConfig, seed: int, encoder_layers: dict[str, Any] | None = None
    ) -> ExplainRateModel:
        """MiniLM2MiniLM with a fresh head (initialised from ``seed``).

        Args:
            config: Settings.
            seed: Seed of the head and the decoder's new cross-attention.
            encoder_layers: A reranker's weights (:func:`.reranker.train_reranker`) whose
                transformer layers replace the encoder's top layers: the relevance model the
                rate-only rerankers continue from, so that both start on equal footing.
        """
        import torch
        from transformers import AutoTokenizer

        torch.manual_seed(seed)
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        model = new_encoder_decoder(tokenizer)
        if encoder_layers is not None:
            load_encoder_layers(model.encoder.encoder.layer, encoder_layers)
        return cls(tokenizer, model, config)

    def _encode(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, Any]:
        src = encoder_inputs(self.tokenizer, pairs, self.config.source_max_len).to(self.config.device)
        with bf16_autocast(self.config.bf16, self.config.device):
            hidden = self.model.encoder(
                input_ids=src["input_ids"], attention_mask=src["attention_mask"]
            ).last_hidden_state
        return hidden, src["attention_mask"]

    def _read(self, hidden: Any, source_mask: Any, texts: Sequence[str]) -> tuple[Any, Any, Any]:
        """Decoder pass over ``[CLS] text [SEP]``: token logits, labels, rating logits."""
        import torch

        ids, mask, labels, last = _decoder_batch(self.tokenizer, texts, self.config.target_max_len)
        device = self.config.device
        with bf16_autocast(self.config.bf16, device):
            out = self.model(
                encoder_outputs=(hidden,),
                attention_mask=source_mask,
                decoder_input_ids=ids.to(device),
                decoder_attention_mask=mask.to(device),
                output_hidden_states=True,
            )
            states = out.decoder_hidden_states[-1][torch.arange(len(texts)), last.to(device)]
            if self.config.head_input == "decoder+encoder":
                # mean of the pair's encoder states (all-MiniLM-L6-v2 is trained for mean pooling)
                weights = source_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
                states = torch.cat([states, pooled.to(states.dtype)], dim=-1)
            rating = self.head(self.dropout(states))
        return out.logits, labels.to(device), rating

    def loss(self, pairs: Sequence[RatedExplanations], sample_seed: int = 0) -> tuple[Any, float, float]:
        """Combined loss of a batch, with its rating KL and token cross-entropy parts.

        Every annotator's explanation of a pair is teacher-forced for the token cross-entropy.
        The rating is read after those explanations (``head_reads="human"``: each is rated
        against the pair's annotator distribution, the parts averaged over explanations) or after
        the model's own explanation of the pair (``"own"``: greedy, or drawn with ``sample_seed``
        where ``own_top_p`` is set), in the same decoder pass.
        The constant entropy of the target is left out of the KL, so the rating part is the
        cross-entropy to the target.
        """
        import torch

        hidden, source_mask = self._encode([(p.question, p.passage_text) for p in pairs])
        counts = torch.tensor([len(p.explanations) for p in pairs], device=self.config.device)
        human = [e for p in pairs for e in p.explanations]
        own = []
        if self.config.head_reads == "own":
            own = self._generate(hidden.detach(), source_mask, sample_seed)
        logits, labels, rating = self._read(
            torch.cat([hidden.repeat_interleave(counts, dim=0), hidden[: len(own)]]),
            torch.cat([source_mask.repeat_interleave(counts, dim=0), source_mask[: len(own)]]),
            [*human, *own],
        )
        unlikely = None
        if own:
            if self.config.opening_unlikelihood:  # read before the labels of its own words are masked
                unlikely = opening_unlikelihood(logits[len(human) :], labels[len(human) :], OPENING_TOKENS)
            labels[len(human) :] = -100  # the model's own words are read, never learned
            rating = rating[len(human) :]
            targets = [p.target for p in pairs]
        else:
            targets = [p.target for p in pairs for _ in p.explanations]
        target = torch.tensor(targets, dtype=torch.float32, device=self.config.device)
        rating_loss = -(target * torch.log_softmax(rating.float(), dim=-1)).sum(dim=-1).mean()
        token_loss = torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100
        )
        total = rating_loss + self.config.explanation_weight * token_loss
        if unlikely is not None:
            total = total + self.config.opening_unlikelihood * unlikely
        return total, float(rating_loss.detach()), float(token_loss.detach())

    def _generate(self, hidden: Any, source_mask: Any, sample_seed: int = 0) -> list[str]:
        """Explanations of encoded pairs (no 3-gram repeated), in eval mode, without gradient.

        Greedy, or with ``own_top_p`` a nucleus draw seeded by ``sample_seed`` (the same seed,
        the same texts).
        """
        import torch
        from transformers import LogitsProcessorList
        from transformers.modeling_outputs import BaseModelOutput

        sampled: dict[str, Any] = {}
        if self.config.own_top_p is not None:
            ends = (self.tokenizer.sep_token_id, self.tokenizer.pad_token_id)
            sampler = NucleusSampler(self.config.own_top_p, seed=sample_seed, end_ids=ends)
            sampled["logits_processor"] = LogitsProcessorList([sampler])
        training = self.model.training
        self.model.eval()
        with torch.no_grad(), bf16_autocast(self.config.bf16, self.config.device):
            generated = self.model.generate(
                encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
                attention_mask=source_mask,
                max_new_tokens=self.config.max_new_tokens,
                no_repeat_ngram_size=3,
                num_beams=1,
                do_sample=False,
                **sampled,
            )
        self.model.train(training)
        written = self.tokenizer.batch_decode(
            generated[:, 1:], skip_special_tokens=True, clean_up_tokenization_spaces=True
        )
        return [t.strip() for t in written]

    def predict(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 64, progress: bool = False
    ) -> tuple[np.ndarray, list[str]]:
        """Generate an explanation of every pair, then rate it: ``(P_phi, explanations)``.

        Greedy, or with ``own_top_p`` a nucleus draw seeded by the batch's position among the
        pairs sorted by length (one call with the same pairs, the same texts and ratings).
        """
        import torch

        self.modules.eval()
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        probs = np.zeros((len(pairs), N_CLASSES), dtype=np.float32)
        texts = [""] * len(pairs)
        batches = range(0, len(order), batch_size)
        with torch.inference_mode():
            for lo in tqdm(batches, desc=labelled("explain then rate"), unit="batch", disable=not progress):
                rows = order[lo : lo + batch_size]
                hidden, source_mask = self._encode([pairs[i] for i in rows])
                written = self._generate(hidden, source_mask, sample_seed=lo // batch_size)
                _, _, rating = self._read(hidden, source_mask, written)
                probs[rows] = torch.softmax(rating.float(), dim=-1).cpu().numpy()
                for j, i in enumerate(rows):
                    texts[i] = written[j]
        return probs, texts

    def state(self) -> dict[str, Any]:
        """A copy of every trained weight (encoder, decoder, head) on the CPU."""
        return {k: v.detach().cpu().clone() for k, v in self.modules.state_dict().items()}

    def load_state(self, weights: dict[str, Any]) -> None:
        """Load weights saved by :meth:`state`."""
        self.modules.load_state_dict(weights)


def load_encoder_layers(layers: Any, reranker_weights: dict[str, Any]) -> int:
    """Copy a reranker's trained transformer layers into the top of an encoder's layer list.

    The reranker's state dict holds its trained layers under ``0.<i>.`` (the layers above its
    frozen ones) and its head under ``1.``; its layer ``i`` is the encoder's layer
    ``len(layers) - n + i`` where it trained ``n`` layers.

    Returns:
        The number of layers copied.

    Raises:
        ValueError: The weights hold no layers, or more than the encoder has.
    """
    per_layer: dict[int, dict[str, Any]] = {}
    for key, value in reranker_weights.items():
        group, _, rest = key.partition(".")
        if group == "0":
            index, _, name = rest.partition(".")
            per_layer.setdefault(int(index), {})[name] = value
    if not per_layer or len(per_layer) > len(layers):
        raise ValueError(
            f"the reranker's weights hold {len(per_layer)} transformer layer(s); the encoder has "
            f"{len(layers)}: pass a reranker's state dict (train_reranker's weights)"
        )
    offset = len(layers) - len(per_layer)
    for i, weights in sorted(per_layer.items()):
        layers[offset + i].load_state_dict(weights)
    return len(per_layer)


def train_explain_rate(
    fit: Sequence[RatedExplanations],
    select: Sequence[RatedExplanations],
    config: ExplainRateConfig,
    seed: int,
    cache_root: Path,
    encoder_init: tuple[Path, dict[str, Any]] | None = None,
    stop_after_steps: int | None = None,
) -> tuple[ExplainRateModel, Path, dict[str, Any]]:
    """Train one explain-then-rate reranker, or load it from the cache (keyed by content).

    ``encoder_init``: a reranker's cache folder and weights whose layers the encoder starts from
    (:meth:`ExplainRateModel.new`); the folder's name (a content key) is part of the model's key.
    Training checkpoints into the cache folder every few minutes and resumes from there to the
    same weights (:class:`~fqa_analysis.models.checkpoint.TrainingCheckpoint`);
    ``stop_after_steps`` stops it after a checkpoint (tests of the resume).

    Returns:
        ``(model with the best epoch's weights, its cache folder, history)``; the history holds
        per-epoch losses, held-out KL with generated explanations and wall times, ``train_s``,
        peak memory and ``from_cache``.
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    torch.set_num_threads(config.threads)
    key = content_key(
        CACHE_VERSION,
        config_key(config),
        seed,
        [asdict(p) for p in fit],
        [asdict(p) for p in select],
        *([] if encoder_init is None else [("encoder_init", encoder_init[0].name)]),
    )
    folder = cache_root / "explain_rate" / key
    model = ExplainRateModel.new(config, seed, None if encoder_init is None else encoder_init[1])
    if (folder / "history.json").exists():
        model.load_state(torch.load(folder / "weights.pt", weights_only=True))
        return model, folder, {**json.loads((folder / "history.json").read_text()), "from_cache": True}
    started = time.perf_counter()
    params = list(model.modules.parameters())
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = (len(fit) + config.batch_pairs - 1) // config.batch_pairs
    total = steps_per_epoch * config.epochs if config.max_steps is None else config.max_steps
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(config.warmup * total), total
    )
    rng = np.random.default_rng([seed, 37])
    select_pairs = [(p.question, p.passage_text) for p in select]
    select_targets = np.array([p.target for p in select])
    epochs: list[dict[str, float]] = []
    best: dict[str, Any] = {}
    best_kl, step, start_epoch = float("inf"), 0, 0
    # a run stopped mid-training resumes from its last checkpoint, to the same weights
    checkpoint = TrainingCheckpoint(folder / "checkpoint.pt", stop_after_steps=stop_after_steps)
    resume = checkpoint.restore(model.modules, optimizer, scheduler, rng)
    if resume is not None:
        epochs, best, best_kl = resume["epochs"], resume["best"], resume["best_kl"]
        step, start_epoch = resume["step"], resume["epoch"]
        started -= resume["train_s"]
    for epoch in range(start_epoch, config.epochs):
        if step >= total:
            break
        model.modules.train()
        order, first, parts, elapsed = epoch_start(resume, epoch, rng, len(fit))
        t0 = time.perf_counter() - elapsed
        for lo in tqdm(
            range(first, len(order), config.batch_pairs),
            desc=labelled(f"epoch {epoch + 1}/{config.epochs}"),
            leave=False,
        ):
            if step >= total:
                break
            batch = [fit[int(i)] for i in order[lo : lo + config.batch_pairs]]
            # a sampled own explanation is drawn from the seed and the step: a resumed run draws alike
            loss, kl_part, ce_part = model.loss(batch, sample_seed=seed * 1_000_003 + step)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            parts.append((float(loss.detach()), kl_part, ce_part))
            step += 1
            if checkpoint.due(step):
                loop = position(epoch, order, lo + config.batch_pairs, parts, t0)
                loop.update(epochs=epochs, best=best, best_kl=best_kl, step=step)
                loop["train_s"] = time.perf_counter() - started
                checkpoint.save(step, model.modules, optimizer, scheduler, rng, loop)
        train_s = time.perf_counter() - t0
        probs, written = model.predict(select_pairs)
        kl = mean_kl(select_targets, probs)
        mean = np.mean(parts, axis=0) if parts else np.zeros(3)
        epochs.append(
            {
                "epoch": epoch + 1,
                "loss": float(mean[0]),
                "rating_loss": float(mean[1]),
                "token_loss": float(mean[2]),
                "select_kl": kl,
                # how varied its own held-out explanations are (the single-sentence collapse)
                "select_distinct": distinct_share(written),
                "select_opening_share": max(opening_counts(written).values(), default=float("nan")),
                "wall_s": train_s,
                "select_s": time.perf_counter() - t0 - train_s,
            }
        )
        if kl < best_kl:
            best_kl, best = kl, copy.deepcopy(model.state())
    model.load_state(best)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(best, folder / "weights.tmp")
    (folder / "weights.tmp").replace(folder / "weights.pt")
    history = {
        "epochs": epochs,
        "best_select_kl": best_kl,
        "steps": step,
        "pairs": len(fit),
        "explanations": sum(len(p.explanations) for p in fit),
        "train_s": time.perf_counter() - started,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    atomic_write_json(folder / "history.json", history)  # written last: marks the model done
    checkpoint.clear()
    return model, folder, {**history, "from_cache": False}
