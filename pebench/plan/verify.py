"""``pebench verify``: rerun a sample of a results folder's runs and say whether they reproduce.

The folder is read and its files verified by :mod:`pebench.store.verification` (the data half); here each sampled
run's :class:`~pebench.plan.experiment.RunSpec` is rebuilt from its rows and refused unless its run id is the file's
(:func:`rebuild_spec`: another task version, or an encoding or task of a plugin that is not loaded), rerun with
:func:`~pebench.plan.execute.execute` into a temporary folder that :func:`verify` makes and removes, and compared
with the file: exactly when this is the machine (CPU model and kernels, or GPU) and torch build that made it,
statistically otherwise (:func:`why_statistical`).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from pebench.plan.execute import PREDICTIONS_KEY, execute, machine_name, torch_threads
from pebench.plan.executors import origin_here
from pebench.plan.experiment import RunSpec, make_spec
from pebench.registry import UnknownNameError
from pebench.store import ResultsError, cpu_model, path_in, read_plain_file, run_file_name, write_rows_atomic
from pebench.store.predictions import PREDICTIONS_FOLDER, predictions_bytes, predictions_path
from pebench.store.verification import (
    DEFAULT_SAMPLE,
    FolderCheck,
    RunCheck,
    RunRows,
    Verification,
    check_folder,
    choose_sample,
    compare_rows,
    read_run_rows,
)

#: configuration columns a run file writes as JSON that a :class:`RunSpec` holds as lists
JSON_KEYS = ("eval_lengths", "eval_conditions", "eval_variants")
#: configuration columns derived from the others, which a rebuilt spec computes again
DERIVED_KEYS = ("task_version", "position_capacity")
#: the most torch threads a rerun takes from a row (a row may come from anyone)
MAX_THREADS = 256


def rebuild_spec(rows: RunRows) -> RunSpec:
    """The :class:`RunSpec` of a verified run file, rebuilt from the configuration its rows record.

    Raises:
        ResultsError: the spec cannot be built here (a name this pebench does not register: the line says to pass
            the plugin that does) or its run id is not the file's (the line names the fields that differ).
    """
    recorded = rows.configuration()
    config = {key: json.loads(value) if key in JSON_KEYS and isinstance(value, str) else value
              for key, value in recorded.items() if key not in (*DERIVED_KEYS, "suite", "experiment")}
    config.setdefault("protocol", 2)  # protocol v2's rows predate the field (RunSpec.resolved)
    try:
        spec = make_spec(str(recorded["suite"]), str(recorded["experiment"]), config)
    except UnknownNameError as exc:
        raise ResultsError(f"run {rows.run_id}: {exc} Its encoding or task comes from a plugin: pass the file that "
                           "registers it, pebench --plugin FILE verify FOLDER") from None
    except (ValueError, TypeError) as exc:
        raise ResultsError(f"run {rows.run_id}: its configuration is not one this pebench can run "
                           f"({str(exc).splitlines()[0]})") from None
    if spec.run_id != rows.run_id:
        here = spec.resolved()
        differ = [f"{key} {recorded.get(key)!r} in the file, {here.get(key)!r} here"
                  for key in sorted(set(here) | set(recorded)) if here.get(key) != recorded.get(key)]
        raise ResultsError(f"run {rows.run_id}: its configuration rebuilds here as run {spec.run_id} "
                           f"({'; '.join(differ[:3]) or 'the same fields, hashed otherwise'}): this pebench would "
                           "not rerun that run; verify with the pebench (and plugins) that made it")
    return spec


def rerun_device(recorded: str, requested: str | None = None) -> torch.device:
    """Where a run made on ``recorded`` (its row's ``device``) is rerun: ``requested`` if given, else the same
    kind of device where this machine has one, else the CPU."""
    if requested:
        return torch.device(requested)
    kind = recorded.partition(":")[0]
    if kind == "cuda" and torch.cuda.is_available():
        return torch.device("cuda")
    if kind == "mps" and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def why_statistical(rows: RunRows, device: torch.device, torch_versions: set[str]) -> str:
    """Why a rerun on ``device`` of the run of ``rows`` can differ in float rounding from the file (another machine
    or CPU kernels, another torch build, ``torch.compile``), in words; ``""`` when it must be exact."""
    first = rows.first
    here = machine_name(str(device), cpu_model())
    reasons = []
    if first.get("machine", "") != here:
        reasons.append(f"made on {first.get('machine') or 'an unrecorded machine'}"[:100] + f", rerun on {here}")
    if torch_versions != {torch.__version__}:
        made = ", ".join(sorted(torch_versions))[:60] or "a torch build its manifest does not record"
        reasons.append(f"made with torch {made}, rerun with {torch.__version__}")
    if first.get("compiled") == "True":
        reasons.append("trained under torch.compile")
    return "; ".join(reasons)


def _threads(rows: RunRows) -> int:
    """The torch threads the run was made with (rows depend on them in the last digits), 1 if unrecorded."""
    text = rows.first.get("torch_threads", "")
    return int(text) if text.isdigit() and 1 <= int(text) <= MAX_THREADS else 1


@dataclass(frozen=True)
class VerifyPlan:
    """What :func:`plan_verification` found: the folder's check, and the sampled runs with their rebuilt specs."""

    folder: FolderCheck
    sample: list[tuple[RunRows, RunSpec]]


def plan_verification(folder: str | Path, n: int = DEFAULT_SAMPLE, seed: int = 0) -> VerifyPlan:
    """Verify every run file of ``folder``, choose ``n`` completed runs with ``seed`` and rebuild their specs,
    before anything is rerun.

    Raises:
        ResultsError: no such folder, no run files, ``n`` more than the completed runs, or a run that cannot be
            rebuilt here (:func:`rebuild_spec`), on one line.
    """
    checked = check_folder(folder)
    return VerifyPlan(checked, [(rows, rebuild_spec(rows)) for rows in choose_sample(checked, n, seed)])


def verify_run(rows: RunRows, spec: RunSpec, scratch: Path, torch_versions: set[str],
               device: str | None = None) -> RunCheck:
    """Rerun ``spec`` (the run of ``rows``) into the folder ``scratch``, with the torch threads it was made with,
    and compare the rows written there with the file's (:func:`~pebench.store.verification.compare_rows`); compared
    exactly, its per-example predictions too, where the folder has them (the same bytes)."""
    where = rerun_device(rows.first.get("device", ""), device)
    statistical = why_statistical(rows, where, torch_versions)
    kept = predictions_path(rows.path.parent.parent, spec.run_id)  # the run's folder: rows.path is raw/<id>.csv.gz
    exact_predictions = not statistical and kept.is_file() and not kept.is_symlink()
    with torch_threads(_threads(rows)):
        new = execute(dataclasses.replace(spec, keep_predictions=exact_predictions), str(where),
                      origin=origin_here())
    examples = new[0].pop(PREDICTIONS_KEY, None)
    path = path_in(scratch, run_file_name(spec.run_id))
    write_rows_atomic(path, new)
    check = compare_rows(rows, read_run_rows(path), statistical)
    if check.reproduced and examples is not None and predictions_bytes(spec.run_id, examples) != \
            read_plain_file(kept, "predictions file"):
        return dataclasses.replace(check, reproduced=False, difference=f"its rows reproduce, its per-example "
                                   f"predictions ({PREDICTIONS_FOLDER}/{kept.name}) do not")
    return check


def verify(plan: VerifyPlan, device: str | None = None,
           on_check: Callable[[RunCheck], None] | None = None) -> Verification:
    """Rerun every sampled run of ``plan`` (:func:`verify_run`) in a temporary folder made and removed here;
    ``on_check`` is told each run's outcome as it comes."""
    checks = []
    with tempfile.TemporaryDirectory(prefix="pebench-verify-") as scratch:
        for rows, spec in plan.sample:
            checks.append(verify_run(rows, spec, Path(scratch), plan.folder.torch_versions, device))
            if on_check:
                on_check(checks[-1])
    return Verification(plan.folder.bad, checks)

