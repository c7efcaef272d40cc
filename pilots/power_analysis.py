"""Power analysis of protocol v4's battery (issue 66) from protocol v3's variance components.

A pilot (no training): ``python pilots/power_analysis.py`` reads the committed v3 reference
(``results/archive/v3/standard`` since v4 replaced it, its length experiment), and per architecture:

1. **Variance components of a paired difference.** For every pair of encodings and every order-dependent task,
   the differences of their floor-normalised out-of-distribution scores (``ood_normalised_acc``) on the seeds
   both fitted: ``d_ts = mu + u_t + e_ts``, with ``u_t`` the task's own effect on the difference (variance
   ``tau2``, between tasks) and ``e_ts`` the seed's (variance ``sigma2``, within a task). Estimated by the
   method of moments per pair (``sigma2``: the pooled within-task variance; ``tau2``: the variance of the task
   means less ``sigma2 / seeds``, at least 0), then summarised over pairs by their median and 75th percentile.
2. **The minimum detectable effect** of a declared comparison whose unit is the task (the seeds of a task
   averaged first): the smallest mean difference an exact two-sided sign-flip test over ``T`` tasks detects
   with power :data:`POWER` at the strictest Holm step, ``alpha / m`` for a family of ``m`` declared
   comparisons, when task means scatter with variance ``tau2 + sigma2 / n`` (``n`` seeds). By simulation
   (:data:`SIMULATIONS` normal samples per ``T``, seeded), for every ``T`` and ``n`` of the grid.
3. **What a run costs**: v3's mean optimizer steps per run and seconds per step, per architecture, so that a
   battery's hours follow from its tasks, encodings and seeds (new tasks at the mean of v3's tasks until their
   pilot gives their steps; the bench's own calibration gives the final estimate before the reference runs).

Writes ``results/pilots/power_v4.json`` (the numbers, and the reading as page blocks that the Pilots page
shows). Nothing here reads an evaluation length
choice back into training (rule 2): it reads v3's scores to size v4's battery, never to choose its tasks.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "power_v4.json"
REFERENCE = ROOT / "results" / "archive" / "v3" / "standard"
METRIC = "ood_normalised_acc"
ALPHA = 0.05
POWER = 0.8
#: declared comparisons per architecture in v3 (the family Holm corrects over)
FAMILY = 6
TASKS_GRID = tuple(range(6, 17))
SEEDS_GRID = (2, 3, 4, 6)
SIMULATIONS = 2000
SEED = 0
#: the exact test enumerates every sign up to this many tasks (4,096 assignments), then samples them
EXACT_MAX_TASKS = 12
RANDOM_SIGNS = 4096
#: halvings of the interval [0, 10] in which the standardised effect is sought (precision 10 / 2**16)
BISECTIONS = 16


def sign_matrix(n_tasks: int) -> np.ndarray:
    """The sign assignments the test compares with, ``(k, n_tasks)``: all ``2**n_tasks`` up to
    :data:`EXACT_MAX_TASKS` tasks, else :data:`RANDOM_SIGNS` seeded random ones and the identity (a Monte-Carlo
    p-value, within 0.002 of the exact one at the levels used here)."""
    if n_tasks <= EXACT_MAX_TASKS:
        return 1 - 2 * ((np.arange(2 ** n_tasks)[:, None] >> np.arange(n_tasks)) & 1)
    random = np.random.default_rng(SEED).choice([-1, 1], size=(RANDOM_SIGNS - 1, n_tasks))
    return np.vstack([np.ones((1, n_tasks), dtype=int), random])


def exact_p(samples: np.ndarray) -> np.ndarray:
    """Two-sided sign-flip p-values of the mean, one per row of ``samples`` ``(k, T)`` (:func:`sign_matrix`)."""
    signs = sign_matrix(samples.shape[1]).astype(float)
    observed = np.abs(samples.sum(axis=1))  # (k,)
    flipped = np.abs(samples @ signs.T)  # (k, signs)
    return (flipped >= observed[:, None] - 1e-9).mean(axis=1)


def standard_mde(n_tasks: int, alpha: float, power: float = POWER, n_sim: int = SIMULATIONS,
                 seed: int = SEED) -> float:
    """The mean shift, in units of the task means' standard deviation, that an exact sign-flip test over
    ``n_tasks`` tasks detects at level ``alpha`` with probability ``power`` (inf where the smallest p the test
    can give, ``2 / 2**n_tasks``, exceeds ``alpha``). Bisection on one seeded normal sample."""
    if 2 / 2 ** n_tasks > alpha:
        return float("inf")
    noise = np.random.default_rng(seed + n_tasks).standard_normal((n_sim, n_tasks))
    low, high = 0.0, 10.0
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        reached = np.mean(exact_p(noise + middle) <= alpha)
        low, high = (middle, high) if reached < power else (low, middle)
    return high


def variance_components(frame, arch: str) -> dict:
    """``sigma2`` and ``tau2`` of the paired differences of every encoding pair of ``arch`` (module docstring),
    summarised over pairs; with the pairs, tasks and seeds they rest on."""
    part = frame[frame["arch"] == arch]
    wide = part.pivot_table(index=["task", "seed"], columns="encoding", values=METRIC, aggfunc="first")
    sigma2, tau2, seeds = [], [], []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        d = (wide[a] - wide[b]).dropna()
        groups = [g.to_numpy() for _, g in d.groupby(level="task") if len(g) >= 2]
        if len(groups) < 3:
            continue
        within = sum(((g - g.mean()) ** 2).sum() for g in groups) / sum(len(g) - 1 for g in groups)
        n = np.mean([len(g) for g in groups])
        means = np.array([g.mean() for g in groups])
        sigma2.append(within)
        tau2.append(max(0.0, means.var(ddof=1) - within / n))
        seeds.append(n)
    return {
        "pairs": len(sigma2), "tasks": int(part["task"].nunique()), "mean_seeds": float(np.mean(seeds)),
        "sigma2_median": float(np.median(sigma2)), "sigma2_q75": float(np.quantile(sigma2, 0.75)),
        "tau2_median": float(np.median(tau2)), "tau2_q75": float(np.quantile(tau2, 0.75)),
    }


def observed_differences(frame, arch: str) -> list[float]:
    """The absolute task-level mean differences of every encoding pair of ``arch`` (seeds averaged per task on
    the seeds both fitted, then the mean over tasks): the effects v3 shows, against which an MDE is read."""
    part = frame[frame["arch"] == arch]
    wide = part.pivot_table(index=["task", "seed"], columns="encoding", values=METRIC, aggfunc="first")
    out = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        d = (wide[a] - wide[b]).dropna()
        task_means = d.groupby(level="task").mean()
        if len(task_means) >= 3:
            out.append(abs(float(task_means.mean())))
    return out


def costs(runs, arch: str) -> dict:
    """v3's mean optimizer steps per run and median seconds per step (one worker) of ``arch``'s length runs."""
    part = runs[runs["arch"] == arch]
    return {"mean_steps": float(part["steps_done"].mean()),
            "seconds_per_step": float((part["train_seconds"] / part["steps_done"]).median())}


def fitted_frame(reference: Path):
    """One row per fitted, order-dependent, trained run of ``reference``'s length experiment, with its score."""
    from pebench import store
    from pebench.analysis import results

    data = store.load(reference)
    data = data[data["experiment"] == "length_extrapolation"]
    runs = results.run_metrics(data)
    runs = runs[(runs["variant"] == "trained") & (runs["status"] != "failed")]
    dependent = runs[(runs["order_dependent"] == True) & (runs["fitted"] == True)]  # noqa: E712
    return runs, dependent[["arch", "task", "encoding", "seed", METRIC]].dropna()


def analyse(reference: Path = REFERENCE) -> dict:
    """The whole analysis (module docstring) as one JSON-ready dict."""
    runs, frame = fitted_frame(reference)
    k = {n_tasks: standard_mde(n_tasks, ALPHA / FAMILY) for n_tasks in TASKS_GRID}
    k_unadjusted = {n_tasks: standard_mde(n_tasks, ALPHA) for n_tasks in TASKS_GRID}
    out = {"reference": str(reference.relative_to(ROOT)), "metric": METRIC, "alpha": ALPHA, "power": POWER,
           "family": FAMILY, "simulations": SIMULATIONS, "seed": SEED,
           "standard_mde": {str(t): v for t, v in k.items()},
           "standard_mde_unadjusted": {str(t): v for t, v in k_unadjusted.items()}, "archs": {}}
    for arch in sorted(frame["arch"].unique()):
        components = variance_components(frame, arch)
        observed = observed_differences(frame, arch)
        grid = []
        for n_tasks, seeds in itertools.product(TASKS_GRID, SEEDS_GRID):
            spread = np.sqrt(components["tau2_median"] + components["sigma2_median"] / seeds)
            spread_q75 = np.sqrt(components["tau2_q75"] + components["sigma2_q75"] / seeds)
            mde = k[n_tasks] * spread
            grid.append({"tasks": n_tasks, "seeds": seeds, "mde": float(mde), "mde_q75": float(k[n_tasks] * spread_q75),
                         "share_of_v3_differences_detectable": float(np.mean(np.array(observed) >= mde))})
        out["archs"][arch] = {**components, **costs(runs, arch), "v3_pair_differences": len(observed),
                              "v3_difference_median": float(np.median(observed)), "grid": grid}
    return out


#: the grid the reading shows (the JSON keeps every point)
SHOWN_TASKS = (7, 8, 10, 12, 14, 16)
SHOWN_SEEDS = (2, 3, 6)


def blocks(result: dict) -> list:
    """The analysis as page blocks (:mod:`pebench.render.blocks`): per architecture the variance components and
    the MDE grid, and what follows from them, every number from ``result``."""
    from pebench.render.blocks import table, text

    smallest = {t: 2 / 2 ** t for t in TASKS_GRID}
    least = min(t for t in TASKS_GRID if smallest[t] <= ALPHA / FAMILY)
    out = [text(
        f"From the committed v3 reference (`{result['reference']}`, length experiment, fitted order-dependent runs): "
        f"per architecture, the variance of a paired difference of two encodings' floor-normalised scores between "
        f"tasks (tau², the task's own effect on the difference) and within a task between seeds (sigma²), the "
        f"median over encoding pairs (75th percentile in brackets). The minimum detectable effect (MDE) is the "
        f"mean task-level difference an exact sign-flip test over T tasks detects with power {POWER:.0%} at "
        f"{ALPHA} / {FAMILY} (the strictest Holm step over {FAMILY} declared comparisons), with n seeds per task "
        f"({result['simulations']:,} seeded simulations per T). With T tasks the smallest p the test can give is "
        f"2 / 2^T: {least} tasks are the fewest at which any comparison can survive the correction.")]
    for arch, part in result["archs"].items():
        out.append(text(
            f"**{arch.capitalize()}**: tau² {part['tau2_median']:.4f} ({part['tau2_q75']:.4f}), sigma² "
            f"{part['sigma2_median']:.4f} ({part['sigma2_q75']:.4f}) over {part['pairs']} encoding pairs and "
            f"{part['tasks']} tasks, {part['mean_seeds']:.1f} jointly fitted seeds per task on average; the median "
            f"absolute difference between two encodings over their common tasks in v3 is "
            f"{part['v3_difference_median']:.3f}. A v3 run of the length experiment took {part['mean_steps']:,.0f} "
            f"steps on average, at {part['seconds_per_step']:.3f} s per step on one worker (the median; the "
            f"reference's machines, loaded as they were)."))
        grid = {(row["tasks"], row["seeds"]): row for row in part["grid"]}
        rows = []
        for n_tasks in SHOWN_TASKS:
            cells = [grid[(n_tasks, seeds)] for seeds in SHOWN_SEEDS]
            rows.append([n_tasks, *[_mde_cell(cell) for cell in cells],
                         f"{cells[1]['share_of_v3_differences_detectable']:.0%}"])
        out.append(table(["tasks T", *[f"MDE, {seeds} seeds" for seeds in SHOWN_SEEDS],
                          f"v3 differences detectable ({SHOWN_SEEDS[1]} seeds)"], rows))
        at = {seeds: grid[(12, seeds)]["mde"] for seeds in SHOWN_SEEDS}
        out.append(text(
            f"Reading ({arch}): tau² is {part['tau2_median'] / part['sigma2_median']:.1f} times sigma², so tasks, "
            f"not seeds, limit the power: at 12 tasks the MDE is {at[SHOWN_SEEDS[0]]:.3f} with {SHOWN_SEEDS[0]} "
            f"seeds, {at[SHOWN_SEEDS[1]]:.3f} with {SHOWN_SEEDS[1]} and {at[SHOWN_SEEDS[2]]:.3f} with "
            f"{SHOWN_SEEDS[2]}, while going from 8 to 16 tasks at {SHOWN_SEEDS[1]} seeds takes it from "
            f"{grid[(8, SHOWN_SEEDS[1])]['mde']:.3f} to {grid[(16, SHOWN_SEEDS[1])]['mde']:.3f}."))
    return out


def _mde_cell(row: dict) -> str:
    """An MDE grid cell: the median-variance MDE and the 75th-percentile one, or "none" (no p small enough)."""
    if not np.isfinite(row["mde"]):
        return "none"
    return f"{row['mde']:.3f} ({row['mde_q75']:.3f})"


def main(argv=None) -> None:
    """Run the analysis on ``--reference`` and write ``--out``; print the grid."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["read"], help="the analysis is its own reading: the same")
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from pebench.render.blocks import write_blocks

    result = analyse(args.reference.resolve())
    write_blocks(args.out, blocks(result), **result)
    for arch, part in result["archs"].items():
        print(f"{arch}: sigma2 {part['sigma2_median']:.4f} (q75 {part['sigma2_q75']:.4f}), tau2 "
              f"{part['tau2_median']:.4f} (q75 {part['tau2_q75']:.4f}) over {part['pairs']} pairs; "
              f"v3 |difference| median {part['v3_difference_median']:.3f}")
        for row in part["grid"]:
            print(f"  T={row['tasks']:2d} n={row['seeds']}: MDE {row['mde']:.3f} (q75 {row['mde_q75']:.3f}), "
                  f"{row['share_of_v3_differences_detectable']:.0%} of v3's pair differences detectable")
    print(f"-> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
