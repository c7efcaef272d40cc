"""Run specifications, experiment grids, stable run ids and the experiments of a suite.

A :class:`RunSpec` is the fully resolved configuration of one training run
and its evaluation; its :attr:`~RunSpec.run_id` is a hash of that
configuration, so the same run has the same id on every machine. An
:class:`Experiment` is a base configuration plus a grid (every combination of
the listed values) that expands to run specs, and its report declaration
(:class:`ReportSpec`); a suite is a named set of experiments, each expanded at
the suite's scale (the suites, scales, seeds and step caps are the protocol's:
:mod:`pebench.protocol`).

Experiments are declared by thin scripts under ``experiments/`` that call
:func:`register_experiment`; :func:`load_experiments` imports them (never the
pilot scripts of ``pilots/``, which are run on their own).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import numbers
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebench import encodings, tasks
from pebench.config import (
    ARCHS,
    CONDITIONS,
    DECODINGS,
    TrainConfig,
    check_encoding_options,
    check_int,
    check_seed,
    is_causal,
    run_id_of,
)
from pebench.lazy_torch import torch
from pebench.protocol import (
    ARCH_TASKS,
    POSITION_CAPACITY,
    PROTOCOL,
    PROTOCOLS,
    SAMPLES,
    SCALES,
    SEEDS,
    SUITE_ENCODINGS,
    SUITES,
    task_budget,
)
from pebench.registry import Registry, import_file
from pebench.report_spec import ReportSpec, as_tuple
from pebench.store import raw_dir, raw_files, read_manifest, run_file_id
from pebench.store.schema import BASE_VARIANT, VARIANT_LABEL, reads_as_number


@dataclass(frozen=True)
class EvalConfig:
    """How a trained model is evaluated."""

    lengths: tuple[int, ...] = (4, 8, 16, 32, 64)  # input lengths
    n_examples: int = 256  # examples per length and condition
    batch_size: int = 256  # examples per forward pass
    conditions: tuple[str, ...] = ("original",)  # see pebench.config.CONDITIONS
    decoding: str = "teacher"  # "teacher" or "greedy"
    equivariance: bool = False  # record the permutation-equivariance gap at init and after training
    # Evaluation-time variants of the encoding: (label, options JSON) pairs; the
    # trained weights are loaded into an encoding rebuilt with these options
    # (e.g. RoPE scaling). Empty = evaluate the trained model as is.
    variants: tuple[tuple[str, str], ...] = ()
    seed: int = 0  # evaluation data seed, shared by every run so all see the same examples

    def __post_init__(self) -> None:
        integers = all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in self.lengths)
        if not self.lengths or not integers or min(self.lengths) < 1:
            raise ValueError(f"eval lengths must be a non-empty list of positive ints, got {self.lengths}")
        check_int("eval n_examples", self.n_examples)
        check_int("eval batch_size", self.batch_size)
        check_seed("eval seed", self.seed)
        for condition in self.conditions:
            if condition not in CONDITIONS:
                raise ValueError(f"unknown condition {condition!r}; valid: {', '.join(CONDITIONS)}")
        if self.decoding not in DECODINGS:
            raise ValueError(f"unknown decoding {self.decoding!r}; valid: {', '.join(DECODINGS)}")
        if self.n_examples < 1 or self.batch_size < 1:
            raise ValueError("n_examples and batch_size must be positive")
        labels = [variant[0] if isinstance(variant, (tuple, list)) and len(variant) == 2 else variant
                  for variant in self.variants]
        for label in labels:  # a results folder refuses any other label (pebench.store reads it as written)
            if (not isinstance(label, str) or not VARIANT_LABEL.fullmatch(label) or reads_as_number(label)
                    or label == BASE_VARIANT):
                raise ValueError(f"an evaluation variant is a (label, options JSON) pair whose label is a name "
                                 f"(letters, digits, '_', '-', '.'; not a number) other than {BASE_VARIANT!r}; "
                                 f"got {label!r}")
        if len(set(labels)) != len(labels):
            raise ValueError(f"evaluation variant labels must differ, got {labels}")


#: the fields of a :class:`RunSpec` that say what else a run writes, not what it is: not in :meth:`RunSpec.resolved`
NOT_IDENTITY = frozenset({"keep_predictions"})


@dataclass(frozen=True)
class RunSpec:
    """The complete configuration of one run (train once, evaluate at many lengths)."""

    suite: str
    experiment: str
    task: str
    encoding: str
    arch: str
    seed: int
    encoding_options: str = "{}"  # canonical JSON of the encoding's options
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0
    protocol: int = PROTOCOL  # 2: the training context of protocol v2 (train_context); not in v2 run ids
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    # not part of the run (no run id, no column, no row changes): whether its evaluation also keeps every example's
    # prediction, written beside its run file (pebench run --predictions: pebench.store.predictions)
    keep_predictions: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        validate_spec(self)

    @property
    def task_version(self) -> int:
        """Version of the task, part of the run's identity."""
        return tasks.TASKS.get(self.task).version

    def options(self) -> dict[str, Any]:
        """The encoding options as a dict."""
        return json.loads(self.encoding_options)

    def build_options(self, **overrides: Any) -> dict[str, Any]:
        """Options the encoding is built with: :meth:`options` updated by ``overrides`` (an evaluation
        variant's). ``causal`` is not among them: :func:`pebench.model.build_model` gives it from the arch.

        Raises:
            ValueError: ``causal`` given as an encoding option.
        """
        options = {**self.options(), **overrides}
        check_encoding_options(options)
        return options

    def max_len(self) -> int:
        """Longest rendered sequence the model sees, in training or evaluation. Nothing is built from
        it (rule 2 of the protocol: nothing depends on the evaluation lengths); it must fit the
        :meth:`position_capacity`."""
        task = tasks.get(self.task)
        longest = max(max(self.eval.lengths), self.train.train_max_len)
        return longest + task.output_length(longest) + 1

    def train_context(self) -> int:
        """Longest rendered *training* sequence, the ``train_len`` every encoding is built with (FIRE's
        threshold, CoPE's table, YaRN's original context): the length of a training example at
        ``train_max_len`` as the task renders it for the arch (decoder ``[x, SEP, y[:-1]]``, encoder
        ``[x, SEP, blanks]``, a language model's window as it is).

        Protocol v2 counted input, separator and the whole output for every arch: one position too many
        for a decoder, and twice the window for a language model. Its runs keep that count, so that they
        are reproduced as they were made."""
        task = tasks.get(self.task)
        if self.protocol == 2:
            return self.train.train_max_len + task.output_length(self.train.train_max_len) + 1
        return rendered_length(task, self.train.train_max_len, self.arch)

    def position_capacity(self) -> int:
        """Positions every encoding must support: the suite's :data:`~pebench.protocol.POSITION_CAPACITY`, a protocol
        constant (sizes learned tables and the range of randomized positions; never the evaluation
        lengths)."""
        return POSITION_CAPACITY[self.suite]

    def resolved(self) -> dict[str, Any]:
        """Flat dict of every field (train and eval fields inlined), plus the task version."""
        flat: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in NOT_IDENTITY:
                continue
            if f.name == "train":
                flat.update(value.to_dict())
            elif f.name == "eval":
                for g in dataclasses.fields(value):
                    item = getattr(value, g.name)
                    flat[f"eval_{g.name}"] = json.dumps(item) if isinstance(item, tuple) else item
            else:
                flat[f.name] = value
        flat["seed"] = self.seed
        if self.protocol == 2:
            del flat["protocol"]  # v2 run ids predate the field
        flat["task_version"] = self.task_version
        flat["position_capacity"] = self.position_capacity()
        return flat

    @property
    def run_id(self) -> str:
        """Stable 16-hex-digit hash of :meth:`resolved` (independent of field order)."""
        return run_id_of(self.resolved())


def rendered_length(task: tasks.Task, length: int, arch: str) -> int:
    """Positions of one example of ``task`` at input ``length`` rendered for ``arch``: the task's
    :meth:`~pebench.tasks.Task.rendered_length`, computed without drawing data (and so without torch). A task that
    overrides :meth:`~pebench.tasks.Task.render` but not ``rendered_length`` (a plugin's) is measured instead: one
    example drawn with a fixed seed, once per task version (every example of a length has the same rendered
    length)."""
    cls = type(task)
    if _defined_by(cls, "render") is _defined_by(cls, "rendered_length"):
        return task.rendered_length(length, arch)
    return _rendered_length(cls, task.name, task.version, length, arch)


def _defined_by(cls: type, attribute: str) -> type:
    """The class of ``cls``'s method resolution order that defines ``attribute``."""
    return next(owner for owner in cls.__mro__ if attribute in vars(owner))


@functools.lru_cache(maxsize=1024)
def _rendered_length(cls: type[tasks.Task], name: str, version: int, length: int, arch: str) -> int:
    task = cls()
    tokens, _labels = tasks.render(task, task.sample(1, length, torch.Generator().manual_seed(0)), arch)
    return int(tokens.shape[1])


def canonical_options(options: Mapping[str, Any] | str | None) -> str:
    """Canonical JSON (sorted keys, no spaces) of encoding options."""
    if options is None:
        return "{}"
    if isinstance(options, str):
        options = json.loads(options)
    return json.dumps(dict(options), sort_keys=True, separators=(",", ":"))


def validate_spec(spec: RunSpec) -> None:
    """Reject impossible configurations with a message saying what to change."""
    if spec.suite not in SUITES:
        raise ValueError(f"unknown suite {spec.suite!r}; valid: {', '.join(SUITES)}")
    if spec.arch not in ARCHS:
        raise ValueError(f"unknown arch {spec.arch!r}; valid: {', '.join(ARCHS)}")
    task = tasks.get(spec.task)
    if getattr(task, "decoder_only", False) and spec.arch != "decoder":
        raise ValueError(f"task {spec.task!r} is a language-modelling task and needs arch='decoder'")
    encodings.ENCODINGS.get(spec.encoding.partition(":")[0])
    _check_model(spec)
    if spec.train.train_min_len < task.min_length:
        raise ValueError(f"task {spec.task!r} needs train_min_len >= {task.min_length}")
    if min(spec.eval.lengths) < task.min_length:
        raise ValueError(f"task {spec.task!r} needs eval lengths >= {task.min_length}")
    if spec.max_len() > spec.position_capacity():
        raise ValueError(
            f"the longest evaluated sequence of task {spec.task!r} has {spec.max_len()} positions, more than the "
            f"{spec.suite} suite's position capacity {spec.position_capacity()} (POSITION_CAPACITY); evaluate "
            "shorter lengths"
        )
    # Building the encoding, exactly as the runner will, checks its options
    # (unknown keys, odd head dims, options that contradict the architecture, ...).
    for overrides in [{}] + [json.loads(options) for _label, options in spec.eval.variants]:
        registered = encodings.ENCODINGS.get(spec.encoding.partition(":")[0])
        _check_encoding(registered, spec.encoding, spec.d_model, spec.n_heads, spec.position_capacity(),
                        spec.train_context(), is_causal(spec.arch),
                        json.dumps(spec.build_options(**overrides), sort_keys=True))


def _check_model(spec: RunSpec) -> None:
    """The model's sizes (positive ints, heads dividing the width), seed, protocol and dropout."""
    for key in ("d_model", "n_layers", "n_heads", "mlp_ratio"):
        check_int(key, getattr(spec, key))
        if getattr(spec, key) < 1:
            raise ValueError(f"{key} must be a positive int, got {getattr(spec, key)}")
    check_seed("seed", spec.seed)
    if spec.protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {spec.protocol!r}; valid: {', '.join(map(str, PROTOCOLS))}")
    if not 0.0 <= spec.dropout < 1.0:  # NaN fails too
        raise ValueError(f"dropout must be in [0, 1), got {spec.dropout}")
    if spec.d_model % spec.n_heads:
        raise ValueError(f"d_model={spec.d_model} is not divisible by n_heads={spec.n_heads}")


@functools.lru_cache(maxsize=4096)
def _check_encoding(registered: object, encoding: str, d_model: int, n_heads: int, max_len: int, train_len: int,
                    causal: bool, options: str) -> None:
    """Build ``encoding`` with these arguments (``options``: its build options as JSON), as the runner will, so
    that a bad option raises here. Remembered per arguments and per ``registered`` (what the registry holds under
    the encoding's name, so that a plugin registered again is checked again); a failure is not remembered:
    expanding a suite validates thousands of specs that share a few dozen encodings, and building each again
    took seconds."""
    encodings.build(encoding, d_model=d_model, n_heads=n_heads, max_len=max_len, train_len=train_len, causal=causal,
                    **json.loads(options))


# --------------------------------------------------------------------------- grids

RUN_FIELDS = {f.name for f in dataclasses.fields(RunSpec)} - {"train", "eval", "suite", "experiment", *NOT_IDENTITY}
TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)} - {"seed"}
EVAL_FIELDS = {f"eval_{f.name}" for f in dataclasses.fields(EvalConfig)}
KEYS = RUN_FIELDS | TRAIN_FIELDS | EVAL_FIELDS


def make_spec(suite: str, experiment: str, config: Mapping[str, Any]) -> RunSpec:
    """Build a :class:`RunSpec` from a flat config dict (keys of :data:`KEYS`).

    Raises:
        ValueError: unknown keys (the valid keys are listed) or invalid values.
    """
    unknown = sorted(set(config) - KEYS)
    if unknown:
        raise ValueError(f"unknown config key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(KEYS))}")
    run = {k: v for k, v in config.items() if k in RUN_FIELDS}
    run["encoding_options"] = canonical_options(run.get("encoding_options"))
    train_kwargs = {k: v for k, v in config.items() if k in TRAIN_FIELDS}
    eval_kwargs = {k[len("eval_") :]: as_tuple(v) for k, v in config.items() if k in EVAL_FIELDS}
    if "seed" not in run:
        raise ValueError("config needs a 'seed'")
    train = TrainConfig(seed=run["seed"], **train_kwargs)
    return RunSpec(suite=suite, experiment=experiment, train=train, eval=EvalConfig(**eval_kwargs), **run)


def expand(grid: Mapping[str, Iterable[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as dicts (in a stable order)."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(list(grid[k]) for k in keys))]


@dataclass(frozen=True)
class Experiment:
    """A named experiment: for each suite, a base config and a grid, and what it reports.

    Attributes:
        name: experiment name (a column of every result row).
        description: one paragraph for listings and docs.
        configs: maps a suite name to a function returning a list of
            ``(base, grid)`` pairs; each grid expands over its base.
        report: its tables, figures, findings and compared metrics (:class:`ReportSpec`).
    """

    name: str
    description: str
    configs: Mapping[str, Callable[[], list[tuple[dict[str, Any], dict[str, list[Any]]]]]]
    script: str = ""
    report: ReportSpec = field(default_factory=ReportSpec)

    def runs(self, suite: str, extra_encodings: Sequence[str] = (), extra_tasks: Sequence[str] = ()) -> list[RunSpec]:
        """The run specs of this experiment in ``suite`` (empty if it is not part of it).

        ``extra_encodings`` join every grid that compares all of the suite's
        :data:`~pebench.protocol.SUITE_ENCODINGS` (not, e.g., the RoPE-only scaling grid), under the same
        protocol: how a new encoding is compared with the baselines without editing pebench
        (``pebench run --encoding NAME``).
        ``extra_tasks`` join every family of per-task grids (:func:`per_task_grids`), each with the
        same base configuration and architectures as the family's tasks (``pebench run --task NAME``).
        """
        return [make_spec(suite, self.name, config) for config in self.run_configs(suite, extra_encodings, extra_tasks)]

    def run_configs(self, suite: str, extra_encodings: Sequence[str] = (),
                    extra_tasks: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The flat configs :meth:`runs` makes its run specs of, one per run, unchecked: how many runs a suite
        has and their seeds without building (and validating) every spec (``pebench list suites``)."""
        if suite not in SUITES:
            raise ValueError(f"unknown suite {suite!r}; valid: {', '.join(SUITES)}")
        if suite not in self.configs:
            return []
        configs = []
        pairs = self.configs[suite]()
        if extra_tasks and isinstance(pairs, TaskGrids):
            pairs = pairs.with_tasks(extra_tasks)
        for base, grid in pairs:
            compared = list(grid.get("encoding", ()))
            archs = set(grid.get("arch", [base.get("arch", "decoder")]))
            extra = [name for name in extra_encodings if name not in compared
                     and (archs == {"decoder"} or not encodings.meta(name)["causal_only"])]
            full = all(set(_encodings_for(suite, arch)) <= set(compared) for arch in archs)
            if extra and full:
                grid = {**grid, "encoding": compared + extra}
            configs += [{**base, **point} for point in expand(grid)]
        return configs


EXPERIMENTS: Registry[Experiment] = Registry("experiment", base=Experiment)


def replication_experiment(name: str, description: str, configs: Callable[[], list], script: str, *,
                           suite: str = "replication", **report: Any) -> Experiment:
    """Register the experiment of a replication script (``experiments/replicate_*.py``: a replication, its scale
    check or its arm check): ``configs`` expanded in ``suite``, reported as the :class:`ReportSpec` fields
    ``report`` say (the extrapolation layout unless they name another), through :func:`register_experiment`."""
    spec = ReportSpec(**{"layout": "extrapolation", **report})
    return register_experiment(Experiment(name, description, {suite: configs}, script, spec))


def register_experiment(experiment: Experiment) -> Experiment:
    """Register ``experiment`` (called at import time by each script in ``experiments/`` and by plugins).

    The same experiment registered again (its file imported a second time, e.g. a script run as
    ``python experiments/NAME.py``) keeps the first registration.

    Raises:
        ValueError: an experiment defined in another file is registered under this name.
    """

    def defined_in(entry: Experiment) -> set[str]:  # its script, else the files of its config functions
        if entry.script:
            return {str(Path(entry.script).resolve())}
        codes = (getattr(function, "__code__", None) for function in entry.configs.values())
        return {str(Path(code.co_filename).resolve()) for code in codes if code is not None}

    if experiment.name in EXPERIMENTS:
        first, second = defined_in(EXPERIMENTS.get(experiment.name)), defined_in(experiment)
        if first != second or not first:  # a file is what tells a second import from another experiment
            raise ValueError(f"experiment {experiment.name!r} is registered twice (by {', '.join(sorted(first)) or '?'}"
                             f" and by {', '.join(sorted(second)) or '?'}); choose another name")
        return experiment
    EXPERIMENTS.register(experiment.name, description=experiment.description)(experiment)
    return experiment


def report_spec(name: str) -> ReportSpec:
    """The :class:`ReportSpec` of experiment ``name``; the default one for an experiment that is not
    registered here (results made elsewhere, or by a plugin that is not loaded)."""
    try:
        registry = load_experiments()
    except FileNotFoundError:
        registry = EXPERIMENTS
    return registry.get(name).report if name in registry else ReportSpec()


def registered_report_specs(names: Iterable[str] | None = None) -> dict[str, ReportSpec]:
    """The :class:`ReportSpec` of each of ``names`` (default: every experiment) that is registered here, in the
    registry's order (the order experiment scripts are loaded in); names not registered are left out, and an
    installation without the experiment scripts has none."""
    try:
        registry = load_experiments()
    except FileNotFoundError:
        registry = EXPERIMENTS
    wanted = set(registry.names() if names is None else names)
    return {name: registry.get(name).report for name in registry.names() if name in wanted}


def report_declarations(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The report declarations of the registered experiments among ``names`` as JSON-ready records
    (:func:`report_spec_from_record` reads one back): what a results folder's manifest and ``report.json``
    record, so that a report of the folder needs no experiment script (issue 38, item 7)."""
    return {name: dataclasses.asdict(spec) for name, spec in registered_report_specs(names).items()}


def experiments_dir() -> Path:
    """pebench's own ``experiments/`` folder, the one beside the ``pebench`` package. Never one of the working
    directory: a command run inside a downloaded folder must not import its code (a user's experiments come
    through ``--plugin`` or an entry point, :mod:`pebench.registry`)."""
    return Path(__file__).resolve().parents[2] / "experiments"


def load_experiments(directory: Path | None = None) -> Registry[Experiment]:
    """Import every experiment script in ``directory`` (default :func:`experiments_dir`).

    Raises:
        ValueError: ``directory`` is a ``pilots/`` folder (declared pilot scripts are run on their own, never
            loaded as experiments).
        FileNotFoundError: ``directory`` does not exist.
    """
    directory = directory or experiments_dir()
    if Path(directory).resolve().name == "pilots":
        raise ValueError(f"{directory} holds pilot scripts, which are never loaded as experiments; run a pilot "
                         "as python pilots/NAME.py")
    if not directory.is_dir():
        raise FileNotFoundError(
            f"experiments folder {directory} not found; install pebench from a clone of its repository with "
            "pip install -e . (its experiments are the scripts beside the package)"
        )
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = f"pebench_experiments.{path.stem}"
        if module_name in sys.modules:
            continue
        import_file(module_name, path)
    return EXPERIMENTS


def suite_runs(
    suite: str, experiments: Iterable[str] | None = None, extra_encodings: Sequence[str] = (),
    extra_tasks: Sequence[str] = (),
) -> list[RunSpec]:
    """All run specs of ``suite`` (optionally only the named experiments), ids unique. A declared sample
    (:data:`~pebench.protocol.SAMPLES`, e.g. ``quick``) gives the sampled suite's specs it draws
    (:func:`sample_configs`).

    ``extra_encodings``/``extra_tasks``: encodings and tasks compared beside the standard ones
    (see :meth:`Experiment.runs`).
    """
    registry = load_experiments()
    names = list(experiments) if experiments else registry.names()
    if suite in SAMPLES:  # a declared sample: the sampled suite's own runs (same run ids), fewer of them
        if extra_encodings or extra_tasks:
            raise ValueError(f"the {suite} suite is a sample of the {SAMPLES[suite]['suite']} suite's reference "
                             "runs; an encoding or task of your own joins that suite (pebench evaluate NAME)")
        parent = SAMPLES[suite]["suite"]
        drawn = sample_configs({name: registry.get(name).run_configs(parent) for name in names}, suite)
        specs = [make_spec(parent, name, config) for name, configs in drawn.items() for config in configs]
    else:
        specs = [spec for name in names for spec in registry.get(name).runs(suite, extra_encodings, extra_tasks)]
    ids = [s.run_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"suite {suite!r} contains duplicate runs; check the experiment grids")
    return specs


def declared_sample(folder: Path) -> tuple[str, frozenset[str]] | None:
    """The declared sample (:data:`~pebench.protocol.SAMPLES`, e.g. ``quick``) whose runs hold every run of the
    results folder ``folder`` (by the names of its run files; its manifest, if any, names the sampled suite), with
    the sample's run ids: what ``folder`` is compared with its reference on
    (:func:`pebench.analysis.compare.compare`); ``None`` when it holds a run of no sample (a rerun of the suite)."""
    held = {run_file_id(path) for path in raw_files(raw_dir(folder))}
    suite = (read_manifest(folder) or {}).get("suite") if Path(folder).is_dir() else None
    for name, rule in SAMPLES.items():
        if not held or suite not in (None, rule["suite"]):
            continue
        try:
            if len(held) > sample_size(name):  # a rerun of the suite: the sample's run ids (torch) are not needed
                continue
            run_ids = frozenset(spec.run_id for spec in suite_runs(name))
        except FileNotFoundError:  # no experiment scripts installed: no sample to know
            return None
        if held <= run_ids:
            return name, run_ids
    return None


def sample_size(sample: str) -> int:
    """How many runs the declared ``sample`` draws, counted from the sampled suite's configs alone (making their
    run specs builds every encoding, which imports torch)."""
    registry = load_experiments()
    configs = {name: registry.get(name).run_configs(SAMPLES[sample]["suite"]) for name in registry.names()}
    return sum(len(drawn) for drawn in sample_configs(configs, sample).values())


def sample_configs(configs: Mapping[str, Sequence[Mapping[str, Any]]], sample: str) -> dict[str, list[dict[str, Any]]]:
    """The configs of the declared ``sample`` (:data:`~pebench.protocol.SAMPLES`) among ``configs`` (per experiment,
    those of the sampled suite): ``per_stratum`` per (experiment, arch, task), in the order the strata come. Each
    stratum takes an encoding it runs from a deck of the experiment's encodings, and the next seed from a deck of its
    seeds, both shuffled with ``draw_seed`` and dealt again when empty: every encoding once before any twice. Of the
    deck's encodings a stratum runs, it takes the one the fewest later strata run (the first in the deck among
    those), so that an encoding only some strata run (a causal one, on the decoder) is dealt where it can be rather
    than left in the deck. Only the configs' names are read, so the draw is the same whatever their other values."""
    import random

    rule = SAMPLES[sample]
    drawn: dict[str, list[dict[str, Any]]] = {}
    for experiment, runs in configs.items():
        strata: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for config in runs:
            strata.setdefault((config.get("arch", "decoder"), config["task"]), []).append(config)
        rng = random.Random(f"{rule['draw_seed']}/{experiment}")
        encodings_deck: list[str] = []
        seeds_deck: list[int] = []
        every_encoding = list(dict.fromkeys(config["encoding"] for config in runs))
        every_seed = sorted({config["seed"] for config in runs})
        chosen = []
        runs_here = [{config["encoding"] for config in members} for members in strata.values()]
        for index, members in enumerate(strata.values()):
            later = Counter(name for names in runs_here[index + 1:] for name in names)
            for _ in range(rule["per_stratum"]):
                here = runs_here[index]
                if not here & set(encodings_deck):  # a new round of the deck
                    encodings_deck += rng.sample(every_encoding, len(every_encoding))
                encoding = min((name for name in encodings_deck if name in here), key=later.__getitem__)
                encodings_deck.remove(encoding)
                seeds = {config["seed"] for config in members if config["encoding"] == encoding}
                if not seeds & set(seeds_deck):
                    seeds_deck += rng.sample(every_seed, len(every_seed))
                seed = next(s for s in seeds_deck if s in seeds)
                seeds_deck.remove(seed)
                chosen += [dict(config) for config in members
                           if (config["encoding"], config["seed"]) == (encoding, seed)]
        if chosen:
            drawn[experiment] = chosen
    return drawn


class TaskGrids(list):
    """The ``(base, grid)`` pairs of :func:`per_task_grids`, which remember how they were made so that
    more tasks can join them under the same protocol (:meth:`with_tasks`)."""

    def __init__(self, suite: str, base: Mapping[str, Any], task_list: Sequence[str], archs: Sequence[str]) -> None:
        self.suite, self.base, self.tasks, self.archs = suite, dict(base), list(task_list), list(archs)
        super().__init__(
            ({**SCALES[suite], **task_budget(suite, arch, task),
              "train_min_len": max(1, tasks.get(task).min_length), **_defined_lengths(self.base, task)},
             {"task": [task], "arch": [arch], "encoding": _encodings_for(suite, arch), "seed": SEEDS[suite]})
            for arch in self.archs
            for task in self.tasks + [t for t in ARCH_TASKS.get(suite, {}).get(arch, ()) if t not in self.tasks]
            if arch == "decoder" or not getattr(tasks.TASKS.get(task), "decoder_only", False)
        )

    def with_tasks(self, extra: Sequence[str]) -> TaskGrids:
        """These grids plus one per architecture for each task of ``extra`` not already compared
        (a decoder-only task joins the decoder grids only)."""
        return TaskGrids(self.suite, self.base, self.tasks + [t for t in extra if t not in self.tasks], self.archs)


def _defined_lengths(base: Mapping[str, Any], task: str) -> dict[str, Any]:
    """``base`` with its evaluation lengths cut to those ``task`` is defined for."""
    if "eval_lengths" not in base:
        return dict(base)
    definition = tasks.get(task)
    lengths = [n for n in base["eval_lengths"] if n >= definition.min_length
               and (definition.max_length is None or n <= definition.max_length)]
    return {**base, "eval_lengths": lengths}


def _encodings_for(suite: str, arch: str) -> list[str]:
    """The suite's compared encodings that are defined for ``arch`` (causal-only ones on decoders only)."""
    return [name for name in SUITE_ENCODINGS[suite]
            if arch == "decoder" or not encodings.meta(name.partition(":")[0])["causal_only"]]


def per_task_grids(suite: str, base: Mapping[str, Any], task_list: Sequence[str], archs: Sequence[str]) -> TaskGrids:
    """One ``(base, grid)`` pair per (arch, task), each with its :func:`~pebench.protocol.task_budget`, comparing
    every encoding of the suite's :data:`~pebench.protocol.SUITE_ENCODINGS` over its seeds; ``pebench run --task
    NAME`` adds more tasks to them (:meth:`TaskGrids.with_tasks`). An architecture also gets the tasks its suite
    adds on it alone (:data:`~pebench.protocol.ARCH_TASKS`: protocol v4's decoder battery)."""
    return TaskGrids(suite, base, task_list, archs)
