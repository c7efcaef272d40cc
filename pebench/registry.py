"""A small generic name -> object registry with per-entry metadata.

Encodings, tasks, metrics and suites are all registered by name so that adding
one never edits the model, the runner or the docs by hand::

    ENCODINGS = Registry("encoding")

    @ENCODINGS.register("alibi", kind="bias", paper="press2022alibi")
    class ALiBi(PositionalEncoding): ...
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists close matches."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to objects (classes or functions) and their metadata.

    Args:
        kind: what the entries are ("encoding", "task", ...), used in error messages.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._meta: dict[str, dict[str, Any]] = {}

    def register(self, name: str, **meta: Any) -> Callable[[T], T]:
        """Decorator registering ``obj`` under ``name`` with metadata ``meta``."""

        def decorator(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            self._meta[name] = dict(meta)
            return obj

        return decorator

    def get(self, name: str) -> T:
        """Return the entry registered as ``name``.

        Raises:
            UnknownNameError: ``name`` is not registered; the message names the
                closest valid names and lists all of them.
        """
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        """One-line message for an unknown ``name``, suggesting close matches."""
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return f"unknown {self.kind} {name!r}.{hint} Valid: {', '.join(self.names())}."

    def meta(self, name: str) -> dict[str, Any]:
        """Metadata registered with ``name`` (a copy)."""
        self.get(name)
        return dict(self._meta[name])

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)
