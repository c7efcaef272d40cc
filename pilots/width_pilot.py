"""Width pilot of protocol v3: the depth pilot's rule at width 128. Pre-registration: this docstring and the
constants below were committed before any of this pilot's runs was made (its manifest records the commits that
made its runs).

Why. The depth pilot (``pilots/depth_pilot.py``) declared: "if no depth up to 5 meets the rule, a width pilot
(d=128 at the smallest depth that comes closest) is declared next, before any reference run". Read without its
plateau stop (``pilots/plateau_pilot.py``), depths 2, 3 and 4 each fail the rule (124 of the 144 capable runs
fit at each of them; depth 5 was not yet complete when this was written). This script is that width pilot,
written before depth 5 was decided so that it can start as soon as it is; it runs only if depth 5 fails too.

"Comes closest", which the depth pilot left undefined, is fixed here (:func:`shortfall`): the fewest fits
missing from the rule, counted on the plateau pilot's union (the depth pilot without a plateau stop): for each
capable encoding and architecture, the runs short of 22 of 24, plus the NoPE decoder's unfitted seeds on copy;
the smaller depth on a tie. At depths 2, 3 and 4 this is 11, 8 and 8: depth 2 misses the NoPE condition and
the most capable runs. The depth pilot's fallback (the most capable fits, the smaller on a tie) would give
depth 2, where the NoPE decoder fits copy on no seed, and, by the Kazemnejad scale check, on none at widths
64, 128 or 256 either: a width pilot there could not meet the rule, so "closest" counts every condition of the
rule. This definition was chosen after seeing the in-distribution fits of depths 2-4 and nothing else (no
model of these pilots was evaluated out of distribution).

What runs (:func:`specs`): at the closest depth, the depth pilot's rule runs (NoPE, sinusoidal, learned, RoPE;
the 12 core tasks; encoder and decoder; seeds 0 and 1) with ``d_model`` 128 (4 heads of 32) instead of 64 and
nothing else changed except the plateau stop, which is off (``fit_patience = 0``), as the plateau pilot decided
for the v3 reference (re-runs fitted that the stop had ended). Cap 5000 steps; in-distribution evaluation only.

The rule (:func:`choose`):

1. If width 128 meets the depth pilot's rule at that depth (``depth_pilot.meets_rule``), the standard scale is
   that depth at width 128, with the depth pilot's step caps (``depth_pilot.step_caps``) from these runs.
2. Otherwise the standard scale is the candidate with the smallest shortfall among each depth at width 64
   (the plateau pilot's union) and this depth at width 128; on a tie, width 64 before 128, then the smaller
   depth (the cheaper model). Its caps come from its own runs. No further scale pilot follows: the note says
   what meeting the rule would take.

Amendment (committed with 107 of the 192 runs made, every decoder run and 11 encoder runs, before the
remaining ones; no rule, threshold or run changed): the rule is applied as soon as no run still to be made can
change its outcome, instead of only once all are in. The test is conservative: every run not yet made is
counted as fitted (:func:`best_case_shortfall`); if width 128 then still falls short of the rule and still
ranks after the best width-64 candidate (ties go to width 64), the outcome is the one the complete pilot would
give, and its caps come from the width-64 runs, which are complete. Why: the decoder runs alone put width 128
at least 13 fits short against 8 at depths 3 and 4 at width 64, so the remaining 85 encoder runs (about two
hours on two cores) could only add to that shortfall; those hours go to the v3 reference instead. The outcome
records how many runs were made and the best case it was decided on.

Usage (from a clean checkout holding the depth and plateau pilots' results; runs go to
``results/pilots/width``)::

    python pilots/width_pilot.py run --workers 2     # resumable
    python pilots/width_pilot.py read                # results/pilots/width_pilot.json and the rule's outcome
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import depth_pilot  # noqa: E402  (the rule and the run specs this pilot repeats at another width)
import plateau_pilot  # noqa: E402  (the depth pilot's runs without a plateau stop)

ROOT = depth_pilot.ROOT
OUT = ROOT / "results" / "pilots" / "width"
OUTCOME = ROOT / "results" / "pilots" / "width_pilot.json"
EXPERIMENT = "width_pilot"
WIDTH = 128


def shortfall(runs, depth: int) -> int:
    """Fits missing from the depth pilot's rule at ``depth`` in ``runs`` (run-level rows with ``n_layers``,
    ``arch``, ``encoding``, ``task``, ``fitted``): per capable encoding and architecture the runs short of
    ``depth_pilot.MIN_CAPABLE_FITS``, plus the NoPE decoder's unfitted seeds on copy."""
    at = runs[runs["n_layers"] == depth]
    missing = 0
    for encoding in depth_pilot.CAPABLE:
        for arch in ("decoder", "encoder"):
            fits = int(at[(at["encoding"] == encoding) & (at["arch"] == arch)]["fitted"].sum())
            missing += max(0, depth_pilot.MIN_CAPABLE_FITS - fits)
    nope = at[(at["encoding"] == "none") & (at["arch"] == "decoder") & (at["task"] == "copy")]
    return missing + len(depth_pilot.SEEDS) - int(nope["fitted"].sum())


def best_case_shortfall(runs, depth: int) -> int:
    """The smallest :func:`shortfall` at ``depth`` the pilot can still end with: ``runs`` (run-level rows of
    this pilot) with every run of :func:`specs` not among them counted as fitted."""
    import pandas as pd

    at = runs[runs["n_layers"] == depth]
    done = set(zip(at["arch"], at["encoding"], at["task"], at["seed"].astype(int), strict=True))  # one run a key
    pending = pd.DataFrame([dict(run_id=s.run_id, n_layers=depth, arch=s.arch, encoding=s.encoding, task=s.task,
                                 seed=s.seed, fitted=True) for s in specs(depth)
                            if (s.arch, s.encoding, s.task, s.seed) not in done],
                           columns=["run_id", "n_layers", "arch", "encoding", "task", "seed", "fitted"])
    return shortfall(pd.concat([runs[["run_id", "n_layers", "arch", "encoding", "task", "seed", "fitted"]], pending],
                               ignore_index=True), depth)


def closest_depth(merged=None) -> int:
    """The depth at width 64 with the smallest :func:`shortfall` on the plateau pilot's union (``merged``:
    ``plateau_pilot.union()`` when already computed; the smaller depth on a tie). Raises RuntimeError while a
    depth is undecided there, or when one meets the rule (no width pilot then)."""
    merged = plateau_pilot.union() if merged is None else merged
    runs = merged[0]
    outcome = plateau_pilot.choose(merged)
    undecided = [d for d, (ok, _) in outcome["status"].items() if ok is None]
    if undecided:
        raise RuntimeError(f"depth(s) {undecided} not yet decided by the plateau pilot: run it to the end first")
    if any(ok for ok, _ in outcome["status"].values()):
        raise RuntimeError(f"depth {outcome['depth']} meets the rule: the width pilot does not run")
    return min(depth_pilot.DEPTHS, key=lambda depth: (shortfall(runs, depth), depth))


def specs(depth: int | None = None) -> list:
    """The pilot's runs: the depth pilot's rule runs at ``depth`` (default :func:`closest_depth`) at width
    :data:`WIDTH`, without a plateau stop."""
    depth = closest_depth() if depth is None else depth
    return [dataclasses.replace(spec, experiment=EXPERIMENT, d_model=WIDTH,
                                train=dataclasses.replace(spec.train, fit_patience=0))
            for spec in depth_pilot.specs([depth], "rule")]


def width_runs(depth: int):
    """The pilot's runs (run-level rows, ``fitted`` as bools), or an empty frame before any."""
    import pandas as pd

    from pebench.store import load

    if not (OUT / "raw").is_dir():
        return pd.DataFrame(columns=["run_id", "n_layers", "arch", "encoding", "task", "seed", "fitted",
                                     "steps_to_fit"])
    runs = load(OUT).drop_duplicates("run_id")
    runs = runs[(runs["experiment"] == EXPERIMENT) & (runs["n_layers"] == depth)]
    return runs.assign(fitted=runs["fitted"].astype(str).str.lower().eq("true"))


def choose() -> dict:
    """The rule's outcome (see the module doc): the closest depth, whether width 128 meets the rule there, each
    candidate's shortfall, and the chosen (depth, width) with its step caps; ``chosen`` is None while the
    pilot's runs are not complete and the runs still to be made could change it (the amendment in the module
    doc). ``runs_made`` and ``runs_expected`` count this pilot's runs; when it is decided before they are all
    in, ``meets`` is False, the width-128 shortfall is :func:`best_case_shortfall` and ``settled_early`` is
    True."""
    merged = plateau_pilot.union()  # the depth and plateau pilots' run files are read once
    union = merged[0]
    depth = closest_depth(merged)
    wide = width_runs(depth)
    meets, why = depth_pilot.meets_rule(wide, depth)
    candidates = {(d, 64): shortfall(union, d) for d in depth_pilot.DEPTHS}
    closest = min(candidates, key=lambda c: (candidates[c], c[0]))
    counts = {"runs_made": len(wide), "runs_expected": len(specs(depth)), "settled_early": False}
    if meets is None:
        best = best_case_shortfall(wide, depth)
        if best == 0 or best < candidates[closest]:  # a run still to be made could change the outcome
            return {"depth": depth, "meets": None, "why": why, "shortfalls": candidates, "chosen": None,
                    "caps": None, **counts}
        candidates[(depth, WIDTH)] = best
        why = f"{why}; with every run still to be made counted as fitted, at least {best} fits short"
        return {"depth": depth, "meets": False, "why": why, "shortfalls": candidates, "chosen": closest,
                "caps": depth_pilot.step_caps(union, closest[0]), **counts, "settled_early": True}
    candidates[(depth, WIDTH)] = shortfall(wide, depth)
    if meets:
        chosen = (depth, WIDTH)
    else:
        chosen = min(candidates, key=lambda c: (candidates[c], c[1], c[0]))
    source = wide if chosen[1] == WIDTH else union
    return {"depth": depth, "meets": meets, "why": why, "shortfalls": candidates, "chosen": chosen,
            "caps": depth_pilot.step_caps(source, chosen[0]), **counts}


def reading(outcome: dict, wide) -> list:
    """The pilot's reading as page blocks (:mod:`pebench.render.blocks`): width 128's fits per architecture and rule
    encoding at the closest depth, each candidate's shortfall, the chosen scale and its step caps."""
    from pebench.render.blocks import bullet_list, text
    from pebench.render.blocks import table as table_block
    from pebench.store.schema import encoding_label

    per_cell = len(depth_pilot.SEEDS) * len({s.task for s in specs(outcome["depth"])})
    rows = []
    for arch in ("decoder", "encoder"):
        cells = []
        for encoding in depth_pilot.RULE_ENCODINGS:
            runs = wide[(wide["arch"] == arch) & (wide["encoding"] == encoding)]
            made = f" ({len(runs)} made)" if len(runs) < per_cell else ""
            cells.append(f"{int(runs['fitted'].sum())} of {per_cell}{made}")
        rows.append([arch, *cells])
    early = outcome["settled_early"]
    shortfalls = [f"depth {d}, width {w}: {'at least ' if early and w == WIDTH else ''}{n} fits short of the rule"
                  for (d, w), n in sorted(outcome["shortfalls"].items())]
    made = (f"{outcome['runs_made']} of its {outcome['runs_expected']} runs were made, every decoder run among "
            "them. The rule was applied before the rest, under the amendment in the script's docstring: even with "
            "every run still to be made counted as fitted, width 128 falls short of the rule and ranks after "
            "width 64." if early else f"All {outcome['runs_expected']} runs were made.")
    chosen = outcome["chosen"]
    verdict = {None: "not decided yet", True: "meets the rule", False: "fails the rule"}[outcome["meets"]]
    blocks = [text(f"From `results/pilots/width`, read by `python pilots/width_pilot.py read`: runs fitted per "
                   f"architecture and rule encoding at depth {outcome['depth']}, width {WIDTH} (in-distribution "
                   f"only). {made} Width {WIDTH} there {verdict} ({outcome['why']})."),
              table_block(["arch", *(encoding_label(e) for e in depth_pilot.RULE_ENCODINGS)], rows),
              bullet_list(shortfalls),
              text(f"**Chosen scale: depth {chosen[0]}, width {chosen[1]}**, the fewest fits short of the rule "
                   "(width 64 before 128 on a tie, then the smaller depth); its step caps come from its own runs. "
                   "No scale meets the rule, so the v3 reference runs where the capable encodings come closest."
                   if chosen else "**No scale chosen yet**: the rule decides once no run still to be made can "
                   "change its outcome.")]
    if outcome["caps"]:
        blocks.append(table_block(["arch", "task", "step cap"], [[a, f"`{t}`", str(c)]
                                                                 for (a, t), c in sorted(outcome["caps"].items())]))
    return blocks


def main(argv: list[str] | None = None) -> int:
    """``run`` the pilot (resumable) or ``read`` it: apply the rule and write :data:`OUTCOME`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the width pilot at the closest depth (resumable)")
    run.add_argument("--workers", type=int, default=2)
    sub.add_parser("read", help="apply the rule and write results/pilots/width_pilot.json")
    args = parser.parse_args(argv)
    if args.command == "run":
        from pebench.plan.runner import run_sweep

        print(run_sweep(specs(), OUT, executor="processes", workers=args.workers))
        return 0
    from pebench.render.blocks import write_blocks

    outcome = choose()
    wide = width_runs(outcome["depth"])
    record = {**outcome, "shortfalls": [{"depth": d, "width": w, "missing": n}
                                        for (d, w), n in sorted(outcome["shortfalls"].items())],
              "chosen": list(outcome["chosen"]) if outcome["chosen"] else None,
              "caps": [{"arch": a, "task": t, "cap": c} for (a, t), c in sorted((outcome["caps"] or {}).items())]}
    write_blocks(OUTCOME, reading(outcome, wide), **record)
    verdict = {None: "undecided", True: "meets the rule", False: "fails the rule"}[outcome["meets"]]
    print(f"closest depth {outcome['depth']}; width {WIDTH} there: {verdict} ({outcome['why']}); "
          f"{outcome['runs_made']} of {outcome['runs_expected']} runs made"
          + (", decided before the rest: none of them can change the outcome" if outcome["settled_early"] else ""))
    for (d, w), n in sorted(outcome["shortfalls"].items()):
        bound = "at least " if outcome["settled_early"] and w == WIDTH else ""
        print(f"  depth {d} width {w}: {bound}{n} fits short of the rule")
    print(f"chosen scale (depth, width): {outcome['chosen']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
