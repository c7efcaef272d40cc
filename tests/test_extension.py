"""The extension rule of protocol v4 (issue 66): a run still improving on held-out training lengths at its cap
trains on in windows up to a ceiling; a run that stalls, fits or reaches the ceiling stops, and says which."""

from __future__ import annotations

import dataclasses

import pytest

from pebench import tasks
from pebench.config import still_improving
from pebench.learn import train as train_module
from pebench.learn.batched import train_batched
from pebench.learn.train import FitTracker, TrainConfig, train
from pebench.model import ModelConfig, build_model


def config(**overrides) -> TrainConfig:
    return TrainConfig(**{"steps": 40, "batch_size": 8, "lr": 3e-3, "warmup_steps": 2, "train_max_len": 5,
                          "fit_every": 10, "stop_at_fit": True, "extend_to": 100, "extend_window": 20,
                          "extend_min_gain": 0.05, **overrides})


def tiny_model(seed: int = 0, encoding: str = "rope"):
    model_config = ModelConfig(vocab_size=tasks.model_vocab_size(tasks.get("majority")), arch="decoder",
                               d_model=16, n_layers=1, n_heads=2)
    return build_model(model_config, encoding, max_len=64, train_len=12, seed=seed)


def replay(accuracies, cfg: TrainConfig) -> tuple[int, str]:
    """Feed a tracker one accuracy per fit check (every ``fit_every`` steps); where and why it stops."""
    tracker = FitTracker()
    for index, accuracy in enumerate(accuracies):
        steps = (index + 1) * cfg.fit_every
        if tracker.update(accuracy, steps, cfg):
            return steps, tracker.ended or ("fit" if tracker.fitted else "plateau")
    raise AssertionError("the tracker never stopped")


def test_still_improving_compares_with_the_check_a_window_before():
    curve = [(10, 0.2), (20, 0.3), (30, 0.31), (40, 0.36)]
    assert still_improving(curve, 20, 0.05)  # 0.36 - 0.30 (step 20)
    assert not still_improving(curve, 20, 0.07)
    assert still_improving(curve, 30, 0.15)  # 0.36 - 0.20 (step 10)
    assert still_improving([(10, 0.2)], 20, 0.2)  # nothing a window before: against 0, no model's accuracy
    assert not still_improving([], 20, 0.01)


@pytest.mark.parametrize(("accuracies", "expected"), [
    # flat at the cap (step 40): ends there, as without the rule
    ([0.5, 0.5, 0.5, 0.5], (40, "cap")),
    # rising at the cap, then flat over the first window (40..60): stalled at 60
    ([0.1, 0.2, 0.3, 0.4, 0.42, 0.43, 0.5], (60, "stalled")),
    # rising throughout: ends at the ceiling, 100
    ([0.1 * k for k in range(1, 10)] + [0.95, 0.96], (100, "ceiling")),
    # fits inside the extension: stops at the fit
    ([0.1, 0.2, 0.3, 0.4, 0.6, 0.995], (60, "fit")),
])
def test_the_rule_stops_at_the_cap_a_stall_a_fit_or_the_ceiling(accuracies, expected):
    assert replay(accuracies, config()) == expected


def test_without_extension_the_cap_ends_every_unfitted_run():
    assert replay([0.1, 0.2, 0.3, 0.4, 0.5], config(extend_to=0)) == (40, "cap")


@pytest.mark.parametrize("bad", [
    {"stop_at_fit": False, "fit_patience": 0},  # extension needs the fit criterion's stop
    {"extend_to": 40},  # a ceiling at the cap
    {"extend_to": 90},  # not a whole number of windows past the cap
    {"extend_window": 15},  # not a whole number of fit checks
    {"extend_min_gain": 0.0},
    {"extend_min_gain": float("nan")},
    {"steps": 45, "extend_to": 105},  # the cap between two fit checks
])
def test_bad_extension_settings_are_refused(bad):
    with pytest.raises(ValueError):
        config(**bad)


def test_configs_without_extension_keep_their_run_identity():
    """The extension's fields are recorded only when runs are extended, so v3's run ids do not move."""
    assert not {"extend_to", "extend_window", "extend_min_gain"} & set(config(extend_to=0).to_dict())
    assert {"extend_to", "extend_window", "extend_min_gain"} <= set(config().to_dict())


@pytest.fixture
def scripted_accuracy(monkeypatch):
    """Held-out accuracy rising by 0.1 per check from 0.1 (never fitting before 1.0): a run always improving."""
    def install(step: float = 0.1):
        calls = []

        def fake(model, task, held_out, device, threshold):
            calls.append(len(calls))
            return min(0.98, step * len(calls))
        monkeypatch.setattr(train_module, "fit_accuracy", fake)
        return calls
    return install


def test_train_extends_a_run_still_improving_to_its_ceiling(scripted_accuracy):
    scripted_accuracy(0.1)
    cfg = config(extend_min_gain=0.01)
    result = train(tiny_model(), tasks.get("majority"), cfg)
    assert (result.steps_done, result.stop_reason, result.fitted) == (100, "ceiling", False)
    assert [steps for steps, _ in result.fit_curve] == list(range(10, 101, 10))
    assert len(result.losses) == 100


def test_extended_steps_train_at_the_schedules_final_learning_rate():
    cfg = config()
    final = cfg.lr * cfg.min_lr_ratio
    assert [train_module.learning_rate(step, cfg) for step in (40, 70, 99)] == pytest.approx([final] * 3)
    assert train_module.learning_rate(38, cfg) > final  # the cosine is still decaying before the cap


def test_the_extension_never_changes_the_steps_before_the_cap(scripted_accuracy):
    """An extended run is the unextended run for its first ``steps`` steps (same losses, bit for bit)."""
    scripted_accuracy(0.1)
    extended = train(tiny_model(), tasks.get("majority"), config(extend_min_gain=0.01))
    scripted_accuracy(0.1)
    capped = train(tiny_model(), tasks.get("majority"), config(extend_to=0))
    assert capped.steps_done == 40 and capped.stop_reason == "cap"
    assert extended.losses[:40] == capped.losses


def test_seed_batched_training_extends_each_seed_as_train_does():
    """Each model of a batch is extended, stalls or fits where train() would have stopped it."""
    task = tasks.get("majority")
    configs = [config(steps=60, extend_to=180, extend_window=40, extend_min_gain=0.02, fit_threshold=0.97,
                      seed=seed, length_seed=11, lr=1e-3) for seed in (0, 1)]
    separate = [train(tiny_model(seed), task, c) for seed, c in zip((0, 1), configs, strict=True)]
    batched = train_batched([tiny_model(seed) for seed in (0, 1)], task, configs)
    for one, many in zip(separate, batched, strict=True):
        assert (many.steps_done, many.stop_reason) == (one.steps_done, one.stop_reason)
        assert [s for s, _ in many.fit_curve] == [s for s, _ in one.fit_curve]


def test_a_changed_window_changes_the_run_id():
    from pebench.config import run_id_of

    base = config().to_dict()
    assert run_id_of(base) != run_id_of(dataclasses.replace(config(), extend_window=10).to_dict())
