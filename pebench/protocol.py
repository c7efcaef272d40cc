"""The protocol as data: suites, scales, protocol versions, fit criteria, seeds, step caps and the compared
encodings.

Every experiment of a suite is expanded at the suite's scale (:mod:`pebench.plan.experiment`), so that every
encoding and task is compared at the same width, depth and budget. Why each value is what it is (the pilots
behind the caps, what was tried first) is written on the protocol page (``docs/protocol.md``), not here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: the suites, each a scale at which every experiment is expanded
SUITES = ("smoke", "standard", "extended", "paper", "replication")
#: positions every encoding of a suite supports (learned tables, the range of randomized positions), fixed so
#: that no model depends on the lengths it is evaluated at (docs: protocol)
POSITION_CAPACITY = {"smoke": 1024, "standard": 2048, "extended": 2048, "paper": 8192, "replication": 4096}
#: the protocol version of new runs (docs: protocol, "Protocol v4"); a suite whose committed results were made
#: under an older one keeps it in its :data:`SCALES` until they are regenerated
PROTOCOL = 4
#: the protocol versions a run spec may name
PROTOCOLS = (2, 3, 4)
#: the kinds of protocol v3's boards, whose tables are named ``<kind>_<experiment>`` (:mod:`pebench.report.boards`)
BOARD_KINDS = ("extrapolation", "capability", "harm")
#: the last protocol whose reports rank on the MRR leaderboard (a ranking of seed means that scores an unfitted run
#: 0): from protocol v4 the extrapolation board's tiers on jointly fitted runs are the one ranking, and the MRR board
#: is kept only in the archived v2 and v3 reports (issue 66)
MRR_LAST_PROTOCOL = 3

#: every encoding compared by the standard experiments (randomized around RoPE)
COMPARED_ENCODINGS = (
    "none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "fire", "randomized:rope",
)
#: the encodings added since the first reference; under protocol v3 every suite compares them too
NEWER_ENCODINGS = ("kerple_log", "kerple_power", "sandwich", "transformer_xl", "cope", "p_rope")
#: the standard suite's core battery (experiments/length_extrapolation.py), declared before its results were made
CORE_TASKS = (
    "copy", "reverse", "duplicate", "selective_copy",  # order-dependent sequence tasks
    "majority",  # control
    "parity_check", "cycle_navigation", "even_pairs",  # regular (two controls, one order-dependent)
    "reverse_string",  # deterministic context-free
    "odds_first", "missing_duplicate", "bucket_sort",  # context-sensitive (bucket_sort: a control)
)
#: the position mechanisms of 2025-26 (issue 64): in the standard suite from protocol v4 (the v3 reference
#: predates them; docs: protocol)
FIELD_2025 = ("fox", "stick_breaking", "ssmax:rope", "irope", "pope", "canon")
#: the encodings each suite compares in its per-task grids
SUITE_ENCODINGS: dict[str, tuple[str, ...]] = {
    "smoke": COMPARED_ENCODINGS,
    # protocol v4: the whole field, the mechanisms of 2025-26 included (issue 66)
    "standard": COMPARED_ENCODINGS + NEWER_ENCODINGS + FIELD_2025,
    "extended": COMPARED_ENCODINGS + NEWER_ENCODINGS + FIELD_2025,
    "paper": COMPARED_ENCODINGS + NEWER_ENCODINGS,
    "replication": COMPARED_ENCODINGS + NEWER_ENCODINGS,
}

#: the baselines ``pebench evaluate`` tests a new encoding against, declared before any verdict was made (issue 65):
#: the position-free model, the two absolute encodings, RoPE, ALiBi and FIRE (the strongest learned bias); one
#: Holm family per suite, at the task level, on the extrapolation board's score (:mod:`pebench.analysis.verdict`).
#: The board places the encoding among every other encoding of the reference besides
VERDICT_BASELINES = ("none", "sinusoidal", "learned", "rope", "alibi", "fire")
#: the share of the model's parameters an encoding may add before a verdict flags it (DESIGN: models)
PARAMETER_FLAG = 0.10

#: protocol v3's goal for its scale (rule 6, capacity before judging; issue 36): the encodings that can represent
#: every task of the core battery fit at least :data:`CAPABLE_FIT_GOAL` of their runs in each architecture, and
#: a NoPE decoder fits copy on every seed (the causal mask gives it positions; Kazemnejad et al. 2023). The
#: reference is checked against it once made (:func:`pebench.analysis.leaderboard.capacity_goal`); the depth pilot
#: declared the same encodings
CAPABLE_ENCODINGS = ("sinusoidal", "learned", "rope")
CAPABLE_FIT_GOAL = 0.9

#: the fit criterion of protocol v3 (:class:`pebench.config.TrainConfig`): every training length, 512 held-out
#: examples at each, held-out inputs never in the training stream (:mod:`pebench.learn.heldout`)
FIT_V3: dict[str, Any] = {"fit_lengths": "all", "fit_examples": 512, "fit_disjoint": True}
#: model and training scale per suite, shared by the experiments so that every encoding and task is compared
#: at the same width, depth and budget (``fit_*``, ``stop_at_fit``: the fit criterion; ``steps`` is then the cap)
#: protocol v2's scale, kept by each suite whose committed results were made under it until they are regenerated
#: (a copy each, so that moving one suite to v3 leaves the others as they are)
SCALE_V2: dict[str, Any] = {
    "d_model": 64, "n_layers": 2, "n_heads": 4, "steps": 2500, "batch_size": 64, "warmup_steps": 100, "lr": 3e-3,
    "eval_n_examples": 256, "fit_every": 100, "stop_at_fit": True, "fit_patience": 1000, "protocol": 2,
}
#: protocol v3's scale of the standard suite: depth 3 at width 64, chosen by the width pilot's rule
#: (results/pilots/width_pilot.json) from the depth pilot without a plateau stop; no plateau stop (the plateau
#: pilot); steps is the cap of a task without one in TASK_STEPS (every core task has one). Protocol v4 keeps it
SCALE_V3: dict[str, Any] = {
    "d_model": 64, "n_layers": 3, "n_heads": 4, "steps": 5000, "batch_size": 64, "warmup_steps": 100, "lr": 3e-3,
    "eval_n_examples": 256, "fit_every": 100, "stop_at_fit": True, "fit_patience": 0, **FIT_V3, "protocol": 3,
}
SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"d_model": 32, "n_layers": 1, "n_heads": 4, "steps": 30, "batch_size": 16, "warmup_steps": 5,
              "lr": 1e-3, "eval_n_examples": 32, "fit_every": 10, "stop_at_fit": True,
              **FIT_V3, "fit_examples": 64},
    # protocol v4: v3's scale, with runs still improving at their cap extended (EXTENSION_STEPS)
    "standard": {**SCALE_V3, "extend_window": 1000, "extend_min_gain": 0.01, "protocol": 4},
    "extended": dict(SCALE_V2),
    # length_seed: the seeds of a cell share one stream of training lengths, so that on a GPU
    # they train as one seed-batched model (pebench run --seed-batch; pebench.learn.batched)
    "paper": {"d_model": 256, "n_layers": 4, "n_heads": 8, "steps": 20000, "batch_size": 128, "warmup_steps": 1000,
              "lr": 5e-4, "eval_n_examples": 1024, "length_seed": 0},
}
#: replications of published experiments (experiments/replicate_*.py): v2's model and optimiser, with one stream
#: of training lengths shared by the seeds of a cell, so that on a GPU they train seed-batched
SCALES["replication"] = {**SCALE_V2, "length_seed": 0}

#: optimizer steps per (arch, task) where a suite departs from its scale's ``steps``: the same budget for every
#: encoding, sized from declared pilots so that the capable encodings fit the task in distribution (docs: protocol)
#: protocol v3's caps of the standard suite: the width pilot's rule at depth 3, width 64 (results/pilots/
#: width_pilot.json): twice the most steps sinusoidal, learned and RoPE took to fit each task there, rounded up to
#: 500, within 1000-5000. Protocol v4 keeps them
TASK_STEPS_V3: dict[tuple[str, str], int] = {
    ("decoder", "bucket_sort"): 5000, ("decoder", "copy"): 4000, ("decoder", "cycle_navigation"): 5000,
    ("decoder", "duplicate"): 5000, ("decoder", "even_pairs"): 2500, ("decoder", "majority"): 3000,
    ("decoder", "missing_duplicate"): 5000, ("decoder", "odds_first"): 5000, ("decoder", "parity_check"): 5000,
    ("decoder", "reverse"): 5000, ("decoder", "reverse_string"): 5000, ("decoder", "selective_copy"): 5000,
    ("encoder", "bucket_sort"): 4000, ("encoder", "copy"): 3000, ("encoder", "cycle_navigation"): 5000,
    ("encoder", "duplicate"): 5000, ("encoder", "even_pairs"): 4000, ("encoder", "majority"): 2000,
    ("encoder", "missing_duplicate"): 5000, ("encoder", "odds_first"): 5000, ("encoder", "parity_check"): 5000,
    ("encoder", "reverse"): 5000, ("encoder", "reverse_string"): 5000, ("encoder", "selective_copy"): 5000,
}
#: protocol v4's decoder tasks beside v3's core battery, admitted by the battery pilot (results/pilots/
#: battery_fit.json), with their caps by its rule (twice the most steps a capable encoding took to fit, rounded up
#: to 500, within 1000-5000)
V4_BATTERY: dict[tuple[str, str], int] = {
    ("decoder", "flip_flop"): 1000, ("decoder", "passkey"): 2000, ("decoder", "stack_manipulation"): 5000,
}
TASK_STEPS: dict[str, dict[tuple[str, str], int]] = {
    # protocol v4: v3's caps and the battery's
    "standard": {**TASK_STEPS_V3, **V4_BATTERY},
    # doubled: RoPE was still learning these multi-token tasks at the 2500-step cap (results/pilots/task_fit.csv)
    "extended": {(arch, task): 5000 for arch in ("decoder", "encoder") for task in (
        "binary_addition", "binary_multiplication", "compute_sqrt", "duplicate_string", "stack_manipulation")}
    # the multi-token cap: RoPE was far from the threshold at the one-token cap on these (same pilots)
    | {(arch, task): 2500 for arch in ("decoder", "encoder") for task in (
        "modular_arithmetic", "modular_arithmetic_brackets", "solve_equation")},
}
#: the step cap of tasks with a one-token answer in the standard and extended suites (docs: protocol)
SINGLE_OUTPUT_STEPS = 1000


def task_steps(suite: str, arch: str, task: str) -> int:
    """Optimizer steps (the cap, when training stops at the fit criterion) of ``task`` on ``arch`` in
    ``suite``: :data:`TASK_STEPS`, else :data:`SINGLE_OUTPUT_STEPS` for a one-token answer in the
    standard and extended suites, else the suite's scale. The same for every encoding of a task."""
    from pebench import tasks  # here: the protocol is data the CLI reads before a command needs torch

    if (arch, task) in TASK_STEPS.get(suite, {}):
        return TASK_STEPS[suite][(arch, task)]
    if suite in ("standard", "extended") and tasks.get(task).output_length(8) == 1:
        return SINGLE_OUTPUT_STEPS
    return SCALES[suite]["steps"]


#: steps a run still improving at its cap may train on, per suite (protocol v4, issue 66: the budget stops binding):
#: a run unfitted at its cap ``steps`` continues to ``steps`` + this while its held-out accuracy rose by at least
#: the scale's ``extend_min_gain`` over its last ``extend_window`` steps (:class:`pebench.config.TrainConfig`)
#: protocol v4's extension of the standard suite's runs still improving at their cap
V4_EXTENSION = 4000
EXTENSION_STEPS: dict[str, int] = {"standard": V4_EXTENSION}
#: order-dependent tasks a suite runs on one architecture only, beside its experiments' task lists (protocol v4:
#: the decoder battery's tasks admitted by the battery pilot, results/pilots/battery_fit.json)
ARCH_TASKS: dict[str, dict[str, tuple[str, ...]]] = {"standard": {"decoder": tuple(task for _, task in V4_BATTERY)}}


def task_budget(suite: str, arch: str, task: str) -> dict[str, int]:
    """The training budget of ``task`` on ``arch`` in ``suite``: its cap ``steps`` (:func:`task_steps`) and, where
    the suite extends runs still improving at their cap (:data:`EXTENSION_STEPS`), ``extend_to``, the ceiling. The
    same for every encoding of a task."""
    steps = task_steps(suite, arch, task)
    more = EXTENSION_STEPS.get(suite, 0)
    return {"steps": steps, **({"extend_to": steps + more} if more else {})}


#: optimizer steps of the character LM (``lm_extrapolation``) where a suite departs from its scale's ``steps``
#: (a fixed budget: a language model has no fit criterion). Standard, protocol v3: the LM step pilot's rule
#: (results/pilots/lm_step_pilot.json): no count up to 3200 brought the in-distribution spread within 1.10
LM_STEPS: dict[str, int] = {"standard": 6400}
#: the LM step pilot's declared goal: the spread of the in-distribution perplexity across encodings (the largest
#: seed-mean perplexity at the training context over the smallest) at most this; a report says whether its
#: LM met it (``pilots/lm_step_pilot.py``, ``MAX_SPREAD``)
LM_SPREAD_GOAL = 1.10

#: seeds per suite
#: (standard, protocol v3: six, so that a per-task paired sign-flip test over seeds can reach p < 0.05)
#: protocol v4's seeds of the standard suite (:data:`STANDARD_V4`)
V4_SEEDS = [0, 1]
SEEDS: dict[str, list[int]] = {"smoke": [0], "standard": list(V4_SEEDS), "extended": [0, 1, 2],
                               "paper": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "replication": [0, 1, 2]}

#: declared samples of a suite, run like a suite (``pebench run --suite quick``): the sampled suite's own runs
#: (same configurations, same run ids), fewer of them, so that each compares with that suite's reference cell by
#: cell (``pebench compare``). ``quick``: one run per stratum, experiment x arch x task, of the standard suite; its
#: encodings are dealt from a deck shuffled with ``draw_seed`` (every encoding of an experiment once before any
#: twice), its seeds likewise from the suite's seeds. Why one run per stratum: every task, architecture and
#: experiment is checked, each encoding at least once, within :data:`SAMPLE_MINUTES` (a test times it from the
#: reference's recorded seconds)
SAMPLES: dict[str, dict[str, Any]] = {"quick": {"suite": "standard", "per_stratum": 1, "draw_seed": 65}}
#: the most a sample may take on 2 CPU cores (2 workers), in minutes
SAMPLE_MINUTES = 30


#: the standard suite as protocol v2 declared it (scale, the caps that departed from it, seeds, encodings): the
#: committed reference was made under it until the v3 reference replaced it, so that :func:`standard_v2` can
#: expand it again
STANDARD_V2: dict[str, Any] = {
    "scale": SCALE_V2,
    "task_steps": {(arch, task): 5000 for arch in ("decoder", "encoder") for task in ("copy", "reverse", "duplicate")},
    "seeds": [0, 1, 2],
    "encodings": COMPARED_ENCODINGS,
    "lm_steps": 800,
}


#: the standard suite as protocol v3 declared it: the protocol in force until the v4 reference replaced it (six
#: seeds, so that a per-task paired sign-flip test over seeds can reach p < 0.05)
STANDARD_V3: dict[str, Any] = {
    "scale": SCALE_V3,
    "task_steps": TASK_STEPS_V3,
    "seeds": [0, 1, 2, 3, 4, 5],
    "encodings": COMPARED_ENCODINGS + NEWER_ENCODINGS,
    "lm_steps": 6400,
}

#: protocol v4 of the standard suite (issue 66), declared before its first run (docs: protocol, "Protocol v4"):
#: the decoder battery is v3's core battery plus the tasks the battery pilot admitted (results/pilots/
#: battery_fit.json, its cap rule: twice the most steps a capable encoding took to fit, rounded up to 500, within
#: 1000-5000); two seeds (the power analysis, results/pilots/power_v4.json: tasks, not seeds, limit a task-level
#: comparison, 2 seeds against 3 moving the detectable effect at 10 tasks by under 0.01, while 3 seeds would take
#: the reference past its 20 h budget, results/pilots/v4_budget.json); every encoding of the field including those
#: of 2025-26; and runs still improving at their cap extended by up to :data:`V4_EXTENSION` steps. The encoder
#: keeps v3's core battery
STANDARD_V4: dict[str, Any] = {
    "scale": {**SCALE_V3, "extend_window": 1000, "extend_min_gain": 0.01, "protocol": 4},
    "task_steps": {**TASK_STEPS_V3, **V4_BATTERY},
    "seeds": V4_SEEDS,
    "encodings": COMPARED_ENCODINGS + NEWER_ENCODINGS + FIELD_2025,
    "lm_steps": 6400,
    "extension": V4_EXTENSION,
    "arch_tasks": {"decoder": tuple(task for _, task in V4_BATTERY)},
}
#: the standard suite as each protocol declared it (:func:`as_declared`)
STANDARD_DECLARED: dict[int, dict[str, Any]] = {2: STANDARD_V2, 3: STANDARD_V3, 4: STANDARD_V4}


@contextlib.contextmanager
def standard_as(version: int) -> Iterator[None]:
    """Within the block, the standard suite expands as protocol ``version`` (2, 3 or 4) declared it
    (:data:`STANDARD_DECLARED`): its scale, caps, seeds, encodings, the LM's steps, its extension and the tasks it
    adds on one architecture. For making a reference under a protocol declared before it is in force
    (``pebench run --protocol 4``) and for reading a folder made under one; restored on leaving the block."""
    declared = STANDARD_DECLARED[version]
    saved = (SCALES["standard"], TASK_STEPS["standard"], SEEDS["standard"], SUITE_ENCODINGS["standard"],
             LM_STEPS["standard"], EXTENSION_STEPS.get("standard"), ARCH_TASKS.get("standard"))
    SCALES["standard"] = dict(declared["scale"])
    TASK_STEPS["standard"] = dict(declared["task_steps"])
    SEEDS["standard"] = list(declared["seeds"])
    SUITE_ENCODINGS["standard"] = tuple(declared["encodings"])
    LM_STEPS["standard"] = declared["lm_steps"]
    _set(EXTENSION_STEPS, declared.get("extension"))
    _set(ARCH_TASKS, declared.get("arch_tasks"))
    try:
        yield
    finally:
        (SCALES["standard"], TASK_STEPS["standard"], SEEDS["standard"], SUITE_ENCODINGS["standard"],
         LM_STEPS["standard"], extension, arch_tasks) = saved
        _set(EXTENSION_STEPS, extension)
        _set(ARCH_TASKS, arch_tasks)


def _set(table: dict[str, Any], value: Any) -> None:
    """``table["standard"]`` set to ``value``, or removed where it is None."""
    if value is None:
        table.pop("standard", None)
    else:
        table["standard"] = value


def standard_v2() -> contextlib.AbstractContextManager[None]:
    """Within the block, the standard suite expands as protocol v2 declared it (:data:`STANDARD_V2`), with v2's run
    ids: for reading the committed v2 reference against the code that made it, and for the pilots that repeat its
    runs. Never used to make new standard runs; the protocol is restored on leaving the block."""
    return standard_as(2)


@contextlib.contextmanager
def as_declared(suite: str, version: int | None) -> Iterator[None]:
    """Within the block, ``suite`` expands as protocol ``version`` declared it: the standard suite by
    :func:`standard_as`, where ``version`` is not the one in force; every other suite and version as now (``None``:
    as now)."""
    current = SCALES["standard"].get("protocol")
    if suite == "standard" and version in STANDARD_DECLARED and version != current:
        with standard_as(version):
            yield
    else:
        yield
