"""Tasks, one family per file, registered by name.

>>> from pebench import tasks
>>> task = tasks.get("copy")
>>> batch = task.sample(4, 8, torch.Generator().manual_seed(0))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from pebench.registry import Registry
from pebench.tasks.base import (
    ARCHS,
    IGNORE,
    Batch,
    Task,
    model_vocab_size,
    render,
    shuffle_inputs,
)

TASKS: Registry[type[Task]] = Registry("task", base=Task)


def register(name: str, *, paper: str = "", **meta: Any):
    """Class decorator registering a :class:`Task` subclass under ``name``.

    ``order_dependent`` and ``version`` are read from the class and stored as
    metadata too, so listings do not need to instantiate tasks.
    """

    def decorator(cls: type[Task]) -> type[Task]:
        TASKS.register(
            name, order_dependent=getattr(cls, "order_dependent", None), version=getattr(cls, "version", None),
            paper=paper, **meta
        )(cls)
        cls.name = name
        return cls

    return decorator


def _import_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


def names() -> list[str]:
    """Registered task names."""
    return TASKS.names()


def get(name: str) -> Task:
    """An instance of the task registered as ``name`` (raises with close names if unknown)."""
    return TASKS.get(name)()


_import_all()
from pebench.tasks.floors import Floor, position_free_floor  # noqa: E402  (imports the registry)

__all__ = [
    "ARCHS", "IGNORE", "TASKS", "Batch", "Floor", "Task", "get", "position_free_floor", "model_vocab_size", "names",
    "register", "render", "shuffle_inputs",
]
