"""Write the report of a results folder: summary CSVs, figures and citable tables.

>>> report = write_report(Path("results/standard"))  # doctest: +SKIP
>>> report.findings[0]  # doctest: +SKIP
'NoPE encoder: 0.10 ± 0.01 ID token accuracy on order-dependent tasks (chance 0.10) vs 0.97 on controls'

Layout under ``out_dir`` (default: the results folder itself)::

    summary/runs.csv          one row per run and evaluation variant (pebench.analysis.results.run_metrics)
    summary/cells.csv         across seeds: mean, std, 95% CI, best-of-seeds, counts (aggregate)
    summary/curves.csv        the same per evaluation length (curves)
    summary/comparisons.csv   every encoding vs the best of its task (compare_to_best)
    summary/status.csv        failed and diverged runs with their errors
    figures/<name>.svg|.pdf
    tables/<name>.csv|.md|.tex
    report.json               the artifacts, findings and protocol (for the docs build)

``pebench report`` writes into a staging folder and moves the files into place (:func:`publish_report`); of
the files already there it removes only those the previous report recorded in its ``report.json``, with their
SHA-256, and this one no longer writes, each only if it is unchanged since; never a file of the user's nor one
through a symbolic link.

Experiments missing from a results set are skipped. Tables show mean ± 95%
CI over seeds, the best mean per task in bold and the encodings not
significantly worse than it underlined (LaTeX) or in italics (Markdown); see
:mod:`pebench.analysis.results` for the statistics.

The package's modules: :mod:`~pebench.report.write` (the report and ``pebench show``'s tables),
:mod:`~pebench.report.artifacts` (the files of a report and their publication),
:mod:`~pebench.report.layouts` (how an experiment is shown; its tables and findings in
:mod:`~pebench.report.layout_tables` and :mod:`~pebench.report.layout_findings`),
:mod:`~pebench.report.boards` (leaderboards and the boards of protocol v3), :mod:`~pebench.report.overview`
(parameters and run status), :mod:`~pebench.report.protocol_text` (protocol, software and citation lines),
:mod:`~pebench.report.main_table`, and what ``report.json`` holds beside the artifacts
(:mod:`~pebench.report.index` and the modules it names). This module re-exports the public API.
"""


from __future__ import annotations

from pebench.report.artifacts import (
    FIGURE_FORMATS,
    OUTPUTS_KEY,
    REPORT_FOLDERS,
    TABLE_FORMATS,
    Artifact,
    Publication,
    check_report_folders,
    output_digests,
    publish_report,
    recorded_outputs,
)
from pebench.report.boards import board_artifacts, ranking_artifacts
from pebench.report.layout_tables import NOT_FITTED, Column, metric_table, registered_columns
from pebench.report.layouts import LAYOUTS, FigureSpec, Layout, key_metrics, layout_of
from pebench.report.protocol_text import citation_bibtex, experiment_protocol
from pebench.report.write import Report, tables_for, write_report

__all__ = [
    "FIGURE_FORMATS", "LAYOUTS", "NOT_FITTED", "OUTPUTS_KEY", "REPORT_FOLDERS", "TABLE_FORMATS", "Artifact", "Column",
    "FigureSpec", "Layout", "Publication", "Report", "board_artifacts", "check_report_folders", "citation_bibtex",
    "experiment_protocol", "key_metrics", "layout_of", "metric_table", "output_digests", "publish_report",
    "ranking_artifacts", "recorded_outputs", "registered_columns", "tables_for", "write_report",
]
