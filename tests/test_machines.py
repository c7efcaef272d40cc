"""Machines (issue 66, 6): rows name their machine (a GPU by its name), ``pebench run --share I/N`` splits every
cell's seeds across machines, and the machine effect is estimated within cells, or said not estimable."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch
from test_results import curve_run

from pebench.analysis import results
from pebench.analysis.machines import machine_effect
from pebench.cli import main
from pebench.plan import execute
from pebench.plan.experiment import suite_runs
from pebench.plan.runner import parse_share, share_runs
from pebench.protocol import SEEDS
from pebench.render.machine_text import machine_effect_text


def test_a_gpu_run_names_its_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: f"NVIDIA H200 ({device})")
    assert execute.machine_name("cuda:0", "AMD EPYC test-only") == "NVIDIA H200 (cuda:0)"


# --------------------------------------------------------------------------- --share


def _cell(spec) -> str:
    return json.dumps({k: v for k, v in spec.resolved().items() if k != "seed"}, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def plan():
    """The standard suite (6 seeds a cell), plus smoke cells given 1 to 5 seeds."""
    smoke = suite_runs("smoke")
    uneven = [dataclasses.replace(spec, seed=seed) for i, spec in enumerate(smoke[:5]) for seed in range(1, i + 2)]
    return suite_runs("standard") + uneven


@pytest.fixture(scope="module")
def cells(plan):
    """Each run's cell, by run id."""
    return {spec.run_id: _cell(spec) for spec in plan}


@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_shares_partition_the_plan_and_split_every_cell(plan, cells, count):
    shares = [share_runs(plan, index, count) for index in range(1, count + 1)]
    ids = [[spec.run_id for spec in share] for share in shares]
    assert sorted(sum(ids, [])) == sorted(cells)  # the union is the plan, and no run is in two shares
    seeds: dict[str, set[int]] = {}
    for spec in plan:
        seeds.setdefault(cells[spec.run_id], set()).add(spec.seed)
    held = [{cells[spec.run_id] for spec in share} for share in shares]
    for cell, cell_seeds in seeds.items():
        if len(cell_seeds) >= count:
            assert all(cell in share for share in held), f"a share without seeds of a cell of {len(cell_seeds)}"
    assert {spec.seed for spec in shares[0] if spec.suite == "standard"} == set(SEEDS["standard"][::count])


def test_a_share_keeps_the_plan_order_and_is_the_same_every_time(plan):
    first = share_runs(plan, 2, 3)
    chosen = {spec.run_id for spec in first}
    assert [s.run_id for s in first] == [s.run_id for s in plan if s.run_id in chosen]
    assert [s.run_id for s in share_runs(list(reversed(plan)), 2, 3)] == [s.run_id for s in reversed(first)]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "2", "1/2/3", "-1/2", ""])
def test_a_bad_share_is_refused(text):
    with pytest.raises(ValueError, match="1 <= I <= N"):
        parse_share(text)


def test_run_share_on_the_command_line(capsys):
    assert main(["run", "--suite", "smoke", "--share", "3/2", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--share" in err and "1 <= I <= N" in err
    assert main(["run", "--suite", "smoke", "--share", "2/2", "--dry-run"]) == 2  # smoke has one seed a cell
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds no runs" in err
    assert main(["run", "--suite", "standard", "--experiment", "length_extrapolation", "--share", "2/3",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert {line.split("seed=")[1] for line in out[:-1]} == {str(seed) for seed in SEEDS["standard"][1::3]}


# --------------------------------------------------------------------------- the machine effect


def synthetic_runs(shift: float, cells: int = 8, seeds: int = 6, split: str = "seeds", seed: int = 0) -> pd.DataFrame:
    """Runs of ``cells`` cells (one task each) x ``seeds`` seeds, made on machines A and B, B's score ``shift``
    higher; ``split``: ``seeds`` (alternate seeds of every cell) or ``tasks`` (half the cells on each)."""
    rng = np.random.default_rng(seed)
    rows = []
    for cell in range(cells):
        level = rng.uniform(0.2, 0.8)
        for s in range(seeds):
            on_b = s % 2 == 1 if split == "seeds" else cell % 2 == 1
            rows.append({"experiment": "length_extrapolation", "task": f"task{cell}", "encoding": "rope",
                         "arch": "decoder", "train_max_len": 8, "variant": "trained", "seed": s, "status": "ok",
                         "fitted": 1.0, "machine": "B" if on_b else "A",
                         "ood_normalised_acc": level + (shift if on_b else 0.0) + rng.normal(0, 0.03)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(5))
def test_an_injected_machine_shift_is_recovered_within_its_interval(seed):
    effect = machine_effect(synthetic_runs(0.05, seed=seed))
    assert effect.estimable and effect.machines == ("A", "B") and effect.spanning_cells == effect.cells == 8
    (contrast,) = effect.contrasts
    assert (contrast.machine, contrast.reference, contrast.method, contrast.cells) == ("B", "A", "paired", 8)
    assert contrast.low < 0.05 < contrast.high and contrast.low > 0  # recovered, and told apart from no effect
    assert contrast.estimate == pytest.approx(0.05, abs=0.03)


def test_no_shift_gives_an_interval_around_zero():
    (contrast,) = machine_effect(synthetic_runs(0.0, seed=3)).contrasts
    assert contrast.low < 0 < contrast.high


def test_machine_nested_in_tasks_is_not_estimable():
    effect = machine_effect(synthetic_runs(0.05, split="tasks"))
    assert not effect.estimable and effect.spanning_cells == 0 and effect.cells == 8
    assert "no cell has runs on more than one machine" in effect.reason
    text = machine_effect_text(effect)
    assert text.startswith("The machine effect on floor-normalised OOD token accuracy cannot be estimated")
    assert "48 runs on 2 machines, 8 cells, 0 of them on more than one machine" in text


def test_one_shared_cell_uses_the_mixed_model():
    runs = synthetic_runs(0.05, split="tasks")
    first = runs["task"] == "task0"
    runs.loc[first, "machine"] = np.where(runs.loc[first, "seed"] % 2 == 1, "B", "A")
    runs.loc[first & (runs["machine"] == "B"), "ood_normalised_acc"] += 0.05
    (contrast,) = machine_effect(runs).contrasts
    assert (contrast.method, contrast.cells) == ("mixed model", 1)
    assert (contrast.machine, contrast.reference) == ("A", "B")  # B made more runs: the reference
    assert contrast.low < -0.05 < contrast.high


def test_unfitted_failed_and_variant_rows_are_left_out():
    runs = synthetic_runs(0.05)
    extra = runs.assign(variant="yarn", ood_normalised_acc=9.0)
    unfitted = runs.assign(fitted=0.0, seed=runs["seed"] + 100, ood_normalised_acc=-9.0)
    failed = runs.assign(status="failed", seed=runs["seed"] + 200, ood_normalised_acc=np.nan)
    (contrast,) = machine_effect(pd.concat([runs, extra, unfitted, failed])).contrasts
    assert contrast.estimate == pytest.approx(machine_effect(runs).contrasts[0].estimate)
    assert machine_effect(pd.concat([runs, unfitted]), fitted_only=False).runs == (48, 48)


def test_one_machine_or_no_record_says_why():
    one = machine_effect(synthetic_runs(0.0).assign(machine="A"))
    assert not one.estimable and one.reason == "the runs were made on one machine"
    assert "(48 runs on 1 machine, 8 cells, 0 of them" in machine_effect_text(one)
    assert machine_effect(synthetic_runs(0.0).drop(columns="machine")).reason == "the runs record no machine"


def test_the_text_gives_the_estimate_with_its_numbers():
    effect = machine_effect(synthetic_runs(0.05).assign(machine=lambda f: f["machine"].map({"A": "cpu_A",
                                                                                              "B": "GPU*B"})))
    text = machine_effect_text(effect)
    (contrast,) = effect.contrasts
    assert text.startswith("Machine effect on floor-normalised OOD token accuracy, within cells (48 runs on 2 "
                           "machines, 8 of 8 cells on more than one): ")
    assert f"{contrast.estimate:+.3f} (95% CI {contrast.low:+.3f} to {contrast.high:+.3f}; paired over 8 cells)" \
        in text
    assert r"cpu_A minus GPU\*B" in text  # a tie in runs: the reference is the first by name
    assert text.endswith(".") and "\n" not in text


def test_run_metrics_carries_the_machine():
    data = pd.concat([curve_run(seed, {4: 1.0, 16: 0.5}, machine=machine)
                      for seed, machine in ((0, "A"), (1, "B"))])
    assert results.run_metrics(data)["machine"].tolist() == ["A", "B"]


def test_the_report_states_the_machine_effect_only_for_runs_of_several_machines():
    from pebench.report.write import machine_findings

    runs = synthetic_runs(0.05, seed=1)
    (sentence,) = machine_findings(runs)
    assert sentence == machine_effect_text(machine_effect(runs))
    assert machine_findings(runs.assign(machine="one machine")) == []
    assert machine_findings(runs.drop(columns="machine")) == []
