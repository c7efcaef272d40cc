"""The fit criterion (rule 1 of the protocol): training checks held-out accuracy, stops at fit or at a
plateau, rows record it, and the analysis judges extrapolation and order on fitted seeds only."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from test_results import run_frame

from pebench import metrics, report, tasks
from pebench.analysis import results
from pebench.learn.train import FitTracker, TrainConfig, train
from pebench.model import ModelConfig, build_model


def tiny_model(task: str = "majority", encoding: str = "rope", arch: str = "decoder", dropout: float = 0.0):
    config = ModelConfig(vocab_size=tasks.model_vocab_size(tasks.get(task)), arch=arch, d_model=16, n_layers=1,
                         n_heads=2, dropout=dropout)
    return build_model(config, encoding, max_len=64, train_len=12, seed=0)


def config(**overrides) -> TrainConfig:
    return TrainConfig(**{"steps": 40, "batch_size": 8, "lr": 3e-3, "warmup_steps": 2, "train_max_len": 5,
                          **overrides})


@pytest.mark.parametrize("bad", [
    {"stop_at_fit": True},  # no fit_every
    {"fit_every": 10, "fit_patience": 20},  # plateau stop without stop_at_fit
    {"fit_every": 10, "fit_threshold": 0.0},
    {"fit_every": 10, "fit_threshold": 1.5},
    {"fit_every": -1},
    {"fit_every": 10, "fit_examples": 0},
    {"fit_every": 10, "stop_at_fit": True, "fit_min_drop": 1.0, "fit_patience": 10},
])
def test_bad_fit_settings_are_refused(bad):
    with pytest.raises(ValueError):
        config(**bad)


def test_default_config_keeps_its_run_identity():
    """Configs without a fit criterion flatten exactly as before it existed (their run ids do not move)."""
    assert not {"fit_every", "fit_patience", "stop_at_fit"} & set(config().to_dict())
    assert {"fit_every", "fit_threshold", "fit_examples", "stop_at_fit"} <= set(config(fit_every=10).to_dict())


@pytest.mark.parametrize("encoding, dropout", [("randomized:rope", 0.0), ("rope", 0.1)])
def test_checking_the_fit_never_changes_training(encoding, dropout):
    """The check runs under a forked RNG in eval mode: randomized positions and dropout draw the same numbers."""
    plain = train(tiny_model(encoding=encoding, dropout=dropout), tasks.get("majority"), config())
    checked = train(tiny_model(encoding=encoding, dropout=dropout), tasks.get("majority"), config(fit_every=7))
    assert plain.losses == checked.losses
    assert plain.fitted is None and plain.stop_reason == "cap"
    assert checked.fitted is not None and math.isfinite(checked.fit_token_acc)


def test_training_stops_at_fit_and_records_when():
    # a threshold any trained model meets: the first check fits
    result = train(tiny_model(), tasks.get("majority"), config(fit_every=10, fit_threshold=0.05, stop_at_fit=True))
    assert result.fitted and result.steps_to_fit == 10
    assert result.steps_done == 10 and result.stop_reason == "fit"


def test_plateau_stop_ends_a_run_that_stopped_learning():
    # lr so small that the held-out accuracy never moves by 0.01: the first check (step 10) sets the best,
    # and the run stops, unfitted, at the check where 30 steps have passed without beating it
    result = train(tiny_model(), tasks.get("majority"), config(
        steps=200, lr=1e-9, fit_every=10, fit_threshold=1.0, stop_at_fit=True, fit_patience=30))
    assert result.fitted is False and result.steps_to_fit is None
    assert result.stop_reason == "plateau" and result.steps_done == 40


def test_the_fit_curve_records_every_check_in_order():
    """Every check's (steps, accuracy) is kept, the last is fit_token_acc, and a stop ends the curve there."""
    result = train(tiny_model(), tasks.get("majority"), config(
        steps=200, lr=1e-9, fit_every=10, fit_threshold=1.0, stop_at_fit=True, fit_patience=30))
    assert [steps for steps, _ in result.fit_curve] == [10, 20, 30, 40]
    assert result.fit_curve[-1][1] == result.fit_token_acc
    assert train(tiny_model(), tasks.get("majority"), config()).fit_curve == []


@pytest.mark.parametrize("rule", [
    {"fit_threshold": 1.0, "fit_patience": 30, "fit_min_drop": 0.1},  # stops at a plateau
    {"fit_threshold": 1.0, "fit_patience": 20, "fit_min_drop": 0.5},
    {"fit_threshold": 0.6, "fit_patience": 50, "fit_min_drop": 0.1},  # fits first
])
def test_a_replayed_stop_is_where_training_under_that_rule_stops(rule):
    """replay_stop on the curve of a run trained to its cap gives the step, reason and fit of training again
    under the rule: the curve is enough to judge a stopping rule."""
    from pebench.learn.train import replay_stop

    task, base = tasks.get("copy"), config(steps=150, lr=3e-3, fit_every=10, train_max_len=4)
    full = train(tiny_model("copy"), task, base)
    ruled = dataclasses.replace(base, stop_at_fit=True, **rule)
    actual = train(tiny_model("copy"), task, ruled)
    replayed = replay_stop(full.fit_curve, ruled)
    assert (replayed.steps_done, replayed.stop_reason, replayed.fitted, replayed.steps_to_fit) == (
        actual.steps_done, actual.stop_reason, actual.fitted, actual.steps_to_fit)
    assert actual.fit_curve == full.fit_curve[:len(actual.fit_curve)]


def test_a_rule_that_never_fires_says_so():
    from pebench.learn.train import ReplayedStop, replay_stop

    never = config(fit_every=10, fit_threshold=1.0, stop_at_fit=True, fit_patience=1000)
    assert replay_stop([(10, 0.2), (20, 0.5), (30, 0.7)], never).stop_reason == "curve"
    assert replay_stop([(10, 0.2), (20, 0.2), (30, 0.2)], dataclasses.replace(never, fit_patience=20)) == \
        ReplayedStop(30, "plateau", False, None)
    with pytest.raises(ValueError):
        replay_stop([(10, 0.2)], config())


def test_fit_batch_is_held_out_from_training_and_evaluation():
    from pebench.learn.evaluate import eval_generator
    from pebench.learn.train import data_generator, fit_batch

    task, cfg = tasks.get("copy"), config(fit_every=10, train_max_len=8)
    (_, inputs, _), = fit_batch(task, cfg)  # protocol v2: the longest training length only
    train_inputs = task.sample(cfg.fit_examples, 8, data_generator(cfg.seed)).inputs
    eval_inputs = task.sample(cfg.fit_examples, 8, eval_generator(0, 8), split="eval").inputs
    assert inputs.shape == (cfg.fit_examples, 8)
    assert not torch.equal(inputs, train_inputs) and not torch.equal(inputs, eval_inputs)


# --------------------------------------------------------------------------- analysis


def fit_runs() -> pd.DataFrame:
    """Two cells: rope with two fitted seeds and one unfitted, none with no fitted seed."""
    frames = []
    for encoding, fits in (("rope", (True, True, False)), ("none", (False, False, False))):
        for seed, fitted in enumerate(fits):
            ood = 0.8 if fitted else 0.2
            points = [{"eval_len": 4, "token_acc": 1.0 if fitted else 0.3},
                      {"eval_len": 16, "token_acc": ood + 0.01 * seed}]
            frames.append(run_frame("length_extrapolation", "copy", encoding, "decoder", seed, 8, points,
                                    fitted=fitted, steps_to_fit=100 * (seed + 1) if fitted else None))
    return pd.concat(frames, ignore_index=True)


def test_judged_metrics_count_fitted_seeds_only():
    runs = results.run_metrics(fit_runs())
    cells = results.aggregate(runs).set_index("encoding")
    assert cells.at["rope", "fitted_mean"] == pytest.approx(2 / 3)
    assert cells.at["rope", "ood_token_acc_mean"] == pytest.approx(0.805)  # seeds 0 and 1, not the unfitted 2
    assert cells.at["rope", "ood_token_acc_n"] == 2
    assert cells.at["rope", "id_token_acc_mean"] == pytest.approx((1 + 1 + 0.3) / 3)  # the fit itself: every seed
    assert cells.at["rope", "judged"] and not cells.at["none", "judged"]
    assert cells.at["none", "ood_token_acc_mean"] == pytest.approx(0.21)  # kept, marked as not fitted
    assert cells.at["rope", "steps_to_fit_mean"] == pytest.approx(150)
    assert "ood_token_acc" in metrics.judged() and "id_token_acc" not in metrics.judged()


def test_tables_mark_cells_without_a_fitted_seed():
    runs = results.run_metrics(fit_runs())
    cells = results.aggregate(runs)
    table = report.metric_table("t", "T", "caption", runs, cells, [("Encoding", "encoding")],
                                [report.Column("id_token_acc"), report.Column("ood_token_acc")])
    rows = {row[0].text: row for row in table.rows}  # a row is a list of cells (pebench.render.tables.Cell)
    none, rope = rows[next(k for k in rows if "NoPE" in k or "none" in k)], rows["RoPE"] if "RoPE" in rows else None
    assert none[2].text.endswith(report.NOT_FITTED) and not none[1].text.endswith(report.NOT_FITTED)
    assert rope is None or not rope[2].text.endswith(report.NOT_FITTED)
    assert "0 fitted" in none[-1].text
    assert none[2].mark is None  # never marked best


def test_a_learned_encoder_learns_copy_at_smoke_scale():
    """The learned table at the token embeddings' scale (std 1): a bidirectional model fits copy quickly
    (at std 0.02 position was ~50x quieter than content and the encoder stayed at the order-blind ceiling)."""
    model = tiny_model("copy", "learned", "encoder")
    result = train(model, tasks.get("copy"), config(steps=600, batch_size=32, train_max_len=4, lr=1e-2,
                                                    warmup_steps=20, fit_every=50, stop_at_fit=True))
    assert result.fitted, f"held-out token accuracy {result.fit_token_acc:.3f}"
    assert np.isfinite(result.steps_to_fit)


def test_the_plateau_stop_asks_for_a_relative_drop_in_held_out_error():
    """Near the threshold a small gain is progress (0.97 -> 0.975 cuts the error by a sixth); far from
    it the same absolute gain is not (0.30 -> 0.35 cuts it by 7%)."""
    config = TrainConfig(fit_every=10, stop_at_fit=True, fit_patience=20, fit_min_drop=0.1)
    near, far = FitTracker(), FitTracker()
    near.check(0.97, 10, config)
    far.check(0.30, 10, config)
    near.check(0.975, 20, config)
    far.check(0.35, 20, config)
    assert near.best_step == 20 and far.best_step == 10
    far.check(0.38, 30, config)  # error 0.62 < 0.9 * 0.70
    assert far.best_step == 30


@pytest.mark.parametrize("suite", ["standard", "extended"])
def test_a_step_cap_is_shared_by_every_encoding_of_a_task(suite):
    from pebench.plan.experiment import load_experiments, suite_runs

    load_experiments()
    caps: dict[tuple[str, str, str], set[int]] = {}
    for spec in suite_runs(suite):
        caps.setdefault((spec.experiment, spec.arch, spec.task), set()).add(spec.train.steps)
    assert caps and all(len(steps) == 1 for steps in caps.values())
    if suite == "extended":  # the caps declared from the pilots (results/pilots/task_fit.csv)
        for arch in ("decoder", "encoder"):
            assert caps[("length_extrapolation", arch, "stack_manipulation")] == {5000}
            assert caps[("length_extrapolation", arch, "solve_equation")] == {2500}
            assert caps[("length_extrapolation", arch, "parity")] == {1000}
