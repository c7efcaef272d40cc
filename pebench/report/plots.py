"""Result figures. Each function takes the raw results DataFrame (as returned by
:func:`pebench.store.load`), aggregates it with :mod:`pebench.analysis.results` and
returns a :class:`matplotlib.figure.Figure`.

Figures are built on :class:`~matplotlib.figure.Figure` directly, without
pyplot: no global state, no GUI backend, nothing is shown. Save them with
``figure.savefig(path)``. Every encoding keeps the same colour in every
figure, and its line style: colour, marker and dash come from the encoding's place in the
canonical order (:func:`encoding_style`); no two encodings of a figure share a colour
(:func:`encoding_styles`), a plugin's included, and none is drawn in black (chance) or grey (floor,
training-range shading).

Figures are sized for the page that shows them: at most :data:`PAGE_WIDTH` inches wide, so that
the site's content column (about 820 px at a 1366 px window) shows them at their own size, where
matplotlib's 10 pt text is 13 px; a figure never holds more than :data:`MAX_PANELS` panels
(:func:`task_parts` splits a battery of tasks). The PDF copies are vector graphics for a paper.

Reference levels and the fit criterion are drawn the same way everywhere: chance is a dashed black line,
the position-free floor (the best accuracy without position information, :mod:`pebench.tasks.floors`) a
dash-dotted grey one, and a cell in which no seed met the fit criterion (its numbers describe a model
that did not learn the task) is drawn faintly: a thin dotted line labelled "(not fitted)", a hollow
dashed bar, a hatched heatmap cell with a dagger.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator, ScalarFormatter

from pebench import encodings
from pebench import metrics as metric_registry
from pebench.analysis import results
from pebench.config import ARCHS, CONDITIONS
from pebench.protocol import COMPARED_ENCODINGS
from pebench.store.schema import (
    BASE_VARIANT,
    completed,
    encoding_label,
    encoding_rank,
    order_dependent,
    sort_key,
    task_label,
)

#: line colours, one per encoding. The first :data:`SAFE_COLOURS` (the compared encodings', in canonical order)
#: are Okabe and Ito's colour-blind-safe set without its black (chance) and yellow (too light on white), then
#: Paul Tol's purple, olive and brown: any two are at least 17 CIELAB units apart in normal vision and under
#: simulated deuteranopia and protanopia (Machado et al. 2009). The others extend it for further encodings (the
#: extended suite, plugins), each at least 23 units from every colour before it, and are drawn dashed, so that
#: colour is never the only cue.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#AA3377", "#666633", "#663333",
           "#332288", "#999933", "#228833", "#D62728", "#17BECF", "#9467BD", "#A6761D", "#E7298A", "#225555",
           "#EE8866", "#66A61E", "#C5B0D5", "#C49C94", "#EE6677", "#225522")
SAFE_COLOURS = 9
#: line dashes: solid for the colour-blind-safe colours, then dashed, then dash-dot-dot once the palette is
#: used up (never dotted, which marks a cell with no fitted seed, nor dash-dotted, the floor's)
DASHES = ("-", "--", (0, (6, 1.5, 1, 1.5, 1, 1.5)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
#: widest figure, in inches: the site's content column at a 1366 px window (823 px at 96 dpi) shows it whole
PAGE_WIDTH = 8.5
#: most panels in one figure (three rows of three): more tasks are split over several figures (:func:`task_parts`)
MAX_PANELS = 9
TRAIN_SHADE = {"color": "0.9", "zorder": 0}
ORIGINAL = CONDITIONS[0]  # the unshuffled inputs
CHANCE = {"color": "k", "linestyle": "--", "linewidth": 1, "label": "chance"}
FLOOR = {"color": "0.4", "linestyle": "-.", "linewidth": 1.2, "label": "floor (no position)"}
#: a line of a cell with no fitted seed: thin, dotted and faint, in its encoding's colour and marker
NOT_FITTED_LINE = {"linestyle": ":", "linewidth": 0.9, "alpha": 0.5}
NOT_FITTED_LABEL = " (not fitted)"
#: the legend's one entry for every line of a cell with no fitted seed
NOT_FITTED_KEY = "not fitted: no seed met the fit criterion"
#: a bar of a cell with no fitted seed: hollow, with a dashed outline in the bar's colour
NOT_FITTED_BAR = {"linestyle": "--", "linewidth": 1.0}
#: a hollow patch (matplotlib's facecolor "none", as RGBA)
TRANSPARENT = (0.0, 0.0, 0.0, 0.0)
#: hatching of a heatmap cell with no fitted seed (its number also gets the table's dagger)
NOT_FITTED_HATCH = "////"
#: a line of the field in a figure that emphasises one encoding (:func:`encoding_vs_field`): thin, grey, no marker
FIELD_LINE = {"color": "0.72", "linewidth": 0.8, "linestyle": "-", "marker": None, "zorder": 1}
#: the emphasised encoding's line is this much wider than a line of a figure of every encoding
EMPHASIS_WIDTH = 2.4


def style(index: int) -> dict[str, object]:
    """Colour, marker and dash of the ``index``-th line of a canonical order (see :func:`encoding_style`): the
    first ``len(PALETTE)`` each have their own colour; past it the colours repeat with another dash and marker."""
    cycle, place = divmod(index, len(PALETTE))
    dash = DASHES[(cycle + (place >= SAFE_COLOURS)) % len(DASHES)]
    return {"color": PALETTE[place], "marker": MARKERS[(index + cycle) % len(MARKERS)], "linestyle": dash}


def encoding_order() -> list[str]:
    """The canonical order of encodings: the compared ones as declared, then every other registered name in the
    order of :func:`pebench.encodings.in_order` (pebench's own, then plugins as they are loaded), so that loading a
    plugin never changes a built-in encoding's colour."""
    return list(dict.fromkeys([*COMPARED_ENCODINGS, *encodings.in_order()]))


def _style_index(encoding: str, order: Sequence[str]) -> int:
    """Place of ``encoding`` in ``order``; a name outside it (e.g. a wrapper around another base) gets one past
    it from a hash of its name, the same in every process."""
    if encoding in order:
        return order.index(encoding)
    digest = int(hashlib.sha256(encoding.encode()).hexdigest(), 16)
    return len(order) + digest % len(PALETTE)


def encoding_style(encoding: str) -> dict[str, object]:
    """The line style of ``encoding``, the same in every figure: from its place in :func:`encoding_order`
    (:func:`style`). A figure draws with :func:`encoding_styles`, which keeps these colours and only moves a
    name whose colour an encoding earlier in the order already took in that figure."""
    return style(_style_index(encoding, encoding_order()))


def encoding_styles(names: Iterable[str]) -> dict[str, dict[str, object]]:
    """The style of each encoding drawn in one figure: its own (:func:`encoding_style`), unless that colour is
    taken by an encoding earlier in the canonical order (possible only past the palette: a hashed wrapper name,
    or more than ``len(PALETTE)`` encodings); then the next style whose colour is still free in the figure."""
    order = encoding_order()
    styles: dict[str, dict[str, object]] = {}
    taken: set[object] = set()
    for name in sorted(dict.fromkeys(names), key=lambda name: (_style_index(name, order), name)):
        index = _style_index(name, order)
        while style(index)["color"] in taken and len(taken) < len(PALETTE):
            index += 1
        styles[name] = style(index)
        taken.add(styles[name]["color"])
    return styles


def label(encoding: str, encoding_options: str = "{}") -> str:
    """Display name of an encoding with its options (``rope``, ``rope {"layout":"half"}``): its registered
    label (:func:`pebench.store.schema.encoding_label`), so the baseline registered as ``none`` reads as its label."""
    name = encoding_label(encoding)
    return name if encoding_options in ("{}", "", None) or pd.isna(encoding_options) else \
        f"{name} {encoding_options}"


def _select(data: pd.DataFrame, experiment: str, **equal: object) -> pd.DataFrame:
    rows = data[data["experiment"] == experiment]
    for column, value in equal.items():
        if value is not None:
            rows = rows[rows[column] == value]
    if rows.empty:
        found = ", ".join(sorted(map(str, data["experiment"].unique())))
        where = "".join(f", {k}={v}" for k, v in equal.items() if v is not None)
        raise ValueError(f"no rows of experiment {experiment!r}{where} in the results; experiments present: {found}")
    return rows


def _grid(n: int, ncols: int = 3, height: float = 2.3) -> tuple[Figure, np.ndarray]:
    """``n`` panels, ``ncols`` a row, at most :data:`PAGE_WIDTH` wide (the page shows it at its own size, where
    its labels stay readable); the legend goes below."""
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    figure = Figure(figsize=(min(PAGE_WIDTH, max(6.4, 2.7 * ncols + 0.4)), height * nrows + 1.6),
                    layout="constrained")
    axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return figure, axes[:n]


def tasks_in_order(tasks: Iterable[str]) -> list[str]:
    """``tasks`` once each, in the tables' order (:func:`pebench.store.schema.sort_key`: order-dependent tasks, then
    the controls, each by name)."""
    names = pd.Series(list(dict.fromkeys(tasks)), name="task", dtype=object)
    return names.sort_values(key=sort_key, kind="stable").tolist()


def task_parts(data: pd.DataFrame, experiment: str, *, arch: str | None = None) -> list[list[str]]:
    """The tasks of each accuracy-vs-length figure of ``experiment`` (``arch``; ``None``: the first present), in
    :func:`tasks_in_order`: one figure, or as few as hold at most :data:`MAX_PANELS` panels each, balanced (19
    tasks: 6, 7 and 6), so that no figure is a wall of small panels. ``accuracy_vs_length(..., part=k)`` draws
    the ``k``-th (from 1)."""
    rows = _select(data, experiment, arch=arch)
    arch = arch or sorted(rows["arch"].unique())[0]
    return split_tasks(rows.loc[(rows["arch"] == arch) & completed(rows), "task"])


def split_tasks(tasks: Iterable[str]) -> list[list[str]]:
    """``tasks`` in :func:`tasks_in_order`, in as few consecutive parts of at most :data:`MAX_PANELS` as hold
    them, balanced (:func:`task_parts`; none for no task). A figure named ``<name>_part<k>`` shows the
    ``k``-th (from 1) of its tasks."""
    tasks = tasks_in_order(tasks)
    count = -(-len(tasks) // MAX_PANELS)
    bounds = [round(i * len(tasks) / count) for i in range(count + 1)]
    return [tasks[bounds[i]:bounds[i + 1]] for i in range(count)]


#: the smallest ratio between neighbouring labelled lengths of a log axis whose lengths are not powers of two
MIN_LABEL_RATIO = 1.3  # 20 and 25 side by side read as one number in a third of a page


#: the widest line of a figure's title, in characters (about the page width at the title's font size)
TITLE_WIDTH = 75


def wrapped_title(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` with each of its lines wrapped at ``width`` characters (a declared title can be long:
    "Replication scale check: Kazemnejad et al. 2023 at width 64, 4 layers — ...")."""
    return "\n".join(textwrap.fill(line, width) or line for line in title.split("\n"))


def length_ticks(lengths: Sequence[int]) -> tuple[list[int], list[int]]:
    """(labelled, unlabelled) ticks of a length axis: every evaluated length is ticked, but on a log axis
    the labels of 10, 12, 14 ... run into each other, so only the powers of two among them (and the
    shortest and longest) are labelled, when there are at least two of them; a power of two within a factor
    1.5 of the shortest or longest is left unlabelled (32 beside 40 read as "3240"). Lengths with fewer powers
    of two are labelled from the shortest on, each at least :data:`MIN_LABEL_RATIO` times the last one labelled,
    and the longest always (5, 10, 15, 20, 28, 40 of 5, 10, 15, 20, 22, 25, 28, ... 37, 40)."""
    lengths = sorted({int(n) for n in lengths})
    ends = (lengths[0], lengths[-1])
    labelled = [n for n in lengths if n in ends or (n & (n - 1) == 0 and 1.5 * ends[0] <= n <= ends[1] / 1.5)]
    if len(labelled) < 3:
        labelled = [ends[0]]
        for n in lengths[1:]:
            if n >= MIN_LABEL_RATIO * labelled[-1]:
                labelled.append(n)
        if labelled[-1] != ends[1]:  # the longest replaces a label too close to it
            labelled[-1:] = [ends[1]] if len(labelled) > 1 and ends[1] < MIN_LABEL_RATIO * labelled[-1] else \
                [labelled[-1], ends[1]]
    return labelled, [n for n in lengths if n not in labelled]


def _length_axis(ax, lengths: Sequence[int], xlabel: str) -> None:
    """Log-2 x axis ticked at the evaluated lengths (labelled at those of :func:`length_ticks`)."""
    labelled, unlabelled = length_ticks(lengths)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(labelled))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(FixedLocator(unlabelled) if unlabelled else NullLocator())
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda value, position: ""))
    ax.set_xlabel(xlabel)


def _curve_panels(
    curves: pd.DataFrame, hue: str, styles: dict[str, dict[str, str]], metric: str, ylabel: str, title: str,
    *, log_y: bool = False, references: bool = True, xlabel: str = "evaluation length (input tokens)",
    emphasised: str | None = None,
) -> Figure:
    """One panel per task: ``metric`` vs length, one line (mean) and band (95% CI) per ``hue`` value.

    ``references``: an accuracy on a 0-1 axis, with its chance level (the metric's registered reference)
    and its position-free floor (column ``floor_<metric>`` of :func:`pebench.analysis.results.curves`). A line of
    a cell without a fitted seed (``judged`` False) is drawn in :data:`NOT_FITTED_LINE`. ``emphasised``: the one
    ``hue`` value drawn in its style, wider, with its band, over every other in :data:`FIELD_LINE` (no band).
    """
    tasks = tasks_in_order(curves["task"])
    if not tasks:  # e.g. rows of no condition the figure draws: only a file pebench did not write has them
        raise ValueError(f"no rows to draw in the figure {title.splitlines()[0]!r}: check the run files' "
                         "condition and metric columns")
    chance = metric_registry.get(metric, "length").reference
    figure, axes = _grid(len(tasks))
    for ax, task in zip(axes, tasks, strict=True):
        frame = curves[curves["task"] == task]
        ax.axvspan(float(frame["eval_len"].min()) / 1.2, float(frame["train_max_len"].max()), **TRAIN_SHADE,
                   label="training lengths")
        for name, line in frame.groupby(hue, sort=False):
            _draw_line(ax, line.sort_values("eval_len"), metric, name, styles[name], emphasised)
        if references:
            for column, line_style in ((chance, CHANCE), (f"floor_{metric}", FLOOR)):
                level = frame.groupby("eval_len")[column].mean().dropna() if column in frame else pd.Series()
                if not level.empty:
                    ax.plot(level.index, level.values, **line_style)
            ax.set_ylim(-0.02, 1.02)
        if log_y:
            ax.set_yscale("log")
            plain = FuncFormatter(lambda value, _: f"{value:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
            ax.tick_params(axis="y", which="minor", labelsize="x-small")
        _length_axis(ax, frame["eval_len"], xlabel)
        ax.set_title(task_label(task))
        ax.set_ylabel(ylabel)
    _label_outer(axes)
    _page_legend(figure, *_curve_legend(axes, styles if emphasised is None else {
        emphasised: {**styles[emphasised], "linewidth": EMPHASIS_WIDTH}, FIELD_LABEL: FIELD_LINE}))
    figure.suptitle(wrapped_title(title), fontsize="medium")
    return figure


def _draw_line(ax, line: pd.DataFrame, metric: str, name: str, line_style: dict[str, object],
               emphasised: str | None) -> None:
    """One line of :func:`_curve_panels` (mean, and its 95% CI band where it has fitted seeds): in its style; or,
    beside an ``emphasised`` one, in :data:`FIELD_LINE` (no band), or wider when it is the emphasised one. A line
    without a fitted seed (``judged`` False) is drawn in :data:`NOT_FITTED_LINE`, without a band."""
    x, mean, ci = line["eval_len"], line[f"{metric}_mean"], line[f"{metric}_ci95"].fillna(0.0)
    fitted = bool(line["judged"].all()) if "judged" in line else True
    if emphasised is not None and name != emphasised:  # the field: grey, under the emphasised line
        ax.plot(x, mean, label=FIELD_LABEL + ("" if fitted else NOT_FITTED_LABEL),
                **{**FIELD_LINE, **({} if fitted else {"linestyle": ":"})})
        return
    own = emphasised is not None
    if not fitted:
        width = {"linewidth": EMPHASIS_WIDTH / 2, "zorder": 3} if own else {}
        ax.plot(x, mean, markersize=3 if own else 2, label=f"{name}{NOT_FITTED_LABEL}",
                **{**line_style, **NOT_FITTED_LINE, **width})
        return
    wide = {"linewidth": EMPHASIS_WIDTH, "zorder": 3} if own else {}
    ax.plot(x, mean, markersize=4 if own else 3, label=name, **{**line_style, **wide})
    ax.fill_between(x, mean - ci, mean + ci, color=line_style["color"], alpha=0.2 if own else 0.15, linewidth=0,
                    **({"zorder": 2} if own else {}))


#: the legend's one entry for every line but the emphasised one's (:func:`encoding_vs_field`)
FIELD_LABEL = "every other encoding"


#: legend rows a curve figure's height (:func:`_grid`) holds; each further row adds :data:`LEGEND_ROW_HEIGHT` inches
LEGEND_ROWS, LEGEND_ROW_HEIGHT = 3, 0.17


def _page_legend(figure: Figure, handles: list, labels: list[str], most: int = 4) -> None:
    """The figure's legend below its panels in small type, in as many columns (up to ``most``) as fit its width, as
    measured (long labels such as 'Randomized Transformer-XL {"max_position":410}' ran off both sides in four); the
    figure grows by the rows beyond :data:`LEGEND_ROWS`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    for ncols in range(most, 0, -1):
        legend = figure.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize="small",
                               frameon=False)
        if ncols == 1 or legend.get_window_extent(renderer).width <= figure.bbox.width:
            break
        legend.remove()
    rows = -(-len(labels) // ncols)
    figure.set_figheight(figure.get_figheight() + LEGEND_ROW_HEIGHT * max(0, rows - LEGEND_ROWS))


def _curve_legend(axes: np.ndarray, styles: dict[str, dict[str, object]]) -> tuple[list, list[str]]:
    """Handles and labels of a curve figure's legend: each line drawn (in ``styles``' order) once in its fitted
    look, then the reference lines and shading, then one key for every "(not fitted)" line (their colour
    already names the encoding), instead of a second entry per encoding."""
    drawn: dict[str, object] = {}
    for ax in axes:  # panels can differ in which lines they have
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            drawn.setdefault(text, handle)
    names = {text.removesuffix(NOT_FITTED_LABEL) for text in drawn}
    keys = {name: Line2D([], [], markersize=3, **look) for name, look in styles.items() if name in names}
    keys.update({text: handle for text, handle in drawn.items() if text.removesuffix(NOT_FITTED_LABEL) not in styles})
    if any(text.endswith(NOT_FITTED_LABEL) for text in drawn):
        keys[NOT_FITTED_KEY] = Line2D([], [], color="0.3", marker="o", markersize=2, **NOT_FITTED_LINE)
    return list(keys.values()), list(keys)


def _label_outer(axes: np.ndarray) -> None:
    """Keep the y label on the first panel of each row and the x label on the lowest panel of each column
    (every panel keeps its tick labels: a panel's length axis may differ from its neighbours')."""
    ncols = axes[0].get_gridspec().ncols if len(axes) else 1
    for index, ax in enumerate(axes):
        if index % ncols:
            ax.set_ylabel("")
        if index + ncols < len(axes):
            ax.set_xlabel("")


def _labelled_curves(data: pd.DataFrame) -> pd.DataFrame:
    """:func:`pebench.analysis.results.curves` of ``data`` (of its completed runs), each line with its label."""
    frame = results.curves(data)
    frame["label"] = [label(e, o) for e, o in zip(frame["encoding"], frame["encoding_options"], strict=True)]
    return frame


def _encoding_styles(frame: pd.DataFrame) -> dict[str, dict[str, object]]:
    """Line label -> style of each encoding (with its options) in ``frame``, in canonical order: the encoding's
    colour in this figure (:func:`encoding_styles`); a second set of options of one encoding keeps its colour
    with the next dash and marker."""
    lines = sorted(dict.fromkeys(zip(frame["encoding"], frame["label"], strict=True)),
                   key=lambda line: (encoding_rank(line[0]), line[1]))
    per_encoding = encoding_styles(encoding for encoding, _ in lines)
    styles: dict[str, dict[str, object]] = {}
    drawn: dict[str, int] = {}
    for encoding, text in lines:
        look, k = per_encoding[encoding], drawn.get(encoding, 0)
        drawn[encoding] = k + 1
        styles[text] = look if not k else {
            **look, "linestyle": DASHES[(DASHES.index(look["linestyle"]) + k) % len(DASHES)],
            "marker": MARKERS[(MARKERS.index(look["marker"]) + k) % len(MARKERS)]}
    return styles


def accuracy_vs_length(
    data: pd.DataFrame, experiment: str, *, arch: str | None = None, metric: str = "token_acc",
    condition: str = ORIGINAL, part: int | None = None, title: str | None = None,
    curves: tuple[pd.DataFrame, str] | None = None,
) -> Figure:
    """Accuracy vs evaluation length, one panel per task and one line per encoding.

    Lines are means over the fitted seeds, bands 95% t-intervals; the grey area
    is the training range, the dashed line chance level and the dash-dotted
    grey one the position-free floor; a cell with no fitted seed is a thin
    dotted line (one legend key says so). ``arch=None`` takes the first
    architecture present; ``part`` (from 1) draws only the tasks of that part of
    :func:`task_parts`, ``None`` every task. ``curves``: what :func:`accuracy_curves` gave for the same
    arguments (a report that captions the figure from them first), so that they are not computed again.
    """
    frame, where = curves if curves is not None else accuracy_curves(data, experiment, arch=arch, condition=condition,
                                                                     part=part)
    kind = metric_registry.get(metric, "length").axis_label
    return _curve_panels(frame, "label", _encoding_styles(frame), metric, kind,
                         f"{title or f'{experiment}: {kind} vs length ({where})'}\nmean and 95% CI over fitted seeds")


def encoding_vs_field(curves: pd.DataFrame, encoding: str, *, metric: str = "token_acc", title: str) -> Figure:
    """Accuracy vs evaluation length, one panel per task of ``curves`` (:func:`accuracy_curves`, at most
    :data:`MAX_PANELS` tasks), ``encoding`` (a name of its ``encoding`` column) emphasised: its line in its own
    colour, wide, with its 95% CI band, over every other encoding's in thin grey (:data:`FIELD_LINE`), so that an
    encoding's page shows where it stands without a legend of every encoding. An encoding run with several sets of
    options is drawn with the first (each set has its line in :func:`accuracy_vs_length`)."""
    own = curves.loc[curves["encoding"] == encoding, "label"]
    if own.empty:
        raise ValueError(f"no curves of encoding {encoding!r} to draw in the figure {title.splitlines()[0]!r}")
    emphasised = sorted(own.unique())[0]
    frame = curves[(curves["encoding"] != encoding) | (curves["label"] == emphasised)]
    kind = metric_registry.get(metric, "length").axis_label
    return _curve_panels(frame, "label", _encoding_styles(frame), metric, kind,
                         f"{title}\n{emphasised}: mean and 95% CI over fitted seeds; grey: every other encoding",
                         emphasised=emphasised)


def encoding_vs_baselines(curves: pd.DataFrame, encoding: str, baselines: Sequence[str], *, title: str,
                          metric: str = "token_acc") -> Figure:
    """Accuracy vs evaluation length, one panel per task of ``curves`` (:func:`accuracy_curves`), ``encoding``
    emphasised (its colour, wide, over the others) beside each of ``baselines``, every line with its 95% CI band:
    a verdict's figure (:mod:`pebench.report.verdict`), where the reader compares the encoding with a few named
    baselines rather than with the whole field."""
    frame = curves[curves["encoding"].isin([encoding, *baselines])]
    own = frame.loc[frame["encoding"] == encoding, "label"]
    if own.empty:
        raise ValueError(f"no curves of encoding {encoding!r} to draw in the figure {title.splitlines()[0]!r}")
    styles = _encoding_styles(frame)
    for name in own.unique():
        styles[name] = {**styles[name], "linewidth": EMPHASIS_WIDTH, "zorder": 3}
    kind = metric_registry.get(metric, "length").axis_label
    return _curve_panels(frame, "label", styles, metric, kind, f"{title}\nmean and 95% CI over fitted seeds")


def accuracy_curves(
    data: pd.DataFrame, experiment: str, *, arch: str | None = None, condition: str = ORIGINAL,
    part: int | None = None,
) -> tuple[pd.DataFrame, str]:
    """The curves :func:`accuracy_vs_length` draws (every accuracy metric) and where they are from ("decoder, part
    1 of 2"); :func:`reference_keys` of them says which keys its figure of a metric shows."""
    rows = _select(data, experiment, arch=arch)
    arch = arch or sorted(rows["arch"].unique())[0]
    rows = rows[(rows["arch"] == arch) & completed(rows)]
    where = arch
    if part is not None:
        parts = split_tasks(rows["task"])
        if not 1 <= part <= len(parts):
            raise ValueError(f"part {part} of {experiment!r} ({arch}) does not exist: its tasks make "
                             f"{len(parts)} figure(s), parts 1 to {len(parts)}")
        rows = rows[rows["task"].isin(parts[part - 1])]
        where = f"{arch}, part {part} of {len(parts)}" if len(parts) > 1 else arch
    frame = _labelled_curves(rows)
    return frame[(frame["condition"] == condition) & (frame["variant"] == BASE_VARIANT)], where


def reference_keys(curves: pd.DataFrame, metric: str, references: bool = True) -> frozenset[str]:
    """Which keys besides the lines :func:`_curve_panels` draws for ``curves`` (:func:`accuracy_curves`,
    :func:`variant_frame`): ``"chance"`` and ``"floor"`` where a panel has that level (with ``references``), ``"not
    fitted"`` where a line has no fitted seed; what a caption of the figure explains."""
    keys = set()
    if references:
        chance = metric_registry.get(metric, "length").reference
        keys |= {key for key, column in (("chance", chance), ("floor", f"floor_{metric}"))
                 if column in curves and curves[column].notna().any()}
    if "judged" in curves and not curves["judged"].astype(bool).all():
        keys.add("not fitted")
    return frozenset(keys)


def variant_curves(data: pd.DataFrame, experiment: str, *, title: str | None = None,
                   metric: str = "token_acc", curves: pd.DataFrame | None = None) -> Figure:
    """One trained model evaluated as trained and under each evaluation variant (e.g. RoPE scalings):
    accuracy vs length, one line per variant, in the order the experiment declares them. ``curves``: what
    :func:`variant_frame` gave for ``experiment``, not computed again."""
    frame = curves if curves is not None else variant_frame(data, experiment)
    variants = list(dict.fromkeys(frame.sort_values("variant", key=sort_key, kind="stable")["variant"]))
    return _curve_panels(frame, "variant", {v: style(i) for i, v in enumerate(variants)}, metric,
                         metric_registry.get(metric, "length").axis_label,
                         f"{title or f'{experiment}: evaluation variants'}\nmean and 95% CI over fitted seeds")


def variant_frame(data: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The curves :func:`variant_curves` draws, one line per evaluation variant."""
    frame = _labelled_curves(_select(data, experiment))
    return frame[frame["condition"] == ORIGINAL]


def perplexity_vs_length(data: pd.DataFrame, experiment: str, *, title: str | None = None) -> Figure:
    """Character-LM perplexity vs evaluation length (log scale), one line per encoding."""
    frame = _labelled_curves(_select(data, experiment))
    frame = frame[(frame["condition"] == ORIGINAL) & (frame["variant"] == BASE_VARIANT)]
    return _curve_panels(frame, "label", _encoding_styles(frame), "perplexity", "perplexity (log scale)",
                         f"{title or f'{experiment}: perplexity vs context length'}\nmean and 95% CI over seeds",
                         log_y=True,
                         references=False, xlabel="evaluation context (characters)")


#: inches of a character of the heatmap's encoding labels and title (10 pt DejaVu Sans, on average, with a margin)
HEATMAP_CHAR_WIDTH = 0.085
#: inches the heatmap's colour bar and its label take, and the narrowest heatmap (its legend's line fits)
HEATMAP_COLORBAR_WIDTH, HEATMAP_MIN_WIDTH = 1.3, 4.0


def heatmap_keys(cells: pd.DataFrame, metric: str = "ood_token_acc") -> frozenset[str]:
    """``{"not fitted"}`` where :func:`ood_heatmap` of ``cells`` (:func:`heatmap_cells`) hatches a cell (one with no
    fitted seed, on a metric that needs the fit), else nothing: what its caption explains."""
    unfitted = metric_registry.get(metric).needs_fit and not cells["judged"].astype(bool).all()
    return frozenset({"not fitted"} if unfitted else ())


def heatmap_cells(data: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The cells :func:`ood_heatmap` draws: every metric's seed statistics per encoding, task and architecture."""
    cells = results.aggregate(results.run_metrics(_select(data, experiment)))
    return cells[cells["variant"] == BASE_VARIANT]


def ood_heatmap(data: pd.DataFrame, experiment: str, *, metric: str = "ood_token_acc", title: str | None = None,
                cells: pd.DataFrame | None = None) -> Figure:
    """Mean ``metric`` (default OOD token accuracy) over fitted seeds, encodings x tasks; one panel per
    architecture, stacked on the same task columns (labelled under the last). A cell with no fitted seed is
    hatched and its number carries the tables' dagger. ``cells``: what :func:`heatmap_cells` gave for
    ``experiment``, not computed again."""
    cells = cells if cells is not None else heatmap_cells(data, experiment)
    archs = archs_in_order(cells)
    tasks = tasks_in_order(cells["task"])
    panel_rows = [cells.loc[cells["arch"] == arch, ["encoding", "encoding_options"]].drop_duplicates().shape[0]
                  for arch in archs]
    # one panel per architecture, stacked, on the tasks' common columns: the page width holds every column, and a
    # few columns leave room for the longest encoding label, the colour bar and the title (a narrower figure
    # collapsed under constrained layout: "Randomized RoPE {"max_len":410}" beside one task column)
    cells = cells.assign(label=[label(e, o) for e, o in zip(cells["encoding"], cells["encoding_options"],
                                                             strict=True)])
    label_width = HEATMAP_CHAR_WIDTH * cells["label"].str.len().max()  # inches of the longest encoding label
    width = min(PAGE_WIDTH, max(HEATMAP_MIN_WIDTH, label_width + HEATMAP_COLORBAR_WIDTH + 0.6 * len(tasks)))
    cell_width = (width - label_width - HEATMAP_COLORBAR_WIDTH) / len(tasks)  # inches
    label_height = 0.075 * max(len(task) for task in tasks)  # task names at 45 degrees, under the last panel
    figure = Figure(figsize=(width, 0.3 * sum(panel_rows) + 0.45 * len(archs) + label_height + 1.1),
                    layout="constrained")
    axes = figure.subplots(len(archs), 1, squeeze=False, gridspec_kw={"height_ratios": panel_rows}).ravel()
    image = None
    for index, (ax, arch) in enumerate(zip(axes, archs, strict=True)):
        part = cells[cells["arch"] == arch]
        order = list(dict.fromkeys(part.sort_values("encoding", key=lambda s: s.map(encoding_rank))["label"]))
        table = part.pivot_table(index="label", columns="task", values=f"{metric}_mean", sort=False)
        table = table.reindex(index=order, columns=tasks)
        judged = part.pivot_table(index="label", columns="task", values="judged", aggfunc="all", sort=False)
        judged = judged.reindex(index=order, columns=tasks).fillna(True).astype(bool)
        image = ax.imshow(table.to_numpy(float), vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
        for (i, j), value in np.ndenumerate(table.to_numpy(float)):
            fitted = bool(judged.iat[i, j]) or not metric_registry.get(metric).needs_fit
            if not fitted:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=NOT_FITTED_HATCH,
                                       edgecolor="0.75", linewidth=0))
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}" + ("" if fitted else "†"), ha="center", va="center",
                        fontsize=8 if cell_width >= 0.42 else 7, color="black" if value > 0.6 else "white")
        last = index == len(archs) - 1
        ax.set_xticks(range(len(tasks)), [task_label(t) for t in tasks] if last else [], rotation=45, ha="right",
                      rotation_mode="anchor")
        ax.set_yticks(range(len(order)), order)
        ax.set_title(arch)
    name = metric_registry.get(metric).axis_label
    bar_label = f"{name} (mean over fitted seeds)"
    if HEATMAP_CHAR_WIDTH * len(bar_label) > 0.8 * figure.get_figheight():  # a short figure: two lines, not cut off
        bar_label = f"{name}\n(mean over fitted seeds)"
    figure.colorbar(image, ax=list(axes), label=bar_label, shrink=0.9, aspect=30)
    if "not fitted" in heatmap_keys(cells, metric):
        figure.legend([Patch(facecolor=TRANSPARENT, edgecolor="0.5", hatch=NOT_FITTED_HATCH)],
                      ["† no seed fitted: mean over all seeds"], loc="outside lower center", fontsize="small",
                      frameon=False)
    figure.suptitle(wrapped_title(f"{title or f'{experiment}: {name}'}\nper encoding and task",
                                  min(TITLE_WIDTH, int(width / HEATMAP_CHAR_WIDTH))), fontsize="medium")
    return figure


def archs_in_order(frame: pd.DataFrame) -> list[str]:
    """Architectures present, in :data:`pebench.config.ARCHS` order, then any others by name."""
    present = set(frame["arch"])
    return [a for a in ARCHS if a in present] + sorted(present - set(ARCHS))


#: bar colours of order-dependent tasks (the palette, then tab20's light shades); controls are greys
TASK_COLORS = (*PALETTE, "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d")
CONTROL_GREYS = ("0.3", "0.5", "0.65", "0.8", "0.9")


def _task_colors(tasks: Sequence[str]) -> dict[str, str]:
    """A distinct colour per order-dependent task and a distinct grey per control, in the order given
    (colours repeat only beyond :data:`TASK_COLORS` and :data:`CONTROL_GREYS`)."""
    dependent = [t for t in tasks if order_dependent(t)]
    controls = [t for t in tasks if not order_dependent(t)]
    colors = {t: TASK_COLORS[i % len(TASK_COLORS)] for i, t in enumerate(dependent)}
    colors.update({t: CONTROL_GREYS[i % len(CONTROL_GREYS)] for i, t in enumerate(controls)})
    return colors


def _legend_columns(labels: Iterable[str], width: float, most: int = 4) -> int:
    """Columns of a legend of ``labels`` in small type that fit a figure ``width`` inches wide (at most ``most``)."""
    longest = max((len(text) for text in labels), default=1)
    return max(1, min(most, int(width * 72 / ((longest + 5) * 4.8))))  # 4.8 pt: a character of small type


def order_sensitivity(data: pd.DataFrame, experiment: str, *, title: str | None = None) -> Figure:
    """Original minus shuffled token accuracy per encoding and task; one panel per architecture present
    (encoder above decoder), each with the encodings that architecture was run with.

    On order-dependent tasks (solid bars) this is the order reliance — high
    is good; on order-invariant controls (hatched) it is the invariance gap —
    it should be ~0. Bars are means over fitted seeds with 95% CIs; a cell with no
    fitted seed is a hollow bar with a dashed outline (:data:`NOT_FITTED_BAR`), its mean over all seeds.

    Raises:
        ValueError: no run of ``experiment`` was evaluated on shuffled inputs.
    """
    rows = _select(data, experiment)
    cells = results.aggregate(results.run_metrics(rows), ["order_reliance", "invariance_gap"])
    cells = cells[(cells["variant"] == BASE_VARIANT) & (cells["n_seeds"] > 0)].copy()
    for stat in ("mean", "ci95"):
        cells[f"order_effect_{stat}"] = cells[f"order_reliance_{stat}"].fillna(cells[f"invariance_gap_{stat}"])
    if cells["order_effect_mean"].isna().all():
        raise ValueError(f"no run of experiment {experiment!r} was evaluated on shuffled inputs")
    archs = archs_in_order(cells)
    tasks = (
        cells.drop_duplicates("task").sort_values("order_dependent", ascending=False, kind="stable")["task"].tolist()
    )
    per_arch = {arch: sorted(cells.loc[cells["arch"] == arch, "encoding"].unique(), key=encoding_rank)
                for arch in archs}
    # one panel per architecture, stacked, each the page's width: a battery's bars stay wide enough to tell apart
    width = max(5.0, min(PAGE_WIDTH, 2.0 + 0.06 * len(tasks) * max(map(len, per_arch.values()))))
    legend_rows = -(-(len(tasks) + 1) // _legend_columns([f"{t} (control)" for t in tasks], width))
    figure = Figure(figsize=(width, 3.2 * len(archs) + 0.9 + 0.2 * legend_rows), layout="constrained")
    axes = figure.subplots(len(archs), 1, sharey=True, squeeze=False).ravel()
    width = 0.8 / max(1, len(tasks))
    colors = _task_colors(tasks)
    unfitted_any, legend = False, {}  # legend handles drawn as fitted bars, whichever bar comes first
    for ax, arch in zip(axes, archs, strict=True):
        part = cells[cells["arch"] == arch]
        names = per_arch[arch]
        for k, task in enumerate(tasks):
            bars = part[part["task"] == task].set_index("encoding").reindex(names)
            dependent = bool(order_dependent(task))
            kind = "order-dependent" if dependent else "control"
            look = {"facecolor": colors[task], "hatch": None if dependent else "//",
                    "edgecolor": "white" if dependent else "0.2", "linewidth": 0.5}
            drawn = ax.bar(np.arange(len(names)) + (k - (len(tasks) - 1) / 2) * width, bars["order_effect_mean"],
                           width, yerr=bars["order_effect_ci95"].fillna(0.0), **look,
                           error_kw={"elinewidth": 0.8, "capsize": 1.5},
                           label=f"{task_label(task)} ({kind})")
            # solid: order-dependent
            legend.setdefault(task_label(task) + ("" if dependent else " (control)"), Patch(**look))
            for patch, judged in zip(drawn.patches, bars["judged"].fillna(True), strict=True):
                if not judged:
                    unfitted_any = True
                    patch.set_facecolor(TRANSPARENT)
                    patch.set_edgecolor(colors[task])
                    patch.set(**NOT_FITTED_BAR)
        ax.axhline(0.0, color="k", linewidth=0.8)
        ax.set_ylim(min(-0.1, ax.get_ylim()[0]), max(0.5, ax.get_ylim()[1]))  # keep small effects looking small
        ax.set_xticks(range(len(names)), [encoding_label(n) for n in names], rotation=35, ha="right")
        ax.set_title(arch)
        ax.set_ylabel("original − shuffled token accuracy")
    if unfitted_any:
        legend["no seed fitted (mean over all seeds)"] = Patch(facecolor=TRANSPARENT, edgecolor="0.3", **NOT_FITTED_BAR)
    # below the panels, never over the bars of the first one (a battery has a dozen tasks)
    figure.legend(list(legend.values()), list(legend), loc="outside lower center",
                  ncols=_legend_columns(legend, figure.get_figwidth()), fontsize="small", frameon=False)
    figure.suptitle(wrapped_title(f"{title or experiment}: order reliance (order-dependent tasks, high is good)\n"
                                  "vs invariance gap (controls, ~0 is good); mean and 95% CI over fitted seeds"),
                    fontsize="medium")
    return figure
