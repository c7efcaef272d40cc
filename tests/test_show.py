"""``pebench show`` from what ``pebench report`` wrote (issue 65, 4): the same text as computed from the run files,
in a second; a missing, stale or older report says so and computes; within 100 columns on the reference. And
``pebench compare`` refusing two suites from their manifests, naming only references that exist."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from test_results import write_synthetic_results

from pebench.cli import main
from pebench.render import show_tables
from pebench.store.report_file import current_report

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "results" / "standard"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return write_synthetic_results(tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="module")
def reported(synthetic, tmp_path_factory) -> Path:
    """A copy of the synthetic folder with its report written into it."""
    from pebench.report import write_report

    folder = tmp_path_factory.mktemp("reported")
    shutil.copytree(synthetic / "raw", folder / "raw")
    if (synthetic / "manifest.json").exists():
        shutil.copy(synthetic / "manifest.json", folder / "manifest.json")
    write_report(folder, folder)
    return folder


def shown(capsys, *argv: str) -> tuple[str, list[str]]:
    """The lead line and the tables ``pebench show ARGV`` prints (after its lead)."""
    assert main(["show", *argv]) == 0
    out = capsys.readouterr().out
    lead, _, tables = out.partition("\n\n")
    return lead, tables.split("\n\n") if "the table to cite" not in lead else out.split("\n\n")


NARROWINGS = ([], ["--task", "copy"], ["--encoding", "NoPE", "--encoding", "alibi"], ["--metric", "ood_token_acc"],
              ["--task", "copy", "--metric", "id_token_acc", "--width", "0"])


@pytest.mark.parametrize("narrowing", NARROWINGS)
def test_show_prints_from_the_report_what_it_computes_from_the_run_files(reported, synthetic, narrowing, capsys,
                                                                          monkeypatch):
    assert main(["show", str(synthetic), *narrowing]) == 0  # no report: computed
    computed = capsys.readouterr().out.split("\n\n", 1)[1]
    import pebench.report

    def no_computing(*_, **__):
        raise AssertionError("show computed its tables although the report holds them")

    monkeypatch.setattr(pebench.report, "tables_for", no_computing)
    assert main(["show", str(reported), *narrowing]) == 0
    out = capsys.readouterr().out
    assert "the table to cite" in out.splitlines()[0] or "names no main table" in out.splitlines()[0]
    assert out.endswith(computed)


def test_a_stale_or_older_report_is_said_in_the_lead_and_the_tables_are_computed(reported, tmp_path, capsys):
    stale = tmp_path / "stale"
    shutil.copytree(reported, stale)
    next((stale / "raw").iterdir()).unlink()  # a run file less: the report is older than the run files
    assert main(["show", str(stale), "--width", "0"]) == 0
    lead = capsys.readouterr().out.splitlines()[0]
    assert "is older than the run files" in lead and f"pebench report {stale}" in lead
    assert lead.endswith("the tables below are computed now from the run files)")

    older = tmp_path / "older"
    shutil.copytree(reported, older)
    index = json.loads((older / "report.json").read_text())
    del index[show_tables.SHOW_KEY]  # as a report of an earlier pebench
    (older / "report.json").write_text(json.dumps(index))
    assert main(["show", str(older), "--width", "0"]) == 0
    lead = capsys.readouterr().out.splitlines()[0]
    assert "holds no tables for pebench show" in lead and f"run pebench report {older}" in lead


def test_a_crafted_table_of_the_report_is_refused_and_escaped_text_stays_escaped(reported, tmp_path, capsys):
    folder = tmp_path / "crafted"
    shutil.copytree(reported, folder)
    index = json.loads((folder / "report.json").read_text())
    record = index[show_tables.SHOW_KEY]["tables"][0]
    record["title"] = "\x1b[31mred\x1b[0m"
    (folder / "report.json").write_text(json.dumps(index))
    assert main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[31mred" in out
    record["rows"][0] = record["rows"][0][:-1]  # a row shorter than the columns
    (folder / "report.json").write_text(json.dumps(index))
    assert main(["show", str(folder), "--width", "0"]) == 0
    lead = capsys.readouterr().out.splitlines()[0]
    assert "cells for" in lead and lead.endswith("computed now from the run files)")
    bare = {key: record[key] for key in ("name", "title", "version", "group_starts", "notes")}
    with pytest.raises(ValueError, match="neither a text nor"):
        show_tables.shown_from_record({**bare, "rows": [[{"text": "x"}]], "columns": [["A", "l", True]]})


def test_show_says_the_notes_of_the_encodings_it_shows(reported, tmp_path, capsys):
    """An encoding that is one model with another carries a note in the report's entries: ``show`` says it below the
    main table for that encoding (or for every one when none is asked), and escapes what a folder's author wrote."""
    folder = tmp_path / "noted"
    shutil.copytree(reported, folder)
    index = json.loads((folder / "report.json").read_text())
    names = sorted(index["entries"]["encoding"])
    said = "Identical models: one gave the same rows as the other \x1b[2J."
    index["entries"]["encoding"][names[0]]["notes"] = [said]
    (folder / "report.json").write_text(json.dumps(index))
    escaped = said.replace("\x1b", "\\x1b")
    for asked, expected in (([], True), (["--encoding", names[0]], True), (["--encoding", names[1]], False)):
        assert main(["show", str(folder), "--width", "0", *asked]) == 0
        out = capsys.readouterr().out
        assert (escaped in out) is expected and "\x1b" not in out, asked


def test_show_refuses_an_experiment_the_report_has_no_runs_of(reported, capsys):
    assert main(["show", str(reported), "--experiment", "nope"]) == 2
    assert "no runs of experiment(s) nope; present:" in capsys.readouterr().err


@pytest.mark.skipif(not (REFERENCE / "report.json").exists(), reason="no committed reference")
def test_show_on_the_reference_is_fast_and_keeps_within_100_columns(capsys):
    try:
        show_tables.report_tables(current_report(REFERENCE))
    except ValueError:
        pytest.skip("the committed reference's report is not current or predates show's tables: pebench report")
    start = time.process_time()
    assert main(["show", str(REFERENCE)]) == 0
    seconds = time.process_time() - start
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1000 and max(map(len, lines)) <= 100, max(lines, key=len)
    assert seconds < 5, f"show took {seconds:.1f} s of CPU on the reference"


# --------------------------------------------------------------------------- compare


def folder_of(path: Path, suite: str) -> Path:
    """A results folder whose manifest names ``suite`` (no run file: the suites are refused before any is read)."""
    (path / "raw").mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"suite": suite, "invocations": []}))
    return path


def test_compare_refuses_two_suites_from_their_manifests_naming_only_references_that_exist(tmp_path, capsys,
                                                                                            monkeypatch):
    smoke, standard = folder_of(tmp_path / "smoke", "smoke"), folder_of(tmp_path / "standard", "standard")
    monkeypatch.chdir(tmp_path)  # no results/ here
    for argv in (["compare", str(smoke), str(standard)], ["compare", str(smoke)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "holds the smoke suite" in err and "the standard suite" in err
        assert "results/smoke" not in err and "none of the smoke suite is committed here or packaged" in err
    assert main(["compare", str(standard), str(smoke)]) == 2
    err = capsys.readouterr().err
    assert "pebench compare" in err and f"{standard} --reference standard" in err and "results/standard" not in err
    committed = folder_of(tmp_path / "results" / "standard", "standard")
    assert main(["compare", str(standard), str(smoke)]) == 2
    assert f"pebench compare {standard} results/standard or" in capsys.readouterr().err
    assert committed.is_dir()


def test_a_numpy_bound_flag_is_written_as_a_plain_bool():
    """A table computed by numpy can mark a lower bound with a numpy bool; report.json must still be written."""
    import json

    import numpy as np

    from pebench.render.show_tables import _cell_record
    from pebench.render.tables import Cell

    record = _cell_record(Cell("≥ 12", 12, bound=np.bool_(True)))
    assert json.loads(json.dumps(record)) == ["≥ 12", None, True]
