"""The console in a real headless Chromium (issue 22), against a ``retain serve`` the test
launches on a free loopback port over a seeded store (each backend's): sign in with a
token, list the records, open one, release a quarantined record and see it active and
its review in the audit timeline, discard another, read a forget's certificate; a
principal who may not review sees the record withheld and no Release button; the pages
fit a phone's width and a table is walked with the keyboard. Every page is kept as a
screenshot under test-artifacts/console/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ServiceFactory, retain_serve
from tests.console.seed import TOKENS, seed

from retain.chrono import SystemClock

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def served(
    make_service: ServiceFactory, store_url: str, tmp_path: Path
) -> Any:  # (the console's address, what was seeded)
    seeded = seed(make_service(principal="operator:local", clock=SystemClock()))
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{token}={who}\n" for token, who in TOKENS.items()))
    home = Path(store_url).parent if not store_url.startswith("postgres") else tmp_path / "home"
    where = [] if not store_url.startswith("postgres") else ["--database-url", store_url]
    with retain_serve(home, "--tokens", str(tokens), *where) as (_, port):
        yield f"http://127.0.0.1:{port}/console", seeded


class Shots:
    """Screenshots named by page and backend, kept as the run's artifacts."""

    def __init__(self, folder: Path, backend: str) -> None:
        self.folder, self.backend = folder, backend

    def __call__(self, page: Any, name: str) -> None:
        page.screenshot(path=str(self.folder / f"{self.backend}-{name}.png"), full_page=True)


def signed_in(browser: Any, base: str, token: str, viewport: dict[str, int] = DESKTOP) -> Any:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.goto(base)  # a server with tokens asks for one first
    assert "/console/sign-in" in page.url
    page.fill("#token", token)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{base}")
    return page


def test_a_reviewer_releases_and_discards_and_reads_a_certificate(
    browser: Any, served: Any, artifacts: Path, backend_name: str
) -> None:
    base, s = served
    shot = Shots(artifacts, backend_name)
    page = signed_in(browser, base, "operator-token")
    assert page.locator(".who").inner_text().startswith("operator:alice")
    assert page.locator("h2#scopes-h").is_visible()
    shot(page, "overview")

    page.click("nav >> text=Records")
    page.wait_for_url(f"{base}/records")
    assert page.locator(f"a.id:has-text('{s.held}')").count() == 1
    shot(page, "records")
    page.click(f"a.id:has-text('{s.chain[1]}')")
    assert page.locator("pre.body").inner_text() == "Tea is served at four."
    assert page.locator(f"a.id:has-text('{s.chain[0]}')").count() >= 1  # its ancestor
    shot(page, "record")

    page.click("nav >> text=Quarantine")
    assert page.locator(f"a.id:has-text('{s.tip}')").count() == 1
    shot(page, "quarantine")
    page.click(f"a.id:has-text('{s.held}')")
    assert page.locator("pre.body").inner_text() == s.held_body
    shot(page, "record-quarantined")
    page.fill("#rationale", "checked with the ops team")
    page.click("button:has-text('Release')")
    page.wait_for_url(f"{base}/records/{s.held}-released?done=released")
    assert page.locator(".notice").inner_text().startswith("Released:")
    assert page.locator("p >> .badge.status-active").count() == 1
    assert page.locator("pre.body").inner_text() == s.held_body
    shot(page, "released")

    page.click("nav >> text=Audit")
    review = page.locator("tr", has=page.locator(".badge:has-text('review')"))
    assert review.count() >= 1 and s.held in review.first.inner_text()
    shot(page, "audit")

    page.goto(f"{base}/records/{s.tip}")
    page.once("dialog", lambda dialog: dialog.accept())  # "Discard this record?"
    page.click("button:has-text('Discard')")
    page.wait_for_url(f"{base}/records/{s.tip}?done=tombstoned")
    assert page.locator("p >> .badge.status-discarded").count() == 1
    assert page.locator("button:has-text('Release')").count() == 0

    page.goto(f"{base}/records/{s.forgotten}")
    assert "Erased." in page.locator("#main").inner_text()
    page.click("text=The whole certificate")
    assert page.locator("h1").inner_text() == "Erasure certificate"
    assert s.forgotten in page.locator("dl.facts").inner_text()
    shot(page, "certificate")

    for nav, name in (("Tickets", "tickets"), ("Injections", "injections"), ("Access", "access")):
        page.click(f"nav >> text={nav}")
        assert page.locator("h1").inner_text() == nav
        shot(page, name)

    page.goto(f"{base}/records")
    page.locator("body").press("j")  # the first row's record, from the keyboard
    focused = page.evaluate("document.activeElement.className")
    assert focused == "id"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/records/*")
    page.context.close()


def test_a_reader_who_may_not_review_sees_the_record_withheld(
    browser: Any, served: Any, artifacts: Path, backend_name: str
) -> None:
    base, s = served
    shot = Shots(artifacts, backend_name)
    page = signed_in(browser, base, "app-token")
    page.goto(f"{base}/records/{s.tip}")
    withheld = page.locator("#withheld")
    assert "withheld by access" in withheld.inner_text()
    assert "memory.quarantine.review" in withheld.inner_text()
    assert page.locator("button:has-text('Release')").count() == 0
    assert "printer" not in page.locator("#main").inner_text()
    shot(page, "withheld")
    page.click("nav >> text=Quarantine")
    assert "withheld by access" in page.locator("#main").inner_text()
    page.context.close()


def test_the_pages_fit_a_phones_width(
    browser: Any, served: Any, artifacts: Path, backend_name: str
) -> None:
    base, s = served
    shot = Shots(artifacts, backend_name)
    page = signed_in(browser, base, "operator-token", PHONE)
    for path, name in (("", "overview-phone"), ("/records", "records-phone"),
                       (f"/records/{s.held}", "record-phone")):  # fmt: skip
        page.goto(base + path)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{path or '/'} is wider than the phone by {overflow}px"
        shot(page, name)
    page.context.close()
