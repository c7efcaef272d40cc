"""Reading a results folder's report as a renderer does (the docs site): the placeholders its texts carry for
the folders' paths, the digest of the run files it records (:func:`raw_digest`), and :func:`current_report`,
which refuses a report older than the run files beside it.

Importing this module loads neither pandas nor scipy (``tests/test_report_file.py``): the site renders what
``pebench report`` wrote and computes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pebench import store
from pebench.store.artifact_check import REPORT_FORMATS, artifact_problem

#: what stands for the results folder in a text of ``report.json`` (the site puts the folder's path there)
FOLDER = "{folder}"
#: what stands for a rerun's reference folder in a text of ``report.json``
REFERENCE = "{reference}"
#: the ``report.json`` key of :func:`raw_digest`
DIGEST_KEY = "raw_sha256"


def task_ranks_name(experiment: str) -> str:
    """The file name, in a report's ``tables/``, of the per-task ranks CSV written beside ``experiment``'s
    leaderboard and read by the site's leaderboard page."""
    return f"task_ranks_{experiment}.csv"


def raw_digest(folder: str | Path) -> str:
    """SHA-256 (hex) of the names and contents of a results folder's run files (``raw/``): equal exactly when the
    folder holds the same run files byte for byte, on any machine and after any checkout (unlike
    :func:`pebench.store.files_fingerprint`, which changes when a file is written again). The files are read
    through the store (:func:`pebench.store.raw_file_bytes`): a link is refused, never followed.

    Raises:
        ResultsError: ``raw/`` or one of its run files is a symbolic link, or a file is not a regular one.
    """
    digest = hashlib.sha256()
    for path, data in store.raw_file_bytes(folder):
        digest.update(f"{path.name}\n{hashlib.sha256(data).hexdigest()}\n".encode())
    return digest.hexdigest()


class StaleReport(RuntimeError):
    """A results folder's report is missing, unreadable or older than its run files (the site's build stops with
    its one line, no traceback)."""


#: the fields of a ``report.json`` that the site's pages read by name (``pebench report`` always writes them)
PAGE_FIELDS = ("figures", "tables", "findings", "skipped", "protocol", "summaries", "results_version", "citation",
               "completeness", "provenance", "headline", "main_table", "interval_edges", "fit_table",
               "floors_table", "fit_resolution")


def current_report(folder: str | Path, required: Sequence[str] = ()) -> dict[str, Any]:
    """The ``report.json`` of ``folder`` (read through :func:`pebench.store.read_plain_file`, never through a
    link), checked to be the report of the run files there now, with each field of ``required`` (the site's:
    :data:`PAGE_FIELDS`).

    Raises:
        StaleReport: on one line, naming the folder and the command that writes its report: there is no
            readable ``report.json`` (missing, a link, not JSON), its run files cannot be read, a field is not
            of its kind (:func:`report_shape_problem`) or a required one is missing, or it records no digest or
            another one than :func:`raw_digest` gives.
    """
    folder = Path(folder)
    path = folder / "report.json"
    remedy = (f"run pebench report {folder}, or with tox only: tox -e report -- {folder} (with OMP_NUM_THREADS=1 to "
              "remake committed files byte for byte; a CSV float may differ in its last digits on a CPU with other "
              "vector extensions)")
    try:
        index = store.read_json(path, "report")
    except FileNotFoundError:
        raise StaleReport(f"{folder} has no report.json: {remedy}") from None
    except (OSError, ValueError) as exc:  # store.ResultsError is a ValueError, as are JSON and decoding errors
        raise StaleReport(f"{path} cannot be read ({exc}): {remedy}") from None
    try:
        digest = raw_digest(folder)
    except (OSError, store.ResultsError) as exc:
        raise StaleReport(f"the run files of {folder} cannot be read ({exc}): {remedy}") from None
    if isinstance(index, dict) and (problem := report_shape_problem(index)
                                    or _missing(index, required)):
        raise StaleReport(f"{path} is not a report pebench writes ({problem}; it may have been crafted): {remedy}")
    if not isinstance(index, dict) or index.get(DIGEST_KEY) != digest:
        raise StaleReport(f"{path} is older than the run files in {folder / 'raw'} (or predates their digest): "
                          f"{remedy}")
    return index


#: what each field of a ``report.json`` that a page reads holds, where it has it (a folder may come from anyone)
REPORT_FIELDS = {
    **dict.fromkeys(("protocol", "citation", "results_version", "main_table", "lead_figure", "completeness"), "text"),
    **dict.fromkeys(("findings", "skipped", "headline"), "texts"),
    **dict.fromkeys(("figures", "tables"), "artifacts"),
    "summaries": "paths",
    **dict.fromkeys(("provenance", "fit_table", "floors_table", "fit_resolution"), "tables"),
    **dict.fromkeys(("interval_edges", "encoding_figures"), "text_map"),
    "entries": "entries",
    "replications": "replications",
    "rerun": "rerun",
}


def _cells(row: object) -> bool:
    """Whether ``row`` is a table row: a list of texts, numbers, booleans or nulls."""
    return isinstance(row, list) and all(cell is None or isinstance(cell, (str, int, float)) for cell in row)


def _table(value: object, sections: bool = True) -> bool:
    """Whether ``value`` is a table of a report as the pages read it: an object whose ``lead``, ``closing`` and
    ``missing`` are texts where it has them, and which has a ``missing`` text, or a text ``lead``, a ``header`` of
    texts and ``rows`` of cells (:func:`_cells`), or (unless nested: ``sections`` False) ``sections``, a list of
    such tables."""
    if not isinstance(value, dict) or any(not isinstance(value[key], str)
                                          for key in ("lead", "closing", "missing") if key in value):
        return False
    if "missing" in value:
        return True
    if sections and "sections" in value:
        return isinstance(value["sections"], list) and all(_table(part, False) for part in value["sections"])
    header, rows = value.get("header"), value.get("rows")
    return "lead" in value and _texts(header) and isinstance(rows, list) and all(_cells(row) for row in rows)


def _paths(value: object) -> bool:
    """Whether ``value`` is an object whose values are texts (an artifact's or the summaries' paths)."""
    return isinstance(value, dict) and all(isinstance(path, str) for path in value.values())


def _entries(value: object) -> bool:
    """Whether ``value`` is a report's ``entries`` as the encoding and task pages read them: per column, per name,
    an object with ``appearances`` (pairs of texts), ``tables`` (by name: a ``header`` of texts and ``rows`` of
    cells), ``figures`` (by name: a text) and, where it has any, ``notes`` (texts), where it appears."""
    def entry(item: object) -> bool:
        if not isinstance(item, dict):
            return False
        pairs, tables = item.get("appearances", []), item.get("tables", {})
        pairs_ok = isinstance(pairs, list) and all(_texts(pair) and len(pair) == 2 for pair in pairs)
        tables_ok = isinstance(tables, dict) and all(
            isinstance(table, dict) and _table({**table, "lead": ""}, sections=False)  # a page gives its own lead
            for table in tables.values())
        return (pairs_ok and tables_ok and _paths(item.get("figures", {})) and _texts(item.get("notes", []))
                and (not pairs or {"tables", "figures"} <= item.keys()))

    return isinstance(value, dict) and all(isinstance(names, dict) and all(map(entry, names.values()))
                                           for names in value.values())


def _missing(index: dict[str, Any], required: Sequence[str]) -> str | None:
    """Which of the ``required`` fields ``index`` (a ``report.json``) lacks, in words, or ``None``."""
    missing = [key for key in required if key not in index]
    return f"it has no {', '.join(map(repr, missing))}" if missing else None


def _text(value: object) -> bool:
    """Whether ``value`` is a text."""
    return isinstance(value, str)


def _texts(value: object) -> bool:
    """Whether ``value`` is a list of texts."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _artifacts(value: object) -> bool:
    """Whether ``value`` is a list of artifacts: objects with a text ``name``, ``title`` and ``caption`` and an
    object of text ``paths``."""
    return isinstance(value, list) and all(
        isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("name", "title", "caption"))
        and _paths(item.get("paths")) for item in value)


def _replications(value: object) -> bool:
    """Whether ``value`` is a list of replication sections, objects with a list of blocks (each block is checked as
    it is rendered: :func:`pebench.render.blocks.block_problem`)."""
    return isinstance(value, list) and all(isinstance(part, dict) and isinstance(part.get("blocks"), list)
                                           for part in value)


def _rerun(value: object) -> bool:
    """Whether ``value`` is a rerun's section as its pages read it (:func:`current_rerun`): an object with a text
    ``reference_raw_sha256``, a ``summary`` of texts and a ``comparison`` with a text ``verdict`` and ``method``,
    ``notes`` and ``one_side`` texts, a ``header`` of texts and ``rows`` of cells."""
    if not isinstance(value, dict) or not isinstance(value.get("reference_raw_sha256"), str):
        return False
    comparison = value.get("comparison")
    return (_texts(value.get("summary")) and isinstance(comparison, dict)
            and all(isinstance(comparison.get(key), str) for key in ("verdict", "method"))
            and all(_texts(comparison.get(key)) for key in ("notes", "one_side", "header"))
            and isinstance(comparison.get("rows"), list) and all(map(_cells, comparison["rows"])))


#: each kind of :data:`REPORT_FIELDS`: its check, and what it is in words
_CHECKS = {"text": (_text, "a text"), "texts": (_texts, "a list of texts"),
           "artifacts": (_artifacts, "a list of artifacts (name, title, caption, paths)"),
           "paths": (_paths, "an object of paths"),
           "tables": (_table, "a table (lead, header, rows) or sections of tables"),
           "text_map": (_paths, "an object of texts"),
           "entries": (_entries, "an object of entries (appearances, tables, figures, notes)"),
           "replications": (_replications, "a list of replication sections (objects with a list of blocks)"),
           "rerun": (_rerun, "a rerun's section (reference digest, summary, comparison)")}


def report_shape_problem(index: dict[str, Any]) -> str | None:
    """What in ``index`` (a ``report.json``) is not of the kind :data:`REPORT_FIELDS` gives (:data:`_CHECKS`), or
    ``None``."""
    for key, kind in REPORT_FIELDS.items():
        check, words = _CHECKS[kind]
        if key in index and not check(index[key]):
            return f"its {key!r} is not {words}"
    return None


#: the folders of a results folder whose subfolders are reruns of ``<results>/<suite>``: ``local`` (``tox -e bench``)
#: and ``reruns`` (committed reruns on other hardware)
RERUN_PARENTS = ("local", "reruns")
#: where a reference replaced under a new protocol is kept whole, with its reruns: ``<results>/archive/<name>/`` is a
#: results folder of its own (``<suite>/``, ``reruns/<rerun>/``), so its tables stay citable and regenerable
ARCHIVE = "archive"
#: the folders of a results folder that hold no reference suite
NOT_SUITES = frozenset({"performance", ARCHIVE, *RERUN_PARENTS})


def display_path(path: str | Path, root: str | Path) -> str:
    """``path`` as a reader would type it: relative to ``root`` (the repository) when inside it, else absolute."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def filled(text: str, folder: str | Path, root: str | Path, reference: str | Path | None = None) -> str:
    """A text of a ``report.json`` with the folders it names (:data:`FOLDER`, :data:`REFERENCE`) as the reader sees
    them (:func:`display_path` from ``root``)."""
    text = str(text).replace(FOLDER, display_path(folder, root))
    return text.replace(REFERENCE, display_path(reference, root)) if reference is not None else text


def has_results(folder: str | Path) -> bool:
    """Whether ``folder`` holds results (run files or a manifest), which then must have a current report."""
    return (Path(folder) / "raw").is_dir() or (Path(folder) / "manifest.json").exists()


def count_runs(folder: str | Path) -> int:
    """How many run files ``folder/raw`` holds (:func:`pebench.store.raw_files`)."""
    return len(store.raw_files(Path(folder) / "raw"))


def suite_folders(results: str | Path) -> list[Path]:
    """The reference suite folders of ``results`` (those with results, :func:`has_results`), by name. A link there is
    refused on one line, never followed, and a name must be plain (:func:`pebench.store.path_in`)."""
    if not store.refuse_link(results).is_dir():
        return []
    return [store.path_in(results, p.name) for p in sorted(Path(results).iterdir())
            if p.name not in NOT_SUITES and store.refuse_link(p).is_dir() and has_results(p)]


def rerun_folders(results: str | Path, parent: str = "reruns") -> list[Path]:
    """The reruns ``results/<parent>/<name>/`` with run files, by name (``parent`` one of :data:`RERUN_PARENTS`). A
    link there (the parent, an entry, a ``raw/``) is refused on one line, never followed, and a name must be
    plain (:func:`pebench.store.path_in`)."""
    folder = store.refuse_link(Path(results) / parent)
    return [store.path_in(folder, path.name) for path in sorted(folder.iterdir())
            if store.refuse_link(path).is_dir() and store.refuse_link(path / "raw").is_dir()] if folder.is_dir() else []


def archived_roots(results: str | Path) -> list[Path]:
    """The results folders kept under ``results/archive/`` (:data:`ARCHIVE`), by name. A link there (the archive or
    an entry) is refused on one line, never followed, and a name must be plain (:func:`pebench.store.path_in`)."""
    folder = store.refuse_link(Path(results) / ARCHIVE)
    return [store.path_in(folder, path.name) for path in sorted(folder.iterdir())
            if store.refuse_link(path).is_dir()] if folder.is_dir() else []


def rerun_reference(rerun: str | Path) -> Path:
    """The reference of a rerun folder ``<results>/<parent>/<name>``: ``<results>/<suite>`` of the suite its manifest
    names, read through :func:`pebench.store.read_manifest` (a link is refused) and checked to be a plain name.

    Raises:
        ValueError: the rerun has no manifest naming its suite.
        ResultsError: its manifest is a link, or the suite is no plain name, or the reference is a link.
    """
    rerun = Path(rerun)
    suite = (store.read_manifest(rerun) or {}).get("suite")
    if not suite:
        raise ValueError(f"{rerun} has no manifest naming its suite, so it has no reference to compare with")
    return store.refuse_link(store.path_in(rerun.parent.parent, suite))


def artifact_bytes(folder: str | Path, relative: str) -> bytes:
    """The bytes of the file ``relative`` (as a ``report.json`` names it, e.g. ``figures/x.svg``) of ``folder``: each
    part a plain name (no ``..``, not absolute), no part a link, a regular file (:mod:`pebench.store`)."""
    path = Path(folder)
    for part in str(relative).split("/"):
        path = store.refuse_link(store.path_in(path, part))
    if path.is_dir():
        raise store.ResultsError(f"{path}: a folder, not a file of the report")
    return store.read_plain_file(path, "file of the report")


def copy_artifact(folder: str | Path, relative: str, target: str | Path) -> Path:
    """The file ``relative`` of ``folder``, read through :func:`artifact_bytes` (so no link is followed out of it),
    written to ``target`` (its folders made): ``target``. A file is refused when it holds what no file of its format
    that ``pebench report`` writes does, or is of a format no report writes
    (:func:`pebench.store.artifact_check.artifact_problem`: a script in an SVG, an action in a PDF, ``\\input`` in a
    LaTeX table, a formula in a CSV).

    Raises:
        ResultsError: a link or a folder on the way (:func:`artifact_bytes`), or such a file, on one line.
    """
    target = Path(target)
    data = artifact_bytes(folder, relative)
    if problem := artifact_problem(relative, data):
        raise store.ResultsError(f"{Path(folder) / relative}: holds {problem}, which no file of pebench report "
                                 "does; the folder may have been crafted (move the file away)")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def current_rerun(rerun: str | Path, reference: str | Path, report: dict[str, Any]) -> dict[str, Any]:
    """The ``rerun`` section of the ``report`` of the folder ``rerun``, checked to be made against the run files of
    ``reference`` there now (:func:`raw_digest`).

    Raises:
        StaleReport: on one line saying what to run: the report compares the rerun with no reference, or is older
            than the reference's run files.
    """
    section = report.get("rerun")
    if section is None or section.get("reference_raw_sha256") != raw_digest(reference):
        state = "compares it with no reference" if section is None else "is older than the run files of its reference"
        raise StaleReport(f"the report of {rerun} {state} ({reference}): run pebench report {rerun} with {reference} "
                          "beside it")
    return section


class ReportArtifact(NamedTuple):
    """A figure or table of a report as a renderer shows it: ``paths`` map a format to its copy."""

    name: str
    title: str
    caption: str
    paths: dict[str, Path]


class CopiedReport(NamedTuple):
    """A folder's ``report.json`` (``index``) with the artifacts and summaries it names copied (:func:`copy_report`)."""

    figures: list[ReportArtifact]
    tables: list[ReportArtifact]
    summaries: dict[str, Path]
    index: dict[str, Any]


#: a kind of file of a report (:data:`pebench.store.artifact_check.REPORT_FORMATS`), in words
KINDS = {"figures": "figure", "tables": "table", "summary": "summary"}


def copy_report(folder: str | Path, index: dict[str, Any], out: str | Path) -> CopiedReport:
    """The figures, tables and summaries that ``index`` (the report of ``folder``) names, copied from ``folder`` into
    ``out`` under the same relative paths; each read through :func:`artifact_bytes` before it names a target.

    Raises:
        ResultsError: on one line, where ``index`` names a file other than ``<kind>/<name>.<format>`` in a format of
            its kind (:data:`pebench.store.artifact_check.REPORT_FORMATS`), so that a crafted report cannot make the
            site serve another file (e.g. an HTML page), or where a file is refused by :func:`copy_artifact`.
    """

    def copied(relative: str, kind: str, name: str, ext: str) -> Path:
        if ext not in REPORT_FORMATS[kind] or relative != f"{kind}/{name}.{ext}":
            raise store.ResultsError(f"{Path(folder) / 'report.json'}: names {relative[:60]!r} as its {KINDS[kind]} "
                                     f"{name[:40]!r} in {ext[:10]!r}, not where pebench report writes one "
                                     f"({kind}/<name>.<{'|'.join(REPORT_FORMATS[kind])}>); the folder may have "
                                     "been crafted")
        return copy_artifact(folder, relative, Path(out) / relative)

    def artifacts(kind: str) -> list[ReportArtifact]:
        return [ReportArtifact(item["name"], item["title"], item["caption"],
                               {ext: copied(path, kind, item["name"], ext) for ext, path in item["paths"].items()})
                for item in index[kind]]

    return CopiedReport(artifacts("figures"), artifacts("tables"),
                        {name: copied(path, "summary", name, "csv") for name, path in index["summaries"].items()},
                        index)


def lead_artifacts(report: CopiedReport) -> tuple[ReportArtifact | None, ReportArtifact | None]:
    """The main table and the lead figure of ``report``, as its ``main_table`` and ``lead_figure`` name them (a
    report written before it named a lead figure leads with its first)."""
    main = next((t for t in report.tables if t.name == report.index["main_table"]), None)
    lead = report.index.get("lead_figure", report.figures[0].name if report.figures else "")
    return main, next((f for f in report.figures if f.name == lead), None)
