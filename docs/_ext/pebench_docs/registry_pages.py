"""Pages and tables of the registries: one page per encoding and task, the encodings, tasks and metrics
tables, the API pages, the Concepts page's teaching figures and the citations."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pebench
from pebench import encodings, explain, tasks
from pebench.render import pilot_readings, registry_tables, results_text
from pebench.render.blocks import markdown_lines
from pebench.render.registry_tables import bib_entries, cited_papers, suite_bibtex
from pebench.store.report_file import suite_folders
from pebench.store.schema import page_title, people_words, shown_name

from .common import DOCS, REFERENCE_SUITE, ROOT, markdown_table, report_index, save_figure, source_path


def results_sections(column: str, name: str, results: Path = ROOT / "results", every: bool = True) -> list[str]:
    """Where ``name`` (an encoding or a task) appears in the committed results, per suite from its report's
    ``entries``: the experiments, its table rows and the figures that draw it; ``every=False``: only what the
    reference suite leads with (:func:`pebench.render.entry_lead.lead`)."""
    found = []
    for folder in sorted(suite_folders(results), key=lambda f: (f.name != REFERENCE_SUITE, f.name)):
        view = results_text.entry_view(report_index(folder), column, name, lead_only=not every)
        if view is None or not (every or folder.name == REFERENCE_SUITE):
            continue
        page, (pairs, tables, figures) = f"/_generated/results/{folder.name}", view
        if not every and (own := results_text.own_figures(report_index(folder), column, name)):
            figures = own  # the encoding against every other, instead of a figure of every encoding
        where = "; ".join(people_words(experiment, arch) for experiment, arch in pairs)
        found += [f"### {folder.name} results", "", f"{{doc}}`The {folder.name} results <{page}>`: {where}.", ""]
        found += [line for note in results_text.entry_notes(report_index(folder), column, name) for line in (note, "")]
        for title, rows in tables:
            found += [f"#### {title}", "", markdown_table(rows["header"], rows["rows"])]
        found += ["#### Figures", ""] if figures else []
        for title, svg, caption in figures:
            found += [f":::{{figure}} {page}/{svg}", f":alt: {title}", "", f"**{title}.** {caption}", ":::", ""]
    return found


def results_links(column: str, name: str, results: Path = ROOT / "results") -> list[str]:
    """The "In the results" section of ``name``'s page: what the reference suite leads with and a link to the page
    of all its results (:func:`all_results_page`)."""
    if not results_sections(column, name, results):
        return ["## In the results", "", results_text.not_in_reference_text(column, name), ""]
    return ["## In the results", "", results_text.ENTRY_LEAD, "", *results_sections(column, name, results, every=False),
            f"{{doc}}`All results for {shown_name(column, name)} </_generated/{column}_results/{name}>`: "
            f"{results_text.ALL_RESULTS}", ""]


def all_results_page(column: str, name: str, results: Path = ROOT / "results") -> str | None:
    """The orphan page of every result of ``name`` (:func:`results_sections`); None when the results hold none."""
    found = results_sections(column, name, results)
    if not found:
        return None
    found = [line[1:] if line.startswith("###") else line for line in found]  # its sections sit under the title
    return "\n".join(["---", "orphan: true", "---", "", f"# All results for {shown_name(column, name)} (`{name}`)", "",
                      f"Every row and figure of the committed results that shows {{doc}}`{name} "
                      f"</_generated/{column}s/{name}>`.", "", *found])


def autoclass_block(cls: type) -> list[str]:
    """The MyST lines that render ``cls``'s docstring (its formula or definition) on a page, unindexed."""
    return ["```{eval-rst}", f".. autoclass:: {cls.__module__}.{cls.__qualname__}", "   :no-index:", "```", ""]


def encoding_page(name: str, out: Path, srcdir: Path = DOCS, results: Path = ROOT / "results") -> str:
    """The page of encoding ``name``, with what ``results`` hold of it; its figure goes to ``out/figures``."""
    options = registry_tables.encoding_options(name)
    call_name, call = registry_tables.build_call(name)
    lines = [f"# {page_title('encoding', name)}", "", encodings.meta(name)["summary"], "",
             registry_tables.encoding_facts(name).to_markdown(),
             "## Options", "", options.to_markdown() if options else
             "None: the encoding is fully determined by the model's width and heads.\n",
             "Build it by name (every option may be omitted; its default is shown):", "", "```python",
             "from pebench import encodings", "", call, "```", "",
             f"and select it in a run with `pebench run --suite smoke --filter encoding={call_name}`.", ""]
    example = explain.encoding_example(name)
    if example is not None:
        fig, caption = example
        stem = out / "figures" / f"encoding_{name}"
        save_figure(fig, stem)
        image = source_path(stem.with_suffix(".svg"), srcdir)
        lines += ["## Example", "", f":::{{figure}} {image}", f":alt: {name} example", "", caption, ":::", ""]
    lines += results_links("encoding", name, results)
    lines += ["## Definition and conventions", "", "The class docstring, which states the formula, the convention and "
              "the reference code it was checked against:", "", *autoclass_block(encodings.ENCODINGS.get(name))]
    return "\n".join(lines)


def encodings_table() -> str:
    """Every registered encoding, linked to its page (:func:`pebench.render.registry_tables.encodings_table`)."""
    return registry_tables.encodings_table(lambda t, n: f"{{doc}}`{t} </_generated/encodings/{n}>`").to_markdown()


def task_page(name: str, results: Path = ROOT / "results") -> str:
    """The page of task ``name``: its facts, examples and renderings (:mod:`pebench.render.registry_tables`), and what
    ``results`` show of it."""
    task = tasks.get(name)
    examples, rendered = registry_tables.task_examples(name)
    lines = [f"# {page_title('task', name)}", "", task.describe(), "", registry_tables.task_facts(name).to_markdown(),
             f"## Examples (length {registry_tables.example_length(task)}, seed 0)", "", examples.to_markdown()]
    for arch, table in rendered.items():
        lines += [f"### Rendered for the {arch}", "", table.to_markdown()]
    pilots = pilot_readings.task_pilot_blocks(name, results / "pilots")
    lines += [*results_links("task", name, results), *markdown_lines(pilots),
              "`SEP` separates input and output, `_` is the blank an encoder fills in, `·` a position without loss "
              "(label -100); see {func}`pebench.tasks.base.render_pair`.", "", "## Definition", "",
              *autoclass_block(type(task))]
    return "\n".join(lines)


def tasks_table() -> str:
    """Every registered task (:func:`pebench.render.registry_tables.tasks_table`), each linked to its page."""
    return registry_tables.tasks_table(lambda text, name: f"{{doc}}`{text} </_generated/tasks/{name}>`").to_markdown()


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
    """The autodoc page of ``module`` (its first docstring line kept as a comment)."""
    doc = (inspect.getdoc(importlib.import_module(module)) or "").split("\n")[0]
    return "\n".join([f"# `{module}`", "", "```{eval-rst}", f".. automodule:: {module}", "   :members:",
                      "   :ignore-module-all:", "```", "", f"<!-- {doc.replace('`', '')} -->", ""])


def generate_figures(out: Path) -> dict[str, str]:
    """The Concepts page's teaching figures; returns the numbers they show (:mod:`pebench.explain`)."""
    for name, make in explain.CONCEPT_FIGURES.items():
        save_figure(make(), out / name)
    return explain.concept_values()


def cite_include() -> str:
    """The BibTeX of pebench and of the registries' papers (:func:`pebench.render.registry_tables.cited_papers`)."""
    entries = bib_entries()
    lines = []
    for heading, text in [("pebench", suite_bibtex()), *((h, entries[key]) for h, key in cited_papers(entries))]:
        lines += [f"### {heading}", "", "```bibtex", text, "```", ""]
    return "\n".join(lines)
