"""Writes a verdict (:mod:`pebench.analysis.verdict`) into the ``verdict/`` folder of ``pebench evaluate``'s
output: ``verdict.json`` (every number and sentence), ``verdict.md`` (the sentences and the tables), each table as
Markdown, LaTeX and CSV, and a figure of accuracy against length per architecture, the encoding emphasised beside
the declared baselines' bands. On partial data only the per-task table and what is missing are written."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pebench import store
from pebench.analysis.verdict import Verdict, placement, summary
from pebench.protocol import VERDICT_BASELINES
from pebench.render import verdict_tables
from pebench.report import plots
from pebench.report.artifacts import save_figure, save_table
from pebench.store.schema import encoding_label, order_dependent

#: the folder of a verdict in ``pebench evaluate``'s output, beside ``raw/``
VERDICT_FOLDER = "verdict"
#: what each figure of a verdict shows, and what to look at
FIGURE_CAPTION = ("Token accuracy against evaluation length on the order-dependent tasks: {0} (wide line) beside the "
                  "declared baselines, each a mean over fitted seeds with its 95% t-interval band; the grey area is "
                  "the training range, the dashed line chance and the dash-dotted one the position-free floor. Look "
                  "right of the grey area: where {0}'s band lies above a baseline's, it extrapolates further there.")
#: the verdict's record, every number and sentence the other files show
VERDICT_FILE = "verdict.json"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame as JSON records (NaN as null)."""
    return [{key: (None if isinstance(value, float) and not math.isfinite(value) else
                   value.item() if hasattr(value, "item") else value) for key, value in record.items()}
            for record in frame.to_dict("records")]


def verdict_record(found: Verdict, suite: str, source: Mapping[str, Any], eta_seconds: float | None = None,
                   predictions: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What ``verdict.json`` holds: the encoding, suite, whether complete, the summary sentences, the results
    versions of the reference and of the encoding's runs, the encoding's source (path and SHA-256), the missing
    cells (with ``eta_seconds``, the calibrated time to make them), failed runs, every table's rows, the reference's
    encodings it is identical to (:attr:`~pebench.analysis.verdict.Verdict.identical`), and its runs' per-example
    predictions files (``predictions``: :func:`pebench.store.predictions.inventory`)."""
    return {"encoding": found.encoding, "suite": suite, "complete": found.complete, "summary": summary(found),
            "reference_version": found.reference_version, "own_version": found.own_version,
            "source": dict(source), "baselines": list(VERDICT_BASELINES),
            "missing": _records(found.missing), "eta_seconds": eta_seconds, "failed": _records(found.failed),
            "per_task": _records(found.per_task), "placement": _records(placement(found)),
            "board": _records(found.board), "capability": _records(found.capability), "harm": _records(found.harm),
            "comparisons": _records(found.comparisons), "parameters": _records(found.parameters),
            "identical": [{"encoding": name, "runs": runs} for name, runs in found.identical],
            "predictions": [dict(entry) for entry in predictions]}


def predictions_sentence(predictions: Sequence[Mapping[str, Any]]) -> str:
    """How many of the verdict's runs have their per-example predictions beside their run files, and whether
    those agree with the run files (:func:`pebench.store.predictions.check_against_rows`), in one sentence."""
    kept = [entry for entry in predictions if entry["file"]]
    if not predictions:
        return "Per-example predictions: no run yet."
    wrong = [entry["run_id"] for entry in kept if entry["problems"]]
    examples = sum(entry["examples"] for entry in kept)
    agree = (f"{len(wrong)} disagree with their run files ({', '.join(wrong[:3])}{', ...' if len(wrong) > 3 else ''})"
             if wrong else "each agrees with its run file")
    sentence = (f"Per-example predictions: {len(kept)} of {len(predictions)} runs, {examples:,} examples in "
                f"`predictions/<run id>.jsonl.gz` (hashes in verdict.json); {agree}.")
    if len(kept) < len(predictions):
        sentence += " A run made without `--predictions` has none: move its run file away and evaluate again."
    return sentence


def check_verdict_folder(out: Path) -> None:
    """Refuse a verdict folder (``out``, and its ``source/``) that is a symbolic link or not a folder, or that holds
    an entry that is a link or neither a file nor a folder: the verdict writes its files there in place, and a
    folder may come from anyone (a link would lead a write out of it, a FIFO would hang it).

    Raises:
        ResultsError: naming the entry and what to do, on one line.
    """
    for folder in (out, out / "source"):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise store.ResultsError(f"{folder} is {'a symbolic link' if folder.is_symlink() else 'not a folder'}; "
                                     "a verdict writes only into a folder of its own: move it away or choose "
                                     "another --out")
        for entry in folder.iterdir() if folder.is_dir() else ():
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
                raise store.ResultsError(f"{entry} is {'a symbolic link' if entry.is_symlink() else 'not a file'}; "
                                         "a verdict never writes through one: move it away or choose another --out")


def write_verdict(found: Verdict, data: pd.DataFrame, out: Path, *, suite: str, source: Mapping[str, Any],
                  eta_seconds: float | None = None, predictions: Sequence[Mapping[str, Any]] = ()) -> list[Path]:
    """Write the verdict's files into ``out`` (a folder this command owns, created here); returns their paths.

    ``data``: the rows of the reference (without the encoding's own runs there) and of the encoding, for the
    figure; ``source``: the encoding's source file and its SHA-256; ``predictions``: its runs' predictions files
    (:func:`pebench.store.predictions.inventory`).

    Raises:
        ResultsError: ``out`` is a link, or holds one (:func:`check_verdict_folder`).
    """
    check_verdict_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    version = (f"{suite} reference {found.reference_version}; {found.encoding} {found.own_version}; source sha256 "
               f"{str(source.get('sha256') or 'unknown')[:12]}")
    record = verdict_record(found, suite, source, eta_seconds, predictions)
    paths = [store.path_in(out, VERDICT_FILE)]
    paths[0].write_text(json.dumps(record, indent=1, default=str) + "\n")
    archs = sorted(set(found.per_task["arch"])) if len(found.per_task) else []
    tables = [verdict_tables.per_task_table(found.per_task, found.encoding, VERDICT_BASELINES, arch, version)
              for arch in archs]
    if found.complete and len(found.board):
        tables.append(verdict_tables.placement_table(found.board, found.encoding, version))
    if found.complete and len(found.comparisons):
        tables.append(verdict_tables.comparisons_table(found.comparisons, found.encoding, version))
    written = [save_table(table, out, "") for table in tables]
    for artifact in written:
        paths += list(artifact.paths.values())
    scored = found.per_task[found.per_task["metric"] == "ood_normalised_acc"] if len(found.per_task) else found.per_task
    figures = _figures(data, found.encoding, sorted(set(scored["experiment"])) if len(scored) else [], out)
    paths += [path for drawn in figures for path in drawn[1].values()]
    lines = [f"# Verdict: {encoding_label(found.encoding)} against the {suite} reference", "",
             *[f"- {line}" for line in record["summary"]], ""]
    if not found.complete:
        lines += ["Missing runs:", "", *[f"- {row['experiment']} / {row['arch']} / {row['task']}: {row['runs']} run(s)"
                                         for row in record["missing"]], ""]
    lines += [f"Results: {version}.", "", predictions_sentence(record["predictions"]), ""]
    for artifact in written:
        lines += [artifact.paths["md"].read_text(), ""]
    for name, drawn in figures:
        lines += [f"![{name}]({drawn['svg'].name})", "", FIGURE_CAPTION.format(encoding_label(found.encoding)), ""]
    paths.append(store.path_in(out, "verdict.md"))
    paths[-1].write_text("\n".join(lines))
    return paths


def _figures(data: pd.DataFrame, encoding: str, experiments: list[str], out: Path
             ) -> list[tuple[str, dict[str, Path]]]:
    """Per experiment of ``experiments`` (those with a floor-normalised score) and arch of the encoding's runs,
    token accuracy vs length on the order-dependent tasks, the encoding beside the declared baselines."""
    own = data[data["encoding"] == encoding]
    drawn = []
    for experiment in experiments:
        for arch in sorted(own.loc[own["experiment"] == experiment, "arch"].unique()):
            curves, _ = plots.accuracy_curves(data, experiment, arch=arch)
            tasks = [t for t in plots.tasks_in_order(curves["task"]) if order_dependent(t)]
            if not tasks or "token_acc_mean" not in curves:
                continue
            curves = curves[curves["task"].isin(tasks[: plots.MAX_PANELS])]
            name = f"verdict_{experiment}_{arch}"
            title = (f"{encoding_label(encoding)} beside the declared baselines: {experiment}, {arch}, token "
                     "accuracy vs length")
            try:
                figure = plots.encoding_vs_baselines(curves, encoding, VERDICT_BASELINES, title=title)
            except ValueError:
                continue
            drawn.append((name, save_figure(figure, out, name)))
    return drawn

