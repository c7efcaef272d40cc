"""The leaderboard page, the headline findings, the fit, floor and fit-resolution tables of the protocol
page and the reference's history, from the committed reports."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from pebench import protocol_tables
from pebench.protocol_tables import LEADERBOARD_TABLES, protocol_columns_text, unranked_suites_text

from .common import (
    DOCS,
    REFERENCE_SUITE,
    ROOT,
    TABLE_DOWNLOADS,
    _count_runs,
    _filled,
    _has_results,
    markdown_table,
    not_in_results,
    report_index,
    shown,
    source_path,
    suite_folders,
    tables_text,
)
from .results_pages import completeness


def fit_table(folder: Path) -> str:
    """Per experiment with a fit criterion: for every encoding and architecture, the seeds that met the fit
    criterion, the median steps they needed and how the others stopped, as the folder's report says
    (:func:`pebench.report.fit.fit_table`)."""
    return _report_tables(folder, "fit_table", "Fit of the training distribution")


def floors_table(folder: Path) -> str:
    """Per experiment, task and architecture: chance and the position-free floor of token accuracy, as the
    folder's report says (:func:`pebench.report.fit.floors_table`)."""
    return _report_tables(folder, "floors_table", "Position-free floors")


def _report_tables(folder: Path, key: str, what: str) -> str:
    """The tables ``key`` of the report of ``folder`` (:func:`tables_text`), or the line saying it has none."""
    if not _has_results(folder):
        return not_in_results(what, f"no results in `{shown(folder)}`")
    return tables_text(report_index(folder)[key], folder)


def fit_resolution(folders: Iterable[Path]) -> str:
    """How finely the fit criterion resolves accuracy, and how the fitted runs of each of ``folders`` score at the
    longest training length, as their reports say (:func:`pebench.report.fit.fit_resolution`)."""
    parts = [(folder, report_index(folder)["fit_resolution"]) for folder in folders if _has_results(folder)]
    rows = [[_filled(cell, folder) for cell in row] for folder, part in parts for row in part["rows"]]
    if not rows:
        return not_in_results("Resolution of the fit criterion", "no committed run has a fit criterion")
    first = parts[0][1]
    return "\n".join([first["lead"], "", markdown_table(first["header"], rows), "", first["closing"]])


def _table_section(path: Path, title: str, lead: str, out: Path, srcdir: Path) -> list[str]:
    """A committed report table (``tables/<name>.md``, its caption below it) with links to copies of its
    ``.tex`` and ``.csv`` files under ``out`` (a copied ``.md`` would be read as a page of the site)."""
    downloads = []
    for ext in TABLE_DOWNLOADS:
        source = path.with_suffix(f".{ext}")
        if source.exists():
            copy = out / source.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            downloads.append(f"{{download}}`{ext.upper()} <{source_path(copy, srcdir)}>`")
    return [f"### {title}", "", lead, "", path.read_text().strip(), "", "Download: " + ", ".join(downloads), ""]


def leaderboard_include(results: Path, out: Path, srcdir: Path = DOCS) -> str:
    """The leaderboard page's body: per suite folder, each table of :data:`pebench.protocol_tables.LEADERBOARD_TABLES`
    that ``pebench report`` wrote (copies of its files linked), and the fit table."""
    folders = suite_folders(results)
    if not folders:
        return not_in_results("Leaderboard", f"no suite folder in `{shown(results)}`")
    lines = []
    for folder in sorted(folders, key=lambda f: (f.name != REFERENCE_SUITE, f.name)):
        lines += [f"## `{folder.name}` suite", "",
                  f"From `{shown(folder)}/tables/`, written by `pebench report` from the "
                  f"{_count_runs(folder)} run files of {{doc}}`the {folder.name} results "
                  f"</_generated/results/{folder.name}>`.", ""]
        for kind, title, lead in LEADERBOARD_TABLES:
            paths = sorted((folder / "tables").glob(f"{kind}_*.md"))
            if kind == "leaderboard" and not paths:
                lines.append(not_in_results("Leaderboard", f"`{shown(folder)}/tables/` has no `leaderboard_*.md`: "
                                            "the folder was reported before the leaderboard existed"))
            for path in paths:
                experiment = path.stem.removeprefix(f"{kind}_")
                lines += _table_section(path, f"{title}: `{experiment}`", lead.replace("{experiment}", experiment),
                                        out / folder.name, srcdir)
                if kind == "leaderboard":
                    lines += _ranks(folder, path, experiment, out, srcdir)
        lines += ["### Fit of the training distribution", "",
                  "The share of seeds that met the fit criterion (see {doc}`protocol`) per encoding and "
                  "architecture, over every task; look for encodings that rank high only because others did "
                  "not fit.", "", fit_table(folder), ""]
    if absent := unranked_suites_text(folder.name for folder in folders):
        lines += [absent, ""]
    return "\n".join(lines)


def _ranks(folder: Path, board: Path, experiment: str, out: Path, srcdir: Path) -> list[str]:
    """Below protocol v2's ranking ``board``: its intervals' edges (``report.json``) and every task's ranks."""
    lines = []
    if edges := report_index(folder)["interval_edges"].get(board.stem):
        lines += [edges, ""]
    ranks = board.with_name(f"task_ranks_{experiment}.csv")
    if ranks.exists():
        copy = out / folder.name / ranks.name
        shutil.copyfile(ranks, copy)
        lines += [f"Every task's ranks: {{download}}`{ranks.name} <{source_path(copy, srcdir)}>`.", ""]
    return lines


def headline_findings(results: Path) -> str:
    """The headline findings of the reference's report (:func:`pebench.report.findings.headline`: the ranking
    findings of every experiment with a primary metric, else its first three findings)."""
    folder = results / REFERENCE_SUITE
    path = folder / "report.json"
    if not _has_results(folder):
        return not_in_results("Headline findings", f"no `{shown(path)}`")
    headline = report_index(folder)["headline"]
    if not headline:
        return not_in_results("Headline findings", f"`{shown(path)}` has no findings")
    caveat = f"{completeness(folder)}\n\n" if report_index(folder).get("complete") is False else ""
    return caveat + "\n".join(f"- {f}" for f in headline) + (
        f"\n\nFrom `{shown(path)}`, written by `pebench report`; every finding with its tables and figures is on "
        f"{{doc}}`the {REFERENCE_SUITE} results page </_generated/results/{REFERENCE_SUITE}>`.\n")


def reference_history(results: Path) -> str:
    """The commits that changed the reference's manifest (:func:`pebench.protocol_tables.reference_history`), and
    whether the results this site was built from carry the fit criterion."""
    history = protocol_tables.reference_history(ROOT)
    lines = [history.to_markdown() if history.rows else
             not_in_results("History of the reference", "no git history of `results/standard/manifest.json`")]
    runs = results / REFERENCE_SUITE / "summary" / "runs.csv"
    if runs.exists():
        columns = runs.read_text().split("\n", 1)[0].split(",")
        lines.append(f"The results this site was built from (`{shown(runs)}`) {protocol_columns_text(columns)}")
    return "\n".join(lines) + "\n"
