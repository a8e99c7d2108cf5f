"""The event log as JSON lines: what ``retain export --format jsonl`` writes, and what
``tools/check_log.py`` checks with the file and the store's public key alone.

One line per event, in ``seq`` order: every field its hash covers, the payload as
stored (an erased one as erasure left it), and ``key_id`` and ``signature`` when the
event was signed. When the store has a signing key the file ends with one more line,
``{"head": {"seq", "hash", "key_id", "signature"}}``: the chain head the export saw,
signed, so that a file cut short no longer matches it. The file is written whole or not
at all (beside its place, then moved there), mode 0600.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from retain.chrono import stamp
from retain.errors import ExportTargetNotEmpty, TransferError
from retain.model import Event
from retain.receipt import LogExport

if TYPE_CHECKING:
    from retain.signing import Signer

Signature = tuple[int, str, str]  # seq, key id, signature


def paired(
    events: Iterable[Event], signatures: Iterable[Signature]
) -> Iterator[tuple[Event, Signature | None]]:
    """Each event with its signature (None: unsigned); both run in ``seq`` order."""
    rows = iter(signatures)
    pending = next(rows, None)
    for event in events:
        while pending is not None and pending[0] < event.seq:
            pending = next(rows, None)
        if pending is not None and pending[0] == event.seq:
            yield event, pending
            pending = next(rows, None)
        else:
            yield event, None


def line(event: Event, signature: Signature | None) -> str:
    """One event as its line of the export (without the newline)."""
    data = {
        "seq": event.seq,
        "event_id": event.event_id,
        "realm": event.realm,
        "memory_id": event.memory_id,
        "kind": event.kind,
        "tx_time": stamp(event.tx_time),
        "principal": event.principal,
        "reason": event.reason,
        "payload": event.payload,
        "payload_digest": event.payload_digest,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }
    if signature is not None:
        data["key_id"], data["signature"] = signature[1], signature[2]
    return json.dumps(data, ensure_ascii=False)


def write(
    path: Path,
    events: Iterable[Event],
    signatures: Iterable[Signature],
    signer: Signer | None,
    progress: Callable[[int], None] | None = None,
) -> LogExport:
    """Write the log to ``path`` (which must not exist), whole or not at all."""
    from retain.signing import head_message

    if path.exists():
        raise ExportTargetNotEmpty(
            f"{path} exists already; an export of the log writes a new file",
            remedy="name a file that does not exist yet",
            path=str(path),
        )
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    head_seq, head_hash, count, signed = 0, "", 0, 0
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for event, signature in paired(events, signatures):
                out.write(line(event, signature) + "\n")
                count += 1
                signed += signature is not None
                head_seq, head_hash = event.seq, event.hash
                if progress is not None and count % 1000 == 0:
                    progress(count)
            head_signature = None
            if signer is not None:
                head_signature = signer.sign(head_message(head_seq, head_hash))
                head = {
                    "seq": head_seq,
                    "hash": head_hash,
                    "key_id": signer.key_id,
                    "signature": head_signature,
                }
                out.write(json.dumps({"head": head}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except OSError as exc:
        raise TransferError(
            f"cannot write the log to {path}: {exc.strerror or exc}",
            remedy="name a file in a directory you may write, with room for the log",
            path=str(path),
        ) from exc
    finally:
        if partial.exists():
            partial.unlink()
    return LogExport(
        path=str(path),
        events=count,
        signed=signed,
        head_seq=head_seq,
        head_hash=head_hash,
        key_id=signer.key_id if signer is not None else None,
        head_signature=head_signature,
    )
