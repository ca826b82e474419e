"""Training checkpoints that resume to the same weights: one mechanism for every training loop.

A training loop of the models layer (the rerankers, the explanation generator, the
explain-then-rate model) asks :meth:`TrainingCheckpoint.due` after each optimiser step; every
``every_s`` seconds :meth:`TrainingCheckpoint.save` writes, atomically, the model's, optimiser's
and scheduler's state, both random number generators (torch's, which drives dropout, and the loop's numpy
generator, which draws each epoch's order) and the loop's own state (epoch, order, position, the
best epoch so far). :meth:`TrainingCheckpoint.restore` puts all of it back, so a run stopped at
any point and started again ends with the weights an uninterrupted run ends with, bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CHECKPOINT_EVERY_S", "TrainingCheckpoint", "TrainingInterruptedError", "epoch_start", "position"]

#: Seconds of training between two checkpoints: at most this much work is lost when a run stops.
CHECKPOINT_EVERY_S = 300.0


class TrainingInterruptedError(RuntimeError):
    """Training stopped on purpose after a checkpoint (``stop_after_steps``); rerun to resume."""


@dataclass
class TrainingCheckpoint:
    """Periodic, atomic checkpoints of one training run, and their restore.

    Attributes:
        path: The checkpoint file (None: never checkpoint, never resume).
        every_s: Seconds between checkpoints.
        stop_after_steps: Checkpoint and raise :class:`TrainingInterruptedError` after this
            many optimiser steps (tests of the resume).
    """

    path: Path | None
    every_s: float = CHECKPOINT_EVERY_S
    stop_after_steps: int | None = None
    _last: float = field(default_factory=time.perf_counter, init=False, repr=False)

    def restore(self, module: Any, optimizer: Any, scheduler: Any, rng: Any) -> dict[str, Any] | None:
        """Load the checkpoint into the training objects; the loop's own state, or None without one.

        Args:
            module: The ``torch.nn.Module`` being trained.
            optimizer: Its optimiser.
            scheduler: Its learning-rate scheduler.
            rng: The loop's ``numpy.random.Generator``.
        """
        import torch

        if self.path is None or not self.path.exists():
            return None
        state = torch.load(self.path, weights_only=False)
        module.load_state_dict(state["module"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        loop: dict[str, Any] = state["loop"]
        return loop

    def due(self, step: int) -> bool:
        """Whether to checkpoint after ``step`` optimiser steps (``every_s`` elapsed, or the stop step)."""
        if self.path is None:
            return False
        stopping = self.stop_after_steps is not None and step >= self.stop_after_steps
        return stopping or time.perf_counter() - self._last >= self.every_s

    def save(
        self, step: int, module: Any, optimizer: Any, scheduler: Any, rng: Any, loop: dict[str, Any]
    ) -> None:
        """Write the checkpoint atomically; at ``stop_after_steps``, stop the run.

        Args:
            step: Optimiser steps taken so far.
            module: The module being trained.
            optimizer: Its optimiser.
            scheduler: Its scheduler.
            rng: The loop's numpy generator, in the state the next step will find it.
            loop: The loop's own state (epoch, order, position, best so far), returned by
                :meth:`restore`.

        Raises:
            TrainingInterruptedError: ``step`` reached ``stop_after_steps``.
        """
        import torch

        if self.path is None:
            return
        state = {
            "module": module.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "numpy_rng": rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "loop": loop,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(self.path)  # a crash mid-write leaves the previous checkpoint
        self._last = time.perf_counter()
        if self.stop_after_steps is not None and step >= self.stop_after_steps:
            raise TrainingInterruptedError(f"stopped after {step} steps; checkpoint {self.path}")

    def clear(self) -> None:
        """Delete the checkpoint (the model is done)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def epoch_start(
    resume: dict[str, Any] | None, epoch: int, rng: Any, n: int
) -> tuple[Any, int, list[Any], float]:
    """Where an epoch starts: ``(order, first index, per-step records, seconds already spent)``.

    The interrupted epoch continues from its checkpoint (the saved order and position); any other
    epoch draws a fresh order from ``rng``, so the generator advances exactly as in an
    uninterrupted run.
    """
    if resume is not None and resume["epoch"] == epoch:
        return resume["order"], int(resume["next"]), list(resume["losses"]), float(resume["elapsed_s"])
    return rng.permutation(n), 0, [], 0.0


def position(epoch: int, order: Any, next_index: int, records: list[Any], t0: float) -> dict[str, Any]:
    """The loop's place for a checkpoint, read back by :func:`epoch_start`."""
    return {
        "epoch": epoch,
        "order": order,
        "next": next_index,
        "losses": records,
        "elapsed_s": time.perf_counter() - t0,
    }
