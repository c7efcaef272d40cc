"""The suites' measured times as :mod:`pebench.protocol_tables` reads them from ``results/performance``: the latest
measurement of each suite, the machine it ran on, and the budget; read with the standard library, so that the site
(which renders them) loads no pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pebench.protocol_tables import (
    SUITE_BUDGET_MINUTES,
    BudgetOverrun,
    SuiteTime,
    measured_suite_times,
    standard_budget_overrun,
)

ROOT = Path(__file__).resolve().parent.parent


def test_importing_the_protocol_tables_loads_neither_pandas_nor_scipy():
    code = "import sys, pebench.protocol_tables; print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))"
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
