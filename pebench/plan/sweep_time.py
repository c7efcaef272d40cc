"""How long a sweep will take here, said before it starts: each run's relative cost, a calibration of this
machine's seconds per unit of cost on a few runs of each experiment, and the estimate from them
(:func:`announce`, which ``pebench run`` and ``tox -e bench`` print first); and how long runs of a reference took
when it was made (:func:`recorded_time`: the README's table of times, the quick suite's size).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import torch

from pebench import tasks
from pebench.learn.train import train
from pebench.model import default_device
from pebench.plan.execute import model_for, torch_threads
from pebench.plan.experiment import RunSpec
from pebench.store import first_rows


def step_cost(batch_size, train_max_len, d_model, n_layers):
    """Relative cost of a training step: batch x (longest training input + its rendered outputs) x width^2 x depth
    (numbers, or columns of run rows alike)."""
    return batch_size * 2 * train_max_len * d_model**2 * n_layers


def estimated_cost(spec: RunSpec) -> float:
    """Relative training cost of a run, to start long runs first: steps x :func:`step_cost`. Only the order of runs
    and the time estimates depend on it."""
    return spec.train.steps * step_cost(spec.train.batch_size, spec.train.train_max_len, spec.d_model, spec.n_layers)


#: the share of its step cap a run that stops at its fit trains for, weighted by its cost: that of the committed
#: standard reference, to two places (:func:`measured_step_share` of ``results/standard``: 0.586 for protocol v4's
#: 1,016 such runs; v3's 1,950 gave 0.583, v2's 579 0.589; a test ties the two); the estimate of a sweep's time uses it
EXPECTED_STEP_SHARE = 0.59
#: wall time of a run over its training time: evaluation, fit checks and start-up (1.07 in the same reference:
#: 2.5 CPU-hours of wall time with 2 workers for 2.35 hours of training)
RUN_OVERHEAD = 1.1
#: training steps timed by :func:`calibrate` (after a warm-up run of as many)
CALIBRATION_STEPS = 10
#: encodings of each experiment that :func:`calibrations` times (about a second each on a CPU core)
CALIBRATED_ENCODINGS = 4


def measured_step_share(folder: str | Path) -> tuple[float, int]:
    """The share of their step caps that the runs of a results folder which stop at their fit trained for,
    weighted by each run's :func:`estimated_cost` (the sum of steps done times the cost of a step over the sum of
    step caps times it), and how many such runs there are (NaN and 0 where there is none)."""
    columns = ["steps", "steps_done", "stop_at_fit", "batch_size", "train_max_len", "d_model", "n_layers"]
    runs = first_rows(folder, columns)
    if not set(columns) <= set(runs.columns):
        return float("nan"), 0
    runs = runs[(runs["stop_at_fit"] == 1) & runs["steps_done"].notna() & (runs["steps"] > 0)]
    if runs.empty:
        return float("nan"), 0
    cost = step_cost(runs["batch_size"], runs["train_max_len"], runs["d_model"], runs["n_layers"])
    return float((runs["steps_done"] * cost).sum() / (runs["steps"] * cost).sum()), len(runs)


def expected_cost(spec: RunSpec) -> float:
    """:func:`estimated_cost` of the steps a run is expected to take: :data:`EXPECTED_STEP_SHARE` of its cap when it
    stops at its fit, all of them otherwise."""
    return estimated_cost(spec) * (EXPECTED_STEP_SHARE if spec.train.stop_at_fit else 1.0)


def calibrate(spec: RunSpec, device: str | None = None) -> float:
    """Seconds per unit of :func:`estimated_cost` on this machine: the time of ``3 x`` :data:`CALIBRATION_STEPS`
    training steps of ``spec``'s model minus that of ``1 x`` (start-up cancels out), after a warm-up run (about a
    second on a CPU core)."""
    torch_device = torch.device(device) if device else default_device()
    task = tasks.get(spec.task)
    plain = dataclasses.replace(spec.train, fit_every=0, stop_at_fit=False, fit_patience=0, fit_disjoint=False,
                                fit_lengths="longest", extend_to=0)  # no fit criterion, so no extension either
    seconds = []
    for steps in (CALIBRATION_STEPS, CALIBRATION_STEPS, 3 * CALIBRATION_STEPS):  # the first warms up, unread
        model = model_for(spec).to(torch_device)
        seconds.append(train(model, task, dataclasses.replace(plain, steps=steps), torch_device).seconds)
    per_step = max(seconds[2] - seconds[1], 0.0) / (2 * CALIBRATION_STEPS) or seconds[2] / (3 * CALIBRATION_STEPS)
    return per_step / (estimated_cost(spec) / spec.train.steps)


def calibrations(todo: Sequence[RunSpec], device: str | None = None, threads: int = 1) -> dict[str, float]:
    """Seconds per unit of cost per experiment of ``todo``: the mean of :func:`calibrate` on the first run of up to
    :data:`CALIBRATED_ENCODINGS` of its encodings, spread over them in the order they come (the first among
    them), timed on ``threads`` torch threads, as the sweep's runs train. Experiments differ more than encodings
    (a language model's long sequences use a CPU better per unit of cost than the short inputs of the length
    tasks), but encodings differ too: a step of CoPE or Transformer-XL costs 1.5 to 2 times one of NoPE, which a
    suite often runs first."""
    firsts: dict[str, dict[str, RunSpec]] = {}
    for spec in todo:
        firsts.setdefault(spec.experiment, {}).setdefault(spec.encoding, spec)
    rates = {}
    with torch_threads(threads):
        for name, by_encoding in firsts.items():
            runs = list(by_encoding.values())
            count = min(CALIBRATED_ENCODINGS, len(runs))
            picked = [runs[round(i * (len(runs) - 1) / max(1, count - 1))] for i in range(count)]
            rates[name] = sum(calibrate(spec, device) for spec in picked) / count
    return rates


def time_estimate(todo: Sequence[RunSpec], workers: int, seconds_per_cost: float | Mapping[str, float]) -> float:
    """Expected wall seconds of ``todo`` with ``workers`` parallel workers (:func:`expected_cost`,
    :data:`RUN_OVERHEAD`), from :func:`calibrate`'s seconds per unit of cost: one for every run, or one per
    experiment (:func:`calibrations`)."""
    def rate(spec: RunSpec) -> float:
        return seconds_per_cost[spec.experiment] if isinstance(seconds_per_cost, Mapping) else seconds_per_cost

    total = sum(expected_cost(spec) * rate(spec) for spec in todo) * RUN_OVERHEAD
    return total / max(1, min(workers, len(todo)))


def wall_time(seconds: Sequence[float], workers: int) -> float:
    """Wall seconds of runs that train for ``seconds`` each on ``workers`` workers, each worker taking the longest
    run left when it is free (as :func:`~pebench.plan.runner.run_sweep` starts them), every run
    :data:`RUN_OVERHEAD` times its training."""
    finish = [0.0] * max(1, workers)
    for run in sorted(seconds, reverse=True):
        free = finish.index(min(finish))
        finish[free] += run * RUN_OVERHEAD
    return max(finish)


def recorded_seconds(reference: str | Path, run_ids: Collection[str] | None = None) -> dict[str, float]:
    """The training seconds each run of the results folder ``reference`` recorded (``train_seconds``), by run id:
    of ``run_ids`` only, where given.

    Raises:
        ValueError: a run of ``run_ids`` that ``reference`` has no seconds of, naming how many and the first.
    """
    rows = first_rows(reference, ["train_seconds"])
    if "train_seconds" not in rows:
        rows = rows.assign(train_seconds=float("nan"))
    seconds = {run_id: value for run_id, value in zip(rows["run_id"], rows["train_seconds"].astype(float),
                                                      strict=True) if math.isfinite(value)}
    if run_ids is None:
        return seconds
    missing = [run_id for run_id in run_ids if run_id not in seconds]
    if missing:
        raise ValueError(f"{len(missing)} of the {len(run_ids)} runs have no recorded seconds in {reference} (the "
                         f"first: {missing[0]}): time runs of the reference's own configurations")
    return {run_id: seconds[run_id] for run_id in run_ids}


def recorded_time(run_ids: Collection[str], reference: str | Path, workers: int) -> float:
    """Expected wall seconds of the runs ``run_ids`` on ``workers`` workers, from the training seconds the results
    folder ``reference`` recorded for the same runs (:func:`recorded_seconds`, :func:`wall_time`). The committed
    reference was made beside other work, so this is an upper bound for an idle machine of its kind.

    Raises:
        ValueError: as :func:`recorded_seconds`.
    """
    return wall_time(list(recorded_seconds(reference, run_ids).values()), workers)


def announce(todo: Sequence[RunSpec], complete: int, workers: int, device: str | None,
             rates: dict[str, float] | None = None, threads: int = 1) -> str:
    """What a sweep is about to do, said before it starts: the runs to make, those a resume skips, and how long
    they should take here, from a calibration of each experiment on this machine on the runs' ``threads``
    (:func:`calibrations`; the rates are also put in ``rates``, for the progress's estimate)."""
    if not todo:
        return f"pebench: nothing to run: all {complete} runs are complete (a resume skips them)"
    per_cost = calibrations(todo, device, threads)
    if rates is not None:
        rates.update(per_cost)
    minutes = time_estimate(todo, workers, per_cost) / 60
    first = todo[0]
    per_step = per_cost[first.experiment] * estimated_cost(first) / first.train.steps
    return (f"pebench: {len(todo)} runs to make, {complete} already complete (skipped); about {minutes:.1f} min with "
            f"{workers} worker(s) here (calibrated on {len(per_cost)} experiment(s), up to {CALIBRATED_ENCODINGS} "
            f"encodings each: "
            f"{1000 * per_step:.0f} ms per training step of the first run's model; runs that stop at their fit are "
            f"expected to take {EXPECTED_STEP_SHARE:.0%} of their step cap); the estimate is corrected as runs finish")
