"""The package's layers import downward only (ARCHITECTURE.md#layers); core never imports torch."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fqa_analysis"
#: Rank of each layer, bottom to top; a module may import its own layer or any lower one.
RANKS = {"base": 0, "data": 1, "core": 2, "models": 3, "findings": 4, "stages": 5, "cli": 6}
MODEL_LIBRARIES = {"torch", "transformers", "sentence_transformers", "sklearn", "bm25s"}


def layer_of(module: str) -> str:
    """The layer of a dotted ``fqa_analysis`` module name (``fqa_analysis.core.stats`` -> core)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "base"  # the package root holds only __version__
    if parts[1] in ("data", "core", "models", "findings", "stages"):
        return parts[1]
    if parts[1] == "cli":
        return "cli"
    return "base"  # errors, cache, profiling


def imports_of(path: Path) -> list[str]:
    """Every module a file imports, at any depth (function-level imports count too)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "fqa_analysis":
                names += [f"fqa_analysis.{alias.name}" for alias in node.names]
            else:
                names.append(node.module)
    return names


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_layer_of_reads_the_folder() -> None:
    assert layer_of("fqa_analysis.errors") == "base"
    assert layer_of("fqa_analysis.data") == "data"
    assert layer_of("fqa_analysis.core.stats") == "core"
    assert layer_of("fqa_analysis.stages.rerank") == "stages"
    assert layer_of("fqa_analysis.findings.reranking") == "findings"
    assert layer_of("fqa_analysis.cli") == "cli"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_run_downward(path: Path) -> None:
    here = layer_of(module_name(path))
    upward = [
        name
        for name in imports_of(path)
        if name.startswith("fqa_analysis") and RANKS[layer_of(name)] > RANKS[here]
    ]
    assert not upward, f"{module_name(path)} ({here}) imports a higher layer: {upward}"


@pytest.mark.parametrize(
    "path", [p for p in MODULES if layer_of(module_name(p)) in ("base", "data", "core")], ids=module_name
)
def test_lower_layers_load_no_model_library(path: Path) -> None:
    models = [name for name in imports_of(path) if name.split(".")[0] in MODEL_LIBRARIES]
    assert not models, f"{module_name(path)} imports {models}; model code belongs in fqa_analysis.models"


#: Stage-layer modules that every stage may use: they are not stages themselves.
SHARED_STAGE_MODULES = {
    "fqa_analysis.stages",
    "fqa_analysis.stages.manifest",
    "fqa_analysis.stages.outputs",
    "fqa_analysis.stages.plan",
}
STAGE_MODULES = [
    p for p in MODULES if layer_of(module_name(p)) == "stages" and module_name(p) not in SHARED_STAGE_MODULES
]


def test_the_stage_modules_are_found() -> None:
    names = {module_name(p).rsplit(".", 1)[1] for p in STAGE_MODULES}
    assert names == {"rqa", "relevance", "rerank", "explain", "beyond", "explain_rate"}


@pytest.mark.parametrize("path", STAGE_MODULES, ids=module_name)
def test_stages_do_not_borrow_from_each_other(path: Path) -> None:
    """What several stages share lives a floor down (e.g. ``models.reranker.store``)."""
    borrowed = [
        name
        for name in imports_of(path)
        if name.startswith("fqa_analysis.stages") and name not in SHARED_STAGE_MODULES
    ]
    assert not borrowed, f"{module_name(path)} imports another stage: {borrowed}"


def private_imports(path: Path) -> list[str]:
    """``module.name`` of every private name a file imports from another package module."""
    return [
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fqa_analysis")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_private_imports_are_found(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from fqa_analysis.models.explainer import Explainer, _Pair\nfrom os import _exit\n")
    assert private_imports(source) == ["fqa_analysis.models.explainer._Pair"]


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_imports_another_modules_private_names(path: Path) -> None:
    assert not private_imports(path), f"{module_name(path)} imports private names: {private_imports(path)}"


def test_the_findings_layer_loads_no_model_library() -> None:
    """A chapter imports fqa_analysis.findings: it reads results, it never loads torch or a model."""
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, sys, fqa_analysis.findings as f; "
        "names = [m.name for m in pkgutil.iter_modules(f.__path__)]; "
        "[importlib.import_module(f'{f.__name__}.{n}') for n in names]; "
        f"print(len(names), sorted(m for m in {sorted(MODEL_LIBRARIES)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    imported, loaded = out.split(" ", 1)
    assert int(imported) == len(list((PACKAGE / "findings").glob("[!_]*.py")))
    assert loaded.strip() == "[]"
