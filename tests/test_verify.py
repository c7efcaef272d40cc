"""``pebench verify`` (issue 65, item 3): a folder's run files verified, a seeded sample of its runs rerun and
compared, exactly on this machine and statistically elsewhere; tampered files and runs caught, bad input refused
in one line."""

from __future__ import annotations

import csv
import gzip
import io
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from pebench import encodings, registry
from pebench.analysis.compare import MARGINS
from pebench.cli import main
from pebench.plan import verify as plan_verify
from pebench.store import rows_checksum
from pebench.store.schema import CHECKSUM_COLUMN
from pebench.store.verification import (
    STATISTICAL_MARGIN,
    FolderCheck,
    check_folder,
    choose_sample,
    statistical_differences,
)

#: two smoke runs (NoPE and RoPE on copy, decoders): a few seconds each on 2 CPU cores
SMOKE = ["--suite", "smoke", "--experiment", "length_extrapolation", "--filter", "task=copy",
         "--filter", "encoding=none,rope"]


@pytest.fixture(scope="module")
def smoke_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("verify") / "smoke"
    assert main(["run", *SMOKE, "--out", str(folder)]) == 0
    return folder


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target


def _edit_metric(path: Path, fix_checksum: bool) -> None:
    """Set the token accuracy of every row of a run file to 1 (a run that never learnt copy to perfection), and,
    with ``fix_checksum``, recompute its checksum so that the file verifies on its own."""
    records = list(csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode())))
    header = records[0]
    for record in records[1:]:
        record[header.index("token_acc")] = "1.0"
    assert header[-1] == CHECKSUM_COLUMN
    if fix_checksum:
        checksum = rows_checksum([record[:-1] for record in records])
        for record in records[1:]:
            record[-1] = checksum
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(records)
    path.write_bytes(gzip.compress(out.getvalue().encode(), mtime=0))


def test_a_folder_made_here_reproduces_exactly(smoke_folder, capsys):
    assert main(["verify", str(smoke_folder), "--sample", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum("copy" in line and ": exact, reproduced" in line for line in out) == 2
    assert out[-1] == "verified: 2 of 2 sampled runs reproduce (compared exactly)"


def test_an_edited_file_is_tampered_before_any_rerun(smoke_folder, tmp_path, capsys):
    folder = _copy(smoke_folder, tmp_path)
    edited = sorted((folder / "raw").iterdir())[0]
    _edit_metric(edited, fix_checksum=False)
    assert main(["verify", str(folder), "--sample", "1"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{edited.name}: tampered or damaged: edited or damaged (its rows_sha256")
    assert out[-1].startswith("NOT verified: 1 of 1 sampled runs reproduce") and "1 file(s) tampered" in out[-1]


def test_an_edited_file_with_its_checksum_fixed_is_caught_by_the_rerun(smoke_folder, tmp_path, capsys):
    folder = _copy(smoke_folder, tmp_path)
    for path in (folder / "raw").iterdir():
        _edit_metric(path, fix_checksum=True)
    assert main(["verify", str(folder), "--sample", "2"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert not any("tampered" in line for line in out)  # every file verifies on its own
    assert sum(": exact, NOT reproduced (largest difference: token_acc 1.0 in the file" in line for line in out) == 2
    assert out[-1] == "NOT verified: 0 of 2 sampled runs reproduce (compared exactly)"


def test_another_machine_compares_statistically_and_says_why(smoke_folder, monkeypatch, capsys):
    monkeypatch.setattr(plan_verify, "cpu_model", lambda: "Another CPU")
    assert main(["verify", str(smoke_folder), "--sample", "1", "--seed", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ": statistical, reproduced (largest difference 0.000 (margin 0.1)" in out[1]
    assert out[-1].startswith("verified: 1 of 1 sampled runs reproduce (compared statistically, within 0.1 token "
                              "accuracy: made on ")
    assert "rerun on Another CPU" in out[-1]


def test_an_edited_file_is_caught_statistically_too(smoke_folder, tmp_path, monkeypatch, capsys):
    folder = _copy(smoke_folder, tmp_path)
    for path in (folder / "raw").iterdir():
        _edit_metric(path, fix_checksum=True)  # smoke runs of 30 steps are far from 1.0: beyond any margin
    monkeypatch.setattr(plan_verify, "cpu_model", lambda: "Another CPU")
    assert main(["verify", str(folder), "--sample", "1"]) == 1
    assert ": statistical, NOT reproduced (largest difference " in capsys.readouterr().out


def test_bad_input_is_one_line_and_status_2(smoke_folder, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for argv, message in (([str(tmp_path / "missing")], "no such results folder"),
                          ([str(tmp_path / "empty")], "no run files"),
                          ([str(smoke_folder), "--sample", "3"], "--sample 3 is more than the 2 completed runs"),
                          ([str(smoke_folder), "--sample", "0"], "--sample must be >= 1")):
        assert main(["verify", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.splitlines()) == 1 and message in captured.err, argv


def test_the_statistical_margin_is_compares_per_seed_margin():
    """One run rerun on another machine is one seed of a cell rerun there: ``pebench compare``'s per-seed margin."""
    assert STATISTICAL_MARGIN == MARGINS["acc"][1]


def test_statistical_differences_are_means_in_and_out_of_distribution():
    rows = pd.DataFrame({"eval_len": [4, 8, 16, 32], "train_max_len": 8, "condition": "original",
                         "variant": "trained", "token_acc": [0.9, 0.7, 0.3, 0.1]})
    rerun = rows.assign(token_acc=[0.8, 0.8, 0.1, 0.1])
    assert [(round(size, 9), what) for size, what in statistical_differences(rows, rerun)] == [
        (0.1, "out-of-distribution token accuracy 0.200 in the file, 0.100 rerun (original, trained)"),
        (0.0, "in-distribution token accuracy 0.800 in the file, 0.800 rerun (original, trained)")]


def test_the_sample_is_seeded_and_spread_over_tasks_encodings_and_archs():
    runs = {f"{n:016x}": SimpleNamespace(first={"task": task, "encoding": encoding, "arch": "decoder",
                                                "experiment": "e"}, frame=pd.DataFrame({"status": ["ok"]}))
            for n, (task, encoding) in enumerate((t, e) for t in ("copy", "reverse") for e in ("none", "rope",
                                                                                             "alibi"))}
    folder = FolderCheck(runs, [], set())
    for seed in range(5):
        chosen = choose_sample(folder, 3, seed)
        assert chosen == choose_sample(folder, 3, seed)
        assert {run.first["encoding"] for run in chosen} == {"none", "rope", "alibi"}
        assert {run.first["task"] for run in chosen} == {"copy", "reverse"}
    assert len({tuple(map(id, choose_sample(folder, 2, seed))) for seed in range(10)}) > 1


def test_a_run_file_verifies_as_read_run_file_does(smoke_folder):
    checked = check_folder(smoke_folder)
    assert checked.bad == [] and len(checked.completed) == 2 and checked.torch_versions


PLUGIN = "verify_test_sinusoidal"


def test_a_plugin_encodings_runs_verify_with_the_plugin_and_need_it(tmp_path, monkeypatch, capsys):
    source = (Path(__file__).resolve().parent.parent / "docs" / "examples" / "scaled_sinusoidal.py").read_text()
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(source.replace('"scaled_sinusoidal"', f'"{PLUGIN}"'))
    for name in ("_LOADED", "_RECORDS"):  # this test's plugin is loaded for this test only
        monkeypatch.setattr(registry, name, type(getattr(registry, name))())
    encodings.ENCODINGS.names()
    for name in ("_entries", "_meta"):
        monkeypatch.setattr(encodings.ENCODINGS, name, dict(getattr(encodings.ENCODINGS, name)))
    folder = tmp_path / "mine"
    assert main(["--plugin", str(plugin), "run", "--suite", "smoke", "--experiment", "length_extrapolation",
                 "--encoding", PLUGIN, "--filter", "task=copy", "--filter", f"encoding={PLUGIN}",
                 "--out", str(folder)]) == 0
    assert main(["--plugin", str(plugin), "verify", str(folder), "--sample", "1"]) == 0
    assert f"{PLUGIN} decoder seed=0: exact, reproduced" in capsys.readouterr().out
    del encodings.ENCODINGS._entries[PLUGIN]  # as in a process that was not given the plugin
    assert main(["verify", str(folder), "--sample", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"unknown encoding {PLUGIN!r}" in err
    assert "pass the file that registers it, pebench --plugin FILE verify FOLDER" in err


def test_a_run_rebuilt_as_another_run_is_refused(smoke_folder, monkeypatch, capsys):
    """A configuration this pebench resolves otherwise (here: another position capacity of the suite) would rerun
    another run: refused in one line naming what differs."""
    from pebench import protocol

    monkeypatch.setitem(protocol.POSITION_CAPACITY, "smoke", 2048)
    assert main(["verify", str(smoke_folder), "--sample", "1"]) == 2
    err = capsys.readouterr().err
    assert "its configuration rebuilds here as run" in err and "position_capacity 1024 in the file, 2048 here" in err
