"""The plateau pilot of protocol v3 (pilots/plateau_pilot.py): it re-runs exactly the depth pilot's plateau-stopped
runs that the depth rule reads, with nothing changed but the plateau stop, and reads the union with the depth
pilot's own rule."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def pilot(load_pilot):
    return load_pilot("plateau_pilot")


def test_only_the_runs_the_rule_reads_are_re_run(pilot):
    assert all(pilot.read_by_rule(e, arch, task) for e in ("sinusoidal", "learned", "rope")
               for arch in ("decoder", "encoder") for task in ("copy", "parity_check"))
    assert pilot.read_by_rule("none", "decoder", "copy")
    assert not pilot.read_by_rule("none", "encoder", "copy") and not pilot.read_by_rule("none", "decoder", "reverse")
    assert not pilot.read_by_rule("alibi", "decoder", "copy")


def test_the_re_runs_are_the_committed_plateau_stops_with_only_the_stop_removed(pilot):
    """At depth 2 (committed), each re-run is its depth-pilot run with fit_patience 0 and this pilot's name."""
    stopped = pilot.plateau_stopped(2)
    assert stopped is not None and len(stopped) > 0
    assert not stopped["fitted"].any() and set(stopped["stop_reason"]) == {"plateau"}
    assert set(stopped["encoding"]) <= {"none", "sinusoidal", "learned", "rope"}
    originals = {s.run_id: s for s in pilot.depth_pilot.specs([2], "rule")}
    reruns = pilot.specs([2])
    assert len(reruns) == len(stopped)
    for spec in reruns:
        assert spec.train.fit_patience == 0 and spec.experiment == pilot.EXPERIMENT
        original = dataclasses.replace(spec, experiment=pilot.depth_pilot.EXPERIMENT,
                                       train=dataclasses.replace(spec.train, fit_patience=1000))
        assert original.run_id in set(stopped["run_id"]) and originals[original.run_id] == original
        assert spec.train.steps == pilot.depth_pilot.PILOT_CAP  # the same cap, hence the same schedule


def test_a_depth_whose_rule_runs_are_incomplete_has_no_re_runs_yet(pilot, monkeypatch):
    runs, table = pilot.depth_pilot.fit_table()
    monkeypatch.setattr(pilot.depth_pilot, "fit_table", lambda folder=None: (runs.iloc[:-1], table))
    last = runs.iloc[-1]
    assert pilot.plateau_stopped(int(last["n_layers"])) is None
    with pytest.raises(RuntimeError, match="not complete"):
        pilot.specs([int(last["n_layers"])])


def test_a_re_run_that_does_not_follow_its_original_is_refused(pilot, monkeypatch, tmp_path):
    runs, table = pilot.depth_pilot.fit_table()
    monkeypatch.setattr(pilot.depth_pilot, "fit_table", lambda folder=None: (runs, table))
    stopped = pilot.plateau_stopped(2)
    first = stopped.iloc[[0]].copy()
    rerun = first.assign(experiment=pilot.EXPERIMENT, fit_curve="[[100, 0.5]]", fitted=True)
    folder = tmp_path / "layers2"
    (folder / "raw").mkdir(parents=True)
    monkeypatch.setattr(pilot, "depth_folder", lambda depth: folder)
    monkeypatch.setattr("pebench.store.load", lambda path: pd.DataFrame(rerun))
    with pytest.raises(ValueError, match="do not follow their original"):
        pilot.union()


def test_the_reading_shows_fits_with_and_without_the_stop_and_the_decision(pilot):
    table = pd.DataFrame([dict(n_layers=3, arch="decoder", encoding=e, runs=24, fitted=20, reruns=3, reruns_fitted=2)
                          for e in ("none", "sinusoidal", "learned", "rope")])
    fields = {"depths": {"3": {"decided": True, "meets": False, "why": "rope decoder fits 20 of 24"}},
              "chosen_depth": 3, "caps": [{"arch": "decoder", "task": "copy", "cap": 2500}],
              "plateau_stop": "none", "reruns": 3, "reruns_fitted": 2}
    blocks = pilot.reading(table, fields)
    grid = next(b for b in blocks if b["kind"] == "table")
    assert grid["rows"] == [["3", "decoder", "18 → 20 of 24", "18 → 20 of 24", "18 → 20 of 24", "18 → 20 of 24"]]
    said = " ".join(b.get("text", "") + " ".join(b.get("items", [])) for b in blocks)
    assert "depth 3: fails the rule (rope decoder fits 20 of 24)" in said
    assert ("No depth met the rule without the plateau stop either; the depth pilot's fallback is depth 3**" in said
            and "It is not protocol v3's scale" in said)  # no depth met the rule
    assert "**Chosen depth" not in said and "**none**" in said and "2 of 3 re-runs" in said
    fields["depths"]["3"]["meets"] = True
    assert "**Chosen depth: 3.**" in " ".join(b.get("text", "") for b in pilot.reading(table, fields))
    assert blocks[-1]["rows"] == [["decoder", "`copy`", "2500"]]
