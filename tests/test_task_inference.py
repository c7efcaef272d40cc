"""Task-level inference (issue 66): the exact sign-flip test and the Holm correction pinned against the values of
the hand-written implementations they replaced, the declared comparisons at task level with their minimum
detectable effects, and the extrapolation board ranked from pairwise comparisons with bootstrap tiers."""

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import leaderboard as lb
from pebench.analysis import results

# (differences, two-sided p of the hand-written sign_flip_p before scipy.stats.permutation_test replaced it)
SIGN_FLIP_CASES = {
    "six of one sign": ([0.1, 0.2, 0.05, 0.3, 0.15, 0.25], 0.03125),
    "mixed seven": ([0.3, -0.1, 0.2, 0.05, -0.02, 0.4, 0.1], 0.125),
    "exact ties": ([0.5, -0.5, 0.5, -0.5], 1.0),
    "a single pair": ([0.2], 1.0),
    "mean zero": ([1.0, -1.0, 2.0, -2.0, 0.5, -0.5], 1.0),
    "ten": ([-0.201, -0.462, 0.076, 0.41, 0.768, 0.255, -0.076, -0.192, 0.574, 1.017], 0.18359375),
    "sixteen": ([0.1, 0.19, 0.018, -0.167, -0.036, -0.197, 0.118, 0.502, -0.048, -0.086, 0.247, 0.207, 0.132,
                 -0.179, 0.091, 0.309], 0.140289306640625),
}


@pytest.mark.parametrize("name", list(SIGN_FLIP_CASES))
def test_the_sign_flip_test_keeps_the_exact_values_of_the_hand_written_one(name):
    differences, expected = SIGN_FLIP_CASES[name]
    assert lb.sign_flip_p(np.array(differences)) == pytest.approx(expected, rel=1e-12)


def test_the_sign_flip_test_beyond_enumeration_samples_sign_patterns_reproducibly():
    """Twenty pairs are beyond :data:`EXACT_MAX_PAIRS`: a Monte-Carlo p, deterministic for its seed and within
    sampling error of the exact value 90412 / 2**20 = 0.0862 (counted by enumerating all 2**20 patterns); the
    hand-written test gave 0.0848 with its own draws."""
    d = np.array([0.064, 0.594, 0.54, -0.154, -0.069, -0.161, 0.278, 0.028, 0.349, -0.689, 0.677, 0.011, 0.322,
                  -0.005, -0.102, 0.235, 0.38, -0.031, -0.011, 0.324])
    p = lb.sign_flip_p(d, seed=1)
    assert p == lb.sign_flip_p(d, seed=1)
    assert p == pytest.approx(90412 / 2**20, abs=0.01)  # 20,000 draws: sd of the estimate ~0.002


HOLM_CASES = [
    ([0.01, 0.04, 0.03, float("nan")], [0.03, 0.06, 0.06, float("nan")]),
    ([0.2, 0.001, 0.5, 0.04, 0.04], [0.4, 0.005, 0.5, 0.16, 0.16]),
    ([0.03125] * 6, [0.1875] * 6),
    ([0.8, 0.9], [1.0, 1.0]),
    ([], []),
]


@pytest.mark.parametrize(("p_values", "expected"), HOLM_CASES)
def test_holm_keeps_the_values_of_the_hand_written_one(p_values, expected):
    np.testing.assert_allclose(results.holm(p_values), expected, rtol=1e-12)


# --------------------------------------------------------------------------- declared comparisons at task level


def task_runs(differences: dict[str, list[float]], *, seeds: int = 3, noise: float = 0.02, arch: str = "decoder",
              seed: int = 0) -> pd.DataFrame:
    """Order-dependent runs of ``b`` at 0.3 and of every other encoding ``e`` at 0.3 + ``differences[e][task]``
    (+ uniform seed noise), every run fitted."""
    rng = np.random.default_rng(seed)
    n_tasks = len(next(iter(differences.values())))
    means = {"b": [0.3] * n_tasks} | {e: [0.3 + x for x in d] for e, d in differences.items()}
    rows = [dict(arch=arch, task=f"task{t}", encoding=e, seed=s, variant="trained", status="ok", order_dependent=True,
                 fitted=True, ood_normalised_acc=m[t] + noise * rng.uniform(-1, 1))
            for e, m in means.items() for t in range(n_tasks) for s in range(seeds)]
    return pd.DataFrame(rows)


def test_a_declared_comparison_averages_seeds_within_a_task_and_tests_the_task_means():
    """Eight tasks all favouring ``a``: the exact p is 2/2**8 whatever the number of seeds; its interval and mean are
    over task means; the same runs paired as task-seed pairs (protocol v2) would count every seed."""
    runs = task_runs({"a": [0.1, 0.2, 0.15, 0.05, 0.3, 0.12, 0.08, 0.2]}, seeds=6)
    row = lb.pairwise(runs, [("a", "b")], lb.PRIMARY_SCORE, jointly_fitted=True).iloc[0]
    assert row["unit"] == "task" and row["n_tasks"] == 8 and row["n_pairs"] == 48
    assert row["p_value"] == pytest.approx(2 / 2**8) == row["smallest_p"] and row["p_holm"] == row["p_value"]
    means = runs.groupby(["encoding", "task"])["ood_normalised_acc"].mean()
    assert row["mean_diff"] == pytest.approx((means["a"] - means["b"]).mean())
    assert row["ci_low"] < row["mean_diff"] < row["ci_high"] and row["verdict"] == "a better"
    assert 0 < row["mde"] < np.inf
    pooled = lb.pairwise(runs, [("a", "b")], lb.PRIMARY_SCORE, jointly_fitted=True, unit="run").iloc[0]
    assert pooled["p_value"] < 1e-3 and pooled["smallest_p"] < 1e-4  # 48 pairs: far more than the tasks support
    with pytest.raises(ValueError, match="unit 'seed'"):
        lb.pairwise(runs, [("a", "b")], lb.PRIMARY_SCORE, unit="seed")


def test_seeds_of_one_task_are_not_evidence_across_tasks():
    """Twenty seeds of a single task: one task mean, smallest p 1, cannot resolve; the MDE is undefined."""
    row = lb.pairwise(task_runs({"a": [0.4]}, seeds=20), [("a", "b")], lb.PRIMARY_SCORE, jointly_fitted=True).iloc[0]
    assert row["n_tasks"] == 1 and row["smallest_p"] == 1.0 and row["verdict"] == "cannot resolve"
    assert row["note"] == "1 tasks: the smallest attainable p is 1, 1 after Holm over 1" and np.isnan(row["mde"])


def test_the_family_correction_and_the_mde_use_the_family_size():
    """Six tasks of one sign give p = 2/64 = 0.031; Holm over two comparisons doubles it past 0.05, and at the first
    Holm step's level (0.025) no shift is detectable: the MDE is infinite and the verdict "cannot resolve"."""
    runs = task_runs({"a": [0.1, 0.2, 0.15, 0.05, 0.3, 0.12], "c": [0.1, -0.2, 0.15, -0.05, 0.3, -0.12]})
    table = lb.pairwise(runs, [("a", "b"), ("c", "b")], lb.PRIMARY_SCORE, jointly_fitted=True)
    a, c = table.itertuples()
    assert a.p_value == pytest.approx(2 / 64) and a.p_holm == pytest.approx(4 / 64)
    assert np.isinf(a.mde) and a.verdict == "cannot resolve" and "0.0625 after Holm over 2" in a.note
    alone = lb.pairwise(runs, [("a", "b")], lb.PRIMARY_SCORE, jointly_fitted=True).iloc[0]
    assert alone.verdict == "a better" and np.isfinite(alone.mde)


def test_the_minimum_detectable_effect_is_the_shift_detected_with_80_percent_power():
    """By its definition: task differences Normal(mde, s^2), s the observed spread, are detected at the level with
    probability 0.8 (checked on draws other than its own); it scales with the spread; infinite where the tasks
    cannot reach the level."""
    d = np.array([0.12, -0.03, 0.2, 0.05, 0.31, 0.08, -0.1, 0.17, 0.02, 0.09])
    mde = lb.minimum_detectable_effect(d, 0.01)
    assert lb.minimum_detectable_effect(3 * d, 0.01) == pytest.approx(3 * mde)
    draws = np.random.default_rng(99).normal(mde, d.std(ddof=1), size=(4000, len(d)))
    power = (lb.exact_sign_flip_p(draws) <= 0.01).mean()
    assert power == pytest.approx(lb.MDE_POWER, abs=0.03)
    assert np.isinf(lb.minimum_detectable_effect(d[:6], 0.01)) and np.isnan(lb.minimum_detectable_effect(d[:1], 0.05))
    assert lb.minimum_detectable_effect(np.full(8, 0.1), 0.05) == 0.0


def test_the_vectorized_exact_test_gives_scipys_p():
    rows = np.random.default_rng(4).normal(0.05, 0.3, size=(30, 9))
    np.testing.assert_allclose(lb.exact_sign_flip_p(rows), [lb.sign_flip_p(row) for row in rows], rtol=1e-12)
