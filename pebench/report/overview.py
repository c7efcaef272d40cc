"""What a report says of the whole results folder: the parameter counts per encoding, the runs by status, and
the sentence that counts them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pebench import encodings
from pebench.analysis import results
from pebench.render.results_text import IDENTICAL_LEAD
from pebench.render.tables import RESULTS_STYLE, Cell, Table
from pebench.render.tables import Column as TableColumn
from pebench.report import plots
from pebench.store import schema
from pebench.store.schema import BASE_VARIANT, encoding_label


def parameter_table(runs: pd.DataFrame, protocol: str) -> Table:
    """Parameter counts per encoding and architecture, and how many more than the baseline (NoPE; flagged above
    10%)."""
    completed = runs[schema.completed(runs) & (runs["variant"] == BASE_VARIANT)]
    keys = ["experiment", "task", "arch", "train_max_len"]
    baseline = completed[completed["encoding"] == encodings.baseline_name()]
    nope = encoding_label(encodings.baseline_name()) if encodings.baseline_name() else "the baseline"
    base = baseline.groupby(keys)["params"].first().rename("baseline_params")
    frame = completed.join(base, on=keys)
    frame["extra"] = frame["params"] / frame["baseline_params"] - 1.0
    grouped = frame.groupby(["arch", "encoding", "encoding_options"], sort=False)
    data = grouped.agg(params_min=("params", "min"), params_max=("params", "max"),
                       encoding_params_min=("encoding_params", "min"), encoding_params_max=("encoding_params", "max"),
                       extra_vs_none_max=("extra", "max")).reset_index()
    data = data.sort_values(["arch", "encoding"], key=schema.sort_key).reset_index(drop=True)
    data["over_10_percent"] = data["extra_vs_none_max"] > 0.10

    def span(low: float, high: float) -> str:
        return f"{low:,.0f}" if low == high else f"{low:,.0f}–{high:,.0f}"

    rows, starts = [], []
    for i, row in data.iterrows():
        if i == 0 or row["arch"] != data.at[i - 1, "arch"]:
            starts.append(len(rows))
        extra = row["extra_vs_none_max"]
        rows.append([Cell(row["arch"], row["arch"]), Cell(plots.label(row["encoding"], row["encoding_options"]),
                                                          row["encoding"]),
                     Cell(span(row["params_min"], row["params_max"]), (row["params_min"], row["params_max"])),
                     Cell(span(row["encoding_params_min"], row["encoding_params_max"]),
                          (row["encoding_params_min"], row["encoding_params_max"])),
                     Cell("—" if not np.isfinite(extra) else f"{100 * extra:+.1f}%", extra),
                     Cell("yes" if row["over_10_percent"] else "no", bool(row["over_10_percent"]))])
    caption = ("Trainable parameters of the whole model and of the encoding alone (ranges over tasks and "
               "experiments: vocabularies and position-table sizes differ), and the largest increase over the "
               f"{nope} model of the same task; more than 10% is flagged as a fairness caveat. Model: {protocol}")
    columns = [TableColumn("Arch", "l", key=True), TableColumn("Encoding", "l", key=True),
               *(TableColumn(h, "r") for h in ("Params", "Encoding params", f"Max extra vs {nope}", "> 10%"))]
    return Table("parameters", "Parameter counts per encoding", caption, columns, rows, starts, data=data,
                 style=RESULTS_STYLE)


def status_table(runs: pd.DataFrame) -> Table:
    """Runs per experiment and status; failed and diverged runs are listed, never dropped."""
    unique = runs.drop_duplicates("run_id")
    counts = unique.groupby(["experiment", "status"]).size().unstack(fill_value=0)
    counts = counts.reindex(columns=list(schema.STATUSES), fill_value=0).reset_index()
    rows = [[Cell(r["experiment"], r["experiment"]),
             *(Cell(str(n), int(n)) for n in (r["ok"] + r["diverged"] + r["failed"], r["ok"], r["diverged"],
                                              r["failed"]))] for _, r in counts.iterrows()]
    bad = unique[unique["status"] != "ok"]
    listed = "; ".join(f"{r.experiment}/{r.task}/{r.encoding}/{r.arch}/seed {r.seed} ({r.status})"
                       for r in bad.itertuples()) or "no run"
    caption = ("Every run of the results set by status: diverged runs (training loss above the divergence "
               "threshold) are evaluated and included in the means; failed runs (an exception) have no numbers "
               f"and are counted in the Seeds column of every table. Not ok: {listed}.")
    columns = [TableColumn("Experiment", "l", key=True), *(TableColumn(h, "r") for h in
                                                              ("Runs", "ok", "diverged", "failed"))]
    return Table("runs", "Runs by status", caption, columns, rows, list(range(len(rows)))[:1], data=counts,
                 style=RESULTS_STYLE)


def findings_status(runs: pd.DataFrame) -> str:
    """One sentence: how many runs the folder holds, and how many of them are ok, diverged and failed."""
    unique = runs.drop_duplicates("run_id")
    counts = unique["status"].value_counts()
    return (f"{len(unique)} runs: {counts.get('ok', 0)} ok, {counts.get('diverged', 0)} diverged (included in the "
            f"means), {counts.get('failed', 0)} failed (counted, listed in tables/runs).")


def identical_models(data: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Per pair of encodings that are one model in these results
    (:func:`pebench.analysis.results.identical_encodings`), ``(a, b, sentence)``: the two encodings' names and the
    sentence that says so (their places on the boards are one result, not two). None where every encoding's runs
    differ."""
    return [(a[0], b[0], f"{IDENTICAL_LEAD} {plots.label(*b)} gave the same rows as {plots.label(*a)} in every one "
                         f"of the {n} runs they share (every length, condition and metric, number for number), so at "
                         "this scale they are one model: their places on the boards are one result, not two.")
            for a, b, n in results.identical_encodings(data)]


def findings_identical(models: list[tuple[str, str, str]]) -> list[str]:
    """The findings of :func:`identical_models` (``models``): one sentence per pair of encodings that are one
    model."""
    return [sentence for _, _, sentence in models]


def identical_notes(models: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    """Per encoding that is one model with another (``models``, :func:`identical_models`), the sentences that say
    so: a note on the page of each of the two, whose board places a reader would otherwise take for two results."""
    notes: dict[str, list[str]] = {}
    for a, b, sentence in models:
        for name in dict.fromkeys((a, b)):
            notes.setdefault(name, []).append(sentence)
    return notes
