"""Conversations as a host hands them over: turns, the threads they form, and the
transcript files they come in.

A ``Turn`` is one thing one speaker said (``speaker``, ``text``; optional ``at``, the
host's ``id`` of the turn, and the ``caption`` of an image or attachment it shared).
``MemoryService.ingest_conversation`` writes a thread's turns, one memory each; this
module holds what it needs that touches no store: a turn checked (``turn_of``), the
memory's name (``turn_name``), body (``body_of``) and one-line description
(``describe``: where the turn stands, not its words), and the parsers of transcript
files (``read_transcript``):

* JSONL: one JSON object a line, ``{speaker, text, at?, id?, caption?, thread?}``;
  a line without ``thread`` belongs to the file's one thread (named by the caller, else
  after the file). Blank lines are skipped.
* LoCoMo (``locomo10.json``'s shape): a sample ``{sample_id, conversation, ...}`` or a
  list of them; each ``session_<n>`` of a conversation is a thread ``session-<n>``,
  dated by its ``session_<n>_date_time`` ("1:56 pm on 8 May, 2023", read in the local
  zone); a turn's ``dia_id`` is its id, its ``blip_caption`` its caption.

A malformed file is refused whole (``transcript_invalid``), naming the line or the
field that is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from retain import fields
from retain.errors import InvalidValue, RetainError, TranscriptInvalid

MAX_TURNS = 10_000  # the most turns one ingest_conversation call writes
TURN_ID_MAX_CHARS = 200
_SLUG = re.compile(r"[^a-z0-9]+")
_SESSION = re.compile(r"session_(\d+)")
LOCOMO_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_TURN_KEYS = ("speaker", "text", "at", "id", "caption")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation: who spoke, what was said, and optionally when (RFC
    3339, or YYYY-MM-DD), the host's id of the turn, and the caption of an image or
    attachment shared in it (part of what was said)."""

    speaker: str
    text: str
    at: str | None = None
    id: str | None = None
    caption: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "speaker": self.speaker,
            "text": self.text,
            "at": self.at,
            "id": self.id,
            "caption": self.caption,
        }


@dataclass(frozen=True, slots=True)
class Conversation:
    """The turns of one thread, in the order they were said; ``sample`` is the LoCoMo
    sample a thread came from (None for JSONL)."""

    thread: str
    turns: tuple[Turn, ...]
    sample: str | None = None


# -- one turn ---------------------------------------------------------------------------


def _refused(place: int, key: str, problem: str, remedy: str) -> InvalidValue:
    """A turn's refusal: ``field`` its key (``turns``: the turn as a whole), ``turn`` its
    1-based place."""
    return InvalidValue(f"turn {place} {problem}", remedy=remedy, field=key, turn=place)


def turn_of(value: object, place: int) -> Turn:
    """``value`` (a ``Turn``, or a mapping with its keys) as a checked ``Turn``; ``place``
    is its 1-based place in the call, named by a refusal (``invalid_value``)."""
    if isinstance(value, Turn):
        given: Mapping[str, Any] = value.to_dict()
    elif isinstance(value, Mapping):
        given = value
    else:
        raise _refused(
            place, "turns", f"is {type(value).__name__}, not a turn", "pass each turn as a mapping"
        )
    unknown = sorted(str(k) for k in given if k not in _TURN_KEYS)
    if unknown:
        raise _refused(
            place,
            unknown[0],
            f"has no field {unknown[0]!r}",
            "give a turn speaker and text, and optionally at, id and caption",
        )
    for key in ("speaker", "text"):
        if given.get(key) is None:
            raise _refused(place, key, f"has no {key}", f"give every turn its {key}")
    for key in _TURN_KEYS:
        if given.get(key) is not None and not isinstance(given[key], str):
            raise _refused(place, key, f"has a {key} that is not text", f"give {key} as text")
    try:
        speaker = _one_line(given["speaker"], "speaker", fields.SUBJECT_MAX_CHARS)
        text = fields.text(given["text"], "text")
        caption = given.get("caption")
        caption = None if caption is None else fields.text(caption, "caption").strip() or None
        turn_id = given.get("id")
        turn_id = None if turn_id is None else _one_line(turn_id, "id", TURN_ID_MAX_CHARS) or None
    except RetainError as exc:
        exc.details["turn"] = place
        raise
    if not speaker:
        raise _refused(place, "speaker", "has an empty speaker", "name who spoke")
    if not text.strip() and caption is None:
        raise _refused(place, "turns", "says nothing", "give the turn's text, or its caption")
    return Turn(speaker, text, given.get("at") or None, turn_id, caption)


def _one_line(value: str, key: str, limit: int) -> str:
    return fields.one_line(value, key, limit, f"give the {key} in one line of at most {limit}")


def body_of(turn: Turn) -> str:
    """What the turn's memory holds: its text, and the caption of what it shared."""
    if turn.caption is None:
        return turn.text
    shared = f"[image: {turn.caption}]"
    return f"{turn.text} {shared}" if turn.text.strip() else shared


def describe(turn: Turn, thread: str, place: int) -> str:
    """The one-line description of a turn's memory: where the turn stands, ``Turn <id> of
    <thread>`` (its place in the call when it has no id), as a host writes it knowing
    nothing of what will be asked. It repeats none of the turn's words: the description
    is weighted five times the body in the word index, so a copy of the turn's first
    words would count them five times over the rest of what was said (measured on the
    LoCoMo development set: recall@10 0.749 with the first twelve words, 0.767 with
    this), and it names neither speaker nor day, which the subject and the valid time
    already carry."""
    return f"Turn {turn.id if turn.id is not None else place} of {thread}"


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")


def turn_name(thread: str, place: int, turn_id: str | None = None) -> str:
    """The name of a turn's memory: ``<thread>-<id>``, or ``<thread>-<place>`` (its
    1-based place in the call) when it has no id, lower-cased, each run of characters
    other than ASCII letters and digits a ``-`` (thread ``session-1``, id ``D1:3``:
    ``session-1-d1-3``). A name past ``fields.NAME_MAX`` characters, or one left empty,
    keeps its first 115 characters (or ``turn``) and ends in ``-`` and 12 hex digits of
    the sha256 of ``<thread>\\n<id or place>``, so that it stays one turn's."""
    key = turn_id if turn_id is not None else str(place)
    name = _slug(f"{thread}-{key}")
    if name and len(name) <= fields.NAME_MAX and _slug(thread):
        return name
    import hashlib  # OpenSSL, loaded only for a name that needs it (a read hashes nothing)

    digest = hashlib.sha256(f"{thread}\n{key}".encode()).hexdigest()[:12]
    return f"{(name[:115].rstrip('-') or 'turn')}-{digest}"


def sample_project(sample_id: str) -> str:
    """The project a LoCoMo sample is ingested into from a file of several: its id,
    lower-cased, each run of other characters than letters and digits a ``-``."""
    return _slug(sample_id) or "sample"


def check_turns(turns: Sequence[object]) -> None:
    """Refuse a call's turns as a whole: none, or more than ``MAX_TURNS``."""
    if not turns:
        raise InvalidValue(
            "there are no turns to ingest",
            remedy="give the conversation's turns, at least one",
            field="turns",
        )
    if len(turns) > MAX_TURNS:
        raise InvalidValue(
            f"{len(turns)} turns are more than one call ingests (at most {MAX_TURNS})",
            remedy=f"ingest the thread in parts of at most {MAX_TURNS} turns, in order",
            field="turns",
            limit=MAX_TURNS,
            actual=len(turns),
        )


# -- transcript files -------------------------------------------------------------------


_SHAPES = (
    "write one JSON turn {speaker, text, at?, id?, caption?, thread?} a line, "
    "or a LoCoMo sample (or a list of them)"
)


def _invalid(
    source: str, problem: str, *, remedy: str = _SHAPES, **details: Any
) -> TranscriptInvalid:
    return TranscriptInvalid(f"{source} {problem}", remedy=remedy, **details)


def read_transcript(path: Path, *, thread: str | None = None) -> list[Conversation]:
    """The threads of a transcript file (JSONL or LoCoMo, told apart by content), each
    with its turns in order. JSONL lines without ``thread`` are the thread ``thread``, or,
    not given, the file's name without its suffix."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(
            f"transcript {path}",
            f"cannot be read ({exc.__class__.__name__})",
            remedy="give the path of a readable UTF-8 file",
            path=str(path),
        ) from exc
    return parse_transcript(text, thread=thread or path.stem, source=str(path))


def parse_transcript(
    text: str, *, thread: str, source: str = "the transcript"
) -> list[Conversation]:
    """``read_transcript`` of a file's text (``source`` names it in a refusal)."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return parse_locomo(_json(text, source), source=source)
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and "conversation" in whole:
            return parse_locomo(whole, source=source)
    return parse_jsonl(text, thread=thread, source=source)


def _json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _invalid(source, f"is not JSON ({exc})") from exc


def parse_jsonl(text: str, *, thread: str, source: str = "the transcript") -> list[Conversation]:
    """The threads of JSONL text: one turn a line; a line's ``thread``, else ``thread``.
    Threads come in the order of their first line, turns in the order of their lines."""
    threads: dict[str, list[Turn]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise _invalid(source, f"line {number} is not JSON ({exc})", line=number) from exc
        if not isinstance(value, dict):
            raise _invalid(source, f"line {number} is not a JSON object", line=number)
        own = value.pop("thread", None)
        if own is not None and (not isinstance(own, str) or not own.strip()):
            raise _invalid(
                source, f"line {number}: thread must be non-empty text", line=number, field="thread"
            )
        name = own if own is not None else thread
        turns = threads.setdefault(name, [])
        turns.append(_file_turn(value, len(turns) + 1, source, line=number))
    if not threads:
        raise _invalid(source, "holds no turns")
    return [Conversation(name, tuple(turns)) for name, turns in threads.items()]


def _file_turn(value: Mapping[str, Any], place: int, source: str, **where: Any) -> Turn:
    """A turn of a file, its refusal a ``transcript_invalid`` naming where it is."""
    try:
        return turn_of(value, place)
    except InvalidValue as exc:
        at = ", ".join(f"{k} {v}" for k, v in where.items())
        field = exc.details.get("field")
        raise _invalid(source, f"{at}: {exc.message}", **where, field=field) from exc


def locomo_time(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an RFC 3339 time in the local zone."""
    return datetime.strptime(text.strip(), LOCOMO_TIME).astimezone().isoformat()


def parse_locomo(data: Any, *, source: str = "the transcript") -> list[Conversation]:
    """The threads of LoCoMo data (a sample, or a list of them): each session of each
    sample a thread ``session-<n>`` (sessions in number order), its date every turn's."""
    samples = data if isinstance(data, list) else [data]
    out: list[Conversation] = []
    for index, sample in enumerate(samples):
        where = f"sample {index + 1}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise _invalid(source, f"{where} has no conversation object", sample=index + 1)
        sample_id = sample.get("sample_id")
        if sample_id is not None and not isinstance(sample_id, str):
            raise _invalid(source, f"{where}: sample_id is not text", field="sample_id")
        conversation = sample["conversation"]
        numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.fullmatch(key)))
        if not numbers:
            raise _invalid(source, f"{where} has no session_<n>", sample=index + 1)
        for number in numbers:
            key = f"session_{number}"
            out.append(_locomo_session(conversation, key, number, sample_id, source, where))
    return out


def _locomo_session(
    conversation: Mapping[str, Any],
    key: str,
    number: int,
    sample_id: str | None,
    source: str,
    where: str,
) -> Conversation:
    dated = conversation.get(f"{key}_date_time")
    if not isinstance(dated, str):
        raise _invalid(source, f"{where}: {key}_date_time is missing", field=f"{key}_date_time")
    try:
        at = locomo_time(dated)
    except ValueError as exc:
        raise _invalid(
            source,
            f"{where}: {key}_date_time {dated!r} is not like '1:56 pm on 8 May, 2023'",
            field=f"{key}_date_time",
        ) from exc
    turns = conversation[key]
    if not isinstance(turns, list):
        raise _invalid(source, f"{where}: {key} is not a list of turns", field=key)
    made = []
    for place, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            raise _invalid(source, f"{where}: {key} turn {place} is not an object", field=key)
        value = {
            "speaker": turn.get("speaker"),
            "text": turn.get("text"),
            "at": at,
            "id": turn.get("dia_id"),
            "caption": turn.get("blip_caption") or None,
        }
        made.append(_file_turn(value, place, source, session=number))
    return Conversation(f"session-{number}", tuple(made), sample_id)
