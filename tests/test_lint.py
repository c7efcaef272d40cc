"""The code passes the project's ruff configuration (pyproject.toml), so style does not drift between sessions;
``tox -e lint`` runs the same check on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff")
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "pebench",
                              "tests", "experiments", "docs/_ext"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
