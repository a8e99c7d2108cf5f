"""``retain search`` (``retain.doors.cli.memory``): queries fused as synonyms, the
sense that answered, tiers, limits and token budgets, and the embedder it used."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.doors.cli_helpers import (
    INVALID,
    Retain,
    configure,
)

# -- search -------------------------------------------------------------------------------------


@pytest.fixture
def corpus(webdev: Retain) -> Retain:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "deploy", "-d", "How the service ships", "--body", "Deploys run nightly")
    webdev.ok("add", "zh", "-d", "Meeting times", "--body", "我们使用北京时间安排会议")
    webdev.ok("add", "terse", "-d", "Prefers terse replies", "--priority", "1")
    webdev.ok("add", "brief", "-d", "Wants brevity in summaries")
    webdev.ok("add", "stack", "-d", "Deploys with pnpm", "-p", "webdev")
    webdev.ok("add", "plot", "-d", "Deploys the trailer", "-p", "movie")
    webdev.ok("add", "marker", "-d", "Section break", "--body", "end of part ~~")
    return webdev


def hit_names(data: dict[str, Any]) -> set[str]:
    return {m["name"] for m in data["memories"]}


def test_search_fuses_several_queries_as_synonyms(corpus: Retain) -> None:
    configure(corpus.home, '[search]\nembedder = "none"\n')  # the words alone
    assert hit_names(corpus.json("search", "terse")) == {"terse"}
    assert hit_names(corpus.json("search", "brevity")) == {"brief"}
    data = corpus.json("search", "terse", "brevity", "verbosity")
    assert data["listing"] is False
    assert hit_names(data) == {"terse", "brief"}
    assert data["summary"] == "2 of 2 matching memories, best first"


def test_search_finds_by_meaning_by_default(retain: Retain) -> None:
    retain.ok("add", "pet", "--description", "Our cat sleeps on the sofa all afternoon")
    retain.ok("add", "car", "--description", "The truck needs new tyres before winter")
    data = retain.json("search", "kitten")
    found = [(m["name"], m["senses"]) for m in data["memories"]]
    assert found == [("pet", ["semantic"])]
    assert (data["embedder"], data["degraded"]) == ("static:minilm-l6-static-256", None)


@pytest.mark.parametrize(
    ("query", "name", "sense"),
    [
        ("deploying", "deploy", "stem"),
        ("deployment", "deploy", "prefix"),
        ("北京时间", "zh", "scan"),
        ("~~", "marker", "text"),
    ],
)
def test_search_says_which_sense_answered(
    corpus: Retain, query: str, name: str, sense: str
) -> None:
    hits = {m["name"]: m for m in corpus.json("search", query)["memories"]}
    assert sense in hits[name]["senses"]


def test_search_names_the_terms_a_plain_text_scan_answered(corpus: Retain) -> None:
    (hit,) = corpus.json("search", "北京时间")["memories"]
    assert hit["scanned"] == ["北京时间"]
    row = next(line for line in corpus.ok("search", "北京时间").stdout.splitlines() if "zh" in line)
    # The senses that answered, then the terms the scan matched: "scan, semantic (北京时间)".
    assert re.search(r"\bscan\b[^│]*\(北京时间\)", row), row


def test_search_on_a_project_sees_its_tier_and_the_global_one(corpus: Retain) -> None:
    assert hit_names(corpus.json("search", "deploys")) == {"deploy", "stack", "plot"}
    assert hit_names(corpus.json("search", "deploys", "--project", "webdev")) == {
        "deploy",
        "stack",
    }
    assert hit_names(corpus.json("search", "deploys", "--tier", "global")) == {"deploy"}
    tier = corpus.json("search", "deploys", "--project", "webdev", "--tier", "project")
    assert hit_names(tier) == {"stack"}
    table = corpus.ok("search", "deploys", "--project", "webdev").stdout
    assert "2 of 2 matching memories, best first" in table
    stack = next(line for line in table.splitlines() if "stack" in line)
    assert "webdev" in stack
    assert "stem" in stack


def test_search_limit_caps_the_hits(corpus: Retain) -> None:
    data = corpus.json("search", "deploys", "--limit", "1")
    assert len(data["memories"]) == 1
    assert data["summary"] == "1 of 3 matching memories, best first"


@pytest.mark.parametrize("limit", ["0", "201"])
def test_search_refused_for_a_limit_out_of_range(corpus: Retain, limit: str) -> None:
    corpus.refused(
        "search",
        "deploys",
        "--limit",
        limit,
        status=INVALID,
        code="invalid_value",
        remedy="ask for 1 to 200 results",
    )


def test_search_of_the_project_tier_refused_without_a_project(corpus: Retain) -> None:
    corpus.refused(
        "search",
        "deploys",
        "--tier",
        "project",
        status=INVALID,
        code="no_project",
        remedy="pass a project",
    )


def test_search_results_carry_enough_to_act_on(retain: Retain) -> None:
    retain.ok(
        "add",
        *("freeze", "-d", "Deploy freeze", "--body", "No deploys", "--priority", "2"),
        *("--expires", "2020-01-01T00:00:00Z"),
    )
    retain.ok("add", "handbook", "-d", "Deploy handbook", "--body", "deploy " * 100)
    retain.ok("add", "handbook", "--force", "--verified")
    hits = {m["name"]: m for m in retain.json("search", "deploy")["memories"]}
    assert set(hits) == {"handbook", "freeze"}  # an expired memory is found, marked
    assert (hits["freeze"]["expired"], hits["handbook"]["expired"]) == (True, False)
    (freeze,) = retain.json("search", "deploy", "--expired")["memories"]
    assert freeze["body"] == "No deploys"
    assert (freeze["expired"], freeze["verified"]) == (True, False)
    assert (freeze["priority"], freeze["read_count"], freeze["age"]) == (2, 0, "today")
    assert freeze["description"] == "Deploy freeze"
    assert isinstance(freeze["score"], float)
    handbook = hits["handbook"]
    assert "body" not in handbook  # too long to carry
    assert handbook["verified"] is True
    rows = retain.ok("search", "deploy").stdout.splitlines()
    assert "verified" in next(line for line in rows if "handbook" in line)
    for flags in ((), ("--expired",)):
        rows = retain.ok("search", "deploy", *flags).stdout.splitlines()
        assert "expired" in next(line for line in rows if "freeze" in line)


def test_search_without_queries_is_a_filtered_listing(retain: Retain) -> None:
    retain.ok("add", "deploy-host", "-d", "Where deploys go")
    retain.ok("add", "checklist", "-d", "Release checklist", "--reference", "deploy-host")
    retain.ok("add", "runbook", "-d", "Runbook", "--reference", "deploy-host", "--priority", "2")
    data = retain.json("search", "--referencing", "deploy-host")
    assert data["listing"] is True
    assert data["summary"] == "2 memories referencing 'deploy-host', most important first"
    assert [m["name"] for m in data["memories"]] == ["runbook", "checklist"]


def test_search_packs_results_into_a_token_budget(retain: Retain) -> None:
    retain.ok("add", "big", "-d", "kestrel guide", "--body", "x" * 387)  # 100 tokens
    retain.ok("add", "small", "-d", "kestrel seen", "--body", "y" * 28)  # 10 tokens
    data = retain.json("search", "kestrel", "--budget", "50")
    assert [m["name"] for m in data["memories"]] == ["small"]
    assert data["summary"] == "1 of 2 matching memories, best first, within 50 tokens"
    data = retain.json("search", "kestrel", "--budget", "110", "--limit", "1")
    assert [m["name"] for m in data["memories"]] == ["big", "small"]  # all fit: all of them


def test_search_refused_for_a_budget_below_one_token(retain: Retain) -> None:
    retain.ok("add", "small", "-d", "kestrel seen")
    retain.refused(
        "search", "kestrel", "--budget", "0", status=INVALID, code="invalid_value", remedy="2000"
    )


def test_search_reports_the_embedder_it_used(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "Alice is in UTC+8")
    data = retain.json("search", "alice")
    assert (data["embedder"], data["degraded"]) == ("static:minilm-l6-static-256", None)
    configure(retain.home, '[search]\nembedder = "none"\n')
    data = retain.json("search", "alice")
    assert (data["embedder"], data["degraded"]) == ("none", None)
    assert [m["name"] for m in data["memories"]] == ["tz"]
