"""A sweep survives what its runs do to their workers, on every executor, and leaves a folder as it found it
when it cannot start (issue 37)."""

from __future__ import annotations

import pytest
from test_runner import tiny_spec

from pebench import encodings, registry
from pebench.cli import main
from pebench.results import read_run_file, run_file_name
from pebench.runner import run_sweep

#: an encoding whose every use kills the process that trains with it, as the kernel kills a worker out of memory
KILLER = '''import os
import signal

from pebench.encodings import register
from pebench.encodings.base import PositionalEncoding


@register("kills_its_worker", kind="input", paper="", has_parameters=False, summary="Kills its process.")
class KillsItsWorker(PositionalEncoding):
    def embed(self, x, pos):
        os.kill(os.getpid(), signal.SIGKILL)
'''


@pytest.fixture
def killer_plugin(tmp_path, monkeypatch):
    """The plugin of :data:`KILLER`, loaded here (as ``--plugin`` would) and forgotten after the test."""
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setattr(registry, "_RECORDS", {})
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
    for attempt in range(2):  # and a resume retries it, recording it as failed again instead of stopping
        summary = run_sweep([fatal, fine], out, executor=executor, workers=1, on_done=lambda spec, rows: None)
        assert (summary.done, summary.failed) == (2 - attempt, 1)
        failed = read_run_file(out / "raw" / run_file_name(fatal.run_id))
        assert failed["status"].tolist() == ["failed"]
        assert "WorkerDied: its worker process" in failed["error"].iloc[0]
    assert read_run_file(out / "raw" / run_file_name(fine.run_id))["status"].iloc[0] == "ok"


def test_an_unreachable_dask_scheduler_leaves_the_folder_as_it_was(tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask.distributed")
    from pebench import runner

    monkeypatch.setattr(runner, "DASK_CONNECT_SECONDS", 1)  # the refusal of a closed port is immediate anyway
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
