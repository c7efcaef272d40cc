"""The sentences the site says around what ``pebench report`` wrote: how to read its tables, what a missing piece of
the results means, how a rerun is introduced beside its reference, how to cite a results version. The numbers and
findings are the report's (``report.json``); these are the words around them, here so that the CLI can say them
too and a test pins them once. Texts are MyST Markdown; importing this module loads neither pandas nor scipy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pebench import protocol, store
from pebench.render import blocks
from pebench.render.entry_lead import lead
from pebench.render.tables import text_table, to_markdown
from pebench.store.report_file import (
    StaleReport,
    archived_roots,
    count_runs,
    current_report,
    current_rerun,
    display_path,
    filled,
    rerun_folders,
    rerun_reference,
    suite_folders,
)

#: how a board's split-half stability finding begins (:func:`pebench.render.board_tables.split_half_sentence`) and
#: how the finding on two encodings that are one model begins (:func:`pebench.report.overview.identical_models`):
#: both are headline findings that qualify the boards' tiers (:func:`board_qualifiers`)
SPLIT_HALF_LEAD = "the board's order on halves of its evidence"
IDENTICAL_LEAD = "Identical models:"

#: read once above the tables of a tables page (each caption repeats it for a table copied on its own)
HOW_TO_READ_TABLES = (
    "How to read the tables: a number is the **mean ± the half-width of its 95% confidence interval** (Student "
    "t over the seeds of the cell; no interval with one seed). *Seeds* says how many seeds a cell has and how "
    "many met the fit criterion; extrapolation and order numbers count fitted seeds only, and † marks a cell in "
    "which no seed fitted (its number describes a model that did not learn the task, never a finding). "
    "**Bold**: the best mean of its task; *italics*: not significantly worse than the best. *Chance* is the "
    "accuracy of the best input-independent guess, *Floor* the best accuracy without position information. The "
    "standard deviation and the best of seeds of every column are in each table's CSV.")

#: the lead of the fit table below each suite's boards on the leaderboard page
LEADERBOARD_FIT_LEAD = ("The share of seeds that met the fit criterion (see {doc}`protocol`) per encoding and "
                        "architecture, over every task; look for encodings that rank high only because others did "
                        "not fit.")

#: what leads a committed rerun's page, above the points of its report's summary
RERUN_LEAD = ("Runs made on other hardware are not bit-identical to the reference's ({doc}`/performance`, "
              "Reproducibility): this page shows how far the results move with the machine and the software listed "
              "below, the uncertainty a reader's own rerun carries.")

# the performance page of a build whose throughput benchmark has not been run (or its tables not generated)
PERFORMANCE_FALLBACK = """# Performance

This build of the site includes no performance measurements: the throughput benchmark
(`python -m pebench.bench.throughput`) has not been run for it, or its tables (`docs/performance_tables.md`)
were not generated. Running the benchmark writes `results/performance/*.csv` and those tables, which
report training throughput against x-transformers, the fraction of the matmul peak reached, and the
effect of worker processes and seed batching.
"""

#: what an encoding's or task's page says above its rows and figures in the reference suite
ENTRY_LEAD = ("From the standard results: its rows of the main table and the boards, where it has any, and its "
              "main figures (the whole tables, their captions and downloads are on the results pages).")
#: what the link to the page of all results of an encoding or task says it holds
ALL_RESULTS = "every suite, every table row and every figure that draws it."


def not_in_reference_text(column: str, name: str) -> str:
    """What the page of ``name`` (an encoding or a task, ``column``) says when the reference results lack it: the
    command that runs only its runs under the standard protocol and sets them beside the reference's."""
    if column == "encoding":
        return (f"Not part of the committed reference results; `pebench evaluate {name}` runs its standard battery "
                "and judges it against every baseline of the reference.")
    return (f"Not part of the committed reference results; `pebench run --suite standard --task {name} --filter "
            f"task={name}` runs it with every encoding of the standard suite, and `pebench combine` sets that folder "
            "beside `results/standard` for `pebench report`.")


def entry_view(index: dict[str, Any], column: str, name: str, lead_only: bool = False
               ) -> tuple[list, list[tuple[str, dict]], list[tuple[str, str, str]]] | None:
    """What the report ``index`` shows of ``name`` (an encoding or a task: ``column``), from its ``entries``: the
    (experiment, architecture) pairs it appears in, its rows of each table (title, ``{"header", "rows"}``) and the
    figures that draw it (title, SVG path in the folder, what to look at); ``lead_only``: only what its page leads
    with (:func:`pebench.render.entry_lead.lead`). ``None`` when it appears nowhere."""
    entry = index.get("entries", {}).get(column, {}).get(name, {})
    pairs = entry.get("appearances")
    if not pairs:
        return None
    tables, figures = [t["name"] for t in index["tables"]], [f["name"] for f in index["figures"]]
    if lead_only:
        tables, figures = lead(entry, tables, index.get("main_table"), figures, pairs)
    rows = [(table["title"], entry["tables"][table["name"]]) for table in index["tables"]
            if table["name"] in tables and entry["tables"].get(table["name"])]
    drawn = [(figure["title"], figure["paths"]["svg"], entry["figures"][figure["name"]]) for figure in index["figures"]
             if figure["name"] in entry["figures"] and figure["name"] in figures and "svg" in figure["paths"]]
    return pairs, rows, drawn


def entry_notes(index: dict[str, Any], column: str, name: str) -> list[str]:
    """What the report ``index`` says of ``name`` (an encoding or a task: ``column``) above its rows: its entry's
    ``notes`` (:func:`pebench.report.entries.entries`; an encoding that is one model with another), else none."""
    return list(index.get("entries", {}).get(column, {}).get(name, {}).get("notes", []))


def board_qualifiers(headline: list[str]) -> list[str]:
    """The lines of a report's ``headline`` (:func:`pebench.report.findings.headline`) that qualify its boards'
    tiers: each board's split-half stability and any pair of encodings that are one model, in their order there."""
    return [line for line in headline if SPLIT_HALF_LEAD in line or line.startswith(IDENTICAL_LEAD)]


def board_caveats_text(index: dict[str, Any] | None, folder: str) -> str:
    """The leaderboard page's list of what qualifies the reference's tiers (:func:`board_qualifiers`) from its report
    ``index`` (None: ``folder``, as the reader sees it, holds no results), or the line that says why there is none."""
    what = "What qualifies the tiers"
    if index is None:
        return not_in_results(what, f"no results in `{folder}`")
    lines = board_qualifiers(index["headline"])
    if not lines:
        return not_in_results(what, f"`{folder}/report.json` has no split-half stability: it was reported before "
                                    "the report gave it")
    return "".join(f"- {line}\n" for line in lines)


def archived_references(results: Path) -> list[Path]:
    """The references a later protocol replaced, kept whole under ``results/archive/<name>/<suite>``
    (:func:`pebench.store.report_file.archived_roots`), the newest archive first."""
    return [folder for root in reversed(archived_roots(results)) for folder in suite_folders(root)]


def not_in_results(what: str, why: str) -> str:
    """The line shown instead of numbers the committed results do not have: ``what`` is missing, because ``why``."""
    return f"*{what}: not in these results ({why}).*\n"


def no_leaderboard_text(folder: Path, root: Path, report: dict[str, Any] | None = None) -> str:
    """The line in place of the MRR leaderboard of a folder whose report wrote none: one made under a protocol that
    ranks by the extrapolation board alone (after :data:`pebench.protocol.MRR_LAST_PROTOCOL`, its ``report`` says),
    else one reported before the leaderboard existed."""
    version = report_protocol(report or {})
    if version is not None and version > protocol.MRR_LAST_PROTOCOL:
        return (f"*Protocol v{version}, under which these results were made, ranks by the extrapolation board alone "
                "(the {doc}`leaderboard`): its reports rank no encoding by mean reciprocal rank.*\n")
    return not_in_results("Leaderboard", f"`{display_path(folder, root)}/tables/` has no `leaderboard_*.md`: the "
                          "folder was reported before the leaderboard existed")


def no_results_text(suite: str) -> str:
    """What a suite without committed results shows instead of its figures and tables: how to make them."""
    return (f"There are no results in `results/{suite}` yet, so no figures or tables are shown. They appear here once "
            f"the reference run is committed:\n\n```bash\npebench run --suite {suite} --out results/{suite} "
            f"--workers 2\npebench report --results results/{suite}\n```\n")


def generated_from_text(folder: Path, root: Path, completeness: str) -> str:
    """The first paragraph of a suite's results page: its report's ``completeness`` and the run files it shows."""
    return (f"{completeness} This page was generated when the site was built, from the {count_runs(folder)} run "
            f"files in `{display_path(folder, root)}/raw/`.")


def rerun_summary(rerun: Path, reference: Path, root: Path, report: dict[str, Any]) -> list[str]:
    """What a rerun's ``report`` says about reproducing ``reference``, one sentence a point, its folders' paths
    filled in (:func:`pebench.store.report_file.current_rerun`: a report older than the reference's run files is
    refused)."""
    return [filled(sentence, rerun, root, reference) for sentence in current_rerun(rerun, reference, report)["summary"]]


def rerun_lead(rerun: Path, reference: Path, root: Path, report: dict[str, Any]) -> str:
    """What leads a rerun's page: a local rerun (``<results>/local/<suite>``) as ``tox -e bench``'s output beside the
    reference, a committed one (``<results>/reruns/<name>``) with :data:`RERUN_LEAD` and :func:`rerun_summary`."""
    if Path(rerun).parent.name == "local":
        return (f"`{display_path(rerun, root)}` ({count_runs(rerun)} run files), written by `tox -e bench` on this "
                f"machine, beside the committed reference `{display_path(reference, root)}` ({count_runs(reference)} "
                "run files).")
    return "\n".join([RERUN_LEAD, "", *(f"- {line}" for line in rerun_summary(rerun, reference, root, report))])


def no_reruns_text(results: Path, root: Path) -> str:
    """The sentence that says no rerun on other hardware is committed in ``results/reruns``."""
    return f"No rerun of a suite on other hardware is committed (`{display_path(results / 'reruns', root)}/`)."


def archived_rerun_summaries(results: Path, root: Path, index: Callable[[Path], dict[str, Any]]) -> list[str]:
    """Per rerun kept with a replaced reference under ``results/archive/``
    (:func:`pebench.store.report_file.archived_roots`),
    one paragraph: which reference it reran, and what its report (``index(rerun)``, the ``report.json``) says about
    reproducing it (:func:`rerun_summary`)."""
    texts = []
    for archive in archived_roots(results):
        for rerun in rerun_folders(archive):
            reference = rerun_reference(rerun)
            version = current_report(reference).get("results_version", "")
            texts.append(f"Kept with the {reference.name} reference it reran ({reference.name} {version}, "
                         f"`{display_path(reference, root)}`): " + " ".join(rerun_summary(rerun, reference, root,
                                                                                           index(rerun))))
    return texts


def report_protocol(report: dict[str, Any]) -> int | None:
    """The protocol version of the runs a ``report.json`` reports, from its results version (``v<protocol>-...``,
    :func:`pebench.analysis.results.results_version`); ``None`` when it records none."""
    version, _, digest = str(report.get("results_version", "")).partition("-")
    return int(version[1:]) if version[:1] == "v" and version[1:].isdigit() and digest else None


def earlier_protocol_text(report: dict[str, Any]) -> str:
    """For a folder made under an earlier protocol than :data:`pebench.protocol.PROTOCOL`: what its boards measure
    (the audit on the protocol page); ``""`` for one of the current protocol or a report that records none."""
    version = report_protocol(report)
    if version is None or version >= protocol.PROTOCOL:
        return ""
    if version < 3:  # protocol v2's budget: what the audit found, and what protocol v3 was declared to change
        return (f"These results ({report['results_version']}) were made under protocol v{version}'s model and budget, "
                "whose aggregate tables mostly measure which encodings fit within that budget (the audit that led "
                "to protocol v3, on the {doc}`protocol` page): read the capability board beside the tiers, and "
                "every interval.")
    return (f"These results ({report['results_version']}) were made under protocol v{version}, and protocol "
            f"v{protocol.PROTOCOL} is in force now (the {{doc}}`protocol` page says what changed and why): its boards "
            f"are protocol v{version}'s answer, not the current one.")


def results_version_text(suite: str, version: str) -> str:
    """What a results version is, for the "Cite these results" box of ``suite``'s page."""
    return (f"Results version **{suite} {version}** (a hash of every run file: the same runs always give it, any "
            "change of a run changes it).")


def tables_from_text(folder: Path, root: Path, page: str, report: dict[str, Any] | None = None) -> str:
    """The lead of a suite's boards on the leaderboard page: where its tables come from (``page``: its results page),
    and, for results of an earlier protocol (its ``report``), :func:`earlier_protocol_text`."""
    return " ".join(filter(None, [
        f"From `{display_path(folder, root)}/tables/`, written by `pebench report` from the {count_runs(folder)} "
        f"run files of {{doc}}`the {folder.name} results <{page}>`.", earlier_protocol_text(report or {})]))


def archived_tables_text(folder: Path, root: Path, report: dict[str, Any]) -> str:
    """The lead of a reference kept under ``results/archive/`` on the archive page: where its tables come from, its
    results version (the name its tables are cited by: a hash of its run files) and, as for any folder of an earlier
    protocol, :func:`earlier_protocol_text`. Its tables are this pebench's reading of those runs, as
    ``pebench report`` regenerates them."""
    return " ".join(filter(None, [
        f"From `{display_path(folder, root)}/tables/`, written by `pebench report` from the {count_runs(folder)} run "
        f"files kept there (results version {folder.name} {report.get('results_version') or 'not recorded'}, the "
        "name its tables are cited by): its main table as this version of pebench reports those runs, and protocol "
        "v2's ranking by mean reciprocal rank, where its report wrote one.",
        earlier_protocol_text(report)]))


def fit_resolution_text(reports: list[tuple[Path, dict[str, Any]]], root: Path) -> str:
    """How finely the fit criterion resolves accuracy, and the fitted runs' scores, from the ``fit_resolution`` of
    each folder's report (``reports``: ``(folder, section)``): the rows of the folders' sections of one criterion
    under its lead (v2's and v3's differ), their paths as the reader sees them from ``root``."""
    parts = [(folder, part) for folder, report in reports for part in report.get("sections", []) if part["rows"]]
    if not parts:
        return not_in_results("Resolution of the fit criterion", "no committed run has a fit criterion")
    blocks = []
    for lead_text, header in dict.fromkeys((part["lead"], tuple(part["header"])) for _, part in parts):
        rows = [[filled(cell, folder, root) for cell in row] for folder, part in parts if part["lead"] == lead_text
                for row in part["rows"]]
        blocks += [lead_text, "", to_markdown(text_table(list(header), rows)), ""]
    return "\n".join([*blocks, reports[0][1].get("closing", "")])


def headline_text(index: dict[str, Any] | None, report: Path, root: Path, page: str, caveat: str = "") -> str:
    """The headline findings of a report (``index``, None where there are no results; ``report`` its path, shown from
    ``root``; ``page`` the results page with every finding), below ``caveat`` (the folder's incompleteness)."""
    shown = display_path(report, root)
    if index is None or not index["headline"]:
        return not_in_results("Headline findings", f"no `{shown}`" if index is None else f"`{shown}` has no findings")
    findings = "\n".join(f"- {finding}" for finding in index["headline"])
    return (f"{caveat}\n\n" if caveat else "") + f"{findings}\n\n{headline_source_text(report, root, page)}\n"


def headline_source_text(report: Path, root: Path, page: str) -> str:
    """Below the reference's headline findings: the ``report.json`` they come from and ``page``, where all are."""
    return (f"From `{display_path(report, root)}`, written by `pebench report`; every finding with its tables and "
            f"figures is on {{doc}}`the {report.parent.name} results page <{page}>`.")


def changes_file(results: str | Path, suite: str) -> Path:
    """Where ``pebench changes <snapshot> <results>/<suite> --blocks FILE`` writes the verdicts that moved for the
    site: ``<results>/history/<suite>-changes.json`` (the protocol page's "What changed from v3")."""
    return Path(results) / "history" / f"{suite}-changes.json"


def changes_list(results: str | Path, suite: str) -> list[blocks.PagePiece]:
    """The blocks of the verdicts that moved to ``<results>/<suite>`` (:meth:`pebench.report.changes.Changes.blocks`,
    as :func:`changes_file` holds them), or one paragraph saying there is nothing to compare yet where that file
    is absent.

    Raises:
        StaleReport: the list compares other results than the suite's current ones (its report's results
            version), e.g. a list made before the reference was regenerated; the message names the command.
    """
    path, folder = changes_file(results, suite), Path(results) / suite
    if not path.exists():
        shown = Path(Path(results).name)  # as a reader runs it, from the repository
        return [blocks.text("Until the new reference is reported and its changes are listed, there is nothing to "
                            f"compare: `pebench changes <snapshot> {shown / suite} --blocks "
                            f"{shown / 'history' / path.name}` writes the list.")]
    written = store.read_json(path, "changes list")
    current = current_report(folder).get("results_version")
    if written.get("after") != current:
        raise StaleReport(f"{path} lists the changes to {written.get('after')}, not to {folder} as it is now "
                          f"({current}): run pebench changes <snapshot> {folder} --blocks {path}")
    return list(written["blocks"])


def own_figures(index: dict, column: str, name: str) -> list[tuple[str, str, str]]:
    """The figures of a report (``index``) that draw encoding ``name`` emphasised against every other (its
    ``encoding_figures``, :data:`pebench.report.entries.ENCODING_FIGURES`), as
    :func:`entry_view` gives figures: title, SVG path, what to look at."""
    recorded = index.get("encoding_figures")  # a folder may come from anyone: only an object of names counts
    names = [figure for figure, encoding in (recorded.items() if isinstance(recorded, dict) else ())
             if encoding == name and isinstance(figure, str)]
    view = entry_view(index, column, name) if names and column == "encoding" else None
    paths = {f"figures/{figure}.svg" for figure in names}
    return [drawn for drawn in view[2] if drawn[1] in paths] if view else []
