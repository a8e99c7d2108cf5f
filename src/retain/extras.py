"""The optional parts of retain, and the refusal when one is not installed.

``pip install retain`` is the library, the CLI and search. The extras (pyproject.toml's
``[project.optional-dependencies]``) add the rest: ``server`` the REST API and the MCP
server, ``postgres`` the PostgreSQL store. Code that needs one imports it inside
``needed(extra, purpose)``: a module of the extra that is missing becomes
``ExtraMissing`` naming the extra to install; any other failed import is not ours to
explain and goes on as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from retain.errors import ExtraMissing

# Each extra's top-level modules (what the door imports), as pyproject.toml installs them.
MODULES: dict[str, tuple[str, ...]] = {
    "server": (
        "fastapi",
        "starlette",
        "pydantic",
        "pydantic_core",
        "uvicorn",
        "mcp",
        "fastapi_offline",
    ),
    "postgres": ("psycopg", "psycopg_pool", "psycopg_binary"),
}


@contextmanager
def needed(extra: str, purpose: str) -> Iterator[None]:
    """Import what ``purpose`` needs inside this block: a module of ``extra`` that cannot
    be imported is ``ExtraMissing`` (``details``: ``extra``, ``module``)."""
    try:
        yield
    except ImportError as exc:
        module = exc.name or ""
        if module.partition(".")[0] not in MODULES[extra]:
            raise
        raise ExtraMissing(
            f"{purpose} needs the optional part {extra!r} of retain, which is not "
            f"installed (no module {module!r})",
            remedy=f"pip install 'retain[{extra}]'",
            extra=extra,
            module=module,
        ) from exc


def present(module: str) -> None:
    """Check that ``module`` (a top-level package) is installed, without importing it: a
    door that imports it at its first use (the MCP server of ``retain serve``) is refused
    at start all the same. Within ``needed``, its absence is ``ExtraMissing``."""
    from importlib.util import find_spec

    if find_spec(module) is None:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
