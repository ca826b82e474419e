"""Content-keyed, atomically written artifacts.

A cached artifact's key is the SHA-256 of its inputs' content (data files), its config, and the
version of the code that makes it, so a change in any of them computes it anew and nothing
stale is ever reused. Every write goes to a temporary file in the same folder and is renamed
into place, so an interrupted run leaves either the old file or the new one, never half.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, fields, is_dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "ENV_CACHE_DIR",
    "OMIT_AT_DEFAULT",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_npy",
    "atomic_write_npz",
    "atomic_write_parquet",
    "config_key",
    "content_key",
    "default_cache_root",
    "file_sha256",
]


#: Environment variable that moves the model-output cache.
ENV_CACHE_DIR = "FQA_CACHE_DIR"


def default_cache_root() -> Path:
    """``$FQA_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``fqa-eval/runs``."""
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fqa-eval" / "runs"


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _exact_json(value: Any) -> Any:
    """JSON for the few non-JSON types a key may hold exactly; anything else is refused.

    A silent ``str()`` would key a numpy array by its truncated print-out (two arrays could share
    a key) and a set by an order that changes between runs.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return value.as_posix()
    raise TypeError(f"content_key cannot serialise {type(value).__name__} exactly (use .tolist(), sorted())")


def content_key(*parts: Any) -> str:
    """A short stable key of JSON-serialisable parts (configs, hashes, versions).

    Raises:
        TypeError: A part holds a type JSON cannot represent exactly (an array, a set, an object).

    Example:
        >>> content_key({"b": 1, "a": 2}) == content_key({"a": 2, "b": 1})
        True
        >>> content_key(np.int64(3)) == content_key(3)
        True
        >>> content_key({1, 2})
        Traceback (most recent call last):
        ...
        TypeError: content_key cannot serialise set exactly (use .tolist(), sorted())
    """
    blob = json.dumps(parts, sort_keys=True, default=_exact_json).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


#: ``field(default=..., metadata=OMIT_AT_DEFAULT)`` marks a setting added after models were cached:
#: :func:`config_key` leaves it out while it holds the default its dataclass declares, so the models
#: cached before it existed (which behaved as that default) keep their keys.
OMIT_AT_DEFAULT: Mapping[str, bool] = MappingProxyType({"omit_at_default": True})


def config_key(config: Any) -> dict[str, Any]:
    """The settings of a config dataclass that a cache key reads.

    Every field, except a field marked :data:`OMIT_AT_DEFAULT` while it equals the default its
    dataclass declares. The default is read from the dataclass itself: there is no second list of
    defaults to drift.

    Raises:
        TypeError: ``config`` is not a dataclass instance, or a marked field has no plain default
            (a ``default_factory`` is machine-dependent and cannot say what earlier code did).

    Example:
        >>> from dataclasses import dataclass, field
        >>> @dataclass
        ... class Config:
        ...     lr: float = 0.1
        ...     pooling: str = field(default="cls", metadata=OMIT_AT_DEFAULT)
        >>> config_key(Config()), config_key(Config(lr=0.2, pooling="mean"))
        ({'lr': 0.1}, {'lr': 0.2, 'pooling': 'mean'})
    """
    if not is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config_key needs a dataclass instance, not {type(config).__name__}")
    key = asdict(config)
    for spec in fields(config):
        if not spec.metadata.get("omit_at_default"):
            continue
        if spec.default is MISSING:
            name = f"{type(config).__name__}.{spec.name}"
            raise TypeError(f"{name} is marked OMIT_AT_DEFAULT without a plain default")
        if key[spec.name] == spec.default:
            del key[spec.name]
    return key


def _atomic(dest: Path, write: Callable[[Path], None]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(dest: Path, content: bytes) -> None:
    """Write bytes atomically."""

    def write(tmp: Path) -> None:
        tmp.write_bytes(content)

    _atomic(dest, write)


def atomic_write_json(dest: Path, obj: Any) -> None:
    """Write JSON (sorted keys, indented) atomically."""
    text = json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n"

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    _atomic(dest, write)


def atomic_write_npy(dest: Path, array: np.ndarray) -> None:
    """Write a NumPy array atomically."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as fh:
            np.save(fh, array)

    _atomic(dest, write)


def atomic_write_npz(dest: Path, **arrays: np.ndarray) -> None:
    """Write named NumPy arrays (an uncompressed ``.npz``) atomically."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy stubs type **kwds as allow_pickle

    _atomic(dest, write)


def atomic_write_parquet(dest: Path, frame: pd.DataFrame) -> None:
    """Write a DataFrame as Parquet atomically (no index; zstd level 9: results/ must stay small)."""
    _atomic(dest, lambda tmp: frame.to_parquet(tmp, index=False, compression="zstd", compression_level=9))
