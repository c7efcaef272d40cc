"""What a results page says besides its artifacts: the headline findings, whether the folder is complete, where
it was made, how to read the leaderboard's intervals, and which results include each encoding and task.

Each function returns text or a JSON-ready section for ``report.json`` (texts are MyST Markdown in which
:data:`pebench.store.report_file.FOLDER` stands for the folder's path as the reader sees it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pebench.render.results_text import IDENTICAL_LEAD, SPLIT_HALF_LEAD
from pebench.render.tables import markdown_code, markdown_text
from pebench.report_spec import ReportSpec
from pebench.store import raw_files, run_file_id
from pebench.store.report_file import FOLDER
from pebench.store.schema import encoding_label, people_words

#: an MRR this close to an end of its interval is "at the edge"
EDGE = 0.01
#: the manifest fields a results page lists under its provenance
PROVENANCE_KEYS = ("date", "git_sha", "git_dirty", "pebench_version", "torch_version", "python_version", "device",
                   "cuda_device", "platform", "processor", "cpu_model", "torch_cpu_capability", "cpu_count", "executor",
                   "workers", "n_runs")


def headline(findings: Sequence[str], specs: Mapping[str, ReportSpec]) -> list[str]:
    """The ranking findings among ``findings`` (the boards' tiers, first places and split-half stability and the
    declared comparisons of every experiment in ``specs`` with a primary metric, in the order of ``specs``, then
    any pair of encodings that are one model), else the first three."""
    lines = []
    for name, spec in specs.items():
        if not spec.primary_metric:
            continue
        pairs = [f"{encoding_label(a)} vs {encoding_label(b)}:" for a, b in spec.comparisons]  # as findings name them
        lead = f"{people_words(name)}, "  # as the report names an experiment and its arch
        lines += [f for f in findings if f.startswith(lead)
                  and ("tier" in f or " is first" in f or SPLIT_HALF_LEAD in f or any(pair in f for pair in pairs))]
    lines += [f for f in findings if f.startswith(IDENTICAL_LEAD)] if lines else []
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


#: the fields of an invocation that tell its machine apart: a CUDA device, else the CPU and its vector extensions
MACHINE_KEYS = ("cuda_device", "cpu_model", "torch_cpu_capability")


def _machine(invocation: Mapping[str, Any]) -> str:
    """An invocation's machine in words (:data:`MACHINE_KEYS`): its CUDA device, else its CPU and vector extensions."""
    if invocation.get("cuda_device"):
        return str(invocation["cuda_device"])
    return ", ".join(str(invocation[k]) for k in MACHINE_KEYS[1:] if invocation.get(k)) or "machine not recorded"


def _numbers(indices: Sequence[int]) -> str:
    """1-based invocation numbers, consecutive ones as a range: ``1-9, 12``."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)


def runs_made(invocations: Sequence[Mapping[str, Any]], n_files: int | None) -> list[int] | None:
    """How many runs each invocation made, from the manifest's counts: what it had to make (``runs_to_make``) less
    what was left for the next one, which had to make those and the runs its larger suite (``n_runs``) added; the last
    one's remainder is what its suite lacks of the ``n_files`` run files. ``None`` when a count is not recorded or
    the counts do not add up (files added or removed by hand)."""
    todo = [run.get("runs_to_make") for run in invocations]
    sizes = [run.get("n_runs") for run in invocations]
    if not invocations or n_files is None or any(not isinstance(n, int) for n in (*todo, *sizes)) \
            or n_files > sizes[-1]:
        return None
    left = [b - (size_b - size_a) for b, size_a, size_b in zip(todo[1:], sizes, sizes[1:], strict=False)]
    made = [a - b for a, b in zip(todo, [*left, sizes[-1] - n_files], strict=True)]
    return made if all(n >= 0 for n in made) else None


def duration_text(seconds: float) -> str:
    """A duration in words: whole minutes under two hours, hours to one decimal above."""
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def training_time(data: pd.DataFrame) -> float | None:
    """The seconds a folder's runs (raw rows ``data``) trained for in all: each run's ``train_seconds`` (fit checks
    included, evaluation not), once per run; ``None`` without the column or a number in it."""
    if "train_seconds" not in data or "run_id" not in data:
        return None
    seconds = pd.to_numeric(data.drop_duplicates("run_id")["train_seconds"], errors="coerce")
    seconds = seconds[(seconds >= 0) & (seconds < float("inf"))]  # NaN is neither
    return float(seconds.sum()) if len(seconds) else None


def timed_invocations(invocations: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The ``invocations`` that recorded their wall time as a number of seconds (``wall_seconds``; the manifest may
    come from anyone: a bool, a string, a negative or infinite value is no record)."""
    return [run for run in invocations
            if isinstance(run.get("wall_seconds"), (int, float)) and not isinstance(run["wall_seconds"], bool)
            and 0 <= run["wall_seconds"] < float("inf")]


def wall_time_text(invocations: Sequence[Mapping[str, Any]]) -> str:
    """The wall time ``invocations`` recorded, in words: their sum, by how many of them, and ``at least`` when one
    stopped without recording its end (killed, or still running: its record ends at its last finished run); ``""``
    when none recorded any (made before the manifest recorded wall time)."""
    timed = timed_invocations(invocations)
    if not timed:
        return ""
    seconds = sum(float(run["wall_seconds"]) for run in timed)
    took = duration_text(seconds)
    unended = sum("outcome" not in run for run in timed)
    if len(timed) < len(invocations):
        by = f" recorded by {len(timed)} of its {len(invocations)} invocations"
    else:
        by = f" over its {len(invocations)} invocations" if len(invocations) > 1 else ""
    return (f"{'at least ' * bool(unended)}{took} of wall time{by}"
            + (f" ({unended} stopped without recording its end: killed, or still running)" if unended else ""))


def machines_text(manifest: Mapping[str, Any], n_files: int | None = None) -> str:
    """When a folder's invocations ran on more than one machine (:func:`_machine`), one sentence naming each, in order
    of first use, with its invocations, their dates, (:func:`runs_made`) the runs it made and
    (:func:`wall_time_text`) the wall time they recorded; ``""`` otherwise."""
    invocations = [run for run in manifest.get("invocations") or [] if isinstance(run, Mapping)]
    names = [_machine(run) for run in invocations]
    machines = list(dict.fromkeys(names))
    if len(machines) < 2:
        return ""
    made = runs_made(invocations, n_files)
    parts = []
    for machine in machines:
        mine = [i for i, name in enumerate(names) if name == machine]
        days = sorted({str(invocations[i].get("date", ""))[:10] for i in mine} - {""})
        when = markdown_text(f", {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "")) if days else ""
        runs = f", {sum(made[i] for i in mine):,} runs" if made is not None else ""
        timed = wall_time_text([invocations[i] for i in mine])
        invoked = f"invocation{'s' * (len(mine) > 1)} {_numbers([i + 1 for i in mine])}"
        parts.append(f"{markdown_text(machine)} ({invoked}{when}{runs}{', ' + timed if timed else ''})")
    return (f"Its runs were made on {len(machines)} machines: {'; '.join(parts)}. Machines differ in float rounding, "
            "which training can amplify like a new draw of the seed.")


def _shown(value: object) -> object:
    """A manifest's value as a page shows it: a text escaped (:func:`pebench.render.tables.markdown_text`; a manifest
    may come from anyone), a number or a flag as it is."""
    return markdown_text(value) if isinstance(value, str) else value


def provenance(manifest: Mapping[str, Any] | None, n_files: int | None = None,
               training_seconds: float | None = None) -> dict[str, Any]:
    """Where and how a folder's runs were made, from its manifest: ``{"lead", "header", "rows"}`` (one column per
    source folder for a folder made by ``pebench combine``), or ``{"missing": text}`` without a manifest. The lead
    names the machines when there were several (:func:`machines_text`; ``n_files``: the folder's run files), else the
    wall time the invocations recorded (:func:`wall_time_text`), and how long the runs trained in all
    (``training_seconds``, :func:`training_time`)."""
    if manifest is None:
        return {"missing": f"No `manifest.json` in `{FOLDER}`.\n"}
    latest = manifest.get("latest") or (manifest.get("invocations") or [{}])[-1]
    if manifest.get("combined") and not latest:  # `pebench combine`: one column per source folder
        sources = manifest["combined"]["sources"]
        rows = [["folder", *(markdown_code(s.get("folder", "?")) for s in sources)],
                ["runs taken", *(_shown(s.get("runs", "?")) for s in sources)]]
        rows += [[f"`{k}`", *(_shown((s.get("manifest") or {}).get(k, "—")) for s in sources)]
                 for k in PROVENANCE_KEYS]
        return {"lead": "The folder was combined from these folders by `pebench combine` (a run in two of them had "
                        "identical rows):",
                "header": ["field", *(f"source {i + 1}" for i in range(len(sources)))], "rows": rows}
    rows = [[f"`{k}`", _shown(latest[k])] for k in PROVENANCE_KEYS if k in latest and latest[k] is not None]
    invocations = [run for run in manifest.get("invocations") or [] if isinstance(run, Mapping)]
    n = len(invocations)
    timed = wall_time_text(invocations)
    runs = "runs" if n_files is None else f"{n_files:,} runs"
    trained = "" if training_seconds is None else (
        f" Its {runs} trained for {duration_text(training_seconds)} of worker time in all (each run's "
        "`train_seconds`: fit checks included, evaluation not).")
    lead = (f"The folder was written by {n} invocation(s) of `pebench run`{f' ({timed})' if timed else ''}."
            f"{trained} The latest:") if n else "Manifest:"
    if machines := machines_text(manifest, n_files):
        lead = f"The folder was written by {n} invocation(s) of `pebench run`. {machines}{trained} The latest:"
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
