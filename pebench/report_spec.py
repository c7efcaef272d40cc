"""The report declaration an experiment makes (:class:`ReportSpec`), and its reader from a record.

The ground floor, so that everything that reads a results folder (the store, the analysis, the report) knows
what an experiment declared without importing the experiments or the plan that runs them: a results folder's
manifest records the declarations (:func:`pebench.plan.experiment.report_declarations`), and
:func:`report_spec_from_record` reads one back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def as_tuple(value: Any) -> Any:
    """``value`` with every list, at any depth, a tuple (JSON has lists; a frozen declaration holds tuples)."""
    if isinstance(value, list):
        return tuple(as_tuple(v) for v in value)
    return value


@dataclass(frozen=True)
class ReportSpec:
    """What an experiment reports: how :mod:`pebench.report` lays out its tables, figures and findings,
    and what :mod:`pebench.analysis.compare` checks.

    Attributes:
        layout: a report layout registered in :data:`pebench.report.layouts.LAYOUTS` (``extrapolation``:
            accuracy vs length per encoding; ``order``: original vs shuffled inputs; ``variants``:
            one model evaluated under several evaluation variants; ``perplexity``: language modelling).
            A plugin may register its own.
        position: where the experiment's section appears in reports and on the site (lower first).
        title: what its tables and figures are called (default: the layout's own title).
        caption: what to look at, the lead of its tables' captions (default: the layout's).
        figure_caption: the caption of its figures (default: the layout's).
        key_metrics: the metrics ``pebench compare`` checks per cell (default: the layout's).
        also: further layouts shown from the same runs (e.g. ``("order",)``: runs evaluated on shuffled
            inputs as well also give the order-sensitivity tables), with their layouts' own titles.
        primary_metric: the run metric the experiment is judged and ranked by (the leaderboard's).
        comparisons: pairwise comparisons declared before the results were made, ``(a, b)`` encoding
            names, tested on ``primary_metric`` as one Holm-corrected family (:mod:`pebench.analysis.leaderboard`).
    """

    layout: str = "extrapolation"
    position: int = 100
    title: str = ""
    caption: str = ""
    figure_caption: str = ""
    key_metrics: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    primary_metric: str = ""
    comparisons: tuple[tuple[str, str], ...] = ()



def report_spec_from_record(record: Mapping[str, Any]) -> ReportSpec:
    """The :class:`ReportSpec` a record of :func:`pebench.plan.experiment.report_declarations` describes (lists
    become tuples).

    Raises:
        ValueError: the record is not an object, or names a field :class:`ReportSpec` does not have.
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"a report declaration must be a JSON object, not {type(record).__name__}")
    known = {f.name for f in dataclasses.fields(ReportSpec)}
    unknown = sorted(set(record) - known)
    if unknown:
        raise ValueError(f"unknown report declaration field(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    return ReportSpec(**{key: as_tuple(value) for key, value in record.items()})
