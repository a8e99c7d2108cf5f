"""Transcript files read into threads of turns (JSONL and LoCoMo), and a turn's name,
body and description."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from retain import conversation as talk
from retain.conversation import Conversation, Turn
from retain.errors import TranscriptInvalid

LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo-dev.json"


def sample(sample_id: str = "conv-1") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_2_date_time": "8:10 pm on 9 May, 2023",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Back again!"}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look!",
                 "img_url": ["http://x"], "blip_caption": "a photo of a dog"},
            ],
        },
        "qa": [],
    }  # fmt: skip


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_lines_without_a_thread_are_the_files_thread(tmp_path: Path) -> None:
    lines = [
        {"speaker": "Ada", "text": "hi", "at": "2024-01-01T10:00:00Z", "id": "m1"},
        {"speaker": "Bob", "text": "look", "caption": "a cat"},
        {"speaker": "Ada", "text": "elsewhere", "thread": "side"},
    ]
    path = write(tmp_path, "standup.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    threads = talk.read_transcript(path)
    assert threads == [
        Conversation(
            "standup",
            (Turn("Ada", "hi", "2024-01-01T10:00:00Z", "m1"), Turn("Bob", "look", caption="a cat")),
        ),
        Conversation("side", (Turn("Ada", "elsewhere"),)),
    ]
    assert talk.read_transcript(path, thread="daily")[0].thread == "daily"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ('{"speaker": "Ada", "text": "ok"}\nnot json\n', 2, None),
        ('{"speaker": "Ada", "text": "ok"}\n[1, 2]\n', 2, None),
        ('{"speaker": "Ada", "text": "ok"}\n\n{"text": "who?"}\n', 3, "speaker"),
        ('{"speaker": "Ada", "text": "ok", "thread": 5}\n', 1, "thread"),
        ('{"speaker": "Ada", "text": "ok", "when": "now"}\n', 1, "when"),
    ],
)
def test_a_malformed_jsonl_line_is_refused_by_its_number(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    with pytest.raises(TranscriptInvalid) as caught:
        talk.read_transcript(write(tmp_path, "t.jsonl", text))
    assert caught.value.code == "transcript_invalid"
    assert caught.value.details["line"] == line
    assert f"line {line}" in caught.value.message
    if field is not None:
        assert caught.value.details["field"] == field


def test_an_empty_or_unreadable_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptInvalid):
        talk.read_transcript(write(tmp_path, "t.jsonl", "\n\n"))
    with pytest.raises(TranscriptInvalid):
        talk.read_transcript(tmp_path / "missing.jsonl")


def test_a_locomo_sample_is_a_thread_per_session_dated_in_the_local_zone(tmp_path: Path) -> None:
    threads = talk.read_transcript(write(tmp_path, "one.json", json.dumps(sample())))
    assert [t.thread for t in threads] == ["session-1", "session-2"]
    first = threads[0]
    assert first.sample == "conv-1"
    day = datetime(2023, 5, 8, 13, 56).astimezone().isoformat()
    assert first.turns == (
        Turn("Caroline", "Hey Mel!", day, "D1:1"),
        Turn("Melanie", "Look!", day, "D1:2", "a photo of a dog"),
    )
    assert talk.locomo_time("1:56 pm on 8 May, 2023") == day


def test_a_list_of_locomo_samples_keeps_each_samples_id(tmp_path: Path) -> None:
    path = write(tmp_path, "many.json", json.dumps([sample("conv-1"), sample("Conv 2")]))
    threads = talk.read_transcript(path)
    assert [(t.sample, t.thread) for t in threads] == [
        ("conv-1", "session-1"), ("conv-1", "session-2"),
        ("Conv 2", "session-1"), ("Conv 2", "session-2"),
    ]  # fmt: skip
    assert talk.sample_project("Conv 2") == "conv-2"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c.pop("session_1_date_time"), "session_1_date_time"),
        (lambda c: c.update(session_1_date_time="yesterday"), "session_1_date_time"),
        (lambda c: c.update(session_1="nothing"), "session_1"),
        (lambda c: c["session_1"][0].pop("speaker"), "speaker"),
    ],
)
def test_a_malformed_locomo_sample_is_refused_naming_the_field(
    tmp_path: Path, change: Any, field: str
) -> None:
    data = sample()
    change(data["conversation"])
    with pytest.raises(TranscriptInvalid) as caught:
        talk.read_transcript(write(tmp_path, "bad.json", json.dumps(data)))
    assert caught.value.details["field"] == field


def test_a_json_list_that_is_not_locomo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptInvalid):
        talk.read_transcript(write(tmp_path, "bad.json", "[1, 2]"))
    with pytest.raises(TranscriptInvalid):
        talk.read_transcript(write(tmp_path, "bad.json", "[1, 2"))


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="the development data is not here")
def test_the_development_conversations_parse() -> None:
    threads = talk.read_transcript(LOCOMO_DEV)
    data = json.loads(LOCOMO_DEV.read_text(encoding="utf-8"))
    assert {t.sample for t in threads} == {s["sample_id"] for s in data}
    turns = [turn for t in threads for turn in t.turns]
    assert len(turns) == sum(
        len(v) for s in data for k, v in s["conversation"].items()
        if k.startswith("session_") and not k.endswith("date_time")
    )  # fmt: skip
    assert all(turn.id and turn.at for turn in turns)


def test_a_turns_name_is_the_slug_of_its_thread_and_id_or_place() -> None:
    assert talk.turn_name("session-1", 3, "D1:3") == "session-1-d1-3"
    assert talk.turn_name("Chat With Bob", 7) == "chat-with-bob-7"
    long = talk.turn_name("x" * 300, 1)
    assert len(long) <= 128 and long != talk.turn_name("x" * 300, 2)
    unsluggable = talk.turn_name("日本語", 1)
    assert unsluggable.startswith("-") is False and unsluggable != talk.turn_name("中文", 1)


def test_a_turns_body_holds_its_caption_and_its_description_says_where_it_stands() -> None:
    assert talk.body_of(Turn("Ada", "Look", caption="a dog")) == "Look [image: a dog]"
    assert talk.body_of(Turn("Ada", "", caption="a dog")) == "[image: a dog]"
    assert talk.describe(Turn("Ada", "Hi", id="D1:3"), "session-1", 3) == "Turn D1:3 of session-1"
    assert talk.describe(Turn("Ada", "Hi"), "standup", 7) == "Turn 7 of standup"
