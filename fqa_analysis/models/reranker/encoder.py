"""The reranker's cross-encoder settings and its lower layers, run once per distinct pair (loads models).

The lower ``frozen_layers`` transformer layers of all-MiniLM-L6-v2 are run ONCE for every
(question, passage) pair any variant, seed or RQA system needs, and their outputs are cached on
disk (fp16, chunked, resumable, :func:`encode_pairs`); each reranker trains and scores the layers
above them and the head (:mod:`~fqa_analysis.models.reranker.network`). The default,
``frozen_layers = 0``, trains all six transformer layers (only the embedding lookup is cached): a
reranker with frozen MiniLM layers cannot tell a gold passage from the RQA's other candidates
(ROC AUC 0.54-0.57 with five frozen layers), so freezing MiniLM is kept only as a fast
configuration for smoke runs. :func:`lower_layer_weights` / :func:`upper_layer_weights` split a
trained reranker at layer k, so its lower layers can be run once in the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import OMIT_AT_DEFAULT, atomic_write_json, atomic_write_npy, config_key, content_key
from fqa_analysis.models.retrieval import minilm_checkpoint, minilm_path
from fqa_analysis.profiling import labelled

__all__ = [
    "CHUNK",
    "DEVICES",
    "MINILM_LAYERS",
    "STATES_VERSION",
    "PairStates",
    "RerankConfig",
    "bf16_autocast",
    "encode_pairs",
    "lower_layer_weights",
    "model_key",
    "pair_id",
    "resolve_device",
    "upper_layer_weights",
    "uses_bf16",
]


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


#: Transformer layers of all-MiniLM-L6-v2, the cross-encoder every reranker is built on.
MINILM_LAYERS = 6


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
    #: MiniLM's first this many transformer layers make the cross-encoder (its capacity), 1..6; the
    #: layers above are dropped. 6, the default, is the whole model. Added after models were cached
    #: (left out of their key at 6) to measure whether the feedback's contribution grows with the
    #: model's capacity, the nearest this machine comes to the paper's BART-large.
    encoder_layers: int = field(default=6, metadata=OMIT_AT_DEFAULT)

    def __post_init__(self) -> None:
        # one line before any work: a capacity MiniLM lacks, or more frozen layers than it keeps
        if not 1 <= self.encoder_layers <= MINILM_LAYERS:
            raise ValueError(f"encoder_layers={self.encoder_layers}: MiniLM has layers 1..{MINILM_LAYERS}")
        if not 0 <= self.frozen_layers <= self.encoder_layers:
            raise ValueError(
                f"frozen_layers={self.frozen_layers}: 0..encoder_layers ({self.encoder_layers}) "
                "layers can be frozen"
            )


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


#: Version of the cached lower-layer states; independent of the trained top, so a fix to
#: training or inference does not recompute the ten-minute lower-layer pass.
STATES_VERSION = "rerank-2"


CHUNK = 512


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
            for c in tqdm(todo, desc=labelled("lower layers"), unit="chunk"):
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
