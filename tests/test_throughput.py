"""The throughput benchmark (:mod:`pebench.bench.throughput`): its own arithmetic (the FLOP count, the MFU
numerator), its points, its x-transformers baseline at equal configuration, its entry points and the docs
tables it generates. Speed itself is measured by the benchmark, never here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from pebench.bench import throughput
from pebench.plan.experiment import load_experiments, suite_runs
from pebench.render.protocol_tables import measured_suite_times

ROOT = Path(__file__).resolve().parent.parent


def counted_train_flops(model, tokens, first: int, suffix: bool) -> int:
    """FLOPs of one forward + backward as counted by torch's FlopCounterMode (matmuls and attention)."""
    # the math backend decomposes attention into matmuls, which the counter sees
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        logits = model(tokens, outputs=tokens.shape[1] - first) if suffix else model(tokens)[:, first:]
        F.cross_entropy(logits.flatten(0, 1), torch.zeros(logits.shape[:2], dtype=torch.long).flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("loss", ["all", "outputs"])
def test_analytic_flops_match_torch_flop_counter(loss):
    point = throughput.Point("test", d_model=32, batch_size=4, lengths=(12,), loss=loss)
    model = throughput.build_pebench("none", point)
    tokens = torch.randint(0, point.vocab_size, (4, 12))
    first = point.first(12)
    counted = counted_train_flops(model, tokens, first, suffix=loss == "outputs")
    analytic = throughput.train_flops(point, 12, 12 - first if loss == "outputs" else None)
    assert analytic == pytest.approx(counted, rel=0.02)


def test_first_point_is_the_standard_suite_step():
    point = throughput.points(quick=True)[0]
    spec = next(s for s in suite_runs("standard") if s.task == "copy" and s.arch == "decoder")
    assert (point.d_model, point.n_layers, point.n_heads, point.batch_size) == (
        spec.d_model, spec.n_layers, spec.n_heads, spec.train.batch_size)
    assert sorted(set(point.lengths)) == [2 * n for n in range(1, spec.train.train_max_len + 1)]
    assert point.loss == "outputs"


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"])
def test_xtransformers_baseline_has_equal_configuration(encoding):
    pytest.importorskip("x_transformers")
    point = throughput.points(quick=True)[0]
    ours, theirs = throughput.build_pebench(encoding, point), throughput.build_xtransformers(encoding, point)
    ratio = throughput.count_parameters(theirs) / throughput.count_parameters(ours)
    assert 0.95 <= ratio <= 1.05
    tokens = torch.randint(0, point.vocab_size, (2, 10))
    assert theirs(tokens).shape == ours(tokens).shape == (2, 10, point.vocab_size)


def test_tables_regenerate_from_the_committed_csvs(tmp_path):
    """docs/performance_tables.md is exactly what write_tables makes of results/performance/*.csv."""
    committed = ROOT / "docs" / "performance_tables.md"
    text = throughput.write_tables(ROOT / "results" / "performance", tmp_path / "tables.md")
    assert text == (tmp_path / "tables.md").read_text() == committed.read_text()


@pytest.mark.parametrize("command", [["-m", "pebench.bench.throughput"], [str(ROOT / "experiments" / "throughput.py")]])
def test_entry_points_regenerate_the_tables(tmp_path, command):
    tables = tmp_path / "tables.md"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}  # this tree
    subprocess.run([sys.executable, *command, "--tables-only", "--out", str(ROOT / "results" / "performance"),
                    "--tables", str(tables)], check=True, cwd=ROOT, env=env, capture_output=True)
    assert tables.read_text() == (ROOT / "docs" / "performance_tables.md").read_text()


def test_benchmark_is_not_an_experiment():
    """The thin script under experiments/ only imports: loading the experiments registers no benchmark."""
    assert "throughput" not in load_experiments()


def test_suite_measurements_are_appended_and_the_last_is_current(tmp_path, monkeypatch):
    """measure_suites keeps every measurement (the machine moves a suite's time as much as the code does);
    the latest row of a suite is its current time, for the tables and the docs alike."""
    import pandas as pd

    minutes = iter([80.0, 2.0, 70.0])

    def timed(suite, workers, out, note="", plugin=None):
        wall = next(minutes) * 60
        return {"suite": suite, "workers": workers, "runs": 6, "wall_seconds": wall, "wall_minutes": wall / 60,
                "git_sha": "a" * 40, "date": "2026-11-24", "load_before": 0.1, "reference_step_ms_before": 9.0,
                "reference_step_ms_after": 9.5, "note": note}

    monkeypatch.setattr(throughput, "suite_wall_time", timed)
    csv = tmp_path / "suites.csv"
    throughput.measure_suites(["standard"], 2, None, csv, note="idle")
    throughput.measure_suites(["smoke", "standard"], 2, None, csv)
    frame = pd.read_csv(csv)
    assert frame.suite.tolist() == ["standard", "smoke", "standard"] and frame.note.fillna("").tolist()[0] == "idle"
    latest = {measured.suite: measured.wall_minutes for measured in measured_suite_times(tmp_path)}
    assert latest == {"smoke": 2.0, "standard": 70.0}
    # a measurement from before the yardstick existed shows empty cells, not "nan"
    old = {"suite": "smoke", "workers": 2, "runs": 6, "wall_minutes": 1.0, "git_sha": "b" * 40, "date": "2026-11-20",
           "git_dirty": True}
    pd.concat([frame, pd.DataFrame([old])]).to_csv(csv, index=False)
    tables = throughput.write_tables(tmp_path, tmp_path / "tables.md")
    assert "| standard | 2026-11-24 | 6 | 2 | 80.0 | aaaaaaa |  | 0.10 | 9.00 / 9.50 | idle |" in tables
    assert "| smoke | 2026-11-20 | 6 | 2 | 1.0 | bbbbbbb | yes |  |  |  |" in tables and "nan" not in tables


def test_the_reference_step_is_a_positive_time():
    """The yardstick recorded around each suite measurement times a real step of the suite's shape."""
    assert 0 < throughput.reference_step_ms(passes=1) < 10_000


def test_an_estimate_sample_takes_each_experiment_its_share_the_same_for_a_seed():
    smoke = suite_runs("smoke")
    share = {name: sum(s.experiment == name for s in smoke) for name in {s.experiment for s in smoke}}
    sample = throughput.estimate_sample("smoke", 12, seed=3)
    counts = {name: sum(s.experiment == name for s in sample) for name in share}
    assert counts == {name: max(1, round(12 * n / len(smoke))) for name, n in share.items()}  # every one, in its share
    assert [s.run_id for s in sample] == [s.run_id for s in throughput.estimate_sample("smoke", 12, seed=3)]
    assert [s.run_id for s in sample] != [s.run_id for s in throughput.estimate_sample("smoke", 12, seed=4)]


def test_an_estimate_check_times_its_sample_against_the_announced_model(tmp_path, monkeypatch):
    """The row compares the model `pebench run` announces (calibration x expected cost, workers) with the sample's
    measured wall time, in a temporary folder that is removed; rows are appended and the page shows them."""
    import pandas as pd

    import pebench.plan.runner as runner

    folders, clock = [], iter([100.0, 175.0])
    monkeypatch.setattr(throughput, "calibrations", lambda sample: {s.experiment: 1e-9 for s in sample})
    monkeypatch.setattr(throughput, "time_estimate", lambda sample, workers, rates: 30.0 * len(sample) / workers)

    def sweep(sample, folder, **kwargs):
        folders.append(folder)
        assert folder.is_dir() and kwargs["workers"] == 2 and kwargs["executor"] == "processes"
        return runner.SweepSummary(total=len(sample), skipped=0, done=len(sample), failed=0, diverged=0, blocked=[],
                                   seconds=60.0)

    monkeypatch.setattr(throughput, "run_sweep", sweep)
    monkeypatch.setattr(throughput.time, "perf_counter", lambda: next(clock))
    csv = tmp_path / "estimates.csv"
    throughput.measure_estimates("smoke", 4, [0], 2, csv, note="idle")
    row = pd.read_csv(csv).iloc[0]
    assert not folders[0].exists()  # the sample's results are not kept
    # 5 runs (4, and every experiment at least one) x 30 s / 2 workers = 1.25 min estimated, 75 s measured
    assert (row.runs, row.estimate_minutes, row.measured_minutes, row.measured_over_estimate) == (5, 1.25, 1.25, 1.0)
    tables = throughput.write_tables(tmp_path, tmp_path / "tables.md")
    assert "Announced time against measured time" in tables and "| 1.2 | 1.2 | 1.00 |" in tables


def test_the_step_profile_accounts_for_the_whole_traced_time():
    """The profile's rows are the largest operators, every matmul by name, the other operators and the time outside
    any operator: their shares add up to the traced wall time."""
    profile = throughput.step_profile(passes=1)
    # 1e-3: the profiler counts whole microseconds and the wall time is perf_counter's, over a step of milliseconds
    assert profile.share.sum() == pytest.approx(1.0, abs=1e-3)
    assert set(profile.operator[profile.matmul]) <= set(throughput.MATMUL_OPERATORS) and profile.matmul.any()
    assert (profile.share >= 0).all() and profile.operator.tolist()[-2:] == ["other operators", "outside operators"]


def test_a_timed_verdict_runs_pebench_evaluate_with_its_plugin(tmp_path):
    """``evaluate:NAME`` times one encoding's verdict (issue 65: the README's measured time of it)."""
    out, plugin = tmp_path / "out", tmp_path / "mine.py"
    assert throughput.suite_command("smoke", 2, out)[-7:] == ["run", "--suite", "smoke", "--workers", "2", "--out",
                                                              str(out)]
    assert throughput.suite_command("evaluate:scaled_sinusoidal", 2, out, plugin)[-8:] == [
        "evaluate", "scaled_sinusoidal", "--plugin", str(plugin), "--workers", "2", "--out", str(out)]
    assert "--plugin" not in throughput.suite_command("evaluate:rope", 2, out)
