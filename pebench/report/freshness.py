"""Whether a results folder's ``report.json`` is current: it records a digest of the run files it was made from
(:func:`raw_digest`), which a reader (the docs site) compares with the run files there now."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pebench.store import raw_files

#: the ``report.json`` key of :func:`raw_digest`
DIGEST_KEY = "raw_sha256"


def raw_digest(folder: str | Path) -> str:
    """SHA-256 (hex) of the names and contents of a results folder's run files (``raw/``): equal exactly when the
    folder holds the same run files byte for byte, on any machine and after any checkout (unlike
    :func:`pebench.store.files_fingerprint`, which changes when a file is written again)."""
    digest = hashlib.sha256()
    for path in raw_files(Path(folder) / "raw"):
        digest.update(f"{path.name}\n{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


class StaleReport(Exception):
    """A results folder's report is missing, unreadable or older than its run files."""


def current_report(folder: str | Path) -> dict[str, Any]:
    """The ``report.json`` of ``folder``, checked to be the report of the run files there now.

    Raises:
        StaleReport: on one line, naming the folder and the command that writes its report: there is no
            readable ``report.json``, or it records no digest or another one than :func:`raw_digest` gives.
    """
    folder = Path(folder)
    path = folder / "report.json"
    remedy = f"run pebench report {folder} (with OMP_NUM_THREADS=1 to remake committed files byte for byte)"
    try:
        index = json.loads(path.read_text())
    except FileNotFoundError:
        raise StaleReport(f"{folder} has no report.json: {remedy}") from None
    except (OSError, ValueError) as exc:
        raise StaleReport(f"{path} cannot be read ({exc}): {remedy}") from None
    if not isinstance(index, dict) or index.get(DIGEST_KEY) != raw_digest(folder):
        raise StaleReport(f"{path} is older than the run files in {folder / 'raw'} (or predates their digest): "
                          f"{remedy}")
    return index
