"""The depth pilot of protocol v3 (pilots/depth_pilot.py): what it runs and how its declared rule reads the runs."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def pilot(load_pilot):
    return load_pilot("depth_pilot")


@pytest.fixture(scope="module")
def rule_specs(pilot):
    return pilot.specs([3], "rule")


def test_the_pilot_evaluates_in_distribution_only_under_protocol_v3(pilot, rule_specs):
    """No out-of-distribution number of a pilot model exists: the depth is chosen from in-distribution fit."""
    assert len(rule_specs) == 4 * 12 * 2 * len(pilot.SEEDS)  # NoPE + 3 capable, 12 tasks, 2 archs
    for spec in rule_specs:
        assert max(spec.eval.lengths) <= spec.train.train_max_len == pilot.TRAIN_MAX_LEN
        assert spec.protocol == 3 and spec.n_layers == 3 and spec.d_model == 64
        assert spec.train.fit_lengths == "all" and spec.train.fit_disjoint and spec.train.fit_examples == 512
        assert spec.train.steps == pilot.PILOT_CAP
    every = pilot.specs([2], "all")
    assert {s.encoding for s in every} >= {"kerple_log", "kerple_power", "sandwich", "transformer_xl", "cope",
                                           "p_rope"}
    assert not [s for s in every if s.encoding == "cope" and s.arch == "encoder"]  # causal only


def runs_at(pilot, specs, fitted=lambda spec: True, steps=lambda spec: 1000) -> pd.DataFrame:
    """One run-level row per spec, fitted as ``fitted`` says, with ``steps`` steps to fit."""
    return pd.DataFrame([dict(run_id=s.run_id, n_layers=s.n_layers, arch=s.arch, encoding=s.encoding, task=s.task,
                              seed=s.seed, fitted=bool(fitted(s)), steps_to_fit=float(steps(s)) if fitted(s) else None)
                         for s in specs])


def test_a_depth_meets_the_rule_only_with_the_capable_fits_and_nope_fitting_copy(pilot, rule_specs):
    everything = runs_at(pilot, rule_specs)
    assert pilot.meets_rule(everything, 3) == (True, "meets the rule")
    two_misses = runs_at(pilot, rule_specs, fitted=lambda s: not (s.encoding == "rope" and s.arch == "encoder"
                                                                  and s.task in ("copy", "reverse")))
    ok, why = pilot.meets_rule(two_misses, 3)
    assert ok is False and why == "RoPE encoder fits 20 of 24"
    no_copy = runs_at(pilot, rule_specs, fitted=lambda s: not (s.encoding == "none" and s.task == "copy"
                                                                and s.arch == "decoder" and s.seed == 1))
    assert pilot.meets_rule(no_copy, 3) == (False, "NoPE decoder fits copy on 1 of 2 seeds")
    assert pilot.meets_rule(everything.iloc[:-1], 3)[0] is None  # undecided until its rule runs are in


def test_the_step_cap_is_twice_the_slowest_capable_fit_rounded_up_and_bounded(pilot, rule_specs):
    slow = {"copy": 1600, "reverse": 2600, "majority": 200}
    runs = runs_at(pilot, rule_specs, fitted=lambda s: s.task != "bucket_sort",
                   steps=lambda s: slow.get(s.task, 700) if s.encoding != "none" else 4900)  # NoPE is not read
    caps = pilot.step_caps(runs, 3)
    assert caps[("decoder", "copy")] == 3500  # 2 x 1600 rounded up to 500
    assert caps[("encoder", "reverse")] == pilot.PILOT_CAP  # 5200 is above the pilot's own cap
    assert caps[("decoder", "majority")] == pilot.MIN_CAP
    assert caps[("decoder", "bucket_sort")] == pilot.PILOT_CAP  # no capable fit: the pilot's cap
