"""The ``retain fact`` commands: write, read, history and retract a subject's facts."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import Table, add_row, emit_json, out, say, say_held
from retain.doors.cli.root import (
    acting_option,
    cli,
    evidence_of,
    evidence_options,
    format_option,
    home_option,
    min_trust_option,
    opened,
    project_option,
)
from retain.doors.deferred import Deferred

if TYPE_CHECKING:
    from pathlib import Path

    from retain.doors.records import facts_of
    from retain.model import Fact
    from retain.results import FactChange
else:  # imported on first use: `retain --help` loads neither rich nor the service
    facts_of = Deferred("retain.doors.records", "facts_of")


def _span(start: datetime | None, end: datetime | None) -> str:
    """``from → to`` in minutes (an open end left blank)."""
    shown = [f"{m:%Y-%m-%d %H:%M}" if m else "" for m in (start, end)]
    return f"{shown[0]} → {shown[1]}".strip()


def _emit_facts(fmt: str, found: list[Fact]) -> None:
    if fmt == "json":
        emit_json(facts_of(found))
        return
    if not found:
        say("No facts.")
        return
    table = Table()
    for column in ("Fact", "Value", "Tier", "Held (UTC)", "Believed (UTC)", "Status"):
        table.add_column(column, overflow="fold")
    for f in found:
        cells = (
            f"{f.subject} {f.predicate}", f.value, f.scope,
            _span(f.valid_from or f.recorded_at, f.valid_to),
            _span(f.recorded_at, f.retracted_at), f.status.value,
        )  # fmt: skip
        add_row(table, *cells)
    out.print(table)


def _emit_change(fmt: str, change: FactChange, verb: str) -> None:
    if fmt == "json":
        emit_json(change.to_dict(verb))
        return
    fact = change.fact
    if verb == "write" and not change.changed:
        say(f"Unchanged: {fact.subject} {fact.predicate} is {fact.value}.")
        return
    done = "Recorded" if verb == "write" else "Retracted"
    say(f"{done} {fact.subject} {fact.predicate} = {fact.value} ({fact.scope}).")
    say_held(fact.status.value)
    if change.other is not None:
        other = "Superseded" if verb == "write" else "Holds again"
        say(f"{other}: {change.other.value}.")


@cli.group()
def fact() -> None:
    """Facts: a subject's predicate has a value, from a moment on (see docs/concepts.md)."""


@fact.command("write")
@click.argument("subject")
@click.argument("predicate")
@click.argument("value")
@acting_option
@project_option("The project's tier (else the global one; an agent's go to its own).")
@click.option("--valid-from", help="When it began to hold: RFC 3339, or YYYY-MM-DD.")
@click.option("--reason", default="", help="Why, for the event log.")
@click.option("--redact", is_flag=True, help="Write each secret found as [redacted:KIND].")
@click.option(
    "--supersedes", metavar="ID", help="The version this one replaces: refused (stale_update) "
    "unless it is still current."
)  # fmt: skip
@evidence_options
@home_option
@format_option
def fact_write(
    subject: str,
    predicate: str,
    value: str,
    principal: str,
    project: str | None,
    valid_from: str | None,
    reason: str,
    redact: bool,
    supersedes: str | None,
    evidence: str | None,
    evidence_path: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Record that SUBJECT's PREDICATE is VALUE; the current value is superseded."""
    with opened(home, fmt, principal) as service:
        change = service.fact_write(
            subject,
            predicate,
            value,
            project=project,
            valid_from=valid_from,
            reason=reason,
            redact=redact,
            evidence=evidence_of(evidence, evidence_path),
            supersedes=supersedes,
        )
        _emit_change(fmt, change, "write")


@fact.command("read")
@click.argument("subject")
@click.argument("predicate", required=False)
@acting_option
@project_option("Read as a session on this project (its tier besides the global one).")
@click.option("--valid-at", help="What held then (default now): RFC 3339, or YYYY-MM-DD.")
@click.option("--known-at", help="As the store knew then (default now).")
@min_trust_option
@home_option
@format_option
def fact_read(
    subject: str,
    predicate: str | None,
    principal: str,
    project: str | None,
    valid_at: str | None,
    known_at: str | None,
    min_trust: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """SUBJECT's facts (of PREDICATE, or all) that held at --valid-at, as known at --known-at."""
    with opened(home, fmt, principal) as service:
        found = service.fact_read(
            subject,
            predicate,
            project=project,
            valid_at=valid_at,
            known_at=known_at,
            min_trust=min_trust,
        )
        _emit_facts(fmt, found)


@fact.command("history")
@click.argument("subject")
@click.argument("predicate")
@acting_option
@project_option("Read as a session on this project (its tier besides the global one).")
@min_trust_option
@home_option
@format_option
def fact_history(
    subject: str,
    predicate: str,
    principal: str,
    project: str | None,
    min_trust: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Every version of SUBJECT's PREDICATE, in the order recorded."""
    with opened(home, fmt, principal) as service:
        found = service.fact_history(subject, predicate, project=project, min_trust=min_trust)
        _emit_facts(fmt, found)


@fact.command("retract")
@click.argument("subject")
@click.argument("predicate")
@acting_option
@project_option("The project's tier (else the global one; an agent's own for an agent).")
@click.option("--reason", default="", help="Why, for the event log.")
@home_option
@format_option
def fact_retract(
    subject: str,
    predicate: str,
    principal: str,
    project: str | None,
    reason: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Withdraw the current value of SUBJECT's PREDICATE; the one it superseded holds again."""
    with opened(home, fmt, principal) as service:
        change = service.fact_retract(subject, predicate, project=project, reason=reason)
        _emit_change(fmt, change, "retract")


@fact.command("confirm")
@click.argument("fact_id", metavar="ID")
@acting_option
@click.option("--reason", default="", help="Why, for the event log.")
@home_option
@format_option
def fact_confirm(fact_id: str, principal: str, reason: str, home: Path | None, fmt: str) -> None:
    """Confirm a claimed fact held for review (an unauthenticated writer's): it becomes
    attested and its tier's current value (a reviewer's verb: operators, the steward)."""
    with opened(home, fmt, principal) as service:
        change = service.fact_confirm(fact_id, reason=reason)
        _emit_change(fmt, change, "write")
