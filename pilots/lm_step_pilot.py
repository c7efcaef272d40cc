"""LM step pilot of protocol v3: how many steps the standard suite's language model trains. Pre-registration:
this docstring and the constants below were committed before any of this pilot's runs was made (its manifest
records the commits that made its runs).

Why (issue 36, audit item 7): the standard suite's character LM trained 800 steps, which left its perplexity at
the training context between 4.83 (ALiBi) and 7.49 (NoPE). The table's OOD/train perplexity ratio divides by
that in-distribution perplexity, so a poorly fitted model looks flat (NoPE 1.18 at perplexity 7.49). The Press
replication's 4000 steps brought the spread at the training context to 3.57-3.90. The step count is to be
declared from the in-distribution spread, not from any out-of-distribution number.

What runs (:func:`specs`): the standard suite's ``lm_extrapolation`` experiment as it is declared at the time
of the run (``experiments/lm_extrapolation.py``: context 32, batch 32 windows, every encoding it compares, at
the standard suite's model scale, which must be protocol v3's: the pilot refuses to run before that scale is
declared), seeds :data:`SEEDS`, at each step count of :data:`STEPS`, evaluated at the training context only
(:data:`CONTEXT`): no perplexity beyond it exists for these models.

The rule (:func:`choose`), on the seed-mean perplexity at the training context of each encoding:

- the standard LM's step count is the smallest of :data:`STEPS` at which the spread across encodings (the
  largest seed-mean perplexity divided by the smallest) is at most :data:`MAX_SPREAD`;
- if none is, the largest of :data:`STEPS`, and the note says so with the spread reached.

Step counts are run in increasing order; a count is decided once its runs are complete, so the larger ones
need not run once a smaller one meets the rule.

Amendment (committed after the 800-step runs, before any other; no rule, run or threshold changed): each step
count's runs go to a folder of their own (:func:`folder`, ``results/pilots/lm_steps/steps<N>``), since a results
folder pools the runs of one cell as seeds and the runner refuses one cell under two step counts; the 800-step
runs were moved there from ``results/pilots/lm_steps``.

Amendment 2 (committed after the 3200-step runs, before any 6400-step run; no rule, run or threshold changed): the
rule is applied as soon as no run still to be made can change its outcome. Once every count below the largest
is complete and none is within the rule, the largest is chosen whatever its own spread, so its pilot runs are not
needed to decide: the reading says its spread was not measured by the pilot (the standard suite's own LM runs
report the in-distribution perplexity at that count).

Usage (from a clean checkout; runs go to ``results/pilots/lm_steps/steps<N>``)::

    python pilots/lm_step_pilot.py run --steps 800 --workers 2     # resumable; one step count at a time
    python pilots/lm_step_pilot.py read                            # results/pilots/lm_step_pilot.json
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from pebench.protocol import LM_SPREAD_GOAL

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "lm_steps"
OUTCOME = ROOT / "results" / "pilots" / "lm_step_pilot.json"
EXPERIMENT = "lm_step_pilot"
STEPS = (800, 1600, 3200, 6400)
SEEDS = (0, 1)
#: the training context of the standard suite's LM (experiments/lm_extrapolation.py)
CONTEXT = 32
#: the largest ratio of the worst to the best encoding's in-distribution perplexity the rule accepts
MAX_SPREAD = LM_SPREAD_GOAL


def specs(steps: int) -> list:
    """The pilot's runs at ``steps``: the standard ``lm_extrapolation`` runs of seeds :data:`SEEDS`, with
    ``steps`` optimizer steps and the training context as the only evaluation length.

    The runs are the standard suite's as protocol v3 declared it (the pilot set v3's LM steps), whichever
    protocol is in force (``pebench.protocol.as_declared``).
    """
    from pebench.plan.experiment import suite_runs
    from pebench.protocol import as_declared

    with as_declared("standard", 3):
        runs = [s for s in suite_runs("standard", ["lm_extrapolation"]) if s.seed in SEEDS]
    if not runs or {s.train.train_max_len for s in runs} != {CONTEXT}:
        raise RuntimeError(f"lm_extrapolation's standard runs no longer train at context {CONTEXT}")
    return [dataclasses.replace(s, experiment=EXPERIMENT, train=dataclasses.replace(s.train, steps=steps),
                                eval=dataclasses.replace(s.eval, lengths=(CONTEXT,)))
            for s in runs]


def folder(steps: int, root: Path = OUT) -> Path:
    """The results folder of the runs at ``steps`` (one per step count: a folder pools a cell's runs as seeds)."""
    return root / f"steps{steps}"


def perplexities(root: Path = OUT):
    """Seed-mean perplexity at the training context per (steps, encoding), and the runs per cell, from the folder
    of every step count run so far under ``root``."""
    import numpy as np
    import pandas as pd

    from pebench.store import load

    folders = [folder(steps, root) for steps in STEPS if (folder(steps, root) / "raw").is_dir()]
    if not folders:
        raise FileNotFoundError(f"no pilot runs under {root}: run 'python pilots/lm_step_pilot.py run --steps "
                                f"{STEPS[0]}' first")
    data = pd.concat([load(path) for path in folders], ignore_index=True)
    data = data[(data["experiment"] == EXPERIMENT) & (data["eval_len"] == CONTEXT)]
    per_run = data.groupby(["steps", "encoding", "seed"], sort=True)["loss"].mean().reset_index()
    per_run["perplexity"] = np.exp(per_run["loss"])
    return per_run.groupby(["steps", "encoding"], sort=True).agg(perplexity=("perplexity", "mean"),
                                                                   runs=("seed", "size")).reset_index()


def choose(table, expected: dict[int, int]) -> dict:
    """The rule's outcome from :func:`perplexities` (``expected``: the number of (encoding) cells per step
    count when complete): each step count's spread (None: not complete), the chosen count (None while
    undecided). The largest count is chosen as soon as every smaller one is complete and outside the rule, since
    no run of its own can change that (amendment 2)."""
    status, chosen = {}, None
    for steps in STEPS:
        cells = table[(table["steps"] == steps) & (table["runs"] == len(SEEDS))]
        if len(cells) < expected.get(steps, 0) or steps not in expected:
            status[steps] = None
            if steps == STEPS[-1]:
                chosen = steps
            break
        spread = float(cells["perplexity"].max() / cells["perplexity"].min())
        status[steps] = spread
        if spread <= MAX_SPREAD:
            chosen = steps
            break
    else:
        chosen = STEPS[-1]
    return {"spreads": status, "steps": chosen}


def reading(table, outcome: dict) -> list:
    """The pilot's reading as page blocks (:mod:`pebench.render.blocks`): the seed-mean perplexity at the training
    context per encoding and step count run, each count's spread (worst over best), and the chosen count."""
    from pebench.render.blocks import bullet_list, text
    from pebench.render.blocks import table as table_block
    from pebench.store.schema import encoding_label, encoding_rank

    counts = sorted(int(steps) for steps in table["steps"].unique())
    cells = {(int(row.steps), row.encoding): row for row in table.itertuples()}
    encodings = sorted(table["encoding"].unique(), key=encoding_rank)
    rows = [[encoding_label(encoding), *(f"{cells[(steps, encoding)].perplexity:.2f}"
                                         + ("" if cells[(steps, encoding)].runs == len(SEEDS) else
                                            f" ({cells[(steps, encoding)].runs} of {len(SEEDS)} seeds)")
                                         if (steps, encoding) in cells else "—" for steps in counts)]
            for encoding in encodings]
    spreads = [f"{steps} steps: spread {spread:.2f}" + (" (within the rule)" if spread <= MAX_SPREAD else "")
               if spread is not None else f"{steps} steps: not complete yet"
               for steps, spread in outcome["spreads"].items()]
    chosen = outcome["steps"]
    spreads = [line if not (line.endswith("not complete yet") and chosen == STEPS[-1]) else
               f"{STEPS[-1]} steps: not run by the pilot (no run of it could change the outcome)" for line in spreads]
    largest = chosen == STEPS[-1] and (outcome["spreads"].get(chosen) is None
                                       or outcome["spreads"][chosen] > MAX_SPREAD)
    verdict = (f"**Chosen: {chosen} steps**" + (", the largest count: no smaller one was within the rule" if largest
                                                else "")
               + "." if chosen else "**No step count chosen yet**: the next count runs once the last is complete.")
    return [text(f"From `results/pilots/lm_steps`, read by `python pilots/lm_step_pilot.py read`: the standard "
                 f"suite's language model (protocol v3's scale), seed-mean perplexity at its training context "
                 f"({CONTEXT} characters; seeds {', '.join(map(str, SEEDS))}) per encoding and step count. The rule: "
                 f"the smallest count whose spread (worst perplexity over best) is at most {MAX_SPREAD:.2f}. "
                 "In-distribution only."),
            table_block(["encoding", *(f"{steps} steps" for steps in counts)], rows),
            bullet_list(spreads), text(verdict)]


def main(argv: list[str] | None = None) -> int:
    """``run`` one step count (resumable) or ``read`` the pilot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the pilot at one step count (resumable)")
    run.add_argument("--steps", type=int, choices=STEPS, required=True)
    run.add_argument("--workers", type=int, default=2)
    sub.add_parser("read", help="apply the rule and write results/pilots/lm_step_pilot.json")
    args = parser.parse_args(argv)
    if args.command == "run":
        from pebench.plan.runner import run_sweep

        print(run_sweep(specs(args.steps), folder(args.steps), executor="processes", workers=args.workers))
        return 0
    table = perplexities()
    cells = {steps: len({s.encoding for s in specs(steps)}) for steps in STEPS}
    outcome = choose(table, cells)
    from pebench.render.blocks import write_blocks

    write_blocks(OUTCOME, reading(table, outcome), table=table.to_dict(orient="records"),
                 spreads={str(k): v for k, v in outcome["spreads"].items()}, steps=outcome["steps"],
                 max_spread=MAX_SPREAD)
    print(table.to_string(index=False))
    print(f"spreads: {outcome['spreads']}; chosen steps: {outcome['steps']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
