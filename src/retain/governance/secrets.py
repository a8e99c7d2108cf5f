"""Secrets: what must never be stored as a value, found in the text a write holds.

Memory holds where a credential lives (the environment variable holding it, its owner, a
relative path), never the credential. ``scan`` finds the shapes of credentials in a text
and returns ``Finding``s: the kind, the field, and where (``start``/``end``, characters
from 0, end exclusive), never the value. ``redact`` puts ``[redacted:<kind>]`` in each
place instead. ``findings_of`` scans every text field of a memory, ``redacted`` rewrites
them, and ``refusal`` is the ``secret_detected`` error naming kinds, fields and
positions.

The built-in kinds (``KINDS``), most specific first, claim overlapping spans in that
order: ``gcp_service_account`` (a service-account JSON's private key), ``private_key``
(a PEM or PGP private key block), ``aws_access_key``, ``aws_secret_key`` (after a word
that says so), ``github_token``, ``gitlab_token``, ``slack_token`` (tokens and incoming
webhooks), ``stripe_key`` (secret and restricted, not publishable), ``anthropic_key``,
``openai_key``, ``google_api_key``, ``azure_storage_key`` (after ``AccountKey=`` or a
word that says so), ``jwt`` (a signed JSON web token) and ``url_password`` (the password
of ``scheme://user:password@host``; a placeholder such as ``${DB_PASSWORD}`` is not
one). ``[secrets]`` in config.toml adds kinds (``patterns``, matched after the built-in
ones) and turns kinds off (``disabled``): ``SecretSettings``.

The shapes are kept tight: a git SHA, a UUID, a URL without a password, a public key
or a paragraph of base64 is not a secret. Each detector names literal hints, at least
one of which a text must hold (case-folded) before its expression runs, so a text with
none costs a few substring tests.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from retain.errors import SecretDetected
from retain.model import CALLER

if TYPE_CHECKING:
    from retain.model import Memory
    from retain.write_results import WriteRequest

KIND_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")  # a kind's name: it fits in a tag's marker
REDACTED_KEY = "redacted"  # metadata key: the kinds a redaction replaced


def marker(kind: str) -> str:
    """What a redaction writes in a secret's place."""
    return f"[redacted:{kind}]"


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret's place: its kind, the field holding it, and its span in that field's
    text (characters from 0, ``end`` exclusive). Never the value."""

    kind: str
    field: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "start": self.start, "end": self.end}


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of secret: its expressions (the span is the group ``secret`` when the
    expression has one, else the whole match), the literal hints a text must hold one
    of (lower case; none: always run), what the whole text must also hold (``needs``),
    and a test a match must pass (``keep``); or, for a shape an expression would find
    slowly, a function finding its spans (``find``)."""

    kind: str
    patterns: tuple[re.Pattern[str], ...]
    hints: tuple[str, ...] = ()
    needs: re.Pattern[str] | None = None
    keep: Callable[[str], bool] | None = None
    find: Callable[[str], Iterable[tuple[int, int]]] | None = None

    def might(self, lowered: str) -> bool:
        """Whether a text (case-folded) holds one of the hints, so may hold this kind."""
        return not self.hints or any(hint in lowered for hint in self.hints)

    def spans(self, text: str, lowered: str) -> Iterable[tuple[int, int]]:
        if not self.might(lowered):
            return
        if self.needs is not None and not self.needs.search(text):
            return
        if self.find is not None:
            yield from self.find(text)
        for pattern in self.patterns:
            grouped = "secret" in pattern.groupindex
            for match in pattern.finditer(text):
                start, end = match.span("secret") if grouped else match.span()
                if end <= start:
                    continue
                if self.keep is None or self.keep(text[start:end]):
                    yield start, end


@dataclass(frozen=True, slots=True)
class SecretSettings:
    """``[secrets]``: kinds added by configuration (compiled when it was read) and the
    kinds turned off (built-in or added)."""

    patterns: tuple[Detector, ...] = ()
    disabled: frozenset[str] = frozenset()

    def detectors(self) -> tuple[Detector, ...]:
        return _chosen(self)[0]

    def active(self, lowered: str) -> list[Detector]:
        """The detectors that may find something in ``lowered`` (a case-folded text):
        those without hints, and those with a hint it holds."""
        detectors, hints = _chosen(self)
        present = {at for hint, at in hints if hint in lowered}
        return [d for at, d in enumerate(detectors) if not d.hints or at in present]


@functools.lru_cache(maxsize=64)
def _chosen(
    settings: SecretSettings,
) -> tuple[tuple[Detector, ...], tuple[tuple[str, int], ...]]:
    """The detectors ``settings`` leave on, and every hint of theirs with its detector's
    place (looked for in one pass: a third faster than detector by detector)."""
    detectors = tuple(
        d for d in (*_built_in(), *settings.patterns) if d.kind not in settings.disabled
    )
    return detectors, tuple((hint, at) for at, d in enumerate(detectors) for hint in d.hints)


DEFAULT = SecretSettings()

# -- the built-in kinds ---------------------------------------------------------------

_B64 = "A-Za-z0-9+/"
_ASSIGN = r"""["']?\s*(?:=>|:=|[:=])\s*["']?"""  # key = value, key: "value", key => value
_PLACEHOLDER = re.compile(
    r"""(?ix) \$\{?\w+\}? | \{\{.*\}\} | <[^<>]*> | %\(\w+\)s | \*+ | x+ | \.\.\.|…
    | password | passwd | pass | pwd | secret | redacted | \[redacted:[a-z0-9_]+\]"""
)


def _not_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is None


def _mixed(value: str) -> bool:
    """Random key material: upper and lower case letters and digits (a hex digest or a
    word is not)."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


def _compile(*sources: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(source) for source in sources)


KINDS = (
    "gcp_service_account",
    "private_key",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "stripe_key",
    "anthropic_key",
    "openai_key",
    "google_api_key",
    "azure_storage_key",
    "jwt",
    "url_password",
)


PEM_MAX = 16384  # the most characters a private key block spans to its END line


@functools.cache
def _pem() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    label = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    # the lines of key material after a BEGIN line (escaped \n too, as in JSON)
    lines = r"(?:(?:\r?\n|\\n)(?:[A-Za-z-]+:[^\n\\]*|[" + _B64 + r"=]{16,}))+"
    return re.compile("-----BEGIN " + label), re.compile("-----END " + label), re.compile(lines)


def _private_keys(text: str) -> Iterable[tuple[int, int]]:
    """PEM and PGP private key blocks: from a BEGIN line to its END line, or, for a
    block cut short, to the last line of key material after it. Found by searching for
    the lines, not by one expression, which would take quadratic time over many BEGIN
    lines without an END."""
    begin, end, lines = _pem()
    at, stop = 0, -1  # the next END line's place, looked for once past each
    while (opening := begin.search(text, at)) is not None:
        if stop < opening.end():
            stop = text.find("-----END ", opening.end())
            stop = len(text) if stop < 0 else stop
        near = stop - opening.end() <= PEM_MAX
        closing = end.match(text, stop) if near and stop < len(text) else None
        cut = closing or lines.match(text, opening.end())
        at = cut.end() if cut is not None else opening.end()
        if cut is not None:
            yield opening.start(), cut.end()


@functools.cache
def _built_in() -> tuple[Detector, ...]:
    """The built-in detectors, in ``KINDS`` order (compiled on the first scan)."""
    detectors = (
        Detector(
            "gcp_service_account",
            _compile(r'"private_key"\s*:\s*"(?P<secret>-----BEGIN[^"]{16,}?)"'),
            hints=('"private_key"',),
            needs=re.compile(r'"type"\s*:\s*"service_account"'),
        ),
        Detector("private_key", (), hints=("private key",), find=_private_keys),
        Detector(
            "aws_access_key",
            _compile(
                r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"
            ),
            hints=("akia", "asia", "abia", "acca", "a3t"),
        ),
        Detector(
            "aws_secret_key",
            _compile(
                r"(?i:aws[\w.\-]{0,20}?secret[\w.\-]{0,20}|secret[_\-.]?access[_\-.]?key)"
                + _ASSIGN
                + rf"(?P<secret>[{_B64}]{{40}})(?![{_B64}=])"
            ),
            hints=("secret",),
            keep=_mixed,
        ),
        Detector(
            "github_token",
            _compile(
                r"gh(?<![A-Za-z0-9_]gh)(?:[pousr]_[A-Za-z0-9]{36,251}"
                r"|ithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?![A-Za-z0-9_])"
            ),
            hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        ),
        Detector(
            "gitlab_token",
            _compile(
                r"gl(?<![\w-]gl)(?:pat|dt|rt|ptt|oas|soat|ffct|cbt|imt|agent)-"
                r"[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{2}\.[A-Za-z0-9_\-]{9,})?(?![\w-])"
            ),
            hints=("gl",),
            keep=lambda value: any(c.isdigit() for c in value),
        ),
        Detector(
            "slack_token",
            _compile(
                r"xox(?<![\w-]xox)(?:[abposr]|e(?:\.xox[bp])?)-(?:\d+-)+[0-9A-Za-z]{8,}"
                r"(?:-[0-9A-Za-z]+)*(?![\w-])",
                r"xapp-(?<![\w-]xapp-)\d-[A-Z0-9]+-\d+-[0-9a-f]{16,}(?![\w-])",
                r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
                r"T[A-Z0-9]{6,}/[A-Z0-9]{6,}/[A-Za-z0-9]{16,}",
            ),
            hints=("xox", "xapp-", "hooks.slack.com"),
        ),
        Detector(
            "stripe_key",
            _compile(r"[sr]k_(?<![\w-][sr]k_)(?:live|test)_[0-9A-Za-z]{20,247}(?![\w-])"),
            hints=("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        ),
        Detector(
            "anthropic_key",
            _compile(
                r"sk-ant-(?<![\w-]sk-ant-)(?:api|admin|oat|sid)\d{2}-[A-Za-z0-9_\-]{32,}(?![\w-])"
            ),
            hints=("sk-ant-",),
        ),
        Detector(
            "openai_key",
            _compile(
                r"sk-(?<![\w-]sk-)(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_\-]{16,}T3BlbkFJ"
                r"[A-Za-z0-9_\-]{16,}(?![\w-])",
                r"sk-(?<![\w-]sk-)(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}(?![\w-])",
                r"sk-(?<![\w-]sk-)[A-Za-z0-9]{48}(?![\w-])",
            ),
            hints=("sk-",),
            keep=_mixed,
        ),
        Detector(
            "google_api_key",
            _compile(r"AIza(?<![\w-]AIza)[0-9A-Za-z_\-]{35}(?![\w-])"),
            hints=("aiza",),
        ),
        Detector(
            "azure_storage_key",
            _compile(
                rf"(?i:AccountKey)\s*=\s*(?P<secret>[{_B64}]{{86}}==)",
                r"(?i:azure[\w.\-]{0,30}?key)" + _ASSIGN + rf"(?P<secret>[{_B64}]{{86}}==)",
            ),
            hints=("accountkey", "azure"),
        ),
        Detector(
            "jwt",
            _compile(
                r"eyJ(?<![\w-]eyJ)[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}"
                r"\.[A-Za-z0-9_\-]{16,}(?![\w-])"
            ),
            hints=("eyj",),
        ),
        Detector(
            "url_password",
            _compile(r"://[^\s/?#@:\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@[A-Za-z0-9\[]"),
            hints=("://",),
            keep=_not_placeholder,
        ),
    )
    assert tuple(d.kind for d in detectors) == KINDS
    return detectors


# -- scanning and redacting -------------------------------------------------------------


def scan(text: str, field: str, settings: SecretSettings = DEFAULT) -> list[Finding]:
    """The secrets ``text`` (the value of ``field``) holds, in order of place. Where two
    kinds' spans overlap, the kind listed first (``KINDS``, then configured ones)
    claims it."""
    return _scan(text, field, settings.detectors())


def _scan(text: str, field: str, detectors: Iterable[Detector]) -> list[Finding]:
    if not text:
        return []
    lowered = text.lower()
    claimed: list[tuple[int, int, str]] = []  # in order of place, none overlapping
    for detector in detectors:
        for start, end in detector.spans(text, lowered):
            at = bisect.bisect(claimed, (start,))
            after = at == len(claimed) or claimed[at][0] >= end
            if after and (at == 0 or claimed[at - 1][1] <= start):
                claimed.insert(at, (start, end, detector.kind))
    return [Finding(kind, field, start, end) for start, end, kind in claimed]


def scan_fields(
    texts: Iterable[tuple[str, str]], settings: SecretSettings = DEFAULT
) -> list[Finding]:
    """The findings of every ``(field, text)``, field by field. The hints are looked
    for once over all the texts: a write holding none runs no expression."""
    pairs = [(name, text) for name, text in texts if text]
    joined = "\n".join(text for _, text in pairs).lower()
    active = settings.active(joined)
    if not active:
        return []
    return [found for name, text in pairs for found in _scan(text, name, active)]


def redact(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with each finding's span replaced by its kind's marker (the findings of
    one field's text, as ``scan`` returned them)."""
    out = text
    for found in sorted(findings, key=lambda f: f.start, reverse=True):
        out = out[: found.start] + marker(found.kind) + out[found.end :]
    return out


def kinds_of(findings: Iterable[Finding]) -> list[str]:
    """The kinds found, each once, in ``KINDS`` order (configured ones after, by name)."""
    found = {f.kind for f in findings}
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(found, key=lambda k: (order.get(k, len(order)), k))


def memory_texts(memory: Memory) -> list[tuple[str, str]]:
    """Every text field of a memory as ``(field, text)``: name, description, the body
    (``value`` for a fact), tags and references (``tags[0]``…), source, subject,
    predicate, thread, and every string of its metadata (``metadata.key``…)."""
    texts = [
        ("name", memory.name or ""),
        ("description", memory.description),
        ("value" if memory.predicate is not None else "body", memory.body),
        *((f"tags[{i}]", tag) for i, tag in enumerate(memory.tags)),
        *((f"references[{i}]", ref) for i, ref in enumerate(memory.references)),
        ("source", memory.source),
        ("subject", memory.subject or ""),
        ("predicate", memory.predicate or ""),
        ("thread", memory.thread or ""),
        *_strings_of(memory.metadata, "metadata"),
    ]
    return [(name, text) for name, text in texts if text]


def request_texts(request: WriteRequest) -> list[tuple[str, str]]:
    """Every text field a write request gives, as ``memory_texts`` names them."""
    texts = [
        ("name", request.name),
        ("description", request.description or ""),
        ("body", request.body or ""),
        *((f"tags[{i}]", tag) for i, tag in enumerate(request.tags or ())),
        *((f"references[{i}]", ref) for i, ref in enumerate(request.references or ())),
        ("source", request.source or ""),
        ("subject", request.subject or ""),
        ("thread", request.thread or ""),
        *_strings_of({CALLER: request.metadata or {}}, "metadata"),
    ]
    return [(name, text) for name, text in texts if text]


def _strings_of(value: Any, path: str) -> Iterable[tuple[str, str]]:
    """Every text of metadata, keys included, with its field (``_entry``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for i, (key, item) in enumerate(value.items()):
            if path == "metadata" and key == REDACTED_KEY:
                continue  # the kinds a redaction replaced: retain's own record
            entry = _entry(path, i, key)
            if path != "metadata":
                yield f"{entry}{KEY_SUFFIX}", str(key)
            yield from _strings_of(item, entry)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings_of(item, f"{path}[{i}]")


KEY_SUFFIX = ".key"  # the field of a metadata key's own text, after its entry's


def _entry(path: str, i: int, key: Any) -> str:
    """The field of a metadata entry: the store's own keys by name (``metadata.caller``),
    a writer's by place (``metadata.caller.<0>.<2>``), so that no key, which may itself
    be a secret, is ever spelt in a refusal, and no two entries share a field."""
    return f"{path}.{key}" if path == "metadata" else f"{path}.<{i}>"


def findings_of(memory: Memory, settings: SecretSettings = DEFAULT) -> list[Finding]:
    """The secrets a memory's text fields hold (the review of a quarantined record asks
    this before a release: content with a secret is never released)."""
    return scan_fields(memory_texts(memory), settings)


UNREDACTABLE = ("name", "predicate")  # identifiers a marker cannot stand in


def redacted(memory: Memory, findings: Iterable[Finding]) -> Memory:
    """``memory`` with each finding's span replaced by its marker, and the kinds recorded
    in ``metadata.redacted`` (added to any recorded before). Its ``content_hash`` is the
    caller's to make again. A finding in an identifier (``UNREDACTABLE``) is refused."""
    found = list(findings)
    if not found:
        return memory
    if any(f.field in UNREDACTABLE or f.field.endswith(KEY_SUFFIX) for f in found):
        raise refusal(
            found,
            remedy="a name, a predicate or a metadata key cannot hold a redaction marker: "
            "choose another",
        )
    by_field: dict[str, list[Finding]] = {}
    for f in found:
        by_field.setdefault(f.field, []).append(f)

    def text(name: str, value: str) -> str:
        return redact(value, by_field[name]) if name in by_field else value

    body_field = "value" if memory.predicate is not None else "body"
    tags = tuple(dict.fromkeys(text(f"tags[{i}]", t) for i, t in enumerate(memory.tags)))
    references = tuple(
        dict.fromkeys(text(f"references[{i}]", r) for i, r in enumerate(memory.references))
    )
    metadata = _redact_metadata(memory.metadata, "metadata", by_field)
    earlier = memory.metadata.get(REDACTED_KEY)
    recorded = list(earlier) if isinstance(earlier, list) else []
    metadata[REDACTED_KEY] = kinds_of([*found, *(Finding(k, "", 0, 0) for k in recorded)])
    return replace(
        memory,
        description=text("description", memory.description),
        body=text(body_field, memory.body),
        tags=tags,
        references=references,
        source=text("source", memory.source),
        subject=None if memory.subject is None else text("subject", memory.subject),
        thread=None if memory.thread is None else text("thread", memory.thread),
        metadata=metadata,
    )


def _redact_metadata(value: Any, path: str, by_field: Mapping[str, list[Finding]]) -> Any:
    if isinstance(value, str):
        return redact(value, by_field[path]) if path in by_field else value
    if isinstance(value, Mapping):
        return {
            k: _redact_metadata(v, _entry(path, i, k), by_field)
            for i, (k, v) in enumerate(value.items())
        }
    if isinstance(value, list | tuple):
        return [_redact_metadata(v, f"{path}[{i}]", by_field) for i, v in enumerate(value)]
    return value


def refusal(
    findings: Iterable[Finding],
    *,
    what: str = "the write",
    why: str = "a secret is never stored",
    remedy: str = "",
    **details: Any,
) -> SecretDetected:
    """The ``secret_detected`` refusal of ``findings``: kinds, fields and positions in
    the message and ``details['findings']``, never a value. A caller with its own
    ``remedy`` names no ``redact`` fix (the write is not the caller's to redact)."""
    found = list(findings)
    places = "; ".join(f"{f.kind} in {f.field} at {f.start}-{f.end}" for f in found)
    if not remedy:
        details["fix"] = "redact"
    return SecretDetected(
        f"{what} holds what looks like a secret ({places}), and {why}",
        remedy=remedy
        or "store where the credential lives (the name of the environment variable or the "
        "path of the file holding it, and its owner), not its value; or write it redacted",
        findings=[f.to_dict() for f in found],
        kinds=kinds_of(found),
        **details,
    )


# -- configuration ------------------------------------------------------------------------


def configured(
    patterns: Mapping[str, str], disabled: Iterable[str]
) -> tuple[SecretSettings, list[tuple[str, str]]]:
    """``[secrets]`` as settings, and what is wrong with it: ``(key, problem)`` pairs
    (``patterns.NAME`` or ``disabled``), for the caller to refuse by name."""
    problems: list[tuple[str, str]] = []
    detectors: list[Detector] = []
    for name, source in patterns.items():
        key = f"patterns.{name}"
        if not KIND_PATTERN.fullmatch(name):
            problems.append((key, "a kind's name is lower-case letters, digits and _, at most 40"))
            continue
        if name in KINDS:
            problems.append((key, f"{name} is a built-in kind; give the added kind another name"))
            continue
        if not isinstance(source, str) or not source:
            problems.append((key, "a pattern is a regular expression, as text"))
            continue
        try:
            compiled = re.compile(source)
        except re.error as exc:
            problems.append((key, f"not a regular expression: {exc}"))
            continue
        if compiled.fullmatch(""):
            problems.append((key, "the expression matches empty text, so it would find nothing"))
            continue
        detectors.append(Detector(name, (compiled,)))
    known = {*KINDS, *(d.kind for d in detectors)}
    off: list[str] = []
    for kind in disabled:
        if not isinstance(kind, str) or kind not in known:
            problems.append(
                ("disabled", f"{kind!r} is not a kind: the kinds are {', '.join(sorted(known))}")
            )
        else:
            off.append(kind)
    return SecretSettings(tuple(detectors), frozenset(off)), problems
