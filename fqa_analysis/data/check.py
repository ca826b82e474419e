"""Validate a whole data directory and count what is in it (``fqa data check``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fqa_analysis import data
from fqa_analysis.data.fetch import git_blob_sha1, load_manifest
from fqa_analysis.errors import DataError, DataProblem

__all__ = ["CheckReport", "check_data"]


@dataclass
class CheckReport:
    """Result of :func:`check_data`.

    Attributes:
        counts: One row per file read: ``domain, split, kind, questions, passages, items,
            ratings_per_item``.
        problems: Everything that makes the data unusable (the check fails on any).
        notes: Facts worth knowing that are not errors (absent optional files, the protocol,
            files that differ from the pinned upstream version).
        protocol: ``paper`` or ``available`` (ARCHITECTURE.md#training-protocols).

    """

    counts: pd.DataFrame
    problems: list[DataProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    protocol: str = "available"

    def display_counts(self) -> pd.DataFrame:
        """The counts for reading: the paper's domain name added, blanks for n/a."""
        shown = self.counts.assign(paper=self.counts["domain"].map(data.PAPER_NAMES))
        shown = shown.rename(columns={"passages": "pool", "ratings_per_item": "ratings"})
        return shown.astype(object).where(shown.notna(), "")

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def _blob_ids() -> dict[str, str]:
    return {e.file: e.git_blob_sha1 for e in load_manifest().entries}


def check_data(data_dir: Path) -> CheckReport:
    """Read and validate every FeedbackQA file of ``data_dir``.

    Required: every QA split of the five domains, and feedback valid and test of the four
    feedback domains (per-domain files or the release file). Optional: feedback_train files
    (they decide the protocol) and the release files. Every problem is collected, not only
    the first.
    """
    problems: list[DataProblem] = []
    notes: list[str] = []
    rows: list[tuple[object, ...]] = []
    blob_ids = _blob_ids()
    changed: list[str] = []

    def read(path: Path) -> object | None:
        try:
            raw: object = data.read_json(path)
        except DataError as exc:
            problems.extend(exc.problems)
            return None
        rel = path.relative_to(data_dir).as_posix()
        if rel in blob_ids and git_blob_sha1(path.read_bytes()) != blob_ids[rel]:
            changed.append(rel)
        return raw

    pools: dict[str, int] = {}
    for domain in data.DOMAINS:
        for split in data.qa_splits(domain):
            path = data.qa_path(data_dir, domain, split)
            raw = read(path)
            if raw is None:
                continue
            parsed, found = data.parse_qa_split(raw, path, domain, split)
            problems.extend(found)
            if parsed is None:
                continue
            if split == data.test_splits(domain)[0]:
                pools[domain] = len(parsed.passages)
            rows.append((domain, split, "qa", len(parsed.questions), len(parsed.passages), None, None))

    for split in data.FEEDBACK_SPLITS:
        release = data.release_path(data_dir, split)
        release_items: dict[str, list[data.FeedbackItem]] = {}
        if release.exists():
            raw = read(release)
            items, found = (
                data.parse_feedback_items(raw, release, split, pools) if raw is not None else (None, [])
            )
            problems.extend(found)
            for it in items or []:
                release_items.setdefault(it.domain, []).append(it)
        for domain in data.FEEDBACK_DOMAINS:
            path = data.feedback_path(data_dir, domain, split)
            if not path.exists():
                if domain in release_items:
                    notes.append(f"{path.name} of {domain}: taken from {release.relative_to(data_dir)}")
                    rows.append(_feedback_row(domain, split, release_items[domain]))
                elif split == "train":
                    notes.append(f"{path.relative_to(data_dir)} is absent (optional: decides the protocol)")
                else:
                    problems.append(
                        DataProblem(path, "(whole file)", "the file does not exist", data.FETCH_HINT)
                    )
                continue
            if domain not in pools:
                continue  # the pool's own problem is already reported
            raw = read(path)
            if raw is None:
                continue
            items, found = data.parse_feedback_items(raw, path, split, pools, domain)
            problems.extend(found)
            if items is not None:
                rows.append(_feedback_row(domain, split, items))
    for rel in changed:
        notes.append(f"{rel} differs from the pinned upstream version (git blob mismatch)")
    protocol = data.training_protocol(data_dir)
    notes.append(f"training protocol: {protocol} (ARCHITECTURE.md#training-protocols)")
    counts = pd.DataFrame(
        rows,
        columns=["domain", "split", "kind", "questions", "passages", "items", "ratings_per_item"],
    )
    for column in ("questions", "passages", "items"):
        counts[column] = counts[column].astype("Int64")
    return CheckReport(counts, problems, notes, protocol)


def _feedback_row(domain: str, split: str, items: list[data.FeedbackItem]) -> tuple[object, ...]:
    per_item = sorted({len(it.ratings) for it in items})
    return (
        domain,
        split,
        "feedback",
        len({it.question for it in items}),
        None,
        len(items),
        "/".join(map(str, per_item)),
    )
