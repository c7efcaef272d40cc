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

This module holds the build hooks and :func:`generate`; the pages are written by the page modules:
``registry_pages`` (encodings, tasks, metrics, API, figures, citations), ``protocol_pages`` (the protocol's
numbers from the code, pilots, replications), ``results_pages`` (suites and reruns) and ``leaderboard_pages``
(leaderboard, headline findings, fit tables, the reference's history), over
``common``. They render ``report.json``, the registries and files as written; they compute no results
(``tests/test_docs_extension.py`` holds them to it).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pebench
from pebench import encodings, tasks
from pebench.pilot_readings import PILOT_READINGS
from pebench.protocol_tables import regeneration_text

from . import leaderboard_pages, protocol_pages, registry_pages, results_pages
from .common import DOCS, REFERENCE_SUITE, ROOT, write


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


def generate(srcdir: Path = DOCS, results: Path = ROOT / "results") -> dict[str, str]:
    """Write every generated page under ``srcdir/_generated``; return the MyST substitutions."""
    out = srcdir / "_generated"
    for sub in ("encodings", "tasks", "api", "encoding_results", "task_results", "results", "leaderboard"):
        shutil.rmtree(out / sub, ignore_errors=True)  # pages (and artifacts) that may be gone
    for name in encodings.names():
        write(out / "encodings" / f"{name}.md", registry_pages.encoding_page(name, out, srcdir))
    for name in tasks.names():
        write(out / "tasks" / f"{name}.md", registry_pages.task_page(name))
    for column, names in (("encoding", encodings.names()), ("task", tasks.names())):
        for name in names:
            if (page := registry_pages.all_results_page(column, name, results)) is not None:
                write(out / f"{column}_results" / f"{name}.md", page)
    suite_pages = results_pages.generate_results(results, out / "results", srcdir)
    for module in registry_pages.api_modules():
        write(out / "api" / f"{module}.md", registry_pages.api_page(module))
    if performance_docs(srcdir) != ["performance"]:
        write(out / "performance.md", PERFORMANCE_FALLBACK)
    else:
        (out / "performance.md").unlink(missing_ok=True)
    reference, pilots = results / REFERENCE_SUITE, results / "pilots"
    includes = {
        "encodings_table": registry_pages.encodings_table(), "tasks_table": registry_pages.tasks_table(),
        "metrics_table": registry_pages.metrics_table(), "cite": registry_pages.cite_include(),
        "experiments": protocol_pages.experiments_tables(), "v3_fit": protocol_pages.v3_fit_include(),
        **{include: protocol_pages.pilot_reading(pilots / name, what, script)
           for include, (name, what, script) in PILOT_READINGS.items()},
        "depth_pilot": protocol_pages.depth_pilot_include(pilots),
        **{f"battery_{name}": table for name, table in protocol_pages.battery_tables().items()},
        "replications": protocol_pages.replications_include(results),
        "fit_table": leaderboard_pages.fit_table(reference), "floors_table": leaderboard_pages.floors_table(reference),
        "fit_resolution": leaderboard_pages.fit_resolution([reference, results / "extended"]),
        "leaderboard": leaderboard_pages.leaderboard_include(results, out / "leaderboard", srcdir),
        "headline_findings": leaderboard_pages.headline_findings(results),
        "reference_history": leaderboard_pages.reference_history(results),
        "results_toc": results_pages.results_toc(suite_pages),
    }
    for name, text in includes.items():
        write(out / "includes" / f"{name}.md", text)
    substitutions = registry_pages.generate_figures(out / "figures")
    substitutions.update(version=pebench.__version__, n_encodings=str(len(encodings.names())),
                         n_tasks=str(len(tasks.names())), reruns=results_pages.reruns_text(results))
    substitutions.update(protocol_pages.suite_times(results))
    substitutions.update(protocol_pages.protocol_substitutions())
    substitutions["standard_regeneration"] = regeneration_text(results)
    return substitutions


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
    """Register the build hooks: generate the pages, fill the performance toctree, mark number cells."""
    app.connect("builder-inited", _on_builder_inited, priority=400)  # before MyST reads its configuration
    app.connect("source-read", _on_source_read)
    app.connect("doctree-read", _mark_number_cells)
    app.connect("build-finished", _on_build_finished)
    return {"version": pebench.__version__, "parallel_read_safe": True}
