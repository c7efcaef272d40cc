"""The fit pilots of ``pilots/`` (task_pilots.py, t5_bucket_pilot.py, t5_duplicate_pilot.py, cap_pilot.py) and the
plateau-stop replay (stop_rule_replay.py): which runs they train, how their rows are written, how a stop rule is
judged, and how each reads its rows (``read``: the tables and sentences the pilots page shows).
Training itself is the runner's, tested elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from pebench.config import run_id_of
from pebench.store.schema import RUN_ID_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pilots"))

import cap_pilot  # noqa: E402
import probe_pilot  # noqa: E402
import stop_rule_replay  # noqa: E402
import t5_bucket_pilot  # noqa: E402
import t5_duplicate_pilot  # noqa: E402
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

    from pebench.plan.experiment import suite_runs

    missed = cap_pilot.misses()
    assert len(missed) > 0 and set(missed["encoding"]) <= set(cap_pilot.CAPABLE)
    assert set(missed["task"]) <= set(cap_pilot.TASKS) and not missed["fitted"].any()
    from pebench.protocol import standard_v2

    with standard_v2():  # the reference the pilot repeats was made under protocol v2
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
    # run ids as pebench makes them (the hash of the configuration): a folder's files are checked before they are read
    ids = []
    for experiment, seed in (("length_extrapolation", 0), ("length_extrapolation", 1), ("lm_extrapolation", 0)):
        configuration = dict(common, experiment=experiment, seed=seed)
        run_id = run_id_of({key: value for key, value in configuration.items() if key in RUN_ID_COLUMNS})
        rows = [dict(configuration, run_id=run_id, eval_len=n) for n in (4, 8)]
        pd.DataFrame(rows).to_csv(reference / "raw" / f"{run_id}.csv", index=False)
        ids.append(run_id)
    (reference / "manifest.json").write_text(json.dumps({"latest": {"git_sha": "e" * 40, "git_dirty": False}}))
    out = tmp_path / "reference_runs.csv"
    task_pilots.freeze_reference(reference, out)
    frozen = task_pilots.reference_runs(out)
    assert sorted(frozen["run_id"]) == sorted(ids[:2])  # the length-extrapolation runs, each once
    assert list(frozen.columns[:len(task_pilots.REFERENCE_COLUMNS)]) == list(task_pilots.REFERENCE_COLUMNS)
    assert set(frozen["reference_git_sha"]) == {"e" * 40} and frozen["fitted"].dtype == bool
    with pytest.raises(SystemExit, match="freeze-reference"):
        task_pilots.reference_runs(tmp_path / "missing.csv")


def test_pilot_main_runs_the_specs_into_the_out_given_on_the_command_line(tmp_path):
    out = tmp_path / "rows.csv"
    task_pilots.pilot_main("a pilot", dict, lambda: [[("task", "copy")]], tmp_path / "default.csv",
                           ["--workers", "1", "--out", str(out)])
    assert pd.read_csv(out)["task"].tolist() == ["copy"] and not (tmp_path / "default.csv").exists()


# --------------------------------------------------------------------------- the pilots' readings (``read``)

def page(blocks: list[dict]) -> str:
    """A reading's blocks as Markdown-like text (tables as ``| a | b |`` rows), as the pilots page shows them."""
    lines = []
    for block in blocks:
        rows = [block["header"], *block["rows"]] if block["kind"] == "table" else []
        lines += ["| " + " | ".join(row) + " |" for row in rows] or [block.get("text", "")]
    return "\n".join(lines)


def test_the_t5_bucket_pilot_reads_its_rows_beside_the_reference(tmp_path):
    path = tmp_path / "t5_buckets.csv"
    with pytest.raises(SystemExit, match="t5_buckets.csv is missing"):
        t5_bucket_pilot.reading(path)
    rows = [dict(task="duplicate", num_buckets=buckets, seed=seed, fitted=fitted, fit_token_acc=acc,
                 stop_reason="fit" if fitted else "plateau", steps_done=1100, floor_token_acc=0.305,
                 train_max_len=8, step_cap=2500, git_sha="b" * 40, git_dirty=False)
            for buckets, fitted, acc in ((32, False, 0.25), (128, True, 0.995)) for seed in range(2)]
    pd.DataFrame(rows).to_csv(path, index=False)
    text = page(t5_bucket_pilot.reading(path, tmp_path / "no_reference.csv"))
    assert "| duplicate | 32 (published) | 0/2 | 0.250 (plateau @1100); 0.250 (plateau @1100) | 0.30 |" in text
    assert "| duplicate | 128 (exact) | 2/2 |" in text and "commit `bbbbbbb` (clean)" in text
    assert "Made by `pilots/t5_bucket_pilot.py`" in text and "in the reference" not in text
    assert ("duplicate: 2/2 seeds fitted with exact buckets, 0/2 with T5's (mean held-out token accuracy 0.99 "
            "against 0.25)") in text
    # the published-bucket pilots checked against the reference runs of their ids
    pd.read_csv(path).assign(run_id=[f"r{i}" for i in range(4)]).to_csv(path, index=False)
    frozen = tmp_path / "reference_runs.csv"
    pd.DataFrame([dict(run_id=run_id, fitted=False, fit_token_acc=acc, steps_done=1100, reference_git_sha="d" * 40)
                  for run_id, acc in (("r0", 0.25), ("r1", 0.26))]).to_csv(frozen, index=False)
    text = page(t5_bucket_pilot.reading(path, frozen))
    assert "Of the 2 pilots with T5's buckets, 2 have a run in the reference made at `ddddddd`" in text
    assert "1 of those repeat its fit" in text


def test_the_cap_pilot_reads_each_miss_beside_its_reference_run(tmp_path):
    path, reference = tmp_path / "cap_pilot.csv", tmp_path / "reference_runs.csv"
    with pytest.raises(SystemExit, match="cap_pilot.csv is missing"):
        cap_pilot.reading(path, reference)
    ref_rows = [  # two capable misses, and a NoPE run stopped at the cap (it counts towards the cost bound)
        dict(run_id="r0", experiment="length_extrapolation", task="copy", fitted=False, fit_token_acc=0.96,
             stop_reason="cap", steps_done=2500, steps=2500, train_seconds=40.0),
        dict(run_id="r1", experiment="length_extrapolation", task="duplicate", fitted=False, fit_token_acc=0.3,
             stop_reason="plateau", steps_done=1100, steps=2500, train_seconds=20.0),
        dict(run_id="r2", experiment="length_extrapolation", task="copy", fitted=False, fit_token_acc=0.5,
             stop_reason="cap", steps_done=2500, steps=2500, train_seconds=80.0),
    ]
    pd.DataFrame(ref_rows).assign(reference_git_sha="d" * 40).to_csv(reference, index=False)
    pilots = [dict(arch="decoder", task="copy", encoding="learned", seed=1, run_id="p0", reference_run_id="r0",
                   step_cap=5000, fitted=True, steps_to_fit=3100, fit_token_acc=0.991, stop_reason="fit",
                   steps_done=3100, git_sha="c" * 40, git_dirty=False),
              dict(arch="encoder", task="duplicate", encoding="t5", seed=0, run_id="p1", reference_run_id="r1",
                   step_cap=5000, fitted=False, steps_to_fit=None, fit_token_acc=0.29, stop_reason="plateau",
                   steps_done=1100, git_sha="c" * 40, git_dirty=False)]
    pd.DataFrame(pilots).to_csv(path, index=False)
    text = page(cap_pilot.reading(path, reference))
    assert "| decoder | copy | Learned | 1 | 0.960 (cap @2500) | 0.991 (fit @3100) |" in text
    assert "| encoder | duplicate | T5 bias | 0 | 0.300 (plateau @1100) | 0.290 (plateau @1100) |" in text
    assert "commit `ccccccc` (clean), 2 pilots, against the reference made at `ddddddd`" in text
    # the suite's caps (pebench.protocol.TASK_STEPS) are the pilot's: the reading says the suite adopted them
    assert "The standard suite has since adopted the doubled cap on copy, duplicate in both architectures" in text
    pd.DataFrame(pilots).assign(step_cap=[4000, 4000]).to_csv(path, index=False)
    assert "has since adopted" not in page(cap_pilot.reading(path, reference))
    assert ("1 of the 2 misses are misses of steps (fitted with the longer cap: decoder copy Learned seed 1) "
            "and 1 are not explained by steps (encoder duplicate T5 bias seed 0)") in text
    assert "The doubled cap on copy, duplicate would add at most 120 worker-seconds" in text
    assert "fitted within the suite's own cap" not in text  # the fit came after step 2500
    assert "1 of those stopped at the plateau stop before even the suite's own cap" in text
    pd.DataFrame(pilots).assign(steps_to_fit=[2300, None], steps_done=[2300, 1100], step_cap=[5000, 5000]).to_csv(
        path, index=False)
    early = page(cap_pilot.reading(path, reference))
    assert ("Of the 1 that fitted, 1 did so within the suite's own cap (decoder copy Learned seed 1): there the "
            "slower decay of the learning rate over the longer cap, not the extra steps, made the fit.") in early
    assert "(2 runs of these tasks, of any encoding, stopped at the cap in the reference" in text


def test_the_t5_duplicate_pilot_applies_its_declared_reading_and_says_which_seeds_left_the_floor(tmp_path):
    path = tmp_path / "t5_duplicate.csv"
    with pytest.raises(SystemExit, match="t5_duplicate.csv is missing"):
        t5_duplicate_pilot.reading(path)
    common = dict(task="duplicate", arch="encoder", encoding="t5", train_max_len=8, floor_token_acc=0.3,
                  git_sha="c" * 40, git_dirty=False, warmup_steps=100, lr=3e-3)
    rows = [dict(common, variant="lr_1e-3", lr=1e-3, seed=s, fitted=False, fit_token_acc=0.28, stop_reason="plateau",
                 steps_done=1100, step_cap=2500, fit_patience=1000) for s in range(3)]
    rows += [dict(common, variant="no_plateau", seed=s, fitted=False, fit_token_acc=acc, stop_reason="cap",
                  steps_done=5000, step_cap=5000, fit_patience=0) for s, acc in enumerate((0.9, 0.7, 0.25))]
    pd.DataFrame(rows).to_csv(path, index=False)
    text = page(t5_duplicate_pilot.reading(path))
    assert "| `lr_1e-3` | 0.001 | 100 | 1000 | 2500 | 0/3 | 0.280 (plateau @1100);" in text
    assert "| `no_plateau` | 0.003 | 100 | off | 5000 | 0/3 | 0.900 (cap @5000); 0.700 (cap @5000); 0.250" in text
    assert "learning rate, warmup and stopping do not explain the miss: no variant fits more than 1 seed" in text
    assert "`no_plateau` 2 of 3 (held-out token accuracy 0.70-0.90 at step 5000)" in text
    assert "yet without it none fitted within 5000 steps" in text
    rows[-1].update(fitted=True, fit_token_acc=0.99, stop_reason="fit")
    rows[-2].update(fitted=True, fit_token_acc=0.99, stop_reason="fit")
    pd.DataFrame(rows).to_csv(path, index=False)
    text = page(t5_duplicate_pilot.reading(path))
    assert "the miss lies in the optimisation that `no_plateau` changes" in text and "none fitted" not in text


def test_the_stop_rule_replay_names_the_choice_and_judges_it_against_the_budget(tmp_path):
    path = tmp_path / "stop_rules.csv"
    with pytest.raises(SystemExit, match="stop_rules.csv is missing"):
        stop_rule_replay.reading(path)
    common = dict(runs=10, recorded_train_seconds=1000.0, measured_wall_minutes=80.0, results="results/standard",
                  results_git_sha="c" * 40, beyond=0, false_stop_runs="")
    rows = [dict(fit_patience=500, fit_min_drop=0.1, false_stops=2, margin_false_stops=3, admissible=False,
                 runs_stopped_sooner=6, train_seconds=500.0, estimated_wall_minutes=76.0, chosen=False, current=False),
            dict(fit_patience=1000, fit_min_drop=0.1, false_stops=0, margin_false_stops=0, admissible=True,
                 runs_stopped_sooner=0, train_seconds=1000.0, estimated_wall_minutes=80.0, chosen=True, current=True)]
    pd.DataFrame([{**row, **common} for row in rows]).to_csv(path, index=False)
    text = page(stop_rule_replay.reading(path))
    assert "| 500 | 0.1 | 2 | 3 | no | 6 | 0 | 500 | 76 |" in text
    assert "| 1000 **(chosen)** | 0.1 | 0 | 0 | yes | 0 | 0 | 1000 | 80 |" in text
    assert "The declared choice is patience 1000 with minimum drop 0.1" in text and "made by `ccccccc`" in text
    assert "over the standard suite's budget of 60 minutes" in text and "not even the current rule" not in text
    assert "No replayed rule reaches it." in text
    pd.read_csv(path).assign(admissible=False).to_csv(path, index=False)
    assert "No candidate is admissible, not even the current rule: with its patience shortened by the margin it " \
           "would stop 0 fitted runs" in page(stop_rule_replay.reading(path))
    pd.DataFrame([{**row, **common} for row in rows]).to_csv(path, index=False)
    pd.read_csv(path).assign(estimated_wall_minutes=[59.0, 80.0]).to_csv(path, index=False)
    assert "the one that loses the fewest fits (patience 500, minimum drop 0.1: 59 min) stops 2 of the runs that " \
           "fitted before their fit" in page(stop_rule_replay.reading(path))
    pd.read_csv(path).assign(estimated_wall_minutes=[50.0, 55.0]).to_csv(path, index=False)
    assert "within the standard suite's budget of 60 minutes" in page(stop_rule_replay.reading(path))


def test_read_writes_each_pilots_reading_beside_its_rows(tmp_path, monkeypatch):
    import json

    common = dict(runs=10, recorded_train_seconds=1000.0, measured_wall_minutes=50.0, results="results/standard",
                  results_git_sha="c" * 40, beyond=0, false_stop_runs="", fit_patience=1000, fit_min_drop=0.1,
                  false_stops=0, margin_false_stops=0, admissible=True, runs_stopped_sooner=0, train_seconds=1000.0,
                  estimated_wall_minutes=50.0, chosen=True, current=True)
    rows = tmp_path / "stop_rules.csv"
    pd.DataFrame([common]).to_csv(rows, index=False)
    monkeypatch.setattr(stop_rule_replay, "OUT", rows)
    stop_rule_replay.main(["read"])
    blocks = json.loads((tmp_path / "stop_rules.json").read_text())["blocks"]
    assert [b["kind"] for b in blocks] == ["table", "text"] and blocks == stop_rule_replay.reading(rows)


def test_the_fit_criterion_blocks_name_the_unsplit_lengths_of_each_task():
    from pebench import tasks
    from pebench.render.fit_criterion import fit_criterion_blocks

    listed, unsplit = fit_criterion_blocks(["parity_check", "missing_duplicate", "copy"])
    assert listed["kind"] == "list" and "**512 held-out examples** per length" in listed["items"][0]
    assert "at most 5 errors per length" in listed["items"][0]  # 1% of 512, rounded down
    assert "resolves accuracy only to one in as many inputs as the part holds" in listed["items"][3]
    rows = {row[0]: row[1:] for row in unsplit["rows"]}
    parity = tasks.get("parity_check")
    expected = [length for length in range(1, 9) if not parity.is_split(length)]
    assert rows["Parity check (`parity_check`)"][0] == ", ".join(map(str, expected)) and expected  # it has some
    # the fewest held-out inputs of a split length: missing duplicate (min_length 2) splits only length 8
    assert rows["Missing duplicate (`missing_duplicate`)"] == [
        "2, 3, 4, 5, 6, 7", f"{tasks.get('missing_duplicate').distinct_inputs(8, held_out=True)} (length 8)"]
    fewest = min((parity.distinct_inputs(n, held_out=True), n) for n in range(1, 9) if n not in expected)
    assert rows["Parity check (`parity_check`)"][1] == f"{fewest[0]} (length {fewest[1]})" and fewest[0] < 512
    assert rows["Copy (`copy`)"][1] == f"{tasks.get('copy').distinct_inputs(3, held_out=True)} (length 3)"  # 1,000
    assert fit_criterion_blocks(["copy"], longest=1)[1]["rows"][0][2] == "no split length"


def test_the_fit_criterion_of_a_suite_gives_that_suites_check_interval():
    from pebench.protocol import SCALES
    from pebench.render.protocol_tables import fit_criterion

    assert SCALES["smoke"]["fit_every"] != SCALES["standard"]["fit_every"]  # else this test could not fail
    for suite in ("standard", "smoke"):
        assert fit_criterion(suite)[0]["items"][0].startswith(f"checked every {SCALES[suite]['fit_every']} steps")


def test_the_probe_pilot_trains_the_capable_encodings_at_the_standard_scale_and_caps_in_distribution_only():
    from pebench.protocol import CAPABLE_ENCODINGS, SCALES, task_steps

    specs = probe_pilot.specs()
    assert len(specs) == len(probe_pilot.TASKS) * 2 * len(CAPABLE_ENCODINGS) * len(probe_pilot.SEEDS)
    assert {s.encoding for s in specs} == set(CAPABLE_ENCODINGS) and {s.task for s in specs} == set(probe_pilot.TASKS)
    for spec in specs:
        assert spec.train.steps == task_steps("standard", spec.arch, spec.task)
        assert (spec.d_model, spec.n_layers) == (SCALES["standard"]["d_model"],
                                                 SCALES["standard"]["n_layers"])
        assert spec.train.train_max_len == 8 and max(spec.eval.lengths) <= 8, "in distribution only"
    reduced = probe_pilot.specs(["mqar"], ["rope"], [0])
    assert [(s.task, s.arch, s.encoding) for s in reduced] == [("mqar", "decoder", "rope"), ("mqar", "encoder", "rope")]
    encoder = probe_pilot.specs(archs=["encoder"])
    assert {s.arch for s in encoder} == {"encoder"} and len(encoder) == len(specs) // 2
