"""One run: build its model, train it, evaluate it into result rows (:func:`execute`), or train several seeds of one
configuration as one seed-batched model (:func:`execute_group`). A run's own failure is recorded as a row, never
raised. The sweep (:mod:`pebench.plan.runner`) maps these over an executor and writes the rows.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

import pebench
from pebench import tasks
from pebench.learn.batched import train_batched
from pebench.learn.evaluate import equivariance_gap, evaluate
from pebench.learn.train import TrainResult, train
from pebench.model import ModelConfig, Transformer, build_model, default_device
from pebench.plan.experiment import RunSpec
from pebench.store.schema import BASE_VARIANT

log = logging.getLogger("pebench")

#: the key of a run's first result row under which :func:`execute` hands over its per-example predictions when its
#: spec keeps them (:attr:`~pebench.plan.experiment.RunSpec.keep_predictions`); the sweep takes it out of the row
#: and writes it beside the run file (:func:`pebench.store.predictions.write_predictions`), never into a column
PREDICTIONS_KEY = "_predictions"


@dataclass(frozen=True)
class Origin:
    """Where a run's rows are made, as they record it: the ``commit`` of the code (their ``commit`` column) and the
    ``cpu_model`` of the machine (in their ``machine`` column). The process that executes runs reads them once
    (:func:`pebench.plan.executors.origin_here`) and passes them to :func:`execute`."""

    commit: str
    cpu_model: str


def model_for(spec: RunSpec, **encoding_overrides: Any) -> Transformer:
    """The untrained model of ``spec``, initialised from ``spec.seed``."""
    task = tasks.get(spec.task)
    config = ModelConfig(
        vocab_size=tasks.model_vocab_size(task),
        arch=spec.arch,
        d_model=spec.d_model,
        n_layers=spec.n_layers,
        n_heads=spec.n_heads,
        mlp_ratio=spec.mlp_ratio,
        dropout=spec.dropout,
    )
    return build_model(config, spec.encoding, max_len=spec.position_capacity(), train_len=spec.train_context(),
                       seed=spec.seed, **spec.build_options(**encoding_overrides))


def _gap(spec: RunSpec, model: Transformer, task: tasks.Task, device: torch.device) -> float:
    """Equivariance gap of ``model`` if the spec asks for it, else NaN."""
    if not spec.eval.equivariance:
        return float("nan")
    return equivariance_gap(model, task, spec.train.train_max_len, seed=spec.eval.seed, device=device)


def _rows(
    spec: RunSpec, model: Transformer, result: TrainResult, gap_init: float, device: torch.device, origin: Origin,
    compiled: bool = False,
) -> list[dict[str, Any]]:
    """Evaluate a trained model (and its evaluation-time variants) into result rows; ``compiled``:
    whether it was trained under ``torch.compile``."""
    task = tasks.get(spec.task)
    gap_trained = _gap(spec, model, task, device)
    variants = [(BASE_VARIANT, None)] + [(label, json.loads(opts)) for label, opts in spec.eval.variants]
    rows = []
    examples: list[dict[str, Any]] | None = [] if spec.keep_predictions else None
    for label, options in variants:
        evaluated = model
        if options is not None:
            evaluated = model_for(spec, **options).to(device)
            evaluated.load_state_dict(model.state_dict())
        for row in evaluate(
            evaluated,
            task,
            spec.eval.lengths,
            n_examples=spec.eval.n_examples,
            batch_size=spec.eval.batch_size,
            seed=spec.eval.seed,
            conditions=spec.eval.conditions,
            decoding=spec.eval.decoding,
            device=device,
            examples=examples if label == BASE_VARIANT else None,
        ):
            rows.append({**row, "variant": label, "chance_token_acc": task.chance_accuracy(row["eval_len"]),
                         **_floor(task, row["eval_len"], spec.arch)})
    common = {
        "params": model.num_parameters(),
        "encoding_params": model.encoding_parameters(),
        "train_seconds": result.seconds,
        "steps_done": result.steps_done,
        "final_train_loss": result.final_loss,
        "equivariance_gap_init": gap_init,
        "equivariance_gap_trained": gap_trained,
        "fitted": result.fitted,
        "steps_to_fit": result.steps_to_fit,
        "fit_token_acc": result.fit_token_acc,
        "stop_reason": result.stop_reason,
        "fit_curve": fit_curve_json(result.fit_curve),
        "encoding_built": json.dumps(model.encoding.resolved_options(), sort_keys=True, separators=(",", ":")),
        "status": result.status,
        "error": result.error,
        "device": str(device),
        "machine": machine_name(str(device), origin.cpu_model),
        "compiled": compiled,
        "torch_threads": torch.get_num_threads(),
    }
    made = [{**_identity(spec, origin), **row, **common} for row in rows]
    if examples is not None and made:
        made[0][PREDICTIONS_KEY] = examples
    return made


def fit_curve_json(curve: Sequence[tuple[int, float]]) -> str:
    """A run's fit curve (:attr:`pebench.learn.train.TrainResult.fit_curve`) as the compact JSON of its row's
    ``fit_curve`` column: ``[[steps, accuracy], ...]``, accuracies to 6 decimals; ``"[]"`` when the fit
    criterion was never checked. Read back with ``json.loads``."""
    return json.dumps([[int(steps), round(float(accuracy), 6)] for steps, accuracy in curve], separators=(",", ":"))


def _floor(task: tasks.Task, length: int, arch: str) -> dict[str, Any]:
    """The position-free floor columns of a row (:func:`pebench.tasks.position_free_floor`); empty for a
    language-modelling task, whose targets are not a function of an input."""
    if getattr(task, "decoder_only", False):
        return {"floor_token_acc": float("nan"), "floor_seq_acc": float("nan"), "floor_method": "none"}
    floor = tasks.position_free_floor(task, length, arch)
    return {"floor_token_acc": floor.token_acc, "floor_seq_acc": floor.seq_acc, "floor_method": floor.method}


@functools.cache
def machine_name(device: str, cpu_model: str) -> str:
    """The machine a run on ``device`` is made on, in words, as each row records it (``machine``) and the report's
    provenance names an invocation's (:data:`pebench.report.findings.MACHINE_KEYS`): a CUDA device's name, else the
    CPU's model (``cpu_model``: :attr:`Origin.cpu_model`) and the vector extensions torch's kernels use here.
    Machines differ in float rounding, which training can amplify; rows of one machine (and torch build) repeat bit
    for bit."""
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    return f"{cpu_model}, {torch.backends.cpu.get_cpu_capability()}"


def _identity(spec: RunSpec, origin: Origin) -> dict[str, Any]:
    """The columns every row of ``spec`` starts with: its resolved configuration, id, pebench version and commit."""
    return {**spec.resolved(), "run_id": spec.run_id, "pebench_version": pebench.__version__, "commit": origin.commit}


def failed_rows(spec: RunSpec, exc: Exception, device: torch.device, origin: Origin) -> list[dict[str, Any]]:
    """The one row recording that ``spec`` raised ``exc`` on ``device`` (``status="failed"``, the error in one
    line; the traceback is logged at debug level): retried by the next sweep."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    log.debug("run %s failed:\n%s", spec.run_id, traceback.format_exc())
    return [{**_identity(spec, origin), "status": "failed", "error": detail, "device": str(device),
             "machine": machine_name(str(device), origin.cpu_model)}]


#: the least seconds between two progress reports of a running run: a pipe message per training step would cost
#: more than a display refreshed every second is worth
PROGRESS_SECONDS = 1.0


def _throttled(say: Callable[[str], None], seconds: float = PROGRESS_SECONDS) -> Callable[[int, int], None]:
    """A training ``on_step`` (:func:`pebench.learn.train.train`) that tells ``say`` "step N/CAP" at its first step and
    then at most once every ``seconds``."""
    last = [-math.inf]

    def on_step(done: int, cap: int) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            say(f"step {done}/{cap}")

    return on_step


def execute(
    spec: RunSpec, device: str | None = None, compile: bool = False, progress: Callable[[str], None] | None = None,
    *, origin: Origin,
) -> list[dict[str, Any]]:
    """Train and evaluate one run; return its result rows (never raises for a run's own failure), each recording
    ``origin`` (the commit and CPU model of this process: :func:`pebench.plan.executors.origin_here`).

    A run that raises is recorded as one row with ``status="failed"`` and the
    error; a run whose loss diverges is evaluated anyway and marked
    ``status="diverged"``. ``compile``: train under ``torch.compile`` (see
    :func:`pebench.learn.train.train`); the rows record it in their ``compiled`` column. ``progress``, if given, is
    told where the run is, in words ("step 1200/5000" about once a second, then "evaluating"); it never
    changes the rows.
    """
    device = torch.device(device) if device else default_device()
    try:
        task = tasks.get(spec.task)
        model = model_for(spec).to(device)
        gap_init = _gap(spec, model, task, device)
        result = train(model, task, spec.train, device=device, compile=compile,
                       on_step=_throttled(progress) if progress else None)
        if progress:
            progress("evaluating")
        return _rows(spec, model, result, gap_init, device, origin, compiled=compile)
    except Exception as exc:  # recorded, not raised: one bad run must not stop a sweep
        return failed_rows(spec, exc, device, origin)


def batch_key(spec: RunSpec) -> str | None:
    """Runs with the same key differ only in seed and can be trained as one seed-batched model.

    ``None`` (never batched) without a shared ``length_seed`` or with dropout; see
    :func:`pebench.learn.batched.train_batched` (which stops each seed at its own fit or plateau).
    """
    if spec.dropout or spec.train.length_seed is None:
        return None
    flat = spec.resolved()
    flat.pop("seed")
    return json.dumps(flat, sort_keys=True, default=str)


def execute_group(
    specs: Sequence[RunSpec], device: str | None = None, compile: bool = False,
    progress: Callable[[str], None] | None = None, *, origin: Origin,
) -> list[list[dict[str, Any]]]:
    """Seed-batched :func:`execute` of runs with one :func:`batch_key`; rows per spec, in order.

    Falls back to one :func:`execute` per spec if batched training raises. ``compile`` applies to single runs only
    (:func:`~pebench.plan.runner.run_sweep` never groups runs when it is set). ``progress``: as :func:`execute`'s, for
    the group as a whole.
    """
    if len(specs) == 1:
        return [execute(specs[0], device, compile, progress, origin=origin)]
    torch_device = torch.device(device) if device else default_device()
    try:
        task = tasks.get(specs[0].task)
        models = [model_for(spec).to(torch_device) for spec in specs]
        gaps = [_gap(spec, model, task, torch_device) for spec, model in zip(specs, models, strict=True)]
        results = train_batched(models, task, [spec.train for spec in specs], torch_device,
                                on_step=_throttled(progress) if progress else None)
    except Exception as exc:
        log.warning("seed-batched training failed (%s); running the %d runs one by one", exc, len(specs))
        return [execute(spec, device, progress=progress, origin=origin) for spec in specs]
    if progress:
        progress("evaluating")
    out = []
    for spec, model, result, gap in zip(specs, models, results, gaps, strict=True):
        try:
            out.append(_rows(spec, model, result, gap, torch_device, origin))
        except Exception as exc:
            out.append(failed_rows(spec, exc, torch_device, origin))
    return out


def group_runs(specs: Sequence[RunSpec], seed_batch: bool, max_group: int = 8) -> list[list[RunSpec]]:
    """Units of work: groups of up to ``max_group`` seed-batchable runs if ``seed_batch``, else singletons."""
    if not seed_batch:
        return [[spec] for spec in specs]
    groups: dict[str, list[list[RunSpec]]] = {}
    units: list[list[RunSpec]] = []
    for spec in specs:
        key = batch_key(spec)
        if key is None:
            units.append([spec])
            continue
        bucket = groups.setdefault(key, [])
        if not bucket or len(bucket[-1]) >= max_group:
            bucket.append([])
            units.append(bucket[-1])
        bucket[-1].append(spec)
    return units


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Train with ``threads`` torch threads in this process for the duration (restored after)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)

