"""What ``pebench list suites`` and ``pebench list experiments`` print, kept between calls.

Both listings expand every experiment of every suite, which needs the experiment scripts and with them torch
(about 2 s of the 2.6 s a listing takes on a 2-core machine, idle). Their text depends only on pebench's code,
its experiment scripts and the plugins loaded, so it is kept in a file named by the SHA-256 of those
(:func:`code_fingerprint`): the next call with the same code prints it without importing torch, and any edit,
another version or another plugin computes it afresh. The folder is ``$PEBENCH_CACHE_DIR``, else
``$XDG_CACHE_HOME/pebench``, else ``~/.cache/pebench``; where it cannot be written, every call computes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pebench

#: the environment variable naming the cache folder (tests point it at a temporary one)
CACHE_ENV = "PEBENCH_CACHE_DIR"


def cache_dir() -> Path:
    """The folder of kept listings (see the module's docstring)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pebench"


def code_files() -> list[Path]:
    """The files whose content a listing depends on: every module of the ``pebench`` package and every script
    of the ``experiments/`` folder beside it (:func:`pebench.experiment.experiments_dir`), sorted."""
    package = Path(pebench.__file__).resolve().parent
    experiments = package.parent / "experiments"
    return sorted([*package.rglob("*.py"), *(experiments.glob("*.py") if experiments.is_dir() else [])])


def code_fingerprint(plugins: Iterable[dict[str, Any]] = ()) -> str:
    """SHA-256 of pebench's version, the path and content of each of :func:`code_files` and the records of the
    ``plugins`` loaded (:func:`pebench.registry.plugin_records`: each with its file's SHA-256)."""
    digest = hashlib.sha256(pebench.__version__.encode())
    root = Path(pebench.__file__).resolve().parent.parent
    for path in code_files():
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps(list(plugins), sort_keys=True, default=str).encode())
    return digest.hexdigest()


def cached_text(what: str, plugins: Iterable[dict[str, Any]], compute: Callable[[], str]) -> str:
    """The listing ``what`` for this code and these ``plugins``: read from the cache where a call with the same
    code kept it (a plain file, never a link), else ``compute()``-d and kept (written whole, then renamed into
    place, so that a concurrent call reads a complete file or none)."""
    path = cache_dir() / f"list-{what}-{code_fingerprint(plugins)[:32]}.txt"
    try:
        if path.is_file() and not path.is_symlink():
            return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:  # a read-only home: computed on every call
        return text
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return text
