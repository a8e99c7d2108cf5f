"""Admission: the one place a memory's row is let into the store, and how.

Every row a verb writes passes here once, from the unit of work: a new row when it is
created (``Work.create``, or ``Work.admit`` when a verb needs the outcome first), a
changed row when its content changes (``Work.change``). Admission answers with the row
as it will be stored, or refuses it:

* admitted as it is;
* admitted **quarantined**: stored and audited, but recalled, searched, listed or
  injected by no one but a reviewer until a review releases it. The row says why
  (``quarantine_reason``), is marked ``ever_quarantined`` for good, and is trusted at
  most ``observed`` (an anonymous caller's, ``claimed``);
* refused, with the reason's error and nothing written.

Under ``[access] control = true`` it refuses first, ``access_denied``, a row the call's
grants do not let its actor write in that scope (``memory.write``; ``memory.delete``
for a removal): ``access.admits``, the grants' one row check on writes.

The reasons a write is quarantined, each named in ``quarantine_reason``:

* ``claimed`` — an anonymous caller's write (only where ``[access] anonymous_writes``
  lets one write at all): nobody vouches for it;
* ``llm_writes`` — an agent's write while ``[memory] llm_writes = "quarantined"`` holds
  every LLM-authored write for review;
* ``tainted_session`` — an agent's write from a session that ingested untrusted content
  since its last fresh-context boundary (``retain.service.session``): the write's own
  session, or, when it names none, the agent's most recently observed one (fails
  closed). The taint is read in the write's own transaction, so an observation
  committed before it is seen;
* ``secret_detected`` — an agent's write holding what looks like a credential
  (``retain.governance.secrets``): a review can only tombstone it.

Every row's text is screened for secrets, new or changed (``screened``). A write that
asks for redaction (``redact``) is stored with each secret replaced by its marker and
the kinds in ``metadata.redacted``; otherwise an agent's lands quarantined, and anyone
else's is refused (``secret_detected``, naming kinds, fields and places, never a value).

A row that was ever quarantined is capped at ``observed`` for good (``CAP``): admission
refuses any new or changed row marked so and trusted above it (``trust_capped``), so no
path (a write with evidence, a retier, an import) lifts it.

Every reason that applies is recorded. Applications, operators and the steward are
never quarantined. A writer whose writes are quarantined may add rows but not change
stored ones (``admit_change``, ``admit_removal``): an anonymous caller changes or removes
none, and an agent changes no row's content in place (its own memory changes by a
successor, admitted as any new row).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from retain.errors import AccessDenied, TrustCapped
from retain.governance import secrets
from retain.model import Memory, Status, Trust, lower_trust
from retain.service import access, session
from retain.service.actor import Kind

if TYPE_CHECKING:
    from retain.service.work import Work

CLAIMED = "claimed"
LLM_WRITES = "llm_writes"
SECRET_DETECTED = "secret_detected"
CAP = Trust.OBSERVED  # the most a row that was ever quarantined is trusted
TAINTED_SESSION = "tainted_session"


def reasons(work: Work) -> tuple[str, ...]:
    """Why this work's writer's new rows are quarantined (none: they are not), judged
    once a unit of work: no write changes a session's taint, so every row of a batch
    is held for the same reasons, read in the write's own transaction."""
    if work.held is None:
        work.held = _reasons(work)
    return work.held


def _reasons(work: Work) -> tuple[str, ...]:
    kind = work.actor.kind
    if kind is Kind.ANONYMOUS:
        return (CLAIMED,)
    if kind is not Kind.AGENT:
        return ()
    held = []
    if work.store.settings.llm_writes == "quarantined":
        held.append(LLM_WRITES)
    actor = work.actor
    judged = session.judged(work.reads, actor.realm, actor.principal, actor.session)
    if judged is not None and judged.tainted:
        held.append(TAINTED_SESSION)
    return tuple(held)


def admit(work: Work, memory: Memory, *, redact: bool = False) -> Memory:
    """A new row as it will be stored (see the module docstring)."""
    access.admits(access.current(), memory.scope)
    memory, found = screened(work, memory, redact)
    held = reasons(work) + found
    if held:
        memory = quarantined(memory, held)
    check_cap(memory, memory.trust)
    if work.actor.session is not None and memory.session is None:
        memory = replace(memory, session=work.actor.session)
    return memory


def admit_change(work: Work, memory: Memory, current: Memory, *, redact: bool = False) -> Memory:
    """A stored row's change, as it will be stored. A writer whose writes wait for
    review may change no row: an anonymous caller none (nobody would answer for the
    change), an agent none of whose content (its change cannot wait with the row). A
    change of content is screened for secrets; a secret in it is refused (the stored
    row cannot wait for review) unless it is redacted."""
    call = access.current()
    for scope in dict.fromkeys((current.scope, memory.scope)):  # where it was, and goes
        access.admits(call, scope)
    held = reasons(work)
    content = changes_content(memory, current)
    if held and (work.actor.kind is Kind.ANONYMOUS or content):
        raise _waits(work, held, current.name or current.id, current.id)
    if content:
        memory, _ = screened(work, memory, redact, hold=False)
    check_cap(current if current.ever_quarantined else memory, memory.trust)
    return memory


def screened(
    work: Work, memory: Memory, redact: bool, *, hold: bool = True
) -> tuple[Memory, tuple[str, ...]]:
    """``memory`` with the secrets its text holds dealt with, and the reason to hold it
    (``secret_detected``, for an agent's new row when ``hold``): redacted when the write
    asks, else held or refused."""
    found = secrets.findings_of(memory, work.store.settings.secrets)
    if not found:
        return memory, ()
    if redact:
        from retain.service.rows import content_hash  # rows imports the unit of work

        clean = secrets.redacted(memory, found)
        return replace(clean, content_hash=content_hash(clean.body)), ()
    if hold and work.actor.kind is Kind.AGENT:
        return memory, (SECRET_DETECTED,)
    named = memory.name if all(f.field != "name" for f in found) else None
    raise secrets.refusal(found, id=memory.id, name=named)  # a secret name is not said


def check_cap(memory: Memory, asked: Trust) -> None:
    """Refuse ``asked`` for a row that was ever quarantined when it is above ``CAP``."""
    if memory.ever_quarantined and lower_trust(asked, CAP) is not asked:
        raise TrustCapped(
            f"memory {memory.id!r} was quarantined once, so it is trusted at most "
            f"{CAP.value}, not {asked.value}",
            remedy=f"keep it at {CAP.value} or below, or write it anew from a source "
            "the store trusts",
            id=memory.id,
            cap=CAP.value,
            asked=asked.value,
        )


def admit_removal(work: Work, memory: Memory) -> None:
    """Refuse the removal of a row where the grants do not let the writer delete, or by
    a writer whose writes wait for review."""
    access.admits(access.current(), memory.scope, removing=True)
    held = reasons(work)
    if held:
        raise _waits(work, held, memory.id, memory.id)


def admit_erasure(work: Work, memory: Memory) -> None:
    """Refuse an erasure (``forget``) where the grants do not let the writer delete in the
    row's scope. A writer whose writes wait for review may still erase what it may reach
    (an agent, its own memories): an erasure adds nothing to review."""
    del work  # judged by the grants alone
    access.admits(access.current(), memory.scope, removing=True)


def _waits(work: Work, held: tuple[str, ...], label: str, memory_id: str) -> AccessDenied:
    return AccessDenied(
        f"{work.actor.principal}'s writes wait for review, so it may add memories but "
        f"not change or remove {label!r}",
        remedy="write a new memory for review, or act as an authenticated principal",
        principal=work.actor.principal,
        id=memory_id,
        reasons=list(held),
    )


def quarantined(memory: Memory, held: tuple[str, ...]) -> Memory:
    """``memory`` held for review for ``held``: marked so for good, trusted at most
    ``observed``."""
    return replace(
        memory,
        status=Status.QUARANTINED,
        ever_quarantined=True,
        quarantine_reason=held,
        trust=lower_trust(memory.trust, Trust.OBSERVED),
    )


def changes_content(memory: Memory, current: Memory) -> bool:
    """Whether ``memory`` says something ``current`` did not (what admission screens)."""
    return (
        memory.content_hash != current.content_hash
        or memory.name != current.name
        or memory.description != current.description
        or memory.tags != current.tags
        or memory.source != current.source
        or memory.subject != current.subject
        or memory.metadata != current.metadata
    )
