"""Protocol v4 (issue 66) as data: declared beside v3, which stays in force until the v4 reference is complete;
``pebench run --protocol 4`` expands the standard suite as v4 declares it (its seeds, the whole field, its
decoder battery and caps, the extension of runs still improving at their cap), and the protocol is restored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pebench import protocol
from pebench.cli import main
from pebench.plan.experiment import suite_runs

ROOT = Path(__file__).resolve().parent.parent


def test_v4_expands_the_standard_suite_as_declared_and_the_protocol_in_force_is_restored():
    before = [spec.run_id for spec in suite_runs("standard")]
    in_force = (protocol.EXTENSION_STEPS.get("standard"), protocol.ARCH_TASKS.get("standard"))
    with protocol.as_declared("standard", 4):
        v4 = suite_runs("standard")
        assert {spec.protocol for spec in v4} == {4}
        assert {spec.seed for spec in v4} == set(protocol.V4_SEEDS)
        assert set(protocol.FIELD_2025) <= {spec.encoding for spec in v4}
        length = [spec for spec in v4 if spec.experiment == "length_extrapolation"]
        # every run of the battery may train on past its cap, by the declared extension, no more
        assert {spec.train.extend_to - spec.train.steps for spec in length} == {protocol.V4_EXTENSION}
        decoder = {spec.task for spec in length if spec.arch == "decoder"}
        encoder = {spec.task for spec in length if spec.arch == "encoder"}
        assert decoder == set(protocol.CORE_TASKS) | {task for _, task in protocol.V4_BATTERY}
        assert encoder == set(protocol.CORE_TASKS)
        for (arch, task), cap in protocol.V4_BATTERY.items():
            assert {s.train.steps for s in length if (s.arch, s.task) == (arch, task)} == {cap}
    assert [spec.run_id for spec in suite_runs("standard")] == before  # as before the block
    assert (protocol.EXTENSION_STEPS.get("standard"), protocol.ARCH_TASKS.get("standard")) == in_force
    for version in (2, 3):  # the earlier protocols extend nothing and add no task to one architecture
        with pytest.raises(RuntimeError), protocol.as_declared("standard", version):
            assert "standard" not in protocol.EXTENSION_STEPS and "standard" not in protocol.ARCH_TASKS
            assert {spec.protocol for spec in suite_runs("standard")} == {version}
            raise RuntimeError("restored even when the block raises")
        assert [spec.run_id for spec in suite_runs("standard")] == before


def test_the_protocol_in_force_is_declared_as_it_is():
    version = protocol.SCALES["standard"]["protocol"]
    declared = protocol.STANDARD_DECLARED[version]
    assert declared["scale"] == protocol.SCALES["standard"] and declared["seeds"] == protocol.SEEDS["standard"]
    assert declared["task_steps"] == protocol.TASK_STEPS["standard"]
    assert declared["encodings"] == protocol.SUITE_ENCODINGS["standard"]
    assert declared.get("extension") == protocol.EXTENSION_STEPS.get("standard")
    assert declared.get("arch_tasks") == protocol.ARCH_TASKS.get("standard")
    with protocol.as_declared("standard", version):
        assert protocol.SCALES["standard"]["protocol"] == version


def test_the_v4_battery_is_the_battery_pilots_admitted_tasks_with_their_caps():
    """The caps v4 declares are those the battery pilot's reading wrote, once the pilot is complete."""
    reading = json.loads((ROOT / "results" / "pilots" / "battery_fit.json").read_text())
    admitted = {(arch, task): cap for arch, caps in reading["admitted"].items() for task, cap in caps.items()}
    if reading["pending"]:
        pytest.skip(f"the battery pilot is not complete: {len(reading['pending'])} candidate(s) pending")
    assert admitted == protocol.V4_BATTERY


def test_run_protocol_4_lists_v4s_runs_and_refuses_what_is_not_declared(capsys):
    assert main(["run", "--suite", "standard", "--protocol", "4", "--dry-run"]) == 0
    with protocol.as_declared("standard", 4):
        assert capsys.readouterr().out.splitlines()[-1].startswith(f"{len(suite_runs('standard'))} runs")
    for argv in (["--suite", "standard", "--protocol", "5"], ["--suite", "smoke", "--protocol", "4"]):
        assert main(["run", *argv, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "only the standard suite is declared under another protocol" in err


def test_the_bench_calibrates_an_extended_run():
    """``pebench run --protocol 4`` times a few steps of its runs before the sweep: a run with an extension is timed
    without its fit criterion, so without its extension too (it raised before)."""
    import dataclasses

    from pebench.plan.sweep_time import calibrate

    with protocol.as_declared("standard", 4):
        spec = next(s for s in suite_runs("standard", ["length_extrapolation"]) if s.train.extend_to)
    small = dataclasses.replace(spec, d_model=16, n_heads=2, n_layers=1)  # a second of CPU, not the scale's
    assert calibrate(small, "cpu") > 0
