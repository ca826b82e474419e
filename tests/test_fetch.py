from __future__ import annotations

import json
from pathlib import Path

import pytest

from fqa_analysis.data.fetch import Manifest, ManifestEntry, fetch, git_blob_sha1, load_manifest


def test_git_blob_sha1_matches_git_hash_object() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_shipped_manifest_pins_the_commit() -> None:
    manifest = load_manifest()
    assert manifest.commit == "0e37bee3c27aaf9269bf9c2946be0426e07c64fe"
    assert len(manifest.entries) == 31  # 25 mirrored + 6 absent here
    assert sum(not e.present_in_mirror for e in manifest.entries) == 6
    who = next(e for e in manifest.entries if e.file == "WHO/test.json")
    assert manifest.url(who).endswith(
        "/0e37bee3c27aaf9269bf9c2946be0426e07c64fe/experiments/feedbackQA_data/WHO/test.json"
    )


def _mirror(tmp_path: Path) -> tuple[Path, Manifest]:
    src = tmp_path / "mirror"
    (src / "WHO").mkdir(parents=True)
    good = json.dumps({"examples": [], "passages": []}).encode()
    (src / "WHO" / "test.json").write_bytes(good)
    (src / "WHO" / "valid.json").write_bytes(b"tampered")
    entries = (
        ManifestEntry("WHO/test.json", "x/WHO/test.json", git_blob_sha1(good), True),
        ManifestEntry("WHO/valid.json", "x/WHO/valid.json", git_blob_sha1(b"original"), True),
        ManifestEntry("UK/feedback_train.json", "x/UK/f.json", "0" * 40, False),
    )
    return src, Manifest("example", "c" * 40, "https://invalid/{commit}/{upstream_path}", entries)


def test_fetch_from_mirror_verifies_copies_and_resumes(tmp_path: Path) -> None:
    src, manifest = _mirror(tmp_path)
    dest = tmp_path / "dest"
    report = fetch(dest, src, manifest, progress=False)
    assert report.fetched == ["WHO/test.json"]
    assert report.unavailable == ["UK/feedback_train.json"]
    (problem,) = report.problems
    assert "content differs from upstream" in problem.message()
    assert not (dest / "WHO" / "valid.json").exists()  # never a wrong file in place
    again = fetch(dest, src, manifest, progress=False)
    assert again.verified == ["WHO/test.json"] and again.fetched == []
    assert not list(dest.rglob("*.part"))


def test_fetch_download_failure_is_a_problem_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.error

    from fqa_analysis.data import fetch as fetch_module

    def refuse(url: str, timeout: float) -> bytes:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(fetch_module, "_download", refuse)
    _, manifest = _mirror(tmp_path)
    report = fetch(tmp_path / "dest", None, manifest, progress=False)
    assert len(report.problems) == 3
    assert "download failed" in report.problems[0].message()
    assert "fqa data fetch --from DIR" in report.problems[0].message()
