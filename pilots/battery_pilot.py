"""In-distribution fit pilot of the candidate tasks of protocol v4's battery (issue 66) at standard scale.

A pilot (never loaded as an experiment): ``python pilots/battery_pilot.py`` trains each candidate task of
:data:`CANDIDATES` with the capable encodings (``pebench.protocol.CAPABLE_ENCODINGS``: sinusoidal, learned,
RoPE), in the architectures of ``--archs`` (default the decoder, whose board needs ten or more order-dependent
tasks), seeds :data:`SEEDS`, at the standard scale of protocol v3 (``pebench.protocol.SCALES["standard"]``:
depth 3, width 64, its optimiser and fit criterion, stopping at fit) and the length experiment's training
lengths (the task's shortest .. 8), with one generous step cap for every task (:data:`PILOT_CAP`) in place of
the suite's caps, so that the steps each run took to fit can set v4's caps. It records whether and when each
run fitted its training distribution, its held-out accuracy curve, and the position-free floor at length 8.
No evaluation beyond the fit check: nothing here can depend on out-of-distribution results (rules 2 and 6).
Writes ``results/pilots/battery_fit.csv`` after every run; a stopped pilot resumes at the same commit.

Why: a task joins v4's battery only if the encodings that can represent it fit it in distribution at the
scale (rule 6, capacity before judging). The admission rule and the caps read from these rows are declared on
the protocol page before they are applied.
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
    from pebench.protocol import CAPABLE_ENCODINGS, SCALES

    out = []
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


def main(argv=None) -> None:
    """Run the pilots (``--tasks``, ``--archs``, ``--encodings``, ``--seeds`` narrow them) on ``--workers``
    and write ``--out``."""
    sys.path.insert(0, str(ROOT / "pilots"))
    from task_pilots import pilot, run_pilots

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
