"""The console's pages (issue 22) over the HTTP app, on both backends: every page
renders for each kind of principal through the same verbs and view as the API, what
access withholds is said, sign-in keeps a token for the browser session, and the one
change a page makes (a review) needs the page's anti-forgery token and the hash of the
content the reviewer read. The browser's run of the same is tests/console/.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory
from tests.console.seed import TOKENS, Seeded, seed

from retain.doors import http
from retain.service import MemoryService

LOOPBACK = "http://127.0.0.1"


@pytest.fixture
def seeded(make_service: ServiceFactory) -> tuple[MemoryService, Seeded]:
    operator = make_service(principal="operator:local")
    return operator, seed(operator)


def client_of(service: MemoryService, *, tokens: dict[str, str] | None = None) -> TestClient:
    return TestClient(http.create_app(service, tokens=tokens), base_url=LOOPBACK)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no form"
    return found.group(1)


def signed_in(service: MemoryService, token: str) -> TestClient:
    client = client_of(service, tokens=TOKENS)
    form = client.get("/console/sign-in")
    answer = client.post(
        "/console/sign-in",
        data={"token": token, "csrf": csrf_of(form.text), "next": "/console"},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/console"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert "expires" not in cookie.lower() and "max-age" not in cookie.lower()  # the session's
    return client


PAGES = ("", "/records", "/quarantine", "/tickets", "/injections", "/audit", "/access")


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_for_the_local_operator(
    seeded: tuple[MemoryService, Seeded], path: str
) -> None:
    operator, _ = seeded
    page = client_of(operator).get(f"/console{path}")
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "operator:local" in page.text
    assert not re.search(r"withheld by access\.?</strong>", page.text)  # nothing kept back
    assert page.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    # nothing fetched from anywhere but this server
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)


def test_the_pages_show_what_the_store_holds(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, s = seeded
    client = client_of(operator)
    overview = client.get("/console").text
    for scope in ("agent:ada", "global", "project:web"):
        assert f">{scope}</a>" in overview
    assert "global + project:web" in overview and "Writes and quarantines" in overview
    records = client.get("/console/records").text
    assert s.held in records and "launch-plan" in records and s.chain[0] in records
    assert "The staging password" in records  # the description: the body's first line
    queue = client.get("/console/quarantine").text
    assert s.held in queue and s.tip in queue and s.ticket in queue
    assert "Tea times belong" in client.get("/console/tickets").text
    assert s.chain[2] in client.get("/console/injections").text
    audit = client.get("/console/audit").text
    assert "quarantine" in audit and "certificate" in audit
    assert "hold" in audit


def test_a_record_page_shows_body_chain_history_hold_and_injections(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, s = seeded
    client = client_of(operator)
    middle = client.get(f"/console/records/{s.chain[1]}").text
    assert "Tea is served at four." in middle
    assert s.chain[0] in middle and s.chain[2] in middle  # ancestors and successors
    assert "supersede" in middle  # its history
    plan = client.get(f"/console/records/{s.plan}").text
    assert "litigation: keep the launch records" in plan and "held" in plan
    newest = client.get(f"/console/records/{s.chain[2]}").text
    assert "<code>s1</code>" in newest  # where it was injected, in which session


def test_a_forgotten_record_shows_its_certificate(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, s = seeded
    client = client_of(operator)
    page = client.get(f"/console/records/{s.forgotten}").text
    assert "Erased." in page and "asked to erase it" in page
    link = re.search(r'href="(/console/certificates/[^"]+)"', page)
    assert link
    certificate = client.get(link.group(1))
    assert certificate.status_code == 200
    assert "Erasure certificate" in certificate.text and s.forgotten in certificate.text


def test_releasing_a_quarantined_record_needs_the_pages_token(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, s = seeded
    client = client_of(operator)
    page = client.get(f"/console/records/{s.held}")
    assert ">Release</button>" in page.text and ">Discard</button>" in page.text
    content_hash = operator.record(s.held).memory.content_hash
    form = {"verdict": "release", "content_hash": content_hash, "rationale": "checked"}
    forged = client.post(f"/console/records/{s.held}/review", data=form, follow_redirects=False)
    assert forged.status_code == 403 and "forged_request" in forged.text
    other = client.post(
        f"/console/records/{s.held}/review",
        data=form | {"csrf": csrf_of(page.text)},
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert other.status_code == 403 and "forged_request" in other.text
    assert [m.id for m in operator.list_quarantine()] == [s.held, s.tip]  # nothing changed
    done = client.post(
        f"/console/records/{s.held}/review",
        data=form | {"csrf": csrf_of(page.text)},
        follow_redirects=False,
    )
    assert done.status_code == 303
    assert done.headers["location"] == f"/console/records/{s.held}-released?done=released"
    successor = client.get(done.headers["location"]).text
    assert "Released: the content is ordinary memory now" in successor
    assert "The staging password" in successor
    assert [m.id for m in operator.list_quarantine()] == [s.tip]
    audit = client.get("/console/audit").text
    assert "released: “checked”" in audit and f"{s.held}" in audit
    origin = client.get(f"/console/records/{s.held}").text
    assert "Reviewed: this quarantined original is kept as it was" in origin
    assert f"{s.held}-released" in origin


def test_a_refused_review_is_shown_with_its_reason(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, s = seeded
    client = client_of(operator)
    page = client.get(f"/console/records/{s.held}")
    refused = client.post(
        f"/console/records/{s.held}/review",
        data={"verdict": "release", "content_hash": "0" * 64, "csrf": csrf_of(page.text)},
    )
    assert refused.status_code == 409
    assert "content_mismatch" in refused.text and "The staging password" in refused.text
    assert operator.record(s.held).memory.status.value == "quarantined"


def test_a_reader_who_may_not_review_sees_the_record_withheld(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, s = seeded
    app = signed_in(operator, "app-token")
    tip = app.get(f"/console/records/{s.tip}")
    assert tip.status_code == 200
    assert "content is withheld by access" in tip.text and "memory.quarantine.review" in tip.text
    assert "printer" not in tip.text and "Release" not in tip.text
    listing = app.get("/console/records").text
    assert "1 row on this page withheld by access" in listing and "printer" not in listing
    assert s.held not in listing  # an agent's scope: outside an application's view
    assert app.get(f"/console/records/{s.held}").status_code == 404
    queue = app.get("/console/quarantine").text
    assert "The quarantine queue: withheld by access" in queue and "access_denied" in queue
    overview = app.get("/console").text
    assert "1 record withheld by access" in overview
    ada = signed_in(operator, "ada-token")
    own = ada.get(f"/console/records/{s.held}").text
    assert "content is withheld by access" in own and "staging" not in own
    assert "The overview: withheld by access" in ada.get("/console").text
    assert "The audit timeline: withheld by access" in ada.get("/console/audit").text


def test_a_server_with_tokens_asks_for_one(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, _ = seeded
    client = client_of(operator, tokens=TOKENS)
    first = client.get("/console/records?status=active", follow_redirects=False)
    assert first.status_code == 303
    target = "/console/sign-in?next=%2Fconsole%2Frecords%3Fstatus%3Dactive"
    assert first.headers["location"] == target
    form = client.get(first.headers["location"]).text
    wrong = client.post("/console/sign-in", data={"token": "nope", "csrf": csrf_of(form)})
    assert wrong.status_code == 401 and "unauthenticated" in wrong.text
    forged = client.post("/console/sign-in", data={"token": "operator-token"})
    assert forged.status_code == 403
    entered = client.post(
        "/console/sign-in",
        data={"token": "operator-token", "csrf": csrf_of(form), "next": "https://evil.example/"},
        follow_redirects=False,
    )
    assert entered.headers["location"] == "/console"  # never another site
    assert "operator:alice" in client.get("/console").text
    page = client.get("/console/access").text
    out = client.post("/console/sign-out", data={"csrf": csrf_of(page)}, follow_redirects=False)
    assert out.status_code == 303 and 'retain_console=""' in out.headers["set-cookie"]
    assert client.get("/console", follow_redirects=False).status_code == 303
    # the API's bearer header is taken too
    bearer = client.get("/console", headers={"Authorization": "Bearer app-token"})
    assert "app:viewer" in bearer.text


def test_a_server_without_tokens_answers_only_loopback_names(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, _ = seeded
    app = http.create_app(operator)
    for base in ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"):
        assert TestClient(app, base_url=base).get("/console").status_code == 200
    rebound = TestClient(app, base_url="http://attacker.example").get("/console")
    assert rebound.status_code == 403 and "forged_request" in rebound.text


def test_a_deleted_record_keeps_its_history(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, _ = seeded
    gone = operator.write("gone", description="soon gone", body="x").memory
    operator.delete("gone")
    page = client_of(operator).get(f"/console/records/{gone.id}")
    assert page.status_code == 200
    assert "No such record is stored." in page.text and ">delete</span>" in page.text


def test_a_bad_filter_keeps_the_form(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, s = seeded
    client = client_of(operator)
    bad = client.get("/console/records?identity=ada")
    assert bad.status_code == 200 and "invalid_value" in bad.text and 'name="identity"' in bad.text
    good = client.get("/console/records?identity=agent:ada").text
    assert s.chain[2] in good and "launch-plan" not in good


def test_unknown_pages_and_bad_filters_answer_in_html(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, _ = seeded
    client = client_of(operator)
    missing = client.get("/console/nowhere")
    assert missing.status_code == 404 and "Not found" in missing.text
    assert client.get("/console/records/01NOSUCH").status_code == 404
    bad = client.get("/console/records?status=gone")
    assert "invalid_value" in bad.text and 'name="status"' in bad.text
    for asked in ("/console/records?limit=many", "/console?days=week", "/console/audit?before=x"):
        refused = client.get(asked)
        assert "invalid_value" in refused.text and "<!doctype html>" in refused.text
    said = client.get("/console?done=Your+session+expired.+Sign+in+at+evil.example").text
    assert "evil.example" not in said  # a notice is one the console wrote
    slash = client.get("/console/", follow_redirects=False)
    assert slash.status_code == 308 and slash.headers["location"] == "/console"
    assert "No records match these filters." in client.get("/console/records?tag=none").text
    assert client.get("/console/static/console.css").status_code == 200


def test_the_listing_pages_with_a_cursor(
    seeded: tuple[MemoryService, Seeded],
) -> None:
    operator, _ = seeded
    client = client_of(operator)
    first = client.get("/console/records?limit=3").text
    following = re.search(r'href="(/console/records\?[^"]*cursor=[^"]+)" rel="next"', first)
    assert following
    second = client.get(following.group(1).replace("&amp;", "&")).text
    ids = re.compile(r'class="id" href="/console/records/([^"]+)"')
    assert set(ids.findall(first)).isdisjoint(ids.findall(second))
    assert "First page" in second


def test_the_console_pages_are_not_api_routes(seeded: tuple[MemoryService, Seeded]) -> None:
    operator, _ = seeded
    paths = client_of(operator).get("/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/console")]
