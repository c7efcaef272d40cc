"""Pilot readings the site renders (:mod:`pebench.render.pilot_readings`)."""

from __future__ import annotations

import json

import pandas as pd

from pebench.render.pilot_readings import depth_pilot_blocks


def test_the_depth_pilots_reading_pivots_runs_fitted_per_depth_arch_and_encoding(tmp_path):
    assert depth_pilot_blocks(tmp_path) is None  # not read yet
    pd.DataFrame({"n_layers": [2, 2, 3], "arch": ["decoder"] * 3, "encoding": ["rope", "none", "rope"],
                  "fitted": [3.0, 0.0, 2.0], "runs": [3.0, 3.0, 3.0]}).to_csv(tmp_path / "depth_pilot.csv", index=False)
    (tmp_path / "depth_pilot.json").write_text(json.dumps({
        "runs": 9, "chosen_depth": None, "caps": [],
        "depths": {"2": {"meets": False, "decided": True, "why": "rope fits 3 of 3"},
                   "3": {"meets": False, "decided": False, "why": "incomplete"}}}))
    lead, pivot, verdicts, chosen = depth_pilot_blocks(tmp_path, "pilots")
    assert lead["text"].startswith("From `pilots/depth_pilot.csv` (9 runs so far)")
    assert pivot["header"] == ["depth", "arch", "NoPE", "RoPE"]  # the compared encodings' order, labels shown
    assert pivot["rows"] == [["2", "decoder", "0/3", "3/3"], ["3", "decoder", "—", "2/3"]]
    assert verdicts["items"] == ["depth 2: fails the rule (rope fits 3 of 3)", "depth 3: undecided (incomplete)"]
    assert chosen["text"].startswith("**No depth chosen yet**")


def test_a_depth_chosen_by_the_rule_is_told_apart_from_the_fallback(tmp_path):
    """Only a depth that met the rule reads "Chosen depth"; when none did, the reading says the depth is the
    pilot's fallback and not protocol v3's scale (the width pilot decided that)."""
    pd.DataFrame({"n_layers": [2], "arch": ["decoder"], "encoding": ["rope"], "fitted": [3.0], "runs": [3.0]}
                 ).to_csv(tmp_path / "depth_pilot.csv", index=False)
    for meets, expected in ((True, "**Chosen depth: 2.**"),
                            (False, "**No depth met the rule; the depth pilot's fallback is depth 2**")):
        (tmp_path / "depth_pilot.json").write_text(json.dumps({
            "runs": 3, "chosen_depth": 2, "caps": [],
            "depths": {"2": {"meets": meets, "decided": True, "why": "rope fits 3 of 3"}}}))
        chosen = depth_pilot_blocks(tmp_path)[3]["text"]
        assert chosen.startswith(expected)
        assert ("not protocol v3's scale" in chosen) is not meets
