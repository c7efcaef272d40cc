"""Every result figure renders from a small results set, without pyplot state."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from test_results import write_synthetic_results

from pebench import plots, results


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return results.load(write_synthetic_results(tmp_path_factory.mktemp("results")))


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
    assert labels == ["none", "rope", "alibi", "chance"]
    alibi = axes[0].get_lines()[2]
    style = plots.encoding_style("alibi")  # the same colour, marker and dash in every figure
    assert (alibi.get_color(), alibi.get_marker(), alibi.get_linestyle()) == (
        style["color"], style["marker"], style["linestyle"])
    assert list(alibi.get_xdata()) == [4, 8, 16, 32]
    assert axes[0].get_xscale() == "log"
    spans = [p for p in axes[0].patches if p.get_label() == "training lengths"]
    assert len(spans) == 1 and spans[0].get_x() + spans[0].get_width() == pytest.approx(8)
    assert len(axes[0].collections) == 3  # one CI band per encoding
    render(plots.accuracy_vs_length(data, "length_extrapolation", metric="seq_acc", arch="decoder"))


def test_ood_heatmap_values_are_the_seed_means(data):
    figure = plots.ood_heatmap(data, "length_extrapolation")
    render(figure)
    cells = results.aggregate(results.run_metrics(data[data["experiment"] == "length_extrapolation"]))
    expected = cells.set_index(["encoding", "task"])["ood_token_acc_mean"]
    texts = {t.get_text() for t in figure.axes[0].texts}
    assert f"{expected[('alibi', 'copy')]:.2f}" in texts
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["none", "rope", "alibi"]


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
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["none", "rope", "alibi"]


def test_missing_experiment_is_a_clear_error(data):
    with pytest.raises(ValueError, match="no rows of experiment 'nope'.*experiments present: length_extrapolation"):
        plots.accuracy_vs_length(data, "nope")


def test_label_shows_options():
    assert plots.label("rope") == "rope"
    assert plots.label("rope", '{"layout":"half"}') == 'rope {"layout":"half"}'


def test_encoding_styles_are_distinct_stable_and_never_the_shading_grey():
    order = plots.encoding_order()
    styles = [plots.style(i) for i in range(27)]
    assert len({tuple(sorted(s.items())) for s in styles}) == 27
    assert len({(s["color"], s["linestyle"]) for s in styles}) == 27  # distinguishable without markers too
    assert all(s["color"] != "C7" for s in styles)  # tab10's grey is close to the training-range shading
    assert plots.encoding_style(order[0]) == plots.style(0)
    assert plots.encoding_style("randomized:t5") == plots.encoding_style("randomized:t5")  # hashed, stable
