"""The ``retain ledger`` commands (index, query, stores: the assertion ledger and its
conflict signals) and ``retain gate`` (whether acting on a subject's predicate is
contested)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from retain.doors.cli.output import emit_json, emit_rows, say
from retain.doors.cli.root import acting_option, cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path

    from retain.assertions import LedgerResult

_STORES = "knowledge_graph, vector, document, timeline or key_value"
_PROJECT = "The project whose tier the call names (an agent sees it only then)."
_ASSERTIONS = {"Id": "id", "Entity": "entity", "Topic": "topic", "Store": "store",
               "Fact": "fact", "Tier": "scope"}  # fmt: skip
_CONFLICTS = {"Entity": "entity", "Topic": "topic", "Store": "store", "Reason": "reason",
              "Updated (UTC)": "updated_at"}  # fmt: skip


def _metadata(text: str | None) -> dict[str, Any] | None:
    """``--metadata``'s JSON object (refused as the service refuses bad metadata)."""
    if text is None:
        return None
    import json

    from retain.errors import InvalidValue

    try:
        loaded = json.loads(text)
    except ValueError as exc:
        raise InvalidValue(
            f"the metadata is not JSON: {exc}",
            remedy='pass a JSON object, e.g. {"source": "runbook"}',
            field="metadata",
        ) from exc
    if not isinstance(loaded, dict):
        raise InvalidValue(
            "an assertion's metadata must be an object with text keys",
            remedy='pass a JSON object, e.g. {"source": "runbook"}',
            field="metadata",
        )
    return loaded


def _emit_found(fmt: str, found: LedgerResult) -> None:
    if fmt == "json":
        emit_json(found.to_dict())
        return
    data = found.to_dict()
    if not data["assertions"] and not data["conflicts"]:
        say("No assertions and no conflict signals.")
        return
    if data["assertions"]:
        emit_rows(fmt, "assertions", data["assertions"], _ASSERTIONS)
    if data["conflicts"]:
        say("Conflict signals:")
        emit_rows(fmt, "conflicts", data["conflicts"], _CONFLICTS)


@cli.group()
def ledger() -> None:
    """The assertion ledger: assertions by entity, topic and store, and conflict signals."""


@ledger.command("index")
@click.argument("entity")
@click.argument("topic")
@click.argument("store")
@click.option("--fact", "fact", help="The assertion (leave out for a conflict-only write).")
@click.option("--metadata", help='A JSON object kept with the assertion, e.g. {"source": "x"}.')
@click.option(
    "--conflict/--clear-conflict",
    default=None,
    help="Set (or update) the key's conflict signal, or clear it.",
)
@click.option("--reason", help="Why there is a conflict (or why it is cleared).")
@click.option("--project", "-p", default=None, help="Record it in this project's tier.")
@acting_option
@home_option
@format_option
def ledger_index(
    entity: str,
    topic: str,
    store: str,
    fact: str | None,
    metadata: str | None,
    conflict: bool | None,
    reason: str | None,
    project: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Index an assertion about ENTITY's TOPIC in STORE (knowledge_graph, vector,
    document, timeline or key_value), or set or clear the key's conflict signal."""
    with opened(home, fmt, principal) as service:
        done = service.index(
            entity,
            topic,
            store,
            fact,
            metadata=_metadata(metadata),
            conflict=conflict,
            conflict_reason=reason,
            project=project,
        )
        if fmt == "json":
            emit_json(done.to_dict())
            return
        if done.assertion is not None:
            a = done.assertion
            say(f"Indexed {a.entity} {a.topic} in {a.store}: {a.fact} ({a.scope}, {a.id}).")
        if done.conflict is not None and done.conflict_changed:
            c = done.conflict
            state = "Conflict signalled" if c.active else "Conflict cleared"
            say(f"{state}: {c.entity} {c.topic} in {c.store}.")
        elif conflict is False:
            say("No active conflict signal to clear.")


@ledger.command("query")
@click.option("--entity", help="Only this entity (exact, ignoring ASCII case).")
@click.option("--topic", help="Only this topic (exact, ignoring ASCII case).")
@click.option("--store", help=f"Only this store: {_STORES}.")
@click.option("--query", "-q", "text", help="Only what holds this text (any case).")
@click.option("--project", "-p", default=None, help=_PROJECT)
@acting_option
@home_option
@format_option
def ledger_query(
    entity: str | None,
    topic: str | None,
    store: str | None,
    text: str | None,
    project: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """The assertions you see and the active conflict signals, filtered."""
    with opened(home, fmt, principal) as service:
        _emit_found(fmt, service.query(entity, topic, store, text, project=project))


@ledger.command("stores")
@click.option("--project", "-p", default=None, help=_PROJECT)
@acting_option
@home_option
@format_option
def ledger_stores(project: str | None, principal: str, home: Path | None, fmt: str) -> None:
    """Each store's record count: the assertions you see plus its active signals."""
    with opened(home, fmt, principal) as service:
        rows = [info.to_dict() for info in service.stores(project=project)]
        emit_rows(fmt, "stores", rows, {"Store": "store", "Records": "record_count"})


@cli.command("gate")
@click.argument("subject")
@click.argument("predicate")
@click.option("--project", "-p", default=None, help=_PROJECT)
@acting_option
@home_option
@format_option
def gate(
    subject: str, predicate: str, project: str | None, principal: str, home: Path | None, fmt: str
) -> None:
    """Whether acting on SUBJECT's PREDICATE is contested (a conflict signal, or two
    believed facts that disagree); exit 0 either way."""
    with opened(home, fmt, principal) as service:
        answer = service.gate(subject, predicate, project=project)
        if fmt == "json":
            emit_json(answer.to_dict())
            return
        if not answer.contested:
            say(f"Not contested: {answer.subject} {answer.predicate}.")
            return
        say(f"Contested: {answer.subject} {answer.predicate}.")
        for c in answer.conflicts:
            say(f"  conflict in {c.store}" + (f": {c.reason}" if c.reason else ""))
        for f in answer.facts:
            say(f"  {f['value']} ({f['scope']}, {f['id']})")
