"""LangGraph's ``BaseStore`` over a retain session: ``RetainStore``.

A door: every operation is a verb of the session it was given (``write_many``,
``delete``, ``get``, ``search``, ``list_memories``), so the gate judges it as that
session's principal, and what the principal may not see is absent here too. How an item
is kept (docs/langgraph.md):

* an item is a memory of one tier, the ``project`` given (else the global tier), named
  ``lg-`` and 40 hex digits of the SHA-256 of its tier, namespace and key (a memory name
  allows few characters; a key allows any), found by search alone (load ``search``);
* its description is its path (``namespace/…/key``), its body the text of the fields its
  index picks (none with ``index=False``), and its value, namespace, key, index and TTL
  the memory's metadata under ``langgraph``;
* it is tagged ``langgraph`` and, for each prefix of its namespace, ``lg.`` and 16 hex
  digits of the prefix's SHA-256: a search under a prefix filters on that tag;
* ``created_at`` and ``updated_at`` are the memory's (a put never moves the first);
* a TTL (minutes) is the memory's expiry; an expired item is gone to every read, and a
  read that refreshes TTLs moves the expiry on (a write, by a principal that may write).

Searching with a query is retain's hybrid search over those bodies, its score the
item's; items kept without an index follow the scored ones, unscored, as LangGraph's
own stores return them. Filters (``$eq $ne $gt $gte $lt $lte``, nested objects) apply
to the values. Within one ``batch`` the reads see the store as it was before the batch's
puts, which are applied last, the last put of a key winning, in one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from retain import fields
from retain.chrono import stamp
from retain.errors import AccessDenied, InvalidValue, NotFound
from retain.integrations.tier import Tier, in_order
from retain.model import CALLER, Memory
from retain.results import WriteRequest
from retain.service import SEARCH_LIMIT_MAX, MemoryService
from retain.service.erasure import Certificate

KEPT = "langgraph"  # the metadata key an item is kept under
TAG = "langgraph"  # every item's tag
PREFIX_TAG = "lg."
NAME = "lg-"
DESCRIPTION_CHARS = 200
WHOLE = "$"  # the index path of the whole value
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
CENTURY_MINUTES = 100 * 366 * 24 * 60


def _digest(value: object, digits: int) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def name_of(namespace: tuple[str, ...], key: str, project: str | None = None) -> str:
    """The memory name an item of ``project``'s store (the global tier's, for None) is
    kept under: a global name may not be reused by a project, so the tier is hashed in."""
    return NAME + _digest([project or "", list(namespace), key], 40)


def prefix_tag(prefix: tuple[str, ...]) -> str:
    """The tag of the items under ``prefix`` (every item's, for the empty prefix)."""
    return PREFIX_TAG + _digest(list(prefix), 16) if prefix else TAG


class RetainStore(BaseStore):
    """A LangGraph store whose items are memories of one tier of a retain store, written
    and read as ``memory``'s principal (see the module docstring).

    ``index`` takes ``fields`` (the JSON paths whose text is searched; default the whole
    value); retain embeds with the store's own model, so ``embed`` and ``dims`` are
    refused rather than ignored. ``ttl`` is LangGraph's ``TTLConfig``
    (``default_ttl``, ``refresh_on_read``)."""

    supports_ttl = True

    def __init__(
        self,
        memory: MemoryService,
        *,
        project: str | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if project is not None:
            fields.name(project, what="project")
        config: dict[str, Any] = dict(index or {})
        foreign = sorted(set(config) - {"fields"})
        if foreign:
            raise InvalidValue(
                f"retain embeds with its store's own model, so the index takes only "
                f"'fields', not {', '.join(map(repr, foreign))}",
                remedy="leave 'embed' and 'dims' out; choose the embedder in retain's config",
                field="index",
            )
        self.memory = memory
        self.project = project
        self.tier = Tier(project)
        self.tier.check(self.memory)
        self.fields: list[str] = list(config.get("fields") or [WHOLE])
        for path in self.fields:
            _path(path)
        default = (ttl or {}).get("default_ttl")
        if default is not None:
            _ttl(default)
        self.ttl_config = ttl

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order: reads first, as the store was, then the puts."""
        ops = list(ops)
        now = self.memory.clock.now()
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        read: dict[str, tuple[Memory, float]] = {}  # items whose TTL a read refreshes
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, now, read))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, now, read))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op, now))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        put_names = {name_of(*place, self.project) for place in puts}
        self._refresh([kept for name, kept in read.items() if name not in put_names], now)
        self._put(list(puts.values()), now)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread (the session's connections are per thread)."""
        listed = list(ops)
        return await asyncio.to_thread(self.batch, listed)

    # reads

    def _get(self, op: GetOp, now: datetime, read: dict[str, tuple[Memory, float]]) -> Item | None:
        try:
            record = self.memory.get(
                name_of(tuple(op.namespace), op.key, self.project), project=self.tier.named
            )
        except NotFound:
            return None
        memory = record.memory
        kept = self._kept(memory, now)
        if kept is None:
            return None
        self._note_read(memory, kept, op.refresh_ttl, read)
        found = _item(memory, kept)
        return Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _search(
        self, op: SearchOp, now: datetime, read: dict[str, tuple[Memory, float]]
    ) -> list[SearchItem]:
        tag = prefix_tag(tuple(op.namespace_prefix))
        wanted = op.offset + op.limit
        _check_filter(op.filter)
        found: list[tuple[Memory, dict[str, Any], float | None]] = []
        if op.query:
            if wanted > SEARCH_LIMIT_MAX:
                raise InvalidValue(
                    f"a search with a query answers its best {SEARCH_LIMIT_MAX}; offset "
                    f"{op.offset} and limit {op.limit} reach past them",
                    remedy=f"keep offset + limit at most {SEARCH_LIMIT_MAX}, or narrow the query",
                    field="limit",
                )
            # the best 200 always: an expired or filtered-out hit must not take a place
            hits = self.memory.search(
                op.query, tag=tag, limit=SEARCH_LIMIT_MAX, **self.tier.searched
            )
            for hit in hits.hits:
                kept = self._kept(hit.memory, now)
                if kept is None or kept.get("index") is False:
                    continue
                if _matches(kept["value"], op.filter):
                    found.append((hit.memory, kept, hit.score))
        if not op.query or len(found) < wanted:
            listed = self._listed(tag, now, unindexed=bool(op.query))
            for memory, kept in listed:
                if len(found) >= wanted:
                    break
                if _matches(kept["value"], op.filter):
                    found.append((memory, kept, None))
        page = found[op.offset : wanted]
        for memory, kept, _ in page:
            self._note_read(memory, kept, op.refresh_ttl, read)
        return [_item(memory, kept, score) for memory, kept, score in page]

    def _namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        spaces = {tuple(kept["namespace"]) for _, kept in self._listed(TAG, now)}
        conditions = op.match_conditions or ()
        matched = {ns for ns in spaces if all(_fits(c, ns) for c in conditions)}
        if op.max_depth is not None:
            matched = {ns[: op.max_depth] for ns in matched}
        return sorted(matched)[op.offset : op.offset + op.limit]

    def _listed(
        self, tag: str, now: datetime, *, unindexed: bool = False
    ) -> Iterator[tuple[Memory, dict[str, Any]]]:
        """The live items tagged ``tag``, newest first (only those kept without an
        index, with ``unindexed``)."""
        for memory in self.tier.memories(self.memory, tag):
            kept = self._kept(memory, now)
            if kept is not None and (not unindexed or kept.get("index") is False):
                yield memory, kept

    def forget(self, namespace: tuple[str, ...], key: str, *, reason: str = "") -> Certificate:
        """Erase an item (``forget``): its value leaves the memory and every event of its
        history; the certificate. An item deleted already is forgotten by its retain id,
        which the event log gives an operator."""
        name = name_of(tuple(namespace), str(key), self.project)
        memory = self.memory.get(name, project=self.tier.named).memory
        return self.memory.forget(memory.id, reason=reason)

    def sweep_ttl(self) -> int:
        """Delete the items past their TTL (no read returns them already); how many."""
        now = self.memory.clock.now()
        names = [
            m.name
            for m in self.tier.memories(self.memory, TAG)
            if m.is_expired(now) and m.name is not None and _item_of(m) is not None
        ]
        for name in names:
            self.memory.delete(name, project=self.tier.named)
        return len(names)

    def _kept(self, memory: Memory, now: datetime) -> dict[str, Any] | None:
        """The item a memory keeps: None for another tier's, an expired one, or a memory
        that is not an item (its metadata lost, as a forgotten one's is)."""
        if memory.scope != self.tier.scope or memory.is_expired(now):
            return None
        return _item_of(memory)

    def _note_read(
        self,
        memory: Memory,
        kept: dict[str, Any],
        refresh: bool | None,
        read: dict[str, tuple[Memory, float]],
    ) -> None:
        if refresh is None:
            refresh = (self.ttl_config or {}).get("refresh_on_read", True)
        ttl = kept.get("ttl")
        if refresh and ttl is not None and memory.name is not None:
            read[memory.name] = (memory, float(ttl))

    # writes

    def _refresh(self, read: list[tuple[Memory, float]], now: datetime) -> None:
        """Move the expiry of the items read on by their TTL. A principal that may not
        write reads without refreshing: the read is not refused for it."""
        if not read:
            return
        requests = [
            WriteRequest(
                name=memory.name or memory.id,
                expires=stamp(now + timedelta(minutes=ttl)),
                **self.tier.written,
            )
            for memory, ttl in read
        ]
        try:
            self.memory.write_many(requests, notes=False)
        except AccessDenied:
            return

    def _put(self, puts: list[PutOp], now: datetime) -> None:
        """The writes in one transaction, then the deletes (of other keys): a refused
        write leaves the batch's puts unapplied."""
        requests = [self._request(op, now) for op in puts if op.value is not None]
        if requests:
            self.memory.write_many(requests, notes=False)
        for op in puts:
            if op.value is None:
                name = name_of(tuple(op.namespace), op.key, self.project)
                with contextlib.suppress(NotFound):
                    self.memory.delete(name, project=self.tier.named)

    def _request(self, op: PutOp, now: datetime) -> WriteRequest:
        namespace = tuple(op.namespace)
        if not isinstance(op.value, Mapping):
            raise InvalidValue(
                f"an item's value must be a mapping, not {type(op.value).__name__}",
                remedy="put a dict of JSON values, or None to delete the item",
                field="value",
            )
        # JSON, or refused before anything else (the whole item is checked again as kept)
        value = fields.metadata(op.value, "an item's value", fields.CALLER_METADATA_MAX_CHARS)
        if op.ttl is not None:
            _ttl(op.ttl)
        paths = self.fields if op.index is None else (op.index or [])
        body = "\n".join(text for path in paths for text in _texts(value, path))
        path = " ".join("/".join((*namespace, op.key)).split())
        kept = {
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "index": False if op.index is False else list(paths),
            "ttl": op.ttl,
        }
        expires = "" if op.ttl is None else stamp(now + timedelta(minutes=op.ttl))
        return WriteRequest(
            name=name_of(namespace, op.key, self.project),
            description=path[:DESCRIPTION_CHARS] or op.key,
            body=body,
            tags=[TAG, *(prefix_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1))],
            load="search",
            expires=expires,
            metadata={KEPT: kept},
            **self.tier.written,
        )


def _item_of(memory: Memory) -> dict[str, Any] | None:
    """What an item's memory keeps of it (None: the memory is not an item's)."""
    kept = memory.metadata.get(CALLER, {}).get(KEPT)
    named = memory.name is not None and memory.name.startswith(NAME)
    return kept if named and isinstance(kept, dict) else None


def _item(memory: Memory, kept: Mapping[str, Any], score: float | None = None) -> SearchItem:
    """The item a memory keeps, as a search gives it (a ``get`` gives it as ``Item``)."""
    return SearchItem(
        namespace=tuple(kept["namespace"]),
        key=kept["key"],
        value=kept["value"],
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score,
    )


def _ttl(minutes: object) -> None:
    """A TTL: minutes, a finite number above 0 and at most a century."""
    if (
        isinstance(minutes, bool)
        or not isinstance(minutes, int | float)
        or not 0 < minutes <= CENTURY_MINUTES
    ):
        raise InvalidValue(
            f"ttl {minutes!r} is not a number of minutes above 0 and at most {CENTURY_MINUTES}",
            remedy="give the minutes the item lives after its last write or read, or None",
            field="ttl",
        )


def _check_filter(wanted: Mapping[str, Any] | None) -> None:
    """Refuse an operator LangGraph's filters do not have, before anything is read."""
    for want in (wanted or {}).values():
        if isinstance(want, Mapping):
            for op in want:
                if isinstance(op, str) and op.startswith("$") and op not in OPERATORS:
                    raise InvalidValue(
                        f"filter operator {op!r} is not one of {', '.join(OPERATORS)}",
                        remedy="compare with $eq, $ne, $gt, $gte, $lt or $lte",
                        field="filter",
                    )
            _check_filter({k: v for k, v in want.items() if not str(k).startswith("$")})


def _path(path: str) -> list[str] | str:
    if not isinstance(path, str) or not path:
        raise InvalidValue(
            f"index field {path!r} is not a JSON path",
            remedy='name fields as "a", "a.b", "a[0]", "a[*].b", or "$" for the whole value',
            field="index",
        )
    return path if path == WHOLE else tokenize_path(path)


def _texts(value: dict[str, Any], path: str) -> list[str]:
    """The texts ``path`` picks from ``value``: the whole value as lines of
    ``field: text``, or what LangGraph's path syntax selects."""
    if path == WHOLE:
        return list(_lines(value, ""))
    return [text for text in get_text_at_path(value, _path(path)) if text]


def _lines(value: Any, at: str) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _lines(item, f"{at}.{key}" if at else str(key))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _lines(item, at)
    elif value is not None:
        text = value if isinstance(value, str) else json.dumps(value)
        yield f"{at}: {text}" if at else text


def _fits(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"match type {condition.match_type!r} is not prefix or suffix")
    return all(want == "*" or have == want for have, want in pairs)


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search's filter (a dotted key, ``a.b``, reaches
    into nested objects when no key of the value is spelt so)."""
    return not wanted or all(_compared(_at(value, k), v) for k, v in wanted.items())


def _at(value: Mapping[str, Any], key: str) -> Any:
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _compared(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_operator(have, op, operand) for op, operand in want.items())
        return isinstance(have, Mapping) and all(_compared(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_compared(h, w) for h, w in zip(have, want, strict=True))
        )
    return _equal(have, want)


def _equal(have: Any, want: Any) -> bool:
    """JSON's equality: true and 1 are not the same value."""
    if isinstance(have, bool) or isinstance(want, bool):
        return type(have) is type(want) and have == want
    return bool(have == want)


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _equal(have, operand)
    if op == "$ne":
        return not _equal(have, operand)
    if op not in OPERATORS:
        raise InvalidValue(
            f"filter operator {op!r} is not one of {', '.join(OPERATORS)}",
            remedy="compare with $eq, $ne, $gt, $gte, $lt or $lte",
            field="filter",
        )
    return in_order(have, op[1:], operand)
