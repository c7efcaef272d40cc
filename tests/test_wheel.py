"""pebench as a user installs it: from a wheel, with no source checkout beside it.

The wheel is built from this checkout and unpacked into a folder of its own, which a subprocess puts first on its
import path, so the ``pebench`` it runs is the wheel's (the test checks which file it imported): no experiment
script, no ``docs/``, nothing of the repository but what the wheel ships.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from committed_tables import assert_table_alike

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path:
    """The wheel of this checkout, unpacked: a folder holding ``pebench/`` as an installed package would."""
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of what the wheel is made of, since setuptools writes build/ and *.egg-info beside the
    # source it builds, and the checkout is not the test's to write into
    source = out / "source"
    shutil.copytree(REPO / "pebench", source / "pebench", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    # --no-build-isolation: setuptools comes from the test environment (the dev extra), so no network is needed
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(source)], check=True, capture_output=True, text=True)
    (wheel,) = out.glob("pebench-*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def run_installed(site: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``pebench ARGS`` with the wheel's package first on the import path, run from ``cwd``."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pebench, pebench.cli; "
            "print('imported', pebench.__file__, file=sys.stderr); "
            "raise SystemExit(pebench.cli.main(sys.argv[2:]))")
    return subprocess.run([sys.executable, "-I", "-c", code, str(site), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_wheel_holds_no_experiment_scripts_and_ships_its_data(wheel_site):
    """What the report below relies on: the wheel has no ``experiments/`` beside the package, but does carry
    the package data (published aggregates and the packed reference)."""
    assert not (wheel_site / "experiments").exists()
    assert (wheel_site / "pebench" / "data" / "reference" / "standard.tar.gz").is_file()
    assert list((wheel_site / "pebench" / "data" / "published").glob("*.csv"))


def test_report_from_a_wheel_writes_the_committed_tables(wheel_site, tmp_path):
    """Issue 38's acceptance: ``pebench report`` run by a wheel-installed pebench on a copy of
    ``results/standard`` outside the repository writes the committed tables (byte for byte but for a CSV float's
    last digits on another CPU: :mod:`committed_tables`), each experiment's
    layout coming from the report declarations its manifest records (and recording them again in its report). No
    experiment script is beside a wheel's package, so this is also the check that a downloaded folder reports
    alike without them."""
    committed = REPO / "results" / "standard"
    folder = tmp_path / "downloaded" / "standard"
    shutil.copytree(committed / "raw", folder / "raw")
    for name in ("manifest.json", "report.json"):
        shutil.copy(committed / name, folder / name)
    done = run_installed(wheel_site, ["report", str(folder)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"imported {wheel_site / 'pebench' / '__init__.py'}" in done.stderr
    assert "no report declaration" not in done.stdout
    written = sorted(p.name for p in (folder / "tables").iterdir())
    assert written == sorted(p.name for p in (committed / "tables").iterdir())
    for name in written:
        assert_table_alike(folder / "tables" / name, committed / "tables" / name)  # CSV floats: on any CPU
    index = json.loads((folder / "report.json").read_text())
    assert index["declarations"] == json.loads((committed / "report.json").read_text())["declarations"]
