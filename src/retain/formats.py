"""The formats of other memory stores, read into writes: what ``retain import --from``
takes, and how a mem0 memory is kept (the mem0 door writes the same).

* ``mcp-memory``: the official MCP memory server's JSON lines. An entity becomes a
  memory: named from the entity's name, its subject that name, its body the
  observations one per line, its description the type and the first observation. A
  relation becomes a reference from one entity's memory to the other's. The entity's
  type and its relations' types are kept in the memory's metadata under
  ``mcp_memory``.
* ``mem0``: a mem0 ``get_all`` dump (``{"results": [...]}``, or the list) or export. An
  item becomes a memory as ``retain.integrations.mem0`` keeps one, with its id, its
  times and its metadata.
* ``markdown``: a folder of Markdown notes with optional YAML frontmatter (Basic
  Memory, Obsidian). A note becomes a memory named from its ``permalink`` or its file
  name, described by its ``title`` or first heading, tagged by its ``tags``, its
  ``[[wiki links]]`` references to the notes they name.

A reader never writes: it returns the writes (``Incoming``) and what it passed over
and why (``Skipped``), and the service checks and applies them in one transaction.
Names are made from foreign names by ``slug``; two that would collide get ``-2``, ``-3``….
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from retain.chrono import parse_stamp
from retain.errors import InvalidValue, SnapshotInvalid
from retain.fields import MAX_REFERENCES, NAME_MAX, TAG_MAX
from retain.results import Restore, Skipped, WriteRequest

KINDS = ("mcp-memory", "mem0", "markdown")
DESCRIPTION_CHARS = 200

MCP = "mcp_memory"  # the metadata key of an MCP memory entity's type and relations

MEM0 = "mem0"  # the metadata key a mem0 memory's own fields are kept under, and its tag
MEM0_IDS = ("user_id", "agent_id", "run_id")
MEM0_PROMOTED = (*MEM0_IDS, "actor_id", "role")
MEM0_PREFIX = {"user_id": "user:", "agent_id": "agent:", "run_id": "run:"}


@dataclass(slots=True)
class Incoming:
    """What a foreign file or folder holds, as writes: each with where it came from."""

    writes: list[tuple[str, WriteRequest]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def read(kind: str, path: Path, project: str | None) -> Incoming:
    """The writes ``path`` holds in the format ``kind``, to file in ``project``'s tier
    (None: the global tier). A file that cannot be read at all is ``snapshot_invalid``."""
    readers: dict[str, Callable[[Path, str | None], Incoming]] = {
        "mcp-memory": _mcp_memory,
        "mem0": _mem0,
        "markdown": _markdown,
    }
    if kind not in readers:
        raise InvalidValue(
            f"{kind!r} is not a format retain imports",
            remedy=f"name one of {', '.join(KINDS)}, or leave it out for a retain snapshot",
            field="kind",
        )
    return readers[kind](path, project)


def slug(text: str) -> str:
    """A memory name made from a foreign name: accents dropped (``José`` → ``Jose``), runs
    of what a name may not hold become ``-``, and it starts with a letter or digit. A
    name with no letter or digit of the Latin alphabet (``日本語``) becomes ``n-`` and 8
    hex digits of its SHA-256, so that it stays one name of its own ("" for nothing)."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", text.strip())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    made = re.sub(r"[^A-Za-z0-9._-]+", "-", folded)
    made = re.sub(r"^[^A-Za-z0-9]+", "", made)[:NAME_MAX].rstrip("-")
    if not made and text.strip():
        return "n-" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:8]
    return made


class _Names:
    """Names made unique: a second ``x`` is ``x-2``."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def take(self, wanted: str) -> str:
        name, n = wanted, 1
        while name.casefold() in self.taken:
            n += 1
            suffix = f"-{n}"
            name = wanted[: NAME_MAX - len(suffix)] + suffix
        self.taken.add(name.casefold())
        return name


def _tier(project: str | None) -> dict[str, Any]:
    return {"project": project, "tier": "project" if project else "global"}


def _description(*parts: str) -> str:
    return " ".join(" ".join(parts).split())[:DESCRIPTION_CHARS]


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise SnapshotInvalid(
            f"cannot read {path}: {exc.strerror or exc}", remedy="check the path", file=str(path)
        ) from exc
    except UnicodeDecodeError as exc:
        raise SnapshotInvalid(
            f"{path} is not UTF-8 text", remedy="save it as UTF-8", file=str(path)
        ) from exc


# the MCP memory server


def _mcp_memory(path: Path, project: str | None) -> Incoming:
    out = Incoming()
    entities: dict[str, tuple[str, dict[str, Any]]] = {}  # name → (source, entity)
    relations: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        source = f"{path.name}:{number}"
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            out.skipped.append(Skipped(source, "not a JSON object"))
            continue
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "entity":
            name = record.get("name")
            observations = record.get("observations", [])
            if not isinstance(name, str) or not name.strip():
                out.skipped.append(Skipped(source, "an entity without a name"))
            elif not isinstance(observations, list) or not all(
                isinstance(o, str) for o in observations
            ):
                out.skipped.append(Skipped(source, "its observations are not a list of text"))
            elif name in entities:
                out.skipped.append(Skipped(source, f"entity {name!r} is named twice"))
            else:
                entities[name] = (source, record)
        elif kind == "relation":
            relations.append((source, record))
        else:
            out.skipped.append(Skipped(source, "neither an entity nor a relation"))
    taken = _Names()
    names = {name: taken.take(slug(name)) for name in entities}  # none blank: refused above
    linked: dict[str, list[dict[str, str]]] = {name: [] for name in names}
    for source, record in relations:
        start, end, type_ = record.get("from"), record.get("to"), record.get("relationType")
        if not all(isinstance(v, str) and v for v in (start, end, type_)):
            out.skipped.append(Skipped(source, "a relation needs from, to and relationType"))
        elif start not in names or end not in names:
            missing = start if start not in names else end
            out.skipped.append(Skipped(source, f"no entity named {missing!r}"))
        else:
            linked[str(start)].append({"to": str(end), "type": str(type_)})
    out.skipped.sort(key=lambda s: int(s.source.rpartition(":")[2]))  # in the file's order
    for name, made in names.items():
        source, record = entities[name]
        said: list[str] = record.get("observations", [])
        references = _referenced([names[r["to"]] for r in linked[name]], source, out)
        kind_ = record.get("entityType") if isinstance(record.get("entityType"), str) else ""
        out.writes.append(
            (
                source,
                WriteRequest(
                    name=made,
                    description=_description(
                        f"{name} ({kind_})" if kind_ else name,
                        f"— {said[0]}" if said else "",
                    ),
                    body="\n".join(said),
                    subject=name,
                    references=references,
                    metadata={MCP: {"entity_type": kind_, "relations": linked[name]}},
                    **_tier(project),
                ),
            )
        )
    return out


# mem0


def mem0_request(
    name: str, text: str, kept: Mapping[str, Any], project: str | None, **options: Any
) -> WriteRequest:
    """A mem0 memory as it is kept (see ``retain.integrations.mem0``): its text the body,
    ``user_id`` its subject, ``run_id`` its thread, its ids tags, ``kept`` its
    metadata under ``mem0``."""
    ids = {key: kept[key] for key in MEM0_IDS if kept.get(key) is not None}
    return WriteRequest(
        name=name,
        description=_description(text),
        body=text,
        tags=[MEM0, *(MEM0_PREFIX[key] + value for key, value in ids.items())],
        load="search",
        subject=ids.get("user_id", ""),
        thread=ids.get("run_id", ""),
        metadata={MEM0: dict(kept)},
        **_tier(project),
        **options,
    )


def mem0_ids(given: Mapping[str, Any]) -> dict[str, str]:
    """The mem0 entity ids given, as text: trimmed, not blank, without whitespace or
    commas, short enough to tag a memory with."""
    ids = {}
    for key, value in given.items():
        if value is None:
            continue
        text = str(value).strip()
        limit = TAG_MAX - len(MEM0_PREFIX[key])
        if not text or any(c.isspace() or c == "," for c in text) or len(text) > limit:
            raise InvalidValue(
                f"{key} {text[:80]!r} is not an id of 1 to {limit} characters without "
                "whitespace or commas",
                remedy=f"pass a {key} such as 'alice'",
                field=key,
            )
        ids[key] = text
    return ids


def _mem0(path: Path, project: str | None) -> Incoming:
    try:
        dump = json.loads(_text(path))
    except ValueError as exc:
        raise SnapshotInvalid(
            f"{path} is not JSON: {exc}", remedy="give a mem0 get_all dump", file=str(path)
        ) from exc
    items = dump.get("results", dump.get("memories")) if isinstance(dump, dict) else dump
    if not isinstance(items, list):
        raise SnapshotInvalid(
            f"{path} holds no list of memories",
            remedy='give {"results": [...]} as get_all returns it, or the list',
            file=str(path),
        )
    out, taken = Incoming(), _Names()
    for at, item in enumerate(items):
        source = f"{path.name}[{at}]"
        try:
            out.writes.append((source, _mem0_item(item, taken, project)))
        except InvalidValue as exc:
            out.skipped.append(Skipped(source, exc.message))
    return out


def _mem0_item(item: Any, taken: _Names, project: str | None) -> WriteRequest:
    if not isinstance(item, dict):
        raise InvalidValue("not an object", remedy="", field="item")
    text = item.get("memory")
    if not isinstance(text, str) or not text.strip():
        raise InvalidValue("no memory text", remedy="", field="memory")
    digest = item.get("hash")
    if (
        isinstance(digest, str)
        and digest != hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
    ):
        raise InvalidValue("its hash does not match its text", remedy="", field="hash")
    ids = mem0_ids({key: item.get(key) for key in MEM0_IDS})
    if not ids:
        raise InvalidValue("no user_id, agent_id or run_id", remedy="", field="user_id")
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidValue("its metadata is not an object", remedy="", field="metadata")
    kept: dict[str, Any] = {**ids, "metadata": metadata}
    for key in ("actor_id", "role"):
        if isinstance(item.get(key), str):
            kept[key] = item[key]
    wanted = item.get("id")
    name = taken.take(wanted if isinstance(wanted, str) and slug(wanted) == wanted else "")
    if not name:  # no usable id: a new one
        name = taken.take(str(uuid.uuid4()))
    created = _moment(item.get("created_at"))
    restore = None
    if created is not None:
        restore = Restore(created_at=created, verified_at=created, read_count=0)
    return mem0_request(name, text, kept, project, restore=restore, create_only=True)


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parse_stamp(moment.isoformat()) if moment.tzinfo is not None else None


# Markdown notes

_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_WIKI = re.compile(r"\[\[([^\]|#\n]+)(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")


def _markdown(path: Path, project: str | None) -> Incoming:
    import yaml

    if not path.is_dir():
        raise SnapshotInvalid(
            f"{path} is not a folder", remedy="give the folder of notes", file=str(path)
        )
    out = Incoming()
    notes: list[tuple[Path, dict[str, Any], str]] = []
    for file in _files(path, out):
        source = str(file.relative_to(path))
        raw = _text(file)
        head: Any = {}
        body = raw
        found = _FRONT.match(raw)
        if found:
            try:
                head = yaml.safe_load(found.group(1)) or {}
            except yaml.YAMLError:
                out.skipped.append(Skipped(source, "its frontmatter is not YAML"))
                continue
            body = raw[found.end() :]
        if not isinstance(head, dict):
            out.skipped.append(Skipped(source, "its frontmatter is not a mapping"))
            continue
        if not body.strip():
            out.skipped.append(Skipped(source, "an empty note (no text)"))
            continue
        notes.append((file, head, body))
    taken, named = _Names(), dict[str, str]()  # a note's link forms → its name
    made = []
    for file, head, _ in notes:
        permalink = head.get("permalink")
        wanted = slug(permalink) if isinstance(permalink, str) else ""
        name = taken.take(wanted or slug(file.stem))
        made.append(name)
        title = head.get("title") if isinstance(head.get("title"), str) else None
        inside = file.relative_to(path).with_suffix("").as_posix()  # a link by its path
        for form in (file.stem, title, permalink, inside, f"{inside}.md"):
            if isinstance(form, str):
                named.setdefault(form.casefold(), name)
    for (file, head, body), name in zip(notes, made, strict=True):
        title = head.get("title") if isinstance(head.get("title"), str) else None
        heading = _HEADING.search(body)
        description = title or (heading.group(1) if heading else "") or _first_line(body)
        links = [m.group(1).strip() for m in _WIKI.finditer(body)]
        source = str(file.relative_to(path))
        for link in dict.fromkeys(links):
            if link.casefold() not in named:
                out.skipped.append(
                    Skipped(source, f"its link to {link!r} names no note of the folder "
                            "(kept as a reference)")
                )  # fmt: skip
        linked = [named.get(link.casefold()) or slug(link) for link in links]
        references = _referenced([r for r in linked if r != name], source, out)
        out.writes.append(
            (
                source,
                WriteRequest(
                    name=name,
                    description=_description(description or file.stem),
                    body=body,
                    tags=_tags(head.get("tags")),
                    references=references,
                    **_tier(project),
                ),
            )
        )
    return out


def _files(root: Path, out: Incoming) -> Iterator[Path]:
    for file in sorted(root.rglob("*")):
        parts = file.relative_to(root).parts
        if any(part.startswith(".") for part in parts):
            continue  # .obsidian, .git, dot-files: the tools' own
        if file.is_symlink():
            out.skipped.append(Skipped("/".join(parts), "a symbolic link"))
        elif file.is_file() and file.suffix.lower() == ".md":
            yield file
        elif file.is_file():
            out.skipped.append(Skipped("/".join(parts), "not a Markdown file"))


def _referenced(names: list[str], source: str, out: Incoming) -> list[str]:
    """A memory's references, each once: the first ``MAX_REFERENCES``, the rest reported."""
    unique = [name for name in dict.fromkeys(names) if name]
    if len(unique) > MAX_REFERENCES:
        out.skipped.append(
            Skipped(
                source,
                f"{len(unique) - MAX_REFERENCES} of its {len(unique)} links are not kept as "
                f"references (a memory holds at most {MAX_REFERENCES})",
            )
        )
    return unique[:MAX_REFERENCES]


def _first_line(body: str) -> str:
    return next((line.strip() for line in body.splitlines() if line.strip()), "")


def _tags(value: Any) -> list[str]:
    """Frontmatter tags: a list, or text split at commas and spaces; ``#`` dropped."""
    if isinstance(value, str):
        value = re.split(r"[,\s]+", value)
    if not isinstance(value, list):
        return []
    tags = [str(t).strip().lstrip("#") for t in value if isinstance(t, str | int)]
    return list(dict.fromkeys(t for t in tags if t and len(t) <= TAG_MAX))
