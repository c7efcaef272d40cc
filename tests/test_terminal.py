"""What the terminal says (issue 39): compare on a partial rerun, refused suites, a fast and torch-free CLI
start, bare ``pebench``, ``show``'s lead table and filters, an interrupted ``tox -e bench``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_results import write_synthetic_results

from pebench.cli import main
from pebench.compare import compare


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return write_synthetic_results(tmp_path_factory.mktemp("reference"))


def copy_without(source: Path, target: Path, drop) -> Path:
    """A copy of the results folder ``source`` without the run files whose first row ``drop`` picks."""
    (target / "raw").mkdir(parents=True)
    for path in (source / "raw").glob("*.csv"):
        if not drop(pd.read_csv(path).iloc[0]):
            shutil.copy(path, target / "raw" / path.name)
    return target


# --------------------------------------------------------------------------- compare


def test_a_partial_rerun_counts_cells_not_yet_run_apart_from_cells_that_do_not_reproduce(synthetic, tmp_path):
    # a sweep under way: seed 2 of length_extrapolation not run yet, no lm_extrapolation run at all
    local = copy_without(synthetic, tmp_path / "local", lambda first: first["experiment"] == "lm_extrapolation" or (
        first["experiment"] == "length_extrapolation" and first["seed"] == 2))
    comparison = compare(local, synthetic)
    # judged: the 8 order_sensitivity cells and the 4 rope_scaling variants, every seed run on both sides
    assert (comparison.n_reproduced, comparison.n_cells) == (12, 12)
    assert comparison.failing == []
    assert comparison.n_not_run == 6 + 3
    assert comparison.verdict.startswith("12 of 12 cells reproduce")
    assert "9 cells of the reference not yet run (6 of them partly)" in comparison.verdict
    assert not comparison.all_reproduce  # a partial rerun has not reproduced the reference (yet)
    assert set(comparison.only_reference["experiment"]) == {"lm_extrapolation"}
    partly = comparison.not_run[comparison.not_run["partly_run"]]
    assert set(partly["seeds_not_run"]) == {"2"}
    summary = comparison.summary()
    assert "not reproduced:" not in summary
    assert "  length_extrapolation/copy/alibi/decoder (seeds 2)" in summary


def test_a_seed_that_failed_in_the_rerun_is_judged_and_does_not_reproduce(synthetic, tmp_path):
    local = copy_without(synthetic, tmp_path / "local", lambda first: False)
    for path in (local / "raw").glob("*.csv"):
        frame = pd.read_csv(path)
        first = frame.iloc[0]
        if (first["experiment"], first["task"], first["encoding"], first["seed"]) == (
                "length_extrapolation", "copy", "alibi", 2):
            frame.iloc[:1].assign(status="failed", error="RuntimeError: boom").to_csv(path, index=False)
    comparison = compare(local, synthetic)
    assert comparison.n_not_run == 0 and comparison.n_cells == comparison.n_reproduced + 1
    assert any("copy/alibi/decoder" in line and "seeds 2 not completed on both sides" in line
               for line in comparison.failing), comparison.failing


def test_compare_of_a_partial_rerun_says_how_many_cells_are_not_yet_run_and_exits_1(synthetic, tmp_path, capsys):
    local = copy_without(synthetic, tmp_path / "local", lambda first: first["experiment"] == "lm_extrapolation")
    assert main(["compare", str(local), str(synthetic)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("verdict: ")
    assert "3 cells of the reference not yet run" in out.splitlines()[-1]


def test_a_smoke_folder_against_a_standard_one_is_refused_in_one_line(synthetic, tmp_path, capsys):
    smoke = tmp_path / "smoke"
    (smoke / "raw").mkdir(parents=True)
    for path in (synthetic / "raw").glob("*.csv"):
        pd.read_csv(path).assign(suite="smoke").to_csv(smoke / "raw" / path.name, index=False)
    assert main(["compare", str(smoke), str(synthetic)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "holds the smoke suite" in err and "the standard suite" in err

