"""The rows :func:`pebench.store.load` verified, kept between processes.

Reading and verifying a reference's run files (protocol v3's 2,040 took about 6.5 s on 2 idle cores) is most of
``pebench compare`` and of every other command that loads a folder. The rows a folder gives depend only on its run
files' names and bytes and on pebench's code (and the plugins loaded, whose tasks and encodings the checks consult),
so they are kept in the user's cache folder (:func:`pebench.store.own_files.cache_dir`) under the SHA-256 of all of
these (:func:`rows_key`): the next load of the same files by the same code reads them back in well under a second,
and a file edited, added, removed or renamed, or any change to the code, reads and verifies the folder afresh. Only
rows that verified are kept, never an error. A kept file is read only when it is a regular file of this user that
no one else may write (pickle runs what it reads); where the folder cannot be written, every load verifies.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pebench
from pebench.store.own_files import cache_dir

if TYPE_CHECKING:
    import pandas as pd

#: how many folders' rows are kept; the oldest kept file is removed beyond that
KEPT_FOLDERS = 8

#: the prefix and suffix of a kept file's name (between them, its key)
PREFIX, SUFFIX = "rows-", ".pickle"


def code_files() -> list[Path]:
    """The files whose content pebench's computed outputs depend on: every module of the ``pebench`` package and
    every script of the ``experiments/`` folder beside it (:func:`pebench.plan.experiment.experiments_dir`),
    sorted."""
    package = Path(pebench.__file__).resolve().parent
    experiments = package.parent / "experiments"
    return sorted([*package.rglob("*.py"), *(experiments.glob("*.py") if experiments.is_dir() else [])])


def code_fingerprint(plugins: Iterable[dict[str, Any]] = ()) -> str:
    """SHA-256 of pebench's version, the path and content of each of :func:`code_files` and the records of the
    ``plugins`` loaded (:func:`pebench.registry.plugin_records`: each with its file's SHA-256). The files are read
    again only when one of them was written since (their sizes and times, :func:`_code_digest`)."""
    files = code_files()
    stats = tuple((str(path), status.st_size, status.st_mtime_ns, status.st_ctime_ns)
                  for path, status in ((path, path.stat()) for path in files))
    digest = hashlib.sha256(_code_digest(stats).encode())
    digest.update(json.dumps(list(plugins), sort_keys=True, default=str).encode())
    return digest.hexdigest()


@functools.lru_cache(maxsize=4)
def _code_digest(stats: tuple[tuple[str, int, int, int], ...]) -> str:
    """SHA-256 of pebench's version and of the path (relative to the repository) and content of each file of
    ``stats`` (path, size and times: the key that reads the files again once one is written)."""
    digest = hashlib.sha256(pebench.__version__.encode())
    root = Path(pebench.__file__).resolve().parent.parent
    for name, *_ in stats:
        path = Path(name)
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def rows_key(files: Iterable[tuple[str, bytes]], plugins: Iterable[dict[str, Any]]) -> str:
    """The key of a folder's rows: SHA-256 of the code (:func:`code_fingerprint` with the ``plugins`` loaded), of
    pandas' and numpy's versions (what reads a kept file back), and of each run file's name and bytes (``files``,
    in order)."""
    import numpy as np
    import pandas as pd

    digest = hashlib.sha256(f"{code_fingerprint(plugins)}\0{pd.__version__}\0{np.__version__}\0".encode())
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def kept_rows(key: str) -> pd.DataFrame | None:
    """The rows kept under ``key``; ``None`` where there are none, or the file is not a regular file of this user
    that only this user may write (it is then left alone), or it does not read back as rows."""
    import pandas as pd

    path = cache_dir() / f"{PREFIX}{key}{SUFFIX}"
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        status = os.fstat(stream.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o022:
            return None
        try:
            rows = pickle.load(stream)
        except Exception:  # noqa: BLE001  (a damaged kept file only costs a fresh load)
            return None
    return rows if isinstance(rows, pd.DataFrame) else None


def keep_rows(key: str, rows: pd.DataFrame) -> None:
    """Keep ``rows`` under ``key``: written whole to a file of this user's only, then renamed into place (a
    concurrent load reads a complete file or none); then the oldest kept files beyond :data:`KEPT_FOLDERS` are
    removed. Nothing where the cache folder cannot be written."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{PREFIX}")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            pickle.dump(rows, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, folder / f"{PREFIX}{key}{SUFFIX}")
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return
    _prune(folder)


def _prune(folder: Path) -> None:
    """Remove the kept files of :func:`keep_rows` beyond the newest :data:`KEPT_FOLDERS` (by modification time)."""
    kept: Sequence[tuple[float, Path]] = []
    with contextlib.suppress(OSError):
        kept = sorted(((path.lstat().st_mtime, path) for path in folder.glob(f"{PREFIX}*{SUFFIX}")
                       if path.is_file() and not path.is_symlink()), reverse=True)
    for _, path in kept[KEPT_FOLDERS:]:
        with contextlib.suppress(OSError):
            path.unlink()
