"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from tinydata import write_tree


@pytest.fixture
def tiny_data(tmp_path: Path) -> Path:
    """A valid tiny data directory (protocol `available`: only WHO has feedback_train)."""
    return write_tree(tmp_path / "data")
