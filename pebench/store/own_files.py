"""Which leftover temporary files this user's pebench made, so that cleaning up never deletes anyone else's.

A command killed with ``kill -9`` (or by the kernel) can leave a temporary file or folder behind: a run file's or a
manifest's copy written before its rename (:func:`pebench.store.write_bytes_atomic`), or the staging folder of a
report, a combine, an extracted reference or a history snapshot (:func:`staging_folder`). The next command into that
folder removes them, but a results folder may come from a stranger, and a name alone proves nothing: anyone can name
a file like one of pebench's. So the names come from the standard library (:func:`tempfile.mkstemp`,
:func:`tempfile.mkdtemp`), and each file or folder made is recorded in the user's cache folder (:func:`records_dir`,
readable by the user only): a record names the folder it was made in by device and inode, and the name, and holds
the inode of the file itself (:func:`record_path`). A leftover is removed only when it is the very file this user's
command made there (:func:`made_here`); its record goes with it, as it goes when the file is renamed into place
(:func:`forget`). A file of the same name from anyone else (a stranger's folder unpacked: new inodes; a name seen
and copied) is kept, and so is one made before pebench kept records.

Where the records cannot be kept (a read-only home), nothing is recorded and nothing is ever removed: leftovers are
then the user's to delete, never a guess.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import platform
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: the environment variable naming pebench's cache folder (tests point it at a temporary one)
CACHE_ENV = "PEBENCH_CACHE_DIR"

#: the folder of the records in the cache folder
RECORDS = "leftovers"


def cache_dir() -> Path:
    """pebench's cache folder: ``$PEBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/pebench``, else
    ``~/.cache/pebench``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pebench"


def records_dir() -> Path:
    """The folder of the records of this user's temporary files and folders."""
    return cache_dir() / RECORDS


def record_path(path: Path) -> Path:
    """The record of the temporary file or folder ``path``: named by the SHA-256 of the device and inode of the
    folder it is in (wherever that folder is moved on its file system) and of its name.

    Raises:
        OSError: the folder of ``path`` is gone.
    """
    folder = os.stat(Path(path).parent)
    key = f"{folder.st_dev}-{folder.st_ino}/{Path(path).name}"
    return records_dir() / hashlib.sha256(key.encode()).hexdigest()


def _record(path: Path) -> None:
    """Record the temporary file or folder ``path``, just made, as this user's; where the record cannot be written,
    nothing (it is then never removed by a later command)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(OSError):
        records_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(record_path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nofollow, 0o600)
        with os.fdopen(descriptor, "w") as stream:
            stream.write(str(os.lstat(path).st_ino))


def made_here(path: Path) -> bool:
    """Whether ``path`` is the very file or folder :func:`make_file` or :func:`make_folder` of this user made there
    (its record holds its inode; a link, with an inode of its own, is never one), so that it may be removed."""
    try:
        with open(record_path(path), encoding="ascii", errors="replace") as stream:
            return stream.read(32) == str(os.lstat(path).st_ino)
    except OSError:  # no record (or none kept), or no such file
        return False


def forget(path: Path) -> None:
    """Remove the record of the temporary file or folder ``path`` (renamed into place or removed)."""
    with contextlib.suppress(OSError):
        os.unlink(record_path(path))


def remove_leftover(path: Path) -> None:
    """Remove the leftover file or folder ``path`` that :func:`made_here` says this user's command made, and its
    record."""
    if Path(path).is_dir() and not Path(path).is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    forget(path)


def make_file(folder: Path, prefix: str, suffix: str = "") -> tuple[int, Path]:
    """Create a new temporary file in ``folder`` (:func:`tempfile.mkstemp`: readable by the user only), recorded as
    this user's; return its open descriptor (for writing) and path. :func:`forget` it once renamed or removed."""
    handle, name = tempfile.mkstemp(suffix, prefix, folder)
    _record(Path(name))
    return handle, Path(name)


def make_folder(parent: Path, prefix: str) -> Path:
    """Create a new temporary folder in ``parent`` (:func:`tempfile.mkdtemp`: the user's only), recorded as this
    user's; return its path."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    _record(folder)
    return folder


def machine_mark() -> str:
    """This machine in a staging folder's name: the first 8 hexadecimal characters of the SHA-256 of its host
    name (a process id says something only on the machine that gave it)."""
    return hashlib.sha256(platform.node().encode()).hexdigest()[:8]


def running(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def staging_folder(parent: Path, prefix: str) -> Iterator[Path]:
    """A new staging folder in ``parent``, ``<prefix><machine>-<pid>-<random>`` (:func:`machine_mark`, this
    process, :func:`make_folder`), removed with its record on exit (what was not moved out of it with it), made
    after removing the staging folders of ``prefix`` that this user's commands on this machine left when their
    process died (``kill -9``). A folder whose process still runs, of another machine (a shared disk), or that is
    not the very folder this user's command made (:func:`made_here`: anyone can name a folder so, and a results
    folder may come from a stranger) is kept, and so is a link.

    Raises:
        OSError: the folder cannot be made (``parent`` missing or not writable).
    """
    parent = Path(parent)
    machine = machine_mark()
    shape = re.compile(re.escape(f"{prefix}{machine}-") + r"(?P<pid>[0-9]{1,10})-")
    for folder in parent.glob(glob.escape(prefix) + "*"):
        match = shape.match(folder.name)
        if match and not running(int(match["pid"])) and made_here(folder):
            remove_leftover(folder)
    staging = make_folder(parent, f"{prefix}{machine}-{os.getpid()}-")
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        forget(staging)
