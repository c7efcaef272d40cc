"""The fit pilots of ``experiments/`` (task_pilots.py, t5_bucket_pilot.py): which runs they train and how
their rows are written. Training itself is the runner's, tested elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import t5_bucket_pilot  # noqa: E402
import task_pilots  # noqa: E402


def test_the_t5_bucket_pilot_repeats_the_reference_runs_and_changes_only_the_bucket_count():
    specs = t5_bucket_pilot.specs()
    published = [spec for spec in specs if spec.options() == {}]
    exact = [spec for spec in specs if spec.options() == {"num_buckets": t5_bucket_pilot.EXACT_BUCKETS}]
    assert len(published) == len(exact) == len(specs) // 2 == 6
    assert {(s.task, s.arch, s.encoding) for s in published} == {(t, "encoder", "t5") for t in t5_bucket_pilot.TASKS}
    for a, b in zip(published, exact, strict=True):
        assert a.run_id != b.run_id and (a.task, a.seed, a.train, a.eval) == (b.task, b.seed, b.train, b.eval)
    # every distance of the longest training sequence has its own bucket on each side
    import torch

    from pebench.encodings.t5 import relative_position_bucket

    longest = max(spec.train_context() for spec in specs)
    distances = torch.arange(-longest + 1, longest)
    buckets = relative_position_bucket(distances, causal=False, num_buckets=t5_bucket_pilot.EXACT_BUCKETS)
    assert len(set(buckets.tolist())) == len(distances)


def test_run_pilots_writes_every_row_with_the_git_state(tmp_path):
    out = tmp_path / "pilots" / "rows.csv"
    task_pilots.run_pilots(dict, [[("task", "copy"), ("fitted", True)], [("task", "reverse"), ("fitted", False)]],
                           1, out)
    frame = pd.read_csv(out)
    assert frame["task"].tolist() == ["copy", "reverse"] and frame["fitted"].tolist() == [True, False]
    assert {"git_sha", "git_dirty"} <= set(frame.columns)
