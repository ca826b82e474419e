"""Builders of tiny hand-made FeedbackQA trees: every domain, a few questions, and a few passages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DOMAINS = ("Australia", "CDC", "UK", "WHO", "Quebec")


def passage(pid: int, domain: str, headers: list[str] | None = None) -> dict[str, Any]:
    return {
        "passage_id": pid,
        "source": domain,
        "uri": f"https://example.org/{domain}/{pid}",
        "reference_type": "FAQ",
        "reference": {
            "page_title": f"{domain} page {pid}",
            "section_headers": headers if headers is not None else [f"Header {pid}"],
            "section_content": f"Answer number {pid} of {domain}.",
            "selection_span": "None",
            "section_content_html": "",
        },
    }


def qa_file(domain: str, n_passages: int = 3, gold: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    return {
        "examples": [
            {"id": i, "source": domain, "question": f"{domain} question {i}?", "passage_id": g}
            for i, g in enumerate(gold)
        ],
        "passages": [passage(p, domain) for p in range(n_passages)],
    }


def feedback_file(domain: str, n_ratings: int) -> list[dict[str, Any]]:
    labels = ["Excellent", "Acceptable", "Bad"][:n_ratings]
    return [
        {
            "question": f"{domain} question {q}?",
            "passage": passage(p, domain),
            "feedback": [f"explanation {a}" for a in range(n_ratings)],
            "rating": labels if p == 0 else list(reversed(labels)),
        }
        for q in range(2)
        for p in range(2)
    ]


def write_tree(root: Path, with_all_train: bool = False) -> Path:
    for domain in DOMAINS:
        folder = root / domain
        folder.mkdir(parents=True)
        splits = ["train", "valid"] + (
            ["test_old_faq_coll4", "test_new_faq_coll4"] if domain == "Quebec" else ["test"]
        )
        for split in splits:
            (folder / f"{split}.json").write_text(json.dumps(qa_file(domain)))
        if domain == "Quebec":
            continue
        fb_splits = ["valid", "test"] + (["train"] if domain == "WHO" or with_all_train else [])
        for split in fb_splits:
            n = 3 if split == "test" else 2
            (folder / f"feedback_{split}.json").write_text(json.dumps(feedback_file(domain, n)))
    return root


def edit_json(path: Path, edit: Any) -> None:
    """Load a JSON file, let `edit` change it in place, write it back."""
    obj = json.loads(path.read_text())
    edit(obj)
    path.write_text(json.dumps(obj))
