"""How the runs of a results folder met the fit criterion, and the floors they are judged against.

Each function returns a JSON-ready section of ``report.json`` that the site renders as it is:
``{"missing": text}`` when the folder cannot give it (results made before the protocol recorded a column),
else ``{"sections": [{"lead", "header", "rows"}, ...]}`` (cells are display text). Texts are MyST Markdown in
which :data:`~pebench.store.report_file.FOLDER` stands for the results folder as the reader sees it (its path in the
repository), which the report cannot know: a copy of a folder elsewhere gives the same ``report.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from pebench import metrics, tasks
from pebench.config import TrainConfig
from pebench.protocol import SCALES
from pebench.render.tables import BOUND_LEGEND, BOUND_PREFIX, Cell, format_number
from pebench.store import first_rows
from pebench.store.report_file import FOLDER
from pebench.store.schema import BASE_VARIANT, encoding_label, encoding_rank, sort_key, task_label
from pebench.tasks.floors import BOUND_METHODS

#: held-out token accuracy from which an unfitted run counts as a near miss in the fit table
NEAR_MISS = 0.95


def not_in_results(what: str, why: str) -> str:
    """The line shown instead of numbers the results do not have."""
    return f"*{what}: not in these results ({why}).*\n"


def runs_frame(folder: Path, columns: Iterable[str], what: str) -> tuple[pd.DataFrame | None, str]:
    """``summary/runs.csv`` of ``folder`` restricted to trained models (the base variant), or ``None`` and the
    "not in these results" line when the file or one of ``columns`` is missing."""
    path = Path(folder) / "summary" / "runs.csv"
    if not path.exists():
        return None, not_in_results(what, f"no `{FOLDER}/summary/runs.csv`; `pebench report --results {FOLDER}` "
                                          "writes it")
    runs = pd.read_csv(path, dtype={"run_id": str})  # an id of digits and one "e" is no number
    missing = [c for c in columns if c not in runs.columns]
    if missing:
        return None, not_in_results(what, f"`{FOLDER}/summary/runs.csv` has no {', '.join(f'`{c}`' for c in missing)}"
                                          " column: these results were made before the protocol recorded it")
    if "variant" in runs.columns:
        runs = runs[runs["variant"].isna() | (runs["variant"] == BASE_VARIANT)]
    return runs, ""


def _fit_cells(cell: pd.DataFrame, stops: bool) -> list[str]:
    """The fit table's cells of one encoding and architecture: seeds fitted, median steps to fit and, with
    ``stops``, how the unfitted runs stopped and their held-out accuracy at the stop."""
    if cell.empty:
        return ["—"] * (4 if stops else 2)
    fitted = cell[cell["fitted"] > 0]
    cells = [f"{len(fitted)}/{len(cell)} ({len(fitted) / len(cell):.0%})",
             f"{fitted['steps_to_fit'].median():.0f}" if len(fitted) else "—"]
    if stops:
        unfitted = cell[cell["fitted"] <= 0]
        reasons = unfitted["stop_reason"].fillna("unknown").value_counts()
        cells.append(", ".join(f"{reason} {n}" for reason, n in reasons.items()) or "—")
        held_out = pd.to_numeric(unfitted["fit_token_acc"], errors="coerce").dropna() \
            if "fit_token_acc" in unfitted else pd.Series(dtype=float)
        cells.append(f"median {held_out.median():.2f}; {int((held_out >= NEAR_MISS).sum())} of "
                     f"{len(held_out)} >= {NEAR_MISS}" if len(held_out) else "—")
    return cells


def fit_table(folder: Path) -> dict[str, Any]:
    """Per experiment with a fit criterion: for every encoding and architecture, the seeds (over every task)
    that met the fit criterion, the median optimizer steps they needed and, where the runs record them
    (``stop_reason``, ``fit_token_acc``), how the others stopped, from ``folder/summary/runs.csv``."""
    runs, missing = runs_frame(folder, ("fitted", "steps_to_fit"), "Fit of the training distribution")
    if runs is None:
        return {"missing": missing}
    runs = runs[runs["fitted"].notna()]  # runs without a fit criterion (language modelling) say nothing
    if runs.empty:
        return {"missing": not_in_results("Fit of the training distribution",
                                          "no run of these results had a fit criterion")}
    stops = "stop_reason" in runs.columns  # run-level rows carry it (pebench.analysis.results.run_metrics)
    sections = []
    for experiment, part in runs.groupby("experiment", sort=False):
        archs = list(dict.fromkeys(part["arch"]))
        header = ["encoding"]
        for arch in archs:
            header += [f"{arch}: seeds fitted", f"{arch}: median steps to fit",
                       *([f"{arch}: unfitted runs stopped by", f"{arch}: unfitted, held-out acc. at stop"]
                         if stops else [])]
        rows = []
        for encoding in sorted(part["encoding"].unique(), key=encoding_rank):
            row = [encoding_label(encoding)]
            for arch in archs:
                row += _fit_cells(part[(part["encoding"] == encoding) & (part["arch"] == arch)], stops)
            rows.append(row)
        n_tasks = part["task"].nunique()
        sections.append({"lead": f"**`{experiment}`** ({n_tasks} task{'s' if n_tasks != 1 else ''}, every seed of "
                                 f"every task counted; from `{FOLDER}/summary/runs.csv`)",
                         "header": header, "rows": rows})
    return {"sections": sections}


FLOOR_COLUMNS = ("id_chance_token_acc", "id_floor_token_acc", "ood_chance_token_acc", "ood_floor_token_acc")


def floors_table(folder: Path, raw: Path | None = None) -> dict[str, Any]:
    """Per experiment, task and architecture: chance and the position-free floor of token accuracy, mean over
    the in-distribution and out-of-distribution evaluation lengths (``folder/summary/runs.csv``), and how the
    floor was computed (``floor_method`` of the raw rows of ``raw``, default ``folder``)."""
    runs, missing = runs_frame(folder, FLOOR_COLUMNS, "Position-free floors")
    if runs is None:
        return {"missing": missing}
    runs = runs[runs["id_floor_token_acc"].notna()]
    if runs.empty:
        return {"missing": not_in_results("Position-free floors", "no run of these results has a floor")}
    methods = first_rows(raw or folder, ("floor_method",))
    if "floor_method" in methods.columns:
        runs = runs.merge(methods.drop_duplicates("run_id"), on="run_id", how="left")
    sections = []
    for experiment, part in runs.groupby("experiment", sort=False):
        cells = part.groupby(["task", "arch"], sort=False)
        table = cells[list(FLOOR_COLUMNS)].mean().reset_index().sort_values(["arch", "task"], key=sort_key)
        rows = []
        for row in table.itertuples():
            method = cells.get_group((row.task, row.arch)).get("floor_method")
            methods = sorted(method.dropna().unique()) if method is not None else []
            rows.append([task_label(row.task), row.arch, *_floor_cells(row, bool(set(methods) & set(BOUND_METHODS))),
                         ", ".join(methods) if method is not None else "—"])
        legend = f" {BOUND_LEGEND}" if any(BOUND_PREFIX in cell for row in rows for cell in row[2:-1]) else ""
        sections.append({"lead": f"**`{experiment}`** (from `{FOLDER}/summary/runs.csv`){legend}",
                         "header": ["task", "arch", "ID chance", "ID floor", "OOD chance", "OOD floor", "method"],
                         "rows": rows})
    return {"sections": sections}


def _resolution_groups(fitted: pd.DataFrame, examples: int) -> list[tuple[str, str, pd.DataFrame]]:
    """The rows of :func:`fit_resolution`'s table of one criterion (``examples`` per check), as (runs, distinct
    inputs per check, their rows of ``fitted``): per task and count, the runs whose check at the longest training
    length draws from fewer distinct inputs than ``examples`` (:meth:`pebench.tasks.base.Task.distinct_inputs`: the
    held-out part of the space where the run's check is disjoint, else all of it); then the other runs by answer
    length.
    Empty groups are left out."""
    disjoint = np.zeros(len(fitted), dtype=bool)
    if "fit_disjoint" in fitted:  # an object column of a folder with and without the criterion: True, False or NaN
        disjoint = (fitted["fit_disjoint"] == True).to_numpy()  # noqa: E712
    keys = list(zip(fitted["task"], fitted["train_max_len"].astype(int), disjoint.tolist(), strict=True))
    # per (task, length, disjoint), once: the inputs its check draws from and whether its answer is one token
    read = {key: (task.distinct_inputs(key[1], held_out=key[2]), task.output_length(key[1]) == 1)
            for key, task in ((key, tasks.get(key[0])) for key in set(keys))}
    inputs = np.array([read[key][0] for key in keys], dtype=int)
    one_token = np.array([read[key][1] for key in keys], dtype=bool)
    few = inputs < examples
    labels = fitted["task"].map(task_label).to_numpy()
    small = sorted({(label, int(count)) for label, count in zip(labels[few], inputs[few], strict=True)})
    groups = [(label, str(count), fitted[few & (inputs == count) & (labels == label)]) for label, count in small]
    groups += [(label, f"{examples} or more", fitted[~few & (one_token == answer)])
               for label, answer in (("one-token answers", True), ("longer answers", False))]
    return [group for group in groups if not group[2].empty]


def _floor_cells(row: Any, bound: bool) -> list[str]:
    """The chance and floor cells of a floors-table row (:data:`FLOOR_COLUMNS`), each floor printed as a lower
    bound (:class:`pebench.render.tables.Cell`) when ``bound``: its method gives only one."""
    return [Cell(format_number(value), value, bound=bound and metrics.get(column).floor and np.isfinite(value)).shown
            for column, value in ((c, getattr(row, c)) for c in FLOOR_COLUMNS)]


#: the fit criterion a run records, in the order a resolution section is keyed by
CRITERION = ("fit_examples", "fit_threshold", "fit_every", "fit_lengths")


def _criteria(checked: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``checked`` (rows of runs with a fit criterion), the criterion it records (:data:`CRITERION`),
    :class:`~pebench.config.TrainConfig`'s and the standard suite's check interval where a row records none."""
    config = TrainConfig()
    defaults = {"fit_examples": (config.fit_examples, int), "fit_threshold": (config.fit_threshold, float),
                "fit_every": (SCALES["standard"]["fit_every"], int), "fit_lengths": (config.fit_lengths, str)}
    recorded = {column: checked[column] if column in checked else pd.Series(np.nan, index=checked.index, dtype=object)
                for column in CRITERION}
    return pd.DataFrame({column: recorded[column].fillna(default).astype(kind)
                         for column, (default, kind) in defaults.items()}, index=checked.index)


def fit_resolution(data: pd.DataFrame) -> dict[str, Any]:
    """How finely the fit criterion resolves accuracy, a section per criterion the runs of ``data`` (a folder's raw
    rows) record (:data:`CRITERION`; a folder may hold runs of v2's and v3's): the errors it allows on its held-out
    batch and the chance that one check passes a model whose true token accuracy is below the threshold (binomial,
    one-token answers), and how its fitted runs score at the longest training length on the evaluation set (the
    rows of ``condition`` original, variant as trained): a row per task whose check there draws from fewer
    distinct inputs than its examples (:meth:`pebench.tasks.base.Task.distinct_inputs`), then a row per answer length
    (one token, longer) of the other tasks. No section where no run has a fit criterion."""
    checked = data[data["fitted"].notna()] if "fitted" in data.columns else data.iloc[:0]
    criteria = _criteria(checked)
    keys = sorted(set(criteria.itertuples(index=False, name=None)))
    sections = []
    for key in keys:
        part = checked[(criteria == pd.Series(key, index=CRITERION)).all(axis=1)]
        experiments = list(dict.fromkeys(part["experiment"])) if len(keys) > 1 and "experiment" in part else []
        sections.append(_resolution_section(part, *key, experiments=experiments))
    closing = ("A fitted run is therefore one that learnt its training distribution to within a few points of the "
               "threshold, not one that is exact; the ID and OOD accuracies beside it in the tables are measured on "
               "the evaluation set, never on the fit batch.")
    return {"sections": sections, "closing": closing}


def _resolution_section(checked: pd.DataFrame, n: int, threshold: float, every: int, lengths: str, *,
                        experiments: list[str]) -> dict[str, Any]:
    """:func:`fit_resolution`'s section of the runs ``checked`` by one criterion (``n`` examples, ``threshold``,
    every ``every`` steps, at ``lengths``), named by its ``experiments`` where the folder holds several criteria."""
    every_length = lengths == "all"
    where = "at each training length" if every_length else "at the longest training length"
    allowed = int(np.floor(n * (1 - threshold) + 1e-9))
    chances = ", ".join(f"{stats.binom.cdf(allowed, n, 1 - p):.2f} at a true accuracy of {p:g}"
                        for p in (0.95, 0.97, 0.98))
    whose = f" of the criterion of {', '.join(f'`{name}`' for name in experiments)}" if experiments else ""
    lead = (f"**Resolution{whose}.** On a one-token answer the {n} held-out examples are {n} tokens, so a check "
            f"passes with at most {allowed} error{'s' if allowed != 1 else ''}. One check passes a model below the "
            f"threshold with a probability of {chances} (binomial), and a run is checked every {every} steps on the "
            f"same batch, so a fitted run's true accuracy {where} can be a few points below the threshold. Longer "
            f"answers give more tokens per check. Where a check draws its {n} examples from fewer distinct inputs "
            "(a small input space, or under protocol v3 its held-out part), they repeat, and the check "
            "resolves accuracy only to one in as many inputs: a model that answers those few right passes, whatever "
            "it does on the other inputs of that length; such tasks have a row of their own below. How the fitted "
            "runs score "
            f"{'at the longest training length' if every_length else 'there'} on the evaluation set (other examples, "
            "the same length, drawn from all of its inputs):")
    header = ["results", "runs", "distinct inputs per check", "fitted runs", f"below {threshold:g}", "below 0.98",
              "lowest"]
    variant = checked["variant"].fillna(BASE_VARIANT) if "variant" in checked.columns else BASE_VARIANT
    fitted = checked[(checked["fitted"] == True) & (checked["eval_len"] == checked["train_max_len"])  # noqa: E712
                     & (checked["condition"] == "original") & (variant == BASE_VARIANT)]
    rows = []
    for label, inputs, part in _resolution_groups(fitted, n):
        low = part.loc[part["token_acc"].idxmin()]
        rows.append([f"`{FOLDER}`", label, inputs, len(part), int((part["token_acc"] < threshold).sum()),
                     int((part["token_acc"] < 0.98).sum()),
                     f"{low['token_acc']:.3f} ({task_label(low['task'])}, {low['arch']}, "
                     f"{encoding_label(low['encoding'])}, seed {int(low['seed'])})"])
    return {"lead": lead, "header": header, "rows": rows}
