"""The LM step pilot of protocol v3 (pilots/lm_step_pilot.py): its runs are v3's standard LM at
each step count evaluated at its training context only, and takes the smallest count whose spread is small."""

from __future__ import annotations

import pandas as pd
import pytest

from pebench import protocol


@pytest.fixture(scope="module")
def pilot(load_pilot):
    return load_pilot("lm_step_pilot")


def test_the_pilots_runs_are_protocol_v3s_whichever_protocol_is_in_force(pilot):
    """The pilot set v3's LM steps: its runs are v3's standard LM runs (v3's scale and encodings), also once a
    later protocol is in force."""
    runs = pilot.specs(800)
    assert {s.encoding for s in runs} == set(protocol.STANDARD_V3["encodings"])
    assert {s.protocol for s in runs} == {3} and {s.train.steps for s in runs} == {800}


def test_the_runs_are_the_standard_lm_at_each_step_count_evaluated_in_distribution(pilot, monkeypatch):
    monkeypatch.setitem(protocol.SCALES, "standard", {**protocol.SCALES["standard"], "protocol": 3})
    runs = pilot.specs(1600)
    assert runs and {s.seed for s in runs} == set(pilot.SEEDS)
    assert {s.train.steps for s in runs} == {1600} and {s.eval.lengths for s in runs} == {(pilot.CONTEXT,)}
    assert {s.task for s in runs} == {"charlm"} and {s.train.train_max_len for s in runs} == {pilot.CONTEXT}
    assert len({s.encoding for s in runs}) * len(pilot.SEEDS) == len(runs)


def table(spreads: dict[int, float], encodings=("a", "b", "c"), runs=2) -> pd.DataFrame:
    """Perplexities per (steps, encoding) whose largest/smallest ratio is ``spreads[steps]``."""
    rows = []
    for steps, spread in spreads.items():
        for i, encoding in enumerate(encodings):
            rows.append(dict(steps=steps, encoding=encoding, perplexity=4.0 * (1 + (spread - 1) * i / 2), runs=runs))
    return pd.DataFrame(rows)


def test_the_smallest_step_count_within_the_spread_is_chosen(pilot):
    expected = {steps: 3 for steps in pilot.STEPS}
    outcome = pilot.choose(table({800: 1.5, 1600: 1.08, 3200: 1.02}), expected)
    assert outcome["steps"] == 1600 and outcome["spreads"][800] == pytest.approx(1.5)  # exact up to rounding
    assert pilot.choose(table({800: 1.5}), expected)["steps"] is None  # 1600 not run yet: undecided
    assert pilot.choose(table({800: 1.5}, runs=1), expected)["spreads"][800] is None  # a seed missing
    none_close = table({800: 1.5, 1600: 1.4, 3200: 1.3, 6400: 1.2})
    assert pilot.choose(none_close, expected)["steps"] == 6400  # the largest, said in the note


def test_the_largest_count_is_chosen_once_no_run_of_it_can_change_the_outcome(pilot):
    """Amendment 2: every smaller count complete and outside the rule decides the largest without its runs; a
    smaller count still incomplete (or one within the rule) does not."""
    expected = {steps: 3 for steps in pilot.STEPS}
    smaller = dict(zip(pilot.STEPS[:-1], (1.5, 1.4, 1.3), strict=True))
    outcome = pilot.choose(table(smaller), expected)
    assert outcome["steps"] == pilot.STEPS[-1] and outcome["spreads"][pilot.STEPS[-1]] is None
    blocks = pilot.reading(table(smaller), outcome)
    assert blocks[2]["items"][-1] == f"{pilot.STEPS[-1]} steps: not run by the pilot (no run of it could change " \
                                     "the outcome)"
    assert blocks[3]["text"] == f"**Chosen: {pilot.STEPS[-1]} steps**, the largest count: no smaller one was " \
                                "within the rule."
    assert pilot.choose(table({800: 1.5, 1600: 1.4}), expected)["steps"] is None  # 3200 could still be within it
    a_seed_missing = pd.concat([table({800: 1.5, 1600: 1.4}), table({3200: 1.3}, runs=1)], ignore_index=True)
    assert pilot.choose(a_seed_missing, expected)["steps"] is None  # 3200 incomplete: it could still be within


def test_the_reading_shows_each_count_run_its_spread_and_the_choice(pilot):
    expected = {steps: 3 for steps in pilot.STEPS}
    frame = table({800: 1.5, 1600: 1.08})
    blocks = pilot.reading(frame, pilot.choose(frame, expected))
    assert blocks[1]["header"] == ["encoding", "800 steps", "1600 steps"] and len(blocks[1]["rows"]) == 3
    assert blocks[2]["items"] == ["800 steps: spread 1.50", "1600 steps: spread 1.08 (within the rule)"]
    assert blocks[3]["text"] == "**Chosen: 1600 steps**."
    waiting = pilot.reading(table({800: 1.5}), pilot.choose(table({800: 1.5}), expected))
    assert waiting[2]["items"][-1] == "1600 steps: not complete yet" and "No step count chosen" in waiting[3]["text"]


def test_each_step_count_has_a_folder_of_its_own(pilot, monkeypatch):
    """A results folder pools the runs of one cell as seeds, so two step counts of one encoding cannot share one
    (the runner refuses it): each count writes to its own folder."""
    monkeypatch.setitem(protocol.SCALES, "standard", {**protocol.SCALES["standard"], "protocol": 3})
    cells = [{(s.experiment, s.task, s.encoding, s.arch, s.seed) for s in pilot.specs(steps)} for steps in (800, 1600)]
    assert cells[0] == cells[1]  # the same cells at two step counts
    assert len({pilot.folder(steps) for steps in pilot.STEPS}) == len(pilot.STEPS)
    assert pilot.folder(800) == pilot.OUT / "steps800"
