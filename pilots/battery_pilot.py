"""In-distribution fit pilot of the candidate tasks of protocol v4's battery (issue 66) at standard scale.

A pilot (never loaded as an experiment): ``python pilots/battery_pilot.py`` trains each candidate task of
:data:`CANDIDATES` with the capable encodings (``pebench.protocol.CAPABLE_ENCODINGS``: sinusoidal, learned, RoPE),
in the architectures of ``--archs`` (default the decoder, whose board needs ten or more order-dependent tasks),
seeds :data:`SEEDS`, at the standard scale of protocol v3 (``pebench.protocol.SCALES["standard"]`` as v3 declared
it, ``pebench.protocol.as_declared``: depth 3, width 64, its optimiser and fit criterion, stopping at fit) and the
length experiment's training lengths (the task's shortest .. 8), with one generous step cap for every task
(:data:`PILOT_CAP`) in place of the suite's caps, so that the steps each run took to fit can set v4's caps. It
records whether and when each run fitted its training distribution, its held-out accuracy curve, and the
position-free floor at length 8. No evaluation beyond the fit check: nothing here can depend on out-of-distribution
results (rules 2 and 6). Writes ``results/pilots/battery_fit.csv`` after every run; a stopped pilot resumes at the
same commit.

Why: a task joins v4's battery only if the encodings that can represent it fit it in distribution at the
scale (rule 6, capacity before judging). The reading (``python pilots/battery_pilot.py read``, declared here
before any pilot row was read):

- **Admission**: a candidate joins the battery of an architecture if, at every pilot seed, every capable
  encoding fitted it within :data:`PILOT_CAP` steps (all of their runs: the battery must be one the capable
  encodings learn, or a task that one cannot learn would leave the board).
- A candidate one of whose capable runs did not fit is refused at once (the rule above cannot admit it), so
  its runs at later seeds are not made (``--tasks`` names the candidates still open; added to this docstring
  after seed 0's rows, a saving of runs, not a change of the rule).
- **Its cap** is protocol v3's rule: twice the most steps a capable run took to fit it, rounded up to 500,
  within 1000-5000 (:func:`cap_of`); protocol v4's extension then carries a run still improving at its cap
  on to its ceiling (``pebench.config.TrainConfig.extend_to``).
- Written to ``results/pilots/battery_fit.json``: the table per task and architecture, and the admitted tasks
  with their caps, which ``pebench.protocol`` declares for v4 (a test holds the two equal).

The pilot's cosine schedule spans its 8000 steps, a reference run's its cap, so a run of the reference may fit
a few hundred steps earlier or later than its pilot; the factor two of the cap rule and the extension absorb it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "battery_fit.csv"
#: the registered order-dependent tasks that protocol v3's core battery lacks (``Task.order_dependent``;
#: ``duplicate_string`` left out: it is ``duplicate`` on strings, already in the battery; ``charlm`` is the LM)
CANDIDATES = (
    "associative_recall", "mqar", "flip_flop", "passkey", "counting", "stack_manipulation", "addition",
    "binary_addition", "binary_multiplication", "compute_sqrt", "modular_arithmetic",
    "modular_arithmetic_brackets", "solve_equation", "s5_word_problem", "a5_word_problem",
)
SEEDS = (0, 1)
#: one step cap for every candidate: v3's largest cap (5000) plus the headroom an extension may give
PILOT_CAP = 8000
TRAIN_MAX_LEN = 8
ID_LENGTHS = (2, 4, 6, 8)
EXPERIMENT = "battery_pilot"


def specs(task_names=CANDIDATES, archs=("decoder",), encodings=None, seeds=SEEDS) -> list:
    """The pilot's run specs: every task, architecture, encoding (default the capable ones) and seed."""
    from pebench import tasks
    from pebench.plan.experiment import make_spec
    from pebench.protocol import CAPABLE_ENCODINGS, SCALES, as_declared

    out = []
    with as_declared("standard", 3):  # the pilot was declared and run under protocol v3
        for seed in seeds:  # seed-major, so that a pilot stopped part way has every task at its first seeds
            for task in task_names:
                shortest = max(1, tasks.get(task).min_length)
                for arch in archs:
                    for encoding in encodings or CAPABLE_ENCODINGS:
                        out.append(make_spec("standard", EXPERIMENT, {
                            **SCALES["standard"], "task": task, "encoding": encoding, "arch": arch, "seed": seed,
                            "steps": PILOT_CAP, "train_min_len": shortest, "train_max_len": TRAIN_MAX_LEN,
                            "eval_lengths": [n for n in ID_LENGTHS if n >= shortest],
                        }))
    return out


def cap_of(most_steps: int) -> int:
    """Protocol v3's cap rule: twice ``most_steps`` rounded up to 500, within 1000-5000."""
    return int(min(5000, max(1000, -(-2 * most_steps // 500) * 500)))


def reading(out: Path = OUT) -> dict:
    """The pilot's reading of its rows ``out`` (the module docstring's rule): per task and architecture the
    capable runs made and fitted, the most steps a fit took, whether the task is admitted and its cap; as
    page blocks and as data (``admitted``: ``{arch: {task: cap}}``)."""
    import pandas as pd

    from pebench.protocol import CAPABLE_ENCODINGS
    from pebench.render.blocks import table, text

    rows = pd.read_csv(out)
    rows = rows[rows["encoding"].isin(CAPABLE_ENCODINGS)]
    expected = len(CAPABLE_ENCODINGS) * len(SEEDS)
    lines, admitted, pending = [], {}, []
    for (arch, task), part in rows.groupby(["arch", "task"], sort=True):
        fitted = part["fitted"].astype(bool)
        most = int(part.loc[fitted, "steps_to_fit"].max()) if fitted.any() else None
        complete = len(part) == expected
        admit = complete and bool(fitted.all())
        refused = not fitted.all()  # one capable run that did not fit settles it: its other runs need not be made
        if admit:
            admitted.setdefault(arch, {})[task] = cap_of(most)
        elif not refused:
            pending.append(f"{arch} {task}")
        per_encoding = ", ".join(f"{encoding} {int(group['fitted'].astype(bool).sum())}/{len(group)}"
                                 for encoding, group in part.groupby("encoding", sort=True))
        lines.append([arch, task, per_encoding, most if most is not None else "-",
                      f"{part['fit_token_acc'].min():.3f}", f"{part['floor_token_acc'].iloc[0]:.3f}",
                      "yes" if admit else "no" if refused else "pending",
                      admitted.get(arch, {}).get(task, "-")])
    made = sorted(set(rows["git_sha"].astype(str)))
    blocks = [
        text(f"{len(rows)} capable runs of {rows['task'].nunique()} candidate tasks (commit "
             f"{', '.join(sha[:7] for sha in made)}, clean: {not rows['git_dirty'].astype(bool).any()}); admitted: "
             + ("; ".join(f"{arch} {len(tasks)} ({', '.join(sorted(tasks))})" for arch, tasks in admitted.items())
                or "none yet")
             + (f"; not complete (every capable encoding on every seed), so not yet judged: {', '.join(pending)}"
                if pending else "") + "."),
        table(["arch", "task", "fitted runs", "most steps to fit", "lowest held-out acc", "floor (length 8)",
               "admitted", "cap"], lines),
    ]
    return {"blocks": blocks, "admitted": admitted, "pending": pending}


def main(argv=None) -> None:
    """Run the pilots (``--tasks``, ``--archs``, ``--encodings``, ``--seeds`` narrow them) on ``--workers``
    and write ``--out``; or ``read``: write the reading of :data:`OUT` beside it."""
    sys.path.insert(0, str(ROOT / "pilots"))
    from task_pilots import pilot, run_pilots

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["read"]:
        from pebench.render.blocks import write_blocks

        found = reading()
        print(f"reading -> {write_blocks(OUT.with_suffix('.json'), found.pop('blocks'), **found)}")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=list(CANDIDATES))
    parser.add_argument("--archs", nargs="*", default=["decoder"], choices=["decoder", "encoder"])
    parser.add_argument("--encodings", nargs="*", default=None, help="default: the capable encodings")
    parser.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    run_pilots(pilot, specs(args.tasks, args.archs, args.encodings, args.seeds), args.workers, args.out)


if __name__ == "__main__":
    main()
