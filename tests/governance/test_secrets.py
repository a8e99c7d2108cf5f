"""The secret detectors: one credential of each kind found, and one near miss of each
not; the places found; redaction; ``[secrets]``; and no value in what a refusal says."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from retain import errors
from retain.chrono import parse_stamp
from retain.config import load_settings
from retain.governance import secrets
from retain.governance.secrets import Finding
from retain.model import Load, Memory, Status, Trust

MakeMemory = Callable[..., Memory]


@pytest.fixture
def make_memory() -> MakeMemory:
    """A memory of the given fields (the rest plain), as a store would hold it."""
    when = parse_stamp("2026-03-01T12:00:00.000000Z")

    def make(**given: Any) -> Memory:
        fields: dict[str, Any] = dict(
            id="01J0000000000000000000000", realm="default", scope="global", name="note",
            description="a note", body="", tags=(), priority=5, load=Load.INDEX,
            references=(), source="", subject=None, predicate=None, trust=Trust.ATTESTED,
            status=Status.ACTIVE, ever_quarantined=False, supersedes=None, content_hash="",
            author="operator:test", created_at=when, updated_at=when, verified_at=when,
            expires_at=None, valid_from=None, valid_to=None, read_count=0,
        )  # fmt: skip
        return Memory(**{**fields, **given})

    return make


# Credentials of each kind's shape (made up, or the providers' documented examples).
_GCP_KEY = (
    "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"
)
SECRET = {
    "gcp_service_account": _GCP_KEY,
    "private_key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdefABCDEF\n"
        "-----END RSA PRIVATE KEY-----"
    ),
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gitlab_token": "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn",
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "anthropic_key": "sk-ant-api03-" + "Ab3De6Gh9Jk2" * 8 + "-xyzAA",
    "openai_key": "sk-proj-" + "Ab3" * 10 + "T3BlbkFJ" + "Zy9" * 8,
    "google_api_key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "azure_storage_key": "Ab1/" * 21 + "xy==",
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ),
    "url_password": "s3cr3tPw",
}
# Where each stands in a text: (before, after) the secret.
AROUND = {
    "gcp_service_account": (
        '{"type": "service_account", "project_id": "p", "private_key": "',
        '", "client_email": "a@p.iam.gserviceaccount.com"}',
    ),
    "aws_secret_key": ("aws_secret_access_key = ", "\n"),
    "azure_storage_key": ("DefaultEndpointsProtocol=https;AccountName=x;AccountKey=", ";x=y"),
    "url_password": ("postgres://app:", "@db.internal:5432/main"),
}
# What looks a little like each kind and is not one.
NEAR_MISS = {
    "gcp_service_account": '{"type": "service_account", "private_key": "env:GCP_KEY"}',
    "private_key": (
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----\n"
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n"
    ),
    "aws_access_key": "AKIAIOSFODNN7EXAMPL, akiaiosfodnn7example, XAKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": (
        "commit 0123456789abcdef0123456789abcdef01234567; "
        "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}"
    ),
    "github_token": "ghp_short, the ghp_ prefix, ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R",
    "gitlab_token": "glpat-short; glpat-tokens-are-described-here",
    "slack_token": "xoxo-hugs and an xoxb-token",
    "stripe_key": "pk_live_4eC39HqLyjWDarjtT1zdp7dc (publishable)",
    "anthropic_key": "sk-ant-api03-short",
    "openai_key": "sk-learn, sklearn, task-" + "a1" * 24 + ", sk-" + "a" * 48,
    "google_api_key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",  # one character short
    "azure_storage_key": "Ab1/" * 21 + "xy== and AccountName=x;AccountKey=<key>",
    "jwt": "eyJhbGciOiJIUzI1NiJ9 and eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "url_password": (
        "https://host/path https://user@host postgres://app:${PGPASSWORD}@db/x "
        "git@github.com:org/repo http://localhost:8080/a@b mysql://u:<password>@h"
    ),
}
ORDINARY = [
    "123e4567-e89b-12d3-a456-426614174000",  # a UUID
    "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # a git SHA
    "https://example.com/docs/page?x=1#top",
    # a base64 paragraph that is no key
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5Erk"
    "JggolVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ==",
    "The deploy token lives in $DEPLOY_TOKEN (owner: ops), see config/credentials.map.json.",
]


def text_of(kind: str) -> tuple[str, int]:
    """A sentence holding ``kind``'s secret, and where the secret starts in it."""
    before, after = AROUND.get(kind, ("the key is ", " for now"))
    return before + SECRET[kind] + after, len(before)


def test_every_kind_has_a_hit_and_a_near_miss() -> None:
    assert set(SECRET) == set(NEAR_MISS) == set(secrets.KINDS)


@pytest.mark.parametrize("kind", secrets.KINDS)
def test_each_kind_is_found_where_it_stands(kind: str) -> None:
    text, start = text_of(kind)
    assert secrets.scan(text, "body") == [Finding(kind, "body", start, start + len(SECRET[kind]))]


@pytest.mark.parametrize("kind", secrets.KINDS)
def test_a_near_miss_of_each_kind_is_no_secret(kind: str) -> None:
    assert secrets.scan(NEAR_MISS[kind], "body") == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_no_secret(text: str) -> None:
    assert secrets.scan(text, "body") == []


@pytest.mark.parametrize("kind", secrets.KINDS)
def test_redaction_writes_the_marker_and_leaves_nothing_to_find(kind: str) -> None:
    text, start = text_of(kind)
    found = secrets.scan(text, "body")
    clean = secrets.redact(text, found)
    assert SECRET[kind] not in clean
    assert clean[start:].startswith(f"[redacted:{kind}]")
    assert secrets.scan(clean, "body") == []


def test_positions_are_characters_of_the_field_in_order() -> None:
    text = f"é {SECRET['github_token']} then {SECRET['aws_access_key']}"
    found = secrets.scan(text, "description")
    assert [(f.kind, text[f.start : f.end]) for f in found] == [
        ("github_token", SECRET["github_token"]),
        ("aws_access_key", SECRET["aws_access_key"]),
    ]
    assert found[0].start == 2  # characters, not bytes: é is two bytes
    assert secrets.redact(text, found) == "é [redacted:github_token] then [redacted:aws_access_key]"


def test_a_private_key_cut_short_is_found_to_its_last_line() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n\nbye"
    (found,) = secrets.scan(text, "body")
    assert text[found.start : found.end].endswith("5vbmU")


def test_the_service_account_claims_its_key_before_the_pem_detector() -> None:
    text, start = text_of("gcp_service_account")
    assert [f.kind for f in secrets.scan(text, "body")] == ["gcp_service_account"]
    assert [f.kind for f in secrets.scan(_GCP_KEY.replace("\\n", "\n"), "body")] == ["private_key"]


def test_a_placeholder_password_is_where_the_credential_lives() -> None:
    for url in ("postgres://app:${DB_PASSWORD}@db/x", "redis://:$REDIS_PASSWORD@cache:6379",
                "https://u:****@h", "ftp://u:%(password)s@h"):  # fmt: skip
        assert secrets.scan(url, "source") == [], url


def test_every_field_of_a_memory_is_scanned_by_its_name(make_memory: MakeMemory) -> None:
    memory = make_memory(
        description=f"uses {SECRET['aws_access_key']}",
        tags=("infra", SECRET["github_token"]),
        references=(f"postgres://app:{SECRET['url_password']}@db/x",),
        source=SECRET["stripe_key"],
        subject=SECRET["google_api_key"],
        thread=SECRET["gitlab_token"],
        metadata={"note": {"k": SECRET["slack_token"]}, "list": ["x", SECRET["jwt"]]},
    )
    assert [(f.kind, f.field) for f in secrets.findings_of(memory)] == [
        ("aws_access_key", "description"),
        ("github_token", "tags[1]"),
        ("url_password", "references[0]"),
        ("stripe_key", "source"),
        ("google_api_key", "subject"),
        ("gitlab_token", "thread"),
        ("slack_token", "metadata.note.<0>"),  # a writer's key by place: it may be a secret
        ("jwt", "metadata.list[1]"),
    ]
    clean = secrets.redacted(memory, secrets.findings_of(memory))
    assert secrets.findings_of(clean) == []
    assert clean.tags == ("infra", "[redacted:github_token]")
    assert clean.metadata["list"] == ["x", "[redacted:jwt]"]
    assert clean.metadata["redacted"] == [  # in the order of KINDS
        "aws_access_key", "github_token", "gitlab_token", "slack_token", "stripe_key",
        "google_api_key", "jwt", "url_password",
    ]  # fmt: skip


def test_a_fact_value_is_scanned_as_value(make_memory: MakeMemory) -> None:
    fact = make_memory(body=SECRET["openai_key"], subject="ci", predicate="token")
    assert [(f.kind, f.field) for f in secrets.findings_of(fact)] == [("openai_key", "value")]


def test_a_name_cannot_be_redacted(make_memory: MakeMemory) -> None:
    memory = make_memory(name=SECRET["aws_access_key"])
    found = secrets.findings_of(memory)
    with pytest.raises(errors.SecretDetected) as caught:
        secrets.redacted(memory, found)
    assert SECRET["aws_access_key"] not in str(caught.value)


def test_the_refusal_names_kind_field_and_place_never_the_value() -> None:
    text, start = text_of("github_token")
    error = secrets.refusal(secrets.scan(text, "body"))
    end = start + len(SECRET["github_token"])
    assert error.code == "secret_detected"
    assert error.details["findings"] == [
        {"kind": "github_token", "field": "body", "start": start, "end": end}
    ]
    assert error.details["kinds"] == ["github_token"] and error.details["fix"] == "redact"
    assert f"github_token in body at {start}-{end}" in error.message
    said = json.dumps(error.to_dict()) + str(error)
    assert SECRET["github_token"] not in said and SECRET["github_token"][4:20] not in said


# -- [secrets] in config.toml --------------------------------------------------------


def _settings(tmp_path: Path, text: str) -> secrets.SecretSettings:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return load_settings(tmp_path).secrets


def test_a_configured_pattern_adds_a_kind_and_its_secret_group(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        '[secrets]\npatterns = { acme_token = "acme_[0-9a-f]{8}", '
        'vault = "hvs\\\\.(?P<secret>[A-Za-z0-9]{8,})" }\n',
    )
    text = "id acme_0123abcd and hvs.AbCdEf12345"
    assert [(f.kind, text[f.start : f.end]) for f in secrets.scan(text, "body", settings)] == [
        ("acme_token", "acme_0123abcd"),
        ("vault", "AbCdEf12345"),
    ]
    assert secrets.scan(text, "body") == []  # the defaults know no such kind


def test_the_documented_example_reads(tmp_path: Path) -> None:
    concepts = Path(__file__).parents[2] / "docs" / "concepts.md"
    block = concepts.read_text(encoding="utf-8").split("```toml\n[secrets]\n", 1)[1]
    settings = _settings(tmp_path, "[secrets]\n" + block.split("```", 1)[0])
    assert [d.kind for d in settings.patterns] == ["acme_token", "vault_token"]
    assert "jwt" in settings.disabled


def test_a_disabled_kind_is_not_looked_for(tmp_path: Path) -> None:
    settings = _settings(tmp_path, '[secrets]\ndisabled = ["jwt", "aws_access_key"]\n')
    text = f"{SECRET['jwt']} {SECRET['aws_access_key']} {SECRET['github_token']}"
    assert [f.kind for f in secrets.scan(text, "body", settings)] == ["github_token"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('patterns = { bad = "acme_[0-9" }', "secrets.patterns.bad"),
        ('patterns = { empty = "x*" }', "secrets.patterns.empty"),
        ('patterns = { jwt = "x" }', "secrets.patterns.jwt"),
        ('patterns = { Bad-Name = "x" }', "secrets.patterns.Bad-Name"),
        ("patterns = { n = 3 }", "secrets.patterns"),
        ('disabled = ["jwt", "no_such_kind"]', "secrets.disabled"),
        ('disabled = "jwt"', "secrets.disabled"),
        ('colour = "red"', "secrets.colour"),
    ],
)
def test_bad_secrets_settings_are_refused_by_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(errors.ConfigInvalid) as caught:
        _settings(tmp_path, f"[secrets]\n{text}\n")
    assert caught.value.details["key"] == key


def test_a_configured_kind_may_be_disabled(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, '[secrets]\npatterns = { t = "tok_[0-9]{4}" }\ndisabled = ["t"]\n'
    )
    assert secrets.scan("tok_1234", "body", settings) == []
