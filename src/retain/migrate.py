"""Copying a whole store to another backend, its history included.

Everything a store holds is copied row for row — realms, projects, agents, teams and
their members, proposals, stored grants, memories (in the order they were made, which is
their order in a thread), the event log verbatim with its signatures (so the copy's chain
head is the source's), the injection ledger, context sessions, agent sessions, legacy
import records, the assertion ledger's conflict signals, the legal holds and what each
write-through mirror holds (``mirror_links``) — from one
snapshot of the source into one transaction of the target: the copy lands whole or not at
all.
Search keys are derived data and are made again in the target afterwards
(``MemoryService.reindex``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from retain.chrono import stamp
from retain.errors import MigrateMismatch, MigrateTargetNotEmpty
from retain.storage.base import Backend, Transaction

PAGE = 2000
EVERY_LEDGER_ROW = 2**62  # a limit no ledger reaches: copy all of it
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Counts:
    realms: int
    memories: int
    events: int
    chain_head: str


def counts(tx: Transaction) -> Counts:
    return Counts(
        len(tx.list_realms()), tx.count_memories(None), tx.count_events(), tx.chain_head()[1]
    )


def copy_store(source: Backend, target: Backend, *, progress: Progress | None = None) -> Counts:
    """Copy ``source`` into the empty ``target``; the counts and chain head both hold."""

    def run(src: Transaction) -> Counts:
        expected = counts(src)

        def into(dst: Transaction) -> Counts:
            if dst.list_realms() or dst.count_events() or dst.count_memories(None):
                raise MigrateTargetNotEmpty(
                    f"{target.location} already holds a store",
                    remedy="migrate into a new, empty database schema or file",
                    target=target.location,
                )
            _copy(src, dst, expected, progress)
            copied = counts(dst)
            if copied != expected:
                raise MigrateMismatch(
                    f"the copy does not match its source: {copied} against {expected}",
                    remedy="nothing was written; verify the source store and retry",
                    fix="verify",
                    source=source.location,
                    target=target.location,
                )
            return copied

        return target.write(into)

    return source.read(run)


def _copy(src: Transaction, dst: Transaction, expected: Counts, progress: Progress | None) -> None:
    def tell(phase: str, done: int, total: int) -> None:
        if progress is not None:
            progress(phase, done, total)

    for realm, created in src.list_realms():
        dst.ensure_realm(realm, created)
        for project in src.list_projects(realm):
            dst.insert_project(realm, project.name, stamp(project.created_at))
        agents = {a.name: a for a in src.list_agents(realm)}
        for agent in agents.values():
            dst.insert_agent(realm, agent.name, stamp(agent.created_at))
        for team in src.list_teams(realm):
            dst.insert_team(realm, team.name, stamp(team.created_at))
            for member in team.members:  # joined no earlier than both existed
                joined = max(team.created_at, agents[member].created_at)
                dst.add_member(realm, team.name, member, stamp(joined))
        for proposal in src.list_proposals(realm, None):
            dst.insert_proposal(realm, proposal)
        for grant in src.list_grants(realm):
            dst.insert_grant(grant)
        for hold in src.list_holds(realm):
            dst.insert_hold(hold)
        ledger = src.list_injections(realm, limit=EVERY_LEDGER_ROW)
        dst.insert_injections(realm, [replace(i, seq=0) for i in reversed(ledger)])
        for identity, session, state, updated in src.list_context_states(realm):
            dst.put_context_state(realm, identity, session, state, updated)
        for identity, sha256, imported in src.list_legacy_imports(realm):
            dst.record_legacy_import(realm, identity, sha256, imported)
        for agent_session in src.list_sessions(realm):
            dst.put_session(realm, agent_session)
        for signal in src.conflicts(realm, active_only=False):
            dst.put_conflict(signal)
        for link in src.list_mirror_links(realm):  # what each mirror holds, to reach it
            dst.put_mirror_link(link)
    tell("copy", 0, expected.memories)
    after, done = 0, 0
    while page := src.iter_memories(after, PAGE):
        # Inserted in the order they were made: a thread keeps its order.
        dst.insert_memories([m for _, m in page])
        after, done = page[-1][0], done + len(page)
        tell("copy", done, expected.memories)
    tell("events", 0, expected.events)
    dst.set_ordered_from(src.ordered_from())  # the copy holds its times to the same rule
    for n, event in enumerate(src.iter_events(), 1):
        dst.append_event(event)
        if n % PAGE == 0 or n == expected.events:
            tell("events", n, expected.events)
    for seq, key_id, signature in src.iter_signatures():  # each event's, as it was signed
        dst.sign_event(seq, key_id, signature)
