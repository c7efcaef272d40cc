"""The only reader and writer of a results folder: run files, their verification, scans, the lock, the manifest.

A suite folder holds ``raw/<run_id>.csv.gz`` (one tidy CSV per run, one row per evaluation length,
condition and variant, gzip-compressed: :data:`RUN_FILE_SUFFIX`; plain ``.csv`` run files, as pebench wrote
before and as a user may write by hand, are read alike) and ``manifest.json``. :func:`load` reads every run
file, checks the schema (:mod:`pebench.store.schema`) and returns one DataFrame. Every file is verified complete on
its own (:func:`read_run_file`, by the checks of :mod:`pebench.store.run_file_check`): it ends with a newline, every
row has every field, its rows are exactly the lengths x conditions x variants its ``eval_*`` columns declare
(one row for a failed run), and the checksum in its last column (:data:`pebench.store.schema.CHECKSUM_COLUMN`,
written since pebench checks it) matches its other fields; a truncated or edited file is named and never
counted. A folder holds one suite and protocol:
:func:`load` refuses a folder whose runs of one cell differ in anything but the seed
(:func:`mixed_configurations`), so such runs are never pooled as seeds.

Writes are atomic (:func:`write_bytes_atomic`: a temporary file with a unique name in the same folder, then
``os.replace``), so a killed sweep never leaves a file that counts as complete without being so. One sweep at
a time per folder (:func:`lock_folder`); the manifest (:func:`write_manifest`) records every invocation with
the git state of the code (:func:`git_state`). A folder may come from anyone: no link in it is followed
(:func:`refuse_link`, :func:`read_plain_file`), no file is read beyond :data:`MAX_FILE_BYTES`, names read from
it are checked before they become file names (:func:`path_in`).
"""

from __future__ import annotations

import collections
import contextlib
import csv
import gzip
import io
import json
import logging
import os
import platform
import re
import shutil
import stat
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import pebench
from pebench.lazy_torch import torch  # only a manifest reads it: loading a folder does without torch
from pebench.registry import is_name, plugin_records
from pebench.store import own_files, verified_cache
from pebench.store.provenance import code_commit, git_state  # noqa: F401  (re-exported: part of the store's API)
from pebench.store.run_file_check import (  # noqa: F401  (ResultsError, validate_frame, expected_rows: the store's API)
    ResultsError,
    expected_rows,
    rows_checksum,
    validate_frame,
    verified_frame,
    verified_records,
)
from pebench.store.schema import CELL_COLUMNS, CHECKSUM_COLUMN, CONFIG_COLUMNS, TEXT_COLUMNS, completed

if TYPE_CHECKING:  # pandas is imported where a frame is built: reading a folder's files needs none
    import pandas as pd

log = logging.getLogger("pebench")


#: how many cells of mixed configurations a one-line error names before it says how many more there are (bad
#: files are all named)
NAMED_CELLS = 3

#: a file name a command builds from names read from a folder: one plain path component
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: the most bytes one file of a results folder (a run file, decompressed, or a manifest) may hold: 64 MiB, 1500
#: times the largest committed run file (43 kB decompressed); a folder may come from anyone, and a small gzip
#: file can expand to gigabytes
MAX_FILE_BYTES = 64 * 2**20


class FolderLockError(RuntimeError):
    """A results folder that another sweep holds, or whose lock file is a link or not a plain file."""


# --------------------------------------------------------------------------- loading


def read_run_csv(path: str | Path | io.StringIO) -> pd.DataFrame:
    """Read one run CSV with :data:`pebench.store.schema.TEXT_COLUMNS` as text (not validated; see
    :func:`read_run_file`)."""
    import pandas as pd

    return pd.read_csv(path, dtype=dict.fromkeys(TEXT_COLUMNS, str))


def run_file_text(rows: Sequence[dict]) -> str:
    """The CSV text of a run file: ``rows`` with a last column :data:`~pebench.store.schema.CHECKSUM_COLUMN` (the
    same value in every row) that lets :func:`read_run_file` verify the file on its own."""
    import pandas as pd

    records = list(csv.reader(io.StringIO(pd.DataFrame(rows).to_csv(index=False))))
    checksum = rows_checksum(records)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*records[0], CHECKSUM_COLUMN])
    writer.writerows([*record, checksum] for record in records[1:])
    return out.getvalue()


RUN_FILE_SUFFIX = ".csv.gz"
"""The name ending of the run files the runner writes: the CSV text of :func:`run_file_text`, gzip-compressed
(about 15x smaller; the reference folders would not fit the 64 MiB a GPU machine is sent otherwise) with no
time stamp, so the same rows always give the same bytes. ``zcat`` or ``pandas.read_csv`` read it."""
RUN_FILE_SUFFIXES = (RUN_FILE_SUFFIX, ".csv")
"""The name endings of run files that are read: gzip-compressed, and plain CSV (what pebench wrote before it
compressed them, and files written by hand)."""


def run_file_name(run_id: str) -> str:
    """The name of the file the runner writes for ``run_id`` (``<run_id>.csv.gz``)."""
    return f"{run_id}{RUN_FILE_SUFFIX}"


def run_file_suffix(path: str | Path) -> str | None:
    """Which of :data:`RUN_FILE_SUFFIXES` a run file's name ends in, or ``None`` when the name is not a run
    file's: another ending, nothing before the ending, or hidden (a temporary file of a write in flight)."""
    name = os.path.basename(os.fspath(path))
    if name.startswith("."):
        return None
    return next((suffix for suffix in RUN_FILE_SUFFIXES if name.endswith(suffix) and len(name) > len(suffix)),
                None)


def run_file_id(path: str | Path) -> str | None:
    """The run id a run file's name gives (its name without :data:`RUN_FILE_SUFFIXES`), or ``None`` when
    the name is not a run file's (:func:`run_file_suffix`)."""
    suffix = run_file_suffix(path)
    return None if suffix is None else os.path.basename(os.fspath(path))[: -len(suffix)]


def raw_files(folder: str | Path) -> list[Path]:
    """The run files directly in ``folder`` (names :func:`run_file_id` accepts), sorted by name; empty when the
    folder does not exist."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return [folder / name for name in sorted(entry.name for entry in os.scandir(folder)
                                             if run_file_id(entry.name) is not None)]


def umask() -> int:
    """This process's umask (read by setting it and setting it back; there is no other portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def refuse_link(path: str | Path) -> Path:
    """``path``, unless it is a symbolic link: a results folder may come from anyone, and a link in it (its
    ``raw/``, a run file, its manifest) would lead reads, writes and removals out of it.

    Raises:
        ResultsError: ``path`` is a symbolic link, on one line saying what to do.
    """
    path = Path(path)
    if path.is_symlink():
        raise ResultsError(f"{path} is a symbolic link; pebench never follows a link in a results folder: replace "
                           "it with the folder or file itself")
    return path


def read_plain_file(path: str | Path, what: str = "run file") -> bytes:
    """The bytes of the regular file ``path``, opened without following a symbolic link (``O_NOFOLLOW``), at
    most :data:`MAX_FILE_BYTES`.

    Raises:
        ResultsError: ``path``: a symbolic link, a folder, not a regular file (``what`` names what was
            expected) or larger than :data:`MAX_FILE_BYTES`, on one line.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(path, flags)
    except OSError:
        if path.is_symlink():
            raise ResultsError(f"{path}: a symbolic link, not a {what} (pebench never follows a link in a results "
                               "folder); replace it with the file itself") from None
        raise
    mode = os.fstat(handle).st_mode  # before fdopen, which refuses a folder with only its descriptor's number
    if not stat.S_ISREG(mode):
        os.close(handle)
        raise ResultsError(f"{path}: {'a folder' if stat.S_ISDIR(mode) else 'not a regular file'}, not a {what}")
    with os.fdopen(handle, "rb") as stream:
        return bounded_read(stream, path, what)


def read_plain_csv(path: str | Path, what: str) -> list[dict[str, str]]:
    """The rows of the CSV file ``path`` of a results folder (``what`` it is, for errors) as texts by column, read
    through :func:`read_plain_file`: never through a link, at most :data:`MAX_FILE_BYTES`."""
    return list(csv.DictReader(read_plain_file(path, what).decode("utf-8").splitlines()))


def bounded_read(stream: io.BufferedIOBase, path: Path, what: str) -> bytes:
    """At most :data:`MAX_FILE_BYTES` of ``stream`` (a file, or a gzip stream decompressing one)."""
    data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ResultsError(f"{path}: more than the {MAX_FILE_BYTES / 2**20:g} MiB a {what} may hold"
                           f"{' decompressed' if path.name.endswith('.gz') else ''} (pebench writes files of a "
                           "few kB); move it away")
    return data


def gunzip_bounded(data: bytes, path: Path, what: str) -> bytes:
    """The gzip-compressed bytes ``data`` of the file ``path`` (a ``what``) decompressed, at most
    :data:`MAX_FILE_BYTES` of them (read in bounded steps: never a zip bomb).

    Raises:
        ResultsError: ``path``: truncated, not a readable gzip stream, or more than the bound, on one line.
    """
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return bounded_read(stream, path, what)
    except EOFError:
        raise ResultsError(f"{path}: truncated (its gzip stream ends early)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise ResultsError(f"{path}: not a readable gzip file ({exc})") from None


def read_run_text(path: str | Path, data: bytes | None = None) -> str:
    """The CSV text of a run file, decompressed when its name ends in ``.gz``; a symbolic link is refused
    (:func:`read_plain_file`). ``data``: the file's bytes, where the caller has read them already.

    Raises:
        ResultsError: ``path``: not a text file, a folder, a link, or a damaged or truncated gzip stream, on one
            line.
    """
    path = Path(path)
    data = read_plain_file(path) if data is None else data
    if path.name.endswith(".gz"):
        data = gunzip_bounded(data, path, "run file")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a text file") from None


def raw_file_bytes(folder: str | Path) -> list[tuple[Path, bytes]]:
    """Each run file of a results folder's ``raw/`` (:func:`raw_files`) with its bytes as stored (compressed or
    not), read without following a link (:func:`read_plain_file`); empty when the folder has no ``raw/``.

    Raises:
        ResultsError: ``raw/`` or a run file in it is a symbolic link, a folder or not a regular file, on one
            line.
    """
    raw = refuse_link(Path(folder) / "raw")
    return [(path, read_plain_file(path)) for path in raw_files(raw)]


def first_rows(folder: str | Path, columns: Sequence[str]) -> pd.DataFrame:
    """``run_id`` and those of ``columns`` each run file has, from the first row of every run file of a results
    folder's ``raw/`` that has at least one of them (:func:`read_run_text`: no link followed, size bounded);
    a frame with only ``run_id`` when none has any. The files are not verified (:func:`read_run_file` does).

    Raises:
        ResultsError: as :func:`raw_file_bytes`, or a run file is not a readable CSV (gzip) file.
    """
    import pandas as pd

    wanted = ["run_id", *columns]
    found: list[str] = []  # run_id and those of ``columns`` some file has, in the order the files first have them
    records = []
    for path in raw_files(refuse_link(Path(folder) / "raw")):
        lines = csv.reader(io.StringIO(read_run_text(path)))
        header = next(lines, None)
        if not header:
            raise ResultsError(f"{path}: empty, not a run file")
        first = next(lines, None)
        has = [column for column in wanted if column in header]
        if first is None or len(has) < 2 or "run_id" not in has:
            continue
        found += [column for column in header if column in has and column not in found]
        records.append(dict(zip(header, first, strict=False)))
    if not records:
        return pd.DataFrame(columns=["run_id"])
    text = io.StringIO()  # the fields as written, parsed once: each column's type read over every run at once
    writer = csv.writer(text)
    writer.writerow(found)
    writer.writerows([record.get(column, "") for column in found] for record in records)
    return pd.read_csv(io.StringIO(text.getvalue()), dtype={"run_id": str})  # an id of digits stays as written


def run_file_bytes(rows: Sequence[dict], name: str) -> bytes:
    """The bytes of a run file named ``name`` holding ``rows``: :func:`run_file_text`, gzip-compressed
    without a time stamp when ``name`` ends in ``.gz``."""
    data = run_file_text(rows).encode()
    return gzip.compress(data, mtime=0) if name.endswith(".gz") else data


def read_run_file(path: str | Path) -> pd.DataFrame:
    """Read one run file (``.csv.gz`` or ``.csv``, :func:`read_run_text`) and verify it is complete and
    unedited, on its own; return its rows.

    Checks: the file ends with a newline; every row has as many fields as the
    header; the checksum column (files written since pebench has it) matches;
    the schema (:func:`validate_frame`); every row belongs to the run the file
    has, with one configuration and status; and the rows are exactly
    the evaluation lengths x conditions x variants of its ``eval_*`` columns
    (files without those columns: not checked), or one row for a failed run.

    Raises:
        ResultsError: ``path``: what is wrong, on one line.
    """
    return read_run_records(path)[0]


def read_run_records(path: str | Path) -> tuple[pd.DataFrame, list[list[str]]]:
    """:func:`read_run_file`'s rows, and its records as written (header first, every field a text): for a reader
    that compares fields as the file writes them (:mod:`pebench.store.verification`).

    Raises:
        ResultsError: ``path``: what is wrong, on one line.
    """
    import pandas as pd

    path = Path(path)
    text = read_run_text(path)
    records = verified_records(text, path)
    try:
        frame = read_run_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ResultsError(f"{path}: unreadable CSV ({str(exc).splitlines()[0]})") from None
    validate_frame(frame, path)
    return verified_frame(frame, records, path), records


def path_in(folder: str | Path, name: str) -> Path:
    """``folder / name`` for a file name built from names read from a results folder, checked to stay in
    ``folder``: one plain component (:data:`FILE_NAME`: no separator, not hidden, no ``..``).

    Raises:
        ResultsError: ``name`` is not such a name, on one line.
    """
    if not FILE_NAME.fullmatch(name):
        raise ResultsError(f"{name!r} is not a plain file name (letters, digits, '_', '-', '.'); it would be "
                           f"written outside {folder}: check the names in the results folder")
    return Path(folder) / name


def _normalized(value: object) -> str:
    """A config value as text that is equal for equal values however they were read (30, 30.0, "30")."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value))
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return str(value)


def mixed_configurations(data: pd.DataFrame) -> list[str]:
    """Where runs that would be pooled as seeds of one cell differ in anything but the seed.

    ``data``: result rows (or one row per run). Returns one phrase per such
    cell (``experiment/task/encoding/arch: steps 30 and 3000``), and one for
    runs of more than one suite; empty when the runs form one suite and
    protocol.
    """
    runs = data.drop_duplicates("run_id") if "run_id" in data else data
    problems = []
    if "suite" in runs and runs["suite"].nunique() > 1:
        problems.append(f"runs of suites {' and '.join(sorted(map(str, runs['suite'].unique())))}")
    columns = [c for c in CONFIG_COLUMNS if c in runs]
    cell = [c for c in CELL_COLUMNS if c in runs and c != "variant"]
    normalized = runs[columns].map(_normalized)
    groups = normalized.groupby([runs[c].map(_normalized) for c in cell], sort=False)
    counts = groups.nunique().to_numpy()  # (cells, columns), in the order of the groups: one vectorised pass
    for (_cell, rows), n_values in zip(groups, counts, strict=True):
        differ = [c for c, n in zip(columns, n_values, strict=True) if n > 1]
        if differ:
            first = runs.loc[rows.index[0]]
            name = "/".join(str(first[c]) for c in ("experiment", "task", "encoding", "arch") if c in first)
            values = [f"{c} {' and '.join(sorted(map(str, runs.loc[rows.index, c].unique())))}" for c in differ]
            problems.append(f"{name}: {', '.join(values)}")
    return problems


def parse_json(data: bytes | str, path: str | Path) -> Any:
    """``data``, the content of the file ``path`` of a results folder, parsed as JSON.

    Raises:
        ResultsError: it is not JSON, not UTF-8, or nested deeper than Python's parser goes (no file pebench writes
            nests more than a few levels; a folder may come from anyone), on one line naming ``path``.
    """
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path} is not valid JSON ({exc}); move it away to continue") from None
    except RecursionError:
        raise ResultsError(f"{path} nests JSON deeper than any file pebench writes (it may have been crafted); "
                           "move it away to continue") from None


def read_json(path: str | Path, what: str) -> Any:
    """The JSON file ``path`` of a results folder (a ``what``, for errors), read without following a link
    (:func:`read_plain_file`) and parsed (:func:`parse_json`).

    Raises:
        FileNotFoundError: there is no such file.
        ResultsError: it is a link or not a regular file, too large, or not JSON (:func:`parse_json`), on one line.
    """
    return parse_json(read_plain_file(path, what), path)


def read_manifest(folder: str | Path) -> dict | None:
    """The ``manifest.json`` of a results folder (``None`` when it has none), read without following a link.

    Raises:
        ResultsError: it is a link, not JSON, or not of the manifest's shape (an object with a ``suite`` named by the
            name rule, :func:`pebench.registry.is_name`,
            a list of ``invocations`` that are objects, an object ``latest`` if any, and if combined, a list of
            ``sources`` objects whose ``manifest`` is an object or null), on one line.
    """
    path = Path(folder) / "manifest.json"
    if not path.exists() and not path.is_symlink():
        return None
    manifest = read_json(path, "manifest")
    suite = manifest.get("suite", "") if isinstance(manifest, dict) else None
    if isinstance(suite, str) and suite and not is_name(suite):  # it would become a path: say which name
        raise ResultsError(f"{path}: its suite {suite[:40]!r} is not a plain file name (a name pebench gives a "
                           "suite); move it away to continue")
    if not (isinstance(manifest, dict) and (suite == "" or is_name(suite))
            and isinstance(manifest.get("invocations", []), list)
            and all(isinstance(invocation, dict) for invocation in manifest.get("invocations", []))
            and isinstance(manifest.get("latest") or {}, dict) and _combined_shape(manifest.get("combined"))):
        raise ResultsError(f"{path} is not a pebench manifest (expected an object with 'suite' and a list of "
                           "'invocations', each an object); move it away to continue")
    return manifest


def _combined_shape(combined: object) -> bool:
    """Whether a manifest's ``combined`` entry (:mod:`pebench.store.combine`) is absent or of its shape."""
    if combined is None:
        return True
    sources = combined.get("sources") if isinstance(combined, dict) else None
    return isinstance(sources, list) and all(
        isinstance(source, dict) and isinstance(source.get("manifest") or {}, dict) for source in sources)


def named(problems: Sequence[str], limit: int = NAMED_CELLS) -> str:
    """``problems`` joined on one line, the first ``limit`` of them and how many more."""
    shown = "; ".join(problems[:limit])
    return shown + (f"; and {len(problems) - limit} more" if len(problems) > limit else "")


def run_files(directory: str | Path) -> list[Path]:
    """The run files of a results folder (its ``raw/``, or the folder itself when it has none), sorted
    (:func:`raw_files`).

    Raises:
        ResultsError: the folder does not exist or holds no run files.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"{directory}: no such results folder")
    folder = directory / "raw" if refuse_link(directory / "raw").is_dir() else directory
    paths = raw_files(folder)
    if not paths:
        raise ResultsError(f"{folder}: no run files (.csv.gz or .csv) found; run `pebench run` first")
    return paths


def load(directory: str | Path, *, include_failed: bool = True) -> pd.DataFrame:
    """Load every run file of a suite folder (or of its ``raw/`` folder) into one DataFrame.

    Every file is verified on its own, as :func:`read_run_file` verifies it (the files that share a header are parsed
    as one CSV, then checked file by file: the same rows, four times faster), and the runs must
    form one suite and protocol (:func:`mixed_configurations`). A process that loads one folder again
    (a docs build reads each several times) gets a copy of the first load's rows as long as the folder holds the
    same files, none replaced or written since (:func:`files_fingerprint`); another process, the rows verified
    before from the same files' bytes by the same code (:mod:`pebench.store.verified_cache`); otherwise the files
    are read and verified again.

    Args:
        directory: a suite folder (containing ``raw/``) or a folder of run files.
        include_failed: keep rows of failed runs (they have no metrics).

    Raises:
        ResultsError: the folder has no run files, files are malformed or incomplete
            (the one-line message names every one), or
            runs of one cell differ in their configuration.
    """
    paths = run_files(directory)
    key = files_fingerprint(paths)
    data = _LOADED.get(key)
    if data is None:
        data = _kept_or_loaded(paths)
        _LOADED[key] = data
        while len(_LOADED) > _LOADED_FOLDERS:
            _LOADED.popitem(last=False)
    else:
        _LOADED.move_to_end(key)
    data = data.copy()
    if not include_failed:
        data = data[completed(data)].reset_index(drop=True)
    return data


def files_fingerprint(paths: Sequence[Path]) -> tuple[tuple[str, int, int, int, int], ...]:
    """(absolute path, inode, size, modification and change time in ns) of each file: equal only for the same
    files, neither replaced (a new inode) nor written (new times) in between."""
    stats = []
    for path in paths:
        # absolute, not resolved: a key for a cache, where two spellings of one file only cost a miss (and
        # resolving each of a folder's files on every call took most of the site build's time)
        name = os.path.abspath(path)
        try:
            stat = os.stat(name)
        except OSError:  # gone since it was listed: reading it names it
            stats.append((name, -1, -1, -1, -1))
            continue
        stats.append((name, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
    return tuple(stats)


#: the rows of the folders :func:`load` read last, by the :func:`files_fingerprint` of their files; never changed
#: in place (``load`` returns copies)
_LOADED: collections.OrderedDict[tuple, pd.DataFrame] = collections.OrderedDict()
_LOADED_FOLDERS = 8


def _kept_or_loaded(paths: Sequence[Path]) -> pd.DataFrame:
    """The verified rows of the run files ``paths``: those kept from an earlier load of the same bytes by the same
    code (:mod:`pebench.store.verified_cache`), else read and verified from these bytes (:func:`_load_files`), then
    kept. A file that cannot be read is left to :func:`_load_files` to name."""
    try:
        contents = [read_plain_file(path) for path in paths]
    except (ResultsError, OSError):
        return _load_files(paths)
    key = verified_cache.rows_key(zip([path.name for path in paths], contents, strict=True), plugin_records())
    data = verified_cache.kept_rows(key)
    if data is None:
        data = _load_files(paths, contents)
        verified_cache.keep_rows(key, data)
    return data


def _load_files(paths: Sequence[Path], contents: Sequence[bytes] | None = None) -> pd.DataFrame:
    """The verified rows of the run files ``paths`` (:func:`load` without its caches), of their bytes ``contents``
    where given (else read); errors are raised, never kept."""
    import pandas as pd

    run_ids, errors, frames = _read_run_files(paths, contents)
    bad, files = [], {}
    for path, run_id, error in zip(paths, run_ids, errors, strict=True):
        if error:
            bad.append(error)
        elif run_id in files:  # a copy under another name would count one run twice
            bad.append(f"{path}: run {run_id} again (also in {files[run_id].name})")
        else:
            files[run_id] = path
    if bad:
        raise ResultsError(f"{len(bad)} bad result file(s), never counted; move them away (pebench run reruns "
                           f"their runs): {'; '.join(bad)}")
    frames.sort(key=lambda item: item[0][0])  # columns in the order the files first have them
    data = pd.concat([frame for _, frame in frames], ignore_index=True, sort=False)
    order = np.argsort(np.concatenate([positions for positions, _ in frames]), kind="stable")  # the files' order
    data = data.take(order).reset_index(drop=True)
    mixed = mixed_configurations(data)
    if mixed:
        raise ResultsError(f"{paths[0].parent}: runs of one cell differ in more than the seed ({named(mixed)}); a "
                           "results folder holds one suite and protocol: move one configuration's runs to another "
                           "folder")
    return data



def _read_run_files(paths: Sequence[Path], contents: Sequence[bytes] | None = None
                    ) -> tuple[list[str], list[str], list[tuple[np.ndarray, pd.DataFrame]]]:
    """Read and verify ``paths`` as :func:`read_run_file` does: per path, in order, its run id (``""`` where it does
    not verify) and the first line of its error (``""`` where it does); and the rows of those that verify, as frames
    each with the position in ``paths`` of the file of every row.

    The files that share a header are parsed as one CSV (parsing a file of a few dozen rows and a hundred columns
    costs pandas about 10 ms, most of a folder's loading time): the text of each is checked as written, then the
    rows of all, then each file's rows on their own. Where any check of such a group fails, or its files parse
    otherwise together, its files are read one by one, so that a bad file is named as :func:`read_run_file`
    names it. ``contents``: the files' bytes, where the caller has read them."""
    import pandas as pd

    run_ids, errors, frames = [""] * len(paths), [""] * len(paths), []
    groups: dict[str, list[tuple[int, str, list[list[str]]]]] = {}  # header line -> (position, text, records)
    alone = []
    for position, path in enumerate(paths):
        try:
            text = read_run_text(path, None if contents is None else contents[position])
            records = verified_records(text, path)
        except ResultsError as exc:
            errors[position] = str(exc).splitlines()[0]
            continue
        if len(records) < 2:  # no rows: read_run_file says why
            alone.append(position)
            continue
        groups.setdefault(text.partition("\n")[0], []).append((position, text, records))
    for header, group in groups.items():
        try:
            frame, ids = _read_group(header, group, paths)
        except (ResultsError, pd.errors.ParserError, pd.errors.EmptyDataError):
            alone += [position for position, _, _ in group]
            continue
        for position, run_id in ids.items():
            run_ids[position] = run_id
        frames.append((np.repeat([position for position, _, _ in group], [len(r) - 1 for *_, r in group]), frame))
    for position in sorted(alone):
        try:
            frame = read_run_file(paths[position])
        except ResultsError as exc:
            errors[position] = str(exc).splitlines()[0]
            continue
        run_ids[position] = frame["run_id"].iloc[0]
        frames.append((np.full(len(frame), position), frame))
    return run_ids, errors, frames


def _read_group(header: str, group: Sequence[tuple[int, str, list[list[str]]]],
                paths: Sequence[Path]) -> tuple[pd.DataFrame, dict[int, str]]:
    """The files of ``group`` (position, text, records), which share ``header``, parsed as one CSV and verified
    (:func:`_read_run_files`): their rows and each one's run id by position.

    Raises:
        ResultsError: a check fails, or the files parse otherwise together than each on its own.
    """
    frame = read_run_csv(io.StringIO(header + "\n" + "".join(text.partition("\n")[2] for _, text, _ in group)))
    if list(frame.columns) != group[0][2][0] or len(frame) != sum(len(r) - 1 for *_, r in group):
        raise ResultsError("its files parse otherwise together")
    validate_frame(frame, paths[group[0][0]])
    start, ids = 0, {}
    for position, _text, records in group:
        rows = frame.iloc[start:start + len(records) - 1]
        ids[position] = records[1][records[0].index("run_id")]
        if not (rows["run_id"] == ids[position]).all():  # each file's rows parsed as written
            raise ResultsError("its files parse otherwise together")
        verified_frame(rows, records, paths[position])
        start += len(records) - 1
    return frame, ids


# --------------------------------------------------------------------------- writing


def raw_dir(out: Path) -> Path:
    """Folder of the per-run CSVs of a suite folder."""
    return Path(out) / "raw"


#: the name of a temporary file :func:`write_bytes_atomic` makes for a run file: ``.<run file name>.<random>.tmp``
#: (:func:`pebench.store.own_files.make_file`, :func:`tempfile.mkstemp`'s random part)
RUN_TEMP_FILE = re.compile(r"\.(?P<target>[0-9a-f]{16}\.csv(\.gz)?)\.[a-z0-9_]+\.tmp")


def temporary_prefix(name: str) -> str:
    """The prefix of the temporary names :func:`write_bytes_atomic` makes for a file named ``name``."""
    return f".{name}."


def left_by_this_user(path: Path, target: str) -> bool:
    """Whether ``path`` is a temporary file that :func:`write_bytes_atomic` of this user left behind while writing
    a file named ``target`` (named so, and the very file it made: :func:`pebench.store.own_files.made_here`), and so
    may be removed; a file of the same shape from anyone else is not."""
    return (path.name.startswith(temporary_prefix(target)) and path.name.endswith(".tmp")
            and own_files.made_here(path))


def remove_manifest_copies(out: Path) -> None:
    """Remove the temporary copies of ``out/manifest.json`` (``.manifest.json.<random>.tmp``) that this user's
    sweep, killed while writing it, left behind (:func:`left_by_this_user`; call it only while holding
    :func:`lock_folder`: they may be another sweep's copies in flight otherwise). Every other file is left
    untouched."""
    for tmp in Path(out).glob(".manifest.json.*.tmp"):
        if left_by_this_user(tmp, "manifest.json"):
            own_files.remove_leftover(tmp)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file with a unique name in the same folder, recorded as
    this user's (:func:`pebench.store.own_files.make_file`, so that only this user's commands remove it if a kill
    leaves it behind), fsync, rename; the temporary file is removed if anything fails (e.g. a full disk). The file
    gets the mode any new file gets (``0o666`` less the umask), not the temporary file's private ``0o600``."""
    path = Path(path)
    handle, tmp = own_files.make_file(path.parent, temporary_prefix(path.name), ".tmp")
    try:
        os.fchmod(handle, 0o666 & ~umask())
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        own_files.forget(tmp)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode())


def write_rows_atomic(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` as a run file (CSV with its checksum column, gzip-compressed when ``path`` ends in
    ``.gz``: :func:`run_file_bytes`) to ``path`` atomically (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, run_file_bytes(rows, Path(path).name))


def copy_run_file(path: Path, folder: Path, run_id: str) -> Path:
    """Copy the run file ``path``, its bytes as they are (compressed or not), into ``folder`` as run ``run_id``'s
    file with ``path``'s ending (checked to stay in ``folder``: :func:`path_in`); return the copy's path."""
    target = path_in(folder, f"{run_id}{run_file_suffix(path)}")
    shutil.copyfile(path, target)
    return target


@dataclass
class ExistingResults:
    """What an output folder already holds."""

    complete: set[str]  # run ids with a valid run file to keep
    retry: set[str]  # run ids recorded as failed
    bad: dict[str, str]  # file name -> why it is malformed or foreign
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> first row of every valid file
    doubled: list[tuple[str, str]] = field(default_factory=list)  # (first, second) file names of one run


def scan(out: Path, expected: Iterable[str]) -> ExistingResults:
    """Classify the files in ``out/raw`` against the expected run ids (each run file verified on its own by
    :func:`read_run_file`). A second file of one run (``<id>.csv`` beside ``<id>.csv.gz``) is bad: it would
    count the run twice (``doubled`` names both; :func:`pebench.plan.runner.run_sweep` refuses the folder).

    Leftover temporary files that a killed sweep of this user left (named as :func:`write_bytes_atomic` names
    those of run files, :data:`RUN_TEMP_FILE`, the very files it made: :func:`left_by_this_user`) are removed
    (call it only while holding :func:`lock_folder`, as :func:`pebench.plan.runner.run_sweep` does: they may be
    another sweep's files in flight otherwise); every other file is left untouched.
    """
    expected = set(expected)
    found = ExistingResults(complete=set(), retry=set(), bad={})
    names: dict[str, str] = {}  # run id -> the name of its valid file
    folder = refuse_link(raw_dir(out))
    if not folder.is_dir():
        return found
    _remove_own_leftovers(folder)
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        run_id, frame, problem = _scanned(path)
        if problem:
            found.bad[path.name] = problem
            continue
        if run_id in found.configs:
            found.bad[path.name] = f"a second file of run {run_id}"
            found.doubled.append((names[run_id], path.name))
            continue
        found.configs[run_id] = frame.iloc[0].to_dict()
        names[run_id] = path.name
        if run_id not in expected:
            continue  # a valid run of another configuration: kept, not part of this sweep
        if not completed(frame).all():
            found.retry.add(run_id)
        else:
            found.complete.add(run_id)
    return found


def _remove_own_leftovers(folder: Path) -> None:
    """Remove the temporary run files a killed sweep of this user left in ``folder`` (:func:`scan`)."""
    for tmp in folder.glob(".*.tmp"):
        match = RUN_TEMP_FILE.fullmatch(tmp.name)
        if match and left_by_this_user(tmp, match["target"]):
            own_files.remove_leftover(tmp)


def _scanned(path: Path) -> tuple[str | None, pd.DataFrame | None, str | None]:
    """One entry of a raw folder as :func:`scan` classifies it: its run id and rows, or why it is a bad file."""
    if path.is_dir():
        return None, None, "a folder, not a run file"
    run_id = run_file_id(path)
    if run_id is None:
        return None, None, "not a run file (.csv.gz or .csv)"
    try:
        frame = read_run_file(path)
    except (ResultsError, OSError) as exc:
        return None, None, str(exc).splitlines()[0].removeprefix(f"{path}: ")
    if frame["run_id"].iloc[0] != run_id:
        return None, None, f"its run_id {frame['run_id'].iloc[0]} does not match the file name"
    return run_id, frame, None


def check_same_plugins(out: Path) -> None:
    """Refuse to add runs to ``out`` with plugin code other than an earlier sweep there loaded: a plugin is its
    content (the SHA-256 of its file the manifest records), wherever it lies, so an edited copy at another path is
    another version, as is an edited file at the same path. The folder's runs would be made by two versions of that
    code when a plugin an earlier sweep loaded is not loaded now, as it was, while a plugin is loaded now that no
    earlier sweep loaded (or the same plugin key is loaded with other content). Resuming without the plugins at all
    (only built-in entries) stays allowed.

    Raises:
        ResultsError: one line naming the plugin and what to do.
    """
    manifest = read_manifest(out) or {}
    now = {record["sha256"]: record["plugin"] for record in plugin_records() if record["sha256"]}
    then: dict[str, str] = {}  # SHA-256 -> plugin key, of every plugin an earlier sweep here loaded
    for invocation in manifest.get("invocations", []):
        records = invocation.get("plugins") if isinstance(invocation, dict) else None
        for record in records if isinstance(records, list) else []:
            key, sha = (record.get("plugin"), record.get("sha256")) if isinstance(record, dict) else (None, None)
            if isinstance(key, str) and isinstance(sha, str) and sha:
                then.setdefault(sha, key)
    missing = {sha: key for sha, key in then.items() if sha not in now}
    added = {sha: key for sha, key in now.items() if sha not in then}
    if missing and added:
        sha, key = next(iter(missing.items()))
        new_sha, new_key = next(((s, k) for s, k in added.items() if k == key), next(iter(added.items())))
        what = "changed since" if new_key == key else f"(SHA-256 {new_sha[:12]}) is not the code"
        raise ResultsError(f"plugin {_shown(new_key)} {what} an earlier sweep in {out} loaded it (SHA-256 "
                           f"{sha[:12]} then, {new_sha[:12]} now{'' if new_key == key else f', at {_shown(key)}'}): "
                           "a plugin is its content, wherever it lies; restore that version to resume, or choose "
                           "another --out")


def _shown(text: str) -> str:
    """A plugin key from a manifest, as terminal text (escaped, shortened)."""
    return ascii(text[:200])[1:-1]


@contextlib.contextmanager
def lock_folder(out: Path) -> Iterator[None]:
    """Hold an exclusive OS lock (``flock``) on ``<out>/.lock`` for the duration: one sweep at a time per
    results folder. The lock is released when the process ends, however it ends. The lock file is opened
    without following a symbolic link (``O_NOFOLLOW``) and refused when it is a hard link (more than one name):
    a link there would make the sweep truncate its target.

    Raises:
        FolderLockError: another process holds it (the message names it), or ``.lock`` is a link (symbolic or
            hard) or not a file.
    """
    import fcntl

    path = Path(out) / ".lock"
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError:
        if path.is_symlink():
            raise FolderLockError(f"{path} is a symbolic link; pebench never follows a link in a results folder: "
                                  "remove it and run again") from None
        raise
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        raise FolderLockError(f"{path} is not a plain file; move it away and run again")
    if status.st_nlink != 1:  # a hard link: truncating the lock would empty the file it shares its data with
        os.close(descriptor)
        raise FolderLockError(f"{path} is a hard link to another file ({status.st_nlink} names); pebench never "
                              "writes through a link in a results folder: remove it and run again")
    with open(descriptor, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FolderLockError(f"{out} is in use by another pebench run ({holder}); wait for it to finish, "
                                  "or choose another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {platform.node()}, since "
                     f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`), for the manifest:
    two machines give bit-identical rows only with the same CPU kernels, which "same machine" means."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_manifest(
    out: Path, suite: str, n_runs: int, device: str, executor: str, workers: int, compile: bool = False,
    threads: int | None = None, experiments: Sequence[str] = (), to_make: int | None = None,
    report_declarations: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Record this invocation in ``out/manifest.json`` (earlier invocations are kept); call it while holding
    :func:`lock_folder`. A manifest missing from a folder that already holds runs is recreated with a
    warning and ``"recreated": true`` (what made the earlier runs is then unknown).

    ``experiments``: the experiments whose runs the invocation was given; ``to_make``: how many of its
    ``n_runs`` were not in the folder yet; ``report_declarations``: how each experiment's results are reported
    (:func:`pebench.plan.experiment.report_declarations`), kept per experiment under the manifest's
    ``report_declarations`` so that a report of the folder needs no experiment script (the latest sweep's
    declaration of an experiment replaces an earlier one). :func:`finish_manifest` adds how it ended."""
    import pandas as pd

    path = Path(out) / "manifest.json"
    manifest = read_manifest(out)
    if manifest is None:
        manifest = {"suite": suite, "invocations": []}
        held = raw_files(raw_dir(out))
        if held:
            log.warning("%s is missing but %s already holds %d run files; a new manifest records this invocation "
                        "only (the software that made the earlier runs is unknown)", path, raw_dir(out), len(held))
            manifest["recreated"] = True
    entry = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **git_state(),
        "pebench_version": pebench.__version__,
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,  # the statistics and reports are computed with these two
        "pandas_version": pd.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(),
        # the SIMD kernels torch dispatches to (e.g. AVX2, AVX512): float results can differ between them
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "executor": executor,
        "workers": workers,
        "compile": compile,
        "torch_threads": threads if threads is not None else torch.get_num_threads(),
        "n_runs": n_runs,
        "experiments": sorted(set(experiments)),
        "runs_to_make": n_runs if to_make is None else to_make,
        "plugins": plugin_records(),  # each --plugin / entry-point plugin: path and SHA-256 as loaded
    }
    manifest["suite"] = suite
    if report_declarations:
        recorded = manifest.get("report_declarations")
        manifest["report_declarations"] = {**(recorded if isinstance(recorded, dict) else {}),
                                           **{name: dict(record) for name, record in report_declarations.items()}}
    manifest.setdefault("invocations", []).append(entry)
    manifest["latest"] = entry
    write_text_atomic(path, json.dumps(manifest, indent=2) + "\n")
    return entry


def finish_manifest(out: Path, entry: dict[str, Any], ended: Mapping[str, Any]) -> dict[str, Any] | None:
    """Add to the manifest's record of this invocation (``entry``, the last one, written by
    :func:`write_manifest` under the same lock, or returned by an earlier call) what the runner records of it:
    as it goes, its wall time and the runs it wrote so far, so that a sweep killed without ending still says how
    long it ran; at its end those again with ``complete``, ``interrupted`` or ``error`` and how many of its runs
    it planned to train seed-batched (:func:`pebench.plan.runner.run_sweep`). Fields already there keep their place and
    take the new value; new ones are appended in the order of ``ended``. The Replications page reports them as
    compute, the report's provenance per machine.

    Returns:
        The entry as now recorded, for the next call; ``None`` when the manifest's last record is no longer
        ``entry`` (another writer changed it: left as it is, with a warning).
    """
    path = Path(out) / "manifest.json"
    manifest = read_manifest(out)
    if manifest is None or not manifest.get("invocations") or manifest["invocations"][-1] != entry:
        log.warning("%s changed during the sweep; its wall time is not recorded", path)
        return None
    entry = {**entry, **ended}
    manifest["invocations"][-1] = entry
    manifest["latest"] = entry
    write_text_atomic(path, json.dumps(manifest, indent=2) + "\n")
    return entry


