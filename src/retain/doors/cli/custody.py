"""The custody commands: ``forget`` (erase an item and every copy of it, with a
certificate), ``certificate`` (fetch one again) and ``compact`` (shed what erasures and
deletes left in the store's files)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from retain.doors.cli.output import emit_json, progress_bar, say
from retain.doors.cli.root import acting_option, cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path


@cli.command()
@click.argument("target", metavar="ID|NAME")
@click.option("--project", "-p", default=None, help="The project whose memory NAME is.")
@click.option("--reason", default="", help="Why, for the certificate and the event log.")
@click.option(
    "--no-digest", is_flag=True, help="Keep no digest of the value (by default: SHA-256, "
    "or HMAC-SHA256 keyed by RETAIN_FORGET_KEY when it is set)."
)  # fmt: skip
@click.option(
    "--no-compact", is_flag=True, help="Do not compact the store now (its files keep the "
    "value's bytes until `retain compact`)."
)  # fmt: skip
@acting_option
@home_option
@format_option
def forget(
    target: str,
    project: str | None,
    reason: str,
    no_digest: bool,
    no_compact: bool,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Erase a memory, fact or ticket (ID, or a memory's NAME) and every copy of it from
    the store, history included, keeping a digest. An agent (--as agent:NAME) erases
    only its own. `retain remove` is the soft delete that keeps history."""
    with opened(home, fmt, principal) as service:
        cert = service.forget(
            target, project=project, reason=reason, keep_digest=not no_digest,
            compact=not no_compact,
        )  # fmt: skip
        if fmt == "json":
            emit_json(cert.to_dict())
        else:
            say(f"Forgot {cert.kind} {cert.target}.")
            _show(cert.to_dict())


@cli.command()
@click.argument("target", metavar="ID")
@acting_option
@home_option
@format_option
def certificate(target: str, principal: str, home: Path | None, fmt: str) -> None:
    """Show the erasure certificate of a forgotten item (its ID, or the certificate's)."""
    with opened(home, fmt, principal) as service:
        cert = service.certificate(target)
        if fmt == "json":
            emit_json(cert.to_dict())
        else:
            _show(cert.to_dict())


def _show(record: dict[str, Any]) -> None:
    say(f"Certificate {record['certificate']} (event {record['seq']})")
    say(f"  target: {record['kind']} {record['target']} in {record['scope']}")
    digest = record["digest"] or "none kept"
    say(f"  digest: {digest} ({record['digest_kind']})")
    say(f"  when:   {record['forgotten_at']} by {record['principal']}")
    if record["reason"]:
        say(f"  reason: {record['reason']}")
    say(f"  erased: {', '.join(record['erased'])}; {len(record['erased_events'])} events rewritten")
    for place, status in record["places"].items():
        say(f"  {place}: {status}")
    for mirror, answer in record["mirrors"].items():
        say(f"  mirror {mirror}: {answer}")
    if record["reinstated"]:
        say(f"  believed again: {record['reinstated']}")


@cli.command()
@click.option("--full", is_flag=True, help="Rebuild the whole file (SQLite VACUUM; "
              "PostgreSQL VACUUM FULL, which locks each table while it runs).")  # fmt: skip
@home_option
@format_option
def compact(full: bool, home: Path | None, fmt: str) -> None:
    """Shed what erasures and deletes left in the store's files: merge the full-text
    index, checkpoint and truncate the log (SQLite), VACUUM (PostgreSQL)."""
    with opened(home, fmt) as service:
        with progress_bar() as progress:
            done = service.compact(full=full, progress=progress)
        if fmt == "json":
            emit_json(done)
        else:
            state = "done" if done["complete"] else "incomplete (a reader held the log; retry)"
            say(f"Compacted {done['location']}: {', '.join(done['steps'])}; {state}.")
