"""Does a results folder hold what it says? The data half of ``pebench verify`` (:mod:`pebench.plan.verify` reruns).

A folder may come from anyone. Every run file is read as :func:`pebench.store.read_run_file` reads it (no link
followed, size bounded, schema, completeness, checksum, run id of its configuration): a file that fails is
*tampered or damaged* before anything is rerun (:func:`check_folder`). Among the completed runs a seeded sample
that spreads over experiments, tasks, encodings and architectures is drawn (:func:`choose_sample`); each is
rerun elsewhere and its rows compared with the file's (:func:`compare_rows`):

* **exact** on the machine and torch build that made the run: every result field, row by row (per evaluation
  length, condition and variant), as written, equal; only wall time and provenance may differ
  (:data:`NOT_COMPARED`);
* **statistical** otherwise: float rounding differs between CPUs, kernels and torch builds, and training
  amplifies it, so a rerun is another draw of the training noise; its mean token accuracy over the in- and
  out-of-distribution lengths, per condition and variant, must lie within :data:`STATISTICAL_MARGIN` of the file's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pebench.store import (
    ResultsError,
    read_manifest,
    read_run_records,
    run_file_id,
    run_files,
)
from pebench.store.predictions import PREDICTIONS_FOLDER, PREDICTIONS_SUFFIX, inventory, predictions_files
from pebench.store.run_file_check import configuration
from pebench.store.schema import BASE_VARIANT, CHECKSUM_COLUMN, completed

if TYPE_CHECKING:
    import pandas as pd

#: runs ``pebench verify`` reruns unless told otherwise: a few minutes of the standard suite on 2 CPU cores
DEFAULT_SAMPLE = 3
#: the columns a sample is spread over, in the order they are covered
STRATA = ("task", "encoding", "arch", "experiment")
#: columns of a run file that depend on when and where a run was made, never on what it computed
NOT_COMPARED = ("train_seconds", "commit", "pebench_version", "machine", "device", "torch_threads", "compiled",
                CHECKSUM_COLUMN)
#: how far a rerun's mean token accuracy (in or out of distribution) may lie from the file's when the rerun is made
#: on another machine or torch build: the per-seed margin of ``pebench compare``
#: (:data:`pebench.analysis.compare.MARGINS`), within which one seed of a cell rerun on another machine reproduces
#: (tests/test_verify.py keeps the two equal)
STATISTICAL_MARGIN = 0.10


@dataclass(frozen=True)
class RunRows:
    """One verified run file: its ``path``, its CSV ``records`` as written (header first) and its rows as a
    ``frame``."""

    path: Path
    records: list[list[str]]
    frame: pd.DataFrame

    @property
    def first(self) -> dict[str, str]:
        """Its first row as written, by column."""
        return dict(zip(self.records[0], self.records[1], strict=True))

    @property
    def run_id(self) -> str:
        """The run id its rows record (the file's name has the same)."""
        return self.first["run_id"]

    def configuration(self) -> dict[str, object]:
        """The resolved configuration it records (:func:`pebench.store.run_file_check.configuration`)."""
        return configuration(self.first)

    def describe(self) -> str:
        """``run_id experiment task encoding arch seed=N``, as the sweep's log names a run."""
        first = self.first
        return (f"{self.run_id} {first['experiment']} {first['task']} {first['encoding']} {first['arch']} "
                f"seed={first['seed']}")


def read_run_rows(path: str | Path) -> RunRows:
    """Read and verify one run file as :func:`pebench.store.read_run_file` does, keeping its fields as written.

    Raises:
        ResultsError: ``path``: what is wrong, on one line.
    """
    path = Path(path)
    frame, records = read_run_records(path)
    if records[1][records[0].index("run_id")] != run_file_id(path):
        raise ResultsError(f"{path}: its run_id {records[1][records[0].index('run_id')]} is not its file name's")
    return RunRows(path, records, frame)


@dataclass(frozen=True)
class FolderCheck:
    """What :func:`check_folder` found: the verified run files by run id, and one line per file that is not."""

    runs: dict[str, RunRows]
    bad: list[str]
    torch_versions: set[str]

    @property
    def completed(self) -> list[str]:
        """Run ids of the completed runs (evaluated: ``ok`` or ``diverged``), sorted."""
        return sorted(run_id for run_id, rows in self.runs.items() if completed(rows.frame).all())


def check_folder(folder: str | Path) -> FolderCheck:
    """Verify every run file of a results folder on its own, and read the torch builds its manifest records.

    Raises:
        ResultsError: the folder does not exist, has no run files, or its manifest is not one (one line).
    """
    runs: dict[str, RunRows] = {}
    bad = []
    for path in run_files(folder):
        try:
            rows = read_run_rows(path)
        except (ResultsError, OSError) as exc:
            bad.append(f"{path.name}: tampered or damaged: {str(exc).splitlines()[0].removeprefix(f'{path}: ')}")
            continue
        if rows.run_id in runs:
            bad.append(f"{path.name}: a second file of run {rows.run_id} (also {runs[rows.run_id].path.name})")
            continue
        runs[rows.run_id] = rows
    return FolderCheck(runs, bad + predictions_problems(folder, runs), torch_versions(read_manifest(folder) or {}))


def predictions_problems(folder: str | Path, runs: Mapping[str, RunRows]) -> list[str]:
    """One line per predictions file of ``folder`` (:mod:`pebench.store.predictions`) that is damaged or
    disagrees with its run's verified file (``runs``): its examples' hits must be what their targets and
    predictions give, and sum to the run file's token accuracies; a file of no run there is one line too."""
    lines = []
    for path in predictions_files(folder):
        run_id = path.name.removesuffix(PREDICTIONS_SUFFIX)
        if run_id not in runs:
            lines.append(f"{path.name}: predictions of run {run_id}, which has no valid run file here")
            continue
        frame = runs[run_id].frame
        rows = frame[frame["variant"] == BASE_VARIANT].to_dict("records") if "variant" in frame else []
        [entry] = inventory(folder, {run_id: rows})
        if entry["problems"]:
            lines.append(f"{PREDICTIONS_FOLDER}/{path.name}: tampered or damaged: {entry['problems'][0]}"
                         + (f" (and {len(entry['problems']) - 1} more)" if len(entry["problems"]) > 1 else ""))
    return lines


def torch_versions(manifest: Mapping[str, object]) -> set[str]:
    """The torch versions of every invocation a manifest records, its combined sources' included."""
    found: set[str] = set()
    manifests = [manifest]
    combined = manifest.get("combined")
    if isinstance(combined, dict):
        manifests += [source.get("manifest") or {} for source in combined.get("sources", [])]
    for entry in manifests:
        invocations = entry.get("invocations") if isinstance(entry, dict) else None
        for invocation in invocations if isinstance(invocations, list) else []:
            version = invocation.get("torch_version") if isinstance(invocation, dict) else None
            if isinstance(version, str):
                found.add(version)
    return found


def choose_sample(folder: FolderCheck, n: int, seed: int = 0) -> list[RunRows]:
    """``n`` of the folder's completed runs, chosen with ``seed``: in a shuffled order, each next run is one that
    adds the most values not yet sampled of :data:`STRATA` (a new task first, then a new encoding, ...).

    Raises:
        ResultsError: ``n`` is more than the folder's completed runs (and no file is bad: then all are taken).
    """
    candidates = folder.completed
    if n > len(candidates) and not folder.bad:
        failed = len(folder.runs) - len(candidates)
        raise ResultsError(f"--sample {n} is more than the {len(candidates)} completed runs the folder holds"
                           f"{f' (and {failed} failed, with no metrics to reproduce)' if failed else ''}; give "
                           f"--sample {len(candidates)} or fewer")
    order = sorted(candidates)
    random.Random(seed).shuffle(order)
    chosen: list[RunRows] = []
    seen: dict[str, set[str]] = {column: set() for column in STRATA}
    while order and len(chosen) < n:
        def novelty(run_id: str) -> tuple[bool, ...]:
            first = folder.runs[run_id].first
            return tuple(first.get(column) not in seen[column] for column in STRATA)

        best = max(order, key=novelty)  # the first of the shuffled order among the most novel
        order.remove(best)
        chosen.append(folder.runs[best])
        for column in STRATA:
            seen[column].add(folder.runs[best].first.get(column))
    return chosen


@dataclass(frozen=True)
class RunCheck:
    """One rerun run compared with its file: ``exact`` or statistical (``why_statistical`` says why), whether it
    ``reproduced``, and the largest difference found, in words (``""`` when none)."""

    run: str
    exact: bool
    reproduced: bool
    difference: str
    why_statistical: str = ""

    def line(self) -> str:
        """The run's one line: what it is, how it was compared and what was found."""
        how = "exact" if self.exact else "statistical"
        found = "reproduced" if self.reproduced else "NOT reproduced"
        return f"{self.run}: {how}, {found}{f' ({self.difference})' if self.difference else ''}"


def _key(record: Mapping[str, str]) -> tuple[str, str, str]:
    """(eval_len, condition, variant) of a row as written; files older than a column read its default."""
    return record.get("eval_len", ""), record.get("condition") or "original", record.get("variant") or BASE_VARIANT


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def exact_difference(original: RunRows, rerun: RunRows) -> str:
    """``""`` when every result field of every row of ``rerun`` is written exactly as in ``original`` (the columns
    both have, but :data:`NOT_COMPARED`), else the largest difference, in words."""
    def rows(run: RunRows) -> dict[tuple[str, str, str], dict[str, str]]:
        return {_key(row): row for row in (dict(zip(run.records[0], r, strict=True)) for r in run.records[1:])}

    before, after = rows(original), rows(rerun)
    if set(before) != set(after):
        return f"the rerun has rows {sorted(set(after) ^ set(before))[:3]} the file has not, or the other way round"
    columns = [c for c in original.records[0] if c in rerun.records[0] and c not in NOT_COMPARED]
    worst: tuple[float, str] = (-1.0, "")
    for key, row in before.items():
        for column in columns:
            was, now = row[column], after[key][column]
            if was == now:
                continue
            numbers = _float(was), _float(now)
            size = abs(numbers[0] - numbers[1]) if None not in numbers else float("inf")
            size = float("inf") if size != size else size  # NaN on one side only
            if size > worst[0]:
                worst = (size, f"{column} {was[:24]} in the file, {now[:24]} rerun, at length {key[0]} "
                               f"({key[1]}, {key[2]})")
    return worst[1]


def statistical_differences(original: pd.DataFrame, rerun: pd.DataFrame) -> list[tuple[float, str]]:
    """(absolute difference, what) of the mean token accuracy over the in- and out-of-distribution lengths of each
    condition and variant, rerun against the file, largest first."""
    import pandas as pd

    def means(frame: pd.DataFrame) -> pd.Series:
        frame = frame.assign(variant=frame["variant"].fillna(BASE_VARIANT) if "variant" in frame else BASE_VARIANT,
                             condition=frame["condition"] if "condition" in frame else "original",
                             lengths=(pd.to_numeric(frame["eval_len"]) > pd.to_numeric(frame["train_max_len"]))
                             .map({False: "in-distribution", True: "out-of-distribution"}))
        return frame.groupby(["lengths", "condition", "variant"])["token_acc"].mean()

    before, after = means(original), means(rerun)
    found = []
    for key, was in before.items():
        now = after.get(key, float("nan"))
        size = abs(now - was) if now == now else float("inf")
        found.append((size, f"{key[0]} token accuracy {was:.3f} in the file, {now:.3f} rerun ({key[1]}, {key[2]})"))
    return sorted(found, key=lambda item: -item[0])


def compare_rows(original: RunRows, rerun: RunRows, why_statistical: str = "") -> RunCheck:
    """Compare a rerun's rows with the file's: exactly (:func:`exact_difference`) unless ``why_statistical`` says
    why not (another machine or torch build), then within :data:`STATISTICAL_MARGIN`
    (:func:`statistical_differences`). A rerun that failed reproduces nothing."""
    run = original.describe()
    if not completed(rerun.frame).all():
        error = str(rerun.frame["error"].iloc[0]) if "error" in rerun.frame else "no error recorded"
        return RunCheck(run, not why_statistical, False, f"the rerun failed: {error.splitlines()[0][:200]}",
                        why_statistical)
    if not why_statistical:
        difference = exact_difference(original, rerun)
        return RunCheck(run, True, not difference, f"largest difference: {difference}" if difference else "")
    differences = statistical_differences(original.frame, rerun.frame)
    size, what = differences[0] if differences else (0.0, "")
    return RunCheck(run, False, size <= STATISTICAL_MARGIN,
                    f"largest difference {size:.3f} (margin {STATISTICAL_MARGIN}): {what}" if what else "",
                    why_statistical)


@dataclass(frozen=True)
class Verification:
    """The outcome of ``pebench verify``: the bad files of a folder and its sampled runs compared with their
    reruns."""

    bad: Sequence[str]
    checks: Sequence[RunCheck]

    @property
    def ok(self) -> bool:
        """No file is tampered or damaged and every sampled run reproduced."""
        return not self.bad and all(check.reproduced for check in self.checks)

    @property
    def verdict(self) -> str:
        """One line: how many runs reproduced, how (exactly or statistically, and why), and the bad files."""
        reproduced = sum(check.reproduced for check in self.checks)
        exact = sum(check.exact for check in self.checks)
        how = (["exactly"] if exact else []) + ([f"statistically, within {STATISTICAL_MARGIN} token accuracy"]
                                                if exact < len(self.checks) else [])
        why = "; ".join(sorted({check.why_statistical for check in self.checks if check.why_statistical}))
        text = (f"{'verified' if self.ok else 'NOT verified'}: {reproduced} of {len(self.checks)} sampled runs "
                f"reproduce (compared {' and '.join(how) or 'on none'}{f': {why}' if why else ''})")
        # run files and their predictions alike: a prediction file of a tampered run is bad with it
        return text + (f"; {len(self.bad)} file(s) tampered, damaged or of no valid run (listed above)"
                       if self.bad else "")
