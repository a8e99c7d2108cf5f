"""The content-trust precedence, step by step, as a table (SPEC16 1.2; seed 001's
"Content trust and session taint"), and every pair where a rule cannot override an
earlier step."""

from __future__ import annotations

import pytest

from retain.governance.content_trust import (
    ALWAYS_UNTRUSTED,
    MCP,
    ContentTrustSettings,
    Step,
    classify,
    qualified,
)

RULES = ContentTrustSettings(
    trusted_mcp_servers=("knowledge_graph", "github"),
    trusted_tools=("read_notes", "mcp__wiki__page", "scrape_page_safe"),
    untrusted_tools=("scrape_page", "mcp__github__get_issue", "Bash"),
)

# (case, tool, provenance, server, native) → (trusted, step, attributed server)
TABLE = {
    # step 0: provider-native server-tool content, whatever else holds
    "native content": ("read_notes", None, None, True, False, Step.NATIVE, None),
    "native from a trusted server": (
        "lookup", MCP, "github", True, False, Step.NATIVE, "github"),
    # step 1: the built-in fetchers
    **{f"built-in {name}": (name, None, None, False, False, Step.ALWAYS_UNTRUSTED, None)
       for name in sorted(ALWAYS_UNTRUSTED)},
    "a fetcher behind a server, by qualified name": (
        "mcp__github__fetch", None, None, False, False, Step.ALWAYS_UNTRUSTED, "github"),
    "a fetcher behind a trusted server, typed": (
        "fetch", MCP, "github", False, False, Step.ALWAYS_UNTRUSTED, "github"),
    # step 2: untrusted_tools
    "an untrusted tool": ("scrape_page", None, None, False, False, Step.UNTRUSTED_TOOLS, None),
    "an untrusted tool of a trusted server, qualified": (
        "mcp__github__get_issue", None, None, False, False, Step.UNTRUSTED_TOOLS, "github"),
    "an untrusted tool of a trusted server, typed and unqualified": (
        "get_issue", MCP, "github", False, False, Step.UNTRUSTED_TOOLS, "github"),
    "an untrusted bare name behind any server": (
        "mcp__tools__scrape_page", None, None, False, False, Step.UNTRUSTED_TOOLS, "tools"),
    "a host's shell": ("Bash", None, None, False, False, Step.UNTRUSTED_TOOLS, None),
    # step 3: trusted_tools
    "a trusted tool": ("read_notes", None, None, False, True, Step.TRUSTED_TOOLS, None),
    "a trusted tool of an untrusted server, qualified rule": (
        "mcp__wiki__page", None, None, False, True, Step.TRUSTED_TOOLS, "wiki"),
    "a trusted qualified rule matches the typed report": (
        "page", MCP, "wiki", False, True, Step.TRUSTED_TOOLS, "wiki"),
    "a trusted tool of a server is typed by provenance too": (
        "read_notes", MCP, "stranger", False, True, Step.TRUSTED_TOOLS, "stranger"),
    # step 4: typed MCP provenance against the allowlist
    "typed, trusted server": ("lookup", MCP, "knowledge_graph", False, True, Step.MCP_SERVER,
                              "knowledge_graph"),
    "typed, server not in the allowlist": (
        "lookup", MCP, "stranger", False, False, Step.MCP_SERVER, "stranger"),
    "typed provenance wins over the qualified name": (
        "mcp__github__lookup", MCP, "stranger", False, False, Step.MCP_SERVER, "stranger"),
    # step 5: the qualified name, when provenance is absent or not MCP
    "qualified, trusted server": (
        "mcp__github__list_prs", None, None, False, True, Step.MCP_NAME, "github"),
    "qualified, server not in the allowlist": (
        "mcp__stranger__list_prs", None, None, False, False, Step.MCP_NAME, "stranger"),
    "qualified, non-MCP provenance": (
        "mcp__stranger__x", "builtin", None, False, False, Step.MCP_NAME, "stranger"),
    # step 6: anything else
    "an unknown tool": ("calculator", None, None, False, True, Step.DEFAULT, None),
    "a name that only looks qualified": ("mcp__nothing", None, None, False, True, Step.DEFAULT,
                                         None),
    "an unqualified name with non-MCP provenance": (
        "calculator", "builtin", None, False, True, Step.DEFAULT, None),
    "case matters": ("WEB_FETCH", None, None, False, True, Step.DEFAULT, None),
}  # fmt: skip


@pytest.mark.parametrize("case", list(TABLE))
def test_each_precedence_step_decides(case: str) -> None:
    tool, provenance, server, native, trusted, step, attributed = TABLE[case]
    verdict = classify(tool, RULES, provenance=provenance, server=server, native=native)
    assert (verdict.trusted, verdict.step, verdict.server) == (trusted, step, attributed)
    assert verdict.tool == tool


def test_the_table_covers_every_step() -> None:
    assert {row[5] for row in TABLE.values()} == set(Step)


# (what a rule tries, the call) pairs where the earlier, stronger step must still decide.
CANNOT_OVERRIDE = {
    "trusted_tools cannot trust a built-in fetcher": (
        ContentTrustSettings(trusted_tools=tuple(ALWAYS_UNTRUSTED)), "web_fetch", None, None,
        Step.ALWAYS_UNTRUSTED),
    "trusted_mcp_servers cannot trust a built-in fetcher": (
        ContentTrustSettings(trusted_mcp_servers=("web",)), "fetch", MCP, "web",
        Step.ALWAYS_UNTRUSTED),
    "trusted_tools cannot trust native content": (
        ContentTrustSettings(trusted_tools=("search",)), "search", None, None, Step.NATIVE),
    "trusted_mcp_servers cannot trust native content": (
        ContentTrustSettings(trusted_mcp_servers=("web",)), "search", MCP, "web", Step.NATIVE),
    "trusted_tools cannot trust what untrusted_tools names": (
        ContentTrustSettings(trusted_tools=("scrape",), untrusted_tools=("scrape",)),
        "scrape", None, None, Step.UNTRUSTED_TOOLS),
    "a trusted server cannot trust what untrusted_tools names": (
        ContentTrustSettings(trusted_mcp_servers=("gh",), untrusted_tools=("issue",)),
        "issue", MCP, "gh", Step.UNTRUSTED_TOOLS),
    "a trusted server cannot trust a qualified untrusted tool": (
        ContentTrustSettings(trusted_mcp_servers=("gh",), untrusted_tools=("mcp__gh__issue",)),
        "mcp__gh__issue", None, None, Step.UNTRUSTED_TOOLS),
    "a bare trusted rule cannot trust another server's tool": (
        ContentTrustSettings(trusted_tools=("get_issue",)), "mcp__evil__get_issue", None, None,
        Step.MCP_NAME),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CANNOT_OVERRIDE))
def test_a_rule_cannot_override_an_earlier_step(case: str) -> None:
    settings, tool, provenance, server, step = CANNOT_OVERRIDE[case]
    native = step is Step.NATIVE
    verdict = classify(tool, settings, provenance=provenance, server=server, native=native)
    assert (verdict.trusted, verdict.step) == (False, step)


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("mcp__github__get_issue", ("github", "get_issue")),
        ("mcp__a__b__c", ("a", "b__c")),
        ("mcp__github__", None),
        ("mcp____tool", None),
        ("mcp_github_tool", None),
        ("github__tool", None),
    ],
)
def test_a_qualified_name_is_server_then_tool(name: str, parsed: tuple[str, str] | None) -> None:
    assert qualified(name) == parsed
