"""A run's per-example predictions: every example its evaluation scored, with what the model predicted.

``pebench run --predictions`` (and ``pebench evaluate``, always) writes, beside a run's file in ``raw/``, the
file ``predictions/<run id>.jsonl.gz``: gzip-compressed JSON Lines, one object per example, length and
condition of the run's evaluation (the trained model as it is, not its evaluation-time variants), as
:func:`pebench.learn.evaluate.example_records` makes them::

    {"run_id": "...", "eval_len": 64, "condition": "original", "example": 0, "input": "3 0 7 ...",
     "target": "3 0 7 ...", "prediction": "3 0 5 ...", "token_hits": 41, "n_tokens": 64, "loss": 0.81}

Token ids are the task's symbols as :meth:`pebench.tasks.Task.sample` draws them; a language model's
"example" is a window of its evaluation text. A row of the run file is the mean of its examples here: the
``token_acc`` of (length, condition) is the sum of their ``token_hits`` over the sum of their ``n_tokens``
(:func:`check_against_rows`). The file is written before the run file, so that a run counted as made always
has it; a file read back is bounded and never followed through a link (:func:`pebench.store.read_plain_file`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pebench import store
from pebench.store.schema import RUN_ID

#: the folder of a results folder that holds the runs' per-example predictions
PREDICTIONS_FOLDER = "predictions"
#: the ending of a run's predictions file: ``<run id>.jsonl.gz``
PREDICTIONS_SUFFIX = ".jsonl.gz"
#: the keys of every record, in the order written
RECORD_KEYS = ("run_id", "eval_len", "condition", "example", "input", "target", "prediction", "token_hits",
               "n_tokens", "loss")


def predictions_path(out: str | Path, run_id: str) -> Path:
    """Where the predictions of run ``run_id`` of the results folder ``out`` are: a plain name in its
    :data:`PREDICTIONS_FOLDER` (:func:`pebench.store.path_in`), no link on the way."""
    if not RUN_ID.fullmatch(str(run_id)):
        raise store.ResultsError(f"{run_id!r} is not a run id (16 hexadecimal digits)")
    return store.path_in(store.refuse_link(Path(out) / PREDICTIONS_FOLDER), f"{run_id}{PREDICTIONS_SUFFIX}")


def predictions_bytes(run_id: str, records: Iterable[Mapping[str, Any]]) -> bytes:
    """The bytes of a predictions file holding ``records``: one JSON object a line, keys in the order of
    :data:`RECORD_KEYS`, gzip-compressed with no time stamp (the same records give the same bytes)."""
    lines = []
    for record in records:
        entry = {"run_id": run_id, **{key: record[key] for key in RECORD_KEYS[1:]}}
        loss = entry["loss"]
        entry["loss"] = None if not math.isfinite(loss) else round(float(loss), 6)
        lines.append(json.dumps(entry, separators=(",", ":")))
    return gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=9, mtime=0)


def write_predictions(out: str | Path, run_id: str, records: Sequence[Mapping[str, Any]]) -> Path:
    """Write the per-example ``records`` of run ``run_id`` into the results folder ``out``
    (:func:`predictions_path`, atomically: :func:`pebench.store.write_bytes_atomic`); return the path."""
    path = predictions_path(out, run_id)
    path.parent.mkdir(exist_ok=True)
    store.write_bytes_atomic(path, predictions_bytes(run_id, records))
    return path


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """The records of the predictions file ``path``, checked: a plain file (no link), at most
    :data:`pebench.store.MAX_FILE_BYTES` decompressed, every line a JSON object with exactly the keys of
    :data:`RECORD_KEYS` and the run id of its name.

    Raises:
        ResultsError: a link, too large, not gzip, or a line that is not such a record; on one line.
    """
    path = Path(path)
    return parsed_predictions(path, store.read_plain_file(path, "predictions file"))


def parsed_predictions(path: Path, raw: bytes) -> list[dict[str, Any]]:
    """The records of the predictions file ``path`` whose bytes, read already, are ``raw``, checked as
    :func:`read_predictions` checks them."""
    try:
        text = store.gunzip_bounded(raw, path, "predictions file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise store.ResultsError(f"{path}: not a gzip-compressed predictions file ({exc})") from None
    run_id = path.name.removesuffix(PREDICTIONS_SUFFIX)
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict) or tuple(record) != RECORD_KEYS or record["run_id"] != run_id:
            raise store.ResultsError(f"{path}, line {number}: not a prediction record of run {run_id} (keys "
                                     f"{', '.join(RECORD_KEYS)})")
        records.append(record)
    return records


def check_against_rows(records: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """How the predictions ``records`` of a run disagree with its result ``rows`` (its run file's base-variant
    rows, as :func:`pebench.store.read_run_records` gives them), one line each; empty when they agree: each
    example's ``token_hits`` and ``n_tokens`` are what its ``target`` and ``prediction`` give, and every (length,
    condition) of the rows has its ``n`` examples here, numbered from 0, whose token hits over tokens give the
    row's ``token_acc`` (to 1e-12: both are the same integers divided, the row's written with 17 digits)."""
    groups: dict[tuple[int, str], list[Mapping[str, Any]]] = {}
    problems = []
    for record in records:
        groups.setdefault((int(record["eval_len"]), str(record["condition"])), []).append(record)
        target, predicted = str(record["target"]).split(), str(record["prediction"]).split()
        hits = sum(a == b for a, b in zip(target, predicted, strict=False))
        if len(predicted) != len(target) or (hits, len(target)) != (record["token_hits"], record["n_tokens"]):
            problems.append(f"length {record['eval_len']}, {record['condition']}, example {record['example']}: "
                            f"{record['token_hits']} of {record['n_tokens']} tokens recorded as hits, its target "
                            f"and prediction give {hits} of {len(target)}")
    for row in rows:
        key = (int(float(row["eval_len"])), str(row["condition"]))
        group = groups.pop(key, [])
        numbers = [int(record["example"]) for record in group]
        if numbers != list(range(int(float(row["n"])))):
            problems.append(f"length {key[0]}, {key[1]}: {len(group)} examples recorded, the row scored "
                            f"{int(float(row['n']))}")
            continue
        tokens = sum(int(record["n_tokens"]) for record in group)
        accuracy = sum(int(record["token_hits"]) for record in group) / tokens if tokens else math.nan
        if not math.isclose(accuracy, float(row["token_acc"]), rel_tol=0, abs_tol=1e-12):
            problems.append(f"length {key[0]}, {key[1]}: token accuracy {accuracy:.6f} from the examples, "
                            f"{float(row['token_acc']):.6f} in the row")
    problems += [f"length {length}, {condition}: examples of no row" for length, condition in sorted(groups)]
    return problems


def inventory(out: str | Path, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The predictions files of the runs ``rows`` holds (run id -> its base-variant result rows) in the results
    folder ``out``: per run, in run id order, its ``file`` (relative to ``out``), ``sha256`` (as stored),
    ``examples`` and ``problems`` (:func:`check_against_rows`; a file that cannot be read is its one problem), or
    ``file`` ``None`` for a run without one."""
    found = []
    for run_id in sorted(rows):
        path = predictions_path(out, run_id)
        if not path.exists() and not path.is_symlink():
            found.append({"run_id": run_id, "file": None, "sha256": None, "examples": 0, "problems": []})
            continue
        entry = {"run_id": run_id, "file": f"{PREDICTIONS_FOLDER}/{path.name}"}
        try:
            raw = store.read_plain_file(path, "predictions file")
            records = parsed_predictions(path, raw)
        except store.ResultsError as exc:
            found.append({**entry, "sha256": None, "examples": 0, "problems": [str(exc).removeprefix(f"{path}: ")]})
            continue
        found.append({**entry, "sha256": hashlib.sha256(raw).hexdigest(), "examples": len(records),
                      "problems": check_against_rows(records, rows[run_id])})
    return found


def predictions_files(out: str | Path) -> list[Path]:
    """The files of the results folder ``out``'s :data:`PREDICTIONS_FOLDER` named as a run's predictions
    (sorted; none without the folder; the folder itself never a link)."""
    folder = store.refuse_link(Path(out) / PREDICTIONS_FOLDER)
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.name.endswith(PREDICTIONS_SUFFIX)
                  and RUN_ID.fullmatch(path.name.removesuffix(PREDICTIONS_SUFFIX)))
