"""Read the committed artifacts under ``results/`` (validated; no model needed).

Example:
    >>> from pathlib import Path
    >>> candidates = load_candidates(Path("results"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from fqa_analysis.candidates import validate_candidates
from fqa_analysis.errors import DataError, DataProblem

__all__ = ["load_candidates", "load_manifest", "load_table", "results_dir"]

FIX = "run `fqa run` to produce it, or check out the committed results/ folder"


def load_table(results_dir: Path, name: str) -> pd.DataFrame:
    """Read ``results_dir/name`` (Parquet), with a clear error if it is missing or unreadable."""
    path = results_dir / name
    if not path.exists():
        raise DataError(DataProblem(path, "(whole file)", "the results file does not exist", FIX))
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise DataError(
            DataProblem(path, "(whole file)", f"not a readable Parquet file ({exc})", FIX)
        ) from None


def load_candidates(results_dir: Path) -> pd.DataFrame:
    """``candidates.parquet``, checked against the contract of DESIGN §4."""
    frame = load_table(results_dir, "candidates.parquet")
    validate_candidates(frame, results_dir / "candidates.parquet")
    return frame


def load_manifest(results_dir: Path) -> dict[str, Any]:
    """``manifest.json`` as a dict."""
    path = results_dir / "manifest.json"
    if not path.exists():
        raise DataError(DataProblem(path, "(whole file)", "the manifest does not exist", FIX))
    manifest: dict[str, Any] = json.loads(path.read_text())
    return manifest


def results_dir() -> Path:
    """``$FQA_RESULTS_DIR``, else the ``results/`` folder of the project (found from the cwd upwards)."""
    env = os.environ.get("FQA_RESULTS_DIR")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").exists() and (folder / "results").is_dir():
            return folder / "results"
    raise DataError(
        DataProblem(here, "(results folder)", "no results/ folder above the working directory", FIX)
    )
