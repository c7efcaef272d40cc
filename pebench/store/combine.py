"""Combine the runs of several results folders into a new folder, never copying files over each other.

A user who ran only their own encoding's runs (``pebench run --filter encoding=mine --out
results/local/mine``) reports them beside every baseline by combining that folder with the reference::

    pebench combine results/local/mine results/standard --out results/local/mine_with_reference
    pebench --plugin mine.py report results/local/mine_with_reference

Each source folder is left as it is. Every run file is verified on its own
(:func:`pebench.store.read_run_file`); the runs must form one suite and protocol
(:func:`pebench.store.mixed_configurations`). A run id present in two folders is the same configuration
run twice (e.g. a rerun and the reference): that is an error unless their rows are identical, because
keeping either silently would credit one machine's numbers to the other; rows are compared on what a run
is and computed, not on how long it took (:data:`NOT_COMPARED`). The new folder's ``manifest.json`` names
every source with its own manifest, so the report says where each part came from. A run's per-example
predictions (``predictions/<run id>.jsonl.gz``, :mod:`pebench.store.predictions`) come with its run file, from the
folder its run file is taken from, once they agree with that run file. The folder is built in a
staging folder beside it and renamed into place at the end, so an interrupted combine never leaves a
folder without its manifest; ``--out`` must be a new (or empty) folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from pebench import store
from pebench.store import ResultsError, own_files
from pebench.store.predictions import PREDICTIONS_FOLDER, check_against_rows, parsed_predictions, predictions_path
from pebench.store.schema import BASE_VARIANT, CHECKSUM_COLUMN


@dataclass
class CombineSummary:
    """What :func:`combine` wrote: runs per source folder (those not already taken from an earlier one) and
    the run ids found with identical rows in more than one folder."""

    out: Path
    runs: dict[str, int] = field(default_factory=dict)
    shared: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Runs in the combined folder."""
        return sum(self.runs.values())


#: columns that say how a run was made, not what it is or computed: the same configuration run twice (two
#: sweeps, two machines) differs in them and is still the same run when every other column agrees
NOT_COMPARED = ("train_seconds", CHECKSUM_COLUMN, "pebench_version", "commit", "device", "machine", "compiled",
                "torch_threads")


def same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two run files hold the same runs' rows: the same configuration and metric columns, in any order,
    with equal values (:data:`NOT_COMPARED` left out: wall time, checksum, software and machine)."""
    a, b = (frame.drop(columns=[c for c in NOT_COMPARED if c in frame]) for frame in (a, b))
    if set(a.columns) != set(b.columns):
        return False
    columns = sorted(a.columns)
    return a[columns].reset_index(drop=True).equals(b[columns].reset_index(drop=True))


def _runs_folder(folder: Path) -> Path:
    """The folder whose run files a source gives (:func:`pebench.store.run_files`: its ``raw/``, else itself),
    resolved."""
    raw = folder / "raw"
    return (raw if raw.is_dir() and not raw.is_symlink() else folder).resolve()


def _check_folders(folders: list[Path], out: Path) -> None:
    """Refuse fewer than two sources, one given twice, an ``out`` inside a source, or an ``out`` that exists
    and is not an empty folder (combine never writes into a results folder, nor over its manifest)."""
    if len(folders) < 2:
        raise ResultsError("combine needs at least two results folders, e.g. yours and results/standard")
    seen: dict[Path, Path] = {}
    for folder in folders:
        runs = _runs_folder(folder)  # `A` and `A/raw` are the same runs
        if runs in seen:
            raise ResultsError(f"{folder} is given twice (also as {seen[runs]}); give each results folder once")
        seen[runs] = folder
        if out.resolve() == folder.resolve() or folder.resolve() in out.resolve().parents:
            raise ResultsError(f"--out {out} is (inside) the source folder {folder}; give a new folder")
    if out.is_symlink() or out.exists() and not out.is_dir():
        raise ResultsError(f"--out {out} exists and is not a folder; give a new folder")
    if out.is_dir() and any(out.iterdir()):
        held = "a manifest.json" if (out / "manifest.json").exists() else "files"
        raise ResultsError(f"--out {out} already holds {held}; give a new folder (combine never writes into an "
                           "existing results folder)")


def combine(sources: Sequence[str | Path], out: str | Path) -> CombineSummary:
    """Copy the run files of ``sources`` into the new folder ``out/raw/`` and write ``out/manifest.json``.

    Args:
        sources: two or more results folders (each containing ``raw/``, or a folder of run CSVs), each once.
        out: a new folder, or an empty one; not inside one of the sources.

    Returns:
        How many runs came from each source and which run ids were shared with identical rows.

    Raises:
        ResultsError: fewer than two sources, one given twice, ``out`` is inside a source or holds files, a file
            is not a complete run file, a run id is in two folders with different rows (each named, with what
            to do), or the runs do not form one suite and protocol. Nothing is written then.
    """
    folders, out = [Path(s) for s in sources], Path(out)
    _check_folders(folders, out)
    summary = CombineSummary(out)
    taken: dict[str, tuple[Path, pd.DataFrame]] = {}
    origin: dict[str, Path] = {}  # run id -> the source folder its run file is taken from
    bad, conflicts = [], []
    for folder in folders:
        summary.runs[str(folder)] = 0
        for path in store.run_files(folder):
            try:
                frame = store.read_run_file(path)
            except ResultsError as exc:
                bad.append(str(exc).splitlines()[0])
                continue
            run_id = str(frame["run_id"].iloc[0])
            if run_id in taken:
                first, rows = taken[run_id]
                if first.parent == path.parent:
                    bad.append(f"{path}: run {run_id} again (also in {first.name})")
                elif same_rows(rows, frame):
                    summary.shared.append(run_id)
                else:
                    conflicts.append(f"{run_id} ({first} and {path})")
                continue
            taken[run_id], origin[run_id] = (path, frame), folder
            summary.runs[str(folder)] += 1
    predictions = _predictions(taken, origin, bad)
    if bad:
        raise ResultsError(f"{len(bad)} bad result file(s): {'; '.join(bad)}")
    if conflicts:
        raise ResultsError(
            f"{len(conflicts)} run(s) are in more than one folder with different rows: {'; '.join(conflicts)}. "
            "These are the same configuration run twice (e.g. your rerun and the reference); keep the one you "
            "mean (move the other file out of its folder) or check them with `pebench compare`")
    data = pd.concat([frame for _, frame in taken.values()], ignore_index=True, sort=False)
    mixed = store.mixed_configurations(data)
    if mixed:
        raise ResultsError(f"these folders do not hold one suite and protocol ({store.named(mixed)}); "
                           "combine folders of the same suite")
    manifests = {folder: store.read_manifest(folder) for folder in folders}
    _write(out, folders, manifests, taken, summary, predictions)
    return summary


def _predictions(taken: dict[str, tuple[Path, pd.DataFrame]], origin: dict[str, Path], bad: list[str]
                 ) -> dict[str, bytes]:
    """The bytes of the predictions file of each run of ``taken`` that has one in the folder its run file comes
    from (``origin``); one line in ``bad`` for each that cannot be read or disagrees with its run file
    (:func:`pebench.store.predictions.check_against_rows`)."""
    found = {}
    for run_id, (_path, frame) in taken.items():
        path = predictions_path(origin[run_id], run_id)
        if not path.exists() and not path.is_symlink():
            continue
        rows = frame[frame["variant"] == BASE_VARIANT] if "variant" in frame else frame
        try:
            raw = store.read_plain_file(path, "predictions file")  # read once: what is checked is what is copied
            problems = check_against_rows(parsed_predictions(path, raw), rows.to_dict("records"))
        except ResultsError as exc:
            problems = [str(exc).removeprefix(f"{path}: ")]
        if problems:
            bad.append(f"{origin[run_id] / PREDICTIONS_FOLDER / path.name}: {problems[0]}")
        else:
            found[run_id] = raw
    return found


def _write(out: Path, folders: list[Path], manifests: dict[Path, dict | None],
           taken: dict[str, tuple[Path, pd.DataFrame]], summary: CombineSummary, predictions: dict[str, bytes]
           ) -> None:
    """Build the folder (run files and their ``predictions`` by run id, then the manifest) in a hidden staging
    folder beside ``out`` and rename it
    into place: until then ``out`` does not exist (or stays empty), so an interrupted combine leaves no folder
    that ``show`` or ``report`` would take for a complete one."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with own_files.staging_folder(out.parent, f".{out.name}.combine-") as staging:  # a killed one's removed
        staging.chmod(0o777 & ~store.umask())  # a folder like any other, not a staging folder's private 0700
        (staging / "raw").mkdir()
        for run_id, (path, _frame) in taken.items():
            # the bytes as they are, compressed or not
            store.copy_run_file(path, staging / "raw", run_id)
        for run_id, data in predictions.items():
            target = predictions_path(staging, run_id)
            target.parent.mkdir(exist_ok=True)
            store.write_bytes_atomic(target, data)
        suites = sorted({str(frame["suite"].iloc[0]) for _, frame in taken.values()})
        manifest = {
            "suite": suites[0] if len(suites) == 1 else "/".join(suites),
            "invocations": [],
            "combined": {
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "sources": [{"folder": str(folder), "runs": summary.runs[str(folder)],
                             "manifest": (manifests[folder] or {}).get("latest")} for folder in folders],
                "shared_identical_runs": len(summary.shared),
            },
        }
        store.write_text_atomic(staging / "manifest.json", json.dumps(manifest, indent=2) + "\n")
        os.replace(staging, out)
