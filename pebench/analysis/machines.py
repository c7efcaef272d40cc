"""The machine effect: how much a metric moves between the machines that made a folder's runs, within cells.

Machines differ in float rounding, which training can amplify; a sweep split by seeds across machines
(``pebench run --share I/N``) puts seeds of one cell on several machines, so that the difference can be
measured where nothing else differs. A sweep split by task or encoding cannot: the machine is nested in the
cells, confounded with what the cells compare, and :func:`machine_effect` says it is not estimable.

Each machine other than the reference (the one with the most runs) is compared with it on the cells where both
have runs:

* ``paired`` (two or more such cells): the mean over cells of the difference of the two machines' seed means,
  with a Student-t interval over cells; robust to cells whose seeds vary differently and to an effect that
  varies by cell.
* ``mixed model`` (one such cell): statsmodels' ``MixedLM`` of the metric on the machine (fixed) with the cell
  as a random intercept, over the two machines' runs, and its Wald (normal) interval: it borrows the
  seed-to-seed variance of the other cells, and with few seeds it is narrower than a t interval would be.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from pebench.store.schema import BASE_VARIANT, CELL_COLUMNS, completed, fitted

#: the metric whose machine effect the report gives: the primary score (floor-normalised OOD token accuracy)
MACHINE_METRIC = "ood_normalised_acc"
#: the confidence of the intervals
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Contrast:
    """``machine`` minus ``reference`` on a metric: the estimate, its 95% interval, and the cells both have runs
    in (``method``: ``paired`` or ``mixed model``)."""

    machine: str
    reference: str
    estimate: float
    low: float
    high: float
    cells: int
    method: str


@dataclass(frozen=True)
class MachineEffect:
    """What :func:`machine_effect` found: the machines (the reference first) with their runs, the cells with runs,
    those with runs on more than one machine, and a :class:`Contrast` per other machine; ``reason`` says why
    there is none (one machine, or no cell on two), else ``None``."""

    metric: str
    machines: tuple[str, ...]
    runs: tuple[int, ...]
    cells: int
    spanning_cells: int
    contrasts: tuple[Contrast, ...] = ()
    reason: str | None = None

    @property
    def estimable(self) -> bool:
        """Whether at least one machine could be compared with the reference."""
        return bool(self.contrasts)


def machine_effect(runs: pd.DataFrame, metric: str = MACHINE_METRIC, fitted_only: bool = True) -> MachineEffect:
    """The effect of the machine on ``metric`` within cells (module docstring).

    Args:
        runs: one row per run and variant (:func:`pebench.analysis.results.run_metrics`, whose rows carry the
            ``machine`` each run recorded); the trained model's rows (variant ``base``) are used.
        metric: a run metric column.
        fitted_only: only runs that fitted their training lengths (protocol rule 1).
    """
    used = runs[completed(runs)]
    if "variant" in used:
        used = used[used["variant"].fillna(BASE_VARIANT) == BASE_VARIANT]
    if fitted_only:
        used = used[fitted(used)]
    if "machine" not in used or metric not in used:
        missing = "machine" if metric in used else metric
        return MachineEffect(metric, (), (), 0, 0, reason=f"the runs record no {missing}")
    used = used[np.isfinite(used[metric].astype(float)) & used["machine"].notna()]
    cell_columns = [c for c in CELL_COLUMNS if c in used and c != "variant"]
    frame = pd.DataFrame({
        "cell": used[cell_columns].astype(str).agg("/".join, axis=1) if cell_columns else "all",
        "machine": used["machine"].astype(str),
        "value": used[metric].astype(float),
    })
    counts = frame["machine"].value_counts()
    machines = sorted(counts.index, key=lambda name: (-counts[name], name))
    per_cell = frame.groupby("cell")["machine"].nunique()
    spanning = int((per_cell > 1).sum())
    found = MachineEffect(metric, tuple(machines), tuple(int(counts[m]) for m in machines), len(per_cell), spanning)
    if len(machines) < 2:
        return _with(found, reason="the runs were made on one machine" if machines else "no run has a value")
    if not spanning:
        return _with(found, reason="no cell has runs on more than one machine, so the machine is confounded with "
                                   "what the cells compare")
    contrasts = tuple(c for m in machines[1:] if (c := _contrast(frame, m, machines[0])) is not None)
    return _with(found, contrasts=contrasts)


def _with(found: MachineEffect, **changes: object) -> MachineEffect:
    return MachineEffect(**{**found.__dict__, **changes})


def _contrast(frame: pd.DataFrame, machine: str, reference: str) -> Contrast | None:
    """``machine`` minus ``reference`` (module docstring), or ``None`` when no cell has runs on both."""
    means = frame[frame["machine"].isin([machine, reference])].pivot_table(
        index="cell", columns="machine", values="value", aggfunc="mean").dropna()
    shared = len(means)
    if shared == 0:
        return None
    if shared >= 2:
        differences = (means[machine] - means[reference]).to_numpy()
        mean = float(differences.mean())
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, shared - 1) * differences.std(ddof=1) / math.sqrt(shared))
        return Contrast(machine, reference, mean, mean - half, mean + half, shared, "paired")
    return _mixed_model(frame[frame["machine"].isin([machine, reference])], machine, reference)


def _mixed_model(frame: pd.DataFrame, machine: str, reference: str) -> Contrast:
    """``machine`` minus ``reference`` from a MixedLM with the cell as a random intercept (one shared cell)."""
    import statsmodels.formula.api as smf

    data = frame.assign(other=(frame["machine"] == machine).astype(float))
    with warnings.catch_warnings():  # a cell variance estimated at 0 warns of a boundary; the fit is still valid
        warnings.simplefilter("ignore")
        fit = smf.mixedlm("value ~ other", data, groups=data["cell"]).fit(reml=True)
    low, high = fit.conf_int(alpha=1 - CONFIDENCE).loc["other"]
    return Contrast(machine, reference, float(fit.params["other"]), float(low), float(high), 1, "mixed model")
