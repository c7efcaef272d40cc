"""pebench.store: the one reader and writer of a results folder, below the analysis and the plan.

Reading and verifying run files, scans, loads and their cache are tested in test_results, test_reliability
and test_untrusted_folders; this file tests what the store adds as a module of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pebench import store
from pebench.plan.experiment import load_experiments, make_spec, report_declarations, suite_runs
from pebench.plan.runner import run_sweep

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("module, never", [
    ("pebench.store", ("pebench.analysis.results", "pebench.plan.experiment", "pebench.plan.runner", "pebench.report",
                       "scipy")),
    ("pebench.plan.runner", ("pebench.analysis.results", "pebench.analysis.leaderboard", "pebench.report",
                             "pebench.metrics", "scipy")),
])
def test_writing_and_reading_a_folder_needs_no_analysis(module, never):
    """The runner writes its files through the store, which imports neither the statistics nor the plan."""
    code = f"import sys, {module}; print(sorted(m for m in {never!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]", f"importing {module} loads {loaded.stdout.strip()}"


def test_a_second_holder_of_a_folder_is_refused_with_the_first_named(tmp_path):
    with store.lock_folder(tmp_path):
        with pytest.raises(store.FolderLockError, match=r"in use by another pebench run \(pid \d+ on "):
            with store.lock_folder(tmp_path):
                pass
    with store.lock_folder(tmp_path):  # released: the next sweep gets it
        assert (tmp_path / ".lock").read_text().startswith("pid ")


def test_finishing_a_manifest_adds_how_the_invocation_ended_in_order(tmp_path):
    with store.lock_folder(tmp_path):
        entry = store.write_manifest(tmp_path, "smoke", n_runs=2, device="cpu", executor="serial", workers=1)
        # as the sweep goes: its wall time and runs so far; then again at its end, with how it ended
        going = store.finish_manifest(tmp_path, entry, {"wall_seconds": 0.5, "runs_made": 1})
        assert store.read_manifest(tmp_path)["latest"] == going and "outcome" not in going
        ended = store.finish_manifest(tmp_path, going, {"wall_seconds": 1.5, "runs_made": 2, "outcome": "complete"})
    manifest = store.read_manifest(tmp_path)
    latest = manifest["latest"]
    assert manifest["invocations"] == [latest] == [ended] and latest["git_sha"] == entry["git_sha"]
    assert list(latest)[-3:] == ["wall_seconds", "runs_made", "outcome"] and latest["outcome"] == "complete"
    assert (latest["wall_seconds"], latest["runs_made"]) == (1.5, 2)


def test_a_manifest_changed_during_the_sweep_is_left_as_it_is(tmp_path, caplog):
    entry = store.write_manifest(tmp_path, "smoke", n_runs=1, device="cpu", executor="serial", workers=1)
    store.write_manifest(tmp_path, "smoke", n_runs=2, device="cpu", executor="serial", workers=1)  # another one
    before = (tmp_path / "manifest.json").read_text()
    assert store.finish_manifest(tmp_path, entry, {"outcome": "complete"}) is None
    assert (tmp_path / "manifest.json").read_text() == before
    assert "changed during the sweep" in caplog.text


def test_a_run_file_is_copied_as_it_is_under_its_run_id(tmp_path):
    source = store.raw_files(ROOT / "results" / "standard" / "raw")[0]
    run_id = store.run_file_id(source)
    copy = store.copy_run_file(source, tmp_path, run_id)
    assert copy == tmp_path / source.name and copy.read_bytes() == source.read_bytes()
    with pytest.raises(store.ResultsError, match="not a plain file name"):
        store.copy_run_file(source, tmp_path, "../escaped")
    assert sorted(path.name for path in tmp_path.iterdir()) == [source.name]


def test_a_combined_folder_gets_its_manifest_through_the_store(tmp_path):
    from test_untrusted_folders import small_results

    from pebench.store.combine import combine

    first, second = small_results(tmp_path / "a", seeds=(0,)), small_results(tmp_path / "b", seeds=(1,))
    summary = combine([first, second], tmp_path / "both")
    manifest = store.read_manifest(tmp_path / "both")
    assert summary.total == len(store.run_files(tmp_path / "both"))
    assert [source["folder"] for source in manifest["combined"]["sources"]] == [str(first), str(second)]
    assert json.loads((tmp_path / "both" / "manifest.json").read_text()) == manifest


def test_a_sweep_records_its_experiments_report_declarations_in_the_manifest(tmp_path):
    load_experiments()
    experiment = suite_runs("smoke")[0].experiment  # a registered experiment, with a report declaration
    spec = make_spec("smoke", experiment, {
        "task": "copy", "encoding": "rope", "arch": "decoder", "seed": 0, "d_model": 16, "n_layers": 1,
        "n_heads": 2, "steps": 3, "batch_size": 4, "warmup_steps": 1, "train_max_len": 4,
        "eval_lengths": [2, 6], "eval_n_examples": 8,
    })
    run_sweep([spec], tmp_path, on_done=lambda s, r: None)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["report_declarations"] == json.loads(json.dumps(report_declarations([experiment])))
    assert manifest["report_declarations"][experiment]  # not an empty record
