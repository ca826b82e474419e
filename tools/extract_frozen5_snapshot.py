"""Write results/frozen5_candidates.parquet: the frozen-lower-layer rerankers' rows, kept from git.

The rerank stage of commit c6e5a17 trained every reranker with the lower 5 of MiniLM's 6 layers
frozen (`--frozen-layers 5`, 4 epochs, lr 1e-4, 2,000 QA-train questions of all five domains with
BM25's top non-gold as the one negative; 58 min on 2 cores). Its reranked candidate rows of the
four feedback domains (every RQA system) are copied here from git, unchanged, for the reranking
chapter's "capacity" row (what training every layer buys); `results/frozen5_candidates.json` keeps
that stage's config and compute times. Usage (from the repository root):

    .venv/bin/python tools/extract_frozen5_snapshot.py
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
    keep = (table["reranker"] != "none") & table["domain"].isin(["Australia", "CDC", "UK", "WHO"])
    rows = table[keep].reset_index(drop=True)
    rows.to_parquet("results/frozen5_candidates.parquet", index=False)
    stage = json.loads(_git_bytes("results/manifest.json"))["stages"]["rerank"]
    record = {
        "source_commit": COMMIT,
        "config": stage["config"],
        "compute_s": stage.get("compute_s"),
        "timings": stage.get("timings"),
    }
    with open("results/frozen5_candidates.json", "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(f"{len(rows)} rows written")


if __name__ == "__main__":
    main()
