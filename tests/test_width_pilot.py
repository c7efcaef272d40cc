"""The width pilot of protocol v3 (pilots/width_pilot.py): how it measures how close a depth comes to the depth
rule, which depth it widens, what it runs, and how its rule picks the standard scale."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def pilot(load_pilot):
    return load_pilot("width_pilot")


def runs_at(pilot, depth, fitted=lambda spec: True) -> pd.DataFrame:
    """One run-level row per rule spec of the depth pilot at ``depth``, fitted as ``fitted`` says."""
    return pd.DataFrame([dict(run_id=s.run_id, n_layers=depth, arch=s.arch, encoding=s.encoding, task=s.task,
                              seed=s.seed, fitted=bool(fitted(s)), steps_to_fit=1200.0 if fitted(s) else None)
                         for s in pilot.depth_pilot.specs([depth], "rule")])


def test_shortfall_counts_every_condition_of_the_rule(pilot):
    assert pilot.shortfall(runs_at(pilot, 3), 3) == 0
    three_rope = runs_at(pilot, 3, lambda s: not (s.encoding == "rope" and s.arch == "decoder" and s.seed == 0
                                                  and s.task in ("copy", "reverse", "majority")))
    assert pilot.shortfall(three_rope, 3) == 1  # 21 of 24: one short of 22
    no_copy = runs_at(pilot, 3, lambda s: not (s.encoding == "none" and s.task == "copy"))
    assert pilot.shortfall(no_copy, 3) == 2  # both seeds of the NoPE decoder on copy


def test_the_committed_depths_fall_short_as_the_pre_registration_says(pilot):
    union = pilot.plateau_pilot.union()[0]
    assert [pilot.shortfall(union, depth) for depth in (2, 3, 4)] == [11, 8, 8]


def test_the_closest_depth_waits_for_every_depth_and_is_the_smaller_on_a_tie(pilot, monkeypatch):
    union = pd.concat([runs_at(pilot, 2, lambda s: s.task != "copy"), runs_at(pilot, 3, lambda s: s.task != "copy"),
                       runs_at(pilot, 4, lambda s: s.task != "copy"), runs_at(pilot, 5, lambda s: s.seed)])
    status = {2: (False, ""), 3: (False, ""), 4: (False, ""), 5: (None, "not complete")}
    monkeypatch.setattr(pilot.plateau_pilot, "choose", lambda merged: {"status": status, "depth": None})
    with pytest.raises(RuntimeError, match="not yet decided"):
        pilot.closest_depth((union, {}))
    status[5] = (False, "")
    assert pilot.closest_depth((union, {})) == 2  # 2, 3 and 4 miss the same runs; 5 misses more
    status[3] = (True, "meets the rule")
    with pytest.raises(RuntimeError, match="does not run"):
        pilot.closest_depth((union, {}))


def test_the_runs_are_the_rule_runs_at_width_128_without_a_plateau_stop(pilot):
    originals = {s.run_id: s for s in pilot.depth_pilot.specs([3], "rule")}
    wide = pilot.specs(3)
    assert len(wide) == len(originals) == 192
    for spec in wide:
        assert spec.d_model == 128 and spec.n_heads == 4 and spec.train.fit_patience == 0
        original = dataclasses.replace(spec, experiment=pilot.depth_pilot.EXPERIMENT, d_model=64,
                                       train=dataclasses.replace(spec.train, fit_patience=1000))
        assert originals[original.run_id] == original
        assert max(spec.eval.lengths) <= spec.train.train_max_len  # in distribution only


@pytest.mark.parametrize("wide_fits, chosen", [(True, (3, 128)), (False, (3, 64))])
def test_the_rule_takes_width_128_only_where_it_meets_the_rule(pilot, monkeypatch, wide_fits, chosen):
    union = pd.concat([runs_at(pilot, d, lambda s, d=d: not (s.task == "parity_check" and s.seed == (d % 2)
                                                             or d == 2 and s.task == "copy"))
                       for d in (2, 3, 4, 5)])
    monkeypatch.setattr(pilot.plateau_pilot, "union", lambda: (union, {}))
    monkeypatch.setattr(pilot, "closest_depth", lambda merged=None: 3)
    wide = runs_at(pilot, 3, lambda s: wide_fits or s.task not in ("parity_check", "missing_duplicate"))
    monkeypatch.setattr(pilot, "width_runs", lambda depth: wide)
    outcome = pilot.choose()
    assert outcome["meets"] is wide_fits and outcome["chosen"] == chosen
    assert set(outcome["shortfalls"]) >= {(2, 64), (3, 64), (4, 64), (5, 64), (3, 128)}
    assert outcome["caps"][("decoder", "copy")] == 2500  # twice 1200, rounded up to 500
    assert not outcome["settled_early"] and outcome["runs_made"] == outcome["runs_expected"] == 192
    monkeypatch.setattr(pilot, "width_runs", lambda depth: wide.iloc[:-1])
    early = pilot.choose()
    if wide_fits:  # the missing run could be the fit that keeps width 128 within the rule
        assert early["chosen"] is None and early["runs_made"] == 191
    else:  # width 128 falls short even if the missing run fits: decided, from the width-64 runs
        assert early["settled_early"] and early["chosen"] == (3, 64) and early["meets"] is False
        assert early["caps"] == outcome["caps"]


def test_the_rule_waits_while_a_run_still_to_be_made_could_change_the_outcome(pilot, monkeypatch):
    union = pd.concat([runs_at(pilot, 3, lambda s: not (s.task == "parity_check" and s.seed == 1))]
                      + [runs_at(pilot, d, lambda s: s.task not in ("copy", "reverse")) for d in (2, 4, 5)])
    monkeypatch.setattr(pilot.plateau_pilot, "union", lambda: (union, {}))
    monkeypatch.setattr(pilot, "closest_depth", lambda merged=None: 3)
    # width 128 misses one rope encoder fit (shortfall 0 at width 64 would still win a tie) ...
    wide = runs_at(pilot, 3, lambda s: not (s.encoding == "rope" and s.arch == "encoder"
                                            and s.task in ("copy", "reverse", "majority") and s.seed == 0))
    rope_encoder = (wide["encoding"] == "rope") & (wide["arch"] == "encoder")
    # ... but with its rope encoder runs not yet made it could still meet the rule
    monkeypatch.setattr(pilot, "width_runs", lambda depth: wide[~rope_encoder])
    assert pilot.best_case_shortfall(wide[~rope_encoder], 3) == 0
    assert pilot.choose()["chosen"] is None
    made = wide[~rope_encoder | wide["task"].isin(["copy", "reverse", "majority"])]  # the three misses are in
    monkeypatch.setattr(pilot, "width_runs", lambda depth: made)
    assert pilot.best_case_shortfall(made, 3) == 1
    early = pilot.choose()
    assert early["settled_early"] and early["chosen"] == (3, 64) and early["shortfalls"][(3, 128)] == 1
