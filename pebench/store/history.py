"""Snapshots of a results folder's verdicts, kept when the folder is made again under a later protocol.

A results folder holds one protocol: regenerating it replaces its run files, and with them the verdicts its
report drew. :func:`snapshot` keeps a copy of those verdicts, the report's main table and the boards of its
experiments (``tables/<name>.csv``, byte for byte), in ``<history>/<suite>-<results version>/`` (e.g.
``results/history/standard-v2-aaa7cfcc/``) with ``snapshot.json``, which names the suite, the protocol, the
results version, the code commits of the folder's manifest, the digest of its run files and the SHA-256 of
each copied file. :func:`verdicts` reads the main table of a snapshot or of a results folder alike, for
:mod:`pebench.report.changes`.

A results folder and a snapshot may come from anyone: they are read through :mod:`pebench.store` (no link
followed, sizes bounded), a name read from them becomes a path only as one plain file name
(:func:`pebench.store.path_in`), and a snapshot's files are checked against the SHA-256 it records.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pebench
from pebench import store
from pebench.protocol import BOARD_KINDS
from pebench.registry import is_name
from pebench.store import own_files
from pebench.store.report_file import DIGEST_KEY, StaleReport, current_report

#: the file of a snapshot folder that describes it (never ``manifest.json``: a snapshot is no results folder)
SNAPSHOT_FILE = "snapshot.json"
#: a results version as :func:`pebench.analysis.results.results_version` writes it: ``v<protocol>-<8 hex digits>``
RESULTS_VERSION = re.compile(r"v(?P<protocol>[0-9]{1,4})-[0-9a-f]{8}")
#: the fields of a description (:func:`describe`), as ``snapshot.json`` holds them
FIELDS = ("suite", "protocol", "results_version", "commit", "commits", "raw_sha256", "main_table")


def describe(folder: str | Path) -> dict[str, Any]:
    """What a results folder's report is a report of: its ``suite`` (its manifest's), ``protocol`` and
    ``results_version`` (its report's), ``commit`` (the code commit of the manifest's latest invocation) and
    ``commits`` (of every invocation, in order), ``raw_sha256`` (the digest of its run files) and
    ``main_table`` (the stem of its main table, ``tables/<main_table>.csv``).

    Raises:
        ResultsError: the folder has no manifest or no current report (:func:`pebench.store.report_file.current_report`:
            missing, or older than the run files), or one of them is not of its shape, on one line.
    """
    folder = Path(folder)
    try:
        index = current_report(folder)
    except StaleReport as exc:
        raise store.ResultsError(str(exc)) from None
    manifest = store.read_manifest(folder)
    if manifest is None or not isinstance(manifest.get("suite"), str) or not manifest["suite"]:
        raise store.ResultsError(f"{folder} has no manifest.json naming its suite: not a pebench results folder")
    version, main = index.get("results_version"), index.get("main_table")
    if not isinstance(version, str) or not RESULTS_VERSION.fullmatch(version):
        raise store.ResultsError(f"{folder}/report.json records no results version (v<protocol>-<8 hex digits>); "
                                 f"run pebench report {folder}")
    if not isinstance(main, str) or not store.FILE_NAME.fullmatch(main):
        raise store.ResultsError(f"{folder}/report.json names no main table (as a plain file name): its lead "
                                 "experiment has no extrapolation board, so the folder has no verdicts to keep")
    invocations = [i for i in manifest.get("invocations", []) if isinstance(i, dict)]
    commits = list(dict.fromkeys(str(i["git_sha"]) for i in invocations if i.get("git_sha")))
    latest = manifest.get("latest") or {}
    return {"suite": manifest["suite"], "protocol": int(RESULTS_VERSION.fullmatch(version)["protocol"]),
            "results_version": version, "commit": str(latest.get("git_sha") or (commits or [""])[-1]),
            "commits": commits, "raw_sha256": index[DIGEST_KEY], "main_table": main}


def _experiments(main_csv: bytes, source: Path) -> list[str]:
    """The experiments a main table's CSV has rows of, in order."""
    try:
        rows = list(csv.DictReader(io.StringIO(main_csv.decode())))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise store.ResultsError(f"{source}: not a readable CSV file ({exc})") from None
    if not rows or "experiment" not in rows[0]:
        raise store.ResultsError(f"{source}: no rows with an 'experiment' column; not a main table of pebench")
    return list(dict.fromkeys(row["experiment"] for row in rows))


def snapshot(folder: str | Path, history: str | Path) -> Path:
    """Keep the verdicts of the results ``folder`` in ``history/<suite>-<results version>/``: its main table and
    the boards of the experiments in it (:data:`pebench.protocol.BOARD_KINDS`, those its report wrote), copied
    byte for byte, and :data:`SNAPSHOT_FILE` (:func:`describe`'s fields, the pebench version that made the
    snapshot and the SHA-256 of each file). The folder is written whole or not at all (made beside its place,
    then renamed); a snapshot already there with the same files is kept as it is. Returns its path.

    Raises:
        ResultsError: as :func:`describe`; a table is missing, a link or not a plain file; or a different
            snapshot of the same results version is already there (move it away to make it again).
    """
    folder = Path(folder)
    described = describe(folder)
    tables = store.refuse_link(folder / "tables")
    main_path = store.path_in(tables, f"{described['main_table']}.csv")
    main = store.read_plain_file(main_path, "table")
    boards = [f"{kind}_{experiment}.csv" for experiment in _experiments(main, main_path) for kind in BOARD_KINDS]
    files = {main_path.name: main}
    for name in boards:
        path = store.path_in(tables, name)
        if path.exists() or path.is_symlink():
            files[name] = store.read_plain_file(path, "table")
    record = {**described, "pebench_version": pebench.__version__,
              "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}}
    history = Path(history)
    history.mkdir(parents=True, exist_ok=True)
    target = store.path_in(store.refuse_link(history), f"{described['suite']}-{described['results_version']}")
    if target.exists() or target.is_symlink():
        if read_snapshot(target)["files"] == record["files"]:
            return target
        raise store.ResultsError(f"{target} already holds another snapshot of {described['results_version']}; move "
                                 "it away to make it again")
    with own_files.staging_folder(history, f".{target.name}.") as staging:  # a killed snapshot's removed
        for name, data in files.items():
            store.write_bytes_atomic(staging / name, data)
        store.write_text_atomic(staging / SNAPSHOT_FILE, json.dumps(record, indent=2) + "\n")
        os.chmod(staging, 0o777 & ~store.umask())  # a staging folder is private; a snapshot is committed data
        os.rename(staging, target)
    return target


def read_snapshot(path: str | Path) -> dict[str, Any]:
    """The ``snapshot.json`` of the snapshot folder ``path``, with each file it names checked against the SHA-256
    it records (read through the store: no link followed).

    Raises:
        ResultsError: it is missing, not of its shape, or a file it names is missing, a link, or changed.
    """
    path = Path(store.refuse_link(path))
    try:
        record = store.read_json(path / SNAPSHOT_FILE, "snapshot description")
    except FileNotFoundError:
        raise store.ResultsError(f"{path} has no {SNAPSHOT_FILE}: not a snapshot (pebench snapshot makes "
                                 "one)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise store.ResultsError(f"{path / SNAPSHOT_FILE} is not valid JSON ({exc})") from None
    if not _shaped(record):
        raise store.ResultsError(f"{path / SNAPSHOT_FILE} is not a snapshot description (fields "
                                 f"{', '.join(FIELDS)}, files); make the snapshot again with pebench snapshot")
    for name, digest in record["files"].items():
        try:
            data = store.read_plain_file(store.path_in(path, str(name)), "table")
        except FileNotFoundError:
            raise store.ResultsError(f"{path}: {name} is missing; the snapshot is incomplete") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise store.ResultsError(f"{path}: {name} differs from the file the snapshot was made with (SHA-256); "
                                     "restore it from git")
    return record


SHA256 = re.compile(r"[0-9a-f]{64}")


def _shaped(record: object) -> bool:
    """Whether a ``snapshot.json`` holds what :func:`snapshot` writes: each of :data:`FIELDS` of its type and form
    (the protocol an integer, the one its results version names), and files named as plain file names with their
    SHA-256 (a snapshot may come from anyone, and :mod:`pebench.report.changes` words its verdicts from these)."""
    if not isinstance(record, dict) or not all(key in record for key in FIELDS):
        return False
    version, files, protocol = record["results_version"], record.get("files"), record["protocol"]
    match = RESULTS_VERSION.fullmatch(version) if isinstance(version, str) else None
    return bool(
        match and type(protocol) is int and protocol == int(match["protocol"])
        and is_name(record["suite"]) and isinstance(record["commit"], str)
        and isinstance(record["commits"], list) and all(isinstance(commit, str) for commit in record["commits"])
        and isinstance(record["raw_sha256"], str) and isinstance(record["main_table"], str)
        and isinstance(files, dict) and f"{record['main_table']}.csv" in files
        and all(store.FILE_NAME.fullmatch(name) and isinstance(digest, str) and SHA256.fullmatch(digest)
                for name, digest in files.items())
    )


def is_snapshot(path: str | Path) -> bool:
    """Whether ``path`` is a snapshot folder (holds :data:`SNAPSHOT_FILE`) rather than a results folder."""
    return (Path(path) / SNAPSHOT_FILE).is_file()


def verdicts(path: str | Path) -> tuple[dict[str, Any], bytes]:
    """The description (:func:`describe`'s fields) and the main table's CSV bytes of a snapshot folder
    (:func:`read_snapshot`) or of a results folder with a current report (:func:`describe`)."""
    path = Path(path)
    if is_snapshot(path):
        record = read_snapshot(path)
        return ({key: record[key] for key in FIELDS},
                store.read_plain_file(store.path_in(path, f"{record['main_table']}.csv"), "table"))
    described = describe(path)
    tables = store.refuse_link(path / "tables")
    return described, store.read_plain_file(store.path_in(tables, f"{described['main_table']}.csv"), "table")
