"""Per-example predictions (issue 65, item 3): ``pebench run --predictions`` writes every evaluated example with the
model's prediction beside its run file, without changing the run's id or rows; the examples add up to the rows;
``pebench verify`` catches an edited or foreign predictions file; a verdict lists them with their hashes."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pebench import store
from pebench.cli import main
from pebench.plan.execute import PREDICTIONS_KEY, Origin, execute
from pebench.plan.experiment import suite_runs
from pebench.report.verdict import predictions_sentence
from pebench.store.predictions import (
    RECORD_KEYS,
    check_against_rows,
    inventory,
    predictions_bytes,
    predictions_path,
    read_predictions,
)
from pebench.store.schema import BASE_VARIANT

#: two smoke runs (NoPE and RoPE on copy, decoders): a few seconds each on 2 CPU cores
SMOKE = ["--suite", "smoke", "--experiment", "length_extrapolation", "--filter", "task=copy",
         "--filter", "encoding=none,rope"]
ORIGIN = Origin(commit="test", cpu_model="test cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("predictions") / "smoke"
    assert main(["run", *SMOKE, "--out", str(out), "--predictions"]) == 0
    return out


def _base_rows(run_file: Path) -> list[dict]:
    frame = store.read_run_file(run_file)
    return frame[frame["variant"] == BASE_VARIANT].to_dict("records")


def test_each_run_has_its_predictions_and_they_add_up_to_its_rows(folder):
    runs = sorted(store.raw_files(folder / "raw"))
    assert len(runs) == 2
    for run_file in runs:
        run_id = store.run_file_id(run_file)
        records = read_predictions(predictions_path(folder, run_id))
        rows = _base_rows(run_file)
        assert len(records) == sum(int(n) for n in (row["n"] for row in rows))
        assert check_against_rows(records, rows) == []
        assert set(records[0]) == set(RECORD_KEYS) and records[0]["run_id"] == run_id
        first = records[0]
        assert len(first["target"].split()) == len(first["prediction"].split()) == first["n_tokens"]
        assert {record["eval_len"] for record in records} == {int(row["eval_len"]) for row in rows}
        assert PREDICTIONS_KEY not in pd.read_csv(run_file).columns  # the run file has no column for them


def test_keeping_predictions_changes_neither_the_run_id_nor_its_rows():
    spec = next(s for s in suite_runs("smoke", ["length_extrapolation"]) if s.task == "copy" and s.encoding == "none")
    kept = dataclasses.replace(spec, keep_predictions=True)
    assert kept.run_id == spec.run_id and kept.resolved() == spec.resolved()
    plain, with_examples = execute(spec, "cpu", origin=ORIGIN), execute(kept, "cpu", origin=ORIGIN)
    examples = with_examples[0].pop(PREDICTIONS_KEY)
    assert PREDICTIONS_KEY not in plain[0]
    for row in (*plain, *with_examples):
        row.pop("train_seconds")  # wall time: the one column two makings of a run may differ in
    assert plain == with_examples  # seeded: the same run, bit for bit, whether it keeps its examples or not
    assert check_against_rows(examples, [row for row in plain if row["variant"] == BASE_VARIANT]) == []


def test_the_file_is_the_same_bytes_for_the_same_records():
    records = [{"eval_len": 4, "condition": "original", "example": 0, "input": "1 2", "target": "1 2",
                "prediction": "1 3", "token_hits": 1, "n_tokens": 2, "loss": 0.5}]
    assert predictions_bytes("0123456789abcdef", records) == predictions_bytes("0123456789abcdef", records)
    line = json.loads(gzip.decompress(predictions_bytes("0123456789abcdef", records)))
    assert tuple(line) == RECORD_KEYS and line["run_id"] == "0123456789abcdef"


def test_a_row_the_examples_do_not_add_up_to_is_named():
    records = [{"eval_len": 4, "condition": "original", "example": i, "input": "1 2", "target": "1 2",
                "prediction": "1 2", "token_hits": 2, "n_tokens": 2, "loss": 0.1} for i in range(2)]
    row = {"eval_len": 4, "condition": "original", "n": 2, "token_acc": 1.0}
    assert check_against_rows(records, [row]) == []
    assert check_against_rows(records, [{**row, "token_acc": 0.75}]) == [
        "length 4, original: token accuracy 1.000000 from the examples, 0.750000 in the row"]
    assert check_against_rows(records, [{**row, "n": 3}]) == ["length 4, original: 2 examples recorded, the row "
                                                              "scored 3"]
    lied = [{**records[0], "prediction": "1 3"}, records[1]]  # a prediction edited, its hits left as they were
    assert check_against_rows(lied, [row])[0].startswith("length 4, original, example 0: 2 of 2 tokens recorded as "
                                                         "hits, its target and prediction give 1 of 2")


def _rewrite(path: Path, edit) -> None:
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    edit(lines)
    path.write_bytes(gzip.compress(("\n".join(json.dumps(line) for line in lines) + "\n").encode()))


def test_verify_fails_on_an_edited_prediction_and_a_foreign_file(folder, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    first = sorted((copy / "predictions").iterdir())[0]

    def flip(lines):  # one example now "predicted" its target: more hits than the run file scored
        lines[0]["prediction"] = lines[0]["target"]
        lines[0]["token_hits"] = lines[0]["n_tokens"]

    _rewrite(first, flip)
    (copy / "predictions" / "ffffffffffffffff.jsonl.gz").write_bytes((folder / "predictions" / first.name)
                                                                       .read_bytes())
    assert main(["verify", str(copy), "--sample", "1"]) == 1
    out = capsys.readouterr().out
    assert f"predictions/{first.name}: tampered or damaged: length " in out and "token accuracy" in out
    assert "ffffffffffffffff.jsonl.gz: predictions of run ffffffffffffffff, which has no valid run file here" in out


def test_a_link_or_a_damaged_file_is_refused_in_one_line(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    run_id = store.run_file_id(sorted(store.raw_files(copy / "raw"))[0])
    path = predictions_path(copy, run_id)
    path.write_bytes(b"not gzip")
    [entry] = inventory(copy, {run_id: []})
    assert entry["problems"][0].startswith("not a readable gzip file")
    path.unlink()
    os.symlink(folder / "predictions" / path.name, path)
    [entry] = inventory(copy, {run_id: []})
    assert "a symbolic link" in entry["problems"][0]
    with pytest.raises(store.ResultsError, match="not a run id"):
        predictions_path(copy, "../../etc")


def test_the_verdict_sentence_counts_the_runs_with_predictions_and_names_disagreement():
    kept = {"run_id": "a" * 16, "file": "predictions/x", "sha256": "0", "examples": 512, "problems": []}
    missing = {"run_id": "b" * 16, "file": None, "sha256": None, "examples": 0, "problems": []}
    assert predictions_sentence([kept]) == ("Per-example predictions: 1 of 1 runs, 512 examples in "
                                            "`predictions/<run id>.jsonl.gz` (hashes in verdict.json); each agrees "
                                            "with its run file.")
    assert "1 of 2 runs" in predictions_sentence([kept, missing])
    assert "1 disagree with their run files (cccccccccccccccc)" in predictions_sentence(
        [kept, {**kept, "run_id": "c" * 16, "problems": ["x"]}])


def test_verify_reruns_the_predictions_exactly_on_the_machine_that_made_them(folder, tmp_path, capsys):
    """Made here, a sampled run must give its per-example predictions again byte for byte: an example's loss
    edited (the sums still agree with the run file, so the folder's own check passes) is caught by the rerun."""
    assert main(["verify", str(folder), "--sample", "2"]) == 0
    assert sum(": exact, reproduced" in line for line in capsys.readouterr().out.splitlines()) == 2
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    for path in (copy / "predictions").iterdir():
        _rewrite(path, lambda lines: lines[-1].update(loss=12.5))
    assert main(["verify", str(copy), "--sample", "1"]) == 1
    out = capsys.readouterr().out
    assert "tampered" not in out and "its rows reproduce, its per-example predictions (predictions/" in out


def test_combine_brings_each_runs_predictions_and_refuses_a_tampered_one(folder, tmp_path):
    from pebench.store.combine import combine

    runs = sorted(store.raw_files(folder / "raw"))
    first, second = tmp_path / "first", tmp_path / "second"
    for part, run_file in ((first, runs[0]), (second, runs[1])):
        (part / "raw").mkdir(parents=True)
        (part / "predictions").mkdir()
        shutil.copy2(run_file, part / "raw")
        run_id = store.run_file_id(run_file)
        shutil.copy2(predictions_path(folder, run_id), part / "predictions")
    predictions_path(second, store.run_file_id(runs[1])).unlink()  # a source without predictions of its run
    combine([first, second], tmp_path / "both")
    run_id = store.run_file_id(runs[0])
    assert sorted(path.name for path in (tmp_path / "both" / "predictions").iterdir()) == [f"{run_id}.jsonl.gz"]
    assert predictions_path(tmp_path / "both", run_id).read_bytes() == predictions_path(first, run_id).read_bytes()
    records = read_predictions(predictions_path(first, run_id))
    records[0] = {**records[0], "token_hits": records[0]["token_hits"] - 1}  # one example's hits edited
    predictions_path(first, run_id).write_bytes(predictions_bytes(run_id, records))
    with pytest.raises(store.ResultsError, match=f"predictions/{run_id}.jsonl.gz: "):
        combine([first, second], tmp_path / "again")
    assert not (tmp_path / "again").exists()
