"""The relation graph's commands: a memory's edges (``graph``), a curator's explicit link
(``link``) and decision on a pair (``decide``), the pass that proposes near-copies
(``dedup``) and the report of what keeps a store honest (``hygiene``). Each one a
service verb of the same name; the service checks every argument (a type, an action, a
threshold, a period), so a bad one is its refusal here too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from retain.doors.cli.output import (
    Table,
    add_row,
    emit_json,
    out,
    progress_bar,
    say,
)
from retain.doors.cli.root import (
    acting_option,
    cli,
    format_option,
    home_option,
    opened,
    project_option,
)

if TYPE_CHECKING:
    from pathlib import Path

_PROJECT = "The project whose tier the memories are looked for in (and the global one)."
# The order a memory's edges are listed in: the decisions, the near-copies, then where it
# comes from and what it cites (graph.TYPES, named here so that `--help` loads no graph
# module; a test holds them equal).
EDGE_ORDER = ("supersedes", "contradicts", "similar_to", "derived_from", "references")


def _label(record: dict[str, Any]) -> str:
    """A memory as a person finds it again: its name, else its id."""
    return str(record.get("name") or record.get("id"))


# -- graph ----------------------------------------------------------------------------------


@cli.command()
@click.argument("memory", metavar="ID")
@project_option(_PROJECT)
@acting_option
@home_option
@format_option
def graph(memory: str, project: str | None, principal: str, home: Path | None, fmt: str) -> None:
    """Show memory ID (or a name) with its edges, each way.

    What it supersedes or was superseded by, what contradicts it, its near-copies, what
    it derives from and what it references. An unknown ID is not found, never an empty
    graph."""
    with opened(home, fmt, principal) as service:
        data = service.graph(memory, project=project).to_dict()
        if fmt == "json":
            emit_json(data)
            return
        record = data["memory"]
        say(f"{_label(record)} ({record['scope']}): {record['description']}")
        state = [record["status"]]
        if record["superseded_by"]:
            state.append(f"superseded by {record['superseded_by']}")
        if record["expired"]:
            state.append("expired")
        say(f"Id {record['id']}, {', '.join(state)}, trust {record['trust']}.")
        _edges("Outgoing", data["outgoing"])
        _edges("Incoming", data["incoming"])


def _edges(title: str, edges: list[dict[str, Any]]) -> None:
    """One direction's edges as a table, grouped by type (none: a line saying so)."""
    if not edges:
        say(f"{title}: none.")
        return
    say(f"{title}:")
    order = {kind: n for n, kind in enumerate(EDGE_ORDER)}
    table = Table()
    for header in ("Type", "Memory", "Description", "Status", "Pair"):
        table.add_column(header, overflow="fold", no_wrap=header == "Memory")
    for edge in sorted(edges, key=lambda e: order.get(e["type"], len(order))):
        if edge["id"] is None:  # a reference that names no memory, or a ticket
            ticket = str(edge["reference"]).startswith("ticket:")
            what = "(the ticket it was landed by)" if ticket else "(no memory found)"
            add_row(table, edge["type"], edge["reference"], what, "", "")
            continue
        status = edge["status"] + (", expired" if edge["expired"] else "")
        add_row(table, edge["type"], _label(edge), edge["description"], status, _pair(edge))
    out.print(table)


def _pair(edge: dict[str, Any]) -> str:
    """Where a stored pair stands: open (a curator's to decide), or the decision on it."""
    relation = edge["relation"]
    if relation is None:
        return ""
    if relation["open"]:
        return "open"
    return f"decided: {relation['decision']}" if relation["decision"] else ""


# -- link and decide ------------------------------------------------------------------------


@cli.command()
@click.argument("source", metavar="FROM")
@click.argument("target", metavar="TO")
@click.argument("type_", metavar="TYPE")
@click.option("--reason", default="", help="Why they are related (kept on the relation).")
@project_option(_PROJECT)
@acting_option
@home_option
@format_option
def link(
    source: str,
    target: str,
    type_: str,
    reason: str,
    project: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Relate memory FROM to memory TO as TYPE.

    FROM and TO are ids or names; TYPE is similar_to, supersedes, contradicts or
    derived_from. A curator's act (an operator or the steward): FROM supersedes TO
    retires TO; contradicts raises a conflict signal."""
    with opened(home, fmt, principal) as service:
        result = service.link(source, target, type_, reason=reason, project=project)
        data = result.to_dict()
        if fmt == "json":
            emit_json(data)
            return
        relation = data["relation"]
        first, second = _ends(data, relation)
        if relation["type"] in ("similar_to", "contradicts"):  # symmetric: as it was asked
            first, second = _label(data["source"]), _label(data["target"])
        if not result.changed:
            say(f"Unchanged: {first} {relation['type']} {second} stands already.")
        elif relation["type"] == "supersedes":
            _said_superseded(first, second)
        else:
            say(f"Linked {first} {relation['type']} {second}.")
        _said_after(data)


@cli.command()
@click.argument("memory", metavar="ID")
@click.argument("action", metavar="ACTION")
@click.option(
    "--target",
    required=True,
    metavar="OTHER",
    help="The other memory of the pair (an id or a name); for supersede, the newer one "
    "that takes over.",
)
@click.option("--reason", default="", help="Why (kept on the decision).")
@project_option(_PROJECT)
@acting_option
@home_option
@format_option
def decide(
    memory: str,
    action: str,
    target: str,
    reason: str,
    project: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Decide a pair: supersede, contradict or keep.

    The pair is memory ID and --target. ACTION is supersede (the target takes over and
    ID is retired, still readable), contradict (they disagree: a conflict signal until
    decided) or keep (both stand). A curator's act (an operator or the steward)."""
    with opened(home, fmt, principal) as service:
        data = service.decide(
            memory, action, target=target, reason=reason, project=project
        ).to_dict()
        if fmt == "json":
            emit_json(data)
            return
        first, second = _label(data["source"]), _label(data["target"])
        verb = action.strip().casefold()  # the service took it: one of graph.DECISIONS
        if verb == "keep":
            say(f"Kept both {first} and {second}.")
        elif verb == "supersede":  # the result's source is the newer memory
            _said_superseded(first, second)
        else:
            say(f"Recorded that {first} and {second} contradict each other.")
        _said_after(data)


def _ends(data: dict[str, Any], relation: dict[str, Any]) -> tuple[str, str]:
    """The labels of the relation's source and target, in its stored order."""
    ends = {m["id"]: _label(m) for m in (data["source"], data["target"])}
    return ends[relation["source"]], ends[relation["target"]]


def _said_superseded(newer: str, older: str) -> None:
    say(f"Superseded {older} by {newer}: {older} stays readable, pointing at {newer}.")


def _said_after(data: dict[str, Any]) -> None:
    """The conflict signal a link or decision raised or cleared, if any."""
    signal = data["conflict"]
    if signal is None:
        return
    state = "Conflict signalled" if signal["active"] else "Conflict cleared"
    say(f"{state}: {signal['entity']} {signal['topic']} in {signal['store']}.")


# -- dedup ----------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--threshold",
    type=float,
    help="The score a pair needs (above 0, at most 1); default 0.6 (of centred vectors).",
)
@project_option('Only this project\'s tier; "" the global tier (default: every scope).')
@click.option(
    "--scope",
    help="Only this scope: global, project:NAME, team:NAME or agent:NAME (not with --project).",
)
@acting_option
@home_option
@format_option
def dedup(
    threshold: float | None,
    project: str | None,
    scope: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Find near-copies and list the pairs to decide.

    Each pair of memories of one scope that scores the threshold is linked as
    similar_to, and every open pair is listed for a curator to decide (retain decide).
    Nothing is merged, retired or deleted."""
    with opened(home, fmt, principal) as service:
        with progress_bar() as progress:
            result = service.dedup(
                threshold=threshold, project=project, scope=scope, progress=progress
            )
        data = result.to_dict()
        if fmt == "json":
            emit_json(data)
            return
        pairs = data["pairs"]
        say(
            f"Compared {data['compared']} memories at threshold {data['threshold']}: "
            f"{data['linked']} new pairs linked, {len(pairs)} open to decide."
        )
        if not pairs:
            return
        table = Table(show_lines=True)
        for header in ("#", "First", "Second", "Score", "Cosine", "Details only one names"):
            table.add_column(header, overflow="fold")
        for n, pair in enumerate(pairs, start=1):
            first, second = pair["first"], pair["second"]
            add_row(
                table,
                str(n) + (" new" if pair["new"] else ""),
                f"{_label(first)}\n{first['description']}",
                f"{_label(second)}\n{second['description']}",
                f"{pair['score']:.3f}",
                f"{pair['cosine']:.3f}",
                _differs(pair["differs"]),
            )
        out.print(table)
        say(
            "Decide each pair: ACTION is supersede (the second takes over, the first is "
            "retired), contradict (they disagree: a conflict signal until decided) or keep "
            "(both stand)."
        )
        for n, pair in enumerate(pairs, start=1):
            say(
                f"  {n}. retain decide {pair['first']['id']} ACTION --target {pair['second']['id']}"
            )


def _differs(differs: list[list[str]]) -> str:
    """The details only one side names, as a possible contradiction (none: "")."""
    mine, theirs = differs
    if not mine and not theirs:
        return ""
    return f"{', '.join(mine)} / {', '.join(theirs)}\npossible contradiction"


# -- hygiene --------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--unverified", metavar="PERIOD", help="List memories not verified for this long (default 90d)."
)
@click.option(
    "--expiring", metavar="PERIOD", help="List open tickets expiring within this (default 7d)."
)
@click.option("--limit", type=int, help="The most items a section lists (default 20).")
@acting_option
@home_option
@format_option
def hygiene(
    unverified: str | None,
    expiring: str | None,
    limit: int | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Report what needs a curator's attention.

    Unverified and expired memories, references that name no memory, inline bands near
    their budget, open contradictions and conflict signals, tickets about to expire,
    near-duplicates. A report: exit 0 whatever it finds."""
    given: dict[str, Any] = {"unverified": unverified, "expiring": expiring, "limit": limit}
    with opened(home, fmt, principal) as service:
        data = service.hygiene(**{k: v for k, v in given.items() if v is not None}).to_dict()
        if fmt == "json":
            emit_json(data)
            return
        for name, section in data["sections"].items():
            title = _TITLES.get(name, name.replace("_", " ").capitalize())
            say(f"{title.format(**data)}: {section['count']}")
            if section["items"]:
                _section(name, section["items"])
            if section["count"] > len(section["items"]):
                say(f"  ... and {section['count'] - len(section['items'])} more.")
        if data["clean"]:
            say("Clean: nothing needs attention.")


_TITLES = {
    "unverified": "Not verified for {unverified_for}",
    "expired": "Past their expiry",
    "dangling_references": "References that name no memory",
    "inline_pressure": "Inline bands near their budget",
    "contradictions": "Open contradictions",
    "conflicts": "Active conflict signals",
    "tickets_expiring": "Open tickets expiring within {expiring_within}",
    "near_duplicates": "Clusters of near-duplicates",
}


def _section(name: str, items: list[dict[str, Any]]) -> None:
    """A section's items as a table of the columns its items have."""
    table = Table()
    columns: dict[str, Any]
    if name in ("unverified", "expired", "dangling_references"):
        columns = {"Memory": _label, "Scope": "scope", "Description": "description"}
        columns |= {"Verified (UTC)": "verified_at"} if name == "unverified" else {}
        columns |= {"Expired (UTC)": "expires_at"} if name == "expired" else {}
        columns |= {"Reference": "reference"} if name == "dangling_references" else {}
    elif name == "inline_pressure":
        columns = {"Project": "project", "Bytes": "bytes", "Budget": "budget", "Share": "share",
                   "Memories": "memories"}  # fmt: skip
    elif name == "contradictions":
        columns = {"First": lambda i: _label(i["first"]), "Second": lambda i: _label(i["second"]),
                   "Reason": lambda i: i["relation"]["reason"],
                   "Signal": lambda i: " ".join(i["key"])}  # fmt: skip
    elif name == "conflicts":
        columns = {"Entity": "entity", "Topic": "topic", "Store": "store", "Reason": "reason",
                   "Updated (UTC)": "updated_at"}  # fmt: skip
    elif name == "tickets_expiring":
        columns = {"Id": "id", "Target": "target", "Source": "source", "Summary": "summary",
                   "Expires (UTC)": "expires_at"}  # fmt: skip
    elif name == "near_duplicates":
        columns = {"Size": "size", "Pairs": "pairs",
                   "Memories": lambda i: "\n".join(_label(m) for m in i["memories"])}  # fmt: skip
    else:  # a section this door does not know yet: its fields as they are
        columns = {key: key for key in items[0]}
    for header in columns:
        table.add_column(header, overflow="fold", no_wrap=header in ("Memory", "Id"))
    for item in items:
        cells = [field(item) if callable(field) else item[field] for field in columns.values()]
        add_row(table, *("" if c is None else str(c) for c in cells))
    out.print(table)
