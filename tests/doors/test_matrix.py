"""The matrix: every public verb, as every kind of principal, through every door.

``EXPECTED`` is written by hand from what issue 15 and the policy table's docstring say
each kind may do (it is not read from ``retain.service.policy``: a table derived from
the code under test could not fail). ``DOORS`` says, per verb, how each door reaches it
(the CLI command and whether it takes ``--as``, the REST route, the MCP tool) or that it
does not; the claim tests below hold those to the doors themselves (the CLI's commands,
the OpenAPI document, the MCP server's tools and each principal's tool list), so the
table cannot go stale silently.

A column is a kind of principal, and one more: anonymous where the installation allows
anonymous writes (``[access] anonymous_writes``; the CLI reads it from its home's
config.toml). Each (column, door) runs every verb the door reaches once, in ``VERBS``
order, over a fresh store of its own (per backend) set up by an operator: projects, a
registered agent, a team, memories, a fact and a snapshot to import. Every cell must
give the table's outcome ("ok", or the error code), and a refused call must leave the
store as it was. A CLI command without ``--as`` acts as the local operator
(``operator:local``), so it is run for the operator column only. A disagreement found
stays in ``DISAGREEMENTS`` as a strict xfail, never hidden by changing the table.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from tests.conftest import BACKENDS, ServiceFactory, fresh_schema, open_backend, store_state

from retain.chrono import ManualClock
from retain.config import Settings
from retain.doors import http, mcp
from retain.doors.cli import cli, load_commands
from retain.errors import RetainError
from retain.results import WriteRequest
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend

OK = "ok"
DENIED = "access_denied"
KINDS = ("agent", "app", "operator", "steward", "anonymous")
OPEN = "anonymous-writing"  # anonymous, where the installation allows anonymous writes
COLUMNS = (*KINDS, OPEN)
PRINCIPALS = {
    "agent": "agent:ada",  # registered by the set-up
    "app": "app:ci",
    "operator": "operator:alice",
    "steward": "steward",
    "anonymous": "anonymous",
    OPEN: "anonymous",
}
KIND_OF = {**{kind: kind for kind in KINDS}, OPEN: "anonymous"}
LOCAL_OPERATOR = "operator:local"  # who a CLI command without --as acts as


def row(*outcomes: str) -> dict[str, str]:
    return dict(zip(COLUMNS, outcomes, strict=True))


def settings_of(column: str) -> Settings:
    # the set-up's clock is in the past of the CLI's (the system's): its tickets wait long
    return Settings(anonymous_writes=column == OPEN, ticket_expire_after=timedelta(days=36500))


# fmt: off
# The outcome of each verb for each kind, by hand. The shared tiers (global, projects)
# are written by operators and applications; an agent keeps its own memory and proposes
# (so does the steward, which also stages promotions of quarantined records);
# anyone reads through their view; realm administration (projects, agents, teams,
# membership) is for operators and apps; the event log and exports are not an agent's (the
# whole log, every realm's, is an operator's to export);
# the steward reviews and verifies; the assertion ledger is indexed by operators,
# applications and the steward (no agent), and read, with its gate, by anyone;
# operators and the steward retier (raising trust is a
# review); tickets (the proposals) are the curators' (operators and the steward) to read
# and decide (an agent lists the ones it made), and swept by them and applications;
# only an operator rebuilds or moves the store;
# review); only an operator rebuilds or moves the store, or grants and revokes access
# (which anyone but an agent may list);
# anonymous callers read only, unless the installation allows them to write ([access]
# anonymous_writes), and then they write the shared tiers and facts, and no more;
# legal holds are placed and released, and retention swept, by operators and applications
# (issue 17), and whether a memory is held is read by anyone but an agent (as the log is);
# a memory's relation graph is read by anyone (through their view), relations are made
# and pairs decided by the curators (operators and the steward: supersedes and contradicts
# are decisions), a dedup pass (which only proposes pairs) is upkeep for operators,
# applications and the steward, and the hygiene report is the curators' worklist;
# the console's records and a record are read by anyone through their view, its overview
# and timeline (the log's) by anyone but an agent.
EXPECTED: dict[str, dict[str, str]] = {
    #                      agent   app     operator steward anonymous anonymous-writing
    "search":          row(OK,     OK,     OK,      OK,     OK,       OK),
    "read":            row(OK,     OK,     OK,      OK,     OK,       OK),
    "get":             row(OK,     OK,     OK,      OK,     OK,       OK),
    "list_memories":   row(OK,     OK,     OK,      OK,     OK,       OK),
    "context":         row(OK,     OK,     OK,      OK,     OK,       OK),
    "status":          row(OK,     OK,     OK,      OK,     OK,       OK),
    "export":          row(DENIED, OK,     OK,      OK,     OK,       OK),
    "export_log":      row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "write":           row(DENIED, OK,     OK,      DENIED, DENIED,   OK),
    "write_many":      row(DENIED, OK,     OK,      DENIED, DENIED,   OK),
    "ingest_conversation": row(DENIED, OK, OK,      DENIED, DENIED,   OK),
    "edit":            row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "delete":          row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "import_":         row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "import_from":     row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "remember":        row(OK,     DENIED, DENIED,  DENIED, DENIED,   DENIED),
    "update":          row(OK,     DENIED, DENIED,  DENIED, DENIED,   DENIED),
    "forget":          row(OK,     OK,     OK,      DENIED, DENIED,   DENIED),
    "propose":         row(OK,     DENIED, DENIED,  OK,     DENIED,   DENIED),
    "recall":          row(OK,     DENIED, DENIED,  DENIED, DENIED,   DENIED),
    "list_proposals":  row(OK,     OK,     OK,      OK,     OK,       OK),
    "list_tickets":    row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "get_ticket":      row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "approve":         row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "reject":          row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "expire_tickets":  row(DENIED, OK,     OK,      OK,     DENIED,   DENIED),
    "list_injections": row(OK,     OK,     OK,      OK,     OK,       OK),
    "observe":         row(OK,     OK,     OK,      DENIED, DENIED,   DENIED),
    "reset_session":   row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "session_status":  row(DENIED, OK,     OK,      OK,     OK,       OK),
    "fact_write":      row(OK,     OK,     OK,      DENIED, DENIED,   OK),
    "fact_retract":    row(OK,     OK,     OK,      DENIED, DENIED,   DENIED),
    "fact_read":       row(OK,     OK,     OK,      OK,     OK,       OK),
    "fact_history":    row(OK,     OK,     OK,      OK,     OK,       OK),
    "fact_confirm":    row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "index":           row(DENIED, OK,     OK,      OK,     DENIED,   DENIED),
    "query":           row(OK,     OK,     OK,      OK,     OK,       OK),
    "stores":          row(OK,     OK,     OK,      OK,     OK,       OK),
    "gate":            row(OK,     OK,     OK,      OK,     OK,       OK),
    "retier":          row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "add_project":     row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "rename_project":  row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "remove_project":  row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "add_agent":       row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "add_team":        row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "join_team":       row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "list_projects":   row(OK,     OK,     OK,      OK,     OK,       OK),
    "list_agents":     row(OK,     OK,     OK,      OK,     OK,       OK),
    "list_teams":      row(OK,     OK,     OK,      OK,     OK,       OK),
    "list_quarantine": row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "review":          row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "events":          row(DENIED, OK,     OK,      OK,     OK,       OK),
    "verify":          row(DENIED, OK,     OK,      OK,     DENIED,   DENIED),
    "certificate":     row(OK,     OK,     OK,      OK,     OK,       OK),
    "compact":         row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "chain_head":      row(OK,     OK,     OK,      OK,     OK,       OK),
    "reindex":         row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "index_vectors":   row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "migrate_to":      row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "grant":           row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "revoke":          row(DENIED, DENIED, OK,      DENIED, DENIED,   DENIED),
    "list_grants":     row(DENIED, OK,     OK,      OK,     OK,       OK),
    "hold":            row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "release_hold":    row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "held":            row(DENIED, OK,     OK,      OK,     OK,       OK),
    "mirror_status":   row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "mirror_retry":    row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "sweep":           row(DENIED, OK,     OK,      DENIED, DENIED,   DENIED),
    "graph":           row(OK,     OK,     OK,      OK,     OK,       OK),
    "link":            row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "decide":          row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "dedup":           row(DENIED, OK,     OK,      OK,     DENIED,   DENIED),
    "hygiene":         row(DENIED, DENIED, OK,      OK,     DENIED,   DENIED),
    "records":         row(OK,     OK,     OK,      OK,     OK,       OK),
    "record":          row(OK,     OK,     OK,      OK,     OK,       OK),
    "overview":        row(DENIED, OK,     OK,      OK,     OK,       OK),
    "timeline":        row(DENIED, OK,     OK,      OK,     OK,       OK),
}
# fmt: on


# -- what each call is given ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """What the set-up made, for the verbs' arguments: ids differ from store to store."""

    location: str  # the store: a SQLite file or a postgres:// URL with its schema
    home: Path  # the CLI's home (the SQLite store's directory)
    scratch: Path  # where exports and migrations go
    kept: str  # an agent's own memory to update
    dropped: str  # an agent's own memory to forget
    others: str  # another agent's own memory
    plan: str  # a shared memory, for a reviewer to retier
    to_approve: str  # a ticket ada proposed
    to_reject: str  # another
    held: str  # an agent's memory held for review (quarantined)
    held_hash: str  # its content_hash, which a review is bound to
    forgotten: str  # a global memory erased, whose certificate anyone may fetch
    erasable: str  # what the acting principal may erase: an agent's own, or a shared one
    claim: str  # a fact an anonymous caller wrote, held for review as a claim

    @property
    def snapshot(self) -> str:
        return str(self.scratch / "snapshot")

    @property
    def foreign(self) -> str:
        return str(self.scratch / "memory.jsonl")

    @property
    def export_to(self) -> str:
        return str(self.scratch / "exported")

    @property
    def copy(self) -> str:
        return str(self.scratch / "copy.db")


def set_up(
    operator: MemoryService, location: str, home: Path, scratch: Path, principal: str = ""
) -> Sample:
    """A realm where a call of each verb succeeds for a kind that may run it (``principal``:
    the one the calls act as; an agent erases its own memory, others a shared one)."""
    for project in ("webdev", "old-name", "doomed"):
        operator.add_project(project)
    operator.add_agent("ada")
    operator.add_agent("bea")
    operator.add_team("blue")
    plan = operator.write("plan", description="the launch plan", body="ship on friday").memory
    operator.write("to-edit", description="a note to edit", body="entries live ten minutes")
    operator.write("to-delete", description="a note to delete", body="gone soon")
    operator.write("spec", description="the spec", body="a snapshot's memory", project="webdev")
    operator.export(scratch / "snapshot", project="webdev")
    operator.delete("spec", project="webdev")  # the snapshot restores it
    (scratch / "memory.jsonl").write_text(
        '{"type": "entity", "name": "Lisbon", "entityType": "city", "observations": []}\n'
    )  # the MCP memory server's file import_from reads
    operator.write("roadmap", description="the roadmap", body="q3: search", project="webdev")
    operator.fact_write("bob", "employer", "acme")
    ada = operator.acting_as("agent:ada")
    kept = ada.remember("my locker is number twelve")
    dropped = ada.remember("the old locker code")
    others = operator.acting_as("agent:bea").remember("bea's own note")
    operator.observe("calculator", identity="agent:ada", session="s1")
    to_approve = ada.propose("lockers are numbered by desk")
    to_reject = ada.propose("lockers need no key")
    posture = Settings(
        anonymous_writes=operator.settings.anonymous_writes, llm_writes="quarantined"
    )
    held = MemoryService(  # the same store, under the posture that holds every agent write
        operator.backend, settings=posture, clock=operator.clock, principal="agent:ada"
    ).remember("the deploy key rotates weekly")
    erased = operator.write("to-forget", description="a note erased", body="a passing thought")
    operator.forget(erased.memory.id, compact=False)
    shared = operator.write("to-erase", description="a note to erase", body="soon nothing")
    claim = MemoryService(  # an unauthenticated writer, where the installation lets one write
        operator.backend, settings=Settings(anonymous_writes=True), clock=operator.clock,
        principal="anonymous",
    ).fact_write("carol", "desk", "by the window")  # fmt: skip
    return Sample(
        location,
        home,
        scratch,
        kept.id,
        dropped.id,
        others.id,
        plan.id,
        to_approve.id,
        to_reject.id,
        held.id,
        held.content_hash,
        erased.memory.id,
        dropped.id if principal.startswith("agent:") else shared.memory.id,
        claim.fact.id,
    )


# -- how each door reaches each verb ---------------------------------------------------------

PythonCall = Callable[[MemoryService, Sample], object]
CliCall = Callable[[Sample], list[str]]
RestCall = Callable[[Sample], dict[str, Any]]  # path parameters, and json= / params=
McpCall = Callable[[Sample], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Doors:
    """A verb at each door: its call, or None where the door does not reach it."""

    python: PythonCall
    cli: tuple[str, ...] | None = None  # the command's words
    cli_args: CliCall = lambda s: []  # noqa: E731
    cli_as: bool = False  # whether it takes --as (else it acts as operator:local)
    rest: tuple[str, str] | None = None  # (method, the route as OpenAPI names it)
    rest_args: RestCall = lambda s: {}  # noqa: E731
    mcp: str | None = None  # the tool, or the resource (its URI) read for the verb
    mcp_args: McpCall = lambda s: {}  # noqa: E731


_GRANT = ("agent:bea", "memory.read", "scope:global")  # a grant stored, then revoked
_GRANT_ARGS = dict(zip(("subject", "action", "on"), _GRANT, strict=True))


_ASSERTED = "production deploys require approval"
_INDEXED = {"entity": "identity:ops", "topic": "deployment", "store": "knowledge_graph",
            "fact": _ASSERTED}  # fmt: skip


_DRAFTED = "drafted from the plan"
_LINKED = {"source": "to-edit", "target": "plan", "type": "derived_from", "reason": _DRAFTED}


def _note(name: str) -> dict[str, Any]:
    return {"description": f"a note named {name}", "body": "hello"}


_TURNS = [{"speaker": "Ada", "text": "shall we ship?", "id": "t1"},
          {"speaker": "Bob", "text": "on Friday", "id": "t2"}]  # fmt: skip


def _transcript(s: Sample) -> str:
    """A JSONL transcript of ``_TURNS`` (its thread: the file's name, chat)."""
    path = s.scratch / "chat.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in _TURNS), encoding="utf-8")
    return str(path)


DOORS: dict[str, Doors] = {
    "search": Doors(
        lambda svc, s: svc.search(["launch plan"]),
        ("search",), lambda s: ["launch plan"],
        rest=("post", "/v1/memories/search"),
        rest_args=lambda s: {"json": {"queries": ["launch plan"]}},
        mcp="memory_search", mcp_args=lambda s: {"queries": ["launch plan"]},
    ),
    "read": Doors(
        lambda svc, s: svc.read("plan"),
        ("read",), lambda s: ["plan"],
        rest=("get", "/v1/memories/{name}/read"), rest_args=lambda s: {"name": "plan"},
        mcp="memory_read", mcp_args=lambda s: {"name": "plan"},
    ),
    "get": Doors(
        lambda svc, s: svc.get("plan"),
        ("get",), lambda s: ["plan"],
        rest=("get", "/v1/memories/{name}"), rest_args=lambda s: {"name": "plan"},
    ),
    "list_memories": Doors(
        lambda svc, s: svc.list_memories(),
        ("list",),
        rest=("get", "/v1/memories"),
    ),
    "context": Doors(
        lambda svc, s: svc.context(),
        ("context",), cli_as=True,
        rest=("post", "/v1/context"), rest_args=lambda s: {"json": {}},
        mcp=mcp.CONTEXT_URI,  # a resource, not a tool
    ),
    "status": Doors(lambda svc, s: svc.status(), ("status",), rest=("get", "/v1/status")),
    "export": Doors(
        lambda svc, s: svc.export(s.export_to),
        ("export",), lambda s: ["--directory", s.export_to],
    ),
    # the CLI's `export --format jsonl` (tests/doors/test_cli_receipt.py): the table's runs
    # add --format json to every command
    "export_log": Doors(lambda svc, s: svc.export_log(s.scratch / "log.jsonl")),
    "write": Doors(
        lambda svc, s: svc.write("new-note", **_note("new-note")),
        ("add",), lambda s: ["new-note", "-d", "a note named new-note", "--body", "hello"],
        rest=("put", "/v1/memories/{name}"),
        rest_args=lambda s: {"name": "new-note", "json": _note("new-note")},
        mcp="memory_write", mcp_args=lambda s: {"name": "new-note", **_note("new-note")},
    ),
    "write_many": Doors(
        lambda svc, s: svc.write_many([WriteRequest("batch-a", **_note("batch-a"))]),
    ),
    "ingest_conversation": Doors(
        lambda svc, s: svc.ingest_conversation(_TURNS, thread="chat"),
        ("ingest",), lambda s: [_transcript(s)], cli_as=True,
        rest=("post", "/v1/conversations"),
        rest_args=lambda s: {"json": {"thread": "chat", "turns": _TURNS}},
        mcp="ingest_conversation", mcp_args=lambda s: {"thread": "chat", "turns": _TURNS},
    ),
    "edit": Doors(
        lambda svc, s: svc.edit("to-edit", "ten", "five"),
        ("edit",), lambda s: ["to-edit", "--old", "ten", "--new", "five"],
        rest=("post", "/v1/memories/{name}/edit"),
        rest_args=lambda s: {"name": "to-edit", "json": {"old": "ten", "new": "five"}},
        mcp="memory_edit", mcp_args=lambda s: {"name": "to-edit", "old": "ten", "new": "five"},
    ),
    "delete": Doors(
        lambda svc, s: svc.delete("to-delete"),
        ("remove",), lambda s: ["to-delete"],
        rest=("delete", "/v1/memories/{name}"), rest_args=lambda s: {"name": "to-delete"},
        mcp="memory_delete", mcp_args=lambda s: {"name": "to-delete"},
    ),
    "import_": Doors(
        lambda svc, s: svc.import_(s.snapshot),
        ("import",), lambda s: [s.snapshot],
    ),
    "import_from": Doors(
        lambda svc, s: svc.import_from("mcp-memory", s.foreign, project="webdev"),
        ("import",), lambda s: ["--from", "mcp-memory", s.foreign, "-p", "webdev"],
    ),
    "remember": Doors(
        lambda svc, s: svc.remember("the build takes four minutes"),
        ("remember",), lambda s: ["the build takes four minutes"], cli_as=True,
        rest=("post", "/v1/remember"),
        rest_args=lambda s: {"json": {"text": "the build takes four minutes"}},
        mcp="memory_remember", mcp_args=lambda s: {"text": "the build takes four minutes"},
    ),
    "update": Doors(
        lambda svc, s: svc.update(s.kept, "my locker is number fourteen"),
        mcp="memory_update",
        mcp_args=lambda s: {"id": s.kept, "text": "my locker is number fourteen"},
    ),
    "forget": Doors(
        lambda svc, s: svc.forget(s.erasable),
        ("forget",), lambda s: [s.erasable], cli_as=True,
        rest=("post", "/v1/forget"), rest_args=lambda s: {"json": {"id": s.erasable}},
        mcp="memory_forget", mcp_args=lambda s: {"id": s.erasable},
    ),
    "propose": Doors(
        lambda svc, s: svc.propose("use tabs", target="global"),
        rest=("post", "/v1/proposals"),
        rest_args=lambda s: {"json": {"summary": "use tabs", "target": "global"}},
        mcp="memory_propose", mcp_args=lambda s: {"summary": "use tabs", "target": "global"},
    ),
    "recall": Doors(
        lambda svc, s: svc.recall(["locker"]),
        ("recall",), lambda s: ["locker"], cli_as=True,
        rest=("post", "/v1/recall"), rest_args=lambda s: {"json": {"queries": ["locker"]}},
        mcp="memory_recall", mcp_args=lambda s: {"queries": ["locker"]},
    ),
    "list_proposals": Doors(
        lambda svc, s: svc.list_proposals(),
        rest=("get", "/v1/proposals"),
    ),
    "list_tickets": Doors(
        lambda svc, s: svc.list_tickets(),
        ("ticket", "list"), cli_as=True,
        rest=("get", "/v1/tickets"),
        mcp="ticket_list",
    ),
    "get_ticket": Doors(
        lambda svc, s: svc.get_ticket(s.to_approve),
        ("ticket", "show"), lambda s: [s.to_approve], cli_as=True,
        rest=("get", "/v1/tickets/{ticket_id}"), rest_args=lambda s: {"ticket_id": s.to_approve},
        mcp="ticket_show", mcp_args=lambda s: {"ticket_id": s.to_approve},
    ),
    "approve": Doors(
        lambda svc, s: svc.approve(s.to_approve),
        ("ticket", "approve"), lambda s: [s.to_approve], cli_as=True,
        rest=("post", "/v1/tickets/{ticket_id}/approve"),
        rest_args=lambda s: {"ticket_id": s.to_approve},
        mcp="ticket_approve", mcp_args=lambda s: {"ticket_id": s.to_approve},
    ),
    "reject": Doors(
        lambda svc, s: svc.reject(s.to_reject, reason="no"),
        ("ticket", "reject"), lambda s: [s.to_reject, "--reason", "no"], cli_as=True,
        rest=("post", "/v1/tickets/{ticket_id}/reject"),
        rest_args=lambda s: {"ticket_id": s.to_reject, "json": {"reason": "no"}},
        mcp="ticket_reject", mcp_args=lambda s: {"ticket_id": s.to_reject, "reason": "no"},
    ),
    "expire_tickets": Doors(
        lambda svc, s: svc.expire_tickets(),
        ("ticket", "expire"), cli_as=True,
        rest=("post", "/v1/tickets/expire"),
        mcp="ticket_expire",
    ),
    "list_injections": Doors(
        lambda svc, s: svc.list_injections(),
        ("injections",), cli_as=True,
        rest=("get", "/v1/injections"),
    ),
    "observe": Doors(  # a trusted tool: the session stays clean for the verbs after it
        lambda svc, s: svc.observe("calculator", identity="agent:ada", session="s1"),
        ("session", "observe"),
        lambda s: ["calculator", "--identity", "agent:ada", "--session", "s1"], cli_as=True,
        rest=("post", "/v1/sessions/{key}/observations"),
        rest_args=lambda s: {"key": "s1", "json": {"tool": "calculator", "identity": "agent:ada"}},
    ),
    "reset_session": Doors(
        lambda svc, s: svc.reset_session("agent:ada", "s1", boundary="clear"),
        ("session", "reset"),
        lambda s: ["--identity", "agent:ada", "--session", "s1", "--boundary", "clear"],
        cli_as=True,
        rest=("post", "/v1/sessions/{key}/reset"),
        rest_args=lambda s: {"key": "s1", "json": {"identity": "agent:ada", "boundary": "clear"}},
    ),
    "session_status": Doors(
        lambda svc, s: svc.session_status("agent:ada", "s1"),
        ("session", "show"), lambda s: ["--identity", "agent:ada", "--session", "s1"],
        cli_as=True,
        rest=("get", "/v1/sessions/{key}"),
        rest_args=lambda s: {"key": "s1", "params": {"identity": "agent:ada"}},
    ),
    "fact_write": Doors(
        lambda svc, s: svc.fact_write("dana", "employer", "globex"),
        ("fact", "write"), lambda s: ["dana", "employer", "globex"], cli_as=True,
        rest=("post", "/v1/facts"),
        rest_args=lambda s: {
            "json": {"subject": "dana", "predicate": "employer", "value": "globex"}
        },
        mcp="fact_write",
        mcp_args=lambda s: {"subject": "dana", "predicate": "employer", "value": "globex"},
    ),
    "fact_retract": Doors(  # the fact the same actor wrote just before (VERBS order)
        lambda svc, s: svc.fact_retract("dana", "employer"),
        ("fact", "retract"), lambda s: ["dana", "employer"], cli_as=True,
        rest=("post", "/v1/facts/retract"),
        rest_args=lambda s: {"json": {"subject": "dana", "predicate": "employer"}},
        mcp="fact_retract", mcp_args=lambda s: {"subject": "dana", "predicate": "employer"},
    ),
    "fact_read": Doors(
        lambda svc, s: svc.fact_read("bob"),
        ("fact", "read"), lambda s: ["bob"], cli_as=True,
        rest=("get", "/v1/facts"), rest_args=lambda s: {"params": {"subject": "bob"}},
        mcp="fact_read", mcp_args=lambda s: {"subject": "bob"},
    ),
    "fact_history": Doors(
        lambda svc, s: svc.fact_history("bob", "employer"),
        ("fact", "history"), lambda s: ["bob", "employer"], cli_as=True,
        rest=("get", "/v1/facts/history"),
        rest_args=lambda s: {"params": {"subject": "bob", "predicate": "employer"}},
        mcp="fact_history", mcp_args=lambda s: {"subject": "bob", "predicate": "employer"},
    ),
    "index": Doors(
        lambda svc, s: svc.index("identity:ops", "deployment", "knowledge_graph", _ASSERTED),
        ("ledger", "index"),
        lambda s: ["identity:ops", "deployment", "knowledge_graph", "--fact", _ASSERTED],
        cli_as=True,
        rest=("post", "/v1/ledger"),
        rest_args=lambda s: {"json": _INDEXED},
        mcp="memory_index", mcp_args=lambda s: dict(_INDEXED),
    ),
    "query": Doors(
        lambda svc, s: svc.query("identity:ops"),
        ("ledger", "query"), lambda s: ["--entity", "identity:ops"], cli_as=True,
        rest=("get", "/v1/ledger"), rest_args=lambda s: {"params": {"entity": "identity:ops"}},
        mcp="memory_query", mcp_args=lambda s: {"entity": "identity:ops"},
    ),
    "stores": Doors(
        lambda svc, s: svc.stores(),
        ("ledger", "stores"), cli_as=True,
        rest=("get", "/v1/ledger/stores"),
        mcp="memory_stores",
    ),
    "gate": Doors(
        lambda svc, s: svc.gate("bob", "employer"),
        ("gate",), lambda s: ["bob", "employer"], cli_as=True,
        rest=("get", "/v1/gate"),
        rest_args=lambda s: {"params": {"subject": "bob", "predicate": "employer"}},
        mcp="memory_gate", mcp_args=lambda s: {"subject": "bob", "predicate": "employer"},
    ),
    "retier": Doors(  # lowered: the verbs after it read the plan at any trust
        lambda svc, s: svc.retier(s.plan, "observed", reason="not checked"),
        ("retier",), lambda s: [s.plan, "observed", "--reason", "not checked"], cli_as=True,
        rest=("post", "/v1/memories/{memory_id}/retier"),
        rest_args=lambda s: {
            "memory_id": s.plan, "json": {"trust": "observed", "reason": "not checked"}
        },
    ),
    "add_project": Doors(
        lambda svc, s: svc.add_project("mine"),
        ("project", "add"), lambda s: ["mine"],
        rest=("post", "/v1/projects"), rest_args=lambda s: {"json": {"name": "mine"}},
    ),
    "rename_project": Doors(
        lambda svc, s: svc.rename_project("old-name", "new-name"),
        ("project", "rename"), lambda s: ["old-name", "new-name"],
        rest=("post", "/v1/projects/{name}/rename"),
        rest_args=lambda s: {"name": "old-name", "json": {"name": "new-name"}},
    ),
    "remove_project": Doors(
        lambda svc, s: svc.remove_project("doomed"),
        ("project", "remove"), lambda s: ["doomed"],
        rest=("delete", "/v1/projects/{name}"), rest_args=lambda s: {"name": "doomed"},
    ),
    "add_agent": Doors(
        lambda svc, s: svc.add_agent("eve"),
        ("agent", "add"), lambda s: ["eve"],
        rest=("post", "/v1/agents"), rest_args=lambda s: {"json": {"name": "eve"}},
    ),
    "add_team": Doors(
        lambda svc, s: svc.add_team("red"),
        ("team", "add"), lambda s: ["red"],
        rest=("post", "/v1/teams"), rest_args=lambda s: {"json": {"name": "red"}},
    ),
    "join_team": Doors(
        lambda svc, s: svc.join_team("blue", "ada"),
        ("team", "join"), lambda s: ["blue", "ada"],
        rest=("put", "/v1/teams/{team}/members/{agent}"),
        rest_args=lambda s: {"team": "blue", "agent": "ada"},
    ),
    "list_projects": Doors(
        lambda svc, s: svc.list_projects(), ("project", "list"), rest=("get", "/v1/projects")
    ),
    "list_agents": Doors(
        lambda svc, s: svc.list_agents(), ("agent", "list"), rest=("get", "/v1/agents")
    ),
    "list_teams": Doors(
        lambda svc, s: svc.list_teams(), ("team", "list"), rest=("get", "/v1/teams")
    ),
    "list_quarantine": Doors(
        lambda svc, s: svc.list_quarantine(),
        ("quarantine", "list"), cli_as=True,
        rest=("get", "/v1/quarantine"),
        mcp="memory_list_quarantine",
    ),
    "review": Doors(
        lambda svc, s: svc.review(s.held, "release", s.held_hash),
        ("review",), lambda s: [s.held, "--release", "--hash", s.held_hash], cli_as=True,
        rest=("post", "/v1/memories/{id}/review"),
        rest_args=lambda s: {
            "id": s.held, "json": {"verdict": "release", "expected_content_hash": s.held_hash}
        },
        mcp="memory_review",
        mcp_args=lambda s: {
            "id": s.held, "verdict": "release", "expected_content_hash": s.held_hash
        },
    ),
    "events": Doors(lambda svc, s: svc.events(), rest=("get", "/v1/events")),
    "verify": Doors(lambda svc, s: svc.verify(), ("verify",)),
    "fact_confirm": Doors(
        lambda svc, s: svc.fact_confirm(s.claim),
        ("fact", "confirm"), lambda s: [s.claim], cli_as=True,
        rest=("post", "/v1/facts/{fact_id}/confirm"), rest_args=lambda s: {"fact_id": s.claim},
        mcp="fact_confirm", mcp_args=lambda s: {"id": s.claim},
    ),
    "certificate": Doors(
        lambda svc, s: svc.certificate(s.forgotten),
        ("certificate",), lambda s: [s.forgotten], cli_as=True,
        rest=("get", "/v1/certificates/{target}"), rest_args=lambda s: {"target": s.forgotten},
    ),
    "compact": Doors(lambda svc, s: svc.compact(), ("compact",), rest=("post", "/v1/compact")),
    "chain_head": Doors(
        lambda svc, s: svc.chain_head(), ("receipt", "head"), rest=("get", "/v1/chain/head")
    ),
    "reindex": Doors(lambda svc, s: svc.reindex(), ("reindex",)),
    "index_vectors": Doors(lambda svc, s: svc.index_vectors()),  # (retain serve's, at start)
    "migrate_to": Doors(
        lambda svc, s: svc.migrate_to(SqliteBackend(s.copy)),
        ("migrate",), lambda s: ["--from", s.location, "--to", s.copy],
    ),
    "grant": Doors(
        lambda svc, s: svc.grant(*_GRANT),
        ("access", "grant"), lambda s: list(_GRANT), cli_as=True,
        rest=("post", "/v1/access/grants"),
        rest_args=lambda s: {"json": dict(_GRANT_ARGS)},
        mcp="access_grant", mcp_args=lambda s: dict(_GRANT_ARGS),
    ),
    "revoke": Doors(  # the grant the same actor stored just before (VERBS order)
        lambda svc, s: svc.revoke(*_GRANT),
        ("access", "revoke"), lambda s: list(_GRANT), cli_as=True,
        rest=("delete", "/v1/access/grants"),
        rest_args=lambda s: {"params": dict(_GRANT_ARGS)},
        mcp="access_revoke", mcp_args=lambda s: dict(_GRANT_ARGS),
    ),
    "list_grants": Doors(
        lambda svc, s: svc.list_grants(),
        ("access", "list"), cli_as=True, rest=("get", "/v1/access/grants"), mcp="access_list",
    ),
    "hold": Doors(
        lambda svc, s: svc.hold(s.plan, reason="matter 42"),
        ("hold",), lambda s: [s.plan, "--reason", "matter 42"], cli_as=True,
        rest=("post", "/v1/memories/{memory_id}/hold"),
        rest_args=lambda s: {"memory_id": s.plan, "json": {"reason": "matter 42"}},
        mcp="memory_hold", mcp_args=lambda s: {"id": s.plan, "reason": "matter 42"},
    ),
    "release_hold": Doors(  # the hold the same actor placed just before (VERBS order)
        lambda svc, s: svc.release_hold(s.plan, reason="closed"),
        ("release",), lambda s: [s.plan, "--reason", "closed"], cli_as=True,
        rest=("delete", "/v1/memories/{memory_id}/hold"),
        rest_args=lambda s: {"memory_id": s.plan, "params": {"reason": "closed"}},
        mcp="memory_release", mcp_args=lambda s: {"id": s.plan, "reason": "closed"},
    ),
    "held": Doors(
        lambda svc, s: svc.held(s.plan),
        ("held",), lambda s: [s.plan], cli_as=True,
        rest=("get", "/v1/memories/{memory_id}/hold"), rest_args=lambda s: {"memory_id": s.plan},
        mcp="memory_held", mcp_args=lambda s: {"id": s.plan},
    ),
    "mirror_status": Doors(lambda svc, s: svc.mirror_status(), ("mirrors", "status")),
    "mirror_retry": Doors(lambda svc, s: svc.mirror_retry(), ("mirrors", "retry")),
    "sweep": Doors(  # of what was learned before the set-up: nothing goes
        lambda svc, s: svc.sweep(reason="retention", before="2000-01-01"),
        ("sweep",), lambda s: ["--before", "2000-01-01", "--reason", "retention"], cli_as=True,
        rest=("post", "/v1/sweep"),
        rest_args=lambda s: {"json": {"reason": "retention", "before": "2000-01-01"}},
        mcp="memory_sweep", mcp_args=lambda s: {"reason": "retention", "before": "2000-01-01"},
    ),
    "graph": Doors(
        lambda svc, s: svc.graph("plan"),
        ("graph",), lambda s: ["plan"], cli_as=True,
        rest=("get", "/v1/memories/{memory_id}/graph"), rest_args=lambda s: {"memory_id": "plan"},
        mcp="memory_graph", mcp_args=lambda s: {"memory": "plan"},
    ),
    "link": Doors(
        lambda svc, s: svc.link("to-edit", "plan", "derived_from", reason=_DRAFTED),
        ("link",), lambda s: ["to-edit", "plan", "derived_from", "--reason", _DRAFTED],
        cli_as=True,
        rest=("post", "/v1/relations"), rest_args=lambda s: {"json": dict(_LINKED)},
        mcp="memory_link", mcp_args=lambda s: dict(_LINKED),
    ),
    "decide": Doors(  # the pair the same actor linked just before (VERBS order): both stand
        lambda svc, s: svc.decide("to-edit", "keep", target="plan"),
        ("decide",), lambda s: ["to-edit", "keep", "--target", "plan"], cli_as=True,
        rest=("post", "/v1/memories/{memory_id}/decide"),
        rest_args=lambda s: {"memory_id": "to-edit", "json": {"action": "keep", "target": "plan"}},
        mcp="memory_decide",
        mcp_args=lambda s: {"memory": "to-edit", "action": "keep", "target": "plan"},
    ),
    "dedup": Doors(
        lambda svc, s: svc.dedup(),
        ("dedup",), cli_as=True,
        rest=("post", "/v1/dedup"), rest_args=lambda s: {"json": {}},
        mcp="memory_dedup",
    ),
    "hygiene": Doors(
        lambda svc, s: svc.hygiene(),
        ("hygiene",), cli_as=True,
        rest=("get", "/v1/hygiene"),
        mcp="memory_hygiene",
    ),
    "records": Doors(lambda svc, s: svc.records(), rest=("get", "/v1/records")),
    "record": Doors(
        lambda svc, s: svc.record(s.plan),
        rest=("get", "/v1/records/{id}"), rest_args=lambda s: {"id": s.plan},
    ),
    "overview": Doors(lambda svc, s: svc.overview(), rest=("get", "/v1/overview")),
    "timeline": Doors(lambda svc, s: svc.timeline(), rest=("get", "/v1/timeline")),
}  # fmt: skip
VERBS = tuple(DOORS)  # the order each (column, door) runs them in

# CLI commands that are no verb of the table, and why.
CLI_NOT_VERBS = {
    ("show",): "get's body alone: the verb of `get`",
    ("serve",): "starts the REST and MCP doors",
    ("mcp",): "starts the MCP door over stdio",
    ("mcp", "config"): "prints a client's configuration",
    ("receipt", "verify"): "checks a receipt with a public key alone: no store is opened",
    ("receipt", "public-key"): "prints the public half of the configured signing key",
    ("receipt", "keygen"): "makes a signing key in a file: no store is opened",
}

DOOR_NAMES = ("python", "cli", "rest", "mcp")


def reaches(door: str, verb: str, column: str, doors: Doors | None = None) -> bool:
    """Whether ``door`` can run ``verb`` as the principal of ``column`` (the table's claim)."""
    doors = doors or DOORS[verb]
    if door == "python":
        return True
    if door == "cli":
        return doors.cli is not None and (doors.cli_as or KIND_OF[column] == "operator")
    if door == "rest":
        return doors.rest is not None
    return doors.mcp is not None


# -- running a (column, door) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    outcome: str  # "ok", or the error code
    wrote: bool  # whether the store changed


class Runs:
    """The cells of one backend, run a (column, door) at a time on a fresh store each."""

    def __init__(self, backend: str, base: Path, postgres: Callable[[], str]) -> None:
        self.backend = backend
        self.base = base
        self.postgres = postgres
        self._cells: dict[tuple[str, str], dict[str, Cell]] = {}

    def cell(self, column: str, door: str, verb: str) -> Cell:
        if (column, door) not in self._cells:
            self._cells[column, door] = self._run(column, door)
        return self._cells[column, door][verb]

    def _run(self, column: str, door: str) -> dict[str, Cell]:
        where = Path(tempfile.mkdtemp(prefix=f"{column}-{door}-", dir=self.base))
        home, scratch = where / "home", where / "scratch"
        scratch.mkdir()
        home.mkdir()
        settings = settings_of(column)
        if settings.anonymous_writes:  # what the CLI reads its settings from
            (home / "config.toml").write_text("[access]\nanonymous_writes = true\n")
        if self.backend == "sqlite":
            location = str(home / "retain.db")
        else:
            location = fresh_schema(self.postgres())
        clock = ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
        operator = MemoryService(
            open_backend(location), settings=settings, clock=clock, principal="operator:set-up"
        )
        try:
            sample = set_up(operator, location, home, scratch, PRINCIPALS[column])
            with door_of(door, operator, PRINCIPALS[column], sample) as call:
                cells = {}
                for verb in VERBS:
                    if not reaches(door, verb, column):
                        continue
                    # a refusal must write nothing (an unexpected outcome fails anyway)
                    refused = EXPECTED[verb][column] != OK
                    before = store_state(operator) if refused else None
                    outcome = call(verb)
                    wrote = refused and outcome != OK and store_state(operator) != before
                    cells[verb] = Cell(outcome, wrote)
                return cells
        finally:
            operator.close()


DoorCall = Callable[..., str]  # (a verb, how the doors call it: DOORS's by default) → its outcome


def door_of(
    door: str, operator: MemoryService, principal: str, s: Sample
) -> contextlib.AbstractContextManager[DoorCall]:
    return {"python": _python, "cli": _cli, "rest": _rest, "mcp": _mcp}[door](
        operator, principal, s
    )


@contextlib.contextmanager
def _python(operator: MemoryService, principal: str, s: Sample) -> Iterator[DoorCall]:
    session = operator.acting_as(principal)

    def call(verb: str, doors: Doors | None = None) -> str:
        try:
            (doors or DOORS[verb]).python(session, s)
        except RetainError as exc:
            return exc.code
        return OK

    yield call


@contextlib.contextmanager
def _cli(operator: MemoryService, principal: str, s: Sample) -> Iterator[DoorCall]:
    runner = CliRunner()
    where = ["--home", str(s.home), "--format", "json"]
    url = ["--database-url", s.location] if s.location.startswith("postgres") else []
    env = {"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None, "COLUMNS": "200", "NO_COLOR": "1"}

    def call(verb: str, given: Doors | None = None) -> str:
        doors = given or DOORS[verb]
        assert doors.cli is not None
        acting = ["--as", principal] if doors.cli_as else []
        # migrate opens the two stores it names, not a home's
        store = [] if verb == "migrate_to" else url
        args = [*doors.cli, *doors.cli_args(s), *acting, *where, *store]
        result = runner.invoke(cli, args, env=env)
        if result.exit_code == 0:
            return OK
        try:
            return str(json.loads(result.stderr)["error"]["code"])
        except (ValueError, KeyError):
            return f"exit {result.exit_code}: {result.output} {result.exception!r}"

    yield call


@contextlib.contextmanager
def _rest(operator: MemoryService, principal: str, s: Sample) -> Iterator[DoorCall]:
    tokens = {f"token-{kind}": p for kind, p in PRINCIPALS.items()}
    by_principal = {p: t for t, p in tokens.items()}
    with TestClient(http.create_app(operator, tokens=tokens)) as client:
        headers = {"Authorization": f"Bearer {by_principal[principal]}"}

        def call(verb: str, given: Doors | None = None) -> str:
            doors = given or DOORS[verb]
            assert doors.rest is not None
            method, route = doors.rest
            given = dict(doors.rest_args(s))
            options = {k: given.pop(k) for k in ("json", "params") if k in given}
            response = client.request(
                method.upper(), route.format(**given), headers=headers, **options
            )
            if response.status_code < 400:
                return OK
            return str(response.json()["error"]["code"])

        yield call


def mcp_server(operator: MemoryService, principal: str) -> mcp.Server:
    return mcp.create_server(http.Services(operator).of, local_principal=principal)


def listed_tools(server: mcp.Server) -> set[str]:
    async def run() -> set[str]:
        async with Client(server, mode="legacy") as client:
            return {t.name for t in (await client.list_tools()).tools}

    return anyio.run(run)


def listed_resources(server: mcp.Server) -> set[str]:
    async def run() -> set[str]:
        async with Client(server, mode="legacy") as client:
            return {str(r.uri) for r in (await client.list_resources()).resources}

    return anyio.run(run)


@contextlib.contextmanager
def _mcp(operator: MemoryService, principal: str, s: Sample) -> Iterator[DoorCall]:
    server = mcp_server(operator, principal)

    def call(verb: str, given: Doors | None = None) -> str:
        doors = given or DOORS[verb]
        assert doors.mcp is not None
        tool, arguments = doors.mcp, doors.mcp_args(s)

        async def run() -> str:
            async with Client(server, mode="legacy") as client:
                if tool == mcp.CONTEXT_URI:
                    read = await client.read_resource(tool)
                    return OK if read.contents else f"no contents: {read!r}"
                result = await client.call_tool(tool, arguments)
            if not result.is_error:
                return OK
            return str((result.structured_content or {})["error"]["code"])

        return anyio.run(run)

    yield call


# -- the cells ----------------------------------------------------------------------------

# Where a door disagrees with the table: (verb, column, door) → why (each a strict xfail).
DISAGREEMENTS: dict[tuple[str, str, str], str] = {}


def _cells() -> Iterator[Any]:
    for door in DOOR_NAMES:
        for verb in VERBS:
            for column in COLUMNS:
                if not reaches(door, verb, column):
                    continue
                why = DISAGREEMENTS.get((verb, column, door))
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                yield pytest.param(verb, column, door, marks=marks, id=f"{door}-{verb}-{column}")


@pytest.fixture(scope="module", params=BACKENDS)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    backend = str(request.param)
    base = tmp_path_factory.mktemp(f"matrix-{backend}")
    return Runs(backend, base, lambda: str(request.getfixturevalue("postgres_url")))


@pytest.mark.parametrize(("verb", "column", "door"), list(_cells()))
def test_each_door_gives_the_tables_outcome(runs: Runs, verb: str, column: str, door: str) -> None:
    cell = runs.cell(column, door, verb)
    assert cell.outcome == EXPECTED[verb][column], (verb, column, door)
    if cell.outcome != OK:
        assert not cell.wrote, f"a refused {verb} as {column} through {door} changed the store"


# -- the table's claims about the doors -----------------------------------------------------


def test_the_table_has_every_public_verb_and_every_kind() -> None:
    from retain import fields
    from retain.service import policy
    from retain.service.actor import Kind, kind_of

    public = {
        name
        for name, member in vars(MemoryService).items()
        if not name.startswith("_") and fields.is_method(member)
    }
    assert set(EXPECTED) == set(DOORS) == public - policy.NOT_VERBS
    assert set(KINDS) == set(Kind)  # every kind of principal has its column
    assert all(kind_of(PRINCIPALS[column]) == KIND_OF[column] for column in COLUMNS)
    assert all(set(outcomes) == set(COLUMNS) for outcomes in EXPECTED.values())


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        words = (*prefix, name)
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                yield words, command
            yield from _commands(command, words)
        else:
            yield words, command


def test_the_cli_has_the_commands_the_table_names_and_no_other() -> None:
    load_commands()  # (a command run imports its own module alone)
    commands = dict(_commands(cli))
    named = {d.cli: verb for verb, d in DOORS.items() if d.cli is not None}
    assert set(commands) == set(named) | set(CLI_NOT_VERBS)
    for words, verb in named.items():
        takes_as = any("--as" in p.opts for p in commands[words].params)
        assert takes_as == DOORS[verb].cli_as, (words, "acts as operator:local without --as")


def test_the_rest_api_has_the_routes_the_table_names_and_no_other(tmp_path: Path) -> None:
    service = MemoryService(
        SqliteBackend(tmp_path / "retain.db"), clock=ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    )
    try:
        paths = TestClient(http.create_app(service)).get("/openapi.json").json()["paths"]
    finally:
        service.close()
    routes = {(method, path) for path, methods in paths.items() for method in methods}
    named = {d.rest for d in DOORS.values() if d.rest is not None}
    assert routes == named  # every route is a verb's


def test_the_mcp_server_has_the_tools_the_table_names_and_no_other(tmp_path: Path) -> None:
    services = {
        column: MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=settings_of(column))
        for column in COLUMNS
    }
    try:
        services["operator"].add_agent("ada")
        server = mcp_server(services["operator"], "operator:alice")
        tools = {d.mcp: v for v, d in DOORS.items() if d.mcp and d.mcp != mcp.CONTEXT_URI}
        assert server.verbs == tools
        assert listed_resources(server) == {mcp.CONTEXT_URI}  # the context, read as one
        for column, principal in PRINCIPALS.items():
            shown = listed_tools(mcp_server(services[column], principal))
            may = {t for t, v in tools.items() if EXPECTED[v][column] == OK}
            assert shown == may, column  # a principal is shown the tools it may call
    finally:
        for service in services.values():
            service.close()


def test_a_cli_command_without_as_acts_as_the_local_operator(tmp_path: Path) -> None:
    home = tmp_path / "home"
    args = ["project", "add", "mine", "--home", str(home), "--format", "json"]
    result = CliRunner().invoke(cli, args, env={"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None})
    assert result.exit_code == 0, result.output
    service = MemoryService(SqliteBackend(home / "retain.db"))
    try:
        added = [e for e in service.events() if e.kind == "project_add"]
        assert [e.principal for e in added] == [LOCAL_OPERATOR]
    finally:
        service.close()


# -- who acts: every door knows the same forms of principal --------------------------------

KNOWN_FORMS = ("agent:ada", "app:ci", "operator:alice", "steward", "anonymous")
UNKNOWN_FORMS = ("bogus", "agent:", "app:", "operator:", "stewards", "agentada", "Anonymous")


@pytest.mark.parametrize("form", KNOWN_FORMS + UNKNOWN_FORMS)
def test_every_door_knows_the_same_forms_of_principal(tmp_path: Path, form: str) -> None:
    """A principal of no known form is refused ``invalid_value`` where a door is told who
    acts (Python's ``acting_as``, the CLI's ``--as``, which ``retain mcp`` takes too) and
    as a tokens file that names it (the REST and MCP doors over HTTP); a known one is
    taken by every door. None acts as someone else (an unknown form is no anonymous)."""
    home = tmp_path / "home"
    operator = MemoryService(SqliteBackend(home / "retain.db"))
    try:
        operator.add_agent("ada")
        before = store_state(operator)
        try:
            operator.acting_as(form)
            python = OK
        except RetainError as exc:
            python = exc.code
        cli_outcomes = set()
        for command in (["remember", "a note"], ["context"], ["mcp"]):
            args = [*command, "--as", form, "--home", str(home)]
            if command != ["mcp"]:
                args += ["--format", "json"]
            elif form in KNOWN_FORMS:
                continue  # it would serve stdio: its --as is the others' (a test holds it)
            result = CliRunner().invoke(
                cli, args, env={"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None}
            )
            if result.exit_code == 0:
                cli_outcomes.add(OK)
            elif "[invalid_value]" in result.stderr:  # mcp has no --format
                cli_outcomes.add("invalid_value")
            else:
                cli_outcomes.add(json.loads(result.stderr)["error"]["code"])
        try:
            http.parse_tokens(f"s3cret={form}", "tokens")
            rest = OK
        except RetainError as exc:
            rest = exc.code
        if form in KNOWN_FORMS:
            assert (python, rest) == (OK, OK)
            # remember is an agent's: the others are refused it as who they are
            assert cli_outcomes <= {OK, DENIED}, cli_outcomes
        else:
            assert (python, cli_outcomes, rest) == (
                "invalid_value",
                {"invalid_value"},
                "config_invalid",
            )
            assert store_state(operator) == before
    finally:
        operator.close()


# -- the view, through every door -----------------------------------------------------------

NOT_FOUND = "not_found"
_READ_ROUTE = ("get", "/v1/memories/{name}/read")

# What an actor may not see is not found (its existence not disclosed), at every door that
# reaches the call as that principal: (verb, column, the call at each door, the outcome).
VIEW_CASES: dict[str, tuple[str, str, Doors, str]] = {
    "an agent gets a project memory off the project": ("get", "agent", Doors(
        lambda svc, s: svc.get("roadmap"),
        rest=("get", "/v1/memories/{name}"), rest_args=lambda s: {"name": "roadmap"},
    ), NOT_FOUND),
    "an agent reads a project memory off the project": ("read", "agent", Doors(
        lambda svc, s: svc.read("roadmap"),
        rest=_READ_ROUTE, rest_args=lambda s: {"name": "roadmap"},
        mcp="memory_read", mcp_args=lambda s: {"name": "roadmap"},
    ), NOT_FOUND),
    "an agent reads a project memory on the project": ("read", "agent", Doors(
        lambda svc, s: svc.read("roadmap", project="webdev"),
        rest=_READ_ROUTE,
        rest_args=lambda s: {"name": "roadmap", "params": {"project": "webdev"}},
        mcp="memory_read", mcp_args=lambda s: {"name": "roadmap", "project": "webdev"},
    ), OK),
    "an agent forgets another agent's memory": ("forget", "agent", Doors(
        lambda svc, s: svc.forget(s.others),
        ("forget",), lambda s: [s.others], cli_as=True,
        rest=("post", "/v1/forget"), rest_args=lambda s: {"json": {"id": s.others}},
        mcp="memory_forget", mcp_args=lambda s: {"id": s.others},
    ), NOT_FOUND),
    "an agent updates another agent's memory": ("update", "agent", Doors(
        lambda svc, s: svc.update(s.others, "mine now"),
        mcp="memory_update", mcp_args=lambda s: {"id": s.others, "text": "mine now"},
    ), NOT_FOUND),
    "an app gets a quarantined memory by id": ("get", "app", Doors(
        lambda svc, s: svc.get(s.held),
        rest=("get", "/v1/memories/{name}"), rest_args=lambda s: {"name": s.held},
    ), NOT_FOUND),
    "its author reads its quarantined memory by id": ("read", "agent", Doors(
        lambda svc, s: svc.read(s.held),
        rest=_READ_ROUTE, rest_args=lambda s: {"name": s.held},
        mcp="memory_read", mcp_args=lambda s: {"name": s.held},
    ), NOT_FOUND),
    "an app reads a quarantined memory in the log": ("events", "app", Doors(
        lambda svc, s: _withheld(svc.events(memory_id=s.held)),
        rest=("get", "/v1/events"), rest_args=lambda s: {"params": {"memory_id": s.held}},
    ), OK),
    "an app reads another agent's memory in the log": ("events", "app", Doors(
        lambda svc, s: _withheld(svc.events(memory_id=s.others)),
        rest=("get", "/v1/events"), rest_args=lambda s: {"params": {"memory_id": s.others}},
    ), OK),
}  # fmt: skip


def _withheld(events: list[Any]) -> None:
    assert events and all(e.payload is None and e.withheld for e in events)


# Where the service (every door alike) answers otherwise: case → why (each a strict xfail).
VIEW_DISAGREEMENTS: dict[str, str] = {}


def _view_cases() -> Iterator[Any]:
    for case in VIEW_CASES:
        why = VIEW_DISAGREEMENTS.get(case)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(case, marks=marks, id=case)


@pytest.mark.parametrize("case", list(_view_cases()))
def test_every_door_gives_the_views_answer(
    make_service: ServiceFactory, store_url: str, tmp_path: Path, case: str
) -> None:
    verb, column, doors, expected = VIEW_CASES[case]
    home = Path(store_url).parent if not store_url.startswith("postgres") else tmp_path / "home"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    operator = make_service()
    sample = set_up(operator, store_url, home, scratch)
    outcomes = {}
    for door in DOOR_NAMES:
        if not reaches(door, verb, column, doors):
            continue
        before = store_state(operator)
        with door_of(door, operator, PRINCIPALS[column], sample) as call:
            outcomes[door] = call(verb, doors)
        if expected != OK:
            assert store_state(operator) == before, door
    assert len(outcomes) > 1  # a case of one door compares nothing
    assert outcomes == dict.fromkeys(outcomes, expected)
