"""The results pages of each suite folder and rerun, from its committed report: the main table and lead figure
it names, the rest on detail pages (:func:`with_details`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pebench.render import results_text
from pebench.store import report_file
from pebench.store.report_file import CopiedReport, ReportArtifact, lead_artifacts, rerun_folders, suite_folders

from . import common
from .common import DOCS, RERUNS, ROOT, fill, report_index, source_path


def manifest_section(folder: Path) -> str:
    """Where and how the runs of ``folder`` were made, as its report read them from its manifest."""
    return common.table_text(report_index(folder)["provenance"], folder)


def shown_report(folder: Path, out: Path, srcdir: Path = DOCS) -> CopiedReport:
    """The report of ``folder`` copied into ``out`` (:func:`pebench.store.report_file.copy_report`), once per process
    and tree while the report and the copies stay (the reference is beside every rerun)."""
    index = report_index(folder)
    key = (folder.resolve(), srcdir.resolve(), json.dumps(index, sort_keys=True))  # the report holds its digest
    earlier = _SHOWN.get(key)
    if earlier is None or not all(path.exists() for artifact in (*earlier.figures, *earlier.tables)
                                  for path in artifact.paths.values()):
        _SHOWN[key] = report_file.copy_report(folder, index, out)
    return _SHOWN[key]


_SHOWN: dict[tuple, CopiedReport] = {}  # the reports shown_report copied in this process, by folder, tree and report


def _downloads(artifact: ReportArtifact, formats: tuple[str, ...], srcdir: Path) -> list[str]:
    return ["Download: " + ", ".join(f"{{download}}`{ext.upper()} <{source_path(artifact.paths[ext], srcdir)}>`"
                                     for ext in formats if ext in artifact.paths), ""]


def _image(artifact: ReportArtifact | None) -> Path | None:
    return next((artifact.paths[e] for e in common.FIGURE_FORMATS if e in artifact.paths), None) if artifact else None


def _figure(image: Path | None, alt: str, srcdir: Path, caption: str = "") -> list[str]:
    return [f":::{{figure}} {source_path(image, srcdir)}", f":alt: {alt}", *(["", caption] if caption else []),
            ":::", ""] if image else []


def figure_section(artifact: ReportArtifact, srcdir: Path) -> list[str]:
    """A figure of a report under its title, with its caption and downloads."""
    return [f"## {artifact.title}", "", *_figure(_image(artifact), artifact.title, srcdir, artifact.caption),
            *_downloads(artifact, tuple(artifact.paths), srcdir)]


def table_section(artifact: ReportArtifact, srcdir: Path, heading: str = "") -> list[str]:
    """A table of a report under ``heading`` (default its title), with its caption and downloads."""
    table = Path(artifact.paths["md"]).read_text().strip() if "md" in artifact.paths else ""
    caption = [] if artifact.caption in table else [artifact.caption, ""]  # the Markdown may carry its caption
    return [f"## {heading or artifact.title}", "", *caption, *([table, ""] if table else []),
            *_downloads(artifact, (*common.TABLE_DOWNLOADS, "md"), srcdir)]


def stacked_figure(artifact: ReportArtifact, reference: CopiedReport | None, label: str, srcdir: Path) -> list[str]:
    """A figure of a rerun below the reference's of the same name, each at the content width."""
    ref = next((a for a in reference.figures if a.name == artifact.name), None) if reference else None
    lines = [f"## {artifact.title}", "", artifact.caption, ""] if _image(artifact) else []
    for who, image in (("Reference", _image(ref)), (label, _image(artifact))) if lines else ():
        lines += [f"**{who}:**" + ("" if image else " not in the reference."), "",
                  *_figure(image, f"{artifact.title}: {who.lower()}", srcdir)]
    return lines


def with_details(name: str, lines: list[str], subject: str,
                 details: dict[str, tuple[str, str, list[str]]]) -> dict[str, str]:
    """Page ``name`` (``lines``) ending in a "More" list of its detail pages, and those pages (name -> text): per
    part of ``details`` (title, entry in the list, body; none without a body) ``<name>-<part>``."""
    details = {f"{name}-{part}": detail for part, detail in details.items() if detail[2]}
    toc = ["```{toctree}", ":maxdepth: 1", "", *(f"{entry} <{page}>" for page, (_, entry, _) in details.items()), "```"]
    pages = {name: "\n".join([*lines, "## More", "", *toc, ""])}
    for page, (title, _, body) in details.items():
        pages[page] = "\n".join([f"# {title} of {subject}", "", f"From {{doc}}`/_generated/results/{name}`.", "",
                                 *body])
    return pages


def completeness(folder: Path) -> str:
    """Whether ``folder`` holds every run of its suite as the code defines it now, and how to finish it."""
    return fill(report_index(folder)["completeness"], folder)


def results_page(folder: Path, out: Path, srcdir: Path = DOCS) -> dict[str, str]:
    """The page of one suite folder (main table, lead figure, headline findings, cite box) and its detail pages
    (page name -> text), its artifacts copied under ``out``."""
    suite, report = folder.name, shown_report(folder, out, srcdir)
    main, figure = lead_artifacts(report)
    lines = [f"# Results: `{suite}` suite", "", results_text.generated_from_text(folder, ROOT, completeness(folder)),
             ""]
    lines += (table_section(main, srcdir) if main else []) + (figure_section(figure, srcdir) if figure else [])
    if report.index["headline"]:
        lines += ["## Headline findings", "", *(f"- {f}" for f in report.index["headline"]), "",
                  "The encodings ranked over every task are on the {doc}`/leaderboard`.", ""]
    protocol = ["## Protocol", "", report.index["protocol"], ""] if report.index["protocol"] else []
    return with_details(suite, lines + cite_box(report, suite, srcdir), f"the `{suite}` suite", {
        **report_parts(report, srcdir, lambda artifact: figure_section(artifact, srcdir)),
        "provenance": ("Provenance and protocol", "Provenance and protocol",
                       ["## Provenance", "", manifest_section(folder), "", *protocol])})


def report_parts(report: CopiedReport, srcdir: Path, figure: Callable[[ReportArtifact], list[str]]
                 ) -> dict[str, tuple[str, str, list[str]]]:
    """The detail pages of ``report``: every figure (as ``figure`` draws it), table with the summary data, finding."""
    findings = [*report.index["findings"], *(f"Not shown: {item}" for item in report.index["skipped"])]
    summaries = [f"{{download}}`{name} <{source_path(path, srcdir)}>`" for name, path in report.summaries.items()
                 if Path(path).exists()]
    tables = [line for table in report.tables for line in table_section(table, srcdir)]
    tables += ["## Summary data", "", "Per-run and aggregated values behind the figures and tables: "
               + ", ".join(summaries), ""] if summaries else []
    emphasised = report.index.get("encoding_figures")  # each encoding against the others: on its own page
    emphasised = emphasised if isinstance(emphasised, dict) else {}
    figures = [artifact for artifact in report.figures if artifact.name not in emphasised]
    return {"figures": ("Figures", f"Every figure ({len(figures)})",
                        [line for artifact in figures for line in figure(artifact)]),
            "tables": ("Tables", f"Every table ({len(report.tables)}) and the summary data",
                       [results_text.HOW_TO_READ_TABLES, "", *tables] if tables else []),
            "findings": ("Findings", f"Every finding ({len(report.index['findings'])})", [f"- {f}" for f in findings])}


def cite_box(report: CopiedReport, suite: str, srcdir: Path) -> list[str]:
    """The "Cite these results" box: the report's results version, main table's LaTeX file and BibTeX entry."""
    version, citation = report.index["results_version"], report.index["citation"]
    if not version:
        return []
    main = lead_artifacts(report)[0]
    table = (f" The main table: {{download}}`{main.paths['tex'].name} <{source_path(main.paths['tex'], srcdir)}>` "
             f"({main.title}); every table names the version under it." if main and "tex" in main.paths else "")
    return [":::{admonition} Cite these results", ":class: tip", "",
            results_text.results_version_text(suite, version) + table, "", "```bibtex", citation, "```", ":::", ""]


def compare_section(local: Path, reference: Path) -> tuple[list[str], list[str]]:
    """``pebench compare LOCAL REFERENCE`` as ``local``'s report says: the verdict, method and notes (for the rerun's
    page), and the rows per cell and metric with the cells of one side only (for its comparison page)."""
    result = report_file.current_rerun(common.shown(local), reference, report_index(local))["comparison"]
    verdict = ["## Reproduction check", "", fill(result["verdict"], local, reference), "", result["method"], ""]
    verdict += [f"- note: {note}" for note in result["notes"]] + ([""] if result["notes"] else [])
    rows = [common.markdown_table(result["header"], result["rows"]), ""] if result["rows"] else []
    return verdict, rows + [line for sentence in result["one_side"] for line in (sentence, "")]


def reruns_text(results: Path, current: bool = True, archived: bool = True) -> str:
    """The ``reruns`` substitution, a list: per committed rerun, a link to its page and its report's summary; then the
    reruns kept with replaced references (:func:`pebench.render.results_text.archived_rerun_summaries`). ``current``
    and ``archived`` say which of the two (the leaderboard page lists the current, its archive page the others)."""
    reruns = []
    if current:
        reruns = [f"{{doc}}`Rerun {rerun.name} </_generated/results/{RERUNS}-{rerun.name}>`: " + " ".join(
            results_text.rerun_summary(rerun, report_file.rerun_reference(rerun), ROOT, report_index(rerun)))
            for rerun in rerun_folders(results)] or [results_text.no_reruns_text(results, ROOT)]
    kept = results_text.archived_rerun_summaries(results, ROOT, report_index) if archived else []
    return "\n".join(f"- {item}" for item in [*reruns, *kept])


def rerun_page(rerun: Path, reference: Path, out: Path, srcdir: Path = DOCS) -> dict[str, str]:
    """A local (``results/local/<suite>``) or committed (``results/reruns/<name>``) rerun beside its reference: its
    lead (:func:`pebench.render.results_text.rerun_lead`), verdict, main table and lead figure below the reference's,
    and its detail pages (page name -> text; named as ``out``, the folder of its copies)."""
    committed = rerun.parent.name == RERUNS
    label = "Rerun" if committed else "Local rerun"
    verdict, cells = compare_section(rerun, reference) if reference.is_dir() else ([], [])
    title = f"Rerun: `{rerun.name}`" if committed else f"Local rerun of the {reference.name} suite"
    lines = [f"# {title}", "", results_text.rerun_lead(rerun, reference, ROOT, report_index(rerun)), ""]
    local_report = shown_report(rerun, out / "local", srcdir)
    reference_report = shown_report(reference, out / "reference", srcdir) if reference.is_dir() else None
    main, figure = lead_artifacts(local_report)
    lines += verdict + (table_section(main, srcdir, f"{main.title} ({label.lower()})") if main else [])
    lines += stacked_figure(figure, reference_report, label, srcdir) if figure else []
    provenance = ["## Provenance of the rerun", "", manifest_section(rerun), ""]
    provenance += ["## Provenance of the reference", "", manifest_section(reference), ""] if reference.is_dir() else []
    return with_details(out.name, lines, f"the {label.lower()}", {
        "comparison": ("Reproduction check per cell", "The reproduction check per cell and metric", cells),
        **report_parts(local_report, srcdir, lambda item: stacked_figure(item, reference_report, label, srcdir)),
        "provenance": ("Provenance", "Where the rerun and the reference were made", provenance)})


def generate_results(results: Path, out: Path, srcdir: Path = DOCS) -> list[str]:
    """Write the pages of each suite folder (always ``standard``), the local rerun (:data:`LOCAL_PAGE`) and each
    committed rerun; return their names in the order the site lists them (:func:`results_toc`)."""
    folders = {folder.name: folder for folder in suite_folders(results)}
    missing = {"standard": f"# Results: `standard` suite\n\n{results_text.no_results_text('standard')}"}
    pages = {} if "standard" in folders else missing
    for suite, folder in folders.items():
        pages |= results_page(folder, out / suite, srcdir)
    local, listed = results / "local" / "standard", ["standard"]
    if local.is_dir() and report_file.count_runs(local):
        pages |= rerun_page(local, results / "standard", out / LOCAL_PAGE, srcdir)
        listed.append(LOCAL_PAGE)
    for rerun in rerun_folders(results):
        listed.append(f"{RERUNS}-{rerun.name}")
        pages |= rerun_page(rerun, report_file.rerun_reference(rerun), out / listed[-1], srcdir)
    for name, text in pages.items():
        common.write(out / f"{name}.md", text)
    return listed + sorted(set(folders) - {"standard"})


def results_toc(pages: list[str]) -> str:
    """The Results page's toctree of the results pages, in the order :func:`generate_results` gives."""
    return "\n".join(["```{toctree}", ":maxdepth: 1", "", *(f"/_generated/results/{page}" for page in pages), "```"])


LOCAL_PAGE = "standard-local-rerun"
