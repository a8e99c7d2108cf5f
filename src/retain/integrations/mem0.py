"""mem0's ``Memory`` over a retain session: the calls and result shapes of mem0's open
source ``Memory`` (both its 1.0 shape, entity ids and ``limit`` at the top level, and its
2.0 shape, ids in ``filters`` and ``top_k``), answered by the session's verbs.

It is one piece past the usual size on purpose: mem0's calls, its result shapes and
its filter language are one surface, read together against mem0's own.

A door: a memory is written with ``write_many``, read with ``get``, ``search`` and
``list_memories``, changed with ``write_many``, removed with ``delete`` or, when the caller
asks for erasure, ``forget``; its history is the event log's. So the gate judges every
call as the session's principal. How a mem0 memory is kept (docs/mem0.md):

* one memory per message, verbatim (mem0's ``infer=False``: no model is asked to extract
  facts), in one tier, the ``project`` given (else the global tier), found by search
  alone; its name, a UUID, is its mem0 id;
* the body is the message, the description its first 200 characters; ``user_id`` is also its
  subject (whom it is about) and ``run_id`` its thread (the conversation it came from);
* it is tagged ``mem0`` and ``user:ID``, ``agent:ID``, ``run:ID`` for the ids it has;
* the ids, ``role``, ``actor_id`` and the caller's metadata are the memory's metadata
  under ``mem0``. An agent id names whose memory it is; it is not a principal.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from retain import fields, formats, model
from retain.errors import HoldActive, InvalidValue, NotFound, RetainError
from retain.integrations.tier import Tier, in_order
from retain.model import CALLER, Event
from retain.results import WriteRequest
from retain.service import SEARCH_LIMIT_MAX, MemoryService

KEPT = TAG = formats.MEM0  # the metadata key a mem0 memory's fields are kept under; its tag
IDS = formats.MEM0_IDS
PROMOTED = formats.MEM0_PROMOTED  # given at the top of a result when set
PREFIX = formats.MEM0_PREFIX
NO_IDS = "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."
OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains")
_UNSET: Any = object()


class Memory:
    """mem0's ``Memory`` over ``service`` (default: ``retain.open()``), keeping its
    memories in ``project``'s tier (else the global tier). See the module docstring."""

    def __init__(self, service: MemoryService | None = None, *, project: str | None = None):
        if project is not None:
            fields.name(project, what="project")
        if service is None:
            import retain

            service = retain.open()
        self.service = service
        self.project = project
        self.tier = Tier(project)
        self.tier.check(self.service)

    # mem0's verbs

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Keep each user and assistant message as a memory, verbatim, in one
        transaction (system messages and messages without text are passed over).
        ``infer`` is accepted and changes nothing: no model is asked."""
        del infer  # always verbatim: retain asks no model
        if memory_type is not None or prompt is not None:
            raise InvalidValue(
                "procedural memories and prompts need a language model, and retain keeps "
                "messages as they are",
                remedy="leave memory_type and prompt out",
                field="memory_type" if memory_type is not None else "prompt",
            )
        ids = formats.mem0_ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        if not ids:
            raise InvalidValue(NO_IDS, remedy="pass user_id, agent_id or run_id", field="user_id")
        caller = _caller_metadata(metadata)
        requests, results = [], []
        for message in _messages(messages):
            text, role = message["content"], message["role"]
            actor = message.get("name")
            kept = {**ids, "role": role, "metadata": caller}
            if actor is not None:
                kept["actor_id"] = str(actor)
            name = str(uuid.uuid4())
            requests.append(self._request(name, text, kept, create=True))
            results.append(
                {
                    "id": name,
                    "memory": text,
                    "event": "ADD",
                    "actor_id": kept.get("actor_id"),
                    "role": role,
                }
            )
        if requests:
            self.service.write_many(requests, notes=False)
        return {"results": results}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        rerank: bool = False,
        **ignored: Any,
    ) -> dict[str, Any]:
        """The memories that answer ``query`` among those the ids and filters pick, best
        first, each with retain's score (at least ``threshold``, from 0 to 1)."""
        del rerank, ignored  # retain's search ranks already; mem0 ignores unknown options
        if not isinstance(query, str) or not query.strip():
            raise InvalidValue(
                "the query must be text that is not blank",
                remedy="ask about something",
                field="query",
            )
        ids, wanted = _filters(user_id, agent_id, run_id, filters)
        count = _count(top_k, limit, 20 if filters is not None else 100, SEARCH_LIMIT_MAX)
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0 <= threshold <= 1
        ):
            raise InvalidValue(
                f"threshold {threshold!r} is not a number from 0 to 1",
                remedy="pass a threshold from 0 to 1",
                field="threshold",
            )
        if count == 0:
            return {"results": []}
        hits = self.service.search(
            query.strip(), tag=_tag(ids), limit=SEARCH_LIMIT_MAX, **self.tier.searched
        ).hits
        results = []
        for hit in hits:
            kept = self._kept(hit.memory)
            if kept is None or (threshold is not None and hit.score < threshold):
                continue
            item = _item(hit.memory, kept, score=hit.score)
            if _passes(item, ids, wanted):
                results.append(item)
                if len(results) == count:
                    break
        return {"results": results}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory ``memory_id`` names, or None."""
        found = self._find(memory_id)
        return None if found is None else _item(found[0], found[1], score=None)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        **ignored: Any,
    ) -> dict[str, Any]:
        """The memories the ids and filters pick, newest first."""
        del ignored
        ids, wanted = _filters(user_id, agent_id, run_id, filters)
        count = _count(top_k, limit, 20 if filters is not None else 100)
        results: list[dict[str, Any]] = []
        for memory, kept in self._listed(_tag(ids)):
            if len(results) >= count:
                break
            item = _item(memory, kept)
            if _passes(item, ids, wanted):
                results.append(item)
        return {"results": results}

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        data: str | None = None,
    ) -> dict[str, Any]:
        """Change a memory's text, or add to its metadata (keys given replace theirs)."""
        text = text if text is not None else data
        if text is None and metadata is None:
            raise InvalidValue(
                "At least one of text or metadata must be provided.",
                remedy="pass the new text, or metadata to add",
                field="text",
            )
        memory, kept = self._found(memory_id)
        changed = dict(kept)
        if metadata is not None:
            changed["metadata"] = {**(kept.get("metadata") or {}), **_caller_metadata(metadata)}
        body = memory.body if text is None else text
        self.service.write_many([self._request(memory_id, body, changed)], notes=False)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str, *, erase: bool = False) -> dict[str, Any]:
        """Remove a memory. Its history keeps its texts, as mem0's does; with ``erase``
        it is forgotten instead: its text is erased from the memory and the history
        alike, and the store keeps the erasure's certificate."""
        memory, _ = self._found(memory_id)
        self._remove(memory, erase)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        *,
        erase: bool = False,
    ) -> dict[str, Any]:
        """Remove (or, with ``erase``, forget) every memory of the ids given."""
        ids = formats.mem0_ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
        if not ids:
            raise InvalidValue(
                "At least one filter is required to delete all memories.",
                remedy="pass user_id, agent_id or run_id",
                field="user_id",
            )
        doomed = [m for m, kept in self._listed(_tag(ids)) if _passes(_item(m, kept), ids, {})]
        if erase:  # a hold refuses the erasure before any memory is erased
            for memory in doomed:
                state = self.service.held(memory.id)
                if state.hold is not None:
                    raise HoldActive(
                        f"memory {memory.name!r} is under a legal hold, so none of the "
                        f"{len(doomed)} memories was erased",
                        remedy="release the hold first, or delete without erasing",
                        id=memory.id,
                        reason=state.hold.reason,
                    )
        for memory in doomed:
            self._remove(memory, erase, compact=False)
        if erase and doomed:
            self.service.compact()  # once, for them all
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """A memory's changes, oldest first, from the event log: ``ADD``, ``UPDATE``
        and ``DELETE``, each with the text before and after. An erased text is not
        there to give."""
        fields.text(memory_id, "memory_id")
        found = self._find(memory_id)
        if found is not None:
            events = list(self._log(found[0].id))
        elif self._exists(memory_id):
            return []  # another tier's memory, or one that is not a mem0 memory
        else:  # removed: found by its name in the log, as a mem0 memory of this tier
            events = [e for e in self._log() if self._was(e.payload, memory_id)]
        rows: list[dict[str, Any]] = []
        text: str | None = None
        created: str | None = None
        for event in events:
            kind = _KINDS.get(event.kind)
            if kind is None:
                continue
            after = None if kind == "DELETE" else _body(event.payload)
            when = event.tx_time.isoformat()
            created = created or when
            kept = _mem0_of(event.payload)
            rows.append(
                {
                    "id": event.event_id,
                    "memory_id": memory_id,
                    "old_memory": None if kind == "ADD" else text,
                    "new_memory": after,
                    "event": kind,
                    "created_at": created,  # the memory's, as mem0 gives it
                    "updated_at": when,
                    "is_deleted": kind == "DELETE",
                    "actor_id": kept.get("actor_id"),
                    "role": kept.get("role"),
                }
            )
            text = after
        return rows

    def reset(self) -> None:
        """Refused: a governed store is not emptied by one call."""
        raise InvalidValue(
            "retain does not empty a store in one call: its memories have history, holds "
            "and certificates",
            remedy="delete_all the memories of an id (with erase=True to forget them)",
            field="reset",
        )

    # reading and writing the tier

    def _request(
        self, name: str, text: str, kept: dict[str, Any], *, create: bool = False
    ) -> WriteRequest:
        if not isinstance(text, str) or not text.strip():
            raise InvalidValue(
                "a memory's text must be text that is not blank",
                remedy="give the text to remember",
                field="text",
            )
        return formats.mem0_request(name, text, kept, self.project, create_only=create)

    def _kept(self, memory: model.Memory) -> dict[str, Any] | None:
        """A mem0 memory's own fields: None for another tier's memory, or one that is not
        a mem0 memory (its metadata lost, as a forgotten one's is)."""
        kept = memory.metadata.get(CALLER, {}).get(KEPT)
        if memory.scope != self.tier.scope or not isinstance(kept, dict) or memory.name is None:
            return None
        return kept

    def _find(self, memory_id: str) -> tuple[model.Memory, dict[str, Any]] | None:
        if not isinstance(memory_id, str) or not fields.is_name(memory_id):
            return None
        try:
            memory = self.service.get(memory_id, project=self.tier.named).memory
        except NotFound:
            return None
        kept = self._kept(memory)
        return None if kept is None else (memory, kept)

    def _found(self, memory_id: str) -> tuple[model.Memory, dict[str, Any]]:
        found = self._find(memory_id)
        if found is None:
            raise NotFound(
                f"no memory has the id {memory_id!r}",
                remedy="pass the id add returned; get_all lists them",
                name=str(memory_id),
            )
        return found

    def _listed(self, tag: str) -> Iterator[tuple[model.Memory, dict[str, Any]]]:
        for memory in self.tier.memories(self.service, tag):
            kept = self._kept(memory)
            if kept is not None:
                yield memory, kept

    def _exists(self, name: str) -> bool:
        """Whether the session sees a memory of that name in any tier."""
        try:
            self.service.get(name)
        except NotFound:
            return False
        except RetainError:  # a name several projects hold: it is there
            return True
        return True

    def _was(self, payload: str | None, name: str) -> bool:
        """Whether an event's memory was this tier's mem0 memory of that name."""
        held = _payload(payload)
        return (
            held.get("name") == name
            and held.get("scope") == self.tier.scope
            and bool(_mem0_of(payload))
        )

    def _remove(self, memory: model.Memory, erase: bool, *, compact: bool = True) -> None:
        if erase:
            self.service.forget(memory.id, reason="mem0 delete with erasure", compact=compact)
        else:
            self.service.delete(memory.name or memory.id, project=self.tier.named)

    def _log(self, memory_id: str | None = None) -> Iterator[Event]:
        """The event log the session reads (one memory's, with ``memory_id``), oldest
        first, a page at a time."""
        after = 0
        while True:
            page = self.service.events(after=after, limit=fields.PAGE_MAX, memory_id=memory_id)
            yield from page
            if len(page) < fields.PAGE_MAX:
                return
            after = page[-1].seq


_KINDS = {
    "create": "ADD",
    "update": "UPDATE",
    "edit": "UPDATE",
    "restore": "UPDATE",
    "delete": "DELETE",
    "forget": "DELETE",
}


def _payload(payload: str | None) -> dict[str, Any]:
    try:
        loaded = json.loads(payload) if payload else {}
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _body(payload: str | None) -> str | None:
    body = _payload(payload).get("body")
    return body if isinstance(body, str) else None


def _mem0_of(payload: str | None) -> dict[str, Any]:
    kept = (_payload(payload).get("metadata") or {}).get(KEPT)
    return kept if isinstance(kept, dict) else {}


def _item(memory: model.Memory, kept: Mapping[str, Any], score: Any = _UNSET) -> dict[str, Any]:
    """A memory as mem0 gives one: ``score`` only in a search's (None in ``get``'s)."""
    item: dict[str, Any] = {
        "id": memory.name,
        "memory": memory.body,
        "hash": hashlib.md5(memory.body.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "metadata": kept.get("metadata") or None,
    }
    if score is not _UNSET:
        item["score"] = score
    item["created_at"] = memory.created_at.isoformat()
    item["updated_at"] = memory.updated_at.isoformat()
    item.update({key: kept[key] for key in PROMOTED if kept.get(key) is not None})
    return item


def _messages(messages: Any) -> Iterator[dict[str, Any]]:
    """The messages to keep: a text is the user's; a system message, one with no content
    (a tool call's) and one whose text is blank are passed over, as mem0 does; a message
    without a role, or whose content is not text, is refused (mem0 passes it over with
    a warning: here nothing is dropped unsaid)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    elif not isinstance(messages, Sequence):
        raise _not_messages("messages must be text, a message, or a list of messages")
    for at, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise _not_messages(f"message {at} is not an object with a role and content")
        role, content = message.get("role"), message.get("content")
        if isinstance(content, list):  # parts: the text ones, joined
            texts = [
                part.get("text", "")
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text"
            ]
            if not texts:
                raise _not_messages(f"message {at} has no text part (an image is not kept)")
            content = " ".join(texts)
        if content is None and isinstance(role, str):
            continue  # a tool call's message, with no text: passed over, as mem0 does
        if not isinstance(role, str) or not isinstance(content, str):
            raise _not_messages(f"message {at} lacks a role or a text content")
        if role != "system" and content.strip():
            yield {"role": role, "content": content, "name": message.get("name")}


def _not_messages(message: str) -> InvalidValue:
    return InvalidValue(
        message,
        remedy='pass "text", or messages such as [{"role": "user", "content": "text"}]',
        field="messages",
    )


def _filters(
    user_id: Any, agent_id: Any, run_id: Any, filters: Mapping[str, Any] | None
) -> tuple[dict[str, str], dict[str, Any]]:
    """The entity ids (given at the top, mem0 1.0's way, or in ``filters``, 2.0's) and
    the other filters; at least one id."""
    if filters is not None and not isinstance(filters, Mapping):
        raise InvalidValue("filters must be an object", remedy="pass a dict", field="filters")
    wanted = dict(filters or {})
    top = formats.mem0_ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id})
    inner = formats.mem0_ids(
        {k: wanted.pop(k) for k in IDS if isinstance(wanted.get(k), str | int)}
    )
    for key in top.keys() & inner.keys():
        if top[key] != inner[key]:
            raise InvalidValue(
                f"{key} is {top[key]!r} but the filters say {inner[key]!r}",
                remedy=f"give {key} once",
                field=key,
            )
    ids = {**inner, **top}
    if not ids:
        remedy = "pass user_id, agent_id or run_id"
        if any(key in wanted for key in IDS):
            remedy += " as a plain value: an id takes no operator"
        raise InvalidValue(NO_IDS, remedy=remedy, field="filters")
    _check(wanted)
    return ids, wanted


def _count(top_k: Any, limit: Any, default: int, most: int | None = None) -> int:
    """How many to return: ``top_k`` (2.0), else ``limit`` (1.0), else ``default``."""
    name = "top_k" if top_k is not None else "limit"
    count = top_k if top_k is not None else limit if limit is not None else default
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidValue(
            f"{name} {count!r} is not a whole number of 0 or more",
            remedy="pass how many memories to return",
            field=name,
        )
    if most is not None and count > most:
        raise InvalidValue(
            f"{name} {count} is more than the {most} a search answers",
            remedy=f"ask for at most {most}, or list them with get_all",
            field=name,
        )
    return count


def _tag(ids: Mapping[str, str]) -> str:
    """The one tag a lookup filters on (the narrowest id); the others are checked."""
    for key in ("run_id", "user_id", "agent_id"):
        if key in ids:
            return PREFIX[key] + ids[key]
    return TAG


def _caller_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    kept = fields.caller_metadata(metadata)
    named = sorted(set(kept) & {*IDS, "actor_id", "role"})
    if named:
        raise InvalidValue(
            f"{', '.join(named)} cannot be set through metadata",
            remedy="pass user_id, agent_id or run_id as arguments",
            field="metadata",
        )
    return kept


def _passes(item: Mapping[str, Any], ids: Mapping[str, str], wanted: Mapping[str, Any]) -> bool:
    if any(item.get(key) != value for key, value in ids.items()):
        return False
    return _holds(item, wanted)


def _value(item: Mapping[str, Any], key: str) -> Any:
    """A filter key's value: a promoted field's, else the caller metadata's."""
    if key in PROMOTED:
        return item.get(key)
    return (item.get("metadata") or {}).get(key)


def _check(condition: Mapping[str, Any]) -> None:
    """Refuse an operator mem0 does not know, before anything is read."""
    for key, want in condition.items():
        if key in ("AND", "OR", "NOT"):
            if not isinstance(want, list) or (key != "AND" and not want):
                raise InvalidValue(
                    f"{key} takes a list of conditions",
                    remedy=f'write {{"{key}": [{{...}}, ...]}}',
                    field="filters",
                )
            for part in want:
                if not isinstance(part, Mapping):
                    raise InvalidValue(
                        f"a condition of {key} is not an object",
                        remedy="write each condition as an object",
                        field="filters",
                    )
                _check(part)
        elif isinstance(want, Mapping):
            for op in want:
                if op not in OPERATORS:
                    raise InvalidValue(
                        f"Unsupported metadata filter operator: {op}",
                        remedy=f"use one of {', '.join(OPERATORS)}",
                        field="filters",
                    )


def _holds(item: Mapping[str, Any], condition: Mapping[str, Any]) -> bool:
    for key, want in condition.items():
        if key == "AND":
            ok = all(_holds(item, part) for part in want)
        elif key == "OR":
            ok = any(_holds(item, part) for part in want)
        elif key == "NOT":
            ok = not any(_holds(item, part) for part in want)
        elif want == "*":
            ok = _value(item, key) is not None
        elif isinstance(want, Mapping):
            have = _value(item, key)
            ok = all(_compare(have, op, operand) for op, operand in want.items())
        else:
            ok = _compare(_value(item, key), "eq", want)
        if not ok:
            return False
    return True


def _compare(have: Any, op: str, operand: Any) -> bool:
    if op == "eq":
        return bool(have == operand)
    if op == "ne":
        return bool(have != operand)
    if op in ("in", "nin"):
        inside = isinstance(operand, list | tuple) and have in operand
        return inside if op == "in" else not inside
    if op in ("contains", "icontains"):
        if isinstance(have, str) and isinstance(operand, str):
            if op == "icontains":
                return operand.casefold() in have.casefold()
            return operand in have
        return isinstance(have, list) and operand in have
    return in_order(have, op, operand)
