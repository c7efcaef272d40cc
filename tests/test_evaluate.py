"""``pebench evaluate`` (issue 65, item 1): one encoding's runs under a suite's protocol, judged against a reference
without rerunning it; on partial data per-task numbers and the missing runs, never a board; bad input refused in one
line. The library's verdict (:mod:`pebench.analysis.verdict`) is tested on synthetic runs whose answer is known."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pebench import encodings, registry
from pebench.analysis import verdict as verdict_module
from pebench.analysis.verdict import VerdictError, protocol_problems, verdict
from pebench.cli import main

#: the reference of these tests: three encodings on the smoke suite's two length tasks (copy, majority), decoders;
#: six runs of a few seconds each on 2 CPU cores
REFERENCE = ["--suite", "smoke", "--experiment", "length_extrapolation", "--filter", "encoding=none,rope,alibi"]
PLUGIN = "evaluate_test_sinusoidal"


@pytest.fixture(scope="module")
def reference_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("evaluate") / "smoke"
    assert main(["run", *REFERENCE, "--out", str(folder)]) == 0
    return folder


@pytest.fixture
def plugin(tmp_path, monkeypatch) -> Path:
    """The docs' example encoding under a name of this test's, loaded for this test only."""
    source = (Path(__file__).resolve().parent.parent / "docs" / "examples" / "scaled_sinusoidal.py").read_text()
    path = tmp_path / "my_encoding.py"
    path.write_text(source.replace('"scaled_sinusoidal"', f'"{PLUGIN}"'))
    for name in ("_LOADED", "_RECORDS"):
        monkeypatch.setattr(registry, name, type(getattr(registry, name))())
    encodings.ENCODINGS.names()
    for name in ("_entries", "_meta"):
        monkeypatch.setattr(encodings.ENCODINGS, name, dict(getattr(encodings.ENCODINGS, name)))
    return path


def _evaluate(plugin: Path, reference: Path, out: Path, *extra: str) -> int:
    return main(["evaluate", PLUGIN, "--plugin", str(plugin), "--suite", "smoke", "--filter",
                 "experiment=length_extrapolation", "--reference", str(reference), "--out", str(out), *extra])


def test_a_plugin_encoding_gets_a_complete_verdict_with_its_source(plugin, reference_folder, tmp_path, capsys):
    out = tmp_path / "mine"
    # the filter keeps the length experiment only: the rest of the smoke suite's runs are missing, so the verdict is
    # partial; judged again with the expected runs of the filter alone, it is complete (a suite of that experiment)
    assert _evaluate(plugin, reference_folder, out) == 0
    record = json.loads((out / "verdict" / "verdict.json").read_text())
    assert record["encoding"] == PLUGIN and record["suite"] == "smoke"
    assert record["complete"] is False  # the smoke suite gives it order-sensitivity and LM runs too
    assert {row["experiment"] for row in record["missing"]} >= {"order_sensitivity"}
    assert record["board"] == [] and record["comparisons"] == []
    assert not list((out / "verdict").glob("verdict_board.*"))
    assert "no board, no tier and no comparison" in capsys.readouterr().out
    # per task: the encoding's row first, then the reference's encodings on the same seeds
    tasks = {row["task"] for row in record["per_task"] if row["encoding"] == PLUGIN}
    assert tasks == {"copy", "majority"}
    caption = next(line for line in (out / "verdict" / "verdict_per_task_decoder.md").read_text().splitlines()
                   if "per task" in line)
    assert caption.count("per task") == 1  # the title names the encoding once, the caption does not repeat it
    # the source: its hash names the bytes of the plugin, and a copy is kept beside the verdict
    digest = hashlib.sha256(plugin.read_bytes()).hexdigest()
    assert [f["sha256"] for f in record["source"]["files"]] == [digest]
    assert (out / "verdict" / "source" / f"{PLUGIN}.py").read_bytes() == plugin.read_bytes()
    assert record["source"]["sha256"] == hashlib.sha256(digest.encode()).hexdigest()  # the hash of the hashes


def test_a_complete_verdict_ranks_the_encoding_among_the_reference(plugin, reference_folder, tmp_path, capsys,
                                                                      monkeypatch):
    """Judged against the expected runs of the length experiment only, the verdict is complete: board, comparisons
    and tables are written, the encoding's row among the reference's."""
    from pebench.cli import evaluate as command

    out = tmp_path / "mine"
    real = command.judge
    monkeypatch.setattr(command, "judge", lambda args, out, specs: real(
        args, out, [s for s in specs if s.experiment == "length_extrapolation"]))
    assert _evaluate(plugin, reference_folder, out) == 0
    record = json.loads((out / "verdict" / "verdict.json").read_text())
    assert record["complete"] is True and record["missing"] == []
    assert PLUGIN in {row["encoding"] for row in record["board"]}
    assert {row["encoding"] for row in record["board"]} == {PLUGIN, "none", "rope", "alibi"}
    # the smoke suite's one-layer models fit nothing: no task pairs an encoding with a baseline, and it says so
    assert record["comparisons"] == []
    assert any("declared comparisons: none tested" in line for line in record["summary"])
    for name in ("verdict_per_task_decoder", "verdict_board"):
        for ext in ("md", "tex", "csv"):
            assert (out / "verdict" / f"{name}.{ext}").is_file()
    assert (out / "verdict" / "verdict_length_extrapolation_decoder.svg").is_file()
    assert "verdict ->" in capsys.readouterr().out
    if shutil.which("pdflatex"):  # the tables compile in a two-column paper (the site's CI has no TeX)
        paper = tmp_path / "paper.tex"
        inputs = "".join(f"\\input{{{out / 'verdict' / name}.tex}}\n" for name in
                         ("verdict_per_task_decoder", "verdict_board"))
        paper.write_text("\\documentclass[twocolumn]{article}\n\\usepackage{booktabs,graphicx}\n"
                         f"\\begin{{document}}\nText.\n{inputs}\\end{{document}}\n")
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", paper.name], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]
        assert "Overfull \\hbox" not in done.stdout


def test_no_run_on_an_empty_folder_says_what_is_missing_and_ranks_nothing(plugin, reference_folder, tmp_path,
                                                                            capsys, monkeypatch):
    from pebench.cli import evaluate as command

    monkeypatch.setattr(command, "_eta", lambda todo, args: 60.0 * len(todo))  # no calibration in a test
    out = tmp_path / "empty"
    assert _evaluate(plugin, reference_folder, out, "--no-run") == 0
    printed = capsys.readouterr().out
    assert "still to make" in printed and "missing: length_extrapolation / decoder / copy: 1 run(s)" in printed
    record = json.loads((out / "verdict" / "verdict.json").read_text())
    assert record["complete"] is False and record["per_task"] == [] and record["board"] == []
    assert record["eta_seconds"] == 60.0 * sum(row["runs"] for row in record["missing"])


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["evaluate", "no_such_encoding", "--suite", "smoke", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no_such_encoding" in err
    assert main(["evaluate", "rope", "--suite", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err


# --------------------------------------------------------------------------- the library, on synthetic runs


def _rows(encoding: str, scores: dict[str, list[float]], *, steps: int = 100) -> pd.DataFrame:
    """Run rows (one evaluation length beyond training per run) of ``encoding``: per task, a score per seed."""
    records = []
    for task, values in scores.items():
        for seed, score in enumerate(values):
            run_id = hashlib.sha256(f"{encoding} {task} {seed}".encode()).hexdigest()[:16]
            for length, acc in ((4, 1.0), (16, score)):
                records.append(dict(
                    run_id=run_id, suite="standard", experiment="length_extrapolation", task=task, task_version=1,
                    arch="decoder",
                    encoding=encoding, encoding_options="{}", seed=seed, eval_len=length, train_max_len=8,
                    condition="original", variant="trained", status="ok", token_acc=acc, seq_acc=acc,
                    loss=1 - acc, n_examples=64, fitted=True, order_dependent=True, floor_token_acc=0.0,
                    chance_token_acc=0.1, steps=steps, d_model=64, n_layers=3, n_heads=4, params=1000,
                    encoding_params=0, protocol=3, rows_sha256=run_id))
    return pd.DataFrame.from_records(records)


#: seven registered order-dependent tasks (the task registry says which are; the runs here are synthetic)
TASKS = ["copy", "reverse", "duplicate", "selective_copy", "odds_first", "reverse_string", "even_pairs"]


def _reference() -> pd.DataFrame:
    return pd.concat([_rows("none", {t: [0.5, 0.52, 0.48] for t in TASKS}),
                      _rows("rope", {t: [0.2, 0.22, 0.18] for t in TASKS})], ignore_index=True)


def _expected(own: pd.DataFrame) -> pd.DataFrame:
    return own.drop_duplicates("run_id")[["run_id", "experiment", "arch", "task"]]


def test_an_encoding_better_on_every_task_leads_the_board_and_beats_its_baselines():
    own = _rows("mine", {t: [0.9, 0.92, 0.88] for t in TASKS})
    found = verdict(own, _reference(), "mine", _expected(own), baselines=("none", "rope"))
    assert found.complete
    board = verdict_module.placement(found)
    assert board.iloc[0]["placement"] == "tier 1" and board.iloc[0]["p_first"] == 1.0
    comparisons = found.comparisons.set_index("b")
    # 7 tasks, every difference positive: the exact sign-flip p is 2/2^7 = 0.0156, Holm over 2 = 0.031 < 0.05
    assert comparisons.loc["none", "verdict"] == comparisons.loc["rope", "verdict"] == "a better"
    assert comparisons.loc["none", "p_holm"] == pytest.approx(2 * 2 / 2**7)
    mine = found.per_task[found.per_task["own"]]
    assert np.allclose(mine["score"], 0.9)  # the mean of 0.9, 0.92, 0.88: exact in binary to 1e-15


def test_the_summary_gives_the_probability_of_a_tier_and_none_below_the_floor():
    """An encoding at or below the position-free floor has no tier, so no probability of one (it said "P nan")."""
    own = _rows("mine", {t: [0.9, 0.92, 0.88] for t in TASKS})
    top = verdict(own, _reference(), "mine", _expected(own), baselines=("none",))
    assert verdict_module.summary(top)[0].startswith("decoder: tier 1 (P(tier) 1.000), score ")
    own = _rows("mine", {t: [0.0, 0.0, 0.0] for t in TASKS})  # the floor (0.0) on every task
    below = verdict(own, _reference(), "mine", _expected(own), baselines=("none",))
    line = verdict_module.summary(below)[0]
    assert line.startswith("decoder: no extrapolation, score ") and "nan" not in line and "P(tier)" not in line


def test_partial_runs_give_per_task_numbers_and_no_board():
    own = _rows("mine", {t: [0.9, 0.92, 0.88] for t in TASKS})
    expected = pd.concat([_expected(own), _expected(own).assign(run_id=lambda f: f["run_id"] + "-later")])
    found = verdict(own, _reference(), "mine", expected)
    assert not found.complete and found.board.empty and found.comparisons.empty
    assert found.missing["runs"].sum() == len(_expected(own)) and len(found.per_task)
    assert "no board" in verdict_module.summary(found)[0]


def test_runs_of_another_protocol_or_encoding_are_refused():
    own = _rows("mine", {t: [0.9] for t in TASKS}, steps=999)
    problems = protocol_problems(own, _reference())
    assert problems and "steps 999 (reference 100)" in problems[0]
    with pytest.raises(VerdictError, match="differ from the reference's protocol"):
        verdict(own, _reference(), "mine", _expected(own))
    mixed = pd.concat([_rows("mine", {"copy": [0.9]}), _rows("other", {"copy": [0.9]})])
    with pytest.raises(VerdictError, match="must all be of 'mine'"):
        verdict(mixed, _reference(), "mine", _expected(mixed))


def test_a_builtin_encoding_is_judged_on_its_new_runs_not_the_references():
    own = _rows("rope", {t: [0.9, 0.92, 0.88] for t in TASKS})
    found = verdict(own, _reference(), "rope", _expected(own), baselines=("none",))
    mine = found.per_task[found.per_task["own"]]
    assert len(mine) == len(TASKS) and np.allclose(mine["score"], 0.9)  # not the reference's 0.2
    assert set(found.per_task["encoding"]) == {"rope", "none"}


def test_an_encoding_that_computes_a_baseline_is_said_to_be_that_model():
    """A new encoding whose runs give the reference's RoPE rows number for number (as ``irope`` below its NoPE
    interval does) is that model at this scale: the verdict says so first, complete or not; one row apart, it does
    not."""
    own = _rows("mine", {t: [0.2, 0.22, 0.18] for t in TASKS})  # the reference's rope scores, seed for seed
    found = verdict(own, _reference(), "mine", _expected(own), baselines=("none",))
    assert found.identical == [("rope", 3 * len(TASKS))]
    said = verdict_module.summary(found)
    assert said[0].startswith(f"identical to RoPE: the same rows in every one of the {3 * len(TASKS)} runs they "
                              "share") and said[0].endswith("its placement is RoPE's, not a result of its own")
    partial = verdict(own, _reference(), "mine", pd.concat([_expected(own), _expected(own).assign(run_id="later")]))
    assert not partial.complete and verdict_module.summary(partial)[1].startswith("identical to RoPE")
    other = own.copy()
    other.loc[other.index[-1], "loss"] += 1e-9  # one number of one run differs: another model
    assert verdict(other, _reference(), "mine", _expected(other), baselines=("none",)).identical == []


def test_a_report_on_a_grid_with_gaps_writes_no_board(reference_folder, tmp_path):
    """The issue's case: a few runs of one encoding beside a reference (pebench combine) ranked it on one task;
    now a folder whose grid lacks runs gets per-task tables and a finding saying why it has no board."""
    from pebench.analysis.leaderboard import grid_gaps
    from pebench.analysis.results import run_metrics
    from pebench.store import load, raw_files

    folder = tmp_path / "partial"
    shutil.copytree(reference_folder, folder)
    rows = load(folder)
    dropped = rows[(rows["encoding"] == "rope") & (rows["task"] == "copy")]["run_id"].iloc[0]
    for path in raw_files(folder / "raw"):
        if dropped in path.name:
            path.unlink()
    gaps = grid_gaps(run_metrics(load(folder)))
    assert gaps[["encoding", "task", "missing"]].values.tolist() == [["rope", "copy", 1]]
    assert grid_gaps(run_metrics(load(reference_folder))).empty
    assert main(["report", str(folder)]) == 0
    findings = json.loads((folder / "report.json").read_text())["findings"]
    assert any("no board: 1 runs of its grid are not in the folder (rope on copy (decoder): 1 of 1 seeds)" in line
               for line in findings)
    assert not list((folder / "tables").glob("extrapolation_*")) and not list((folder / "tables").glob("leaderboard_*"))
    assert list((folder / "tables").glob("*.md"))  # the per-task tables are there
