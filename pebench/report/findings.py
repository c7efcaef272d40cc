"""What a results page says besides its artifacts: the headline findings, whether the folder is complete, where
it was made, how to read the leaderboard's intervals, and which results include each encoding and task.

Each function returns text or a JSON-ready section for ``report.json`` (texts are MyST Markdown in which
:data:`pebench.report_file.FOLDER` stands for the folder's path as the reader sees it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pebench.experiment import ReportSpec
from pebench.report_file import FOLDER
from pebench.schema import encoding_label, people_words
from pebench.store import raw_files, run_file_id

#: an MRR this close to an end of its interval is "at the edge"
EDGE = 0.01
#: the manifest fields a results page lists under its provenance
PROVENANCE_KEYS = ("date", "git_sha", "git_dirty", "pebench_version", "torch_version", "python_version", "device",
                   "cuda_device", "platform", "processor", "cpu_count", "executor", "workers", "n_runs")


def headline(findings: Sequence[str], specs: Mapping[str, ReportSpec]) -> list[str]:
    """The ranking findings among ``findings`` (the boards' tiers and first places and the declared comparisons
    of every experiment in ``specs`` with a primary metric, in the order of ``specs``), else the first three."""
    lines = []
    for name, spec in specs.items():
        if not spec.primary_metric:
            continue
        pairs = [f"{encoding_label(a)} vs {encoding_label(b)}:" for a, b in spec.comparisons]  # as findings name them
        lead = f"{people_words(name)}, "  # as the report names an experiment and its arch
        lines += [f for f in findings if f.startswith(lead)
                  and ("tier" in f or " is first" in f or any(pair in f for pair in pairs))]
    return lines or list(findings[:3])


def _runs(folder: Path, suite_run_ids: Collection[str]) -> tuple[set[str], set[str], set[str]]:
    """The run ids of the suite (``suite_run_ids``), those of them missing from ``folder``, and the folder's others."""
    expected = set(suite_run_ids)
    present = {run_file_id(path) for path in raw_files(Path(folder) / "raw")}
    return expected, expected - present, present - expected


def complete(folder: Path, suite_run_ids: Collection[str]) -> bool | None:
    """Whether ``folder`` holds every run of its suite (run ids ``suite_run_ids``; runs of another protocol
    beside them do not count); ``None`` when there are none (:func:`completeness` then says nothing)."""
    expected, missing, _ = _runs(folder, suite_run_ids)
    return not missing if expected else None


def completeness(folder: Path, suite_run_ids: Collection[str]) -> str:
    """Whether ``folder`` (named after its suite) holds every run of its suite, whose run ids the code defines as
    ``suite_run_ids``, and how to finish it; "" when there are none (not a suite, or an installation without
    the experiment scripts)."""
    suite = Path(folder).name
    expected, missing, foreign = _runs(folder, suite_run_ids)
    if not expected:
        return ""
    if not missing and not foreign:
        return f"The folder holds every one of the {len(expected)} runs of the `{suite}` suite."
    parts = []
    if missing:
        parts.append(f"**Incomplete:** {len(missing)} of the {len(expected)} runs of the `{suite}` suite are not "
                     f"in this folder, so cells without runs are absent from every table and figure below; "
                     f"`pebench run --suite {suite} --out {FOLDER}` completes it (finished runs are kept).")
    if foreign:
        parts.append(f"{len(foreign)} run files are not runs of the `{suite}` suite as the code defines it now "
                     "(made by another version of the protocol).")
    return " ".join(parts)


def provenance(manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    """Where and how a folder's runs were made, from its manifest: ``{"lead", "header", "rows"}`` (one column per
    source folder for a folder made by ``pebench combine``), or ``{"missing": text}`` without a manifest."""
    if manifest is None:
        return {"missing": f"No `manifest.json` in `{FOLDER}`.\n"}
    latest = manifest.get("latest") or (manifest.get("invocations") or [{}])[-1]
    if manifest.get("combined") and not latest:  # `pebench combine`: one column per source folder
        sources = manifest["combined"]["sources"]
        rows = [["folder", *(f"`{s['folder']}`" for s in sources)], ["runs taken", *(s["runs"] for s in sources)]]
        rows += [[f"`{k}`", *((s.get("manifest") or {}).get(k, "—") for s in sources)] for k in PROVENANCE_KEYS]
        return {"lead": "The folder was combined from these folders by `pebench combine` (a run in two of them had "
                        "identical rows):",
                "header": ["field", *(f"source {i + 1}" for i in range(len(sources)))], "rows": rows}
    rows = [[f"`{k}`", latest[k]] for k in PROVENANCE_KEYS if k in latest and latest[k] is not None]
    n = len(manifest.get("invocations", []))
    lead = f"The folder was written by {n} invocation(s) of `pebench run`; the latest:" if n else "Manifest:"
    return {"lead": lead, "header": ["field", "value"], "rows": rows}


def interval_edges(board: pd.DataFrame) -> str:
    """A sentence on the MRR rows of a leaderboard whose point estimate lies within :data:`EDGE` of an end of its
    bootstrap interval (or outside it), naming them, and what that means for reading the intervals."""
    low, high = board["mrr"] - board["mrr_low"], board["mrr_high"] - board["mrr"]
    edge = board[(low < EDGE) | (high < EDGE)]
    if edge.empty:
        return (f"In every row the MRR lies more than {EDGE} inside its interval: resampling the seeds moves each "
                "encoding's ranks both ways.")
    named_rows = ", ".join(f"{r.arch} {encoding_label(r.encoding)}" for r in edge.itertuples())
    return (f"In {len(edge)} of {len(board)} rows the MRR lies within {EDGE} of an end of its interval "
            f"({named_rows}): resampling the seeds moves those encodings' ranks (almost) one way only, so read "
            "those intervals as one-sided, a guide to how far the ranking moves with the seeds rather than "
            "calibrated 95% intervals ({doc}`protocol`, *Ranking*, says why).")


def leaderboard_edges(tables: Path) -> dict[str, str]:
    """:func:`interval_edges` of every ``leaderboard_*.csv`` in ``tables`` with MRR intervals, by table name."""
    edges = {}
    for path in sorted(Path(tables).glob("leaderboard_*.csv")):
        board = pd.read_csv(path)
        if {"mrr", "mrr_low", "mrr_high"} <= set(board.columns):
            edges[path.stem] = interval_edges(board)
    return edges
