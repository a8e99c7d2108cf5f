"""Every refusal retain makes, as one exception tree.

Each class carries a stable snake_case ``code`` (doors map codes, never
messages), a message saying what would have happened, a ``remedy`` saying
what to do instead, and ``details``: the ids and numbers it concerns.

    RetainError                      retain_error
    ├── InvalidInput                 invalid_input
    │   ├── InvalidName              invalid_name
    │   ├── InvalidValue             invalid_value
    │   ├── InvalidTime              invalid_time
    │   ├── DescriptionRequired      description_required
    │   ├── TooManyReferences        too_many_references
    │   ├── NoProject                no_project
    │   ├── RequestTooLarge          request_too_large
    │   ├── QueryTooLong             query_too_long
    │   ├── TranscriptInvalid        transcript_invalid
    │   ├── NoTerminal               no_terminal
    │   └── KeyInvalid               key_invalid
    ├── NotFound                     not_found
    │   ├── ProjectNotFound          project_not_found
    │   ├── AgentNotFound            agent_not_found
    │   ├── TeamNotFound             team_not_found
    │   └── SessionNotFound          session_not_found
    ├── Conflict                     conflict
    │   ├── NameConflict             name_conflict
    │   ├── MemoryExists             memory_exists
    │   ├── ProjectExists            project_exists
    │   ├── AgentExists              agent_exists
    │   ├── TeamExists               team_exists
    │   ├── AmbiguousName            ambiguous_name
    │   ├── ProjectNotEmpty          project_not_empty
    │   ├── EvidenceMismatch         evidence_mismatch
    │   ├── TrustCapped              trust_capped
    │   ├── TicketClosed             ticket_closed
    │   ├── GatePending              gate_pending
    │   ├── GrantReadOnly            grant_read_only
    │   ├── AlreadyForgotten         already_forgotten
    │   ├── NotActive                not_active
    │   ├── HoldActive               hold_active
    │   ├── AlreadyHeld              already_held
    │   └── NotHeld                  not_held
    ├── BudgetExceeded               budget_exceeded
    │   └── InlineBudgetExceeded     inline_budget_exceeded
    ├── EditFailed                   edit_failed
    │   ├── EditNoMatch              edit_no_match
    │   └── EditAmbiguous            edit_ambiguous
    ├── StaleUpdate                  stale_update
    ├── SecretDetected               secret_detected
    ├── ReviewRefused                review_refused
    │   ├── ContentMismatch          content_mismatch
    │   ├── NotQuarantined           not_quarantined
    │   └── SuccessorConflict        successor_conflict
    ├── AccessDenied                 access_denied
    │   ├── Unauthenticated          unauthenticated
    │   ├── ForgedRequest            forged_request
    │   └── MemoryDisabled           memory_disabled
    ├── TransferError                transfer_error
    │   ├── ExportTargetNotEmpty     export_target_not_empty
    │   ├── UnexportableDescription  unexportable_description
    │   ├── SnapshotInvalid          snapshot_invalid
    │   ├── UnknownFormatVersion     unknown_format_version
    │   ├── MigrateTargetNotEmpty    migrate_target_not_empty
    │   └── MigrateMismatch          migrate_mismatch
    ├── StoreError                   store_error
    │   ├── StoreBusy                store_busy
    │   ├── SchemaTooNew             schema_too_new
    │   └── IntegrityFailed          integrity_failed
    ├── EmbedderError                embedder_error
    │   ├── EmbedderFailed           embedder_failed
    │   └── DimensionMismatch        dimension_mismatch
    ├── RecallFailed                 recall_failed
    ├── ConfigInvalid                config_invalid
    │   └── KeyMissing               key_missing
    ├── SignatureInvalid             signature_invalid
    ├── ExtraMissing                 extra_missing
    └── ListenFailed                 listen_failed
        ├── InvalidPort              invalid_port
        └── PortInUse                port_in_use

Backend exceptions (``sqlite3.Error`` and friends) are mapped once, at the
storage boundary, to ``StoreError`` subclasses; nothing above storage sees a
driver exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Hint = str | Callable[[Mapping[str, Any]], str]  # a door's phrase for a fix

# The fixes a refusal may name (its ``fix`` detail), each door saying how it is done
# there (``RetainError.hinted``): the verb that mends what was refused.
FIXES = frozenset(
    {
        "act_as",  # act as a principal of a kind the verb allows (``allowed``)
        "grant",  # ask for a grant of ``action`` on ``on`` for ``principal``
        "add_project",  # create the project (``project``)
        "add_agent",  # register the agent (``agent``)
        "add_team",  # create the team (``team``)
        "find",  # look the name up by listing or searching
        "list_project",  # list what a project holds (``project``)
        "name_project",  # name the project the call means
        "rename_project",  # rename a project
        "reindex",  # make every search key again with the embedder in use
        "verify",  # check the store
        "rebuild",  # check the store and rebuild its derived data
        "export",  # a snapshot directory an export wrote
        "update",  # write again as an update of the memory that exists
        "force_import",  # import again, replacing what exists by the snapshot's version
        "home",  # point the store's home at another directory
        "redact",  # write again asking for each secret to be replaced by its marker
        "quarantine",  # read the quarantine queue (the record and its content_hash)
        "ticket",  # read the ticket something waits on (``ticket``)
        "release_hold",  # release the legal hold on the memory (``id``)
        "keygen",  # make a signing key and configure it
    }
)


class RetainError(Exception):
    """Root of every error retain raises on purpose."""

    code = "retain_error"

    def __init__(self, message: str, *, remedy: str = "", **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy
        self.details: dict[str, Any] = details

    def __str__(self) -> str:
        return f"{self.message}; {self.remedy}" if self.remedy else self.message

    def hinted(self, hints: Mapping[str, Hint]) -> RetainError:
        """This error with a door's way to do its fix added to the remedy: ``details``
        may name the fix (``fix``: one of ``FIXES``, its arguments among the details),
        and ``hints`` holds a door's phrase for each: a format string over the details,
        or a function of them. The service's remedy names no door's flag, route or
        argument; a door's hint does."""
        fix = self.details.get("fix")
        hint = hints.get(fix) if isinstance(fix, str) else None
        if hint is None:
            return self
        try:
            said = hint(self.details) if callable(hint) else hint.format(**self.details)
        except (KeyError, IndexError, ValueError):
            return self
        if said and said not in self.remedy:
            self.remedy = f"{self.remedy} ({said})" if self.remedy else said
        return self

    def to_dict(self) -> dict[str, Any]:
        """The error as doors publish it: code, message, remedy, details."""
        return {
            "code": self.code,
            "message": self.message,
            "remedy": self.remedy,
            "details": self.details,
        }


# -- bad input ---------------------------------------------------------------


class InvalidInput(RetainError):
    """A value the caller passed cannot be stored as given."""

    code = "invalid_input"


class InvalidName(InvalidInput):
    """A memory or project name breaks the naming rule."""

    code = "invalid_name"


class InvalidValue(InvalidInput):
    """A field's value is out of range or malformed (``details['field']`` says which)."""

    code = "invalid_value"


class InvalidTime(InvalidInput):
    """A timestamp, date or duration could not be parsed."""

    code = "invalid_time"


class DescriptionRequired(InvalidInput):
    """A new memory was written without a description."""

    code = "description_required"


class TooManyReferences(InvalidInput):
    """A memory would carry more references than the limit."""

    code = "too_many_references"


class NoProject(InvalidInput):
    """A write asked for the project tier with no project selected."""

    code = "no_project"


class RequestTooLarge(InvalidInput):
    """A request's body is larger than the server takes."""

    code = "request_too_large"


class QueryTooLong(InvalidInput):
    """A search asks for more than a search takes: a query string too long, too many
    query strings, or too many words or scanned terms (``details['measure']`` says
    which, with ``limit`` and ``actual``)."""

    code = "query_too_long"


class TranscriptInvalid(InvalidInput):
    """A transcript file (JSONL turns, or LoCoMo samples) cannot be read as one: its
    ``details`` name the ``line`` (JSONL), ``sample`` or ``session`` (LoCoMo) and the
    ``field`` that is wrong. Nothing was written."""

    code = "transcript_invalid"


class NoTerminal(InvalidInput):
    """An interactive step (an editor) was asked for with no terminal to run it on."""

    code = "no_terminal"


class KeyInvalid(InvalidInput):
    """A signing or public key that cannot be read as an Ed25519 key (``details['where']``
    names where it came from, never its value)."""

    code = "key_invalid"


# -- lookups -----------------------------------------------------------------


class NotFound(RetainError):
    """No memory answers to the name or id in the tiers looked at."""

    code = "not_found"


class ProjectNotFound(NotFound):
    """A project name no project row has."""

    code = "project_not_found"


class AgentNotFound(NotFound):
    """An agent name no registered agent has."""

    code = "agent_not_found"


class TeamNotFound(NotFound):
    """A team name no team row has."""

    code = "team_not_found"


class SessionNotFound(NotFound):
    """A session key no observation or boundary of that agent has named."""

    code = "session_not_found"


# -- conflicts ---------------------------------------------------------------


class Conflict(RetainError):
    """The write would break a uniqueness or emptiness rule, or claims what the store
    does not bear out."""

    code = "conflict"


class NameConflict(Conflict):
    """A global memory and a project memory would share one name."""

    code = "name_conflict"


class MemoryExists(Conflict):
    """A create-only write met a memory that already has the name."""

    code = "memory_exists"


class ProjectExists(Conflict):
    """A project of that name already exists."""

    code = "project_exists"


class AgentExists(Conflict):
    """An agent of that name is already registered in the realm."""

    code = "agent_exists"


class TeamExists(Conflict):
    """A team of that name already exists in the realm."""

    code = "team_exists"


class AmbiguousName(Conflict):
    """A name exists in several projects and no project was chosen."""

    code = "ambiguous_name"


class ProjectNotEmpty(Conflict):
    """A project still holds memories and cannot be removed."""

    code = "project_not_empty"


class EvidenceMismatch(Conflict):
    """Evidence given for ``verified`` does not bear the claim out: the memory or fact it
    names is not in the writer's view, not active, trusted below ``attested``, has no
    field at the path, or holds another value (``reason`` says which; values are never
    echoed)."""

    code = "evidence_mismatch"


class TrustCapped(Conflict):
    """A memory that was ever quarantined is trusted at most ``observed``, forever: a
    retier or write above that cap is refused."""

    code = "trust_capped"


class TicketClosed(Conflict):
    """A ticket (a proposal) was decided already, or expired: it takes no decision
    (``details['status']`` says how it closed)."""

    code = "ticket_closed"


class GatePending(Conflict):
    """A ticket waits at the policy gate for a second approver (``details``: the
    ``ticket`` and its ``expires_at``); an approval that moved it there is recorded."""

    code = "gate_pending"


class GrantReadOnly(Conflict):
    """A grant of ``config.toml`` cannot be revoked by a verb: it is the file's."""

    code = "grant_read_only"


class AlreadyForgotten(Conflict):
    """The item was erased already (``details``: its ``certificate``, the event id of
    the erasure, which ``certificate`` fetches)."""

    code = "already_forgotten"


class NotActive(Conflict):
    """A decision needs an active memory and the one named is not (``details``: its
    ``id`` and ``status``): a superseded memory is superseded once, a retracted or
    forgotten one takes no new relation."""

    code = "not_active"


class HoldActive(Conflict):
    """A legal hold stands on the memory, so it may not be forgotten or swept until the
    hold is released (``details``: the memory ``id``, the hold's ``reason``, ``held_by``
    and ``held_at``)."""

    code = "hold_active"


class AlreadyHeld(Conflict):
    """A hold was asked for on a memory a hold already stands on (``details`` name that
    hold): a second hold would record a reason no release could keep apart."""

    code = "already_held"


class NotHeld(Conflict):
    """A release was asked for on a memory no hold stands on (``details['id']``)."""

    code = "not_held"


# -- budgets -----------------------------------------------------------------


class BudgetExceeded(RetainError):
    """A write would take a bounded quantity past its budget."""

    code = "budget_exceeded"


class InlineBudgetExceeded(BudgetExceeded):
    """Inline bodies would total more than ``[memory] inline_max_bytes``."""

    code = "inline_budget_exceeded"


# -- edits -------------------------------------------------------------------


class EditFailed(RetainError):
    """An edit could not be applied to the body as it stands."""

    code = "edit_failed"


class EditNoMatch(EditFailed):
    """The text to replace does not occur in the body."""

    code = "edit_no_match"


class EditAmbiguous(EditFailed):
    """The text to replace occurs more than once and ``replace_all`` was not set."""

    code = "edit_ambiguous"


class StaleUpdate(RetainError):
    """The memory changed after the caller read it (compare-and-swap refused)."""

    code = "stale_update"


class SecretDetected(RetainError):
    """A write holds what looks like a credential (``retain.governance.secrets``): its
    kinds, fields and positions are in ``details['findings']`` (``{kind, field, start,
    end}`` each), never its value. Nothing was written."""

    code = "secret_detected"


# -- reviews -----------------------------------------------------------------


class ReviewRefused(RetainError):
    """A review of a quarantined record was refused; nothing was decided."""

    code = "review_refused"


class ContentMismatch(ReviewRefused):
    """The record's content is not the content the reviewer read (its hash differs)."""

    code = "content_mismatch"


class NotQuarantined(ReviewRefused):
    """The record is not waiting for review (never was, or was decided otherwise)."""

    code = "not_quarantined"


class SuccessorConflict(ReviewRefused):
    """A row holds the successor's id with no review of the record behind it."""

    code = "successor_conflict"


# -- export / import ---------------------------------------------------------


class TransferError(RetainError):
    """An export or import was refused as a whole."""

    code = "transfer_error"


class ExportTargetNotEmpty(TransferError):
    """The export directory exists and holds files."""

    code = "export_target_not_empty"


class UnexportableDescription(TransferError):
    """A description has no form YAML frontmatter can carry."""

    code = "unexportable_description"


class SnapshotInvalid(TransferError):
    """An import directory is not a readable snapshot."""

    code = "snapshot_invalid"


class UnknownFormatVersion(TransferError):
    """A snapshot was written in a format version this retain cannot read."""

    code = "unknown_format_version"


class MigrateTargetNotEmpty(TransferError):
    """``migrate`` copies a store only into an empty one."""

    code = "migrate_target_not_empty"


class MigrateMismatch(TransferError):
    """A copied store does not match its source (chain head or counts); nothing landed."""

    code = "migrate_mismatch"


# -- the store ---------------------------------------------------------------


class StoreError(RetainError):
    """The store itself failed or is in a state retain will not touch."""

    code = "store_error"


class StoreBusy(StoreError):
    """Another writer held the store past every retry."""

    code = "store_busy"


class SchemaTooNew(StoreError):
    """The store was migrated by a newer retain than this one."""

    code = "schema_too_new"


class IntegrityFailed(StoreError):
    """``verify`` found the search index, the vectors or the event chain unsound;
    ``report`` is the ``VerifyReport`` of what it found, when a verify raised it."""

    code = "integrity_failed"
    report: Any = None  # a VerifyReport (errors imports no model)


class AccessDenied(RetainError):
    """The principal may not do this: an agent's verb without an agent, or a memory
    of another identity."""

    code = "access_denied"


class Unauthenticated(AccessDenied):
    """A request to a server that has tokens came without a token it knows."""

    code = "unauthenticated"


class ForgedRequest(AccessDenied):
    """A console form came without the page's anti-forgery token or from another site, or
    a page was asked for under a host name a loopback server does not answer to."""

    code = "forged_request"


class MemoryDisabled(AccessDenied):
    """The installation turned memory off (``[memory] enabled = false``): a model is
    offered no memory verb. What is stored stays reachable through the other doors."""

    code = "memory_disabled"


# -- embeddings --------------------------------------------------------------


class EmbedderError(RetainError):
    """The embedder could not turn text into vectors retain can use."""

    code = "embedder_error"


class EmbedderFailed(EmbedderError):
    """The configured embedder failed while in use (an endpoint went away, say)."""

    code = "embedder_failed"


class DimensionMismatch(EmbedderError):
    """Vectors of two sizes met where one size was expected; nothing was mixed."""

    code = "dimension_mismatch"


class RecallFailed(RetainError):
    """Turn recall did not finish in time (or failed) under the ``fail`` policy."""

    code = "recall_failed"


class ConfigInvalid(RetainError):
    """The configuration file cannot be read or holds a bad value."""

    code = "config_invalid"


class KeyMissing(ConfigInvalid):
    """Something asked for the signing key and none is configured."""

    code = "key_missing"


class SignatureInvalid(RetainError):
    """A receipt or a chain head whose signature does not hold for the public key given,
    or whose chain hash is not the hash of the event it describes (``details['reason']``)."""

    code = "signature_invalid"


class ExtraMissing(RetainError):
    """A part of retain needs an optional extra (``retain[server]``, say) not installed."""

    code = "extra_missing"


# -- serving ------------------------------------------------------------------


class ListenFailed(RetainError):
    """A server could not listen where it was asked to (the address, a permission)."""

    code = "listen_failed"


class InvalidPort(ListenFailed):
    """A port that is not a whole number from 1 to 65535."""

    code = "invalid_port"


class PortInUse(ListenFailed):
    """Something else already listens on the port."""

    code = "port_in_use"


def all_error_classes() -> list[type[RetainError]]:
    """Every class of the tree, root included, in definition order."""
    seen: list[type[RetainError]] = []
    stack: list[type[RetainError]] = [RetainError]
    while stack:
        cls = stack.pop(0)
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen
