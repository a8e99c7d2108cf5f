"""The commands that start a server: ``serve`` (REST and MCP on one port), ``mcp``
(MCP over stdio) and ``mcp config`` (the block a client needs to start it).

They need the ``server`` extra, imported only when they run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import progress_bar, warn
from retain.doors.cli.refusal import refusals
from retain.doors.cli.root import SESSION_ENV, PathParameter, cli, home_option, opened
from retain.extras import needed, present

if TYPE_CHECKING:
    from pathlib import Path


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", "port_text", default="8765", show_default=True, help="Port to listen on (1-65535)."
)
@click.option(
    "--tokens",
    "tokens_file",
    type=PathParameter(dir_okay=False),
    envvar="RETAIN_TOKENS_FILE",
    help="A file of TOKEN=PRINCIPAL lines (besides $RETAIN_TOKENS); with tokens, every "
    "request needs one.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port, each with the store open.",
)
@home_option
def serve(
    host: str, port_text: str, tokens_file: Path | None, workers: int, home: Path | None
) -> None:
    """Serve the REST API under /v1, the MCP server at /mcp and the console at /console."""
    with refusals(), needed("server", "serving the REST API and MCP"):
        import uvicorn

        from retain.doors import http, serving

        present("mcp")  # imported at /mcp's first request

    url = click.get_current_context().meta.get("retain.database_url")
    with opened(home) as service:
        port = serving.port_of(port_text)
        tokens = http.load_tokens(tokens_file)
        http.check_binding(host, tokens)
        app = http.create_app(service, tokens=tokens, host=host)
        with progress_bar() as progress:  # built now, if it must be: no request waits for it
            service.index_vectors(progress=progress)
        loaded = service.embedder
        listener = serving.listen(host, port)  # said once it listens: a caller may connect
        warn(
            f"retain: serving {service.backend.location} at http://{host}:{port}{http.API} "
            f"and MCP at http://{host}:{port}{http.MCP_PATH}/, the console at "
            f"http://{host}:{port}/console ({len(tokens)} token(s); "
            f"embedder {loaded.model_id})"
        )
        if loaded.degraded:
            warn(f"degraded: {loaded.degraded}")
        if workers == 1:
            http.one_blas_thread()
            config = uvicorn.Config(app, host=host, port=port, log_level="warning")
            uvicorn.Server(config).run(sockets=[listener])
            return
        import json

        os.environ[http.SERVE_ENV] = json.dumps(
            {
                "location": url,
                "home": str(home) if home else None,
                "tokens": str(tokens_file) if tokens_file else None,
                "host": host,
            }
        )
        serving.run_workers(f"{http.__name__}:app_from_environment", listener, workers)


@cli.group("mcp", invoke_without_command=True)
@click.option(
    "--as",
    "principal",
    default="operator:local",
    show_default=True,
    help="Who the client acts as: agent:NAME (a registered agent) for an agent's memory.",
)
@click.option(
    "--session",
    envvar=SESSION_ENV,
    metavar="KEY",
    help="The key of the agent context the client acts in, as its host names it (default "
    f"${SESSION_ENV}); without one, an agent's writes are judged by its latest observed "
    "session.",
)
@home_option
@click.pass_context
def mcp_(ctx: click.Context, principal: str, session: str | None, home: Path | None) -> None:
    """Serve the MCP server over stdio, for a desktop client that starts it.

    `retain mcp config` prints what a client's configuration needs to start it."""
    if ctx.invoked_subcommand is not None:  # it reads these options from this context
        ctx.meta["retain.mcp.database_url"] = ctx.meta.get("retain.database_url")
        return  # (its own --database-url, absent, would set the shared one to None)
    with refusals(), needed("server", "the MCP server"):
        from retain.doors import mcp
    from retain.doors.principals import Services

    with opened(home, principal=principal, session=session) as service:
        service.check_principal()  # an agent that is not registered is refused now
        services = Services(service)
        mcp.create_server(services.of, local_principal=principal).run("stdio")


@mcp_.command("config")
@click.option(
    "--client",
    type=click.Choice(["claude-desktop", "claude-code", "cursor"]),
    default="claude-desktop",
    show_default=True,
    help="The client whose configuration to print.",
)
@click.option(
    "--as", "principal", default=None, help="Who the client acts as (default: retain mcp's)."
)
@home_option
@click.pass_context
def mcp_config(ctx: click.Context, client: str, principal: str | None, home: Path | None) -> None:
    """Print the block an MCP client needs to start `retain mcp`: this retain's absolute
    path and the store's RETAIN_HOME, so a client with another PATH or HOME opens it."""
    from retain.config import resolve_home
    from retain.doors import launch

    given = ctx.parent.params if ctx.parent is not None else {}
    principal = principal or given.get("principal") or "operator:local"
    home = home or given.get("home")
    url = ctx.meta.get("retain.database_url") or ctx.meta.get("retain.mcp.database_url")
    with opened(home, principal=principal, location=url) as service:
        service.check_principal()  # a block for an agent that is not registered fails later
        location = service.backend.location
    env = {"RETAIN_HOME": os.path.abspath(resolve_home(home))}
    if url:
        env["RETAIN_DATABASE_URL"] = url
    args = ["mcp", "--as", principal]
    click.echo(launch.server_block(client, launch.retain_command(), args, env))
    warn(f"{launch.WHERE[client]} It opens {location} as {principal}.")
