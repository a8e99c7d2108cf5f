"""What the browser tests need: Debian's Chromium, driven by Playwright (its Python
package, with no browser of its own: ``executable_path`` names the system's), one
browser for a module, and a folder for the pages' screenshots.

Chromium is installed by the test command (``scripts/test``). Where it is missing these
tests fail, saying so: a console that was never opened in a browser has not passed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM_ENV = "RETAIN_TEST_CHROMIUM"  # a Chromium other than the system's
ARTIFACTS_ENV = "RETAIN_TEST_ARTIFACTS"  # where the screenshots go
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
# As the machine's probe starts it: no sandbox (as root), no GPU, and none of the
# background connections a closed network refuses.
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-quic",
]  # fmt: skip


def chromium() -> str:
    """The Chromium to drive, or a failure that says how to install it."""
    named = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(named).is_file():
        pytest.fail(
            f"no Chromium at {named}: the console's browser tests cannot run. Install "
            "Debian's chromium (`apt-get install chromium`, which ./scripts/test does as "
            f"root) or point ${CHROMIUM_ENV} at one",
            pytrace=False,
        )
    return named


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One browser for a module's tests. Never longer: Playwright's synchronous API runs
    an event loop in the main thread while it is open, and the asynchronous tests that
    follow need that thread's loop to themselves."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get(ARTIFACTS_ENV) or ARTIFACTS)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
