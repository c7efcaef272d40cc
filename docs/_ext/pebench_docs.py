"""Generate the registry-, results- and figure-driven pages of the pebench site at build time.

Everything under ``docs/_generated/`` is written here when the builder starts
(Sphinx event ``builder-inited``), before Sphinx reads the sources:

* ``encodings/<name>.md``: one page per registered encoding;
* ``tasks/<name>.md``: one page per registered task;
* ``results/<suite>.md``: one page per suite folder in ``results/``, from what ``pebench report`` wrote
  there (``report.json``, figures, tables; a build stops with one line when a folder's report is missing or
  older than its run files), and a "local rerun" page when ``results/local/standard`` exists;
* ``api/<module>.md``: one autodoc page per importable ``pebench`` module;
* ``figures/*.svg``: the teaching figures of :mod:`pebench.explain`;
* ``includes/*.md``: tables included by the hand-written pages.

The hand-written pages never name a generated file that might be missing:
they use glob toctrees, includes of files that are always written, and
substitutions (``generate`` returns their values).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import torch

import pebench
from pebench import encodings, explain, tasks
from pebench.registry import Citation
from pebench.report.fit import FOLDER
from pebench.report.freshness import DIGEST_KEY, StaleReport, current_report, raw_digest
from pebench.report.reruns import REFERENCE
from pebench.schema import encoding_label
from pebench.store import files_fingerprint, raw_files
from pebench.tables import text_table, to_markdown

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
KIND_SLOTS = {
    "none": "none: no positional information",
    "input": "input: added to the token embeddings (`embed`)",
    "rotary": "rotary: transforms queries and keys (`rotate`)",
    "bias": "bias: added to the attention scores (`bias`)",
    "content": "content: a score term computed from the queries, keys and logits (`content_score`)",
    "wrapper": "wrapper: changes the positions given to another encoding (`positions`)",
}
#: committed reruns of a suite on other hardware, ``results/reruns/<name>/``, each shown beside ``results/<suite>``
RERUNS = "reruns"
#: suite folders in results/ that are not reference suites
NOT_SUITES = {"local", "performance", RERUNS}
FIGURE_FORMATS = ("svg",)  # what a page shows of a figure (pebench.report writes SVG and PDF)
TABLE_DOWNLOADS = ("tex", "csv")


# --------------------------------------------------------------------------- helpers


def write(path: Path, text: str) -> None:
    """Write ``text`` if it differs from the file's content (keeps Sphinx's incremental builds quiet)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def source_path(path: Path, srcdir: Path = DOCS) -> str:
    """``path`` as a Sphinx source-absolute path (``/_generated/...``), for images and downloads."""
    return "/" + Path(path).resolve().relative_to(srcdir.resolve()).as_posix()


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (as a reader would type it), else absolute."""
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def markdown_table(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    """A MyST (GitHub-style) table of ``str(value)`` cells (:func:`pebench.tables.text_table`), escaped for ``|``."""
    return to_markdown(text_table(header, rows))


def save_figure(fig, stem: Path, formats: Iterable[str] = ("svg",)) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    for ext in formats:
        fig.savefig(stem.with_suffix(f".{ext}"), bbox_inches="tight", dpi=110)


def doc_title(text: str) -> str:
    return text.replace("`", "")


def cited(citation: Citation) -> str:
    """What an encoding cites, in MyST: a citation of the bibliography, a DOI's link, or the citation as written
    (a plugin's paper that pebench's bibliography does not hold)."""
    if citation.kind == "bibtex":
        return f"{{cite:t}}`{citation.value}`"
    if citation.kind == "doi":
        return f"[doi:{citation.value}]({citation.url})"
    return citation.value


# --------------------------------------------------------------------------- encodings


def results_links(column: str, name: str, results: Path = ROOT / "results") -> list[str]:
    """A section linking to the committed results pages whose runs include ``name`` (an encoding or a task):
    which experiments and architectures, as each suite's report lists them
    (:func:`pebench.report.findings.appearances`)."""
    found = []
    for folder in suite_folders(results):
        pairs = report_index(folder)["appearances"][column].get(name)
        if pairs:
            where = ", ".join(f"`{experiment}` ({arch})" for experiment, arch in pairs)
            found.append(f"- {{doc}}`{folder.name} results </_generated/results/{folder.name}>`: {where}")
    if not found:
        return ["## In the results", "", f"Not part of the committed reference results; run it with "
                f"`pebench run --suite standard --{column} {name}`.", ""]
    return ["## In the results", "", *found, ""]


def encoding_page(name: str, out: Path, srcdir: Path = DOCS) -> str:
    """The page of encoding ``name``; its example figure goes to ``out/figures`` (inside ``srcdir``)."""
    meta = encodings.meta(name)
    cls = encodings.ENCODINGS.get(name)
    options = encodings.options(name)
    papers = [cited(meta["citation"]), *(f"{{cite:t}}`{key}`" for key in meta["cites"])]
    call_name = f"{name}:rope" if meta["kind"] == "wrapper" else name
    lines = [
        f"# `{name}`",
        "",
        meta["summary"],
        "",
        markdown_table(["", ""], [
            ["slot", KIND_SLOTS.get(meta["kind"], meta["kind"])],
            ["trainable parameters", "yes" if meta["has_parameters"] else "no"],
            ["causal (decoder) only", "yes" if meta["causal_only"] else "no"],
            ["paper", ", ".join(papers)],
            ["class", f"`{cls.__module__}.{cls.__qualname__}`"],
        ]),
        "## Options",
        "",
    ]
    if options:
        lines.append(markdown_table(["option", "default"], [[f"`{k}`", f"`{v!r}`"] for k, v in options.items()]))
    else:
        lines.append("None: the encoding is fully determined by the model's width and heads.\n")
    opts = "".join(f", {k}={v!r}" for k, v in options.items() if v is not None)
    lines += [
        "Build it by name (every option may be omitted; its default is shown):",
        "",
        "```python",
        "from pebench import encodings",
        "",
        f'pe = encodings.build("{call_name}", d_model=64, n_heads=4, max_len=128{opts})',
        "```",
        "",
        f"and select it in a run with `pebench run --suite smoke --filter encoding={call_name}`.",
        "",
    ]
    example = explain.encoding_example(name)
    if example is not None:
        fig, caption = example
        stem = out / "figures" / f"encoding_{name}"
        save_figure(fig, stem)
        image = source_path(stem.with_suffix(".svg"), srcdir)
        lines += ["## Example", "", f":::{{figure}} {image}", f":alt: {name} example", "", caption, ":::", ""]
    lines += results_links("encoding", name)
    lines += [
        "## Definition and conventions",
        "",
        "The class docstring, which states the formula, the convention and the reference code it was checked "
        "against:",
        "",
        "```{eval-rst}",
        f".. autoclass:: {cls.__module__}.{cls.__qualname__}",
        "   :no-index:",
        "```",
        "",
    ]
    return "\n".join(lines)


def encodings_table() -> str:
    """Every registered encoding: its slot, parameters, paper, summary, and the suites that compare it
    (:data:`pebench.protocol.SUITE_ENCODINGS`; a wrapper such as ``randomized`` counts where one of its
    instances, e.g. ``randomized:rope``, is compared)."""
    from pebench.protocol import SUITE_ENCODINGS

    rows = []
    for name in encodings.names():
        meta = encodings.meta(name)
        suites = [suite for suite, compared in SUITE_ENCODINGS.items() if suite != "smoke"
                  and any(e.partition(":")[0] == name for e in compared)]
        rows.append([f"{{doc}}`{name} </_generated/encodings/{name}>`", meta["kind"],
                     "yes" if meta["has_parameters"] else "no", "yes" if meta["causal_only"] else "no",
                     ", ".join(suites) or "none", cited(meta["citation"]), meta["summary"]])
    return markdown_table(["name", "slot", "parameters", "causal only", "suites", "paper", "summary"], rows)


# --------------------------------------------------------------------------- tasks


def _example_length(task: tasks.Task) -> int:
    length = max(task.min_length, 5)
    return length if task.max_length is None else min(length, task.max_length)


def _token_text(task: tasks.Task, token: int) -> str:
    return {task.vocab_size: "SEP", task.vocab_size + 1: "_", tasks.IGNORE: "·"}.get(token, str(token))


def rendered_table(task: tasks.Task, batch: tasks.Batch, arch: str) -> str:
    tokens, labels = tasks.render(task, batch, arch)
    rows = [["token", *(_token_text(task, int(t)) for t in tokens[0])],
            ["label", *(_token_text(task, int(t)) for t in labels[0])]]
    return markdown_table(["position", *range(tokens.shape[1])], rows)


def task_page(name: str) -> str:
    task = tasks.get(name)
    meta = tasks.TASKS.meta(name)
    length = _example_length(task)
    batch = task.sample(2, length, torch.Generator().manual_seed(0), split="eval")
    archs = ["decoder"] if meta.get("decoder_only") else list(tasks.ARCHS)
    lines = [
        f"# `{name}`",
        "",
        task.describe(),
        "",
        markdown_table(["", ""], [
            ["version", task.version],
            ["order", "order-dependent" if task.order_dependent else "order-invariant (a control)"],
            ["symbols (`vocab_size`)", task.vocab_size],
            ["input lengths", f"{task.min_length} .. {task.max_length or 'any'}"],
            [f"chance token accuracy at length {length}", f"{task.chance_accuracy(length):.3f}"],
            ["architectures", ", ".join(archs)],
            ["source", f"{{cite:t}}`{meta['paper']}`" if meta.get("paper") else "pebench"],
            *([["Chomsky class", f"{meta['chomsky'].replace('_', '-')} ({{cite:t}}`deletang2023chomsky`)"]]
              if meta.get("chomsky") else []),
        ]),
        f"## Examples (length {length}, seed 0)",
        "",
        markdown_table(["input", "output"], [[" ".join(map(str, x.tolist())), " ".join(map(str, y.tolist()))]
                                             for x, y in zip(batch.inputs, batch.targets, strict=True)]),
    ]
    single = tasks.Batch(inputs=batch.inputs[:1], targets=batch.targets[:1])
    for arch in archs:
        lines += [f"### Rendered for the {arch}", "", rendered_table(task, single, arch)]
    lines += results_links("task", name)
    lines += [
        "`SEP` separates input and output, `_` is the blank an encoder fills in, `·` a position without loss "
        "(label -100); see {func}`pebench.tasks.base.render_pair`.",
        "",
        "## Definition",
        "",
        "```{eval-rst}",
        f".. autoclass:: {type(task).__module__}.{type(task).__qualname__}",
        "   :no-index:",
        "```",
        "",
    ]
    return "\n".join(lines)


def tasks_table() -> str:
    rows = []
    for name in tasks.names():
        task = tasks.get(name)
        rows.append([f"{{doc}}`{name} </_generated/tasks/{name}>`",
                     "dependent" if task.order_dependent else "invariant", task.vocab_size, task.version,
                     task.describe()])
    return markdown_table(["task", "order", "symbols", "version", "definition"], rows)


# --------------------------------------------------------------------------- protocol (experiments, suites)


def _values(specs, key) -> str:
    """The values of config ``key`` over ``specs``, as a reader writes them (lists and variants unquoted)."""
    if key == "eval_variants":  # (label, options JSON) pairs
        variants = dict.fromkeys((label, options) for spec in specs for label, options in spec.eval.variants)
        return "; ".join(
            f"`{label}`: " + ", ".join(f"{k}={v}" for k, v in json.loads(options).items())
            for label, options in variants)
    values = {spec.resolved()[key] for spec in specs}
    return ", ".join(sorted(", ".join(map(str, json.loads(v))) if isinstance(v, str) and v.startswith("[")
                            else str(v) for v in values))


def _grouped_caps(entries: Iterable[tuple[str, str, int]]) -> list[tuple[int, list[tuple[str, list[str] | None]]]]:
    """``(arch, task, steps)`` triples grouped by step cap, largest first: ``[(steps, [(task, archs), ...])]``,
    tasks sorted, ``archs`` None where the task has that cap on every architecture of ``entries``."""
    caps: dict[int, dict[str, set[str]]] = {}
    archs: set[str] = set()
    for arch, task, steps in entries:
        caps.setdefault(steps, {}).setdefault(task, set()).add(arch)
        archs.add(arch)
    return [(n, [(task, None if on == archs else sorted(on)) for task, on in sorted(caps[n].items())])
            for n in sorted(caps, reverse=True)]


def _steps(specs) -> str:
    """The step cap and the tasks it applies to, per architecture when the architectures differ, e.g.
    ``2500: copy, reverse; 1000: parity_check``."""
    groups = _grouped_caps((spec.arch, spec.task, spec.train.steps) for spec in specs)
    return "; ".join(f"{n}: " + ", ".join(task if on is None else f"{task} ({', '.join(on)})" for task, on in tasks)
                     for n, tasks in groups)


def metrics_table() -> str:
    """Every registered metric with its metadata (:mod:`pebench.metrics`, the only source of it)."""
    from pebench import metrics

    direction = {True: "higher", False: "lower", None: "—"}
    rows = [[f"`{m.name}`", m.level, m.label, direction[m.higher_is_better], m.applies_to,
             f"`{m.reference}`" if m.reference else "—", "yes" if getattr(m, "needs_fit", False) else "no",
             m.description]
            for m in metrics.run_metrics() + metrics.length_metrics()]
    return markdown_table(["metric", "per", "label", "better", "applies to", "reference level", "fitted seeds only",
                           "what it is"], rows)


def experiments_tables() -> str:
    from pebench.cli import describe_run_seeds
    from pebench.experiment import load_experiments, suite_runs
    from pebench.protocol import SCALES, SUITES

    scale_keys = sorted({k for scale in SCALES.values() for k in scale})
    out = ["### Scale of each suite", "",
           markdown_table(["suite", "runs", "seeds", *scale_keys],
                          [[suite, len(runs), describe_run_seeds(runs), *(SCALES[suite].get(k, "") for k in scale_keys)]
                           for suite in SUITES for runs in [suite_runs(suite)]])]
    registry = load_experiments()
    for name in registry.names():
        experiment = registry.get(name)
        specs = experiment.runs("standard")
        out += [f"### `{name}`", "", experiment.description,
                f"Reported with the `{experiment.report.layout}` layout of {{mod}}`pebench.report`.", ""]
        if not specs:
            out.append("Not part of the standard suite.\n")
            continue
        rows = [[key, _values(specs, key)] for key in
                ("task", "encoding", "arch", "train_min_len", "train_max_len", "eval_lengths", "eval_conditions",
                 "eval_variants", "seed")]
        rows = [row for row in rows if row[1] not in ("", "[]")] + [["step cap: tasks", _steps(specs)]]
        out += [f"In the standard suite ({len(specs)} runs):", "", markdown_table(["setting", "values"], rows)]
    return "\n".join(out)


# --------------------------------------------------------------------------- results


def suite_folders(results: Path) -> list[Path]:
    """Reference suite folders in ``results/`` (those with run files or a manifest)."""
    if not results.is_dir():
        return []
    return sorted(p for p in results.iterdir() if p.is_dir() and p.name not in NOT_SUITES
                  and ((p / "raw").is_dir() or (p / "manifest.json").exists()))


def _filled(text: str, folder: Path, reference: Path | None = None) -> str:
    """A text of a ``report.json`` with the paths of the folders it names (:data:`pebench.report.fit.FOLDER`,
    :data:`pebench.report.reruns.REFERENCE`) as the reader sees them."""
    text = str(text).replace(FOLDER, shown(folder))
    return text.replace(REFERENCE, shown(reference)) if reference is not None else text


def report_index(folder: Path) -> dict[str, Any]:
    """The ``report.json`` of ``folder``, the report of the run files there now (a build stops with one line
    saying which folder to report when it is missing or older than the run files). Checked once per build
    while neither the run files nor the report are written again (the pages of every encoding and task ask)."""
    paths = [*raw_files(folder / "raw"), folder / "report.json"]
    key = (folder.resolve(), files_fingerprint([path for path in paths if path.exists()]))
    if key not in _INDEXES:
        try:
            _INDEXES[key] = current_report(folder)
        except StaleReport as exc:
            raise RuntimeError(f"pebench_docs: {exc}") from None
    return _INDEXES[key]


#: the reports :func:`report_index` read in this process, by folder and the state of its files
_INDEXES: dict[tuple, dict[str, Any]] = {}


def table_text(section: Mapping[str, Any], folder: Path) -> str:
    """A table of a ``report.json`` (``{"lead", "header", "rows"}``, or ``{"missing"}``) as MyST."""
    if "missing" in section:
        return _filled(section["missing"], folder)
    rows = [[_filled(cell, folder) for cell in row] for row in section["rows"]]
    return f"{_filled(section['lead'], folder)}\n\n" + markdown_table(section["header"], rows)


def tables_text(part: Mapping[str, Any], folder: Path) -> str:
    """Tables of a ``report.json`` (``{"sections": [...]}``, each headed by its lead, or ``{"missing"}``)."""
    if "missing" in part:
        return _filled(part["missing"], folder)
    lines = []
    for section in part["sections"]:
        lines += [_filled(section["lead"], folder), "", markdown_table(section["header"], section["rows"])]
    return "\n".join(lines)


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


def _count_runs(folder: Path) -> int:
    return len(raw_files(folder / "raw"))


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


# --------------------------------------------------------------------------- protocol numbers from the results

#: the suite whose committed results the protocol page, the leaderboard's lead and the index quote
REFERENCE_SUITE = "standard"


#: each pilot reading the protocol and pilots pages show: the JSON its script's ``read`` writes, what it is,
#: and the script
PILOT_READINGS = {
    "t5_bucket_pilot": ("t5_buckets.json", "T5 bucket pilot", "pilots/t5_bucket_pilot.py"),
    "cap_pilot": ("cap_pilot.json", "Step-cap pilot", "pilots/cap_pilot.py"),
    "t5_duplicate_pilot": ("t5_duplicate.json", "T5 duplicate pilot", "pilots/t5_duplicate_pilot.py"),
    "stop_rule_replay": ("stop_rules.json", "Plateau-stop replay", "pilots/stop_rule_replay.py"),
}


def pilot_reading(path: Path, what: str, script: str) -> str:
    """A pilot's reading as its script's ``read`` command wrote it (blocks, :mod:`pebench.report.blocks`),
    rendered; or the line that says how to write it."""
    if not path.exists():
        return not_in_results(what, f"`{shown(path)}` is missing; run `python {script} read`")
    return "\n".join(render_blocks(json.loads(path.read_text())["blocks"]))


#: the standard suite's wall-time budget on 2 CPU cores (#12)
SUITE_BUDGET_MINUTES = 60


def not_in_results(what: str, why: str) -> str:
    """The line a generated piece shows instead of numbers the committed results do not have."""
    return f"*{what}: not in these results ({why}).*\n"


def _has_results(folder: Path) -> bool:
    """Whether ``folder`` holds results (run files or a manifest), which then must have a current report."""
    return (folder / "raw").is_dir() or (folder / "manifest.json").exists()


def fit_table(folder: Path) -> str:
    """Per experiment with a fit criterion: for every encoding and architecture, the seeds that met the fit
    criterion, the median steps they needed and how the others stopped, as the folder's report says
    (:func:`pebench.report.fit.fit_table`)."""
    if not _has_results(folder):
        return not_in_results("Fit of the training distribution", f"no results in `{shown(folder)}`")
    return tables_text(report_index(folder)["fit_table"], folder)


def floors_table(folder: Path) -> str:
    """Per experiment, task and architecture: chance and the position-free floor of token accuracy, as the
    folder's report says (:func:`pebench.report.fit.floors_table`)."""
    if not _has_results(folder):
        return not_in_results("Position-free floors", f"no results in `{shown(folder)}`")
    return tables_text(report_index(folder)["floors_table"], folder)


def v3_fit_include() -> str:
    """Protocol v3's fit criterion as the code declares it, with the training lengths of the core battery that
    are too small to split (:func:`pebench.report.fit_criterion.fit_criterion_blocks`), rendered."""
    import sys

    from pebench.experiment import load_experiments
    from pebench.report.fit_criterion import fit_criterion_blocks

    load_experiments()
    core = sys.modules["pebench_experiments.length_extrapolation"].CORE  # the standard suite's battery
    return "\n".join(render_blocks(fit_criterion_blocks(core)))


def depth_pilot_include(pilots: Path) -> str:
    """The depth pilot's fit table and the outcome of its rule, as ``pilots/depth_pilot.py read`` wrote them
    (``depth_pilot.csv``, ``depth_pilot.json``), rendered."""
    import csv

    table_path, outcome_path = pilots / "depth_pilot.csv", pilots / "depth_pilot.json"
    if not table_path.exists() or not outcome_path.exists():
        return not_in_results("The depth pilot", f"`{shown(pilots)}` holds no `depth_pilot.csv` and "
                              "`depth_pilot.json` yet (`python pilots/depth_pilot.py read` writes them)")
    with table_path.open(newline="") as file:
        table = list(csv.DictReader(file))
    outcome = json.loads(outcome_path.read_text())
    pivot = {}
    for row in table:
        cell = f"{int(float(row['fitted']))}/{int(float(row['runs']))}"
        pivot.setdefault((int(float(row["n_layers"])), row["arch"]), {})[row["encoding"]] = cell
    from pebench.schema import encoding_rank

    encodings_seen = sorted({e for cells in pivot.values() for e in cells}, key=encoding_rank)
    rows = [[str(depth), arch, *(cells.get(e, "—") for e in encodings_seen)]
            for (depth, arch), cells in sorted(pivot.items())]
    lines = [f"From `{shown(table_path)}` ({outcome['runs']} runs so far), read by `python pilots/depth_pilot.py "
             "read`: runs fitted of runs made, per depth, architecture and encoding (in-distribution only).", "",
             markdown_table(["depth", "arch", *(encoding_label(e) for e in encodings_seen)], rows), ""]
    for depth, state in outcome["depths"].items():
        verdict = "meets the rule" if state["meets"] else "fails the rule" if state["decided"] else "undecided"
        lines.append(f"- depth {depth}: {verdict} ({state['why']})")
    chosen = outcome["chosen_depth"]
    lines += ["", f"**Chosen depth: {chosen}.**" if chosen else
              "**No depth chosen yet**: the rule decides once the depths it needs are complete.", ""]
    if outcome["caps"]:
        lines += [markdown_table(["arch", "task", "step cap"],
                                 [[c["arch"], f"`{c['task']}`", str(c["cap"])] for c in outcome["caps"]]), ""]
    return "\n".join(lines)


def fit_resolution(folders: Iterable[Path]) -> str:
    """How finely the fit criterion resolves accuracy, and how the fitted runs of each of ``folders`` score at the
    longest training length, as their reports say (:func:`pebench.report.fit.fit_resolution`)."""
    parts = [(folder, report_index(folder)["fit_resolution"]) for folder in folders if _has_results(folder)]
    rows = [[_filled(cell, folder) for cell in row] for folder, part in parts for row in part["rows"]]
    if not rows:
        return not_in_results("Resolution of the fit criterion", "no committed run has a fit criterion")
    first = parts[0][1]
    return "\n".join([first["lead"], "", markdown_table(first["header"], rows), "", first["closing"]])


def task_caps(caps: Mapping[tuple[str, str], int]) -> str:
    """The per-task step caps of a suite (``{(arch, task): steps}``) in words, e.g. "5000 for copy and reverse"
    (", on the decoder" when a task has the cap on one architecture only), or "none"."""
    def words(names: list[str]) -> str:
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    groups = _grouped_caps((arch, task, steps) for (arch, task), steps in caps.items())
    return "; ".join(f"{n} for " + words([task if on is None else f"{task} (on the {', '.join(on)})"
                                          for task, on in tasks]) for n, tasks in groups) or "none"


def protocol_substitutions() -> dict[str, str]:
    """The protocol's constants, from the code that applies them (:mod:`pebench.protocol`,
    :class:`pebench.train.TrainConfig`, :mod:`pebench.tasks.charlm`)."""
    from pebench import protocol
    from pebench.tasks.charlm import EVAL_SPAN
    from pebench.train import TrainConfig

    standard = protocol.SCALES["standard"]
    defaults = TrainConfig()
    return {
        "fit_threshold": f"{defaults.fit_threshold:g}",
        "fit_examples": str(defaults.fit_examples),
        "fit_every": str(standard["fit_every"]),
        "fit_patience": str(standard["fit_patience"]),
        "fit_min_drop_complement": f"{1 - defaults.fit_min_drop:g}",
        "step_cap": str(standard["steps"]),
        "standard_task_caps": task_caps(protocol.TASK_STEPS.get("standard", {})),
        "single_output_steps": str(protocol.SINGLE_OUTPUT_STEPS),
        "position_capacity": ", ".join(f"{suite} {n}" for suite, n in protocol.POSITION_CAPACITY.items()),
        "standard_seeds": str(len(protocol.SEEDS["standard"])),
        "lm_eval_span": f"{EVAL_SPAN:,}",
        "n_compared": str(len(protocol.COMPARED_ENCODINGS)),
        "compared_encodings": ", ".join(f"`{name}`" for name in protocol.COMPARED_ENCODINGS),
        "newer_encodings": ", ".join(f"`{name}`" for name in protocol.NEWER_ENCODINGS),
        "standard_batch_size": str(standard["batch_size"]),
        "t5_shared_buckets": t5_shared_buckets(),
        **experiment_substitutions(),
    }


def t5_shared_buckets(longest: int = 24) -> str:
    """The distances up to ``longest`` that share one bucket of T5's bidirectional (encoder) bucket
    function, as ``8-11, 12-15, ...`` (from :func:`pebench.encodings.t5.relative_position_bucket`)."""
    import torch

    from pebench.encodings.t5 import relative_position_bucket

    distances = torch.arange(longest + 1)
    buckets = relative_position_bucket(distances, causal=False).tolist()
    groups = {}
    for distance, bucket in zip(distances.tolist(), buckets, strict=True):
        groups.setdefault(bucket, []).append(distance)
    shared = [members for members in groups.values() if len(members) > 1 and members[-1] < longest]
    return ", ".join(f"{members[0]}-{members[-1]}" for members in shared)


def experiment_substitutions(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment ``<name>_*``: its training lengths, in- and out-of-distribution evaluation
    lengths, tasks, architectures and runs in ``suite`` (from the run specs the suite expands to)."""
    from pebench.experiment import load_experiments

    registry = load_experiments()
    values = {}
    for name in registry.names():
        specs = registry.get(name).runs(suite)
        if not specs:
            continue
        low = min(spec.train.train_min_len for spec in specs)
        high = max(spec.train.train_max_len for spec in specs)
        lengths = sorted({n for spec in specs for n in spec.eval.lengths})
        task_names = list(dict.fromkeys(spec.task for spec in specs))
        values.update({
            f"{name}_train_lengths": f"{low}..{high}" if low != high else str(high),
            f"{name}_id_lengths": ", ".join(str(n) for n in lengths if n <= high),
            f"{name}_ood_lengths": ", ".join(str(n) for n in lengths if n > high),
            f"{name}_n_ood": str(sum(n > high for n in lengths)),
            f"{name}_ood_factor": f"{max(lengths) / high:g}",
            f"{name}_tasks": ", ".join(f"`{task}`" for task in task_names),
            f"{name}_n_tasks": str(len(task_names)),
            f"{name}_archs": " and ".join(dict.fromkeys(spec.arch for spec in specs)),
            f"{name}_runs": str(len(specs)),
        })
    return values


def battery_tables(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment with runs in ``suite``: its tasks with their Chomsky class (when the task
    has one), whether order matters, and the step cap of each architecture (the same for every encoding)."""
    from pebench.experiment import load_experiments

    registry = load_experiments()
    tables = {}
    for name in registry.names():
        specs = registry.get(name).runs(suite)
        archs = list(dict.fromkeys(spec.arch for spec in specs))
        caps = {(spec.task, spec.arch): spec.train.steps for spec in specs}
        rows = []
        for task in dict.fromkeys(spec.task for spec in specs):
            chomsky = tasks.TASKS.meta(task).get("chomsky")
            rows.append([f"{{doc}}`{task} </_generated/tasks/{task}>`",
                         chomsky.replace("_", "-") if chomsky else "—",
                         "dependent" if tasks.get(task).order_dependent else "invariant (control)",
                         *(caps.get((task, arch), "—") for arch in archs)])
        tables[name] = markdown_table(["task", "Chomsky class", "order", *(f"step cap ({a})" for a in archs)], rows)
    return tables


# --------------------------------------------------------------------------- leaderboard and headline findings


def _leaderboard_tables(folder: Path, kind: str) -> list[Path]:
    return sorted((folder / "tables").glob(f"{kind}_*.md"))


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
    """The leaderboard page's body: per suite folder, every ``tables/leaderboard_*.md`` and
    ``tables/pairwise_*.md`` written by ``pebench report`` (copies of their files linked), and the fit table."""
    folders = suite_folders(results)
    if not folders:
        return not_in_results("Leaderboard", f"no suite folder in `{shown(results)}`")
    lines = []
    for folder in sorted(folders, key=lambda f: (f.name != REFERENCE_SUITE, f.name)):
        lines += [f"## `{folder.name}` suite", "",
                  f"From `{shown(folder)}/tables/`, written by `pebench report` from the "
                  f"{_count_runs(folder)} run files of {{doc}}`the {folder.name} results "
                  f"</_generated/results/{folder.name}>`.", ""]
        lines += _v3_boards(folder, out, srcdir)
        boards = _leaderboard_tables(folder, "leaderboard")
        if not boards:
            lines.append(not_in_results("Leaderboard", f"`{shown(folder)}/tables/` has no `leaderboard_*.md`: the "
                                        "folder was reported before the leaderboard existed"))
        for path in boards:
            experiment = path.stem.removeprefix("leaderboard_")
            ranks = path.with_name(f"task_ranks_{experiment}.csv")
            lead = (f"The ranking of protocol v2, kept beside the boards above: encodings ranked on every task of "
                    f"`{experiment}`, per architecture, by mean reciprocal rank. An unfitted run scores 0 here, so "
                    "this order mixes fit rates with extrapolation (the reason protocol v3 ranks jointly fitted "
                    "runs instead); encodings whose intervals overlap are not ranked apart by these seeds.")
            lines += _table_section(path, f"Mean reciprocal rank (protocol v2): `{experiment}`", lead,
                                    out / folder.name, srcdir)
            edges = report_index(folder)["interval_edges"].get(path.stem)
            if edges:
                lines += [edges, ""]
            if ranks.exists():
                copy = out / folder.name / ranks.name
                shutil.copyfile(ranks, copy)
                lines += [f"Every task's ranks: {{download}}`{ranks.name} <{source_path(copy, srcdir)}>`.", ""]
        for path in _leaderboard_tables(folder, "pairwise"):
            experiment = path.stem.removeprefix("pairwise_")
            lead = ("The comparisons declared before the results were made (`ReportSpec.comparisons` of "
                    f"`{experiment}`). Look at the verdict and the Holm-corrected p: a difference whose interval "
                    "contains 0 is no finding.")
            lines += _table_section(path, f"Declared comparisons: `{experiment}`", lead, out / folder.name, srcdir)
        for path in _leaderboard_tables(folder, "fit"):
            experiment = path.stem.removeprefix("fit_")
            lead = (f"Seeds that fitted each task of `{experiment}` (the per-task view of the summary below). Look "
                    "for capable encodings with unfitted tasks: those cells are shown but never judged.")
            lines += _table_section(path, f"Seeds fitted per task: `{experiment}`", lead, out / folder.name, srcdir)
        lines += ["### Fit of the training distribution", "",
                  "The share of seeds that met the fit criterion (see {doc}`protocol`) per encoding and "
                  "architecture, over every task; look for encodings that rank high only because others did "
                  "not fit.", "", fit_table(folder), ""]
    from pebench.protocol import SUITES

    absent = [s for s in SUITES if s != "smoke" and s not in {f.name for f in folders}]
    if absent:
        lines += [f"No results of the {' and '.join(f'`{s}`' for s in absent)} suite"
                  f"{'s' if len(absent) > 1 else ''} are committed, so {'they are' if len(absent) > 1 else 'it is'} "
                  "not ranked here.", ""]
    return "\n".join(lines)


#: the boards of protocol v3 (``pebench report``: :func:`pebench.report.board_artifacts`), in the order shown
V3_BOARDS = (
    ("extrapolation", "Extrapolation tiers",
     "Floor-normalised OOD token accuracy of the encodings that fit at least half of their order-dependent runs, on "
     "the task-seed pairs where every one of them fitted, as tiers. Look at the tier column: encodings in one "
     "tier are not ranked apart; P(first) says how often each comes first when tasks and seeds are resampled."),
    ("capability", "Capability",
     "How many runs met the fit criterion. Look for encodings that do not fit what they can represent: they are "
     "not ranked on the extrapolation board, and their out-of-distribution numbers are not judged."),
    ("harm", "Harm on the order-free controls",
     "Controls need no order: look for encodings whose accuracy there falls below the position-free baseline's "
     "(harms = yes)."),
)


def _v3_boards(folder: Path, out: Path, srcdir: Path) -> list[str]:
    """The protocol v3 boards of a suite folder (``tables/extrapolation_*``, ``capability_*``, ``harm_*``),
    each with its lead and downloads; nothing when the folder was reported before they existed."""
    lines = []
    for kind, title, lead in V3_BOARDS:
        for path in _leaderboard_tables(folder, kind):
            experiment = path.stem.removeprefix(f"{kind}_")
            lines += _table_section(path, f"{title}: `{experiment}`", lead, out / folder.name, srcdir)
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
    status = completeness(folder)
    caveat = f"{status}\n\n" if "Incomplete" in status else ""
    return caveat + "\n".join(f"- {f}" for f in headline) + (
        f"\n\nFrom `{shown(path)}`, written by `pebench report`; every finding with its tables and figures is on "
        f"{{doc}}`the {REFERENCE_SUITE} results page </_generated/results/{REFERENCE_SUITE}>`.\n")


def reference_history(results: Path) -> str:
    """The commits that changed ``results/standard`` (``git log`` of its manifest), each with the code
    commit its latest invocation recorded, and whether the committed results carry the fit criterion."""
    manifest = Path("results") / REFERENCE_SUITE / "manifest.json"
    try:
        log = subprocess.run(["git", "log", "--format=%h%x09%cs%x09%s", "--", manifest.as_posix()], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip().splitlines()
    except (OSError, subprocess.CalledProcessError):
        log = []
    rows = []
    for line in log:
        commit, date, subject = line.split("\t", 2)
        try:
            recorded = json.loads(subprocess.run(["git", "show", f"{commit}:{manifest.as_posix()}"], cwd=ROOT,
                                                 capture_output=True, text=True, check=True).stdout)
            code = (recorded.get("latest") or (recorded.get("invocations") or [{}])[-1]).get("git_sha", "")
        except (OSError, subprocess.CalledProcessError, ValueError):
            code = ""
        rows.append([f"`{commit}`", date, f"`{code[:7]}`" if code else "—", subject.split(": ")[0][:120]])
    lines = [markdown_table(["commit", "date", "made with code at", "commit message"], rows) if rows else
             not_in_results("History of the reference", "no git history of `results/standard/manifest.json`")]
    runs = results / REFERENCE_SUITE / "summary" / "runs.csv"
    if runs.exists():
        header = runs.read_text().split("\n", 1)[0].split(",")
        lines.append(f"The results this site was built from (`{shown(runs)}`) "
                     + ("record the fit criterion (`fitted`, `steps_to_fit`) and the position-free floors."
                        if {"fitted", "id_floor_token_acc"} <= set(header) else
                        "predate this protocol: they have no `fitted` or floor columns."))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- API


def api_modules() -> list[str]:
    """Every ``pebench`` module that imports (modules still being written are left out, not fatal)."""
    names = ["pebench"]
    for info in pkgutil.walk_packages(pebench.__path__, "pebench."):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that does not import has no API page
            continue
        names.append(info.name)
    return sorted(names)


def api_page(module: str) -> str:
    doc = (inspect.getdoc(importlib.import_module(module)) or "").split("\n")[0]
    return "\n".join([f"# `{module}`", "", "```{eval-rst}", f".. automodule:: {module}", "   :members:",
                      "   :ignore-module-all:", "```", "", f"<!-- {doc_title(doc)} -->", ""])


# --------------------------------------------------------------------------- concepts figures


def generate_figures(out: Path) -> dict[str, str]:
    """The teaching figures of the Concepts page; returns substitutions with the numbers they show."""
    figures = {
        "sinusoidal_heatmap": explain.sinusoidal_heatmap,
        "sinusoidal_waves": explain.sinusoidal_waves,
        "rotation_property": explain.rotation_property,
        "score_decay": explain.score_decay_figure,
        "bias_matrices": explain.bias_figure,
        "attention_maps": explain.attention_maps,
        "permutation_demo": explain.permutation_demo,
    }
    for name, make in figures.items():
        save_figure(make(), out / name)
    rope, nope = explain.demo_model("rope"), explain.demo_model("none")
    tokens = explain.demo_tokens()
    perm = explain.permutation(tokens.shape[1])
    decay_rope = explain.score_decay("rope")
    decay_xpos = explain.score_decay("xpos")
    return {
        "demo_rope_token_acc": f"{rope.token_acc:.2f}",
        "demo_rope_seq_acc": f"{rope.seq_acc:.2f}",
        "demo_none_token_acc": f"{nope.token_acc:.2f}",
        "demo_none_seq_acc": f"{nope.seq_acc:.2f}",
        "demo_chance": f"{tasks.get('copy').chance_accuracy(8):.2f}",
        "perm_gap_none": f"{explain.permutation_gap(nope.model, tokens, perm):.1e}",
        "perm_gap_rope": f"{explain.permutation_gap(rope.model, tokens, perm):.2f}",
        "shift_error": f"{explain.sinusoidal_shift_error(5):.0e}",
        "decay_rope_100": f"{float(decay_rope[100]):.2f}",
        "decay_xpos_100": f"{float(decay_xpos[100]):.2f}",
    }


# --------------------------------------------------------------------------- citation


def git_year() -> int:
    """Year of the checked-out commit (the current year outside git)."""
    try:
        stamp = subprocess.run(["git", "log", "-1", "--format=%cI"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
        return datetime.fromisoformat(stamp).year
    except (OSError, subprocess.CalledProcessError, ValueError):
        return datetime.now(timezone.utc).year


def suite_bibtex(citation_file: Path = ROOT / "CITATION.cff") -> str:
    """BibTeX of pebench from ``CITATION.cff`` (title, authors, version, license, repository if given)."""
    import yaml

    cff = yaml.safe_load(citation_file.read_text())
    authors = " and ".join(
        f"{{{a['name']}}}" if "name" in a else f"{a['family-names']}, {a['given-names']}" for a in cff["authors"]
    )
    fields = {"title": f"{{{cff['title']}}}: {cff.get('abstract', '').split('.')[0]}".rstrip(": "),
              "author": authors, "year": str(git_year()), "version": cff.get("version", pebench.__version__),
              "license": cff.get("license", ""), "url": cff.get("repository-code", "")}
    body = ",\n".join(f"  {key:<8} = {{{value}}}" for key, value in fields.items() if value)
    return f"@software{{pebench,\n{body}\n}}"


def bib_entries(bib: Path = DOCS / "references.bib") -> dict[str, str]:
    """Raw text of each entry of ``references.bib`` by key."""
    text = bib.read_text()
    starts = [m for m in re.finditer(r"^@\w+\{([^,]+),", text, flags=re.M)]
    entries = {}
    for current, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(text)
        entries[current.group(1).strip()] = text[current.start():end].strip()
    return entries


def cite_include() -> str:
    entries = bib_entries()
    lines = ["### pebench", "", "```bibtex", suite_bibtex(), "```", ""]
    seen: set[str] = set()
    for name in encodings.names():
        for key in [encodings.meta(name)["paper"], *encodings.meta(name)["cites"]]:
            if key in seen or key not in entries:
                continue
            seen.add(key)
            lines += [f"### {key} (`{name}`)", "", "```bibtex", entries[key], "```", ""]
    by_paper: dict[str, list[str]] = {}
    for name in tasks.names():  # the sources of the tasks, e.g. Deletang et al. for the Chomsky-hierarchy battery
        key = tasks.TASKS.meta(name).get("paper")
        if key and key in entries and key not in seen:
            by_paper.setdefault(key, []).append(name)
    for key, names in by_paper.items():
        shown_names = ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        lines += [f"### {key} (tasks {shown_names})", "", "```bibtex", entries[key], "```", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- performance


def performance_includes(srcdir: Path = DOCS) -> list[Path]:
    """Files that ``docs/performance.md`` includes with ``{include}`` (pages of their own they must not be)."""
    page = srcdir / "performance.md"
    if not page.exists():
        return []
    found = re.findall(r"^[`:]{3,}\{include\}\s+(\S+)", page.read_text(), flags=re.M)
    return [(page.parent / name).resolve() for name in found]


def performance_docs(srcdir: Path = DOCS) -> list[str]:
    """Toctree entry of the performance page: docs/performance.md if it is complete, else the fallback page."""
    page = srcdir / "performance.md"
    if page.exists() and all(path.exists() for path in performance_includes(srcdir)):
        return ["performance"]
    return ["_generated/performance"]


PERFORMANCE_FALLBACK = """# Performance

This build of the site includes no performance measurements: the throughput benchmark
(`python -m pebench.throughput`) has not been run for it, or its tables (`docs/performance_tables.md`)
were not generated. Running the benchmark writes `results/performance/*.csv` and those tables, which
report training throughput against x-transformers, the fraction of the matmul peak reached, and the
effect of worker processes and seed batching.
"""


def excluded_sources(srcdir: Path = DOCS) -> list[str]:
    """``exclude_patterns`` entries for files that are included into other pages, not pages themselves."""
    excluded = [path.relative_to(srcdir.resolve()).as_posix() for path in performance_includes(srcdir)
                if path.is_relative_to(srcdir.resolve())]
    if performance_docs(srcdir) != ["performance"] and (srcdir / "performance.md").exists():
        excluded.append("performance.md")  # incomplete (a missing include): the fallback page replaces it
    return excluded


# --------------------------------------------------------------------------- entry point


def generate(srcdir: Path = DOCS, results: Path = ROOT / "results") -> dict[str, str]:
    """Write every generated page under ``srcdir/_generated``; return the MyST substitutions."""
    out = srcdir / "_generated"
    for sub in ("encodings", "tasks", "api"):  # registries may shrink: stale pages must go
        shutil.rmtree(out / sub, ignore_errors=True)
    for name in encodings.names():
        write(out / "encodings" / f"{name}.md", encoding_page(name, out, srcdir))
    for name in tasks.names():
        write(out / "tasks" / f"{name}.md", task_page(name))
    results_out = out / "results"
    shutil.rmtree(results_out, ignore_errors=True)  # pages and artifacts of suites that may be gone
    results_pages = generate_results(results, results_out, srcdir)
    for module in api_modules():
        write(out / "api" / f"{module}.md", api_page(module))
    if performance_docs(srcdir) != ["performance"]:
        write(out / "performance.md", PERFORMANCE_FALLBACK)
    else:
        (out / "performance.md").unlink(missing_ok=True)
    includes = out / "includes"
    write(includes / "encodings_table.md", encodings_table())
    write(includes / "tasks_table.md", tasks_table())
    write(includes / "experiments.md", experiments_tables())
    write(includes / "metrics_table.md", metrics_table())
    write(includes / "cite.md", cite_include())
    reference = results / REFERENCE_SUITE
    write(includes / "fit_table.md", fit_table(reference))
    for include, (name, what, script) in PILOT_READINGS.items():
        write(includes / f"{include}.md", pilot_reading(results / "pilots" / name, what, script))
    write(includes / "floors_table.md", floors_table(reference))
    write(includes / "fit_resolution.md", fit_resolution([reference, results / "extended"]))
    write(includes / "v3_fit.md", v3_fit_include())
    write(includes / "depth_pilot.md", depth_pilot_include(results / "pilots"))
    shutil.rmtree(out / "leaderboard", ignore_errors=True)
    write(includes / "leaderboard.md", leaderboard_include(results, out / "leaderboard", srcdir))
    write(includes / "headline_findings.md", headline_findings(results))
    write(includes / "reference_history.md", reference_history(results))
    write(includes / "replications.md", replications_include(results))
    write(includes / "results_toc.md", results_toc(results_pages))
    for name, table in battery_tables().items():
        write(includes / f"battery_{name}.md", table)
    substitutions = generate_figures(out / "figures")
    substitutions["version"] = pebench.__version__
    substitutions["n_encodings"] = str(len(encodings.names()))
    substitutions["n_tasks"] = str(len(tasks.names()))
    substitutions.update(suite_times(results))
    substitutions["reruns"] = reruns_text(results)
    substitutions.update(protocol_substitutions())
    return substitutions


def suite_times(results: Path = ROOT / "results") -> dict[str, str]:
    """``<suite>_time`` substitutions from the latest measurement of each suite in
    ``results/performance/suites.csv`` (machine named), e.g. ``165 runs in 17 min with 2 workers on a 2-core
    x86_64 CPU (measured 2026-11-22)``."""
    import pandas as pd

    path, machine = results / "performance" / "suites.csv", results / "performance" / "machine.csv"
    times = {}
    if path.exists():
        cpu = ""
        if machine.exists():
            row = pd.read_csv(machine).iloc[0]
            cpu = f" on a {int(row['cpu_count'])}-core {row['processor']} CPU"
        from pebench.throughput import latest_suite_times

        for row in latest_suite_times(pd.read_csv(path)).itertuples():
            took = f"{row.wall_seconds:.0f} s" if row.wall_seconds < 120 else f"{row.wall_minutes:.0f} min"
            times[f"{row.suite}_time"] = (f"{row.runs} runs in {took} with {row.workers} workers{cpu} "
                                          f"(measured {row.date}, {{doc}}`performance`)")
            if row.suite == "standard":
                times["standard_budget"] = standard_budget(row.wall_minutes)
    times.setdefault("standard_budget", "not measured yet")
    for suite in ("smoke", "standard", "paper"):
        times.setdefault(f"{suite}_time", "not measured yet (see {doc}`performance`)")
    return times


def standard_budget(minutes: float) -> str:
    """Where the standard suite's measured wall time (``minutes``) stands against its budget, and, if over,
    why it is not cut to fit (the protocol page's evidence; the battery's size read from the suite)."""
    if minutes <= SUITE_BUDGET_MINUTES:
        return f"within its budget of {SUITE_BUDGET_MINUTES} minutes"
    from pebench.experiment import suite_runs

    runs = suite_runs("standard", ["length_extrapolation"])
    return (f"over its budget of {SUITE_BUDGET_MINUTES} minutes by {minutes - SUITE_BUDGET_MINUTES:.0f} min. It is "
            "not cut to fit: a stricter plateau stop would end runs before their fit (the stop-rule replay) and "
            "lower step caps would leave capable encodings unfitted (the step-cap pilot), both on the "
            f"{{doc}}`protocol` page, while its length experiment holds the smallest battery the protocol allows: "
            f"{len({s.task for s in runs})} tasks, {len({s.seed for s in runs})} seeds, every compared encoding")


def results_root() -> Path:
    """The folder of result suites: ``results/``, or ``$PEBENCH_DOCS_RESULTS`` (to preview another set)."""
    return Path(os.environ.get("PEBENCH_DOCS_RESULTS", ROOT / "results")).resolve()


#: the lock a build of a source tree holds from writing ``_generated/`` until it has finished reading it
BUILD_LOCK = ".pebench-build.lock"


def hold_build_lock(srcdir: Path, timeout: float = 1800.0, poll: float = 2.0):
    """Take the exclusive lock of ``srcdir``'s generated sources and return its open file (closing the file
    releases it). Two builds of one source tree (``tox -e docs`` beside a hand-run ``sphinx-build``) would
    otherwise rewrite ``_generated/`` under each other's reader; the second waits for the first, and a
    build that cannot get the lock within ``timeout`` seconds stops with one line saying who holds it."""
    import fcntl
    import time

    handle = open(srcdir / BUILD_LOCK, "a+")  # noqa: SIM115 (held until the build finishes)
    deadline, told = time.monotonic() + timeout, False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.seek(0)
                holder = handle.read().strip() or "another build"
                handle.close()
                raise RuntimeError(f"another build of {srcdir} holds {BUILD_LOCK} ({holder}); "
                                   f"waited {timeout:.0f} s") from None
            if not told:
                print(f"pebench_docs: another build of {srcdir} is running; waiting for it to finish", flush=True)
                told = True
            time.sleep(poll)
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    return handle


def _on_builder_inited(app) -> None:
    app._pebench_build_lock = hold_build_lock(Path(app.srcdir))
    try:
        app.config.myst_substitutions.update(generate(Path(app.srcdir), results_root()))
    except BaseException:  # no build follows to release it
        _on_build_finished(app, None)
        raise


def _on_build_finished(app, exception) -> None:
    lock = getattr(app, "_pebench_build_lock", None)
    if lock is not None:
        lock.close()
        app._pebench_build_lock = None


def _on_source_read(app, docname: str, source: list[str]) -> None:
    # the index toctree names the performance page that exists (the performance engineer's or the fallback)
    if docname == "index":
        source[0] = source[0].replace("PERFORMANCE_PAGE", "\n".join(performance_docs(Path(app.srcdir))))


#: a table cell that is a number, a mean ± CI, an interval, a fraction or a count ("3 (2 fitted)")
NUMBER_CELL = re.compile(r"[-+−–—\d\s.,:;%±×/\[\]()*†~<>=]*\d[-+−–—\d\s.,:;%±×/\[\]()*†~<>=]*")


def is_number_cell(text: str) -> bool:
    """Whether a table cell holds a number that must not wrap (``0.93 ± 0.02 †``, ``0.37 [0.29, 0.43]``)."""
    return bool(NUMBER_CELL.fullmatch(re.sub(r"\b(fitted|inf|seeds?|runs?|of)\b", "", text.strip())))


def _mark_number_cells(app, doctree) -> None:
    # class "pebench-number" keeps a cell on one line (docs/_static/pebench.css)
    from docutils import nodes

    for entry in doctree.findall(nodes.entry):
        if is_number_cell(entry.astext()):
            entry["classes"].append("pebench-number")


def setup(app) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited, priority=400)  # before MyST reads its configuration
    app.connect("source-read", _on_source_read)
    app.connect("doctree-read", _mark_number_cells)
    app.connect("build-finished", _on_build_finished)
    return {"version": pebench.__version__, "parallel_read_safe": True}


REPLICATION_SUITE = "replication"


def render_blocks(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Markdown lines of blocks as ``pebench report`` and the pilot readers write them
    (:mod:`pebench.report.replications`): headings, paragraphs, tables, bulleted lists and code."""
    lines: list[str] = []
    for block in blocks:
        kind = block["kind"]
        if kind == "heading":
            lines += [f"{'#' * block['level']} {block['text']}", ""]
        elif kind == "text":
            lines += [block["text"], ""]
        elif kind == "table":
            lines += [markdown_table(block["header"], block["rows"]), ""]
        elif kind == "list":
            lines += [f"- {item}" for item in block["items"]] + [""]
        elif kind == "code":
            lines += [f"```{block['language']}", *block["lines"], "```", ""]
        else:
            raise ValueError(f"a block of kind {kind!r} cannot be rendered; known: heading, text, table, list, code")
    return lines


def replications_include(results: Path = ROOT / "results") -> str:
    """The Replications page's body: the replication sections of the replication suite's ``report.json``
    (written by ``pebench report``), rendered as they are."""
    path = results / REPLICATION_SUITE / "report.json"
    if not path.exists():
        return not_in_results("Replications", f"no `{shown(path)}`; `pebench report --results "
                                              f"{shown(path.parent)}` writes it")
    sections = json.loads(path.read_text()).get("replications", [])
    lines = [line for section in sections for line in render_blocks(section["blocks"])]
    return "\n".join(lines) if lines else not_in_results("Replications", "no replication experiment is declared")
