"""Write the report of a results folder: summary CSVs, figures and citable tables.

>>> report = write_report(Path("results/standard"))  # doctest: +SKIP
>>> report.findings[0]  # doctest: +SKIP
'NoPE encoder: 0.10 ± 0.01 token accuracy on order-dependent tasks (chance 0.10) vs 0.97 on controls'

Layout under ``out_dir`` (default: the results folder itself)::

    summary/runs.csv          one row per run and evaluation variant (pebench.results.run_metrics)
    summary/cells.csv         across seeds: mean, std, 95% CI, best-of-seeds, counts (aggregate)
    summary/curves.csv        the same per evaluation length (curves)
    summary/comparisons.csv   every encoding vs the best of its task (compare_to_best)
    summary/status.csv        failed and diverged runs with their errors
    figures/<name>.svg|.pdf
    tables/<name>.csv|.md|.tex
    report.json               the artifacts, findings and protocol (for the docs build)

``pebench report`` writes into a staging folder and moves the files into place (:func:`publish_report`); of
the files already there it removes only those the previous report recorded in its ``report.json`` and this
one no longer writes, never a file of the user's nor one through a symbolic link.

Experiments missing from a results set are skipped. Tables show mean ± 95%
CI over seeds, the best mean per task in bold and the encodings not
significantly worse than it underlined (LaTeX) or in italics (Markdown); see
:mod:`pebench.results` for the statistics.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import pebench
from pebench import declarations, encodings, leaderboard, plots, results, schema, store
from pebench import metrics as metric_registry
from pebench.experiment import ReportSpec, report_spec
from pebench.model import ARCHS
from pebench.registry import Registry
from pebench.report.findings import people_words
from pebench.report.index import sections as index_sections
from pebench.report.main_table import lead_experiment, main_table
from pebench.report.replications import sections as replication_sections
from pebench.schema import BASE_VARIANT, CELL_COLUMNS, GROUP_COLUMNS, encoding_label, encoding_labels
from pebench.tables import (
    RESULTS_STYLE,
    Cell,
    Table,
    format_mean_ci,
    format_number,
    to_latex,
    to_markdown,
)
from pebench.tables import Column as TableColumn  # report's Column is a metric column

#: the formats each figure is written in: SVG (the site shows it; any browser opens it) and PDF (for papers).
#: No PNG: a third drawing of every figure cost a third of a report's figure time, and the committed
#: results must fit the 64 MiB a GPU machine is sent. Convert the SVG where a bitmap is needed.
FIGURE_FORMATS = ("svg", "pdf")
TABLE_FORMATS = ("csv", "md", "tex")
MARK_LEGEND = (
    "Bold: best mean of its task; underlined (LaTeX) / italics (Markdown): not significantly worse than the best "
    f"(one-sided Welch t-test, Holm-corrected per task, alpha = {results.ALPHA}); needs >= 2 seeds."
)


@dataclass
class Artifact:
    """A written figure or table: its ``paths`` map a format (``svg``, ``tex``, ...) to a file."""

    name: str
    title: str
    caption: str
    paths: dict[str, Path]


@dataclass
class Report:
    """What :func:`write_report` wrote and found."""

    figures: list[Artifact]
    tables: list[Artifact]
    findings: list[str]
    protocol: str
    summaries: dict[str, Path] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # what could not be made, and why
    results_version: str = ""  # pebench.results.results_version of the runs reported
    citation: str = ""  # BibTeX of these results (citation_bibtex)
    replications: list[dict] = field(default_factory=list)  # sections of pebench.report.replications
    sections: dict = field(default_factory=dict)  # what the site shows beside the artifacts (report.index)
    main_table: str = ""  # the name of the table to cite (pebench.report.main_table), first of ``tables``


# --------------------------------------------------------------------------- table builders


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
    return str(row[column])


def metric_table(
    name: str, title: str, caption: str, runs: pd.DataFrame, cells: pd.DataFrame,
    keys: Sequence[tuple[str, str]], metrics: Sequence[Column], group: str = "task",
) -> Table:
    """A table with one row per cell: ``keys`` ((header, column) pairs) then ``metrics`` then the run count.

    Marks compare the contenders (encodings, variants) of each task
    (:data:`pebench.schema.GROUP_COLUMNS`) with :func:`pebench.results.compare_to_best`.
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
            line.append(Cell(format_mean_ci(mean, ci, m.kind) + (NOT_FITTED if m.judges and unfitted else ""),
                             mean, mark if isinstance(mark, str) else None))
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


def registered_columns(layout: str) -> list[Column]:
    """The metric columns of ``layout``'s tables, as the metrics registry lists them
    (:func:`pebench.metrics.table_columns`: a metric registered with ``tables=(layout,)`` is one of them)."""
    return [Column(metric.name) for metric in metric_registry.table_columns(layout)]


def _archs(cells: pd.DataFrame) -> list[str]:
    """Architectures present, in :data:`pebench.model.ARCHS` order, then any others by name."""
    present = set(cells["arch"])
    return [a for a in ARCHS if a in present] + sorted(present - set(ARCHS))


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
        title = spec.title or f"length extrapolation ({arch})"
        tables.append(metric_table(
            name, f"{experiment}: {title}", _caption(look, protocol, part_runs),
            part_runs, part_cells, [("Task", "task"), ("Encoding", "encoding")], registered_columns("extrapolation"),
        ))
    return tables


def order_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                 ) -> list[Table]:
    """Original vs shuffled accuracy, order reliance / invariance gap and equivariance gaps, one table per arch."""
    tables = []
    cells = cells.copy()
    cells["order_effect_mean"] = cells["order_reliance_mean"].fillna(cells["invariance_gap_mean"])
    cells["order_effect_ci95"] = cells["order_reliance_ci95"].fillna(cells["invariance_gap_ci95"])
    for stat in ("std", "best", "n"):
        cells[f"order_effect_{stat}"] = cells[f"order_reliance_{stat}"].where(
            cells["order_dependent"] == True, cells[f"invariance_gap_{stat}"])  # noqa: E712
    runs = runs.assign(order_effect=runs["order_reliance"].fillna(runs["invariance_gap"]))
    runs = runs.assign(order_effect=runs["order_effect"].where(runs["order_dependent"] == True))  # noqa: E712
    for arch in _archs(cells):
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
        title = spec.title or f"order sensitivity ({arch})"
        tables.append(metric_table(
            f"{experiment}_{arch}", f"{experiment}: {title}", _caption(look, protocol, part_runs),
            part_runs, part_cells, [("Task", "task"), ("Type", "order_dependent"), ("Encoding", "encoding")],
            columns,
        ))
    return tables


def variant_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                   ) -> list[Table]:
    """One trained model per task evaluated as trained and under each evaluation variant."""
    look = spec.caption or "The same trained weights evaluated as trained and under each evaluation variant."
    title = spec.title or "evaluation variants"
    return [metric_table(experiment, f"{experiment}: {title}", _caption(look, protocol, runs),
                         runs, cells, [("Task", "task"), ("Variant", "variant")], registered_columns("variants"))]


def perplexity_tables(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, protocol: str, spec: ReportSpec
                      ) -> list[Table]:
    """Language-model perplexity at the training context and beyond."""
    columns = registered_columns("perplexity")
    look = spec.caption or (
        "Perplexity = exp(mean loss per character); OOD = unweighted mean of the per-length losses beyond the "
        "training context; OOD/train PPL near 1 means no degradation with longer contexts (lower is better).")
    title = spec.title or "language-model perplexity vs context length"
    return [metric_table(experiment, f"{experiment}: {title}", _caption(look, protocol, runs), runs, cells,
                         [("Task", "task"), ("Encoding", "encoding")], columns)]


def parameter_table(runs: pd.DataFrame, protocol: str) -> Table:
    """Parameter counts per encoding and architecture, and how many more than the baseline (NoPE; flagged above
    10%)."""
    completed = runs[schema.completed(runs) & (runs["variant"] == BASE_VARIANT)]
    keys = ["experiment", "task", "arch", "train_max_len"]
    baseline = completed[completed["encoding"] == encodings.baseline_name()]
    nope = encoding_label(encodings.baseline_name()) if encodings.baseline_name() else "the baseline"
    base = baseline.groupby(keys)["params"].first().rename("baseline_params")
    frame = completed.join(base, on=keys)
    frame["extra"] = frame["params"] / frame["baseline_params"] - 1.0
    grouped = frame.groupby(["arch", "encoding", "encoding_options"], sort=False)
    data = grouped.agg(params_min=("params", "min"), params_max=("params", "max"),
                       encoding_params_min=("encoding_params", "min"), encoding_params_max=("encoding_params", "max"),
                       extra_vs_none_max=("extra", "max")).reset_index()
    data = data.sort_values(["arch", "encoding"], key=schema.sort_key).reset_index(drop=True)
    data["over_10_percent"] = data["extra_vs_none_max"] > 0.10

    def span(low: float, high: float) -> str:
        return f"{low:,.0f}" if low == high else f"{low:,.0f}–{high:,.0f}"

    rows, starts = [], []
    for i, row in data.iterrows():
        if i == 0 or row["arch"] != data.at[i - 1, "arch"]:
            starts.append(len(rows))
        extra = row["extra_vs_none_max"]
        rows.append([Cell(row["arch"], row["arch"]), Cell(plots.label(row["encoding"], row["encoding_options"]),
                                                          row["encoding"]),
                     Cell(span(row["params_min"], row["params_max"]), (row["params_min"], row["params_max"])),
                     Cell(span(row["encoding_params_min"], row["encoding_params_max"]),
                          (row["encoding_params_min"], row["encoding_params_max"])),
                     Cell("—" if not np.isfinite(extra) else f"{100 * extra:+.1f}%", extra),
                     Cell("yes" if row["over_10_percent"] else "no", bool(row["over_10_percent"]))])
    caption = ("Trainable parameters of the whole model and of the encoding alone (ranges over tasks and "
               "experiments: vocabularies and position-table sizes differ), and the largest increase over the "
               f"{nope} model of the same task; more than 10% is flagged as a fairness caveat. Model: {protocol}")
    columns = [TableColumn("Arch", "l", key=True), TableColumn("Encoding", "l", key=True),
               *(TableColumn(h, "r") for h in ("Params", "Encoding params", f"Max extra vs {nope}", "> 10%"))]
    return Table("parameters", "Parameter counts per encoding", caption, columns, rows, starts, data=data,
                 style=RESULTS_STYLE)


def status_table(runs: pd.DataFrame) -> Table:
    """Runs per experiment and status; failed and diverged runs are listed, never dropped."""
    unique = runs.drop_duplicates("run_id")
    counts = unique.groupby(["experiment", "status"]).size().unstack(fill_value=0)
    counts = counts.reindex(columns=list(schema.STATUSES), fill_value=0).reset_index()
    rows = [[Cell(r["experiment"], r["experiment"]),
             *(Cell(str(n), int(n)) for n in (r["ok"] + r["diverged"] + r["failed"], r["ok"], r["diverged"],
                                              r["failed"]))] for _, r in counts.iterrows()]
    bad = unique[unique["status"] != "ok"]
    listed = "; ".join(f"{r.experiment}/{r.task}/{r.encoding}/{r.arch}/seed {r.seed} ({r.status})"
                       for r in bad.itertuples()) or "no run"
    caption = ("Every run of the results set by status: diverged runs (training loss above the divergence "
               "threshold) are evaluated and included in the means; failed runs (an exception) have no numbers "
               f"and are counted in the Seeds column of every table. Not ok: {listed}.")
    columns = [TableColumn("Experiment", "l", key=True), *(TableColumn(h, "r") for h in
                                                              ("Runs", "ok", "diverged", "failed"))]
    return Table("runs", "Runs by status", caption, columns, rows, list(range(len(rows)))[:1], data=counts,
                 style=RESULTS_STYLE)


# --------------------------------------------------------------------------- protocol and findings


def _values(series: pd.Series) -> str:
    values = sorted(series.dropna().unique().tolist())
    return "/".join(format(v, "g") if isinstance(v, float) else str(v) for v in values) or "?"


def experiment_protocol(data: pd.DataFrame) -> str:
    """One sentence: model size, training budget and lengths, evaluation lengths, seeds."""
    completed = data[schema.completed(data)]
    source = completed if not completed.empty else data
    train_min = _values(data["train_min_len"]) if "train_min_len" in data else "1"
    n_examples = f"{_values(data['eval_n_examples'])} examples per length, " if "eval_n_examples" in data else ""
    decoding = f"{_values(data['eval_decoding'])} decoding, " if "eval_decoding" in data else ""
    eval_lengths = ", ".join(str(v) for v in sorted(source["eval_len"].dropna().astype(int).unique())) \
        if "eval_len" in source else "?"
    conditions = _values(source["condition"]) if "condition" in source else "original"
    train_max = _values(data["train_max_len"])
    train_lengths = train_max if train_min == train_max else f"{train_min}-{train_max}"
    steps = _values(data["steps"])
    if data["steps"].nunique() > 1:  # per-task budgets: name them
        per_task = data.groupby(["task", "arch"])["steps"].agg(_values)
        steps = ", ".join(f"{task} {n}" if data["arch"].nunique() == 1 else f"{task} ({arch}) {n}"
                          for (task, arch), n in per_task.items())
    return (f"{_values(data['arch'])}, d_model {_values(data['d_model'])}, layers {_values(data['n_layers'])}, "
            f"heads {_values(data['n_heads'])}; {steps} steps of batch {_values(data['batch_size'])}"
            f" at lr {_values(data['lr'])} on input lengths {train_lengths}; evaluated "
            f"at lengths {eval_lengths} ({n_examples}{decoding}conditions {conditions}); "
            f"seeds {_values(data['seed'])}; {data['encoding'].nunique()} encodings, tasks "
            f"{', '.join(sorted(data['task'].unique()))}.")


def _manifest_line(results_dir: Path) -> str:
    """The provenance line of a folder's manifest (:func:`pebench.store.read_manifest`, which refuses one of
    the wrong shape in one line): the software of its latest invocation, or of each source of a combined one."""
    manifest = store.read_manifest(results_dir)
    if manifest is None:
        return "no manifest.json"
    if manifest.get("combined") and not manifest.get("latest"):  # pebench combine: say where each part came from
        return "combined from " + "; ".join(
            f"{source.get('folder', '?')} ({source.get('runs', '?')} runs: {_software(source.get('manifest'))})"
            for source in manifest["combined"]["sources"])
    return _software(manifest.get("latest"))


def _software(latest: dict | None) -> str:
    """One line of software, machine and date from a manifest's ``latest`` invocation."""
    latest = latest or {}
    sha = str(latest.get("git_sha") or "?")[:10] + (" (dirty)" if latest.get("git_dirty") else "")
    return (f"pebench {latest.get('pebench_version', '?')}, git {sha}, torch {latest.get('torch_version', '?')}, "
            f"python {latest.get('python_version', '?')}, device {latest.get('device', '?')}, "
            f"{latest.get('platform', '?')}, {latest.get('date', '?')}")


def _across_tasks(runs: pd.DataFrame, metric: str) -> dict[str, float]:
    """Seed statistics of the per-seed mean over tasks (seeds are paired by their index across tasks)."""
    per_seed = runs[schema.completed(runs)].groupby("seed")[metric].mean()
    return results.seed_statistics(per_seed.to_numpy())


def findings_length(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """Per architecture and task, the best extrapolating encoding among the cells with a fitted seed (rule 1:
    an unfitted run is no evidence), with its fit fraction, the position-free floor and chance; tasks no
    encoding fitted are named as such."""
    out = []
    cells = cells[cells["variant"] == BASE_VARIANT]
    fitted_runs = runs[(runs["variant"] == BASE_VARIANT) & schema.completed(runs)]
    fitted_runs = fitted_runs[schema.fitted(fitted_runs)]
    for arch, part in cells.groupby("arch"):
        if part["ood_token_acc_mean"].notna().sum() == 0:
            continue
        judged = part[part["judged"]] if "judged" in part else part
        unfitted_tasks = sorted(set(part["task"]) - set(judged["task"]))
        if unfitted_tasks:
            out.append(f"{experiment} ({arch}): no encoding fitted {', '.join(unfitted_tasks)} within its step cap; "
                       "no extrapolation finding there.")
        tests = results.compare_to_best(fitted_runs[fitted_runs["arch"] == arch], "ood_token_acc")
        for task, rows in tests.groupby("task", sort=False):
            top = rows[rows["is_best"]].iloc[0]
            cell = part[(part["task"] == task) & (part["encoding"] == top["encoding"])].iloc[0]
            tied = [e for e in rows[rows["not_worse"]]["encoding"] if e != top["encoding"]]
            fitted = f"{int(round(cell['fitted_mean'] * cell['fitted_n']))}/{int(cell['fitted_n'])} seeds fitted" \
                if np.isfinite(cell.get("fitted_mean", np.nan)) else "no fit criterion"
            floor = cell.get("ood_floor_token_acc_mean", np.nan)
            out.append(
                f"{task} ({arch}): among fitted seeds, best OOD token accuracy {encoding_label(top['encoding'])} "
                f"{format_mean_ci(cell['ood_token_acc_mean'], cell['ood_token_acc_ci95'])} ({fitted}; ID "
                f"{cell['id_token_acc_mean']:.2f}; position-free floor {format_number(floor)}, chance "
                f"{cell['ood_chance_token_acc_mean']:.2f}); not significantly worse among fitted: "
                f"{encoding_labels(tied, empty='no other encoding')}."
            )
    return out


def findings_order(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """The baseline's (NoPE's) order blindness, the order reliance / invariance gap ranking, and equivariance
    gaps."""
    out = []
    runs = runs[schema.completed(runs)]
    baseline = encodings.baseline_name()
    nope = encoding_label(baseline) if baseline else ""
    for arch, part in runs.groupby("arch"):
        dependent, controls = part[part["order_dependent"] == True], part[part["order_dependent"] == False]  # noqa: E712
        base_dep, base_ctl = dependent[dependent["encoding"] == baseline], controls[controls["encoding"] == baseline]
        if not base_dep.empty and not base_ctl.empty:
            dep, ctl = _across_tasks(base_dep, "id_token_acc"), _across_tasks(base_ctl, "id_token_acc")
            chance = base_dep["id_chance_token_acc"].mean()
            out.append(
                f"{nope} {arch}: {format_mean_ci(dep['mean'], dep['ci95'])} token accuracy on order-dependent tasks "
                f"(chance {chance:.2f}) vs {format_mean_ci(ctl['mean'], ctl['ci95'])} on controls."
            )
        if not base_dep.empty:
            # An encoding no better than NoPE on the order-dependent tasks has not (yet) learnt to use order:
            # its order reliance says nothing about whether it could.
            fit = dependent.groupby("encoding")["id_token_acc"].mean()
            ceiling = fit.get(baseline, np.nan)
            unfit = [e for e in fit.index if e != baseline and fit[e] <= ceiling + 0.05]
            if unfit and np.isfinite(ceiling):
                out.append(
                    f"Not fitted at this budget ({arch}): "
                    f"{', '.join(f'{encoding_label(e)} {fit[e]:.2f}' for e in unfit)} "
                    f"ID token accuracy on order-dependent tasks, within 0.05 of {nope}'s {ceiling:.2f} (the best a "
                    f"model that ignores order can do); their order reliance reflects under-training, not order "
                    "blindness."
                )
        if not dependent.empty:
            reliance = dependent.groupby("encoding")["order_reliance"].mean().sort_values(ascending=False).dropna()
            gaps = controls.groupby("encoding")["invariance_gap"].mean().abs().sort_values(ascending=False).dropna()
            if not reliance.empty:
                text = (f"Order reliance, {arch} (original − shuffled token accuracy, mean over order-dependent "
                        f"tasks): highest {encoding_label(reliance.index[0])} {reliance.iloc[0]:.2f}, lowest "
                        f"{encoding_label(reliance.index[-1])} "
                        f"{reliance.iloc[-1]:.2f}")
                if not gaps.empty:
                    text += f"; largest invariance gap on controls: {encoding_label(gaps.index[0])} {gaps.iloc[0]:.2f}"
                out.append(text + ".")
        gaps = part.groupby("encoding")[["equivariance_gap_init", "equivariance_gap_trained"]].mean()
        if baseline in gaps.index and arch == "encoder" and np.isfinite(gaps.at[baseline, "equivariance_gap_trained"]):
            others = gaps.drop(index=baseline)["equivariance_gap_trained"].dropna()
            text = (f"Permutation-equivariance gap, {nope} encoder: {gaps.at[baseline, 'equivariance_gap_init']:.1e} "
                    f"at init, {gaps.at[baseline, 'equivariance_gap_trained']:.1e} after training")
            if not others.empty:
                text += f" (smallest other encoding: {encoding_label(others.idxmin())} {others.min():.1e})"
            out.append(text + ".")
    return out


def findings_variants(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """OOD token accuracy of each evaluation variant, mean over tasks, in the order the experiment declares."""
    per_variant = cells.groupby("variant", sort=False)[["ood_token_acc_mean", "id_token_acc_mean"]].mean()
    per_variant = per_variant.sort_index(key=schema.sort_key)
    if per_variant["ood_token_acc_mean"].isna().all():
        return []
    parts = ", ".join(f"{v} {row['ood_token_acc_mean']:.2f}" for v, row in per_variant.iterrows())
    n_tasks = cells["task"].nunique()
    return [f"{spec.title or experiment} (OOD token accuracy, mean over {n_tasks} task{'s' if n_tasks != 1 else ''}): "
            f"{parts}; ID token accuracy as trained {per_variant['id_token_acc_mean'].iloc[0]:.2f}."]


def findings_perplexity(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """Perplexity degradation beyond the training context: best and worst encoding."""
    cells = cells[cells["variant"] == BASE_VARIANT].dropna(subset=["perplexity_ratio_mean"])
    if cells.empty:
        return []
    ranked = cells.sort_values("perplexity_ratio_mean")
    best, worst = ranked.iloc[0], ranked.iloc[-1]

    def describe(row: pd.Series) -> str:
        name = plots.label(row["encoding"], row["encoding_options"])
        return (f"{name} {format_number(row['ood_perplexity_mean'], 'ppl')} "
                f"({row['perplexity_ratio_mean']:.2f}x its perplexity at the training length, "
                f"{format_number(row['train_perplexity_mean'], 'ppl')})")

    lengths = f"{int(runs['train_max_len'].max())}"
    return [f"{experiment}: perplexity beyond the training context ({lengths} characters): least degradation "
            f"{describe(best)}, most {describe(worst)}."]


def findings_status(runs: pd.DataFrame) -> str:
    unique = runs.drop_duplicates("run_id")
    counts = unique["status"].value_counts()
    return (f"{len(unique)} runs: {counts.get('ok', 0)} ok, {counts.get('diverged', 0)} diverged (included in the "
            f"means), {counts.get('failed', 0)} failed (counted, listed in tables/runs).")


# --------------------------------------------------------------------------- writing


def _save_figure(figure, directory: Path, name: str) -> dict[str, Path]:
    import matplotlib

    paths = {}
    metadata = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}  # the same bytes every time
    with matplotlib.rc_context({"svg.hashsalt": "pebench", "svg.fonttype": "none"}):
        for ext in FIGURE_FORMATS:
            path = store.path_in(directory, f"{name}.{ext}")
            figure.savefig(path, metadata=metadata[ext])
            paths[ext] = path
    return paths


def _save_table(table: Table, directory: Path, version: str = "") -> Artifact:
    """Write ``table`` as ``<name>.csv`` (its data), ``.md`` and ``.tex``, naming the results ``version``
    (:func:`pebench.tables.version_line`) under it; returns the artifact."""
    table = dataclasses.replace(table, version=version or table.version)
    paths = {ext: store.path_in(directory, f"{table.name}.{ext}") for ext in TABLE_FORMATS}
    table.data.to_csv(paths["csv"], index=False)
    paths["md"].write_text(to_markdown(table))
    paths["tex"].write_text(to_latex(table))
    return Artifact(table.name, table.title, table.caption, paths)


# --------------------------------------------------------------------------- layouts

#: caption fragment of every accuracy-vs-length figure
SHADE = ("grey area: training lengths; dashed black: chance; dash-dotted grey: floor (no position), the best "
         "accuracy without position information, so only a line above it uses position; lines and bands: mean "
         "and 95% CI over the fitted seeds; thin faint dotted lines labelled (not fitted): no seed met the fit "
         "criterion, so that line is a model that did not learn the task, not a finding")

#: (name, title, caption, make) of one figure
FigureSpec = tuple[str, str, str, Callable[[], object]]


@dataclass(frozen=True)
class Layout:
    """How the report shows an experiment: its tables, figures and findings (the metrics ``pebench compare``
    checks are the layout's entry in :data:`pebench.metrics.LAYOUT_KEY_METRICS`). An experiment names its
    layout in its :class:`~pebench.experiment.ReportSpec`; a plugin can register a new one in :data:`LAYOUTS`
    (and its key metrics in :data:`pebench.metrics.LAYOUT_KEY_METRICS`).

    Attributes:
        tables: ``(runs, cells, experiment, protocol, spec) -> list[Table]``.
        figures: ``(data, experiment, spec) -> list[FigureSpec]`` (made lazily; a ``ValueError`` skips one).
        findings: ``(runs, cells, experiment, spec) -> list[str]``, one sentence each.
    """

    tables: Callable[..., list[Table]]
    figures: Callable[..., list[FigureSpec]]
    findings: Callable[..., list[str]]


LAYOUTS: Registry[Layout] = Registry("report layout", base=Layout)


def layout_of(experiment: str, spec: ReportSpec | None = None) -> tuple[Layout, ReportSpec]:
    """The layout and report declaration of ``experiment``: ``spec`` when given (a declaration a results folder
    records, :mod:`pebench.declarations`), else the registered one (:func:`pebench.experiment.report_spec`)."""
    spec = spec if spec is not None else report_spec(experiment)
    return LAYOUTS.get(spec.layout), spec


def key_metrics(experiment: str, spec: ReportSpec | None = None) -> tuple[str, ...]:
    """The metrics ``pebench compare`` checks for ``experiment`` (declared by ``spec`` when given, as in
    :func:`layout_of`): its declaration's, else its layout's."""
    return declarations.key_metrics(layout_of(experiment, spec)[1])


def extrapolation_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Token and sequence accuracy vs length per architecture, and the OOD heatmap."""
    figures = []
    for arch in sorted(data["arch"].unique()):
        for metric in ("token_acc", "seq_acc"):
            kind = metric_registry.get(metric, "length").axis_label
            figures.append((
                f"{experiment}_{arch}_{metric}", f"{experiment}: {kind} vs length ({arch})",
                f"{kind.capitalize()} vs evaluation length, one line per encoding ({SHADE}); look at how "
                "fast each fitted (solid or dashed) line falls right of the grey area, and whether it stays "
                "above the floor and chance.",
                lambda arch=arch, metric=metric: plots.accuracy_vs_length(data, experiment, arch=arch, metric=metric),
            ))
    figures.append((
        f"{experiment}_ood_heatmap", f"{experiment}: OOD token accuracy",
        "Mean OOD token accuracy (lengths beyond training, mean over the fitted seeds) per encoding and task; "
        "bright rows are encodings that extrapolate on every task; hatched cells with † had no fitted seed (mean "
        "over all seeds, a model that did not learn the task: skip them); compare with chance and the "
        "position-free floor in the tables.",
        lambda: plots.ood_heatmap(data, experiment),
    ))
    return figures


def order_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Original minus shuffled accuracy per encoding, task and architecture."""
    return [(experiment, spec.title or "Order sensitivity",
             spec.figure_caption or
             "Original minus shuffled token accuracy per encoding; look for tall solid bars (order-dependent "
             "tasks: the model uses order) and hatched bars near zero (controls: it ignores order where it "
             "should); one panel per architecture (encoder and decoder side by side). Bars and error bars: mean "
             "and 95% CI over the fitted seeds; hollow bars with a dashed outline had no fitted seed (mean over "
             "all seeds, a model that did not learn the task: not evidence either way).",
             lambda: plots.order_sensitivity(data, experiment))]


def variant_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Accuracy vs length, one line per evaluation variant."""
    caption = spec.figure_caption or ("Token accuracy vs evaluation length of the trained model and of each "
                                      "evaluation variant; look at the lengths right of the grey area ({shade}).")
    title = spec.title or "Evaluation variants"
    return [(experiment, title, caption.format(shade=SHADE),
             lambda: plots.variant_curves(data, experiment, title=title))]


def perplexity_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Perplexity vs context length, one line per encoding."""
    return [(f"{experiment}_perplexity", spec.title or "Language-model perplexity vs context length",
             spec.figure_caption or
             "Character-LM perplexity (log scale) vs evaluation context; flat lines right of the grey area "
             "(training context) mean the encoding extrapolates; rising lines mean it does not. "
             "Bands: 95% CI over seeds.",
             lambda: plots.perplexity_vs_length(data, experiment))]


LAYOUTS.register("extrapolation")(Layout(extrapolation_tables, extrapolation_figures, findings_length))
LAYOUTS.register("order")(Layout(order_tables, order_figures, findings_order))
LAYOUTS.register("variants")(Layout(variant_tables, variant_figures, findings_variants))
LAYOUTS.register("perplexity")(Layout(perplexity_tables, perplexity_figures, findings_perplexity))


def _experiments_in_order(experiments: Sequence[str], specs: Mapping[str, ReportSpec]
                          ) -> list[tuple[str, Layout, ReportSpec]]:
    """``experiments`` with their layouts (declared by ``specs``), ordered by their declared ``position`` (then
    as given)."""
    entries = [(name, *layout_of(name, specs[name])) for name in dict.fromkeys(experiments)]
    return sorted(entries, key=lambda entry: entry[2].position)


def _views(layout: Layout, spec: ReportSpec) -> list[tuple[Layout, ReportSpec, str]]:
    """The layouts an experiment is shown in: its own, then each of ``spec.also`` (with its own titles and a
    name suffix ``_<layout>`` on its tables and figures)."""
    return [(layout, spec, "")] + [(LAYOUTS.get(extra), ReportSpec(layout=extra, position=spec.position),
                                    f"_{extra}") for extra in spec.also]


def write_report(results_dir: str | Path, out_dir: str | Path | None = None, *,
                 declared: Mapping[str, ReportSpec] | None = None, suite_run_ids: Collection[str] = ()) -> Report:
    """Write summary CSVs, figures and tables of ``results_dir`` under ``out_dir`` (default ``results_dir``).

    Each experiment reports as ``declared`` (``pebench report`` passes the declarations of the experiments
    registered in this installation), else as the folder records it (:mod:`pebench.declarations`).
    ``suite_run_ids``: the run ids of the folder's suite as this installation defines it, to say in
    ``report.json`` whether the folder holds them all (none: not said).

    Raises:
        ResultsError: ``results_dir`` holds no valid results (the message names the bad file), or a report
            folder of ``out_dir`` is a symbolic link (:func:`check_report_folders`).
    """
    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    check_report_folders(out_dir)
    data = store.load(results_dir)
    runs = results.run_metrics(data)
    cells = results.aggregate(runs)
    folders = {name: out_dir / name for name in ("summary", "figures", "tables")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    summaries = {
        "runs": folders["summary"] / "runs.csv",
        "cells": folders["summary"] / "cells.csv",
        "curves": folders["summary"] / "curves.csv",
        "comparisons": folders["summary"] / "comparisons.csv",
        "status": folders["summary"] / "status.csv",
    }
    runs.to_csv(summaries["runs"], index=False)
    cells.to_csv(summaries["cells"], index=False)
    results.curves(data).to_csv(summaries["curves"], index=False)
    comparisons = [results.compare_to_best(runs, metric, metric_registry.get(metric).higher_is_better)
                   for metric in ("id_token_acc", "ood_token_acc", "ood_perplexity")]
    pd.concat(comparisons, ignore_index=True).dropna(subset=["mean"]).to_csv(summaries["comparisons"], index=False)
    status_columns = [c for c in ("experiment", "task", "encoding", "arch", "seed", "status", "run_id", "error")
                      if c in data.columns]
    data[data["status"] != "ok"].drop_duplicates("run_id")[status_columns].to_csv(summaries["status"], index=False)

    suite = _values(data["suite"]) if "suite" in data else results_dir.name
    version = results.results_version(data)
    stamp = f"{suite} {version}"  # under every table: the results it was made from
    specs, undeclared = declarations.resolve_report_specs(runs["experiment"], results_dir, declared=declared)
    experiments = _experiments_in_order(runs["experiment"], specs)
    protocols = {e: experiment_protocol(data[data["experiment"] == e]) for e, _, _ in experiments}
    figures, tables, findings, skipped = [], [], [], list(undeclared)
    for experiment, layout, spec in experiments:
        part_data = data[data["experiment"] == experiment]
        part_runs, part_cells = runs[runs["experiment"] == experiment], cells[cells["experiment"] == experiment]
        if not schema.completed(part_runs).any():
            skipped.append(f"{experiment}: every run failed; no figures or tables")
            continue
        for view, view_spec, suffix in _views(layout, spec):
            for name, title, caption, make in view.figures(part_data, experiment, view_spec):
                name += suffix
                try:
                    figure = make()
                except ValueError as exc:
                    skipped.append(f"figure {name}: {exc}")
                    continue
                figures.append(Artifact(name, title, caption, _save_figure(figure, folders["figures"], name)))
            for table in view.tables(part_runs, part_cells, experiment, protocols[experiment], view_spec):
                table = dataclasses.replace(table, name=table.name + suffix)
                tables.append(_save_table(table, folders["tables"], stamp))
            findings.extend(view.findings(part_runs, part_cells, experiment, view_spec))
        if spec.primary_metric:
            artifacts, sentences = ranking_artifacts(part_runs, experiment, spec, folders["tables"], stamp)
            tables.extend(artifacts)
            findings.extend(sentences)
    lead = lead_experiment(experiments)
    main = main_table(runs[runs["experiment"] == lead], lead, people_words(lead), stamp) if lead else None
    if main is not None:  # the table to cite, first
        tables.insert(0, _save_table(main, folders["tables"], stamp))
    model = (f"d_model {_values(data['d_model'])}, layers {_values(data['n_layers'])}, "
             f"heads {_values(data['n_heads'])}, the same for every encoding.")
    tables.append(_save_table(parameter_table(runs, model), folders["tables"], stamp))
    tables.append(_save_table(status_table(runs), folders["tables"], stamp))
    findings.append(findings_status(runs))
    protocol = "\n".join([f"{e}: {p}" for e, p in protocols.items()] + [f"software: {_manifest_line(results_dir)}"])
    if suite == "smoke":
        findings.insert(0, SMOKE_NOTE)
    report = Report(figures, tables, findings, protocol, summaries, skipped, version,
                    citation_bibtex(suite, version, _commits(data), _year(results_dir),
                                    made_with=_distinct(data, "pebench_version")),
                    replication_sections(out_dir, suite, data, results_dir))
    report.main_table = main.name if main is not None else ""
    report.sections = index_sections(results_dir, out_dir, data, findings, specs, suite_run_ids)
    _write_index(report, out_dir)
    return report


#: the first finding of a smoke report: its numbers check that pebench runs, they are not results
SMOKE_NOTE = ("Smoke suite: a check that pebench runs end to end, not a result. Its models are 1-layer, 32 wide and "
              "trained for a few dozen steps, so no ranking or comparison below says anything about the encodings; "
              "the standard suite's results do.")


def _commits(data: pd.DataFrame) -> list[str]:
    """The code commits that made the rows (their ``commit`` column), in order of first appearance."""
    return _distinct(data, "commit")


def _distinct(data: pd.DataFrame, column: str) -> list[str]:
    """The values of ``column`` in the rows (e.g. the pebench versions that made them), in order of first
    appearance; empty without the column."""
    if column not in data:
        return []
    return [str(c) for c in dict.fromkeys(data[column].dropna())]


def _year(results_dir: Path) -> str:
    """The year of the folder's latest sweep (its manifest), or ``""`` without one."""
    try:
        manifest = store.read_manifest(results_dir) or {}
    except store.ResultsError:
        return ""
    date = str((manifest.get("latest") or {}).get("date") or "")
    return date[:4] if date[:4].isdigit() else ""


def citation_bibtex(suite: str, version: str, commits: Sequence[str], year: str = "",
                    made_with: Sequence[str] = ()) -> str:
    """A BibTeX entry for a set of results: the suite, its results version and protocol, the pebench versions
    that made its rows (``made_with``, their ``pebench_version``; default this one) and the code commits that
    made them (where the rows record them), and ``year`` (its latest sweep's)."""
    made_by = (f"; made by pebench commit {', '.join(c[:12] for c in commits)}" if commits
               else "; rows made before pebench recorded commits")
    protocol = version.split("-")[0].removeprefix("v")
    return "\n".join([
        f"@misc{{pebench_{suite}_{version.replace('-', '_')},",
        f"  title = {{pebench reference results: the {suite} suite}},",
        "  author = {{pebench developers}},",
        f"  note = {{results version {suite} {version}, protocol {protocol}{made_by}; "
        f"pebench {', '.join(made_with) or pebench.__version__}}}"
        + (f",\n  year = {{{year}}}" if year else ""),
        "}"])


def ranking_artifacts(runs: pd.DataFrame, experiment: str, spec: ReportSpec, directory: Path, version: str = ""
                      ) -> tuple[list[Artifact], list[str]]:
    """The leaderboard (MRR and mean rank over tasks, bootstrap over seeds) and the declared pairwise
    comparisons of ``experiment`` on its primary metric (:mod:`pebench.leaderboard`), written as CSV,
    markdown and LaTeX naming the results ``version``; returns the artifacts and one finding per architecture."""
    metric = spec.primary_metric
    label = metric_registry.get(metric).axis_label
    board = leaderboard.leaderboard(runs, metric)
    if board.empty:
        return [], []
    name = f"leaderboard_{experiment}"
    caption = (f"Encodings ranked per architecture by {label} on every task of {experiment} (rank 1 = best "
               "mean over seeds; a run that did not fit its training distribution scores 0): mean reciprocal "
               "rank (MRR, Kazemnejad et al. 2023) and mean rank over tasks, each with a 95% percentile "
               "bootstrap interval (seeds resampled within every task and encoding); tasks fitted = tasks on "
               "which every seed met the fit criterion. Look at the MRR intervals: overlapping ones are not "
               "a ranking.")
    artifacts = [_save_table(dataclasses.replace(
        leaderboard.leaderboard_table(board, caption, name, f"tab:pebench-{name}"),
        title=f"{experiment}: leaderboard ({label})"), directory, version)]
    leaderboard.task_ranks(runs, metric).to_csv(store.path_in(directory, f"task_ranks_{experiment}.csv"), index=False)
    fits = leaderboard.fit_fractions(runs)
    if not fits.empty:
        fit_name = f"fit_{experiment}"
        fit_caption = ("Seeds that met the fit criterion (held-out token accuracy at the longest training length "
                       "reaching the protocol's threshold within the step cap), per task; All = the fraction "
                       f"over every task. Look for capable encodings that did not fit: their {label} is not "
                       "judged.")
        artifacts.append(_save_table(dataclasses.replace(
            leaderboard.fit_table(fits, fit_caption, fit_name, f"tab:pebench-{fit_name}"),
            title=f"{experiment}: seeds fitted per task"), directory, version))
    v3, findings = board_artifacts(runs, experiment, directory, version)
    artifacts = v3 + artifacts
    if spec.comparisons:
        table = leaderboard.pairwise(runs, spec.comparisons, metric)
        name = f"pairwise_{experiment}"
        caption = (f"The pairwise comparisons declared before the results were made, on {label}: runs paired "
                   "by task and seed (an unfitted run scores 0), mean difference a − b with a 95% bootstrap "
                   "interval, two-sided sign-flip permutation test, p-values Holm-corrected over the whole "
                   "family (every comparison and architecture). Look at the verdict column.")
        artifacts.append(_save_table(dataclasses.replace(
            leaderboard.pairwise_table(table, caption, name, f"tab:pebench-{name}"),
            title=f"{experiment}: declared pairwise comparisons"), directory, version))
        family = int(table["p_value"].notna().sum())  # the Holm family: every tested comparison and arch
        for _, row in table.iterrows():  # a comparison without a single pair stays in the table only
            if isinstance(row.get("verdict"), str) and row["verdict"] and row["n_pairs"] > 0:
                findings.append(f"{people_words(experiment, row['arch'])}: {encoding_label(row['a'])} vs "
                                f"{encoding_label(row['b'])}: {leaderboard.verdict_text(row)} "
                                f"(mean difference {row['mean_diff']:+.3f} [{row['ci_low']:+.3f}, "
                                f"{row['ci_high']:+.3f}], a 95% interval not adjusted for the {family} comparisons, "
                                f"while the Holm p = {row['p_holm']:.3g} is; {int(row['n_pairs'])} pairs).")
    return artifacts, findings


def board_artifacts(runs: pd.DataFrame, experiment: str, directory: Path, version: str = ""
                    ) -> tuple[list[Artifact], list[str]]:
    """The boards of protocol v3 for ``experiment`` (:mod:`pebench.leaderboard`): extrapolation tiers on jointly
    fitted runs, capability (fit rates) and harm on the controls, each as CSV, markdown and LaTeX naming the
    results ``version``; returns the artifacts and one finding per architecture that names a winner only where
    the tiers separate one."""
    label = metric_registry.get(leaderboard.PRIMARY_SCORE).axis_label
    artifacts, findings = [], []

    def board(kind: str, frame: pd.DataFrame, make: Callable[..., Table], caption: str, what: str) -> None:
        name = f"{kind}_{experiment}"
        table = make(frame, caption, name, f"tab:pebench-{name}")
        artifacts.append(_save_table(dataclasses.replace(table, title=f"{people_words(experiment)}: {what}"),
                                     directory, version))

    tiers = leaderboard.extrapolation_board(runs)
    if not tiers.empty:
        board("extrapolation", tiers, leaderboard.extrapolation_table,
              f"Extrapolation board: {label} ((OOD accuracy - position-free floor) / (1 - floor), mean over tasks of "
              "the mean over seeds) of the encodings that fitted at least "
              f"{100 * leaderboard.BOARD_MIN_FIT:.0f}% of their order-dependent runs, on the task-seed pairs in which "
              "every one of them fitted; 95% intervals of a two-level bootstrap (tasks, then seeds); encodings whose "
              "interval overlaps a tier leader's share its tier; P(first) = share of bootstrap replicates in which "
              "it is best. Look at the tiers, not the order inside one.", "extrapolation tiers")
        for arch in tiers["arch"].unique():
            findings.append(f"{people_words(experiment, arch)}: {leaderboard.tier_sentence(tiers, arch)}")
    capability = leaderboard.capability(runs)
    if not capability.empty:
        board("capability", capability, leaderboard.capability_table,
              "Capability board: runs that met the fit criterion within the step cap, on the order-dependent tasks "
              "and on the order-free controls. An encoding that does not fit a task is not judged on it; look for "
              "encodings that cannot fit what they should represent.", "capability (fit rates)")
    harm = leaderboard.harm(runs)
    if not harm.empty:
        board("harm", harm, leaderboard.harm_table,
              "Harm on the order-free controls (tasks whose answer the bag of input symbols gives): OOD token "
              "accuracy of every run, fitted or not, and its difference from the position-free baseline on the same "
              "task-seed pairs, with 95% two-level bootstrap intervals; harms = the interval of the difference lies "
              "below 0. Look for encodings that cost accuracy where no order is needed.", "harm on the controls")
    return artifacts, findings


#: the folders a report writes into under its output folder; report.json is written beside them
REPORT_FOLDERS = ("summary", "figures", "tables")


def recorded_outputs(out_dir: Path) -> set[Path]:
    """The files the report in ``out_dir`` recorded writing in its ``report.json`` (its figures', tables' and
    summaries' paths), relative to ``out_dir``. The folder may come from anyone: only relative paths inside
    :data:`REPORT_FOLDERS` without ``..`` count; empty when there is no readable ``report.json``."""
    try:
        index = json.loads((Path(out_dir) / "report.json").read_text())
    except (OSError, ValueError):
        return set()
    if not isinstance(index, dict):
        return set()
    listed = [*(index.get("summaries") or {}).values()] if isinstance(index.get("summaries"), dict) else []
    for kind in ("figures", "tables"):
        for item in index.get(kind) or []:
            if isinstance(item, dict) and isinstance(item.get("paths"), dict):
                listed += item["paths"].values()
    recorded = set()
    for text in listed:
        path = Path(text) if isinstance(text, str) else None
        if (path is not None and not path.is_absolute() and len(path.parts) > 1
                and path.parts[0] in REPORT_FOLDERS and not {"..", "."} & set(path.parts)):
            recorded.add(path)
    return recorded


def check_report_folders(out_dir: Path) -> None:
    """Refuse an output folder whose report folders or ``report.json`` are symbolic links or of the wrong kind:
    a report writes and removes files in folders of its own only, never through a link out of the folder.

    Raises:
        ResultsError: naming the link and what to do, on one line.
    """
    for name in (*REPORT_FOLDERS, "report.json"):
        path = Path(out_dir) / name
        if path.is_symlink():
            raise store.ResultsError(f"{path} is a symbolic link; a report writes only into folders of its own: "
                                       "remove the link or choose another --out")
        if path.exists() and path.is_dir() != (name in REPORT_FOLDERS):
            kind = "a file" if name in REPORT_FOLDERS else "a folder"
            raise store.ResultsError(f"{path} is {kind}, where the report writes its {name}: move it away or "
                                       "choose another --out")


def publish_report(staging: Path, out_dir: Path) -> list[Path]:
    """Move the report written into ``staging`` (by :func:`write_report`) into ``out_dir`` file by file
    (``os.replace``), then remove the files the previous report there recorded writing (its ``report.json``,
    :func:`recorded_outputs`) that this one did not write (a table of a layout since changed would be read
    as current). Nothing else is ever removed: a user's own files in the report's folders stay, and a
    symbolic link is neither followed nor removed.

    Returns:
        The files removed.

    Raises:
        ResultsError: a report folder of ``out_dir`` is a symbolic link (:func:`check_report_folders`).
    """
    staging, out_dir = Path(staging), Path(out_dir)
    check_report_folders(out_dir)
    previous = recorded_outputs(out_dir)
    written = {path.relative_to(staging) for path in staging.rglob("*") if path.is_file()}
    for relative in sorted(written):
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / relative, target)
    removed = []
    for relative in sorted(previous - written):
        path = out_dir / relative
        folders = [out_dir / Path(*relative.parts[:k]) for k in range(1, len(relative.parts))]
        if any(folder.is_symlink() or not folder.is_dir() for folder in folders):
            continue  # a link or a file on the way: not where the previous report wrote
        if path.is_symlink() or not path.is_file():
            continue  # a report writes plain files only
        path.unlink()
        removed.append(path)
    return removed


def _write_index(report: Report, out_dir: Path) -> None:
    """``report.json``: the artifacts (paths relative to ``out_dir``), findings and protocol."""

    def artifact(item: Artifact) -> dict:
        return {"name": item.name, "title": item.title, "caption": item.caption,
                "paths": {ext: str(path.relative_to(out_dir)) for ext, path in item.paths.items()}}

    index = {
        "figures": [artifact(f) for f in report.figures],
        "tables": [artifact(t) for t in report.tables],
        "findings": report.findings,
        "protocol": report.protocol,
        "summaries": {k: str(p.relative_to(out_dir)) for k, p in report.summaries.items()},
        "skipped": report.skipped,
        "results_version": report.results_version,
        "citation": report.citation,
        "main_table": report.main_table,
        **({"replications": report.replications} if report.replications else {}),
        **report.sections,
    }
    (out_dir / "report.json").write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")


def tables_for(results_dir: str | Path, experiments: Sequence[str] = (), *,
               declared: Mapping[str, ReportSpec] | None = None) -> list[Table]:
    """The tables of ``results_dir`` (optionally only ``experiments``, each declared as for :func:`write_report`)
    without writing anything (``pebench show``):
    those :func:`write_report` writes for each experiment's layouts (its own and its ``also`` ones), each naming
    the results version (``pebench show`` leads with the main table as the report wrote it)."""
    data = store.load(results_dir)
    suite = _values(data["suite"]) if "suite" in data else Path(results_dir).name
    stamp = f"{suite} {results.results_version(data)}"  # of the whole folder, whatever is shown
    if experiments:
        present = set(data["experiment"])
        missing = [e for e in experiments if e not in present]
        if missing:
            raise store.ResultsError(
                f"{results_dir}: no runs of experiment(s) {', '.join(missing)}; present: {', '.join(sorted(present))}")
        data = data[data["experiment"].isin(experiments)]
    runs = results.run_metrics(data)
    cells = results.aggregate(runs)
    specs, _ = declarations.resolve_report_specs(runs["experiment"], results_dir, declared=declared)
    tables = []
    for experiment, layout, spec in _experiments_in_order(runs["experiment"], specs):
        part_runs = runs[runs["experiment"] == experiment]
        if not schema.completed(part_runs).any():
            continue
        part_cells, protocol = cells[cells["experiment"] == experiment], experiment_protocol(
            data[data["experiment"] == experiment])
        for view, view_spec, suffix in _views(layout, spec):
            tables += [dataclasses.replace(table, name=table.name + suffix, version=stamp)
                       for table in view.tables(part_runs, part_cells, experiment, protocol, view_spec)]
    return tables


