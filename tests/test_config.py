"""Where the store lives and what config.toml may say."""

from __future__ import annotations

from pathlib import Path

import pytest

import retain
from retain import errors
from retain.config import DEFAULT_INLINE_MAX_BYTES, load_settings, resolve_home


def test_home_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETAIN_HOME", str(tmp_path / "env"))
    assert resolve_home(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_home(None) == tmp_path / "env"
    monkeypatch.delenv("RETAIN_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_home(None) == tmp_path / "xdg" / "retain"


def test_missing_config_means_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path).inline_max_bytes == DEFAULT_INLINE_MAX_BYTES


def test_inline_budget_is_read_from_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[memory]\ninline_max_bytes = 100\n")
    assert load_settings(tmp_path).inline_max_bytes == 100
    service = retain.open(home=tmp_path)
    assert service.status().inline_max_bytes == 100
    service.close()


@pytest.mark.parametrize(
    "text",
    ["[memory\n", "memory = 3\n", "[memory]\ninline_max_bytes = -1\n",
     "[memory]\ninline_max_bytes = 'big'\n"],
)  # fmt: skip
def test_bad_config_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(errors.ConfigInvalid):
        load_settings(tmp_path)


def test_open_creates_the_default_store_under_home(tmp_path: Path) -> None:
    service = retain.open(home=tmp_path / "h")
    assert service.status().location == str(tmp_path / "h" / "retain.db")
    service.close()
