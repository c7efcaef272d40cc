"""The fit pilots of ``experiments/`` (task_pilots.py, t5_bucket_pilot.py, cap_pilot.py) and the plateau-stop replay
(stop_rule_replay.py): which runs they train, how their rows are written, how a stop rule is judged.
Training itself is the runner's, tested elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import cap_pilot  # noqa: E402
import stop_rule_replay  # noqa: E402
import t5_bucket_pilot  # noqa: E402
import task_pilots  # noqa: E402


def test_the_t5_bucket_pilot_repeats_the_reference_runs_and_changes_only_the_bucket_count():
    specs = t5_bucket_pilot.specs()
    published = [spec for spec in specs if spec.options() == {}]
    exact = [spec for spec in specs if spec.options() == {"num_buckets": t5_bucket_pilot.EXACT_BUCKETS}]
    assert len(published) == len(exact) == len(specs) // 2 == 6
    assert {(s.task, s.arch, s.encoding) for s in published} == {(t, "encoder", "t5") for t in t5_bucket_pilot.TASKS}
    for a, b in zip(published, exact, strict=True):
        assert a.run_id != b.run_id and (a.task, a.seed, a.train, a.eval) == (b.task, b.seed, b.train, b.eval)
    # every distance of the longest training sequence has its own bucket on each side
    import torch

    from pebench.encodings.t5 import relative_position_bucket

    longest = max(spec.train_context() for spec in specs)
    distances = torch.arange(-longest + 1, longest)
    buckets = relative_position_bucket(distances, causal=False, num_buckets=t5_bucket_pilot.EXACT_BUCKETS)
    assert len(set(buckets.tolist())) == len(distances)


def test_the_cap_pilot_retrains_the_capable_misses_of_the_reference_with_only_the_cap_changed():
    import dataclasses

    from pebench.experiment import suite_runs

    missed = cap_pilot.misses()
    assert len(missed) > 0 and set(missed["encoding"]) <= set(cap_pilot.CAPABLE)
    assert set(missed["task"]) <= set(cap_pilot.TASKS) and not missed["fitted"].any()
    by_cell = {(s.arch, s.task, s.encoding, s.seed): s for s in suite_runs("standard", ["length_extrapolation"])}
    specs = cap_pilot.specs()
    assert len(specs) == len(missed)
    for spec in specs:
        original = dataclasses.replace(spec, train=dataclasses.replace(spec.train,
                                                                       steps=spec.train.steps // cap_pilot.FACTOR))
        assert original.run_id in set(missed["run_id"])  # the frozen reference's run, rebuilt from today's suite
        today = by_cell[(spec.arch, spec.task, spec.encoding, spec.seed)]
        capped_as_then = dataclasses.replace(today.train, steps=original.train.steps)
        assert dataclasses.replace(today, train=capped_as_then) == original
        assert spec.train.steps == cap_pilot.FACTOR * original.train.steps and spec.run_id != original.run_id
    frozen = cap_pilot.reference_runs()
    assert set(frozen["reference_git_sha"]) == {"277b29c8c9ac2985cf5c8b990ae804aad522249e"}


def test_run_pilots_writes_every_row_with_the_git_state(tmp_path):
    out = tmp_path / "pilots" / "rows.csv"
    task_pilots.run_pilots(dict, [[("task", "copy"), ("fitted", True)], [("task", "reverse"), ("fitted", False)]],
                           1, out)
    frame = pd.read_csv(out)
    assert frame["task"].tolist() == ["copy", "reverse"] and frame["fitted"].tolist() == [True, False]
    assert {"git_sha", "git_dirty"} <= set(frame.columns)


def _curves(*runs):
    """Runs of a replay frame: (fitted, steps_to_fit, curve) each, cap 1000, checks every 100 steps,
    trained under patience 1000 and minimum drop 0.1 (so each curve ends at its fit or the cap)."""
    import json

    rows = []
    for index, (fitted, steps_to_fit, curve) in enumerate(runs):
        rows.append({"run_id": f"r{index}", "arch": "decoder", "task": "copy", "encoding": "rope", "seed": index,
                     "steps": 1000, "fit_every": 100, "fit_threshold": 0.99, "fitted": fitted,
                     "steps_to_fit": steps_to_fit, "steps_done": curve[-1][0], "train_seconds": curve[-1][0] / 100,
                     "stop_reason": "fit" if fitted else "cap", "fit_curve": json.dumps(curve)})
    frame = pd.DataFrame(rows)
    frame["curve"] = [[tuple(point) for point in json.loads(c)] for c in frame["fit_curve"]]
    return frame


def test_the_stop_replay_counts_a_late_fit_stopped_by_a_strict_rule_as_a_false_stop():
    stuck = [(100 * k, 0.5) for k in range(1, 11)]  # never moves: any plateau stop ends it early
    late = [(100, 0.5), (200, 0.6), (300, 0.6), (400, 0.6), (500, 0.62), (600, 0.995)]  # a jump after a plateau
    runs = _curves((False, None, stuck), (True, 600, late))
    strict, patient = stop_rule_replay.replay(runs, 200, 0.1), stop_rule_replay.replay(runs, 500, 0.1)
    assert strict["false_stops"] == 1 and strict["false_stop_runs"] == "decoder/copy/rope/1"
    assert patient["false_stops"] == 0 and patient["runs_stopped_sooner"] == 1
    # the stuck run stops at 100 + 500 steps instead of 1000; the late one trains as recorded
    assert patient["train_seconds"] == pytest.approx(6 + 6)
    assert stop_rule_replay.replay(runs, 1000, 0.1)["runs_stopped_sooner"] == 0


def test_with_no_admissible_rule_the_current_one_is_kept():
    table = pd.DataFrame([
        {"fit_patience": 500, "fit_min_drop": 0.1, "false_stops": 2, "margin_false_stops": 5, "train_seconds": 5.0,
         "current": False},
        {"fit_patience": 1000, "fit_min_drop": 0.1, "false_stops": 0, "margin_false_stops": 3, "train_seconds": 9.0,
         "current": True},
    ])
    chosen = stop_rule_replay.choose(table)
    assert not chosen["admissible"].any() and list(chosen["chosen"]) == [False, True]


def test_the_chosen_rule_is_the_cheapest_admissible_one_with_its_margin():
    table = pd.DataFrame([
        {"fit_patience": 300, "fit_min_drop": 0.1, "false_stops": 0, "margin_false_stops": 1, "train_seconds": 5.0},
        {"fit_patience": 500, "fit_min_drop": 0.1, "false_stops": 0, "margin_false_stops": 0, "train_seconds": 7.0},
        {"fit_patience": 500, "fit_min_drop": 0.3, "false_stops": 0, "margin_false_stops": 0, "train_seconds": 7.0},
        {"fit_patience": 400, "fit_min_drop": 0.5, "false_stops": 2, "margin_false_stops": 3, "train_seconds": 3.0},
        {"fit_patience": 1000, "fit_min_drop": 0.1, "false_stops": 0, "margin_false_stops": 0, "train_seconds": 9.0},
    ])
    chosen = stop_rule_replay.choose(table)
    assert list(chosen["admissible"]) == [False, True, True, False, True]
    assert chosen.loc[chosen["chosen"], ["fit_patience", "fit_min_drop"]].values.tolist() == [[500, 0.1]]


def test_freeze_reference_keeps_each_length_run_once_with_the_commit_that_made_it(tmp_path):
    import json

    reference = tmp_path / "standard"
    (reference / "raw").mkdir(parents=True)
    common = dict(arch="decoder", task="copy", encoding="rope", steps=2500, steps_to_fit=None, fit_token_acc=0.9,
                  stop_reason="cap", steps_done=2500, train_seconds=40.0, fitted=False, suite="standard",
                  task_version=1, encoding_options="{}", d_model=64, n_layers=2, n_heads=4, train_max_len=8,
                  lr=3e-3, batch_size=64, status="ok", pebench_version="0.1.0", condition="original",
                  variant="", token_acc=0.5, seq_acc=0.1, loss=1.0, n=64, chance_token_acc=0.1, params=1000)
    # run ids as pebench writes them (16 lowercase hex digits): a folder's files are checked before they are read
    for run_id, experiment, seed in (("a" * 16, "length_extrapolation", 0), ("b" * 16, "length_extrapolation", 1),
                                     ("c" * 16, "lm_extrapolation", 0)):
        rows = [dict(common, run_id=run_id, experiment=experiment, seed=seed, eval_len=n) for n in (4, 8)]
        pd.DataFrame(rows).to_csv(reference / "raw" / f"{run_id}.csv", index=False)
    (reference / "manifest.json").write_text(json.dumps({"latest": {"git_sha": "e" * 40, "git_dirty": False}}))
    out = tmp_path / "reference_runs.csv"
    task_pilots.freeze_reference(reference, out)
    frozen = task_pilots.reference_runs(out)
    assert frozen["run_id"].tolist() == ["a" * 16, "b" * 16]
    assert list(frozen.columns[:len(task_pilots.REFERENCE_COLUMNS)]) == list(task_pilots.REFERENCE_COLUMNS)
    assert set(frozen["reference_git_sha"]) == {"e" * 40} and frozen["fitted"].dtype == bool
    with pytest.raises(SystemExit, match="freeze-reference"):
        task_pilots.reference_runs(tmp_path / "missing.csv")


def test_pilot_main_runs_the_specs_into_the_out_given_on_the_command_line(tmp_path):
    out = tmp_path / "rows.csv"
    task_pilots.pilot_main("a pilot", dict, lambda: [[("task", "copy")]], tmp_path / "default.csv",
                           ["--workers", "1", "--out", str(out)])
    assert pd.read_csv(out)["task"].tolist() == ["copy"] and not (tmp_path / "default.csv").exists()
