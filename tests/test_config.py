"""Where the store lives and what config.toml may say."""

from __future__ import annotations

from pathlib import Path

import pytest

import retain
from retain import errors
from retain.config import DEFAULT_INLINE_MAX_BYTES, load_settings, resolve_home
from retain.governance.content_trust import ContentTrustSettings
from retain.search.embed import EmbedderSettings


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


def test_without_a_search_section_the_bundled_static_model_is_used(tmp_path: Path) -> None:
    assert load_settings(tmp_path).embedder == EmbedderSettings(
        provider="static", model="minilm-l6-static-256", url="", api_key_env=""
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[search]\nembedder = "hash"\n', EmbedderSettings("hash", "")),
        ('[search]\nembedder = "none"\n', EmbedderSettings("none", "")),
        ('[search]\nmodel = "/models/mine"\n', EmbedderSettings("static", "/models/mine")),
        (
            '[search]\nembedder = "model2vec"\nmodel = "minishlab/potion-base-8M"\n',
            EmbedderSettings("model2vec", "minishlab/potion-base-8M"),
        ),
        (
            '[search]\nembedder = "http"\nmodel = "m"\nurl = "http://h:8080/v1"\n'
            'api_key_env = "EMBED_KEY"\n',
            EmbedderSettings("http", "m", "http://h:8080/v1", "EMBED_KEY"),
        ),
    ],
    ids=["hash", "none", "static-path", "model2vec", "http"],
)
def test_search_section_chooses_the_embedder(
    tmp_path: Path, text: str, expected: EmbedderSettings
) -> None:
    (tmp_path / "config.toml").write_text(text)
    assert load_settings(tmp_path).embedder == expected


@pytest.mark.parametrize(
    "text",
    [
        '[search]\nembedder = "bogus"\n',
        "[search]\nembedder = 3\n",
        '[search]\nembedder = "http"\nmodel = "m"\n',
        '[search]\nembedder = "sentence-transformers"\n',
        '[search]\nurl = ["a"]\n',
        "search = 3\n",
    ],
    ids=["unknown", "not-text", "http-without-url", "no-model", "url-not-text", "not-a-table"],
)
def test_bad_search_config_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(errors.ConfigInvalid) as caught:
        load_settings(tmp_path)
    assert str(tmp_path / "config.toml") in caught.value.message


def test_open_uses_the_configured_embedder(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[search]\nembedder = "hash"\n')
    service = retain.open(home=tmp_path)
    service.write("n", description="A note")
    status = service.status()
    assert (status.embedder, status.embedder_configured, status.degraded, status.vectors) == (
        "hash-v1-256",
        "hash",
        None,
        1,
    )
    service.close()


def test_the_postgres_pool_size_is_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[postgres]\npool_size = 3\n")
    assert load_settings(tmp_path).pool_size == 3
    (tmp_path / "config.toml").write_text("[postgres]\npool_size = 0\n")
    with pytest.raises(errors.ConfigInvalid, match="pool_size"):
        load_settings(tmp_path)


def test_the_postgres_search_depth_is_read_and_checked(tmp_path: Path) -> None:
    assert load_settings(tmp_path).ef_search == 100
    (tmp_path / "config.toml").write_text("[postgres]\nef_search = 400\n")
    assert load_settings(tmp_path).ef_search == 400
    for wrong in ("0", "1001", "true", '"200"', "2.5"):
        (tmp_path / "config.toml").write_text(f"[postgres]\nef_search = {wrong}\n")
        with pytest.raises(errors.ConfigInvalid, match="ef_search") as refused:
            load_settings(tmp_path)
        assert refused.value.code == "config_invalid"
        assert "from 1 to 1000" in refused.value.message


@pytest.mark.parametrize(
    ("text", "key", "close"),
    [
        ("[memory]\ninline_max_bytez = 10\n", "memory.inline_max_bytez", "inline_max_bytes"),
        ("[agent_memory]\nenabled = false\n", "agent_memory", "memory"),
        ("[context]\nrecall_timeout = 5\n", "context.recall_timeout", "recall_timeout_ms"),
        ('[search]\nprovider = "hash"\n', "search.provider", None),
        ("inline_max_bytes = 10\n", "inline_max_bytes", None),
        ("[postgres]\npool = 3\n", "postgres.pool", "pool_size"),
    ],
    ids=["misspelt-key", "unknown-table", "context-key", "no-close-match", "top-level", "pg"],
)
def test_an_unknown_setting_is_refused_by_name(
    tmp_path: Path, text: str, key: str, close: str | None
) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(errors.ConfigInvalid) as caught:
        load_settings(tmp_path)
    error = caught.value
    assert error.details["key"] == key and error.details["did_you_mean"] == close
    assert key.rsplit(".", 1)[-1] in error.message and str(tmp_path) in error.message
    assert (f"did you mean {close}?" in error.message) == (close is not None)
    with pytest.raises(errors.ConfigInvalid):  # the store does not open on it either
        retain.open(home=tmp_path)


def test_every_documented_setting_is_accepted(tmp_path: Path) -> None:
    """The sample in config.py's docstring (every setting, at its default) reads back."""
    import retain.config

    doc = retain.config.__doc__ or ""
    sample = doc[doc.index("[memory]") :]
    (tmp_path / "config.toml").write_text(sample)
    assert load_settings(tmp_path) == load_settings(tmp_path / "nothing-here")


@pytest.mark.parametrize(("text", "enabled"), [("", True), ("[memory]\nenabled = false\n", False)])
def test_memory_is_on_unless_the_installation_turns_it_off(
    tmp_path: Path, text: str, enabled: bool
) -> None:
    (tmp_path / "config.toml").write_text(text)
    assert load_settings(tmp_path).memory_enabled is enabled


@pytest.mark.parametrize("value", ['"false"', "0", "[]"])
def test_memory_enabled_must_be_true_or_false(tmp_path: Path, value: str) -> None:
    (tmp_path / "config.toml").write_text(f"[memory]\nenabled = {value}\n")
    with pytest.raises(errors.ConfigInvalid, match="enabled"):
        load_settings(tmp_path)


def test_content_trust_is_read_from_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[content_trust]\n"
        'trusted_mcp_servers = ["github"]\n'
        'trusted_tools = ["read_notes"]\n'
        'untrusted_tools = ["WebFetch", "WebSearch"]\n'
    )
    rules = load_settings(tmp_path).content_trust
    assert rules == ContentTrustSettings(("github",), ("read_notes",), ("WebFetch", "WebSearch"))
    assert load_settings(tmp_path / "nothing-here").content_trust == ContentTrustSettings()


@pytest.mark.parametrize(
    "text",
    [
        'trusted_tools = "read_notes"',
        "untrusted_tools = [1]",
        'trusted_mcp_servers = [""]',
        'trusted_mcp_servers = [" github"]',
    ],
)
def test_bad_content_trust_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(f"[content_trust]\n{text}\n")
    with pytest.raises(errors.ConfigInvalid, match=r"\[content_trust\]"):
        load_settings(tmp_path)


def test_an_unknown_content_trust_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[content_trust]\ntrusted_servers = ["github"]\n')
    with pytest.raises(errors.ConfigInvalid) as caught:
        load_settings(tmp_path)
    assert caught.value.details["did_you_mean"] == "trusted_mcp_servers"
