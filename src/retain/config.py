"""Where the store lives and the settings read from ``config.toml`` beside it.

It is one piece past the usual size on purpose: every table of config.toml is read and
refused here, beside ``KNOWN``, so that no setting is read two ways and the sample below
(which the tests read, whole, as the file's grammar) is all of it.

$RETAIN_HOME/            (default ~/.local/share/retain/, mode 0700)
    retain.db            the store (mode 0600)
    config.toml          optional settings
    agent-memory/REALM/  legacy per-identity markdown, imported when the realm is opened
                         (beside whichever store file is opened)

[memory]
inline_max_bytes = 32768
enabled = true                       # false: no memory tools over MCP, an empty memory section
llm_writes = "observed"              # observed: an agent's writes land unless its session
                                     # is tainted; quarantined: every one waits for review

[search]
embedder = "static"                  # static | hash | model2vec | sentence-transformers | http
model = "minilm-l6-static-256"       # the model: a built-in name, a path, or a cached hub id
url = ""                             # http only: the endpoint's base, e.g. http://localhost:8080/v1
api_key_env = ""                     # http only: the environment variable holding the key
reranker = ""                        # a local sentence-transformers directory that reorders
                                     # each search's 50 best (off when empty; never downloaded)
ann_from = 2000                      # a SQLite store with this many vectors searches them
                                     # through int8 codes kept beside its file (0: never)

[context]
index_max_bytes = 8192               # the index lists entries up to this many bytes ...
index_max_entries = 200              # ... and this many entries
recall_max_entries = 8               # turn recall quotes at most this many memories ...
recall_max_bytes = 4096              # ... whose bodies total at most this many bytes
recall_timeout_ms = 500              # how long turn recall may take
recall_failure_policy = "skip"       # skip: render without recall; fail: raise recall_failed

[postgres]
pool_size = 8                        # connections each process keeps to a PostgreSQL store
ef_search = 100                      # candidates a search's HNSW walk keeps (1-1000): more
                                     # finds more of the nearest, and takes longer

[secrets]                            # what a write may not hold (retain.governance.secrets)
patterns = {}                        # added kinds: name = "regular expression"
disabled = []                        # kinds not looked for, built-in or added

[content_trust]                      # which tool results leave a session untainted
trusted_mcp_servers = []             # MCP servers whose tools' results are trusted
trusted_tools = []                   # tools whose results are trusted (not the web fetchers)
untrusted_tools = []                 # tools whose results taint the session
[tickets]
expire_after = "7d"                  # an undecided ticket (proposal) expires after this long

[gate]                               # the policy gate: a scope pattern -> none | second_approver
                                     # (global, "team:*", "team:NAME"; the most specific wins),
                                     # e.g. global = "second_approver"; none is gated by default

[access]
anonymous_writes = false             # may anonymous callers write (their writes wait for review)
control = false                      # true: every call needs a grant too (deny by default)
# [access.roles]                     # a role's principals or patterns: readers = ["agent:*"]
# [[access.grant]]                   # read-only grants: subject ("role:NAME", a principal or
#                                    # a pattern), action, on, effect ("allow" or "deny");
#                                    # see docs/concepts.md, "Access grants"

[retention]                          # how long a sweep keeps what the store learned: a scope
                                     # pattern -> an ISO 8601 duration (the most specific
                                     # pattern wins: the scope, then "KIND:*", then "*"), e.g.
                                     # global = "P365D", "team:*" = "P90D", "project:web" = "P30D";
                                     # a scope no pattern matches is kept
[signing]
key_file = ""                        # a file holding the Ed25519 signing key (base64 of its
                                     # 32 raw bytes, or PEM), relative to this directory;
                                     # $RETAIN_SIGNING_KEY wins over it (docs/receipts.md)
# [[mirrors]]                        # a write-through mirror (docs/mirrors.md), one table
#                                    # each: name, kind ("jsonl": path, relative to this
#                                    # directory; "pgvector": url or url_env, table) and
#                                    # scopes (scope patterns; default ["*"])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from retain import grants
from retain.errors import ConfigInvalid, InvalidValue
from retain.governance.content_trust import ContentTrustSettings
from retain.governance.secrets import SecretSettings, configured
from retain.grants import Grant
from retain.mirrors import MirrorSpec, specs_of
from retain.search.embed import DEFAULT_STATIC_MODEL, EmbedderSettings, check_settings

if TYPE_CHECKING:  # a [retention] table's windows: imported where the table is read
    from retain.governance.retention import Window

DEFAULT_INLINE_MAX_BYTES = 32 * 1024
DEFAULT_EF_SEARCH = 100  # [postgres] ef_search: see storage.postgres_vectors
DEFAULT_POOL_SIZE = 8
DEFAULT_ANN_FROM = 2_000  # [search] ann_from: see storage.sqlite_ann
STORE_FILE = "retain.db"
CONFIG_FILE = "config.toml"
LEGACY_DIR = "agent-memory"  # legacy per-identity markdown, imported once (retain.legacy)


RECALL_POLICIES = ("skip", "fail")
LLM_WRITES = ("observed", "quarantined")  # [memory] llm_writes: an agent's write posture
TICKET_EXPIRE_AFTER = timedelta(days=7)  # the seed's: a promotion waits seven days at most
GATE_MODES = ("none", "second_approver")


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """How the memory section of an agent's context is bounded."""

    index_max_bytes: int = 8192
    index_max_entries: int = 200
    recall_max_entries: int = 8
    recall_max_bytes: int = 4096
    recall_timeout_ms: int = 500
    recall_failure_policy: str = "skip"


@dataclass(frozen=True, slots=True)
class AccessSettings:
    """``[access]``: whether grants are checked, the roles, and the grants of the file.

    With ``control`` on, some grant of the file must allow ``realm.admin`` (a store is
    never locked out: ``realm.admin`` is granted in the file alone)."""

    control: bool = False
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    grants: tuple[Grant, ...] = ()

    def __post_init__(self) -> None:
        if self.control and not any(
            g.action == "realm.admin" and g.effect == "allow" for g in self.grants
        ):
            raise ConfigInvalid(
                "access control is on but no grant of config.toml allows realm.admin, "
                "so nobody could administer the store",
                remedy='add an [[access.grant]] with action = "realm.admin" and '
                'effect = "allow" for the operator, or set control = false under [access]',
                key="access.control",
            )


@dataclass(frozen=True, slots=True)
class Settings:
    inline_max_bytes: int = DEFAULT_INLINE_MAX_BYTES
    memory_enabled: bool = True  # [memory] enabled: whether agents are offered memory at all
    llm_writes: str = "observed"  # [memory] llm_writes: "quarantined" holds every agent write
    anonymous_writes: bool = False  # [access] anonymous_writes: may anonymous callers write
    access: AccessSettings = AccessSettings()  # [access] control, [access.roles], grants
    embedder: EmbedderSettings = EmbedderSettings()
    reranker: str = ""  # [search] reranker: a local model directory; "" is none
    ann_from: int = DEFAULT_ANN_FROM  # [search] ann_from: vectors from which SQLite keeps an index
    context: ContextSettings = ContextSettings()
    pool_size: int = DEFAULT_POOL_SIZE  # [postgres] pool_size
    ef_search: int = DEFAULT_EF_SEARCH  # [postgres] ef_search: the HNSW walk's candidates
    secrets: SecretSettings = SecretSettings()  # [secrets]: the kinds a write is scanned for
    content_trust: ContentTrustSettings = ContentTrustSettings()  # [content_trust]
    ticket_expire_after: timedelta = TICKET_EXPIRE_AFTER  # [tickets] expire_after
    # [gate]: (scope pattern, mode) pairs; a scope no pattern matches is not gated
    gate: tuple[tuple[str, str], ...] = ()
    # [retention]: the windows a sweep without an instant keeps each scope's memories for
    retention: tuple[Window, ...] = ()
    signing_key_file: str = ""  # [signing] key_file, resolved against the home directory
    mirrors: tuple[MirrorSpec, ...] = ()  # [[mirrors]]: write-through stores and their scopes


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The home directory: the argument, else ``$RETAIN_HOME``, else the XDG default."""
    if home is not None and str(home) != "":
        return Path(home).expanduser()
    env = os.environ.get("RETAIN_HOME")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "retain"


def load_settings(home: Path) -> Settings:
    """Read ``config.toml`` under ``home``; a missing file means every default."""
    path = home / CONFIG_FILE
    if not path.exists():
        return Settings()
    import tomllib  # here: a home without a config file (and --help) never loads it

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigInvalid(
            f"cannot read {path}: {exc}",
            remedy="fix the file's TOML or remove it to use the defaults",
            path=str(path),
        ) from exc
    _refuse_unknown(data, path)
    memory = _section(data, "memory", path)
    inline = memory.get("inline_max_bytes", DEFAULT_INLINE_MAX_BYTES)
    if not isinstance(inline, int) or isinstance(inline, bool) or inline < 0:
        raise ConfigInvalid(
            f"[memory] inline_max_bytes in {path} must be a whole number of bytes ≥ 0",
            remedy="set it like inline_max_bytes = 32768",
            path=str(path),
            value=inline,
        )
    llm_writes = memory.get("llm_writes", "observed")
    if llm_writes not in LLM_WRITES:
        raise ConfigInvalid(
            f"[memory] llm_writes in {path} must be one of {', '.join(LLM_WRITES)}",
            remedy='set it like llm_writes = "observed"',
            path=str(path),
            value=llm_writes,
        )
    return Settings(
        inline_max_bytes=inline,
        memory_enabled=_switch(memory, "memory", "enabled", True, path),
        llm_writes=llm_writes,
        anonymous_writes=_switch(
            _section(data, "access", path), "access", "anonymous_writes", False, path
        ),
        access=_access(_section(data, "access", path), path),
        embedder=_embedder(data, path),
        reranker=_reranker(data, path),
        ann_from=_ann_from(data, path),
        context=_context(data, path),
        pool_size=_pool_size(data, path),
        ef_search=_ef_search(data, path),
        secrets=_secrets(data, path),
        content_trust=_content_trust(data, path),
        ticket_expire_after=_expire_after(data, path),
        gate=_gate(data, path),
        retention=_retention(data, path),
        signing_key_file=_key_file(data, path),
        mirrors=specs_of(data.get("mirrors", []), path, home),
    )


# Every setting config.toml may hold, by table: anything else is refused, never ignored.
KNOWN: dict[str, tuple[str, ...]] = {
    "memory": ("inline_max_bytes", "enabled", "llm_writes"),
    "search": ("embedder", "model", "url", "api_key_env", "reranker", "ann_from"),
    "context": tuple(asdict(ContextSettings())),
    "postgres": ("pool_size", "ef_search"),
    "access": ("anonymous_writes", "control", "roles", "grant"),
    "secrets": ("patterns", "disabled"),
    "content_trust": tuple(asdict(ContentTrustSettings())),
    "tickets": ("expire_after",),
    "gate": (),  # its keys are scope patterns, each checked by _gate
    "retention": (),  # its keys are scope patterns, each checked by _retention
    "signing": ("key_file",),
    "mirrors": (),  # an array of tables, each checked by mirrors.specs_of
}
# tables whose keys are the user's, not settings' names
FREE_KEYS = frozenset({"gate", "retention"})


def _key_file(data: dict[str, Any], path: Path) -> str:
    """``[signing] key_file`` as a path (relative ones against the file's directory)."""
    value = _section(data, "signing", path).get("key_file", "")
    if not isinstance(value, str):
        raise ConfigInvalid(
            f"[signing] key_file in {path} must be a file name",
            remedy='set it like key_file = "signing.key"',
            path=str(path),
            key="signing.key_file",
        )
    if not value:
        return ""
    return str((path.parent / Path(value).expanduser()).resolve())


def _switch(section: dict[str, Any], table: str, key: str, default: bool, path: Path) -> bool:
    """A true-or-false setting of ``[table]``, or the refusal naming it."""
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ConfigInvalid(
            f"[{table}] {key} in {path} must be true or false",
            remedy=f"set it like {key} = {str(not default).lower()} (no quotes)",
            path=str(path),
            value=value,
        )
    return value


def _refuse_unknown(data: dict[str, Any], path: Path) -> None:
    """Refuse a table or a key this version does not read, naming it (and the close
    match, when there is one): a misspelt setting would otherwise do nothing, silently."""
    for table, section in data.items():
        if table not in KNOWN:
            _unknown(f"[{table}]" if isinstance(section, dict) else table, table, KNOWN, path)
        if isinstance(section, dict):  # not a table: _section refuses it by name
            for key in section:
                if table not in FREE_KEYS and key not in KNOWN[table]:
                    _unknown(f"[{table}] {key}", key, KNOWN[table], path, table=table)


def _unknown(
    what: str, key: str, known: Iterable[str], path: Path, *, table: str | None = None
) -> NoReturn:
    import difflib

    choices = list(known)
    close = difflib.get_close_matches(key, choices, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    place = f"[{table}] takes" if table else "the tables are"
    raise ConfigInvalid(
        f"{what} in {path} is not a setting retain reads{hint}",
        remedy=f"{place} {', '.join(choices)}: rename or remove {key}",
        path=str(path),
        key=f"{table}.{key}" if table else key,
        did_you_mean=close[0] if close else None,
    )


def _section(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    """The ``[name]`` table of the file (empty when absent), or the refusal."""
    section: Any = data.get(name, {})
    if not isinstance(section, dict):
        raise ConfigInvalid(
            f"[{name}] in {path} is not a table", remedy=f"write it as a [{name}] section"
        )
    return section


def _access(section: dict[str, Any], path: Path) -> AccessSettings:
    """``[access]``'s control, roles and grants, each checked (``config_invalid``)."""
    control = _switch(section, "access", "control", False, path)
    roles: dict[str, tuple[str, ...]] = {}
    table = section.get("roles", {})
    if not isinstance(table, dict):
        raise ConfigInvalid(
            f"[access.roles] in {path} is not a table",
            remedy='write it as [access.roles] with lines like readers = ["agent:*"]',
            path=str(path),
        )
    listed = section.get("grant", [])
    if not isinstance(listed, list) or not all(isinstance(g, dict) for g in listed):
        raise ConfigInvalid(
            f"access.grant in {path} is not a list of tables",
            remedy="write each grant as an [[access.grant]] table",
            path=str(path),
        )
    made: list[Grant] = []
    try:
        for name, members in table.items():
            grants.check_subject(f"role:{name}")
            if not isinstance(members, list):
                raise InvalidValue(
                    f"role {name!r} is not a list of principals",
                    remedy='write it like readers = ["agent:*"]',
                    field="roles",
                )
            roles[name] = tuple(
                grants.check_principal_pattern(m, "a role's member") for m in members
            )
        for place, entry in enumerate(listed, start=1):
            unknown = set(entry) - {"subject", "action", "on", "effect"}
            if unknown:
                key = sorted(unknown)[0]
                fields = ("subject", "action", "on", "effect")
                _unknown(f"access.grant {key}", key, fields, path, table="access.grant")
            grant = grants.parse(
                entry.get("subject"), entry.get("action"), entry.get("on"),
                entry.get("effect", "allow"),
            )  # fmt: skip
            made.append(replace(grant, source="config", id=f"config:{place}"))
        return AccessSettings(control=control, roles=roles, grants=tuple(made))
    except InvalidValue as exc:
        raise ConfigInvalid(
            f"[access] in {path}: {exc.message}", remedy=exc.remedy, path=str(path)
        ) from exc


def _ef_search(data: dict[str, Any], path: Path) -> int:
    depth = _section(data, "postgres", path).get("ef_search", DEFAULT_EF_SEARCH)
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= 1000:
        raise ConfigInvalid(  # pgvector's own bounds
            f"[postgres] ef_search in {path} must be a whole number from 1 to 1000",
            remedy=f"set it like ef_search = {DEFAULT_EF_SEARCH}",
            path=str(path),
            value=depth,
        )
    return depth


def _pool_size(data: dict[str, Any], path: Path) -> int:
    section = _section(data, "postgres", path)
    size = section.get("pool_size", DEFAULT_POOL_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ConfigInvalid(
            f"[postgres] pool_size in {path} must be a whole number ≥ 1",
            remedy=f"set it like pool_size = {DEFAULT_POOL_SIZE}",
            path=str(path),
            value=size,
        )
    return size


def _ann_from(data: dict[str, Any], path: Path) -> int:
    value = _section(data, "search", path).get("ann_from", DEFAULT_ANN_FROM)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigInvalid(
            f"[search] ann_from in {path} must be a whole number ≥ 0 (0: never)",
            remedy=f"set it like ann_from = {DEFAULT_ANN_FROM}",
            key="search.ann_from",
            path=str(path),
            value=value,
        )
    return value


def _secrets(data: dict[str, Any], path: Path) -> SecretSettings:
    """``[secrets]``: each added kind's expression compiled now, so a bad one is refused
    when the file is read, naming its key (never when a write meets it)."""
    section = _section(data, "secrets", path)
    patterns: Any = section.get("patterns", {})
    if not isinstance(patterns, dict) or not all(isinstance(v, str) for v in patterns.values()):
        raise ConfigInvalid(
            f"[secrets] patterns in {path} must be a table of names and regular expressions",
            remedy='write it like patterns = { acme_token = "acme_[0-9a-f]{32}" }',
            path=str(path),
            key="secrets.patterns",
        )
    disabled: Any = section.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(v, str) for v in disabled):
        raise ConfigInvalid(
            f"[secrets] disabled in {path} must be a list of kinds",
            remedy='write it like disabled = ["jwt"]',
            path=str(path),
            key="secrets.disabled",
        )
    settings, problems = configured(patterns, disabled)
    if problems:
        key, problem = problems[0]
        raise ConfigInvalid(
            f"[secrets] {key} in {path}: {problem}",
            remedy="fix or remove it",
            path=str(path),
            key=f"secrets.{key}",
        )
    return settings


def _expire_after(data: dict[str, Any], path: Path) -> timedelta:
    from retain.chrono import parse_duration
    from retain.errors import InvalidTime

    value = _section(data, "tickets", path).get("expire_after", "7d")
    try:
        if not isinstance(value, str):
            raise InvalidTime("not text")
        period = parse_duration(value)
    except InvalidTime as exc:
        raise ConfigInvalid(
            f"[tickets] expire_after in {path} must be a period such as 7d, 48h or 2w",
            remedy='set it like expire_after = "7d"',
            path=str(path),
            value=value,
        ) from exc
    if period <= timedelta(0):
        raise ConfigInvalid(
            f"[tickets] expire_after in {path} must be longer than nothing",
            remedy='set it like expire_after = "7d"',
            path=str(path),
            value=value,
        )
    return period


def _gate(data: dict[str, Any], path: Path) -> tuple[tuple[str, str], ...]:
    """The ``[gate]`` table: each key a scope pattern (``global``, ``team:*`` or
    ``team:NAME``), each value a mode (``none`` or ``second_approver``)."""
    from retain.fields import is_name

    rules = []
    for pattern, mode in _section(data, "gate", path).items():
        team = pattern.removeprefix("team:") if pattern.startswith("team:") else None
        if pattern != "global" and team != "*" and (team is None or not is_name(team)):
            raise ConfigInvalid(
                f"[gate] {pattern!r} in {path} is not a scope pattern",
                remedy='name global, "team:*" or "team:NAME" (in quotes)',
                path=str(path),
                key=f"gate.{pattern}",
            )
        if mode not in GATE_MODES:
            raise ConfigInvalid(
                f"[gate] {pattern!r} in {path} must be one of {', '.join(GATE_MODES)}",
                remedy=f'set it like "{pattern}" = "second_approver"',
                path=str(path),
                value=mode,
            )
        rules.append((pattern, mode))
    return tuple(rules)


def _retention(data: dict[str, Any], path: Path) -> tuple[Window, ...]:
    """The ``[retention]`` table: each key a scope pattern (``*``, ``global``,
    ``KIND:*`` or ``KIND:NAME`` for project, team or agent), each value an ISO 8601
    duration longer than nothing (``P365D``, ``P1Y``, ``PT12H``)."""
    from retain.chrono import parse_period
    from retain.errors import InvalidTime
    from retain.governance.retention import Window, is_pattern

    windows = []
    for pattern, value in _section(data, "retention", path).items():
        if not is_pattern(pattern):
            raise ConfigInvalid(
                f"[retention] {pattern!r} in {path} is not a scope pattern",
                remedy='name "*", global, a scope such as "project:web", or a kind of '
                'scope such as "team:*" (in quotes)',
                path=str(path),
                key=f"retention.{pattern}",
            )
        try:
            if not isinstance(value, str):
                raise InvalidTime("not text")
            period = parse_period(value)
        except InvalidTime as exc:
            raise ConfigInvalid(
                f"[retention] {pattern!r} in {path} must be an ISO 8601 duration such as "
                "P365D, P1Y or P2W",
                remedy=f'set it like "{pattern}" = "P90D" (in quotes)',
                path=str(path),
                key=f"retention.{pattern}",
                value=value,
            ) from exc
        if period.empty:
            raise ConfigInvalid(
                f"[retention] {pattern!r} in {path} must be longer than nothing",
                remedy=f'set it like "{pattern}" = "P90D"',
                path=str(path),
                key=f"retention.{pattern}",
                value=value,
            )
        windows.append(Window(pattern, period))
    return tuple(windows)


def _context(data: dict[str, Any], path: Path) -> ContextSettings:
    section = _section(data, "context", path)
    values: dict[str, Any] = {}
    for key, default in asdict(ContextSettings()).items():
        value = section.get(key, default)
        if isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigInvalid(
                    f"[context] {key} in {path} must be a whole number ≥ 0",
                    remedy=f"set it like {key} = {default}",
                    path=str(path),
                    value=value,
                )
        elif value not in RECALL_POLICIES:
            raise ConfigInvalid(
                f"[context] {key} in {path} must be one of {', '.join(RECALL_POLICIES)}",
                remedy=f'set it like {key} = "{default}"',
                path=str(path),
                value=value,
            )
        values[key] = value
    return ContextSettings(**values)


def _reranker(data: dict[str, Any], path: Path) -> str:
    from retain.search.rerank import check_path

    value = _section(data, "search", path).get("reranker", "")
    if not isinstance(value, str):
        raise ConfigInvalid(
            f"[search] reranker in {path} must be text",
            remedy='write it in quotes, like reranker = "/path/to/model"',
            path=str(path),
            value=value,
        )
    try:
        return check_path(value)
    except ConfigInvalid as exc:
        raise ConfigInvalid(
            f"{exc.message} (in {path})", remedy=exc.remedy, path=str(path), value=value
        ) from exc


def _embedder(data: dict[str, Any], path: Path) -> EmbedderSettings:
    search = _section(data, "search", path)
    values = {}
    for key in ("embedder", "model", "url", "api_key_env"):
        value = search.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigInvalid(
                f"[search] {key} in {path} must be text",
                remedy=f'write it in quotes, like {key} = "..."',
                path=str(path),
                value=value,
            )
        values[key] = value
    provider = values["embedder"] or "static"
    model = values["model"]
    if model is None:
        model = DEFAULT_STATIC_MODEL if provider == "static" else ""
    settings = EmbedderSettings(
        provider=provider,
        model=model,
        url=values["url"] or "",
        api_key_env=values["api_key_env"] or "",
    )
    try:
        return check_settings(settings)
    except ConfigInvalid as exc:
        raise ConfigInvalid(
            f"{exc.message} (in {path})", remedy=exc.remedy, path=str(path)
        ) from exc


def _content_trust(data: dict[str, Any], path: Path) -> ContentTrustSettings:
    """``[content_trust]``: each key a list of names (servers or tools), each non-empty text."""
    section = _section(data, "content_trust", path)
    values: dict[str, tuple[str, ...]] = {}
    for key in asdict(ContentTrustSettings()):
        value = section.get(key, [])
        if not isinstance(value, list) or not all(
            isinstance(item, str) and item.strip() == item and item for item in value
        ):
            raise ConfigInvalid(
                f"[content_trust] {key} in {path} must be a list of names",
                remedy=f'set it like {key} = ["name", ...], each name in quotes, no spaces '
                "around it",
                path=str(path),
                value=value,
            )
        values[key] = tuple(value)
    return ContentTrustSettings(**values)
