"""Golden run ids of the committed standard suite.

A run id is the hash of a run's resolved configuration, and the committed reference results in
``results/standard/raw/`` are named by it: a change to a spec, a default, a grid or the hashing that
moves any id silently orphans the reference (a rerun would no longer resume, and ``pebench compare``
would find no matching cells). These tests pin ids copied from the committed file names.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pebench.experiment import suite_runs

RAW = Path(__file__).resolve().parent.parent / "results" / "standard" / "raw"

# (experiment, task, encoding, arch, seed) -> run id, copied from results/standard/raw/<run id>.csv
GOLDEN = {
    ("length_extrapolation", "copy", "none", "decoder", 0): "ae669615fc6d8656",
    ("length_extrapolation", "reverse", "randomized:rope", "decoder", 2): "b840b2fb26f48f8c",
    ("order_sensitivity", "copy", "alibi", "encoder", 1): "7f61575b461501c0",
    ("order_sensitivity", "majority", "t5", "encoder", 1): "1af3827c4b7f4610",
    ("order_sensitivity", "copy", "randomized:rope", "encoder", 2): "f9c505f6e85e8735",
    ("lm_extrapolation", "charlm", "rope", "decoder", 0): "85f422306d539909",
    ("lm_extrapolation", "charlm", "randomized:rope", "decoder", 2): "15c3ab8d29780506",
    ("rope_scaling", "copy", "rope", "decoder", 1): "8d60362df70483e2",
}
CASES = [pytest.param(run, run_id, id="-".join(map(str, run))) for run, run_id in GOLDEN.items()]


@pytest.fixture(scope="module")
def specs():
    return suite_runs("standard")


def key(spec) -> tuple:
    return spec.experiment, spec.task, spec.encoding, spec.arch, spec.seed


@pytest.mark.parametrize(("run", "run_id"), CASES)
def test_standard_suite_produces_the_committed_run_id(specs, run, run_id):
    assert [spec.run_id for spec in specs if key(spec) == run] == [run_id]


@pytest.mark.parametrize(("run", "run_id"), CASES)
def test_golden_ids_name_the_committed_files_of_those_runs(run, run_id):
    """The literals above are what the committed files hold (guards the test's own data)."""
    rows = pd.read_csv(RAW / f"{run_id}.csv")
    columns = ["experiment", "task", "encoding", "arch", "seed", "run_id"]
    assert {tuple(row) for row in rows[columns].itertuples(index=False)} == {(*run, run_id)}


def test_standard_run_ids_are_exactly_the_committed_files(specs):
    committed = {path.stem for path in RAW.glob("*.csv")}
    ids = {spec.run_id for spec in specs}
    assert len(ids) == len(specs)
    assert ids == committed, (f"ids without a committed file: {sorted(ids - committed)}; "
                              f"committed files no spec produces: {sorted(committed - ids)}")
