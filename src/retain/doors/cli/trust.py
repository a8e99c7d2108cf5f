"""The ``retain retier`` command: a reviewer sets a memory's trust, with a reason (and,
for ``verified``, the evidence the store checks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import emit_json, moment, say
from retain.doors.cli.root import (
    acting_option,
    cli,
    evidence_of,
    evidence_options,
    format_option,
    home_option,
    opened,
)

if TYPE_CHECKING:
    from pathlib import Path


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.argument("trust", metavar="TRUST")
@click.option("--reason", required=True, help="Why it is trusted more (or less) now.")
@evidence_options
@acting_option
@home_option
@format_option
def retier(
    memory_id: str,
    trust: str,
    reason: str,
    evidence: str | None,
    evidence_path: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Set the trust of memory ID (or a name) to TRUST: claimed, observed, attested or verified.

    A review, for operators and the steward: verified needs --evidence; a memory that
    was ever quarantined stays at observed or below."""
    with opened(home, fmt, principal) as service:
        result = service.retier(
            memory_id, trust, reason=reason, evidence=evidence_of(evidence, evidence_path)
        )
        if fmt == "json":
            emit_json(result.to_dict(moment()))
            return
        memory = result.memory
        label = memory.name or memory.id
        if result.changed:
            say(f"Retiered '{label}' from {result.previous.value} to {memory.trust.value}.")
        else:
            say(f"Unchanged: '{label}' is already {memory.trust.value}.")
