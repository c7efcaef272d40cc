"""The tables of each report layout: one row per cell (task x encoding or variant), one column per metric,
mean ± 95% CI over seeds with the best and tied cells of each task marked (:func:`metric_table`); the columns
come from the metrics registry (:func:`registered_columns`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench.analysis import results
from pebench.render.tables import RESULTS_STYLE, Cell, Table, format_mean_ci
from pebench.render.tables import Column as TableColumn  # this module's Column is a metric column
from pebench.report import plots
from pebench.report.findings import people_words
from pebench.report_spec import ReportSpec
from pebench.store import schema
from pebench.store.schema import CELL_COLUMNS, GROUP_COLUMNS
from pebench.tasks.floors import BOUND_METHODS

MARK_LEGEND = (
    "Bold: best mean of its task; underlined (LaTeX) / italics (Markdown): not significantly worse than the best "
    f"(one-sided Welch t-test, Holm-corrected per task, alpha = {results.ALPHA}); needs >= 2 seeds."
)


@dataclass(frozen=True)
class Column:
    """A table column showing a per-run metric over seeds.

    Its label, direction, number format, interval and marks come from the metric's entry in
    :mod:`pebench.metrics`; a table may override the label (``label``), which columns carry significance
    marks (``mark``) and a ``± CI`` (``ci``). A column of a metric a layout derives itself (not registered)
    gives ``label``, ``format`` and ``mark``.
    """

    column: str
    label: str | None = None
    mark: bool | None = None
    ci: bool | None = None  # default: the metric's registered ``interval`` (a derived column: True)
    format: str | None = None
    needs_fit: bool | None = None  # default: the metric's registered ``needs_fit``

    @property
    def judges(self) -> bool:
        """Whether the column judges a trained model: only fitted seeds count (rule 1 of the protocol)."""
        if self.needs_fit is not None:
            return self.needs_fit
        metric = self._metric()
        return bool(metric is not None and metric.needs_fit)

    def _metric(self) -> metric_registry.Metric | None:
        return metric_registry.RUN_METRICS.get(self.column) if self.column in metric_registry.RUN_METRICS else None

    @property
    def header(self) -> str:
        """The column header: ``label``, else the metric's registered label."""
        return self.label or self._metric().label

    @property
    def kind(self) -> str:
        """The number format: ``format``, else the metric's registered format."""
        return self.format or self._metric().format

    @property
    def interval(self) -> bool:
        """Whether its cells show ``mean ± 95% CI``: ``ci``, else the metric's registered ``interval``."""
        metric = self._metric()
        return self.ci if self.ci is not None else metric.interval if metric is not None else True

    @property
    def floor(self) -> bool:
        """Whether it shows a position-free floor (a metric registered as ``floor``): a cell whose floor is only a
        lower bound (:func:`floor_bounds`) is printed as one."""
        metric = self._metric()
        return bool(metric is not None and metric.floor)

    @property
    def better(self) -> bool | None:
        """True/False: mark the best (and tied) cells of each task in that direction; None: no marks (``mark``
        False, or a metric registered as not ``marked``)."""
        metric = self._metric()
        if self.mark is False or (self.mark is None and metric is not None and not metric.marked):
            return None
        direction = metric.higher_is_better if metric is not None else None
        if self.mark and direction is None:
            direction = True
        return direction


def _runs_text(row: pd.Series) -> str:
    text = str(int(row["n_seeds"]))
    extra = []
    fitted = row.get("fitted_mean", float("nan"))
    if np.isfinite(fitted) and row.get("fitted_n", 0):
        extra.append(f"{int(round(fitted * row['fitted_n']))} fitted")
    if row["n_diverged"]:
        extra.append(f"{int(row['n_diverged'])} diverged")
    if row["n_failed"]:
        extra.append(f"{int(row['n_failed'])} failed")
    return text + (f" ({', '.join(extra)})" if extra else "")


def _cell_label(row: pd.Series, column: str) -> str:
    if column == "encoding":
        return plots.label(row["encoding"], row["encoding_options"])
    if column == "order_dependent":
        return {True: "order-dependent", False: "control"}.get(row["order_dependent"], "?")
    if column == "task":
        return schema.task_label(row["task"])
    return str(row[column])


def metric_table(
    name: str, title: str, caption: str, runs: pd.DataFrame, cells: pd.DataFrame,
    keys: Sequence[tuple[str, str]], metrics: Sequence[Column], group: str = "task",
) -> Table:
    """A table with one row per cell: ``keys`` ((header, column) pairs) then ``metrics`` then the run count.

    Marks compare the contenders (encodings, variants) of each task
    (:data:`pebench.store.schema.GROUP_COLUMNS`) with :func:`pebench.analysis.results.compare_to_best`.
    """
    cells = cells.sort_values(list(CELL_COLUMNS), key=schema.sort_key).reset_index(drop=True)
    data = cells[list(CELL_COLUMNS) + ["order_dependent", "n_runs", "n_seeds", "n_diverged", "n_failed",
                                       "failed_seeds"]].copy()
    marks = pd.DataFrame(index=cells.index)
    for metric in metrics:
        for stat in ("mean", "ci95", "std", "best", "n"):
            data[f"{metric.column}_{stat}"] = cells[f"{metric.column}_{stat}"]
        if metric.better is None:
            marks[metric.column] = None
            continue
        tested = runs
        if metric.judges:  # only fitted seeds are evidence of extrapolation or order use
            tested = runs[schema.fitted(runs)]
        tests = results.compare_to_best(tested, metric.column, metric.better)
        merged = cells[list(CELL_COLUMNS)].merge(tests, on=list(CELL_COLUMNS), how="left")
        data[f"{metric.column}_is_best"] = merged["is_best"].fillna(False).astype(bool).to_numpy()
        data[f"{metric.column}_not_worse"] = merged["not_worse"].fillna(False).astype(bool).to_numpy()
        data[f"{metric.column}_p_holm"] = merged["p_holm"].to_numpy()
        marks[metric.column] = np.where(data[f"{metric.column}_is_best"], "best",
                                        np.where(data[f"{metric.column}_not_worse"], "tied", None))
    rows, group_starts = [], []
    previous_group = None
    for i, row in cells.iterrows():
        current = tuple(row[c] for c in GROUP_COLUMNS) if group == "task" else row[group]
        if current != previous_group:
            group_starts.append(len(rows))
            previous_group = current
        unfitted = not bool(row.get("judged", True))
        line = [Cell(_cell_label(row, column), row[column]) for _, column in keys]
        for m in metrics:
            mean, ci = row[f"{m.column}_mean"], row[f"{m.column}_ci95"] if m.interval else float("nan")
            mark = None if m.judges and unfitted else marks.at[i, m.column]
            bound = m.floor and bool(row.get(FLOOR_BOUND, False)) and np.isfinite(mean)
            line.append(Cell(format_mean_ci(mean, ci, m.kind) + (NOT_FITTED if m.judges and unfitted else ""),
                             mean, mark if isinstance(mark, str) else None, bound=bound))
        line.append(Cell(_runs_text(row), int(row["n_seeds"])))
        rows.append(line)
    columns = ([TableColumn(h, "l", key=True) for h, _ in keys] + [TableColumn(m.header, "r") for m in metrics]
               + [TableColumn("Seeds", "r")])
    return Table(name, title, caption, columns, rows, group_starts, data=data, style=RESULTS_STYLE)


def _caption(look: str, protocol: str, runs: pd.DataFrame) -> str:
    seeds = runs.groupby(list(CELL_COLUMNS))["seed"].nunique()
    per_cell = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
    fit = ""
    if "fitted" in runs and runs["fitted"].notna().any():
        fit = (f"Extrapolation and order numbers count fitted seeds only (Seeds: how many fitted the training "
               f"distribution); {NOT_FITTED} = no seed fitted, so the number describes a model that did not learn "
               "the task, not a finding. ")
    return (f"{look} Mean ± 95% t-interval over {per_cell} seeds per cell (no interval with one seed); "
            "chance = token accuracy of the best input-independent guess; floor = the best accuracy without "
            f"position information (pebench.tasks.floors). {fit}{MARK_LEGEND} Protocol: {protocol}")


#: suffix of a number that judges a trained model in a cell where no seed fitted (rule 1 of the protocol)
NOT_FITTED = " †"
#: the column of a layout's cells saying that the cell's position-free floor is only a lower bound (floor_bounds)
FLOOR_BOUND = "floor_bound"


def floor_bounds(cells: pd.DataFrame, data: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with a column :data:`FLOOR_BOUND`: whether a raw row (``data``) of the cell's task and
    architecture records a floor method that gives only a lower bound
    (:data:`pebench.tasks.floors.BOUND_METHODS`); False throughout for rows made before ``floor_method`` was
    recorded."""
    keys = ["experiment", "task", "arch"]
    if "floor_method" not in data:
        return cells.assign(**{FLOOR_BOUND: False})
    bounded = data.loc[data["floor_method"].isin(BOUND_METHODS), keys].drop_duplicates()
    marked = cells.merge(bounded.assign(**{FLOOR_BOUND: True}), on=keys, how="left")
    return marked.assign(**{FLOOR_BOUND: marked[FLOOR_BOUND].eq(True)})


def registered_columns(layout: str) -> list[Column]:
    """The metric columns of ``layout``'s tables, as the metrics registry lists them
    (:func:`pebench.metrics.table_columns`: a metric registered with ``tables=(layout,)`` is one of them)."""
    return [Column(metric.name) for metric in metric_registry.table_columns(layout)]


def extrapolation_tables(
    runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
) -> list[Table]:
    """ID fit and extrapolation per task and encoding, one table per architecture."""
    tables = []
    archs = sorted(cells["arch"].unique())
    for arch in archs:
        part_runs, part_cells = runs[runs["arch"] == arch], cells[cells["arch"] == arch]
        name = experiment if len(archs) == 1 else f"{experiment}_{arch}"
        look = spec.caption or (
            f"{arch.capitalize()} models: compare OOD token accuracy (lengths beyond training) with the ID fit "
            "beside it and with chance; OOD/ID near 1 means no loss past the training length; generalization "
            f"length = largest evaluated length up to which sequence accuracy stays >= "
            f"{results.GENERALIZATION_FRACTION} x its ID value (— when ID sequence accuracy < "
            f"{results.GENERALIZATION_MIN_ID_SEQ_ACC}).")
        title = spec.title or f"{people_words(experiment)}: fit and extrapolation per task"  # a declared one as given
        tables.append(metric_table(
            name, title + (f" ({arch})" if len(archs) > 1 or not spec.title else ""),
            _caption(look, protocol, part_runs),
            part_runs, part_cells, [("Task", "task"), ("Encoding", "encoding")], registered_columns("extrapolation"),
        ))
    return tables


def order_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                 ) -> list[Table]:
    """Original vs shuffled accuracy, order reliance / invariance gap and equivariance gaps, one table per arch."""
    tables = []
    # run_metrics sets order reliance on order-dependent tasks only and the invariance gap on controls only
    cells = cells.copy()
    for stat in ("mean", "ci95", "std", "best", "n"):
        cells[f"order_effect_{stat}"] = cells[f"order_reliance_{stat}"].where(
            cells["order_dependent"] == True, cells[f"invariance_gap_{stat}"])  # noqa: E712
    runs = runs.assign(order_effect=runs["order_reliance"])  # so only order-dependent tasks are marked
    for arch in plots.archs_in_order(cells):
        part_runs, part_cells = runs[runs["arch"] == arch], cells[cells["arch"] == arch]
        columns = [
            Column("id_chance_token_acc"),
            Column("id_floor_token_acc"),
            Column("id_token_acc", label="Original"),
            Column("shuffled_token_acc"),
            # order reliance on order-dependent tasks, invariance gap on controls: one column, marked on the former
            Column("order_effect", label="Orig. − shuf.", format="acc", mark=True, needs_fit=True),
            Column("equivariance_gap_init"),
            Column("equivariance_gap_trained"),
        ]
        look = spec.caption or (
            f"{arch.capitalize()} models at training lengths, inputs original vs shuffled (scored against the "
            "original targets). Orig. − shuf. is the order reliance on order-dependent tasks (high is good; "
            "marked) and the invariance gap on controls (should be ~0). Equiv. gap = ‖f(Px) − P f(x)‖ / ‖f(x)‖ "
            "of the final hidden states (0 = the model cannot see order; mean over seeds).")
        title = spec.title or f"{people_words(experiment)}: order sensitivity"
        tables.append(metric_table(
            f"{experiment}_{arch}", f"{title} ({arch})", _caption(look, protocol, part_runs),
            part_runs, part_cells, [("Task", "task"), ("Type", "order_dependent"), ("Encoding", "encoding")],
            columns,
        ))
    return tables


def variant_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                   ) -> list[Table]:
    """One trained model per task evaluated as trained and under each evaluation variant."""
    look = spec.caption or "The same trained weights evaluated as trained and under each evaluation variant."
    title = spec.title or f"{people_words(experiment)}: evaluation variants"
    return [metric_table(experiment, title, _caption(look, protocol, runs),
                         runs, cells, [("Task", "task"), ("Variant", "variant")], registered_columns("variants"))]


def perplexity_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                      ) -> list[Table]:
    """Language-model perplexity at the training context and beyond."""
    columns = registered_columns("perplexity")
    look = spec.caption or (
        "Perplexity = exp(mean loss per character); OOD = unweighted mean of the per-length losses beyond the "
        "training context; OOD/train PPL near 1 means no degradation with longer contexts (lower is better).")
    title = spec.title or "Language-model perplexity vs context length"  # as its figure: names what it measures
    return [metric_table(experiment, title, _caption(look, protocol, runs), runs, cells,
                         [("Task", "task"), ("Encoding", "encoding")], columns)]
