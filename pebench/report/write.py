"""``pebench report``: write the summaries, figures, tables and ``report.json`` of a results folder
(:func:`write_report`), or give its tables without writing (:func:`tables_for`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pebench import metrics as metric_registry
from pebench import store
from pebench.analysis import declarations, results
from pebench.analysis.machines import machine_effect
from pebench.protocol import MRR_LAST_PROTOCOL
from pebench.render.machine_text import machine_effect_text
from pebench.render.show_tables import SHOW_KEY, shown, shown_record
from pebench.render.tables import Table
from pebench.report.artifacts import (
    OUTPUTS_KEY,
    PAGE_FIGURE_FORMATS,
    Artifact,
    check_report_folders,
    output_digests,
    save_figure,
    save_table,
)
from pebench.report.boards import ranking_artifacts
from pebench.report.entries import ENCODING_FIGURES
from pebench.report.index import sections as index_sections
from pebench.report.layout_findings import titled
from pebench.report.layout_tables import floor_bounds
from pebench.report.layouts import encoding_figures, experiments_in_order, views
from pebench.report.main_table import lead_experiment, main_table
from pebench.report.overview import (
    findings_identical,
    findings_status,
    identical_models,
    identical_notes,
    parameter_table,
    status_table,
)
from pebench.report.protocol_text import (
    citation_bibtex,
    distinct_values,
    experiment_protocol,
    joined_values,
    latest_year,
    manifest_line,
    row_commits,
)
from pebench.report.replications import sections as replication_sections
from pebench.report_spec import ReportSpec
from pebench.store import schema
from pebench.store.report_file import task_ranks_name


@dataclass
class Report:
    """What :func:`write_report` wrote and found."""

    figures: list[Artifact]
    tables: list[Artifact]
    findings: list[str]
    protocol: str
    summaries: dict[str, Path] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # what could not be made, and why
    results_version: str = ""  # pebench.analysis.results.results_version of the runs reported
    citation: str = ""  # BibTeX of these results (citation_bibtex)
    replications: list[dict] = field(default_factory=list)  # sections of pebench.report.replications
    sections: dict = field(default_factory=dict)  # what the site shows beside the artifacts (report.index)
    main_table: str = ""  # the name of the table to cite (pebench.report.main_table), first of ``tables``
    lead_figure: str = ""  # the name of the figure a results page shows beside the main table (lead_figure)
    other_outputs: list[Path] = field(default_factory=list)  # files written beside the artifacts (per-task ranks)
    shown: dict = field(default_factory=dict)  # the tables pebench show prints (report.json's SHOW_KEY)
    encoding_figures: dict[str, str] = field(default_factory=dict)  # figure -> the encoding it emphasises


@dataclass
class _Made:
    """What the experiments' layouts and boards made, in report order (:func:`_experiment_artifacts`)."""

    figures: list[Artifact] = field(default_factory=list)
    tables: list[Artifact] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    other_outputs: list[Path] = field(default_factory=list)  # the per-task ranks written beside each board
    own_figures: dict[str, list[str]] = field(default_factory=dict)  # per experiment, its own layout's figures
    shown: list[dict] = field(default_factory=list)  # the layouts' tables as pebench show prints them (shown_record)


def _run_tables(data: pd.DataFrame, runs: pd.DataFrame) -> list[Table]:
    """The tables every report closes with: the encodings' parameters (with the model they were counted in) and
    the runs' status."""
    model = (f"d_model {joined_values(data['d_model'])}, layers {joined_values(data['n_layers'])}, "
             f"heads {joined_values(data['n_heads'])}, the same for every encoding.")
    return [parameter_table(runs, model), status_table(runs)]


def write_report(results_dir: str | Path, out_dir: str | Path | None = None, *,
                 declared: Mapping[str, ReportSpec] | None = None, suite_run_ids: Collection[str] = (),
                 sample: tuple[str, Collection[str]] | None = None) -> Report:
    """Write summary CSVs, figures and tables of ``results_dir`` under ``out_dir`` (default ``results_dir``).

    Each experiment reports as ``declared`` (``pebench report`` passes the declarations of the experiments
    registered in this installation), else as the folder records it (:mod:`pebench.analysis.declarations`).
    ``suite_run_ids``: the run ids of the folder's suite as this installation defines it, to say in
    ``report.json`` whether the folder holds them all (none: not said). ``sample``: the declared sample of its
    reference's suite the folder holds (:func:`pebench.plan.experiment.declared_sample`), its rerun compared on it.

    Raises:
        ResultsError: ``results_dir`` holds no valid results (the message names the bad file), or a report
            folder of ``out_dir`` is a symbolic link (:func:`~pebench.report.artifacts.check_report_folders`).
    """
    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    check_report_folders(out_dir)
    data = store.load(results_dir)
    runs = results.run_metrics(data)
    folders = {name: out_dir / name for name in ("summary", "figures", "tables")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    summaries, cells = _write_summaries(data, runs, folders["summary"])
    suite = joined_values(data["suite"]) if "suite" in data else results_dir.name
    version = results.results_version(data)
    stamp = f"{suite} {version}"  # under every table: the results it was made from
    specs, undeclared = declarations.resolve_report_specs(runs["experiment"], results_dir, declared=declared)
    experiments = experiments_in_order(runs["experiment"], specs)
    protocols = {e: experiment_protocol(data[data["experiment"] == e]) for e, _, _ in experiments}
    made = _experiment_artifacts(data, runs, cells, experiments, protocols, folders, stamp)
    lead = lead_experiment(experiments)
    lead_spec = next((spec for name, _, spec in experiments if name == lead), None)
    main = main_table(runs[runs["experiment"] == lead], lead, titled(lead, lead_spec, "main results"), stamp) \
        if lead else None
    if main is not None:  # the table to cite, first
        made.tables.insert(0, save_table(main, folders["tables"], stamp))
    emphasis = _encoding_figures(made, data[data["experiment"] == lead], lead, lead_spec, folders["figures"]) \
        if lead_spec is not None else {}
    made.tables += [save_table(table, folders["tables"], stamp) for table in _run_tables(data, runs)]
    identical = identical_models(data)  # read once: the findings, and the notes on the two encodings' pages
    made.findings += [findings_status(runs), *machine_findings(runs), *findings_identical(identical)]
    protocol = "\n".join([f"{e}: {p}" for e, p in protocols.items()] + [f"software: {manifest_line(results_dir)}"])
    if suite == "smoke":
        made.findings.insert(0, SMOKE_NOTE)
    report = Report(made.figures, made.tables, made.findings, protocol, summaries, [*undeclared, *made.skipped],
                    version, citation_bibtex(suite, version, row_commits(data), latest_year(results_dir),
                                             made_with=distinct_values(data, "pebench_version")),
                    replication_sections(out_dir, suite, data, results_dir))
    report.main_table = main.name if main is not None else ""
    report.lead_figure = lead_figure(made.own_figures, lead, [name for name, _, _ in experiments])
    report.encoding_figures = emphasis
    tables = [artifact.table for artifact in made.tables if artifact.table is not None]
    report.sections = index_sections(results_dir, out_dir, data, made.findings, tables, specs, suite_run_ids,
                                     emphasis, sample, identical_notes(identical))
    report.other_outputs = made.other_outputs
    report.shown = {"experiments": [name for name, _, _ in experiments], "tables": made.shown}
    _write_index(report, out_dir)
    return report


def _write_summaries(data: pd.DataFrame, runs: pd.DataFrame, folder: Path) -> tuple[dict[str, Path], pd.DataFrame]:
    """The summary CSVs of a report under ``folder`` (runs, cells, curves, comparisons, status); returns their
    paths and the cells with their floor bounds (:func:`~pebench.report.layout_tables.floor_bounds`)."""
    cells = results.aggregate(runs)
    summaries = {name: folder / f"{name}.csv" for name in ("runs", "cells", "curves", "comparisons", "status")}
    runs.to_csv(summaries["runs"], index=False)
    cells.to_csv(summaries["cells"], index=False)
    results.curves(data).to_csv(summaries["curves"], index=False)
    comparisons = [results.compare_to_best(runs, metric, metric_registry.get(metric).higher_is_better)
                   for metric in ("id_token_acc", "ood_token_acc", "ood_perplexity")]
    pd.concat(comparisons, ignore_index=True).dropna(subset=["mean"]).to_csv(summaries["comparisons"], index=False)
    status_columns = [c for c in ("experiment", "task", "encoding", "arch", "seed", "status", "run_id", "error")
                      if c in data.columns]
    data[data["status"] != "ok"].drop_duplicates("run_id")[status_columns].to_csv(summaries["status"], index=False)
    return summaries, floor_bounds(cells, data)


def _experiment_artifacts(data: pd.DataFrame, runs: pd.DataFrame, cells: pd.DataFrame,
                          experiments: Sequence[tuple[str, str, ReportSpec]], protocols: Mapping[str, str],
                          folders: Mapping[str, Path], stamp: str) -> _Made:
    """Each experiment's figures, tables and findings (its layouts' views) and its boards, in report order."""
    made = _Made()
    for experiment, layout, spec in experiments:
        part_data = data[data["experiment"] == experiment]
        part_runs, part_cells = runs[runs["experiment"] == experiment], cells[cells["experiment"] == experiment]
        if not schema.completed(part_runs).any():
            made.skipped.append(f"{experiment}: every run failed; no figures or tables")
            continue
        for view, view_spec, suffix in views(layout, spec):
            _view_figures(made, view.figures(part_data, experiment, view_spec), experiment, suffix, folders["figures"])
            for table in view.tables(part_runs, part_cells, experiment, protocols[experiment], view_spec):
                table = dataclasses.replace(table, name=table.name + suffix, version=stamp)
                made.tables.append(save_table(table, folders["tables"], stamp))
                made.shown.append(shown_record(shown(table), experiment))
            made.findings.extend(view.findings(part_runs, part_cells, experiment, view_spec))
        if spec.primary_metric:
            protocol = max(schema.recorded_protocols(part_data), default=2)
            artifacts, sentences = ranking_artifacts(part_runs, experiment, spec, folders["tables"], stamp,
                                                     protocol, part_data)
            made.tables.extend(artifacts)
            made.findings.extend(sentences)
            if artifacts and protocol <= MRR_LAST_PROTOCOL:  # an MRR board, and beside it its per-task ranks
                made.other_outputs.append(folders["tables"] / task_ranks_name(experiment))
    return made


def _view_figures(made: _Made, figures: Iterable[tuple[str, str, str, Callable[[], object]]], experiment: str,
                  suffix: str, folder: Path) -> None:
    """Draw and save a view's figures into ``made`` (a figure that cannot be drawn is skipped, with why)."""
    for name, title, caption, make in figures:
        name += suffix
        try:
            figure = make()
        except ValueError as exc:
            made.skipped.append(f"figure {name}: {exc}")
            continue
        made.figures.append(Artifact(name, title, caption, save_figure(figure, folder, name)))
        if not suffix:
            made.own_figures.setdefault(experiment, []).append(name)


def _encoding_figures(made: _Made, data: pd.DataFrame, experiment: str, spec: ReportSpec,
                      folder: Path) -> dict[str, str]:
    """Draw and save, after the report's other figures, each encoding of the lead ``experiment`` emphasised against
    every other (:func:`~pebench.report.layouts.encoding_figures`), for the encoding pages; returns figure name ->
    encoding (a figure that cannot be drawn is skipped, with why)."""
    drawn: dict[str, str] = {}
    try:
        figures = encoding_figures(data, experiment, spec)
    except ValueError as exc:  # no curves of accuracy to draw (a lead experiment of another kind)
        made.skipped.append(f"figures of each encoding against the others: {exc}")
        return drawn
    for encoding, (name, title, caption, make) in figures:
        if name in drawn:  # two encodings whose names differ only in punctuation: the first keeps the file
            made.skipped.append(f"figure {name}: its name is also {drawn[name]}'s")
            continue
        try:
            figure = make()
        except ValueError as exc:
            made.skipped.append(f"figure {name}: {exc}")
            continue
        made.figures.append(Artifact(name, title, caption, save_figure(figure, folder, name, PAGE_FIGURE_FORMATS)))
        drawn[name] = encoding
    return drawn


def lead_figure(own_figures: Mapping[str, Sequence[str]], lead: str | None, experiments: Sequence[str]) -> str:
    """The figure a results page leads with beside the main table: the first figure of the lead experiment's own
    layout (:func:`~pebench.report.main_table.lead_experiment`; when there is none or it drew no figure, of the
    first of ``experiments``, in report order, that drew one); ``""`` when none drew one. ``own_figures``: per
    experiment, the names of the figures its own layout drew (not those of its ``also`` layouts), in report order."""
    order = [lead] if lead in own_figures else [e for e in experiments if own_figures.get(e)]
    return own_figures[order[0]][0] if order else ""


#: the first finding of a smoke report: its numbers check that pebench runs, they are not results
SMOKE_NOTE = ("Smoke suite: a check that pebench runs end to end, not a result. Its models are 1-layer, 32 wide and "
              "trained for a few dozen steps, so no ranking or comparison below says anything about the encodings; "
              "the standard suite's results do.")


def _write_index(report: Report, out_dir: Path) -> None:
    """``report.json``: the artifacts (paths relative to ``out_dir``), findings and protocol."""

    def artifact(item: Artifact) -> dict:
        return {"name": item.name, "title": item.title, "caption": item.caption,
                "paths": {ext: str(path.relative_to(out_dir)) for ext, path in item.paths.items()}}

    written = [*(path for item in [*report.figures, *report.tables] for path in item.paths.values()),
               *report.summaries.values(), *report.other_outputs]
    index = {
        "figures": [artifact(f) for f in report.figures],
        "tables": [artifact(t) for t in report.tables],
        "findings": report.findings,
        "protocol": report.protocol,
        "summaries": {k: str(p.relative_to(out_dir)) for k, p in report.summaries.items()},
        OUTPUTS_KEY: output_digests(out_dir, written),
        "skipped": report.skipped,
        "results_version": report.results_version,
        "citation": report.citation,
        "main_table": report.main_table,
        "lead_figure": report.lead_figure,
        ENCODING_FIGURES: report.encoding_figures,
        **({"replications": report.replications} if report.replications else {}),
        SHOW_KEY: report.shown,
        **report.sections,
    }
    (out_dir / "report.json").write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")


def tables_for(results_dir: str | Path, experiments: Sequence[str] = (), *,
               declared: Mapping[str, ReportSpec] | None = None) -> list[Table]:
    """The tables of ``results_dir`` (optionally only ``experiments``, each declared as for :func:`write_report`)
    without writing anything (``pebench show`` on a folder without a current report; a report records them in
    ``report.json``, :data:`~pebench.render.show_tables.SHOW_KEY`):
    those :func:`write_report` writes for each experiment's layouts (its own and its ``also`` ones), each naming
    the results version (``pebench show`` leads with the main table as the report wrote it)."""
    data = store.load(results_dir)
    suite = joined_values(data["suite"]) if "suite" in data else Path(results_dir).name
    stamp = f"{suite} {results.results_version(data)}"  # of the whole folder, whatever is shown
    if experiments:
        present = set(data["experiment"])
        missing = [e for e in experiments if e not in present]
        if missing:
            raise store.ResultsError(
                f"{results_dir}: no runs of experiment(s) {', '.join(missing)}; present: {', '.join(sorted(present))}")
        data = data[data["experiment"].isin(experiments)]
    runs = results.run_metrics(data)
    cells = floor_bounds(results.aggregate(runs), data)
    specs, _ = declarations.resolve_report_specs(runs["experiment"], results_dir, declared=declared)
    tables = []
    for experiment, layout, spec in experiments_in_order(runs["experiment"], specs):
        part_runs = runs[runs["experiment"] == experiment]
        if not schema.completed(part_runs).any():
            continue
        part_cells, protocol = cells[cells["experiment"] == experiment], experiment_protocol(
            data[data["experiment"] == experiment])
        for view, view_spec, suffix in views(layout, spec):
            tables += [dataclasses.replace(table, name=table.name + suffix, version=stamp)
                       for table in view.tables(part_runs, part_cells, experiment, protocol, view_spec)]
    return tables


def machine_findings(runs: pd.DataFrame) -> list[str]:
    """The machine effect's sentence (:func:`pebench.analysis.machines.machine_effect`) when the runs come from
    more than one machine (issue 66); none otherwise."""
    if "machine" not in runs or runs["machine"].nunique() < 2:
        return []
    return [machine_effect_text(machine_effect(runs))]

