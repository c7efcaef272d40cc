"""Task-level inference (issue 66): the exact sign-flip test and the Holm correction pinned against the values of
the hand-written implementations they replaced, the declared comparisons at task level with their minimum
detectable effects, and the extrapolation board ranked from pairwise comparisons with bootstrap tiers."""

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import leaderboard as lb
from pebench.analysis import results
from pebench.render import board_tables

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


# --------------------------------------------------------------------------- the extrapolation board


def board_runs(levels: dict[str, float], *, n_tasks: int = 8, seeds: int = 3, noise: float = 0.1,
               unfitted: frozenset = frozenset(), seed: int = 0) -> pd.DataFrame:
    """Order-dependent runs scoring ``levels[encoding]`` + a task effect + normal seed noise on the primary score."""
    rng = np.random.default_rng(seed)
    task_effect = rng.normal(0, 0.1, n_tasks)
    rows = [dict(arch="decoder", task=f"task{t}", encoding=e, seed=s, variant="trained", status="ok",
                 order_dependent=True, fitted=(e, t, s) not in unfitted,
                 ood_normalised_acc=level + task_effect[t] + noise * rng.normal())
            for e, level in levels.items() for t in range(n_tasks) for s in range(seeds)]
    return pd.DataFrame(rows)


def test_tiers_come_from_the_pairwise_tests():
    """In order of the points, a contender joins the tier unless a member beats it: b is not beaten by a, so it
    joins tier 1; c is beaten by a (though not by b), so it opens tier 2; d, not beaten by c, joins it."""
    better = np.zeros((4, 4), dtype=bool)
    better[0, 2] = better[0, 3] = better[1, 3] = True
    assert lb.tiers(np.array([0.9, 0.8, 0.7, 0.6]), better).tolist() == [1, 1, 2, 2]
    assert lb.tiers(np.array([0.6, 0.7, 0.8, 0.9]), np.zeros((4, 4), bool)).tolist() == [1, 1, 1, 1]


def test_the_board_records_a_large_seeded_bootstrap_and_is_deterministic():
    runs = board_runs({"rope": 0.5, "alibi": 0.45, "t5": 0.2})
    board = lb.extrapolation_board(runs)
    assert (board["n_boot"] == lb.TIER_BOOT).all() and lb.TIER_BOOT >= 10_000 and (board["boot_seed"] == 0).all()
    again = lb.extrapolation_board(runs.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(board, again)
    other = lb.extrapolation_board(runs, n_boot=2000, seed=5)
    assert (other["n_boot"] == 2000).all() and (other["boot_seed"] == 5).all()


def test_an_encoding_whose_tier_is_unstable_is_shown_between_tiers():
    levels = {f"e{i}": 0.6 - 0.04 * i for i in range(8)}
    board = lb.extrapolation_board(board_runs(levels, noise=0.15), n_boot=2000)
    tiered = board[board["tier"] > 0]
    assert ((tiered["placement"] == "between tiers") == (tiered["tier_probability"] < lb.TIER_CONFIDENCE)).all()
    assert (tiered["placement"] == "between tiers").any() and (tiered["placement"].str.startswith("tier ")).any()
    assert ((tiered["tier_probability"] > 0) & (tiered["tier_probability"] <= 1)).all()
    sentence = board_tables.tier_sentence(board, "decoder")
    between = sentence.split("between tiers (their tier holds in under 90% of the replicates): ")[1]
    for row in tiered[tiered["placement"] == "between tiers"].itertuples():
        assert row.encoding in between and f"{row.encoding} " not in sentence.split("between tiers")[0]
        assert f"(P(tier {row.tier}) {row.tier_probability:.3f})" in between  # the tier it holds that often
    for tier in set(tiered["tier"]) - set(tiered.loc[tiered["placement"] != "between tiers", "tier"]):
        assert f"tier {tier}: none holds it in 90% of the replicates (its encodings are between tiers)" in sentence


def test_an_encoding_at_or_below_the_floor_never_gets_a_tier():
    board = lb.extrapolation_board(board_runs({"rope": 0.5, "alibi": 0.45, "none": -0.2, "learned": -0.08}),
                                   n_boot=1000).set_index("encoding")
    for name in ("none", "learned"):
        assert board.loc[name, "ranked"] and not board.loc[name, "extrapolates"]
        assert board.loc[name, "tier"] == 0 and board.loc[name, "placement"] == "no extrapolation"
        assert np.isnan(board.loc[name, "tier_probability"])
    sentence = board_tables.tier_sentence(board.reset_index(), "decoder")
    tiers_part, floor_part = sentence.split("no extrapolation (score at or below the position-free floor): ")
    assert "NoPE" in floor_part and "Learned" in floor_part and "NoPE" not in tiers_part
    table = board_tables.extrapolation_table(board.reset_index()).to_markdown()
    assert "| no extrapolation | NoPE |" in table
    below = lb.extrapolation_board(board_runs({"rope": -0.3, "alibi": -0.2}), n_boot=500)
    assert (below["placement"] == "no extrapolation").all()
    assert board_tables.tier_sentence(below, "decoder").startswith(
        "no encoding extrapolates: every ranked one scores at or below the position-free floor (")


def test_a_main_table_may_hold_a_ranked_encoding_without_a_tier():
    from pebench.analysis import compare

    csv = ("experiment,arch,encoding,ranked,tier,score,score_low,score_high,dependent_fit_rate,control_vs_baseline,"
           "control_low,control_high,harms\n"
           "length_extrapolation,decoder,rope,True,1,0.5,0.4,0.6,1.0,0.0,-0.1,0.1,False\n"
           "length_extrapolation,decoder,none,True,0,-0.1,-0.2,0.0,1.0,,,,\n")
    frame = compare.main_table_frame(csv.encode()).set_index("encoding")
    assert frame.loc["rope", "tier"] == 1 and np.isnan(frame.loc["none", "tier"])


def test_a_comparison_says_whether_an_encoding_has_no_runs_or_no_fitted_ones():
    runs = task_runs({"a": [0.1] * 6}).assign(fitted=lambda r: r["encoding"] != "b")
    row = lb.pairwise(runs, [("a", "b"), ("a", "c")], lb.PRIMARY_SCORE, jointly_fitted=True)
    assert row["note"].tolist() == ["no fitted b run of an order-dependent task for decoder", "no c runs for decoder"]


# --------------------------------------------------------------------------- the words that describe them


def test_the_declared_comparisons_are_described_as_the_task_level_test_they_are(tmp_path):
    """The caption and findings of the declared comparisons name the test on task means, the tasks, the smallest p
    they allow and the MDE, not protocol v2's pooled pairs; the per-task table defers to the task-level verdict."""
    from pebench.report.boards import ranking_artifacts
    from pebench.report_spec import ReportSpec

    runs = board_runs({"rope": 0.5, "alibi": 0.3, "t5": 0.45}, noise=0.05).assign(
        experiment="length_extrapolation", ood_token_acc=0.5)
    spec = ReportSpec(primary_metric="ood_token_acc", comparisons=(("rope", "alibi"), ("rope", "t5")))
    artifacts, findings = ranking_artifacts(runs, "length_extrapolation", spec, tmp_path, protocol=3)
    captions = {artifact.name: artifact.caption for artifact in artifacts}
    caption = captions["pairwise_length_extrapolation"]
    assert "runs paired by" not in caption and "the task is the unit of inference" in caption
    assert "exact two-sided sign-flip test over the task means (8 tasks each;" in caption
    assert "Holm-corrected over the family of 2" in caption and "smallest p 8 tasks allow: 0.0078" in caption
    assert "MDE: the minimum detectable effect" in caption and "80% power at 0.05 / 2" in caption
    said = [finding for finding in findings if " vs " in finding]
    assert len(said) == 2 and not any("pairs)." in finding for finding in said)
    assert all("; 8 tasks (24 task-seed pairs), smallest attainable p 0.0078, minimum detectable effect 0." in finding
               for finding in said)
    by_task = captions["pairwise_tasks_length_extrapolation"]
    assert "pooled" not in by_task and "the task-level test's above" in by_task


def test_the_extrapolation_board_caption_describes_the_pairwise_ranking_and_its_tiers(tmp_path):
    from pebench.report.boards import board_artifacts
    from pebench.report_spec import ReportSpec

    runs = board_runs({"rope": 0.5, "alibi": 0.45, "none": -0.2}).assign(experiment="length_extrapolation",
                                                                       ood_token_acc=0.5)
    artifacts, findings = board_artifacts(runs, "length_extrapolation", ReportSpec(primary_metric="ood_token_acc"),
                                          tmp_path)
    caption = next(artifact.caption for artifact in artifacts if artifact.name.startswith("extrapolation_"))
    for old in ("P(first)", "tier leader", "overlaps", "encodings that fitted at least"):
        assert old not in caption
    for new in ("ranked from pairwise task-level comparisons", "Advantage:", "joins the current tier unless",
                "10,000 bootstrap replicates over tasks and seeds, seed 0", "P(tier):",
                "Between tiers: P(tier) under 0.9", "No extrapolation:", "decoder 8 order-dependent tasks"):
        assert new in caption, new
    assert "no extrapolation (score at or below the position-free floor): NoPE" in findings[0]


def test_the_main_table_shows_the_placement_and_tier_probability_never_tier_0():
    from pebench.report.main_table import main_table

    runs = board_runs({"rope": 0.5, "alibi": 0.45, "none": -0.2, "learned": -0.08}).assign(ood_token_acc=0.5)
    table = main_table(runs, "length_extrapolation", "Main results", "standard v4-0123abcd")
    shown = {row[1].value: row[2] for row in table.rows}
    assert shown["none"].text == shown["learned"].text == "no extrapolation" and shown["none"].value == 0
    assert shown["rope"].text == "1 (1.000)" and shown["rope"].mark == "best"
    data = table.data.set_index("encoding")
    assert data.loc["none", "placement"] == "no extrapolation" and data.loc["rope", "tier_probability"] == 1.0
    for old in ("overlaps", "tier leader", "pairs of"):
        assert old not in table.caption
    assert "decoder 8 order-dependent tasks" in table.caption and "between tiers" in table.caption
    levels = {f"e{i}": 0.6 - 0.04 * i for i in range(8)}
    runs = board_runs(levels, noise=0.15).assign(ood_token_acc=0.5)
    between = main_table(runs, "length_extrapolation", "Main results", "standard v4-0123abcd")
    texts = [row[2].text for row in between.rows]
    assert any(text.startswith("between tiers (") for text in texts), texts
