"""Generate the registry-, results- and figure-driven pages of the pebench site at build time.

When the builder starts, :func:`generate` writes everything under ``docs/_generated/`` (a page per encoding, task,
``pebench`` module and results folder, the teaching figures, the ``includes/`` of the hand-written pages) and
returns the MyST substitutions. The page modules render the registries, the ``report.json`` that ``pebench report``
wrote (a build stops with one line when it is stale) and the library's words (:mod:`pebench.render.results_text`,
:mod:`pebench.render.protocol_tables`); they compute no results (``tests/test_docs_extension.py``).
"""

from __future__ import annotations

import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from buildtree import hold_build_lock, regenerated

import pebench
from pebench import encodings, store, tasks
from pebench.render import page_check, performance_text, pilot_readings, protocol_tables, registry_tables, results_text
from pebench.render.blocks import markdown_lines
from pebench.render.tables import is_number_text
from pebench.store.report_file import StaleReport

from . import leaderboard_pages, protocol_pages, registry_pages, results_pages
from .common import DOCS, REFERENCE_SUITE, ROOT, one_build, write


def performance_includes(srcdir: Path = DOCS) -> list[Path]:
    """Files that ``docs/performance.md`` includes with ``{include}`` (pages of their own they must not be)."""
    page = srcdir / "performance.md"
    found = re.findall(r"^[`:]{3,}\{include\}\s+(\S+)", page.read_text(), flags=re.M) if page.exists() else []
    return [(page.parent / name).resolve() for name in found]


def performance_docs(srcdir: Path = DOCS) -> list[str]:
    """Toctree entry of the performance page: docs/performance.md if it is complete, else the fallback page."""
    complete = (srcdir / "performance.md").exists() and all(path.exists() for path in performance_includes(srcdir))
    return ["performance"] if complete else ["_generated/performance"]


def excluded_sources(srcdir: Path = DOCS) -> list[str]:
    """``exclude_patterns`` entries for files that are included into other pages, not pages themselves."""
    excluded = [path.relative_to(srcdir.resolve()).as_posix() for path in performance_includes(srcdir)
                if path.is_relative_to(srcdir.resolve())]
    if performance_docs(srcdir) != ["performance"] and (srcdir / "performance.md").exists():
        excluded.append("performance.md")  # incomplete (a missing include): the fallback page replaces it
    return excluded


@one_build()
def generate(srcdir: Path = DOCS, results: Path = ROOT / "results") -> dict[str, str]:
    """Write every generated page under ``srcdir/_generated``; return the MyST substitutions."""
    out = srcdir / "_generated"
    # the teaching figures train two small models (a third of this function's time): drawn by a second process
    # while this one writes the pages. Spawned, not forked: torch's thread pools do not survive a fork
    # pages (and artifacts) that may be gone start afresh; what comes out the same keeps its time (buildtree)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as drawing, regenerated(
            out, ("encodings", "tasks", "api", "encoding_results", "task_results", "results", "leaderboard")):
        figures = drawing.submit(registry_pages.generate_figures, out / "figures")
        for name in encodings.names():
            write(out / "encodings" / f"{name}.md", registry_pages.encoding_page(name, out, srcdir, results))
        for name in tasks.names():
            write(out / "tasks" / f"{name}.md", registry_pages.task_page(name, results))
        for column, names in (("encoding", encodings.names()), ("task", tasks.names())):
            for name in names:
                if (page := registry_pages.all_results_page(column, name, results)) is not None:
                    write(out / f"{column}_results" / f"{name}.md", page)
        suite_pages = results_pages.generate_results(results, out / "results", srcdir)
        for module in registry_pages.api_modules():
            write(out / "api" / f"{module}.md", registry_pages.api_page(module))
        if performance_docs(srcdir) != ["performance"]:
            write(out / "performance.md", results_text.PERFORMANCE_FALLBACK)
        else:  # the performance engineer's page is complete
            (out / "performance.md").unlink(missing_ok=True)
        reference, pilots = results / REFERENCE_SUITE, store.refuse_link(results / "pilots")
        performance = store.refuse_link(results / "performance")  # a results folder's: never through a link
        includes = {
            "encodings_table": registry_pages.encodings_table(), "tasks_table": registry_pages.tasks_table(),
            "metrics_table": registry_tables.metrics_table().to_markdown(), "cite": registry_pages.cite_include(),
            "experiments": "\n".join(markdown_lines(protocol_tables.experiments_blocks(REFERENCE_SUITE))),
            **{name: "\n".join(markdown_lines(blocks())) for name, blocks in protocol_tables.INCLUDES.items()},
            **{include: protocol_pages.pilot_reading(pilots / name, what, script)
               for include, (name, what, script) in pilot_readings.PILOT_READINGS.items()},
            "depth_pilot": protocol_pages.depth_pilot_include(pilots),
            **{f"battery_{name}": table for name, table in protocol_pages.battery_tables().items()},
            "replications": protocol_pages.replications_include(results),
            "changes_from_previous": protocol_pages.changes_include(results),
            **{key: leaderboard_pages.report_tables(reference, key) for key in leaderboard_pages.REPORT_TABLES},
            "fit_resolution": leaderboard_pages.fit_resolution([reference, results / "extended"]),
            **{name: include(results, out / "leaderboard", srcdir) for name, include in (
                ("leaderboard", leaderboard_pages.leaderboard_include),
                ("leaderboard_suites", leaderboard_pages.suites_include),
                ("leaderboard_archive", leaderboard_pages.archive_include))},
            "headline_findings": leaderboard_pages.headline_findings(results),
            "board_caveats": leaderboard_pages.board_caveats(results),
            "reference_history": protocol_tables.reference_history_text(ROOT, results),
            "results_toc": results_pages.results_toc(suite_pages),
        }
        for name, text in includes.items():
            write(out / "includes" / f"{name}.md", text)
        substitutions = figures.result()
        substitutions.update(version=pebench.__version__, n_encodings=str(len(encodings.names())),
                             n_tasks=str(len(tasks.names())), reruns=results_pages.reruns_text(results),
                             current_reruns=results_pages.reruns_text(results, archived=False),
                             archived_reruns=results_pages.reruns_text(results, current=False))
        substitutions.update(protocol_tables.suite_time_values(performance))
        substitutions.update(performance_text.performance_values(performance))
        substitutions.update(protocol_tables.protocol_values())
        substitutions["standard_regeneration"] = protocol_tables.regeneration_text(results)
        return page_check.check_substitutions(substitutions, srcdir)


def _on_config_inited(app, config) -> None:
    app._pebench_build_lock = hold_build_lock(Path(app.srcdir))
    try:
        results = os.environ.get("PEBENCH_DOCS_RESULTS", ROOT / "results")  # another set of results, to preview it
        config.myst_substitutions.update(generate(Path(app.srcdir), Path(results).resolve()))
    except BaseException as exc:  # no build follows to release it
        _on_build_finished(app, None)
        if isinstance(exc, StaleReport):  # the reader's to mend, in one line: no Sphinx traceback box
            raise SystemExit(f"pebench_docs: {exc}") from None
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


def _mark_number_cells(app, doctree) -> None:
    # class "pebench-number" keeps a cell on one line (docs/_static/pebench.css)
    from docutils import nodes

    for entry in doctree.findall(nodes.entry):
        if is_number_text(entry.astext()):
            entry["classes"].append("pebench-number")


def setup(app) -> dict[str, Any]:
    """Register the build hooks: generate the pages, fill the performance toctree, mark number cells."""
    # before the environment compares the configuration with the last build's (the same values: only the pages
    # whose sources changed are read again) and before MyST reads it
    app.connect("config-inited", _on_config_inited)
    app.connect("source-read", _on_source_read)
    app.connect("doctree-read", _mark_number_cells)
    app.connect("build-finished", _on_build_finished)
    return {"version": pebench.__version__, "parallel_read_safe": True}
