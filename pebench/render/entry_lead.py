"""What an encoding's or task's page leads with, from its entry in a report's ``entries``
(:func:`pebench.report.entries.entries`): standard library only, so the site can choose without the analysis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pebench.protocol import BOARD_KINDS


def figure_places(figure: str, experiments: Sequence[str], archs: Sequence[str]) -> tuple[str, str | None] | None:
    """The experiment figure ``figure`` belongs to (the longest of ``experiments`` its name is or begins with,
    followed by ``_``) and the architecture its name names (one of ``archs``, else ``None``: every one); None
    when it belongs to no experiment."""
    owners = [e for e in experiments if figure == e or figure.startswith(f"{e}_")]
    if not owners:
        return None
    experiment = max(owners, key=len)
    rest = f"_{figure.removeprefix(experiment)}_"
    return experiment, next((arch for arch in archs if f"_{arch}_" in rest), None)




def lead(entry: Mapping[str, Any], tables: Sequence[str], main_table: str | None, figures: Sequence[str],
         appearances: Sequence[Sequence[str]], most: int = 2) -> tuple[list[str], list[str]]:
    """What the page of a name leads with, from its ``entry`` of a report's ``entries``
    (:func:`pebench.report.entries.entries`): the tables it has rows in among ``main_table`` and the boards of
    protocol v3 (:data:`pebench.protocol.BOARD_KINDS`) of the experiments it appears in (``appearances``: its
    ``(experiment, arch)`` pairs), in the order of ``tables``; and at most ``most`` of the figures that draw it, in the
    order of ``figures``: the first of each architecture (:func:`figure_places`; a figure of every architecture counts
    as one more), so an encoding gets the first accuracy-vs-length part of each architecture and a task the part that
    draws it."""
    experiments = sorted({experiment for experiment, _ in appearances})
    archs = sorted({arch for _, arch in appearances})
    boards = {f"{kind}_{experiment}" for kind in BOARD_KINDS for experiment in experiments}
    shown = [table for table in tables if table in entry["tables"] and (table == main_table or table in boards)]
    picked: dict[str | None, str] = {}
    for figure in figures:
        place = figure_places(figure, experiments, archs)
        if figure in entry["figures"] and place is not None and place[1] not in picked and len(picked) < most:
            picked[place[1]] = figure
    return shown, list(picked.values())
