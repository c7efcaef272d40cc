"""report.json says whether a folder holds every run of its suite as a boolean the library writes (``complete``),
and the site reads it rather than searching the completeness sentence for a word."""

from __future__ import annotations

import json

from test_docs import fake_results, load_generators
from test_results import write_synthetic_results

from pebench.report.findings import complete, completeness
from pebench.store import raw_files, run_file_id


def test_complete_is_whether_any_run_of_the_suite_is_missing(tmp_path):
    folder = write_synthetic_results(tmp_path / "standard")
    held = {run_file_id(path) for path in raw_files(folder / "raw")}
    assert complete(folder, held) is True
    assert complete(folder, sorted(held)[1:]) is True  # a run of another protocol is no missing run
    assert complete(folder, [*held, "0123456789abcdef"]) is False
    assert "**Incomplete:**" in completeness(folder, [*held, "0123456789abcdef"])
    assert complete(folder, []) is None  # not a suite this installation defines: not said


def test_the_leaderboards_caveat_follows_the_reports_flag_not_its_wording(tmp_path):
    gen = load_generators()
    folder = fake_results(tmp_path / "results")
    index = json.loads((folder / "report.json").read_text())
    for flag, wording, shown in ((False, "Runs are missing.", True), (True, "**Incomplete:** wording only.", False)):
        (folder / "report.json").write_text(json.dumps({**index, "complete": flag, "completeness": wording}))
        text = gen.headline_findings(tmp_path / "results")
        assert text.startswith(wording) is shown, text
