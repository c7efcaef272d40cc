"""The protocol as the code applies it, in tables and words: each suite's scale, each experiment's settings and
task battery, the step caps, the constants the protocol page quotes, the suites' measured times and what each
table of the leaderboard shows.

Everything here is read from :mod:`pebench.protocol`, the registered experiments (the run specs a suite expands
to), :class:`pebench.config.TrainConfig`, the task registry and the suites' times that :mod:`pebench.bench.throughput`
measured (``results/performance``, read with the standard library: the site loads no pandas); the site renders it
(its protocol page) and ``pebench list protocol`` prints it. Texts are MyST Markdown (names in backticks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pebench import protocol, store, tasks
from pebench.config import TrainConfig
from pebench.encodings.t5 import relative_position_bucket
from pebench.plan.experiment import RunSpec, load_experiments, registered_report_specs, suite_runs
from pebench.render.blocks import PagePiece, table, text
from pebench.render.fit_criterion import fit_criterion_blocks
from pebench.render.results_text import not_in_results
from pebench.render.seed_text import describe_run_seeds
from pebench.render.tables import BLOCK_COLUMNS, FLOAT_ROWS, PARAGRAPH_CHARS, WIDE_COLUMNS, Table, text_table
from pebench.store import report_file
from pebench.store.provenance import manifest_history
from pebench.store.report_file import display_path
from pebench.store.schema import people_words
from pebench.tasks.charlm import EVAL_SPAN

#: the suite whose settings the protocol page quotes
REFERENCE_SUITE = "standard"
#: the report tables the leaderboard shows per suite, in order, as ``(kind, title, lead)``: each
#: ``tables/<kind>_<experiment>.md``, ``{experiment}`` in its lead standing for the experiment; first the boards
#: of protocol v3 (:data:`pebench.protocol.BOARD_KINDS`), what the capable encodings' unfitted runs reached,
# then : protocol v2's ranking, the declared comparisons and the seeds fitted per task
LEADERBOARD_TABLES = (
    ("extrapolation", "Extrapolation tiers",
     "Floor-normalised OOD token accuracy, every encoding ranked from pairwise comparisons task by task, each pair "
     "on the runs both encodings fitted, in tiers of paired bootstrap tests over tasks and seeds. Look at the tier "
     "column: encodings in one tier are not ranked apart; P(tier) says how often each keeps its tier's places when "
     "tasks and seeds are resampled (under 0.9: between tiers); an encoding at or below the position-free floor "
     "has no extrapolation, never a tier."),
    ("capability", "Capability",
     "How many runs met the fit criterion. Look for encodings that do not fit what they can represent: they are "
     "judged on the extrapolation board only on the tasks they fitted (flagged where few), and their "
     "out-of-distribution numbers are not judged."),
    ("harm", "Harm on the order-free controls",
     "Controls need no order: look for encodings whose accuracy there falls below the position-free baseline's "
     "(harms = yes)."),
    ("capacity", "Capable encodings' runs not fitted",
     "Where sinusoidal, learned or RoPE missed the fit criterion: what their fit checks reached in distribution, and "
     "whether they were still improving at the step cap. Look at tasks where none was: there the scale or the "
     "training, not the budget, fell short (protocol v3's goal for its scale, on the protocol page)."),
    ("leaderboard", "Mean reciprocal rank (protocol v2's ranking)",
     "The ranking protocol v2 used, computed on these runs and kept beside the boards above: encodings ranked on "
     "every task of `{experiment}`, "
     "per architecture, by mean reciprocal rank. An unfitted run scores 0 here, so this order mixes fit rates with "
     "extrapolation (the reason protocol v3 ranks jointly fitted runs instead); encodings whose intervals overlap "
     "are not ranked apart by these seeds."),
    ("pairwise", "Declared comparisons",
     "The comparisons declared before the results were made (`ReportSpec.comparisons` of `{experiment}`), tested "
     "on task means (the task is the unit), Holm-corrected over the family. Look at the verdict, the smallest p "
     "the tasks allow and the minimum detectable effect: a difference whose interval contains 0 is no finding."),
    ("pairwise_tasks", "Declared comparisons per task",
     "The declared comparisons split by order-dependent task (protocol v3): how many seeds favour each side, and "
     "each task's paired test over its seeds, unadjusted. Look at where the seeds agree: this table says which "
     "tasks carry a verdict above, and makes none of its own."),
    ("fit", "Seeds fitted per task",
     "Seeds that fitted each task of `{experiment}` (the per-task view of the summary below). Look for capable "
     "encodings with unfitted tasks: those cells are shown but never judged."),
)
#: the run settings each experiment's table lists, in order (empty ones left out)
SETTINGS = ("task", "encoding", "arch", "train_min_len", "train_max_len", "eval_lengths", "eval_conditions",
            "eval_variants", "seed")


def config_values(specs: Sequence[RunSpec], key: str) -> str:
    """The values of config ``key`` over ``specs``, as a reader writes them (lists and variants unquoted)."""
    if key == "eval_variants":  # (label, options JSON) pairs
        variants = dict.fromkeys((label, options) for spec in specs for label, options in spec.eval.variants)
        return "; ".join(
            f"`{label}`: " + ", ".join(f"{k}={v}" for k, v in json.loads(options).items())
            for label, options in variants)
    values = {spec.resolved()[key] for spec in specs}
    return ", ".join(sorted(", ".join(map(str, json.loads(v))) if isinstance(v, str) and v.startswith("[")
                            else str(v) for v in values))


def grouped_caps(entries: Iterable[tuple[str, str, int]]) -> list[tuple[int, list[tuple[str, list[str] | None]]]]:
    """``(arch, task, steps)`` triples grouped by step cap, largest first: ``[(steps, [(task, archs), ...])]``,
    tasks sorted, ``archs`` None where the task has that cap on every architecture of ``entries``."""
    caps: dict[int, dict[str, set[str]]] = {}
    archs: set[str] = set()
    for arch, task, steps in entries:
        caps.setdefault(steps, {}).setdefault(task, set()).add(arch)
        archs.add(arch)
    return [(n, [(task, None if on == archs else sorted(on)) for task, on in sorted(caps[n].items())])
            for n in sorted(caps, reverse=True)]


def steps_text(specs: Sequence[RunSpec]) -> str:
    """The step cap and the tasks it applies to, per architecture when the architectures differ, e.g.
    ``2500: copy, reverse; 1000: parity_check``."""
    groups = grouped_caps((spec.arch, spec.task, spec.train.steps) for spec in specs)
    return "; ".join(f"{n}: " + ", ".join(task if on is None else f"{task} ({', '.join(on)})" for task, on in named)
                     for n, named in groups)


def task_caps_text(caps: Mapping[tuple[str, str], int]) -> str:
    """The per-task step caps of a suite (``{(arch, task): steps}``) in words, e.g. "5000 for copy and reverse"
    (", on the decoder" when a task has the cap on one architecture only), or "none"."""
    def words(names: list[str]) -> str:
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

    groups = grouped_caps((arch, task, steps) for (arch, task), steps in caps.items())
    return "; ".join(f"{n} for " + words([task if on is None else f"{task} (on the {', '.join(on)})"
                                          for task, on in named]) for n, named in groups) or "none"


def scales_table() -> Table:
    """Per suite: its runs, seeds and every scale setting (:data:`pebench.protocol.SCALES`)."""
    keys = sorted({k for scale in protocol.SCALES.values() for k in scale})
    return text_table(["suite", "runs", "seeds", *keys],
                      [[suite, len(runs), describe_run_seeds(runs), *(protocol.SCALES[suite].get(k, "") for k in keys)]
                       for suite in protocol.SUITES for runs in [suite_runs(suite)]])


def settings_table(specs: Sequence[RunSpec]) -> Table:
    """The settings of an experiment's runs ``specs`` (:data:`SETTINGS` with values) and their step caps."""
    rows = [[key, config_values(specs, key)] for key in SETTINGS]
    rows = [row for row in rows if row[1] not in ("", "[]")] + [["step cap: tasks", steps_text(specs)]]
    return text_table(["setting", "values"], rows)


def experiments_blocks(suite: str = REFERENCE_SUITE) -> list[dict[str, Any]]:
    """The scale of each suite, then per registered experiment its description and its settings in ``suite``, as
    blocks (:mod:`pebench.render.blocks`: headings, texts, tables)."""
    scales = scales_table()
    blocks: list[dict[str, Any]] = [{"kind": "heading", "level": 3, "text": "Scale of each suite"},
                                    {"kind": "table", "header": scales.headers,
                                     "rows": [[cell.text for cell in row] for row in scales.rows]}]
    registry = load_experiments()
    for name in registry.names():
        experiment = registry.get(name)
        specs = experiment.runs(suite)
        heading = f"{experiment.report.title or people_words(name)} (`{name}`)"  # the name is what --experiment takes
        blocks += [{"kind": "heading", "level": 3, "text": heading},
                   {"kind": "text", "text": f"{experiment.description}\nReported with the `{experiment.report.layout}` "
                                            "layout of {mod}`pebench.report`."}]
        if not specs:
            blocks.append({"kind": "text", "text": f"Not part of the {suite} suite."})
            continue
        table = settings_table(specs)
        blocks += [{"kind": "text", "text": f"In the {suite} suite ({len(specs)} runs):"},
                   {"kind": "table", "header": table.headers, "rows": [[c.text for c in row] for row in table.rows]}]
    return blocks


def v4_declaration() -> list[PagePiece]:
    """Protocol v4 of the standard suite as :data:`pebench.protocol.STANDARD_V4` declares it: its seeds, encodings,
    extension and runs, and per architecture the tasks of its length experiment with their caps, ceilings and where
    each cap comes from, as blocks."""
    declared = protocol.STANDARD_V4
    with protocol.as_declared("standard", 4):
        specs = suite_runs("standard")
    length = [spec for spec in specs if spec.experiment == "length_extrapolation"]
    counts: dict[str, int] = {}
    for spec in specs:
        counts[f"{spec.experiment} ({spec.arch})"] = counts.get(f"{spec.experiment} ({spec.arch})", 0) + 1
    rows = {}
    for spec in length:
        kind = "order-dependent" if tasks.get(spec.task).order_dependent else "control"
        source = "battery pilot" if (spec.arch, spec.task) in protocol.V4_BATTERY else "v3's cap"
        rows[(spec.arch, spec.task)] = [spec.arch, spec.task, kind, f"{spec.train.steps:,}",
                                        f"{spec.train.extend_to:,}", source]
    dependent = {arch: sum(1 for (a, _), row in rows.items() if a == arch and row[2] == "order-dependent")
                 for arch in ("decoder", "encoder")}
    return [
        text(f"{len(specs):,} runs ({', '.join(f'{key}: {n:,}' for key, n in sorted(counts.items()))}); seeds "
             f"{', '.join(map(str, declared['seeds']))}; {len(declared['encodings'])} encodings (every encoding of "
             f"protocol v3 and the six of 2025-26; causal-only ones on decoders only); a run unfitted at its cap "
             f"continues in windows of {declared['scale']['extend_window']:,} steps while its held-out accuracy rose "
             f"by at least {declared['scale']['extend_min_gain']} over the last one, to its ceiling, "
             f"{declared['extension']:,} steps past its cap. The decoder board's battery has {dependent['decoder']} "
             f"order-dependent tasks, the encoder's {dependent['encoder']}."),
        table(["arch", "task", "kind", "cap", "ceiling", "cap from"], [rows[key] for key in sorted(rows)]),
    ]


def t5_shared_buckets(longest: int = 24) -> str:
    """The distances up to ``longest`` that share one bucket of T5's bidirectional (encoder) bucket
    function, as ``8-11, 12-15, ...`` (from :func:`pebench.encodings.t5.relative_position_bucket`)."""
    distances = torch.arange(longest + 1)
    buckets = relative_position_bucket(distances, causal=False).tolist()
    groups: dict[int, list[int]] = {}
    for distance, bucket in zip(distances.tolist(), buckets, strict=True):
        groups.setdefault(bucket, []).append(distance)
    shared = [members for members in groups.values() if len(members) > 1 and members[-1] < longest]
    return ", ".join(f"{members[0]}-{members[-1]}" for members in shared)


def experiment_values(suite: str = REFERENCE_SUITE) -> dict[str, str]:
    """Per registered experiment with runs in ``suite``, ``<name>_*``: its training lengths, in- and
    out-of-distribution evaluation lengths, tasks, architectures and runs (from the run specs)."""
    registry = load_experiments()
    values = {}
    for name in registry.names():
        specs = registry.get(name).runs(suite)
        if not specs:
            continue
        low = min(spec.train.train_min_len for spec in specs)
        high = max(spec.train.train_max_len for spec in specs)
        lengths = sorted({n for spec in specs for n in spec.eval.lengths})
        task_names = list(dict.fromkeys(spec.task for spec in specs))
        values.update({
            f"{name}_train_lengths": f"{low}..{high}" if low != high else str(high),
            f"{name}_id_lengths": ", ".join(str(n) for n in lengths if n <= high),
            f"{name}_ood_lengths": ", ".join(str(n) for n in lengths if n > high),
            f"{name}_n_ood": str(sum(n > high for n in lengths)),
            f"{name}_ood_factor": f"{max(lengths) / high:g}",
            f"{name}_tasks": ", ".join(f"`{task}`" for task in task_names),
            f"{name}_n_tasks": str(len(task_names)),
            f"{name}_archs": " and ".join(dict.fromkeys(spec.arch for spec in specs)),
            f"{name}_runs": str(len(specs)),
        })
    return values


def protocol_values() -> dict[str, str]:
    """The protocol's constants by name, as the protocol page quotes them: the fit criterion, the step caps,
    seeds, position capacity, compared encodings, T5's shared buckets and :func:`experiment_values`; and the
    fixed layout of a LaTeX table (:func:`pebench.render.tables.to_latex`), as the cite page quotes it."""
    standard = protocol.SCALES[REFERENCE_SUITE]
    defaults = TrainConfig()
    return {
        "fit_threshold": f"{defaults.fit_threshold:g}",
        "fit_examples": str(standard.get("fit_examples", defaults.fit_examples)),
        "fit_every": str(standard["fit_every"]),
        # the plateau stop as protocol v2 declared it (the suites still made under v2 keep it)
        "fit_patience": str(protocol.SCALE_V2["fit_patience"]),
        "standard_plateau_stop": (f"a plateau stop of {standard['fit_patience']} steps" if standard["fit_patience"]
                                  else "no plateau stop: a run trains until it fits or reaches its step cap"),
        "fit_min_drop_complement": f"{1 - defaults.fit_min_drop:g}",
        "standard_protocol": str(standard.get("protocol", protocol.PROTOCOL)),
        "standard_depth": str(standard["n_layers"]),
        "standard_width": str(standard["d_model"]),
        "standard_heads": str(standard["n_heads"]),
        "n_standard_encodings": str(len(protocol.SUITE_ENCODINGS[REFERENCE_SUITE])),
        "step_cap": str(standard["steps"]),
        "standard_task_caps": task_caps_text(protocol.TASK_STEPS.get(REFERENCE_SUITE, {})),
        "single_output_steps": str(protocol.SINGLE_OUTPUT_STEPS),
        "position_capacity": ", ".join(f"{suite} {n}" for suite, n in protocol.POSITION_CAPACITY.items()),
        "standard_seeds": str(len(protocol.SEEDS[REFERENCE_SUITE])),
        "lm_eval_span": f"{EVAL_SPAN:,}",
        "standard_lm_steps": f"{protocol.LM_STEPS[REFERENCE_SUITE]:,}",
        "n_compared": str(len(protocol.COMPARED_ENCODINGS)),
        "compared_encodings": ", ".join(f"`{name}`" for name in protocol.COMPARED_ENCODINGS),
        "newer_encodings": ", ".join(f"`{name}`" for name in protocol.NEWER_ENCODINGS),
        "field_2025": ", ".join(f"`{name}`" for name in protocol.FIELD_2025),
        "standard_batch_size": str(standard["batch_size"]),
        "capable_encodings": ", ".join(f"`{name}`" for name in protocol.CAPABLE_ENCODINGS),
        "capable_fit_goal": f"{100 * protocol.CAPABLE_FIT_GOAL:.0f}%",
        "t5_shared_buckets": t5_shared_buckets(),
        # the fixed layout of a LaTeX table (the cite page)
        "table_wide_columns": str(WIDE_COLUMNS),
        "table_block_columns": str(BLOCK_COLUMNS),
        "table_paragraph_chars": str(PARAGRAPH_CHARS),
        "table_float_rows": str(FLOAT_ROWS),
        **experiment_values(),
        **inference_values(),
    }


def inference_values(suite: str = REFERENCE_SUITE, experiment: str = "length_extrapolation") -> dict[str, str]:
    """What the declared comparisons of ``experiment`` can resolve in ``suite``: the smallest p of a sign-flip test
    over one task's seeds (the per-task view), and of one over its order-dependent tasks (the unit of a declared
    verdict), alone and at Holm's first step over the family of declared comparisons (every comparison in every
    arch). The smallest p of ``n`` units is ``2 / 2**n``, the exact test's
    (:func:`pebench.analysis.leaderboard.smallest_p`; the leaderboard needs pandas, which this module, read by the
    site, does not import)."""
    specs = load_experiments().get(experiment).runs(suite)
    dependent = len({spec.task for spec in specs if tasks.get(spec.task).order_dependent})
    declared = registered_report_specs([experiment]).get(experiment)
    family = len(declared.comparisons if declared else ()) * len({spec.arch for spec in specs})
    by_task = 2 / 2**dependent
    return {"seed_unit_smallest_p": f"{2 / 2 ** len(protocol.SEEDS[suite]):.3f}",
            "n_dependent_tasks": str(dependent),
            "task_unit_smallest_p": f"{by_task:.3f}",
            "comparison_family": str(family),
            "task_unit_holm_first": f"{min(1.0, family * by_task):.3f}"}


def battery_tables(suite: str = REFERENCE_SUITE) -> dict[str, Table]:
    """Per registered experiment with runs in ``suite``: its tasks (cells valued by task name) with their
    Chomsky class (when the task has one), whether order matters, and the step cap of each architecture (the
    same for every encoding)."""
    registry = load_experiments()
    tables = {}
    for name in registry.names():
        specs = registry.get(name).runs(suite)
        archs = list(dict.fromkeys(spec.arch for spec in specs))
        caps = {(spec.task, spec.arch): spec.train.steps for spec in specs}
        rows = []
        for task in dict.fromkeys(spec.task for spec in specs):
            chomsky = tasks.TASKS.meta(task).get("chomsky")
            rows.append([task, chomsky.replace("_", "-") if chomsky else "—",
                         "dependent" if tasks.get(task).order_dependent else "invariant (control)",
                         *(caps.get((task, arch), "—") for arch in archs)])
        tables[name] = text_table(["task", "Chomsky class", "order", *(f"step cap ({a})" for a in archs)], rows)
    return tables


def unranked_suites_text(present: Iterable[str]) -> str:
    """The sentence that names the suites of :data:`pebench.protocol.SUITES` (the smoke suite aside) with no
    results among ``present``, so not ranked; ``""`` when every one has results."""
    present = set(present)
    absent = [suite for suite in protocol.SUITES if suite != "smoke" and suite not in present]
    if not absent:
        return ""
    several = len(absent) > 1
    return (f"No results of the {' and '.join(f'`{suite}`' for suite in absent)} suite{'s' if several else ''} "
            f"are committed, so {'they are' if several else 'it is'} not ranked here.")


def reference_history(checkout: Path, suite: str = REFERENCE_SUITE) -> Table:
    """The commits of ``checkout`` that changed ``results/<suite>/manifest.json``, newest first
    (:func:`pebench.store.provenance.manifest_history`): each with its date, the code commit its latest invocation
    recorded and the first clause of its message."""
    return text_table(["commit", "date", "made with code at", "commit message"],
                      [[f"`{commit}`", date, f"`{code[:7]}`" if code else "—", subject.split(": ")[0][:120]]
                       for commit, date, code, subject in manifest_history(f"results/{suite}/manifest.json", checkout)])


def protocol_columns_text(columns: Iterable[str]) -> str:
    """Whether results whose ``summary/runs.csv`` has ``columns`` were made under the current protocol, in words."""
    if {"fitted", "id_floor_token_acc"} <= set(columns):
        return "record the fit criterion (`fitted`, `steps_to_fit`) and the position-free floors."
    return "predate this protocol: they have no `fitted` or floor columns."


def reference_history_text(checkout: Path, results: Path, suite: str = REFERENCE_SUITE) -> str:
    """The commits of ``checkout`` that changed ``suite``'s reference manifest (:func:`reference_history`), and
    whether the results in ``results`` carry the fit criterion (the header of their ``summary/runs.csv``,
    :func:`protocol_columns_text`), in Markdown."""
    history = reference_history(checkout, suite)
    lines = [history.to_markdown() if history.rows else
             not_in_results("History of the reference", f"no git history of `results/{suite}/manifest.json`")]
    runs = Path(results) / suite / "summary" / "runs.csv"
    if runs.exists():  # read as any file of a results folder is: never through a link
        columns = store.read_plain_file(runs, "summary").split(b"\n", 1)[0].decode("utf-8").split(",")
        lines.append(f"The results this site was built from (`{display_path(runs, checkout)}`) "
                     f"{protocol_columns_text(columns)}")
    return "\n".join(lines) + "\n"


def ranked_battery(suite: str = REFERENCE_SUITE) -> list[str]:
    """The tasks of ``suite``'s ranked experiments (those whose report declares a primary metric), in the order
    their runs are made: the battery the protocol's boards rank."""
    registry = load_experiments()
    specs = [spec for name in registry.names() if registry.get(name).report.primary_metric
             for spec in registry.get(name).runs(suite)]
    return list(dict.fromkeys(spec.task for spec in specs))


def fit_criterion(suite: str = REFERENCE_SUITE) -> list[PagePiece]:
    """Protocol v3's fit criterion with the training lengths of ``suite``'s ranked battery that are too small to
    split (:func:`pebench.render.fit_criterion.fit_criterion_blocks`)."""
    return fit_criterion_blocks(ranked_battery(suite), suite=suite)


#: the standard suite's wall-time budget on 2 CPU cores (#12)
SUITE_BUDGET_MINUTES = 60


@dataclass(frozen=True)
class SuiteTime:
    """The latest wall-time measurement of one suite (a row of ``suites.csv``) and the machine it ran on."""

    suite: str
    runs: int
    workers: int
    wall_seconds: float
    wall_minutes: float
    date: str
    cpu: str  # " on a 2-core x86_64 CPU" when machine.csv exists, else ""

    def text(self) -> str:
        """The measurement in words, e.g. ``606 runs in 75 min with 2 workers on a 2-core x86_64 CPU``."""
        took = f"{self.wall_seconds:.0f} s" if self.wall_seconds < 120 else f"{self.wall_minutes:.0f} min"
        return f"{self.runs} runs in {took} with {self.workers} workers{self.cpu}"


def _count(text: str) -> int:
    return int(float(text))  # pandas writes a count column with a gap as floats ("606.0")


def measured_suite_times(performance: Path) -> list[SuiteTime]:
    """The latest measurement of each suite in ``performance/suites.csv`` (its last row: :mod:`pebench.bench.throughput`
    appends them in the order they were measured), in the order of those rows, with the machine of
    ``performance/machine.csv``; empty when the suites were never timed."""
    path, machine = performance / "suites.csv", performance / "machine.csv"
    if not path.exists():
        return []
    cpu = ""
    if machine.exists():
        first = store.read_plain_csv(machine, "machine table")[0]
        cpu = f" on a {_count(first['cpu_count'])}-core {first['processor']} CPU"
    latest: dict[str, dict[str, str]] = {}
    for row in store.read_plain_csv(path, "suite times"):
        latest.pop(row["suite"], None)  # a suite sits where its last row does
        latest[row["suite"]] = row
    return [SuiteTime(suite, _count(row["runs"]), _count(row["workers"]), float(row["wall_seconds"]),
                      float(row["wall_minutes"]), row["date"], cpu) for suite, row in latest.items()]


@dataclass(frozen=True)
class BudgetOverrun:
    """How far the standard suite's wall time exceeds :data:`SUITE_BUDGET_MINUTES`, and the size of its length
    experiment's battery (the smallest the protocol allows, the reason it is not cut to fit)."""

    minutes_over: float
    n_tasks: int
    n_seeds: int


def standard_budget_overrun(minutes: float) -> BudgetOverrun | None:
    """``None`` when the standard suite's measured ``minutes`` are within :data:`SUITE_BUDGET_MINUTES`, else by
    how much it is over and its length experiment's tasks and seeds (read from the suite's runs as protocol v2
    declared them: the budget was v2's; protocol v3 has none)."""
    if minutes <= SUITE_BUDGET_MINUTES:
        return None
    with protocol.as_declared("standard", 2):
        runs = suite_runs("standard", ["length_extrapolation"])
    return BudgetOverrun(minutes - SUITE_BUDGET_MINUTES, len({s.task for s in runs}), len({s.seed for s in runs}))


def standard_budget_text(minutes: float) -> str:
    """Where the standard suite's measured wall time (``minutes``, of protocol v2's suite) stood against v2's
    budget, and, if over, why it was not cut to fit (the protocol page's evidence; :func:`standard_budget_overrun`)."""
    over = standard_budget_overrun(minutes)
    if over is None:
        return f"within its budget of {SUITE_BUDGET_MINUTES} minutes"
    return (f"over protocol v2's budget of {SUITE_BUDGET_MINUTES} minutes by {over.minutes_over:.0f} min. It "
            "was not cut to fit: a stricter plateau stop would end runs before their fit (the stop-rule replay) and "
            "lower step caps would leave capable encodings unfitted (the step-cap pilot), both on the "
            f"{{doc}}`protocol` page, while its length experiment held the smallest battery v2 allowed: "
            f"{over.n_tasks} tasks, {over.n_seeds} seeds, every compared encoding")


def suite_time_values(performance: Path) -> dict[str, str]:
    """``<suite>_time``, ``standard_budget`` and ``standard_scope`` (which protocol's suite the measurement timed,
    where that is not the current one) from the latest measurement of each suite in
    ``performance/suites.csv`` (machine named; :func:`measured_suite_times`), e.g.
    ``165 runs in 17 min with 2 workers on a 2-core x86_64 CPU (measured 2026-11-22)``."""
    times = {}
    with protocol.as_declared("standard", 2):
        v2_runs = len(suite_runs("standard"))  # a measurement of v2's suite (606 runs) is judged by v2's budget
    now, runs = protocol.SCALES["standard"].get("protocol", protocol.PROTOCOL), len(suite_runs("standard"))
    for measured in measured_suite_times(performance):
        times[f"{measured.suite}_time"] = f"{measured.text()} (measured {measured.date}, {{doc}}`performance`)"
        if measured.suite == "standard":
            if measured.runs == v2_runs != runs:  # say which suite that was
                times["standard_scope"] = (f"That was protocol v2's standard suite; protocol v{now}'s, of {runs:,} "
                                           "runs, has not been timed whole on an idle machine.")
            times["standard_budget"] = (standard_budget_text(measured.wall_minutes) if measured.runs == v2_runs
                                        else f"the suite of protocol v{now}, whose scale is the one its pilots "
                                        "chose ({doc}`pilots`)")
    times.setdefault("standard_budget", "not measured yet")
    times.setdefault("standard_scope", "")
    for suite in ("smoke", "standard", "paper"):
        times.setdefault(f"{suite}_time", "not measured yet (see {doc}`performance`)")
    return times


#: where the next reference of a suite is made, run by run, while the committed one stays in ``results/<suite>``
NEXT_FOLDER = "next"


def archived_text(results: Path, suite: str = REFERENCE_SUITE) -> str:
    """Which earlier references of ``suite`` are kept whole under ``results/archive/``
    (:func:`pebench.store.report_file.archived_roots`), each with its results version, run count and reruns, in one
    sentence; ``""`` when none is.

    Raises:
        pebench.store.ResultsError: a link in the archive (never followed).
        pebench.store.report_file.StaleReport: a kept reference without a current report.
    """
    kept = []
    for root in report_file.archived_roots(results):
        folder = store.refuse_link(store.path_in(root, suite))
        if report_file.has_results(folder):
            reruns = [rerun.name for rerun in report_file.rerun_folders(root)]
            beside = f"; its rerun{'s' * (len(reruns) > 1)} {', '.join(reruns)} beside it" if reruns else ""
            version = report_file.current_report(folder).get("results_version", "")
            kept.append(f"`{display_path(folder, Path(results).parent)}` ({suite} {version}, "
                        f"{report_file.count_runs(folder):,} runs{beside})")
    if not kept:
        return ""
    return (f"The earlier {suite} references are kept whole, so that their tables stay citable and `pebench report` "
            f"regenerates them: {'; '.join(kept)}.")


def regeneration_text(results: Path, suite: str = REFERENCE_SUITE) -> str:
    """Where the regeneration of ``suite``'s reference under the current protocol stands, in one sentence: the runs
    of the suite's run specs whose files ``results/next/<suite>/raw`` holds (file names are only compared with the
    expected run ids, never opened here), and the protocol of the committed reference; ``""`` when nothing is being
    regenerated.

    Raises:
        pebench.store.ResultsError: a link where the folder or its ``raw/`` should be (never followed).
    """
    folder = store.refuse_link(store.refuse_link(Path(results) / NEXT_FOLDER) / suite)
    if not folder.exists():
        return archived_text(results, suite)
    expected = {spec.run_id for spec in suite_runs(suite)}
    made = {store.run_file_id(path) for path in store.raw_files(store.refuse_link(folder / "raw"))} & expected
    protocol_version = protocol.SCALES[suite].get("protocol", protocol.PROTOCOL)
    shown = display_path(folder, Path(results).parent)  # as the reader of the site sees it
    return (f"The {suite} reference is being regenerated under protocol v{protocol_version}: "
            f"{len(made):,} of its {len(expected):,} runs are committed under `{shown}` "
            "(resumable, run by run). Until every run is in, the results pages show the committed reference, "
            "made under the protocol its rows record.")


#: the protocol page's includes made from the protocol alone (docs/_ext: ``_generated/includes/<name>.md``), each a
#: function giving its blocks
INCLUDES = {"v3_fit": fit_criterion, "v4_declaration": v4_declaration}
