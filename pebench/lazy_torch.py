"""torch, imported where it is first used.

``from pebench.lazy_torch import torch`` gives a stand-in for the torch module: its first attribute read imports
torch, and every read returns torch's attribute. The tasks and the run specs use torch only to generate data, so
that listing them (``pebench list``) does without the 1.3 s that importing torch takes on a 2-core machine. (The
standard library's :class:`importlib.util.LazyLoader` does not do here: on Python 3.11 every later
``import torch`` statement reads ``torch.__spec__``, and that reading imports it.)
"""

from __future__ import annotations

import importlib
from typing import Any


class _Torch:
    """The stand-in: reads every attribute from the torch module, imported on the first read."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("torch"), name)

    def __repr__(self) -> str:
        return "<the torch module, imported on first use>"


torch: Any = _Torch()
