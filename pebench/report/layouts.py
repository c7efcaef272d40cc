"""Report layouts: how an experiment is shown (its tables, figures and findings), registered by name in
:data:`LAYOUTS`; an experiment names its layout in its :class:`~pebench.report_spec.ReportSpec`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from pebench import metrics as metric_registry
from pebench.analysis import declarations
from pebench.registry import Registry
from pebench.render.tables import Table
from pebench.report import plots
from pebench.report.findings import people_words
from pebench.report.layout_findings import (
    findings_length,
    findings_order,
    findings_perplexity,
    findings_variants,
    titled,
)
from pebench.report.layout_tables import extrapolation_tables, order_tables, perplexity_tables, variant_tables
from pebench.report_spec import ReportSpec
from pebench.store.schema import encoding_label, order_dependent, sort_key, task_labels

#: what each key of an accuracy-vs-length figure shows, in the order its caption explains them
#: (:func:`pebench.report.plots.reference_keys` says which keys a figure draws)
KEY_WORDS = {
    "chance": "dashed black: chance",
    "floor": "dash-dotted grey: floor (no position), the best accuracy without position information, so only a "
             "line above it uses position",
    "lines": "lines and bands: mean and 95% CI over the fitted seeds",
    "not fitted": "thin faint dotted lines (the legend's 'not fitted' key): no seed met the fit criterion, so that "
                  "line is a model that did not learn the task, not a finding",
}


def shade(keys: frozenset[str]) -> str:
    """The caption fragment explaining an accuracy-vs-length figure's shading and the ``keys`` it draws."""
    return "; ".join(["grey area: training lengths",
                      *(words for key, words in KEY_WORDS.items() if key == "lines" or key in keys)])


def above(keys: frozenset[str]) -> str:
    """" and whether it stays above the floor and chance" for the levels among ``keys``, else nothing."""
    levels = [key for key in ("floor", "chance") if key in keys]
    return f", and whether it stays above the {' and '.join(levels)}" if levels else ""

#: (name, title, caption, make) of one figure
FigureSpec = tuple[str, str, str, Callable[[], object]]


@dataclass(frozen=True)
class Layout:
    """How the report shows an experiment: its tables, figures and findings (the metrics ``pebench compare``
    checks are the layout's entry in :data:`pebench.metrics.LAYOUT_KEY_METRICS`). An experiment names its
    layout in its :class:`~pebench.report_spec.ReportSpec`; a plugin can register a new one in :data:`LAYOUTS`
    (and its key metrics in :data:`pebench.metrics.LAYOUT_KEY_METRICS`).

    Attributes:
        tables: ``(runs, cells, experiment, protocol, spec) -> list[Table]``.
        figures: ``(data, experiment, spec) -> list[FigureSpec]`` (made lazily; a ``ValueError`` skips one).
        findings: ``(runs, cells, experiment, spec) -> list[str]``, one sentence each.
    """

    tables: Callable[..., list[Table]]
    figures: Callable[..., list[FigureSpec]]
    findings: Callable[..., list[str]]


LAYOUTS: Registry[Layout] = Registry("report layout", base=Layout)


def layout_of(experiment: str, spec: ReportSpec) -> tuple[Layout, ReportSpec]:
    """The layout ``experiment``'s report declaration ``spec`` names (the declaration a results folder records,
    :mod:`pebench.analysis.declarations`; the analysis never loads an experiment script to learn it), with ``spec``."""
    return LAYOUTS.get(spec.layout), spec


def key_metrics(experiment: str, spec: ReportSpec) -> tuple[str, ...]:
    """The metrics ``pebench compare`` checks for ``experiment`` as ``spec`` declares them: its declaration's,
    else its layout's."""
    return declarations.key_metrics(layout_of(experiment, spec)[1])


def extrapolation_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Token and sequence accuracy vs length per architecture (a battery of tasks in parts of at most
    :data:`pebench.report.plots.MAX_PANELS` panels, :func:`pebench.report.plots.task_parts`), and the OOD heatmap."""
    figures = []
    for arch in sorted(data["arch"].unique()):
        parts = plots.task_parts(data, experiment, arch=arch)
        # each part's curves hold both metrics: computed once, for the captions and the figures
        curves = {number: plots.accuracy_curves(data, experiment, arch=arch, part=number)
                  for number in range(1, len(parts) + 1)}
        for metric in ("token_acc", "seq_acc"):
            kind = metric_registry.get(metric, "length").axis_label
            for number, tasks in enumerate(parts, 1):
                part = f", part {number} of {len(parts)}" if len(parts) > 1 else ""
                which = f" Tasks in this part: {task_labels(tasks)}." if len(parts) > 1 else ""
                title = titled(experiment, spec, f"{kind} vs length ({arch}{part})")
                keys = plots.reference_keys(curves[number][0], metric)
                figures.append((
                    f"{experiment}_{arch}_{metric}" + (f"_part{number}" if len(parts) > 1 else ""), title,
                    f"{kind.capitalize()} vs evaluation length, one line per encoding ({shade(keys)}); look at how "
                    f"fast each fitted (solid or dashed) line falls right of the grey area{above(keys)}.{which}",
                    lambda arch=arch, metric=metric, number=number, title=title, drawn=curves[number]:
                        plots.accuracy_vs_length(data, experiment, arch=arch, metric=metric, part=number, title=title,
                                                 curves=drawn),
                ))
    title = titled(experiment, spec, "OOD token accuracy")
    cells = plots.heatmap_cells(data, experiment)
    hatched = ("; hatched cells with † had no fitted seed (mean over all seeds, a model that did not learn the "
               "task: skip them)" if "not fitted" in plots.heatmap_keys(cells) else "")
    figures.append((
        f"{experiment}_ood_heatmap", title,
        "Mean OOD token accuracy (lengths beyond training, mean over the fitted seeds) per encoding and task; "
        f"bright rows are encodings that extrapolate on every task{hatched}; compare with chance and the "
        "position-free floor in the tables.",
        lambda: plots.ood_heatmap(data, experiment, title=title, cells=cells),
    ))
    return figures


def encoding_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[tuple[str, FigureSpec]]:
    """Per encoding and architecture of ``experiment``: token accuracy vs length on its order-dependent tasks (those
    the extrapolation board scores; every task where it has none), the encoding emphasised against every other
    (:func:`pebench.report.plots.encoding_vs_field`), for the encoding's page: ``(encoding, figure)`` pairs. A
    battery of more tasks than one figure holds is drawn in parts (``_part<k>``)."""
    figures = []
    for arch in sorted(data["arch"].unique()):
        curves, _ = plots.accuracy_curves(data, experiment, arch=arch)
        tasks = plots.tasks_in_order(curves["task"])
        parts = plots.split_tasks([task for task in tasks if order_dependent(task)] or tasks)
        keys = plots.reference_keys(curves, "token_acc")
        for encoding in dict.fromkeys(curves.sort_values("encoding", key=sort_key)["encoding"]):
            name = encoding_label(encoding)
            for number, part in enumerate(parts, 1):
                which = f", part {number} of {len(parts)}" if len(parts) > 1 else ""
                title = titled(experiment, spec, f"{name} against every other encoding ({arch}{which})")
                caption = (f"{name} (coloured, with its band) against every other encoding (thin grey) on "
                           f"{task_labels(part)}: token accuracy vs evaluation length ({shade(keys)}). Look at "
                           f"where its line runs right of the grey area: above the grey lines, it extrapolates "
                           f"better than most encodings on that task{above(keys)}.")
                stem = f"{experiment}_{arch}_{figure_stem(encoding)}" + (f"_part{number}" if len(parts) > 1 else "")
                drawn = curves[curves["task"].isin(part)]
                figures.append((encoding, (stem, title, caption, lambda drawn=drawn, encoding=encoding, title=title:
                                           plots.encoding_vs_field(drawn, encoding, title=title))))
    return figures


def figure_stem(encoding: str) -> str:
    """``encoding`` as part of a figure's file name: ``randomized:rope`` -> ``randomized-rope``."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", encoding).strip("-") or "encoding"


def order_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Original minus shuffled accuracy per encoding, task and architecture."""
    title = spec.title or f"{people_words(experiment)}: order sensitivity"
    return [(experiment, title,
             spec.figure_caption or
             "Original minus shuffled token accuracy per encoding; look for tall solid bars (order-dependent "
             "tasks: the model uses order) and hatched bars near zero (controls: it ignores order where it "
             "should); one panel per architecture (encoder above decoder). Bars and error bars: mean "
             "and 95% CI over the fitted seeds; hollow bars with a dashed outline had no fitted seed (mean over "
             "all seeds, a model that did not learn the task: not evidence either way).",
             lambda: plots.order_sensitivity(data, experiment, title=title))]


def variant_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Accuracy vs length, one line per evaluation variant."""
    caption = spec.figure_caption or ("Token accuracy vs evaluation length of the trained model and of each "
                                      "evaluation variant; look at the lengths right of the grey area ({shade}).")
    title = spec.title or f"{people_words(experiment)}: evaluation variants"
    curves = plots.variant_frame(data, experiment)
    return [(experiment, title, caption.format(shade=shade(plots.reference_keys(curves, "token_acc"))),
             lambda: plots.variant_curves(data, experiment, title=title, curves=curves))]


def perplexity_figures(data: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[FigureSpec]:
    """Perplexity vs context length, one line per encoding."""
    title = spec.title or "Language-model perplexity vs context length"
    return [(f"{experiment}_perplexity", title,
             spec.figure_caption or
             "Character-LM perplexity (log scale) vs evaluation context; flat lines right of the grey area "
             "(training context) mean the encoding extrapolates; rising lines mean it does not. "
             "Bands: 95% CI over seeds.",
             lambda: plots.perplexity_vs_length(data, experiment, title=title))]


LAYOUTS.register("extrapolation")(Layout(extrapolation_tables, extrapolation_figures, findings_length))
LAYOUTS.register("order")(Layout(order_tables, order_figures, findings_order))
LAYOUTS.register("variants")(Layout(variant_tables, variant_figures, findings_variants))
LAYOUTS.register("perplexity")(Layout(perplexity_tables, perplexity_figures, findings_perplexity))


def experiments_in_order(experiments: Sequence[str], specs: Mapping[str, ReportSpec]
                          ) -> list[tuple[str, Layout, ReportSpec]]:
    """``experiments`` with their layouts (declared by ``specs``), ordered by their declared ``position`` (then
    as given)."""
    entries = [(name, *layout_of(name, specs[name])) for name in dict.fromkeys(experiments)]
    return sorted(entries, key=lambda entry: entry[2].position)


def views(layout: Layout, spec: ReportSpec) -> list[tuple[Layout, ReportSpec, str]]:
    """The layouts an experiment is shown in: its own, then each of ``spec.also`` (with its own titles and a
    name suffix ``_<layout>`` on its tables and figures)."""
    return [(layout, spec, "")] + [(LAYOUTS.get(extra), ReportSpec(layout=extra, position=spec.position),
                                    f"_{extra}") for extra in spec.also]
