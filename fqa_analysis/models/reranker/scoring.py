"""P_phi of a trained reranker, each pair scored once and stored beside its weights.

:func:`score_cached` scores only the pairs a model never scored (``scores.npz`` in its cache
folder, saved chunk by chunk so an interrupted pass resumes); :func:`stored_probabilities` is the
rounding ``results/`` stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from fqa_analysis.cache import (
    atomic_write_npz,
)
from fqa_analysis.models.reranker.encoder import PairStates, RerankConfig
from fqa_analysis.models.reranker.network import SCORE_BATCH, predict
from fqa_analysis.profiling import labelled

__all__ = [
    "SCORES_FILE",
    "SCORE_CHUNK",
    "SELECTION_FILE",
    "STORED_DECIMALS",
    "has_scores",
    "remember_selection",
    "score_cached",
    "stored_probabilities",
]


#: P_phi is stored rounded to this many decimals, as float32.
STORED_DECIMALS = 5


def stored_probabilities(probs: np.ndarray) -> np.ndarray:
    """P_phi as stored in results/: float32 rounded to 1e-5.

    Why: 15 reranker runs x 86,700 candidate rows of full-precision floats do not compress (52 MB);
    rounded, the table is about 10 MB (ARCHITECTURE.md#results-contract: results/ under 20 MB). A
    pick could change only where two candidates' scores differ by less than 1e-5; on the full run
    none did (0 of 260,100 reranked outcomes, under either scoring rule). Rows still sum to 1
    within 2e-5.

    Example:
        >>> out = stored_probabilities(np.array([[0.1234567, 0.8765433]]))
        >>> out.dtype, out.astype(float).round(7).tolist()
        (dtype('float32'), [[0.12346, 0.87654]])
    """
    return np.round(np.asarray(probs, dtype=np.float64), STORED_DECIMALS).astype(np.float32)


#: File in a model's cache folder holding every pair id it has scored and its P_phi.
SCORES_FILE = "scores.npz"
#: File in a model's cache folder holding its selection pairs' P_phi, as training's selection pass
#: scored them for the epoch kept (apart from ``scores.npz``, which holds what the stages scored).
SELECTION_FILE = "selection_scores.npz"


#: Pairs scored between two saves of ``scores.npz``: 64 whole batches of the model, about two
#: minutes on 2 cores in float32.
SCORE_CHUNK = 64 * SCORE_BATCH


def _stored_scores(folder: Path) -> dict[str, np.ndarray]:
    """The P_phi a model has stored for each pair id it scored, in training or after (empty when none)."""
    known: dict[str, np.ndarray] = {}
    for name in (SELECTION_FILE, SCORES_FILE):
        path = folder / name
        if path.exists():
            with np.load(path) as stored:
                known.update(zip(stored["ids"].tolist(), stored["probs"], strict=True))
    return known


def remember_selection(folder: Path, ids: Sequence[str], probs: np.ndarray) -> None:
    """Store the P_phi training's selection pass gave the selection pairs, so none is scored again.

    :func:`score_cached` serves them like any pair scored before (the beyond stage reads every
    model's selection pairs); a pair keeps the value of the batch it was first scored in.
    """
    if len(ids):
        atomic_write_npz(folder / SELECTION_FILE, ids=np.array(list(ids)), probs=probs.astype(np.float32))


def has_scores(folder: Path) -> bool:
    """Whether a stage has scored any pair with a model before (its ``scores.npz``).

    Training's selection scores do not count, so a first scoring pass is not taken for an extension.
    """
    return (folder / SCORES_FILE).exists()


def score_cached(
    folder: Path,
    weights: dict[str, Any],
    ids: Sequence[str],
    states: PairStates,
    model: RerankConfig,
) -> tuple[np.ndarray, bool]:
    """P_phi of a trained reranker for ``ids``; only pairs it never scored are run through it.

    Every pair a model scores is stored beside its weights (``scores.npz``, keyed by pair id), so
    widening the scored set (``--rescore`` of another RQA system, the beyond stage's deeper
    candidates) costs only the new pairs, and a pair keeps the exact P_phi it has in
    ``candidates.parquet`` (rescoring it in other batches could move it by about 1e-4 under
    bfloat16). A pair's value therefore depends on the batch it was first scored in: the same
    command on the same cache gives the same numbers; a fresh cache may differ in the fourth
    decimal.

    Args:
        folder: The model's cache folder.
        weights: Its weights.
        ids: Pair ids to score.
        states: Lower-layer states covering the pairs not scored before.
        model: Settings.

    Returns:
        ``(probabilities of shape (len(ids), 4), from_cache)``: ``from_cache`` when no pair was
        scored now.
    """
    known = _stored_scores(folder)
    # in the order the model batches them (by length, stably from the id order), so that chunks of
    # whole batches score every pair exactly as one pass would
    missing = sorted(sorted(set(ids) - known.keys()), key=states.length)
    chunks = range(0, len(missing), SCORE_CHUNK)
    for lo in tqdm(chunks, desc=labelled("score pairs"), unit="chunk", disable=len(chunks) < 2):
        part = missing[lo : lo + SCORE_CHUNK]
        known.update(zip(part, predict(weights, part, states, model).astype(np.float32), strict=True))
        # stored after every chunk: an interrupted pass resumes with the pairs still missing
        order = sorted(known)
        atomic_write_npz(folder / SCORES_FILE, ids=np.array(order), probs=np.stack([known[i] for i in order]))
    return np.stack([known[i] for i in ids]) if ids else np.zeros((0, 4), np.float32), not missing
