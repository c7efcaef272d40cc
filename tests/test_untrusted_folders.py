"""A results folder is untrusted data (issue 37): users download the reference, share reruns and run
``report``, ``show``, ``compare`` and ``combine`` on what a colleague sent. A name read from a folder never
becomes a path unchecked, no link is followed out of it, and no command deletes a file it did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from test_results import run_frame

from pebench.cli import main


def small_results(folder: Path, seeds: tuple[int, ...] = (0, 1), **extra) -> Path:
    """A results folder of one small order-sensitivity grid (one figure, a few tables): quick to report."""
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for encoding, accuracy in (("none", 0.12), ("rope", 0.95)):
        for seed in seeds:
            points = [{"eval_len": 8, "condition": condition, "token_acc": value + 0.001 * seed}
                      for condition, value in (("original", accuracy), ("shuffled", 0.1))]
            frame = run_frame("order_sensitivity", "reverse", encoding, "encoder", seed, 8, points, **extra)
            frame.to_csv(raw / f"{frame['run_id'].iloc[0]}.csv", index=False)
    return folder


def report_files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and "raw" not in p.parts}


# --------------------------------------------------------------------------- 1: report deletes only its own files


def test_report_keeps_files_it_did_not_write_and_removes_what_the_previous_report_recorded(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    mine = [folder / "figures" / "my_figure.svg", folder / "tables" / "notes" / "draft.md",
            folder / "summary" / "my_summary.csv"]
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("mine\n")
    # a table an earlier report wrote and recorded, which this report no longer writes
    stale = folder / "tables" / "order_sensitivity_old_layout.md"
    stale.write_text("| an older table |\n")
    index = json.loads((folder / "report.json").read_text())
    index["tables"].append({"name": "old", "title": "old", "caption": "",
                            "paths": {"md": "tables/order_sensitivity_old_layout.md"}})
    (folder / "report.json").write_text(json.dumps(index))
    capsys.readouterr()
    assert main(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert all(path.read_text() == "mine\n" for path in mine)
    assert not stale.exists() and f"removed {stale}" in out
    assert out.count("removed ") == 1


def test_report_never_writes_or_deletes_through_a_linked_report_folder(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    elsewhere = tmp_path / "paper" / "figures"
    elsewhere.mkdir(parents=True)
    (elsewhere / "figure1.pdf").write_text("the user's own figure\n")
    (folder / "figures").symlink_to(elsewhere, target_is_directory=True)
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "figures is a symbolic link" in err, err
    assert [p.name for p in elsewhere.iterdir()] == ["figure1.pdf"]
    assert (elsewhere / "figure1.pdf").read_text() == "the user's own figure\n"


def test_a_crafted_report_json_removes_nothing_outside_the_report_folders(tmp_path, capsys):
    """report.json comes with the folder: paths out of the report's folders, or through a link, are not removed."""
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    outside = tmp_path / "main.tex"
    outside.write_text("\\documentclass{article}\n")
    (folder / "notes.txt").write_text("mine\n")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "keep.md").write_text("mine\n")
    (folder / "tables" / "linked").symlink_to(linked, target_is_directory=True)
    index = json.loads((folder / "report.json").read_text())
    index["tables"].append({"name": "x", "title": "x", "caption": "", "paths": {
        "a": "tables/../../main.tex", "b": str(outside), "c": "notes.txt", "d": "tables/linked/keep.md",
        "e": "raw"}})
    index["summaries"]["runs"] = "../main.tex"
    (folder / "report.json").write_text(json.dumps(index))
    raw = sorted(p.name for p in (folder / "raw").iterdir())
    assert main(["report", str(folder)]) == 0
    assert "removed" not in capsys.readouterr().out
    assert outside.exists() and (folder / "notes.txt").exists() and (linked / "keep.md").exists()
    assert sorted(p.name for p in (folder / "raw").iterdir()) == raw


def test_a_report_of_the_same_rows_twice_removes_nothing(tmp_path, capsys):
    folder = small_results(tmp_path / "results")
    assert main(["report", str(folder)]) == 0
    before = report_files(folder)
    capsys.readouterr()
    assert main(["report", str(folder)]) == 0
    assert "removed" not in capsys.readouterr().out
    assert report_files(folder).keys() == before.keys()
    assert pd.read_csv(folder / "summary" / "runs.csv").shape[0] == 4
