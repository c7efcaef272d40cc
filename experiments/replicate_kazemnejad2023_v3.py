"""The Kazemnejad et al. 2023 replication re-made at protocol v3's scale (issue 36, item 9): the replication of
``experiments/replicate_kazemnejad2023.py`` with the standard suite's v3 model and fit criterion, scored exactly
as that replication pre-registered.

Why: the replication ran at protocol v2's standard model (2 layers of width 64, the fit checked at the longest
training length only, a plateau stop), where NoPE, the paper's best encoding, fitted copy on no seed; its scale
check found depth, not width, to be what NoPE lacked (NoPE fitted copy at 4 layers and at no 2-layer width).
Protocol v3 took its depth from declared in-distribution pilots (depth 3 at width 64; ``pilots/``, the
Pilots page), so the replication is re-made there.

Pre-registered (committed before any of its runs was made):

- **Kept, read from the replication's script**: its tasks, training and evaluation lengths, metric (greedy exact
  match beyond length 20), encodings (the paper's five and every other one the suite compares), seeds (0, 1, 2),
  step caps per task, and its scores: Kendall's tau with Figure 1's MRR over the paper's five encodings with a 95%
  bootstrap interval over seeds, and the sign of each of Figure 1's 10 pairwise orders (Holm over the 10).
- **Changed, and only this**: depth, width, heads and the fit criterion are the standard suite's under protocol
  v3 (:data:`pebench.protocol.SCALES`, ``standard``: 3 layers of width 64; the fit checked every 100 steps at
  every training length on 512 held-out inputs never trained on; no plateau stop). The replication's step caps
  are kept rather than v3's standard caps, which the pilots sized for training lengths up to 8, not 20.
- **Read beside the v2 replication**, in its own section: a difference between the two taus is read only where
  their intervals do not overlap; otherwise it is unresolved.
"""

import functools
import sys

from pebench.analysis import replication
from pebench.plan.experiment import replication_experiment
from pebench.protocol import FIT_V3, STANDARD_V3

SUITE = "replication"
#: the replication this re-makes
REMAKES = "kazemnejad2023"
NAME = f"{REMAKES}_v3"
#: what the re-make takes from the standard suite's v3 scale; everything else is the replication's
V3_KEYS = ("d_model", "n_layers", "n_heads", "fit_every", "stop_at_fit", "fit_patience", "protocol", *FIT_V3)
#: the fit criterion in words, for the reading of what the order rests on
FIT_CHECK = ("held-out token accuracy >= 0.99 at every training length, on 512 held-out inputs never trained on, "
             "protocol v3")


def _replication():
    """The replication's module (loaded before this one: experiment scripts load in name order)."""
    return sys.modules["pebench_experiments.replicate_kazemnejad2023"]


def v3_scale() -> dict:
    """The settings the re-make takes from the standard suite's scale as protocol v3 declared it (whichever protocol
    is in force: v4 keeps v3's model and fit criterion, and the re-make stays v3's)."""
    return {key: STANDARD_V3["scale"][key] for key in V3_KEYS}


def configs():
    """The replication's grids, each with the standard suite's v3 model and fit criterion."""
    return [({**base, **v3_scale()}, grid) for base, grid in _replication().configs()]


EXPERIMENT = replication_experiment(
    NAME,
    "The Kazemnejad et al. 2023 replication re-made at protocol v3's scale (3 layers, v3 fit criterion), scored as "
    "the replication pre-registered.",
    configs, __file__, suite=SUITE,
    position=208,  # after the replication (200) and its scale check (201-205), before Press (210)
    title="Replication at protocol v3's scale: Kazemnejad et al. 2023",
    caption="Greedy exact match of 3-layer decoder-only models trained on lengths up to 20 under protocol v3's fit "
            "criterion: look at the lengths beyond 20 and at the ranking of the paper's five encodings, beside the "
            "2-layer replication's.",
    primary_metric=_replication().METRIC,
    comparisons=_replication().CLAIMS,
)


#: the replication's record with this experiment and its score, read against the replication it re-makes
#: (:func:`pebench.analysis.replication.remake_comparison`)
REPLICATION = replication.declare(
    EXPERIMENT,
    _replication().REPLICATION,
    score=functools.partial(_replication().score, name=NAME, fit_check=FIT_CHECK, closing=""),
    declared_in="eba8dcf",
)


if __name__ == "__main__":
    from pebench.cli import main

    raise SystemExit(main(["run", "--suite", SUITE, "--experiment", EXPERIMENT.name]))
