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

from pebench.registry import NAME_RULE, is_name


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
        ValueError: the record is not an object, names a field :class:`ReportSpec` does not have, or holds a value
            of another type or form than the field's (:data:`FIELD_SHAPES`: a list where a list is, never a text
            split into letters; names of the name rule).
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"a report declaration must be a JSON object, not {type(record).__name__}")
    known = {f.name for f in dataclasses.fields(ReportSpec)}
    unknown = sorted(set(record) - known, key=str)
    if unknown:
        raise ValueError(f"unknown report declaration field(s) {', '.join(ascii(key)[:40] for key in unknown)}; "
                         f"valid: {', '.join(sorted(known))}")
    for key, value in record.items():
        problem = _field_problem(key, value)
        if problem:
            raise ValueError(f"its {key} must be {problem}, got {ascii(value)[:80]}")
    return ReportSpec(**{key: as_tuple(value) for key, value in record.items()})


def _names(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(is_name(name) for name in value)


def _pair(value: Any) -> bool:
    """Two encoding names, each one name or names joined by ``:`` (a wrapped encoding, ``randomized:rope``)."""
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(name, str) and all(is_name(part) for part in name.split(":")) for name in value))


#: what each field of a recorded declaration must be, in words, and its test (a folder's manifest may come from anyone)
FIELD_SHAPES = {
    "layout": (f"a name ({NAME_RULE})", is_name),
    "position": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**31),
    "title": ("text", lambda v: isinstance(v, str)),
    "caption": ("text", lambda v: isinstance(v, str)),
    "figure_caption": ("text", lambda v: isinstance(v, str)),
    "key_metrics": ("a list of metric names", _names),
    "also": ("a list of layout names", _names),
    "primary_metric": ("a metric name or empty", lambda v: v == "" or is_name(v)),
    "comparisons": ("a list of [encoding, encoding] pairs",
                    lambda v: isinstance(v, (list, tuple)) and all(_pair(pair) for pair in v)),
}


def _field_problem(key: str, value: Any) -> str:
    """What ``value`` of the declaration field ``key`` must be, in words, when it is not that; else ``""``."""
    shape, test = FIELD_SHAPES[key]
    return "" if test(value) else shape
