"""Explanatory figures of how positional encodings work, made from pebench's own encodings.

These are the teaching figures of the documentation's "Concepts" page (and the
example figures of the encoding pages). Every function returns a matplotlib
:class:`~matplotlib.figure.Figure` and never calls ``show()``; the numbers
behind the figures come from the registered encodings (``encodings.build``)
and, for the attention maps, from a tiny model trained on the spot.

Shape notation: B batch, T length, D model width, H heads, Dh head width.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from pebench import encodings, tasks
from pebench.learn.evaluate import evaluate
from pebench.learn.train import TrainConfig, train
from pebench.model import ModelConfig, Transformer, build_model


def _subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """A new Figure and its axes; pyplot-free, so no global figure state and no window (any backend)."""
    figsize = kwargs.pop("figsize", None)
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kwargs)

# --------------------------------------------------------------------------- sinusoidal


def sinusoidal_table(n_positions: int = 64, d_model: int = 64) -> Tensor:
    """The sinusoidal encodings of positions ``0 .. n_positions-1``: (T, D), from ``encodings.build``."""
    pe = encodings.build("sinusoidal", d_model=d_model, n_heads=1, max_len=n_positions)
    return pe.table(torch.arange(n_positions))


def sinusoidal_heatmap(n_positions: int = 64, d_model: int = 64) -> Figure:
    """Heatmap of the sinusoidal encoding: positions down, embedding dimensions across."""
    table = sinusoidal_table(n_positions, d_model).numpy()
    fig, ax = _subplots(figsize=(6.4, 4.2))
    image = ax.imshow(table, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("embedding dimension (2i = sin, 2i+1 = cos)")
    ax.set_ylabel("position")
    ax.set_title(f"Sinusoidal encoding, D = {d_model}, base 10000")
    fig.colorbar(image, ax=ax, label="value")
    return fig


def sinusoidal_wavelengths(d_model: int = 64) -> Tensor:
    """Wavelength ``2 pi / omega_i`` (in positions) of every sin/cos pair i: (D/2,)."""
    pe = encodings.build("sinusoidal", d_model=d_model, n_heads=1, max_len=1)
    return 2 * math.pi / pe.inv_freq.double()


def sinusoidal_waves(
    n_positions: int = 128, d_model: int = 64, dims: Sequence[int] = (0, 6, 12, 20, 30)
) -> Figure:
    """Left: a few dimensions of the sinusoidal encoding as waves over position; right: every pair's wavelength."""
    table = sinusoidal_table(n_positions, d_model).numpy()
    wavelengths = sinusoidal_wavelengths(d_model).numpy()
    fig, (left, right) = _subplots(1, 2, figsize=(10, 3.8))
    for dim in dims:
        left.plot(np.arange(n_positions), table[:, dim], label=f"dim {dim}", linewidth=1.4)
    left.set_xlabel("position")
    left.set_ylabel("PE[position, dim]")
    left.set_title("Each dimension is a wave over positions")
    # under the panel, in rows that fit its width (one row of five spilled into the right panel)
    left.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=3, frameon=False)
    pairs = np.arange(len(wavelengths))
    right.semilogy(pairs, wavelengths, marker="o", markersize=3)
    right.axhline(2 * math.pi, color="gray", linestyle=":", linewidth=1)
    right.axhline(2 * math.pi * 10000, color="gray", linestyle=":", linewidth=1)
    right.set_xlabel("pair index i (dims 2i, 2i+1)")
    right.set_ylabel("wavelength (positions)")
    right.set_title(r"Geometric wavelengths $2\pi \cdot 10000^{2i/D}$")
    return fig


def rotation_matrix(angle: Tensor) -> Tensor:
    """2x2 rotations by ``angle`` (...,) -> (..., 2, 2), acting on (sin, cos) column vectors."""
    cos, sin = angle.cos(), angle.sin()
    # (sin(a + b), cos(a + b)) = [[cos b, sin b], [-sin b, cos b]] (sin a, cos a)
    return torch.stack((torch.stack((cos, sin), -1), torch.stack((-sin, cos), -1)), -2)


def sinusoidal_shift_error(offset: int, n_positions: int = 64, d_model: int = 64) -> float:
    """Largest ``|PE(pos + k) - R(k) PE(pos)|`` over positions and pairs: the rotation property (~1e-5)."""
    pe = encodings.build("sinusoidal", d_model=d_model, n_heads=1, max_len=n_positions + offset)
    table = pe.table(torch.arange(n_positions + offset)).double().view(n_positions + offset, -1, 2)  # (T, D/2, 2)
    rotations = rotation_matrix(offset * pe.inv_freq.double())  # (D/2, 2, 2): depends on k only, not on pos
    shifted = torch.einsum("pij,tpj->tpi", rotations, table[:n_positions])
    return float((table[offset:] - shifted).abs().max())


def rope_scores(
    n_positions: int = 32, head_dim: int = 32, encoding: str = "rope", seed: int = 0
) -> Tensor:
    """Scores ``<R_m q, R_n k>`` of one fixed query and key content placed at every (m, n): (T, T)."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(head_dim, generator=generator).expand(1, 1, n_positions, head_dim)  # (1, 1, T, Dh)
    k = torch.randn(head_dim, generator=generator).expand(1, 1, n_positions, head_dim)
    pe = encodings.build(encoding, d_model=head_dim, n_heads=1, max_len=n_positions)
    pos = torch.arange(n_positions)
    q_rot, k_rot = pe.rotate(q.contiguous(), k.contiguous(), pos, pos)
    return (q_rot @ k_rot.transpose(-1, -2))[0, 0]  # (T, T)


def rotation_property(offset: int = 5, pair: int = 6, d_model: int = 64, n_positions: int = 24) -> Figure:
    """Left: one sinusoidal (sin, cos) pair moves on a circle, a fixed rotation per offset;
    right: RoPE scores ``<R_m q, R_n k>`` are constant along diagonals (depend on ``n - m`` only)."""
    pe = encodings.build("sinusoidal", d_model=d_model, n_heads=1, max_len=n_positions + offset)
    table = pe.table(torch.arange(n_positions + offset)).double()
    sin, cos = table[:, 2 * pair].numpy(), table[:, 2 * pair + 1].numpy()
    angle = offset * float(pe.inv_freq[pair])
    fig, (left, right) = _subplots(1, 2, figsize=(10, 4.4))
    circle = np.linspace(0, 2 * math.pi, 200)
    left.plot(np.cos(circle), np.sin(circle), color="lightgray", linewidth=1)
    left.scatter(sin[:n_positions], cos[:n_positions], c=np.arange(n_positions), cmap="viridis", s=18, zorder=3)
    for pos in (0, 7, 14):
        left.annotate("", xy=(sin[pos + offset], cos[pos + offset]), xytext=(sin[pos], cos[pos]),
                      arrowprops={"arrowstyle": "->", "color": "C3", "linewidth": 1.4})
        left.annotate(str(pos), (sin[pos], cos[pos]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    left.set_aspect("equal")
    left.set_xlabel(f"PE[pos, {2 * pair}] (sin)")
    left.set_ylabel(f"PE[pos, {2 * pair + 1}] (cos)")
    left.set_title(f"pos -> pos + {offset}: the same rotation by {math.degrees(angle):.1f} deg from every pos",
                   fontsize=10)
    scores = rope_scores(n_positions, head_dim=d_model // 2).numpy()
    image = right.imshow(scores, cmap="RdBu_r", vmin=-np.abs(scores).max(), vmax=np.abs(scores).max())
    right.set_xlabel("key position n")
    right.set_ylabel("query position m")
    right.set_title(r"RoPE: $\langle R_m q, R_n k\rangle$ depends on $n - m$ only", fontsize=10)
    fig.colorbar(image, ax=right, label="score")
    return fig


# --------------------------------------------------------------------------- rotary decay


@functools.lru_cache(maxsize=8)
def score_decay(
    encoding: str = "rope", head_dim: int = 128, max_distance: int = 1024, n_samples: int = 256, seed: int = 0
) -> Tensor:
    """Mean score of identical query and key content at distances ``0 .. max_distance``, relative to distance 0.

    A random content vector ``x`` (standard normal, ``n_samples`` of them) is
    the query at position ``max_distance`` and the key at every position
    ``0 .. max_distance`` (the causal direction); the scores are averaged
    over the samples and divided by the score at distance 0. Returns
    (max_distance + 1,) indexed by distance (cached: do not modify it in place).
    """
    generator = torch.Generator().manual_seed(seed)
    content = torch.randn(n_samples, 1, 1, head_dim, generator=generator, dtype=torch.float64).float()
    q = content  # (N, 1, 1, Dh)
    k = content.expand(n_samples, 1, max_distance + 1, head_dim).contiguous()  # (N, 1, T, Dh)
    pe = encodings.build(encoding, d_model=head_dim, n_heads=1, max_len=max_distance + 1)
    q_pos, k_pos = torch.tensor([max_distance]), torch.arange(max_distance + 1)
    q_rot, k_rot = pe.rotate(q, k, q_pos, k_pos)
    scores = (q_rot @ k_rot.transpose(-1, -2))[:, 0, 0].double().mean(0)  # (T,) by key position
    by_distance = scores.flip(0)  # distance = max_distance - key position
    return by_distance / by_distance[0]


def score_decay_figure(
    encoding_names: Sequence[str] = ("rope", "xpos"), head_dim: int = 128, max_distance: int = 1024
) -> Figure:
    """RoFormer's long-term decay: mean q·k of identical content against distance, for rotary encodings."""
    fig, ax = _subplots(figsize=(6.8, 3.8))
    distance = np.arange(max_distance + 1)
    for name in encoding_names:
        ax.plot(distance, score_decay(name, head_dim, max_distance).numpy(), label=encodings.ENCODINGS.label(name),
                linewidth=1.2)
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(0, max_distance)
    ax.set_xlabel("relative distance (query position - key position)")
    ax.set_ylabel("mean score / score at distance 0")
    ax.set_title(f"Mean score of identical content against distance (Dh = {head_dim})")
    ax.legend()
    return fig


def rope_example(n_positions: int = 24, head_dim: int = 64, max_distance: int = 256) -> Figure:
    """RoPE alone: scores of one query/key content at every pair of positions (constant along diagonals: they
    depend on the offset only), and the mean score of identical content against distance (RoFormer's decay)."""
    fig, (left, right) = _subplots(1, 2, figsize=(10, 4.2))
    fig.set_layout_engine("constrained")  # keeps the colour bar's label clear of the right panel
    scores = rope_scores(n_positions, head_dim=head_dim).numpy()
    image = left.imshow(scores, cmap="RdBu_r", vmin=-np.abs(scores).max(), vmax=np.abs(scores).max())
    left.set_xlabel("key position n")
    left.set_ylabel("query position m")
    left.set_title(r"$\langle R_m q, R_n k\rangle$: constant along diagonals", fontsize=10)
    fig.colorbar(image, ax=left, label="score", shrink=0.8)
    distance = np.arange(max_distance + 1)
    right.plot(distance, score_decay("rope", head_dim, max_distance).numpy(), linewidth=1.2)
    right.axhline(0, color="gray", linewidth=0.8)
    right.set_xscale("symlog", linthresh=10)
    right.set_xlim(0, max_distance)
    right.set_xlabel("relative distance")
    right.set_ylabel("mean score / score at distance 0")
    right.set_title(f"Identical content: the score decays with distance (Dh = {head_dim})", fontsize=10)
    return fig


# --------------------------------------------------------------------------- biases


def bias_matrices(n_positions: int = 32, n_heads: int = 4) -> dict[str, Tensor]:
    """The (T, T) score biases of the bias encodings, keyed by a panel title.

    ALiBi's biases are fixed; T5 and FIRE learn theirs, so they are shown by
    their fixed structure: the T5 bucket of each (query, key) pair, and the
    normalised log distance that FIRE's MLP maps to a bias.
    """
    pos = torch.arange(n_positions)
    alibi = encodings.build("alibi", d_model=8 * n_heads, n_heads=n_heads, max_len=n_positions)
    alibi_bias = alibi.bias(pos, pos)  # (H, T, T)
    t5 = encodings.build("t5", d_model=8 * n_heads, n_heads=n_heads, max_len=n_positions)
    fire = encodings.build("fire", d_model=8 * n_heads, n_heads=n_heads, max_len=n_positions,
                           init_threshold=n_positions / 4, causal=True)
    fire.mlp = torch.nn.Identity()  # show what the MLP receives: psi(i - j) / psi(max(L, i))
    with torch.no_grad():
        fire_input = fire.bias(pos, pos)[0]  # (T, T)
    slopes = alibi.slopes.tolist()
    return {
        f"ALiBi, head 1 (m = {slopes[0]:.3g})": alibi_bias[0],
        f"ALiBi, head {n_heads} (m = {slopes[-1]:.3g})": alibi_bias[-1],
        "T5 buckets (bidirectional)": t5.buckets(pos, pos).float(),
        f"FIRE MLP input (causal, L = {n_positions // 4})": fire_input,
    }


def bias_figure(n_positions: int = 32, n_heads: int = 4, only: str = "") -> Figure:
    """ALiBi biases of two heads, the T5 buckets and FIRE's normalised distances as (query, key) maps.

    ``only``: keep the panels whose title starts with it (``"ALiBi"``, ``"T5"``, ``"FIRE"``).
    """
    matrices = {k: v for k, v in bias_matrices(n_positions, n_heads).items() if k.startswith(only)}
    columns = min(2, len(matrices))  # two panels a row: four in one row are shown at a quarter of a page's width
    rows = -(-len(matrices) // columns)
    fig, axes = _subplots(rows, columns, figsize=(4.6 * columns, 3.9 * rows), squeeze=False)
    for ax, (title, matrix) in zip(axes.flat, matrices.items(), strict=True):
        image = ax.imshow(matrix.detach().numpy(), cmap="viridis", interpolation="nearest")
        ax.set_title(title, fontsize=11)
        ax.set_xlabel("key position j")
        ax.set_ylabel("query position i")
        bar = fig.colorbar(image, ax=ax, shrink=0.85)
        bar.locator = MaxNLocator(5)  # a flat head's small values would otherwise get overlapping tick labels
        bar.update_ticks()
    return fig


# --------------------------------------------------------------------------- trained attention


@dataclass
class DemoModel:
    """A tiny encoder trained on a task for the attention figures."""

    encoding: str
    task: str
    length: int
    model: Transformer
    token_acc: float  # on fresh examples of the training length
    seq_acc: float


@functools.lru_cache(maxsize=8)
def demo_model(encoding: str, task: str = "copy", length: int = 8, steps: int = 300, seed: int = 0) -> DemoModel:
    """Train a 1-layer, 1-head encoder (D = 32) on ``task`` at one input length; a few seconds on a CPU.

    With ``encoding="rope"`` it learns ``copy`` (each blank attends to the
    input position it must copy); with ``"none"`` the blanks are identical
    and it cannot. Deterministic for a given seed. Cached: the returned model
    is shared, do not train it further.
    """
    task_obj = tasks.get(task)
    config = ModelConfig(vocab_size=tasks.model_vocab_size(task_obj), arch="encoder", d_model=32, n_layers=1,
                         n_heads=1)
    model = build_model(config, encoding, max_len=4 * length, seed=seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is as fast and leaves the other cores alone
    try:
        train(model, task_obj, TrainConfig(steps=steps, batch_size=32, lr=3e-3, warmup_steps=20,
                                           train_min_len=length, train_max_len=length, seed=seed))
        row = evaluate(model, task_obj, [length], n_examples=256, batch_size=256, seed=seed)[0]
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return DemoModel(encoding, task, length, model, float(row["token_acc"]), float(row["seq_acc"]))


def attention_weights(model: Transformer, tokens: Tensor, layer: int = 0) -> Tensor:
    """Attention probabilities of block ``layer`` for ``tokens`` (B, T): (B, H, T, T).

    :meth:`pebench.model.Transformer.attention_weights`: ``softmax(q k^T / sqrt(Dh) + bias)``
    with the model's own queries, keys, bias and causal mask, i.e. what its attention computes
    (tested against its output), at the model's default positions ``0 .. T-1``.
    """
    return model.attention_weights(tokens, layer)


def demo_tokens(task: str = "copy", length: int = 8, seed: int = 1) -> Tensor:
    """One rendered encoder example of ``task``: tokens (1, T) = [input, SEP, blanks]."""
    task_obj = tasks.get(task)
    batch = task_obj.sample(1, length, torch.Generator().manual_seed(seed))
    tokens, _ = tasks.render(task_obj, batch, "encoder")
    return tokens


def _token_labels(tokens: Tensor, task: str) -> list[str]:
    vocab = tasks.get(task).vocab_size
    names = {vocab: "SEP", vocab + 1: "_"}
    return [names.get(int(t), str(int(t))) for t in tokens]


def _draw_attention(ax, weights: np.ndarray, labels: list[str], title: str, vmax: float = 1.0) -> None:
    ax.imshow(weights, cmap="Blues", vmin=0, vmax=vmax, interpolation="nearest")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("key")
    ax.set_title(title, fontsize=9)


def attention_maps(encoding_names: Sequence[str] = ("rope", "none"), task: str = "copy", length: int = 8) -> Figure:
    """Attention of a trained 1-layer encoder on one ``task`` example, one panel per encoding."""
    tokens = demo_tokens(task, length)
    labels = _token_labels(tokens[0], task)
    fig, axes = _subplots(1, len(encoding_names), figsize=(4.6 * len(encoding_names), 4.4))
    for ax, name in zip(np.atleast_1d(axes), encoding_names, strict=True):
        demo = demo_model(name, task, length)
        weights = attention_weights(demo.model, tokens)[0, 0].numpy()
        _draw_attention(ax, weights, labels, f"{encodings.ENCODINGS.label(name)}: token accuracy {demo.token_acc:.2f}")
    np.atleast_1d(axes)[0].set_ylabel("query")
    return fig


# --------------------------------------------------------------------------- permutation demo


def permutation(length: int, seed: int = 0) -> Tensor:
    """A fixed random permutation of ``0 .. length-1`` (the shuffle of the demo)."""
    return torch.randperm(length, generator=torch.Generator().manual_seed(seed))


def permuted_attention(model: Transformer, tokens: Tensor, perm: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Attention (H, T, T) of ``tokens`` (1, T), of the shuffled ``tokens[:, perm]``, and the latter
    un-shuffled (``A'[inv, inv]``, rows and columns put back in the original token order)."""
    original = attention_weights(model, tokens)[0]
    shuffled = attention_weights(model, tokens[:, perm])[0]
    inverse = perm.argsort()
    return original, shuffled, shuffled[:, inverse][:, :, inverse]


def permutation_gap(model: Transformer, tokens: Tensor, perm: Tensor) -> float:
    """``max |A(x) - P^T A(Px) P|``: 0 (up to float error) exactly when attention is permutation-equivariant."""
    original, _, restored = permuted_attention(model, tokens, perm)
    return float((original - restored).abs().max())


def permutation_demo(encoding_names: Sequence[str] = ("none", "rope"), task: str = "copy", length: int = 8,
                     seed: int = 0) -> Figure:
    """For each encoding: attention on an example, on its shuffle, and the shuffle's attention un-shuffled.

    Without positional information (``none``) the third panel equals the first:
    shuffling the tokens only shuffles the rows and columns of the attention
    matrix. With a positional encoding it does not.
    """
    tokens = demo_tokens(task, length)
    perm = permutation(tokens.shape[1], seed)
    labels = _token_labels(tokens[0], task)
    shuffled_labels = [labels[i] for i in perm.tolist()]
    fig, axes = _subplots(len(encoding_names), 3, figsize=(11, 3.7 * len(encoding_names)),
                             squeeze=False)
    for row, name in zip(axes, encoding_names, strict=True):
        model = demo_model(name, task, length).model
        original, shuffled, restored = (a[0].numpy() for a in permuted_attention(model, tokens, perm))
        gap = permutation_gap(model, tokens, perm)
        vmax = float(original.max())  # per row: a NoPE model's attention is nearly flat
        label = encodings.ENCODINGS.label(name)
        _draw_attention(row[0], original, labels, f"{label}: attention A(x)", vmax)
        _draw_attention(row[1], shuffled, shuffled_labels, f"{label}: attention A(Px) of the shuffle", vmax)
        _draw_attention(row[2], restored, labels, f"{label}: A(Px) un-shuffled, max diff {gap:.1e}", vmax)
        row[0].set_ylabel("query")
    return fig


# --------------------------------------------------------------------------- per-encoding examples


def randomized_positions_figure(length: int = 8, max_position: int = 64, n_rows: int = 6, seed: int = 0) -> Figure:
    """Positions that ``randomized:<base>`` gives a few training sequences of ``length``."""
    pe = encodings.build("randomized:rope", d_model=32, n_heads=1, max_len=max_position)
    pe.generator = torch.Generator().manual_seed(seed)
    pe.train()
    positions = pe.positions(n_rows, length, "cpu").numpy()  # (rows, T)
    fig, ax = _subplots(figsize=(6.8, 2.8))
    for row, values in enumerate(positions):
        ax.scatter(values, np.full(length, row), s=18)
    ax.set_xlim(-1, max_position)
    ax.set_yticks(range(n_rows), [f"sequence {i + 1}" for i in range(n_rows)], fontsize=8)
    ax.set_xlabel(f"position given to the base encoding (drawn from [0, {max_position}))")
    ax.set_title(f"Randomized positions: {length} sorted distinct positions per training sequence")
    return fig


#: encoding name -> (figure function, caption) of the example on its docs page; encodings without one
#: (e.g. ``none``, ``learned``) show no example
EXAMPLES: dict[str, tuple[Callable[[], Figure], str]] = {
    "sinusoidal": (sinusoidal_heatmap,
                   "Positions 0-63 (D = 64): fast waves in the first dimensions, slow ones in the last."),
    "rope": (rope_example,
             "Left: RoPE scores of one query/key content at every pair of positions are constant along diagonals "
             "(they depend on the offset only); right: the mean score of identical content decays with distance."),
    "xpos": (functools.partial(score_decay_figure, ("rope", "xpos")),
             "Mean score of identical query and key content against distance: xPos damps RoPE's oscillations "
             "at long distances."),
    **{name: (functools.partial(bias_figure, only=only),
              "Query x key maps over 32 positions (all bias encodings: see Concepts).")
       for name, only in (("alibi", "ALiBi"), ("t5", "T5"), ("fire", "FIRE"))},
    "randomized": (randomized_positions_figure,
                   "Each training sequence of length 8 gets its own sorted random positions from [0, 64)."),
}


def encoding_example(name: str) -> tuple[Figure, str] | None:
    """A small example figure for encoding ``name`` and what it shows, or ``None`` where none is useful
    (see :data:`EXAMPLES`)."""
    if name not in EXAMPLES:
        return None
    make, caption = EXAMPLES[name]
    return make(), caption


#: the Concepts page's teaching figures, by the name each is saved under
CONCEPT_FIGURES = {
    "sinusoidal_heatmap": sinusoidal_heatmap,
    "sinusoidal_waves": sinusoidal_waves,
    "rotation_property": rotation_property,
    "score_decay": score_decay_figure,
    "bias_matrices": bias_figure,
    "attention_maps": attention_maps,
    "permutation_demo": permutation_demo,
}


def concept_values() -> dict[str, str]:
    """The numbers the Concepts page quotes beside :data:`CONCEPT_FIGURES`, as printed: the demo RoPE and NoPE
    models' token and sequence accuracy on copy, chance there, their permutation gaps, the sinusoidal shift
    error at offset 5 and RoPE's and xPos's score decay at distance 100."""
    rope, nope = demo_model("rope"), demo_model("none")
    tokens = demo_tokens()
    perm = permutation(tokens.shape[1])
    decay_rope, decay_xpos = score_decay("rope"), score_decay("xpos")
    return {
        "demo_rope_token_acc": f"{rope.token_acc:.2f}",
        "demo_rope_seq_acc": f"{rope.seq_acc:.2f}",
        "demo_none_token_acc": f"{nope.token_acc:.2f}",
        "demo_none_seq_acc": f"{nope.seq_acc:.2f}",
        "demo_chance": f"{tasks.get('copy').chance_accuracy(8):.2f}",
        "perm_gap_none": f"{permutation_gap(nope.model, tokens, perm):.1e}",
        "perm_gap_rope": f"{permutation_gap(rope.model, tokens, perm):.2f}",
        "shift_error": f"{sinusoidal_shift_error(5):.0e}",
        "decay_rope_100": f"{float(decay_rope[100]):.2f}",
        "decay_xpos_100": f"{float(decay_xpos[100]):.2f}",
    }
