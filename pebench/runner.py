"""Execute runs: in-process, on a local process pool, or on a Dask cluster; resumable.

Each run trains one model and evaluates it; its rows are written to
``<out>/raw/<run_id>.csv`` atomically (a temporary file in the same folder,
then ``os.replace``), so a killed sweep — even ``kill -9`` — loses at most
the runs in flight and never leaves a partial file. On restart, runs whose
CSV exists and is valid are skipped; runs recorded as ``failed`` (an
exception, possibly transient) are retried, ``diverged`` runs are kept.

Workers only compute rows; the parent process writes every file, so a Dask
cluster needs no shared file system.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import torch

import pebench
from pebench import tasks
from pebench.batched import train_batched
from pebench.evaluate import equivariance_gap, evaluate
from pebench.experiment import RunSpec
from pebench.model import ModelConfig, Transformer, default_device
from pebench.model import build_model as build_from_config
from pebench.registry import load_plugins, loaded_plugins
from pebench.results import ResultsError, read_run_csv, validate_frame
from pebench.train import TrainResult, train

log = logging.getLogger("pebench")

EXECUTORS = ("serial", "processes", "dask")


# --------------------------------------------------------------------------- one run


def build_model(spec: RunSpec, **encoding_overrides: Any) -> Transformer:
    """The untrained model of ``spec``, initialised from ``spec.seed``."""
    task = tasks.get(spec.task)
    config = ModelConfig(
        vocab_size=tasks.model_vocab_size(task),
        arch=spec.arch,
        d_model=spec.d_model,
        n_layers=spec.n_layers,
        n_heads=spec.n_heads,
        mlp_ratio=spec.mlp_ratio,
        dropout=spec.dropout,
    )
    return build_from_config(config, spec.encoding, max_len=spec.max_len(), seed=spec.seed,
                             **spec.build_options(**encoding_overrides))


def _gap(spec: RunSpec, model: Transformer, task: tasks.Task, device: torch.device) -> float:
    """Equivariance gap of ``model`` if the spec asks for it, else NaN."""
    if not spec.eval.equivariance:
        return float("nan")
    return equivariance_gap(model, task, spec.train.train_max_len, seed=spec.eval.seed, device=device)


def _rows(
    spec: RunSpec, model: Transformer, result: TrainResult, gap_init: float, device: torch.device,
    compiled: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate a trained model (and its evaluation-time variants) into result rows; ``compiled``:
    whether it was trained under ``torch.compile``."""
    task = tasks.get(spec.task)
    gap_trained = _gap(spec, model, task, device)
    variants = [("trained", None)] + [(label, json.loads(opts)) for label, opts in spec.eval.variants]
    rows = []
    for label, options in variants:
        evaluated = model
        if options is not None:
            evaluated = build_model(spec, **options).to(device)
            evaluated.load_state_dict(model.state_dict())
        for row in evaluate(
            evaluated,
            task,
            spec.eval.lengths,
            n_examples=spec.eval.n_examples,
            batch_size=spec.eval.batch_size,
            seed=spec.eval.seed,
            conditions=spec.eval.conditions,
            decoding=spec.eval.decoding,
            device=device,
        ):
            rows.append({**row, "variant": label, "chance_token_acc": task.chance_accuracy(row["eval_len"])})
    common = {
        "params": model.num_parameters(),
        "encoding_params": model.encoding_parameters(),
        "train_seconds": result.seconds,
        "steps_done": result.steps_done,
        "final_train_loss": result.final_loss,
        "equivariance_gap_init": gap_init,
        "equivariance_gap_trained": gap_trained,
        "status": result.status,
        "error": result.error,
        "device": str(device),
        "compiled": compiled,
    }
    return [{**_identity(spec), **row, **common} for row in rows]


def _identity(spec: RunSpec) -> dict[str, Any]:
    return {**spec.resolved(), "run_id": spec.run_id, "pebench_version": pebench.__version__}


def _failed(spec: RunSpec, exc: Exception, device: torch.device) -> list[dict[str, Any]]:
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    log.debug("run %s failed:\n%s", spec.run_id, traceback.format_exc())
    return [{**_identity(spec), "status": "failed", "error": detail, "device": str(device)}]


def execute(spec: RunSpec, device: str | None = None, compile: bool = False) -> list[dict[str, Any]]:
    """Train and evaluate one run; return its result rows (never raises for a run's own failure).

    A run that raises is recorded as one row with ``status="failed"`` and the
    error; a run whose loss diverges is evaluated anyway and marked
    ``status="diverged"``. ``compile``: train under ``torch.compile`` (see
    :func:`pebench.train.train`); the rows record it in their ``compiled`` column.
    """
    device = torch.device(device) if device else default_device()
    try:
        task = tasks.get(spec.task)
        model = build_model(spec).to(device)
        gap_init = _gap(spec, model, task, device)
        result = train(model, task, spec.train, device=device, compile=compile)
        return _rows(spec, model, result, gap_init, device, compiled=compile)
    except Exception as exc:  # recorded, not raised: one bad run must not stop a sweep
        return _failed(spec, exc, device)


def batch_key(spec: RunSpec) -> str | None:
    """Runs with the same key differ only in seed and can be trained as one seed-batched model.

    ``None`` (never batched) without a shared ``length_seed`` or with dropout; see
    :func:`pebench.batched.train_batched`.
    """
    if spec.dropout or spec.train.length_seed is None:
        return None
    flat = spec.resolved()
    flat.pop("seed")
    return json.dumps(flat, sort_keys=True, default=str)


def execute_group(
    specs: Sequence[RunSpec], device: str | None = None, compile: bool = False
) -> list[list[dict[str, Any]]]:
    """Seed-batched :func:`execute` of runs with one :func:`batch_key`; rows per spec, in order.

    Falls back to one :func:`execute` per spec if batched training raises. ``compile`` applies to
    single runs only (:func:`run_sweep` never groups runs when it is set).
    """
    if len(specs) == 1:
        return [execute(specs[0], device, compile)]
    torch_device = torch.device(device) if device else default_device()
    try:
        task = tasks.get(specs[0].task)
        models = [build_model(spec).to(torch_device) for spec in specs]
        gaps = [_gap(spec, model, task, torch_device) for spec, model in zip(specs, models, strict=True)]
        results = train_batched(models, task, [spec.train for spec in specs], torch_device)
    except Exception as exc:
        log.warning("seed-batched training failed (%s); running the %d runs one by one", exc, len(specs))
        return [execute(spec, device) for spec in specs]
    out = []
    for spec, model, result, gap in zip(specs, models, results, gaps, strict=True):
        try:
            out.append(_rows(spec, model, result, gap, torch_device))
        except Exception as exc:
            out.append(_failed(spec, exc, torch_device))
    return out


def group_runs(specs: Sequence[RunSpec], seed_batch: bool, max_group: int = 8) -> list[list[RunSpec]]:
    """Units of work: groups of up to ``max_group`` seed-batchable runs if ``seed_batch``, else singletons."""
    if not seed_batch:
        return [[spec] for spec in specs]
    groups: dict[str, list[list[RunSpec]]] = {}
    units: list[list[RunSpec]] = []
    for spec in specs:
        key = batch_key(spec)
        if key is None:
            units.append([spec])
            continue
        bucket = groups.setdefault(key, [])
        if not bucket or len(bucket[-1]) >= max_group:
            bucket.append([])
            units.append(bucket[-1])
        bucket[-1].append(spec)
    return units


def _execute_in_worker(
    specs: list[RunSpec], device: str | None, threads: int, compile: bool = False, plugins: Sequence[str] = ()
) -> list[list[dict[str, Any]]]:
    """Process-pool / Dask entry point: load the parent's plugins (a spawned worker starts with none of its
    registrations), limit threads (0 = keep the worker's default), then :func:`execute_group`."""
    load_plugins(plugins)
    if threads:
        torch.set_num_threads(threads)
    return execute_group(specs, device, compile)


# --------------------------------------------------------------------------- files


def raw_dir(out: Path) -> Path:
    """Folder of the per-run CSVs of a suite folder."""
    return Path(out) / "raw"


def write_rows_atomic(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` as CSV to ``path`` atomically (temp file + fsync + rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", newline="") as handle:
            pd.DataFrame(rows).to_csv(handle, index=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@dataclass
class ExistingResults:
    """What an output folder already holds."""

    complete: set[str]  # run ids with a valid CSV to keep
    retry: set[str]  # run ids recorded as failed
    bad: dict[str, str]  # file name -> why it is malformed or foreign


def scan(out: Path, expected: Iterable[str]) -> ExistingResults:
    """Classify the CSVs in ``out/raw`` against the expected run ids.

    Leftover temporary files of a killed sweep are removed; every other file
    is left untouched.
    """
    expected = set(expected)
    found = ExistingResults(complete=set(), retry=set(), bad={})
    folder = raw_dir(out)
    if not folder.is_dir():
        return found
    for tmp in folder.glob(".*.tmp"):
        tmp.unlink()
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.suffix != ".csv":
            found.bad[path.name] = "not a .csv file"
            continue
        try:
            frame = read_run_csv(path)
            validate_frame(frame, path)
        except (ResultsError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            found.bad[path.name] = str(exc).splitlines()[0]
            continue
        ids = set(frame["run_id"])
        if ids != {path.stem}:
            found.bad[path.name] = f"its run_id column {sorted(ids)} does not match the file name"
            continue
        if path.stem not in expected:
            continue  # a valid run of another configuration: kept, not part of this sweep
        if (frame["status"] == "failed").any():
            found.retry.add(path.stem)
        else:
            found.complete.add(path.stem)
    return found


def git_state() -> dict[str, Any]:
    """Git sha and dirty flag of the source checkout (``None`` outside git)."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        return {"git_sha": sha, "git_dirty": dirty}
    except (OSError, subprocess.CalledProcessError):
        return {"git_sha": None, "git_dirty": None}


def write_manifest(
    out: Path, suite: str, n_runs: int, device: str, executor: str, workers: int, compile: bool = False
) -> dict[str, Any]:
    """Record this invocation in ``out/manifest.json`` (earlier invocations are kept)."""
    path = Path(out) / "manifest.json"
    manifest: dict[str, Any] = {"suite": suite, "invocations": []}
    if path.exists():
        try:
            manifest = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ResultsError(f"{path} is not valid JSON ({exc}); move it away to continue") from None
    entry = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **git_state(),
        "pebench_version": pebench.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "device": device,
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "executor": executor,
        "workers": workers,
        "compile": compile,
        "n_runs": n_runs,
    }
    manifest["suite"] = suite
    manifest.setdefault("invocations", []).append(entry)
    manifest["latest"] = entry
    tmp = path.with_name(".manifest.json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, path)
    return entry


# --------------------------------------------------------------------------- sweeps


@dataclass
class SweepSummary:
    """What a sweep did."""

    total: int
    skipped: int
    done: int
    failed: int
    diverged: int
    blocked: list[str]
    seconds: float


def _progress(
    total: int, initial: int, todo: Sequence[RunSpec] = ()
) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """A callback reporting finished runs: a tqdm bar on a terminal, log lines otherwise.

    The time left is estimated from :func:`estimated_cost`, not from the number of runs: the longest runs
    start first, so a count-based estimate would overstate it throughout the sweep.
    """
    start = time.perf_counter()
    count = [initial]
    remaining_cost = [sum(estimated_cost(spec) for spec in todo)]
    done_cost = [0.0]

    def eta(spec: RunSpec) -> float:
        cost = estimated_cost(spec)
        done_cost[0] += cost
        remaining_cost[0] = max(0.0, remaining_cost[0] - cost)
        return (time.perf_counter() - start) / done_cost[0] * remaining_cost[0] if done_cost[0] else 0.0

    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=total, initial=initial, unit="run", dynamic_ncols=True,
                   bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")

        def update(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
            left = eta(spec)
            bar.set_postfix_str(f"~{left / 60:.0f} min left; {spec.experiment}/{spec.task}/{spec.encoding}/"
                                f"{spec.arch}/s{spec.seed}")
            bar.update(1)
            if bar.n >= total:
                bar.close()

        return update

    def log_line(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
        count[0] += 1
        elapsed = time.perf_counter() - start
        print(
            f"[{count[0]}/{total}] {spec.run_id} {spec.experiment} {spec.task} {spec.encoding} {spec.arch} "
            f"seed={spec.seed} status={rows[0].get('status')} elapsed={elapsed:.0f}s eta={eta(spec):.0f}s",
            flush=True,
        )

    return log_line


def estimated_cost(spec: RunSpec) -> float:
    """Relative training cost of a run, to start long runs first: steps x batch x (longest training
    input + its rendered outputs) x width^2. Only the order of runs depends on it."""
    return spec.train.steps * spec.train.batch_size * 2 * spec.train.train_max_len * spec.d_model**2


def default_threads(workers: int) -> int:
    """Torch threads per worker so that ``workers`` processes never oversubscribe the cores."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def run_sweep(
    specs: Sequence[RunSpec],
    out: Path,
    *,
    executor: str = "serial",
    workers: int = 1,
    dask_address: str | None = None,
    device: str | None = None,
    on_done: Callable[[RunSpec, list[dict[str, Any]]], None] | None = None,
    seed_batch: bool | None = None,
    compile: bool = False,
) -> SweepSummary:
    """Run every spec not already complete in ``out`` and write its CSV.

    Args:
        specs: the runs (typically :func:`pebench.experiment.suite_runs`).
        out: the suite's results folder; CSVs go to ``out/raw/``.
        executor: ``serial`` (in this process), ``processes`` (a local pool of
            ``workers`` processes) or ``dask`` (``dask_address``, or a
            LocalCluster of ``workers`` single-threaded workers if ``None``).
        workers: parallel workers for ``processes`` / local Dask.
        device: torch device for every run (default CUDA if available).
        on_done: called with (spec, rows) after each run's file is written;
            default a progress bar / log lines.
        seed_batch: train runs that differ only in seed (and share a
            ``length_seed``) as one seed-batched model (:func:`execute_group`).
            Default: on CUDA only; on the 2-core CPU it measured at most 1.2x
            faster and it balances worse across workers (docs: performance).
        compile: train every run under ``torch.compile`` (:func:`pebench.train.train`); cannot be
            combined with ``seed_batch``. Off by default (docs: performance).

    Runs are started longest first (by :func:`estimated_cost`), so that parallel workers finish
    together instead of one of them training the last long run alone.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if compile and seed_batch:
        raise ValueError("compile and seed_batch cannot be combined: seed-batched training runs eagerly")
    start = time.perf_counter()
    out = Path(out)
    raw_dir(out).mkdir(parents=True, exist_ok=True)
    by_id = {spec.run_id: spec for spec in specs}
    existing = scan(out, by_id)
    for name, why in sorted(existing.bad.items()):
        log.warning("ignoring %s in %s: %s (left untouched)", name, raw_dir(out), why)
    blocked = sorted(run_id for run_id in by_id if f"{run_id}.csv" in existing.bad)
    todo = [s for s in specs if s.run_id not in existing.complete and s.run_id not in blocked]
    todo.sort(key=estimated_cost, reverse=True)  # stable: equal costs keep the suite's order
    device_name = device or str(default_device())
    write_manifest(out, specs[0].suite if specs else "", len(specs), device_name, executor, workers, compile)
    summary = SweepSummary(
        total=len(specs), skipped=len(existing.complete), done=0, failed=0, diverged=0, blocked=blocked, seconds=0.0
    )
    callback = on_done or _progress(len(specs), len(existing.complete) + len(blocked), todo)

    def finish(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
        write_rows_atomic(raw_dir(out) / f"{spec.run_id}.csv", rows)
        status = rows[0].get("status")
        summary.done += 1
        summary.failed += status == "failed"
        summary.diverged += status == "diverged"
        if status == "failed":
            log.warning("run %s failed: %s", spec.run_id, rows[0].get("error"))
        callback(spec, rows)

    if seed_batch is None:
        seed_batch = torch.device(device_name).type == "cuda" and not compile
    units = group_runs(todo, seed_batch)
    if executor == "serial" or not todo:
        for unit in units:
            for spec, rows in zip(unit, execute_group(unit, device, compile), strict=True):
                finish(spec, rows)
    elif executor == "processes":
        threads = default_threads(workers)
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # fork + torch threads is unsafe
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(_execute_in_worker, unit, device, threads, compile, loaded_plugins()): unit
                       for unit in units}
            for future in as_completed(futures):
                for spec, rows in zip(futures[future], future.result(), strict=True):
                    finish(spec, rows)
    else:
        _run_dask(units, finish, dask_address, workers, device, compile)
    summary.seconds = time.perf_counter() - start
    return summary


def _run_dask(
    units: Sequence[list[RunSpec]],
    finish: Callable[[RunSpec, list[dict[str, Any]]], None],
    address: str | None,
    workers: int,
    device: str | None,
    compile: bool = False,
) -> None:
    """Map runs over a Dask cluster; a lost worker's runs are retried by the scheduler."""
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise RuntimeError("the dask executor needs the 'dist' extra: pip install 'pebench[dist]'") from None
    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        )
        client = Client(cluster)
        threads = default_threads(workers)
    else:
        client = Client(address)
        threads = 0  # 0 = keep each remote worker's own default
    try:
        futures = [
            client.submit(
                _execute_in_worker, unit, device, threads, compile, loaded_plugins(), key=f"pebench-{unit[0].run_id}",
                retries=2,
                pure=False,
            )
            for unit in units
        ]
        units_by_key = {f.key: unit for f, unit in zip(futures, units, strict=True)}
        for future in dask_completed(futures):
            for spec, rows in zip(units_by_key[future.key], future.result(), strict=True):
                finish(spec, rows)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
