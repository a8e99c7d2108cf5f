"""Content trust: whether a tool result a session ingested can be trusted, and why.

A host tells retain what a session's model read (``MemoryService.observe``); this module
decides, with no store and no clock, whether that content is trusted. The first step
that matches decides, and the verdict names it:

====  =================================================================  ===========
step  condition                                                          result
====  =================================================================  ===========
0     provider-native server-tool content (``native``)                   untrusted
1     the name is a built-in fetcher: ``web_search``, ``web_fetch``,     untrusted
      ``fetch``, ``http_request``
2     the name is in ``untrusted_tools``                                 untrusted
3     the name is in ``trusted_tools``                                   trusted
4     typed MCP provenance names the server                              trusted iff the
                                                                         server is in
                                                                         ``trusted_mcp_servers``
5     no MCP provenance, and the name is ``mcp__<server>__<tool>``       same
6     anything else                                                      trusted
====  =================================================================  ===========

Steps 0 and 1 come first, so no rule can make a built-in fetcher's content trusted;
tool rules (2, 3) come before server rules (4, 5); an MCP server not in the allowlist
is untrusted. Matching is exact and case-sensitive. A call has more than one name:

* the name as the host reports it, and, with typed MCP provenance, its qualified form
  ``mcp__<server>__<name>`` (so a rule written either way matches either report);
* for the untrusted steps (1, 2) only, the bare tool of a qualified name too: a fetcher
  behind any server (``mcp__web__fetch``) is still a fetcher. The trusted step (3) never
  widens that way, so ``trusted_tools = ["get_issue"]`` trusts no other server's tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

ALWAYS_UNTRUSTED = frozenset({"web_search", "web_fetch", "fetch", "http_request"})
# Agent hosts' own names for those fetchers (Claude Code's), read as the built-in fetchers
# they are at every door: no rule makes them trusted either.
HOST_FETCHERS = {"WebFetch": "web_fetch", "WebSearch": "web_search"}
MCP = "mcp"  # the provenance kind of a tool an MCP server provides
_QUALIFIED = "mcp__"
_SEPARATOR = "__"


class Step(StrEnum):
    """The precedence step that decided a verdict."""

    NATIVE = "native"
    ALWAYS_UNTRUSTED = "always_untrusted"
    UNTRUSTED_TOOLS = "untrusted_tools"
    TRUSTED_TOOLS = "trusted_tools"
    MCP_SERVER = "mcp_server"
    MCP_NAME = "mcp_name"
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class ContentTrustSettings:
    """``[content_trust]`` of config.toml: the allowlist and the explicit tool rules."""

    trusted_mcp_servers: tuple[str, ...] = ()
    trusted_tools: tuple[str, ...] = ()
    untrusted_tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a tool result is trusted, the step that decided, and the server it was
    attributed to (typed provenance, else the qualified name; None for neither)."""

    trusted: bool
    step: Step
    tool: str
    server: str | None


def qualified(name: str) -> tuple[str, str] | None:
    """(server, tool) of a qualified MCP name ``mcp__<server>__<tool>``, else None."""
    if not name.startswith(_QUALIFIED):
        return None
    server, sep, tool = name[len(_QUALIFIED) :].partition(_SEPARATOR)
    if not sep or not server or not tool:
        return None
    return server, tool


def classify(
    tool: str,
    settings: ContentTrustSettings,
    *,
    provenance: str | None = None,
    server: str | None = None,
    native: bool = False,
) -> Verdict:
    """The verdict on the result of ``tool``: ``provenance`` is the kind of tool the
    host's catalog says it is (``"mcp"``, with ``server`` the MCP server's id; any other
    kind, or None when the host does not say), ``native`` marks provider-native
    server-tool content."""
    typed = server if provenance == MCP else None
    parsed = qualified(tool)
    attributed = typed or (parsed[0] if parsed else None)

    def verdict(trusted: bool, step: Step) -> Verdict:
        return Verdict(trusted, step, tool, attributed)

    names = {tool, HOST_FETCHERS.get(tool, tool)}
    if typed is not None and parsed is None:
        names.add(f"{_QUALIFIED}{typed}{_SEPARATOR}{tool}")
    widened = names | ({parsed[1]} if parsed else set())
    if native:
        return verdict(False, Step.NATIVE)
    if widened & ALWAYS_UNTRUSTED:
        return verdict(False, Step.ALWAYS_UNTRUSTED)
    if widened & set(settings.untrusted_tools):
        return verdict(False, Step.UNTRUSTED_TOOLS)
    if names & set(settings.trusted_tools):
        return verdict(True, Step.TRUSTED_TOOLS)
    if typed is not None:
        return verdict(typed in settings.trusted_mcp_servers, Step.MCP_SERVER)
    if parsed is not None:
        return verdict(parsed[0] in settings.trusted_mcp_servers, Step.MCP_NAME)
    return verdict(True, Step.DEFAULT)
