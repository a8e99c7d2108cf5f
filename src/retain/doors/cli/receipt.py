"""The ``retain receipt`` commands: check a receipt offline with the store's public key
(``verify``: no store is opened), print the store's public key, make a signing key."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

import click

from retain.doors.cli.output import emit_json, emit_said, say
from retain.doors.cli.refusal import refusals
from retain.doors.cli.root import PathParameter, cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path

    from retain.signing import PublicKey


@cli.group()
def receipt() -> None:
    """Check a write's receipt with the store's public key; show or make the key; the
    signed chain head."""


def _public(text: str) -> PublicKey:
    """``--public-key``: the key itself (base64 or PEM), or a file holding it."""
    from pathlib import Path

    from retain import signing

    path = Path(text)
    if "-----BEGIN" not in text and len(text) < 4096 and path.is_file():
        return signing.public_key(signing.read_key_file(path, "public key"), str(path))
    return signing.public_key(text, "--public-key")


@receipt.command("verify")
@click.argument("source", metavar="FILE|-", type=click.File("r", encoding="utf-8"))
@click.option(
    "--public-key",
    "public_key",
    required=True,
    metavar="KEY",
    help="The store's public key (base64 of its 32 bytes, or PEM), or a file holding it.",
)
@format_option
def verify_receipt(source: IO[str], public_key: str, fmt: str) -> None:
    """Check the receipt in FILE (or on stdin, -) with the store's public key alone.

    FILE holds a receipt, or a write's JSON result that carries one (what `--format json`
    prints). No store is opened: the receipt's chain hash is recomputed from its fields
    and its signature checked against KEY."""
    import json

    from retain import receipt as receipts
    from retain.errors import SignatureInvalid

    with refusals(fmt):
        text = source.read()
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SignatureInvalid(
                "the text given is not JSON, so it holds no receipt to verify",
                remedy="give the receipt as the store issued it: the JSON of a write's result "
                "or of its receipt",
                reason="not_json",
            ) from exc
        checked = receipts.verify(receipts.Receipt.from_dict(data), _public(public_key))
        emit_said(
            fmt,
            {"verified": True, "receipt": checked.to_dict()},
            f"Receipt {checked.event_id} verifies: event {checked.seq} ({checked.kind}) by "
            f"{checked.principal} at {checked.tx_time}, signed by key {checked.key_id}.",
        )


@receipt.command("public-key")
@home_option
@format_option
def public_key(home: Path | None, fmt: str) -> None:
    """Print the public key of the store's signing key (what `receipt verify` and
    tools/check_log.py take)."""
    from retain import signing

    with opened(home, fmt) as service:
        public = signing.require(service.store.signer).public
        emit_said(fmt, {"key_id": public.key_id, "public_key": public.text}, public.text)


@receipt.command("head")
@home_option
@format_option
def head(home: Path | None, fmt: str) -> None:
    """Print the event log's last event (seq and hash), signed when the store has a
    signing key: what an exported log must end at."""
    with opened(home, fmt) as service:
        found = service.chain_head()
        said = f"head: event {found.seq}, hash {found.hash}"
        if found.signature is not None:
            said += f", signed by key {found.key_id}: {found.signature}"
        emit_said(fmt, found.to_dict(), said)


@receipt.command("keygen")
@click.option(
    "--out",
    required=True,
    type=PathParameter(dir_okay=False),
    help="The file to write the new private key to (mode 0600; never overwritten).",
)
@format_option
def keygen(out: Path, fmt: str) -> None:
    """Make a new Ed25519 signing key in a file of its own and print its public key.

    Name the file as key_file under [signing] in config.toml (or put its contents in
    $RETAIN_SIGNING_KEY) for the store to sign with it. The private key is written to
    the file alone, never printed."""
    import os

    from retain import signing
    from retain.errors import KeyInvalid

    with refusals(fmt):
        made = signing.generate()
        try:
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise KeyInvalid(
                f"cannot write a new key to {out}: {exc.strerror}",
                remedy="name a file that does not exist yet, in a directory you may write",
                where=str(out),
            ) from exc
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(made.private_text + "\n")
        data = {"key_file": str(out), "key_id": made.key_id, "public_key": made.public.text}
        if fmt == "json":
            emit_json(data)
            return
        say(f"Wrote a new signing key (key {made.key_id}) to {out}.")
        say(f"Public key: {made.public.text}")
        say(f'To sign with it, put key_file = "{out}" under [signing] in config.toml.')
