"""The results pages: one per suite folder and per rerun, from each folder's committed report (its
``report.json``, figures and tables copied under the source tree). Each leads with the main table and the lead
figure its report names; the rest is on its detail pages (:func:`with_details`), listed under "More"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from pebench import store
from pebench.report_file import raw_digest

from .common import (
    DOCS,
    FIGURE_FORMATS,
    RERUNS,
    TABLE_DOWNLOADS,
    _count_runs,
    _filled,
    markdown_table,
    report_file,
    report_index,
    shown,
    source_path,
    suite_folders,
    table_text,
    write,
)


def manifest_section(folder: Path) -> str:
    """Where and how the runs of ``folder`` were made, as its report read them from its manifest."""
    return table_text(report_index(folder)["provenance"], folder)


#: read once above the tables of a tables page (each caption repeats it for a table copied on its own)
HOW_TO_READ_TABLES = (
    "How to read the tables: a number is the **mean ± the half-width of its 95% confidence interval** (Student "
    "t over the seeds of the cell; no interval with one seed). *Seeds* says how many seeds a cell has and how "
    "many met the fit criterion; extrapolation and order numbers count fitted seeds only, and † marks a cell in "
    "which no seed fitted (its number describes a model that did not learn the task, never a finding). "
    "**Bold**: the best mean of its task; *italics*: not significantly worse than the best. *Chance* is the "
    "accuracy of the best input-independent guess, *Floor* the best accuracy without position information. The "
    "standard deviation and the best of seeds of every column are in each table's CSV.")


class ShownArtifact(NamedTuple):
    """A figure or table of a report as a page shows it: ``paths`` map a format to its copy under the source tree."""

    name: str
    title: str
    caption: str
    paths: dict[str, Path]


class ShownReport(NamedTuple):
    """A folder's ``report.json`` (``index``) with its artifacts and summaries copied under the source tree."""

    figures: list[ShownArtifact]
    tables: list[ShownArtifact]
    summaries: dict[str, Path]
    index: dict[str, Any]


def shown_report(folder: Path, out: Path, srcdir: Path = DOCS) -> ShownReport:
    """The committed report of ``folder``, its figures, tables and summaries copied into ``out``: once per process
    and source tree ``srcdir`` while the report and the copies stay (the reference is shown beside every rerun)."""
    index = report_index(folder)
    key = (folder.resolve(), srcdir.resolve(), json.dumps(index, sort_keys=True))  # the report holds its digest
    earlier = _SHOWN.get(key)
    if earlier is not None and all(path.exists() for artifact in (*earlier.figures, *earlier.tables)
                                   for path in artifact.paths.values()):
        return earlier

    def copied(relative: str) -> Path:
        data = report_file(folder, relative)  # checked to be a plain file in the folder before it names a target
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return target

    def artifacts(kind: str) -> list[ShownArtifact]:
        return [ShownArtifact(item["name"], item["title"], item["caption"],
                              {ext: copied(path) for ext, path in item["paths"].items()}) for item in index[kind]]

    report = ShownReport(artifacts("figures"), artifacts("tables"),
                         {name: copied(path) for name, path in index["summaries"].items()}, index)
    _SHOWN[key] = report
    return report


_SHOWN: dict[tuple, ShownReport] = {}  # the reports shown_report copied in this process, by folder, tree and report


def lead_artifacts(report: ShownReport) -> tuple[ShownArtifact | None, ShownArtifact | None]:
    """The main table and the lead figure of ``report``, as its ``main_table`` and ``lead_figure`` name them (a
    report written before it named a lead figure leads with its first)."""
    main = next((t for t in report.tables if t.name == report.index["main_table"]), None)
    lead = report.index.get("lead_figure", report.figures[0].name if report.figures else "")
    return main, next((f for f in report.figures if f.name == lead), None)


def _downloads(artifact: ShownArtifact, formats: tuple[str, ...], srcdir: Path) -> list[str]:
    return ["Download: " + ", ".join(f"{{download}}`{ext.upper()} <{source_path(artifact.paths[ext], srcdir)}>`"
                                     for ext in formats if ext in artifact.paths), ""]


def _image(artifact: ShownArtifact | None) -> Path | None:
    return next((artifact.paths[e] for e in FIGURE_FORMATS if e in artifact.paths), None) if artifact else None


def _figure(image: Path | None, alt: str, srcdir: Path, caption: str = "") -> list[str]:
    return [f":::{{figure}} {source_path(image, srcdir)}", f":alt: {alt}", *(["", caption] if caption else []),
            ":::", ""] if image else []


def figure_section(artifact: ShownArtifact, srcdir: Path) -> list[str]:
    """A figure of a report under its title, with its caption and downloads."""
    return [f"## {artifact.title}", "", *_figure(_image(artifact), artifact.title, srcdir, artifact.caption),
            *_downloads(artifact, tuple(artifact.paths), srcdir)]


def table_section(artifact: ShownArtifact, srcdir: Path, heading: str = "") -> list[str]:
    """A table of a report under ``heading`` (default its title), with its caption and downloads."""
    table = Path(artifact.paths["md"]).read_text().strip() if "md" in artifact.paths else ""
    caption = [] if artifact.caption in table else [artifact.caption, ""]  # the Markdown may carry its caption
    return [f"## {heading or artifact.title}", "", *caption, *([table, ""] if table else []),
            *_downloads(artifact, (*TABLE_DOWNLOADS, "md"), srcdir)]


def stacked_figure(artifact: ShownArtifact, reference: ShownReport | None, label: str, srcdir: Path) -> list[str]:
    """A figure of a rerun below the reference's of the same name, each at the content width."""
    ref = next((a for a in reference.figures if a.name == artifact.name), None) if reference else None
    lines = [f"## {artifact.title}", "", artifact.caption, ""] if _image(artifact) else []
    for who, image in (("Reference", _image(ref)), (label, _image(artifact))) if lines else ():
        lines += [f"**{who}:**" + ("" if image else " not in the reference."), "",
                  *_figure(image, f"{artifact.title}: {who.lower()}", srcdir)]
    return lines


def with_details(name: str, lines: list[str], subject: str,
                 details: dict[str, tuple[str, str, list[str]]]) -> dict[str, str]:
    """The page ``name`` (``lines``) ending in a "More" list of its detail pages, and those pages (page name ->
    text): per part of ``details``, ``<name>-<part>`` titled "<title> of <subject>" (its title, its entry in the
    list, its body; none without a body)."""
    details = {f"{name}-{part}": detail for part, detail in details.items() if detail[2]}
    toc = ["```{toctree}", ":maxdepth: 1", "", *(f"{entry} <{page}>" for page, (_, entry, _) in details.items()), "```"]
    pages = {name: "\n".join([*lines, "## More", "", *toc, ""])}
    for page, (title, _, body) in details.items():
        pages[page] = "\n".join([f"# {title} of {subject}", "", f"From {{doc}}`/_generated/results/{name}`.", "",
                                 *body])
    return pages


def completeness(folder: Path) -> str:
    """Whether ``folder`` holds every run of its suite as the code defines it now, and how to finish it."""
    return _filled(report_index(folder)["completeness"], folder)


def results_page(folder: Path, out: Path, srcdir: Path = DOCS) -> dict[str, str]:
    """The page of one suite folder and its detail pages (page name -> text), its artifacts copied under ``out``:
    the main table, the lead figure, the headline findings and the cite box; every figure, table and finding,
    the summary data, the provenance and the protocol on the details (:func:`with_details`)."""
    suite, report = folder.name, shown_report(folder, out, srcdir)
    main, figure = lead_artifacts(report)
    lines = [f"# Results: `{suite}` suite", "", f"{completeness(folder)} This page was generated when the site was "
             f"built, from the {_count_runs(folder)} run files in `{shown(folder)}/raw/`.", ""]
    lines += (table_section(main, srcdir) if main else []) + (figure_section(figure, srcdir) if figure else [])
    if report.index["headline"]:
        lines += ["## Headline findings", "", *(f"- {f}" for f in report.index["headline"]), "",
                  "The encodings ranked over every task are on the {doc}`/leaderboard`.", ""]
    protocol = ["## Protocol", "", report.index["protocol"], ""] if report.index["protocol"] else []
    return with_details(suite, lines + cite_box(report, suite, srcdir), f"the `{suite}` suite", {
        **report_parts(report, srcdir, lambda artifact: figure_section(artifact, srcdir)),
        "provenance": ("Provenance and protocol", "Provenance and protocol",
                       ["## Provenance", "", manifest_section(folder), "", *protocol])})


def report_parts(report: ShownReport, srcdir: Path, figure: Callable[[ShownArtifact], list[str]]
                 ) -> dict[str, tuple[str, str, list[str]]]:
    """The detail pages (:func:`with_details`) of every figure of ``report`` (each as ``figure`` draws it),
    every table with the summary data, and every finding."""
    findings = [*report.index["findings"], *(f"Not shown: {item}" for item in report.index["skipped"])]
    summaries = [f"{{download}}`{name} <{source_path(path, srcdir)}>`" for name, path in report.summaries.items()
                 if Path(path).exists()]
    tables = [line for table in report.tables for line in table_section(table, srcdir)]
    tables += ["## Summary data", "", "Per-run and aggregated values behind the figures and tables: "
               + ", ".join(summaries), ""] if summaries else []
    return {"figures": ("Figures", f"Every figure ({len(report.figures)})",
                        [line for artifact in report.figures for line in figure(artifact)]),
            "tables": ("Tables", f"Every table ({len(report.tables)}) and the summary data",
                       [HOW_TO_READ_TABLES, "", *tables] if tables else []),
            "findings": ("Findings", f"Every finding ({len(report.index['findings'])})", [f"- {f}" for f in findings])}


def cite_box(report: ShownReport, suite: str, srcdir: Path) -> list[str]:
    """The "Cite these results" box of a results page: the results version, the main table's LaTeX file and
    the BibTeX entry, all as ``pebench report`` wrote them (empty for a report without a version)."""
    version, citation = report.index["results_version"], report.index["citation"]
    if not version:
        return []
    main = lead_artifacts(report)[0]
    table = (f" The main table: {{download}}`{main.paths['tex'].name} <{source_path(main.paths['tex'], srcdir)}>` "
             f"({main.title}); every table names the version under it." if main and "tex" in main.paths else "")
    return [":::{admonition} Cite these results", ":class: tip", "",
            f"Results version **{suite} {version}** (a hash of every run file: the same runs always give it, any "
            f"change of a run changes it).{table}", "", "```bibtex", citation, "```", ":::", ""]


def missing_results_page(suite: str) -> str:
    """The page of a suite without committed results: how to make them."""
    return (f"# Results: `{suite}` suite\n\nThere are no results in `results/{suite}` yet, so no figures or tables "
            f"are shown. They appear here once the reference run is committed:\n\n```bash\npebench run --suite {suite} "
            f"--out results/{suite} --workers 2\npebench report --results results/{suite}\n```\n")


def rerun_index(local: Path, reference: Path) -> dict[str, Any]:
    """The ``rerun`` section of the report of ``local`` (:mod:`pebench.report.reruns`), made against the run
    files of ``reference`` there now (a build stops with one line otherwise)."""
    section = report_index(local).get("rerun")
    if section is None or section.get("reference_raw_sha256") != raw_digest(reference):
        state = "compares it with no reference" if section is None else "is older than the run files of its reference"
        raise RuntimeError(f"pebench_docs: the report of {shown(local)} {state} ({shown(reference)}): run pebench "
                           f"report {shown(local)} with {shown(reference)} beside it")
    return section


def compare_section(local: Path, reference: Path) -> tuple[list[str], list[str]]:
    """``pebench compare LOCAL REFERENCE`` from the report of ``local``: the verdict, its method and notes (for the
    rerun's page), and one row per cell and metric with the cells of one side only (for its comparison page)."""
    result = rerun_index(local, reference)["comparison"]
    verdict = ["## Reproduction check", "", _filled(result["verdict"], local, reference), "", result["method"], ""]
    verdict += [f"- note: {note}" for note in result["notes"]] + ([""] if result["notes"] else [])
    rows = [markdown_table(result["header"], result["rows"]), ""] if result["rows"] else []
    return verdict, rows + [line for sentence in result["one_side"] for line in (sentence, "")]


def rerun_folders(results: Path) -> list[Path]:
    """The committed reruns, ``results/reruns/<name>/`` with run files, by name. A link there (``reruns/``, an
    entry, a ``raw/``) is refused on one line, never followed, and a name must be plain (:mod:`pebench.store`)."""
    folder = store.refuse_link(results / RERUNS)
    return [store.path_in(folder, path.name) for path in sorted(folder.iterdir())
            if store.refuse_link(path).is_dir() and store.refuse_link(path / "raw").is_dir()] if folder.is_dir() else []


def rerun_reference(rerun: Path, results: Path) -> Path:
    """The reference a committed rerun is compared with: ``results/<suite>`` of the suite its manifest names, read
    through :func:`pebench.store.read_manifest` (a link is refused) and checked to be a plain name."""
    suite = (store.read_manifest(rerun) or {}).get("suite")
    if not suite:
        raise ValueError(f"{shown(rerun)} has no manifest naming its suite, so it has no reference to compare with")
    return store.refuse_link(store.path_in(results, suite))


def rerun_summary(rerun: Path, reference: Path) -> list[str]:
    """What a committed rerun says about reproducing the reference, one sentence a point, as its report says."""
    return [_filled(sentence, rerun, reference) for sentence in rerun_index(rerun, reference)["summary"]]


def reruns_text(results: Path) -> str:
    """The ``reruns`` substitution: per committed rerun a link to its page and :func:`rerun_summary`."""
    folders = rerun_folders(results)
    if not folders:
        return f"No rerun of a suite on other hardware is committed (`{shown(results / RERUNS)}/`)."
    return " ".join(f"{{doc}}`Rerun {rerun.name} </_generated/results/{RERUNS}-{rerun.name}>`: "
                    + " ".join(rerun_summary(rerun, rerun_reference(rerun, results))) for rerun in folders)


def local_page(local: Path, reference: Path, out: Path, srcdir: Path = DOCS) -> dict[str, str]:
    """Local rerun beside the reference (:func:`rerun_page`), introduced as the output of ``tox -e bench``."""
    lead = (f"`{shown(local)}` ({_count_runs(local)} run files), written by `tox -e bench` on this "
            f"machine, beside the committed reference `{shown(reference)}` ({_count_runs(reference)} run files).")
    return rerun_page(local, reference, out, srcdir, title="Local rerun of the standard suite", lead=lead)


def committed_rerun_page(rerun: Path, reference: Path, out: Path, srcdir: Path = DOCS) -> dict[str, str]:
    """A committed rerun (``results/reruns/<name>/``) beside its reference, led by :func:`rerun_summary`."""
    points = [f"- {line}" for line in rerun_summary(rerun, reference)]
    lead = "\n".join([
        "Runs made on other hardware are not bit-identical to the reference's ({doc}`/performance`, "
        "Reproducibility): this page shows how far the results move with the machine and the software listed "
        "below, the uncertainty a reader's own rerun carries.", "", *points])
    return rerun_page(rerun, reference, out, srcdir, title=f"Rerun: `{rerun.name}`", lead=lead, label="Rerun")


def rerun_page(local: Path, reference: Path, out: Path, srcdir: Path = DOCS, *, title: str, lead: str,
               label: str = "Local rerun") -> dict[str, str]:
    """A rerun (called ``label``) beside the reference and its detail pages (page name -> text; the page is named
    as ``out``, the folder of its copies): ``lead``, the verdict, the rerun's main table and its lead figure below
    the reference's; the comparison per cell, every figure, table and finding, and the provenance on the details."""
    lines = [f"# {title}", "", lead, ""]
    verdict, cells = compare_section(local, reference) if reference.is_dir() else ([], [])
    local_report = shown_report(local, out / "local", srcdir)
    reference_report = shown_report(reference, out / "reference", srcdir) if reference.is_dir() else None
    main, figure = lead_artifacts(local_report)
    lines += verdict + (table_section(main, srcdir, f"{main.title} ({label.lower()})") if main else [])
    lines += stacked_figure(figure, reference_report, label, srcdir) if figure else []
    provenance = ["## Provenance of the rerun", "", manifest_section(local), ""]
    provenance += ["## Provenance of the reference", "", manifest_section(reference), ""] if reference.is_dir() else []
    return with_details(out.name, lines, f"the {label.lower()}", {
        "comparison": ("Reproduction check per cell", "The reproduction check per cell and metric", cells),
        **report_parts(local_report, srcdir, lambda item: stacked_figure(item, reference_report, label, srcdir)),
        "provenance": ("Provenance", "Where the rerun and the reference were made", provenance)})


def generate_results(results: Path, out: Path, srcdir: Path = DOCS) -> list[str]:
    """Write one page (with its detail pages) per suite folder (always one for ``standard``), the local-rerun
    page (:data:`LOCAL_PAGE`) and one per committed rerun (:func:`rerun_folders`); return the names of the pages
    the site lists (:func:`results_toc`): the reference, its local rerun, the committed reruns, the other suites."""
    folders = {folder.name: folder for folder in suite_folders(results)}
    pages = {} if "standard" in folders else {"standard": missing_results_page("standard")}
    for suite, folder in folders.items():
        pages |= results_page(folder, out / suite, srcdir)
    local, listed = results / "local" / "standard", ["standard"]
    if local.is_dir() and _count_runs(local):
        pages |= local_page(local, results / "standard", out / LOCAL_PAGE, srcdir)
        listed.append(LOCAL_PAGE)
    for rerun in rerun_folders(results):
        listed.append(f"{RERUNS}-{rerun.name}")
        pages |= committed_rerun_page(rerun, rerun_reference(rerun, results), out / listed[-1], srcdir)
    for name, text in pages.items():
        write(out / f"{name}.md", text)
    return listed + sorted(set(folders) - {"standard"})


def results_toc(pages: list[str]) -> str:
    """The Results page's toctree of the results pages, in the order :func:`generate_results` gives."""
    return "\n".join(["```{toctree}", ":maxdepth: 1", "", *(f"/_generated/results/{page}" for page in pages), "```"])


#: name of the local-rerun page (listed right after the reference's)
LOCAL_PAGE = "standard-local-rerun"
