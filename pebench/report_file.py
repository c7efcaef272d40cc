"""Reading a results folder's report as a renderer does (the docs site): the placeholders its texts carry for
the folders' paths, the digest of the run files it records (:func:`raw_digest`), and :func:`current_report`,
which refuses a report older than the run files beside it.

Importing this module loads neither pandas nor scipy (``tests/test_report_file.py``): the site renders what
``pebench report`` wrote and computes nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pebench import store

#: what stands for the results folder in a text of ``report.json`` (the site puts the folder's path there)
FOLDER = "{folder}"
#: what stands for a rerun's reference folder in a text of ``report.json``
REFERENCE = "{reference}"
#: the ``report.json`` key of :func:`raw_digest`
DIGEST_KEY = "raw_sha256"


def raw_digest(folder: str | Path) -> str:
    """SHA-256 (hex) of the names and contents of a results folder's run files (``raw/``): equal exactly when the
    folder holds the same run files byte for byte, on any machine and after any checkout (unlike
    :func:`pebench.store.files_fingerprint`, which changes when a file is written again). The files are read
    through the store (:func:`pebench.store.raw_file_bytes`): a link is refused, never followed.

    Raises:
        ResultsError: ``raw/`` or one of its run files is a symbolic link, or a file is not a regular one.
    """
    digest = hashlib.sha256()
    for path, data in store.raw_file_bytes(folder):
        digest.update(f"{path.name}\n{hashlib.sha256(data).hexdigest()}\n".encode())
    return digest.hexdigest()


class StaleReport(Exception):
    """A results folder's report is missing, unreadable or older than its run files."""


def current_report(folder: str | Path) -> dict[str, Any]:
    """The ``report.json`` of ``folder`` (read through :func:`pebench.store.read_plain_file`, never through a
    link), checked to be the report of the run files there now.

    Raises:
        StaleReport: on one line, naming the folder and the command that writes its report: there is no
            readable ``report.json`` (missing, a link, not JSON), its run files cannot be read, or it records no
            digest or another one than :func:`raw_digest` gives.
    """
    folder = Path(folder)
    path = folder / "report.json"
    remedy = f"run pebench report {folder} (with OMP_NUM_THREADS=1 to remake committed files byte for byte)"
    try:
        index = json.loads(store.read_plain_file(path, "report"))
    except FileNotFoundError:
        raise StaleReport(f"{folder} has no report.json: {remedy}") from None
    except (OSError, ValueError) as exc:  # store.ResultsError is a ValueError, as are JSON and decoding errors
        raise StaleReport(f"{path} cannot be read ({exc}): {remedy}") from None
    try:
        digest = raw_digest(folder)
    except (OSError, store.ResultsError) as exc:
        raise StaleReport(f"the run files of {folder} cannot be read ({exc}): {remedy}") from None
    if not isinstance(index, dict) or index.get(DIGEST_KEY) != digest:
        raise StaleReport(f"{path} is older than the run files in {folder / 'raw'} (or predates their digest): "
                          f"{remedy}")
    return index
