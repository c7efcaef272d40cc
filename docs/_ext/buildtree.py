"""The plumbing of the site's generated tree ``docs/_generated``: one build of a source tree at a time, and pages
written again only where they change.

Sphinx reads again every page whose file (or a file it depends on, such as a figure) is newer than its last
reading. :func:`regenerated` lets the generator start from empty folders, so that a page or artifact that is gone
disappears, and gives every file that comes out byte for byte as before its previous modification time, so that a
second build reads only the pages whose sources changed (about 25 s instead of two minutes when nothing did).

One difference remains, Sphinx's own: a page that is not read again contributes no *index entries* to the search
index of that build (``IndexBuilder.load`` does not restore them, Sphinx 9.0). On this site they are autodoc's
entries of API objects, which the search index lists as objects too, so searching finds the same; ``sphinx-build -E``
builds afresh.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

#: the folder of ``out`` that holds the previous build's files while the generator writes (removed after)
PREVIOUS = ".previous"


#: the lock a build of a source tree holds from writing ``_generated/`` until it has finished reading it
BUILD_LOCK = ".pebench-build.lock"


def hold_build_lock(srcdir: Path, timeout: float = 1800.0, poll: float = 2.0):
    """Take the exclusive lock of ``srcdir``'s generated sources and return its open file (closing it releases the
    lock), so that two builds of one tree never rewrite ``_generated/`` under each other's reader: the second waits,
    and stops with one line saying who holds it after ``timeout`` seconds."""
    import fcntl
    import time

    handle = open(srcdir / BUILD_LOCK, "a+")  # noqa: SIM115 (held until the build finishes)
    deadline, told = time.monotonic() + timeout, False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.seek(0)
                holder = handle.read().strip() or "another build"
                handle.close()
                raise RuntimeError(f"another build of {srcdir} holds {BUILD_LOCK} ({holder}); "
                                   f"waited {timeout:.0f} s") from None
            if not told:
                print(f"pebench_docs: another build of {srcdir} is running; waiting for it to finish", flush=True)
                told = True
            time.sleep(poll)
    handle.truncate(0)
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    return handle


@contextlib.contextmanager
def regenerated(out: Path, subfolders: Iterable[str]) -> Iterator[None]:
    """Within the block, each of ``subfolders`` of ``out`` starts empty (its files moved aside to
    ``out/.previous``); on leaving it, each file written again with the same bytes gets its previous modification
    time back, and the previous files are removed. Files outside ``subfolders`` are the generator's to keep (it
    writes them only where they differ). A ``.previous`` left by a build that stopped is removed first."""
    previous = out / PREVIOUS
    shutil.rmtree(previous, ignore_errors=True)
    previous.mkdir(parents=True)
    subfolders = list(subfolders)
    try:
        for sub in subfolders:
            if (out / sub).is_dir() and not (out / sub).is_symlink():
                (out / sub).rename(previous / sub)
        yield
        for sub in subfolders:
            for path in (out / sub).rglob("*") if (out / sub).is_dir() else ():
                _keep_time(path, previous / path.relative_to(out))
    finally:
        shutil.rmtree(previous, ignore_errors=True)


def _keep_time(path: Path, old: Path) -> None:
    """Give ``path`` the modification time of ``old`` where both are plain files with the same bytes."""
    if path.is_symlink() or old.is_symlink() or not (path.is_file() and old.is_file()):
        return
    before = old.stat()
    if before.st_size == path.stat().st_size and old.read_bytes() == path.read_bytes():
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
