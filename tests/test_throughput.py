"""The throughput benchmark's own arithmetic: its FLOP count (the MFU numerator), its points and its
x-transformers baseline at equal configuration. Speed itself is measured by the benchmark, never here."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from pebench.experiment import load_experiments, suite_runs


@pytest.fixture(scope="module")
def throughput():
    load_experiments()
    return sys.modules["pebench_experiments.throughput"]


def counted_train_flops(model, tokens, first: int, suffix: bool) -> int:
    """FLOPs of one forward + backward as counted by torch's FlopCounterMode (matmuls and attention)."""
    # the math backend decomposes attention into matmuls, which the counter sees
    with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        logits = model(tokens, outputs=tokens.shape[1] - first) if suffix else model(tokens)[:, first:]
        F.cross_entropy(logits.flatten(0, 1), torch.zeros(logits.shape[:2], dtype=torch.long).flatten()).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("loss", ["all", "outputs"])
def test_analytic_flops_match_torch_flop_counter(throughput, loss):
    point = throughput.Point("test", d_model=32, batch_size=4, lengths=(12,), loss=loss)
    model = throughput.build_pebench("none", point)
    tokens = torch.randint(0, point.vocab_size, (4, 12))
    first = point.first(12)
    counted = counted_train_flops(model, tokens, first, suffix=loss == "outputs")
    analytic = throughput.train_flops(point, 12, 12 - first if loss == "outputs" else None)
    assert analytic == pytest.approx(counted, rel=0.02)


def test_first_point_is_the_standard_suite_step(throughput):
    point = throughput.points(quick=True)[0]
    spec = next(s for s in suite_runs("standard") if s.task == "copy" and s.arch == "decoder")
    assert (point.d_model, point.n_layers, point.n_heads, point.batch_size) == (
        spec.d_model, spec.n_layers, spec.n_heads, spec.train.batch_size)
    assert sorted(set(point.lengths)) == [2 * n for n in range(1, spec.train.train_max_len + 1)]
    assert point.loss == "outputs"


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos"])
def test_xtransformers_baseline_has_equal_configuration(throughput, encoding):
    pytest.importorskip("x_transformers")
    point = throughput.points(quick=True)[0]
    ours, theirs = throughput.build_pebench(encoding, point), throughput.build_xtransformers(encoding, point)
    ratio = throughput.count_parameters(theirs) / throughput.count_parameters(ours)
    assert 0.95 <= ratio <= 1.05
    tokens = torch.randint(0, point.vocab_size, (2, 10))
    assert theirs(tokens).shape == ours(tokens).shape == (2, 10, point.vocab_size)
