"""The leaderboard page, the headline findings, the protocol page's fit, floor and fit-resolution tables and the
reference's history, from the committed reports."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pebench.protocol import BOARD_KINDS
from pebench.render import results_text
from pebench.render.protocol_tables import LEADERBOARD_TABLES, unranked_suites_text
from pebench.store.report_file import artifact_bytes, copy_artifact, has_results, suite_folders, task_ranks_name
from pebench.store.schema import people_words

from . import common
from .common import REFERENCE_SUITE, ROOT, report_index, shown
from .results_pages import completeness

#: the tables of a report that the protocol and leaderboard pages include, by key: what they show
REPORT_TABLES = {"fit_table": "Fit of the training distribution", "floors_table": "Position-free floors"}


def report_tables(folder: Path, key: str) -> str:
    """The tables ``key`` of ``folder``'s report (the fit table: per experiment, encoding and architecture, the
    seeds that fitted and how the others stopped; the floors: chance and the position-free floor per task)."""
    if not has_results(folder):
        return results_text.not_in_results(REPORT_TABLES[key], f"no results in `{shown(folder)}`")
    return common.tables_text(report_index(folder)[key], folder)


def fit_resolution(folders: Iterable[Path]) -> str:
    """How finely the fit criterion resolves accuracy (:func:`pebench.render.results_text.fit_resolution_text`)."""
    return results_text.fit_resolution_text(
        [(folder, report_index(folder)["fit_resolution"]) for folder in folders if has_results(folder)], ROOT)


def _copied(folder: Path, name: str, out: Path, srcdir: Path) -> str:
    """``tables/<name>`` of ``folder`` copied into ``out`` (no link followed): its path for a download link."""
    return common.source_path(copy_artifact(folder, f"tables/{name}", out / name), srcdir)


def _table_section(path: Path, title: str, lead: str, out: Path, srcdir: Path) -> list[str]:
    """A report table (``tables/<name>.md``) with links to copies of its ``.tex`` and ``.csv`` under ``out``."""
    folder = path.parent.parent
    downloads = [f"{{download}}`{ext.upper()} <{_copied(folder, path.with_suffix(f'.{ext}').name, out, srcdir)}>`"
                 for ext in common.TABLE_DOWNLOADS if path.with_suffix(f".{ext}").exists()]
    text = artifact_bytes(folder, f"tables/{path.name}").decode().strip()
    return [f"### {title}", "", lead, "", text, "", "Download: " + ", ".join(downloads), ""]


#: the kinds of :data:`pebench.render.protocol_tables.LEADERBOARD_TABLES` of an archived protocol (protocol v2's
#: ranking), shown on the archive page (:func:`archive_include`); the reference's boards of the current protocol
#: (:data:`pebench.protocol.BOARD_KINDS`) lead the leaderboard page (:func:`leaderboard_include`), every other table
#: is on the page of every table (:func:`suites_include`)
ARCHIVED_KINDS = ("leaderboard",)


def _ordered(results: Path) -> list[Path]:
    """The suite folders of ``results``, the reference first."""
    return sorted(suite_folders(results), key=lambda f: (f.name != REFERENCE_SUITE, f.name))


def suite_tables(folder: Path, kinds: Iterable[str], out: Path, srcdir: Path = common.DOCS) -> list[str]:
    """The tables of ``kinds`` (of :data:`pebench.render.protocol_tables.LEADERBOARD_TABLES`, in its order) that the
    report of ``folder`` wrote, each under its title with its lead and downloads (copies under ``out``)."""
    lines = []
    titles = {table["name"]: table["title"] for table in report_index(folder)["tables"]}  # the report's titles
    for kind, title, lead in LEADERBOARD_TABLES:  # pairwise_tasks_* is no `pairwise` table of an experiment
        if kind not in kinds:
            continue
        longer = tuple(f"{other}_" for other, _, _ in LEADERBOARD_TABLES if other.startswith(f"{kind}_"))
        paths = [p for p in sorted((folder / "tables").glob(f"{kind}_*.md")) if not p.stem.startswith(longer)]
        if kind == "leaderboard" and not paths:
            lines.append(results_text.no_leaderboard_text(folder, ROOT, report_index(folder)))
        for path in paths:
            experiment = path.stem.removeprefix(f"{kind}_")
            heading = titles.get(path.stem) or f"{title}: {people_words(experiment)}"
            lines += _table_section(path, heading, lead.replace("{experiment}", experiment), out / folder.name, srcdir)
            if kind == "leaderboard":
                lines += _ranks(folder, path, experiment, out, srcdir)
    return lines


def _suite_heading(folder: Path) -> list[str]:
    return [f"## `{folder.name}` suite", "", results_text.tables_from_text(
        folder, ROOT, f"/_generated/results/{folder.name}", report_index(folder)), ""]


def leaderboard_include(results: Path, out: Path, srcdir: Path = common.DOCS) -> str:
    """The leaderboard page's body: the boards of the current protocol (:data:`pebench.protocol.BOARD_KINDS`) of the
    reference suite; every other table is on the page of every table (:func:`suites_include`), protocol v2's ranking
    on the archive page (:func:`archive_include`)."""
    folders = _ordered(results)
    if not folders:
        return results_text.not_in_results("Leaderboard", f"no suite folder in `{shown(results)}`")
    lead = folders[0]
    lines = [*_suite_heading(lead), *suite_tables(lead, BOARD_KINDS, out, srcdir)]
    if absent := unranked_suites_text(folder.name for folder in folders):
        lines += [absent, ""]
    return "\n".join(lines)


def suites_include(results: Path, out: Path, srcdir: Path = common.DOCS) -> str:
    """The page of every table: per suite folder, the tables of the current protocol the leaderboard page does not
    lead with (the reference's boards are there) and the fit table."""
    lines = []
    for folder in _ordered(results):
        lead = folder.name == REFERENCE_SUITE
        kinds = [kind for kind, _, _ in LEADERBOARD_TABLES if kind not in ARCHIVED_KINDS
                 and not (lead and kind in BOARD_KINDS)]
        lines += [*_suite_heading(folder), *suite_tables(folder, kinds, out, srcdir),
                  f"### {REPORT_TABLES['fit_table']}", "", results_text.LEADERBOARD_FIT_LEAD, "",
                  report_tables(folder, "fit_table"), ""]
    return "\n".join(lines) or results_text.not_in_results("Leaderboard", f"no suite folder in `{shown(results)}`")


def archive_include(results: Path, out: Path, srcdir: Path = common.DOCS) -> str:
    """The archive page's tables: per suite folder, protocol v2's ranking (:data:`ARCHIVED_KINDS`) with its
    intervals' edges and every task's ranks; then per reference a later protocol replaced
    (:func:`pebench.render.results_text.archived_references`, copies under ``out/<archive>``), its main table and
    protocol v2's ranking where its report wrote one."""
    lines = [line for folder in _ordered(results)
             for line in (*_suite_heading(folder), *suite_tables(folder, ARCHIVED_KINDS, out, srcdir))]
    for folder in results_text.archived_references(results):
        index, place = report_index(folder), out / folder.parent.name
        lines += [f"## `{shown(folder)}`", "", results_text.archived_tables_text(folder, ROOT, index), ""]
        lines += [line for table in index["tables"] if table["name"] == index["main_table"] for line in
                  _table_section(folder / "tables" / f"{table['name']}.md", table["title"], "", place / folder.name,
                                 srcdir)]
        lines += suite_tables(folder, ARCHIVED_KINDS, place, srcdir)
    return "\n".join(lines) or results_text.not_in_results("Leaderboard", f"no suite folder in `{shown(results)}`")


def _ranks(folder: Path, board: Path, experiment: str, out: Path, srcdir: Path) -> list[str]:
    """Below protocol v2's ranking ``board``: its intervals' edges (``report.json``) and every task's ranks."""
    lines = []
    if edges := report_index(folder)["interval_edges"].get(board.stem):
        lines += [edges, ""]
    ranks = board.with_name(task_ranks_name(experiment))
    if ranks.exists():
        link = _copied(folder, ranks.name, out / folder.name, srcdir)
        lines += [f"Every task's ranks: {{download}}`{ranks.name} <{link}>`.", ""]
    return lines


def headline_findings(results: Path) -> str:
    """The headline findings of the reference's report (:func:`pebench.render.results_text.headline_text`)."""
    folder = results / REFERENCE_SUITE
    index = report_index(folder) if has_results(folder) else None
    caveat = completeness(folder) if index is not None and index.get("complete") is False else ""
    return results_text.headline_text(index, folder / "report.json", ROOT, f"/_generated/results/{folder.name}", caveat)


def board_caveats(results: Path) -> str:
    """What qualifies the reference's tiers (:func:`pebench.render.results_text.board_caveats_text`)."""
    folder = results / REFERENCE_SUITE
    return results_text.board_caveats_text(report_index(folder) if has_results(folder) else None, shown(folder))
