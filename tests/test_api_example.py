"""The Python API example of the docs (docs/examples/python_api.py) runs and prints what it promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "python_api.py"


def test_the_python_api_example_runs_on_the_committed_reference():
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(EXAMPLE), str(ROOT / "results" / "standard")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("logits (4, 8, ")  # (batch, length, vocabulary) of the reverse task
    assert any(line.startswith("run ") and "(16, 'original'" in line for line in lines)
    assert any("ood_seq_acc_mean" in line for line in lines)


def test_the_python_api_page_shows_the_example():
    page = (ROOT / "docs" / "python_api.md").read_text()
    assert "```{literalinclude} examples/python_api.py" in page
