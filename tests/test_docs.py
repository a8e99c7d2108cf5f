"""The documentation stays true to the code.

Every CLI command has a section and help text, every option is documented, every
error code is explained, the README's quick start is two commands, and the public
names are sorted and real.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import retain
from retain.doors.cli import cli
from retain.errors import all_error_classes

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CLI_DOC = DOCS / "cli.md"
ERRORS_DOC = DOCS / "errors.md"
README = ROOT / "README.md"
DOCUMENTS = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]


def walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``group``, subgroups included, as ``("project add", command)``."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        full = (*path, name)
        yield " ".join(full), command
        if isinstance(command, click.Group):
            yield from walk(command, full)


COMMANDS = dict(walk(cli))


def long_flags(command: click.Command) -> list[str]:
    """The long flags of a command's options, the help option included."""
    params = command.get_params(click.Context(command))
    return [
        opt
        for param in params
        if isinstance(param, click.Option)
        for opt in (*param.opts, *param.secondary_opts)
        if opt.startswith("--")
    ]


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown text."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match is not None, f"no '## {heading}' section"
    return match.group(1)


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks of a Markdown text."""
    return re.findall(r"^```[\w-]*\n(.*?)^```", text, re.M | re.S)


def test_the_cli_has_commands_to_document() -> None:
    assert {"add", "search", "project", "project add"} <= set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_a_section_in_the_cli_doc(path: str) -> None:
    headings = re.findall(r"^## (retain .+)$", CLI_DOC.read_text(encoding="utf-8"), re.M)
    assert f"retain {path}" in headings


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_command_has_help_text(path: str) -> None:
    command = COMMANDS[path]
    assert command.help is not None and command.help.strip()
    assert command.get_short_help_str().strip()


def test_every_cli_doc_section_names_a_real_command() -> None:
    headings = re.findall(r"^## retain (.+)$", CLI_DOC.read_text(encoding="utf-8"), re.M)
    assert headings
    assert [h for h in headings if h not in COMMANDS] == []


@pytest.mark.parametrize("path", ["", *sorted(COMMANDS)])
def test_every_option_is_in_the_cli_doc(path: str) -> None:
    command = COMMANDS[path] if path else cli
    text = CLI_DOC.read_text(encoding="utf-8")
    missing = [
        flag
        for flag in long_flags(command)
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)
    ]
    assert missing == [], f"retain {path}".strip()


@pytest.mark.parametrize("code", [cls.code for cls in all_error_classes()])
def test_every_error_code_is_explained(code: str) -> None:
    text = ERRORS_DOC.read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(code)}$", text, re.M), code
    assert section(text, code).strip()


def test_error_codes_are_unique() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes))


def test_readme_quick_start_is_exactly_two_commands() -> None:
    quick_start = section(README.read_text(encoding="utf-8"), "Quick start")
    blocks = fenced_blocks(quick_start)
    assert len(blocks) == 2
    for block in blocks:
        lines = [line for line in block.splitlines() if line.strip()]
        assert len(lines) == 1, block
    assert blocks[1].strip() == "./scripts/test"


def test_readme_quick_start_runs_retain_on_the_default_store() -> None:
    first = fenced_blocks(section(README.read_text(encoding="utf-8"), "Quick start"))[0]
    assert "pip install" in first
    assert "pip install -e '.[server]'" in first  # what `retain serve` needs
    assert "retain add" in first and "retain search" in first
    assert first.strip().endswith("retain serve")
    assert "--home" not in first and "RETAIN_HOME" not in first


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_in_docs_resolve(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    broken = [t for t in targets if "://" not in t and not (document.parent / t).resolve().exists()]
    assert broken == []


def test_changelog_has_an_unreleased_section() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"^## \[Unreleased\]$", text, re.M)
    assert section(text, "[Unreleased]").count("\n- ") >= 1


def test_public_names_are_sorted() -> None:
    assert retain.__all__ == sorted(retain.__all__)


def test_public_names_exist() -> None:
    assert [name for name in retain.__all__ if not hasattr(retain, name)] == []
