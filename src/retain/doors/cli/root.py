"""The ``retain`` group and what its commands share: the options, and the store a
command opens.

Every command module adds its commands to ``cli``, and is imported the first time one of
them is asked for (``COMMANDS``): ``retain get`` imports ``memory`` alone, a listing of the
commands (``retain --help``) imports them all. ``opened`` is the one way a command
reaches the service (opened for the principal acting, closed after, its refusals
turned into their exit status by ``refusal.refusals``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

import retain
from retain.doors.cli.output import progress_bar, warn
from retain.doors.cli.refusal import refusals

if TYPE_CHECKING:
    import os
    from pathlib import Path

    from retain.legacy import Report as LegacyReport
    from retain.service import MemoryService

F = TypeVar("F", bound=Callable[..., Any])


class PathParameter(click.Path["Path"]):
    """``click.Path(path_type=pathlib.Path)``, whose module is imported with the first
    path given: `retain --help` loads no pathlib."""

    def coerce_path_result(self, value: str | os.PathLike[str]) -> Path:
        from pathlib import Path

        return value if isinstance(value, Path) else Path(value)


# The type of every ``--home``, made once: each ``click.Path`` made asks gettext for its
# name, and ~40 commands asking cost ``retain --help`` over a millisecond.
HOME_DIRECTORY = PathParameter(file_okay=False)
SESSION_ENV = "RETAIN_SESSION"
SESSION_META = "retain.session"  # the session key the group's --session gave

# -- the command group -----------------------------------------------------------------

# The module of ``retain.doors.cli`` that adds each of the group's commands
# (tests/test_startup.py holds it to what the modules add).
COMMANDS = {
    **dict.fromkeys(("access",), "access"),
    **dict.fromkeys(("reindex", "status", "verify"), "admin"),
    **dict.fromkeys(("gate", "ledger"), "assertion"),
    **dict.fromkeys(("context", "injections", "recall", "remember"), "agent"),
    **dict.fromkeys(("certificate", "compact", "forget"), "custody"),
    **dict.fromkeys(("fact",), "fact"),
    **dict.fromkeys(("decide", "dedup", "graph", "hygiene", "link"), "graph"),
    **dict.fromkeys(("ingest",), "conversation"),
    **dict.fromkeys(("mirrors",), "mirror"),
    **dict.fromkeys(("add", "edit", "get", "list", "read", "remove", "search", "show"), "memory"),
    **dict.fromkeys(("agent", "project", "team"), "registry"),
    **dict.fromkeys(("held", "hold", "release", "sweep"), "retention"),
    **dict.fromkeys(("quarantine", "review"), "review"),
    **dict.fromkeys(("receipt",), "receipt"),
    **dict.fromkeys(("mcp", "serve"), "server"),
    **dict.fromkeys(("session",), "session"),
    **dict.fromkeys(("ticket",), "ticket"),
    **dict.fromkeys(("export", "import", "migrate"), "transfer"),
    **dict.fromkeys(("retier",), "trust"),
}


class Commands(click.Group):
    """A group whose commands' modules are imported on first use: the module of a
    command asked for by name, every module when the commands are listed (help,
    completion) or a name is none of them (click's suggestions choose among them all)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in COMMANDS:
                importlib.import_module(f"retain.doors.cli.{COMMANDS[cmd_name]}")
            else:
                load_commands()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_commands()
        return super().list_commands(ctx)


def load_commands() -> None:
    """Import every command module: ``cli.commands`` holds them all after."""
    for module in sorted(set(COMMANDS.values())):
        importlib.import_module(f"retain.doors.cli.{module}")


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(retain.__version__, prog_name="retain")
@click.option(
    "--session",
    envvar=SESSION_ENV,
    metavar="KEY",
    expose_value=False,
    callback=lambda ctx, param, value: ctx.meta.__setitem__(SESSION_META, value or None),
    help="The key of the agent context the command acts in, as its host names it "
    f"(default ${SESSION_ENV}): an agent's writes are judged by that session's taint.",
)
def cli() -> None:
    """retain: governed long-term memory for AI agents.

    Memories live in one SQLite file under $RETAIN_HOME
    (default ~/.local/share/retain/).
    """


# -- shared options ---------------------------------------------------------------------


def home_option(fn: F) -> F:
    """``--home``, and ``--database-url`` beside it: where the store is."""
    fn = click.option(
        "--database-url",
        envvar="RETAIN_DATABASE_URL",
        expose_value=False,
        callback=_remember_url,
        help="A postgres:// URL: the store is there, not in the home directory "
        "(default $RETAIN_DATABASE_URL).",
    )(fn)
    return click.option(
        "--home",
        type=HOME_DIRECTORY,
        envvar="RETAIN_HOME",
        help="Directory of the store (default $RETAIN_HOME or ~/.local/share/retain).",
    )(fn)


def _remember_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value and not value.startswith(retain.POSTGRES_SCHEMES):
        raise click.BadParameter("give a postgres:// or postgresql:// URL", ctx, param)
    ctx.meta["retain.database_url"] = value or None


def format_option(fn: F) -> F:
    """``--format``: table for people, json for programs."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="table for people, json for programs.",
    )(fn)


def filter_options(fn: F) -> F:
    """The hygiene filters `list` and `search` share."""
    for option in reversed(
        [
            click.option("--tag", help="Only memories with this tag."),
            click.option(
                "--referencing", help="Only memories referencing this memory, path, URL or id."
            ),
            click.option(
                "--unverified", help="Only memories not verified within this period, e.g. 90d."
            ),
            click.option("--expired", is_flag=True, help="Only memories past their expiry."),
        ]
    ):
        fn = option(fn)
    return fn


TRUST_TIERS = "claimed, observed, attested or verified"  # model.Trust, lowest first


def min_trust_option(fn: F) -> F:
    """``--min-trust``: leave out what is trusted less (the service checks the name)."""
    return click.option(
        "--min-trust", metavar="TRUST", help=f"Only what is trusted at least this: {TRUST_TIERS}."
    )(fn)


def evidence_options(fn: F) -> F:
    """``--evidence`` and ``--evidence-path``: what bears a claim out, for ``verified``."""
    fn = click.option(
        "--evidence-path",
        metavar="PATH",
        help="The dotted path of the field in the evidence's JSON body (e.g. plan.tier).",
    )(fn)
    return click.option(
        "--evidence",
        metavar="ID",
        help="A memory or fact (id or name) trusted attested or above whose value equals "
        "this one: checked, it makes the write verified.",
    )(fn)


def evidence_of(ref: str | None, path: str | None) -> dict[str, str] | None:
    """The service's ``evidence`` from the two options (a path alone is refused there)."""
    if ref is None and path is None:
        return None
    return {"ref": ref or ""} | ({"path": path} if path is not None else {})


def project_option(help_text: str) -> Callable[[F], F]:
    """``--project``/``-p``, its help said by the command."""
    return click.option("--project", "-p", default=None, help=help_text)


def as_option(fn: F) -> F:
    """``--as agent:NAME``, required: the agent whose own memory the command uses."""
    return click.option(
        "--as",
        "principal",
        required=True,
        metavar="agent:NAME",
        help="The registered agent acting (the local door stands in for authentication).",
    )(fn)


def acting_option(fn: F) -> F:
    """``--as PRINCIPAL``, operator:local unless given: who acts."""
    return click.option(
        "--as",
        "principal",
        default="operator:local",
        show_default=True,
        metavar="PRINCIPAL",
        help="Who acts: agent:NAME for a registered agent (it sees global, the project, its "
        "teams and its own).",
    )(fn)


# -- the store a command opens -----------------------------------------------------------


@contextmanager
def opened(
    home: Path | None,
    fmt: str = "table",
    principal: str = "operator:local",
    location: str | None = None,
    session: str | None = None,
) -> Iterator[MemoryService]:
    """Open the store, run the verb, and turn a refusal into its exit status. The session
    acts in the agent context ``session`` names, else the one ``retain --session`` does."""
    service: MemoryService | None = None
    try:
        with refusals(fmt):
            from retain.service import actor  # the one registry of principals' forms

            meta = click.get_current_context().meta
            url = location or meta.get("retain.database_url")
            key = session or meta.get(SESSION_META)
            # the store's own long work, while the verb runs: an older store's upgrade, a
            # vector index a search builds (an earlier format's, or its files gone)
            with progress_bar() as reporter:
                service = retain.open(
                    url, home=home, principal=actor.parse(principal), session=key, progress=reporter
                )
                if service.legacy_import is not None:
                    _report_legacy(service.legacy_import)
                yield service
    finally:
        if service is not None:
            service.close()


def _report_legacy(report: LegacyReport) -> None:
    """Say on stderr what importing the realm's legacy markdown did."""
    if report.files:
        warn(
            f"Imported {report.imported} legacy agent memories from {len(report.files)} "
            "files (each renamed .md.imported)."
        )
    if report.agents_added:
        warn(f"  registered agents: {', '.join(report.agents_added)}")
    for problem in report.problems:
        where = f"{problem.file}:{problem.line}" if problem.line else problem.file
        warn(f"  skipped {where}: {problem.reason}")
