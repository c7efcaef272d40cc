"""Tests of pebench.analysis.leaderboard on synthetic run frames whose ranking is known."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import leaderboard as lb
from pebench.render import board_tables
from pebench.render.tables import Cell, to_latex, to_markdown

METRIC = "ood_token_acc"


def make_runs(means: dict[str, float], *, n_tasks: int = 4, seeds: int = 3, noise: float = 0.0,
              archs=("decoder",), seed: int = 0) -> pd.DataFrame:
    """One run per arch, task, encoding and seed with score ``means[encoding]`` (+ uniform noise)."""
    rng = np.random.default_rng(seed)
    rows = [dict(arch=arch, task=f"task{t}", encoding=enc, seed=s, variant="trained", status="ok",
                 **{METRIC: float(np.clip(mean + noise * rng.uniform(-1, 1), 0, 1))})
            for arch, t, (enc, mean), s in itertools.product(archs, range(n_tasks), means.items(), range(seeds))]
    return pd.DataFrame(rows)


def test_always_best_has_mrr_one_and_degenerate_interval():
    runs = make_runs({"a_best": 0.9, "b": 0.5, "c": 0.1}, noise=0.05)
    board = lb.leaderboard(runs, METRIC, n_boot=200)
    top = board.iloc[0]
    assert top.encoding == "a_best"
    assert top.mrr == top.mrr_low == top.mrr_high == 1.0
    assert top.mean_rank == top.rank_low == top.rank_high == 1.0
    assert list(board.encoding) == ["a_best", "b", "c"]
    assert board.mrr.tolist() == pytest.approx([1, 1 / 2, 1 / 3])
    assert (board.n_tasks == 4).all() and (board.tasks_fitted == 4).all() and (board.runs_fitted == 1).all()


def test_ties_get_average_ranks():
    runs = make_runs({"a": 0.5, "b": 0.5, "c": 0.2})
    ranks = lb.task_ranks(runs, METRIC)
    assert ranks.set_index("encoding").loc[["a", "b", "c"], "rank"].groupby(level=0).first().tolist() == [1.5, 1.5, 3]
    board = lb.leaderboard(runs, METRIC, n_boot=50).set_index("encoding")
    assert board.loc["a", "mean_rank"] == 1.5 and board.loc["a", "mrr"] == pytest.approx(1 / 1.5)


def test_lower_is_better_metric_ranks_low_values_first():
    runs = make_runs({"a": 0.9, "b": 0.1}).rename(columns={METRIC: "ood_loss"})
    assert lb.leaderboard(runs, "ood_loss", n_boot=20).encoding.tolist() == ["b", "a"]
    with pytest.raises(ValueError, match="no direction"):
        lb.leaderboard(runs.rename(columns={"ood_loss": "params"}), "params")


def test_unfitted_runs_score_zero():
    runs = make_runs({"a": 0.9, "b": 0.5})
    runs["fitted"] = runs["encoding"] != "a"
    scores = lb.run_scores(runs, METRIC)
    assert (scores[runs.encoding == "a"] == 0).all() and (scores[runs.encoding == "b"] == 0.5).all()
    assert (lb.run_scores(runs.drop(columns="fitted"), METRIC) == runs[METRIC]).all()  # absent: all fitted
    assert (lb.run_scores(runs.assign(fitted=np.nan), METRIC) == runs[METRIC]).all()  # NaN: no criterion
    assert (lb.run_scores(runs.assign(fitted=runs.fitted.astype(float)), METRIC) == scores).all()  # 1.0 / 0.0
    board = lb.leaderboard(runs, METRIC, n_boot=20).set_index("encoding")
    assert board.index[0] == "b"
    assert board.loc["a", "tasks_fitted"] == 0 and board.loc["a", "runs_fitted"] == 0
    ranks = lb.task_ranks(runs, METRIC)
    assert (ranks[ranks.encoding == "a"].seeds_fitted == 0).all()


def test_bootstrap_is_deterministic_and_contains_point():
    runs = make_runs({"a": 0.6, "b": 0.55, "c": 0.5, "d": 0.3}, noise=0.15, n_tasks=6, archs=("decoder", "encoder"))
    first = lb.leaderboard(runs, METRIC, n_boot=300, seed=3)
    pd.testing.assert_frame_equal(first, lb.leaderboard(runs.sample(frac=1, random_state=1), METRIC, n_boot=300,
                                                          seed=3))
    assert not first.equals(lb.leaderboard(runs, METRIC, n_boot=300, seed=4))
    assert (first.mrr_low <= first.mrr).all() and (first.mrr <= first.mrr_high).all()
    assert (first.rank_low <= first.mean_rank).all() and (first.mean_rank <= first.rank_high).all()
    assert (first.mrr_low < first.mrr_high).any()
    assert first.arch.tolist() == ["decoder"] * 4 + ["encoder"] * 4


def test_failed_runs_and_variants_are_not_ranked():
    runs = make_runs({"a": 0.9, "b": 0.5})
    extra = runs[runs.encoding == "b"].assign(variant="scaled", **{METRIC: 1.0})
    failed = runs.iloc[:1].assign(status="failed", **{METRIC: np.nan})
    board = lb.leaderboard(pd.concat([runs, extra, failed]), METRIC, n_boot=20).set_index("encoding")
    assert board.loc["a", "mrr"] == 1 and board.loc["a", "runs_failed"] == 1


def test_pairwise_clear_difference_and_identical():
    runs = make_runs({"good": 0.8, "bad": 0.4, "twin": 0.4}, noise=0.05)
    runs.loc[runs.encoding == "twin", METRIC] = runs.loc[runs.encoding == "bad", METRIC].to_numpy()
    table = lb.pairwise(runs, [("good", "bad"), ("bad", "twin"), ("bad", "good"), ("good", "missing")], METRIC,
                        n_boot=500)
    good, twin, reverse, missing = table.itertuples()
    assert good.n_pairs == 12 and good.p_holm < 0.01 and good.verdict == "a better"
    assert good.ci_low <= good.mean_diff <= good.ci_high and good.mean_diff > 0.3
    assert twin.p_value == 1 and twin.p_holm == 1 and twin.verdict == "no significant difference"
    assert reverse.verdict == "b better"
    assert missing.verdict == "not tested" and "missing" in missing.note and np.isnan(missing.p_holm)


def test_sign_flip_exact_and_monte_carlo():
    assert lb.sign_flip_p(np.ones(12)) == pytest.approx(2 / 2 ** 12)
    assert lb.sign_flip_p(np.zeros(5)) == 1.0
    d = np.random.default_rng(0).normal(0.1, 1, size=40)
    assert lb.sign_flip_p(d, seed=1) == lb.sign_flip_p(d, seed=1)
    assert 0 < lb.sign_flip_p(d + 2) < 0.001


def test_holm_family_is_monotone():
    runs = make_runs({"a": 0.7, "b": 0.6, "c": 0.55, "d": 0.5}, noise=0.2, archs=("decoder", "encoder"))
    table = lb.pairwise(runs, [("a", "b"), ("a", "c"), ("a", "d"), ("b", "d")], METRIC, n_boot=100)
    ordered = table.sort_values("p_value")
    assert (np.diff(ordered.p_holm) >= 0).all() and (table.p_holm >= table.p_value).all()
    assert len(table) == 8  # family = comparisons x archs


def test_writers():
    runs = make_runs({"randomized:rope": 0.9, "my_enc": 0.5, "b": 0.5})
    board = lb.leaderboard(runs, METRIC, n_boot=50)
    markdown = to_markdown(board_tables.leaderboard_table(board, caption=""))
    lines = markdown.strip().splitlines()
    assert len(lines) == 2 + len(board) and all(line.count("|") == 7 for line in lines)
    assert lines[1] == "|:--|:--|--:|--:|--:|--:|"  # words left, numbers (intervals, counts, shares) right
    assert "1.00 [1.00, 1.00]" in markdown and "4/4" in markdown
    assert board_tables.leaderboard_table(board).rows[0][2].value == (board.mrr[0], board.mrr_low[0], board.mrr_high[0])
    latex = to_latex(board_tables.leaderboard_table(board, caption="Ranks", label="tab:x"))
    assert latex.count("{") == latex.count("}") and r"my\_enc" in latex and "my_enc" not in latex
    for part in (r"\begin{table", r"\toprule", r"\midrule", r"\bottomrule", r"\end{table", r"\label{tab:x}"):
        assert part in latex
    table = lb.pairwise(runs, [("my_enc", "b")], METRIC, n_boot=50)
    pair_markdown = to_markdown(board_tables.pairwise_table(table))
    assert "-0.00" not in pair_markdown and "0.00 [0.00, 0.00]" in pair_markdown
    pair_latex = to_latex(board_tables.pairwise_table(table))
    assert pair_latex.count("{") == pair_latex.count("}") and "OOD token accuracy" in pair_latex


def test_number_never_negative_zero():
    from pebench.render.tables import number_text  # the boards' numbers (ASCII minus)

    assert number_text(-0.0001, typographic=False) == "0.00" and number_text(-0.004, typographic=False) == "0.00"
    assert number_text(-0.006, typographic=False) == "-0.01"


def test_fit_fractions_count_fitted_seeds_per_task_and_in_all():
    runs = make_runs({"a": 0.9, "b": 0.5}, n_tasks=2, seeds=3)
    runs["fitted"] = [1.0, 1.0, 0.0,  0.0, 0.0, 0.0,  1.0, 1.0, 1.0,  1.0, 0.0, 0.0]  # task0 a, b; task1 a, b
    table = lb.fit_fractions(runs)
    assert table[["encoding", "task", "fitted", "seeds"]].values.tolist() == [
        ["a", "task0", 2, 3], ["a", "task1", 3, 3], ["b", "task0", 0, 3], ["b", "task1", 1, 3]]
    fit = board_tables.fit_table(table, "caption")
    assert fit.headers == ["Arch", "Encoding", "task0", "task1", "All"]
    assert [[cell.text for cell in row] for row in fit.rows] == [["decoder", "a", "2/3", "3/3", "83%"],
                                                                 ["decoder", "b", "0/3", "1/3", "17%"]]
    assert fit.rows[0][2].value == (2, 3) and fit.rows[0][4].value == pytest.approx(5 / 6)
    assert r"\begin{tabular}" in to_latex(fit) and "| a | 2/3 | 3/3 | 83% |" in to_markdown(fit)
    assert lb.fit_fractions(runs.drop(columns="fitted")).empty


def test_verdicts_name_the_better_encoding_for_readers():
    table = pd.DataFrame([dict(a="none", b="rope", verdict="b better"), dict(a="t5", b="alibi", verdict="a better"),
                          dict(a="t5", b="alibi", verdict="no significant difference")])
    assert [lb.verdict_text(r) for r in table.itertuples()] == ["RoPE better", "T5 bias better",
                                                                 "no significant difference"]
    assert [lb.verdict_text(r) for _, r in table.iterrows()][0] == "RoPE better"


# --------------------------------------------------------------------------- protocol v3 boards


def v3_runs(scores: dict[str, float], *, unfitted: set = frozenset(), noise: float = 0.05, n_tasks: int = 4,
            seeds: int = 6, controls: dict[str, float] | None = None) -> pd.DataFrame:
    """Runs of order-dependent tasks scored ``scores[encoding]`` (+ noise) on the primary score, fitted except
    the (encoding, task, seed) triples in ``unfitted``; plus one control task per ``controls`` (OOD accuracy)."""
    rng = np.random.default_rng(1)
    rows = [dict(arch="decoder", task=f"task{t}", encoding=e, seed=s, variant="trained", status="ok",
                 order_dependent=True, fitted=(e, t, s) not in unfitted,
                 ood_normalised_acc=mean + noise * rng.uniform(-1, 1), ood_token_acc=0.5)
            for t in range(n_tasks) for e, mean in scores.items() for s in range(seeds)]
    rows += [dict(arch="decoder", task="control", encoding=e, seed=s, variant="trained", status="ok",
                  order_dependent=False, fitted=True, ood_normalised_acc=np.nan,
                  ood_token_acc=acc + 0.01 * rng.uniform(-1, 1))
             for e, acc in (controls or {}).items() for s in range(seeds)]
    return pd.DataFrame(rows)


def test_the_extrapolation_board_names_a_first_only_where_it_holds_the_top_tier_alone():
    runs = v3_runs({"none": 0.0, "rope": 0.9, "alibi": 0.3, "t5": 0.3}, n_tasks=6,
                   unfitted={("none", t, s) for t in range(6) for s in range(6)})
    board = lb.extrapolation_board(runs, n_boot=500).set_index("encoding")
    assert board.loc["rope", "tier"] == 1 and board.loc["rope", "p_first"] == 1.0
    assert board.loc["rope", "tier_probability"] == 1.0 and board.loc["rope", "placement"] == "tier 1"
    assert board.loc["alibi", "tier"] == board.loc["t5", "tier"] == 2  # no paired test separates them
    assert not board.loc["none", "ranked"] and board.loc["none", "dependent_fit_rate"] == 0
    assert board.loc["none", "placement"] == "not ranked"
    assert board.loc["rope", "score"] == pytest.approx(0.9, abs=0.05)  # the noise is at most 0.05
    sentence = board_tables.tier_sentence(board.reset_index(), "decoder")
    assert sentence.startswith("RoPE 0.9") and "is first, alone in the top tier" in sentence
    assert "not ranked" in sentence and "NoPE" in sentence and "tier 2: ALiBi" in sentence


def test_encodings_no_paired_test_separates_share_the_top_tier_and_no_sentence_ranks_them():
    board = lb.extrapolation_board(v3_runs({"rope": 0.50, "alibi": 0.50, "t5": 0.2}, n_tasks=6), n_boot=500)
    top = board[board["tier"] == 1]
    assert set(top["encoding"]) == {"rope", "alibi"} and (top["tier_probability"] == 1).all()
    sentence = board_tables.tier_sentence(board, "decoder")
    assert sentence.startswith("tier 1: RoPE") or sentence.startswith("tier 1: ALiBi")
    assert "first" not in sentence and "tier 2: T5 bias" in sentence


def test_a_board_on_too_few_tasks_for_a_paired_test_ranks_nobody_apart():
    """Five tasks: a paired test over them reaches 2/32 at best, not below 0.05, so however far apart the bootstrap
    intervals, every ranked encoding shares the top tier and no sentence names a first; six tasks (2/64) can
    separate them. Seeds are not tasks: five tasks of six seeds are still five."""
    assert [lb.separable(n) for n in (0, 1, 5, 6)] == [False, False, False, True] and lb.min_separable_pairs() == 6
    few = lb.extrapolation_board(v3_runs({"rope": 0.9, "alibi": 0.3}, n_tasks=5, seeds=6, noise=0.0), n_boot=200)
    assert (few["tier"] == 1).all() and (few["n_tasks"] == 5).all()
    assert (few.set_index("encoding")["high"]["alibi"] < few.set_index("encoding")["low"]["rope"])  # apart, yet
    sentence = board_tables.tier_sentence(few, "decoder")
    assert sentence.startswith("2 encodings share the top tier, no paired test separating them (no two of them "
                               "share the 6 order-dependent tasks a paired test needs to reach p < 0.05)")
    assert "first" not in sentence
    enough = lb.extrapolation_board(v3_runs({"rope": 0.9, "alibi": 0.3}, n_tasks=6, seeds=1, noise=0.0), n_boot=200)
    assert enough.set_index("encoding")["tier"].to_dict() == {"rope": 1, "alibi": 2}
    assert "is first" in board_tables.tier_sentence(enough, "decoder")


def test_the_board_scores_only_fitted_runs_and_a_task_leaves_only_the_pairs_of_who_cannot_fit_it():
    """An unfitted run's out-of-distribution number is never read; a task that T5 cannot fit leaves only T5's pairs
    (RoPE and ALiBi are still compared on all four), and T5, fitting one task of four, is judged on it and
    flagged."""
    unfitted = {("alibi", 0, 0), ("alibi", 1, 3)} | {("t5", t, s) for t in (1, 2, 3) for s in range(6)}
    runs = v3_runs({"rope": 0.5, "alibi": 0.5, "t5": 0.4}, unfitted=unfitted, noise=0.0)
    runs.loc[runs.encoding.isin(["alibi", "t5"]) & ~runs.fitted, "ood_normalised_acc"] = -5.0  # would drag them down
    board = lb.extrapolation_board(runs, n_boot=200).set_index("encoding")
    assert board.loc["alibi", "score"] == pytest.approx(0.5) and board.loc["t5", "score"] == pytest.approx(0.4)
    assert board.loc["rope", "n_tasks"] == board.loc["alibi", "n_tasks"] == board.loc["rope", "battery"] == 4
    assert board.loc["rope", "n_pairs"] == 24 and board.loc["alibi", "n_pairs"] == 22
    assert board.loc["t5", "n_tasks"] == 1 and board.loc["t5", "few_tasks"] and not board.loc["rope", "few_tasks"]
    assert board.loc["rope", "advantage"] == pytest.approx((0.0 + 0.1) / 2)  # vs ALiBi on 4 tasks, vs T5 on 1
    sentence = board_tables.tier_sentence(board.reset_index(), "decoder")
    assert "judged only on the tasks they fitted alongside another encoding: T5 bias (1 of 4 tasks)" in sentence


def test_the_two_level_bootstrap_weighs_tasks_equally_and_is_deterministic():
    scores = [np.array([[1.0], [1.0], [1.0], [1.0]]), np.array([[0.0]])]  # 4 seeds of one task, 1 of another
    boot = lb.two_level_bootstrap(scores, n_boot=4000, seed=3)
    assert boot.mean() == pytest.approx(0.5, abs=0.03)  # each task weighs 1/2 (4000 replicates: sd ~0.008)
    assert np.array_equal(boot, lb.two_level_bootstrap(scores, n_boot=4000, seed=3))


def test_capability_counts_fits_on_order_dependent_tasks_and_controls():
    runs = v3_runs({"rope": 0.5, "none": 0.0}, unfitted={("none", t, s) for t in range(4) for s in range(6)},
                   controls={"rope": 0.9, "none": 0.9})
    table = lb.capability(runs).set_index("encoding")
    assert table.loc["none", "dependent_fitted"] == 0 and table.loc["none", "control_fitted"] == 6
    assert table.loc["rope", "fit_rate"] == 1.0 and table.loc["rope", "tasks_all_fitted"] == 5
    assert list(table.index) == ["none", "rope"]  # the canonical order: the baseline first


def test_harm_compares_each_encoding_with_the_baseline_on_the_controls():
    runs = v3_runs({"rope": 0.5, "none": 0.4}, controls={"none": 0.95, "rope": 0.95, "learned": 0.6})
    table = lb.harm(runs, n_boot=300).set_index("encoding")
    assert table.loc["learned", "harms"] and not table.loc["rope", "harms"]
    assert table.loc["learned", "vs_baseline"] == pytest.approx(-0.35, abs=0.02)  # noise at most 0.01 per run
    assert board_tables.harm_table(lb.harm(runs, n_boot=50)).headers[4] == "vs NoPE [95% CI]"


def test_a_comparison_too_small_to_reach_the_level_is_called_unresolvable_not_insignificant():
    """Three pairs give a smallest two-sided sign-flip p of 2/8 = 0.25: such a check can never resolve a claim,
    whatever its runs hold, and must not read as evidence of no difference (the audit's Ruoss x4 arm)."""
    assert lb.smallest_p(3) == 0.25 and lb.smallest_p(0) != lb.smallest_p(0)  # NaN without pairs
    runs = make_runs({"a": 0.9, "b": 0.1}, n_tasks=1, seeds=3)
    table = lb.pairwise(runs, [("a", "b")], METRIC, n_boot=50)
    assert table.loc[0, "verdict"] == "cannot resolve" and "smallest attainable p is 0.25" in table.loc[0, "note"]
    table = lb.pairwise(make_runs({"a": 0.9, "b": 0.1}, n_tasks=3, seeds=3), [("a", "b")], METRIC, n_boot=50)
    assert table.loc[0, "verdict"] == "a better"  # 9 pairs: smallest p 2/512



def test_declared_comparisons_per_task_split_the_pooled_pairs_and_give_unadjusted_exact_p():
    """Per order-dependent task: the jointly fitted seeds, who they favour, and the exact sign-flip p over them
    (six seeds of one sign: 2/64); the controls and the unfitted seeds are not paired; the rows' pairs are the
    pooled comparison's."""
    unfitted = {("alibi", 3, s) for s in range(4)}  # task3: 2 seeds left, too few to reach 0.05
    runs = v3_runs({"rope": 0.5, "alibi": 0.3}, unfitted=unfitted, controls={"rope": 0.9, "alibi": 0.2})
    runs.loc[runs["task"].eq("task2") & runs["encoding"].eq("alibi"), "ood_normalised_acc"] = 0.5  # a tie on task2
    table = lb.pairwise_by_task(runs, [("rope", "alibi")], lb.PRIMARY_SCORE).set_index("task")
    assert list(table.index) == ["task0", "task1", "task2", "task3"]  # no control
    assert table.loc["task0", "n_pairs"] == 6 and table.loc["task0", "a_better"] == 6
    assert table.loc["task0", "p_value"] == pytest.approx(2 / 64) == table.loc["task0", "smallest_p"]
    assert table.loc["task3", "n_pairs"] == 2 and table.loc["task3", "smallest_p"] == 0.5
    assert table.loc["task2", "mean_diff"] == pytest.approx(0, abs=0.1)  # the noise is at most 0.05 a run
    assert table.loc["task2", ["a_better", "b_better", "ties"]].sum() == 6
    pooled = lb.pairwise(runs, [("rope", "alibi")], lb.PRIMARY_SCORE, jointly_fitted=True).iloc[0]
    assert table["n_pairs"].sum() == pooled["n_pairs"] == 4 * 6 - 4
    lower = lb.pairwise_by_task(runs.assign(ood_normalised_acc=-runs["ood_normalised_acc"]), [("rope", "alibi")],
                                lb.PRIMARY_SCORE)
    assert lower["mean_diff"].iloc[0] < 0 and lower["b_better"].iloc[0] == 6  # scores negated: b better on each seed
    rendered = board_tables.pairwise_by_task_table(table.reset_index(), "caption").to_markdown()
    assert "6 / 0 / 0" in rendered and "0.031" in rendered

def test_declared_comparisons_under_v3_read_only_jointly_fitted_pairs_of_order_dependent_tasks():
    """Protocol v3 scores a declared comparison as its board does: an unfitted run's score never enters a
    difference, and the controls are not paired (rule 1); v2's comparison scores an unfitted run as the worst."""
    unfitted = {("alibi", t, s) for t in range(4) for s in range(3)}  # half of ALiBi's seeds did not fit
    runs = v3_runs({"rope": 0.5, "alibi": 0.5}, unfitted=unfitted, noise=0.0, controls={"rope": 0.9, "alibi": 0.2})
    runs.loc[runs["encoding"].eq("alibi") & ~runs["fitted"], "ood_normalised_acc"] = -5.0  # would decide it
    v3 = lb.pairwise(runs, [("rope", "alibi")], lb.PRIMARY_SCORE, jointly_fitted=True).iloc[0]
    assert v3["n_pairs"] == 4 * 3 and v3["mean_diff"] == 0 and v3["unit"] == "task" and v3["n_tasks"] == 4
    assert v3["verdict"] == "cannot resolve" and v3["note"].startswith("4 tasks")  # 2/16 at best: the task is the unit
    v2 = lb.pairwise(runs, [("rope", "alibi")], lb.PRIMARY_SCORE).iloc[0]
    assert v2["n_pairs"] == 4 * 6 and v2["mean_diff"] > 0  # every unfitted ALiBi run counted against it


def test_from_protocol_4_the_mrr_leaderboard_is_only_in_the_archive(tmp_path):
    """Issue 66, item 7: a v4 report ranks on the extrapolation board's tiers alone; v2 and v3 reports, archived,
    keep their MRR leaderboard and its per-task ranks."""
    from pebench.report.boards import ranking_artifacts
    from pebench.report_spec import ReportSpec
    from pebench.store.report_file import task_ranks_name

    runs = v3_runs({"rope": 0.5, "alibi": 0.3}).assign(experiment="length_extrapolation")
    spec = ReportSpec(primary_metric="ood_token_acc", comparisons=(("rope", "alibi"),))
    names, findings = {}, {}
    for protocol in (3, 4):
        (tmp_path / f"v{protocol}").mkdir()
        artifacts, findings[protocol] = ranking_artifacts(runs, "length_extrapolation", spec,
                                                          tmp_path / f"v{protocol}", protocol=protocol)
        names[protocol] = {artifact.name for artifact in artifacts}
    assert names[3] - names[4] == {"leaderboard_length_extrapolation"}
    # and from v4 the board's stability on halves of its seeds and tasks (issue 66), which v3 reports never said
    stability = [sentence for sentence in findings[4] if "Kendall's tau" in sentence]
    assert not any("Kendall's tau" in sentence for sentence in findings[3])
    assert stability == ["Length extrapolation, decoder: the board's order on halves of its evidence, Kendall's "
                         "tau between the halves' orders of the encodings ranked on both: mean 1.00 over the 10 "
                         "splits of its 6 seeds into two halves of 3; mean 1.00 over the 3 splits of its 4 "
                         "order-dependent tasks into two halves of 2 (1: the same order, 0: unrelated)."]
    assert {"extrapolation_length_extrapolation", "fit_length_extrapolation",
            "pairwise_tasks_length_extrapolation"} <= names[4]
    assert (tmp_path / "v3" / task_ranks_name("length_extrapolation")).exists()
    assert not (tmp_path / "v4" / task_ranks_name("length_extrapolation")).exists()


def test_a_protocol_3_report_writes_the_declared_comparisons_per_task_and_a_v2_report_does_not(tmp_path):
    from pebench.report.boards import ranking_artifacts
    from pebench.report_spec import ReportSpec

    runs = v3_runs({"rope": 0.5, "alibi": 0.3}).assign(experiment="length_extrapolation")
    spec = ReportSpec(primary_metric="ood_token_acc", comparisons=(("rope", "alibi"),))
    for protocol in (2, 3):
        (tmp_path / f"v{protocol}").mkdir()
    names = {protocol: {artifact.name for artifact in ranking_artifacts(
        runs, "length_extrapolation", spec, tmp_path / f"v{protocol}", protocol=protocol)[0]} for protocol in (2, 3)}
    assert names[3] - names[2] == {"pairwise_tasks_length_extrapolation"}
    capable = v3_runs({"none": 0.1, "sinusoidal": 0.2, "learned": 0.2, "rope": 0.5}).assign(
        experiment="length_extrapolation")
    findings = {protocol: ranking_artifacts(capable, "length_extrapolation", spec, tmp_path / f"v{protocol}",
                                            protocol=protocol)[1] for protocol in (2, 3)}
    goal = [finding for finding in findings[3] if "protocol v3's goal" in finding]
    assert goal == ["Length extrapolation, decoder: the capable encodings (Sinusoidal, Learned and RoPE) fitted 72 of "
                    "72 runs (100%; protocol v3's goal: 90%): met."]
    assert not (tmp_path / "v3" / "capacity_length_extrapolation.md").exists()  # nothing unfitted to describe
    missed = capable.assign(fitted=~((capable["encoding"] == "rope") & (capable["seed"] == 0)),
                            run_id=[f"r{i}" for i in range(len(capable))], steps_done=1000)
    rows = missed.assign(fit_curve=json.dumps([[500, 0.9], [1000, 0.97]]))
    artifacts, sentences = ranking_artifacts(missed, "length_extrapolation", spec, tmp_path / "v3", protocol=3,
                                             rows=rows)
    assert "capacity_length_extrapolation" in {artifact.name for artifact in artifacts}
    assert any("were still improving in the last quarter of their steps" in sentence for sentence in sentences)
    assert not any("protocol v3's goal" in finding for finding in findings[2])  # a v2 folder is not held to it
    criterion = {protocol: (tmp_path / f"v{protocol}" / "fit_length_extrapolation.md").read_text()
                 for protocol in (2, 3)}
    assert "at every training length, on held-out inputs never in the training stream" in criterion[3]
    assert "at the longest training length" in criterion[2]  # v2's criterion, as its runs were checked
    written = (tmp_path / "v3" / "pairwise_tasks_length_extrapolation.md").read_text()
    assert "not adjusted for the 4 tests" in written and "6 / 0 / 0" in written


def test_the_unfitted_capable_runs_that_met_the_threshold_on_the_evaluation_set_are_counted():
    """An unfitted run whose evaluation rows (all inputs, most of them trained on) reach the threshold at every
    training length missed only on its check's held-out inputs: at a small input space, one input in a few dozen
    (pebench.tasks.base.Task.distinct_inputs). Counted from in-distribution rows only; an OOD row is never read."""
    def eval_rows(run_id, accuracies, ood=0.1):
        return [dict(run_id=run_id, eval_len=length, condition="original", variant="trained", token_acc=acc,
                     train_min_len=1, train_max_len=8, fit_threshold=0.99)
                for length, acc in zip((2, 4, 6, 8), accuracies, strict=True)] + [
                dict(run_id=run_id, eval_len=16, condition="original", variant="trained", token_acc=ood,
                     train_min_len=1, train_max_len=8, fit_threshold=0.99),
                dict(run_id=run_id, eval_len=4, condition="shuffled", variant="trained", token_acc=0.2,
                     train_min_len=1, train_max_len=8, fit_threshold=0.99)]
    runs = pd.DataFrame([dict(arch="decoder", task="reverse_string", encoding=encoding, seed=0, variant="trained",
                              status="ok", steps_done=1000, run_id=encoding, fitted=encoding != "rope")
                         for encoding in ("none", "sinusoidal", "learned", "rope")])
    curve = json.dumps([[500, 0.9], [1000, 0.97]])
    rows = pd.DataFrame([*eval_rows("sinusoidal", [1.0, 1.0, 0.995, 0.99]),  # met everywhere, OOD ignored
                         *eval_rows("learned", [1.0, 1.0, 0.98, 1.0]),  # short at length 6
                         *eval_rows("rope", [1.0, 1.0, 1.0, 1.0], ood=0.0),
                         *eval_rows("none", [0.5] * 4)]).assign(fit_curve=curve)
    unfitted = runs.assign(fitted=[True, False, False, False])
    table = lb.capacity_shortfall(unfitted, rows)
    assert table[["unfitted", "eval_met"]].to_dict("records") == [{"unfitted": 3, "eval_met": 2}]
    assert lb.shortfall_text(table, "decoder").endswith(
        "; 2 reached the threshold at every training length on the evaluation set, whose inputs the runs mostly "
        "trained on: what their fit checks missed were held-out inputs")
    without = lb.capacity_shortfall(unfitted, rows.drop(columns="token_acc"))  # rows from before: not counted
    assert without["eval_met"].isna().all() and "evaluation set" not in lb.shortfall_text(without, "decoder")
    # rows that record no threshold cannot say whether it was met: not counted as missed
    assert lb.capacity_shortfall(unfitted, rows.drop(columns="fit_threshold"))["eval_met"].isna().all()
    unknown = rows.assign(fit_threshold=rows["fit_threshold"].where(rows["run_id"] != "rope"))
    assert lb.capacity_shortfall(unfitted, unknown)["eval_met"].isna().all()


def test_the_capable_encodings_unfitted_runs_say_whether_they_were_still_improving_at_the_cap():
    """What the unfitted capable runs reached, from their fit curves only (in distribution): their best check, whether
    the last quarter of their steps still improved on every earlier check (by STILL_RISING), whether they ended
    FELL_BACK below their best. A malformed curve (the rows may come from anyone) is read as none."""
    curves = {  # steps_done 1000: the last quarter is after step 750
        ("parity_check", "sinusoidal", 0): [[250, 0.5], [500, 0.6], [750, 0.7], [1000, 0.95]],  # still rising
        ("parity_check", "learned", 0): [[250, 0.5], [500, 0.9], [750, 0.6], [1000, 0.55]],  # fell back
        ("parity_check", "rope", 0): [[250, 0.5], [500, 0.5], [750, 0.5], [1000, 0.505]],  # flat: neither
        ("copy", "rope", 0): "not json",
    }
    rows = [dict(arch="decoder", task=task, encoding=encoding, seed=seed, variant="trained", status="ok",
                 steps_done=1000, run_id=f"{task}-{encoding}-{seed}", fitted=(task, encoding, seed) not in curves,
                 fit_curve=json.dumps(curves.get((task, encoding, seed), [[1000, 1.0]]))
                 if curves.get((task, encoding, seed)) != "not json" else "not json")
            for task in ("copy", "parity_check") for encoding in ("none", "sinusoidal", "learned", "rope")
            for seed in range(2)]
    runs = pd.DataFrame(rows)
    table = lb.capacity_shortfall(runs.drop(columns="fit_curve"), runs)
    assert table.to_dict("records") == [
        {"arch": "decoder", "task": "copy", "unfitted": 1, "runs": 6, "best_median": pytest.approx(float("nan"),
         nan_ok=True), "best_low": pytest.approx(float("nan"), nan_ok=True),
         "best_high": pytest.approx(float("nan"), nan_ok=True), "rising": 0, "fell_back": 0,
         "eval_met": pytest.approx(float("nan"), nan_ok=True)},  # no evaluation rows here: not counted
        {"arch": "decoder", "task": "parity_check", "unfitted": 3, "runs": 6, "best_median": 0.9, "best_low": 0.505,
         "best_high": 0.95, "rising": 1, "fell_back": 1, "eval_met": pytest.approx(float("nan"), nan_ok=True)}]
    assert lb.shortfall_text(table, "decoder") == (
        "of their 4 runs not fitted, 1 was still improving in the last quarter of their steps (by 0.01 or more: a "
        "larger step cap might fit them) and 1 ended 0.05 or more below their best fit check (training lost accuracy "
        "it had reached)")
    assert lb.shortfall_text(table, "encoder") == ""
    goal = lb.capacity_goal(runs, table)["decoder"]
    assert "runs not fitted: parity check 3 of 6, copy 1 of 6; of their 4 runs not fitted, 1 was still" in goal
    shown = board_tables.shortfall_table(table, "caption").to_markdown()
    assert "|  | parity check | 3/6 (50%) | 0.9000 [0.5050, 0.9500] | 1 | 1 | — |" in shown  # decoder, named above
    assert "| copy | 1/6 (17%) | — | 0 | 0 | — |" in shown
    assert lb.capacity_shortfall(runs, runs.drop(columns="fit_curve")).empty  # no curves recorded
    assert lb.capacity_shortfall(runs.assign(fitted=True), runs).empty  # nothing unfitted


def test_the_protocol_page_quotes_the_smallest_p_the_exact_test_gives():
    """The protocol page's unit-of-inference paragraph computes the exact test's smallest p without pandas; it is
    :func:`pebench.analysis.leaderboard.smallest_p`'s."""
    from pebench import protocol
    from pebench.render.protocol_tables import inference_values

    values = inference_values()
    assert float(values["seed_unit_smallest_p"]) == pytest.approx(lb.smallest_p(len(protocol.SEEDS["standard"])),
                                                                  abs=5e-4)  # printed to 3 decimals
    assert float(values["task_unit_smallest_p"]) == pytest.approx(lb.smallest_p(int(values["n_dependent_tasks"])),
                                                                  abs=5e-4)


def test_the_capacity_goal_counts_the_capable_encodings_fits_per_arch_and_a_nope_decoder_on_copy():
    """Protocol v3's goal (rule 6): sinusoidal, learned and RoPE fit 90% of their runs in each arch, and a NoPE
    decoder fits copy on every seed; the sentence names the tasks the capable encodings missed most."""
    rows = [dict(arch=arch, task=task, encoding=encoding, seed=seed, variant="trained", status="ok",
                 order_dependent=task != "majority",
                 fitted=not (task == "parity_check" and arch == "decoder" and seed < 5 and encoding != "none")
                 and not (encoding == "none" and task == "copy" and seed == 0))
            for arch in ("decoder", "encoder") for task in ("copy", "parity_check", "majority")
            for encoding in ("none", "sinusoidal", "learned", "rope") for seed in range(6)]
    goal = lb.capacity_goal(pd.DataFrame(rows))
    assert list(goal) == ["decoder", "encoder"]
    assert goal["decoder"].startswith("the capable encodings (Sinusoidal, Learned and RoPE) fitted 39 of 54 runs "
                                      "(72%; protocol v3's goal: 90%): not met; runs not fitted: parity check 15 of 18")
    assert goal["decoder"].endswith("A NoPE decoder fitted copy on 5 of 6 seeds (goal: every seed): not met.")
    assert goal["encoder"] == ("the capable encodings (Sinusoidal, Learned and RoPE) fitted 54 of 54 runs (100%; "
                               "protocol v3's goal: 90%): met.")
    assert lb.capacity_goal(pd.DataFrame(rows).query("encoding != 'rope'")) == {}  # not every capable encoding


def test_a_board_aligns_numbers_right_with_undefined_cells_among_them():
    """An unranked encoding's score is undefined (—): its column is still one of numbers; a tier column that
    says "not ranked" is one of words."""
    rows = [[Cell("decoder"), Cell("1"), Cell("0.38 [0.05, 0.65]")], [Cell("decoder"), Cell("not ranked"), Cell("—")]]
    board = board_tables._board("b", pd.DataFrame(), ["Arch", "Tier", "Score"], rows, "", None)
    assert [column.align for column in board.columns] == ["l", "l", "r"]


def test_a_board_names_each_architecture_once_and_a_pairs_tasks_under_the_pair():
    """The architecture is a board's key column: printed where it changes, a rule above each new one (Markdown
    shows the name once, LaTeX a rule and the name); the per-task comparisons name a pair once over its tasks."""
    rows = [[Cell(arch), Cell(encoding), Cell("0.50")] for arch in ("decoder", "encoder") for encoding in ("a", "b")]
    board = board_tables._board("b", pd.DataFrame(), ["Arch", "Encoding", "Score"], rows, "", None)
    assert [column.key for column in board.columns] == [True, False, False] and board.group_starts == [2]
    assert [line.split("|")[1].strip() for line in to_markdown(board).splitlines()[2:6]] == ["decoder", "", "encoder",
                                                                                             ""]
    body = to_latex(board).split(r"\midrule", 1)[1]  # after the header's rule
    assert body.count(r"\midrule") == 1 and body.count("decoder") == body.count("encoder") == 1
    table = pd.DataFrame([dict(arch="decoder", a="rope", b="alibi", task=task, n_pairs=6, mean_diff=0.1, a_better=6,
                               b_better=0, ties=0, p_value=0.03125, smallest_p=0.03125)
                          for task in ("copy", "reverse")])
    rendered = to_markdown(board_tables.pairwise_by_task_table(table, ""))
    shown = [line.split("|")[1:5] for line in rendered.splitlines()[2:4]]
    assert [[cell.strip() for cell in row] for row in shown] == [["decoder", "RoPE", "ALiBi", "copy"],
                                                                 ["", "", "", "reverse"]]


def test_split_half_reads_the_boards_order_on_halves_of_the_seeds_and_of_the_tasks():
    """Issue 66's stability: an order that every task and seed shows holds on every half (tau 1); one that half
    of the tasks reverse does not hold on any split of the tasks."""
    steady = v3_runs({"rope": 0.9, "alibi": 0.6, "t5": 0.3, "fire": 0.1}, n_tasks=6, seeds=4, noise=0.01)
    by_task = lb.split_half(steady, "task").iloc[0]
    assert (by_task["n_units"], by_task["n_splits"], by_task["n_encodings"]) == (6, 10, 4)  # C(6, 3) / 2 splits
    assert by_task["tau_mean"] == by_task["tau_min"] == 1.0
    by_seed = lb.split_half(steady, "seed").iloc[0]
    assert (by_seed["n_units"], by_seed["n_splits"], by_seed["tau_min"]) == (4, 3, 1.0)
    flipped = steady.copy()
    reverse = flipped["task"].isin(["task0", "task1", "task2"])
    flipped.loc[reverse, "ood_normalised_acc"] = 1.0 - flipped.loc[reverse, "ood_normalised_acc"]
    split = lb.split_half(flipped, "task").iloc[0]
    assert split["tau_min"] == -1.0 and split["tau_max"] < 0  # {0,1,2} against {3,4,5}; any split: more reversed
    # tasks on one side than the other
    assert lb.split_half(steady[steady["seed"] == 0], "seed").empty  # one seed: nothing to split
    with pytest.raises(ValueError, match="by seed or task"):
        lb.split_half(steady, "encoding")
