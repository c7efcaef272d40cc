"""Machines (issue 66, 6): the machine effect is estimated within cells, or said not estimable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_results import curve_run

from pebench.analysis import results
from pebench.analysis.machines import machine_effect
from pebench.render.machine_text import machine_effect_text


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
    assert "48 runs on 2 machine(s), 8 cells, 0 of them on more than one machine" in text


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
    assert "on 1 machine(s)" in machine_effect_text(one)
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
