"""Training throughput of pebench's Transformer: against x-transformers, as a fraction of the matmul peak,
with 1 or 2 worker processes, seed-batched, and under ``torch.compile``.

Run ``python -m pebench.bench.throughput`` or ``python experiments/throughput.py`` (the same; the performance
page says how long it took) or with ``--quick`` (a few minutes); ``--only suites --suites smoke standard``
times the suites themselves. Writes ``results/performance/*.csv`` and, from those CSVs,
``docs/performance_tables.md`` (:func:`write_tables`; ``--tables-only`` regenerates it without measuring).
It is a benchmark of the code, not an experiment: it trains no grid of runs and writes no suite.

Method. Every comparison is A/B interleaved in one process: for each repeat the two models (in
alternating order) train the same pre-generated batches for the same number of steps; the reported
throughput is the median over repeats, the ratio is the median of the per-repeat ratios (robust to
other jobs on a shared machine). A training step is the one of :func:`pebench.learn.train.train`:
forward, cross-entropy, backward, gradient clipping, AdamW; every model, x-transformers' included,
gets pebench's flat-parameter fused AdamW, so the ratios compare the models. Model FLOPs are counted
analytically (matmuls of the linear layers, the attention scores and values over the full T x T, and the output
head; x3 for forward + backward) and divided by the measured fp32 matmul peak of the same number of
threads (model FLOPs utilization, MFU).

x-transformers is optional (``pip install 'pebench[bench]'``); it is imported only when measured.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from pebench import encodings, tasks
from pebench.bench.times import EVALUATE_PREFIX
from pebench.learn.batched import train_batched
from pebench.learn.train import TrainConfig, make_optimizer, train
from pebench.model import ModelConfig, Transformer, build_model
from pebench.plan.execute import torch_threads
from pebench.plan.experiment import suite_runs
from pebench.plan.runner import run_sweep
from pebench.plan.sweep_time import calibrations, time_estimate
from pebench.render.performance_text import performance_values
from pebench.render.tables import Cell, Column, Table, to_markdown
from pebench.store import git_state, raw_files


def _root() -> Path:
    """The source checkout this package is imported from (``results/`` and ``docs/`` beside it), else the
    working directory."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


ROOT = _root()
OUT = ROOT / "results" / "performance"
TABLES = ROOT / "docs" / "performance_tables.md"
ENCODINGS = ("none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope")


@dataclass(frozen=True)
class Point:
    """A model width and a batch shape: ``lengths`` are the sequence lengths of successive steps."""

    name: str
    d_model: int
    batch_size: int
    lengths: tuple[int, ...]
    n_layers: int = 2
    n_heads: int = 4
    mlp_ratio: int = 4
    vocab_size: int = 16
    arch: str = "decoder"
    loss: str = "all"  # "all" positions, or "outputs": the second half, as the tasks' decoder rendering
    repeat_factor: int = 1  # x the run's repeats: cheap points buy a more stable median for little time

    def first(self, length: int) -> int:
        """First position with a loss."""
        return length // 2 if self.loss == "outputs" else 0

    @property
    def max_len(self) -> int:
        return max(self.lengths)


def copy_lengths(max_input: int, seed: int = 0) -> tuple[int, ...]:
    """Decoder sequence lengths of the copy task for inputs 1..``max_input`` (input L, SEP, output L - 1
    -> 2L tokens), one per step, shuffled."""
    lengths = [2 * length for length in range(1, max_input + 1)]
    order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(seed)).tolist()
    return tuple(lengths[i] for i in order)


def suite_point() -> Point:
    """The standard suite's training step, read from its copy-task runs: width, depth, heads, batch, lengths
    (each training length 4 times per timed pass)."""
    spec = next(s for s in suite_runs("standard") if s.task == "copy" and s.arch == "decoder")
    return Point("suite", spec.d_model, spec.train.batch_size, copy_lengths(spec.train.train_max_len) * 4,
                 n_layers=spec.n_layers, n_heads=spec.n_heads, mlp_ratio=spec.mlp_ratio, loss="outputs",
                 repeat_factor=3)


def points(quick: bool) -> list[Point]:
    """The measured points; the first is the standard suite's training step (loss on the outputs)."""
    suite = suite_point()
    long32 = copy_lengths(16)  # inputs 1..16: sequences of 2..32 tokens
    base = [
        suite,
        Point("suite-all", suite.d_model, suite.batch_size, suite.lengths, loss="all", repeat_factor=3),
        Point("d128-B64-T32", 128, 64, long32, loss="outputs"),
    ]
    if quick:
        return base
    return base + [
        Point("d64-B64-T32", 64, 64, long32, loss="outputs"),
        Point("d128-B64-T32-all", 128, 64, long32),
        Point("d128-B32-T128-all", 128, 32, (128,) * 4),
        Point("d128-B16-T256-all", 128, 16, (256,) * 4),
    ]


# --------------------------------------------------------------------------- models


def build_pebench(encoding: str, point: Point, seed: int = 0) -> torch.nn.Module:
    """pebench's Transformer at ``point``, built as the runner builds it (:func:`pebench.model.build_model`)."""
    config = ModelConfig(
        vocab_size=point.vocab_size, arch=point.arch, d_model=point.d_model, n_layers=point.n_layers,
        n_heads=point.n_heads, mlp_ratio=point.mlp_ratio,
    )
    return build_model(config, encoding, max_len=point.max_len, seed=seed)


#: pebench encoding -> x-transformers options giving the same encoding (checked against its source, v2.x)
XT_OPTIONS: dict[str, tuple[dict, dict]] = {  # (TransformerWrapper kwargs, Decoder/Encoder kwargs)
    "none": ({"use_abs_pos_emb": False}, {}),
    "sinusoidal": ({"use_abs_pos_emb": True, "scaled_sinu_pos_emb": True}, {}),  # sinusoid x learned scalar
    "learned": ({"use_abs_pos_emb": True}, {}),
    "rope": ({"use_abs_pos_emb": False}, {"rotary_pos_emb": True, "rotary_emb_dim": None}),  # None: full head
    "alibi": ({"use_abs_pos_emb": False}, {"alibi_pos_bias": True}),
    "t5": ({"use_abs_pos_emb": False}, {"rel_pos_bias": True}),
    "xpos": ({"use_abs_pos_emb": False}, {"rotary_xpos": True, "rotary_emb_dim": None}),
    # CoPE (x-transformers' CoPE: Appendix B of the paper, as pebench's); its table size is set from the point
    "cope": ({"use_abs_pos_emb": False}, {"attn_use_cope": True, "attn_cope_max_pos": None}),
}


def build_xtransformers(encoding: str, point: Point, seed: int = 0, flash: bool = False) -> torch.nn.Module:
    """x-transformers at the same configuration: pre-LN, GELU MLP of ratio 4, same width/depth/heads/head dim."""
    from x_transformers import Decoder, Encoder, TransformerWrapper

    wrapper_options, layer_options = XT_OPTIONS[encoding]
    layer_options = dict(layer_options)
    head_dim = point.d_model // point.n_heads
    if layer_options.get("rotary_emb_dim", 0) is None:
        layer_options["rotary_emb_dim"] = head_dim  # x-transformers rotates half the head by default
    if layer_options.get("attn_cope_max_pos", 0) is None:
        layer_options["attn_cope_max_pos"] = point.max_len + 1  # pebench's n_positions default: max_len + 1
    layers = (Decoder if point.arch == "decoder" else Encoder)(
        dim=point.d_model, depth=point.n_layers, heads=point.n_heads, attn_dim_head=head_dim,
        ff_mult=point.mlp_ratio, attn_flash=flash, **layer_options,
    )
    torch.manual_seed(seed)
    return TransformerWrapper(num_tokens=point.vocab_size, max_seq_len=point.max_len, attn_layers=layers,
                              **wrapper_options)


def xtransformers_available() -> bool:
    """Whether x-transformers, the comparison's other library (``pip install 'pebench[bench]'``), is installed."""
    try:
        import x_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def count_parameters(model: torch.nn.Module) -> int:
    """Trainable parameters of ``model``."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def train_flops(point: Point, length: int, outputs: int | None = None) -> float:
    """Model FLOPs of one training step at sequence length ``length`` (forward + backward = 3 x forward).

    Matmuls only: the linear layers, the attention scores and values over the full T x T, the head.
    ``outputs``: the last block computes only that many query rows (pebench's ``outputs=``).
    """
    d, b, ratio = point.d_model, point.batch_size, point.mlp_ratio
    rows = outputs if outputs is not None else length
    per_layer_all = 2 * b * length * (4 * d * d + 2 * ratio * d * d) + 2 * 2 * b * length * length * d
    last_layer = 2 * b * length * 3 * d * d + 2 * b * rows * (d * d + 2 * ratio * d * d) + 2 * 2 * b * rows * length * d
    head = 2 * b * rows * d * point.vocab_size
    return 3.0 * ((point.n_layers - 1) * per_layer_all + last_layer + head)


# --------------------------------------------------------------------------- timing


def make_batches(point: Point, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One (tokens, labels) batch per entry of ``point.lengths``."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for length in point.lengths:
        tokens = torch.randint(0, point.vocab_size, (point.batch_size, length), generator=generator)
        batches.append((tokens, torch.randint(0, point.vocab_size, (point.batch_size, length), generator=generator)))
    return batches


class Stepper:
    """The training step of :func:`pebench.learn.train.train` for any model mapping tokens (B, T) to logits (B, T, V).

    With ``point.loss == "outputs"`` the loss is on the second half of each sequence; a pebench
    model is then asked for those logits only (``outputs=``), as :func:`pebench.learn.train.train` does.
    Every model, x-transformers' included, gets pebench's optimizer (:func:`pebench.learn.train.make_optimizer`:
    flat parameters, fused AdamW, clipping on the flat gradients), so the ratios compare the models.
    """

    def __init__(self, model: torch.nn.Module, point: Point) -> None:
        self.model = model.train()
        self.point = point
        self.optimizer, self.flat = make_optimizer(model, TrainConfig(lr=1e-4))
        self.suffix = hasattr(model, "encoding_parameters")  # pebench's Transformer takes outputs=

    def step(self, tokens: torch.Tensor, labels: torch.Tensor) -> None:
        first = self.point.first(tokens.shape[1])
        if first and self.suffix:
            logits = self.model(tokens, outputs=tokens.shape[1] - first)
        else:
            logits = self.model(tokens)[:, first:]
        loss = F.cross_entropy(logits.flatten(0, 1), labels[:, first:].flatten())
        self.flat.zero_grad()
        loss.backward()
        self.flat.clip_grad_norm_(1.0)
        self.optimizer.step()

    def flops(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
        """Model FLOPs this stepper executes on ``batches``."""
        total = 0.0
        for tokens, _ in batches:
            length = tokens.shape[1]
            first = self.point.first(length)
            total += train_flops(self.point, length, length - first if first and self.suffix else None)
        return total

    def run(self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
        """Seconds to train one step on each batch."""
        start = time.perf_counter()
        for tokens, labels in batches:
            self.step(tokens, labels)
        return time.perf_counter() - start


def matmul_peak(threads: int, size: int = 512, repeats: int = 30) -> float:
    """Measured fp32 matmul throughput (GFLOP/s) with ``threads`` threads: the best of 3 rounds' medians.

    The best round, because other jobs on a shared machine only ever slow a round down.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    for _ in range(5):
        a @ b
    medians = []
    for _ in range(3):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    torch.set_num_threads(previous)
    return 2 * size**3 / min(medians) / 1e9


def interleaved(runners: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each runner per repeat, the order alternating between repeats."""
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            times[name].append(runners[name]())
    return times


# --------------------------------------------------------------------------- experiments


def compare_frameworks(pts: Sequence[Point], encs: Sequence[str], repeats: int, peaks: list[float]) -> pd.DataFrame:
    """pebench vs x-transformers (attention einsum and flash/SDPA variants) at every point and encoding.

    ``peaks``: matmul peak measurements; one more is appended before each point, and the MFU column
    uses the largest (other jobs on a shared machine only ever lower a measurement).
    """
    rows = []
    for point in pts:
        peaks.append(matmul_peak(torch.get_num_threads()))
        peak = max(peaks)
        batches = make_batches(point)
        tokens_per_pass = sum(t.numel() for t, _ in batches)
        for encoding in encs:
            if encodings.meta(encoding)["causal_only"] and point.arch != "decoder":
                continue
            models = {"pebench": build_pebench(encoding, point)}
            if xtransformers_available():
                models["x-transformers"] = build_xtransformers(encoding, point)
                try:
                    models["x-transformers-flash"] = build_xtransformers(encoding, point, flash=True)
                except AssertionError:  # x-transformers refuses flash attention with t5 relative bias and CoPE
                    pass
            steppers = {name: Stepper(model, point) for name, model in models.items()}
            for stepper in steppers.values():
                stepper.run(batches[:4])  # warm-up
            point_repeats = repeats * point.repeat_factor
            times = interleaved({name: (lambda s=s, b=batches: s.run(b)) for name, s in steppers.items()},
                                point_repeats)
            baseline = None
            if "x-transformers" in times:
                variants = [n for n in ("x-transformers", "x-transformers-flash") if n in times]
                best = min(variants, key=lambda n: statistics.median(times[n]))
                baseline = times[best]
            for name, seconds in times.items():
                median = statistics.median(seconds)
                flops_per_pass = steppers[name].flops(batches)
                ratio = q25 = q75 = math.nan
                if baseline:
                    ratios = [b / s for b, s in zip(baseline, seconds, strict=True)]
                    ratio = statistics.median(ratios)
                    q25, _, q75 = statistics.quantiles(ratios, n=4)
                rows.append({
                    "point": point.name, "d_model": point.d_model, "n_layers": point.n_layers,
                    "batch_size": point.batch_size,
                    "mean_length": tokens_per_pass / point.batch_size / len(batches), "arch": point.arch,
                    "loss_on": point.loss,
                    "encoding": encoding, "framework": name, "params": count_parameters(models[name]),
                    "param_ratio_vs_pebench": count_parameters(models[name]) / count_parameters(models["pebench"]),
                    "tokens_per_s": tokens_per_pass / median, "step_ms": 1e3 * median / len(batches),
                    "gflops": flops_per_pass / median / 1e9, "mfu": flops_per_pass / median / 1e9 / peak,
                    "speedup_vs_best_xt": ratio, "speedup_q25": q25, "speedup_q75": q75,
                    "repeats": point_repeats,
                })
                print(f"{point.name:14s} {encoding:10s} {name:21s} {rows[-1]['tokens_per_s']:9.0f} tok/s "
                      f"MFU {rows[-1]['mfu']:.2f} params {rows[-1]['params']} speedup {ratio:.2f}", flush=True)
    frame = pd.DataFrame(rows)
    frame["mfu"] = frame["gflops"] / max(peaks)
    return frame


def _worker(encoding: str, point: Point, threads: int, steps: int, barrier) -> tuple[int, float]:
    torch.set_num_threads(threads)
    stepper = Stepper(build_pebench(encoding, point), point)
    batches = make_batches(point)
    stepper.run(batches[:4])
    barrier.wait()
    schedule = [batches[i % len(batches)] for i in range(steps)]
    seconds = stepper.run(schedule)
    return sum(t.numel() for t, _ in schedule), seconds


def worker_scaling(point: Point, encoding: str, steps: int, repeats: int) -> pd.DataFrame:
    """Aggregate tokens/s of 1 process x 2 threads, 2 processes x 1 thread and 1 process x 1 thread."""
    context = multiprocessing.get_context("spawn")
    rows = []
    layouts = [(1, 2), (2, 1), (1, 1)]
    for repeat in range(repeats):
        for workers, threads in layouts if repeat % 2 == 0 else layouts[::-1]:
            with context.Manager() as manager, context.Pool(workers) as pool:
                barrier = manager.Barrier(workers)
                results = pool.starmap(_worker, [(encoding, point, threads, steps, barrier)] * workers)
            tokens = sum(t for t, _ in results)
            rows.append({"point": point.name, "encoding": encoding, "workers": workers, "threads_per_worker": threads,
                         "repeat": repeat, "tokens_per_s": tokens / max(s for _, s in results)})
            print(f"workers {workers} x {threads} threads: {rows[-1]['tokens_per_s']:.0f} tok/s", flush=True)
    frame = pd.DataFrame(rows)
    return frame.groupby(["point", "encoding", "workers", "threads_per_worker"], as_index=False).agg(
        tokens_per_s=("tokens_per_s", "median"), repeats=("repeat", "count"))


def seed_batching(point: Point, encs: Sequence[str], sizes: Sequence[int], steps: int, repeats: int) -> pd.DataFrame:
    """Per-model training throughput of :func:`pebench.learn.batched.train_batched` with S seeds vs S x
    :func:`train`."""
    task = tasks.get("copy")
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task), arch="decoder", d_model=point.d_model,
                         n_layers=point.n_layers, n_heads=point.n_heads, mlp_ratio=point.mlp_ratio)
    rows = []
    for encoding in encs:
        def build(seed: int, encoding: str = encoding) -> Transformer:
            return build_model(config, encoding, max_len=64, seed=seed)

        for size in sizes:
            configs = [TrainConfig(steps=steps, batch_size=point.batch_size, seed=s, length_seed=0)
                       for s in range(size)]

            def separate(configs=configs) -> float:
                models = [build(config.seed) for config in configs]
                start = time.perf_counter()
                for model, config in zip(models, configs, strict=True):
                    train(model, task, config)
                return time.perf_counter() - start

            def batched(configs=configs) -> float:
                models = [build(config.seed) for config in configs]
                start = time.perf_counter()
                train_batched(models, task, configs)
                return time.perf_counter() - start

            times = interleaved({"separate": separate, "batched": batched}, repeats)
            speedup = statistics.median(a / b for a, b in zip(times["separate"], times["batched"], strict=True))
            rows.append({"point": point.name, "d_model": point.d_model, "batch_size": point.batch_size,
                         "encoding": encoding, "seeds": size, "steps": steps,
                         "separate_s": statistics.median(times["separate"]),
                         "batched_s": statistics.median(times["batched"]), "speedup": speedup, "repeats": repeats})
            print(f"seed batching {encoding:8s} S={size}: speed-up {speedup:.2f}", flush=True)
    return pd.DataFrame(rows)


def compile_gain(point: Point, encoding: str, passes: int) -> pd.DataFrame:
    """Eager vs ``torch.compile`` (dynamic shapes) for pebench: compile time and steady-state step time."""
    batches = make_batches(point)
    eager = Stepper(build_pebench(encoding, point), point)
    compiled_model = build_pebench(encoding, point)
    row = {"point": point.name, "encoding": encoding, "passes": passes}
    try:
        compiled = Stepper(torch.compile(compiled_model, dynamic=True), point)
        compiled.suffix = True  # the compiled wrapper forwards outputs= to the Transformer
        start = time.perf_counter()
        compiled.run(batches)  # compiles (once per new shape class)
        row["compile_s"] = time.perf_counter() - start
        eager.run(batches)
        times = interleaved({"eager": lambda: eager.run(batches), "compiled": lambda: compiled.run(batches)}, passes)
        row["eager_step_ms"] = 1e3 * statistics.median(times["eager"]) / len(batches)
        row["compiled_step_ms"] = 1e3 * statistics.median(times["compiled"]) / len(batches)
        row["steady_speedup"] = row["eager_step_ms"] / row["compiled_step_ms"]
        saved_per_step = (row["eager_step_ms"] - row["compiled_step_ms"]) / 1e3
        row["break_even_steps"] = row["compile_s"] / saved_per_step if saved_per_step > 0 else math.inf
        row["error"] = ""
    except Exception as exc:  # recorded: compile needs a working C++ toolchain
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    print(f"torch.compile {encoding}: {row}", flush=True)
    return pd.DataFrame([row])


def reference_step_ms(encoding: str = "rope", passes: int = 5) -> float:
    """Milliseconds of one training step of the standard suite's shape (:func:`suite_point`, one thread):
    the median over ``passes`` passes of the mean step of each pass.

    A yardstick of the machine's speed at the moment it is taken: a suite's wall time depends on it as
    much as on the code, so :func:`suite_wall_time` records it before and after each suite.
    """
    with torch_threads(1):
        _, stepper, batches = warm_suite_stepper(encoding)
        return 1e3 * statistics.median(stepper.run(batches) / len(batches) for _ in range(passes))


def warm_suite_stepper(encoding: str) -> tuple[Point, Stepper, list[tuple[torch.Tensor, torch.Tensor]]]:
    """The standard suite's training step (:func:`suite_point`) for ``encoding``: the point, its stepper and its
    batches, after one warm-up pass over them (caches, allocator)."""
    point = suite_point()
    stepper = Stepper(build_pebench(encoding, point), point)
    batches = make_batches(point)
    stepper.run(batches)
    return point, stepper, batches


#: torch operators that are matrix multiplications (the linear layers, the head and their gradients), summed in the
#: profile's sentence
MATMUL_OPERATORS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
#: operators the profile table lists by name (the rest are summed as "other operators")
PROFILE_TOP = 10


def step_profile(encoding: str = "rope", passes: int = 3) -> pd.DataFrame:
    """Where the time of the standard suite's training step goes (:func:`suite_point`, one thread): a
    ``torch.profiler`` trace of ``passes`` passes over the point's batches, after a warm-up pass. One row per
    operator of the :data:`PROFILE_TOP` with the most self time and per matmul (:data:`MATMUL_OPERATORS`, the
    ``matmul`` column), then the other operators together, then the time
    spent outside any operator (Python, autograd's bookkeeping); ``share`` is of the traced wall time. The
    profiler's own cost is in every operator's time, most in the small ones called many times per step, so the
    same passes are also timed without it (``untraced_ms_per_step``), for the reader to see how much slower the
    traced step was."""
    with torch_threads(1):
        point, stepper, batches = warm_suite_stepper(encoding)
        steps = passes * len(batches)
        untraced = sum(stepper.run(batches) for _ in range(passes))  # the same passes without the profiler's cost
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as trace:
            wall = sum(stepper.run(batches) for _ in range(passes))
    operators = sorted(((event.key, event.self_cpu_time_total / 1e6, event.count)
                        for event in trace.key_averages() if event.self_cpu_time_total > 0),
                       key=lambda operator: -operator[1])
    named = [operator for rank, operator in enumerate(operators) if rank < PROFILE_TOP or operator[0] in
             MATMUL_OPERATORS]  # every matmul by name, so that their sum is the matmuls' share
    rows = [(name, seconds, calls / steps) for name, seconds, calls in named]
    rest = [operator for operator in operators if operator not in named]
    rows.append(("other operators", sum(seconds for _, seconds, _ in rest), sum(c for _, _, c in rest) / steps))
    rows.append(("outside operators", max(0.0, wall - sum(seconds for _, seconds, _ in operators)), float("nan")))
    return pd.DataFrame([{"point": point.name, "d_model": point.d_model, "n_layers": point.n_layers,
                          "batch_size": point.batch_size, "encoding": encoding, "operator": name,
                          "ms_per_step": 1e3 * seconds / steps, "share": seconds / wall, "calls_per_step": calls,
                          "matmul": name in MATMUL_OPERATORS, "untraced_ms_per_step": 1e3 * untraced / steps}
                         for name, seconds, calls in rows])


def suite_command(suite: str, workers: int, out: Path, plugin: Path | None = None) -> list[str]:
    """The command :func:`suite_wall_time` times: ``pebench run --suite SUITE``, or for ``evaluate:NAME``
    ``pebench evaluate NAME`` (with ``--plugin PLUGIN``, the file that registers it, where given)."""
    command = [sys.executable, "-m", "pebench.cli"]
    if suite.startswith(EVALUATE_PREFIX):
        command += ["evaluate", suite.removeprefix(EVALUATE_PREFIX), *(["--plugin", str(plugin)] if plugin else [])]
    else:
        command += ["run", "--suite", suite]
    return [*command, "--workers", str(workers), "--out", str(out)]


def suite_wall_time(suite: str, workers: int, out: Path, note: str = "", plugin: Path | None = None) -> dict:
    """Wall time of ``pebench run --suite SUITE --workers N --out OUT`` (or of an encoding's verdict,
    :func:`suite_command`) in a fresh interpreter.

    ``out`` must hold no results: a resumed sweep would skip runs and time only part of the suite. The row
    also records the machine's state around it: the 1-minute load average before the start
    (``load_before``: other work on the cores), the :func:`reference_step_ms` before and after (the
    machine's speed), and ``note``, the measurer's word on the conditions.
    """
    raw = out / "raw"
    if raw_files(raw):
        raise SystemExit(f"{out} already holds results, so a sweep would resume and time only part of {suite}; "
                         "choose an empty --suite-out folder")

    command = suite_command(suite, workers, out, plugin)
    code = git_state()  # of the code that runs, before anything is written
    load_before = os.getloadavg()[0]
    step_before = reference_step_ms()
    start = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - start
    row = {"suite": suite, "workers": workers, "runs": len(raw_files(raw)), "wall_seconds": seconds,
           "wall_minutes": seconds / 60, "cpu_count": os.cpu_count(), **code, "date": time.strftime("%Y-%m-%d"),
           "load_before": load_before, "reference_step_ms_before": step_before,
           "reference_step_ms_after": reference_step_ms(), "note": note}
    print(f"suite {suite}: {row['runs']} runs in {seconds:.0f} s with {workers} workers", flush=True)
    return row


def measure_suites(suites: Sequence[str], workers: int, out: Path | None, csv: Path, note: str = "",
                   plugin: Path | None = None) -> None:
    """Time each of ``suites`` into ``out/<suite>`` (default a temporary folder, removed afterwards) and
    append their rows to ``csv``: it keeps every measurement, the last row of a suite being its current one
    (:func:`pebench.render.protocol_tables.measured_suite_times`), so the history shows how much the machine, not only
    the code, moved it."""
    import shutil
    import tempfile

    rows = []
    for suite in suites:
        name = suite.replace(EVALUATE_PREFIX, "evaluate-")  # a folder name without a colon, on every system
        folder = Path(tempfile.mkdtemp(prefix=f"pebench-{name}-")) if out is None else out / name
        try:
            rows.append(suite_wall_time(suite, workers, folder, note, plugin))
        finally:
            if out is None:
                shutil.rmtree(folder, ignore_errors=True)
    append_rows(csv, rows)


def append_rows(csv: Path, rows: Sequence[dict]) -> None:
    """Append ``rows`` to the measurements in ``csv`` (created if absent); earlier rows are kept as they are."""
    frame = pd.DataFrame(rows)
    if csv.exists():
        frame = pd.concat([pd.read_csv(csv), frame], ignore_index=True)
    frame.to_csv(csv, index=False)


def estimate_sample(suite: str, size: int, seed: int) -> list:
    """A random sample of about ``size`` runs of ``suite`` for :func:`estimate_check`, stratified by experiment:
    each experiment gives its share of ``size`` (at least one run), drawn with ``random.Random(seed)``."""
    import random

    specs = suite_runs(suite)
    by_experiment: dict[str, list] = {}
    for spec in specs:
        by_experiment.setdefault(spec.experiment, []).append(spec)
    rng = random.Random(seed)
    return [spec for runs in by_experiment.values()
            for spec in rng.sample(runs, min(len(runs), max(1, round(size * len(runs) / len(specs)))))]


def estimate_check(suite: str, size: int, seed: int, workers: int, note: str = "") -> dict:
    """How far a sweep's announced time is from its measured time: the estimate that ``pebench run`` prints
    before it starts (:func:`pebench.plan.sweep_time.announce` with its default ``--threads 1``: each experiment
    calibrated here on one thread, the runs' expected costs), made for a sample of the suite (:func:`estimate_sample`),
    against the wall time of running that sample from scratch with ``workers`` workers (in a temporary folder,
    removed after).

    A sample, not the suite: its last runs may leave a worker idle, which the estimate (the suite's work spread
    evenly over the workers) does not count, so the ratio of a small sample leans high."""
    import shutil
    import tempfile

    sample = estimate_sample(suite, size, seed)
    code = git_state()
    load_before = os.getloadavg()[0]
    estimate = time_estimate(sample, workers, calibrations(sample))  # on one thread, as pebench run's runs train
    folder = Path(tempfile.mkdtemp(prefix=f"pebench-estimate-{suite}-"))
    try:
        start = time.perf_counter()
        summary = run_sweep(sample, folder, executor="processes", workers=workers, on_done=lambda spec, rows: None)
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    experiments = sorted({spec.experiment for spec in sample})
    row = {"suite": suite, "runs": len(sample), "seed": seed, "workers": workers,
           "experiments": " ".join(f"{name}:{sum(s.experiment == name for s in sample)}" for name in experiments),
           "estimate_minutes": estimate / 60, "measured_minutes": seconds / 60,
           "measured_over_estimate": seconds / estimate,
           "failed": summary.failed, "cpu_count": os.cpu_count(), **code, "date": time.strftime("%Y-%m-%d"),
           "load_before": load_before, "note": note}
    print(f"estimate {suite}: {len(sample)} runs, estimated {estimate / 60:.1f} min, measured {seconds / 60:.1f} min "
          f"(x{seconds / estimate:.2f})", flush=True)
    return row


def measure_estimates(suite: str, size: int, seeds: Sequence[int], workers: int, csv: Path, note: str = "") -> None:
    """:func:`estimate_check` for each of ``seeds``, appended to ``csv`` (every measurement is kept)."""
    append_rows(csv, [estimate_check(suite, size, seed, workers, note) for seed in seeds])


def suite_history(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ``suites.csv`` frame as the performance page shows them: short columns, times in
    minutes, the reference step as "before / after", empty cells where a measurement predates a column."""

    def cell(row: pd.Series, key: str, fmt: str) -> str:
        return fmt.format(row[key]) if key in row and pd.notna(row[key]) else ""

    return pd.DataFrame([{
        "suite": row["suite"], "date": row["date"], "runs": str(int(row["runs"])), "workers": str(int(row["workers"])),
        "minutes": f"{row['wall_minutes']:.1f}", "commit": str(row["git_sha"])[:7],
        "dirty": "yes" if str(row.get("git_dirty")) == "True" else "",
        "load": cell(row, "load_before", "{:.2f}"),
        "step ms": (f"{row['reference_step_ms_before']:.2f} / {row['reference_step_ms_after']:.2f}"
                    if pd.notna(row.get("reference_step_ms_before", float("nan"))) else ""),
        "note": row["note"] if isinstance(row.get("note"), str) else "",
    } for _, row in frame.iterrows()])


# --------------------------------------------------------------------------- tables


def _markdown(frame: pd.DataFrame, floats: str = "{:.2f}") -> str:
    """``frame`` as a Markdown table (:mod:`pebench.render.tables`), its floats printed with ``floats``; no final line
    break (:func:`write_tables` joins the parts)."""
    rows = [[Cell(floats.format(v) if isinstance(v, float) else str(v), v) for v in row]
            for _, row in frame.iterrows()]  # as a Series: a row mixing ints and floats prints them all as floats
    return to_markdown(Table("throughput", "", "", [Column(str(c)) for c in frame.columns], rows)).rstrip("\n")


def write_tables(out: Path = OUT, path: Path = TABLES) -> str:
    """Markdown tables of the CSVs in ``out`` (those that exist), written to ``path``; returns the text."""
    parts = ["<!-- generated by pebench.bench.throughput (write_tables) from results/performance/*.csv -->\n"]
    if (out / "machine.csv").exists():
        machine = pd.read_csv(out / "machine.csv")
        parts += ["### Machine\n", _markdown(machine, "{:.1f}"), ""]
    if (out / "throughput.csv").exists():
        frame = pd.read_csv(out / "throughput.csv")
        if (out / "machine.csv").exists():  # MFU against the best peak measurement of the run
            frame["mfu"] = frame["gflops"] / pd.read_csv(out / "machine.csv")["matmul_peak_gflops"].max()
        pe = frame[frame.framework == "pebench"]
        has_quartiles = "speedup_q25" in pe  # CSVs from before the quartiles were recorded have none
        pe = pe.assign(cell=[
            f"{r.speedup_vs_best_xt:.2f} ({r.speedup_q25:.2f}-{r.speedup_q75:.2f})" if has_quartiles else
            f"{r.speedup_vs_best_xt:.2f}" for r in pe.itertuples()])
        speed = pe.pivot(index="encoding", columns="point", values="cell").reindex(
            index=pe.encoding.unique(), columns=pe.point.unique())
        mfu = frame.pivot_table(index=["encoding", "framework"], columns="point", values="mfu", sort=False)
        tps = frame.pivot_table(index=["encoding", "framework"], columns="point", values="tokens_per_s", sort=False)
        first = frame[frame.point == frame.point.iloc[0]]
        params = first[["encoding", "framework", "params", "param_ratio_vs_pebench"]]
        parts += [
            "### Speed-up of pebench over the faster x-transformers attention\n",
            "Median of the per-repeat ratios (interquartile range of the per-repeat ratios in brackets).\n",
            _markdown(speed.reset_index()), "",
            "### Model FLOPs utilization (fraction of the measured 1-thread fp32 matmul peak)\n",
            _markdown(mfu.reset_index()), "",
            "### Training tokens per second\n", _markdown(tps.reset_index(), "{:.0f}"), "",
            "### Parameter counts (first point)\n", _markdown(params.reset_index(drop=True), "{:.3f}"), "",
        ]
    if (out / "seed_batching.csv").exists():
        frame = pd.read_csv(out / "seed_batching.csv")
        table = frame.pivot_table(index="encoding", columns="seeds", values="speedup", sort=False)
        table.columns = [f"S={c}" for c in table.columns]
        parts += ["### Seed batching: speed-up of train_batched over S separate train() runs\n",
                  _markdown(table.reset_index()), ""]
    if (out / "workers.csv").exists():
        parts += ["### Worker processes on 2 cores (aggregate training tokens/s)\n",
                  _markdown(pd.read_csv(out / "workers.csv"), "{:.0f}"), ""]
    if (out / "profile.csv").exists():
        profile = pd.read_csv(out / "profile.csv")
        first = profile.iloc[0]
        shown = pd.DataFrame({"operator": profile["operator"], "ms per step": profile["ms_per_step"],
                              "share of the step": profile["share"].map("{:.1%}".format),
                              "calls per step": profile["calls_per_step"].map(
                                  lambda calls: "" if pd.isna(calls) else f"{calls:.1f}")})
        parts += [f"### Where the time of a training step goes ({first.point}: d_model {first.d_model}, "
                  f"{first.n_layers} layers, batch {first.batch_size}, {first.encoding}, 1 thread)\n",
                  "A `torch.profiler` trace of the step (`--only profile`): the operators with the most self time, "
                  "every matmul, the others together, and the time outside any operator (Python, autograd); shares "
                  "are of the traced wall time. The profiler's own cost is in every operator's time, most in the "
                  f"small ones called many times: traced, a step took {profile.ms_per_step.sum():.1f} ms; untraced, "
                  f"{first.untraced_ms_per_step:.1f} ms.\n",
                  _markdown(shown), ""]
    if (out / "compile.csv").exists():
        compiled = pd.read_csv(out / "compile.csv", dtype={"error": str}).fillna({"error": ""})
        parts += ["### torch.compile (pebench, dynamic shapes)\n", _markdown(compiled), ""]
    if (out / "suites.csv").exists():
        parts += ["### Suite wall time (`pebench run --suite S --workers N`, from scratch)\n",
                  "Every measurement, oldest first; the last of a suite is its current time. *step ms*: one "
                  "training step of the standard suite's shape on one thread, timed just before and after the "
                  "suite (the machine's speed then; empty for measurements that predate it); *load*: the 1-minute "
                  "load average at the start.\n",
                  _markdown(suite_history(pd.read_csv(out / "suites.csv", dtype={"note": str}))), ""]
    if (out / "estimates.csv").exists():
        frame = pd.read_csv(out / "estimates.csv", dtype={"note": str})
        shown = pd.DataFrame({
            "suite": frame["suite"], "date": frame["date"], "runs": frame["runs"].astype(str),
            "seed": frame["seed"].astype(str),
            "workers": frame["workers"].astype(str), "estimated min": frame["estimate_minutes"].map("{:.1f}".format),
            "measured min": frame["measured_minutes"].map("{:.1f}".format),
            "measured / estimated": frame["measured_over_estimate"].map("{:.2f}".format),
            "commit": frame["git_sha"].astype(str).str[:7], "note": frame["note"].fillna("")})
        parts += ["### Announced time against measured time (a random sample of the suite, from scratch)\n",
                  "The estimate `pebench run` prints before it starts, made for a random sample of the suite's runs "
                  "(stratified: each experiment gives its share, at least one run, listed in the CSV; "
                  "`--only estimate`), against the wall time of running that sample. "
                  "A small sample's last runs can leave a worker idle, which the estimate does not count.\n",
                  _markdown(shown), ""]
    text = "\n".join(parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m pebench.bench.throughput``: measure the parts of ``--only`` into the CSVs of ``--out`` and write
    their tables, or only the tables (``--tables-only``), or only print the page's sentences (``--summary``)."""
    args = _parser().parse_args(argv)
    if args.tables is None:
        args.tables = TABLES if args.out.resolve() == OUT.resolve() else args.out / "performance_tables.md"
    if args.summary:
        for name, sentence in performance_values(args.out).items():
            print(f"{name}: {sentence}")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if args.tables_only:
        print(write_tables(args.out, args.tables))
        return
    _measure(args)
    write_tables(args.out, args.tables)
    print(f"wrote {args.out}/*.csv and {args.tables}")


def _parser() -> argparse.ArgumentParser:
    """The arguments of ``python -m pebench.bench.throughput``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer points, repeats and steps (a few minutes)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the A/B comparison (default 1)")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the CSVs")
    parser.add_argument("--tables", type=Path,
                        help="markdown tables generated from the CSVs (default: the docs' tables for the default "
                             "--out, else OUT/performance_tables.md, so a trial run never replaces the docs' numbers)")
    parser.add_argument("--only", nargs="*",
                        default=["machine", "frameworks", "seeds", "workers", "profile", "compile", "suites"],
                        help="parts to measure (also: estimate, the announced time of a suite against the measured "
                             "time of a sample of it; not in the default; profile, where the time of the suite's "
                             "training step goes)")
    parser.add_argument("--tables-only", action="store_true", help="only regenerate the tables from the CSVs")
    parser.add_argument("--summary", action="store_true",
                        help="only print the performance page's sentences, generated from the CSVs")
    parser.add_argument("--suites", nargs="*", default=["smoke"],
                        help="suites whose wall time the 'suites' part measures (default smoke; standard takes "
                             "over an hour on 2 cores: results/performance/suites.csv); evaluate:NAME times "
                             "'pebench evaluate NAME', one encoding's verdict")
    parser.add_argument("--suite-plugin", type=Path,
                        help="the file registering the encoding of an evaluate:NAME suite (pebench evaluate --plugin)")
    parser.add_argument("--suite-workers", type=int, default=2,
                        help="workers of the timed suites and estimate samples (default 2)")
    parser.add_argument("--estimate-suite", default="standard",
                        help="suite whose announced time the 'estimate' part checks (default standard)")
    parser.add_argument("--estimate-runs", type=int, default=14,
                        help="runs in each sample of the 'estimate' part (default 14: about 10 min on 2 cores)")
    parser.add_argument("--estimate-seeds", type=int, nargs="*", default=[0],
                        help="one sample per seed for the 'estimate' part (default 0)")
    parser.add_argument("--suite-note", default="",
                        help="the conditions of the timed suites, recorded in their rows (e.g. 'nothing else on the "
                             "cores')")
    parser.add_argument("--suite-out", type=Path,
                        help="keep the timed suites' results in SUITE_OUT/<suite> (must be empty; default: a "
                             "temporary folder, removed)")
    return parser


def _measure(args: argparse.Namespace) -> None:
    """Measure the parts of ``args.only`` into the CSVs of ``args.out``."""
    torch.set_num_threads(args.threads)
    repeats = 3 if args.quick else 5
    pts = points(args.quick)
    if not xtransformers_available():
        print("x-transformers is not installed (pip install 'pebench[bench]'): measuring pebench only")
    peaks = [matmul_peak(args.threads) for _ in range(3)]
    if "frameworks" in args.only:
        compare_frameworks(pts, ENCODINGS, repeats, peaks).to_csv(args.out / "throughput.csv", index=False)
    if "machine" in args.only or "frameworks" in args.only:
        machine = {"threads": args.threads, "matmul_peak_gflops": max(peaks), "peak_measurements": len(peaks),
                   "matmul_peak_gflops_2_threads": max(matmul_peak(2) for _ in range(3)),
                   "cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                   "torch": torch.__version__}
        print(machine, flush=True)
        pd.DataFrame([machine]).to_csv(args.out / "machine.csv", index=False)
    if "seeds" in args.only:
        seed_batching(pts[0], ("rope", "t5") if args.quick else ("none", "rope", "alibi", "t5", "learned"),
                      (1, 4, 8), steps=20 if args.quick else 32, repeats=3).to_csv(
            args.out / "seed_batching.csv", index=False)
    if "workers" in args.only:
        worker_scaling(pts[0], "rope", steps=100 if args.quick else 1000, repeats=3).to_csv(
            args.out / "workers.csv", index=False)
    if "profile" in args.only:
        step_profile(passes=2 if args.quick else 5).to_csv(args.out / "profile.csv", index=False)
    if "compile" in args.only:
        pd.concat([compile_gain(pts[0], encoding, passes=repeats) for encoding in ("none", "rope", "alibi")]).to_csv(
            args.out / "compile.csv", index=False)
    if "estimate" in args.only:
        measure_estimates(args.estimate_suite, args.estimate_runs, args.estimate_seeds, args.suite_workers,
                          args.out / "estimates.csv", args.suite_note)
    if "suites" in args.only and args.suites:
        measure_suites(args.suites, args.suite_workers, args.suite_out, args.out / "suites.csv", args.suite_note,
                       args.suite_plugin)


if __name__ == "__main__":
    main()
