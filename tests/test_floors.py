"""Position-free floors against exhaustive enumeration, known values and bounds."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
import torch

from pebench import tasks
from pebench.tasks import floors
from pebench.tasks.floors import Floor, expected_max_count, position_free_floor


def enumerated_floor(task: tasks.Task, length: int, arch: str, inputs: list[tuple[int, ...]]) -> tuple[float, float]:
    """Exact (token, seq) floors by enumerating ``inputs``, all equally likely (the definitions of the module doc)."""
    outputs = task.solve(torch.tensor(inputs)).tolist()
    out_len = task.output_length(length)

    def bag(tokens) -> tuple[int, ...]:
        return tuple(sorted(tokens))

    def hits(counts: dict, key, symbol: int) -> float:
        best = max(counts[key].values())
        winners = [s for s, c in counts[key].items() if c == best]
        return (symbol in winners) / len(winners)

    token = seq = 0.0
    if arch == "encoder":
        counts: dict = defaultdict(lambda: defaultdict(int))
        for x, y in zip(inputs, outputs, strict=True):
            for symbol in y:
                counts[bag(x)][symbol] += 1
        for x, y in zip(inputs, outputs, strict=True):
            token += sum(hits(counts, bag(x), s) for s in y) / out_len
            seq += hits(counts, bag(x), y[0]) * (len(set(y)) == 1)
    else:
        counts = defaultdict(lambda: defaultdict(int))
        for x, y in zip(inputs, outputs, strict=True):
            for j in range(out_len):
                counts[bag(x), bag(y[:j])][y[j]] += 1
        for x, y in zip(inputs, outputs, strict=True):
            step = [hits(counts, (bag(x), bag(y[:j])), y[j]) for j in range(out_len)]
            token += sum(step) / out_len
            seq += torch.tensor(step).prod().item()
    return token / len(inputs), seq / len(inputs)


def all_strings(symbols: int, length: int) -> list[tuple[int, ...]]:
    return list(itertools.product(range(symbols), repeat=length))


def assert_close(floor: Floor, token: float, seq: float) -> None:
    assert abs(floor.token_acc - token) <= 4 * floor.token_se + 0.003, (floor, token)
    assert abs(floor.seq_acc - seq) <= 4 * floor.seq_se + 0.003, (floor, seq)


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
@pytest.mark.parametrize(("name", "lengths"), [
    ("copy", [1, 2, 3]), ("reverse", [2, 3]), ("duplicate", [2, 3]), ("odds_first", [3]),
    ("reverse_string", [4, 6]), ("duplicate_string", [5]), ("even_pairs", [2, 3, 5, 6]), ("bucket_sort", [4]),
])
def test_matches_enumeration_of_iid_inputs(name, lengths, arch):
    task = tasks.get(name)
    for length in lengths:
        exact = enumerated_floor(task, length, arch, all_strings(task.vocab_size, length))
        assert_close(position_free_floor(name, length, arch, n_examples=2000), *exact)


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
def test_votes_match_enumeration_without_the_block_shortcut(monkeypatch, arch):
    """The generic leave-one-out vote estimator (used by selective_copy) agrees with enumeration too."""
    monkeypatch.setattr(floors, "_block_map", lambda task, length: 0)
    floors._cached_floor.cache_clear()
    try:
        task = tasks.get("reverse_string")
        for length in (3, 5):
            exact = enumerated_floor(task, length, arch, all_strings(2, length))
            floor = position_free_floor(task, length, arch, n_examples=2000, permutations=64)
            assert_close(floor, *exact)
    finally:
        floors._cached_floor.cache_clear()


@pytest.mark.parametrize("arch", ["encoder", "decoder"])
def test_selective_copy_matches_enumeration(arch):
    task = tasks.get("selective_copy")
    length = 4  # two symbols at two of four places
    inputs = [
        tuple(symbols[places.index(i)] if i in places else 10 for i in range(length))
        for places in itertools.combinations(range(length), 2) for symbols in all_strings(10, 2)
    ]
    exact = enumerated_floor(task, length, arch, inputs)
    assert_close(position_free_floor(task, length, arch, n_examples=2000), *exact)


def test_known_values():
    for arch in ("encoder", "decoder"):
        for name in ("majority", "parity_check", "sum_mod", "cycle_navigation"):
            assert position_free_floor(name, 9, arch) == Floor(1.0, 1.0, 0.0, 0.0, "exact")
        assert position_free_floor("copy", 1, arch).token_acc == 1.0
    assert position_free_floor("sort", 8, "decoder").token_acc == 1.0
    assert position_free_floor("sort", 8, "encoder").token_acc < 0.5  # one symbol for every position


def test_encoder_copy_is_expected_max_count_over_length():
    for length in (4, 16, 32):
        floor = position_free_floor("copy", length, "encoder", n_examples=2000)
        exact = expected_max_count(length, 10) / length
        assert abs(floor.token_acc - exact) <= 4 * floor.token_se, (length, floor, exact)
    assert expected_max_count(2, 10) == pytest.approx(1.1)


def test_reverse_decoder_values():
    short = [position_free_floor("reverse", n, "decoder").token_acc for n in range(2, 9)]
    long = [position_free_floor("reverse", n, "decoder").token_acc for n in range(12, 33)]
    assert 0.55 < sum(short) / len(short) < 0.62
    assert 0.30 < sum(long) / len(long) < 0.37


def test_deterministic_and_cached():
    first = position_free_floor("reverse", 12, "decoder", seed=3)
    floors._cached_floor.cache_clear()
    assert position_free_floor("reverse", 12, "decoder", seed=3) == first


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="language-modelling"):
        position_free_floor("charlm", 16, "decoder")
    with pytest.raises(ValueError, match="arch must be one of"):
        position_free_floor("copy", 4, "seq2seq")
    with pytest.raises(ValueError, match="input length"):
        position_free_floor("passkey", 3, "encoder")


def test_every_task_has_a_bounded_floor():
    """Finite, in [0, 1]; the decoder knows the step, so it is never below chance (up to error) on exact methods."""
    for name in tasks.names():
        task = tasks.get(name)
        if getattr(task, "decoder_only", False):
            continue
        for length in sorted({task.min_length, 16}):
            if task.max_length is not None and length > task.max_length:
                continue
            for arch in ("encoder", "decoder"):
                floor = position_free_floor(task, length, arch, n_examples=200, permutations=8)
                assert floor.method in floors.METHODS
                for value in (floor.token_acc, floor.seq_acc, floor.token_se, floor.seq_se):
                    assert 0.0 <= value <= 1.0, (name, length, arch, floor)
                if arch == "decoder" and floor.method != "permutation":
                    assert floor.token_acc >= task.chance_accuracy(length) - 4 * floor.token_se - 0.01, (name, floor)


@pytest.mark.parametrize(("name", "order", "classes"), [("s5_word_problem", 120, 7), ("a5_word_problem", 60, 5)])
def test_word_problem_floors_match_their_formulas(name, order, classes):
    """One element: the bag is the answer. Two: the product is ab or ba, the same iff they commute (classes / |G|
    of pairs), so the floor is 1/2 + classes / (2 |G|). Inputs are iid: the estimate is unbiased (monte_carlo)."""
    for arch in ("encoder", "decoder"):
        assert position_free_floor(name, 1, arch) == Floor(1.0, 1.0, 0.0, 0.0, "monte_carlo")
        floor = position_free_floor(name, 2, arch, n_examples=2000)
        assert floor.method == "monte_carlo"
        assert_close(floor, 1 / 2 + classes / (2 * order), 1 / 2 + classes / (2 * order))
        assert position_free_floor(name, 8, arch).token_acc < 0.04  # near 1/60 by length 8


def test_mqar_floor_matches_enumeration():
    """MQAR gives its exact conditionals (the unanswered values of largest count). At length 4 (one pair, one query,
    one filler value) the floor is 9/16: the bag shows two values, one the answer, certain when the filler repeats
    it (1/8). At length 8 every assignment of two distinct values and two fillers is enumerated with the keys
    fixed and asked in pair order: keys and query order are independent of the values, so (bag, answers) has the
    task's law."""
    task = tasks.get("mqar")
    short = [(0, value, 0, filler) for value in range(8, 16) for filler in range(8, 16)]
    long = [(0, v1, 1, v2, 0, f1, 1, f2) for v1, v2 in itertools.permutations(range(8, 16), 2)
            for f1 in range(8, 16) for f2 in range(8, 16)]
    for arch in ("encoder", "decoder"):
        assert enumerated_floor(task, 4, arch, short) == pytest.approx((9 / 16, 9 / 16), abs=1e-12)  # float sums
        for length, inputs in ((4, short), (8, long)):
            floor = position_free_floor(task, length, arch, n_examples=4000)
            assert floor.method == "monte_carlo"
            assert_close(floor, *enumerated_floor(task, length, arch, inputs))
