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
cluster needs no shared file system. A run itself is :mod:`pebench.execute`'s; how long a sweep will take,
said before it starts, :mod:`pebench.sweep_time`'s.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import wait as wait_any
from pathlib import Path
from typing import Any

import pandas as pd
import torch

# pebench 3.0 documented execute and model_for here (docs/examples/python_api.py): they stay importable from
# the runner for code written against it
from pebench.execute import execute as execute
from pebench.execute import execute_group, failed_rows, group_runs, torch_threads
from pebench.execute import model_for as model_for
from pebench.experiment import RunSpec, report_declarations
from pebench.model import default_device
from pebench.registry import PluginError, check_plugins, load_plugins, plugin_records
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
from pebench.sweep_time import announce, estimated_cost, expected_cost

log = logging.getLogger("pebench")

EXECUTORS = ("serial", "processes", "dask")
#: seconds to wait for a Dask scheduler before giving up
DASK_CONNECT_SECONDS = 10
#: seconds a stopped worker gets to exit before it is killed
STOP_GRACE_SECONDS = 3
#: seconds a sweep on its own local Dask cluster waits while the cluster has no worker and runs are pending, before
#: it records those runs as failed: a worker killed by its run is restarted by its nanny within seconds, but a
#: nanny that cannot start one leaves the cluster with none, and the sweep would otherwise wait for ever
DASK_NO_WORKER_SECONDS = 60.0
#: how long the local cluster lets a named worker be gone before it closes its nanny for good. Distributed's default
#: (15 s) checks once, 15 s after a worker's death, whether a worker of that name is back; a run that kills its
#: worker every ~5 s (three tries) made that check land, about 1 time in 4, in the half second between a death and
#: the restart, and the cluster was left with no worker (seen in the tests; distributed 2026.8). A local cluster's
#: nannies always restart their workers, so the check is put off beyond any sweep
DASK_LOST_WORKER_TIMEOUT = "30 days"
#: how often a sweep on Dask looks at its runs (and, when none finished, at the cluster's workers)
DASK_POLL_SECONDS = 0.2


class RunnerError(RuntimeError):
    """A sweep that cannot start (an unreachable scheduler, no Dask installed); one line saying what to do. A
    folder in use is a :class:`pebench.store.FolderLockError`."""




def _execute_in_worker(
    specs: list[RunSpec], device: str | None, threads: int, compile: bool = False,
    plugins: Sequence[dict[str, Any]] = (),
) -> list[list[dict[str, Any]]] | PluginRefused:
    """Dask entry point: load the parent's plugins (``plugins``: its :func:`~pebench.registry.plugin_records`; a
    spawned worker starts with none of its registrations) and check that they are the versions the parent
    loaded (a long-lived worker keeps the version it loaded first), set the torch threads (0 = keep the
    worker's default), then :func:`~pebench.execute.execute_group`.

    A plugin that fails to load here, or is another version than the parent's, is returned as a
    :class:`PluginRefused` (raised, it would be logged with its traceback by the worker and retried).
    """
    refused = _load_sweep_plugins(plugins)
    if refused:
        return PluginRefused(f"{refused} (on a Dask worker)")
    if threads:
        torch.set_num_threads(threads)
    return execute_group(specs, device, compile)


def _load_sweep_plugins(plugins: Sequence[dict[str, Any]]) -> str | None:
    """Load in a worker the plugins of the process that started the sweep (``plugins``: its
    :func:`~pebench.registry.plugin_records`) and check that they are the versions it loaded; returns the one
    line of a plugin that fails to load or differs here, else ``None``."""
    try:
        load_plugins([record["plugin"] for record in plugins if record["kind"] != "entry point"])
        check_plugins(plugins, where="on this worker")
    except PluginError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class PluginRefused:
    """What a Dask worker returns instead of rows when a plugin fails to load there (its one line)."""

    message: str


def _exit_with_parent(parent: int, interval: float = 0.5) -> None:
    """Start a thread that ends this process when ``parent`` is no longer its parent (it died, even by
    ``kill -9``), so that no worker outlives the sweep that started it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="pebench-parent-watch", daemon=True).start()


def _pool_worker(connection: Any, parent: int, threads: int, plugins: Sequence[dict[str, Any]]) -> None:
    """A pool worker's loop: receive a unit of runs, send back its rows, until told to stop (``None``); where the
    unit asks for it, send where it is meanwhile (``("progress", text)``, :func:`~pebench.execute.execute`).

    It ignores SIGINT: Ctrl-C at a terminal reaches every process of the group, and the parent decides
    (it terminates its workers itself), so no worker prints a traceback or dies half-way on its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)
    refused = _load_sweep_plugins(plugins)  # its one line is the answer to every unit: the parent stops the sweep
    torch.set_num_threads(threads)
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        if refused:
            connection.send(("plugin", f"{refused} (in a worker process)"))
            continue
        specs, device, compile, report = message
        progress = (lambda text: connection.send(("progress", text))) if report else None
        try:
            connection.send(("rows", execute_group(specs, device, compile, progress)))
        except Exception:  # execute_group records a run's own failure; this is anything else
            connection.send(("error", traceback.format_exc()))


class _Worker:
    """One spawned pool process and its end of a pipe."""

    def __init__(self, context: Any, threads: int, plugins: Sequence[dict[str, Any]]) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_pool_worker, args=(child, os.getpid(), threads, list(plugins)),
                                       name="pebench-worker", daemon=True)
        self.process.start()
        child.close()
        self.unit: list[RunSpec] | None = None

    def stop(self, graceful: bool) -> None:
        """End the process: ask it to (``graceful``, when idle) or terminate it; kill it if it lingers."""
        if graceful and self.process.is_alive():
            with contextlib.suppress(OSError):
                self.connection.send(None)
            self.process.join(STOP_GRACE_SECONDS)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_GRACE_SECONDS)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def _died(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        how = f"was killed by {signal.Signals(-code).name}"
        if -code == signal.SIGKILL:
            how += " (e.g. by the kernel for lack of memory)"
    else:
        how = f"exited with status {code}"
    return f"its worker process {how}"


def _run_pool(
    units: Sequence[list[RunSpec]], finish: Callable[[RunSpec, list[dict[str, Any]]], None], workers: int,
    device: str | None, threads: int, compile: bool,
    started: Callable[[Sequence[RunSpec]], None] = lambda unit: None,
    progressed: Callable[[Sequence[RunSpec], str], None] | None = None,
) -> None:
    """Run ``units`` on ``workers`` spawned processes, calling ``started`` as a worker takes a unit,
    ``progressed(unit, text)`` as it says where it is (:func:`~pebench.execute.execute`; not asked for when
    ``None``) and ``finish`` as each run completes.

    A worker that dies records the runs it held as failed (a :class:`WorkerDied` error in their rows) and
    is replaced; on any exception in this process (Ctrl-C, SIGTERM, a full disk) every worker is
    terminated before the exception propagates, so no run is computed for nothing and no process is left.
    """
    context = multiprocessing.get_context("spawn")  # fork + torch threads is unsafe
    plugins = plugin_records()
    queue = deque(units)
    pool: list[_Worker] = []
    clean = False
    try:
        with _starting_workers():  # an interrupt meanwhile is raised once pool holds them, so they are stopped
            pool = [_Worker(context, threads, plugins) for _ in range(min(workers, len(queue)))]
        while True:
            for worker in pool:
                if worker.unit is None and queue:
                    worker.unit = queue.popleft()
                    worker.connection.send((worker.unit, device, compile, progressed is not None))
                    started(worker.unit)
            busy = [w for w in pool if w.unit is not None]
            if not busy:
                break
            ready = wait_any(
                [w.connection for w in busy] + [w.process.sentinel for w in busy])
            for index, worker in enumerate(pool):
                if worker.unit is None or (worker.connection not in ready and worker.process.sentinel not in ready):
                    continue
                unit, message = worker.unit, _received(worker)
                if message is not None and message[0] == "progress":  # the unit runs on
                    if progressed is not None:
                        progressed(unit, message[1])
                    continue
                worker.unit = None
                if message is None:  # the process died holding this unit
                    worker.process.join()
                    error = WorkerDied(_died(worker.process))
                    log.warning("runs %s: %s; recorded as failed", ", ".join(s.run_id for s in unit), error)
                    worker.stop(graceful=False)
                    with _starting_workers():
                        pool[index] = _Worker(context, threads, plugins) if queue else worker
                    for spec in unit:
                        finish(spec, failed_rows(spec, error, _torch_device(device)))
                    continue
                for spec, rows in zip(unit, _unit_rows(unit, message, device), strict=True):
                    finish(spec, rows)
        clean = True
    finally:
        for worker in pool:
            if worker.process.pid is not None and worker.connection.closed is False:
                worker.stop(graceful=clean)


def _received(worker: _Worker) -> tuple[str, Any] | None:
    """A ready worker's next message; ``None`` when there is none to read (its process died)."""
    with contextlib.suppress(EOFError, OSError):
        if worker.connection.poll():
            return worker.connection.recv()
    return None


def _unit_rows(unit: Sequence[RunSpec], message: tuple[str, Any], device: str | None) -> list[list[dict[str, Any]]]:
    """The rows of each run of ``unit`` from its worker's last ``message``: its rows, or each run failed where the
    worker raised; a plugin the worker could not load stops the sweep (:class:`PluginError`)."""
    kind, payload = message
    if kind == "plugin":
        raise PluginError(payload)
    if kind == "error":
        error = WorkerDied(f"its worker raised: {payload.strip().splitlines()[-1]}")
        return [failed_rows(spec, error, _torch_device(device)) for spec in unit]
    return payload


class WorkerDied(RuntimeError):
    """The process computing a run died (e.g. killed for lack of memory); the run is recorded as failed."""


def _worker_failed(unit: Sequence[RunSpec], error: WorkerDied, device: str | None) -> list[list[dict[str, Any]]]:
    """The rows of the runs of ``unit``, each recorded as failed by ``error`` (what happened to their worker)."""
    return [failed_rows(spec, error, _torch_device(device)) for spec in unit]


def _torch_device(device: str | None) -> torch.device:
    return torch.device(device) if device else default_device()


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


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""


#: signals received within a :func:`_signals_deferred` block, raised when the outermost one ends
_DEFERRED: list[int] = []
#: how many :func:`_signals_deferred` blocks are open in this process
_DEFERRING = [0]


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """A Ctrl-C or SIGTERM that reaches this process within the block (:func:`_signals_interrupt`) is raised
    after it, not half-way through what the block does (starting a worker, writing a run file)."""
    _DEFERRING[0] += 1
    try:
        yield
    finally:
        _DEFERRING[0] -= 1
    if _DEFERRED and not _DEFERRING[0]:
        number = _DEFERRED.pop()
        _DEFERRED.clear()
        raise _Terminated() if number == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def _starting_workers() -> Iterator[None]:
    """Start worker processes within this block: SIGINT is blocked in this thread, so that the processes and
    threads started here inherit it blocked (a Ctrl-C at a terminal reaches every process of its group, and a
    worker still importing torch would print a traceback), and a Ctrl-C or SIGTERM that reaches this process
    is raised after the block (:func:`_signals_deferred`), not half-way through starting a worker."""
    resource_tracker.ensure_running()  # started first: starting its process unblocks SIGINT in this thread
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with _signals_deferred():
            yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored by this process within the block, and so by every process started meanwhile, from any
    thread (Python keeps a SIGINT ignored at its start ignored): how a local Dask cluster starts, whose worker
    processes are started by its own threads, where a blocked signal (:func:`_starting_workers`) does not
    reach them. A Ctrl-C while it starts (a few seconds) is not seen; one after it stops the sweep."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise (:class:`KeyboardInterrupt`, :class:`_Terminated`) once (while
    workers start or a run file is written, when that is done: :func:`_signals_deferred`); a second signal while the
    sweep stops its workers is ignored, so the stop is not itself interrupted.
    Only in the main thread (elsewhere signals cannot be handled; the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(number: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if _DEFERRING[0]:  # raised by _signals_deferred when its block ends
            _DEFERRED.append(number)
            return
        raise _Terminated() if number == signal.SIGTERM else KeyboardInterrupt()

    _DEFERRED.clear()
    previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


#: how many running runs the progress bar names (then "+N")
RUNNING_SHOWN = 3


def _progress(
    total: int, initial: int, todo: Sequence[RunSpec] = (), rates: Mapping[str, float] | None = None
) -> Callable[[RunSpec, list[dict[str, Any]]], None]:
    """A callback reporting finished runs: a tqdm bar on a terminal, log lines otherwise. On a terminal it has a
    ``started(unit)`` (called by :func:`_dispatch` as a worker takes a unit) that makes the bar name the runs
    being made, beside the time left, and a ``progressed(unit, text)`` that adds where each is ("step 1200/5000",
    "evaluating"); a log names runs as they finish.

    The time left is estimated from :func:`~pebench.sweep_time.expected_cost`, not from the number of runs: the
    longest runs start first, so a count-based estimate would overstate it throughout the sweep. Where
    :func:`~pebench.sweep_time.announce` has filled ``rates`` (seconds per unit of cost of each experiment,
    :func:`~pebench.sweep_time.calibrations`) before the first run finishes, each run's cost is weighed by its
    experiment's rate, so that the runs finished first (one experiment's, often) do not set the pace of the others.
    """
    start = time.perf_counter()
    count = [initial]
    rates = {} if rates is None else rates
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

    if sys.stderr.isatty():
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

        update.started = started  # type: ignore[attr-defined]  # what run_sweep has _dispatch call as a unit starts
        update.progressed = progressed  # type: ignore[attr-defined]  # ... and as it says where it is
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
    threads: int = 1,
) -> SweepSummary:
    """Run every spec not already complete in ``out`` and write its CSV the moment it finishes.

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
            ``length_seed``) as one seed-batched model (:func:`~pebench.execute.execute_group`).
            Default: on CUDA only; on the 2-core CPU it measured at most 1.2x
            faster and it balances worse across workers (docs: performance).
        compile: train every run under ``torch.compile`` (:func:`pebench.train.train`); cannot be
            combined with ``seed_batch``. Off by default (docs: performance).
        threads: torch threads of every run, on every executor (recorded in the rows'
            ``torch_threads``). Floating-point sums depend on it, so the same value on every executor
            gives the same rows; the default 1 is what a pool of one worker per core uses anyway.

    Runs are started longest first (by :func:`~pebench.sweep_time.estimated_cost`), so that parallel workers finish
    together instead of one of them training the last long run alone.

    Raises:
        FolderLockError: another sweep holds the folder (:func:`pebench.store.lock_folder`).
        RunnerError: the Dask scheduler cannot be reached.
        ResultsError: the folder holds another suite or protocol, or a malformed manifest.
        SweepInterrupted: Ctrl-C or SIGTERM; SweepError: an error in this process (both after stopping
            every worker, with the summary of what was saved).
    """
    _check_sweep_arguments(executor, workers, threads, compile, seed_batch)
    start = time.perf_counter()
    out = Path(out)
    remote = contextlib.ExitStack()  # a scheduler is reached before the folder is touched: if not, it is left as it was
    client = remote.enter_context(_dask_client(dask_address, workers)) if executor == "dask" and dask_address else None
    out.mkdir(parents=True, exist_ok=True)
    with remote, lock_folder(out):
        existing, blocked = _open_folder(out, specs)
        todo = [s for s in specs if s.run_id not in existing.complete and s.run_id not in blocked]
        todo.sort(key=estimated_cost, reverse=True)  # stable: equal costs keep the suite's order
        device_name = device or str(default_device())
        if seed_batch is None:
            seed_batch = torch.device(device_name).type == "cuda" and not compile
        units = group_runs(todo, seed_batch)
        local = executor == "processes" or (executor == "dask" and dask_address is None)
        _warn_if_oversubscribed(workers if local and units else 0)
        summary = SweepSummary(total=len(specs), skipped=len(existing.complete), done=0, failed=0, diverged=0,
                               blocked=blocked, seconds=0.0,
                               seed_batched=sum(len(unit) for unit in units if len(unit) > 1))
        rates: dict[str, float] = {}  # seconds per unit of cost per experiment, filled by the announcement
        callback = on_done or _progress(len(specs), len(existing.complete) + len(blocked), todo, rates)
        invocation = _Invocation(out)
        finish = _run_file_writer(out, existing.retry, summary, callback,
                                  recorded=lambda: invocation.record(time.perf_counter() - start, summary.done))
        outcome = "error"
        try:
            with _signals_interrupt(), contextlib.ExitStack() as stack:
                if on_done is None and sys.stderr.isatty():  # a person at a terminal: what, what is skipped, how long
                    print(announce(todo, len(existing.complete), workers if executor != "serial" else 1, device,
                                   rates, threads), file=sys.stderr, flush=True)
                if executor == "dask" and units and client is None:
                    client = stack.enter_context(_dask_client(None, workers))
                experiments = [spec.experiment for spec in specs]
                invocation.entry = write_manifest(out, specs[0].suite if specs else "", len(specs), device_name,
                                                  executor, workers, compile, threads, experiments, len(todo),
                                                  report_declarations=report_declarations(experiments))
                _dispatch(units, finish, executor, client, workers, device, threads, compile,
                          stall_seconds=None if dask_address else DASK_NO_WORKER_SECONDS,
                          started=getattr(callback, "started", lambda unit: None),
                          progressed=getattr(callback, "progressed", None))
            outcome = "complete"
        except _Terminated:
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
    return summary


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
        with _signals_deferred():
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


def _dispatch(
    units: Sequence[list[RunSpec]], finish: Callable[[RunSpec, list[dict[str, Any]]], None], executor: str,
    client: Any, workers: int, device: str | None, threads: int, compile: bool, stall_seconds: float | None = None,
    started: Callable[[Sequence[RunSpec]], None] = lambda unit: None,
    progressed: Callable[[Sequence[RunSpec], str], None] | None = None,
) -> None:
    """Run ``units`` on ``executor`` (in this process when there is nothing to run), ``finish`` each run
    (``stall_seconds``: :func:`_run_dask`'s); call ``started(unit)`` as a unit starts serially or on a local pool
    (a Dask scheduler decides that on its own), and there ``progressed(unit, text)`` as it says where it is."""
    if executor == "serial" or not units:
        with torch_threads(threads):
            for unit in units:
                started(unit)
                progress = None if progressed is None else (lambda text, unit=unit: progressed(unit, text))
                for spec, rows in zip(unit, execute_group(unit, device, compile, progress), strict=True):
                    finish(spec, rows)
    elif executor == "processes":
        _run_pool(units, finish, workers, device, threads, compile, started, progressed)
    else:
        _run_dask(client, units, finish, device, threads, compile, stall_seconds=stall_seconds)


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


@contextlib.contextmanager
def _dask_client(address: str | None, workers: int) -> Iterator[Any]:
    """A Dask client of the scheduler at ``address``, or of a quiet LocalCluster of ``workers``
    single-threaded worker processes (no dashboard, no log lines) when ``None``; closed after."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RunnerError("the dask executor needs the 'dist' extra: pip install 'pebench[dist]'") from None
    if address is None:
        # distributed's loggers in this process (the scheduler's) say INFO lines of no use here; restored after
        loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
                   if name.split(".")[0] == "distributed"] + [logging.getLogger("distributed")]
        levels = [logger.level for logger in loggers]
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        try:
            # no dashboard; the scheduler's health routes on a free local port, not 8787
            with contextlib.ExitStack() as started:
                # one task per single-threaded worker at a time (the default saturation 1.1 gives each a second
                # one in advance): a run that kills its worker then never takes an innocent run's attempt with it
                started.enter_context(dask.config.set({
                    "distributed.scheduler.worker-saturation": 1.0,
                    "distributed.deploy.lost-worker-timeout": DASK_LOST_WORKER_TIMEOUT}))
                with _ctrl_c_ignored():
                    cluster = started.enter_context(LocalCluster(
                        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                        silence_logs=logging.CRITICAL))
                    client = started.enter_context(Client(cluster))
                yield client
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)
        return
    try:
        client = Client(address, timeout=DASK_CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as exc:
        raise RunnerError(f"cannot reach the Dask scheduler at {address} within {DASK_CONNECT_SECONDS} s "
                          f"({type(exc).__name__}); is it running, and is the address host:port?") from None
    with client:
        yield client


def _settled(client: Any, futures: Sequence[Any], stall_seconds: float | None) -> Iterator[tuple[Any, bool]]:
    """Each of ``futures`` as it finishes, with ``False``; and, once the cluster of ``client`` has had no worker for
    ``stall_seconds`` while some are pending, each of those with ``True`` (never, for ``None``)."""
    pending, idle_since, quiet_since = list(futures), None, time.monotonic()
    while pending:
        done = [future for future in pending if future.done()]
        if done:
            pending = [future for future in pending if not future.done()]
            idle_since, quiet_since = None, time.monotonic()
            yield from ((future, False) for future in done)
            continue
        time.sleep(DASK_POLL_SECONDS)
        if stall_seconds is None or time.monotonic() - quiet_since < DASK_POLL_SECONDS * 25:
            continue  # asks the scheduler about its workers only after 5 s without a finished run
        if client.scheduler_info().get("workers"):
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= stall_seconds:
            yield from ((future, True) for future in pending)
            return


def _run_dask(
    client: Any,
    units: Sequence[list[RunSpec]],
    finish: Callable[[RunSpec, list[dict[str, Any]]], None],
    device: str | None,
    threads: int,
    compile: bool = False,
    stall_seconds: float | None = None,
) -> None:
    """Map runs over a Dask cluster; a lost worker's runs are retried by the scheduler (as many times as it
    allows), and a run whose worker dies every time, or raises outside the run, is recorded as failed (as on a
    local pool: a resume retries it); so are the runs left when the cluster has had no worker for
    ``stall_seconds`` (None: wait for workers for ever, as for a scheduler others add workers to). A plugin that
    fails to load on a worker, or is another version there, stops the sweep with its one line. On any exception
    here (Ctrl-C, SIGTERM, a full disk) the runs not finished are cancelled."""
    from distributed.scheduler import KilledWorker

    futures = [
        client.submit(
            _execute_in_worker, unit, device, threads, compile, plugin_records(), key=f"pebench-{unit[0].run_id}",
            retries=2,
            pure=False,
        )
        for unit in units
    ]
    units_by_key = {f.key: unit for f, unit in zip(futures, units, strict=True)}
    try:
        for future, stalled in _settled(client, futures, stall_seconds):
            unit = units_by_key[future.key]
            if stalled:
                results = _worker_failed(unit, WorkerDied(f"its worker process died and the cluster had no worker "
                                                          f"left to run it for {stall_seconds:g} s"), device)
                for spec, rows in zip(unit, results, strict=True):
                    finish(spec, rows)
                continue
            try:
                results = future.result()
            except KilledWorker:
                results = _worker_failed(unit, WorkerDied("its worker process died each time the scheduler ran it "
                                                          "(e.g. killed by the kernel for lack of memory)"), device)
            except Exception as exc:  # execute_group records a run's own failure; this is anything else
                results = _worker_failed(unit, WorkerDied(f"its worker raised: {type(exc).__name__}: {exc}"), device)
            if isinstance(results, PluginRefused):  # every run of this worker would fail, or be made by other code
                raise PluginError(results.message)
            for spec, rows in zip(unit, results, strict=True):
                finish(spec, rows)
    finally:
        client.cancel([f for f in futures if not f.done()])
