"""Every metric pebench reports, registered with its metadata: the only source of that metadata.

As in lm-evaluation-harness, a metric is registered by name with what the
analysis needs to know about it — its label, whether higher is better, how
its numbers are printed, which results it applies to and its reference level
(e.g. chance) — and, for a metric derived from others, the function computing
it::

    @register_metric("extrapolation_ratio", label="OOD/ID", higher_is_better=True, format="ratio")
    def extrapolation_ratio(runs):
        return runs["ood_token_acc"] / runs["id_token_acc"].where(runs["id_token_acc"] > 0)

:mod:`pebench.analysis.results`, :mod:`pebench.report`, :mod:`pebench.analysis.compare` and
:mod:`pebench.report.plots` take directions, labels and formats from here. Two
levels: ``run`` metrics are one number per run and evaluation variant
(:func:`pebench.analysis.results.run_metrics`, then aggregated over seeds);
``length`` metrics are one number per run, evaluation length and condition
(:func:`pebench.analysis.results.curves`, the lines of the figures).

A plugin (:mod:`pebench.registry`) can register a derived run metric: its
function receives the per-run frame of :func:`pebench.analysis.results.run_metrics`
(every metric registered before it is a column) and returns one value per row;
it is then aggregated over seeds like the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pebench.registry import Registry

if TYPE_CHECKING:  # the registry is read without pandas (the site's metrics table); computing takes frames
    import pandas as pd

#: how a metric's numbers are printed (:func:`pebench.render.tables.format_number`)
FORMATS = ("acc", "ratio", "length", "ppl", "gap", "int", "loss", "seconds")
#: what a metric applies to: any result, synthetic sequence tasks, or language modelling
APPLIES_TO = ("any", "sequence", "lm")
LEVELS = ("run", "length")

Compute = Callable[["pd.DataFrame"], "pd.Series"]


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
        name: its column in the result frames.
        label: short label for table headers.
        axis_label: longer label for figure axes and titles.
        higher_is_better: True/False, or None for a metric without a direction (no best-of-seeds,
            never ranked).
        format: how its numbers are printed (one of :data:`FORMATS`).
        applies_to: which results it describes (:data:`APPLIES_TO`).
        reference: the metric giving its reference level (e.g. the chance accuracy of an accuracy), or None.
        level: ``run`` or ``length`` (see the module docstring).
        description: one sentence for the docs.
        compute: for a derived run metric, the function of the per-run frame computing it; None for a
            metric measured from the raw rows by :mod:`pebench.analysis.results`.
        needs_fit: the metric judges a trained model (extrapolation, order use): a run that did not
            meet its fit criterion is no evidence for it (rule 1 of the protocol), so seed statistics
            use fitted runs only and a cell without one is reported as not fitted.
        interval: tables show its 95% interval over seeds beside its mean (not for a property of the task,
            such as chance, nor for a gap whose mean is its message).
        marked: tables mark the best value of each task (and those not significantly worse) in its direction;
            False for a metric whose best is no merit (OOD/ID is near 1 for a model at chance).
        floor: a position-free floor (:mod:`pebench.tasks.floors`): tables print it as a lower bound where its
            task's floor method gives only one (:data:`pebench.tasks.floors.BOUND_METHODS`).
    """

    name: str
    label: str
    axis_label: str
    higher_is_better: bool | None
    format: str
    applies_to: str
    reference: str | None
    level: str
    description: str
    compute: Compute | None = None
    needs_fit: bool = False
    interval: bool = True
    marked: bool = True
    floor: bool = False


RUN_METRICS: Registry[Metric] = Registry("run metric", base=Metric)
LENGTH_METRICS: Registry[Metric] = Registry("length metric", base=Metric)
#: the run metrics each report layout's tables show as columns, in order (:mod:`pebench.report` builds its
#: columns from them); a metric registered with ``tables=(layout, ...)`` joins the end of those layouts' columns
TABLE_COLUMNS: dict[str, list[str]] = {}
#: the run metrics ``pebench compare`` checks cell by cell for each report layout (``pebench.report.layouts.LAYOUTS``)
#: unless an experiment declares its own (``ReportSpec.key_metrics``); a plugin's layout adds its entry here.
#: Language modelling compares losses: the log of the perplexity, so a tolerance on them is relative.
LAYOUT_KEY_METRICS: dict[str, tuple[str, ...]] = {
    "extrapolation": ("id_token_acc", "ood_token_acc", "shuffled_token_acc"),
    "order": ("id_token_acc", "ood_token_acc", "shuffled_token_acc"),
    "variants": ("id_token_acc", "ood_token_acc", "shuffled_token_acc"),
    "perplexity": ("id_loss", "ood_loss"),
}


def register_metric(
    name: str,
    *,
    label: str,
    higher_is_better: bool | None,
    format: str = "acc",
    axis_label: str = "",
    applies_to: str = "any",
    reference: str | None = None,
    level: str = "run",
    description: str = "",
    needs_fit: bool = False,
    interval: bool = True,
    marked: bool = True,
    tables: tuple[str, ...] = (),
    floor: bool = False,
) -> Callable[[Compute | None], Compute | None]:
    """Register metric ``name``; used as a decorator of the function computing a derived run metric,
    or called on ``None`` for a metric measured from the raw rows (``register_metric(...)(None)``).
    ``tables`` names the report layouts (``extrapolation``, ``variants``, ``perplexity``) whose tables show it as
    a column, after their own (:data:`TABLE_COLUMNS`).

    Raises:
        ValueError: an unknown format, level or ``applies_to``, a function on a length metric, or a
            name registered twice.
    """
    for value, valid, what in ((format, FORMATS, "format"), (level, LEVELS, "level"),
                               (applies_to, APPLIES_TO, "applies_to")):
        if value not in valid:
            raise ValueError(f"metric {name!r}: unknown {what} {value!r}; valid: {', '.join(valid)}")
    if tables and level != "run":
        raise ValueError(f"metric {name!r}: only run metrics are table columns; give tables=() for a {level} metric")

    def decorator(compute: Compute | None) -> Compute | None:
        if compute is not None and level != "run":
            raise ValueError(f"metric {name!r}: only run metrics can be computed by a registered function")
        summary = (description or (compute.__doc__ or "").strip().split("\n")[0]) if compute else description
        metric = Metric(name, label, axis_label or label, higher_is_better, format, applies_to, reference, level,
                        summary, compute, needs_fit, interval, marked, floor)
        registry = RUN_METRICS if level == "run" else LENGTH_METRICS
        registry.register(name)(metric)
        for layout in tables:
            TABLE_COLUMNS.setdefault(layout, []).append(name)
        return compute

    return decorator


def get(name: str, level: str = "run") -> Metric:
    """The metric registered as ``name`` at ``level`` (raises with close names if unknown)."""
    return (RUN_METRICS if level == "run" else LENGTH_METRICS).get(name)


def run_metrics() -> list[Metric]:
    """Every run metric, in registration order (the column order of the summaries)."""
    return [RUN_METRICS.get(name) for name in RUN_METRICS.in_order()]


def length_metrics() -> list[Metric]:
    """Every length metric, in registration order."""
    return [LENGTH_METRICS.get(name) for name in LENGTH_METRICS.in_order()]


def directions(level: str = "run") -> dict[str, bool | None]:
    """Metric name -> higher-is-better (None: no direction), every metric of ``level``."""
    return {m.name: m.higher_is_better for m in (run_metrics() if level == "run" else length_metrics())}


def table_columns(layout: str) -> list[Metric]:
    """The run metrics the tables of report layout ``layout`` show as columns, in order (:data:`TABLE_COLUMNS`;
    empty for a layout that builds its own)."""
    return [RUN_METRICS.get(name) for name in TABLE_COLUMNS.get(layout, [])]


def judged() -> list[str]:
    """The run metrics that need a fitted run (``needs_fit``), in registration order."""
    return [m.name for m in run_metrics() if m.needs_fit]


def derived() -> list[Metric]:
    """The run metrics computed by a registered function, in registration order."""
    return [m for m in run_metrics() if m.compute is not None]


# --------------------------------------------------------------------------- run metrics
# Measured from the raw rows by pebench.analysis.results.run_metrics, in the order of the summaries' columns.

_ID, _OOD = "lengths <= train_max_len", "lengths > train_max_len (unweighted mean over lengths)"
register_metric("id_token_acc", label="ID token acc", axis_label="ID token accuracy", higher_is_better=True,
                reference="id_chance_token_acc", description=f"Token accuracy, mean over {_ID}.")(None)
register_metric("ood_token_acc", label="OOD token acc", axis_label="OOD token accuracy", higher_is_better=True,
                reference="ood_chance_token_acc", description=f"Token accuracy, mean over {_OOD}.",
                needs_fit=True)(None)
register_metric("id_seq_acc", label="ID seq acc", axis_label="ID sequence accuracy", higher_is_better=True,
                description=f"Exact-match accuracy of whole outputs, mean over {_ID}.")(None)
register_metric("ood_seq_acc", label="OOD seq acc", axis_label="OOD sequence accuracy", higher_is_better=True,
                description=f"Exact-match accuracy of whole outputs, mean over {_OOD}.", needs_fit=True)(None)
register_metric("id_loss", label="ID loss", higher_is_better=False, format="loss",
                description=f"Cross-entropy per output token (nats), mean over {_ID}.")(None)
register_metric("ood_loss", label="OOD loss", higher_is_better=False, format="loss",
                description=f"Cross-entropy per output token (nats), mean over {_OOD}.", needs_fit=True)(None)


@register_metric("extrapolation_ratio", label="OOD/ID", axis_label="OOD / ID token accuracy", higher_is_better=True,
                 format="ratio", needs_fit=True, marked=False)
def extrapolation_ratio(runs: pd.DataFrame) -> pd.Series:
    """OOD token accuracy divided by ID token accuracy (undefined when the ID accuracy is 0)."""
    return runs["ood_token_acc"] / runs["id_token_acc"].where(runs["id_token_acc"] > 0)


register_metric("generalization_length", label="Gen. length", axis_label="generalization length",
                higher_is_better=True, format="length",
                description="Largest evaluated length up to which sequence accuracy stays >= 0.9 x its ID value.",
                needs_fit=True)(None)
register_metric("shuffled_token_acc", label="Shuffled", axis_label="token accuracy on shuffled inputs",
                higher_is_better=None, reference="id_chance_token_acc",
                description="ID token accuracy on shuffled inputs scored against the original targets.",
                needs_fit=True)(None)
register_metric("order_reliance", label="Order reliance", higher_is_better=True, applies_to="sequence",
                description="Original minus shuffled ID token accuracy, on order-dependent tasks.",
                needs_fit=True)(None)
register_metric("invariance_gap", label="Invariance gap", higher_is_better=None, applies_to="sequence",
                description="Original minus shuffled ID token accuracy, on order-invariant tasks (should be ~0).",
                needs_fit=True)(None)
register_metric("equivariance_gap_init", label="Equiv. gap (init)", higher_is_better=None, format="gap",
                interval=False,
                description="||f(Px) - P f(x)|| / ||f(x)|| of the final hidden states at initialisation.")(None)
register_metric("equivariance_gap_trained", label="Equiv. gap (trained)", higher_is_better=None, format="gap",
                interval=False,
                description="||f(Px) - P f(x)|| / ||f(x)|| of the final hidden states after training.")(None)
register_metric("train_perplexity", label="PPL @ train len", axis_label="perplexity at the training length",
                higher_is_better=False, format="ppl", applies_to="lm",
                description="exp(loss) at the longest evaluated length <= train_max_len.")(None)


@register_metric("id_perplexity", label="ID PPL", axis_label="ID perplexity", higher_is_better=False, format="ppl",
                 applies_to="lm")
def id_perplexity(runs: pd.DataFrame) -> pd.Series:
    """exp of the ID loss."""
    return np.exp(runs["id_loss"])


@register_metric("ood_perplexity", label="OOD PPL", axis_label="OOD perplexity", higher_is_better=False,
                 format="ppl", applies_to="lm")
def ood_perplexity(runs: pd.DataFrame) -> pd.Series:
    """exp of the OOD loss."""
    return np.exp(runs["ood_loss"])


@register_metric("perplexity_ratio", label="OOD/train PPL", axis_label="OOD / training-length perplexity",
                 higher_is_better=False, format="ratio", applies_to="lm")
def perplexity_ratio(runs: pd.DataFrame) -> pd.Series:
    """OOD perplexity divided by the perplexity at the training length (1 = no degradation)."""
    return runs["ood_perplexity"] / runs["train_perplexity"]


register_metric("id_chance_token_acc", label="Chance", axis_label="chance token accuracy", higher_is_better=None,
                interval=False,
                description="Token accuracy of the best input-independent guess, mean over ID lengths.")(None)
# the position-free floors (pebench.tasks.floors), token and exact match, mean over ID and OOD lengths
for _span, _lengths in (("id", "ID"), ("ood", "OOD")):
    for _unit, _label, _accuracy in (("token", "Floor", "token accuracy"), ("seq", "Seq floor", "sequence accuracy")):
        register_metric(f"{_span}_floor_{_unit}_acc", label=_label, axis_label=f"position-free floor ({_accuracy})",
                        higher_is_better=None, interval=False, floor=True,
                        description=f"Best {_accuracy} without position information "
                        f"(pebench.tasks.floors), mean over {_lengths} lengths.")(None)
del _span, _lengths, _unit, _label, _accuracy


@register_metric("ood_normalised_acc", label="OOD vs floor", axis_label="floor-normalised OOD token accuracy",
                 higher_is_better=True, format="ratio", applies_to="sequence", needs_fit=True,
                 description="(OOD token accuracy - position-free floor) / (1 - floor): 1 perfect, 0 the floor, "
                 "negative below it; the primary score of protocol v3.")
def ood_normalised_acc(runs: pd.DataFrame) -> pd.Series:
    """(OOD token accuracy - position-free floor) / (1 - floor), the means over OOD lengths: 1 is perfect, 0 is
    what a model without position information reaches, below 0 is worse than it. Undefined where the floor is 1
    (an order-free answer: nothing to normalise) or unknown. The primary score of protocol v3."""
    if "ood_floor_token_acc" not in runs or "ood_token_acc" not in runs:  # results made without floors
        import pandas as pd

        return pd.Series(np.nan, index=runs.index)
    floor = runs["ood_floor_token_acc"].where(runs["ood_floor_token_acc"] < 1)
    return (runs["ood_token_acc"] - floor) / (1 - floor)


register_metric("fitted", label="Fitted", axis_label="fraction of seeds fitted", higher_is_better=True,
                description="1 if the run met its fit criterion (held-out token accuracy at or above the "
                "threshold at the training lengths the criterion names: every training length since protocol v3, "
                "the longest under v2), else 0; its seed mean is the fraction of seeds fitted (NaN: no criterion, "
                "e.g. the language model).")(None)
register_metric("steps_to_fit", label="Steps to fit", higher_is_better=False, format="int",
                description="Optimizer steps until the fit criterion was first met (fitted runs only).")(None)
register_metric("ood_chance_token_acc", label="Chance", axis_label="chance token accuracy", higher_is_better=None,
                interval=False,
                description="Token accuracy of the best input-independent guess, mean over OOD lengths.")(None)
register_metric("final_train_loss", label="Final train loss", higher_is_better=False, format="loss",
                description="Training loss at the last step.")(None)
register_metric("params", label="Params", higher_is_better=None, format="int",
                description="Trainable parameters of the whole model.")(None)
register_metric("encoding_params", label="Encoding params", higher_is_better=None, format="int",
                description="Trainable parameters of the positional encoding alone.")(None)
register_metric("train_seconds", label="Train seconds", higher_is_better=None, format="seconds",
                description="Wall time of training (machine-dependent; never compared).")(None)

# the columns of the report layouts' tables, in the order they are shown
_EXTRAPOLATION = ["ood_chance_token_acc", "ood_floor_token_acc", "id_token_acc", "ood_token_acc", "extrapolation_ratio",
                  "ood_seq_acc", "generalization_length"]
TABLE_COLUMNS.update(extrapolation=list(_EXTRAPOLATION), variants=list(_EXTRAPOLATION), perplexity=[
    "id_chance_token_acc", "train_perplexity", "id_perplexity", "ood_perplexity", "perplexity_ratio", "ood_token_acc"])

# --------------------------------------------------------------------------- length metrics

register_metric("token_acc", label="Token acc", axis_label="token accuracy", higher_is_better=True, level="length",
                reference="chance_token_acc", description="Fraction of output tokens predicted correctly.")(None)
register_metric("seq_acc", label="Seq acc", axis_label="sequence accuracy", higher_is_better=True, level="length",
                description="Fraction of outputs predicted entirely correctly.")(None)
register_metric("loss", label="Loss", higher_is_better=False, format="loss", level="length",
                description="Cross-entropy per output token (nats).")(None)
register_metric("perplexity", label="PPL", axis_label="perplexity", higher_is_better=False, format="ppl",
                level="length", description="exp(loss).")(None)
register_metric("perplexity_ratio", label="PPL ratio", axis_label="perplexity / perplexity at the training length",
                higher_is_better=False, format="ratio", level="length",
                description="Perplexity at this length divided by the perplexity at the training length.")(None)
