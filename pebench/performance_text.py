"""The sentences of the performance page's results, generated from the CSVs that ``python -m pebench.throughput``
writes to ``results/performance/`` (so that no figure on the page is typed by hand).

:func:`performance_values` gives each as a MyST substitution of ``docs/performance.md``;
``python -m pebench.throughput --summary`` prints them. A CSV that is not there gives "not measured yet".
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

#: what a sentence says when its CSV is not there
NOT_MEASURED = "not measured yet"


def _span(values: pd.Series, digits: int = 2) -> str:
    """``lo-hi`` of ``values`` as printed, or one number where both print the same."""
    low, high = f"{values.min():.{digits}f}", f"{values.max():.{digits}f}"
    return low if low == high else f"{low}-{high}"


def _rounded(steps: float) -> str:
    """A step count to two significant figures, with thousands separators: 399918 -> ``400,000``."""
    return f"{round(steps, -max(0, int(math.floor(math.log10(steps))) - 1)):,.0f}"


def framework_values(folder: Path) -> dict[str, str]:
    """``perf_suite_speedup``, ``perf_d128_speedup``, ``perf_all_speedup``, ``perf_mfu`` and ``perf_suite_mfu``:
    pebench's training step against the faster x-transformers attention path, and its model FLOPs utilization
    (against the best matmul peak of ``machine.csv``, as the tables compute it), from ``throughput.csv``."""
    if not (folder / "throughput.csv").exists():
        return dict.fromkeys(("perf_suite_speedup", "perf_d128_speedup", "perf_all_speedup", "perf_mfu",
                              "perf_suite_mfu"), NOT_MEASURED)
    frame = pd.read_csv(folder / "throughput.csv")
    if (folder / "machine.csv").exists():
        frame["mfu"] = frame["gflops"] / pd.read_csv(folder / "machine.csv")["matmul_peak_gflops"].max()
    ours = frame[frame.framework == "pebench"]
    suite = ours[ours.point == "suite"]
    shape = suite.iloc[0]
    at_suite_shape = (ours.d_model == shape.d_model) & (ours.mean_length == shape.mean_length)
    wide = ours[ours.d_model == 128]
    wide_outputs = wide[(wide.loss_on == "outputs") & (wide.mean_length == wide.mean_length.min())]
    wide_all = wide[(wide.loss_on == "all") & (wide.mean_length == wide.mean_length.min())]
    long = wide[wide.mean_length > 4 * wide.mean_length.min()]
    slowest, fastest = suite.loc[suite.speedup_vs_best_xt.idxmin()], suite.loc[suite.speedup_vs_best_xt.idxmax()]
    low, high = wide_outputs.loc[wide_outputs.speedup_vs_best_xt.idxmin()], wide_outputs.loc[
        wide_outputs.speedup_vs_best_xt.idxmax()]
    per_encoding = ", ".join(f"{row.encoding} {row.speedup_vs_best_xt:.2f}" for row in suite.itertuples())
    lengths = "-".join(str(int(n)) for n in sorted({long.mean_length.min(), long.mean_length.max()}))
    return {
        "perf_suite_speedup": (
            f"**{slowest.speedup_vs_best_xt:.2f}x ({slowest.encoding}) to {fastest.speedup_vs_best_xt:.2f}x "
            f"({fastest.encoding})** faster than the faster x-transformers attention path: {per_encoding} "
            f"({int(suite.repeats.max())} repeats; the lower ends of the interquartile ranges are "
            f"{_span(suite.speedup_q25)})"),
        "perf_d128_speedup": (f"{low.speedup_vs_best_xt:.2f} ({low.encoding}) to {high.speedup_vs_best_xt:.2f} "
                              f"({high.encoding})"),
        "perf_all_speedup": (f"{_span(ours[at_suite_shape & (ours.loss_on == 'all')].speedup_vs_best_xt)} at the "
                             f"suite shape and {_span(wide[wide.loss_on == 'all'].speedup_vs_best_xt)} at d_model 128"),
        "perf_mfu": (f"{_span(wide_outputs.mfu)} of the measured 1-thread matmul peak at the suite's lengths with "
                     f"the loss on the outputs, {_span(wide_all.mfu)} with the loss everywhere, and "
                     f"{_span(long.mfu)} for {lengths}-token sequences "
                     f"({long.loc[long.mfu.idxmin()].encoding} is the lowest)"),
        "perf_suite_mfu": _span(suite.mfu),
    }


def worker_values(folder: Path) -> dict[str, str]:
    """``perf_workers``: two single-thread worker processes against one, and against one process with two
    threads, from ``workers.csv``."""
    if not (folder / "workers.csv").exists():
        return {"perf_workers": NOT_MEASURED}
    frame = pd.read_csv(folder / "workers.csv").set_index(["workers", "threads_per_worker"]).tokens_per_s
    two = frame[(2, 1)]
    return {"perf_workers": (f"two single-thread processes train {two / 1000:.0f}K tokens/s together, "
                             f"{two / frame[(1, 1)]:.1f}x one single-thread process and {two / frame[(1, 2)]:.2f}x "
                             "one process with two threads")}


def seed_batching_values(folder: Path) -> dict[str, str]:
    """``perf_seed_batching``: the range of the seed-batching speed-up over the encodings, per number of seeds
    batched, and whether it is a gain at every size, from ``seed_batching.csv``."""
    if not (folder / "seed_batching.csv").exists():
        return {"perf_seed_batching": NOT_MEASURED}
    frame = pd.read_csv(folder / "seed_batching.csv")
    spans = ", ".join(f"{_span(group.speedup)}x (S = {seeds})" for seeds, group in frame.groupby("seeds"))
    verdict = "a gain at every size" if frame.speedup.min() > 1 else "no consistent gain on this CPU"
    return {"perf_seed_batching": f"{spans}: {verdict}"}


def compile_values(folder: Path) -> dict[str, str]:
    """``perf_compile``: ``torch.compile``'s compile time, its steady-state speed-up per encoding and the steps
    after which it pays off, from ``compile.csv``."""
    if not (folder / "compile.csv").exists():
        return {"perf_compile": NOT_MEASURED}
    frame = pd.read_csv(folder / "compile.csv")
    gains = ", ".join(f"{row.steady_speedup:.2f}x ({row.encoding})" for row in frame.itertuples())
    pays = [f"after about {_rounded(row.break_even_steps)} steps for {row.encoding}" for row in frame.itertuples()
            if math.isfinite(row.break_even_steps)]
    never = [row.encoding for row in frame.itertuples() if not math.isfinite(row.break_even_steps)]
    payoff = "; ".join([*pays, *([f"never for {', '.join(never)}"] if never else [])])
    return {"perf_compile": (f"{_span(frame.compile_s, 0)} s to compile, then {gains} in steady state, so it would "
                             f"pay off {payoff}")}


def performance_values(folder: Path) -> dict[str, str]:
    """Every sentence of the performance page's results (:func:`framework_values`, :func:`worker_values`,
    :func:`seed_batching_values`, :func:`compile_values`) from the CSVs in ``folder``."""
    return {**framework_values(folder), **worker_values(folder), **seed_batching_values(folder),
            **compile_values(folder)}
