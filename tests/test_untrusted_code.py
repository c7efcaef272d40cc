"""No command runs code it was not given (issue 37): pebench's own experiments come from beside the package,
never from the folder a command runs in; a user's code comes only through ``--plugin`` or entry points, and
what a plugin registers never replaces what is registered already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_untrusted_folders import small_results

import pebench
from pebench import experiment
from pebench.cli import main

ROOT = Path(pebench.__file__).resolve().parent.parent


def planted_experiments(folder: Path, marker: Path) -> Path:
    """``folder/experiments/`` holding a script that would leave ``marker`` behind if anything imported it."""
    scripts = folder / "experiments"
    scripts.mkdir(parents=True, exist_ok=True)
    stem = "planted_" + "".join(c if c.isalnum() else "_" for c in folder.parent.name)  # one per test: never cached
    (scripts / f"{stem}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    return folder


# --------------------------------------------------------------------------- experiments from the package only


@pytest.mark.parametrize("command", ["report", "show", "compare"])
def test_commands_never_import_scripts_of_the_folder_they_run_in(command, tmp_path, monkeypatch, capsys):
    marker = tmp_path / "code_ran.txt"
    folder = planted_experiments(small_results(tmp_path / "download"), marker)
    monkeypatch.chdir(folder)
    argv = {"report": ["report", "."], "show": ["show", "."], "compare": ["compare", ".", "."]}[command]
    main(argv)
    capsys.readouterr()
    assert not marker.exists()


def test_run_never_imports_scripts_of_the_folder_it_runs_in(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "code_ran.txt"
    monkeypatch.chdir(planted_experiments(tmp_path / "project", marker))
    assert main(["run", "--suite", "smoke", "--dry-run", "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert not marker.exists()


def test_experiments_dir_is_the_one_beside_the_package_wherever_pebench_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(planted_experiments(tmp_path / "project", tmp_path / "code_ran.txt"))
    assert experiment.experiments_dir() == ROOT / "experiments"


def test_suites_keep_their_runs_in_a_project_with_its_own_experiments_folder(tmp_path):
    """A fresh process, as a user's: an unrelated ``experiments/`` in its working directory changes nothing."""
    project = planted_experiments(tmp_path / "project", tmp_path / "code_ran.txt")
    listing = subprocess.run([sys.executable, "-m", "pebench", "run", "--suite", "smoke", "--dry-run", "--out", "out"],
                             cwd=project, capture_output=True, text=True, check=True).stdout
    assert listing.splitlines()[-1] == f"{len(experiment.suite_runs('smoke'))} runs -> out"
    assert not (tmp_path / "code_ran.txt").exists()


def test_load_experiments_refuses_the_pilots_folder(tmp_path):
    before = experiment.EXPERIMENTS.names()
    with pytest.raises(ValueError, match="pilots"):
        experiment.load_experiments(ROOT / "pilots")
    copy = tmp_path / "pilots"
    copy.mkdir()
    (copy / "a_pilot.py").write_text(f"from pathlib import Path\nPath({str(tmp_path / 'ran')!r}).write_text('x')\n")
    with pytest.raises(ValueError, match="pilots"):
        experiment.load_experiments(copy)
    assert experiment.EXPERIMENTS.names() == before and not (tmp_path / "ran").exists()
