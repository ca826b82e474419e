"""Wall time and peak memory of pipeline stages (for the manifest and the closing notes)."""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["peak_rss_mb", "stage"]


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
    try:
        yield
    finally:
        record[name] = {
            "wall_s": round(time.perf_counter() - start, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            # Without a resettable counter the peak is the process's since start.
            "peak_scope": "stage" if per_stage else "process",
        }
