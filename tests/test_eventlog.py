"""The event log exported as JSON lines (``export_log``, ``retain export --format
jsonl``) and the standalone checker ``tools/check_log.py``, run as a program of its own
against an export of a real store (both backends) and against tampered copies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ServiceFactory, raw_sql
from tests.test_tamper import a_log, certify, erase

from retain import eventlog, ledger, signing
from retain.errors import AccessDenied, ExportTargetNotEmpty, TransferError
from retain.service import MemoryService

CHECKER = Path(__file__).parent.parent / "tools" / "check_log.py"


@pytest.fixture
def key() -> signing.Signer:
    return signing.generate()


@pytest.fixture
def signed(
    make_service: ServiceFactory, key: signing.Signer, monkeypatch: pytest.MonkeyPatch
) -> MemoryService:
    monkeypatch.setenv(signing.ENV, key.private_text)
    return make_service()


def check_log(log: Path, *keys: str) -> tuple[int, dict[str, Any]]:
    """``tools/check_log.py LOG --json`` in an interpreter of its own: (exit, outcome)."""
    args = [sys.executable, str(CHECKER), str(log), "--json"]
    for text in keys:
        args += ["--public-key", text]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in log.read_text(encoding="utf-8").splitlines()]


def rewrite(log: Path, records: list[dict[str, Any]], name: str) -> Path:
    out = log.with_name(name)
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


def test_an_export_of_a_signed_store_checks_with_the_public_key_alone(
    signed: MemoryService, key: signing.Signer, tmp_path: Path
) -> None:
    log_of = a_log(signed)
    done = signed.export_log(tmp_path / "log.jsonl")
    assert (done.events, done.signed, done.head_seq) == (len(log_of), len(log_of), len(log_of))
    assert (done.key_id, done.head_hash) == (key.key_id, log_of[-1].hash)
    records = lines(tmp_path / "log.jsonl")
    assert [r["seq"] for r in records[:-1]] == [e.seq for e in log_of]
    assert records[-1] == {"head": done.to_dict()["head"]}
    first = records[0]
    assert first["payload"] == log_of[0].payload and first["key_id"] == key.key_id
    assert (tmp_path / "log.jsonl").stat().st_mode & 0o777 == 0o600
    status, outcome = check_log(tmp_path / "log.jsonl", key.public.text)
    assert (status, outcome["ok"], outcome["events"]) == (0, True, len(log_of))
    assert outcome["signed_events"] == len(log_of) and outcome["head"]["signed"] is True


@pytest.mark.parametrize(
    ("tamper", "seq", "problem"),
    [
        (lambda r: r[3].update(payload=r[3]["payload"].replace("beta", "omega")), 4,
         "event 4 payload does not match its digest"),
        (lambda r: r[2].update(hash="f" * 64), 3, "event 3 hash does not match"),
        (lambda r: r[1].update(principal="operator:mallory"), 2, "event 2 hash does not match"),
        (lambda r: r.pop(2), 3, "event seq 4 follows a gap"),
        (lambda r: r[4].update(signature=r[3]["signature"]), 5,
         "event 5 signature does not hold"),
        (lambda r: [r[4].pop("key_id"), r[4].pop("signature")], 5,
         "event 5 is not signed, though event 1 before it is"),
        (lambda r: r.pop(-2), 4, "the head line is not the last event (4)"),
    ],
)  # fmt: skip
def test_a_tampered_export_fails_at_the_first_broken_seq(
    signed: MemoryService, key: signing.Signer, tmp_path: Path, tamper: Any, seq: int, problem: str
) -> None:
    a_log(signed)
    signed.export_log(tmp_path / "log.jsonl")
    records = lines(tmp_path / "log.jsonl")
    tamper(records)
    status, outcome = check_log(
        rewrite(tmp_path / "log.jsonl", records, "bad.jsonl"), key.public.text
    )
    assert (status, outcome["broken_at"]) == (1, seq)
    assert outcome["problem"].startswith(problem)


def test_the_checker_names_a_signature_by_a_key_it_was_not_given(
    signed: MemoryService, tmp_path: Path
) -> None:
    a_log(signed)
    signed.export_log(tmp_path / "log.jsonl")
    other = signing.generate()
    status, outcome = check_log(tmp_path / "log.jsonl", other.public.text)
    assert (status, outcome["broken_at"]) == (1, 1)
    assert "which was not given" in outcome["problem"]


def test_an_unsigned_store_exports_a_log_that_checks_without_a_key(
    service: MemoryService, tmp_path: Path
) -> None:
    a_log(service)
    done = service.export_log(tmp_path / "log.jsonl")
    assert (done.signed, done.head_signature) == (0, None)
    records = lines(tmp_path / "log.jsonl")
    assert "head" not in records[-1] and "signature" not in records[-1]
    status, outcome = check_log(tmp_path / "log.jsonl")
    assert (status, outcome["events"], outcome["signed_events"]) == (0, 5, 0)


def test_erased_events_pass_the_checker_only_with_their_certificates(
    service: MemoryService, tmp_path: Path
) -> None:
    a_log(service)
    cert = certify(service, [2])
    erase(service, 2, [cert.event_id])
    service.export_log(tmp_path / "log.jsonl")
    status, outcome = check_log(tmp_path / "log.jsonl")
    assert (status, outcome["erased_events"]) == (0, 1)
    records = lines(tmp_path / "log.jsonl")
    erased = json.loads(records[1]["payload"])
    assert erased["erased"] == [cert.event_id] and erased["body"] == ""
    # a certificate that does not list the seq
    records[-1]["payload"] = ledger.canonical({"erased_events": [3]})
    records[-1]["payload_digest"] = ledger.digest(records[-1]["payload"])
    records[-1]["hash"] = ledger.event_hash(**{
        k: records[-1][k] for k in (
            "prev_hash", "seq", "event_id", "realm", "memory_id", "kind", "tx_time",
            "principal", "reason", "payload_digest",
        )
    })  # fmt: skip
    status, outcome = check_log(rewrite(tmp_path / "log.jsonl", records, "unlisted.jsonl"))
    assert (status, outcome["broken_at"]) == (1, 2)
    assert "does not list it" in outcome["problem"]
    # an erased marker whose certificate is not in the log (cut off)
    status, outcome = check_log(rewrite(tmp_path / "log.jsonl", records[:-1], "cut.jsonl"))
    assert (status, outcome["broken_at"]) == (1, 2)
    assert "is not a later forget event" in outcome["problem"]


def test_the_export_is_whole_or_not_at_all_and_never_overwrites(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_log(service)
    (tmp_path / "log.jsonl").write_text("kept\n")
    with pytest.raises(ExportTargetNotEmpty):
        service.export_log(tmp_path / "log.jsonl")
    assert (tmp_path / "log.jsonl").read_text() == "kept\n"
    written = []

    def full_disk(event: Any, signature: Any) -> str:
        if written:
            raise OSError(28, "No space left on device")
        written.append(event.seq)
        return "{}"

    monkeypatch.setattr(eventlog, "line", full_disk)
    with pytest.raises(TransferError, match="No space left"):
        service.export_log(tmp_path / "other.jsonl")
    assert written == [1]
    assert sorted(p.name for p in tmp_path.glob("*.jsonl*")) == ["log.jsonl"]  # no partial


def test_only_an_operator_exports_the_log(make_service: ServiceFactory, tmp_path: Path) -> None:
    operator = make_service()
    operator.add_agent("ada")
    for principal in ("agent:ada", "app:ci", "steward", "anonymous"):
        with pytest.raises(AccessDenied):
            make_service(principal=principal).export_log(tmp_path / f"{principal}.jsonl")
    assert not list(tmp_path.glob("*.jsonl"))


def test_the_checker_imports_nothing_of_retain(service: MemoryService, tmp_path: Path) -> None:
    a_log(service)
    service.export_log(tmp_path / "log.jsonl")
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['check_log.py', {str(tmp_path / 'log.jsonl')!r}]\n"
        "try:\n"
        f"    runpy.run_path({str(CHECKER)!r}, run_name='__main__')\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'retain'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_payload_edited_in_the_store_shows_in_its_export(
    service: MemoryService, tmp_path: Path
) -> None:
    a_log(service)
    raw_sql(service, "UPDATE events SET payload = replace(payload, 'gamma', 'delta') WHERE seq = 5")
    service.export_log(tmp_path / "log.jsonl")  # an export copies the log as it is
    status, outcome = check_log(tmp_path / "log.jsonl")
    assert (status, outcome["broken_at"]) == (1, 5)


def test_a_store_after_forget_verifies_and_its_export_checks_signed(
    signed: MemoryService, key: signing.Signer, tmp_path: Path
) -> None:
    """The erasure slice's ``forget`` rewrites payloads; the chain, the signatures and
    the exported log still check, each rewritten event accounted for by its certificate."""
    signed.write("plan", description="The launch plan", body="ship on friday")
    signed.edit("plan", "friday", "monday")
    signed.forget("plan", reason="asked to", compact=False)
    report = signed.verify()
    assert report.ok and report.erased_events >= 2 and report.signed_events == report.events
    signed.export_log(tmp_path / "log.jsonl")
    status, outcome = check_log(tmp_path / "log.jsonl", key.public.text)
    assert (status, outcome["erased_events"]) == (0, report.erased_events)
    assert "friday" not in (tmp_path / "log.jsonl").read_text(encoding="utf-8")
