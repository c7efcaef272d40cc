"""What :mod:`pebench.render.protocol_tables` says for the site: the suites' measured times as it reads them from
``results/performance`` (the latest measurement of each suite, the machine it ran on, and the budget; read with the
standard library, so that the site, which renders them, loads no pandas), what the leaderboard's tables show
and the history of the reference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pebench.protocol import BOARD_KINDS, SUITES
from pebench.render.protocol_tables import (
    LEADERBOARD_TABLES,
    SUITE_BUDGET_MINUTES,
    BudgetOverrun,
    SuiteTime,
    measured_suite_times,
    protocol_columns_text,
    reference_history,
    standard_budget_overrun,
    unranked_suites_text,
)

ROOT = Path(__file__).resolve().parent.parent


def test_importing_the_protocol_tables_loads_neither_pandas_nor_scipy():
    code = ("import sys, pebench.render.protocol_tables; "
            "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"


def test_each_suite_is_measured_by_its_last_row_with_the_machine_named(tmp_path):
    (tmp_path / "suites.csv").write_text(
        "suite,workers,runs,wall_seconds,wall_minutes,date,note\n"
        "standard,2,606,5664.0,94.4,2026-11-23,\n"
        "smoke,2,60,13.0,0.2166,2026-11-23,first\n"
        "standard,2.0,606.0,4484.0,74.73,2026-11-24,\n")  # pandas writes a column with a gap as floats
    (tmp_path / "machine.csv").write_text("threads,cpu_count,processor\n1,2,x86_64\n")
    assert measured_suite_times(tmp_path) == [
        SuiteTime("smoke", 60, 2, 13.0, 0.2166, "2026-11-23", " on a 2-core x86_64 CPU"),
        SuiteTime("standard", 606, 2, 4484.0, 74.73, "2026-11-24", " on a 2-core x86_64 CPU")]
    assert measured_suite_times(tmp_path)[1].text() == "606 runs in 75 min with 2 workers on a 2-core x86_64 CPU"
    assert measured_suite_times(tmp_path)[0].text() == "60 runs in 13 s with 2 workers on a 2-core x86_64 CPU"


def test_no_measurement_without_a_suites_file_and_no_machine_without_its_file(tmp_path):
    assert measured_suite_times(tmp_path) == []
    (tmp_path / "suites.csv").write_text("suite,workers,runs,wall_seconds,wall_minutes,date\n"
                                         "smoke,2,60,13.0,0.2166,2026-11-23\n")
    assert measured_suite_times(tmp_path)[0].cpu == ""


def test_the_budget_is_overrun_only_past_it():
    assert standard_budget_overrun(SUITE_BUDGET_MINUTES) is None
    over = standard_budget_overrun(SUITE_BUDGET_MINUTES + 15)
    assert isinstance(over, BudgetOverrun) and over.minutes_over == 15 and over.n_tasks > 0 and over.n_seeds > 0


def test_the_leaderboard_shows_protocol_v3s_boards_first_each_with_a_title_and_lead():
    assert tuple(kind for kind, _, _ in LEADERBOARD_TABLES[:len(BOARD_KINDS)]) == BOARD_KINDS
    assert all(title and lead for _, title, lead in LEADERBOARD_TABLES)
    assert len({kind for kind, _, _ in LEADERBOARD_TABLES}) == len(LEADERBOARD_TABLES)


def test_the_leads_and_pages_describe_the_pairwise_board_and_the_task_level_comparisons():
    """Issue 66: the board ranks every encoding from pairwise task-level comparisons, with P(tier), "between tiers"
    and "no extrapolation"; a declared comparison tests task means. No lead or page says the replaced rules."""
    leads = {kind: lead for kind, _, lead in LEADERBOARD_TABLES}
    for new in ("pairwise comparisons task by task", "P(tier)", "between tiers", "no extrapolation, never a tier"):
        assert new in leads["extrapolation"], new
    assert "P(first)" not in leads["extrapolation"] and "at least half" not in leads["extrapolation"]
    assert "not ranked on the extrapolation board" not in leads["capability"]
    assert "tested on task means" in leads["pairwise"] and "minimum detectable effect" in leads["pairwise"]
    protocol, leaderboard = ((ROOT / "docs" / name).read_text() for name in ("protocol.md", "leaderboard.md"))
    for old in ("overlap the tier leader's share its tier", "P(first) is the board's stability",
                "Unit of inference of a declared verdict: the run pair", "P(first) says how often"):
        assert old not in protocol and old not in leaderboard, old
    assert "Unit of inference of a declared verdict: the task." in protocol and "P(tier)" in leaderboard


def test_the_suites_without_results_are_named_as_not_ranked():
    ranked = [suite for suite in SUITES if suite != "smoke"]
    assert unranked_suites_text(ranked) == ""
    assert unranked_suites_text(ranked[1:]) == f"No results of the `{ranked[0]}` suite are committed, so it is not " \
                                               "ranked here."
    assert unranked_suites_text(ranked[2:]).startswith(f"No results of the `{ranked[0]}` and `{ranked[1]}` suites "
                                                       "are committed, so they are not ranked")


def test_the_reference_history_lists_the_commits_of_its_manifest_newest_first():
    history = reference_history(ROOT)
    assert history.headers == ["commit", "date", "made with code at", "commit message"]
    dates = [row[1].text for row in history.rows]  # none in a checkout without history (a shallow clone)
    assert dates == sorted(dates, reverse=True)
    assert reference_history(ROOT, "no_such_suite").rows == []


def test_results_say_whether_they_carry_the_fit_criterion_and_floors():
    assert protocol_columns_text(["run_id", "fitted", "id_floor_token_acc"]).startswith("record the fit criterion")
    assert protocol_columns_text(["run_id", "fitted"]).startswith("predate this protocol")
