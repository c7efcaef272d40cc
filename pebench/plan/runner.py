"""Execute runs: in-process, on a local process pool, or on a Dask cluster; resumable.

Each run trains one model and evaluates it; its rows are written to
``<out>/raw/<run_id>.csv.gz`` (:data:`pebench.store.RUN_FILE_SUFFIX`) the moment it finishes, atomically (a temporary
file with a unique name in the same folder, then ``os.replace``: :func:`pebench.store.write_rows_atomic`), with a
checksum column (:func:`pebench.store.run_file_text`), so a killed sweep —
even ``kill -9`` — loses at most the runs in flight and never leaves a file
that counts as complete without being so. On restart, runs whose file exists
and verifies are skipped; runs recorded as ``failed`` (an exception, possibly
transient, or a worker process that died) are retried, ``diverged`` runs are
kept.

What a sweep guarantees (docs: distributed):

* Ctrl-C or SIGTERM cancels the runs not started, stops the runs in flight
  (their workers are terminated) and raises :class:`SweepInterrupted`; an
  error in the sweeping process (e.g. a full disk) does the same and raises
  :class:`SweepError`. Both carry the :class:`SweepSummary` of what was saved.
* Pool workers exit when the process that started them dies, even by
  ``kill -9``; a pool worker that dies (e.g. killed for lack of memory)
  records its runs as failed and is replaced. On Dask the scheduler retries
  a run whose worker died, and records it as failed when it has given up.
* One sweep at a time per folder: an OS file lock on ``<out>/.lock``
  (:func:`pebench.store.lock_folder`); the manifest is updated under it.
* A folder holds one suite and protocol: a sweep whose runs would share a
  cell with runs of another configuration there, or of another suite, is
  refused before anything is written (:func:`check_same_protocol`); so is a sweep with a plugin whose file
  changed since an earlier sweep there loaded it (:func:`pebench.store.check_same_plugins`).
* Every run uses ``threads`` torch threads (default 1) on every executor, so
  the same runs give the same rows serially, on a pool and on Dask.

Workers only compute rows; the parent process writes every file, so a Dask
cluster needs no shared file system. A run itself is :mod:`pebench.plan.execute`'s; where runs execute (the pool, Dask)
and the signal handling, :mod:`pebench.plan.executors`'; how long a sweep will take, said before it starts,
:mod:`pebench.plan.sweep_time`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from pebench.model import default_device
from pebench.plan.execute import PREDICTIONS_KEY, group_runs

# pebench 3.0 documented execute, model_for (docs/examples/python_api.py), PluginRefused and WorkerDied here: the
# `as` imports keep them importable from the runner for code written against it
from pebench.plan.execute import execute as execute
from pebench.plan.execute import model_for as model_for
from pebench.plan.executors import (
    DASK_NO_WORKER_SECONDS,
    RunnerError,
    Terminated,
    dask_client,
    dispatch,
    signals_deferred,
    signals_interrupt,
)
from pebench.plan.executors import PluginRefused as PluginRefused
from pebench.plan.executors import WorkerDied as WorkerDied
from pebench.plan.experiment import RunSpec, report_declarations
from pebench.plan.sweep_time import announce, estimated_cost, expected_cost
from pebench.store import (
    RUN_FILE_SUFFIX,
    RUN_FILE_SUFFIXES,
    ExistingResults,
    ResultsError,
    check_same_plugins,
    finish_manifest,
    lock_folder,
    mixed_configurations,
    named,
    raw_dir,
    read_manifest,
    refuse_link,
    remove_manifest_copies,
    run_file_id,
    run_file_name,
    scan,
    write_manifest,
    write_rows_atomic,
)
from pebench.store.predictions import write_predictions

log = logging.getLogger("pebench")

EXECUTORS = ("serial", "processes", "dask")
# --------------------------------------------------------------------------- protocol checks


def check_same_protocol(out: Path, specs: Sequence[RunSpec], existing: ExistingResults) -> None:
    """Refuse to add ``specs`` to a folder that holds another suite, or runs that would share a cell with
    them under another configuration (they would be pooled as seeds).

    Raises:
        ResultsError: one line naming the difference and what to do.
    """
    out = Path(out)
    suites = {spec.suite for spec in specs}
    manifest = read_manifest(out)
    held = {manifest["suite"]} if manifest and manifest.get("suite") else set()
    held |= {str(row["suite"]) for row in existing.configs.values() if "suite" in row}
    if held and held != suites:
        raise ResultsError(f"{out} holds results of the {' and '.join(sorted(held))} suite; this is the "
                           f"{' and '.join(sorted(suites))} suite: choose another --out")
    ours = {spec.run_id for spec in specs}
    rows = [{**spec.resolved(), "run_id": spec.run_id} for spec in specs]
    rows += [row for run_id, row in existing.configs.items() if run_id not in ours]
    mixed = mixed_configurations(pd.DataFrame(rows))
    if mixed:
        raise ResultsError(f"{out} would hold runs of one cell under different protocols ({named(mixed)}), to be "
                           "pooled as seeds: choose another --out, or move the runs of the other protocol away")


# --------------------------------------------------------------------------- shares of a plan across machines


def parse_share(text: str) -> tuple[int, int]:
    """``I/N`` (``pebench run --share``) as ``(I, N)``, ``1 <= I <= N``.

    Raises:
        ValueError: one line saying what was expected.
    """
    index, sep, count = text.partition("/")
    try:
        share = (int(index), int(count)) if sep else None
    except ValueError:
        share = None
    if share is None or not 1 <= share[0] <= share[1]:
        raise ValueError(f"a share is I/N with 1 <= I <= N (e.g. 1/2 and 2/2 on two machines), got {text!r}")
    return share


def share_runs(specs: Sequence[RunSpec], index: int, count: int) -> list[RunSpec]:
    """The runs of ``specs`` that share ``index`` of ``count`` makes (``--share I/N``): those whose seed is the
    ``index``-th, ``index + count``-th, ... of its cell's seeds in ``specs``, in ascending order (a cell: every
    field but the seed). The ``count`` shares are disjoint, their union is ``specs``, and a cell with at least
    ``count`` seeds has seeds in every share, so that machines differ within cells, not between them."""
    cells: dict[str, set[int]] = {}
    keys = []
    for spec in specs:
        cell = {key: value for key, value in spec.resolved().items() if key != "seed"}
        keys.append(json.dumps(cell, sort_keys=True, default=str))
        cells.setdefault(keys[-1], set()).add(spec.seed)
    position = {key: {seed: rank for rank, seed in enumerate(sorted(seeds))} for key, seeds in cells.items()}
    return [spec for spec, key in zip(specs, keys, strict=True) if position[key][spec.seed] % count == index - 1]


# --------------------------------------------------------------------------- sweeps


@dataclass
class SweepSummary:
    """What a sweep did."""

    total: int
    skipped: int
    done: int = 0
    failed: int = 0
    diverged: int = 0
    blocked: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    #: runs this sweep planned to train in seed batches of two or more (0 when ``seed_batch`` is off or no
    #: runs share a ``length_seed``); a batch that raises falls back to one run at a time
    seed_batched: int = 0

    @property
    def saved(self) -> int:
        """Runs of the sweep whose file is in the folder now (complete before, or written by this sweep)."""
        return self.skipped + self.done


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM stopped a sweep; the runs not started were cancelled, those in flight
    stopped. ``summary``: what was saved; ``signal_name``: ``SIGINT`` or ``SIGTERM``."""

    def __init__(self, summary: SweepSummary, signal_name: str) -> None:
        super().__init__(signal_name)
        self.summary, self.signal_name = summary, signal_name


class SweepError(RuntimeError):
    """An error in the sweeping process (e.g. a full disk) stopped a sweep, as an interrupt would;
    ``summary``: what was saved. The error itself is the ``__cause__``."""

    def __init__(self, summary: SweepSummary, error: BaseException) -> None:
        super().__init__(str(error).splitlines()[0] if str(error) else type(error).__name__)
        self.summary = summary


#: how many running runs the progress bar names (then "+N")
RUNNING_SHOWN = 3


def _progress(
    total: int, initial: int, todo: Sequence[RunSpec] = (), rates: Mapping[str, float] | None = None
) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """A callback reporting finished runs: a tqdm bar on a terminal, log lines otherwise. On a terminal it has a
    ``started(unit)`` (called by :func:`pebench.plan.executors.dispatch` as a worker takes a unit) that makes the bar
    name the runs being made, beside the time left, and a ``progressed(unit, text)`` that adds where each is
    ("step 1200/5000", "evaluating"); a log names runs as they finish.

    The time left is estimated from :func:`~pebench.plan.sweep_time.expected_cost`, not from the number of runs: the
    longest runs start first, so a count-based estimate would overstate it throughout the sweep. Where
    :func:`~pebench.plan.sweep_time.announce` has filled ``rates`` (seconds per unit of cost of each experiment,
    :func:`~pebench.plan.sweep_time.calibrations`) before the first run finishes, each run's cost is weighed by its
    experiment's rate, so that the runs finished first (one experiment's, often) do not set the pace of the others.
    """
    start = time.perf_counter()
    eta = _time_left(start, todo, {} if rates is None else rates)
    if sys.stderr.isatty():
        return _bar(total, initial, eta)
    return _log_lines(total, initial, start, eta)


def _time_left(start: float, todo: Sequence[RunSpec], rates: Mapping[str, float]) -> Callable[[RunSpec], float]:
    """:func:`_progress`'s estimate of the seconds left once a run of ``todo`` finishes (called once per run): the
    time since ``start`` per unit of expected cost done, times the cost left, each run's cost weighed by its
    experiment's rate in ``rates`` (read at the first finished run, once the announcement has filled it)."""
    remaining_cost: list[float | None] = [None]  # summed at the first finished run, once ``rates`` is filled
    done_cost = [0.0]

    def weighed(spec: RunSpec) -> float:
        return expected_cost(spec) * rates.get(spec.experiment, 1.0)

    def eta(spec: RunSpec) -> float:
        if remaining_cost[0] is None:
            remaining_cost[0] = sum(weighed(other) for other in todo)
        cost = weighed(spec)
        done_cost[0] += cost
        remaining_cost[0] = max(0.0, remaining_cost[0] - cost)
        return (time.perf_counter() - start) / done_cost[0] * remaining_cost[0] if done_cost[0] else 0.0

    return eta


def _bar(total: int, initial: int, eta: Callable[[RunSpec], float]) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """:func:`_progress` on a terminal: a tqdm bar naming the time left (``eta``) and the runs being made, with
    its ``started`` and ``progressed``."""
    from tqdm import tqdm

    bar = tqdm(total=total, initial=initial, unit="run", dynamic_ncols=True,
               bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")
    running: dict[str, str] = {}  # run id -> how the bar names it, in the order the runs started
    where: dict[str, str] = {}  # run id -> where it is ("step 1200/5000", "evaluating"), once it said so
    left = [""]

    def show() -> None:
        names = [" ".join(filter(None, (name, where.get(run_id)))) for run_id, name in running.items()]
        now = ", ".join(names[:RUNNING_SHOWN]) + (f" +{len(names) - RUNNING_SHOWN}" if len(names) > RUNNING_SHOWN
                                                  else "")
        bar.set_postfix_str("; ".join(part for part in (left[0], f"running {now}" if now else "") if part))

    def started(unit: Sequence[RunSpec]) -> None:
        running.update({spec.run_id: f"{spec.task}/{spec.encoding}/{spec.arch}/s{spec.seed}" for spec in unit})
        show()

    def progressed(unit: Sequence[RunSpec], text: str) -> None:
        where.update({spec.run_id: text for spec in unit})
        show()

    def update(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
        running.pop(spec.run_id, None)
        where.pop(spec.run_id, None)
        left[0] = f"~{eta(spec) / 60:.0f} min left"
        bar.update(1)
        show()
        if bar.n >= total:
            bar.close()

    update.started = started  # type: ignore[attr-defined]  # what run_sweep has dispatch call as a unit starts
    update.progressed = progressed  # type: ignore[attr-defined]  # ... and as it says where it is
    return update


def _log_lines(
    total: int, initial: int, start: float, eta: Callable[[RunSpec], float]
) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """:func:`_progress` off a terminal: a line per finished run, with the time since ``start`` and ``eta``'s."""
    count = [initial]

    def log_line(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
        count[0] += 1
        elapsed = time.perf_counter() - start
        print(
            f"[{count[0]}/{total}] {spec.run_id} {spec.experiment} {spec.task} {spec.encoding} {spec.arch} "
            f"seed={spec.seed} status={rows[0].get('status')} elapsed={elapsed:.0f}s eta={eta(spec):.0f}s",
            flush=True,
        )

    return log_line


def run_sweep(specs: Sequence[RunSpec], out: Path, *, executor: str = "serial", workers: int = 1,
              dask_address: str | None = None, device: str | None = None,
              on_done: Callable[[RunSpec, list[dict[str, Any]]], None] | None = None, seed_batch: bool | None = None,
              compile: bool = False, threads: int = 1, predictions: bool = False) -> SweepSummary:
    """Run every spec not already complete in ``out`` and write its CSV the moment it finishes.

    Args:
        specs: the runs (typically :func:`pebench.plan.experiment.suite_runs`), started longest first
            (:func:`~pebench.plan.sweep_time.estimated_cost`), so that parallel workers finish together.
        out: the suite's results folder; run files go to ``out/raw/``.
        executor: ``serial`` (this process), ``processes`` (a local pool of ``workers`` processes) or ``dask``
            (``dask_address``, or a LocalCluster of ``workers`` single-threaded workers if ``None``).
        workers: parallel workers for ``processes`` / local Dask.
        device: torch device for every run (default CUDA if available).
        on_done: called with (spec, rows) after each run's file is written; default a progress bar or log lines.
        seed_batch: train runs that differ only in seed (and share a ``length_seed``) as one seed-batched model
            (:func:`~pebench.plan.execute.execute_group`); default on CUDA only (docs: performance).
        compile: train under ``torch.compile`` (:func:`pebench.learn.train.train`), never with ``seed_batch``.
        threads: torch threads of every run, on every executor (the rows' ``torch_threads``): floating-point sums
            depend on it, so the same value on every executor gives the same rows.
        predictions: also write every example each run made here scored, with the model's prediction, beside its
            run file (:mod:`pebench.store.predictions`); a run already in ``out`` is not made again for it.

    Raises:
        FolderLockError: another sweep holds the folder (:func:`pebench.store.lock_folder`); RunnerError: the Dask
            scheduler cannot be reached; ResultsError: the folder holds another suite or protocol, or a malformed
            manifest; SweepInterrupted (Ctrl-C or SIGTERM) or SweepError (an error in this process), after
            stopping every worker, with the summary of what was saved.
    """
    _check_sweep_arguments(executor, workers, threads, compile, seed_batch)
    start, out, device_name = time.perf_counter(), Path(out), device or str(default_device())
    remote = contextlib.ExitStack()  # a scheduler is reached before the folder is touched: if not, it is left as it was
    client = remote.enter_context(dask_client(dask_address, workers)) if executor == "dask" and dask_address else None
    out.mkdir(parents=True, exist_ok=True)
    with remote, lock_folder(out):
        existing, blocked = _open_folder(out, specs)
        todo, units = _todo(specs, existing, blocked, predictions, _seed_batched(seed_batch, device_name, compile))
        local = executor == "processes" or (executor == "dask" and dask_address is None)
        _warn_if_oversubscribed(workers if local and units else 0)
        summary = SweepSummary(len(specs), len(existing.complete), blocked=blocked,
                               seed_batched=sum(len(unit) for unit in units if len(unit) > 1))
        rates: dict[str, float] = {}  # seconds per unit of cost per experiment, filled by the announcement
        callback = on_done or _progress(len(specs), len(existing.complete) + len(blocked), todo, rates)
        invocation = _Invocation(out)
        finish = _run_file_writer(out, existing.retry, summary, callback,
                                  recorded=lambda: invocation.record(time.perf_counter() - start, summary.done))
        with _ended(summary, invocation, start), signals_interrupt(), contextlib.ExitStack() as stack:
            if on_done is None and sys.stderr.isatty():  # a person at a terminal: what, what is skipped, how long
                print(announce(todo, len(existing.complete), workers if executor != "serial" else 1, device,
                               rates, threads), file=sys.stderr, flush=True)
            if executor == "dask" and units and client is None:
                client = stack.enter_context(dask_client(None, workers))
            invocation.entry = _manifest(out, specs, len(todo), device_name, executor, workers, compile, threads)
            dispatch(units, finish, executor, client, workers, device, threads, compile,
                     stall_seconds=None if dask_address else DASK_NO_WORKER_SECONDS,
                     started=getattr(callback, "started", lambda unit: None),
                     progressed=getattr(callback, "progressed", None))
    return summary


def _manifest(out: Path, specs: Sequence[RunSpec], to_make: int, device: str, executor: str, workers: int,
              compile: bool, threads: int) -> dict[str, Any]:
    """Write the folder's manifest for a sweep of ``specs`` that makes ``to_make`` runs
    (:func:`pebench.store.write_manifest`), with its experiments' report declarations; returns its entry."""
    experiments = [spec.experiment for spec in specs]
    return write_manifest(out, specs[0].suite if specs else "", len(specs), device, executor, workers, compile,
                          threads, experiments, to_make, report_declarations=report_declarations(experiments))


def _todo(specs: Sequence[RunSpec], existing: ExistingResults, blocked: Sequence[str], predictions: bool,
          seed_batched: bool) -> tuple[list[RunSpec], list[list[RunSpec]]]:
    """The runs of ``specs`` a sweep makes (not complete in its folder, not blocked by a bad file), longest first
    (a stable sort: equal costs keep the suite's order), each keeping its predictions where asked, and the units
    they are trained in (:func:`~pebench.plan.execute.group_runs`)."""
    todo = [dataclasses.replace(s, keep_predictions=True) if predictions else s for s in specs
            if s.run_id not in existing.complete and s.run_id not in blocked]
    todo.sort(key=estimated_cost, reverse=True)
    return todo, group_runs(todo, seed_batched)


def _seed_batched(seed_batch: bool | None, device: str, compile: bool) -> bool:
    """Whether a sweep on ``device`` trains seeds in batches: as ``seed_batch`` says, by default on CUDA unless
    it compiles."""
    return torch.device(device).type == "cuda" and not compile if seed_batch is None else seed_batch


@contextlib.contextmanager
def _ended(summary: SweepSummary, invocation: _Invocation, start: float) -> Iterator[None]:
    """How a sweep that started at ``start`` ends, around the block that runs it: Ctrl-C or SIGTERM raise
    :class:`SweepInterrupted`, an error in this process :class:`SweepError` (a :class:`RunnerError` or
    :class:`~pebench.store.ResultsError` as it is), each with ``summary``; its wall time goes into ``summary``
    and, with the outcome, into the manifest (``invocation``), however it ends."""
    outcome = "error"
    try:
        yield
        outcome = "complete"
    except Terminated:
        outcome = "interrupted"
        raise SweepInterrupted(summary, "SIGTERM") from None
    except KeyboardInterrupt:
        outcome = "interrupted"
        raise SweepInterrupted(summary, "SIGINT") from None
    except (RunnerError, ResultsError):
        raise
    except Exception as exc:
        raise SweepError(summary, exc) from exc
    finally:
        summary.seconds = time.perf_counter() - start
        invocation.record(summary.seconds, summary.done, outcome=outcome, seed_batched_runs=summary.seed_batched)


def _check_sweep_arguments(executor: str, workers: int, threads: int, compile: bool, seed_batch: bool | None) -> None:
    """Refuse arguments :func:`run_sweep` cannot honour, before anything is touched."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid: {', '.join(EXECUTORS)}")
    if compile and seed_batch:
        raise ValueError("compile and seed_batch cannot be combined: seed-batched training runs eagerly")
    if workers < 1 or threads < 1:
        raise ValueError(f"workers and threads must be >= 1, got {workers} and {threads}")


def _open_folder(out: Path, specs: Sequence[RunSpec]) -> tuple[ExistingResults, list[str]]:
    """What ``out`` (held by :func:`pebench.store.lock_folder`) already holds of ``specs``, and the run ids a
    bad file there blocks (warned about, left untouched): ``raw/`` made, leftover manifest copies removed, the
    folder refused when it holds two files of one run, another suite or protocol, or another plugin version."""
    refuse_link(raw_dir(out)).mkdir(exist_ok=True)
    remove_manifest_copies(out)
    by_id = {spec.run_id: spec for spec in specs}
    existing = scan(out, by_id)
    if existing.doubled:  # report, show and compare refuse such a folder: so does a sweep, before any work
        pairs = "; ".join(f"{first} and {second}" for first, second in existing.doubled)
        raise ResultsError(f"{raw_dir(out)} holds two files of one run ({pairs}), which would count it twice: "
                           "keep one of each pair (move the other away) and run again")
    check_same_protocol(out, specs, existing)
    check_same_plugins(out)
    named_bad = {run_file_id(name) for name in existing.bad}
    blocked = sorted(run_id for run_id in by_id if run_id in named_bad and run_id not in existing.complete)
    for name, why in sorted(existing.bad.items()):
        log.warning("ignoring %s in %s: %s (left untouched)", name, raw_dir(out), why)
    if blocked:
        log.warning("%d run(s) of this sweep are blocked by the bad files above: move or delete those files and "
                    "run the same command again to rerun them", len(blocked))
    return existing, blocked


def _warn_if_oversubscribed(local_workers: int) -> None:
    """Warn when more local worker processes (0: none) than CPU cores are about to start."""
    if local_workers > (os.cpu_count() or 1):
        log.warning("%d workers on %d CPU cores: each is a process with its own copy of torch (a few hundred "
                    "MB) and they share the cores; --workers %d is usually as fast", local_workers, os.cpu_count(),
                    os.cpu_count() or 1)


def _run_file_writer(
    out: Path, retry: set[str], summary: SweepSummary, callback: Callable[[RunSpec, list[dict[str, Any]]], None],
    recorded: Callable[[], None] = lambda: None,
) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """What a sweep does with each finished run's rows: write its run file, count it in ``summary``, call
    ``recorded`` (the sweep's manifest record: :class:`_Invocation`), warn when it failed, then call ``callback``. A
    run of ``retry`` (recorded as failed) loses its old file under another name."""

    def finish(spec: RunSpec, rows: list[dict[str, Any]]) -> None:
        # a Ctrl-C or SIGTERM meanwhile is raised once the file is written and counted: an interrupt inside the
        # atomic write, between its temporary file's creation and its cleanup, left that file behind, and one
        # between the write and the count left a saved run out of "N of M runs saved" (each seen once in CI)
        status = rows[0].get("status")
        predictions = rows[0].pop(PREDICTIONS_KEY, None)
        with signals_deferred():
            if predictions is not None:  # first: a run counted as made has its predictions
                write_predictions(out, spec.run_id, predictions)
            if spec.run_id in retry:  # a failed run's record under another name would be a second file
                for suffix in set(RUN_FILE_SUFFIXES) - {RUN_FILE_SUFFIX}:
                    with contextlib.suppress(FileNotFoundError):
                        (raw_dir(out) / f"{spec.run_id}{suffix}").unlink()
            write_rows_atomic(raw_dir(out) / run_file_name(spec.run_id), rows)
            summary.done += 1
            summary.failed += status == "failed"
            summary.diverged += status == "diverged"
            recorded()
        if status == "failed":
            log.warning("run %s failed: %s", spec.run_id, rows[0].get("error"))
        callback(spec, rows)

    return finish


class _Invocation:
    """A sweep's record in its folder's manifest (:func:`pebench.store.finish_manifest`), kept as it goes: its wall
    time and the runs it wrote after every run, so that a sweep killed without ending (SIGKILL, a lost machine)
    still says how long it ran, then how it ended. ``entry`` is ``None`` until :func:`pebench.store.write_manifest`
    has written it (a sweep that stops before that records nothing) and after a failure to record, which is warned
    about once, never raised: it must not stop a sweep, lose its runs or hide why it stopped."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.entry: dict[str, Any] | None = None

    def record(self, seconds: float, runs_made: int, **ended: Any) -> None:
        """Record ``seconds`` of wall time and ``runs_made`` so far, with ``ended`` (the outcome) at the end."""
        if self.entry is None:
            return
        try:
            self.entry = finish_manifest(self.out, self.entry,
                                         {"wall_seconds": round(seconds, 1), "runs_made": runs_made, **ended})
        except (OSError, ResultsError) as exc:
            log.warning("could not record the sweep's wall time in the manifest: %s", exc)
            self.entry = None


