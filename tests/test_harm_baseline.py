"""The harm table's baseline (issue 66, item 7): a control the position-free baseline did not fit is no measure of
what a model without positions achieves there, so its pairs leave the comparison with the baseline."""

from __future__ import annotations

import pandas as pd
import pytest

from pebench.analysis.leaderboard import harm


def _runs(rows: list[tuple[str, str, int, float, bool]]) -> pd.DataFrame:
    return pd.DataFrame([dict(arch="encoder", encoding=e, task=t, seed=s, ood_token_acc=acc, fitted=fit,
                              order_dependent=False, status="ok") for e, t, s, acc, fit in rows])


def test_pairs_whose_baseline_did_not_fit_leave_the_harm_comparison():
    rows = []
    for seed in (0, 1):
        rows += [("none", "majority", seed, 0.9, True), ("rope", "majority", seed, 0.8, True),
                 # NoPE never fits bucket_sort here: rope's 0.7 there is not compared with its 0.1
                 ("none", "bucket_sort", seed, 0.1, False), ("rope", "bucket_sort", seed, 0.7, True)]
    table = harm(_runs(rows), n_boot=200).set_index("encoding")
    # only majority is paired: rope - none = 0.8 - 0.9 on both seeds, exactly -0.1 up to float rounding
    assert table.loc["rope", "vs_baseline"] == pytest.approx(-0.1)
    assert table.loc["rope", "harms"]  # every replicate of the one task is -0.1: the interval lies below 0
    # the encoding's own level still counts every control run, fitted or not (what it costs)
    assert table.loc["rope", "ood_token_acc"] == pytest.approx((0.8 + 0.7) / 2)


def test_the_harm_caption_says_only_pairs_with_a_fitted_baseline_count(tmp_path):
    from test_leaderboard import v3_runs

    from pebench.report.boards import board_artifacts
    from pebench.report_spec import ReportSpec

    runs = v3_runs({"none": 0.1, "rope": 0.8}, controls={"none": 0.9, "rope": 0.7}, seeds=2)
    artifacts, _ = board_artifacts(runs.assign(experiment="length_extrapolation"), "length_extrapolation",
                                   ReportSpec(primary_metric="ood_token_acc"), tmp_path)
    caption = next(artifact.caption for artifact in artifacts if artifact.name.startswith("harm_"))
    assert "counting only the pairs whose baseline run fitted" in caption
    assert "a baseline that did not learn a control measures nothing" in caption
