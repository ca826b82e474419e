"""ARCHITECTURE.md "Public API in `__all__`": every public function and class of a module is listed there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fqa_analysis"
MODULES = sorted(PACKAGE.rglob("*.py"))


def public_and_listed(source: str) -> tuple[set[str], set[str] | None, set[str]]:
    """A module's public functions and classes, its ``__all__`` (None: none), every top-level name."""
    tree = ast.parse(source)
    public = {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
    }
    listed, defined = None, set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            defined |= names
            if "__all__" in names and node.value is not None:
                listed = set(ast.literal_eval(node.value))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined |= {a.asname or a.name.split(".")[0] for a in node.names}
    return public, listed, defined


def test_the_rule_reads_a_module() -> None:
    source = '__all__ = ["f"]\nfrom x import y\ndef f(): ...\ndef g(): ...\ndef _h(): ...\nclass C: ...\n'
    public, listed, defined = public_and_listed(source)
    assert public == {"f", "g", "C"} and listed == {"f"} and {"y", "_h"} <= defined


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_public_names_are_in_all_and_all_names_exist(path: Path) -> None:
    public, listed, defined = public_and_listed(path.read_text(encoding="utf-8"))
    if listed is None:
        assert not public, f"{path.name} defines public {sorted(public)} but has no __all__"
        return
    assert public <= listed, f"{path.name}: public but not in __all__: {sorted(public - listed)}"
    assert listed <= defined, f"{path.name}: in __all__ but not defined: {sorted(listed - defined)}"
