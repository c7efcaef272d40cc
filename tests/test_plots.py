"""Every result figure renders from a small results set, without pyplot state."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from test_results import run_frame, write_synthetic_results

from pebench import store
from pebench.analysis import results
from pebench.report import plots
from pebench.store import schema


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return store.load(write_synthetic_results(tmp_path_factory.mktemp("results")))


def render(figure: Figure) -> bytes:
    assert isinstance(figure, Figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg")
    assert not plt.get_fignums()  # built without pyplot: nothing to show, nothing leaked
    return buffer.getvalue()


def test_accuracy_vs_length_has_lines_bands_training_range_and_chance(data):
    figure = plots.accuracy_vs_length(data, "length_extrapolation")
    render(figure)
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["copy", "majority"]
    labels = [line.get_label() for line in axes[0].get_lines()]
    assert labels == ["NoPE", "RoPE", "ALiBi", "chance"]  # no floor column in these rows: no floor line
    alibi = axes[0].get_lines()[2]
    style = plots.encoding_style("alibi")  # the same colour, marker and dash in every figure
    assert (alibi.get_color(), alibi.get_marker(), alibi.get_linestyle()) == (
        style["color"], style["marker"], style["linestyle"])
    assert list(alibi.get_xdata()) == [4, 8, 16, 32]
    assert axes[0].get_xscale() == "log"
    spans = [p for p in axes[0].patches if p.get_label() == "training lengths"]
    assert len(spans) == 1 and spans[0].get_x() + spans[0].get_width() == pytest.approx(8)
    assert len(axes[0].collections) == 3  # one CI band per encoding
    seq = plots.accuracy_vs_length(data, "length_extrapolation", metric="seq_acc", arch="decoder")
    render(seq)
    assert "chance" not in [line.get_label() for line in seq.axes[0].get_lines()]  # chance is of tokens


def test_ood_heatmap_values_are_the_seed_means(data):
    figure = plots.ood_heatmap(data, "length_extrapolation")
    render(figure)
    cells = results.aggregate(results.run_metrics(data[data["experiment"] == "length_extrapolation"]))
    expected = cells.set_index(["encoding", "task"])["ood_token_acc_mean"]
    texts = {t.get_text() for t in figure.axes[0].texts}
    assert f"{expected[('alibi', 'copy')]:.2f}" in texts
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["NoPE", "RoPE", "ALiBi"]


# --------------------------------------------------------------------------- the fit criterion in figures

FLOOR = {4: 0.6, 8: 0.45, 16: 0.35, 32: 0.3}


def fit_results() -> pd.DataFrame:
    """RoPE fitted on both seeds, NoPE on neither, ALiBi on seed 0 only; rows carry position-free floors;
    order runs of the encoder and decoder, NoPE's decoder runs unfitted."""
    frames = []
    for encoding, fitted, accuracy in (("rope", (True, True), (0.99, 0.97)), ("none", (False, False), (0.3, 0.32)),
                                       ("alibi", (True, False), (0.98, 0.2))):
        for seed in (0, 1):
            points = [{"eval_len": n, "token_acc": accuracy[seed] * (1 if n <= 8 else 0.5),
                       "floor_token_acc": floor, "floor_seq_acc": floor ** 4} for n, floor in FLOOR.items()]
            frames.append(run_frame("length_extrapolation", "copy", encoding, "decoder", seed, 8, points,
                                    fitted=fitted[seed]))
    for arch, encodings in (("encoder", ("none", "rope")), ("decoder", ("none", "rope", "alibi"))):
        for encoding in encodings:
            for seed in (0, 1):
                points = [{"eval_len": 8, "condition": c, "token_acc": a}
                          for c, a in (("original", 0.95), ("shuffled", 0.3 if encoding != "none" else 0.9))]
                frames.append(run_frame("order_sensitivity", "reverse", encoding, arch, seed, 8, points,
                                        fitted=not (arch == "decoder" and encoding == "none")))
    return pd.concat(frames, ignore_index=True)


def test_curves_carry_floors_and_fit_counts_and_draw_fitted_seeds_only():
    frame = results.curves(fit_results()).set_index(["experiment", "encoding", "eval_len", "condition"])
    # one row each: `loc` with a list of one key gives a frame on every pandas (a bare key on this non-unique
    # index gives a row on pandas 3.1, a one-row frame on pandas 3.0.6, as on a GPU machine's image)
    picked = [frame.loc[[("length_extrapolation", e, 4, "original")]] for e in ("rope", "none", "alibi")]
    assert [len(rows) for rows in picked] == [1, 1, 1]
    rope, none, alibi = (rows.iloc[0] for rows in picked)
    assert rope["floor_token_acc"] == pytest.approx(0.6) and rope["floor_seq_acc"] == pytest.approx(0.6 ** 4)
    assert (rope["n_seeds"], rope["n_fitted"], rope["fitted_fraction"], rope["judged"]) == (2, 2, 1.0, True)
    assert (none["n_fitted"], none["fitted_fraction"], none["judged"]) == (0, 0.0, False)
    assert none["token_acc_mean"] == pytest.approx(0.31) and none["token_acc_n"] == 2  # every seed, unjudged
    assert (alibi["n_fitted"], alibi["fitted_fraction"], alibi["judged"]) == (1, 0.5, True)
    assert alibi["token_acc_mean"] == pytest.approx(0.98) and alibi["token_acc_n"] == 1  # the fitted seed only
    assert results.curves(fit_results().drop(columns=["fitted", "floor_token_acc", "floor_seq_acc"]))[
        "judged"].all()  # runs without a fit criterion are all drawn as they are


def test_unfitted_cells_are_drawn_faintly_beside_the_floor():
    figure = plots.accuracy_vs_length(fit_results(), "length_extrapolation")
    render(figure)
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    assert list(lines) == ["NoPE (not fitted)", "RoPE", "ALiBi", "chance", "floor (no position)"]
    none, rope = lines["NoPE (not fitted)"], lines["RoPE"]
    assert none.get_linestyle() == ":" and none.get_alpha() < 1 and none.get_linewidth() < rope.get_linewidth()
    assert none.get_color() == plots.encoding_style("none")["color"]  # still the encoding's colour
    assert rope.get_linestyle() == plots.encoding_style("rope")["linestyle"] and rope.get_alpha() is None
    assert len(figure.axes[0].collections) == 2  # CI bands of the fitted cells only
    floor = lines["floor (no position)"]
    assert list(floor.get_xdata()) == list(FLOOR) and list(floor.get_ydata()) == pytest.approx(list(FLOOR.values()))
    assert floor.get_marker() in ("None", None, "") and floor.get_linestyle() != ":"  # not a not-fitted line
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == ["NoPE", "RoPE", "ALiBi", "training lengths", "chance", "floor (no position)",
                      plots.NOT_FITTED_KEY]  # each encoding once (its colour), one key for every unfitted line
    seq = plots.accuracy_vs_length(fit_results(), "length_extrapolation", metric="seq_acc")
    floor = next(line for line in seq.axes[0].get_lines() if line.get_label() == "floor (no position)")
    assert floor.get_ydata()[0] == pytest.approx(0.6 ** 4)


@pytest.mark.parametrize("metric", ["token_acc", "seq_acc"])
@pytest.mark.parametrize("drop", [[], ["none"], ["none", "alibi"]])
def test_a_curve_figure_says_which_keys_it_draws(metric, drop):
    """A caption explains only what its figure draws (the replication's sequence-accuracy figures were captioned
    with a chance line and a 'not fitted' key they did not have): reference_keys of the figure's curves names exactly
    the chance, floor and not-fitted keys of the figure's legend."""
    from pebench.report.layouts import above, shade

    runs = fit_results()
    runs = runs[~runs["encoding"].isin(drop)]
    figure = plots.accuracy_vs_length(runs, "length_extrapolation", metric=metric)
    legend = {t.get_text() for t in figure.legends[0].get_texts()}
    drawn = {key for key, text in (("chance", "chance"), ("floor", "floor (no position)"),
                                   ("not fitted", plots.NOT_FITTED_KEY)) if text in legend}
    curves = plots.accuracy_curves(runs, "length_extrapolation")
    keys = plots.reference_keys(curves[0], metric)
    drawn_again = plots.accuracy_vs_length(runs, "length_extrapolation", metric=metric, curves=curves)
    assert {t.get_text() for t in drawn_again.legends[0].get_texts()} == legend  # the curves given are the ones drawn
    assert keys == drawn and "floor" in keys
    assert ("not fitted" in keys) == ("none" not in drop)  # NoPE fitted no seed; ALiBi one of two
    assert ("dashed black: chance" in shade(keys)) == ("chance" in keys)
    assert ("'not fitted' key" in shade(keys)) == ("not fitted" in keys)
    assert above(keys) == (", and whether it stays above the floor and chance" if "chance" in keys
                           else ", and whether it stays above the floor")


def test_heatmap_and_order_bars_mark_unfitted_cells():
    data = fit_results()
    heatmap = plots.ood_heatmap(data, "length_extrapolation")
    render(heatmap)
    texts = [t.get_text() for t in heatmap.axes[0].texts]
    assert [t.endswith("†") for t in texts] == [True, False, False]  # NoPE, rope, alibi
    assert [p.get_hatch() for p in heatmap.axes[0].patches] == [plots.NOT_FITTED_HATCH]
    # what the caption explains: hatched cells only where the heatmap has one
    assert plots.heatmap_keys(plots.heatmap_cells(data, "length_extrapolation")) == {"not fitted"}
    all_fitted = data[data["encoding"] != "none"]
    assert not plots.ood_heatmap(all_fitted, "length_extrapolation").axes[0].patches
    assert plots.heatmap_keys(plots.heatmap_cells(all_fitted, "length_extrapolation")) == frozenset()
    figure = plots.order_sensitivity(data, "order_sensitivity")
    render(figure)
    encoder, decoder = figure.axes[:2]
    assert [t.get_text() for t in decoder.get_xticklabels()] == ["NoPE", "RoPE", "ALiBi"]
    assert [t.get_text() for t in encoder.get_xticklabels()] == ["NoPE", "RoPE"]  # each arch its own encodings
    bars = {ax: next(c for c in ax.containers if isinstance(c, BarContainer)) for ax in (encoder, decoder)}
    hollow = [p.get_facecolor()[3] == 0 and p.get_linestyle() == "--" for p in bars[decoder].patches]
    assert hollow == [True, False, False]
    assert not any(p.get_facecolor()[3] == 0 for p in bars[encoder].patches)
    assert "no seed fitted (mean over all seeds)" in [t.get_text() for t in figure.legends[0].get_texts()]
    with pytest.raises(ValueError, match="shuffled inputs"):
        plots.order_sensitivity(data, "length_extrapolation")


def test_order_figure_legend_sits_below_the_panels_and_every_task_has_its_own_colour():
    """A battery of a dozen tasks: the legend is under both panels (not over the first one's bars) and no
    two order-dependent tasks share a colour (the six-colour palette once made two of them grey)."""
    from matplotlib.colors import to_rgba

    from pebench import tasks

    dependent = [t for t in tasks.names() if tasks.get(t).order_dependent][:9]
    controls = [t for t in tasks.names() if not tasks.get(t).order_dependent][:4]
    frames = []
    for task in dependent + controls:
        for arch in ("encoder", "decoder"):
            for encoding in ("none", "rope"):
                points = [{"eval_len": 8, "condition": c, "token_acc": a}
                          for c, a in (("original", 0.95), ("shuffled", 0.3 if encoding == "rope" else 0.9))]
                frames.append(run_frame("order_sensitivity", task, encoding, arch, 0, 8, points))
    figure = plots.order_sensitivity(pd.concat(frames, ignore_index=True), "order_sensitivity")
    render(figure)
    assert all(ax.get_legend() is None for ax in figure.axes) and len(figure.legends) == 1
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)  # the constrained layout, as saved
    legend_box = figure.legends[0].get_window_extent(renderer)
    for ax in figure.axes:
        assert legend_box.y1 <= ax.get_tightbbox(renderer).y0 + 1, "the legend overlaps a panel"
    colors = [to_rgba(handle.get_facecolor()) for handle in figure.legends[0].legend_handles]
    assert len(set(colors[:len(dependent)])) == len(dependent)
    assert len(set(colors[len(dependent):len(dependent) + len(controls)])) == len(controls)
    assert not set(colors[:len(dependent)]) & set(colors[len(dependent):])


def test_order_sensitivity_has_encoder_and_decoder_panels(data):
    figure = plots.order_sensitivity(data, "order_sensitivity")
    render(figure)
    titles = [ax.get_title() for ax in figure.axes]
    assert titles[:2] == ["encoder", "decoder"]
    bars = [c for c in figure.axes[0].containers if isinstance(c, BarContainer)]
    assert {c.get_label() for c in bars} == {"reverse (order-dependent)", "majority (control)"}
    reverse = next(c for c in bars if c.get_label().startswith("reverse"))
    none_height, rope_height = (patch.get_height() for patch in reverse.patches)
    assert none_height < 0.1 < 0.7 < rope_height  # NoPE encoder cannot use order; RoPE does


def test_variant_curves_have_one_line_per_variant_in_declared_order(data):
    figure = plots.variant_curves(data, "rope_scaling")
    render(figure)
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels == ["trained", "linear", "ntk", "yarn", "chance"]


def test_perplexity_vs_length_uses_a_log_axis(data):
    figure = plots.perplexity_vs_length(data, "lm_extrapolation")
    render(figure)
    assert figure.axes[0].get_yscale() == "log"
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["NoPE", "RoPE", "ALiBi"]


def test_missing_experiment_is_a_clear_error(data):
    with pytest.raises(ValueError, match="no rows of experiment 'nope'.*experiments present: length_extrapolation"):
        plots.accuracy_vs_length(data, "nope")


def test_label_shows_options():
    assert plots.label("rope") == "RoPE"
    assert plots.label("rope", '{"layout":"half"}') == 'RoPE {"layout":"half"}'


def test_encoding_styles_are_distinct_stable_and_never_black_or_grey():
    from matplotlib.colors import to_rgb

    order = plots.encoding_order()
    styles = [plots.style(i) for i in range(3 * len(plots.PALETTE))]
    assert len({s["color"] for s in styles[:len(plots.PALETTE)]}) == len(plots.PALETTE)  # a colour each
    assert len({(s["color"], str(s["linestyle"])) for s in styles}) == len(styles)  # then colour and dash
    for look in styles:
        red, green, blue = to_rgb(look["color"])
        assert max(red, green, blue) - min(red, green, blue) > 0.1  # not black (chance), not grey (floor, shading)
        assert look["linestyle"] not in (":", "-.")  # dotted: not fitted; dash-dotted: the floor
    assert plots.encoding_style(order[0]) == plots.style(0)
    assert plots.encoding_style("randomized:t5") == plots.encoding_style("randomized:t5")  # hashed, stable


@pytest.fixture
def plugin_encoding(monkeypatch):
    """A plugin encoding registered as the docs' example is (forgotten after the test)."""
    from pebench import encodings

    encodings.ENCODINGS.names()  # the built-in encodings registered first, so that the copies hold them
    monkeypatch.setattr(encodings.ENCODINGS, "_entries", dict(encodings.ENCODINGS._entries))
    monkeypatch.setattr(encodings.ENCODINGS, "_meta", dict(encodings.ENCODINGS._meta))
    sinusoidal = encodings.ENCODINGS.get("sinusoidal")
    encodings.register("scaled_sinusoidal", kind="input", paper="vaswani2017attention", has_parameters=True,
                       summary="A plugin.")(type("ScaledSinusoidal", (sinusoidal,), {}))
    return "scaled_sinusoidal"


def curve_rows(names: list[str], tasks: tuple[str, ...] = ("copy",)) -> pd.DataFrame:
    """One decoder run per encoding and task, accuracy falling past the training length 8."""
    return pd.concat([run_frame("length_extrapolation", task, name, "decoder", 0, 8,
                                [{"eval_len": n, "token_acc": 0.9 if n <= 8 else 0.4} for n in (4, 8, 16)])
                      for name in names for task in tasks], ignore_index=True)


def line_colours(figure: Figure) -> dict[str, str]:
    """Encoding label -> colour of its line in the first panel."""
    return {line.get_label(): line.get_color() for line in figure.axes[0].get_lines()
            if line.get_label() not in ("chance", "floor (no position)")}


def test_two_encodings_never_share_a_colour_a_plugins_included(plugin_encoding):
    """Every registered encoding, a plugin and two wrappers in one figure: a colour each (a plugin was drawn in
    RoPE's colour), and each the same colour in a figure of fewer encodings (a colour names an encoding)."""
    from pebench import encodings

    everything = [*encodings.names(), "randomized:rope", "randomized:t5"]
    assert plugin_encoding in everything
    colours = line_colours(plots.accuracy_vs_length(curve_rows(everything), "length_extrapolation"))
    assert len(colours) == len(everything) and len(set(colours.values())) == len(everything)
    few = line_colours(plots.accuracy_vs_length(curve_rows([plugin_encoding, "rope", "none"]),
                                                "length_extrapolation"))
    assert few == {name: colours[name] for name in few}
    assert colours[plots.label("rope")] == plots.style(plots.encoding_order().index("rope"))["color"]


def test_a_battery_of_tasks_is_split_into_figures_of_at_most_nine_panels_at_page_width():
    from pebench import tasks

    battery = tuple(tasks.names()[:19])
    data = curve_rows(["none", "rope"], battery)
    parts = plots.task_parts(data, "length_extrapolation", arch="decoder")
    assert [len(part) for part in parts] == [6, 7, 6]
    assert [task for part in parts for task in part] == plots.tasks_in_order(battery)  # each once, tables' order
    for k, part in enumerate(parts, 1):
        figure = plots.accuracy_vs_length(data, "length_extrapolation", arch="decoder", part=k)
        shown = [ax.get_title() for ax in figure.axes if ax.get_visible()]
        assert shown == [schema.task_label(task) for task in part] and figure.get_figwidth() <= plots.PAGE_WIDTH
        assert f"part {k} of 3" in figure.get_suptitle()
    with pytest.raises(ValueError, match="parts 1 to 3"):
        plots.accuracy_vs_length(data, "length_extrapolation", arch="decoder", part=4)
    assert plots.task_parts(curve_rows(["rope"], battery[:9]), "length_extrapolation") == [
        plots.tasks_in_order(battery[:9])]  # nine fit one figure
    heatmap = plots.ood_heatmap(data, "length_extrapolation")
    assert heatmap.get_figwidth() <= plots.PAGE_WIDTH
    assert [t.get_text() for t in heatmap.axes[0].get_xticklabels()] == [
        schema.task_label(task) for task in plots.tasks_in_order(battery)]


def test_length_axes_label_powers_of_two_and_tick_every_length():
    """Labels 10, 12, 14, ... on a log axis ran into each other: powers of two (and the ends) are labelled,
    every other evaluated length keeps an unlabelled tick."""
    standard = [2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32]
    assert plots.length_ticks(standard) == ([2, 4, 8, 16, 32], [6, 10, 12, 14, 20, 24, 28])
    assert plots.length_ticks([4, 8, 12, 16, 24, 32]) == ([4, 8, 16, 32], [12, 24])
    assert plots.length_ticks([3, 5, 7]) == ([3, 5, 7], [])  # the ends only: label every length
    assert plots.length_ticks([32, 64, 128, 256, 512]) == ([32, 64, 128, 256, 512], [])
    assert plots.length_ticks([3, 4, 8, 16, 32, 40]) == ([3, 8, 16, 40], [4, 32])  # "3240" ran together
    # the Kazemnejad replication's lengths: no power of two to label, "202528313437" ran together
    kazemnejad = [5, 10, 15, 20, 22, 25, 28, 31, 34, 37, 40]
    assert plots.length_ticks(kazemnejad) == ([5, 10, 15, 20, 28, 40], [22, 25, 31, 34, 37])


def test_a_heatmap_of_one_task_leaves_room_for_long_encoding_labels_and_its_title():
    """A replication check of one task with long encoding labels ('Randomized Transformer-XL {"max_position":410}')
    collapsed under constrained layout in a figure sized by its one column: labels, title and cells cut off. The
    figure is now as wide as its longest label, colour bar and title need, and everything lies inside it."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    options = '{"max_position":410}'
    cells = pd.DataFrame([dict(arch="encoder", task="stack_manipulation", encoding=encoding, encoding_options=options,
                               ood_token_acc_mean=0.5 + 0.1 * i, judged=i % 2 == 0)
                          for i, encoding in enumerate(["randomized:rope", "randomized:transformer_xl"])])
    title = "Replication check: Ruoss et al. 2023 with randomized positions from L = 410 — OOD token accuracy"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied because axes sizes collapsed to zero"
        figure = plots.ood_heatmap(pd.DataFrame(), "ruoss2023_dense", title=title, cells=cells)
        renderer = FigureCanvasAgg(figure).get_renderer()
        figure.draw(renderer)  # the constrained layout, as saved
    assert figure.get_figwidth() <= plots.PAGE_WIDTH
    inside = figure.bbox.padded(1)  # a pixel of rounding
    bar = figure.axes[-1].yaxis.label  # the colour bar's: in two lines on a figure this short
    assert "\n" in bar.get_text()
    texts = [figure._suptitle, bar, *figure.axes[0].get_yticklabels(), *figure.axes[0].get_xticklabels()]
    for text in texts:
        box = text.get_window_extent(renderer)
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0, text.get_text()


def test_a_curve_legend_takes_the_columns_that_fit_the_figure_and_the_rows_it_needs():
    """Four legend columns of labels like 'Randomized Transformer-XL {"max_position":410}' ran off both sides of a
    one-panel figure: the legend now takes as many columns (up to four) as fit, measured, and the figure grows by
    the rows beyond three; short labels keep four columns and the height."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    for long, names in ((True, [f'Randomized {n} {{"max_position":410}}' for n in ("RoPE", "ALiBi", "Learned",
                                                                                   "Sinusoidal", "Transformer-XL")]),
                        (False, ["NoPE", "RoPE", "ALiBi", "FIRE", "T5 bias"])):
        figure, axes = plots._grid(1)
        height = figure.get_figheight()
        labels = names + ["chance", "floor (no position)", plots.NOT_FITTED_KEY]
        handles = [axes[0].plot([1, 2], [0, 1], label=name)[0] for name in labels]
        plots._page_legend(figure, handles, labels)
        renderer = FigureCanvasAgg(figure).get_renderer()
        figure.draw(renderer)  # the constrained layout, as saved
        legend = figure.legends[0]
        box = legend.get_window_extent(renderer)
        assert figure.bbox.x0 - 1 <= box.x0 and box.x1 <= figure.bbox.x1 + 1  # a pixel of rounding
        assert legend._ncols < 4 and figure.get_figheight() > height if long else \
            legend._ncols == 4 and figure.get_figheight() == height
