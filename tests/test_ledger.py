"""The rule that the log's transaction times do not run backwards, in stores written
before it held (by a version that read the time before it held the write lock) and
after, on both backends."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from tests.conftest import failed_verify, open_backend

from retain import ledger
from retain.chrono import ManualClock, parse_stamp, stamp
from retain.service import MemoryService
from retain.storage import postgres, sqlite
from retain.storage.base import Backend, Transaction
from retain.storage.sqlite import SqliteBackend

EARLY = (
    "2 events written before this store kept its transaction times in order are stamped "
    "before the event they follow; they stay as written"
)


def open_before_the_rule(url: str) -> Backend:
    """The store at ``url`` as the schema was before its "ordered times" migration: how a
    retain before this version made and opened it."""
    module = postgres if url.startswith("postgres") else sqlite
    every = module.MIGRATIONS
    (rule,) = [m.version for m in every if m.name == "ordered times"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "MIGRATIONS", tuple(m for m in every if m.version < rule))
        patch.setattr(module, "latest_version", lambda: rule - 1)
        return open_backend(url)


def append_as_written(backend: Backend, realm: str, times: list[datetime]) -> None:
    """Events stamped at ``times``, each in its own write, as writers that read the time
    before they held the write lock appended them: sealed with the time each had read."""
    for when in times:

        def run(tx: Transaction, when: datetime = when) -> None:
            seq, head = tx.chain_head()
            tx.append_event(
                ledger.seal(
                    prev_seq=seq,
                    prev_hash=head,
                    event_id=f"old-{seq + 1}",
                    realm=realm,
                    memory_id=None,
                    kind="project_add",
                    tx_time=when,
                    principal="app:old",
                    reason="",
                    payload={"project": f"p{seq + 1}"},
                )  # fmt: skip
            )

        backend.write(run)


def chain(backend: Backend) -> list[tuple[int, str, str]]:
    events = backend.read(lambda tx: list(tx.iter_events()))
    return [(e.seq, stamp(e.tx_time), e.hash) for e in events]


def an_old_store(url: str, clock: ManualClock) -> list[tuple[int, str, str]]:
    """A store written before the rule: its realm, then events of which two (the 4th
    and the 6th) are stamped before the one they follow. Its chain, as it was left.
    (Only events: this version's memory rows have columns the old schema lacks.)"""
    old = open_before_the_rule(url)
    writer = MemoryService(old, clock=clock)  # realm_add (1)
    t = clock.now()
    append_as_written(old, writer.realm, [t])  # (2)
    append_as_written(old, writer.realm, [t + timedelta(seconds=2), t + timedelta(seconds=1)])
    append_as_written(old, writer.realm, [t + timedelta(seconds=3), t + timedelta(seconds=2)])
    written = chain(old)
    old.close()
    return written


def test_a_store_written_before_the_rule_verifies_with_a_note_and_its_chain_unchanged(
    store_url: str, clock: ManualClock
) -> None:
    written = an_old_store(store_url, clock)
    assert len(written) == 6
    upgraded = open_backend(store_url)  # this version: the migration runs
    try:
        assert chain(upgraded) == written  # not an event, time or hash changed
        assert upgraded.read(lambda tx: tx.ordered_from()) == 7  # from the next event on
        service = MemoryService(upgraded, clock=clock)
        report = service.verify()
        assert report.ok and report.chain_ok, report.problems
        assert (report.events, report.early_reversals) == (6, 2)
        assert report.notes == (EARLY,)
        # This version's writes keep the rule (the clock reads before the log's last
        # event: a write takes the tick after it).
        service.write("b", description="written after the upgrade")
        after = service.verify()
        assert after.ok and (after.events, after.early_reversals) == (7, 2)
        assert chain(upgraded)[-1][1] == stamp(
            parse_stamp(written[-1][1]) + timedelta(microseconds=1)
        )
    finally:
        upgraded.close()


def test_a_reversal_after_the_upgrade_still_fails_verify(
    store_url: str, clock: ManualClock
) -> None:
    written = an_old_store(store_url, clock)
    service = MemoryService(open_backend(store_url), clock=clock)
    try:
        last = parse_stamp(written[-1][1])
        append_as_written(service.backend, service.realm, [last - timedelta(seconds=1)])
        report = failed_verify(service)
        assert not report.ok and not report.chain_ok
        assert report.problems == (
            f"event chain broken: event 7 is stamped {stamp(last - timedelta(seconds=1))}, "
            f"before event 6 ({stamp(last)}): the log's times run backwards",
        )
        assert report.early_reversals == 2
    finally:
        service.close()


def test_a_new_store_holds_the_rule_from_its_first_event(
    service: MemoryService, clock: ManualClock
) -> None:
    assert service.backend.read(lambda tx: tx.ordered_from()) == 1
    append_as_written(service.backend, service.realm, [clock.now() - timedelta(seconds=1)])
    report = failed_verify(service)
    assert not report.ok and report.early_reversals == 0 and report.notes == ()
    assert report.problems[0].startswith("event chain broken: event 2 is stamped")


def test_a_copy_of_a_store_written_before_the_rule_keeps_where_it_holds_from(
    store_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    an_old_store(store_url, clock)
    source = MemoryService(open_backend(store_url), clock=clock)
    target = SqliteBackend(tmp_path / "copy" / "retain.db")
    try:
        source.migrate_to(target)  # a copy that did not verify would raise
        assert target.read(lambda tx: tx.ordered_from()) == 7
        copy = MemoryService(target, clock=clock)
        report = copy.verify()
        assert report.ok and report.early_reversals == 2 and report.notes == (EARLY,)
    finally:
        source.close()
        target.close()
