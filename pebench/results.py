"""Load and validate run files; aggregate them per run, across seeds, and compare encodings.

A suite folder holds ``raw/<run_id>.csv.gz`` (one tidy CSV per run, one row per
evaluation length, condition and variant, gzip-compressed: :data:`RUN_FILE_SUFFIX`; plain ``.csv`` run
files, as pebench wrote before and as a user may write by hand, are read alike) and ``manifest.json``.
:func:`load` reads every run file, checks the schema and returns one
DataFrame. Every file is verified complete on its own (:func:`read_run_file`):
it ends with a newline, every row has every field, its rows are exactly the
lengths x conditions x variants its ``eval_*`` columns declare (one row for a
failed run), and the checksum in its last column (:data:`CHECKSUM_COLUMN`,
written since pebench checks it) matches its other fields; a truncated or
edited file is named and never counted. A folder holds one suite and
protocol: :func:`load` refuses a folder whose runs of one cell differ in
anything but the seed (:func:`mixed_configurations`), so such runs are never
pooled as seeds. Everything else is computed from those raw rows:

* :func:`run_metrics` — one row per run and evaluation variant: ``id_*``
  (mean over evaluated lengths <= ``train_max_len``), ``ood_*`` (unweighted
  mean over lengths > ``train_max_len``, Deletang et al. 2023), extrapolation
  ratio, generalization length, order reliance / invariance gap,
  equivariance gaps, perplexities;
* :func:`aggregate` — across seeds: mean, standard deviation, 95% confidence
  interval, best-of-seeds and counts of completed, diverged and failed runs;
* :func:`curves` — the same statistics per evaluation length (for figures);
* :func:`compare_to_best` — which encodings are the best per task, and which
  are not significantly worse than it.

Statistics (see also the protocol page of the docs):

* 95% CI: the half-width ``t(0.975, n - 1) * sd / sqrt(n)`` of a Student-t
  interval over seeds, ``sd`` the sample standard deviation (ddof = 1);
  undefined (NaN) with fewer than two seeds.
* Diverged runs were evaluated, so their numbers count (divergence is a
  property of the encoding); failed runs have no numbers: they are counted
  (``n_failed``) and listed, never averaged as zeros and never hidden.
* Comparison with the best: one-sided Welch t-test (unequal variances;
  suited to the 3-10 seeds of the suites) of ``best > other`` for each other
  encoding of a task, p-values Holm-corrected over those comparisons;
  "not significantly worse" means an adjusted p >= 0.05. With fewer than two
  seeds on a side no test is possible and only the best is marked.
"""

from __future__ import annotations

import collections
import csv
import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.experiment import BASE_VARIANT, KEYS

#: columns every row has, whatever its status
IDENTITY_COLUMNS = (
    "suite", "experiment", "task", "task_version", "encoding", "encoding_options", "arch",
    "d_model", "n_layers", "n_heads", "train_max_len", "steps", "lr", "batch_size", "seed",
    "status", "run_id", "pebench_version",
)
#: columns rows of completed (ok or diverged) runs also have
METRIC_COLUMNS = (
    "eval_len", "condition", "variant", "token_acc", "seq_acc", "loss", "n", "chance_token_acc",
    "params", "train_seconds",
)
STATUSES = ("ok", "diverged", "failed")

#: what makes a cell: one configuration whose seeds are aggregated
CELL_COLUMNS = (
    "experiment", "task", "task_version", "arch", "encoding", "encoding_options", "variant", "train_max_len",
)
#: cells compared with each other (encodings, and RoPE-scaling variants) share these
GROUP_COLUMNS = ("experiment", "task", "task_version", "arch", "train_max_len")
#: what distinguishes the contenders inside a group
CONTENDER_COLUMNS = ("encoding", "encoding_options", "variant")

#: a run whose ID sequence accuracy is below this has no generalization length (nothing to stay close to)
GENERALIZATION_MIN_ID_SEQ_ACC = 0.1
#: fraction of the ID sequence accuracy a length must keep to count as generalized
GENERALIZATION_FRACTION = 0.9
#: significance level of :func:`compare_to_best`
ALPHA = 0.05


#: columns that can look numeric but are text (run id "3e69517866536022" would parse as inf)
TEXT_COLUMNS = ("run_id", "pebench_version", "commit", "error", "rows_sha256")
#: last column of a run file: SHA-256 of its header and rows without this column (:func:`rows_checksum`)
CHECKSUM_COLUMN = "rows_sha256"
#: the configuration of a run: runs of one cell must agree on all of these but the seed
CONFIG_COLUMNS = tuple(sorted({"suite", "experiment", "task_version", *KEYS} - {"seed"}))
#: how many cells of mixed configurations a one-line error names before it says how many more there are (bad
#: files are all named)
NAMED_CELLS = 3

#: what a name in a run file (suite, experiment, task, arch, each part of an encoding) may be: letters, digits,
#: ``_``, ``-`` and ``.``, not first; a folder may come from anyone, and names become file names in reports
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
#: the pattern each name column of a run file must match in full; a run id is 16 lowercase hex digits
#: (:attr:`pebench.experiment.RunSpec.run_id`)
NAME_COLUMNS = {
    "suite": re.compile(NAME_PATTERN), "experiment": re.compile(NAME_PATTERN), "task": re.compile(NAME_PATTERN),
    "arch": re.compile(NAME_PATTERN), "encoding": re.compile(rf"{NAME_PATTERN}(:{NAME_PATTERN})*"),
    "run_id": re.compile(r"[0-9a-f]{16}"),
}
#: a file name a command builds from names read from a folder: one plain path component
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: the most bytes one file of a results folder (a run file, decompressed, or a manifest) may hold: 64 MiB, 1500
#: times the largest committed run file (43 kB decompressed); a folder may come from anyone, and a small gzip
#: file can expand to gigabytes
MAX_FILE_BYTES = 64 * 2**20


class ResultsError(ValueError):
    """A results file or folder that does not follow the schema."""


# --------------------------------------------------------------------------- loading


def validate_frame(frame: pd.DataFrame, source: str | Path = "<frame>") -> pd.DataFrame:
    """Check that ``frame`` follows the result schema; return it unchanged.

    Raises:
        ResultsError: naming ``source`` and what is wrong (missing columns,
            unknown status, metrics out of range).
    """
    _check_columns(frame, source)
    _check_values(frame, source)
    return frame


def _check_columns(frame: pd.DataFrame, source: str | Path) -> None:
    if frame.empty:
        raise ResultsError(f"{source}: no rows")
    missing = [c for c in IDENTITY_COLUMNS if c not in frame.columns]
    if missing:
        raise ResultsError(f"{source}: not a pebench result file, missing column(s) {', '.join(missing)}")
    bad_status = sorted(set(frame["status"]) - set(STATUSES), key=str)
    if bad_status:
        raise ResultsError(f"{source}: unknown status value(s) {bad_status}; valid: {', '.join(STATUSES)}")
    if (frame["status"] != "failed").any():
        missing = [c for c in METRIC_COLUMNS if c not in frame.columns]
        if missing:
            raise ResultsError(f"{source}: completed run without metric column(s) {', '.join(missing)}")


def _check_values(frame: pd.DataFrame, source: str | Path) -> None:
    completed = frame[frame["status"] != "failed"]
    if completed.empty:
        return
    for column in ("token_acc", "seq_acc"):
        values = pd.to_numeric(completed[column], errors="coerce")
        if values.isna().any() or ((values < 0) | (values > 1)).any():
            raise ResultsError(f"{source}: {column} must be a number in [0, 1]")
    for column in ("eval_len", "train_max_len", "loss"):
        if pd.to_numeric(completed[column], errors="coerce").isna().any():
            raise ResultsError(f"{source}: {column} must be a number in every row of a completed run")


def read_run_csv(path: str | Path | io.StringIO) -> pd.DataFrame:
    """Read one run CSV with :data:`TEXT_COLUMNS` as text (not validated; see :func:`read_run_file`)."""
    return pd.read_csv(path, dtype=dict.fromkeys(TEXT_COLUMNS, str))


def rows_checksum(records: Sequence[Sequence[str]]) -> str:
    """SHA-256 (hex) of a run file's header and rows, each a list of the fields as written, without the
    :data:`CHECKSUM_COLUMN` field."""
    digest = hashlib.sha256()
    for record in records:
        digest.update("\x1f".join(record).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


def run_file_text(rows: Sequence[dict]) -> str:
    """The CSV text of a run file: ``rows`` with a last column :data:`CHECKSUM_COLUMN` (the same value in
    every row) that lets :func:`read_run_file` verify the file on its own."""
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
    name = Path(path).name
    if name.startswith("."):
        return None
    return next((suffix for suffix in RUN_FILE_SUFFIXES if name.endswith(suffix) and len(name) > len(suffix)),
                None)


def run_file_id(path: str | Path) -> str | None:
    """The run id a run file's name gives (its name without :data:`RUN_FILE_SUFFIXES`), or ``None`` when
    the name is not a run file's (:func:`run_file_suffix`)."""
    suffix = run_file_suffix(path)
    return None if suffix is None else Path(path).name[: -len(suffix)]


def raw_files(folder: str | Path) -> list[Path]:
    """The run files directly in ``folder`` (names :func:`run_file_id` accepts), sorted by name; empty when the
    folder does not exist."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if run_file_id(path) is not None)


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
    with os.fdopen(handle, "rb") as stream:
        mode = os.fstat(stream.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise ResultsError(f"{path}: a folder, not a {what}")
        if not stat.S_ISREG(mode):
            raise ResultsError(f"{path}: not a regular file, not a {what}")
        return _bounded(stream, path, what)


def _bounded(stream: io.BufferedIOBase, path: Path, what: str) -> bytes:
    """At most :data:`MAX_FILE_BYTES` of ``stream`` (a file, or a gzip stream decompressing one)."""
    data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ResultsError(f"{path}: more than the {MAX_FILE_BYTES / 2**20:g} MiB a {what} may hold"
                           f"{' decompressed' if path.name.endswith('.gz') else ''} (pebench writes files of a "
                           "few kB); move it away")
    return data


def read_run_text(path: str | Path) -> str:
    """The CSV text of a run file, decompressed when its name ends in ``.gz``; a symbolic link is refused
    (:func:`read_plain_file`).

    Raises:
        ResultsError: ``path``: not a text file, a folder, a link, or a damaged or truncated gzip stream, on one
            line.
    """
    path = Path(path)
    data = read_plain_file(path)
    if path.name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:  # read in bounded steps: never a zip bomb
                data = _bounded(stream, path, "run file")
        except EOFError:
            raise ResultsError(f"{path}: truncated (its gzip stream ends early)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise ResultsError(f"{path}: not a readable gzip file ({exc})") from None
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ResultsError(f"{path}: not a text file") from None


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
    path = Path(path)
    text = read_run_text(path)
    if not text.strip():
        raise ResultsError(f"{path}: empty file")
    if not text.endswith("\n"):
        raise ResultsError(f"{path}: truncated (its last line is incomplete)")
    try:
        records = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise ResultsError(f"{path}: unreadable CSV ({exc})") from None
    header = records[0]
    for number, record in enumerate(records[1:], start=2):
        if len(record) != len(header):
            raise ResultsError(f"{path}: truncated or edited (row {number - 1} has {len(record)} of the header's "
                               f"{len(header)} fields)")
    if header[-1] == CHECKSUM_COLUMN:
        written = {record[-1] for record in records[1:]}
        if written != {rows_checksum([record[:-1] for record in records])}:
            raise ResultsError(f"{path}: edited or damaged (its {CHECKSUM_COLUMN} does not match its rows)")
    try:
        frame = read_run_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ResultsError(f"{path}: unreadable CSV ({str(exc).splitlines()[0]})") from None
    validate_frame(frame, path)
    # on the fields as written (one set per column), not pandas' nunique per column: this runs for every file
    # of a folder and was most of `pebench show`'s time after parsing
    same = {name: len({record[k] for record in records[1:]}) == 1 for k, name in enumerate(header)}
    varying = [c for c in (*IDENTITY_COLUMNS, *CONFIG_COLUMNS) if c in frame and not same[c]]
    if varying:
        raise ResultsError(f"{path}: its rows differ in {', '.join(varying)} (one file holds one run)")
    _check_names(frame.iloc[0], path)
    _check_rows(frame, path)
    return frame


def _check_names(first: pd.Series, path: Path) -> None:
    """Refuse a run file whose names (:data:`NAME_COLUMNS`) are not of the form pebench writes: they become
    file names and terminal text, and a folder may come from anyone."""
    for column, pattern in NAME_COLUMNS.items():
        value = str(first[column])
        if not pattern.fullmatch(value):
            what = "16 lowercase hex digits" if column == "run_id" else "letters, digits, '_', '-' and '.'"
            raise ResultsError(f"{path}: its {column} {value!r} is not a name pebench writes ({what}); move the "
                               "file away (it may have been crafted)")


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


def expected_rows(first: pd.Series) -> set[tuple[int, str, str]] | None:
    """The (eval_len, condition, variant) rows a completed run declares in its ``eval_*`` columns (``None``
    when its file lacks them)."""
    if not all(c in first.index for c in ("eval_lengths", "eval_conditions")):
        return None
    try:
        lengths, conditions = json.loads(first["eval_lengths"]), json.loads(first["eval_conditions"])
    except (TypeError, ValueError):
        return None
    variants = _variant_labels(first.get("eval_variants"))
    return {(int(length), str(c), str(v)) for length in lengths for c in conditions for v in variants}


def _check_rows(frame: pd.DataFrame, path: Path) -> None:
    if (frame["status"] == "failed").all():
        if len(frame) != 1:
            raise ResultsError(f"{path}: a failed run has one row, this file has {len(frame)}")
        return
    expected = expected_rows(frame.iloc[0])
    if expected is None:
        return
    variant = frame["variant"].fillna(BASE_VARIANT) if "variant" in frame else pd.Series(BASE_VARIANT, frame.index)
    condition = frame["condition"] if "condition" in frame else pd.Series("original", frame.index)
    found = list(zip(pd.to_numeric(frame["eval_len"]).astype(int), condition, variant, strict=True))
    if len(found) != len(expected) or set(found) != expected:
        raise ResultsError(f"{path}: incomplete or edited ({len(set(found) & expected)} of the {len(expected)} rows "
                           "its eval_lengths x eval_conditions x eval_variants declare)")


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


def read_manifest(folder: str | Path) -> dict | None:
    """The ``manifest.json`` of a results folder (``None`` when it has none), read without following a link.

    Raises:
        ResultsError: it is a link, not JSON, or not of the manifest's shape (an object with a text ``suite``,
            a list of ``invocations``, an object ``latest`` if any, and if combined, a list of ``sources``
            objects whose ``manifest`` is an object or null), on one line.
    """
    path = Path(folder) / "manifest.json"
    if not path.exists() and not path.is_symlink():
        return None
    try:
        manifest = json.loads(read_plain_file(path, "manifest"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path} is not valid JSON ({exc}); move it away to continue") from None
    if not (isinstance(manifest, dict) and isinstance(manifest.get("suite", ""), str)
            and isinstance(manifest.get("invocations", []), list)
            and isinstance(manifest.get("latest") or {}, dict) and _combined_shape(manifest.get("combined"))):
        raise ResultsError(f"{path} is not a pebench manifest (expected an object with 'suite' and a list of "
                           "'invocations'); move it away to continue")
    return manifest


def _combined_shape(combined: object) -> bool:
    """Whether a manifest's ``combined`` entry (:mod:`pebench.combine`) is absent or of its shape."""
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

    Every file is verified on its own (:func:`read_run_file`) and the runs must
    form one suite and protocol (:func:`mixed_configurations`). A process that loads one folder again
    (a docs build reads each several times) gets a copy of the first load's rows as long as the folder holds the
    same files, none replaced or written since (:func:`files_fingerprint`); otherwise the files are read and
    verified again.

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
        data = _load_files(paths)
        _LOADED[key] = data
        while len(_LOADED) > _LOADED_FOLDERS:
            _LOADED.popitem(last=False)
    else:
        _LOADED.move_to_end(key)
    data = data.copy()
    if not include_failed:
        data = data[data["status"] != "failed"].reset_index(drop=True)
    return data


def files_fingerprint(paths: Sequence[Path]) -> tuple[tuple[str, int, int, int, int], ...]:
    """(absolute path, inode, size, modification and change time in ns) of each file: equal only for the same
    files, neither replaced (a new inode) nor written (new times) in between."""
    stats = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:  # gone since it was listed: reading it names it
            stats.append((str(path.resolve()), -1, -1, -1, -1))
            continue
        stats.append((str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
    return tuple(stats)


#: the rows of the folders :func:`load` read last, by the :func:`files_fingerprint` of their files; never changed
#: in place (``load`` returns copies)
_LOADED: collections.OrderedDict[tuple, pd.DataFrame] = collections.OrderedDict()
_LOADED_FOLDERS = 8


def _load_files(paths: Sequence[Path]) -> pd.DataFrame:
    """The verified rows of the run files ``paths`` (:func:`load` without its cache); errors are raised, never
    kept."""
    frames, bad, files = [], [], {}
    for path in paths:
        try:
            frame = read_run_file(path)
        except ResultsError as exc:
            bad.append(str(exc).splitlines()[0])
            continue
        run_id = frame["run_id"].iloc[0]
        if run_id in files:  # a copy under another name would count one run twice
            bad.append(f"{path}: run {run_id} again (also in {files[run_id].name})")
            continue
        files[run_id] = path
        frames.append(frame)
    if bad:
        raise ResultsError(f"{len(bad)} bad result file(s), never counted; move them away (pebench run reruns "
                           f"their runs): {'; '.join(bad)}")
    data = pd.concat(frames, ignore_index=True, sort=False)
    mixed = mixed_configurations(data)
    if mixed:
        raise ResultsError(f"{paths[0].parent}: runs of one cell differ in more than the seed ({named(mixed)}); a "
                           "results folder holds one suite and protocol: move one configuration's runs to another "
                           "folder")
    return data


# --------------------------------------------------------------------------- per run


def order_dependent(task: str) -> bool | None:
    """Whether ``task`` is order-dependent (``None`` for a task not registered in this install)."""
    from pebench import tasks

    try:
        return bool(tasks.TASKS.meta(task)["order_dependent"])
    except KeyError:
        return None


def generalization_length(
    lengths: Sequence[int], seq_acc: Sequence[float], id_seq_acc: float,
    fraction: float = GENERALIZATION_FRACTION, min_id: float = GENERALIZATION_MIN_ID_SEQ_ACC,
) -> float:
    """Largest evaluated length L such that every evaluated length <= L keeps ``seq_acc >= fraction * id_seq_acc``.

    ``0`` when already the shortest evaluated length falls below the bar;
    NaN when ``id_seq_acc < min_id`` (a run that does not fit its training
    lengths has no generalization to measure).
    """
    if not np.isfinite(id_seq_acc) or id_seq_acc < min_id:
        return float("nan")
    bar = fraction * id_seq_acc
    reached = 0
    for length, acc in sorted(zip(lengths, seq_acc, strict=True)):
        if acc < bar:
            break
        reached = length
    return float(reached)


def _variant_labels(eval_variants: object) -> list[str]:
    """Evaluation variants of a run from its ``eval_variants`` JSON (failed runs have no ``variant`` rows)."""
    labels = [BASE_VARIANT]
    if isinstance(eval_variants, str) and eval_variants.strip():
        try:
            labels += [label for label, _options in json.loads(eval_variants)]
        except (ValueError, TypeError):
            pass
    return labels


def run_metrics(data: pd.DataFrame) -> pd.DataFrame:
    """One row per run and evaluation variant with every run metric of :mod:`pebench.metrics`.

    ID/OOD means use the ``original`` condition. ``order_reliance`` (ID token
    accuracy on original minus shuffled inputs, at the lengths evaluated
    shuffled) is set on order-dependent tasks, ``invariance_gap`` (the same
    difference) on order-invariant ones. Perplexity is ``exp`` of the mean
    loss per output token (nats); ``train_perplexity`` is at the longest
    evaluated length <= ``train_max_len`` and ``perplexity_ratio`` is
    ``ood_perplexity / train_perplexity``. Failed runs appear once per variant
    they would have had, with ``status="failed"`` and NaN metrics. Derived
    metrics (registered with a function) are computed in registration order.
    """
    if data.empty:
        raise ResultsError("no result rows to aggregate")
    keys = ["run_id", "variant"]
    completed = data[data["status"] != "failed"].copy()
    completed["variant"] = completed["variant"].fillna(BASE_VARIANT) if "variant" in completed else BASE_VARIANT
    if "condition" not in completed.columns:
        completed["condition"] = "original"
    completed["is_id"] = completed["eval_len"] <= completed["train_max_len"]
    info_columns = [c for c in (*CELL_COLUMNS, "seed", "status", "params", "encoding_params", "train_seconds",
                                "final_train_loss", "equivariance_gap_init", "equivariance_gap_trained", "steps",
                                "train_min_len", "steps_to_fit", "steps_done", "fit_token_acc", "stop_reason")
                    if c in completed.columns and c not in keys]
    runs = completed.groupby(keys, sort=False)[info_columns].first()
    original = completed[completed["condition"] == "original"].sort_values("eval_len")
    measured = [c for c in ("token_acc", "seq_acc", "loss", "chance_token_acc", "floor_token_acc", "floor_seq_acc")
                if c in original.columns]
    for prefix, part in (("id", original[original["is_id"]]), ("ood", original[~original["is_id"]])):
        means = part.groupby(keys)[measured].mean()
        runs = runs.join(means.rename(columns=lambda c, p=prefix: f"{p}_{c}"))
    runs["fitted"] = completed.groupby(keys, sort=False)["fitted"].first().map(_flag) if "fitted" in completed \
        else float("nan")
    runs["generalization_length"] = _generalization_lengths(original, runs["id_seq_acc"], keys)
    at_train = original[original["is_id"]].groupby(keys)["loss"].last()
    runs["train_perplexity"] = np.exp(at_train)
    for metric in metric_registry.derived():
        runs[metric.name] = metric.compute(runs)
    shuffled = completed[(completed["condition"] == "shuffled") & completed["is_id"]]
    paired = original.merge(shuffled[[*keys, "eval_len"]], on=[*keys, "eval_len"])
    runs["shuffled_token_acc"] = shuffled.groupby(keys)["token_acc"].mean()
    effect = paired.groupby(keys)["token_acc"].mean().reindex(runs.index) - runs["shuffled_token_acc"]
    runs = runs.reset_index()
    failed = _failed_runs(data)
    runs = pd.concat([runs, failed], ignore_index=True) if not failed.empty else runs
    for column in metric_registry.directions("run"):
        if column not in runs.columns:
            runs[column] = float("nan")
    effect = runs.set_index(keys).index.map(effect.to_dict()).to_numpy(dtype=float, na_value=np.nan)
    dependent = runs["task"].map(order_dependent)
    runs["order_dependent"] = dependent
    runs["order_reliance"] = np.where(dependent == True, effect, np.nan)  # noqa: E712 (None -> NaN)
    runs["invariance_gap"] = np.where(dependent == False, effect, np.nan)  # noqa: E712
    return runs.sort_values([*CELL_COLUMNS, "seed"], key=sort_key).reset_index(drop=True)


def _flag(value: object) -> float:
    """A ``fitted`` cell as read from a CSV (True/False, "True"/"False", empty) -> 1.0, 0.0 or NaN."""
    if isinstance(value, str):
        value = {"true": True, "false": False}.get(value.strip().lower())
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return float("nan")
    return float(bool(value))


def _generalization_lengths(original: pd.DataFrame, id_seq_acc: pd.Series, keys: list[str]) -> pd.Series:
    """:func:`generalization_length` of every run (``original`` sorted by ``eval_len``)."""
    lengths = original["eval_len"].to_numpy()
    accuracy = original["seq_acc"].to_numpy(dtype=float)
    values = {
        key: generalization_length(lengths[index], accuracy[index], id_seq_acc.get(key, float("nan")))
        for key, index in original.groupby(keys).indices.items()
    }
    return pd.Series(values, dtype=float).reindex(id_seq_acc.index)


def _failed_runs(data: pd.DataFrame) -> pd.DataFrame:
    """One metric-less row per failed run and variant it would have had."""
    records = []
    for run_id, rows in data[data["status"] == "failed"].groupby("run_id", sort=False):
        first = rows.iloc[0]
        for variant in _variant_labels(first.get("eval_variants")):
            record = {c: first[c] for c in CELL_COLUMNS if c != "variant"}
            record.update(run_id=run_id, variant=variant, seed=first["seed"], status="failed",
                          error=first.get("error"), steps=first["steps"],
                          train_min_len=first.get("train_min_len", float("nan")))
            records.append(record)
    return pd.DataFrame.from_records(records)


def sort_key(column: pd.Series) -> pd.Series:
    """Sort encodings in their canonical order (:func:`encoding_rank`), order-dependent tasks before the
    controls, the trained model before its evaluation variants (which keep the order their experiment
    declares them in, i.e. the order of first appearance in ``column``), everything else naturally."""
    if column.name == "encoding":
        return column.map(encoding_rank)
    if column.name == "task":  # order-dependent tasks first, then the controls
        return column.map(lambda task: (order_dependent(task) is False, task))
    if column.name == "variant":
        order = {v: i for i, v in enumerate(dict.fromkeys([BASE_VARIANT, *column]))}
        return column.map(order)
    return column


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (an escape sequence's ESC,
    other control characters) is shown escaped, as Python writes it (``\\x1b``); line breaks are kept. Text
    read from a results folder may come from anyone."""
    return "".join(ch if ch.isprintable() or ch == "\n" else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))


def encoding_label(name: str) -> str:
    """Display name of an encoding for rendered text (tables, findings, figures): its registered ``label``
    (:meth:`pebench.registry.Registry.label`), each part of a wrapped name (``randomized:<base>``) labelled
    alike; a name that is not registered (a plugin not loaded here) is shown as it is. CSVs keep the name."""
    from pebench.encodings import ENCODINGS

    return ":".join(ENCODINGS.label(part) if part in ENCODINGS else part for part in str(name).split(":"))


def encoding_labels(names: Sequence[str], empty: str = "no encoding") -> str:
    """``names`` as display labels joined by commas, or ``empty`` when there are none (never a bare "none")."""
    return ", ".join(encoding_label(name) for name in names) or empty


def encoding_rank(name: str) -> tuple[int, str]:
    """Sort key putting the compared encodings in their canonical order, then any others by name."""
    from pebench.protocol import COMPARED_ENCODINGS

    order = list(COMPARED_ENCODINGS)
    return (order.index(name), "") if name in order else (len(order), str(name))


# --------------------------------------------------------------------------- across seeds


def t_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean (NaN with fewer than 2 values)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return float("nan")
    sd = values.std(ddof=1)
    return float(stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * sd / math.sqrt(len(values)))


def seed_statistics(values: Sequence[float] | np.ndarray, higher_is_better: bool | None = None) -> dict[str, float]:
    """``mean``, ``std`` (ddof=1), ``ci95`` (t half-width), ``best`` (best of seeds) and ``n`` of finite values."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    n = len(values)
    if n == 0:
        return {"mean": float("nan"), "std": float("nan"), "ci95": float("nan"), "best": float("nan"), "n": 0}
    best = float("nan") if higher_is_better is None else float(values.max() if higher_is_better else values.min())
    return {
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if n > 1 else float("nan"),
        "ci95": t_interval(values),
        "best": best,
        "n": n,
    }


def grouped_statistics(
    frame: pd.DataFrame, keys: Sequence[str], metrics: dict[str, bool | None]
) -> pd.DataFrame:
    """:func:`seed_statistics` of every metric per group of ``keys`` (vectorized; NaNs ignored).

    ``metrics`` maps each column to higher-is-better (``None``: no best-of-seeds).
    """
    from scipy import stats

    grouped = frame.groupby(list(keys), sort=False, dropna=False)[list(metrics)]
    values = grouped.agg(["mean", "std", "count", "max", "min"])
    out = {}
    for metric, higher in metrics.items():
        n = values[(metric, "count")]
        std = values[(metric, "std")].where(n > 1)
        t = pd.Series(stats.t.ppf(0.975, np.maximum(n - 1, 1)), index=n.index)
        out[f"{metric}_mean"] = values[(metric, "mean")]
        out[f"{metric}_std"] = std
        out[f"{metric}_ci95"] = t * std / np.sqrt(n)
        best = values[(metric, "max" if higher else "min")] if higher is not None else np.nan
        out[f"{metric}_best"] = best
        out[f"{metric}_n"] = n
    return pd.DataFrame(out, index=values.index)


def aggregate(runs: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Across seeds: one row per cell (:data:`CELL_COLUMNS`) from :func:`run_metrics` output.

    Columns ``<metric>_mean``, ``_std``, ``_ci95``, ``_best`` (best of seeds,
    only for metrics with a direction, else NaN) and ``_n``, plus ``n_runs``,
    ``n_seeds`` (completed runs, ok or diverged), ``n_diverged``, ``n_failed``,
    ``failed_seeds``, ``order_dependent`` and ``steps``. Metrics that judge a trained model
    (``needs_fit`` in :mod:`pebench.metrics`: OOD accuracy, order reliance, ...) are computed over the
    seeds that fitted (``fitted_mean`` is the fraction); ``judged`` is False for a cell with no fitted
    seed, whose numbers are then those of all its seeds and must be shown as not fitted.
    """
    keys = list(CELL_COLUMNS)
    directions = metric_registry.directions("run")
    metrics = {m: directions.get(m) for m in (metrics or directions)}
    flags = runs.assign(
        n_runs=1,
        n_seeds=runs["status"] != "failed",
        n_diverged=runs["status"] == "diverged",
        n_failed=runs["status"] == "failed",
    )
    grouped = flags.groupby(keys, sort=False, dropna=False)
    status = grouped[["n_runs", "n_seeds", "n_diverged", "n_failed"]].sum().astype(int)
    status = status.join(grouped[["order_dependent", "steps"]].first())
    failed = runs[runs["status"] == "failed"].sort_values("seed")
    status["failed_seeds"] = failed.groupby(keys, sort=False, dropna=False)["seed"].agg(
        lambda s: ",".join(str(v) for v in s))
    status["failed_seeds"] = [v if isinstance(v, str) else "" for v in status["failed_seeds"]]
    completed = runs[runs["status"] != "failed"]
    statistics = grouped_statistics(completed, keys, metrics)
    judged = [m for m in metric_registry.judged() if m in metrics]
    if judged and "fitted" in completed:
        # rule 1: a metric that judges a trained model counts fitted seeds only (or runs with no fit
        # criterion); a cell with none keeps every seed's numbers and is marked judged=False
        fitted = completed[completed["fitted"].astype(float).fillna(1.0) > 0]
        on_fitted = grouped_statistics(fitted, keys, {m: metrics[m] for m in judged}) if not fitted.empty else None
        has_fit = fitted.groupby(keys, sort=False, dropna=False).size().reindex(statistics.index).fillna(0) > 0
        if on_fitted is not None:  # assigned, not DataFrame.update: a NaN (one fitted seed: no CI) must replace
            replaced = on_fitted.reindex(statistics.index)
            for column in replaced.columns:
                statistics[column] = replaced[column].where(has_fit, statistics[column])
        statistics["judged"] = has_fit
    cells = status.join(statistics).reset_index()
    if "judged" not in cells:
        cells["judged"] = True
    cells["judged"] = cells["judged"].fillna(False).astype(bool)
    for metric in metrics:  # cells whose every run failed have no statistics: n = 0
        cells[f"{metric}_n"] = cells[f"{metric}_n"].fillna(0).astype(int)
    return cells


def curves(data: pd.DataFrame) -> pd.DataFrame:
    """Per cell, evaluation length and condition: seed statistics of token/seq accuracy, loss and perplexity.

    ``perplexity_ratio`` is each run's perplexity at that length divided by
    its perplexity at the longest evaluated length <= ``train_max_len``.
    Columns as in :func:`aggregate`, plus the reference levels ``chance_token_acc``, ``floor_token_acc``
    and ``floor_seq_acc`` (the best accuracy without position information; NaN where the task has
    none) and, per cell, ``n_seeds``, ``n_fitted`` (seeds that met the fit criterion), ``fitted_fraction``
    (NaN: no criterion) and ``judged``. As in :func:`aggregate`, a line describes the trained models, so
    a cell with a fitted seed (or runs without a fit criterion) is drawn from those seeds only; a cell
    with none keeps every seed and has ``judged=False``: it must be drawn as not fitted.
    """
    completed = data[data["status"] != "failed"].copy()
    if completed.empty:
        return pd.DataFrame(columns=[*CELL_COLUMNS, "eval_len", "condition"])
    completed["variant"] = completed["variant"].fillna(BASE_VARIANT)
    completed["perplexity"] = np.exp(completed["loss"].astype(float))
    at_train = (
        completed[completed["eval_len"] <= completed["train_max_len"]]
        .sort_values("eval_len")
        .groupby(["run_id", "variant", "condition"])["perplexity"]
        .last()
        .rename("train_perplexity")
    )
    completed = completed.join(at_train, on=["run_id", "variant", "condition"])
    completed["perplexity_ratio"] = completed["perplexity"] / completed["train_perplexity"]
    cell = list(CELL_COLUMNS)
    keys = [*cell, "eval_len", "condition"]
    flags = completed["fitted"].map(_flag) if "fitted" in completed else pd.Series(np.nan, completed.index)
    per_run = completed.assign(flag=flags).groupby([*cell, "run_id"], sort=False, dropna=False)["flag"].first()
    by_cell = per_run.groupby(level=cell, sort=False, dropna=False)
    counts = pd.DataFrame({
        "n_seeds": by_cell.size(),
        "n_fitted": by_cell.agg(lambda flag: int((flag == 1).sum())),
        "fitted_fraction": by_cell.mean(),
        "judged": by_cell.agg(lambda flag: bool((flag.fillna(1.0) > 0).any())),
    })
    judged = completed.join(counts["judged"], on=cell)["judged"]
    drawn = completed[(flags.fillna(1.0) > 0) | ~judged]
    frame = grouped_statistics(drawn, keys, metric_registry.directions("length"))
    references = [c for c in ("chance_token_acc", "floor_token_acc", "floor_seq_acc") if c in completed]
    frame = frame.join(completed.groupby(keys, sort=False, dropna=False)[references].mean())
    frame = frame.reset_index().join(counts, on=cell)
    for column in ("floor_token_acc", "floor_seq_acc"):
        if column not in frame:
            frame[column] = float("nan")
    return frame.sort_values([*CELL_COLUMNS, "condition", "eval_len"], key=sort_key).reset_index(drop=True)


# --------------------------------------------------------------------------- comparisons


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN entries are left out of the family and stay NaN)."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = len(order)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def welch_greater(best: np.ndarray, other: np.ndarray) -> float:
    """One-sided Welch t-test p-value of ``mean(best) > mean(other)`` (NaN with < 2 values on a side)."""
    from scipy import stats

    best, other = np.asarray(best, float), np.asarray(other, float)
    best, other = best[np.isfinite(best)], other[np.isfinite(other)]
    if len(best) < 2 or len(other) < 2:
        return float("nan")
    if best.var(ddof=1) == 0 and other.var(ddof=1) == 0:  # t undefined: the difference is exact
        return 1.0 if best.mean() <= other.mean() else 0.0
    with warnings.catch_warnings():  # nearly identical seeds: scipy warns about precision, the p-value is fine
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_ind(best, other, equal_var=False, alternative="greater").pvalue)


def compare_to_best(
    runs: pd.DataFrame,
    metric: str,
    higher_is_better: bool = True,
    *,
    group: Sequence[str] = GROUP_COLUMNS,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Per group (e.g. a task), compare every contender's ``metric`` with the best contender's.

    The best is the contender with the best mean over completed seeds (ties
    all count as best). Every other contender is tested with
    :func:`welch_greater` (direction flipped for lower-is-better metrics) and
    the p-values of a group are Holm-corrected.

    Returns:
        One row per cell: the cell columns, ``metric``, ``mean``, ``n``,
        ``is_best``, ``p_value``, ``p_holm`` and ``not_worse`` (best, or
        adjusted p >= ``alpha``; False when untestable).
    """
    group = list(group)
    contenders = [c for c in CELL_COLUMNS if c not in group]
    completed = runs[(runs["status"] != "failed") & np.isfinite(runs[metric].astype(float))]
    sign = 1.0 if higher_is_better else -1.0
    records = []
    for _, rows in completed.groupby(group, sort=False, dropna=False):
        samples = {key: sign * cell[metric].to_numpy(float)
                   for key, cell in rows.groupby(contenders, sort=False, dropna=False)}
        means = {key: values.mean() for key, values in samples.items()}
        top = max(means.values())
        best_keys = [key for key, m in means.items() if m >= top - 1e-12]
        best = samples[best_keys[0]]
        others = [key for key in samples if key not in best_keys]
        raw = [welch_greater(best, samples[key]) for key in others]
        p_raw = dict(zip(others, raw, strict=True))
        p_adj = dict(zip(others, holm(raw), strict=True))
        first = rows.iloc[0]
        for key, values in samples.items():
            record = {c: first[c] for c in group}
            record.update(dict(zip(contenders, key, strict=True)))
            is_best = key in best_keys
            p = p_adj.get(key, float("nan"))
            record.update(
                metric=metric, mean=sign * means[key], n=len(values), is_best=is_best,
                p_value=p_raw.get(key, float("nan")), p_holm=p,
                not_worse=bool(is_best or (np.isfinite(p) and p >= alpha)),
            )
            records.append(record)
    columns = [*CELL_COLUMNS, "metric", "mean", "n", "is_best", "p_value", "p_holm", "not_worse"]
    return pd.DataFrame.from_records(records, columns=columns)


def results_version(data: pd.DataFrame) -> str:
    """The version of a set of results, for citing it: ``v<protocol>-<8 hex digits>``, the hex digits a hash of
    every run's id and row checksum (``rows_sha256``) in run-id order. The same runs always give the same
    version, on any machine; adding, removing or remaking any run changes it. ``<protocol>``: the runs' protocol
    version (2 for runs that predate the ``protocol`` column)."""
    runs = data.drop_duplicates("run_id").sort_values("run_id")
    checksums = runs["rows_sha256"].astype(str) if "rows_sha256" in runs else pd.Series("", index=runs.index)
    digest = hashlib.sha256("\n".join(f"{r} {c}" for r, c in zip(runs["run_id"], checksums, strict=True)).encode())
    protocols = pd.to_numeric(runs["protocol"], errors="coerce").dropna() if "protocol" in runs else pd.Series([])
    protocol = int(protocols.max()) if len(protocols) else 2
    return f"v{protocol}-{digest.hexdigest()[:8]}"
