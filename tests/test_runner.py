"""Runner, specs and CLI: resume after kill -9, atomic files, executors agree, bad input."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pebench.cli import main
from pebench.plan import execute, sweep_time
from pebench.plan.execute import group_runs
from pebench.plan.executors import origin_here
from pebench.plan.experiment import make_spec, suite_runs
from pebench.plan.runner import run_sweep
from pebench.protocol import COMPARED_ENCODINGS, PROTOCOL, SEEDS
from pebench.store import (
    ResultsError,
    code_commit,
    cpu_model,
    load,
    raw_files,
    read_manifest,
    read_run_file,
    read_run_text,
    run_file_id,
    run_file_name,
    run_file_suffix,
    run_file_text,
    scan,
    write_rows_atomic,
)

ROOT = Path(__file__).resolve().parent.parent
TIMING_COLUMNS = ["train_seconds", "rows_sha256"]  # the checksum covers the timing
# and the code's commit, read once per process (pebench.store.provenance.code_commit): two sweeps of the same code
# compute the same rows, but one that starts after a commit or an edit in this checkout records another commit
NOT_COMPUTED = [*TIMING_COLUMNS, "commit"]


def tiny_spec(**overrides):
    config = {
        "task": "copy", "encoding": "rope", "arch": "decoder", "seed": 0, "d_model": 16, "n_layers": 1,
        "n_heads": 2, "steps": 3, "batch_size": 4, "warmup_steps": 1, "train_max_len": 4,
        "eval_lengths": [2, 6], "eval_n_examples": 8, **overrides,
    }
    return make_spec("smoke", "test", config)


def tiny_specs():
    return [tiny_spec(encoding=e, seed=s) for e in ("rope", "alibi") for s in (0, 1)]


def without_timing(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=NOT_COMPUTED).sort_values(["run_id", "eval_len"]).reset_index(drop=True)


# --------------------------------------------------------------------------- specs


def test_run_id_is_stable_and_sensitive():
    assert tiny_spec().run_id == tiny_spec().run_id
    assert tiny_spec().run_id != tiny_spec(seed=1).run_id
    assert tiny_spec().run_id != tiny_spec(encoding_options={"layout": "half"}).run_id
    assert len(tiny_spec().run_id) == 16


def test_unknown_keys_and_values_are_rejected_with_choices():
    with pytest.raises(ValueError, match="valid keys: .*d_model"):
        tiny_spec(dmodel=32)
    with pytest.raises(KeyError, match="Did you mean 'rope'"):
        tiny_spec(encoding="ropee")
    with pytest.raises(ValueError, match="arch"):
        tiny_spec(arch="seq2seq")
    with pytest.raises(ValueError, match="valid options"):
        tiny_spec(encoding_options={"bogus": 1})
    with pytest.raises(ValueError, match="divisible"):
        tiny_spec(d_model=18, n_heads=4)


def test_an_encodings_options_are_checked_again_for_what_is_registered_now(monkeypatch):
    """Spec validation builds each encoding once per set of arguments (a suite shares a few dozen), but never
    keeps a failure, and checks again when another encoding is registered under the name (a plugin reloaded)."""
    from pebench import encodings
    from pebench.encodings.base import PositionalEncoding

    built = []

    class Strict(PositionalEncoding):
        def __init__(self, d_model, n_heads, max_len, *, causal=False, train_len=None, scale: float = 1.0):
            super().__init__(d_model, n_heads, max_len, causal=causal, train_len=train_len)
            built.append(scale)
            if scale != 1.0:
                raise ValueError("Strict takes scale 1 only")

    class Lenient(PositionalEncoding):
        def __init__(self, d_model, n_heads, max_len, *, causal=False, train_len=None, scale: float = 1.0):
            super().__init__(d_model, n_heads, max_len, causal=causal, train_len=train_len)
            built.append(scale)

    monkeypatch.setitem(encodings.ENCODINGS._entries, "test_strict", Strict)
    monkeypatch.setitem(encodings.ENCODINGS._meta, "test_strict", {})
    tiny_spec(encoding="test_strict")
    tiny_spec(encoding="test_strict", seed=1)  # the same arguments: not built again
    assert built == [1.0]
    for _ in range(2):  # a failure is not remembered: raised each time
        with pytest.raises(ValueError, match="scale 1 only"):
            tiny_spec(encoding="test_strict", encoding_options={"scale": 2})
    assert len(built) == 3
    monkeypatch.setitem(encodings.ENCODINGS._entries, "test_strict", Lenient)  # registered again, otherwise
    assert tiny_spec(encoding="test_strict", encoding_options={"scale": 2}).encoding == "test_strict"
    assert built[-1] == 2


def test_suites_expand_with_unique_ids():
    smoke = suite_runs("smoke")
    standard = suite_runs("standard")
    assert 0 < len(smoke) < len(standard)
    assert len({s.run_id for s in standard}) == len(standard)
    assert {s.seed for s in standard} == set(SEEDS["standard"])


# --------------------------------------------------------------------------- files


def test_write_rows_atomic_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / "x.csv"
    write_rows_atomic(path, [{"a": 1}])
    write_rows_atomic(path, [{"a": 2}])
    assert pd.read_csv(path)["a"].tolist() == [2]
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"]


def test_sweep_writes_one_valid_csv_per_run_and_resumes(tmp_path):
    specs = tiny_specs()
    summary = run_sweep(specs, tmp_path, on_done=lambda spec, rows: None)
    assert summary.done == 4 and summary.skipped == 0
    files = [p.name for p in (tmp_path / "raw").iterdir()]
    assert sorted(files) == sorted(run_file_name(s.run_id) for s in specs)
    frame = load(tmp_path)
    assert set(frame["status"]) == {"ok"} and len(frame) == 8
    entry = json.loads((tmp_path / "manifest.json").read_text())["invocations"][-1]
    assert (entry["pandas_version"], entry["numpy_version"]) == (pd.__version__, np.__version__)
    # what "the same machine" needs for bit-identical rows: the CPU and the kernels torch dispatches to
    assert entry["cpu_model"] and entry["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    again = run_sweep(specs, tmp_path, on_done=lambda spec, rows: None)
    assert again.done == 0 and again.skipped == 4
    # each invocation records what it was given, what it made, how long it took and how it ended
    first, second = json.loads((tmp_path / "manifest.json").read_text())["invocations"]
    assert first["experiments"] == sorted({s.experiment for s in specs}) and first["n_runs"] == 4
    assert (first["runs_to_make"], first["runs_made"], first["outcome"]) == (4, 4, "complete")
    assert (second["runs_to_make"], second["runs_made"], second["outcome"]) == (0, 0, "complete")
    assert first["wall_seconds"] == round(summary.seconds, 1) and second["wall_seconds"] >= 0  # no timing compared
    assert first["seed_batched_runs"] == 0  # no shared length_seed: nothing is batched, on any device


def test_sweep_starts_the_longest_runs_first(tmp_path):
    # different cells: a folder holds one protocol per cell
    specs = [tiny_spec(steps=s, encoding=e) for s, e in ((2, "rope"), (6, "alibi"), (4, "t5"))]
    order = []
    run_sweep(specs, tmp_path, on_done=lambda spec, rows: order.append(spec.train.steps))
    assert order == [6, 4, 2]
    assert set(load(tmp_path)["compiled"]) == {False}
    # each row names the machine it was made on, as the report's provenance names an invocation's, and the commit
    from pebench.plan.execute import machine_name

    assert set(load(tmp_path)["machine"]) == {machine_name("cpu", cpu_model())}
    assert machine_name("cpu", cpu_model()) == f"{cpu_model()}, {torch.backends.cpu.get_cpu_capability()}"
    assert set(load(tmp_path)["commit"]) == {code_commit()}


def test_failed_runs_are_recorded_and_retried(tmp_path, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(execute, "train", explode)
    spec = tiny_spec()
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    frame = load(tmp_path)
    assert frame["status"].tolist() == ["failed"] and "boom" in frame["error"][0]
    assert frame["machine"].tolist() == [execute.machine_name("cpu", cpu_model())]  # a failed run's record too
    assert frame["commit"].tolist() == [code_commit()]
    monkeypatch.undo()
    assert scan(tmp_path, [spec.run_id]).retry == {spec.run_id}
    summary = run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    assert summary.done == 1 and set(load(tmp_path)["status"]) == {"ok"}


def test_a_failed_run_recorded_as_plain_csv_is_replaced_not_doubled(tmp_path, monkeypatch):
    """A failed run's record written before run files were compressed (``<id>.csv``) is retried, and the new
    ``<id>.csv.gz`` replaces it: the folder never holds two files of one run."""
    monkeypatch.setattr(execute, "train", lambda *args, **kwargs: 1 / 0)
    spec = tiny_spec()
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    monkeypatch.undo()
    raw = tmp_path / "raw"
    (raw / f"{spec.run_id}.csv").write_text(read_run_text(raw / run_file_name(spec.run_id)))
    (raw / run_file_name(spec.run_id)).unlink()
    assert scan(tmp_path, [spec.run_id]).retry == {spec.run_id}
    assert run_sweep([spec], tmp_path, on_done=lambda s, r: None).done == 1
    assert [p.name for p in raw.iterdir()] == [run_file_name(spec.run_id)]
    assert set(load(tmp_path)["status"]) == {"ok"}


@pytest.mark.parametrize(("name", "suffix", "run_id"), [
    ("abc.csv.gz", ".csv.gz", "abc"), ("abc.csv", ".csv", "abc"), ("a.b.csv.gz", ".csv.gz", "a.b"),
    (".abc.csv.gz.tmp", None, None), (".abc.csv", None, None), (".csv.gz", None, None), (".csv", None, None),
    ("abc.gz", None, None), ("abc.json", None, None), ("abc.csv.gz.part", None, None),
])
def test_run_file_names(name, suffix, run_id):
    """Which names are run files, and the ending and run id each gives: hidden files (writes in flight) and
    bare endings are not run files."""
    assert run_file_suffix(name) == suffix
    assert run_file_id(Path("raw") / name) == run_id
    if run_id is not None and suffix == ".csv.gz":
        assert run_file_name(run_id) == name


def test_run_files_are_gzip_without_a_time_stamp_and_plain_csv_reads_alike(tmp_path):
    """The same rows give the same bytes (gzip with mtime 0: a rerun's identical file is not a git change),
    decompressing to exactly :func:`run_file_text`; a folder mixing ``.csv`` and ``.csv.gz`` loads as one."""
    specs = tiny_specs()[:2]
    run_sweep(specs, tmp_path, on_done=lambda s, r: None)
    path = tmp_path / "raw" / run_file_name(specs[0].run_id)
    data = path.read_bytes()
    assert data[:2] == b"\x1f\x8b" and data[4:8] == b"\0\0\0\0"  # gzip magic, no modification time
    assert gzip.decompress(data).decode() == read_run_text(path)
    rows = [{"a": 1, "b": "x, y"}, {"a": 2, "b": 0.5}]
    write_rows_atomic(tmp_path / "first.csv.gz", rows)
    time.sleep(1.1)
    write_rows_atomic(tmp_path / "second.csv.gz", rows)
    assert (tmp_path / "first.csv.gz").read_bytes() == (tmp_path / "second.csv.gz").read_bytes()
    assert read_run_text(tmp_path / "first.csv.gz") == run_file_text(rows)
    both = load(tmp_path)
    (tmp_path / "raw" / f"{specs[0].run_id}.csv").write_text(read_run_text(path))
    path.unlink()
    pd.testing.assert_frame_equal(load(tmp_path), both)


def test_a_second_file_of_one_run_is_refused_and_never_rerun(tmp_path, caplog):
    """``<id>.csv`` beside ``<id>.csv.gz`` (e.g. a copy decompressed by hand) would count the run twice."""
    spec = tiny_spec()
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    path = tmp_path / "raw" / run_file_name(spec.run_id)
    (tmp_path / "raw" / f"{spec.run_id}.csv").write_text(read_run_text(path))
    with pytest.raises(ResultsError, match=rf"run {spec.run_id} again \(also in {spec.run_id}.csv\)"):
        load(tmp_path)
    existing = scan(tmp_path, [spec.run_id])
    assert existing.complete == {spec.run_id}
    assert existing.bad == {path.name: f"a second file of run {spec.run_id}"}
    assert existing.doubled == [(f"{spec.run_id}.csv", path.name)]
    with pytest.raises(ResultsError, match=rf"two files of one run \({spec.run_id}.csv and {path.name}\)"):
        run_sweep([spec], tmp_path, on_done=lambda s, r: None)  # as report refuses the folder, so does run


def test_combine_copies_compressed_and_plain_run_files_as_they_are(tmp_path):
    from pebench.store.combine import combine

    specs = tiny_specs()[:2]
    run_sweep(specs[:1], tmp_path / "a", on_done=lambda s, r: None)
    run_sweep(specs[1:], tmp_path / "b", on_done=lambda s, r: None)
    compressed = tmp_path / "b" / "raw" / run_file_name(specs[1].run_id)
    (tmp_path / "b" / "raw" / f"{specs[1].run_id}.csv").write_text(read_run_text(compressed))
    compressed.unlink()
    combine([tmp_path / "a", tmp_path / "b"], tmp_path / "both")
    sources = raw_files(tmp_path / "a" / "raw") + raw_files(tmp_path / "b" / "raw")
    assert {p.name: p.read_bytes() for p in raw_files(tmp_path / "both" / "raw")} == {
        p.name: p.read_bytes() for p in sources}


def test_a_damaged_gzip_run_file_is_named_in_one_line_and_blocks_its_run(tmp_path):
    specs = tiny_specs()[:3]
    run_sweep(specs, tmp_path, on_done=lambda s, r: None)
    paths = [tmp_path / "raw" / run_file_name(spec.run_id) for spec in specs]
    paths[0].write_bytes(paths[0].read_bytes()[:-9])  # the stream cut before its end
    paths[1].write_bytes(b"not gzip at all\n")
    with pytest.raises(ResultsError) as error:
        load(tmp_path)
    message = str(error.value)
    assert message.startswith("2 bad result file(s)")
    assert f"{paths[0].name}: truncated (its gzip stream ends early)" in message
    assert f"{paths[1].name}: not a readable gzip file" in message
    summary = run_sweep(specs, tmp_path, on_done=lambda s, r: None)
    assert sorted(summary.blocked) == sorted(s.run_id for s in specs[:2]) and summary.skipped == 1


def test_malformed_and_foreign_files_are_reported_not_overwritten(tmp_path, caplog):
    specs = tiny_specs()[:2]
    raw = tmp_path / "raw"
    raw.mkdir(parents=True)
    (raw / f"{specs[0].run_id}.csv").write_text("garbage,without\n1\n\"unterminated")
    (raw / "notes.txt").write_text("hello")
    (raw / "foreign.csv").write_text("a,b\n1,2\n")
    summary = run_sweep(specs, tmp_path, on_done=lambda s, r: None)
    assert summary.blocked == [specs[0].run_id] and summary.done == 1
    assert (raw / f"{specs[0].run_id}.csv").read_text().startswith("garbage")
    assert (raw / "foreign.csv").read_text() == "a,b\n1,2\n"
    messages = " ".join(caplog.messages)
    assert "foreign.csv" in messages and "notes.txt" in messages
    with pytest.raises(ResultsError, match=r"raw/\w+\.csv: "):  # names the bad file
        load(tmp_path)


#: smoke runs whose rows change with the torch thread count (loss, equivariance gaps in the last digits)
THREAD_SENSITIVE = ("length_extrapolation", "majority", "alibi"), ("order_sensitivity", "majority", "none")


def test_executors_give_identical_rows(tmp_path):
    """Issue 16, item 9: serial (which used every core's thread) differed from --workers and Dask (one thread
    per worker) in 45 of the 64 smoke files. Every executor now trains each run with the same thread count."""
    pytest.importorskip("dask.distributed")
    specs = [s for s in suite_runs("smoke") if (s.experiment, s.task, s.encoding) in THREAD_SENSITIVE]
    assert len(specs) == 3
    frames = {}
    for executor in ("serial", "processes", "dask"):
        out = tmp_path / executor
        run_sweep(specs, out, executor=executor, workers=2, on_done=lambda s, r: None)
        frames[executor] = without_timing(load(out))
    assert set(frames["serial"]["torch_threads"]) == {1}
    pd.testing.assert_frame_equal(frames["serial"], frames["processes"])
    pd.testing.assert_frame_equal(frames["serial"], frames["dask"])
    run_sweep(specs, tmp_path / "two", threads=2, on_done=lambda s, r: None)  # the test can see the difference
    two = without_timing(load(tmp_path / "two")).drop(columns="torch_threads")
    assert not two.equals(frames["serial"].drop(columns="torch_threads"))


def test_lost_dask_worker_runs_are_retried(tmp_path):
    """SIGKILL a Dask worker process while it trains a run: the run is rescheduled, every run completes,
    and the rows equal those of a serial sweep."""
    distributed = pytest.importorskip("dask.distributed")
    import threading

    specs = [tiny_spec(encoding=e, seed=s, steps=1500) for e in ("rope", "alibi") for s in (0, 1)]
    run_sweep(specs, tmp_path / "serial", on_done=lambda s, r: None)
    out, outcome = tmp_path / "dask", {}
    cluster_options = {"n_workers": 2, "threads_per_worker": 1, "processes": True, "dashboard_address": None}
    with distributed.LocalCluster(**cluster_options) as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)  # worker address -> process id

        def sweep() -> None:
            outcome["summary"] = run_sweep(specs, out, executor="dask", dask_address=cluster.scheduler_address,
                                           on_done=lambda s, r: None)

        thread = threading.Thread(target=sweep)
        thread.start()
        deadline, victim = time.time() + 120, None
        while victim is None and time.time() < deadline:
            busy = [address for address, keys in client.processing().items() if keys]
            victim = busy[0] if busy else None
            time.sleep(0.01)
        assert victim is not None, "no run ever started on the cluster"
        os.kill(pids[victim], signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive()
        assert victim not in client.run(os.getpid) or client.run(os.getpid)[victim] != pids[victim]
    summary = outcome["summary"]
    assert (summary.done, summary.failed) == (len(specs), 0)
    pd.testing.assert_frame_equal(without_timing(load(tmp_path / "serial")), without_timing(load(out)))


def test_seed_batched_sweep_matches_one_by_one(tmp_path):
    """Runs that share a length_seed train as one batched model with (nearly) the same results."""
    fit = {"fit_every": 1, "fit_threshold": 0.2, "stop_at_fit": True}  # each seed stops at its own fit
    specs = [tiny_spec(encoding=e, seed=s, length_seed=0, **fit) for e in ("rope", "alibi") for s in (0, 1, 2)]
    assert len(group_runs(specs, seed_batch=True)) == 2 and len(group_runs(specs, seed_batch=False)) == 6
    assert run_sweep(specs, tmp_path / "batched", seed_batch=True, on_done=lambda s, r: None).seed_batched == 6
    assert run_sweep(specs, tmp_path / "single", seed_batch=False, on_done=lambda s, r: None).seed_batched == 0
    for folder, batched_runs in (("batched", 6), ("single", 0)):  # the manifest says which sweep batched
        assert json.loads((tmp_path / folder / "manifest.json").read_text())["latest"]["seed_batched_runs"] == \
            batched_runs
    batched, single = without_timing(load(tmp_path / "batched")), without_timing(load(tmp_path / "single"))
    assert list(batched["run_id"]) == list(single["run_id"])
    for column in ("token_acc", "seq_acc"):
        assert (batched[column] - single[column]).abs().max() <= 1 / 16  # at most one flipped token of 16
    assert (batched["loss"] - single["loss"]).abs().max() < 1e-4
    assert (batched["final_train_loss"] - single["final_train_loss"]).abs().max() < 1e-4
    for column in ("steps_done", "stop_reason", "steps_to_fit"):
        pd.testing.assert_series_equal(batched[column], single[column])
    for one, many in zip(single["fit_curve"], batched["fit_curve"], strict=True):
        one, many = json.loads(one), json.loads(many)
        assert [s for s, _ in many] == [s for s, _ in one] and len(one) >= 1
        assert [a for _, a in many] == pytest.approx([a for _, a in one], abs=1 / 16)


def test_killed_sweep_resumes_without_partial_files(tmp_path):
    """kill -9 a real `pebench run` mid-sweep, then finish it: nothing lost or corrupt."""
    out = tmp_path / "smoke"
    cmd = [sys.executable, "-m", "pebench.cli", "run", "--suite", "smoke", "--experiment", "order_sensitivity",
           "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(raw_files(out / "raw")) < 3:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {p.name: p.read_bytes() for p in raw_files(out / "raw")}
    assert 3 <= len(before) < len(suite_runs("smoke", ["order_sensitivity"]))
    # killed before its end, the sweep still recorded its wall time and runs up to its last finished run
    killed = read_manifest(out)["latest"]
    assert "outcome" not in killed and killed["wall_seconds"] > 0
    assert len(before) - 1 <= killed["runs_made"] <= len(before)  # the kill may fall between a file and its record
    for path in raw_files(out / "raw"):  # every file that exists is complete
        assert len(read_run_file(path)) > 0
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} already complete" in done.stdout
    after = {p.name: p.read_bytes() for p in raw_files(out / "raw")}
    assert len(after) == len(suite_runs("smoke", ["order_sensitivity"]))
    assert all(after[name] == content for name, content in before.items())  # untouched
    assert not list((out / "raw").glob(".*"))  # no temp files left
    load(out)


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--suite", "nightly"], "invalid choice"),
        (["run", "--suite", "smoke", "--experiment", "lenght_extrapolation"], "Did you mean"),
        (["run", "--suite", "smoke", "--filter", "encoding"], "key=value"),
        (["run", "--suite", "smoke", "--filter", "colour=red"], "unknown filter key"),
        (["run", "--suite", "smoke", "--filter", "encoding=nonexistent"], "no run of this selection has encoding="),
        (["run", "--suite", "smoke", "--workers", "0"], "--workers"),
        (["run", "--suite", "smoke", "--compile", "--seed-batch"], "cannot be combined"),
        (["list", "widgets"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path):
    code = main([*argv, "--out", str(tmp_path / "out")] if argv[0] == "run" else argv)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # nothing written


def test_unwritable_output_dir_exits_2(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        code = main(["run", "--suite", "smoke", "--out", str(locked / "results")])
        assert code == 2 and "not writable" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_unwritable_output_path_that_is_a_file_exits_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["run", "--suite", "smoke", "--out", str(blocker / "results")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"cannot be made ({blocker} is a file on its path)" in err
    code = main(["run", "--suite", "smoke", "--out", str(blocker)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"output folder {blocker} is a file, not a folder" in err
    assert blocker.read_text() == "x"


def test_list_commands(capsys):
    for what in ("encodings", "tasks", "suites", "experiments"):
        assert main(["list", what]) == 0
    out = capsys.readouterr().out
    assert "alibi" in out and "reverse" in out and "standard" in out and "length_extrapolation" in out


def test_dry_run_writes_nothing(tmp_path, capsys):
    assert main(["run", "--suite", "smoke", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "runs ->" in capsys.readouterr().out and not (tmp_path / "o").exists()


def test_extra_encoding_joins_every_full_comparison(capsys, tmp_path):
    base = {e: len(suite_runs("smoke", [e])) for e in ("length_extrapolation", "rope_scaling", "order_sensitivity")}
    extra = {e: suite_runs("smoke", [e], ["randomized:sinusoidal"]) for e in base}
    tasks_archs = {e: {(s.task, s.arch) for s in extra[e]} for e in base}
    for experiment in ("length_extrapolation", "order_sensitivity"):
        added = [s for s in extra[experiment] if s.encoding == "randomized:sinusoidal"]
        assert len(added) == len(tasks_archs[experiment]) and len(extra[experiment]) == base[experiment] + len(added)
    assert len(extra["rope_scaling"]) == base["rope_scaling"]  # a RoPE-only grid is not a full comparison
    code = main(["run", "--suite", "smoke", "--experiment", "length_extrapolation", "--encoding",
                 "randomized:sinusoidal", "--dry-run", "--out", str(tmp_path / "out")])
    assert code == 0 and "randomized:sinusoidal" in capsys.readouterr().out
    assert main(["run", "--suite", "smoke", "--encoding", "sinusoidial", "--out", str(tmp_path / "out")]) == 2
    assert "Did you mean" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_throughput_is_a_benchmark_not_an_experiment(capsys):
    assert main(["list", "experiments"]) == 0
    assert "throughput" not in capsys.readouterr().out
    assert main(["run", "--suite", "smoke", "--experiment", "throughput", "--dry-run"]) == 2
    assert "unknown experiment 'throughput'" in capsys.readouterr().err


def test_extra_task_joins_every_per_task_grid(capsys, tmp_path):
    """``--task NAME`` adds one grid per architecture to each per-task family, with that family's protocol."""
    base = {s.run_id: s for s in suite_runs("smoke")}
    extra = [s for s in suite_runs("smoke", extra_tasks=["sort"]) if s.run_id not in base]
    by_experiment = {}
    for spec in extra:
        by_experiment.setdefault(spec.experiment, set()).add((spec.task, spec.arch, spec.encoding))
    assert set(by_experiment) == {"length_extrapolation", "order_sensitivity"}  # not rope_scaling or the LM
    assert by_experiment["length_extrapolation"] == {("sort", "decoder", e) for e in COMPARED_ENCODINGS}
    assert {arch for _, arch, _ in by_experiment["order_sensitivity"]} == {"encoder", "decoder"}
    sibling = next(s for s in base.values() if s.experiment == "length_extrapolation")
    added = next(s for s in extra if s.experiment == "length_extrapolation")
    assert replace(added.train, seed=0) == replace(sibling.train, seed=0)  # smoke: one budget for every task
    assert (added.eval, added.d_model, added.n_layers) == (sibling.eval, sibling.d_model, sibling.n_layers)
    assert main(["run", "--suite", "smoke", "--task", "srot", "--dry-run"]) == 2
    assert "Did you mean 'sort'" in capsys.readouterr().err


def test_cli_conventions(capsys):
    """--version, python -m pebench, list without an argument, plain one-line descriptions, did-you-mean filters."""
    import pebench

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    # the version, the protocol of new runs and, in a git checkout, the commit (+dirty when code differs)
    version = re.compile(rf"pebench {re.escape(pebench.__version__)} \(protocol {PROTOCOL}(, commit [0-9a-f]{{12}}"
                         r"(\+dirty)?)?\)")
    assert exit_info.value.code == 0 and version.fullmatch(capsys.readouterr().out.strip())
    done = subprocess.run([sys.executable, "-m", "pebench", "--version"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and version.fullmatch(done.stdout.strip())
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(what in listed for what in ("encodings", "tasks", "suites", "experiments", "metrics"))
    assert main(["list", "encodings"]) == 0 and main(["list", "experiments"]) == 0
    for line in capsys.readouterr().out.splitlines():
        assert "``" not in line and ":class:" not in line and len(line) <= 160, line
    assert main(["run", "--suite", "smoke", "--filter", "encoding=ropee", "--dry-run"]) == 2
    assert "Did you mean 'rope'?" in capsys.readouterr().err
    assert main(["show"]) == 2 and "give the results folder" in capsys.readouterr().err


def test_git_state_counts_untracked_code_but_not_untracked_results(tmp_path):
    """A new encoding file the runs import makes the checkout dirty; a results folder does not."""
    import subprocess

    from pebench.store import git_state

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "README.md").write_text("x\n")
    git("add", "README.md")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert git_state(tmp_path)["git_dirty"] is False
    (tmp_path / "results" / "raw").mkdir(parents=True)
    (tmp_path / "results" / "raw" / "abc.csv").write_text("a\n1\n")
    assert git_state(tmp_path)["git_dirty"] is False
    (tmp_path / "my_encoding.py").write_text("pass\n")
    state = git_state(tmp_path)
    assert state["git_dirty"] is True and state["git_dirty_files"] == ["my_encoding.py"]
    # a tracked results file that a previous invocation changed (the manifest) is not code either
    (tmp_path / "my_encoding.py").unlink()
    git("add", "results")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    (tmp_path / "results" / "raw" / "abc.csv").write_text("a\n2\n")
    assert git_state(tmp_path)["git_dirty"] is False
    (tmp_path / "README.md").write_text("y\n")
    assert git_state(tmp_path)["git_dirty_files"] == ["README.md"]


def test_the_expected_step_share_is_the_committed_references(tmp_path):
    """The time estimate's share of the step cap is measured on the committed standard reference, not guessed: a
    new reference must bring the constant with it."""
    from pebench.plan.sweep_time import EXPECTED_STEP_SHARE, measured_step_share

    share, runs = measured_step_share(ROOT / "results" / "standard")
    assert runs > 100 and EXPECTED_STEP_SHARE == round(share, 2), (share, runs)
    (tmp_path / "raw").mkdir()
    share, runs = measured_step_share(tmp_path)  # a folder without runs measures nothing
    assert math.isnan(share) and runs == 0


def test_the_time_estimate_comes_from_a_calibration_and_the_protocols_expected_steps():
    """No timing is asserted: the estimate is calibration x expected cost / workers, and a sweep says it first."""
    from pebench.plan.sweep_time import (
        EXPECTED_STEP_SHARE,
        RUN_OVERHEAD,
        announce,
        calibrate,
        estimated_cost,
        expected_cost,
        time_estimate,
    )

    specs = [make_spec("smoke", "t", {"task": "copy", "encoding": "rope", "arch": "decoder", "seed": s, "d_model": 16,
                                      "n_layers": 1, "n_heads": 2, "steps": 40, "fit_every": 10, "stop_at_fit": True})
             for s in range(3)]
    assert expected_cost(specs[0]) == EXPECTED_STEP_SHARE * estimated_cost(specs[0])
    assert estimated_cost(dataclasses.replace(specs[0], n_layers=2)) == 2 * estimated_cost(specs[0])
    seconds = time_estimate(specs, workers=2, seconds_per_cost=1e-9)
    assert seconds == pytest.approx(3 * expected_cost(specs[0]) * 1e-9 * RUN_OVERHEAD / 2)  # exact arithmetic
    assert calibrate(specs[0], "cpu") > 0
    assert announce([], 606, 2, "cpu") == "pebench: nothing to run: all 606 runs are complete (a resume skips them)"
    assert announce(specs, 5, 2, "cpu").startswith("pebench: 3 runs to make, 5 already complete (skipped); about ")


def test_each_experiment_is_estimated_at_its_own_calibrated_rate(monkeypatch, capsys):
    """A sweep of two experiments is calibrated on the first run of each, and both its announced estimate and the
    time left after a run weigh every run's expected cost by its experiment's rate (a language model's runs are
    cheaper per unit of cost than the length tasks': one rate would set the pace of the sweep by whichever runs
    finish first)."""
    from pebench.plan import runner

    def spec(experiment: str, seed: int):
        return make_spec("smoke", experiment, {"task": "copy", "encoding": "rope", "arch": "decoder", "seed": seed,
                                               "d_model": 16, "n_layers": 1, "n_heads": 2, "steps": 40})

    cheap, dear = [spec("cheap", s) for s in (0, 1)], [spec("dear", s) for s in (0, 1)]
    calibrated = []
    monkeypatch.setattr(sweep_time, "calibrate", lambda s, device=None: calibrated.append(s) or
                        {"cheap": 1e-9, "dear": 3e-9}[s.experiment])
    rates: dict[str, float] = {}
    assert sweep_time.announce([*cheap, *dear], 0, 1, "cpu", rates).startswith("pebench: 4 runs to make")
    assert calibrated == [cheap[0], dear[0]] and rates == {"cheap": 1e-9, "dear": 3e-9}
    cost = sweep_time.expected_cost(cheap[0])  # the same model and steps in both: only the rates differ
    # exact arithmetic on the same floats, in the same order
    assert sweep_time.time_estimate([*cheap, *dear], 1, rates) == pytest.approx(
        (2 * cost * 1e-9 + 2 * cost * 3e-9) * sweep_time.RUN_OVERHEAD)
    ticks = [0.0, 10.0]  # the sweep starts at 0 s; its first (cheap) run finishes at 10 s, and the clock stops there
    monkeypatch.setattr(runner.time, "perf_counter", lambda: ticks.pop(0) if len(ticks) > 1 else ticks[0])
    done = runner._progress(4, 0, [*cheap, *dear], rates)
    done(cheap[0], [{"status": "ok"}])
    # 10 s for one cheap run: the other cheap one takes 10 s more, each dear one 30 s
    assert "eta=70s" in capsys.readouterr().out


def test_each_experiment_is_calibrated_on_encodings_spread_over_its_runs(monkeypatch):
    """Encodings differ in cost per step: an experiment's rate is the mean over up to CALIBRATED_ENCODINGS of its
    encodings, the first run of each, spread over them in the order they come."""

    names = ["none", "rope", "alibi", "t5", "xpos", "fire"]
    todo = [make_spec("smoke", "exp", {"task": "copy", "encoding": name, "arch": "decoder", "seed": seed,
                                       "d_model": 16, "n_layers": 1, "n_heads": 2, "steps": 40})
            for name in names for seed in (0, 1)]
    timed = []
    monkeypatch.setattr(sweep_time, "calibrate",
                        lambda s, device=None: timed.append(s) or float(names.index(s.encoding)))
    rates = sweep_time.calibrations(todo)
    assert [(s.encoding, s.seed) for s in timed] == [("none", 0), ("alibi", 0), ("t5", 0), ("fire", 0)]
    assert sweep_time.CALIBRATED_ENCODINGS == 4 and rates == {"exp": (0 + 2 + 3 + 5) / 4}


def test_calibration_times_on_the_runs_threads_and_restores_the_process(monkeypatch):
    """A sweep's runs train on ``--threads`` torch threads (default 1), so its announced time is calibrated on as
    many, whatever the process had; the process's own count comes back after."""
    import torch


    todo = [make_spec("smoke", "exp", {"task": "copy", "encoding": "none", "arch": "decoder", "seed": 0,
                                       "d_model": 16, "n_layers": 1, "n_heads": 2, "steps": 40})]
    seen = []
    monkeypatch.setattr(sweep_time, "calibrate", lambda s, device=None: seen.append(torch.get_num_threads()) or 1.0)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        sweep_time.calibrations(todo)
        sweep_time.announce(todo, 0, 2, "cpu", threads=2)
        assert seen == [1, 2] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_a_sweep_says_which_runs_it_starts(executor, tmp_path):
    """Serially and on a local pool, a sweep tells its progress which runs are being made (issue 39: the bar names
    the running runs, not only the last finished one)."""
    starts, finished = [], []

    def on_done(spec, rows):
        finished.append(spec.run_id)

    on_done.started = lambda unit: starts.append([spec.run_id for spec in unit])
    specs = tiny_specs()[:2]
    run_sweep(specs, tmp_path / "out", executor=executor, workers=2, on_done=on_done)
    assert sorted(run for unit in starts for run in unit) == sorted(finished) == sorted(s.run_id for s in specs)


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, so that a sweep's progress draws its bar into it."""

    def isatty(self) -> bool:
        return True


def as_terminal(monkeypatch) -> Terminal:
    """Make stderr a :class:`Terminal` for this test (inside the test: pytest's capture resets stderr after the
    fixtures are set up)."""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    return terminal


def test_the_bar_names_the_runs_being_made(monkeypatch):
    from pebench.plan import runner

    terminal = as_terminal(monkeypatch)
    specs = [tiny_spec(seed=seed) for seed in range(5)]
    done = runner._progress(5, 0, specs)
    for spec in specs[:4]:
        done.started([spec])
    assert "running copy/rope/decoder/s0, copy/rope/decoder/s1, copy/rope/decoder/s2 +1" in terminal.getvalue()
    done(specs[0], [{"status": "ok"}])
    shown = terminal.getvalue().rsplit("\r", 1)[-1]
    assert "min left; running copy/rope/decoder/s1, copy/rope/decoder/s2, copy/rope/decoder/s3" in shown
    assert "s0" not in shown and "+1" not in shown


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_a_running_run_says_where_it_is(executor, tmp_path):
    """Serially and on a local pool, a run tells the sweep's progress where it is while it trains (issue 39:
    progress within a running run): its first step at once, then at most once per PROGRESS_SECONDS, then
    "evaluating" before its file is written."""
    said: dict[str, list[str]] = {}

    def on_done(spec, rows):
        said[spec.run_id].append("done")

    on_done.progressed = lambda unit, text: [said.setdefault(spec.run_id, []).append(text) for spec in unit]
    specs = tiny_specs()[:2]
    run_sweep(specs, tmp_path / "out", executor=executor, workers=2, on_done=on_done)
    assert sorted(said) == sorted(spec.run_id for spec in specs)
    for spec in specs:
        first, *_, evaluating, done = said[spec.run_id]
        assert first == f"step 1/{spec.train.steps}" and (evaluating, done) == ("evaluating", "done")


def test_saying_where_a_run_is_changes_no_row():
    """The progress hook only watches: a run's rows are the same with and without it (the same config and seed
    in one process, so bit for bit)."""

    spec = tiny_spec()
    said: list[str] = []
    watched = execute.execute(spec, "cpu", progress=said.append, origin=origin_here())
    plain = execute.execute(spec, "cpu", origin=origin_here())
    pd.testing.assert_frame_equal(pd.DataFrame(watched).drop(columns=TIMING_COLUMNS, errors="ignore"),
                                  pd.DataFrame(plain).drop(columns=TIMING_COLUMNS, errors="ignore"))
    assert said[0] == f"step 1/{spec.train.steps}" and said[-1] == "evaluating"


def test_the_throttle_says_the_first_step_then_once_per_interval(monkeypatch):

    clock = iter([0.0, 0.4, 0.9, 1.0, 1.5, 2.2])
    monkeypatch.setattr(execute.time, "monotonic", lambda: next(clock))
    said: list[str] = []
    on_step = execute._throttled(said.append, seconds=1.0)
    for done in range(1, 7):
        on_step(done, 50)
    assert said == ["step 1/50", "step 4/50", "step 6/50"]


def test_the_bar_shows_where_each_running_run_is(monkeypatch):
    from pebench.plan import runner

    terminal = as_terminal(monkeypatch)
    specs = [tiny_spec(seed=seed) for seed in range(2)]
    done = runner._progress(2, 0, specs)
    done.started([specs[0]])
    done.started([specs[1]])
    done.progressed([specs[0]], "step 120/400")
    assert "running copy/rope/decoder/s0 step 120/400, copy/rope/decoder/s1" in terminal.getvalue()
    done.progressed([specs[1]], "evaluating")
    done(specs[0], [{"status": "ok"}])
    shown = terminal.getvalue().rsplit("\r", 1)[-1]
    assert "running copy/rope/decoder/s1 evaluating" in shown and "s0" not in shown


def test_a_seed_batched_unit_says_where_it_is(tmp_path):
    """Runs trained as one seed-batched model (the default on CUDA) report their steps together, through
    train_batched's on_step, then "evaluating"."""
    said: list[tuple[tuple[str, ...], str]] = []

    def on_done(spec, rows):
        pass

    on_done.progressed = lambda unit, text: said.append((tuple(spec.run_id for spec in unit), text))
    specs = [tiny_spec(seed=s, length_seed=0) for s in (0, 1, 2)]
    assert run_sweep(specs, tmp_path / "out", seed_batch=True, on_done=on_done).seed_batched == 3
    unit = tuple(spec.run_id for spec in specs)
    assert said[0] == (unit, f"step 1/{specs[0].train.steps}") and said[-1] == (unit, "evaluating")
    assert {run for runs, _ in said for run in runs} == set(unit)


def test_what_pebench_3_0_documented_in_the_runner_stays_importable_from_it():
    """execute and model_for moved to pebench.plan.execute; code written against pebench.plan.runner keeps working."""
    from pebench.plan import runner

    assert runner.execute is execute.execute and runner.model_for is execute.model_for
