"""Agreement scores of a replication (pebench.analysis.replication) on synthetic runs whose ranking is known, the
pre-registered replications as registered records, and the sections a report writes for them
(pebench.report.replications)."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pebench.analysis import published, replication
from pebench.plan.experiment import load_experiments, suite_runs

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
    assert "NoPE 3/9, T5 bias 6/9" in reading


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


# --------------------------------------------------------------------------- the records and the report's sections

def page(blocks: list[dict]) -> str:
    """Blocks as Markdown-like text (tables as ``| a | b |`` rows), for assertions on what the site will show."""
    lines = []
    for block in blocks:
        if block["kind"] == "table":
            lines += ["| " + " | ".join(row) + " |" for row in [block["header"], *block["rows"]]]
        elif block["kind"] == "list":
            lines += [f"- {item}" for item in block["items"]]
        elif block["kind"] == "code":
            lines += block["lines"]
        else:
            lines.append(("#" * block["level"] + " " if block["kind"] == "heading" else "") + block["text"])
    return "\n".join(lines)


def sections_text(folder) -> str:
    from pebench.report.replications import sections

    load_experiments()  # the scripts register the replications (the analysis never loads them; its callers do)
    return "\n".join(page(section["blocks"]) for section in sections(folder, "replication"))


def test_every_replication_script_registers_its_record_and_checks():
    load_experiments()
    assert replication.REPLICATIONS.names() == ["kazemnejad2023", "kazemnejad2023_v3", "press2022", "ruoss2023"]
    kazemnejad = replication.REPLICATIONS.get("kazemnejad2023")
    assert kazemnejad.paper == "kazemnejad2023nope" and kazemnejad.metric == "ood_seq_acc"
    assert kazemnejad.published()["none"] == pytest.approx(0.69) and len(kazemnejad.claims) == 10
    assert [c.name for c in kazemnejad.checks] == ["kazemnejad2023_scale"]
    assert [c.name for c in replication.REPLICATIONS.get("ruoss2023").checks] == ["ruoss2023_check"]
    assert replication.REPLICATIONS.get("press2022").checks == []
    assert replication.REPLICATIONS.get("kazemnejad2023_v3").checks == []
    bib = (Path(__file__).resolve().parent.parent / "docs" / "references.bib").read_text()
    for name in replication.REPLICATIONS.names():
        record = replication.REPLICATIONS.get(name)
        assert f"{{{record.paper}," in bib and (Path(__file__).resolve().parent.parent / record.script).exists()
    with pytest.raises(ValueError, match="registered twice"):
        replication.REPLICATIONS.register("kazemnejad2023")(kazemnejad)


def test_the_v3_remake_changes_only_the_model_and_fit_criterion_and_is_scored_alike():
    """kazemnejad2023_v3 (issue 36, item 9): each run is the replication's run with the standard suite's v3 depth,
    width, heads and fit criterion; tasks, lengths, encodings, seeds, caps and scores are the replication's."""
    import dataclasses

    from pebench.plan.experiment import suite_runs
    from pebench.protocol import SCALES

    load_experiments()
    runs = suite_runs("replication", ["kazemnejad2023", "kazemnejad2023_v3"])
    v2 = {(s.task, s.encoding, s.seed): s for s in runs if s.experiment == "kazemnejad2023"}
    v3 = {(s.task, s.encoding, s.seed): s for s in runs if s.experiment == "kazemnejad2023_v3"}
    assert set(v2) == set(v3) and len(v3) == 270
    standard = SCALES["standard"]
    for key, remade in v3.items():
        assert (remade.n_layers, remade.d_model, remade.protocol) == (standard["n_layers"], standard["d_model"], 3)
        assert remade.train.fit_patience == 0 and remade.train.fit_lengths == "all"
        assert remade.train.fit_examples == standard["fit_examples"] and remade.train.fit_disjoint
        original = v2[key]
        assert remade.train.steps == original.train.steps and remade.eval == original.eval
        # the same run but for the model's size and the fit criterion
        same = dataclasses.replace(remade, experiment=original.experiment, n_layers=original.n_layers,
                                   protocol=original.protocol, train=dataclasses.replace(
                                       remade.train, fit_patience=original.train.fit_patience,
                                       fit_lengths=original.train.fit_lengths,
                                       fit_examples=original.train.fit_examples,
                                       fit_disjoint=original.train.fit_disjoint))
        assert same == original
    record, remake = (replication.REPLICATIONS.get(name) for name in ("kazemnejad2023", "kazemnejad2023_v3"))
    assert (remake.claims, remake.metric, remake.published().to_dict()) == (
        record.claims, record.metric, record.published().to_dict())
    assert remake.score.keywords["name"] == "kazemnejad2023_v3" and remake.remakes == "kazemnejad2023"
    assert remake.script == "experiments/replicate_kazemnejad2023_v3.py" and remake.experiment.name == remake.name
    changed = {"experiment", "script", "declared_in", "score", "remakes"}
    assert all(getattr(remake, field.name) == getattr(record, field.name)
               for field in dataclasses.fields(record) if field.name not in changed)


def test_the_v3_remake_reads_its_tau_against_the_replications_by_the_declared_rule(tmp_path):
    """The re-make's section ends its reading with the pre-registered comparison of the two taus, computed from the
    two experiments' runs in the folder: here the replication's runs rank the paper's five in reverse (tau -1) and
    the re-make's in its order (tau 1), so the intervals are apart and the re-make's is higher."""
    paper = ["none", "t5", "alibi", "rope", "sinusoidal"]
    rows = [dict(experiment=experiment, arch="decoder", task=f"t{t}", encoding=e, seed=s, variant="trained",
                 status="ok", fitted=True, ood_seq_acc=(5 - rank if experiment.endswith("v3") else rank) / 5)
            for experiment in ("kazemnejad2023", "kazemnejad2023_v3")
            for t, (rank, e), s in itertools.product(range(6), enumerate(paper), range(3))]
    summary = tmp_path / "replication" / "summary"
    summary.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(summary / "runs.csv", index=False)
    text = sections_text(tmp_path / "replication")
    # its own paragraph, right after the re-make's tau and its table
    assert (" | 0.22 |\nAgainst the original replication (`kazemnejad2023`), tau **-1.00** [-1.00, -1.00]: this "
            "one's **1.00** [1.00, 1.00] is **higher**, by the declared rule") in text  # after the last row: APE 0.22
    assert text.count("Against the original replication") == 1  # the original is read against nothing
    # each setup states its own fit criterion, as its run specs set it
    assert "(token accuracy >= 0.99 at length 20, on 128 held-out inputs, checked every" in text
    assert "(token accuracy >= 0.99 at every training length, on 512 held-out inputs never trained on, checked" in text
    # without the replication's runs, no comparison is made
    pd.DataFrame([r for r in rows if r["experiment"].endswith("v3")]).to_csv(summary / "runs.csv", index=False)
    assert "`kazemnejad2023`): its runs are not in this folder, so the declared comparison" in sections_text(
        tmp_path / "replication")


def test_a_remakes_tau_is_read_against_the_originals_only_where_the_intervals_are_apart():
    base = _tau(0.0, 0.4)
    assert replication.interval_verdict(_tau(0.41, 0.8), base) == "higher"
    assert replication.interval_verdict(_tau(-0.8, -0.01), base) == "lower"
    # intervals that meet at an end overlap: the committed re-make's 0.80 [0.40, 0.80] against 0.20 [0.00, 0.40]
    assert replication.interval_verdict(_tau(0.4, 0.8), base) == "unresolved"
    reading = replication.remake_reading(_tau(0.4, 0.8), base, "kazemnejad2023")
    assert "is **not resolved** from it" in reading and "these two meet at 0.40" in reading
    assert "overlap on [0.10, 0.40]" in replication.remake_reading(_tau(0.1, 0.8), base, "kazemnejad2023")
    undefined = replication.RankingAgreement(np.nan, np.nan, np.nan, pd.Series(dtype=float),
                                             pd.Series(dtype=float), n_tasks=1, n_boot=10)
    assert "is undefined, so the declared comparison" in replication.remake_reading(undefined, base, "x")


def test_without_runs_each_section_says_how_to_make_them(tmp_path):
    text = sections_text(tmp_path / "replication")
    assert "## Replication: Kazemnejad et al. 2023" in text and "| NoPE | 0.69 |" in text
    assert "## Replication: Press et al. 2022" in text and "| Sinusoidal | 14.61 |" in text  # 293.02 / 20.05
    # each of the three replications, the Kazemnejad re-make at v3's scale, its scale check and the Ruoss check
    assert text.count("Not run yet") == 6 and "Kendall's tau of" not in text
    assert "| model | decoder-only, 12 layers" in text and "d_model 64" in text
    assert "Declared in `experiments/replicate_kazemnejad2023.py` (commit `ba88c84`)" in text
    assert "### Scale check: copy at 6 model sizes" in text and "--experiment kazemnejad2023_d256_l4" in text
    assert "### Check: stack manipulation, randomized positions from L = 410" in text
    assert "--experiment ruoss2023_dense --experiment ruoss2023_budget4x" in text


def test_a_section_names_the_results_folder_not_the_reports_staging_folder(tmp_path):
    """``pebench report`` writes into a staging folder (``.report-<machine>-<pid>-<random>``) and moves the files
    into place: a section names the folder of the runs, so that a report is the same whichever staging it used."""
    from pebench.report.replications import sections

    load_experiments()
    staging = tmp_path / "replication" / ".report-0123abcd-42-a1b2c3d4"
    text = "\n".join(page(s["blocks"]) for s in sections(staging, "replication", results_dir=tmp_path / "replication"))
    assert "Not run yet: `results/replication` holds no run of" in text and ".report-" not in text


def test_a_section_scores_the_runs_of_its_replication(tmp_path):
    paper = {"none": 0.9, "t5": 0.7, "alibi": 0.5, "rope": 0.3, "sinusoidal": 0.1}
    rows = [dict(experiment="kazemnejad2023", arch="decoder", task=f"t{t}", encoding=e, seed=s, variant="trained",
                 status="ok", fitted=True, ood_seq_acc=m + 0.01 * s)
            for t, (e, m), s in itertools.product(range(6), paper.items(), range(3))]
    summary = tmp_path / "replication" / "summary"
    summary.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(summary / "runs.csv", index=False)
    text = sections_text(tmp_path / "replication")
    # runs in the paper's order on 6 tasks, 3 seeds each: full agreement
    assert "over 6 tasks: **1.00** [1.00, 1.00]" in text and "10 agree, 0 contradicted, 0 unresolved" in text
    assert "## Replication: Ruoss et al. 2023" in text and "| randomized vs base | 12.00 |" in text
    assert "holds no run of `press2022`" in text
    assert "| NoPE | 1.00 | 0.69 |" in text
    # pebench's per-task table beside the aggregate, and why no per-task tau is scored
    assert "the mean over seeds of `ood_seq_acc`" in text
    assert "| encoding | t0 | t1 | t2 | t3 | t4 | t5 | fitted |" in text
    assert "| NoPE | 0.91 | 0.91 | 0.91 | 0.91 | 0.91 | 0.91 | 18/18 |" in text and "No per-task Kendall tau" in text


def test_a_replication_says_what_its_runs_cost_and_where_they_ran(tmp_path):
    import json

    from pebench.report.replications import compute

    folder = tmp_path / "results" / "replication"
    (folder / "summary").mkdir(parents=True)
    pd.DataFrame([dict(experiment="press2022", run_id=f"r{i}", variant="trained", train_seconds=90.0)
                  for i in range(4)] + [dict(experiment="ruoss2023", run_id="g0", variant="trained", train_seconds=9.0)]
                 ).to_csv(folder / "summary" / "runs.csv", index=False)
    machine = dict(cpu_count=2, processor="x86_64", torch_version="2.13.0+cpu", workers=2, device="cpu",
                   cuda_device=None, git_sha="a" * 40)
    old = dict(machine)  # a sweep from before the manifest recorded wall times
    timed = dict(machine, experiments=["press2022"], runs_made=3, wall_seconds=600.0, outcome="interrupted")
    gpu = dict(machine, device="cuda", cuda_device="NVIDIA H100", workers=1, experiments=["ruoss2023"],
               runs_made=5, wall_seconds=60.0, outcome="complete")
    killed = dict(machine, experiments=["press2022"], runs_made=1, wall_seconds=120.0)  # no end recorded: killed
    (folder / "manifest.json").write_text(json.dumps({"suite": "replication",
                                                      "invocations": [old, timed, gpu, killed]}))
    text = page(compute("press2022", folder))
    assert "4 runs; their training took 6 worker-minutes" in text
    # only the sweeps that may have made its runs: the one that names it, and the one from before the manifest
    # named experiments; not the GPU sweep of another experiment
    assert ("The sweeps of this experiment, with the 1 that predate the manifest's record of experiments, ran on: "
            "2-core x86_64 CPU, torch 2.13.0+cpu, 2 workers.") in text
    ruoss = page(compute("ruoss2023", folder))
    assert "ran on: 2-core x86_64 CPU, torch 2.13.0+cpu, 2 workers; NVIDIA H100 GPU, torch 2.13.0+cpu, 1 worker." \
        in ruoss
    assert ("3 runs in 10 min (commit `aaaaaaa`, interrupted); 1 runs in at least 2 min (commit `aaaaaaa`, stopped "
            "without recording its end).") in text and "60 s" not in text
    assert "1 of the manifest's 4 sweeps recorded no wall time (they predate its record, or were stopped" in text
    assert compute("kazemnejad2023", folder) == []  # no run of it


def test_the_kazemnejad_scale_check_is_read_in_its_replications_section(tmp_path):
    # NoPE fails copy at the standard size and fits it at d128: the order reverses towards the paper's
    paper = ["none", "t5", "alibi", "rope", "sinusoidal"]
    rows = []
    for experiment, order in (("kazemnejad2023", paper[1:] + paper[:1]), ("kazemnejad2023_d128_l2", paper)):
        for (rank, encoding), seed in itertools.product(enumerate(order), range(3)):
            rows.append(dict(experiment=experiment, arch="decoder", task="copy", encoding=encoding, seed=seed,
                             variant="trained", status="ok", fitted=not (encoding == "none" and rank == 4),
                             id_seq_acc=0.9, ood_seq_acc=0.5 - 0.1 * rank + 0.01 * seed))
    summary = tmp_path / "replication" / "summary"
    summary.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(summary / "runs.csv", index=False)
    text = sections_text(tmp_path / "replication")
    assert "d128_l2" not in text.split("### Scale check")[0]
    check = text[text.index("### Scale check"):]
    assert "| d64, 2 layers | NoPE | 0/3 | 0.90 | 0.00 |" in check
    assert "| d128, 2 layers | NoPE | 3/3 | 0.90 | 0.51 |" in check
    assert "d64, 2 layers **0.20**" in check and "d128, 2 layers **1.00** [1.00, 1.00]" in check
    # the declared reading: a size differs from the standard one only where the intervals do not overlap
    assert "d128, 2 layers is higher than it." in check
    assert "NoPE, the paper's best encoding, fitted copy (seeds fitted per size): d64, 2 layers 0/3; " \
           "d128, 2 layers 3/3." in check
    # the optimiser every size shares, read from the specs, and the fits per size it is to be read with
    assert "AdamW at lr 0.003, batches of 64, 100 warm-up steps" in check
    assert "the five encodings together: d64, 2 layers 12/15; d128, 2 layers 15/15." in check
    assert "Not complete (no tau): `kazemnejad2023_d64_l4`" in check


def _tau(low: float, high: float) -> replication.RankingAgreement:
    return replication.RankingAgreement(tau=(low + high) / 2, low=low, high=high, ours=pd.Series(dtype=float),
                                        theirs=pd.Series(dtype=float), n_tasks=1, n_boot=10)


def test_the_scale_check_is_read_across_sizes_only_when_depth_alone_separates_them():
    from pebench.report.replications import scale_by_depth

    load_experiments()
    check = replication.CHECKS.get("kazemnejad2023_scale")
    sizes = [check.size_label(d, n) for d, n in check.sizes]
    deep = {s: s.endswith("4 layers") for s in sizes}
    cells = pd.DataFrame([dict(size=s, encoding="none", fitted=3 if deep[s] else 0, n=3) for s in sizes])
    taus = {s: _tau(0.3, 0.5) if deep[s] else _tau(-0.2, 0.1) for s in sizes}
    taus["d256, 4 layers"] = _tau(0.4, 0.8)
    text = page(scale_by_depth(check, cells, taus, dict(check.size_verdicts(taus))))
    assert "depth and not width separates them: at every 2-layer size (d64, d128, d256) NoPE fitted copy in no " \
           "seed and the tau is not resolved from the standard size's; at every 4-layer size (d64, d128, d256) " \
           "NoPE fitted copy in every seed and the tau is higher than the standard size's." in text
    assert "The highest tau on copy: d256, 4 layers **0.60** [0.40, 0.80]." in text
    assert "it does not measure the aggregate tau at another size" in text
    # one wide 2-layer size that fits NoPE breaks the pattern: listed per depth, no conclusion drawn
    cells.loc[cells["size"] == "d256, 2 layers", "fitted"] = 3
    taus["d256, 2 layers"] = _tau(0.3, 0.5)
    text = page(scale_by_depth(check, cells, taus, dict(check.size_verdicts(taus))))
    assert "depth and not width" not in text and "Neither depth nor width alone separates them." in text
    assert "d256 (NoPE fitted all; higher)" in text and "d64 (NoPE fitted none; the standard size)" in text
    # a size without its tau yet: nothing is read across the sizes
    del taus["d128, 4 layers"]
    assert scale_by_depth(check, cells, taus, dict(check.size_verdicts(taus))) == []


def test_the_scale_checks_declared_reading_calls_overlapping_intervals_unresolved():
    load_experiments()
    check = replication.CHECKS.get("kazemnejad2023_scale")
    taus = {"d64, 4 layers": _tau(0.3, 0.5), "d64, 2 layers": _tau(-0.2, 0.0), "d128, 2 layers": _tau(-0.1, 0.4),
            "d128, 4 layers": _tau(-0.6, -0.3)}
    assert check.size_verdicts(taus) == [("d64, 4 layers", "higher"), ("d128, 2 layers", "unresolved"),
                                         ("d128, 4 layers", "lower")]
    assert check.size_verdicts({"d64, 4 layers": _tau(0.3, 0.5)}) == []  # no standard size: nothing to compare


def test_the_ruoss_check_reads_its_arms_beside_the_replications_runs(tmp_path):
    # the replication: bases fit, randomized do not; the dense arm: randomized:rope fits 2 of 3 seeds
    rows = []
    for experiment, encoding, fitted, ood in (("ruoss2023", "rope", (1, 1, 1), 0.5),
                                              ("ruoss2023", "randomized:rope", (0, 0, 0), 0.8),
                                              ("ruoss2023_dense", "randomized:rope", (1, 1, 0), 0.9)):
        rows += [dict(experiment=experiment, arch="encoder", task="stack_manipulation", encoding=encoding, seed=seed,
                      variant="trained", status="ok", fitted=bool(fit), fit_token_acc=0.995 if fit else 0.9,
                      ood_token_acc=ood) for seed, fit in enumerate(fitted)]
    rows.append(dict(rows[0], task="duplicate_string"))  # another task: not the check's
    summary = tmp_path / "replication" / "summary"
    summary.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(summary / "runs.csv", index=False)
    check = sections_text(tmp_path / "replication").split("### Check:")[1]
    assert "| replication | Randomized RoPE | 0/3 | 0.90 | 0.00 | 0.80 (unfitted runs) | — |" in check
    assert "| replication | RoPE | 3/3 | 0.99 | 0.50 | 0.50 | 0.50 |" in check
    # the dense arm's rows are its own runs; the replication's bases are its comparison, not its rows
    assert "| ruoss2023_dense | Randomized RoPE | 2/3 | 0.96 | 0.60 | 0.90 (unfitted runs) | 0.90 |" in check
    assert "| ruoss2023_dense | RoPE |" not in check
    assert "Randomized runs fitted, per arm: replication 0/3; ruoss2023_dense 2/3." in check
    assert "Randomized RoPE in ruoss2023_dense, 2/3 fitted: 0.90 against 0.50." in check
    # replication: 0 - 0.5 on 3 pairs; dense: 0.9, 0.9, 0 against 0.5
    assert "replication **-50.0** points [-50.0, -50.0] over 3 pairs" in check
    assert "ruoss2023_dense **+10.0** points" in check
    assert "Not complete: `ruoss2023_dense` (3 of 15 runs), `ruoss2023_budget4x` (0 of 30 runs)." in check


def test_the_press_section_shows_every_encodings_growth_beside_the_papers():
    from pebench.report.replications import growth_blocks

    load_experiments()
    record = replication.REPLICATIONS.get("press2022")
    folder = Path(__file__).resolve().parent.parent / "results" / "replication"
    table = next(b for b in growth_blocks(folder, "press2022", record.published()) if b["kind"] == "table")
    assert len(table["rows"]) == len({s.encoding for s in suite_runs("replication", ["press2022"])})  # every one
    alibi = next(row for row in table["rows"] if row[0] == "ALiBi")
    assert alibi[-1] == "0.93" and alibi[1] == "10"  # the paper's value beside pebench's 10 seeds
    assert any(row[-1] == "—" for row in table["rows"])  # encodings the paper does not report
    assert growth_blocks(folder, "no_such_experiment", record.published()) == []


def test_replication_tables_follow_the_order_their_script_declares():
    from pebench.report.replications import declared_order

    # declared first, in the declared order; anything undeclared after, in the order found
    assert declared_order(["bucket_sort", "extra", "even_pairs"], ("even_pairs", "parity_check", "bucket_sort")) \
        == ["even_pairs", "bucket_sort", "extra"]
    assert declared_order(["b", "a"], ()) == ["b", "a"]
