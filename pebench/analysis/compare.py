"""Reproduction check: does a rerun of a suite reproduce the reference results?

Cells are experiment x task x encoding x architecture x evaluation variant
(:data:`pebench.store.schema.CELL_COLUMNS`). Two folders whose shared cells were run under different
configurations (evaluation lengths, steps, any config column but the seed) are refused, never compared
(:func:`protocol_differences`). Per cell the key metrics its
experiment declares are compared (:func:`pebench.analysis.declarations.key_metrics`): ID and
OOD token accuracy and shuffled-input accuracy where a cell has it, and, for
language modelling, ID and OOD loss — the log of the perplexity, so the
tolerance is relative (0.02 nats ~ 2%).

Rule. The seeds of a cell share their data streams and initialisations on both
sides, so they are compared *paired*: for every seed completed on both sides,
``d_s = local_s - reference_s``. A metric of a cell reproduces when

* the mean paired difference is within a fixed margin, ``|mean_s d_s| <= MARGIN``
  (:data:`MARGINS`, by the metric's format: 0.02 for accuracies, 0.02 nats for
  losses, i.e. 2% of the perplexity; for lengths and counts 5% of the reference
  mean, :data:`RELATIVE_MARGINS`), and
* no single seed is an outlier, ``|d_s| <= SEED_MARGIN`` for every seed, so that one
  broken seed is caught even when the other seeds agree, and
* every seed of the reference was completed in the rerun (a failed seed is listed and the
  cell does not reproduce).

Only cells the rerun has run with every seed of the reference are judged. A reference cell with a
seed the rerun has not run (no run file: a sweep still under way, or one that selected fewer runs)
is *not yet run*, its own count, never "not reproduced": a rerun 9% done is not 91% failure.
Two folders of different suites (smoke against standard) are refused, never compared. A rerun of a declared
sample of the reference's suite (the ``quick`` suite: some of the standard suite's own runs,
:data:`pebench.protocol.SAMPLES`) is compared with the reference's runs of that sample only (``sample``), so each
of its cells is judged on the seeds the sample draws, and the reference's other runs are not "not yet run".

On one machine a rerun is exact (every ``d_s`` is 0); across machines training
differs at float level, and a seed whose training is on a knife edge may land
elsewhere: it is flagged by name, never averaged away. A cell reproduces when
all its key metrics do (those its experiment declares,
:func:`pebench.analysis.declarations.key_metrics`); a metric missing on both sides is skipped.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pebench import metrics as metric_registry
from pebench import store
from pebench.analysis import declarations, results
from pebench.analysis.leaderboard import TIER_CONFIDENCE
from pebench.report_spec import ReportSpec
from pebench.store import ResultsError
from pebench.store.schema import (
    BASE_VARIANT,
    CELL_COLUMNS,
    completed,
    encoding_label,
    encoding_labels,
    encoding_rank,
    people_words,
    recorded_protocols,
    sort_key,
)

#: (mean margin, per-seed margin) of a metric by its registered format, in the metric's units
MARGINS: dict[str, tuple[float, float]] = {"acc": (0.02, 0.10), "loss": (0.02, 0.10), "ratio": (0.02, 0.10),
                                           "ppl": (0.02, 0.10), "gap": (0.02, 0.10)}
#: the same for formats on the metric's own scale (a length in tokens, a count of steps or parameters): a
#: fraction of the reference mean, and never less than one unit (their numbers are whole)
RELATIVE_MARGINS: dict[str, tuple[float, float]] = {"length": (0.05, 0.25), "int": (0.05, 0.25)}
#: cells not yet run that a summary names one by one (a rerun just begun has hundreds)
NAMED_NOT_RUN = 20
#: protocol columns that should agree between the two sides
PROTOCOL_COLUMNS = ("d_model", "n_layers", "n_heads", "steps", "batch_size", "lr", "eval_n_examples", "eval_lengths")


@dataclass
class Comparison:
    """The outcome of :func:`compare`.

    Attributes:
        metrics: one row per cell and metric: both means, stds, n, the
            difference, the tolerance and ``reproduces``.
        cells: one row per judged cell (every reference seed run on both sides) with ``reproduces``.
        only_local: cells of the rerun that the reference does not have.
        not_run: reference cells with a seed the rerun has not run, in ``seeds_not_run`` (``0,1,2``: the whole
            cell); neither reproduced nor not: not yet run.
        notes: protocol differences between the two result sets.
        sample: the declared sample the rerun is compared on (``quick``), or ``""``: the reference's whole suite.
    """

    metrics: pd.DataFrame
    cells: pd.DataFrame
    only_local: pd.DataFrame
    not_run: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    sample: str = ""  # the declared sample of the reference the rerun ran (quick), or "" for the whole suite

    @property
    def n_cells(self) -> int:
        """Cells judged: run with every reference seed on both sides."""
        return len(self.cells)

    @property
    def n_reproduced(self) -> int:
        """Judged cells that reproduce."""
        return int(self.cells["reproduces"].sum()) if len(self.cells) else 0

    @property
    def n_not_run(self) -> int:
        """Reference cells the rerun has not run every seed of (not judged)."""
        return len(self.not_run)

    @property
    def only_reference(self) -> pd.DataFrame:
        """The cells of :attr:`not_run` that the rerun has no run of at all."""
        if self.not_run.empty:
            return self.not_run[list(CELL_COLUMNS)]
        return self.not_run[~self.not_run["partly_run"]][list(CELL_COLUMNS)].reset_index(drop=True)

    @property
    def all_reproduce(self) -> bool:
        """Every reference cell was rerun and reproduces (extra local cells do not matter)."""
        return self.n_reproduced == self.n_cells and self.not_run.empty

    @property
    def verdict(self) -> str:
        """One line, e.g. ``41 of 44 cells reproduce (...); 2 cells not yet run`` (cells not yet run are not
        counted among the 44)."""
        text = (f"{self.sample} sample of the reference: " if self.sample else "") + (
                f"{self.n_reproduced} of {self.n_cells} cells reproduce (paired by seed: mean difference within "
                f"{MARGINS['acc'][0]}, no seed off by more than {MARGINS['acc'][1]}, every seed rerun)")
        extra = []
        if self.n_not_run:
            partly = int(self.not_run["partly_run"].sum())
            extra.append(f"{_cells(self.n_not_run)} of the reference not yet run"
                         + (f" ({partly} of them partly)" if partly else ""))
        if len(self.only_local):
            extra.append(f"{_cells(len(self.only_local))} of the rerun not in the reference")
        return text + ("; " + ", ".join(extra) if extra else "")

    @property
    def failing(self) -> list[str]:
        """One line per metric of a cell that does not reproduce, saying why."""
        bad = self.metrics[~self.metrics["reproduces"]]
        return [
            f"{cell_name(row)}: {row['metric']} {_number(row['local_mean'])} vs reference "
            f"{_number(row['reference_mean'])} (mean paired diff {_number(row['difference'], signed=True)}, "
            f"margin {_number(row['tolerance'])}){_why(row)}"
            for _, row in bad.iterrows()
        ]

    def table(self) -> pd.DataFrame:
        """One row per cell and metric, for a page: the cell, both means, the paired differences, the verdict."""
        columns = ["cell", "metric", "local_mean", "reference_mean", "difference", "worst_seed",
                   "worst_seed_difference", "missing_seeds", "reproduces"]
        if self.metrics.empty:
            return pd.DataFrame(columns=columns)
        frame = self.metrics.assign(cell=[cell_name(row) for _, row in self.metrics.iterrows()])
        return frame[columns]

    def summary(self) -> str:
        """The verdict, protocol notes, the cells that do not reproduce and those on one side only (and the
        verdict again at the end when there is more than the verdict)."""
        lines = [self.verdict]
        lines += [f"note: {note}" for note in self.notes]
        if self.failing:
            lines.append("not reproduced:")
            lines += [f"  {line}" for line in self.failing]
        if self.n_not_run:
            lines.append("not yet run in the rerun (not judged):")
            lines += [f"  {cell_name(row)}" + (f" (seeds {row['seeds_not_run']})" if row["partly_run"] else "")
                      for _, row in self.not_run.head(NAMED_NOT_RUN).iterrows()]
            if self.n_not_run > NAMED_NOT_RUN:
                lines.append(f"  and {self.n_not_run - NAMED_NOT_RUN} more")
        if len(self.only_local):
            lines.append("only in the rerun:")
            lines += [f"  {cell_name(row)}" for _, row in self.only_local.iterrows()]
        if len(lines) > 1:  # the verdict again, last, where a long log ends
            lines.append(f"verdict: {self.verdict}")
        return "\n".join(lines)


#: what identifies a verdict
KEYS = ("experiment", "arch", "encoding")
#: the main table's columns a comparison reads (:func:`pebench.report.main_table.main_table`'s data)
VERDICT_COLUMNS = ("ranked", "tier", "score", "score_low", "score_high", "dependent_fit_rate",
                   "control_vs_baseline", "control_low", "control_high", "harms")
#: main-table columns a comparison reads where the table has them: ``tier_probability`` from the boards of protocol
#: v4 (an encoding whose tier holds in under :data:`~pebench.analysis.leaderboard.TIER_CONFIDENCE` of the bootstrap
#: replicates is between tiers); NaN where the table has none
OPTIONAL_VERDICT_COLUMNS = ("tier_probability",)

def _table_frame(data: bytes, source: str | Path, what: str, keys: Sequence[str], columns: Sequence[str]
                 ) -> pd.DataFrame:
    """A table's CSV that ``pebench report`` writes (``what``, for the messages) as a frame, its ``keys`` read as
    texts, checked to have the ``keys`` and ``columns`` and a key in every row's every key column.

    Raises:
        ResultsError: not such a CSV, naming ``source``.
    """
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype={key: str for key in keys})
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{source}: not a readable {what} ({exc})") from None
    if missing := [c for c in (*keys, *columns) if c not in frame]:
        raise ResultsError(f"{source}: not a {what} of pebench, missing column(s) {', '.join(missing)}")
    if frame[list(keys)].isna().any(axis=None):
        raise ResultsError(f"{source}: a row without its {', '.join(keys[:-1])} or {keys[-1]}; not a {what} pebench "
                           "writes")
    return frame


def _numbers(frame: pd.DataFrame, column: str, source: str | Path, what: str, empty: bool) -> None:
    """Read ``frame``'s ``column`` as numbers, in place, each a finite one (or, with ``empty``, an empty cell).

    Raises:
        ResultsError: a value that is not, naming it and ``source`` (a ``what`` that pebench never writes so).
    """
    written = frame[column]
    frame[column] = pd.to_numeric(written, errors="coerce")
    bad = ((frame[column].isna() & written.notna()) | np.isinf(frame[column]) if empty
           else ~np.isfinite(frame[column]))
    if bad.any():
        raise ResultsError(f"{source}: its {column} {str(written[bad].iloc[0])[:40]!r} is not a finite number; "
                           f"not a {what} pebench writes")


def main_table_frame(data: bytes, source: str | Path = "<main table>") -> pd.DataFrame:
    """A main table's CSV (``tables/main.csv``) as a frame of :data:`KEYS`, :data:`VERDICT_COLUMNS` and
    :data:`OPTIONAL_VERDICT_COLUMNS`:
    ``ranked`` a bool, ``tier`` a number (NaN when not ranked, or ranked without a tier: tier 0, an encoding at or
    below the position-free floor, :func:`pebench.analysis.leaderboard.extrapolation_board`), ``harms`` True, False
    or None (None where there is no control interval: the baseline itself, or no controls).

    Raises:
        ResultsError: not a CSV with those columns, or a value there that pebench never writes (a row without its
            keys, a number that is not finite), naming ``source``.
    """
    frame = _table_frame(data, source, "main table", KEYS, VERDICT_COLUMNS)
    if frame.empty:
        raise ResultsError(f"{source}: no rows; a main table has one row per architecture and encoding")
    frame = frame.reindex(columns=[*KEYS, *VERDICT_COLUMNS, *OPTIONAL_VERDICT_COLUMNS])  # optional ones: NaN
    truth = {True: True, "True": True, "true": True, False: False, "False": False, "false": False}
    frame["ranked"] = frame["ranked"].map(lambda v: truth.get(v, False)).astype(bool)
    for column in (*VERDICT_COLUMNS, *OPTIONAL_VERDICT_COLUMNS):
        if column not in ("ranked", "harms"):
            _numbers(frame, column, source, "main table", empty=True)
    if not frame["tier_probability"].dropna().between(0, 1).all():
        raise ResultsError(f"{source}: a tier_probability outside [0, 1]; not a main table pebench writes")
    tiers = frame.loc[frame["ranked"], "tier"]
    if not (tiers.isna() | ((tiers >= 0) & (tiers == tiers.round()))).all():
        raise ResultsError(f"{source}: a ranked encoding's tier is not a whole number >= 0; not a main table pebench "
                           "writes")
    frame.loc[~frame["ranked"] | (frame["tier"] == 0), "tier"] = np.nan  # tier 0: ranked, no tier
    controlled = frame["control_low"].notna() & frame["control_high"].notna()
    frame["harms"] = [truth.get(v) if c else None for v, c in zip(frame["harms"], controlled, strict=True)]
    return frame


def _cells(n: int) -> str:
    return f"{n} cell{'s' if n != 1 else ''}"


def _why(row: pd.Series) -> str:
    """What besides the mean made a metric fail: an outlier seed, seeds missing on one side."""
    parts = []
    if np.isfinite(row["worst_seed_difference"]) and abs(row["worst_seed_difference"]) > row["seed_tolerance"]:
        parts.append(f"seed {int(row['worst_seed'])} off by {_number(row['worst_seed_difference'], signed=True)}")
    if row["missing_seeds"]:
        parts.append(f"seeds {row['missing_seeds']} not completed on both sides")
    return f"; {'; '.join(parts)}" if parts else ""


def _number(value: float, signed: bool = False) -> str:
    if not np.isfinite(value):
        return "missing"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def cell_name(row: pd.Series) -> str:
    """``experiment/task/encoding [options]/arch[/variant]`` of a cell row."""
    name = f"{row['experiment']}/{row['task']}/{row['encoding']}"
    if row["encoding_options"] not in ("{}", "") and not pd.isna(row["encoding_options"]):
        name += f" {row['encoding_options']}"
    name += f"/{row['arch']}"
    if row["variant"] != BASE_VARIANT:
        name += f"/{row['variant']}"
    return name


def margins(metric: str, reference_mean: float = float("nan")) -> tuple[float, float]:
    """The (mean, per-seed) margins within which ``metric`` reproduces, by its registered format: absolute
    (:data:`MARGINS`), or relative to ``reference_mean`` (:data:`RELATIVE_MARGINS`, at least 1).

    Raises:
        ResultsError: a format with no margin (``seconds``: wall time depends on the machine), naming the metric.
    """
    kind = metric_registry.get(metric).format
    if kind in MARGINS:
        return MARGINS[kind]
    if kind in RELATIVE_MARGINS:
        scale = abs(reference_mean) if np.isfinite(reference_mean) else 0.0
        mean_fraction, seed_fraction = RELATIVE_MARGINS[kind]
        return max(1.0, mean_fraction * scale), max(1.0, seed_fraction * scale)
    raise ResultsError(f"key metric {metric!r} (format {kind!r}) depends on the machine and is never compared; "
                       "remove it from the experiment's key_metrics")


def key_metrics(experiments: Sequence[str], *folders: str | Path, declared: Mapping[str, ReportSpec] | None = None
                ) -> dict[str, list[str]]:
    """Metrics compared per experiment, as each declares them (:func:`pebench.analysis.declarations.key_metrics`):
    ``declared``, else as ``folders`` record it (:func:`pebench.analysis.declarations.resolve_report_specs`)."""
    specs, _ = declarations.resolve_report_specs(experiments, *folders, declared=declared)
    return {experiment: list(declarations.key_metrics(specs[experiment])) for experiment in specs}


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(np.asarray(values, dtype=float))) if len(values) else float("nan")


def _per_seed(runs: pd.DataFrame, metrics: list[str]) -> dict[tuple, dict[str, dict[int, float]]]:
    """Completed runs' ``metrics`` by cell, metric and seed (only the values that are not missing)."""
    done = runs[completed(runs)]
    return {key: {metric: {int(seed): value for seed, value in zip(rows["seed"], rows[metric], strict=True)
                           if pd.notna(value)} for metric in metrics}
            for key, rows in done.groupby(list(CELL_COLUMNS), sort=False, dropna=False)}


def _seeds(runs: pd.DataFrame) -> dict[tuple, set[int]]:
    """Every seed of each cell, completed or failed."""
    return {key: set(rows["seed"]) for key, rows in runs.groupby(list(CELL_COLUMNS), sort=False, dropna=False)}


def _protocol_notes(local: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    notes = []
    for experiment in sorted(set(local["experiment"]) & set(reference["experiment"])):
        a, b = local[local["experiment"] == experiment], reference[reference["experiment"] == experiment]
        notes += [f"{experiment}: {column} differs (rerun {', '.join(va)}; reference {', '.join(vb)})"
                  for column, va, vb in results.differing_values(a, b, PROTOCOL_COLUMNS)]
    return notes


class ProtocolMismatch(ResultsError):
    """The two sides of a comparison (the folders ``local_dir`` and ``reference_dir``) were made under different
    protocol versions (v3 against the v2 reference, say): no cell is expected to agree, so none is compared.
    ``local`` and ``reference``: the versions each side records."""

    def __init__(self, local_dir: str | Path, reference_dir: str | Path, local: set[int], reference: set[int]):
        self.local, self.reference = local, reference
        super().__init__(f"{self.sentence(str(local_dir), str(reference_dir))}; compare with a reference made under "
                         "the same protocol")

    def sentence(self, rerun: str, reference: str) -> str:
        """The mismatch in one sentence naming the two sides as ``rerun`` and ``reference``."""
        return (f"{rerun} was made under protocol {_versions(self.local)} and {reference} under protocol "
                f"{_versions(self.reference)}: their numbers are not expected to agree")


def _versions(versions: set[int]) -> str:
    return " and ".join(f"v{v}" for v in sorted(versions)) or "none"


def protocol_differences(local: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    """Where a cell present on both sides was run under another configuration (any of
    :data:`pebench.store.schema.CONFIG_COLUMNS` but the suite name: evaluation lengths, steps, ...):
    one phrase per such cell, as :func:`pebench.store.mixed_configurations` writes them; empty when every
    shared cell has one protocol."""
    cell = [c for c in CELL_COLUMNS if c != "variant"]
    sides = [frame.drop_duplicates("run_id").drop(columns="suite", errors="ignore") for frame in (local, reference)]
    shared = sides[0][cell].drop_duplicates().merge(sides[1][cell].drop_duplicates(), on=cell)
    both = pd.concat([side.merge(shared, on=cell) for side in sides], ignore_index=True, sort=False)
    return store.mixed_configurations(both) if len(both) else []


def _sorted(cells: pd.DataFrame) -> pd.DataFrame:
    return cells.sort_values(list(CELL_COLUMNS), key=sort_key).reset_index(drop=True) if len(cells) else cells


def compare(local_dir: str | Path, reference_dir: str | Path, declared: Mapping[str, ReportSpec] | None = None,
            sample: tuple[str, Collection[str]] | None = None) -> Comparison:
    """Compare a rerun (``local_dir``) with the reference results (``reference_dir``), cell by cell, seed by seed,
    on the key metrics each experiment declares (``declared``, else as the folders record it: :func:`key_metrics`).
    ``sample``: the name and run ids of the declared sample of the reference's suite the rerun ran (``quick``):
    the reference's runs of it are what the rerun is compared with.

    Raises:
        ResultsError: a folder has no valid results, the two hold different suites, the two share no cell, or a
            cell they share was run under different protocols (:func:`protocol_differences`): its numbers are not
            expected to agree.
    """
    local_data, reference_data = store.load(local_dir), store.load(reference_dir)
    check_same_suite(local_data, reference_data, local_dir, reference_dir)
    if sample is not None:
        reference_data = reference_data[reference_data["run_id"].isin(set(sample[1]))]
    versions = [recorded_protocols(data) for data in (local_data, reference_data)]
    if versions[0] != versions[1]:
        raise ProtocolMismatch(local_dir, reference_dir, *versions)
    differences = protocol_differences(local_data, reference_data)
    if differences:
        raise ResultsError(f"{local_dir} and {reference_dir} were run under different protocols "
                           f"({store.named(differences)}); compare a rerun of the reference's own suite and "
                           "configuration")
    local_runs, reference_runs = results.run_metrics(local_data), results.run_metrics(reference_data)
    chosen = key_metrics([*reference_runs["experiment"], *local_runs["experiment"]], reference_dir, local_dir,
                         declared=declared)
    all_metrics = sorted({m for metrics in chosen.values() for m in metrics})
    local_seeds, reference_seeds = _seeds(local_runs), _seeds(reference_runs)
    local, reference = _per_seed(local_runs, all_metrics), _per_seed(reference_runs, all_metrics)
    if not any(key in local_seeds for key in reference_seeds):
        raise ResultsError(f"{local_dir} and {reference_dir} share no cell (experiment/task/encoding/arch/variant); "
                           "are they results of the same suite?")
    only_local = _sorted(pd.DataFrame([k for k in local_seeds if k not in reference_seeds], columns=CELL_COLUMNS))
    not_run = _not_run(local_seeds, reference_seeds)
    judged = [key for key in reference_seeds if reference_seeds[key] <= local_seeds.get(key, set())]
    records = []
    for key in _sorted(pd.DataFrame(judged, columns=CELL_COLUMNS)).itertuples(index=False, name=None):
        cell = dict(zip(CELL_COLUMNS, key, strict=True))
        a, b = local.get(key, {}), reference.get(key, {})
        for metric in chosen[cell["experiment"]]:
            x, y = a.get(metric, {}), b.get(metric, {})
            if not x and not y:
                continue  # e.g. no OOD lengths in this experiment
            paired = sorted(set(x) & set(y))
            missing = sorted((set(y) ^ set(x)) | (local_seeds[key] ^ reference_seeds[key]))
            differences = {seed: float(x[seed] - y[seed]) for seed in paired}
            margin, seed_margin = margins(metric, _mean([y[s] for s in paired] if paired else list(y.values())))
            difference = _mean(list(differences.values()))
            worst = max(paired, key=lambda seed: abs(differences[seed])) if paired else None
            records.append({
                **cell, "metric": metric,
                # means over the paired seeds (over all a side has when none pair), so they differ by `difference`
                "local_mean": _mean([x[s] for s in paired] if paired else list(x.values())), "local_n": len(x),
                "reference_mean": _mean([y[s] for s in paired] if paired else list(y.values())),
                "reference_n": len(y), "n_paired": len(paired), "difference": difference, "tolerance": margin,
                "worst_seed": worst if worst is not None else np.nan,
                "worst_seed_difference": differences[worst] if worst is not None else float("nan"),
                "seed_tolerance": seed_margin,
                "missing_seeds": ",".join(str(int(s)) for s in missing),
                "reproduces": bool(paired and not missing and abs(difference) <= margin
                                   and abs(differences[worst]) <= seed_margin),
            })
    metrics = pd.DataFrame.from_records(records)
    if metrics.empty:
        metrics = pd.DataFrame(columns=[*CELL_COLUMNS, "metric", "difference", "tolerance", "worst_seed",
                                        "worst_seed_difference", "seed_tolerance", "missing_seeds", "reproduces"])
    cells = metrics.groupby(list(CELL_COLUMNS), sort=False, dropna=False)["reproduces"].all().reset_index()
    return Comparison(metrics, cells, only_local, not_run, _protocol_notes(local_data, reference_data),
                      sample[0] if sample is not None else "")


def _not_run(local_seeds: dict[tuple, set[int]], reference_seeds: dict[tuple, set[int]]) -> pd.DataFrame:
    """Reference cells with seeds the rerun has no run of (completed or failed): the cell, ``seeds_not_run``
    and ``partly_run`` (the rerun has some of its seeds)."""
    rows = [(*key, ",".join(str(int(s)) for s in sorted(seeds - local_seeds.get(key, set()))), key in local_seeds)
            for key, seeds in reference_seeds.items() if not seeds <= local_seeds.get(key, set())]
    return _sorted(pd.DataFrame(rows, columns=[*CELL_COLUMNS, "seeds_not_run", "partly_run"]))


def check_same_suite(local: pd.DataFrame, reference: pd.DataFrame, local_dir: str | Path,
                     reference_dir: str | Path) -> None:
    """Refuse two folders of different suites (a smoke rerun against the standard reference): their runs differ
    in scale, so no cell can agree.

    Raises:
        ResultsError: one line naming both suites and what to compare instead.
    """
    suites = [sorted(map(str, frame["suite"].dropna().unique())) if "suite" in frame else [] for frame in
              (local, reference)]
    if suites[0] and suites[1] and suites[0] != suites[1]:
        raise ResultsError(f"{local_dir} holds the {', '.join(suites[0])} suite and {reference_dir} the "
                           f"{', '.join(suites[1])} suite; compare a rerun with the reference of its own suite (of a "
                           f"{suites[0][0]} rerun: results/{suites[0][0]})")


# --------------------------------------------------------------------------- agreement beyond the cells


def fit_agreement(local_dir: str | Path, reference_dir: str | Path) -> str:
    """How many runs judged by the fit criterion on both sides reached the same decision, and the share fitted
    on each side, in one sentence, from the folders' verified rows (:func:`pebench.store.load`, whose errors it
    raises); "" when no run is judged on both sides, or a side is not a folder."""
    if not (Path(local_dir).is_dir() and Path(reference_dir).is_dir()):
        return ""
    rerun, reference = (store.load(folder).drop_duplicates("run_id") for folder in (local_dir, reference_dir))
    if "fitted" not in rerun or "fitted" not in reference:
        return ""
    rerun, reference = rerun[["run_id", "fitted"]], reference[["run_id", "fitted"]]
    fits = rerun.merge(reference, on="run_id", suffixes=("_rerun", "_reference")).dropna()
    if fits.empty:
        return ""
    rerun_fit, reference_fit = fits["fitted_rerun"].astype(bool), fits["fitted_reference"].astype(bool)
    return (f"{int((rerun_fit == reference_fit).sum())} of {len(fits)} runs judged by the fit criterion on both sides "
            f"reached the same decision (fitted: {rerun_fit.mean():.1%} of them in the rerun, "
            f"{reference_fit.mean():.1%} in the reference).")


#: the leaderboard columns a comparison reads (:func:`pebench.analysis.leaderboard.leaderboard`'s)
LEADERBOARD_COLUMNS = ("arch", "encoding", "mrr", "mrr_low", "mrr_high")


def leaderboard_frame(data: bytes, source: str | Path = "<leaderboard>") -> pd.DataFrame:
    """A leaderboard's CSV (``tables/leaderboard_<experiment>.csv``) as a frame with :data:`LEADERBOARD_COLUMNS`:
    an architecture and an encoding on every row, the MRR and its 95% interval as finite numbers.

    Raises:
        ResultsError: not a CSV with those columns, or a value of them that pebench never writes, naming
            ``source``.
    """
    keys, numbers = LEADERBOARD_COLUMNS[:2], LEADERBOARD_COLUMNS[2:]
    frame = _table_frame(data, source, "leaderboard", keys, numbers)
    for column in numbers:
        _numbers(frame, column, source, "leaderboard", empty=False)
    return frame


def leaderboard_agreement(local_report: str | Path, reference_report: str | Path) -> list[str]:
    """One sentence per leaderboard (``tables/leaderboard_<experiment>.csv``, written by ``pebench report`` into
    the report folders ``local_report`` and ``reference_report``) on both sides: per architecture, for how many
    encodings the rerun's MRR lies inside the reference's 95% interval, the Spearman correlation of the two
    MRRs, and the first encoding on each side. A ``tables/`` that is a symbolic link is refused on one line
    (:func:`pebench.store.refuse_link`), never followed out of its folder."""
    sentences = []
    reference_tables, local_tables = (store.refuse_link(Path(folder) / "tables")
                                      for folder in (reference_report, local_report))
    for path in sorted(reference_tables.glob("leaderboard_*.csv")):
        if not (local_tables / path.name).exists():
            continue
        ref, new = (leaderboard_frame(store.read_plain_file(table, "table"), table)
                    for table in (path, local_tables / path.name))
        arches = []
        for arch, group in ref.groupby("arch", sort=True):
            both = group.merge(new[new["arch"] == arch], on=["arch", "encoding"], suffixes=("", "_rerun"))
            if both.empty:  # no encoding of this architecture on the rerun's board: nothing to compare
                continue
            inside = int(both["mrr_rerun"].between(both["mrr_low"], both["mrr_high"]).sum())
            rho = both["mrr"].rank().corr(both["mrr_rerun"].rank())  # Spearman's: Pearson's of the ranks
            first = [encoding_label(name) for name in (group.loc[group["mrr"].idxmax(), "encoding"],
                                                        both.loc[both["mrr_rerun"].idxmax(), "encoding"])]
            arches.append(f"{arch}, the rerun's MRR inside the reference's interval for {inside} of {len(both)} "
                          f"encodings, Spearman correlation {rho:.2f}, first "
                          + (f"{first[0]} on both sides" if first[0] == first[1] else
                             f"{first[1]} in the rerun and {first[0]} in the reference"))
        experiment = path.stem.removeprefix("leaderboard_")
        if arches:
            sentences.append(f"Leaderboard of {people_words(experiment)} (protocol v2's MRR): " + "; ".join(arches)
                             + ".")
    return sentences


#: a ranked encoding without a tier, at or below the position-free floor (:func:`main_table_frame` reads its tier 0
#: as NaN)
NO_EXTRAPOLATION = "no extrapolation"
#: a ranked encoding whose tier holds in under :data:`~pebench.analysis.leaderboard.TIER_CONFIDENCE` of the board's
#: bootstrap replicates (protocol v4's boards): in no tier, as the board says
BETWEEN_TIERS = "between tiers"


def placement(row: Mapping[str, Any], suffix: str = "") -> str:
    """Where a row of :func:`main_table_frame` (its columns named with ``suffix``, e.g. ``_before``) places an
    encoding, as its board does: ``tier k``, :data:`BETWEEN_TIERS`, :data:`NO_EXTRAPOLATION` or ``not ranked``."""
    if not row[f"ranked{suffix}"]:
        return "not ranked"
    tier, held = row[f"tier{suffix}"], row.get(f"tier_probability{suffix}")
    if pd.isna(tier):
        return NO_EXTRAPOLATION
    return BETWEEN_TIERS if held is not None and pd.notna(held) and held < TIER_CONFIDENCE else f"tier {int(tier)}"


def _placements(main: pd.DataFrame) -> dict[str, str]:
    """Each encoding's :func:`placement` in one experiment and architecture of a main table."""
    return {row["encoding"]: placement(row) for row in main.to_dict("records")}


def main_table_agreement(local_report: str | Path, reference_report: str | Path) -> list[str]:
    """One sentence per experiment and architecture of the main table (``tables/main.csv``, written by
    ``pebench report`` into the report folders ``local_report`` and ``reference_report``) on both sides: the top
    tier of each side (its encodings placed in tier 1, none between tiers), and for how many encodings the
    placement (a tier, between tiers, no extrapolation, not ranked) is the same on both; a side that ranks no
    encoding has no board to compare (a sample of a suite, or a folder missing runs), and the sentence says so. A
    ``tables/`` that is a symbolic link is refused on one line (:func:`pebench.store.refuse_link`), never followed."""
    paths = [store.refuse_link(Path(folder) / "tables") / "main.csv" for folder in (reference_report, local_report)]
    if not all(path.is_file() for path in paths):
        return []
    ref, new = (main_table_frame(store.read_plain_file(path, "table"), path) for path in paths)
    sentences = []
    for (experiment, arch), group in ref.groupby(["experiment", "arch"], sort=False):
        rerun = new[(new["experiment"] == experiment) & (new["arch"] == arch)]
        before, after = _placements(group), _placements(rerun)
        both = [e for e in before if e in after]
        if not both:
            continue
        if not rerun["ranked"].any():
            sentences.append(f"Main table of {people_words(experiment, arch)}: the rerun ranks no encoding (its "
                             "runs are fewer than a board needs), so its placements are not compared.")
            continue
        # in the canonical order, so that one top tier listed in two orders reads as the same
        tops = [encoding_labels(sorted((e for e, where in places.items() if where == "tier 1"), key=encoding_rank))
                for places in (after, before)]
        top = (f"the top tier is {tops[0]} on both sides" if tops[0] == tops[1] else
               f"the top tier is {tops[0]} in the rerun and {tops[1]} in the reference")
        same = sum(before[e] == after[e] for e in both)
        sentences.append(f"Main table of {people_words(experiment, arch)}: {top}; {same} of {len(both)} encodings "
                         "have the same placement on both sides (a tier, between tiers, no extrapolation, or not "
                         "ranked).")
    return sentences


def rerun_agreement(local_dir: str | Path, reference_dir: str | Path, local_report: str | Path | None = None
                    ) -> list[str]:
    """What a rerun says about reproducing the reference beyond its cells: the fit decisions
    (:func:`fit_agreement`), the main table's tiers (:func:`main_table_agreement`) and the leaderboards
    (:func:`leaderboard_agreement`; the rerun's report is in ``local_report``, default ``local_dir``), one
    sentence each."""
    fits = fit_agreement(local_dir, reference_dir)
    report = local_report or local_dir
    return [*([fits] if fits else []), *main_table_agreement(report, reference_dir),
            *leaderboard_agreement(report, reference_dir)]


def summary_with_agreement(comparison: Comparison, agreement: Sequence[str]) -> str:
    """What ``pebench compare`` prints: :meth:`Comparison.summary`, with the ``agreement`` sentences
    (:func:`rerun_agreement`) before its closing verdict, so that the verdict stays the first and last line."""
    lines = comparison.summary().split("\n")
    if not agreement:
        return "\n".join(lines)
    if len(lines) > 1:
        lines.pop()  # the closing verdict, said again below
    lines += ["agreement beyond the cells:", *(f"  {sentence}" for sentence in agreement),
              f"verdict: {comparison.verdict}"]
    return "\n".join(lines)
