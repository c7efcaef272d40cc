"""Where a sweep's runs execute (:func:`dispatch`): in the sweeping process, on a local pool of spawned worker
processes, or on a Dask cluster; and the signal handling a sweep relies on (:func:`signals_interrupt`).

A pool worker loads the sweep's plugins, computes a unit of runs (:func:`pebench.plan.execute.execute_group`) and sends
back its rows; it ignores Ctrl-C (the sweep decides), exits when the process that started it dies, even by
``kill -9``, and a worker that dies records the runs it held as failed (:class:`WorkerDied`) and is replaced. On
Dask the scheduler retries a run whose worker died and records it as failed when it has given up; a sweep on its
own local cluster also gives up on runs when the cluster has had no worker for :data:`DASK_NO_WORKER_SECONDS`.
Workers only compute rows: the sweep (:mod:`pebench.plan.runner`) writes every file.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import wait as wait_any
from typing import Any

import torch

from pebench.model import default_device
from pebench.plan.execute import Origin, execute_group, failed_rows, torch_threads
from pebench.plan.experiment import RunSpec
from pebench.registry import PluginError, check_plugins, load_plugins, plugin_records
from pebench.store import code_commit, cpu_model

log = logging.getLogger("pebench")

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


@functools.cache
def origin_here() -> Origin:
    """The commit of the code and the CPU model of this process's machine, read once per process: what the rows of
    every run it executes record (:class:`~pebench.plan.execute.Origin`). Each pool or Dask worker reads its own, so
    a row names the machine that made it."""
    return Origin(commit=code_commit(), cpu_model=cpu_model())


def _execute_in_worker(
    specs: list[RunSpec], device: str | None, threads: int, compile: bool = False,
    plugins: Sequence[dict[str, Any]] = (),
) -> list[list[dict[str, Any]]] | PluginRefused:
    """Dask entry point: load the parent's plugins (``plugins``: its :func:`~pebench.registry.plugin_records`; a
    spawned worker starts with none of its registrations) and check that they are the versions the parent
    loaded (a long-lived worker keeps the version it loaded first), set the torch threads (0 = keep the
    worker's default), then :func:`~pebench.plan.execute.execute_group`.

    A plugin that fails to load here, or is another version than the parent's, is returned as a
    :class:`PluginRefused` (raised, it would be logged with its traceback by the worker and retried).
    """
    refused = _load_sweep_plugins(plugins)
    if refused:
        return PluginRefused(f"{refused} (on a Dask worker)")
    if threads:
        torch.set_num_threads(threads)
    return execute_group(specs, device, compile, origin=origin_here())


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
    unit asks for it, send where it is meanwhile (``("progress", text)``, :func:`~pebench.plan.execute.execute`).

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
            connection.send(("rows", execute_group(specs, device, compile, progress, origin=origin_here())))
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
    ``progressed(unit, text)`` as it says where it is (:func:`~pebench.plan.execute.execute`; not asked for when
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

    def new_worker() -> _Worker:
        return _Worker(context, threads, plugins)

    def answer(index: int) -> None:
        worker = pool[index]
        unit, message = worker.unit, _received(worker)
        if message is not None and message[0] == "progress":  # the unit runs on
            if progressed is not None:
                progressed(unit, message[1])
            return
        worker.unit = None
        if message is None:  # the process died holding this unit
            results = _worker_failed(unit, _replace_dead(pool, index, unit, new_worker if queue else None), device)
        else:
            results = _unit_rows(unit, message, device)
        for spec, rows in zip(unit, results, strict=True):
            finish(spec, rows)

    try:
        with _starting_workers():  # an interrupt meanwhile is raised once pool holds them, so they are stopped
            pool = [new_worker() for _ in range(min(workers, len(queue)))]
        while _hand_out(pool, queue, (device, compile, progressed is not None), started):
            for index in _ready(pool):
                answer(index)
        clean = True
    finally:
        _stop_all(pool, graceful=clean)


def _stop_all(pool: list[_Worker], graceful: bool) -> None:
    """Stop every started worker of ``pool`` whose pipe is open (:meth:`_Worker.stop`)."""
    for worker in pool:
        if worker.process.pid is not None and worker.connection.closed is False:
            worker.stop(graceful=graceful)


def _hand_out(pool: list[_Worker], queue: deque[list[RunSpec]], task: tuple[Any, ...],
              started: Callable[[Sequence[RunSpec]], None]) -> bool:
    """Send each idle worker of ``pool`` the next unit of ``queue`` (with ``task``: the device, ``compile`` and
    whether to say where it is) and tell ``started``; whether any worker is busy now."""
    for worker in pool:
        if worker.unit is None and queue:
            worker.unit = queue.popleft()
            worker.connection.send((worker.unit, *task))
            started(worker.unit)
    return any(worker.unit is not None for worker in pool)


def _ready(pool: list[_Worker]) -> list[int]:
    """The places in ``pool`` of the busy workers that sent a message or whose process died, once one has."""
    busy = [worker for worker in pool if worker.unit is not None]
    ready = wait_any([worker.connection for worker in busy] + [worker.process.sentinel for worker in busy])
    return [index for index, worker in enumerate(pool)
            if worker.unit is not None and (worker.connection in ready or worker.process.sentinel in ready)]


def _replace_dead(pool: list[_Worker], index: int, unit: Sequence[RunSpec],
                  new_worker: Callable[[], _Worker] | None) -> WorkerDied:
    """Stop the worker at ``index`` of ``pool``, whose process died holding ``unit``, and put ``new_worker()`` in its
    place (none: it stays, stopped, when no unit is left); the error its runs record."""
    worker = pool[index]
    worker.process.join()
    error = WorkerDied(_died(worker.process))
    log.warning("runs %s: %s; recorded as failed", ", ".join(s.run_id for s in unit), error)
    worker.stop(graceful=False)
    with _starting_workers():
        pool[index] = new_worker() if new_worker else worker
    return error


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
        return _worker_failed(unit, error, device)
    return payload


class WorkerDied(RuntimeError):
    """The process computing a run died (e.g. killed for lack of memory); the run is recorded as failed."""


def _worker_failed(unit: Sequence[RunSpec], error: WorkerDied, device: str | None) -> list[list[dict[str, Any]]]:
    """The rows of the runs of ``unit``, each recorded as failed by ``error`` (what happened to their worker)."""
    return [failed_rows(spec, error, _torch_device(device), origin_here()) for spec in unit]


def _torch_device(device: str | None) -> torch.device:
    return torch.device(device) if device else default_device()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""


#: signals received within a :func:`signals_deferred` block, raised when the outermost one ends
_DEFERRED: list[int] = []
#: how many :func:`signals_deferred` blocks are open in this process
_DEFERRING = [0]


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """A Ctrl-C or SIGTERM that reaches this process within the block (:func:`signals_interrupt`) is raised
    after it, not half-way through what the block does (starting a worker, writing a run file)."""
    _DEFERRING[0] += 1
    try:
        yield
    finally:
        _DEFERRING[0] -= 1
    if _DEFERRED and not _DEFERRING[0]:
        number = _DEFERRED.pop()
        _DEFERRED.clear()
        raise Terminated() if number == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def _starting_workers() -> Iterator[None]:
    """Start worker processes within this block: SIGINT is blocked in this thread, so that the processes and
    threads started here inherit it blocked (a Ctrl-C at a terminal reaches every process of its group, and a
    worker still importing torch would print a traceback), and a Ctrl-C or SIGTERM that reaches this process
    is raised after the block (:func:`signals_deferred`), not half-way through starting a worker."""
    resource_tracker.ensure_running()  # started first: starting its process unblocks SIGINT in this thread
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with signals_deferred():
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
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise (:class:`KeyboardInterrupt`, :class:`Terminated`) once (while
    workers start or a run file is written, when that is done: :func:`signals_deferred`); a second signal while the
    sweep stops its workers is ignored, so the stop is not itself interrupted.
    Only in the main thread (elsewhere signals cannot be handled; the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(number: int, frame: Any) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if _DEFERRING[0]:  # raised by signals_deferred when its block ends
            _DEFERRED.append(number)
            return
        raise Terminated() if number == signal.SIGTERM else KeyboardInterrupt()

    _DEFERRED.clear()
    previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def dispatch(
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
                for spec, rows in zip(unit, execute_group(unit, device, compile, progress, origin=origin_here()),
                                      strict=True):
                    finish(spec, rows)
    elif executor == "processes":
        _run_pool(units, finish, workers, device, threads, compile, started, progressed)
    else:
        _run_dask(client, units, finish, device, threads, compile, stall_seconds=stall_seconds)


@contextlib.contextmanager
def dask_client(address: str | None, workers: int) -> Iterator[Any]:
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
