"""What ``pebench list`` prints, kept between calls.

Computing a listing takes about 0.5 s on a 2-core machine, idle (torch is not imported: the encodings' metadata is
read from their source, :func:`pebench.encodings.declared`, and the tasks, the run specs and the store import torch
where they first use it, :mod:`pebench.lazy_torch`); ``list protocol`` imports torch and takes about 2.5 s. A
listing's text depends only on pebench's code, its experiment scripts, the plugins loaded and the terminal's width,
so it is kept in a file named by the SHA-256 of the first three
(:func:`pebench.store.verified_cache.code_fingerprint`) and the width: the next
call with the same code prints it in about 0.1 s, and any edit, another version or another plugin computes it
afresh. A call that computes one listing computes and keeps them all (:func:`cached_listing`), so that the experiment
scripts are loaded once per code, not once per listing. The folder is ``$PEBENCH_CACHE_DIR``, else
``$XDG_CACHE_HOME/pebench``, else ``~/.cache/pebench``; where it cannot be written, every call computes."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pebench.store.own_files import CACHE_ENV, cache_dir  # noqa: F401  (the cache folder: the listings keep theirs there)
from pebench.store.verified_cache import code_fingerprint


def cached_listing(what: str, plugins: Iterable[dict[str, Any]], compute_all: Callable[[], Mapping[str, str]]) -> str:
    """The listing ``what`` for this code and these ``plugins``, read from the cache where a call with the same code
    kept it (a plain file, never a link). Else ``compute_all()`` gives every listing a call can ask for, by name
    (``what`` among them): each is kept (written whole, then renamed into place, so that a concurrent call reads a
    complete file or none), so that the one import of torch a first listing costs serves every other listing too.
    """
    plugins = list(plugins)
    fingerprint = code_fingerprint(plugins)[:32]
    path = _kept_path(what, fingerprint)
    try:
        if path.is_file() and not path.is_symlink():
            return path.read_text(encoding="utf-8")
    except OSError:
        pass
    texts = compute_all()
    for name, text in texts.items():
        _keep(_kept_path(name, fingerprint), text)
    return texts[what]


def _kept_path(what: str, fingerprint: str) -> Path:
    return cache_dir() / f"list-{what}-{fingerprint}.txt"


def _keep(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole, then rename it into place; nothing where the folder cannot be written (a
    read-only home: every call computes)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
