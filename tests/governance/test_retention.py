"""Retention as config.toml writes it: ISO 8601 durations (``chrono.parse_period``) and
the ``[retention]`` table of scope patterns, each refused by name when it is wrong."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from retain import errors
from retain.chrono import parse_period
from retain.config import load_settings
from retain.governance.retention import is_pattern

MARCH_31 = datetime(2026, 3, 31, 18, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "months", "span"),
    [
        ("P365D", 0, timedelta(days=365)),
        ("P1Y", 12, timedelta(0)),
        ("P1Y6M", 18, timedelta(0)),
        ("P2W", 0, timedelta(days=14)),
        ("PT12H", 0, timedelta(hours=12)),
        ("PT90M", 0, timedelta(minutes=90)),
        ("p1dt1s", 0, timedelta(days=1, seconds=1)),
        ("P1Y2M3W4DT5H6M7S", 14, timedelta(weeks=3, days=4, hours=5, minutes=6, seconds=7)),
    ],
)
def test_an_iso_8601_duration_is_read(text: str, months: int, span: timedelta) -> None:
    period = parse_period(text)
    assert (period.months, period.span, period.text) == (months, span, text.upper())


@pytest.mark.parametrize(
    "text", ["", "P", "PT", "P1DT", "90d", "P1.5D", "P1,5D", "-P1D", "P1H", "PT1D", "P1D2Y",
             "P0001-02-03", " P 1D"],
)  # fmt: skip
def test_what_is_no_iso_8601_duration_is_refused(text: str) -> None:
    with pytest.raises(errors.InvalidTime) as refused:
        parse_period(text)
    assert "P365D" in refused.value.remedy


def test_months_count_back_on_the_calendar() -> None:
    assert parse_period("P1M").back_from(MARCH_31) == datetime(2026, 2, 28, 18, 30, tzinfo=UTC)
    assert parse_period("P1Y").back_from(MARCH_31) == datetime(2025, 3, 31, 18, 30, tzinfo=UTC)
    assert parse_period("P1Y1M1D").back_from(MARCH_31) == datetime(2025, 2, 27, 18, 30, tzinfo=UTC)
    assert parse_period("P365D").back_from(MARCH_31) == MARCH_31 - timedelta(days=365)


def test_a_period_reaching_before_year_1_is_refused() -> None:
    for text in ("P2026Y", "P800000D"):
        with pytest.raises(errors.InvalidTime):
            parse_period(text).back_from(MARCH_31)


def test_the_retention_table_is_read(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[retention]\nglobal = "P365D"\n"team:*" = "P90D"\n"project:web" = "P30D"\n'
        '"*" = "P2Y"\n"agent:ada" = "PT12H"\n'
    )
    windows = {w.pattern: w.period.text for w in load_settings(tmp_path).retention}
    assert windows == {
        "global": "P365D", "team:*": "P90D", "project:web": "P30D", "*": "P2Y",
        "agent:ada": "PT12H",
    }  # fmt: skip
    assert load_settings(tmp_path / "nothing-here").retention == ()


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('org = "P365D"', "retention.org"),
        ('"team:" = "P1D"', "retention.team:"),
        ('"team:a b" = "P1D"', "retention.team:a b"),
        ('"operator:*" = "P1D"', "retention.operator:*"),
        ('"project:**" = "P1D"', "retention.project:**"),
        ('global = "365d"', "retention.global"),
        ("global = 365", "retention.global"),
        ('global = "P0D"', "retention.global"),
        ('"team:*" = "P1.5D"', "retention.team:*"),
    ],
)
def test_a_bad_pattern_or_duration_is_refused_with_the_files_path(
    tmp_path: Path, line: str, key: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[retention]\n{line}\n")
    with pytest.raises(errors.ConfigInvalid) as refused:
        load_settings(tmp_path)
    assert refused.value.details["path"] == str(path)
    assert refused.value.details["key"] == key
    assert str(path) in refused.value.message


def test_retention_must_be_a_table(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('retention = "P1D"\n')
    with pytest.raises(errors.ConfigInvalid):
        load_settings(tmp_path)


@pytest.mark.parametrize(
    ("pattern", "ok"),
    [("*", True), ("global", True), ("team:*", True), ("agent:ada", True),
     ("project:web-2", True), ("team", False), ("org", False), ("agent:*x", False),
     ("*:*", False)],
)  # fmt: skip
def test_retention_patterns(pattern: str, ok: bool) -> None:
    assert is_pattern(pattern) is ok
