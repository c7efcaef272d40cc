"""Depth pilot of protocol v3: the depth and step caps at which the encodings that can represent the core
battery learn it in distribution. Pre-registration: this docstring and the constants below were committed
before any of the pilot's runs was made (the pilot's manifest records the commits that made its runs).

Why (docs: protocol, "Protocol v3"): under protocol v2 (2 layers, d=64) half of the length runs of the
standard suite did not fit, so its leaderboard mostly ranked fit rates. The Kazemnejad scale check found
that depth, not width, separates fitting from not fitting (NoPE fits copy in 0 of 3 seeds at every 2-layer
width and 3 of 3 at every 4-layer width). That finding is this pilot's prior.

What runs (:func:`specs`):

- depths :data:`DEPTHS` at width 64 (4 heads), every encoding the extended suite compares (every registered
  encoding; randomized positions around RoPE; CoPE on decoders only), the 12 tasks of the core battery
  (``experiments/length_extrapolation.py: CORE``), encoder and decoder, seeds :data:`SEEDS`;
- the v3 protocol: training lengths 1..8 (from the task's shortest), the v3 fit criterion
  (``pebench.protocol.FIT_V3``: every training length, 512 held-out examples each, held-out inputs never
  trained on; threshold 0.99, checked every 100 steps), the standard optimiser (AdamW, lr 3e-3, batch 64,
  100 warmup steps), the plateau stop of 1000 steps, and one step cap for every task, :data:`PILOT_CAP`;
- evaluation at in-distribution lengths only (:data:`ID_LENGTHS`), original inputs only: the pilot reads
  in-distribution fit and nothing else, and no out-of-distribution number of these models exists.

Width is not a variable: if no depth up to 5 meets the rule, a width pilot (d=128 at the smallest depth
that comes closest) is declared next, before any reference run.

The rule (:func:`choose`), applied to the pilot's fitted flags only:

1. **Depth**: the smallest depth at which sinusoidal, learned and RoPE (:data:`CAPABLE`) each fit at least
   :data:`MIN_CAPABLE_FITS` of their 24 core runs (12 tasks x 2 seeds: 11 of 12 tasks' worth) in each
   architecture, and a NoPE decoder fits copy on both seeds. Depths are run in increasing order with the
   rule's encodings first; a depth is decided once its rule runs are complete. If no depth meets it, the
   depth with the most fitted capable runs (the smaller on a tie), and the note says what it would take.
2. **Step caps**, per (arch, task), the same for every encoding: twice the largest ``steps_to_fit`` of the
   capable encodings' fitted runs at the chosen depth, rounded up to a multiple of 500, at least
   :data:`MIN_CAP` and at most :data:`PILOT_CAP`; :data:`PILOT_CAP` where none of them fitted.

The other encodings' runs at the chosen depth are capability data (which encodings fit what), read after the
rule has been applied; they change neither the depth nor the caps.

Usage (from a clean checkout; the runs go to ``results/pilots/depth``, resumable)::

    python pilots/depth_pilot.py run --depth 2 --encodings rule --workers 2
    python pilots/depth_pilot.py read          # the fit table (results/pilots/depth_pilot.csv) and the rule

Each depth has its own results folder, ``results/pilots/depth/layers<N>`` (a folder holds one configuration
per cell, and depth is not part of a cell).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "pilots" / "depth"
TABLE = ROOT / "results" / "pilots" / "depth_pilot.csv"
#: the rule's outcome as ``read`` last computed it (the protocol page renders it)
OUTCOME = ROOT / "results" / "pilots" / "depth_pilot.json"

DEPTHS = (2, 3, 4, 5)
SEEDS = (0, 1)
#: the encodings the rule reads (they can represent every order-dependent task of the battery)
CAPABLE = ("sinusoidal", "learned", "rope")
#: the encodings run first at each depth: the rule's, and NoPE for its copy condition
RULE_ENCODINGS = ("none", *CAPABLE)
#: fitted core runs each capable encoding needs per architecture (of 12 tasks x 2 seeds)
MIN_CAPABLE_FITS = 22
#: one step cap for every task in the pilot, and the most the rule may declare
PILOT_CAP = 5000
#: the least step cap the rule declares
MIN_CAP = 1000
ID_LENGTHS = [2, 4, 6, 8]
TRAIN_MAX_LEN = 8
EXPERIMENT = "depth_pilot"


def specs(depths=DEPTHS, which: str = "all") -> list:
    """The pilot's run specs at ``depths`` for ``which`` encodings: ``rule`` (:data:`RULE_ENCODINGS`),
    ``other`` (the rest) or ``all``; depth by depth, in the order of :data:`DEPTHS`."""
    from pebench import encodings, tasks
    from pebench.plan.experiment import make_spec
    from pebench.protocol import COMPARED_ENCODINGS, FIT_V3, NEWER_ENCODINGS

    sys.path.insert(0, str(ROOT / "experiments"))
    from length_extrapolation import CORE

    compared = COMPARED_ENCODINGS + NEWER_ENCODINGS  # the extended suite's encodings when the pilot was declared
    chosen = {"rule": [e for e in compared if e in RULE_ENCODINGS],
              "other": [e for e in compared if e not in RULE_ENCODINGS], "all": list(compared)}[which]
    out = []
    for depth in depths:
        for arch in ("decoder", "encoder"):
            for task in CORE:
                for encoding in chosen:
                    if arch == "encoder" and encodings.meta(encoding.partition(":")[0])["causal_only"]:
                        continue
                    for seed in SEEDS:
                        out.append(make_spec("standard", EXPERIMENT, {
                            "task": task, "encoding": encoding, "arch": arch, "seed": seed, "protocol": 3,
                            "d_model": 64, "n_layers": depth, "n_heads": 4,
                            "steps": PILOT_CAP, "batch_size": 64, "warmup_steps": 100, "lr": 3e-3,
                            "fit_every": 100, "stop_at_fit": True, "fit_patience": 1000, **FIT_V3,
                            "train_min_len": max(1, tasks.get(task).min_length), "train_max_len": TRAIN_MAX_LEN,
                            "eval_lengths": [n for n in ID_LENGTHS if n >= tasks.get(task).min_length],
                            "eval_n_examples": 256,
                        }))
    return out


def depth_folder(depth: int, folder: Path = OUT) -> Path:
    """The results folder of the pilot's runs at ``depth``."""
    return folder / f"layers{depth}"


def fit_table(folder: Path = OUT):
    """One row per (depth, arch, encoding): runs, fitted runs, and the median and largest ``steps_to_fit``
    of the fitted ones; read from the pilot's run files of every depth (fitted flags and steps only)."""
    import pandas as pd

    from pebench.store import load

    folders = [depth_folder(depth, folder) for depth in DEPTHS if (depth_folder(depth, folder) / "raw").is_dir()]
    if not folders:
        raise FileNotFoundError(f"no pilot runs under {folder}: run 'python pilots/depth_pilot.py run' first")
    data = pd.concat([load(path) for path in folders], ignore_index=True)
    runs = data.drop_duplicates("run_id")
    runs = runs[runs["experiment"] == EXPERIMENT]
    fitted = runs["fitted"].astype(str).str.lower().eq("true")
    table = (runs.assign(fitted=fitted)
             .groupby(["n_layers", "arch", "encoding"], sort=True)
             .agg(runs=("run_id", "size"), fitted=("fitted", "sum"),
                  median_steps_to_fit=("steps_to_fit", "median"), max_steps_to_fit=("steps_to_fit", "max"))
             .reset_index())
    return runs.assign(fitted=fitted), table


def meets_rule(runs, depth: int) -> tuple[bool | None, str]:
    """Whether ``depth`` meets the rule's depth condition (None: its rule runs are not all in yet), and why."""
    from pebench.store.schema import encoding_label

    at = runs[runs["n_layers"] == depth]
    expected = len(specs([depth], "rule"))
    have = at[at["encoding"].isin(RULE_ENCODINGS)]
    if len(have) < expected:
        return None, f"{len(have)} of {expected} rule runs done"
    reasons = []
    for encoding in CAPABLE:
        for arch in ("decoder", "encoder"):
            n = int(have[(have["encoding"] == encoding) & (have["arch"] == arch)]["fitted"].sum())
            if n < MIN_CAPABLE_FITS:
                reasons.append(f"{encoding_label(encoding)} {arch} fits {n} of 24")
    nope = have[(have["encoding"] == "none") & (have["arch"] == "decoder") & (have["task"] == "copy")]
    if int(nope["fitted"].sum()) < len(SEEDS):
        reasons.append(f"NoPE decoder fits copy on {int(nope['fitted'].sum())} of {len(SEEDS)} seeds")
    return not reasons, "; ".join(reasons) or "meets the rule"


def step_caps(runs, depth: int) -> dict[tuple[str, str], int]:
    """The rule's step cap per (arch, task) at ``depth`` (see the module doc)."""
    at = runs[(runs["n_layers"] == depth) & runs["encoding"].isin(CAPABLE)]
    caps = {}
    for (arch, task), cell in at.groupby(["arch", "task"]):
        steps = cell.loc[cell["fitted"], "steps_to_fit"]
        if steps.empty:
            caps[(arch, task)] = PILOT_CAP
            continue
        cap = 500 * math.ceil(2 * float(steps.max()) / 500)
        caps[(arch, task)] = min(PILOT_CAP, max(MIN_CAP, cap))
    return caps


def choose(folder: Path = OUT) -> dict:
    """The rule's outcome from the pilot's runs: each depth's status, the chosen depth and its step caps
    (``None`` while the depths the decision needs are not complete)."""
    runs, _ = fit_table(folder)
    status = {depth: meets_rule(runs, depth) for depth in DEPTHS}
    chosen = None
    for depth in DEPTHS:
        ok, _why = status[depth]
        if ok is None:
            break
        if ok:
            chosen = depth
            break
    else:  # every depth decided and none meets the rule: the one with the most capable fits
        capable = runs[runs["encoding"].isin(CAPABLE)]
        chosen = int(capable.groupby("n_layers")["fitted"].sum().sort_index(ascending=True).idxmax())
    return {"status": status, "depth": chosen, "caps": step_caps(runs, chosen) if chosen else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the pilot's runs at one depth (resumable)")
    run.add_argument("--depth", type=int, choices=DEPTHS, required=True)
    run.add_argument("--encodings", choices=("rule", "other", "all"), default="rule")
    run.add_argument("--workers", type=int, default=2)
    sub.add_parser("read", help="write the fit table and print the rule's outcome")
    args = parser.parse_args(argv)
    if args.command == "run":
        from pebench.plan.runner import run_sweep

        summary = run_sweep(specs([args.depth], args.encodings), depth_folder(args.depth), executor="processes",
                            workers=args.workers)
        print(summary)
        return 0
    runs, table = fit_table()
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(TABLE, index=False)
    print(table.to_string(index=False))
    outcome = choose()
    status, caps = outcome_record(outcome)
    OUTCOME.write_text(json.dumps({"depths": status, "chosen_depth": outcome["depth"], "caps": caps,
                                   "runs": int(len(runs))}, indent=1) + "\n")
    print_outcome(status, f"chosen depth: {outcome['depth']}", caps)
    return 0


def outcome_record(outcome: dict) -> tuple[dict, list]:
    """A rule outcome (:func:`choose`'s ``status`` and ``caps``) as JSON: each depth's status by depth, and the
    step caps as rows."""
    status = {str(depth): {"decided": ok is not None, "meets": bool(ok), "why": why}
              for depth, (ok, why) in outcome["status"].items()}
    caps = [{"arch": arch, "task": task, "cap": cap} for (arch, task), cap in sorted((outcome["caps"] or {}).items())]
    return status, caps


def print_outcome(status: dict, chosen: str, caps: list) -> None:
    """Print an :func:`outcome_record`: each depth's verdict, the ``chosen`` line, then the step caps."""
    for depth, state in status.items():
        print(f"depth {depth}: {'meets' if state['meets'] else 'fails' if state['decided'] else 'undecided'} "
              f"({state['why']})")
    print(chosen)
    for cap in caps:
        print(f"  cap {cap['arch']} {cap['task']}: {cap['cap']}")


if __name__ == "__main__":
    raise SystemExit(main())
