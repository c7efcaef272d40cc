"""Which leftover temporary files this user's pebench wrote, so that cleaning up never deletes anyone else's.

A command killed with ``kill -9`` (or by the kernel) can leave a temporary file or folder behind: a run file's or a
manifest's copy written before its rename (:func:`pebench.store.write_bytes_atomic`), or the staging folder of a
report, a combine, an extracted reference or a history snapshot (:func:`staging_folder`). The next command into that
folder removes them, but a results folder may come from a stranger, and a name alone proves nothing: anyone can name
a file like one of pebench's. So each temporary name carries a tag, an HMAC of the name under a key kept in the
user's cache folder (:func:`key_path`, readable by the user only), and a leftover is removed only when its tag
verifies under this user's key (:func:`written_here`). A file of the same shape from anyone else, or from before the
key existed, is kept.

Where the key cannot be kept (a read-only home), names carry no tag and nothing is ever removed: leftovers are
then the user's to delete, never a guess.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import hmac
import os
import platform
import re
import secrets
import shutil
import string
from pathlib import Path

#: the environment variable naming pebench's cache folder (tests point it at a temporary one)
CACHE_ENV = "PEBENCH_CACHE_DIR"

#: the key's file name in the cache folder
KEY_FILE = "leftover-key"

#: a key's length in bytes
KEY_BYTES = 32

#: the characters of a temporary name's random part, and of its tag (lowercase hexadecimal)
NONCE_ALPHABET = string.ascii_lowercase + string.digits

#: how many random characters (36 possible) and tag characters (hexadecimal) a temporary name carries
NONCE_LENGTH, TAG_LENGTH = 8, 16


def cache_dir() -> Path:
    """pebench's cache folder: ``$PEBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/pebench``, else
    ``~/.cache/pebench``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pebench"


def key_path() -> Path:
    """The file of the key that tags this user's temporary names."""
    return cache_dir() / KEY_FILE


def user_key() -> bytes | None:
    """This user's key (made on first use, readable by the user only), or None where it cannot be kept or the
    file there is not a key (a link, another size): no name is then tagged, and no leftover is removed."""
    return _key(str(key_path()))


@functools.cache
def _key(path: str) -> bytes | None:
    """The key in ``path`` (read once per process and path). A first use writes a new key whole into a file of its
    own and links it into place, so that of concurrent first uses one key wins and none reads a part of it."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            new = f"{path}.{os.getpid()}-{secrets.token_hex(4)}.new"
            descriptor = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
            try:
                with os.fdopen(descriptor, "wb") as stream:
                    stream.write(secrets.token_bytes(KEY_BYTES))
                    stream.flush()
                    os.fsync(stream.fileno())
                with contextlib.suppress(FileExistsError):
                    os.link(new, path)
            finally:
                os.unlink(new)
        descriptor = os.open(path, os.O_RDONLY | nofollow)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as stream:
        key = stream.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None  # not a key (another size): tag nothing


def tag(stem: str) -> str:
    """The tag of the temporary name ``stem`` under this user's key ("" where there is none)."""
    key = user_key()
    if key is None:
        return ""
    return hmac.new(key, stem.encode(), hashlib.sha256).hexdigest()[:TAG_LENGTH]


def temporary_name(prefix: str, suffix: str = "") -> str:
    """A new temporary name, ``<prefix><random>-<tag><suffix>`` (``<prefix><random><suffix>`` where no key can
    be kept): the tag covers the prefix and the random part, so it proves the name was made here."""
    stem = prefix + "".join(secrets.choice(NONCE_ALPHABET) for _ in range(NONCE_LENGTH))
    mark = tag(stem)
    return f"{stem}-{mark}{suffix}" if mark else f"{stem}{suffix}"


def written_here(name: str, prefix: str, suffix: str = "") -> bool:
    """Whether ``name`` is a temporary name that :func:`temporary_name` made with ``prefix`` and ``suffix`` under
    this user's key (its tag verifies): only such a leftover may be removed."""
    if not (name.startswith(prefix) and name.endswith(suffix)):
        return False
    middle = name[len(prefix):len(name) - len(suffix)]
    nonce, dash, mark = middle.partition("-")
    if not dash or len(nonce) != NONCE_LENGTH or any(c not in NONCE_ALPHABET for c in nonce):
        return False
    expected = tag(prefix + nonce)
    return bool(expected) and hmac.compare_digest(mark, expected)


def make_file(folder: Path, prefix: str, suffix: str = "") -> tuple[int, Path]:
    """Create a new temporary file in ``folder`` named by :func:`temporary_name` (readable by the user only, as
    ``tempfile.mkstemp`` makes one); return its open descriptor (for writing) and path."""
    while True:
        path = Path(folder) / temporary_name(prefix, suffix)
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600), path
        except FileExistsError:
            continue


def make_folder(parent: Path, prefix: str) -> Path:
    """Create a new temporary folder in ``parent`` named by :func:`temporary_name`; return its path."""
    while True:
        path = Path(parent) / temporary_name(prefix)
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue


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


def staging_folder(parent: Path, prefix: str) -> Path:
    """A new staging folder in ``parent``, ``<prefix><machine>-<pid>-<random>-<tag>`` (:func:`machine_mark`,
    this process, :func:`make_folder`), made after removing the staging folders of ``prefix`` that this user's
    commands on this machine left when their process died (``kill -9``). A folder whose process still runs, of
    another machine (a shared disk), or whose tag does not verify under this user's key (anyone can name a folder
    so: a results folder may come from a stranger) is kept, and so is a link.

    Raises:
        OSError: the folder cannot be made (``parent`` missing or not writable).
    """
    parent = Path(parent)
    machine = machine_mark()
    shape = re.compile(re.escape(f"{prefix}{machine}-") + r"(?P<pid>[0-9]{1,10})-")
    for folder in parent.glob(glob.escape(prefix) + "*"):
        match = shape.match(folder.name)
        if (match and not running(int(match["pid"])) and written_here(folder.name, match[0])
                and not folder.is_symlink() and folder.is_dir()):
            shutil.rmtree(folder, ignore_errors=True)
    return make_folder(parent, f"{prefix}{machine}-{os.getpid()}-")
