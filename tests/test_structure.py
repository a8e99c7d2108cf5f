"""The house's walls: what only one module may do, read from the source itself.

No door imports another, but to start or mount it (``DOOR_IMPORTS``, each with its
reason). Only the unit of work (``retain.service.work``) calls the transaction's changing
methods and appends events. The exceptions are the storage layer itself and the
store's own upkeep, each named with its reason below; a new caller fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

from retain.storage.base import Reads, Transaction

SRC = Path(__file__).resolve().parent.parent / "src" / "retain"
CHANGING = frozenset(
    name
    for name, member in vars(Transaction).items()
    if callable(member) and not name.startswith("_") and not hasattr(Reads, name)
)
ALLOWED = {
    "service/work.py": "the unit of work: the one place a verb changes the store",
    "search/key.py": "search keys are derived data, made by Rekey.apply for the work",
    "migrate.py": "a store copied to another backend row by row, events and all",
}


# What may be asked for a change by name: the unit of work, a session (a door's
# ``service`` or ``svc``) and the service's capability modules (``registry``), whose
# verbs share a few names with the transaction's changing methods.
CALLERS = frozenset({"work", "service", "svc", "registry"})


def _changing_calls(source: str, label: str) -> list[str]:
    """The calls of a changing method in ``source`` on anything but ``CALLERS``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if node.func.attr in CHANGING and not (isinstance(owner, ast.Name) and owner.id in CALLERS):
            found.append(f"{label}:{node.lineno} .{node.func.attr}()")
    return found


def test_the_changing_methods_are_known() -> None:
    assert {"insert_memories", "update_memory", "delete_memory", "append_event"} <= CHANGING
    assert not CHANGING & {"get_many", "find_by_name", "list_events", "chain_head"}


def test_only_the_unit_of_work_changes_the_store() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative.startswith("storage/") or relative in ALLOWED:
            continue
        offenders += _changing_calls(path.read_text(encoding="utf-8"), relative)
    assert offenders == []


def test_the_check_finds_a_change_made_past_the_work() -> None:
    rogue = (
        "def run(tx, work, service):\n"
        "    tx.append_event(1)\n"
        "    work.reads.insert_memories([])\n"
        "    work.create([])\n"
        "    service.backend.write(lambda tx: tx.delete_memory('x'))\n"
    )
    assert _changing_calls(rogue, "rogue.py") == [
        "rogue.py:2 .append_event()",
        "rogue.py:3 .insert_memories()",
        "rogue.py:5 .delete_memory()",
    ]


# The doors (each a package) and the imports of one door by another that are allowed,
# each with its reason; the doors' shared helpers (principals, records, terminal, hooks,
# deferred, serving, launch) are no door.
DOORS = ("cli", "http", "mcp")
DOOR_IMPORTS = {
    ("http", "mcp"): "retain serve serves the MCP transport at /mcp of the REST app",
    ("cli", "http"): "retain serve starts the REST server",
    ("cli", "mcp"): "retain mcp starts the MCP server",
}


def _imported(source: str, package: str, members: frozenset[str] | tuple[str, ...]) -> set[str]:
    """The ``members`` of ``package`` that ``source`` imports (``import package.X``,
    ``from package import X``, ``from package.X.y import z``)."""
    prefix = package.split(".")
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            modules = [node.module, *names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            depth = len(prefix)
            if parts[:depth] == prefix and len(parts) > depth and parts[depth] in members:
                found.add(parts[depth])
    return found


def _doors_imported(source: str) -> set[str]:
    """The doors ``source`` imports."""
    return _imported(source, "retain.doors", DOORS)


def test_no_door_imports_another_door_but_to_start_or_mount_it() -> None:
    imports = set()
    for door in DOORS:
        for path in sorted((SRC / "doors" / door).rglob("*.py")):
            imports |= {
                (door, other) for other in _doors_imported(path.read_text()) if other != door
            }
    assert imports == set(DOOR_IMPORTS)


def test_the_door_check_sees_each_form_of_import() -> None:
    source = (
        "import retain.doors.http\n"
        "from retain.doors import mcp, records\n"
        "from retain.doors.cli.output import say\n"
        "from retain.doors.principals import Services\n"
    )
    assert _doors_imported(source) == {"http", "mcp", "cli"}


# The service's capability modules: a door reaches their verbs through the session's
# table (which the gate wraps), never by calling a module's function.
CAPABILITIES = frozenset(
    ("admin", "agent", "context", "exchange", "fact", "lookup", "proposal", "rows",
     "search", "tier", "registry", "audit", "work")
)  # fmt: skip


def _capabilities_imported(source: str) -> set[str]:
    return _imported(source, "retain.service", CAPABILITIES)


def test_only_the_service_calls_its_capability_modules() -> None:
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative.startswith("service/"):
            continue
        if found := _capabilities_imported(path.read_text(encoding="utf-8")):
            offenders[relative] = found
    assert offenders == {}
    assert _capabilities_imported("from retain.service import tier, actor\n") == {"tier"}
