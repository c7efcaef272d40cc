"""The reference results that ship inside the package, for users without a checkout of the repository.

``pebench/data/reference/<suite>.tar.gz`` holds exactly the ``manifest.json`` and the run files of ``raw/`` of
the committed ``results/<suite>`` (the rest of that folder, its tables, figures, summary and ``report.json``, is
what ``pebench report`` writes from them). :func:`pack` makes it, deterministically: members sorted by name,
with a fixed time, owner and mode, and a gzip header without a time stamp, so the same folder gives the same
bytes with the same zlib. A test fails when the packaged copy differs from the committed folder; maintainers
refresh it after committing new reference runs with::

    python -m pebench.store.reference pack

:func:`extract` writes a packaged reference into a new or empty folder (``pebench reference --out DIR``), and
:func:`temporary_reference` into a temporary one that ``pebench compare LOCAL`` compares against. An archive is
read as data from a stranger, by :mod:`pebench.store`'s rules: only regular files named ``manifest.json`` or
``raw/<run file>`` (:func:`pebench.store.path_in`, :func:`pebench.store.run_file_id`) are accepted, none larger
than :data:`pebench.store.MAX_FILE_BYTES`; an absolute name, ``..``, a link, a device or a second copy of a
member refuses the whole archive before anything is written, and nothing is written outside the target folder
nor over a file that was there.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import os
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from pebench import store
from pebench.store import ResultsError, own_files

#: the folder of the packaged reference archives, one ``<suite>.tar.gz`` each
REFERENCE_DIR = Path(__file__).resolve().parents[1] / "data" / "reference"
#: the reference ``pebench compare LOCAL`` uses when no other is given
DEFAULT_SUITE = "standard"
#: the one member of an archive outside ``raw/``
MANIFEST = "manifest.json"
#: the most bytes an archive's members may hold together: 256 MiB, 100 times the packaged standard reference
#: (2.5 MB); each member is bounded by :data:`pebench.store.MAX_FILE_BYTES` too
MAX_ARCHIVE_BYTES = 256 * 2**20
#: the command that refreshes the packaged archives (named by the test that fails when they are stale)
PACK_COMMAND = "python -m pebench.store.reference pack"
#: the committed reference folders of a source checkout: ``results/`` beside the package
CHECKOUT_RESULTS = Path(__file__).resolve().parents[2] / "results"


def archive_path(suite: str = DEFAULT_SUITE) -> Path:
    """The packaged archive of ``suite``'s reference results (it may not exist: :func:`packaged_suites`)."""
    return REFERENCE_DIR / f"{suite}.tar.gz"


def packaged_suites() -> list[str]:
    """The suites whose reference results this installation holds, sorted."""
    return sorted(path.name.removesuffix(".tar.gz") for path in REFERENCE_DIR.glob("*.tar.gz"))


def packaged_archive(suite: str) -> Path:
    """:func:`archive_path` of ``suite``, checked to exist.

    Raises:
        ResultsError: no reference of that suite is packaged, on one line naming those that are.
    """
    path = archive_path(suite)
    if suite not in packaged_suites():
        raise ResultsError(f"no packaged reference of suite {suite!r}; packaged: {', '.join(packaged_suites())} "
                           "(or give a reference results folder)")
    return path


# --------------------------------------------------------------------------- packing


def folder_members(folder: str | Path) -> list[tuple[str, bytes]]:
    """The members an archive of the results folder ``folder`` holds: ``manifest.json`` and ``raw/<name>`` for
    each run file (:func:`pebench.store.raw_files`) with its bytes as stored, sorted by name; nothing followed
    through a link.

    Raises:
        ResultsError: ``folder`` has no ``manifest.json`` or no run files in ``raw/``, or one of them is a link
            or not a regular file, on one line.
    """
    folder = Path(folder)
    if not (folder / MANIFEST).is_file():
        raise ResultsError(f"{folder}: no {MANIFEST}; give a results folder made by `pebench run`")
    members = [(f"raw/{path.name}", data) for path, data in store.raw_file_bytes(folder)]
    if not members:
        raise ResultsError(f"{folder}/raw: no run files; give a results folder made by `pebench run`")
    return sorted([(MANIFEST, store.read_plain_file(folder / MANIFEST, "manifest")), *members])


def archive_bytes(members: Sequence[tuple[str, bytes]]) -> bytes:
    """A gzip-compressed tar archive of ``members`` (name, bytes), in name order, each a regular file of mode
    0644 owned by uid and gid 0 with time 0; the gzip header has no time stamp. The same members give the same
    bytes (with the same zlib)."""
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(stream.getvalue(), compresslevel=9, mtime=0)


def pack(folder: str | Path, archive: str | Path) -> bool:
    """Write the archive of the results folder ``folder`` (:func:`folder_members`) to ``archive`` atomically,
    unless ``archive`` already holds exactly those members (then it is left as it is, whatever zlib made it); an
    archive that cannot be read (:func:`read_archive`) is written over.

    Returns:
        Whether ``archive`` was written.
    """
    members, archive = folder_members(folder), Path(archive)
    with contextlib.suppress(ResultsError):
        if archive.is_file() and read_archive(archive) == members:
            return False
    archive.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes_atomic(archive, archive_bytes(members))
    return True


# --------------------------------------------------------------------------- reading and extracting


def _member_problem(info: tarfile.TarInfo) -> str | None:
    """Why the archive member ``info`` may not become a file of a results folder, or ``None`` when it may."""
    name = info.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if ".." in name.replace("\\", "/").split("/"):
        return "a path with '..'"
    if info.issym() or info.islnk():
        return f"a link (to {info.linkname!r})"
    if not info.isreg():
        return "not a regular file (a folder, device or pipe)"
    folder, _, file_name = name.rpartition("/")
    if not ((name == MANIFEST) or (folder == "raw" and store.FILE_NAME.fullmatch(file_name)
                                   and store.run_file_id(file_name) is not None)):
        return f"neither {MANIFEST} nor a run file in raw/"
    if info.size > store.MAX_FILE_BYTES:
        return f"larger than the {store.MAX_FILE_BYTES / 2**20:g} MiB a file of a results folder may hold"
    return None


def read_archive(archive: str | Path) -> list[tuple[str, bytes]]:
    """The members of a reference archive as (name, bytes), sorted by name, each checked before it is read
    (:func:`_member_problem`); read without following a link to the archive.

    Raises:
        ResultsError: the archive is not a readable gzip-compressed tar archive, holds a member that is not
            ``manifest.json`` or a plain run file in ``raw/`` (an absolute name, ``..``, a link, a device),
            holds a member twice, has no ``manifest.json`` or no run file, or holds more than
            :data:`MAX_ARCHIVE_BYTES`, on one line naming the member.
    """
    archive = Path(archive)
    data = store.read_plain_file(archive, "reference archive")
    members: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for info in tar:
                problem = _member_problem(info)
                if problem:
                    raise ResultsError(f"{archive}: member {info.name!r} is {problem}; refusing the whole archive "
                                       "(nothing was written)")
                if info.name in members:
                    raise ResultsError(f"{archive}: member {info.name!r} is there twice; refusing the whole archive")
                total += info.size
                if total > MAX_ARCHIVE_BYTES:
                    raise ResultsError(f"{archive}: more than {MAX_ARCHIVE_BYTES / 2**20:g} MiB of members; "
                                       "refusing it")
                members[info.name] = tar.extractfile(info).read()
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise ResultsError(f"{archive}: not a readable .tar.gz archive ({exc})") from None
    if MANIFEST not in members or len(members) < 2:
        raise ResultsError(f"{archive}: not a reference archive (it needs {MANIFEST} and run files in raw/)")
    return sorted(members.items())


def check_new_folder(out: Path) -> None:
    """Refuse an ``out`` that is a link, a file, or a folder that is not empty: an extraction writes only into a
    new or empty folder, so it never writes over nor removes a file it did not write.

    Raises:
        ResultsError: on one line, saying to give a new or empty folder.
    """
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ResultsError(f"{out} exists and is not a folder; give a new or empty folder")
    if out.is_dir() and any(out.iterdir()):
        raise ResultsError(f"{out} is not empty; give a new or empty folder (pebench writes the reference only into "
                           "one)")


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to the file ``path``, which must not exist (not even as a link): never over another file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    with os.fdopen(os.open(path, flags, 0o666), "wb") as stream:
        stream.write(data)


def extract(archive: str | Path, out: str | Path) -> list[Path]:
    """Write the members of ``archive`` (:func:`read_archive`, all checked first) into the new or empty folder
    ``out``: built in a hidden staging folder beside it, then renamed into place, so an interrupted extraction
    leaves no partial results folder.

    Returns:
        The paths written, ``out/manifest.json`` first, then the run files.

    Raises:
        ResultsError: ``out`` is not a new or empty folder (:func:`check_new_folder`), or the archive is refused
            (:func:`read_archive`); nothing is written then.
    """
    out = Path(out)
    check_new_folder(out)
    members = read_archive(archive)
    out.parent.mkdir(parents=True, exist_ok=True)
    with own_files.staging_folder(out.parent, f".{out.name}.reference-") as staging:  # a killed one's removed
        staging.chmod(0o777 & ~store.umask())  # a folder like any other, not a staging folder's private 0700
        (staging / "raw").mkdir()
        for name, data in members:
            folder, _, file_name = name.rpartition("/")
            _write_new(store.path_in(staging / folder, file_name), data)
        os.replace(staging, out)  # fails, writing nothing, when a file appeared in `out` meanwhile
    return [out / name for name, _ in sorted(members, key=lambda member: member[0] != MANIFEST)]


@contextlib.contextmanager
def temporary_reference(suite: str = DEFAULT_SUITE) -> Iterator[Path]:
    """The packaged reference of ``suite`` extracted into a new temporary folder named after the suite (as
    ``results/<suite>`` is), removed on exit.

    Raises:
        ResultsError: no reference of ``suite`` is packaged (:func:`packaged_archive`), or it is refused
            (:func:`read_archive`).
    """
    archive = packaged_archive(suite)
    with tempfile.TemporaryDirectory(prefix="pebench-reference-") as folder:
        out = Path(folder) / suite
        extract(archive, out)
        yield out


# --------------------------------------------------------------------------- the maintainers' command


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pebench.store.reference pack [--suite NAME ...]``: refresh the packaged archives from the
    committed ``results/<suite>`` folders of this checkout; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pebench.store.reference",
                                     description="Refresh the reference results packaged with pebench.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write pebench/data/reference/<suite>.tar.gz from results/<suite>")
    p.add_argument("--suite", action="append", default=[],
                   help=f"the suite to pack (repeatable; default: those packaged now, else {DEFAULT_SUITE})")
    p.add_argument("--results", type=Path, default=CHECKOUT_RESULTS,
                   help="the folder holding the committed results/<suite> folders (default: this checkout's)")
    args = parser.parse_args(argv)
    try:
        for suite in args.suite or packaged_suites() or [DEFAULT_SUITE]:
            folder, archive = args.results / suite, archive_path(suite)
            written = pack(folder, archive)
            members = len(folder_members(folder))
            print(f"{archive}: {'written' if written else 'up to date'}, {members} members from {folder} "
                  f"({archive.stat().st_size / 1e6:.2f} MB)")
    except (ResultsError, OSError) as exc:
        print(f"python -m pebench.store.reference: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
