"""Write results/capacity_frozen5.parquet: the frozen-lower-layers rerankers, kept as one measured row.

The rerank stage of commit c6e5a17 trained every reranker with the lower 5 of MiniLM's 6 layers
frozen (`fqa run rerank --frozen-layers 5 --rerank-epochs 4`, lr 1e-4, BM25 negatives, 58 min on
2 cores). Its candidate rows of the hybrid RQA on the four feedback domains are copied here from
git, unchanged, so the book can show what training every layer buys (the "capacity" row) without
re-running that configuration. Usage (from the repository root):

    .venv/bin/python tools/extract_frozen_baseline.py
"""

from __future__ import annotations

import io
import json
import subprocess

import pandas as pd

COMMIT = "c6e5a17"


def _git_bytes(path: str) -> bytes:
    return subprocess.run(["git", "show", f"{COMMIT}:{path}"], check=True, capture_output=True).stdout


def main() -> None:
    """Extract the rows and the old stage's record."""
    table = pd.read_parquet(io.BytesIO(_git_bytes("results/candidates.parquet")))
    keep = (
        (table["rqa"] == "hybrid")
        & (table["reranker"] != "none")
        & table["domain"].isin(["Australia", "CDC", "UK", "WHO"])
    )
    rows = table[keep].reset_index(drop=True)
    rows.to_parquet("results/capacity_frozen5.parquet", index=False)
    stage = json.loads(_git_bytes("results/manifest.json"))["stages"]["rerank"]
    record = {
        "source_commit": COMMIT,
        "config": stage["config"],
        "compute_s": stage.get("compute_s"),
        "timings": stage.get("timings"),
    }
    with open("results/capacity_frozen5.json", "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(f"{len(rows)} rows written")


if __name__ == "__main__":
    main()
