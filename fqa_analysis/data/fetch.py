r"""Fill a data directory with the FeedbackQA files pinned in the manifest, verified.

Every file is checked against its git blob id (SHA-1 of ``"blob <size>\\0" + content``), which
identifies the exact bytes of the upstream repository at the pinned commit, and written
atomically (temporary file, then rename), so an interrupted fetch never leaves a half file
that looks complete. Files already present and verified are skipped, so a fetch resumes.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from tqdm import tqdm

from fqa_analysis.cache import atomic_write_bytes
from fqa_analysis.errors import DataError, DataProblem

__all__ = [
    "FetchReport",
    "Manifest",
    "ManifestEntry",
    "fetch",
    "git_blob_sha1",
    "load_manifest",
]


@dataclass(frozen=True)
class ManifestEntry:
    """One upstream data file: local name, upstream path, git blob id, and mirror presence."""

    file: str
    upstream_path: str
    git_blob_sha1: str
    present_in_mirror: bool


@dataclass(frozen=True)
class Manifest:
    """The pinned upstream source and its files."""

    source: str
    commit: str
    raw_url_template: str
    entries: tuple[ManifestEntry, ...]

    def url(self, entry: ManifestEntry) -> str:
        """Download address of a file at the pinned commit."""
        return self.raw_url_template.format(commit=self.commit, upstream_path=entry.upstream_path)


@dataclass
class FetchReport:
    """What a fetch did: files copied or downloaded, already there, unavailable, failed."""

    fetched: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    problems: list[DataProblem] = field(default_factory=list)


def git_blob_sha1(content: bytes) -> str:
    """Git's object id of a file's bytes.

    Example:
        >>> git_blob_sha1(b"")
        'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391'

    """
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def load_manifest(path: Path | None = None) -> Manifest:
    """Read the manifest shipped with the package (or the one at ``path``)."""
    if path is None:
        text = resources.files("fqa_analysis").joinpath("resources/feedbackqa_manifest.json").read_text()
        where = Path("fqa_analysis/resources/feedbackqa_manifest.json")
    else:
        text, where = path.read_text(encoding="utf-8"), path
    try:
        raw: dict[str, Any] = json.loads(text)
        entries = tuple(
            ManifestEntry(f["file"], f["upstream_path"], f["git_blob_sha1"], bool(f.get("present", True)))
            for f in raw["files"]
        )
        return Manifest(raw["source"], raw["commit"], raw["raw_url_template"], entries)
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DataError(
            DataProblem(where, "(whole file)", f"not a valid data manifest ({exc})", "reinstall fqa_analysis")
        ) from None


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        data: bytes = response.read()
        return data


def fetch(
    dest: Path,
    source_dir: Path | None = None,
    manifest: Manifest | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> FetchReport:
    """Copy (from a local mirror) or download every manifest file into ``dest``, verified.

    Args:
        dest: The data directory to fill.
        source_dir: A local mirror with the same layout; None downloads from upstream.
        manifest: The pinned file list; defaults to the one shipped with the package.
        timeout: Seconds per download.
        progress: Show a progress bar.

    Returns:
        A report; ``report.problems`` is empty when every available file is in place.

    """
    manifest = manifest or load_manifest()
    if source_dir is not None and not source_dir.is_dir():
        raise DataError(
            DataProblem(
                source_dir,
                "(mirror)",
                "the mirror folder given with --from does not exist",
                "pass the folder that holds <Domain>/<split>.json",
            )
        )
    report = FetchReport()
    for entry in tqdm(manifest.entries, desc="fetch", unit="file", disable=not progress):
        target = dest / entry.file
        if target.is_file() and git_blob_sha1(target.read_bytes()) == entry.git_blob_sha1:
            report.verified.append(entry.file)
            continue
        if source_dir is not None:
            src = source_dir / entry.file
            if not src.is_file():
                if entry.present_in_mirror:
                    report.problems.append(
                        DataProblem(src, "(whole file)", "missing from the mirror", "restore the mirror")
                    )
                else:
                    report.unavailable.append(entry.file)
                continue
            content = src.read_bytes()
            origin = str(src)
        else:
            url = manifest.url(entry)
            try:
                content = _download(url, timeout)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                report.problems.append(
                    DataProblem(
                        Path(entry.file),
                        url,
                        f"download failed ({exc})",
                        "check the network, or copy from a local mirror with `fqa data fetch --from DIR`",
                    )
                )
                continue
            origin = url
        got = git_blob_sha1(content)
        if got != entry.git_blob_sha1:
            report.problems.append(
                DataProblem(
                    Path(origin),
                    "(whole file)",
                    f"content differs from upstream (git blob {got[:12]}, expected "
                    f"{entry.git_blob_sha1[:12]} at commit {manifest.commit[:7]})",
                    "replace it with the original file from the pinned commit",
                )
            )
            continue
        atomic_write_bytes(target, content)
        report.fetched.append(entry.file)
    return report
