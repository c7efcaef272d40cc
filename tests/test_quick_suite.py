"""The quick suite (issue 65, item 2): a declared stratified sample of the standard suite's own runs, within
:data:`~pebench.protocol.SAMPLE_MINUTES` on 2 workers by the reference's recorded seconds, and compared with the
reference's runs of the sample."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pebench.cli import main
from pebench.plan.experiment import declared_sample, suite_runs
from pebench.plan.sweep_time import RUN_OVERHEAD, recorded_time, wall_time
from pebench.protocol import SAMPLE_MINUTES, SAMPLES

REFERENCE = Path(__file__).resolve().parent.parent / "results" / "standard"


@pytest.fixture(scope="module")
def quick():
    return suite_runs("quick")


@pytest.fixture(scope="module")
def standard():
    return {spec.run_id: spec for spec in suite_runs("standard")}


def test_quick_runs_are_the_standard_suites_own_runs(quick, standard):
    assert SAMPLES["quick"]["suite"] == "standard"
    assert quick and all(spec.suite == "standard" for spec in quick)
    for spec in quick:  # the same run id, so the same resolved configuration: scale, caps, lengths, seed
        assert spec.run_id in standard and spec.resolved() == standard[spec.run_id].resolved()


def test_quick_takes_one_run_per_stratum_and_every_encoding_before_any_twice(quick, standard):
    strata = Counter((spec.experiment, spec.arch, spec.task) for spec in standard.values())
    drawn = Counter((spec.experiment, spec.arch, spec.task) for spec in quick)
    assert set(drawn) == set(strata) and set(drawn.values()) == {SAMPLES["quick"]["per_stratum"]}
    for experiment in {spec.experiment for spec in quick}:
        every = {spec.encoding for spec in standard.values() if spec.experiment == experiment}
        counts = Counter(spec.encoding for spec in quick if spec.experiment == experiment)
        if sum(counts.values()) >= len(every):
            assert set(counts) == every, experiment
        assert max(counts.values()) - min(counts.values()) <= 1, (experiment, counts)
    assert suite_runs("quick", ["length_extrapolation"]) == [s for s in quick if s.experiment == "length_extrapolation"]


def test_quick_takes_at_most_its_declared_minutes_on_2_workers_by_the_references_seconds(quick):
    minutes = recorded_time([spec.run_id for spec in quick], REFERENCE, workers=2) / 60
    assert minutes <= SAMPLE_MINUTES, f"quick: {minutes:.1f} min on 2 workers"


def test_wall_time_deals_the_longest_runs_first_with_the_run_overhead():
    assert wall_time([10, 10, 10, 10], 2) == pytest.approx(20 * RUN_OVERHEAD)
    assert wall_time([30, 10, 10, 10], 2) == pytest.approx(30 * RUN_OVERHEAD)
    assert wall_time([], 2) == 0
    with pytest.raises(ValueError, match="no recorded seconds"):
        recorded_time(["0000000000000000"], REFERENCE, 2)


def copied(folder: Path, run_ids, manifest_suite: str = "standard") -> Path:
    """A results folder holding the reference's own run files of ``run_ids``."""
    (folder / "raw").mkdir(parents=True)
    for run_id in run_ids:
        shutil.copy(REFERENCE / "raw" / f"{run_id}.csv.gz", folder / "raw")
    (folder / "manifest.json").write_text(json.dumps({"suite": manifest_suite, "invocations": []}))
    return folder


def test_compare_judges_a_quick_folder_on_the_samples_runs_and_refuses_a_smoke_one(quick, standard, tmp_path,
                                                                                      capsys):
    from pebench.analysis.compare import compare

    ids = [spec.run_id for spec in quick if spec.experiment == "length_extrapolation"][:4]
    local = copied(tmp_path / "quick", ids)
    others = [run_id for run_id, spec in standard.items() if run_id not in ids and (spec.experiment, spec.task) ==
              ("length_extrapolation", standard[ids[0]].task)][:30]  # the other seeds of a sampled cell, and more
    reference = copied(tmp_path / "reference", ids + others)
    sample = declared_sample(local)
    assert sample is not None and sample[0] == "quick" and set(ids) <= sample[1]
    judged = compare(local, reference, sample=sample)
    assert judged.n_cells == 4 and judged.n_reproduced == 4 and judged.n_not_run == 0
    assert judged.verdict.startswith("quick sample of the reference: 4 of 4 cells reproduce")
    assert compare(local, reference).n_not_run > 0  # as a rerun of the whole suite: cells not yet run
    assert declared_sample(reference) is None
    assert main(["compare", str(local), str(reference)]) == 0
    assert "quick sample of the reference: 4 of 4 cells reproduce" in capsys.readouterr().out
    smoke = tmp_path / "smoke"
    (smoke / "raw").mkdir(parents=True)
    (smoke / "manifest.json").write_text(json.dumps({"suite": "smoke", "invocations": []}))
    assert main(["compare", str(local), str(smoke)]) == 2
    err = capsys.readouterr().err
    assert "holds the standard suite" in err and "the smoke suite" in err


def test_a_quick_folders_report_says_which_cells_of_the_sample_reproduce(quick, standard, tmp_path):
    """``pebench report`` on a quick folder (``<results>/local/<name>``) judges it on the sample's runs of its
    reference (the CLI passes :func:`declared_sample`), as ``compare`` does: the reference's other runs are not
    counted as cells not yet run."""
    from pebench.plan.experiment import registered_report_specs
    from pebench.report.reruns import rerun_section

    ids = [spec.run_id for spec in quick if spec.experiment == "length_extrapolation"][:3]
    others = [run_id for run_id, spec in standard.items() if run_id not in ids and (spec.experiment, spec.task) ==
              ("length_extrapolation", standard[ids[0]].task)][:20]
    reference = copied(tmp_path / "standard", ids + others)
    local = copied(tmp_path / "local" / "quick", ids)
    section = rerun_section(local, reference, local, registered_report_specs(), declared_sample(local))
    summary = " ".join(section["summary"])
    assert "reruns the quick sample of the `standard` suite" in summary
    assert "3 of 3 cells of the quick sample reproduce the reference" in summary
    assert "**quick sample of the reference: 3 of 3 cells reproduce" in section["comparison"]["verdict"]


def test_run_and_list_know_the_quick_suite(quick, capsys):
    assert main(["run", "--suite", "quick", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{len(quick)} runs -> {Path('results/local/quick')}"
    assert main(["list", "suites"]) == 0
    assert ["quick", str(len(quick))] in [line.split()[:2] for line in capsys.readouterr().out.splitlines()]


def test_the_readmes_table_of_times_is_what_the_times_script_prints():
    from pebench.bench.times import times_table

    assert times_table(REFERENCE, REFERENCE.parent / "performance" / "suites.csv") in (REFERENCE.parents[1] /
                                                                                       "README.md").read_text()


def test_the_bench_passes_suite_quick_and_an_encoding_with_its_plugin_through(monkeypatch):
    import pebench.bench as bench

    monkeypatch.delenv("PEBENCH_RESUME_COMMAND", raising=False)
    seen = []
    monkeypatch.setattr(bench, "run_steps", lambda steps, closing, env: seen.append([s.argv[2:] for s in steps]) or 0)
    monkeypatch.setattr(bench, "terminal_foreground", lambda: __import__("contextlib").nullcontext())
    bench.main(["--workers", "2", "--suite", "quick"])
    bench.main(["--workers", "2", "--encoding", "my_pe", "--plugin", "my_pe.py"])
    quick, evaluate = seen
    assert quick[0] == ("pebench", "run", "--suite", "quick", "--workers", "2", "--out", "results/local/quick")
    assert quick[-1] == ("pebench", "compare", "results/local/quick", "results/standard")
    assert evaluate == [("pebench", "evaluate", "my_pe", "--plugin", "my_pe.py", "--workers", "2")]
    assert "PEBENCH_RESUME_COMMAND" not in __import__("os").environ  # the bench's steps get it, this process not
