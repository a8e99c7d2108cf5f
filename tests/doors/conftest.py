"""The fixtures of the CLI tests (``tests/doors/test_cli_*.py``): a fresh store, and one
with project webdev."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.doors.cli_helpers import Retain


@pytest.fixture
def retain(tmp_path: Path) -> Retain:
    return Retain(tmp_path / "home")


@pytest.fixture
def webdev(retain: Retain) -> Retain:
    """A store with project webdev."""
    retain.ok("project", "add", "webdev")
    return retain
