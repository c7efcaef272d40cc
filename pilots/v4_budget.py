"""The budget of protocol v4's standard reference (issue 66, item 9) by the bench's own calibration.

A pilot (no result is made): ``python pilots/v4_budget.py`` expands the standard suite as protocol v4 declares it
(``pebench.protocol.STANDARD_V4``), times a few training steps of each experiment on this machine as ``pebench
run`` does before a sweep (:func:`pebench.plan.sweep_time.calibrations`, one torch thread per worker), and
estimates the wall time with 2 workers (:func:`pebench.plan.sweep_time.time_estimate`: each run's expected steps,
the share of its cap a run stopping at its fit takes in the v3 reference). The extension of runs still improving
at their cap is added as a bound: every run of an (arch, task) extended by the whole of ``V4_EXTENSION`` steps
with the probability that a v3 run of that (arch, task) ended at its cap still improving (the v3 report's
``budget_length_extrapolation.csv``; a task new in v4 at its architecture's mean). Run it on an idle machine:
a loaded one times slow steps, and the estimate scales with them.

Writes ``results/pilots/v4_budget.json`` (the numbers and, as page blocks, the reading the protocol page shows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "v4_budget.json"
V3_BUDGET = ROOT / "results" / "archive" / "v3" / "standard" / "tables" / "budget_length_extrapolation.csv"
WORKERS = 2
#: the declared budget of the v4 reference (issue 66): hours of uncontended wall time on 2 CPU cores
BUDGET_HOURS = 20.0


def still_improving_shares(path: Path = V3_BUDGET) -> dict[tuple[str, str], float]:
    """Per (arch, task) of the v3 reference, the share of its runs that ended at the cap still improving."""
    import pandas as pd

    table = pd.read_csv(path)
    per_task = table.groupby(["arch", "task"])[["runs", "still_improving"]].sum()
    return {key: float(row["still_improving"] / row["runs"]) for key, row in per_task.iterrows() if row["runs"]}


def estimate(workers: int = WORKERS) -> dict:
    """The calibrated estimate of v4's reference: runs, hours without extension, the extension's bound, and per
    experiment and arch the runs and hours."""
    import dataclasses

    from pebench.plan.experiment import suite_runs
    from pebench.plan.sweep_time import calibrations, time_estimate
    from pebench.protocol import V4_EXTENSION, as_declared
    from pebench.store import cpu_model

    with as_declared("standard", 4):
        specs = suite_runs("standard")
    rates = calibrations(specs, "cpu", 1)
    shares = still_improving_shares()
    mean_share = {arch: sum(v for (a, _), v in shares.items() if a == arch) /
                  max(1, sum(1 for a, _ in shares if a == arch)) for arch in ("decoder", "encoder")}
    base = time_estimate(specs, workers, rates)
    extended = []  # each extendable run as one run of V4_EXTENSION steps, weighted by its share
    weights = []
    for spec in specs:
        if spec.train.extend_to:
            extended.append(dataclasses.replace(spec, train=dataclasses.replace(
                spec.train, steps=V4_EXTENSION, extend_to=0, stop_at_fit=False)))
            weights.append(shares.get((spec.arch, spec.task), mean_share.get(spec.arch, 0.0)))
    extension = sum(w * time_estimate([s], 1, rates) for s, w in zip(extended, weights, strict=True)) / workers
    parts = {}
    for spec in specs:
        key = f"{spec.experiment} {spec.arch}"
        parts.setdefault(key, []).append(spec)
    return {"runs": len(specs), "workers": workers, "cpu": cpu_model(), "seconds_per_cost": rates,
            "hours": base / 3600, "extension_bound_hours": extension / 3600,
            "total_bound_hours": (base + extension) / 3600, "budget_hours": BUDGET_HOURS,
            "parts": {key: {"runs": len(group), "hours": time_estimate(group, workers, rates) / 3600}
                      for key, group in sorted(parts.items())}}


def blocks(found: dict) -> list:
    """The reading as page blocks: the estimate against the budget, and a table per experiment and arch."""
    from pebench.render.blocks import table, text

    within = found["total_bound_hours"] <= found["budget_hours"]
    return [
        text(f"Protocol v4's standard reference, {found['runs']:,} runs, by the bench's calibration on "
             f"{found['cpu'] or 'this CPU'} with {found['workers']} workers: about {found['hours']:.1f} h, and at most "
             f"{found['extension_bound_hours']:.1f} h more for the runs still improving at their cap (the v3 "
             f"reference's share of each task's runs, each extended by the whole extension): "
             f"{found['total_bound_hours']:.1f} h at most, "
             + (f"within the declared {found['budget_hours']:.0f} h." if within else
                f"over the declared {found['budget_hours']:.0f} h.")),
        table(["experiment, arch", "runs", "hours (2 workers, no extension)"],
              [[key, part["runs"], f"{part['hours']:.1f}"] for key, part in found["parts"].items()]),
    ]


def main(argv=None) -> None:
    """Estimate and write :data:`OUT`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from pebench.render.blocks import write_blocks
    from pebench.store import git_state

    found = estimate(args.workers)
    print(blocks(found)[0]["text"])
    state = {k: v for k, v in git_state().items() if not isinstance(v, list)}
    print(f"reading -> {write_blocks(args.out, blocks(found), **found, **state)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
