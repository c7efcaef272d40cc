"""The published numbers pebench's replications are scored against: one file of values and one of claims
per paper, under ``pebench/data/published/`` (values as printed, each with its table or figure and metric;
how they were read and checked, and what could not be found, is in that folder's ``README.md``).

Encodings are named as in pebench (``none``, ``sinusoidal``, ``rope``, ``alibi``, ``t5``, ...); rows that
are not one of the compared encodings say ``n/a``. The column ``paper_label`` keeps the paper's own name.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: columns every value file has
VALUE_COLUMNS = ("source", "task", "encoding", "paper_label", "train_length", "eval_length", "metric",
                 "statistic", "value", "unit", "note")
#: columns every claims file has
CLAIM_COLUMNS = ("source", "claim", "encodings_better", "encodings_worse", "task_or_scope", "quote_location")


def folder() -> Path:
    """The folder of the published-number files."""
    return Path(__file__).resolve().parents[1] / "data" / "published"


def papers() -> tuple[str, ...]:
    """The papers with published numbers, by file stem: each values file of :func:`folder` (its claims beside it)."""
    return tuple(sorted(path.stem for path in folder().glob("*.csv") if not path.stem.endswith("_claims")))


def _read(paper: str, suffix: str, columns: tuple[str, ...]) -> pd.DataFrame:
    if paper not in papers():
        raise ValueError(f"no published numbers for {paper!r}; valid: {', '.join(papers())}")
    frame = pd.read_csv(folder() / f"{paper}{suffix}.csv", dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{paper}{suffix}.csv lacks the columns {', '.join(missing)}")
    return frame


def values(paper: str) -> pd.DataFrame:
    """The values ``paper`` prints, one row each, as strings exactly as printed (``OOM`` and ``-`` kept),
    plus ``number``: the value as a float (NaN where it is not a number).

    Raises:
        ValueError: ``paper`` is not one of :func:`papers`.
    """
    frame = _read(paper, "", VALUE_COLUMNS)
    frame["number"] = pd.to_numeric(frame["value"], errors="coerce")
    return frame


def claims(paper: str) -> pd.DataFrame:
    """The claims ``paper`` states without a printed number (rankings, comparisons), one row each; the
    encodings better and worse are ``;``-separated pebench names.

    Raises:
        ValueError: ``paper`` is not one of :func:`papers`.
    """
    return _read(paper, "_claims", CLAIM_COLUMNS)
