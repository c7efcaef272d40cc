"""What changed between two results' verdicts: an older snapshot's main table (:mod:`pebench.store.history`) beside a
current one, per experiment, architecture and encoding.

A verdict *moved* when an encoding's tier changed (ranked on both sides; a ranked encoding without a tier, at or
below the position-free floor, has "no extrapolation", and moves only from or to a tier; one whose tier holds in
under 90% of the board's bootstrap replicates is "between tiers", and moves only from or to another placement), it
became ranked or unranked, or its harm verdict on the order-free controls flipped (both sides with a control
interval); an encoding compared on one side only is *new* or *gone*. Scores are shown beside the tiers with their
95% intervals and never compared as numbers: scores measured under different protocols are not comparable.

:func:`verdict_changes` reads two folders and returns a :class:`Changes` (its table model, its sentences and the
blocks a page renders); :func:`changes`, :func:`changes_table` and :func:`change_sentences` work on main-table
frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pebench import encodings
from pebench.analysis.compare import (
    BETWEEN_TIERS,
    KEYS,
    NO_EXTRAPOLATION,
    OPTIONAL_VERDICT_COLUMNS,
    VERDICT_COLUMNS,
    main_table_frame,
    placement,
)
from pebench.analysis.leaderboard import TIER_CONFIDENCE
from pebench.render import blocks
from pebench.render.tables import Cell, Column, Table, interval_text, markdown_code
from pebench.report.findings import people_words
from pebench.store import history
from pebench.store.schema import encoding_label

#: what can move, as the table's Moved column names it
MOVES = ("tier", "ranking", "harms")
#: the Moved column of an encoding compared on one side only
NEW, GONE = "new", "gone"
SIDES = ("before", "after")


def changes(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """One row per experiment, architecture and encoding of ``before`` or ``after`` (main-table frames,
    :func:`main_table_frame`): :data:`KEYS`, each of :data:`VERDICT_COLUMNS` as ``<column>_before`` and
    ``<column>_after``, ``side`` (``both``, ``before``, ``after``), ``moved`` (what moved, of :data:`MOVES`, or
    :data:`NEW` / :data:`GONE`; empty when nothing did). Rows in ``after``'s order, each architecture's encodings
    of ``before`` only at the end of its group."""
    columns = [*KEYS, *VERDICT_COLUMNS, *OPTIONAL_VERDICT_COLUMNS]
    merged = pd.merge(before.reindex(columns=columns), after.reindex(columns=columns), on=list(KEYS),
                      how="outer", suffixes=("_before", "_after"), indicator=True, sort=False)
    merged["side"] = merged.pop("_merge").map({"both": "both", "left_only": "before", "right_only": "after"})
    order = pd.concat([after[list(KEYS)], before[list(KEYS)]]).drop_duplicates()
    groups = list(dict.fromkeys(zip(order["experiment"], order["arch"], strict=True)))
    position = {key: i for i, key in enumerate(zip(*(order[k] for k in KEYS), strict=True))}
    merged["_order"] = [(groups.index((e, a)), position[(e, a, n)])
                        for e, a, n in zip(*(merged[k] for k in KEYS), strict=True)]
    merged = merged.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)
    merged["moved"] = [_moved(row) for row in merged.to_dict("records")]
    return merged


def _moved(row: Mapping[str, Any]) -> list[str]:
    """What moved in one row of :func:`changes`."""
    if row["side"] != "both":
        return [NEW if row["side"] == "after" else GONE]
    moved = []
    ranked = bool(row["ranked_before"]), bool(row["ranked_after"])
    if all(ranked) and _placement(row, "before") != _placement(row, "after"):
        moved.append("tier")
    if ranked[0] != ranked[1]:
        moved.append("ranking")
    harms = row["harms_before"], row["harms_after"]
    if not any(pd.isna(h) for h in harms) and bool(harms[0]) != bool(harms[1]):
        moved.append("harms")
    return moved


# --------------------------------------------------------------------------- words


def labels(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, str]:
    """How the two sides are named: their protocols (``v2``, ``v3``) when these differ, else their results
    versions when these do, else ``before`` and ``after``."""
    protocols = f"v{before['protocol']}", f"v{after['protocol']}"
    if protocols[0] != protocols[1]:
        return protocols
    versions = str(before["results_version"]), str(after["results_version"])
    return versions if versions[0] != versions[1] else SIDES


def _under(label: str) -> str:
    return label if label in SIDES else f"under {label}"


def _interval(point: float, low: float, high: float, digits: int = 2) -> str:
    """``point [low, high]``, or ``—`` without a point."""
    return "—" if not np.isfinite(point) else interval_text(point, low, high, digits)


def _placement(row: Mapping[str, Any], side: str) -> str:
    """:func:`~pebench.analysis.compare.placement` of one side of a row of :func:`changes`."""
    return placement(row, f"_{side}")


def _between(row: Mapping[str, Any], side: str) -> bool:
    return _placement(row, side) == BETWEEN_TIERS


def _held(row: Mapping[str, Any], side: str) -> str:
    """``P(tier k) p``: how often an encoding between tiers keeps its point estimate's tier ``k``."""
    return f"P(tier {int(row[f'tier_{side}'])}) {row[f'tier_probability_{side}']:.3f}"


def _tier(row: Mapping[str, Any], side: str) -> str:
    """``tier k``, ``between tiers (P(tier k) p)``, ``no extrapolation`` or ``not ranked``."""
    return f"{BETWEEN_TIERS} ({_held(row, side)})" if _between(row, side) else _placement(row, side)


def _score(row: Mapping[str, Any], side: str) -> str:
    return _interval(row[f"score_{side}"], row[f"score_low_{side}"], row[f"score_high_{side}"])


def _fit(row: Mapping[str, Any], side: str) -> str:
    rate = row[f"dependent_fit_rate_{side}"]
    return "—" if pd.isna(rate) else f"{100 * rate:.0f}%"


def _control(row: Mapping[str, Any], side: str) -> str:
    """The difference from the baseline on the controls, three decimals as the harm board."""
    return _interval(row[f"control_vs_baseline_{side}"], row[f"control_low_{side}"], row[f"control_high_{side}"], 3)


def _harms(row: Mapping[str, Any], side: str) -> str:
    harms = row[f"harms_{side}"]
    return "—" if pd.isna(harms) else "yes" if harms else "no"


#: the verdict columns the table shows, each for both sides
CELL_COLUMNS = ("tier", "score", "dependent_fit_rate", "harms")


def _cell_texts(row: Mapping[str, Any], side: str) -> dict[str, str]:
    """The table's texts of one side of a row (:data:`CELL_COLUMNS`)."""
    tier = "—" if not row[f"ranked_{side}"] else _placement(row, side).removeprefix("tier ")
    if _between(row, side):  # as the main table writes it: the probability of its point estimate's tier
        tier += f" ({row[f'tier_probability_{side}']:.3f})"
    return {"tier": tier, "score": _score(row, side), "dependent_fit_rate": _fit(row, side),
            "harms": _harms(row, side)}


def _verdict(row: Mapping[str, Any], side: str) -> str:
    """An encoding's verdict on one side, in words: tier or not ranked, score, fit, harm."""
    words = [_tier(row, side)]
    if row[f"ranked_{side}"]:
        words.append(f"score {_score(row, side)}")
    words.append(f"fitted {_fit(row, side)} of its order-dependent runs")
    if _harms(row, side) == "yes":
        words.append("harms the order-free controls")
    return ", ".join(words)


def _sentence(row: Mapping[str, Any], names: tuple[str, str], baseline: str) -> str:
    """One sentence saying what moved in one row of :func:`changes` (``names``: the sides' labels)."""
    before, after = names
    who = f"{people_words(row['experiment'], row['arch'])}: {encoding_label(row['encoding'])}"
    if NEW in row["moved"]:
        return f"{who} is compared {_under(after)} only ({_verdict(row, 'after')})."
    if GONE in row["moved"]:
        return f"{who} is compared {_under(before)} only ({_verdict(row, 'before')})."
    parts = []
    if "tier" in row["moved"]:
        held = "".join(f"{_held(row, side)} {_under(name)}; "
                       for side, name in zip(SIDES, names, strict=True) if _between(row, side))
        parts.append(f"moved from {_placement(row, 'before')} to {_placement(row, 'after')} ({held}score "
                     f"{_score(row, 'before')} {_under(before)}, {_score(row, 'after')} {_under(after)})")
    if "ranking" in row["moved"]:
        parts.append(f"moved from {_tier(row, 'before')} to {_tier(row, 'after')} (it fitted {_fit(row, 'before')} "
                     f"of its order-dependent runs {_under(before)}, {_fit(row, 'after')} {_under(after)})")
    if "harms" in row["moved"]:
        spans = row["control_low_after"] <= 0 <= row["control_high_after"]
        # harm is read where the interval lies below 0: one that spans 0 no longer shows harm, nor shows none
        now = "now harms" if row["harms_after"] else "is no longer found to harm" if spans else "no longer harms"
        parts.append(f"{now} the order-free controls (difference from {baseline} {_control(row, 'before')} "
                     f"{_under(before)}, {_control(row, 'after')} {_under(after)}"
                     f"{'; its interval spans 0, so whether it harms is unresolved' if spans else ''})")
    return f"{who} {'; '.join(parts)}."


def change_sentences(frame: pd.DataFrame, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What moved, in words (a frame of :func:`changes`; ``before`` and ``after`` described as
    :func:`pebench.store.history.describe` does): how many verdicts moved, then one sentence per encoding whose verdict
    moved or that is compared on one side only; where none moved, a sentence that says so."""
    names = labels(before, after)
    baseline = encoding_label(encodings.baseline_name() or "") or "the baseline"
    rows = frame.to_dict("records")
    both = [row for row in rows if row["side"] == "both"]
    moved = [row for row in both if row["moved"]]
    one_side = [row for row in rows if row["side"] != "both"]
    if before["results_version"] == after["results_version"] and not moved and not one_side:
        return [f"No verdict moved: both sides are the same results ({after['suite']} {after['results_version']})."]
    span = f"from {before['suite']} {before['results_version']} to {after['suite']} {after['results_version']}"
    if not moved:
        lead = (f"No verdict moved {span}: each of the {len(both)} encoding-architecture pairs compared under both "
                "keeps its tier, its ranking and its harm verdict.")
    else:
        lead = f"{len(moved)} of the {len(both)} encoding-architecture pairs compared under both moved {span}."
    if one_side:
        lead += f" {len(one_side)} {'is' if len(one_side) == 1 else 'are'} compared on one side only."
    return [lead, *(_sentence(row, names, baseline) for row in moved + one_side)]


def comparability_note(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What the scores beside the verdicts may be used for."""
    names = labels(before, after)
    if before["protocol"] != after["protocol"]:
        return (f"Scores under {names[0]} and {names[1]} are not comparable as numbers: they were measured under "
                "different protocols. They are shown with their 95% intervals beside "
                "the verdicts; a verdict moved only where a tier, the ranking or the harm verdict changed.")
    return ("A verdict moved only where a tier, the ranking or the harm verdict changed; scores are shown with their "
            "95% intervals beside them, not compared as numbers.")


# --------------------------------------------------------------------------- the table


def changes_table(frame: pd.DataFrame, before: Mapping[str, Any], after: Mapping[str, Any]) -> Table:
    """The verdicts of both sides per architecture and encoding (a frame of :func:`changes`), with what moved."""
    b, a = labels(before, after)
    experiments = list(dict.fromkeys(frame["experiment"]))
    several = len(experiments) > 1
    baseline = encoding_label(encodings.baseline_name() or "") or "the baseline"
    rows, starts = [], []
    for i, row in enumerate(frame.to_dict("records")):
        if i == 0 or (row["experiment"], row["arch"]) != tuple(frame.iloc[i - 1][["experiment", "arch"]]):
            starts.append(i)
        cells = [Cell(people_words(row["experiment"]), row["experiment"])] if several else []
        cells += [Cell(str(row["arch"]), row["arch"]), Cell(encoding_label(row["encoding"]), row["encoding"])]
        texts = {side: _cell_texts(row, side) for side in SIDES if row["side"] in ("both", side)}
        for column in CELL_COLUMNS:
            cells += [Cell(texts[side][column], row[f"{column}_{side}"]) if side in texts else Cell("")
                      for side in SIDES]
        cells.append(Cell(", ".join(row["moved"]) or "—", tuple(row["moved"])))
        rows.append(cells)
    columns = [Column("Experiment", "l", key=True)] if several else []
    columns += [Column("Arch", "l", key=True), Column("Encoding", "l", key=True)]
    for header, align in (("Tier", "c"), ("Score [95% CI]", "r"), ("Fit", "r"), ("Harms", "c")):
        columns += [Column(f"{header} {b}", align), Column(f"{header} {a}", align)]
    columns.append(Column("Moved", "l"))
    title = f"{'' if several else people_words(experiments[0]) + ': '}what changed from {b} to {a}"
    title = title[0].upper() + title[1:]
    caption = (f"The verdicts of the main table of {before['suite']} {before['results_version']} ({b}) beside those "
               f"of {after['suite']} {after['results_version']} ({a}), per architecture and encoding. Tier: 1 = "
               f"top; {BETWEEN_TIERS} = its tier holds in under {TIER_CONFIDENCE:.0%} of the board's bootstrap "
               f"replicates (in brackets: the share for its point estimate's tier); {NO_EXTRAPOLATION} = at or below "
               "the position-free floor, ranked but in no tier; — = not ranked (too few of its order-dependent runs "
               "fitted to compare it). Score: floor-normalised OOD score with its 95% interval. Fit: share of its "
               "order-dependent runs that met the fit criterion. Harms: the 95% "
               f"interval of its difference from {baseline} on the order-free controls lies below 0 (— = no such "
               "interval). Moved: the tier, the ranking or the harm verdict changed; new or gone: compared on one "
               "side only (its cells on the other side are empty).")
    data = frame.assign(moved=[", ".join(m) for m in frame["moved"]])
    return Table("changes", title, caption, columns, rows, starts, notes=[comparability_note(before, after)],
                 version=f"{after['suite']} {after['results_version']} against {before['suite']} "
                         f"{before['results_version']}", data=data)


# --------------------------------------------------------------------------- from folders


@dataclass
class Changes:
    """The verdicts of two results compared: the sides as :func:`pebench.store.history.describe` describes them, the
    frame of :func:`changes`, its table (:func:`changes_table`) and its sentences (:func:`change_sentences`)."""

    before: dict[str, Any]
    after: dict[str, Any]
    frame: pd.DataFrame
    table: Table
    sentences: list[str]

    @property
    def moved(self) -> bool:
        """Whether any verdict moved or an encoding is compared on one side only."""
        return any(bool(m) for m in self.frame["moved"])

    def blocks(self) -> list[blocks.PagePiece]:
        """The comparison as blocks (:mod:`pebench.render.blocks`) a page renders as they are: which results are
        compared, the sentences (a list where something moved, else one paragraph), the table and its note."""
        sides = [f"{side['suite']} {side['results_version']} (protocol v{side['protocol']}, made at commit "
                 f"{markdown_code(str(side['commit'])[:12] or 'unknown')})" for side in (self.before, self.after)]
        lead = blocks.text(f"The verdicts of {sides[0]} beside those of {sides[1]}.")
        said = [blocks.bullet_list(self.sentences[1:])] if len(self.sentences) > 1 else []
        table = blocks.table(self.table.headers, [[cell.shown for cell in row] for row in self.table.display_rows()])
        return [lead, blocks.text(self.sentences[0]), *said, table, *(blocks.text(note) for note in self.table.notes)]

    def to_text(self, width: int | None = None) -> str:
        """The sentences, then the table, for a terminal."""
        return "\n".join([*self.sentences, "", self.table.to_text(width)])


def verdict_changes(before: str | Path, after: str | Path) -> Changes:
    """Compare the verdicts of ``before`` with those of ``after``: each a snapshot folder
    (:func:`pebench.store.history.snapshot`, e.g. ``results/history/standard-v2-aaa7cfcc``) or a results folder with a
    current report (e.g. ``results/standard``), read through :func:`pebench.store.history.verdicts`.

    Raises:
        ResultsError: either side cannot be read (on one line, naming it).
    """
    sides = []
    for path in (before, after):
        described, data = history.verdicts(path)
        sides.append((described, main_table_frame(data, Path(path) / f"{described['main_table']}.csv")))
    (b, b_frame), (a, a_frame) = sides
    frame = changes(b_frame, a_frame)
    return Changes(b, a, frame, changes_table(frame, b, a), change_sentences(frame, b, a))
