"""In-distribution fit pilot of the probe tasks of issue 64 (MQAR, the S5 and A5 word problems) at standard scale.

A pilot (never loaded as an experiment; the tasks are in no suite yet): ``python pilots/probe_pilot.py`` trains
each task of :data:`TASKS` with the standard scale's capable encodings (``pebench.protocol.CAPABLE_ENCODINGS``:
sinusoidal, learned, RoPE), encoder and decoder, seeds :data:`SEEDS`, under the standard scale of protocol v3
(``pebench.protocol.SCALES["standard"]`` as v3 declared it, ``pebench.protocol.as_declared``: depth 3, width 64,
its optimiser and fit criterion), at the training lengths of the length experiment (the task's shortest .. 8), with
the step cap the standard suite's rule gives the task (``pebench.protocol.task_steps``: 1000 for a one-token
answer, the scale's 5000 otherwise). It records whether and when each run fitted its training distribution, beside
the position-free floor at length 8 (the fit columns of ``task_pilots.pilot``). No evaluation beyond the fit check.
Writes ``results/pilots/probe_fit.csv``.

Why: a task joins a suite only if the encodings that can represent it fit it in distribution (rule 6,
capacity before judging); the lead reads this pilot before adding the tasks to a suite and setting caps.
``--encodings`` and ``--seeds`` run a declared subset (the reduced run of the issue's note); ``--archs`` one
architecture (the decoder's runs were made by ``battery_pilot.py``, with its longer cap: the encoder's are made
here, into ``results/pilots/probe_encoder_fit.csv``). ``python pilots/probe_pilot.py read`` reads those encoder
runs by the battery pilot's admission rule, declared before any of them was made (``battery_pilot.py``: a task is
admitted if every capable encoding fits it at every seed; one capable run that did not fit refuses it), into
``results/pilots/probe_encoder_fit.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "probe_fit.csv"
#: the encoder's runs (``--archs encoder``), read by :func:`reading`
ENCODER_OUT = ROOT / "results" / "pilots" / "probe_encoder_fit.csv"
TASKS = ("mqar", "s5_word_problem", "a5_word_problem")
SEEDS = (0,)
TRAIN_MAX_LEN = 8
ID_LENGTHS = (2, 4, 6, 8)
EXPERIMENT = "probe_pilot"


def specs(task_names=TASKS, encodings=None, seeds=SEEDS, archs=("decoder", "encoder")) -> list:
    """The pilot's run specs: every task, architecture (of ``archs``), encoding (default the capable ones) and
    seed."""
    from pebench import tasks
    from pebench.plan.experiment import make_spec
    from pebench.protocol import CAPABLE_ENCODINGS, SCALES, as_declared, task_steps

    out = []
    with as_declared("standard", 3):  # the pilot was declared and run under protocol v3
        for task in task_names:
            shortest = max(1, tasks.get(task).min_length)
            for arch in archs:
                for encoding in encodings or CAPABLE_ENCODINGS:
                    for seed in seeds:
                        out.append(make_spec("standard", EXPERIMENT, {
                            **SCALES["standard"], "task": task, "encoding": encoding, "arch": arch, "seed": seed,
                            "steps": task_steps("standard", arch, task), "train_min_len": shortest,
                            "train_max_len": TRAIN_MAX_LEN, "eval_lengths": [n for n in ID_LENGTHS if n >= shortest],
                        }))
    return out


def reading(out: Path = ENCODER_OUT) -> dict:
    """The reading of the encoder's runs ``out``: the battery pilot's (``battery_pilot.reading``: per task, the
    capable runs fitted, the most steps a fit took, whether the task is admitted), as page blocks and data."""
    from battery_pilot import reading as battery_reading

    return battery_reading(out)


def main(argv=None) -> None:
    """Run the pilots (``--encodings``, ``--seeds``, ``--tasks``, ``--archs`` narrow them) on ``--workers`` and write
    ``--out``; or ``read``: write the reading of the encoder's runs beside them (:func:`reading`)."""
    sys.path.insert(0, str(ROOT / "pilots"))
    from task_pilots import pilot, run_pilots

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["read"]:
        from pebench.render.blocks import write_blocks

        found = reading()
        print(f"reading -> {write_blocks(ENCODER_OUT.with_suffix('.json'), found.pop('blocks'), **found)}")
        return

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=list(TASKS))
    parser.add_argument("--encodings", nargs="*", default=None, help="default: the capable encodings")
    parser.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    parser.add_argument("--archs", nargs="*", default=["decoder", "encoder"], choices=["decoder", "encoder"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    run_pilots(pilot, specs(args.tasks, args.encodings, args.seeds, args.archs), args.workers, args.out)


if __name__ == "__main__":
    main()
