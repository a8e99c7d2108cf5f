"""The agent-facing commands: an agent's own memory (``remember``, ``recall``; its
``forget`` is the custody module's), the memory section of its context (``context``)
and the ledger of what was rendered into whose context (``injections``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import (
    Table,
    add_row,
    emit_json,
    emit_rows,
    moment,
    out,
    say,
    say_held,
    warn,
    write_stored,
)
from retain.doors.cli.refusal import refusals
from retain.doors.cli.root import (
    acting_option,
    as_option,
    cli,
    evidence_of,
    evidence_options,
    format_option,
    home_option,
    min_trust_option,
    opened,
    project_option,
)
from retain.errors import InvalidValue

if TYPE_CHECKING:
    from pathlib import Path

    from retain.doors.hooks import HookEvent

# ``[context] recall_failure_policy``'s values, as ``config.RECALL_POLICIES`` has them (the
# settings are not imported for `retain --help`; tests/test_startup.py holds the two equal)
RECALL_POLICIES = ("skip", "fail")

# -- an agent's own memory ------------------------------------------------------------------


@cli.command()
@click.argument("text")
@as_option
@click.option("--description", "-d", help="One line; the text's first line otherwise.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--priority", type=int, help="0 (most important) to 9; default 5.")
@click.option("--subject", help="Who or what it is about.")
@click.option("--thread", help="The conversation it belongs to.")
@click.option("--valid-from", help="When it began to hold: RFC 3339, or YYYY-MM-DD.")
@click.option("--redact", is_flag=True, help="Write each secret found as [redacted:KIND].")
@evidence_options
@home_option
@format_option
def remember(
    text: str,
    principal: str,
    description: str | None,
    tags: tuple[str, ...],
    priority: int | None,
    subject: str | None,
    thread: str | None,
    valid_from: str | None,
    redact: bool,
    evidence: str | None,
    evidence_path: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Save TEXT in the acting agent's own memory (its scope agent:NAME)."""
    with opened(home, fmt, principal) as service:
        memory = service.remember(
            text,
            description=description,
            tags=list(tags) if tags else None,
            priority=priority,
            subject=subject,
            thread=thread,
            valid_from=valid_from,
            redact=redact,
            evidence=evidence_of(evidence, evidence_path),
        )
        if fmt == "json":
            emit_json(memory.to_dict(moment(), body=True))
        else:
            say(f"Remembered {memory.id} ({memory.scope}).")
            say_held(memory.status.value, memory.quarantine_reason)


@cli.command()
@click.argument("queries", nargs=-1, required=True)
@as_option
@project_option("Recall as a session on this project (its tier besides the agent's own).")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="At most this many.")
@click.option("--budget", type=int, help="Tokens the results may fill.")
@min_trust_option
@home_option
@format_option
def recall(
    queries: tuple[str, ...],
    principal: str,
    project: str | None,
    limit: int,
    budget: int | None,
    min_trust: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Search what the acting agent sees: global, the project, its teams and its own."""
    with opened(home, fmt, principal) as service:
        result = service.recall(
            list(queries), project=project, limit=limit, budget_tokens=budget, min_trust=min_trust
        )
        now = moment()
        if fmt == "json":
            emit_json(result.to_dict(now))
            return
        say(result.summary)
        table = Table()
        for column in ("Id", "Scope", "Description", "Match"):
            table.add_column(column, overflow="fold")
        for hit in result.hits:
            m = hit.memory
            shown = m.short_body if m.short_body and m.short_body != m.description else ""
            text = m.description + (f"\n{shown}" if shown else "")
            add_row(table, m.name or m.id, m.scope, text, ", ".join(hit.senses))
        out.print(table)


# -- the memory section of an agent's context ---------------------------------------------


@cli.command()
@acting_option
@project_option("Render for a session on this project (its tier after the global one).")
@click.option("--turn", help="The turn's text: memories matching it are recalled and quoted.")
@click.option("--session", help="The session's key: later renders show only what changed.")
@click.option("--restate", is_flag=True, help="State the whole section (after a compaction).")
@click.option(
    "--recall-timeout-ms",
    type=int,
    help="How long recall may take; default [context] recall_timeout_ms (500).",
)
@click.option(
    "--recall-failure",
    type=click.Choice(RECALL_POLICIES),
    help="When recall is late or fails: skip it or fail; default [context] "
    "recall_failure_policy (skip).",
)
@min_trust_option
@click.option(
    "--from-hook",
    is_flag=True,
    help="Read a SessionStart or UserPromptSubmit hook event from standard input (its "
    "session_id, and prompt as the turn) and answer as the host's hook: the section as "
    "additionalContext.",
)
@home_option
@format_option
def context(
    principal: str,
    project: str | None,
    turn: str | None,
    session: str | None,
    restate: bool,
    recall_timeout_ms: int | None,
    recall_failure: str | None,
    min_trust: str | None,
    from_hook: bool,
    home: Path | None,
    fmt: str,
) -> None:
    """Print the memory section to place in front of an agent."""
    event = None
    if from_hook:
        if turn is not None or session is not None or restate:
            raise click.UsageError("--from-hook reads the turn and the session from the event")
        from retain.doors.hooks import RESTATED, hook_output

        with refusals(fmt):
            event = _context_event()
        turn, session = event.prompt, event.session
        restate = event.boundary in RESTATED
    with opened(home, fmt, principal) as service:
        result = service.context(
            project=project,
            turn=turn,
            session=session,
            restate=restate,
            recall_timeout_ms=recall_timeout_ms,
            recall_failure_policy=recall_failure,
            min_trust=min_trust,
        )
        if event is not None:  # the host reads its own form, whatever --format says
            emit_json(hook_output(event.event, result.text))
            if result.recall_note:
                warn(f"note: {result.recall_note}; rendered without recall")
            return
        if fmt == "json":
            emit_json(result.to_dict())
            return
        write_stored(result.text, raw=False)
        if result.recall_note:
            warn(f"note: {result.recall_note}; rendered without recall")


def _context_event() -> HookEvent:
    """The SessionStart or UserPromptSubmit event on standard input."""
    from retain.doors.hooks import POST_TOOL_USE, read_event  # a hook's command alone

    read = read_event(sys.stdin.read())
    if read.event == POST_TOOL_USE:
        raise InvalidValue(
            "the memory section is asked for at SessionStart or UserPromptSubmit, not PostToolUse",
            remedy="run it as the host's SessionStart or UserPromptSubmit hook",
            field="event",
        )
    return read


@cli.command()
@click.option("--memory", "memory_id", help="Only this memory's (its id).")
@click.option("--session", help="Only this session's.")
@click.option("--identity", help="Only what was rendered for this principal (agent:NAME).")
@click.option("--limit", "-n", type=int, default=100, show_default=True, help="At most this many.")
@click.option(
    "--as",
    "principal",
    default="operator:local",
    show_default=True,
    metavar="PRINCIPAL",
    help="Who reads; anyone but an operator sees only their own rows.",
)
@home_option
@format_option
def injections(
    memory_id: str | None,
    session: str | None,
    identity: str | None,
    limit: int,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """List the injection ledger: which memories were rendered into whose context."""
    with opened(home, fmt, principal) as service:
        rows = service.list_injections(
            memory_id=memory_id, session=session, identity=identity, limit=limit
        )
        emit_rows(
            fmt,
            "injections",
            [r.to_dict() for r in rows],
            {
                "When": "injected_at",
                "Memory": "memory_id",
                "Identity": "identity",
                "Session": "session",
                "Surface": "surface",
            },
        )
