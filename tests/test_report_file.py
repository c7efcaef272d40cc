"""What the site reads of a report (:mod:`pebench.store.report_file`, :mod:`pebench.render.blocks`,
:mod:`pebench.render.fit_criterion`): importing it loads neither pandas nor scipy, and a results folder's files are read
through the store, never through a symbolic link (the folder may come from anyone)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pebench import store
from pebench.analysis.compare import fit_agreement
from pebench.store.report_file import DIGEST_KEY, StaleReport, current_report, raw_digest

ROOT = Path(__file__).resolve().parent.parent
SITE_HELPERS = ("pebench.store.report_file", "pebench.render.blocks", "pebench.render.fit_criterion", "pebench.store")


def test_what_the_site_imports_of_a_report_loads_neither_pandas_nor_scipy():
    code = (f"import sys; import {', '.join(SITE_HELPERS)}; "
            "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]", f"importing {', '.join(SITE_HELPERS)} loads {loaded.stdout.strip()}"


def results_folder(root: Path, fitted: tuple[float, ...] = (1.0, 0.0)) -> Path:
    """A results folder with one run file per ``fitted`` value (first rows only: enough for what is read here)
    and a current ``report.json``."""
    raw = root / "raw"
    raw.mkdir(parents=True)
    for i, value in enumerate(fitted):
        text = f"run_id,fitted,eval_len\nrun{i},{value},8\nrun{i},{value},16\n"
        (raw / f"run{i}.csv.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    (root / "report.json").write_text(json.dumps({DIGEST_KEY: raw_digest(root)}))
    return root


def test_a_current_report_is_read_and_a_changed_run_file_makes_it_stale(tmp_path):
    folder = results_folder(tmp_path / "results")
    assert current_report(folder) == {DIGEST_KEY: raw_digest(folder)}
    (folder / "raw" / "run1.csv.gz").write_bytes(gzip.compress(b"run_id,fitted,eval_len\nrun1,1.0,8\n", mtime=0))
    with pytest.raises(StaleReport, match="older than the run files"):
        current_report(folder)


@pytest.mark.parametrize("linked", ["run file", "raw folder", "report"])
def test_a_link_in_the_folder_is_refused_not_followed(tmp_path, linked):
    folder = results_folder(tmp_path / "results")
    outside = results_folder(tmp_path / "elsewhere", fitted=(0.0, 0.0))
    if linked == "run file":
        (folder / "raw" / "run1.csv.gz").unlink()
        os.symlink(outside / "raw" / "run1.csv.gz", folder / "raw" / "run1.csv.gz")
    elif linked == "raw folder":
        os.rename(folder / "raw", tmp_path / "raw_moved")
        os.symlink(outside / "raw", folder / "raw")
    else:
        (folder / "report.json").unlink()
        os.symlink(outside / "report.json", folder / "report.json")
    with pytest.raises(StaleReport, match="symbolic link"):
        current_report(folder)
    if linked != "report":
        for read in (raw_digest, store.raw_file_bytes, lambda f: store.first_rows(f, ("fitted",))):
            with pytest.raises(store.ResultsError, match="symbolic link"):
                read(folder)
        with pytest.raises(store.ResultsError, match="symbolic link"):
            fit_agreement(folder, outside)


def test_first_rows_gives_the_columns_the_run_files_have(tmp_path):
    folder = results_folder(tmp_path / "results")
    rows = store.first_rows(folder, ("fitted", "floor_method"))
    assert list(rows.columns) == ["run_id", "fitted"] and rows.to_dict("list") == {"run_id": ["run0", "run1"],
                                                                                   "fitted": [1.0, 0.0]}
    assert list(store.first_rows(folder, ("floor_method",)).columns) == ["run_id"]
    assert list(store.first_rows(tmp_path / "no_results", ("fitted",)).columns) == ["run_id"]


def test_fit_agreement_counts_the_runs_whose_fit_decision_both_sides_share(tmp_path):
    from test_results import write_synthetic_results

    sides = []
    for name in ("reference", "rerun"):
        folder = write_synthetic_results(tmp_path / name)
        for k, path in enumerate(store.raw_files(folder / "raw")):  # these files predate the checksum
            flip = name == "rerun" and k == 0  # the rerun's first run decides otherwise
            store.read_run_file(path).assign(fitted=k % 2 != flip).to_csv(path, index=False)
        sides.append(folder)
    reference, rerun = sides
    runs = len(store.raw_files(reference / "raw"))
    assert fit_agreement(rerun, reference).startswith(f"{runs - 1} of {runs} runs judged by the fit criterion on "
                                                      "both sides reached the same decision")
    assert fit_agreement(rerun, tmp_path / "no_results") == ""


def test_a_name_that_leaves_the_folder_is_refused_by_the_store(tmp_path):
    """Names in a run file never become paths unchecked: ``path_in`` refuses one with ``..`` or a separator."""
    for name in ("../escape", "raw/../../escape", ".."):
        with pytest.raises(store.ResultsError, match="not a plain file name"):
            store.path_in(tmp_path, name)


def test_a_report_whose_encoding_figures_are_not_texts_is_refused():
    """``encoding_figures`` (figure name -> the encoding it emphasises) is read by the encoding pages: a report.json
    from a stranger whose map holds anything but texts is refused by its shape, before a page reads it."""
    from pebench.store.report_file import report_shape_problem

    assert report_shape_problem({"encoding_figures": {"length_extrapolation_decoder_rope": "rope"}}) is None
    assert report_shape_problem({"encoding_figures": {"x": 3}}) == "its 'encoding_figures' is not an object of texts"
    assert report_shape_problem({"encoding_figures": ["rope"]}) == "its 'encoding_figures' is not an object of texts"


#: a rerun's section as pebench report writes it (pebench.report.reruns.rerun_section), compared with nothing
RERUN = {"reference": "standard", "reference_raw_sha256": "0" * 64, "summary": ["Not compared with its reference."],
         "comparison": {"verdict": "**not compared**", "method": "", "notes": [], "header": [], "rows": [],
                        "one_side": []}}


@pytest.mark.parametrize("rerun", [
    "compared", [], {**RERUN, "reference_raw_sha256": None}, {**RERUN, "summary": "reproduces"},
    {**RERUN, "comparison": None}, {**RERUN, "comparison": {**RERUN["comparison"], "verdict": 1}},
    {**RERUN, "comparison": {**RERUN["comparison"], "rows": [[{"cell": 1}]]}},
])
def test_a_report_whose_rerun_section_is_not_of_its_shape_is_refused(tmp_path, rerun):
    """A rerun's pages read its report's ``rerun`` section (:func:`~pebench.store.report_file.current_rerun`): one of
    another shape is refused with the report on one line, before a page reads it."""
    folder = results_folder(tmp_path / "results")
    (folder / "report.json").write_text(json.dumps({DIGEST_KEY: raw_digest(folder), "rerun": RERUN}))
    assert current_report(folder)["rerun"] == RERUN
    (folder / "report.json").write_text(json.dumps({DIGEST_KEY: raw_digest(folder), "rerun": rerun}))
    with pytest.raises(StaleReport, match="its 'rerun' is not a rerun's section"):
        current_report(folder)


def test_first_rows_keeps_a_run_id_that_reads_as_a_number(tmp_path):
    """A run id is 16 hexadecimal digits, so some read as numbers ("2541511e19009924" as 2.5e25): each file's first
    row parsed on its own once turned that id into ``inf``, and its run fell out of every merge on ``run_id``."""
    import shutil

    results = Path(__file__).resolve().parent.parent / "results"
    (tmp_path / "raw").mkdir()
    for run_id in ("2541511e19009924", "5845972203967e66", "001f341732e8ae9e"):  # the v3 reference's, wherever kept
        paths = [results / folder / "raw" / f"{run_id}.csv.gz" for folder in ("standard", "archive/v3/standard")]
        (path,) = [path for path in paths if path.exists()]
        shutil.copy(path, tmp_path / "raw")
    rows = store.first_rows(tmp_path, ("fitted",))
    assert rows["run_id"].tolist() == ["001f341732e8ae9e", "2541511e19009924", "5845972203967e66"]


def test_a_summary_whose_run_ids_read_as_numbers_keeps_them(tmp_path):
    """``summary/runs.csv`` read back (the fit and floors tables, the replications) keeps every run id as written,
    also where each of a small folder's ids reads as a number."""
    from pebench.analysis.replication import experiment_runs
    from pebench.report.fit import runs_frame

    (tmp_path / "summary").mkdir()
    (tmp_path / "summary" / "runs.csv").write_text("run_id,experiment,variant,fitted\n2541511e19009924,e,,True\n")
    runs, _ = runs_frame(tmp_path, ("fitted",), "Fit")
    assert runs["run_id"].tolist() == ["2541511e19009924"]
    assert experiment_runs(tmp_path, "e")["run_id"].tolist() == ["2541511e19009924"]
