"""Does T5's bucketing explain why its encoder does not fit duplicate? A fit pilot with exact buckets.

Not an experiment (importing this file registers nothing): ``python experiments/t5_bucket_pilot.py``
trains the standard suite's encoder T5 runs of copy and duplicate (every seed of the suite) twice, under
exactly the suite's protocol (grid, step cap, fit criterion, plateau stop): once with T5's published
bucketing (32 bidirectional buckets: distances 0-7 exact, wider buckets beyond, so 8-11 share one) and
once with :data:`EXACT_BUCKETS` buckets, which give every distance of a training sequence its own bias
(exact to 31; the longest rendered training sequence, duplicate at length 8, is 25 tokens). Only the
bucket count differs. Writes ``results/pilots/t5_buckets.csv``; the protocol page shows it.

Why: in the standard reference T5's encoder fitted duplicate on 0 of 3 seeds and plateaued near the
position-free floor, while every other capable encoding fitted it. An output position of encoder copy
and duplicate reads its source 9 (duplicate: also 17) positions back, a distance whose bucket it shares
with its neighbours. If the exact-bucket runs fit where the published ones do not, the bucketing is the
cause; if they fail too, it is not, and the failure lies elsewhere. The standard suite keeps T5 as
published either way: this is evidence about a failure, not a change of protocol.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

#: the encoder tasks whose source lies 9 or more positions back
TASKS = ("copy", "duplicate")
#: bidirectional buckets that make every distance up to 31 exact (64 per side, 32 of them exact)
EXACT_BUCKETS = 128
OUT = Path(__file__).resolve().parent.parent / "results" / "pilots" / "t5_buckets.csv"


def specs(suite: str = "standard") -> list:
    """The suite's encoder T5 runs of :data:`TASKS`, each as published and with exact buckets."""
    from pebench.experiment import canonical_options, suite_runs

    published = [spec for spec in suite_runs(suite, ["length_extrapolation"])
                 if spec.arch == "encoder" and spec.encoding == "t5" and spec.task in TASKS]
    exact = [dataclasses.replace(spec, encoding_options=canonical_options({"num_buckets": EXACT_BUCKETS}))
             for spec in published]
    return published + exact


def pilot(spec) -> dict:
    """The fit columns of ``spec``'s training (:func:`task_pilots.pilot`) with its bucket count."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot as fit_pilot

    return {**fit_pilot(spec), "num_buckets": spec.options().get("num_buckets", 32)}


def main(argv=None) -> None:
    """Run the pilots and write ``--out``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from task_pilots import pilot_main

    pilot_main(__doc__.splitlines()[0], pilot, specs, OUT, argv)


if __name__ == "__main__":
    main()
