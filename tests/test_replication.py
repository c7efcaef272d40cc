"""Agreement scores of a replication (pebench.replication) on synthetic runs whose ranking is known, and the
pre-registered Kazemnejad et al. replication."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from pebench import published, replication
from pebench.experiment import load_experiments, suite_runs

METRIC = "ood_seq_acc"
PAPER = pd.Series({"none": 0.69, "t5": 0.55, "alibi": 0.50, "rope": 0.33, "sinusoidal": 0.22})


def make_runs(means: dict[str, float], *, n_tasks: int = 6, seeds: int = 3, noise: float = 0.0,
              seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [dict(arch="decoder", task=f"task{t}", encoding=enc, seed=s, variant="trained", status="ok", fitted=True,
                 **{METRIC: float(np.clip(mean + noise * rng.uniform(-1, 1), 0, 1))})
            for t, (enc, mean), s in itertools.product(range(n_tasks), means.items(), range(seeds))]
    return pd.DataFrame(rows)


def test_the_papers_own_order_agrees_fully_and_its_reverse_not_at_all():
    same = replication.ranking_agreement(make_runs(dict(PAPER)), METRIC, PAPER, n_boot=50)
    assert same.tau == pytest.approx(1.0) and same.low == same.high == pytest.approx(1.0)
    assert list(same.ours.index) == list(PAPER.index) and same.n_tasks == 6
    reverse = replication.ranking_agreement(make_runs(dict(1 - PAPER)), METRIC, PAPER, n_boot=50)
    assert reverse.tau == pytest.approx(-1.0)


def test_one_swapped_pair_gives_tau_of_point_eight_and_noise_widens_the_interval():
    swapped = dict(PAPER)
    swapped["alibi"], swapped["rope"] = PAPER["rope"], PAPER["alibi"]
    result = replication.ranking_agreement(make_runs(swapped), METRIC, PAPER, n_boot=50)
    assert result.tau == pytest.approx(0.8)  # 9 of 10 pairs concordant: (9 - 1) / 10
    noisy = replication.ranking_agreement(make_runs(dict(PAPER), noise=0.5, seed=1), METRIC, PAPER, n_boot=200)
    assert noisy.low < noisy.tau <= noisy.high or noisy.low <= noisy.tau < noisy.high
    assert noisy.high - noisy.low > 0


def test_unfitted_runs_rank_last_and_extra_encodings_are_left_out():
    runs = make_runs({**PAPER, "xpos": 0.99})
    runs.loc[runs["encoding"] == "none", "fitted"] = False  # NoPE never fitted: it fails every task
    result = replication.ranking_agreement(runs, METRIC, PAPER, n_boot=20)
    assert "xpos" not in result.ours.index
    assert result.ours.index[-1] == "none" and result.tau == pytest.approx(0.2)  # 6 of 10 concordant


def test_the_bootstrap_ranks_each_replicate_as_mrr_ranks_a_frame():
    """Each replicate's tau equals mrr's on the resampled frame, with what mrr leaves out: failed runs,
    evaluation variants, a task with one encoding, unfitted runs scoring 0, two archs of one task."""
    runs = make_runs(dict(PAPER), noise=0.4, seed=3)
    runs = pd.concat([runs, make_runs(dict(PAPER), n_tasks=2, noise=0.4, seed=4).assign(arch="encoder")])
    runs = pd.concat([runs, make_runs({"rope": 0.5}, n_tasks=1).assign(task="alone")], ignore_index=True)
    runs.loc[runs.index % 7 == 0, "fitted"] = False
    runs.loc[runs.index % 11 == 0, "status"] = "failed"
    runs = pd.concat([runs, runs.head(20).assign(variant="shuffled", **{METRIC: 1.0})], ignore_index=True)
    taus = replication._bootstrap_taus(runs, METRIC, PAPER, n_boot=30, seed=5)
    rng = np.random.default_rng(5)
    groups = [group.index.to_numpy() for _, group in runs.groupby(["task", "encoding"], sort=True)]
    for tau in taus:
        rows = np.concatenate([rng.choice(group, size=len(group)) for group in groups])
        expected = replication.kendall_tau(replication.mrr(runs.loc[rows].reset_index(drop=True), METRIC), PAPER)
        assert tau == pytest.approx(expected, abs=1e-12)
    assert len(set(np.round(taus, 6))) > 1  # the replicates differ: the noise moves the ranking


def test_claims_are_read_as_agreeing_contradicting_or_unresolved():
    runs = make_runs({"none": 0.9, "t5": 0.5, "alibi": 0.5, "rope": 0.1}, noise=0.02)
    table = replication.claim_agreement(runs, [("none", "t5"), ("rope", "t5"), ("t5", "alibi"), ("none", "cope")],
                                        METRIC, n_boot=200)
    assert list(table["reading"]) == ["agrees", "contradicts", "unresolved", "unresolved"]


def test_fewer_than_two_published_encodings_is_refused():
    with pytest.raises(ValueError, match="at least two"):
        replication.ranking_agreement(make_runs({"none": 0.5, "xpos": 0.4}), METRIC, PAPER)


def test_the_kazemnejad_replication_is_declared_as_the_paper_ranks():
    """The pre-registered grid: decoder, train to 20, greedy exact match up to 40, the paper's five encodings
    among those compared, every one of their Figure 1 orders declared as a comparison."""
    load_experiments()
    kazemnejad = sys.modules["pebench_experiments.replicate_kazemnejad2023"]
    specs = suite_runs("replication", ["kazemnejad2023"])
    assert {s.arch for s in specs} == {"decoder"} and {s.train.train_max_len for s in specs} == {20}
    assert {s.eval.decoding for s in specs} == {"greedy"} and max(specs[0].eval.lengths) == 40
    assert set(kazemnejad.PAPER_ENCODINGS) <= {s.encoding for s in specs}
    assert {s.seed for s in specs} == {0, 1, 2} and {s.train.length_seed for s in specs} == {0}
    values = published.values("kazemnejad2023")
    figure = values[values["metric"] == "mean_reciprocal_rank"].set_index("encoding")["number"]
    order = list(figure.sort_values(ascending=False).index)
    assert tuple(kazemnejad.PAPER_ENCODINGS) == tuple(order)  # declared in the paper's order, best first
    assert set(kazemnejad.CLAIMS) == {(a, b) for i, a in enumerate(order) for b in order[i + 1:]}


def lm_rows(growths: dict[str, float], seeds: int = 10, noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Length-level rows of language-model runs whose perplexity at 16L is ``growth`` times that at L."""
    rng = np.random.default_rng(seed)
    rows = []
    for enc, factor in growths.items():
        for s in range(seeds):
            g = factor * (1 + noise * rng.uniform(-1, 1))
            for length in (64, 256, 1024):
                loss = 1.5 + (np.log(g) if length == 1024 else 0.0)
                rows.append(dict(run_id=f"{enc}{s}", encoding=enc, seed=s, eval_len=length, train_max_len=64,
                                 loss=loss, status="ok"))
    return pd.DataFrame(rows)


def test_perplexity_growth_is_the_longest_context_over_the_training_one():
    runs = replication.growth(lm_rows({"alibi": 0.9, "rope": 2.5}, seeds=2))
    assert sorted(runs["growth"].round(6)) == [0.9, 0.9, 2.5, 2.5]


def test_the_growth_table_has_every_encoding_least_growth_first_with_the_papers_value_where_it_has_one():
    rows = lm_rows({"rope": 2.5, "kerple_log": 0.95, "alibi": 1.0}, seeds=3, noise=0.1)
    table = replication.growth_table(rows, pd.Series({"alibi": 0.93, "rope": 2.55}))
    assert list(table.index) == ["kerple_log", "alibi", "rope"] and (table["seeds"] == 3).all()
    assert table["ppl_train"].to_numpy() == pytest.approx(np.exp(1.5))  # every run's loss at L is 1.5
    assert table.loc["rope", "growth"] == pytest.approx(
        replication.growth(rows).query("encoding == 'rope'")["growth"].mean())
    assert table.loc["rope", "growth_ci"] > 0 and table.loc["alibi", "paper"] == 0.93
    assert np.isnan(table.loc["kerple_log", "paper"])
    one = replication.growth_table(lm_rows({"alibi": 1.0}, seeds=1), pd.Series(dtype=float))
    assert np.isnan(one.loc["alibi", "growth_ci"])  # no interval from one seed


def test_growth_agreement_and_claims_read_the_papers_order():
    published_growth = pd.Series({"alibi": 0.93, "t5": 2.0, "rope": 2.55, "sinusoidal": 14.6})
    runs = replication.growth(lm_rows({"alibi": 1.0, "t5": 1.5, "rope": 3.0, "sinusoidal": 9.0}, noise=0.05))
    agreement = replication.growth_agreement(runs, published_growth, n_boot=50)
    assert agreement.tau == pytest.approx(1.0) and list(agreement.ours.index)[0] == "alibi"
    claims = replication.growth_claims(runs, [("alibi", "sinusoidal"), ("sinusoidal", "rope")])
    assert list(claims["reading"]) == ["agrees", "contradicts"] and (claims["n_pairs"] == 10).all()
    few = replication.growth_claims(replication.growth(lm_rows({"alibi": 1.0, "rope": 3.0}, seeds=3)),
                                    [("alibi", "rope")])
    assert list(few["reading"]) == ["unresolved"]  # 3 seed pairs can never reach p < 0.05


def test_the_press_replication_reads_table_2():
    load_experiments()
    press = sys.modules["pebench_experiments.replicate_press2022"]
    growth = press.published_aggregate()
    assert growth["sinusoidal"] == pytest.approx(293.02 / 20.05) and growth["alibi"] == pytest.approx(18.33 / 19.73)
    assert list(growth.sort_values().index) == list(press.PAPER_ENCODINGS)
    specs = suite_runs("replication", ["press2022"])
    assert {s.seed for s in specs} == set(range(10)) and max(specs[0].eval.lengths) == 16 * press.CONTEXT


def test_mean_gain_pairs_each_randomized_encoding_with_its_base_by_task_and_seed():
    runs = make_runs({"rope": 0.3, "randomized:rope": 0.5, "alibi": 0.4, "randomized:alibi": 0.4})
    mean, low, high, n = replication.mean_gain(runs, [("randomized:rope", "rope"), ("randomized:alibi", "alibi")],
                                               METRIC, n_boot=200)
    assert n == 36 and mean == pytest.approx(0.1) and low <= mean <= high
    runs.loc[runs["encoding"] == "randomized:rope", "fitted"] = False  # unfitted: scores 0, as on the leaderboard
    assert replication.mean_gain(runs, [("randomized:rope", "rope")], METRIC, n_boot=10)[0] == pytest.approx(-0.3)


def test_the_ruoss_replication_compares_every_base_with_and_without_randomized_positions():
    load_experiments()
    ruoss = sys.modules["pebench_experiments.replicate_ruoss2023"]
    specs = suite_runs("replication", ["ruoss2023"])
    assert {s.arch for s in specs} == {"encoder"} and len({s.task for s in specs}) == 15
    assert max(specs[0].eval.lengths) == 5 * ruoss.TRAIN_MAX_LEN
    names = {s.encoding for s in specs}
    assert all(base in names and f"randomized:{base}" in names for base in ruoss.BASES)
    assert ruoss.published_aggregate().iloc[0] == pytest.approx(12.0)


def test_the_task_table_gives_the_mean_or_max_over_seeds_with_unfitted_runs_at_zero():
    runs = make_runs({"rope": 0.3, "alibi": 0.5}, n_tasks=2, seeds=3)
    runs[METRIC] += 0.1 * runs["seed"]  # seeds 0, 1, 2: rope 0.3, 0.4, 0.5
    runs.loc[(runs["encoding"] == "alibi") & (runs["task"] == "task0") & (runs["seed"] == 2), "fitted"] = False
    mean = replication.task_table(runs, METRIC)
    assert list(mean.index) == ["rope", "alibi"] and list(mean.columns) == ["task0", "task1", "fitted"]
    assert mean.loc["rope", "task0"] == pytest.approx(0.4) and mean.loc["alibi", "task0"] == pytest.approx(1.1 / 3)
    assert mean.loc["alibi", "fitted"] == "5/6" and mean.loc["rope", "fitted"] == "6/6"
    top = replication.task_table(runs, METRIC, "max")
    assert top.loc["rope", "task1"] == pytest.approx(0.5) and top.loc["alibi", "task0"] == pytest.approx(0.6)
    with pytest.raises(ValueError, match="'mean' or 'max'"):
        replication.task_table(runs, METRIC, "median")


def test_the_kazemnejad_scale_check_varies_only_the_models_size_on_copy():
    load_experiments()
    check = sys.modules["pebench_experiments.replicate_kazemnejad2023_scale"]
    main = {(s.encoding, s.seed): s for s in suite_runs("replication", ["kazemnejad2023"]) if s.task == "copy"}
    for d_model, n_layers in check.SIZES[1:]:
        specs = suite_runs("replication", [check.experiment_name(d_model, n_layers)])
        assert len(specs) == 15 and {s.encoding for s in specs} == set(check._replication().PAPER_ENCODINGS)
        for spec in specs:
            same = main[(spec.encoding, spec.seed)]
            assert (spec.d_model, spec.n_layers) == (d_model, n_layers)
            assert spec.eval == same.eval and spec.train == same.train and spec.n_heads == same.n_heads
            assert replace(spec, experiment=same.experiment, d_model=64, n_layers=2) == same
    assert check.experiment_name(*check.SIZES[0]) == "kazemnejad2023"  # the standard size is the replication's


def test_the_kazemnejad_reading_names_the_tasks_no_encoding_fitted():
    load_experiments()
    kazemnejad = sys.modules["pebench_experiments.replicate_kazemnejad2023"]
    runs = make_runs(dict.fromkeys(kazemnejad.PAPER_ENCODINGS, 0.5), n_tasks=1)
    runs = pd.concat([runs.assign(task=task) for task in ("copy", "parity", "sort")], ignore_index=True)
    runs.loc[runs["task"] == "parity", "fitted"] = False
    runs.loc[(runs["task"] == "copy") & (runs["encoding"] == "none"), "fitted"] = False
    reading = kazemnejad.fit_reading(runs)
    assert "1 of the 3 tasks (parity) were fitted by none" in reading and "decided by the other 2" in reading
    assert "NoPE 3/9, t5 6/9" in reading


def regime_runs(fitted_b: int, seeds: int = 10) -> pd.DataFrame:
    """Encoder runs of one task: ``a`` always fits and scores 0.9, ``b`` scores 0.3 and fits its first ``fitted_b``
    seeds (an unfitted ``b`` run would score 0 under the leaderboard's rule)."""
    rows = []
    for seed in range(seeds):
        rows.append(dict(arch="encoder", task="t", encoding="a", seed=seed, variant="trained", status="ok",
                         run_id=f"a{seed}", fitted=1.0, ood_token_acc=0.9 + 0.001 * seed))
        rows.append(dict(arch="encoder", task="t", encoding="b", seed=seed, variant="trained", status="ok",
                         run_id=f"b{seed}", fitted=float(seed < fitted_b), ood_token_acc=0.3))
    return pd.DataFrame(rows)


def test_a_claim_is_judged_only_where_both_encodings_fitted():
    table = replication.regime_agreement(regime_runs(fitted_b=10), [("a", "b")], "ood_token_acc", n_boot=100)
    assert table.loc[0, "reading"] == replication.AGREES and table.loc[0, "n_pairs"] == 10
    table = replication.regime_agreement(regime_runs(fitted_b=3), [("a", "b")], "ood_token_acc", n_boot=100)
    assert table.loc[0, "reading"] == replication.NOT_TESTABLE and table.loc[0, "n_pairs"] == 3
    assert table.loc[0, "raw_pairs"] == 10 and table.loc[0, "raw_gain"] == pytest.approx(0.6045)  # 0.9 + 0.0045
    table = replication.regime_agreement(regime_runs(fitted_b=0), [("a", "b")], "ood_token_acc", n_boot=100)
    assert table.loc[0, "reading"] == replication.NOT_TESTABLE
    assert table.loc[0, "note"] == "no task-seed pair in which both fitted, of 10 pairs run"
    assert replication.pooled_gain(table) != replication.pooled_gain(table)  # NaN: no jointly fitted pair
