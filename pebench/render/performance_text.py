"""The sentences of the performance page's results, generated from the CSVs that ``python -m pebench.bench.throughput``
writes to ``results/performance/`` (so that no figure on the page is typed by hand).

:func:`performance_values` gives each as a MyST substitution of ``docs/performance.md``;
``python -m pebench.bench.throughput --summary`` prints them. A CSV that is not there gives "not measured yet". The
CSVs are read with the standard library: the site's extension imports this module, and it loads no pandas.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: what a sentence says when its CSV is not there
NOT_MEASURED = "not measured yet"
#: a traced step this many times the untraced one: the profile's shares are no longer those of an untraced step
PROFILER_DISTORTS = 1.2
#: the columns read as text; every other non-empty cell is a number
TEXT_COLUMNS = {"point", "encoding", "framework", "loss_on", "operator", "processor", "torch", "error", "note",
                "arch"}


def _value(column: str, cell: str) -> Any:
    if column in TEXT_COLUMNS:
        return cell
    if cell in ("True", "False"):
        return cell == "True"
    return float(cell) if cell else math.nan


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a measurements CSV, numbers as floats (an empty cell: NaN) and the :data:`TEXT_COLUMNS` as
    text; ``[]`` where the file is not there."""
    if not path.exists():
        return []
    if path.is_symlink():  # a file of a results folder: never read through a link (pebench.store's rule)
        raise ValueError(f"{path} is a symbolic link; pebench never follows a link in a results folder: replace it "
                         "with the file itself")
    with path.open(newline="") as handle:
        return [{column: _value(column, cell) for column, cell in row.items()} for row in csv.DictReader(handle)]


def _span(values: Iterable[float], digits: int = 2) -> str:
    """``lo-hi`` of ``values`` as printed, or one number where both print the same."""
    values = list(values)
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}-{high}"


def _rounded(steps: float) -> str:
    """A step count to two significant figures, with thousands separators: 399918 -> ``400,000``."""
    return f"{round(steps, -max(0, int(math.floor(math.log10(steps))) - 1)):,.0f}"


def _where(rows: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    return [row for row in rows if keep(row)]


def framework_values(folder: Path) -> dict[str, str]:
    """``perf_suite_shape`` (the measured step of the standard suite: its width, depth where recorded, batch and
    lengths), ``perf_suite_speedup``, ``perf_d128_speedup``, ``perf_all_speedup``, ``perf_mfu`` and
    ``perf_suite_mfu``: pebench's training step against the faster x-transformers attention path, and its model
    FLOPs utilization (against the best matmul peak of ``machine.csv``, as the tables compute it), from
    ``throughput.csv``; ``perf_noise``: how wide the interquartile ranges of the per-repeat ratios are (the
    machine's noise, as one run measures it)."""
    rows = read_rows(folder / "throughput.csv")
    if not rows:
        return dict.fromkeys(("perf_suite_shape", "perf_suite_speedup", "perf_d128_speedup", "perf_all_speedup",
                              "perf_mfu", "perf_suite_mfu", "perf_noise"), NOT_MEASURED)
    peaks = [row["matmul_peak_gflops"] for row in read_rows(folder / "machine.csv")]
    ours = [{**row, "mfu": row["gflops"] / max(peaks) if peaks else row["mfu"]} for row in rows
            if row["framework"] == "pebench"]
    suite = _where(ours, lambda row: row["point"] == "suite")
    shape = suite[0]
    wide = _where(ours, lambda row: row["d_model"] == 128)
    shortest = min(row["mean_length"] for row in wide)
    wide_outputs = _where(wide, lambda row: row["loss_on"] == "outputs" and row["mean_length"] == shortest)
    wide_all = _where(wide, lambda row: row["loss_on"] == "all" and row["mean_length"] == shortest)
    long = _where(wide, lambda row: row["mean_length"] > 4 * shortest)
    all_at_suite_shape = _where(ours, lambda row: row["loss_on"] == "all" and row["d_model"] == shape["d_model"]
                                and row["mean_length"] == shape["mean_length"])

    def speedup(row: dict[str, Any]) -> float:
        return row["speedup_vs_best_xt"]

    slowest, fastest = min(suite, key=speedup), max(suite, key=speedup)
    low, high = min(wide_outputs, key=speedup), max(wide_outputs, key=speedup)
    per_encoding = ", ".join(f"{row['encoding']} {speedup(row):.2f}" for row in suite)
    lengths = "-".join(f"{n:.0f}" for n in sorted({min(r["mean_length"] for r in long),
                                                    max(r["mean_length"] for r in long)}))
    lowest_mfu = min(long, key=lambda row: row["mfu"])["encoding"]
    widths = [row["speedup_q75"] - row["speedup_q25"] for row in ours]
    relative = [width / speedup(row) for width, row in zip(widths, ours, strict=True)]
    layers = f"{shape['n_layers']:.0f} layers, " if not math.isnan(shape.get("n_layers", math.nan)) else ""
    return {
        "perf_suite_shape": (f"d_model {shape['d_model']:.0f}, {layers}batch {shape['batch_size']:.0f}, sequences of "
                             f"{shape['mean_length']:.0f} tokens on average, loss on the "
                             f"{'outputs' if shape['loss_on'] == 'outputs' else 'whole sequence'}"),
        "perf_suite_speedup": (
            f"**{speedup(slowest):.2f}x ({slowest['encoding']}) to {speedup(fastest):.2f}x ({fastest['encoding']})** "
            f"faster than the faster x-transformers attention path: {per_encoding} "
            f"({max(row['repeats'] for row in suite):.0f} repeats; the lower ends of the interquartile ranges are "
            f"{_span(row['speedup_q25'] for row in suite)})"),
        "perf_d128_speedup": f"{speedup(low):.2f} ({low['encoding']}) to {speedup(high):.2f} ({high['encoding']})",
        "perf_all_speedup": (f"{_span(map(speedup, all_at_suite_shape))} at the suite shape and "
                             f"{_span(speedup(row) for row in wide if row['loss_on'] == 'all')} at d_model 128; at "
                             f"the suite shape it is smallest for "
                             f"{', '.join(row['encoding'] for row in sorted(all_at_suite_shape, key=speedup)[:3])}"),
        "perf_mfu": (f"{_span(row['mfu'] for row in wide_outputs)} of the measured 1-thread matmul peak at the "
                     f"suite's lengths with the loss on the outputs, {_span(row['mfu'] for row in wide_all)} with the "
                     f"loss everywhere, and {_span(row['mfu'] for row in long)} for {lengths}-token sequences "
                     f"({lowest_mfu} is the lowest)"),
        "perf_suite_mfu": _span(row["mfu"] for row in suite),
        "perf_noise": (f"the interquartile range of one point's per-repeat ratios is {_span(widths)} wide, "
                       f"{statistics.median(widths):.2f} in the median ({min(relative):.0%} to {max(relative):.0%} "
                       f"of the ratio)"),
    }


def worker_values(folder: Path) -> dict[str, str]:
    """``perf_workers``: two single-thread worker processes against one, and against one process with two
    threads, from ``workers.csv``."""
    rows = read_rows(folder / "workers.csv")
    if not rows:
        return {"perf_workers": NOT_MEASURED}
    rate = {(row["workers"], row["threads_per_worker"]): row["tokens_per_s"] for row in rows}
    two = rate[(2, 1)]
    return {"perf_workers": (f"two single-thread processes train {two / 1000:.0f}K tokens/s together, "
                             f"{two / rate[(1, 1)]:.1f}x one single-thread process and {two / rate[(1, 2)]:.2f}x "
                             "one process with two threads")}


def seed_batching_values(folder: Path) -> dict[str, str]:
    """``perf_seed_batching``: the range of the seed-batching speed-up over the encodings, per number of seeds
    batched, and whether it is a gain at every size, from ``seed_batching.csv``."""
    rows = read_rows(folder / "seed_batching.csv")
    if not rows:
        return {"perf_seed_batching": NOT_MEASURED}
    sizes = sorted({row["seeds"] for row in rows})
    spans = ", ".join(f"{_span(row['speedup'] for row in rows if row['seeds'] == seeds)}x (S = {seeds:.0f})"
                      for seeds in sizes)
    verdict = "a gain at every size" if min(row["speedup"] for row in rows) > 1 else "no consistent gain on this CPU"
    return {"perf_seed_batching": f"{spans}: {verdict}"}


def profile_values(folder: Path) -> dict[str, str]:
    """``perf_profile``: the matmuls' share of the profiled training step, its three largest operators and the time
    outside any operator, from ``profile.csv``."""
    rows = read_rows(folder / "profile.csv")
    if not rows:
        return {"perf_profile": NOT_MEASURED}
    operators = [row for row in rows if not math.isnan(row["calls_per_step"]) and row["operator"] != "other operators"]
    largest = sorted(operators, key=lambda row: -row["share"])[:3]
    outside = sum(row["share"] for row in rows if math.isnan(row["calls_per_step"]))
    matmuls = sum(row["share"] for row in rows if row["matmul"])
    named = ", ".join(f"{row['operator']} {row['share']:.0%}" for row in largest)
    traced, untraced = sum(row["ms_per_step"] for row in rows), rows[0]["untraced_ms_per_step"]
    first = rows[0]
    overhead = (f"the profiler made the step {traced / untraced - 1:.0%} slower ({traced:.1f} ms against "
                f"{untraced:.1f} ms untraced)")
    if traced > PROFILER_DISTORTS * untraced:  # then it is most of the small operators' time
        overhead += ", inflating most the operators called many times per step: the matmuls' share is understated"
    return {"perf_profile": (f"in the standard suite's step (`{first['point']}`: d_model {first['d_model']:.0f}, "
                             f"{first['n_layers']:.0f} layers, batch {first['batch_size']:.0f}, {first['encoding']}) "
                             f"the matrix multiplications take {matmuls:.0%}; the largest operators are {named}; "
                             f"{outside:.0%} is spent outside any operator (Python, autograd); {overhead}")}


def compile_values(folder: Path) -> dict[str, str]:
    """``perf_compile``: ``torch.compile``'s compile time, its steady-state speed-up per encoding and the steps
    after which it pays off, from ``compile.csv``."""
    rows = read_rows(folder / "compile.csv")
    if not rows:
        return {"perf_compile": NOT_MEASURED}
    gains = ", ".join(f"{row['steady_speedup']:.2f}x ({row['encoding']})" for row in rows)
    pays = [f"after about {_rounded(row['break_even_steps'])} steps for {row['encoding']}" for row in rows
            if math.isfinite(row["break_even_steps"])]
    never = [row["encoding"] for row in rows if not math.isfinite(row["break_even_steps"])]
    payoff = "; ".join([*pays, *([f"never for {', '.join(never)}"] if never else [])])
    return {"perf_compile": (f"{_span((row['compile_s'] for row in rows), 0)} s to compile, then {gains} in steady "
                             f"state, so it would pay off {payoff}")}


def machine_values(folder: Path) -> dict[str, str]:
    """``perf_machine``: the measuring machine's fp32 matmul peak on one and two threads, its cores and its torch
    build, from ``machine.csv``."""
    rows = read_rows(folder / "machine.csv")
    if not rows:
        return {"perf_machine": NOT_MEASURED}
    one = max(row["matmul_peak_gflops"] for row in rows)  # the best measurement, as the MFU's peak
    two = [peak for row in rows  # an empty cell (NaN) or no column: not measured
           if not math.isnan(peak := row.get("matmul_peak_gflops_2_threads", math.nan))]
    where = [f"{rows[0]['cpu_count']:.0f} cores" if "cpu_count" in rows[0] else "",
             f"torch {rows[0]['torch']}" if rows[0].get("torch") else ""]
    peaks = f"{one:.0f} GFLOP/s on one thread" + (f", {max(two):.0f} on two" if two else "")
    return {"perf_machine": peaks + (f" ({', '.join(filter(None, where))})" if any(where) else "")}


def performance_values(folder: Path) -> dict[str, str]:
    """Every sentence of the performance page's results (:func:`machine_values`, :func:`framework_values`,
    :func:`worker_values`, :func:`seed_batching_values`, :func:`profile_values`, :func:`compile_values`) from the
    CSVs in ``folder``."""
    return {**machine_values(folder), **framework_values(folder), **worker_values(folder),
            **seed_batching_values(folder), **profile_values(folder), **compile_values(folder)}
