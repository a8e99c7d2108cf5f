"""What a command loads, and what it says when an optional part is not installed.

Each test runs retain in a fresh interpreter. The cost of starting is measured by
bench/cli_start.py; here the test is *which* modules a command imports (numpy only for
a command that makes a vector, rich only for one that prints with it, the server's
packages only for the server), and that a missing extra is a refusal naming the extra
to install. An extra is made missing for real: a finder on ``sys.meta_path`` makes
importing its packages fail as it fails where they are not installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from retain import config, errors
from retain.doors.cli import EXIT_CODES, cli, load_commands
from retain.doors.cli import agent as agent_commands
from retain.doors.cli.root import COMMANDS, HOME_DIRECTORY
from retain.extras import MODULES

# What a read or a search of memories does not run, so does not load: imported the first
# time a verb needs it, not with the service.
UNUSED_BY_SEARCH = (
    "retain.context",
    "retain.facts",
    "retain.legacy",
    "retain.migrate",
    "retain.results",  # the other verbs' results (a read's and a search's: read_results)
    "retain.receipt",  # a write's receipt
    "retain.assertions",  # the assertion ledger
    "retain.panel_results",  # the console's pages
    "retain.governance.retention",  # holds and sweeps
    "retain.service.tier",  # the modules of verbs not run: each imported as its verb is
    "retain.service.erasure",  # first looked up (fields.Verb)
    "retain.service.exchange",
    "tempfile",  # a file mirror's writes (with shutil and random)
    "tomllib",  # a home without config.toml has nothing to parse
)

# What `retain get` imports none of: nor the search's parts.
UNUSED_BY_GET = (
    *UNUSED_BY_SEARCH,
    "retain.search.lexical",
    "retain.search.rank",
    "retain.search.static_model",  # the static model: a read embeds nothing
    "retain.search.npy",  # the static model's reader: a read loads no model
    "hashlib",  # OpenSSL: a read hashes nothing
)

# What `retain --help` imports none of: it lists the commands and opens no store.
UNUSED_BY_HELP = (
    "retain.config",  # nor the settings' modules (secrets, grants, embedder)
    "retain.chrono",
    "retain.doors.hooks",  # a hook's event is read by its own command alone
    "dataclasses",
    "json",
    "pathlib",  # a path option's value is made a Path when one is given
)

CURSOR_SHOWN = "\x1b[?25h"  # what a bar that goes leaves on the terminal, its line cleared
CONTROLS = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")  # a terminal's cursor moves and erasures

HEAVY = ("numpy", "rich", "yaml", "fastapi", "mcp", "uvicorn", "pydantic", "retain.service")

# Runs before retain is imported: the blocked packages cannot be found, as when absent.
BLOCK = """
import sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

BLOCKED = set(sys.argv.pop(1).split(",")) - {""}
sys.meta_path.insert(0, Absent())
"""

# Writes the modules loaded at exit to the file named in $LOADED_TO, one a line (json is
# not imported for it: `retain --help` loads none), then runs the CLI.
RUN_CLI = """
import atexit, os, sys
atexit.register(lambda: open(os.environ["LOADED_TO"], "w").write("\\n".join(sys.modules)))
from retain.doors.cli import main
sys.argv[0] = "retain"
main()
"""


def retain(
    home: Path,
    *args: str,
    blocked: tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
    merged: bool = False,
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``retain ARGS`` in a fresh interpreter with ``blocked`` packages absent, off a
    terminal (and no variable telling rich otherwise, unless ``environ`` sets one); the
    result and the modules it had loaded when it exited. ``merged``: stderr written to
    stdout's pipe, as a terminal shows them, in the order written."""
    loaded = home.parent / f"loaded-{os.getpid()}-{len(list(home.parent.iterdir()))}.json"
    env = {**os.environ, "RETAIN_HOME": str(home), "LOADED_TO": str(loaded)}
    for name in ("RETAIN_DATABASE_URL", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(name, None)
    env.update(environ or {})
    result = subprocess.run(
        [sys.executable, "-c", BLOCK + RUN_CLI, ",".join(blocked), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return result, set(loaded.read_text().splitlines()) if loaded.exists() else set()


def heavy(modules: set[str]) -> set[str]:
    return {m for m in HEAVY if m in modules}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_import_retain_loads_no_part_of_the_store() -> None:
    code = "import sys, retain; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.check_output([sys.executable, "-c", code], text=True).split())
    assert heavy(loaded) == set()
    assert not any(m.startswith("retain.storage") for m in loaded)


def test_public_names_load_on_first_use() -> None:
    code = (
        "import sys, retain\n"
        "assert 'retain.model' not in sys.modules\n"
        "assert retain.Memory.__module__ == 'retain.model'\n"
        "assert retain.MemoryService.__module__ == 'retain.service'\n"
        "assert 'numpy' not in sys.modules\n"
        "assert set(retain.__all__) <= set(dir(retain))\n"
        "try:\n    retain.NoSuchName\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "has no attribute 'NoSuchName'" in out.stdout


def test_help_loads_neither_rich_nor_the_service(home: Path) -> None:
    result, loaded = retain(home, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: retain" in result.stdout
    assert heavy(loaded) == set()
    assert "cryptography" not in loaded
    assert "retain.model" not in loaded  # nor the records it would print
    assert loaded & set(UNUSED_BY_HELP) == set()


def command_modules(loaded: set[str]) -> set[str]:
    """The modules of ``retain.doors.cli`` that add commands, of those ``loaded``."""
    return {m for m in set(COMMANDS.values()) if f"retain.doors.cli.{m}" in loaded}


def test_a_command_imports_its_own_module_and_no_other_commands(home: Path) -> None:
    added, loaded = retain(home, "add", "tz", "-d", "Alice is in UTC+8")
    assert added.returncode == 0, added.stderr
    assert command_modules(loaded) == {"memory"}
    found, loaded = retain(home, "agent", "list", "--format", "json")
    assert found.returncode == 0, found.stderr
    assert command_modules(loaded) == {"registry"}


def test_a_name_that_is_no_command_is_answered_from_them_all(home: Path) -> None:
    result, loaded = retain(home, "remembr")
    assert result.returncode == 2
    assert "No such command 'remembr'" in result.stderr
    assert "'remember'" in result.stderr  # click's suggestion, from the agent commands
    assert command_modules(loaded) == set(COMMANDS.values())


def test_each_command_is_where_the_group_looks_for_it() -> None:
    load_commands()
    assert set(cli.commands) == set(COMMANDS)
    for name, command in cli.commands.items():
        assert command.callback is not None
        assert command.callback.__module__ == f"retain.doors.cli.{COMMANDS[name]}", name


def test_what_help_does_not_import_is_the_same_as_what_it_stands_for() -> None:
    assert agent_commands.RECALL_POLICIES == config.RECALL_POLICIES
    home = HOME_DIRECTORY.convert("some/dir", None, None)
    assert isinstance(home, Path) and home == Path("some/dir")
    assert HOME_DIRECTORY.convert(home, None, None) is home


def test_get_makes_no_vector_and_loads_no_numpy(home: Path) -> None:
    added, _ = retain(home, "add", "tz", "-d", "Alice is in UTC+8")
    assert added.returncode == 0, added.stderr
    result, loaded = retain(home, "get", "tz")
    assert result.returncode == 0, result.stderr
    assert "UTC+8" in result.stdout
    assert heavy(loaded) == {"rich", "retain.service"}
    assert "cryptography" not in loaded  # no signing key configured: none loaded
    # nor the parts of the service a read of one memory does not run
    assert loaded & set(UNUSED_BY_GET) == set()


def test_a_search_loads_what_it_ranks_with_and_not_what_it_does_not_run(home: Path) -> None:
    """A small store's vectors are read into memory and scored without numpy, as a large
    store's codes are: no command's search pays numpy's import."""
    added, _ = retain(home, "add", "tz", "-d", "Alice is in UTC+8")
    assert added.returncode == 0, added.stderr
    result, loaded = retain(home, "search", "timezone of Alice", "--format", "json")
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["memories"]
    assert found["name"] == "tz" and "semantic" in found["senses"]
    assert {"retain.search.rank", "retain.search.lexical", "retain.storage.sqlite_ann"} <= loaded
    assert "numpy" not in loaded and "retain.storage.sqlite_ann_build" not in loaded
    assert loaded & set(UNUSED_BY_SEARCH) == set()


def three_past_ann_from(home: Path) -> None:
    """Three memories added in ``home``, whose store keeps codes from two vectors."""
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[search]\nann_from = 2\n")
    notes = {"tz": "Alice is in UTC+8", "boat": "The ferry leaves at dawn", "oven": "Bake it"}
    for name, text in notes.items():
        added, _ = retain(home, "add", name, "-d", text)
        assert added.returncode == 0, added.stderr


def test_a_search_of_a_store_past_ann_from_loads_no_numpy_once_its_codes_are_built(
    home: Path,
) -> None:
    """Past ``[search] ann_from`` vectors a store keeps codes beside its file. The search
    that builds them loads numpy; a later one reads them, embeds its query and the gate's
    sentences and scores its candidates without it (``search.plain``): a command's
    search pays no import of 60–100 ms, and finds the same."""
    three_past_ann_from(home)
    first, built = retain(home, "search", "timezone of Alice", "--format", "json")
    assert first.returncode == 0, first.stderr
    assert "numpy" in built and "retain.storage.sqlite_ann_build" in built
    assert any(home.glob("*.vectors/*.head.npy"))
    again, loaded = retain(home, "search", "timezone of Alice", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert "numpy" not in loaded and "retain.storage.sqlite_ann" in loaded

    def hits(result: subprocess.CompletedProcess[str]) -> list[tuple[str, float, list[str]]]:
        found = json.loads(result.stdout)["memories"]
        return [(m["name"], m["score"], m["senses"]) for m in found]

    assert hits(again) == hits(first)
    assert hits(again)[0][0] == "tz" and "semantic" in hits(again)[0][2]


# Searches a store three times in one process, ``NUMPY_FROM`` set to argv[1]: for each,
# its results and whether numpy was loaded after it.
SEARCH_THRICE = """
import json, sys
import retain
from retain.storage import sqlite_ann
sqlite_ann.NUMPY_FROM = int(sys.argv[1])
store = retain.open()
said = []
for _ in range(3):
    hits = store.search("timezone of Alice").hits
    said.append([[(h.memory.name, h.senses) for h in hits], "numpy" in sys.modules])
print(json.dumps(said))
"""


@pytest.mark.parametrize(("numpy_from", "loaded"), [(3, [False, True, True]), (4, [False] * 3)])
def test_a_process_searching_the_codes_again_loads_numpy_for_its_second_search(
    home: Path, numpy_from: int, loaded: list[bool]
) -> None:
    """numpy chooses the best of many codes' scores at a fraction of the plain way's cost,
    but its import costs more than a search: a process's first search goes without it and
    its second loads it, where the codes hold ``NUMPY_FROM`` rows; it finds the same."""
    three_past_ann_from(home)
    built, _ = retain(home, "search", "timezone of Alice")  # (the codes built: 3 rows)
    assert built.returncode == 0, built.stderr
    env = {**os.environ, "RETAIN_HOME": str(home)}
    env.pop("RETAIN_DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", SEARCH_THRICE, str(numpy_from)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout)
    assert [numpy for _, numpy in said] == loaded
    assert said[0][0][0][0] == "tz" and "semantic" in said[0][0][0][1]
    assert said[1][0] == said[2][0] == said[0][0]


def test_a_search_that_builds_the_codes_draws_a_bar_that_goes_before_its_output(
    home: Path,
) -> None:
    """A search whose store must build its codes (their folder gone) shows it on stderr's
    bar, where rich finds a terminal; the bar goes (the cursor shown again, its line
    cleared) once the build is done, before the results are printed to the terminal."""
    three_past_ann_from(home)
    environ = {"FORCE_COLOR": "1"}  # rich finds stderr a terminal
    args = ("search", "timezone of Alice", "--format", "json")
    built, _ = retain(home, *args, environ=environ)
    assert built.returncode == 0, built.stderr
    assert "vector index" in built.stderr
    (folder,) = home.glob("*.vectors")
    for path in folder.iterdir():
        path.unlink()
    again, _ = retain(home, *args, environ=environ, merged=True)
    assert again.returncode == 0, again.stdout
    bar, shown, output = again.stdout.rpartition(CURSOR_SHOWN)
    assert "vector index" in bar and shown
    assert json.loads(CONTROLS.sub("", output)) == json.loads(built.stdout)  # (its line cleared)
    quiet, loaded = retain(home, *args, environ=environ)  # nothing to build: no bar
    assert quiet.returncode == 0 and quiet.stderr == "" and "rich" not in loaded
    assert json.loads(quiet.stdout) == json.loads(built.stdout)


def test_a_hooks_observation_loads_no_numpy_and_no_server(home: Path) -> None:
    """``retain session observe`` runs after every tool call of an agent's host: it opens
    the store and writes a row, and loads nothing a search or a server needs."""
    added, _ = retain(home, "agent", "add", "ada")
    assert added.returncode == 0, added.stderr
    args = ("session", "observe", "web_fetch", "--identity", "agent:ada", "--session", "s1")
    result, loaded = retain(home, *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tainted"] is True
    assert heavy(loaded) <= {"rich", "retain.service"} and "numpy" not in loaded


def test_add_makes_its_vector_without_numpy_and_prints_without_rich(home: Path) -> None:
    result, loaded = retain(home, "add", "tz", "-d", "Alice is in UTC+8")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Saved memory 'tz' (priority 5, global).\n"
    assert "retain.search.static_model" in loaded  # its vector is made, by the static model
    assert heavy(loaded) == {"retain.service"}
    assert "numpy" not in loaded
    assert "concurrent.futures" not in loaded  # one row: no worker embeds ahead
    assert "cryptography" not in loaded  # no signing key configured: none loaded
    # a write's request and result are in write_results: nor the other verbs' results
    assert {"retain.write_results", "retain.receipt"} <= loaded
    assert loaded & {"retain.results", "retain.assertions", "retain.service.erasure"} == set()


def test_with_a_signing_key_a_write_signs_and_its_receipt_verifies_without_a_store(
    home: Path,
) -> None:
    from retain import signing

    key = signing.generate()
    environ = {signing.ENV: key.private_text}
    result, loaded = retain(home, "add", "tz", "-d", "UTC+8", "--format", "json", environ=environ)
    assert result.returncode == 0, result.stderr
    assert "cryptography" in loaded
    assert json.loads(result.stdout)["receipt"]["key_id"] == key.key_id
    receipt_file = home.parent / "receipt.json"
    receipt_file.write_text(result.stdout)
    args = ("receipt", "verify", str(receipt_file), "--public-key", key.public.text)
    checked, loaded = retain(home.parent / "no-store", *args)
    assert checked.returncode == 0, checked.stderr
    assert "verifies: event 2 (create) by operator:local" in checked.stdout
    assert "retain.service" not in loaded and not (home.parent / "no-store").exists()


def test_a_long_operation_off_a_terminal_draws_no_bar_and_loads_no_rich(home: Path) -> None:
    added, _ = retain(home, "add", "tz", "-d", "Alice is in UTC+8")
    assert added.returncode == 0, added.stderr
    result, loaded = retain(home, "export", "--directory", str(home.parent / "snapshot"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "Exported 1 memories" in result.stdout
    assert "rich" not in loaded  # nor imported to ask whether stderr is a terminal
    # a variable rich reads says stderr is a terminal: rich is asked, and draws the bar
    result, loaded = retain(home, "reindex", environ={"FORCE_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert "rich" in loaded and result.stderr != ""


def test_a_command_that_reports_nothing_loads_no_rich_for_its_bar(home: Path) -> None:
    """Every command opens the store under a progress bar (an older store's upgrade
    reports to it); one whose store is current draws nothing and imports nothing for it,
    even where rich would find stderr a terminal."""
    retain(home, "add", "tz", "-d", "Alice is in UTC+8")  # the store made, current
    result, loaded = retain(home, "add", "tz2", "-d", "Bob is in UTC", environ={"FORCE_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    assert "rich" not in loaded and result.stderr == ""


def test_a_refusal_off_a_terminal_is_the_same_line_without_rich(home: Path) -> None:
    result, loaded = retain(home, "get", "nope")
    assert result.returncode == EXIT_CODES[errors.NotFound] == 3
    assert result.stderr.startswith("error [not_found] no memory named 'nope' in any tier\n  ")
    assert "rich" not in loaded
    # where rich would style it (a variable it reads says stderr is a terminal), it does
    result, loaded = retain(home, "get", "nope", environ={"FORCE_COLOR": "1"})
    assert result.returncode == 3 and "rich" in loaded
    assert result.stderr.startswith("\x1b[1;31merror\x1b[0m [not_found] no memory named")


def test_vectors_a_write_makes_without_numpy_are_those_a_reindex_makes_with_it(
    home: Path,
) -> None:
    """Memories of one thread (each write re-keys its neighbours, mixing their text in)
    written by the CLI without numpy keep their vectors' bytes through a reindex with it."""
    import sqlite3

    import retain as api

    for n, text in enumerate(["we fly to Lisbon on Friday", "yes! the 9 am one", "café ☕"]):
        added, loaded = retain(home, "add", f"turn-{n}", "-d", text, "--thread", "trip")
        assert added.returncode == 0, added.stderr
        assert "numpy" not in loaded

    def vectors() -> list[tuple[int, str, bytes]]:
        with sqlite3.connect(home / "retain.db") as con:
            rows = con.execute(
                "SELECT memory_num, model, vector FROM memory_vectors ORDER BY memory_num"
            )
            return [(num, model, bytes(blob)) for num, model, blob in rows]

    written = vectors()
    assert [model for _, model, _ in written] == ["static:minilm-l6-static-256"] * 3
    import numpy  # noqa: F401  # loaded: the reindex embeds with it

    service = api.open(home)
    try:
        assert service.reindex() == 3
    finally:
        service.close()
    assert vectors() == written


def test_the_base_install_works_without_the_server_extra(home: Path) -> None:
    server = MODULES["server"]
    added, loaded = retain(home, "add", "tz", "-d", "Alice is in UTC+8", blocked=server)
    assert added.returncode == 0, added.stderr
    found, _ = retain(home, "search", "timezone", "--format", "json", blocked=server)
    assert found.returncode == 0, found.stderr
    assert [m["name"] for m in json.loads(found.stdout)["memories"]] == ["tz"]


@pytest.mark.parametrize(
    ("command", "absent"),
    [
        ("serve", "fastapi"),
        ("serve", "uvicorn"),
        ("serve", "mcp"),
        ("serve", "fastapi_offline"),
        ("mcp", "mcp"),  # (over stdio it needs neither FastAPI nor uvicorn)
    ],
)
def test_a_door_of_a_missing_extra_names_the_extra(home: Path, command: str, absent: str) -> None:
    result, _ = retain(home, command, blocked=(absent,))
    assert result.returncode == EXIT_CODES[errors.ExtraMissing] == 17, result.stderr
    assert "[extra_missing]" in result.stderr
    assert "pip install 'retain[server]'" in result.stderr
    assert f"no module {absent!r}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (home / "retain.db").exists()  # refused before the store was opened


# Serves the REST app over a store in $RETAIN_HOME (with the test client, its lifespan
# run): a REST request, then an MCP one; prints what each answered and whether the MCP
# SDK was loaded before each.
SERVE_BOTH = """
import json, sys
import retain
from fastapi.testclient import TestClient
from retain.doors import http
MCP_HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}
with TestClient(http.create_app(retain.open()), base_url="http://127.0.0.1:8765") as client:
    status = client.get("/v1/status").status_code
    before = "mcp" in sys.modules
    hello = client.post("/mcp/", json=MCP_HELLO, headers=ACCEPT)
    after = "mcp" in sys.modules
json_body = hello.headers.get("content-type", "").startswith("application/json")
error = hello.json().get("error", {}) if json_body else {}
print(json.dumps([status, before, hello.status_code, error.get("code"), after]))
"""


def test_the_server_loads_the_mcp_sdk_at_the_first_mcp_request(tmp_path: Path) -> None:
    env = {**os.environ, "RETAIN_HOME": str(tmp_path)}
    env.pop("RETAIN_DATABASE_URL", None)

    def served(blocked: str) -> list[object]:
        ran = subprocess.run(
            [sys.executable, "-c", BLOCK + SERVE_BOTH, blocked],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        )  # fmt: skip
        answered: list[object] = json.loads(ran.stdout.splitlines()[-1])
        return answered

    # REST answers without the SDK; the first MCP request loads it and is answered
    assert served("") == [200, False, 200, None, True]
    # without it, REST still answers, and /mcp refuses naming the extra
    assert served("mcp") == [200, False, 500, "extra_missing", False]


def test_a_failed_import_outside_the_extra_is_not_explained_away() -> None:
    from retain.extras import needed

    with pytest.raises(ModuleNotFoundError), needed("server", "serving"):
        import retain_no_such_module  # type: ignore[import-not-found]  # noqa: F401


def test_a_postgres_store_without_the_driver_names_the_extra(tmp_path: Path) -> None:
    code = BLOCK + (
        "import retain\n"
        "try:\n"
        "    retain.open_backend('postgresql://localhost/x')\n"
        "except retain.RetainError as exc:\n"
        "    print(exc.code, exc.details['extra'], exc.remedy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "psycopg"], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [
        "extra_missing",
        "postgres",
        "pip",
        "install",
        "'retain[postgres]'",
    ]


def test_a_deferred_name_is_imported_and_made_once_on_first_use() -> None:
    code = (
        "import sys\n"
        "from retain.doors.deferred import Deferred, real\n"
        "console = Deferred('rich.console', 'Console', width=33)\n"
        "escape = Deferred('rich.markup', 'escape')\n"
        "assert 'rich.console' not in sys.modules and 'not loaded' in repr(console)\n"
        "assert console.width == 33 and real(console) is real(console)\n"
        "console.soft_wrap = True\n"
        "assert real(console).soft_wrap is True\n"
        "assert escape('[b]') == '\\\\[b]' and real(7) == 7\n"
        "print(type(real(console)).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Console"
