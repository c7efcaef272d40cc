"""The row contract of a run file: its column groups, statuses, canonical order and labels.

A run file (:mod:`pebench.store`) holds one row per evaluation length, condition and variant of one run
(one row for a failed run), with every configuration field of the run as a column. This module says
which columns a row has (:data:`IDENTITY_COLUMNS`, :data:`CONFIG_COLUMNS`, :data:`METRIC_COLUMNS`), which
are text (:data:`TEXT_COLUMNS`), what makes a cell whose seeds are aggregated (:data:`CELL_COLUMNS`), and
the two readings every analysis shares, written once here:

* :func:`completed` — a run was evaluated unless its status is ``failed`` (a diverged run was evaluated:
  its numbers count);
* :func:`fitted` — protocol rule 1: a run counts as fitted unless its ``fitted`` value says it did not
  (no value means no fit criterion, e.g. the language model, and counts as fitted).

It sits below everything that reads rows (the store, the statistics, the boards, the report, the site) and
imports none of them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pebench import encodings, tasks
from pebench.protocol import COMPARED_ENCODINGS
from pebench.registry import (  # noqa: F401 (the name rule, written once in the registry, read from here too)
    MISSING_WORDS,
    NAME_PATTERN,
    NAME_RULE,
    is_name,
    reads_as_number,
)

if TYPE_CHECKING:  # pandas is imported where a frame is built: reading a folder's files needs none
    import pandas as pd

#: the variant label of the trained model evaluated as it is (evaluation variants have their own labels)
BASE_VARIANT = "trained"
#: how a run ended: evaluated (``ok``), evaluated although its loss diverged (``diverged``), or not
#: evaluated (``failed``: one row with the error, no metrics)
STATUSES = ("ok", "diverged", "failed")

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
#: the configuration of a run: runs of one cell must agree on all of these (every field of a resolved
#: :class:`pebench.plan.experiment.RunSpec` but the seed and :data:`DERIVED_CONFIG_COLUMNS`)
CONFIG_COLUMNS = (
    "arch", "batch_size", "d_model", "divergence_loss", "dropout", "encoding", "encoding_options",
    "eval_batch_size", "eval_conditions", "eval_decoding", "eval_equivariance", "eval_lengths", "eval_n_examples",
    "eval_seed", "eval_variants", "experiment", "extend_min_gain", "extend_to", "extend_window", "fit_disjoint",
    "fit_every", "fit_examples", "fit_lengths", "fit_min_drop", "fit_patience", "fit_threshold", "grad_clip",
    "length_seed", "lr", "min_lr_ratio", "mlp_ratio", "n_heads", "n_layers", "protocol", "steps", "stop_at_fit",
    "suite", "task", "task_version", "train_max_len", "train_min_len", "warmup_steps", "weight_decay",
)
#: configuration columns a run records only when they differ from their defaults (length seed, fit criterion,
#: protocol version, extension; :meth:`pebench.config.TrainConfig.to_dict`), so that the run ids of configurations that
#: leave them alone stay as they were before the field existed
OPTIONAL_CONFIG_COLUMNS = (
    "extend_min_gain", "extend_to", "extend_window", "fit_disjoint", "fit_every", "fit_examples", "fit_lengths",
    "fit_min_drop", "fit_patience", "fit_threshold", "length_seed", "protocol", "stop_at_fit",
)
#: configuration columns computed from the others (the suite's position capacity): recorded, never compared
DERIVED_CONFIG_COLUMNS = ("position_capacity",)
#: the columns a run's id is the hash of (:func:`pebench.config.run_id_of`): its configuration, its seed and what is
#: derived from them; a run file's id is recomputed from these on read
RUN_ID_COLUMNS = (*CONFIG_COLUMNS, "seed", *DERIVED_CONFIG_COLUMNS)
#: the columns of :data:`RUN_ID_COLUMNS` that hold text (names, words and JSON) and flags; the others are numbers
TEXT_CONFIG_COLUMNS = ("arch", "encoding", "encoding_options", "eval_conditions", "eval_decoding", "eval_lengths",
                       "eval_variants", "experiment", "fit_lengths", "suite", "task")
FLAG_CONFIG_COLUMNS = ("eval_equivariance", "fit_disjoint", "stop_at_fit")
#: columns that can look numeric but are text (run id "3e69517866536022" would parse as inf)
TEXT_COLUMNS = ("run_id", "pebench_version", "commit", "error", "rows_sha256")
#: columns pebench writes as numbers (flags as True/False), empty where a run has none: a run file with anything
#: else there is refused (:func:`pebench.store.run_file_check.validate_frame`), so that no text reaches a mean
NUMBER_COLUMNS = (
    "batch_size", "chance_token_acc", "compiled", "d_model", "divergence_loss", "dropout", "encoding_params",
    "equivariance_gap_init", "equivariance_gap_trained", "eval_batch_size", "eval_equivariance", "eval_len",
    "eval_n_examples", "eval_seed", "extend_min_gain", "extend_to", "extend_window", "final_train_loss",
    "fit_disjoint", "fit_every", "fit_examples", "fit_min_drop", "fit_patience", "fit_threshold", "fit_token_acc",
    "fitted", "floor_seq_acc", "floor_token_acc", "grad_clip", "length_seed", "loss", "loss_se", "lr",
    "min_lr_ratio", "mlp_ratio", "n", "n_heads", "n_layers", "params", "position_capacity", "protocol", "seed",
    "seq_acc", "steps", "steps_done", "steps_to_fit", "stop_at_fit", "task_version", "token_acc", "torch_threads",
    "train_max_len", "train_min_len", "train_seconds", "warmup_steps", "weight_decay",
)
#: last column of a run file: SHA-256 of its header and rows without this column
#: (:func:`pebench.store.rows_checksum`)
CHECKSUM_COLUMN = "rows_sha256"

#: what makes a cell: one configuration whose seeds are aggregated
CELL_COLUMNS = (
    "experiment", "task", "task_version", "arch", "encoding", "encoding_options", "variant", "train_max_len",
)
#: cells compared with each other (encodings, and RoPE-scaling variants) share these
GROUP_COLUMNS = ("experiment", "task", "task_version", "arch", "train_max_len")

#: the name columns of a run file: each holds a name (:func:`pebench.registry.is_name`, the rule a registered name
#: follows), the encoding one or more joined by ``:`` (a wrapped encoding, ``randomized:rope``)
NAME_COLUMNS = ("suite", "experiment", "task", "arch", "encoding")
#: what a run id is: 16 lowercase hex digits (:func:`pebench.config.run_id_of`)
RUN_ID = re.compile(r"[0-9a-f]{16}")


def is_column_name(column: str, value: str) -> bool:
    """Whether ``value`` is what the name column ``column`` of a run file may hold (:data:`NAME_COLUMNS`)."""
    return all(is_name(part) for part in value.split(":")) if column == "encoding" else is_name(value)
#: the pattern an evaluation variant's label must match in full (:attr:`pebench.plan.experiment.EvalConfig.variants`)
VARIANT_LABEL = re.compile(NAME_PATTERN)


# --------------------------------------------------------------------------- which rows count


def completed(rows: pd.DataFrame) -> pd.Series:
    """Which of ``rows`` belong to completed runs (status ``ok`` or ``diverged``: evaluated, their numbers
    count), as a boolean Series on ``rows``' index; every row when there is no ``status`` column."""
    import pandas as pd

    if "status" not in rows:
        return pd.Series(True, index=rows.index)
    return rows["status"] != "failed"


def recorded_protocols(rows: pd.DataFrame) -> set[int]:
    """The protocol versions ``rows`` (of one results folder) record; a row without the ``protocol`` column, or
    with it empty, predates protocol v3's field: v2. Empty for no rows."""
    if "protocol" not in rows:
        return {2} if len(rows) else set()
    return {2 if value is None or value != value else int(value) for value in rows["protocol"].unique()}  # NaN: v2


def fit_flag(value: object) -> float:
    """A ``fitted`` cell as read from a CSV (True/False, "True"/"False", 1.0/0.0, empty) -> 1.0, 0.0 or NaN."""
    if isinstance(value, str):
        value = {"true": True, "false": False}.get(value.strip().lower())
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return float("nan")
    return float(bool(value))


def fit_flags(rows: pd.DataFrame) -> pd.Series:
    """:func:`fit_flag` of each row's ``fitted`` value (NaN throughout when there is no such column)."""
    import pandas as pd

    if "fitted" not in rows:
        return pd.Series(float("nan"), index=rows.index)
    return rows["fitted"].map(fit_flag).astype(float)


def fitted(rows: pd.DataFrame) -> pd.Series:
    """Protocol rule 1, the one place it is written: which of ``rows`` count as fitted, as a boolean Series on
    ``rows``' index. A run counts as fitted unless its ``fitted`` value says it did not; no value (NaN: a
    run without a fit criterion, e.g. the language model; or no such column) counts as fitted."""
    return fit_flags(rows).fillna(1.0) > 0


def variant_labels(eval_variants: object) -> list[str]:
    """The evaluation variants of a run from its ``eval_variants`` JSON, the trained model first (failed runs
    have no ``variant`` rows, so this is where theirs are read)."""
    labels = [BASE_VARIANT]
    if isinstance(eval_variants, str) and eval_variants.strip():
        try:
            labels += [label for label, _options in json.loads(eval_variants)]
        except (ValueError, TypeError):
            pass
    return labels


# --------------------------------------------------------------------------- canonical order and labels


def order_dependent(task: str) -> bool | None:
    """Whether ``task`` is order-dependent (``None`` for a task not registered in this install)."""
    try:
        return bool(tasks.TASKS.meta(task)["order_dependent"])
    except KeyError:
        return None


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


def encoding_label(name: str) -> str:
    """Display name of an encoding for rendered text (tables, findings, figures): its registered ``label``
    (:func:`pebench.encodings.label`: the name papers use, ``T5 bias``, ``xPos``), each part of a wrapped
    name labelled alike and read as words (``randomized:rope`` is ``Randomized RoPE``); a name that is not
    registered (a plugin not loaded here) is shown as it is. CSVs and file names keep the registered name."""
    parts = str(name).split(":")
    if not all(encodings.known(part) for part in parts):
        return str(name)
    return " ".join(encodings.label(part) for part in parts)


def task_label(name: str) -> str:
    """Display name of a task for rendered text (tables, findings, figures): its registered ``label``, else its
    name as words (``reverse_string`` is ``reverse string``, as the papers write the task in running text); a name
    that is not registered (a plugin not loaded here) is shown as it is. CSVs, file names and ``--task`` keep the
    registered name."""
    name = str(name)
    if name not in tasks.TASKS:
        return name
    return str(tasks.TASKS.meta(name).get("label") or name.replace("_", " "))


def shown_name(column: str, name: str) -> str:
    """A value of the ``encoding`` or ``task`` column as rendered text shows it (:func:`encoding_label`,
    :func:`task_label`)."""
    return task_label(name) if column == "task" else encoding_label(name)


def page_title(column: str, name: str) -> str:
    """The title of an encoding's or task's page: its label (:func:`shown_name`; a task's as a heading starts,
    ``Reverse string``) and the name to type in code (``reverse_string``), or that name alone where the label is
    the same."""
    label = shown_name(column, name)
    if column == "task":
        label = f"{label[:1].upper()}{label[1:]}"
    return f"`{name}`" if label == name else f"{label} (`{name}`)"


def task_labels(names: Sequence[str]) -> str:
    """``names`` as task labels (:func:`task_label`) joined by commas."""
    return ", ".join(task_label(name) for name in names)


#: words of experiment names that a reader writes otherwise (:func:`people_words`)
SPELLED = {"lm": "LM", "rope": "RoPE"}


def people_words(experiment: str, arch: str | None = None) -> str:
    """An experiment (and architecture) as a reader says it: ``Length extrapolation, decoder``, ``LM
    extrapolation``, ``RoPE scaling``."""
    words = [SPELLED.get(word, word) for word in experiment.split("_")]
    text = " ".join([words[0][:1].upper() + words[0][1:], *words[1:]]) if words else ""
    return f"{text}, {arch}" if arch else text


def encoding_labels(names: Sequence[str], empty: str = "no encoding") -> str:
    """``names`` as display labels joined by commas, or ``empty`` when there are none (never a bare "none")."""
    return ", ".join(encoding_label(name) for name in names) or empty


def encoding_rank(name: str) -> tuple[int, str]:
    """Sort key putting the compared encodings (:data:`pebench.protocol.COMPARED_ENCODINGS`) in their
    canonical order, then any others by name."""
    order = list(COMPARED_ENCODINGS)
    return (order.index(name), "") if name in order else (len(order), str(name))
