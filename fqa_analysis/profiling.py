"""Wall time and peak memory of pipeline stages, and progress lines that name the work.

The times and peaks go to the manifest and the closing notes. While :func:`announce` is active
(``fqa run`` sets it per stage), every :func:`stage` block prints one line as it ends, such as
``rerank · feedback_kl · seed 1 · train: 287.1 s · run 3 of 15 · about 2.4 h left`` (the time left from
the plan's estimate), and :func:`labelled` prefixes a progress bar with the step it belongs to
(``rerank · feedback_kl · seed 1 · train · epoch 1/2``).
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["announce", "duration_text", "labelled", "peak_rss_mb", "stage", "step_words", "unit_of"]


class _Progress:
    """The stage being computed: its name, its runs, the current step, steps done, the plan's estimate."""

    def __init__(self, stage: str, planned_s: float, runs: Sequence[str]) -> None:
        self.stage = stage
        self.planned_s = planned_s
        self.runs = list(runs)
        self.start = time.perf_counter()
        self.step: str | None = None
        self.done = 0
        self.seen: list[str] = []


def unit_of(step: str, units: Sequence[str]) -> str | None:
    """The run a step belongs to (the longest run name it starts with), or None.

    Example:
        >>> unit_of("feedback_kl/seed1/train", ["feedback_kl/seed1", "feedback_kl/seed10"])
        'feedback_kl/seed1'
        >>> unit_of("data", ["bm25"]) is None, unit_of("data", [""])
        (True, '')
    """
    if "" in units:
        return ""
    owners = [u for u in units if step == u or step.startswith(u + "/")]
    return max(owners, key=len) if owners else None


_PROGRESS: list[_Progress] = []


def step_words(step: str) -> str:
    """A step name in words: ``feedback_kl/seed1/train`` -> ``feedback_kl · seed 1 · train``.

    Example:
        >>> step_words("fraction/0.5/seed0/model")
        'fraction · 0.5 · seed 0 · model'
    """
    parts = [f"seed {p[4:]}" if p.startswith("seed") and p[4:].isdigit() else p for p in step.split("/")]
    return " · ".join(parts)


@contextmanager
def announce(stage: str, planned_s: float = 0.0, runs: Sequence[str] = ()) -> Iterator[None]:
    """Name the stage being computed, its runs and the plan's estimate of its compute (progress lines)."""
    _PROGRESS.append(_Progress(stage, planned_s, runs))
    try:
        yield
    finally:
        _PROGRESS.pop()


def labelled(desc: str) -> str:
    """A progress bar's description, prefixed with the stage and step it belongs to (when announced).

    Example:
        >>> labelled("epoch 1/2")
        'epoch 1/2'
        >>> with announce("rerank"), stage({}, "feedback_kl/seed1/train"):
        ...     labelled("epoch 1/2")
        'rerank · feedback_kl · seed 1 · train · epoch 1/2'
    """
    if not _PROGRESS:
        return desc
    now = _PROGRESS[-1]
    where = [now.stage] + ([step_words(now.step)] if now.step else [])
    return " · ".join([*where, desc])


def duration_text(seconds: float) -> str:
    """Minutes under 90 minutes, hours above.

    Example:
        >>> duration_text(12), duration_text(45), duration_text(600), duration_text(47_000)
        ('under 1 min', '1 min', '10 min', '13.1 h')
    """
    if seconds < 30:
        return "under 1 min"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _left(now: _Progress) -> str:
    if not now.planned_s:
        return ""
    left = now.planned_s - (time.perf_counter() - now.start)
    if left < 60:  # past the plan's estimate (or nearly done): no guess
        return ""
    return f" · about {duration_text(left)} left"


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter of this process (Linux >= 4.0); False if unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (since the last reset, where supported)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def stage(record: dict[str, Any], name: str) -> Iterator[None]:
    """Time a block and record ``{"wall_s", "peak_rss_mb", "peak_scope"}`` under ``record[name]``.

    Example:
        >>> rec: dict = {}
        >>> with stage(rec, "noop"):
        ...     pass
        >>> sorted(rec["noop"])
        ['peak_rss_mb', 'peak_scope', 'wall_s']
    """
    per_stage = _reset_peak()
    start = time.perf_counter()
    now = _PROGRESS[-1] if _PROGRESS else None
    if now is not None:
        now.step = name
    try:
        yield
    finally:
        record[name] = {
            "wall_s": round(time.perf_counter() - start, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            # Without a resettable counter the peak is the process's since start.
            "peak_scope": "stage" if per_stage else "process",
        }
        if now is not None:
            now.done += 1
            now.step = None
            took = record[name]["wall_s"]
            run = unit_of(name, now.runs) if now.runs else None
            if run is not None and run not in now.seen:
                now.seen.append(run)
            where = (
                f"run {now.seen.index(run) + 1} of {len(now.runs)}" if run is not None else f"step {now.done}"
            )
            line = f"{now.stage} · {step_words(name)}: {took:.1f} s · {where}{_left(now)}"
            print(line, file=sys.stderr, flush=True)
