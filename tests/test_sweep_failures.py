"""A sweep survives what its runs do to their workers, on every executor, and leaves a folder as it found it
when it cannot start (issue 37)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_runner import tiny_spec
from test_untrusted_folders import small_results

from pebench import encodings, registry
from pebench.cli import main
from pebench.plan.runner import run_sweep
from pebench.store import read_run_file, run_file_name

#: an encoding whose every use kills the process that trains with it, as the kernel kills a worker out of memory
KILLER = '''import os
import signal

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


@register("kills_its_worker", kind="input", paper="A test of pebench (no paper)", has_parameters=False,
          summary="Kills its process.")
class KillsItsWorker(PositionalEncoding):
    def embed(self, x, pos):
        os.kill(os.getpid(), signal.SIGKILL)
'''


@pytest.fixture
def killer_plugin(tmp_path, monkeypatch):
    """The plugin of :data:`KILLER`, loaded here (as ``--plugin`` would) and forgotten after the test."""
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setattr(registry, "_RECORDS", {})
    encodings.ENCODINGS.names()  # the built-in encodings registered first, so that the copies hold them
    monkeypatch.setattr(encodings.ENCODINGS, "_entries", dict(encodings.ENCODINGS._entries))
    monkeypatch.setattr(encodings.ENCODINGS, "_meta", dict(encodings.ENCODINGS._meta))
    plugin = tmp_path / "killer_plugin.py"
    plugin.write_text(KILLER)
    registry.load_plugin(str(plugin))
    return plugin


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_a_run_that_kills_its_worker_every_time_is_recorded_as_failed(executor, tmp_path, killer_plugin):
    if executor == "dask":
        pytest.importorskip("dask.distributed")
    fatal, fine = tiny_spec(encoding="kills_its_worker"), tiny_spec(encoding="none")
    out = tmp_path / "out"
    # and a resume retries it, recording it as failed again instead of stopping (the runner's resume, the same on
    # every executor: checked once, on processes, since each Dask attempt waits out three worker restarts)
    for attempt in range(2 if executor == "processes" else 1):
        summary = run_sweep([fatal, fine], out, executor=executor, workers=1, on_done=lambda spec, rows: None)
        failed = read_run_file(out / "raw" / run_file_name(fatal.run_id))
        assert failed["status"].tolist() == ["failed"]
        assert "WorkerDied: its worker process" in failed["error"].iloc[0]
        assert read_run_file(out / "raw" / run_file_name(fine.run_id))["status"].tolist() == ["ok"] * 2
        assert (summary.done, summary.failed) == (2 if attempt == 0 else 1, 1)


def test_a_local_dask_cluster_never_gives_up_on_a_worker_its_nanny_restarts():
    """The cause of a hang seen 1 time in 4: distributed closes a nanny for good when no worker of its name is
    registered ``lost-worker-timeout`` after a death, and with the default 15 s that check can land between a
    death and its restart. The local cluster puts it off beyond any sweep."""
    pytest.importorskip("dask.distributed")
    import dask
    from dask.utils import parse_timedelta

    from pebench.plan import executors

    with executors.dask_client(None, 1):
        assert parse_timedelta(dask.config.get("distributed.deploy.lost-worker-timeout")) >= 86400


def test_an_unreachable_dask_scheduler_leaves_the_folder_as_it_was(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from pebench.plan import executors

    monkeypatch.setattr(executors, "DASK_CONNECT_SECONDS", 1)  # the refusal of a closed port is immediate anyway
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--dask", "127.0.0.1:1",
                 "--out", str(out)]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    new = tmp_path / "new"
    assert main(["run", "--suite", "smoke", "--experiment", "rope_scaling", "--dask", "127.0.0.1:1",
                 "--out", str(new)]) == 2
    assert not new.exists() or not list(new.iterdir())


# --------------------------------------------------------------------------- quiet: one line, no traceback

SMALL = ["run", "--suite", "smoke", "--experiment", "length_extrapolation", "--filter", "task=majority"]


def starting_workers(pid: int, stage: str) -> list[str]:
    """The worker processes (spawned Python interpreters) of process ``pid`` that are at ``stage`` of their start
    or past it: ``python`` (the interpreter has set what SIGINT does: caught, as KeyboardInterrupt, or ignored)
    or ``torch`` (importing it, as a pool worker does for a second or two before any code of pebench runs)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError, KeyError, ValueError):
                    if b"spawn_main" not in Path(f"/proc/{child}/cmdline").read_bytes():
                        continue
                    if stage == "torch":
                        reached = "/torch/" in Path(f"/proc/{child}/maps").read_text()
                    else:
                        status = dict(line.split(":", 1) for line in Path(f"/proc/{child}/status").read_text()
                                      .splitlines())
                        handled = int(status["SigCgt"], 16) | int(status["SigIgn"], 16)
                        reached = bool(handled & 1 << (signal.SIGINT - 1))
                    if reached:
                        found.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("executor, stage", [(["--workers", "2"], "torch"),
                                             (["--dask", "local", "--dask-workers", "2"], "python")])
def test_ctrl_c_while_workers_start_prints_no_traceback(executor, stage, tmp_path):
    """Ctrl-C at a terminal reaches every process of the group, here while the workers still import torch."""
    if executor[0] == "--dask":
        pytest.importorskip("dask.distributed")
    sweep = subprocess.Popen([sys.executable, "-m", "pebench", *SMALL, *executor, "--out", str(tmp_path / "out")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        while not starting_workers(sweep.pid, stage) and sweep.poll() is None:
            time.sleep(0.001)  # polls until the first worker exists; nothing here depends on how long it takes
        os.killpg(sweep.pid, signal.SIGINT)
        err = sweep.communicate(timeout=300)[1]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sweep.pid, signal.SIGKILL)
    assert "Traceback" not in err and "Error" not in err, err
    # stopped (a local Dask cluster does not see a Ctrl-C while it starts: then the sweep completes)
    assert (sweep.returncode, err.count("\n")) in ((130, 1), (0, 0)), err
    assert sweep.returncode == 130 or executor[0] == "--dask"


WORKERS_ONLY = '''import multiprocessing

if multiprocessing.parent_process() is not None:
    raise RuntimeError("libfoo.so not found on this worker")
'''


@pytest.mark.parametrize("executor", [["--workers", "2"], ["--dask", "local", "--dask-workers", "2"]])
def test_a_plugin_that_fails_only_in_workers_is_its_one_line(executor, tmp_path):
    if executor[0] == "--dask":
        pytest.importorskip("dask.distributed")
    plugin = tmp_path / "workers_only.py"
    plugin.write_text(WORKERS_ONLY)
    done = subprocess.run([sys.executable, "-m", "pebench", "--plugin", str(plugin), *SMALL, *executor, "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"plugin {plugin} failed to load: RuntimeError: libfoo.so not found on this worker" in done.stderr
    assert not list((tmp_path / "out" / "raw").iterdir())


# --------------------------------------------------------------------------- what a killed command left behind


def dead_pid() -> int:
    """The id of a process that has ended."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(ended.stdout)


def test_a_report_removes_the_staging_folders_that_killed_reports_left(tmp_path, capsys):
    from pebench.store import own_files

    folder = small_results(tmp_path / "results")
    machine = own_files.machine_mark()
    dead = dead_pid()
    left = own_files.make_folder(folder, f".report-{machine}-{dead}-")  # a report killed with kill -9
    running = own_files.make_folder(folder, f".report-{machine}-{os.getpid()}-")  # a report in progress
    other = f"{'0' if machine != '0' * 8 else '1'}{machine[1:]}"
    elsewhere = own_files.make_folder(folder, f".report-{other}-{dead}-")  # on a shared disk: its pid is not ours
    stranger = folder / f".report-{machine}-{dead}-k3j9xabc"  # a stranger's, in the same shape
    (tmp_path / "seen").mkdir()
    copied = folder / own_files.make_folder(tmp_path / "seen", f".report-{machine}-{dead}-").name  # a name seen
    mine = folder / ".report-notes"
    for staging in (left, running, elsewhere, stranger, copied, mine):
        (staging / "tables").mkdir(parents=True)
        (staging / "tables" / "t.md").write_text("| a table |\n")
    assert main(["report", str(folder)]) == 0
    capsys.readouterr()
    kept = [running, elsewhere, stranger, copied, mine]
    assert sorted(p.name for p in folder.glob(".report-*")) == sorted(p.name for p in kept)
    assert all((staging / "tables" / "t.md").read_text() == "| a table |\n" for staging in kept)


@pytest.mark.parametrize("command", ["combine", "reference", "snapshot"])
def test_combine_extract_and_snapshot_remove_the_staging_folders_that_killed_ones_left(tmp_path, command):
    """Each builds its folder in a staging folder beside it (pebench.store.own_files.staging_folder): the one a kill -9
    left is removed by the next one into the same place, a stranger's of the same shape is kept."""
    from test_changes import results_folder

    from pebench.store import history, own_files, reference
    from pebench.store.combine import combine

    folder = small_results(tmp_path / "results")
    if command == "combine":
        other = small_results(tmp_path / "other", seeds=(2,))
        parent, prefix, make = tmp_path, ".both.combine-", lambda: combine([folder, other], tmp_path / "both")
    elif command == "reference":
        parent, prefix = tmp_path, ".ref.reference-"
        make = lambda: reference.extract(reference.archive_path(), tmp_path / "ref")  # noqa: E731
    else:
        reported = results_folder(tmp_path / "standard")
        parent, prefix = tmp_path / "history", ".standard-v2-aaa7cfcc."
        make = lambda: history.snapshot(reported, parent)  # noqa: E731
    parent.mkdir(exist_ok=True)
    machine, dead = own_files.machine_mark(), dead_pid()
    left = own_files.make_folder(parent, f"{prefix}{machine}-{dead}-")
    stranger = parent / f"{prefix}{machine}-{dead}-k3j9xabc"
    stranger.mkdir()
    for staging in (left, stranger):
        (staging / "manifest.json").write_text("{}\n")
    made = make()
    assert not left.exists() and (stranger / "manifest.json").read_text() == "{}\n"
    assert [p.name for p in parent.iterdir() if p.name.startswith(".")] == [stranger.name]  # its own is gone too
    assert made


def test_a_sweep_removes_the_manifest_copies_that_killed_sweeps_left(tmp_path):
    from pebench.store import own_files

    out = tmp_path / "out"
    run_sweep([tiny_spec()], out, on_done=lambda spec, rows: None)
    handle, left = own_files.make_file(out, ".manifest.json.", ".tmp")  # a copy write_text_atomic made, killed
    os.close(handle)
    (tmp_path / "seen").mkdir()
    handle, seen = own_files.make_file(tmp_path / "seen", ".manifest.json.", ".tmp")
    os.close(handle)
    mine = [out / ".manifest.json.draft.tmp", out / f"{left.name}.orig",
            out / ".manifest.json.k3j9xabc.tmp",  # a stranger's copy in the same shape
            out / seen.name]  # a stranger's, named as one of ours elsewhere
    for path in [left, *mine]:
        path.write_text("{}\n")
    run_sweep([tiny_spec()], out, on_done=lambda spec, rows: None)
    assert not left.exists() and all(path.read_text() == "{}\n" for path in mine)


class _Future:
    """A Dask future as :func:`pebench.plan.executors._settled` sees it: done after ``after`` looks (None: never)."""

    def __init__(self, key, after=0):
        self.key, self.after, self.looks = key, after, 0

    def done(self):
        self.looks += 1
        return self.after is not None and self.looks > self.after


class _Client:
    def __init__(self, workers):
        self.workers, self.asked = workers, 0

    def scheduler_info(self):
        self.asked += 1
        return {"workers": self.workers}


def test_a_dask_cluster_left_without_workers_settles_its_pending_runs_as_stalled(monkeypatch):
    """A local cluster whose worker died and was not restarted would leave the sweep waiting for ever (a hang seen
    in the tests): after ``stall_seconds`` with no worker, each pending run comes back marked stalled, to be
    recorded as failed. A cluster that has a worker is waited for, and so is any cluster when there is no limit
    (None: a remote scheduler, whose workers others add)."""
    from pebench.plan import executors

    monkeypatch.setattr(executors, "DASK_POLL_SECONDS", 0.001)  # only how often it looks; the waits scale with it
    settled = list(executors._settled(_Client({}), [_Future("a"), _Future("b", after=None)], stall_seconds=0.05))
    assert [(future.key, stalled) for future, stalled in settled] == [("a", False), ("b", True)]

    busy = _Client({"tcp://worker": {}})
    slow = _Future("c", after=200)  # finishes after many looks, long past the limit of a cluster without workers
    assert list(executors._settled(busy, [slow], stall_seconds=0.01)) == [(slow, False)] and busy.asked > 0

    unlimited, late = _Client({}), _Future("d", after=200)
    assert list(executors._settled(unlimited, [late], stall_seconds=None)) == [(late, False)]
    assert unlimited.asked == 0
