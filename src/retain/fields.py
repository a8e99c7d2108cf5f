"""The shape every stored field must have, checked before a store is touched.

Each function takes what a caller passed and returns the stored form, or
raises an ``InvalidInput`` naming the field and what to write instead.

It is one piece past the usual size on purpose: every field's shape is here, beside
the patterns the doors' schemas publish (``*_PATTERN``), which tests/test_fields.py
holds to these checks.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import inspect
import json
import re
import types
import typing
from collections import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeGuard, TypeVar

from retain.chrono import parse_stamp, stamp
from retain.errors import InvalidName, InvalidValue, TooManyReferences
from retain.model import ListPosition, Load

NAME_MAX = 128
DESCRIPTION_NOTE_AT = 200
MAX_REFERENCES = 20
REFERENCE_MAX = 1000
TAG_MAX = 64
MIN_PRIORITY = 0
MAX_PRIORITY = 9

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SPACE = re.compile(r"\s+")


def name(value: str, *, what: str = "memory") -> str:
    """A memory or project name: letters, digits, ``.``, ``_``, ``-``; it is also a file name."""
    if not isinstance(value, str) or not value:
        raise InvalidName(f"a {what} needs a name", remedy="give a name like deploy-host")
    if len(value) > NAME_MAX or not _NAME.fullmatch(value):
        raise InvalidName(
            f"{value!r} is not a valid {what} name",
            remedy=(
                f"use at most {NAME_MAX} letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            ),
            name=value,
        )
    return value


def is_name(value: str) -> bool:
    """Whether ``value`` could be a memory's name (and so may refer to one)."""
    return isinstance(value, str) and len(value) <= NAME_MAX and bool(_NAME.fullmatch(value))


def text(value: str, field: str) -> str:
    """Any stored text: it must be Unicode that UTF-8 can encode (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidValue(
            f"the {field} must be text, not {type(value).__name__}",
            remedy=f"pass the {field} as a string",
            field=field,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidValue(
            f"the {field} holds characters that are not valid Unicode text",
            remedy=f"pass the {field} as UTF-8 text",
            field=field,
        ) from exc
    if "\x00" in value:  # PostgreSQL cannot store it, and no text needs it
        raise InvalidValue(
            f"the {field} holds a NUL character (U+0000)",
            remedy=f"remove the NUL characters from the {field}",
            field=field,
        )
    return value


CALLER_METADATA_MAX_CHARS = 65_536  # the most a memory's caller metadata takes, as JSON


def metadata(value: object, what: str, limit: int) -> dict[str, Any]:
    """A caller's metadata as it is kept: a JSON object (text keys; text, numbers,
    booleans, null, lists and objects) of at most ``limit`` characters as JSON, read back
    from that JSON so that nothing of the caller's objects is kept; else
    ``invalid_value``."""
    if not isinstance(value, abc.Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidValue(
            f"{what} must be an object with text keys",
            remedy='pass a JSON object, e.g. {"source": "runbook"}',
            field="metadata",
        )
    try:
        written = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidValue(
            f"{what} must be JSON: {exc}",
            remedy="pass text, numbers, booleans, lists and objects only",
            field="metadata",
        ) from exc
    _texts_of(dict(value))
    if len(written) > limit:
        raise InvalidValue(
            f"the metadata takes {len(written)} characters as JSON; at most {limit} are kept",
            remedy="keep a reference to the larger record instead",
            field="metadata",
        )
    loaded: dict[str, Any] = json.loads(written)
    return loaded


def _texts_of(value: object) -> None:
    """Every key and text of a JSON value checked as stored text (no NUL, no lone
    surrogate): JSON writes them as escapes, so its text alone would pass."""
    if isinstance(value, str):
        text(value, "metadata")
    elif isinstance(value, abc.Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidValue(
                    f"a metadata key must be text, not {type(key).__name__} ({key!r})",
                    remedy="name every key of the object with text",
                    field="metadata",
                )
            text(key, "metadata")
            _texts_of(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _texts_of(item)


def caller_metadata(value: object) -> dict[str, Any]:
    """A memory's caller metadata (``metadata``), as it is kept."""
    return metadata(value, "a memory's metadata", CALLER_METADATA_MAX_CHARS)


def description(value: str) -> str:
    """The description collapsed to one line."""
    return _SPACE.sub(" ", text(value, "description")).strip()


def priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(
            f"priority {value!r} is not a whole number",
            remedy=f"give a priority from {MIN_PRIORITY} (most important) to {MAX_PRIORITY}",
            field="priority",
        )
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise InvalidValue(
            f"priority {value} is outside {MIN_PRIORITY}–{MAX_PRIORITY}",
            remedy=f"give a priority from {MIN_PRIORITY} (most important) to {MAX_PRIORITY}",
            field="priority",
            value=value,
        )
    return value


def load(value: str | Load) -> Load:
    try:
        return Load(value)
    except ValueError as exc:
        raise InvalidValue(
            f"load {value!r} is not one of inline, index, search",
            remedy="use inline (body always in context), index (listed) or search (found)",
            field="load",
            value=value,
        ) from exc


def _strings(values: Iterable[object], field: str) -> list[str]:
    """A list field as given, refused when it is a bare string or holds non-strings."""
    items = [] if isinstance(values, str | bytes) else list(values)
    if isinstance(values, str | bytes) or not all(isinstance(v, str) for v in items):
        raise InvalidValue(
            f"{field} must be a list of strings",
            remedy=f'pass {field} as a list, such as ["infra"]; [] clears it',
            field=field,
        )
    return [str(v) for v in items]


def tags(values: Iterable[str]) -> tuple[str, ...]:
    """Tags: single tokens, no whitespace or commas, duplicates dropped in order."""
    cleaned: list[str] = []
    for tag in _strings(values, "tags"):
        tag = text(tag, "tags").strip()
        if not tag or len(tag) > TAG_MAX or _SPACE.search(tag) or "," in tag:
            raise InvalidValue(
                f"tag {tag!r} is not a single word of at most {TAG_MAX} characters",
                remedy="use short tags without spaces or commas, like infra or people",
                field="tags",
                value=tag,
            )
        if tag not in cleaned:
            cleaned.append(tag)
    return tuple(cleaned)


def references(values: Iterable[str]) -> tuple[str, ...]:
    """References: one line each, at most twenty given, duplicates dropped in order."""
    given = _strings(values, "references")
    if len(given) > MAX_REFERENCES:  # counted as given, so a schema's maxItems says it
        raise TooManyReferences(
            f"{len(given)} references given; a memory holds at most {MAX_REFERENCES}",
            remedy="keep the references this memory truly depends on",
            count=len(given),
            limit=MAX_REFERENCES,
        )
    cleaned: list[str] = []
    for reference in given:
        reference = text(reference, "references").strip()
        if not reference or "\n" in reference or "\r" in reference:
            raise InvalidValue(
                f"reference {reference!r} is not one non-empty line",
                remedy="give each reference as one line: a memory name, path, URL or id",
                field="references",
                value=reference,
            )
        if len(reference) > REFERENCE_MAX:
            raise InvalidValue(
                f"a reference is {len(reference)} characters long",
                remedy=f"keep references under {REFERENCE_MAX} characters",
                field="references",
            )
        if reference not in cleaned:
            cleaned.append(reference)
    return tuple(cleaned)


def source(value: str) -> str:
    text(value, "source")
    if "\n" in value.strip() or "\r" in value.strip():
        raise InvalidValue(
            "source must be one line",
            remedy="say in one line where the fact came from",
            field="source",
        )
    return value.strip()


SUBJECT_MAX_CHARS = 200
THREAD_MAX_CHARS = 200
SESSION_MAX_CHARS = 200
RECALL_TIMEOUT_MAX_MS = 86_400_000  # a day: past it a wait is no bound (and overflows)


def one_line(value: str, field: str, limit: int, remedy: str) -> str:
    """``value`` stripped, refused unless it is one line of at most ``limit`` characters."""
    text(value, field)
    value = value.strip()
    if "\n" in value or "\r" in value:
        raise InvalidValue(f"{field} must be one line", remedy=remedy, field=field)
    if len(value) > limit:
        raise InvalidValue(
            f"{field} is {len(value)} characters long; at most {limit} are allowed",
            remedy=remedy,
            field=field,
        )
    return value


def session(value: str) -> str:
    """A session key, as the host gives it: 1 to 200 characters, not all whitespace."""
    text(value, "session")
    if not value.strip() or len(value) > SESSION_MAX_CHARS:
        raise InvalidValue(
            f"a session key is 1 to {SESSION_MAX_CHARS} characters",
            remedy="pass the key your agent runtime gives the session",
            field="session",
        )
    return value


TOOL_MAX_CHARS = 200


def tool_name(value: str, field: str = "tool") -> str:
    """A tool's, a server's or a provenance's name as a host reports it: one line of 1
    to 200 characters, whitespace around it stripped."""
    remedy = f"give the {field}'s name as the host reports it"
    name = one_line(value, field, TOOL_MAX_CHARS, remedy)
    if not name:
        raise InvalidValue(f"the {field} needs a name", remedy=remedy, field=field)
    return name


def subject(value: str) -> str:
    """Who or what a memory is about (a fact's subject; a speaker's name)."""
    return one_line(value, "subject", SUBJECT_MAX_CHARS, "name who or what it is about in one line")


PREDICATE_MAX_CHARS = 100


def predicate(value: str) -> str:
    """What a fact says of its subject (``employer``, ``lives in``): one line, kept
    case-folded with its spaces collapsed, so ``Lives  In`` and ``lives in`` are one."""
    line = one_line(value, "predicate", PREDICATE_MAX_CHARS, "name the property in a few words")
    folded = _SPACE.sub(" ", line).casefold()
    if not folded:
        raise InvalidValue(
            "a fact needs a predicate", remedy="name the property it gives", field="predicate"
        )
    return folded


def thread(value: str) -> str:
    """The conversation or document a memory belongs to, in order of writing."""
    return one_line(value, "thread", THREAD_MAX_CHARS, "give the conversation's id in one line")


def cursor_of(position: ListPosition) -> str:
    """An opaque cursor for a listing to continue after ``position``."""
    raw = json.dumps([position.priority, stamp(position.created_at), position.id])
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def cursor(value: str) -> ListPosition:
    """The position a cursor of ``cursor_of`` names."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        priority, created_at, memory_id = json.loads(raw)
        if not isinstance(priority, int) or not isinstance(memory_id, str):
            raise ValueError(value)
        return ListPosition(priority, parse_stamp(created_at), memory_id)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidValue(
            f"cursor {value!r} is not one a listing gave",
            remedy="pass the next_cursor of the previous page, or none for the first page",
            field="cursor",
        ) from exc


WHOLE_MAX = 2**63 - 1  # what a store's BIGINT holds (and SQLite's INTEGER)
PAGE_MAX = 1000  # the most memories or events one page of a listing holds


def whole(value: int, field: str, least: int) -> int:
    """A count or position: a whole number from ``least`` to ``WHOLE_MAX`` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= WHOLE_MAX:
        raise InvalidValue(
            f"{field} {value!r} is not a whole number from {least} to {WHOLE_MAX}",
            remedy=f"pass a {field} of {least} or more",
            field=field,
        )
    return value


def page(limit: int) -> int:
    """The size of one page of a listing (memories, events): 1 to ``PAGE_MAX``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidValue(
            f"limit {limit!r} is not a whole number from 1 to {PAGE_MAX}",
            remedy=f"pass a limit from 1 to {PAGE_MAX}",
            field="limit",
        )
    if limit > PAGE_MAX:
        raise InvalidValue(
            f"limit {limit} is more than one page holds (at most {PAGE_MAX})",
            remedy=f"ask for at most {PAGE_MAX} and continue from the page's last item",
            field="limit",
        )
    return limit


# -- the type of every argument ---------------------------------------------------------

_KINDS: dict[object, str] = {
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
    type(None): "none",
}
_LISTS = (list, tuple, abc.Sequence, abc.Iterable)
Fits = Callable[[object], bool]


def _anything(value: object) -> bool:
    return True


def fits(hint: object) -> Fits:
    """A test of whether a value has the type ``hint`` (an annotation) names; a hint it
    cannot check (a Protocol, a type variable) passes everything. A ``bool`` is not a
    whole number, a string is not a list, and a list's items are tested too."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return _anything
    if hint is None or hint is type(None):
        return lambda value: value is None
    if origin in (types.UnionType, typing.Union):
        tests = [fits(a) for a in arguments if a is not type(None)]
        if len(tests) == len(arguments):
            return lambda value: any(test(value) for test in tests)
        if len(tests) == 1:  # "X | None", most fields: the test of X, and none passes
            (test,) = tests
            return lambda value: value is None or test(value)
        return lambda value: value is None or any(test(value) for test in tests)
    if origin is typing.Literal:
        return lambda value: value in arguments
    if hint is bool:
        return lambda value: isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool)
    if origin in _LISTS:
        item = fits(arguments[0]) if arguments else _anything
        return lambda value: isinstance(value, list | tuple) and all(item(v) for v in value)
    if origin is abc.Callable or hint is abc.Callable:
        return callable
    if isinstance(hint, type) and not getattr(hint, "_is_protocol", False):
        return lambda value: isinstance(value, hint)
    return _anything


def kind(hint: object) -> str:
    """How a message names a type: "text", "a list of text", "text or none"."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(kind(a) for a in arguments)
    if origin in _LISTS:
        return f"a list of {kind(arguments[0])}" if arguments else "a list"
    if origin is abc.Callable:
        return "a function"
    if hint in _KINDS:
        return _KINDS[hint]
    return getattr(hint, "__name__", str(hint))


def wrong_type(value: object, hint: object, field: str) -> InvalidValue:
    """The refusal of ``value`` given for ``field``, which takes ``hint``."""
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return InvalidValue(
        f"{field} must be {kind(hint)}, not {type(value).__name__} {shown}",
        remedy=f"pass {field} as {kind(hint)}",
        field=field,
    )


P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


class Verb:
    """A method of a class that is a function of another module, imported the first time
    the method is looked up (on the class or an instance), not with the class: a
    command loads only the modules of the verbs it runs. The class decorators that wrap
    its methods (``typed``, ``policy.gated``) give a ``Verb`` their wrappers instead
    (``wrap``), applied in the same order to the function once imported; the class's
    attribute is then that wrapped function, as if it had been there from the start."""

    __slots__ = ("function", "module", "name", "wrappers")

    def __init__(self, module: str, function: str | None = None) -> None:
        self.module = module  # dotted, as importlib takes it
        self.function = function  # None: the name the class binds it to
        self.name = ""
        self.wrappers: list[Wrapper] = []

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.function = self.function or name

    def wrap(self, wrapper: Wrapper) -> None:
        self.wrappers.append(wrapper)

    def __get__(self, instance: object, owner: type) -> Any:
        assert self.function is not None, "bound by __set_name__"
        function = getattr(importlib.import_module(self.module), self.function)
        for wrapper in self.wrappers:
            function = wrapper(function)
        setattr(owner, self.name, function)  # two threads at once set the same function
        return function if instance is None else function.__get__(instance, owner)


def is_method(member: object) -> TypeGuard[Callable[..., Any] | Verb]:
    """Whether a class's attribute is a function of it: defined there, or a ``Verb``."""
    return inspect.isfunction(member) or isinstance(member, Verb)


def wrap_method(cls: type, name: str, member: Callable[..., Any] | Verb, wrapper: Wrapper) -> None:
    """Put ``cls``'s method ``name`` behind ``wrapper``: now, or, for a ``Verb``, when its
    function is imported."""
    if isinstance(member, Verb):
        member.wrap(wrapper)
    else:
        setattr(cls, name, wrapper(member))


def typed(cls: C) -> C:
    """Check the type of every argument of ``cls``'s public methods against their
    annotations before the method runs: the one place a verb refuses a wrong type. A
    method may be a function of another module whose first parameter is annotated with
    ``cls`` itself (a capability module's verb over the session): the hints resolve
    ``cls``'s name to it."""
    checking = functools.partial(_checking, names={cls.__name__: cls})
    for attribute, member in list(vars(cls).items()):
        if not attribute.startswith("_") and is_method(member):
            wrap_method(cls, attribute, member, checking)
    return cls


def argument_hints(method: Callable[..., Any], names: dict[str, Any]) -> dict[str, Any]:
    """The types of ``method``'s arguments, its annotations resolved in its module (and
    ``names``); not its result's, whose type need not be importable when it is called (a
    verb's result module is imported as it runs)."""
    inner = inspect.unwrap(method)  # the module its names are resolved in
    stand_in = types.FunctionType(
        inner.__code__, inner.__globals__, inner.__name__, None, inner.__closure__
    )
    stand_in.__annotations__ = {k: v for k, v in method.__annotations__.items() if k != "return"}
    return typing.get_type_hints(stand_in, localns=names)


@dataclass(frozen=True, slots=True)
class _Parameters:
    """A method's parameters as a call is checked against them."""

    order: tuple[str, ...]  # the positional ones, ``self`` first
    tests: dict[str, tuple[Fits, object]]  # every name: (its test, its annotation)
    required: frozenset[str]
    open_keywords: bool  # it takes ``**options``

    @classmethod
    def of(cls, method: Callable[..., Any], names: dict[str, Any]) -> _Parameters:
        signature = inspect.signature(method)
        hints = argument_hints(method, names)
        order, tests, required, open_keywords = [], {}, set(), False
        for p in signature.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                open_keywords = True
                continue
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                order.append(p.name)
            hint = hints.get(p.name, Any)
            tests[p.name] = (fits(hint), hint)
            if p.default is p.empty:
                required.add(p.name)
        return cls(tuple(order), tests, frozenset(required), open_keywords)

    def check(self, verb: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(args) > len(self.order):
            raise InvalidValue(
                f"{verb} takes {len(self.order) - 1} arguments by position, not {len(args) - 1}",
                remedy="pass the others by name",
            )
        given = dict(zip(self.order, args, strict=False))
        for name, value in kwargs.items():
            if name in given or (name not in self.tests and not self.open_keywords):
                raise InvalidValue(
                    f"{verb} takes no argument {name!r}"
                    if name not in given
                    else f"{verb} was given {name} twice",
                    remedy=f"pass {verb}'s arguments once each: "
                    + ", ".join(n for n in self.tests if n != self.order[0]),
                    field=name,
                )
            given[name] = value
        missing = sorted(self.required - given.keys())
        if missing:
            raise InvalidValue(
                f"{verb} needs {missing[0]}",
                remedy=f"pass {', '.join(missing)}",
                field=missing[0],
            )
        for name, value in given.items():
            test, hint = self.tests.get(name, (_anything, Any))
            if not test(value):
                raise wrong_type(value, hint, name)


def _checking(method: Callable[P, R], names: dict[str, Any]) -> Callable[P, R]:
    parameters: list[_Parameters] = []

    @functools.wraps(method)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if not parameters:  # read at the first call: every name the hints use exists then
            parameters.append(_Parameters.of(method, names))
        parameters[0].check(method.__name__, args, kwargs)
        return method(*args, **kwargs)

    return checked


D = TypeVar("D")


def made(owner: Callable[..., D], values: dict[str, Any]) -> D:
    """A dataclass value (a ``WriteRequest``) of ``values``; a name the class has no
    field for is refused. The values are not checked here: the verb that takes the
    value checks each field once (``dataclass_fields``)."""
    tests = _dataclass_tests(owner)
    for name in values:
        if name not in tests:
            raise InvalidValue(
                f"there is no option {name!r}",
                remedy="pass only these options: " + ", ".join(tests),
                field=name,
            )
    return owner(**values)


def dataclass_fields(value: object) -> None:
    """Check every field of a dataclass value against its annotation."""
    for name, (test, hint) in _dataclass_tests(type(value)).items():
        field = getattr(value, name)
        if not test(field):
            raise wrong_type(field, hint, name)


_TESTS: dict[object, dict[str, tuple[Fits, object]]] = {}


def _dataclass_tests(owner: object) -> dict[str, tuple[Fits, object]]:
    if owner not in _TESTS:
        hints = typing.get_type_hints(owner)
        _TESTS[owner] = {name: (fits(hint), hint) for name, hint in hints.items()}
    return _TESTS[owner]


# -- the same rules as patterns, for the schemas the doors publish ----------------------
#
# Each pattern matches exactly the strings its check above accepts (tests/test_fields.py
# holds them to it), so a schema that carries it neither refuses what the service takes
# nor takes what it refuses. Whitespace is what ``str.strip`` strips, spelled out: a
# schema's ``\s`` is not Python's.

_WS = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_BLANK = f"[{_WS}]"
BLANK = _BLANK  # one character ``str.strip`` strips, for patterns built elsewhere
_SOLID = f"[^{_WS}\\x00]"  # neither whitespace nor NUL

TEXT_PATTERN = r"^[^\x00]*$"
"""Any text: everything but NUL."""
FILLED_PATTERN = rf"^[^\x00]*{_SOLID}[^\x00]*$"
"""Text with something besides whitespace (a text to remember, a summary, a fact's value)."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""A memory, project, agent or team name (at most ``NAME_MAX`` characters)."""
PROJECT_PATTERN = r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*)?$"
"""A project argument: a name, or "" for the global tier."""
TAG_PATTERN = rf"^{_BLANK}*[^{_WS},\x00]{{1,{TAG_MAX}}}{_BLANK}*$"
"""One tag: a word of at most ``TAG_MAX`` characters, whitespace around it stripped."""


def _line_pattern(limit: int | None, *, filled: bool) -> str:
    middle = "*" if limit is None else f"{{0,{limit - 2}}}"
    line = f"{_SOLID}(?:[^\\r\\n\\x00]{middle}{_SOLID})?"
    return f"^{_BLANK}*{line if filled else f'(?:{line})?'}{_BLANK}*$"


REFERENCE_PATTERN = _line_pattern(REFERENCE_MAX, filled=True)
SOURCE_PATTERN = _line_pattern(None, filled=False)
SUBJECT_PATTERN = _line_pattern(SUBJECT_MAX_CHARS, filled=False)
FACT_SUBJECT_PATTERN = _line_pattern(SUBJECT_MAX_CHARS, filled=True)
THREAD_PATTERN = _line_pattern(THREAD_MAX_CHARS, filled=False)
NAMED_THREAD_PATTERN = _line_pattern(THREAD_MAX_CHARS, filled=True)  # a conversation's
PREDICATE_PATTERN = _line_pattern(PREDICATE_MAX_CHARS, filled=True)
TOOL_PATTERN = _line_pattern(TOOL_MAX_CHARS, filled=True)
DURATION_PATTERN = rf"^(?:{_BLANK}*[0-9]{{1,5}}{_BLANK}*[smhdw]{_BLANK}*)?$"
"""A period such as ``90d``, or "" (none); up to five digits, so that every such period
counts back from now to a day after year 1."""
_YEAR = "(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_DAY = f"{_YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_CLOCK = (
    "[Tt ](?:[01][0-9]|2[0-3])(?::[0-5][0-9](?::[0-5][0-9](?:[.,][0-9]{1,9})?)?)?"
    "(?:[Zz]|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)"
)
TIME_PATTERN = f"^(?:{_DAY}(?:{_CLOCK})?)?$"
"""A time argument: "" (none), a ``YYYY-MM-DD`` date, or a timestamp with an offset in
ISO 8601's extended form (RFC 3339's ``2026-10-25T18:00:00Z``; minutes, seconds and
their fraction may be left out). The calendar itself (no 30 February) and the edges of
years 1 and 9999 are checked by the parser, not the pattern; the parser also reads
ISO 8601's basic form (``20261025T180000Z``), which the pattern does not state."""
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
"""The form of a listing's cursor (whether it is one a listing gave, the parser says)."""
