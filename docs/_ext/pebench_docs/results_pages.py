"""The results pages: one per suite folder and per rerun, from each folder's committed report (its
``report.json``, figures and tables copied under the source tree)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from pebench.report_file import DIGEST_KEY, raw_digest

from .common import (
    DOCS,
    FIGURE_FORMATS,
    RERUNS,
    TABLE_DOWNLOADS,
    _count_runs,
    _filled,
    markdown_table,
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


#: read once above the tables of a results page (each caption repeats it for a table copied on its own)
HOW_TO_READ_TABLES = (
    "How to read the tables: a number is the **mean ± the half-width of its 95% confidence interval** (Student "
    "t over the seeds of the cell; no interval with one seed). *Seeds* says how many seeds a cell has and how "
    "many met the fit criterion; extrapolation and order numbers count fitted seeds only, and † marks a cell in "
    "which no seed fitted (its number describes a model that did not learn the task, never a finding). "
    "**Bold**: the best mean of its task; *italics*: not significantly worse than the best. *Chance* is the "
    "accuracy of the best input-independent guess, *Floor* the best accuracy without position information. The "
    "standard deviation and the best of seeds of every column are in each table's CSV.")


def _render_report(report, srcdir: Path) -> list[str]:
    lines = []
    if report.protocol:
        lines += ["## Protocol", "", report.protocol, ""]
    skipped = getattr(report, "skipped", [])
    if skipped:
        lines += ["Not shown, because the results do not allow it:", "", *(f"- {item}" for item in skipped), ""]
    if report.findings:
        lines += ["## Findings", "", *(f"- {finding}" for finding in report.findings), ""]
    if report.figures:
        lines += ["## Figures", ""]
    for artifact in report.figures:
        image = next((artifact.paths[ext] for ext in FIGURE_FORMATS if ext in artifact.paths), None)
        lines += [f"### {artifact.title}", ""]
        if image is not None:
            lines += [f":::{{figure}} {source_path(image, srcdir)}", f":alt: {artifact.title}", "",
                      artifact.caption, ":::", ""]
        downloads = [f"{{download}}`{ext.upper()} <{source_path(p, srcdir)}>`" for ext, p in artifact.paths.items()]
        lines += ["Download: " + ", ".join(downloads), ""]
    if report.tables:
        lines += ["## Tables", "", HOW_TO_READ_TABLES, ""]
    for artifact in report.tables:
        table = Path(artifact.paths["md"]).read_text().strip() if "md" in artifact.paths else ""
        lines += [f"### {artifact.title}", ""]
        if artifact.caption not in table:  # the Markdown table may carry its caption already
            lines += [artifact.caption, ""]
        if table:
            lines += [table, ""]
        downloads = [f"{{download}}`{ext.upper()} <{source_path(artifact.paths[ext], srcdir)}>`"
                     for ext in (*TABLE_DOWNLOADS, "md") if ext in artifact.paths]
        lines += ["Download: " + ", ".join(downloads), ""]
    summaries = getattr(report, "summaries", {})
    if summaries:
        lines += ["## Summary data", "", "Per-run and aggregated values behind the figures and tables: " + ", ".join(
            f"{{download}}`{name} <{source_path(path, srcdir)}>`" for name, path in summaries.items()
            if Path(path).exists()), ""]
    return lines


class ShownArtifact(NamedTuple):
    """A figure or table of a report as a page shows it: ``paths`` map a format to its copy under the source
    tree."""

    name: str
    title: str
    caption: str
    paths: dict[str, Path]


class ShownReport(NamedTuple):
    """A folder's ``report.json`` with its artifacts and summaries copied under the source tree."""

    figures: list[ShownArtifact]
    tables: list[ShownArtifact]
    findings: list[str]
    protocol: str
    summaries: dict[str, Path]
    skipped: list[str]
    results_version: str
    citation: str
    index: dict[str, Any]


def shown_report(folder: Path, out: Path, srcdir: Path = DOCS) -> ShownReport:
    """The committed report of ``folder`` (:func:`report_index`), its figures, tables and summaries copied into
    ``out`` where the page links them. A folder whose report this process already copied for the source tree
    ``srcdir`` (the reference has its own page and sits beside every rerun) is not copied again while its
    report is the same and the copies are still there."""
    index = report_index(folder)
    key = (folder.resolve(), srcdir.resolve(), index[DIGEST_KEY], json.dumps(index, sort_keys=True))
    earlier = _SHOWN.get(key)
    if earlier is not None and all(path.exists() for artifact in (*earlier.figures, *earlier.tables)
                                   for path in artifact.paths.values()):
        return earlier

    def copied(relative: str) -> Path:
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / relative, target)
        return target

    def artifacts(kind: str) -> list[ShownArtifact]:
        return [ShownArtifact(item["name"], item["title"], item["caption"],
                              {ext: copied(path) for ext, path in item["paths"].items()}) for item in index[kind]]

    report = ShownReport(artifacts("figures"), artifacts("tables"), index["findings"], index["protocol"],
                         {name: copied(path) for name, path in index["summaries"].items()}, index["skipped"],
                         index["results_version"], index["citation"], index)
    _SHOWN[key] = report
    return report


#: the reports :func:`shown_report` copied in this process, by folder, source tree and report
_SHOWN: dict[tuple, ShownReport] = {}


def completeness(folder: Path) -> str:
    """Whether ``folder`` holds every run of its suite as the code defines it now, and how to finish it, as its
    report says."""
    return _filled(report_index(folder)["completeness"], folder)


def results_page(folder: Path, out: Path, srcdir: Path = DOCS) -> str:
    """The page of one suite folder, from its committed report; its artifacts are copied under ``out``."""
    suite = folder.name
    rel = shown(folder)
    report = shown_report(folder, out, srcdir)
    lines = [f"# Results: `{suite}` suite", "",
             f"Generated when this site was built from the {_count_runs(folder)} run files in `{rel}/raw/`.", "",
             completeness(folder), ""]
    if report.index["headline"]:  # first, above the provenance: what the results say
        lines += ["## Headline findings", "", *(f"- {f}" for f in report.index["headline"]), "",
                  "Every finding, with the figures and tables behind it, is below; the encodings ranked "
                  "over every task are on the {doc}`/leaderboard`.", ""]
    lines += cite_box(report, folder.name, srcdir)
    lines += ["## Provenance", "", manifest_section(folder)]
    lines += _render_report(report, srcdir)
    return "\n".join(lines)


def cite_box(report: ShownReport, suite: str, srcdir: Path) -> list[str]:
    """The "Cite these results" box of a results page: the results version, the main table's LaTeX file and
    the BibTeX entry, all as ``pebench report`` wrote them (empty for a report without a version)."""
    version, citation = report.results_version, report.citation
    if not version:
        return []
    main = next((t for t in report.tables if t.name == report.index["main_table"]), None)
    table = (f" The main table: {{download}}`{main.paths['tex'].name} <{source_path(main.paths['tex'], srcdir)}>` "
             f"({main.title}); every table names the version under it." if main and "tex" in main.paths else "")
    return [":::{admonition} Cite these results", ":class: tip", "",
            f"Results version **{suite} {version}** (a hash of every run file: the same runs always give it, any "
            f"change of a run changes it).{table}", "", "```bibtex", citation, "```", ":::", ""]


def missing_results_page(suite: str) -> str:
    """The page of a suite without committed results: how to make them."""
    return "\n".join([
        f"# Results: `{suite}` suite",
        "",
        f"There are no results in `results/{suite}` yet, so no figures or tables are shown. "
        "They appear here once the reference run is committed:",
        "",
        "```bash",
        f"pebench run --suite {suite} --out results/{suite} --workers 2",
        f"pebench report --results results/{suite}",
        "```",
        "",
    ])


def rerun_index(local: Path, reference: Path) -> dict[str, Any]:
    """The ``rerun`` section of the report of ``local`` (:mod:`pebench.report.reruns`), made against the run
    files of ``reference`` there now (a build stops with one line otherwise)."""
    section = report_index(local).get("rerun")
    if section is None or section.get("reference_raw_sha256") != raw_digest(reference):
        state = "compares it with no reference" if section is None else "is older than the run files of its reference"
        raise RuntimeError(f"pebench_docs: the report of {shown(local)} {state} ({shown(reference)}): run pebench "
                           f"report {shown(local)} with {shown(reference)} beside it")
    return section


def compare_section(local: Path, reference: Path) -> list[str]:
    """``pebench compare LOCAL REFERENCE`` as a page section, from the report of ``local``: the verdict, then
    one row per cell and metric."""
    result = rerun_index(local, reference)["comparison"]
    lines = ["## Reproduction check", "", _filled(result["verdict"], local, reference), "", result["method"], ""]
    lines += [f"- note: {note}" for note in result["notes"]] + ([""] if result["notes"] else [])
    if result["rows"]:
        lines += [markdown_table(result["header"], result["rows"]), ""]
    for sentence in result["one_side"]:
        lines += [sentence, ""]
    return lines


def rerun_folders(results: Path) -> list[Path]:
    """The committed reruns, ``results/reruns/<name>/`` with run files, by name."""
    folder = results / RERUNS
    return sorted(p for p in folder.iterdir() if (p / "raw").is_dir()) if folder.is_dir() else []


def rerun_reference(rerun: Path, results: Path) -> Path:
    """The reference a committed rerun is compared with: ``results/<suite>`` of the suite its manifest names."""
    path = rerun / "manifest.json"
    suite = json.loads(path.read_text()).get("suite") if path.exists() else None
    if not suite:
        raise ValueError(f"{shown(rerun)} has no manifest naming its suite, so it has no reference to compare with")
    return results / suite


def rerun_summary(rerun: Path, reference: Path) -> list[str]:
    """What a committed rerun on other hardware says about reproducing the reference, one sentence per point, as
    its report says (:func:`pebench.report.reruns.rerun_summary`)."""
    return [_filled(sentence, rerun, reference) for sentence in rerun_index(rerun, reference)["summary"]]


def reruns_text(results: Path) -> str:
    """The ``reruns`` substitution: per committed rerun a link to its page and :func:`rerun_summary`."""
    folders = rerun_folders(results)
    if not folders:
        return f"No rerun of a suite on other hardware is committed (`{shown(results / RERUNS)}/`)."
    return " ".join(f"{{doc}}`Rerun {rerun.name} </_generated/results/{RERUNS}-{rerun.name}>`: "
                    + " ".join(rerun_summary(rerun, rerun_reference(rerun, results))) for rerun in folders)


def local_page(local: Path, reference: Path, out: Path, srcdir: Path = DOCS) -> str:
    """Local rerun beside the reference (:func:`rerun_page`), introduced as the output of ``tox -e bench``."""
    lead = (f"`{shown(local)}` ({_count_runs(local)} run files), written by `tox -e bench` on this "
            f"machine, beside the committed reference `{shown(reference)}` ({_count_runs(reference)} run files).")
    return rerun_page(local, reference, out, srcdir, title="Local rerun of the standard suite", lead=lead)


def committed_rerun_page(rerun: Path, reference: Path, out: Path, srcdir: Path = DOCS) -> str:
    """A committed rerun (``results/reruns/<name>/``) beside its reference, led by :func:`rerun_summary`."""
    points = [f"- {line}" for line in rerun_summary(rerun, reference)]
    lead = "\n".join([
        "Runs made on other hardware are not bit-identical to the reference's ({doc}`/performance`, "
        "Reproducibility): this page shows how far the results move when only the machine changes, which is "
        "the uncertainty a reader's own rerun carries.", "", *points])
    return rerun_page(rerun, reference, out, srcdir, title=f"Rerun: `{rerun.name}`", lead=lead, label="Rerun")


def rerun_page(local: Path, reference: Path, out: Path, srcdir: Path = DOCS, *, title: str, lead: str,
               label: str = "Local rerun") -> str:
    """A rerun beside the reference: ``lead``, the comparison, both manifests, and the figures one above
    the other, the rerun's named ``label``."""
    lines = [f"# {title}", "", lead, ""]
    if reference.is_dir():  # the verdict first; where each side was made, after it
        lines += compare_section(local, reference)
    lines += ["## Provenance of the rerun", "", manifest_section(local)]
    if reference.is_dir():
        lines += ["## Provenance of the reference", "", manifest_section(reference)]
    local_report = shown_report(local, out / "local", srcdir)
    reference_report = shown_report(reference, out / "reference", srcdir) if reference.is_dir() else None
    if local_report.findings:
        lines += ["## Findings of the rerun", "", *(f"- {f}" for f in local_report.findings), ""]
    reference_figures = {a.name: a for a in reference_report.figures} if reference_report else {}
    for artifact in local_report.figures:
        local_image = next((artifact.paths[e] for e in FIGURE_FORMATS if e in artifact.paths), None)
        ref = reference_figures.get(artifact.name)
        ref_image = next((ref.paths[e] for e in FIGURE_FORMATS if e in ref.paths), None) if ref else None
        if local_image is None:
            continue
        # one above the other at the content width: side by side, each was ~350 px wide and unreadable
        lines += [f"### {artifact.title}", "", artifact.caption, ""]
        for who, image in (("Reference", ref_image), (label, local_image)):
            lines += [f"**{who}:**" if image is not None else f"**{who}:** not in the reference.", ""]
            if image is not None:
                lines += [f":::{{figure}} {source_path(image, srcdir)}", f":alt: {artifact.title}: {who.lower()}",
                          ":::", ""]
    for artifact in local_report.tables:
        if "md" in artifact.paths:
            table = Path(artifact.paths["md"]).read_text().strip()
            caption = [] if artifact.caption in table else [artifact.caption, ""]
            lines += [f"### {artifact.title} ({label.lower()})", "", *caption, table, ""]
    return "\n".join(lines)


def generate_results(results: Path, out: Path, srcdir: Path = DOCS) -> list[str]:
    """Write one page per suite folder (always one for ``standard``) and the local-rerun page
    (:data:`LOCAL_PAGE`) and one per committed rerun (:func:`rerun_folders`); return their names in the order
    the site lists them: the reference, its local rerun, the committed reruns, then the other suites by name
    (:func:`results_toc`)."""
    folders = {folder.name: folder for folder in suite_folders(results)}
    for suite in {"standard", *folders}:
        page = out / f"{suite}.md"
        if suite in folders:
            write(page, results_page(folders[suite], out / suite, srcdir))
        else:
            write(page, missing_results_page(suite))
    pages = ["standard"]
    local = results / "local" / "standard"
    if local.is_dir() and _count_runs(local):
        write(out / f"{LOCAL_PAGE}.md", local_page(local, results / "standard", out / LOCAL_PAGE, srcdir))
        pages.append(LOCAL_PAGE)
    for rerun in rerun_folders(results):
        name = f"{RERUNS}-{rerun.name}"
        write(out / f"{name}.md", committed_rerun_page(rerun, rerun_reference(rerun, results), out / name, srcdir))
        pages.append(name)
    return pages + sorted(set(folders) - {"standard"})


def results_toc(pages: list[str]) -> str:
    """The Results page's toctree of the results pages, in the order :func:`generate_results` gives."""
    return "\n".join(["```{toctree}", ":maxdepth: 1", "", *(f"/_generated/results/{page}" for page in pages), "```"])


#: name of the local-rerun page (listed right after the reference's)
LOCAL_PAGE = "standard-local-rerun"
