"""Reproduction check: does a rerun of a suite reproduce the reference results?

Cells are experiment x task x encoding x architecture x evaluation variant
(:data:`pebench.results.CELL_COLUMNS`). Per cell the key metrics its
experiment declares are compared (:func:`pebench.report.key_metrics`): ID and
OOD token accuracy and shuffled-input accuracy where a cell has it, and, for
language modelling, ID and OOD loss — the log of the perplexity, so the
tolerance is relative (0.02 nats ~ 2%).

Rule. With ``m``, ``s``, ``n`` the mean, standard deviation (ddof=1) and
number of completed seeds of each side, a metric reproduces when::

    |m_local - m_reference| <= max(FLOOR, 2 * sqrt(s_local^2 / n_local + s_reference^2 / n_reference))

i.e. the difference of means lies within two standard errors of the
difference (the combined seed spread), with an absolute floor of
:data:`FLOOR` so that cells whose seeds agree exactly (s = 0, or one seed)
are not failed for float-level differences between machines. A cell
reproduces when all its metrics do; a metric that is a number on one side
and missing on the other (all runs failed) does not reproduce.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pebench import results
from pebench.experiment import BASE_VARIANT
from pebench.results import CELL_COLUMNS, ResultsError

FLOOR = 0.02
#: protocol columns that should agree between the two sides
PROTOCOL_COLUMNS = ("d_model", "n_layers", "n_heads", "steps", "batch_size", "lr", "eval_n_examples", "eval_lengths")


@dataclass
class Comparison:
    """The outcome of :func:`compare`.

    Attributes:
        metrics: one row per cell and metric: both means, stds, n, the
            difference, the tolerance and ``reproduces``.
        cells: one row per cell present on both sides with ``reproduces``.
        only_local / only_reference: cells found on one side only.
        notes: protocol differences between the two result sets.
    """

    metrics: pd.DataFrame
    cells: pd.DataFrame
    only_local: pd.DataFrame
    only_reference: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    @property
    def n_reproduced(self) -> int:
        return int(self.cells["reproduces"].sum()) if len(self.cells) else 0

    @property
    def all_reproduce(self) -> bool:
        """Every reference cell was rerun and reproduces (extra local cells do not matter)."""
        return self.n_reproduced == self.n_cells and self.only_reference.empty

    @property
    def verdict(self) -> str:
        """One line, e.g. ``41 of 44 cells reproduce (...); 2 reference cells not rerun``."""
        text = (f"{self.n_reproduced} of {self.n_cells} cells reproduce (difference of means within "
                f"2 standard errors of the difference, floor {FLOOR})")
        extra = []
        if len(self.only_reference):
            extra.append(f"{len(self.only_reference)} reference cells not in the rerun")
        if len(self.only_local):
            extra.append(f"{len(self.only_local)} rerun cells not in the reference")
        return text + ("; " + ", ".join(extra) if extra else "")

    @property
    def failing(self) -> list[str]:
        """One line per metric of a cell that does not reproduce."""
        bad = self.metrics[~self.metrics["reproduces"]]
        return [
            f"{_cell_name(row)}: {row['metric']} {_number(row['local_mean'])} vs reference "
            f"{_number(row['reference_mean'])} (diff {_number(row['difference'], signed=True)}, "
            f"tolerance {_number(row['tolerance'])})"
            for _, row in bad.iterrows()
        ]

    def summary(self) -> str:
        """The verdict, protocol notes, the cells that do not reproduce and those on one side only."""
        lines = [self.verdict]
        lines += [f"note: {note}" for note in self.notes]
        if self.failing:
            lines.append("not reproduced:")
            lines += [f"  {line}" for line in self.failing]
        for title, frame in (("only in the reference:", self.only_reference), ("only in the rerun:", self.only_local)):
            if len(frame):
                lines.append(title)
                lines += [f"  {_cell_name(row)}" for _, row in frame.iterrows()]
        return "\n".join(lines)


def _number(value: float, signed: bool = False) -> str:
    if not np.isfinite(value):
        return "missing"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _cell_name(row: pd.Series) -> str:
    name = f"{row['experiment']}/{row['task']}/{row['encoding']}"
    if row["encoding_options"] not in ("{}", "") and not pd.isna(row["encoding_options"]):
        name += f" {row['encoding_options']}"
    name += f"/{row['arch']}"
    if row["variant"] != BASE_VARIANT:
        name += f"/{row['variant']}"
    return name


def key_metrics(experiments: Sequence[str]) -> dict[str, list[str]]:
    """Metrics compared per experiment, as each declares them (:func:`pebench.report.key_metrics`)."""
    from pebench import report

    return {experiment: list(report.key_metrics(experiment)) for experiment in dict.fromkeys(experiments)}


def _statistics(runs: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    completed = runs[runs["status"] != "failed"]
    directions = dict.fromkeys(metrics, None)
    stats = results.grouped_statistics(completed, list(CELL_COLUMNS), directions)
    every = runs.groupby(list(CELL_COLUMNS), sort=False, dropna=False).size().rename("n_runs")
    return stats.join(every, how="outer")


def _protocol_notes(local: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    notes = []
    for experiment in sorted(set(local["experiment"]) & set(reference["experiment"])):
        a, b = local[local["experiment"] == experiment], reference[reference["experiment"] == experiment]
        for column in PROTOCOL_COLUMNS:
            if column in a.columns and column in b.columns:
                va, vb = sorted(map(str, a[column].dropna().unique())), sorted(map(str, b[column].dropna().unique()))
                if va != vb:
                    notes.append(f"{experiment}: {column} differs (rerun {', '.join(va)}; reference {', '.join(vb)})")
    return notes


def _sorted(cells: pd.DataFrame) -> pd.DataFrame:
    return cells.sort_values(list(CELL_COLUMNS), key=results.sort_key).reset_index(drop=True) if len(cells) else cells


def compare(local_dir: str | Path, reference_dir: str | Path, floor: float = FLOOR) -> Comparison:
    """Compare a rerun (``local_dir``) with the reference results (``reference_dir``), cell by cell.

    Raises:
        ResultsError: a folder has no valid results, or the two share no cell.
    """
    local_data, reference_data = results.load(local_dir), results.load(reference_dir)
    local_runs, reference_runs = results.run_metrics(local_data), results.run_metrics(reference_data)
    chosen = key_metrics([*reference_runs["experiment"], *local_runs["experiment"]])
    all_metrics = sorted({m for metrics in chosen.values() for m in metrics})
    local = _statistics(local_runs, all_metrics)
    reference = _statistics(reference_runs, all_metrics)
    both = local.index.intersection(reference.index)
    if len(both) == 0:
        raise ResultsError(f"{local_dir} and {reference_dir} share no cell (experiment/task/encoding/arch/variant); "
                           "are they results of the same suite?")
    only_local = _sorted(local.index.difference(reference.index).to_frame(index=False))
    only_reference = _sorted(reference.index.difference(local.index).to_frame(index=False))
    records = []
    for key in both:
        cell = dict(zip(CELL_COLUMNS, key, strict=True))
        for metric in chosen[cell["experiment"]]:
            a = {s: float(local.at[key, f"{metric}_{s}"]) for s in ("mean", "std", "n")}
            b = {s: float(reference.at[key, f"{metric}_{s}"]) for s in ("mean", "std", "n")}
            a["n"], b["n"] = np.nan_to_num(a["n"]), np.nan_to_num(b["n"])  # all runs failed: no statistics
            if not np.isfinite(a["mean"]) and not np.isfinite(b["mean"]):
                continue  # e.g. no OOD lengths in this experiment
            spread = 2.0 * np.sqrt(np.nan_to_num(a["std"]) ** 2 / max(a["n"], 1)
                                   + np.nan_to_num(b["std"]) ** 2 / max(b["n"], 1))
            tolerance = max(floor, float(spread))
            difference = a["mean"] - b["mean"]
            records.append({
                **cell, "metric": metric,
                "local_mean": a["mean"], "local_std": a["std"], "local_n": int(a["n"]),
                "reference_mean": b["mean"], "reference_std": b["std"], "reference_n": int(b["n"]),
                "difference": difference, "tolerance": tolerance,
                "reproduces": bool(np.isfinite(difference) and abs(difference) <= tolerance),
            })
    metrics = pd.DataFrame.from_records(records)
    if metrics.empty:
        metrics = pd.DataFrame(columns=[*CELL_COLUMNS, "metric", "difference", "tolerance", "reproduces"])
    cells = metrics.groupby(list(CELL_COLUMNS), sort=False, dropna=False)["reproduces"].all().reset_index()
    return Comparison(metrics, cells, only_local, only_reference, _protocol_notes(local_data, reference_data))
