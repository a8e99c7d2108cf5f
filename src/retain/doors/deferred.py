"""Names a door imports on first use, so a command loads only what it runs.

``retain --help`` needs click alone; rich (tables, consoles) and the service (SQLite,
search) are imported the first time a command touches them. A door binds such a name
to a ``Deferred`` at run time and imports the real one for the type checker::

    if TYPE_CHECKING:
        from rich.table import Table
    else:
        Table = Deferred("rich.table", "Table")

A ``Deferred`` stands for a module's attribute (``Deferred("rich.markup", "escape")``)
or, given arguments, for what calling that attribute once returns
(``Deferred("rich.console", "Console", stderr=True)``): a call or an attribute of the
stand-in is the real object's. Importing is thread-safe (Python's import lock); the
object is made once. Special methods (``with``, ``len``, ``isinstance``) are not
forwarded: hand a library that needs the object itself ``real(stand_in)``.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

_SLOTS = ("_module", "_name", "_args", "_kwargs", "_make", "_made", "_lock")


class Deferred:
    """A stand-in for ``module.name`` (or ``module.name(*args, **kwargs)``), made on use."""

    __slots__ = _SLOTS

    def __init__(self, module: str, name: str, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_kwargs", kwargs)
        object.__setattr__(self, "_make", bool(args or kwargs))
        object.__setattr__(self, "_made", None)
        object.__setattr__(self, "_lock", threading.Lock())

    def resolve(self) -> Any:
        """The real object (imported, and made, the first time)."""
        made = self._made
        if made is None:
            with self._lock:
                made = self._made
                if made is None:
                    made = getattr(importlib.import_module(self._module), self._name)
                    if self._make:
                        made = made(*self._args, **self._kwargs)
                    object.__setattr__(self, "_made", made)
        return made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.resolve(), attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        setattr(self.resolve(), attribute, value)

    def __repr__(self) -> str:
        state = "loaded" if self._made is not None else "not loaded"
        return f"<deferred {self._module}.{self._name} ({state})>"


def real(value: Any) -> Any:
    """``value`` itself, or the object a ``Deferred`` stands for (for a library that
    needs the real one, say a console it draws on)."""
    return value.resolve() if isinstance(value, Deferred) else value
