"""What a run file may hold: the checks :func:`pebench.store.read_run_file` applies to every run file it reads.

A results folder may come from anyone, so a run file is verified on its own before any of its rows counts: the
schema (:func:`validate_frame`: columns, statuses, numbers where pebench writes numbers), completeness and the
checksum of its rows as written (:func:`verified_records`), and, on the rows (:func:`verified_frame`): one run
with one configuration, names of the form pebench writes, its declared evaluation of the shape pebench writes,
no field a spreadsheet would run as a formula, and exactly the rows its ``eval_*`` columns declare. Each
failure is a :class:`ResultsError` naming the file, on one line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebench.config import CONDITIONS, DECODINGS, FIT_LENGTHS, check_configuration, run_id_of
from pebench.store.artifact_check import formula_field
from pebench.store.schema import (
    BASE_VARIANT,
    CHECKSUM_COLUMN,
    CONFIG_COLUMNS,
    FLAG_CONFIG_COLUMNS,
    IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    NAME_COLUMNS,
    NAME_RULE,
    NUMBER_COLUMNS,
    RUN_ID,
    RUN_ID_COLUMNS,
    STATUSES,
    TEXT_CONFIG_COLUMNS,
    VARIANT_LABEL,
    completed,
    is_column_name,
    reads_as_number,
    variant_labels,
)

if TYPE_CHECKING:
    import pandas as pd


class ResultsError(ValueError):
    """A results file or folder that does not follow the schema."""


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
    if completed(frame).any():
        missing = [c for c in METRIC_COLUMNS if c not in frame.columns]
        if missing:
            raise ResultsError(f"{source}: completed run without metric column(s) {', '.join(missing)}")


def _check_values(frame: pd.DataFrame, source: str | Path) -> None:
    import pandas as pd

    for column in NUMBER_COLUMNS:
        if column in frame and not (pd.api.types.is_numeric_dtype(frame[column])
                                    or pd.api.types.is_bool_dtype(frame[column])):  # read as text: check each
            text = frame[column].dropna().astype(str)
            numbers = pd.to_numeric(text.replace({"True": "1", "False": "0"}), errors="coerce")
            bad = text[numbers.isna() & (text != "")]
            if len(bad):
                raise ResultsError(f"{source}: its {column} {bad.iloc[0][:40]!r} is not a number (pebench writes a "
                                   "number there); move the file away (it may have been crafted)")
    evaluated = frame[completed(frame)]
    if evaluated.empty:
        return
    for column in ("token_acc", "seq_acc"):
        values = pd.to_numeric(evaluated[column], errors="coerce")
        if values.isna().any() or ((values < 0) | (values > 1)).any():
            raise ResultsError(f"{source}: {column} must be a number in [0, 1]")
    for column in ("eval_len", "train_max_len", "loss"):
        if pd.to_numeric(evaluated[column], errors="coerce").isna().any():
            raise ResultsError(f"{source}: {column} must be a number in every row of a completed run")


def rows_checksum(records: Sequence[Sequence[str]]) -> str:
    """SHA-256 (hex) of a run file's header and rows, each a list of the fields as written, without the
    :data:`pebench.store.schema.CHECKSUM_COLUMN` field."""
    digest = hashlib.sha256()
    for record in records:
        digest.update("\x1f".join(record).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


def verified_records(text: str, path: Path) -> list[list[str]]:
    """The CSV records (header first) of a run file's ``text``, checked as written: complete, every row as wide as
    the header, the checksum column matching (:func:`pebench.store.read_run_file`)."""
    if not text.strip():
        raise ResultsError(f"{path}: empty file")
    if not text.endswith("\n"):
        raise ResultsError(f"{path}: truncated (its last line is incomplete)")
    try:  # strict: a quote left open at the end is an error (it would swallow what follows the file)
        records = list(csv.reader(io.StringIO(text), strict=True))
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
    return records


def verified_frame(frame: pd.DataFrame, records: Sequence[Sequence[str]], path: Path) -> pd.DataFrame:
    """The rows of one run file (``frame``, schema-checked; ``records`` as written) checked to be one run's, with
    names pebench writes and the rows its ``eval_*`` columns declare (:func:`pebench.store.read_run_file`)."""
    header = records[0]
    # on the fields as written (one set per column), not pandas' nunique per column: this runs for every file
    # of a folder and was most of `pebench show`'s time after parsing
    same = {name: len({record[k] for record in records[1:]}) == 1 for k, name in enumerate(header)}
    varying = [c for c in dict.fromkeys((*IDENTITY_COLUMNS, *CONFIG_COLUMNS)) if c in frame and not same[c]]
    if varying:
        raise ResultsError(f"{path}: its rows differ in {', '.join(varying)} (one file holds one run)")
    _check_names(dict(zip(header, records[1], strict=True)), path)  # as written: pandas may read "1" as a number
    _check_declared(records, path)
    _check_run_id(dict(zip(header, records[1], strict=True)), path)
    _check_formulas(records, path)
    _check_rows(frame, path)
    return frame


def _check_formulas(records: Sequence[Sequence[str]], path: Path) -> None:
    """Refuse a run file with a field that a spreadsheet would run as a formula
    (:func:`pebench.store.artifact_check.formula_field`): a report copies a run file's fields into its summary CSVs, and
    no field pebench writes is one."""
    field = formula_field(f for record in records for f in record)
    if field is not None:
        raise ResultsError(f"{path}: a field begins with {field[:1]!r} ({field[:40]!r}), which no run file of "
                           "pebench holds and a spreadsheet would run as a formula; move the file away (it may "
                           "have been crafted)")


def _check_names(first: Mapping[str, str], path: Path) -> None:
    """Refuse a run file whose names (:data:`pebench.store.schema.NAME_COLUMNS`, as written in its first row) are not of
    the form pebench writes: they become file names and terminal text, and a folder may come from anyone. A name
    that pandas would read as a number or a missing value (``1``, ``nan``, ``null``; a run id is read as text) is
    none either."""
    for column in (*NAME_COLUMNS, "run_id"):
        value = first[column]
        if not (RUN_ID.fullmatch(value) if column == "run_id" else is_column_name(column, value)):
            what = "16 lowercase hex digits" if column == "run_id" else NAME_RULE
            raise ResultsError(f"{path}: its {column} {value[:120]!r} is not a name pebench writes ({what}); move "
                               "the file away (it may have been crafted)")


INTEGER = re.compile(r"-?[0-9]+")


def configuration(first: Mapping[str, str]) -> dict[str, object]:
    """The resolved configuration a run file records (its :data:`pebench.store.schema.RUN_ID_COLUMNS`, as written in
    its first row, each read back as the value it was written from: text, a flag or a number; an empty or absent
    field is one the run did not record).

    Raises:
        ValueError: a number column holds no number or a flag column no flag.
    """
    resolved: dict[str, object] = {}
    for column in RUN_ID_COLUMNS:
        text = first.get(column, "")
        if text == "":
            continue
        if column in TEXT_CONFIG_COLUMNS:
            resolved[column] = text
        elif column in FLAG_CONFIG_COLUMNS and text in ("True", "False"):
            resolved[column] = text == "True"
        elif INTEGER.fullmatch(text):
            resolved[column] = int(text)
        else:
            try:
                resolved[column] = float(text)
            except ValueError:
                raise ValueError(f"its {column} {text[:40]!r} is not a number") from None
    return resolved


def _check_run_id(first: Mapping[str, str], path: Path) -> None:
    """Refuse a run file whose configuration values are not ones a run can have
    (:func:`pebench.config.check_configuration`), or whose run id is not the hash of its configuration
    (:func:`pebench.config.run_id_of`): such a file says it is a run it is not, and is damaged, never a result."""
    try:
        resolved = configuration(first)
        check_configuration(resolved)
    except (ValueError, TypeError) as exc:
        raise ResultsError(f"{path}: its configuration is not one a run can have ({str(exc).splitlines()[0]}); "
                           "move the file away (it may have been edited)") from None
    if run_id_of(resolved) != first["run_id"]:
        raise ResultsError(f"{path}: damaged or edited (its run_id {first['run_id']} is not the id of the "
                           f"configuration it records, {run_id_of(resolved)}); move the file away")


#: the JSON columns of a run file: the shape pebench writes in each, in words, and a test of a parsed value
DECLARED_JSON = {
    "eval_lengths": ("a list of positive integers",
                     lambda v: isinstance(v, list) and all(type(n) is int and n >= 1 for n in v)),
    "eval_conditions": ("a list of condition names", lambda v: isinstance(v, list) and all(isinstance(c, str)
                                                                                             for c in v)),
    "eval_variants": ("a list of [label, options JSON] pairs",
                      lambda v: isinstance(v, list) and all(isinstance(p, list) and len(p) == 2
                                                            and all(isinstance(x, str) for x in p) for p in v)),
    "encoding_options": ("an object of the encoding's options", lambda v: isinstance(v, dict)),
}
#: the columns of a run file that hold one of a fixed set of words (empty in files that predate the column)
DECLARED_WORDS = {"eval_decoding": DECODINGS, "fit_lengths": FIT_LENGTHS}


def _declared_json(first: Mapping[str, str], path: Path) -> dict[str, Any]:
    """The :data:`DECLARED_JSON` columns of a run file's first row, parsed and of the shape pebench writes there."""
    declared = {}
    for column, (shape, test) in DECLARED_JSON.items():
        if first.get(column):  # empty or absent: a file from before the column
            try:
                declared[column] = json.loads(first[column])
            except (ValueError, RecursionError):
                declared[column] = None
            if not test(declared[column]):
                raise ResultsError(f"{path}: its {column} {first[column][:40]!r} is not what pebench writes there "
                                   f"(JSON: {shape}); move the file away (it may have been crafted)")
    return declared


def _check_declared(records: Sequence[Sequence[str]], path: Path) -> None:
    """Refuse a run file whose declared evaluation (its :data:`DECLARED_JSON` and :data:`DECLARED_WORDS` columns,
    as written in its first row) or whose rows' ``condition`` and ``variant`` are not what pebench writes: JSON of
    the shape it writes (no nesting deeper than that), a condition of :data:`pebench.config.CONDITIONS`, a variant
    label of the form of a name. Labels become table cells, figure legends and terminal text, and pandas would
    read one such as ``nan`` as a missing value."""
    header = records[0]
    first = dict(zip(header, records[1], strict=True))
    declared = _declared_json(first, path)
    for column, words in DECLARED_WORDS.items():
        if first.get(column) and first[column] not in words:
            raise ResultsError(f"{path}: its {column} {first[column][:40]!r} is not one of {', '.join(words)}; move "
                               "the file away (it may have been crafted)")
    at = {column: header.index(column) for column in ("condition", "variant") if column in header}
    labels = {column: {record[k] for record in records[1:]} - {""} for column, k in at.items()}  # "": a failed run
    labels.setdefault("condition", set()).update(declared.get("eval_conditions", ()))
    labels.setdefault("variant", set()).update(label for label, _options in declared.get("eval_variants", ()))
    for value in sorted(labels["condition"]):
        if value not in CONDITIONS:
            raise ResultsError(f"{path}: its condition {value[:40]!r} is not one pebench evaluates "
                               f"({', '.join(CONDITIONS)}); move the file away (it may have been crafted)")
    for value in sorted(labels["variant"]):
        if not VARIANT_LABEL.fullmatch(value) or reads_as_number(value):
            raise ResultsError(f"{path}: its variant {value[:40]!r} is not a label pebench writes (letters, digits, "
                               "'_', '-' and '.'); move the file away (it may have been crafted)")


def expected_rows(first: pd.Series) -> set[tuple[int, str, str]] | None:
    """The (eval_len, condition, variant) rows a completed run declares in its ``eval_*`` columns (``None``
    when its file lacks them)."""
    if not all(c in first.index for c in ("eval_lengths", "eval_conditions")):
        return None
    try:
        lengths, conditions = json.loads(first["eval_lengths"]), json.loads(first["eval_conditions"])
    except (TypeError, ValueError, RecursionError):  # not what pebench writes: no rows match it
        return None
    variants = variant_labels(first.get("eval_variants"))
    return {(int(length), str(c), str(v)) for length in lengths for c in conditions for v in variants}


def _check_rows(frame: pd.DataFrame, path: Path) -> None:
    import pandas as pd

    if not completed(frame).any():
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
