"""Protocol v3's fit criterion in words and numbers, from the code that applies it (:data:`pebench.protocol.FIT_V3`,
:mod:`pebench.learn.heldout`, :mod:`pebench.tasks.base`, :class:`pebench.config.TrainConfig`): the blocks
(:mod:`pebench.render.blocks`) the protocol page shows, with the training lengths of a battery that are too small to
split."""

from __future__ import annotations

from collections.abc import Sequence

from pebench import tasks
from pebench.config import TrainConfig
from pebench.protocol import FIT_V3, SCALES
from pebench.render.blocks import PagePiece, bullet_list, table
from pebench.store.schema import page_title
from pebench.tasks.base import HELD_OUT_SHARE, MIN_HELD_OUT_INPUTS, PROBE_DRAWS


def fit_criterion_blocks(battery: Sequence[str], longest: int = 8, suite: str = "standard") -> list[PagePiece]:
    """How the fit is checked under protocol v3 (``suite``'s check interval), and, per task of ``battery``, its
    training lengths up to ``longest`` whose held-out part is too small to split
    (:meth:`pebench.tasks.base.Task.is_split`) and, where a split length's held-out part holds fewer distinct
    inputs than a check's examples, the fewest (:meth:`pebench.tasks.base.Task.distinct_inputs`)."""
    examples, threshold = FIT_V3["fit_examples"], TrainConfig().fit_threshold
    errors = int((1 - threshold) * examples + 1e-9)  # the tolerance absorbs 0.01 * 512 read as 5.119...
    rows = []
    for name in battery:
        task = tasks.get(name)
        lengths = range(max(1, task.min_length), longest + 1)
        unsplit = [length for length in lengths if not task.is_split(length)]
        rows.append([page_title("task", name), ", ".join(map(str, unsplit)) or "none",
                     _fewest_inputs(task, [n for n in lengths if n not in unsplit], examples)])
    return [bullet_list([
        f"checked every {SCALES[suite]['fit_every']} steps at **every training length**, longest first, on "
        f"**{examples} held-out examples** per length; fitted when the token accuracy reaches {threshold} at every "
        f"one (on a one-token answer: at most {errors} errors per length);",
        f"**held-out inputs never occur in training**: a fixed hash of the input puts one input in "
        f"{HELD_OUT_SHARE} in the held-out part of its input space; training draws again in its place, and "
        "the check draws only from it;",
        f"a length whose held-out part holds fewer than {MIN_HELD_OUT_INPUTS} distinct inputs (of "
        f"{PROBE_DRAWS} draws) is not split: the model trains on every input there, and the check scores "
        f"the whole distribution;",
        f"where a split length's held-out part holds fewer distinct inputs than the {examples} examples, they "
        "repeat them, so a check there resolves accuracy only to one in as many inputs as the part holds: a model "
        "that answers those few right passes, whatever it does on the other inputs of that length (the "
        "resolution table under *Training to a fit criterion* shows how such tasks' fitted runs score on the "
        "evaluation set). For the "
        f"core battery (training lengths up to {longest}), the lengths not split and the fewest held-out inputs "
        "are:"]),
        table(["task", "training lengths not split", "fewest held-out inputs of a split length"], rows)]


def _fewest_inputs(task: tasks.Task, split: Sequence[int], examples: int) -> str:
    """The fewest distinct inputs the fit check of ``task`` draws from at one of the ``split`` lengths, with that
    length, where they are fewer than ``examples`` (:meth:`pebench.tasks.base.Task.distinct_inputs`)."""
    if not split:
        return "no split length"
    fewest = min((task.distinct_inputs(length, held_out=True), length) for length in split)
    return f"{fewest[0]} (length {fewest[1]})" if fewest[0] < examples else f"{examples} or more"

