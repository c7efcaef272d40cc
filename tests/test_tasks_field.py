"""Golden tests of the field's task battery: Deletang et al.'s 15 tasks, CoPE's contextual tasks, passkey.

The registry-wide contract (determinism, shapes, rendering, targets = solve, chance vs Monte Carlo)
is in test_tasks.py; here are hand-checked answers, most of them the examples of the papers and of
their generators, the Chomsky classes, exact chance levels worked out by hand, the documented input
forms, and generation at the longest Deletang et al. length (500) without any length-squared tensor.
"""

from __future__ import annotations

import itertools
import math
import tracemalloc

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from pebench import tasks


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# Deletang et al. (2023), Table 2, under the names of their generators
CHOMSKY = {
    "even_pairs": "regular", "modular_arithmetic": "regular", "parity_check": "regular",
    "cycle_navigation": "regular",
    "stack_manipulation": "context_free", "reverse_string": "context_free",
    "modular_arithmetic_brackets": "context_free", "solve_equation": "context_free",
    "duplicate_string": "context_sensitive", "missing_duplicate": "context_sensitive",
    "odds_first": "context_sensitive", "binary_addition": "context_sensitive",
    "binary_multiplication": "context_sensitive", "compute_sqrt": "context_sensitive",
    "bucket_sort": "context_sensitive",
}
CONTEXTUAL = ["counting", "selective_copy", "flip_flop", "flip_flop_sparse", "flip_flop_dense", "passkey"]
NEW = [*CHOMSKY, *CONTEXTUAL]


def test_the_fifteen_deletang_tasks_carry_their_chomsky_class():
    classes = {name: tasks.TASKS.meta(name).get("chomsky") for name in tasks.names()}
    assert {name: c for name, c in classes.items() if c is not None} == CHOMSKY
    assert sum(c == "regular" for c in CHOMSKY.values()) == 4
    assert sum(c == "context_free" for c in CHOMSKY.values()) == 4


@pytest.mark.parametrize(("name", "order_dependent"), [
    ("cycle_navigation", False), ("parity_check", False), ("bucket_sort", False), ("modular_arithmetic", True),
    ("stack_manipulation", True), ("modular_arithmetic_brackets", True), ("solve_equation", True),
    ("binary_addition", True), ("binary_multiplication", True), ("compute_sqrt", True), ("reverse_string", True),
    ("duplicate_string", True), ("counting", True), ("selective_copy", True), ("flip_flop", True),
    ("passkey", True),
])
def test_declared_order_dependence(name, order_dependent):
    assert tasks.get(name).order_dependent is order_dependent


# symbols of the tasks' own encodings
W, IGN, R = 2, 3, 4  # flip-flop instructions (write, ignore, read)
PLUS, MINUS, OPEN, CLOSE = 5, 6, 8, 9  # modular_arithmetic_brackets
EQ_PLUS, EQ_MINUS, EQ_OPEN, EQ_CLOSE, X, EQUALS = 5, 6, 7, 8, 9, 10  # solve_equation
BLANK = 10  # selective_copy
FILLER, KEY = 10, 11  # passkey

# (task, input, expected output), checked by hand; "DM" marks an example of Deletang et al.'s generators
EXAMPLES = [
    ("cycle_navigation", [2, 0, 1, 0, 0], [3]),  # DM: 1 -1 0 -1 -1 -> -2 = class 3
    ("cycle_navigation", [2, 2, 2, 0], [2]),  # DM: 1 1 1 -1 -> 2
    ("cycle_navigation", [0], [4]),
    ("modular_arithmetic", [1, 5, 2, 7, 3], [2]),  # DM: 1 + 2 * 3 = 2 (mod 5)
    ("modular_arithmetic", [1, 6, 1, 6, 1], [4]),  # DM: 1 - 1 - 1 = 4
    ("modular_arithmetic", [0, 7, 1, 5, 4, 7, 3, 6, 2], [0]),  # DM: 0 * 1 + 4 * 3 - 2 = 0
    ("modular_arithmetic", [1, 5, 2, 7, 3, 8], [2]),  # even length: a trailing blank changes nothing
    ("modular_arithmetic", [3, 7, 4, 7, 4], [3]),  # 3 * 4 * 4 = 48
    ("stack_manipulation", [0, 1, 1, 0, 4, 2, 2], [1, 1, 0, 2, 0, 0, 0, 0]),  # DM's first example
    ("stack_manipulation", [1, 1, 0, 2, 2, 2], [2, 0, 0, 0, 0, 0, 0]),  # DM: popped empty
    ("stack_manipulation", [1, 2, 2, 3], [0, 2, 0, 0, 0]),  # a POP on the empty stack does nothing
    ("stack_manipulation", [1], [1, 2]),
    ("modular_arithmetic_brackets", [OPEN, OPEN, MINUS, 3, CLOSE, PLUS, OPEN, 4, MINUS, 1, CLOSE, CLOSE], [0]),
    ("modular_arithmetic_brackets", [OPEN, 2, MINUS, 4, CLOSE], [3]),
    ("modular_arithmetic_brackets", [OPEN, MINUS, 2, CLOSE], [3]),
    ("modular_arithmetic_brackets", [MINUS, 4], [1]),
    ("modular_arithmetic_brackets", [4], [4]),
    ("modular_arithmetic_brackets",  # ((1-(-3))-((2+4)+0)) = 4 - 6 = -2
     [OPEN, OPEN, 1, MINUS, OPEN, MINUS, 3, CLOSE, CLOSE, MINUS, OPEN, OPEN, 2, PLUS, 4, CLOSE, PLUS, 0, CLOSE,
      CLOSE], [3]),
    ("solve_equation", [EQ_OPEN, X, EQ_MINUS, EQ_OPEN, EQ_MINUS, 1, EQ_CLOSE, EQ_CLOSE, EQUALS, 3], [2]),
    ("solve_equation", [X, EQUALS, 4], [4]),
    ("solve_equation", [EQ_MINUS, X, EQUALS, 1], [4]),  # -x = 1
    ("solve_equation", [EQ_OPEN, 3, EQ_MINUS, EQ_OPEN, EQ_MINUS, X, EQ_CLOSE, EQ_CLOSE, EQUALS, 0], [2]),  # 3 + x = 0
    ("binary_addition", [0, 0, 1, 2, 0, 1, 1, 0, 1], [0, 1, 0, 1, 1, 2, 0, 0, 0, 0]),  # DM: 4 + 22 = 26
    ("binary_addition", [1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 1], [1, 0, 0, 1, 0, 1, 2, 0, 0, 0, 0, 0]),  # DM: 9 + 32
    ("binary_addition", [1, 2, 1], [0, 1, 2, 0]),  # 1 + 1 = 2
    ("binary_multiplication", [0, 0, 1, 2, 0, 1, 1, 0, 1], [0, 0, 0, 1, 1, 0, 1, 2, 0]),  # DM: 4 * 22 = 88
    ("binary_multiplication", [1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 0]),  # DM: 9 * 32
    ("binary_multiplication", [1, 2, 1], [1, 2, 0]),
    ("compute_sqrt", [1, 0, 0, 1, 0, 1], [1, 1, 0]),  # DM: sqrt(37) -> 6
    ("compute_sqrt", [1, 1, 1], [1, 0]),  # DM: sqrt(7) -> 2
    ("compute_sqrt", [0, 0, 0, 0, 0, 1], [0, 0, 1]),
    ("compute_sqrt", [1, 1, 1, 1], [1, 1]),  # sqrt(15) -> 3
    ("reverse_string", [0, 1, 1, 0, 1, 0], [0, 1, 0, 1, 1, 0]),  # DM: 011010 -> 010110
    ("duplicate_string", [1, 0, 1], [1, 0, 1, 1, 0, 1]),  # DM: 101 -> 101101
    ("bucket_sort", [1, 0, 2, 0, 4, 1, 1, 2], [0, 0, 1, 1, 1, 2, 2, 4]),  # DM: 10204112 -> 00111224
    ("parity_check", [1, 0, 1, 0, 1, 0, 0], [1]),  # DM: 1010100 -> 1
    ("parity_check", [0, 1, 1, 1, 1], [0]),  # DM: 01111 -> 0
    ("counting", [0, 1, 4, 0, 4, 7], [2]),  # pass; a = 0; a ++; pass; a ++; print a
    ("counting", [2, 0, 5, 1, 4, 5, 8], [2]),  # b set, incremented twice around a
    ("counting", [1, 4, 4, 1, 4, 7], [1]),  # a is reset: only the increment after the last set counts
    ("counting", [1, 2, 5, 5, 5, 7], [0]),  # increments of b do not count for a
    ("counting", [1] + [4] * 12 + [7], [10]),  # capped at 10 (never generated beyond)
    ("selective_copy", [3, BLANK, BLANK, 1, 4, BLANK], [3, 1, 4]),
    ("selective_copy", [BLANK, 7, 7, BLANK, 2], [7, 7, 2]),
    ("selective_copy", [5], [5]),
    ("flip_flop", [W, 1, IGN, 0, W, 0, R, 0, IGN, 1, R], [0]),
    ("flip_flop", [1, W, 1, IGN, 0, R], [1]),  # even length: a leading bit
    ("flip_flop", [W, 1, IGN, 0, IGN, 0, R], [1]),  # ignored bits do not write
    ("flip_flop_sparse", [W, 0, R], [0]),
    ("flip_flop_dense", [W, 0, W, 1, R, 1, W, 1, R], [1]),
    ("passkey", [FILLER, FILLER, KEY, 3, 1, 4, 1, 5, FILLER], [3, 1, 4, 1, 5]),
    ("passkey", [KEY, 2, 7, 1, 8, 2, FILLER, FILLER], [2, 7, 1, 8, 2]),
    ("passkey", [FILLER, KEY, 0, 0, 0, 0, 9], [0, 0, 0, 0, 9]),
]


@pytest.mark.parametrize(("name", "inputs", "expected"), EXAMPLES)
def test_hand_checked_examples(name, inputs, expected):
    task = tasks.get(name)
    assert len(expected) == task.output_length(len(inputs))
    assert task.solve(torch.tensor([inputs])).tolist() == [expected]


# exact chance levels worked out by hand
KNOWN_CHANCE = [
    ("cycle_navigation", 1, 1 / 3),
    ("cycle_navigation", 2, 1 / 3),  # the sum of two steps is 0 in 3 of 9 cases
    ("modular_arithmetic", 1, 1 / 5),
    ("modular_arithmetic", 3, 19 / 75),  # 0 wins: 2/3 * 1/5 + 1/3 * P(d1 * d2 = 0) = 2/15 + 9/75
    ("modular_arithmetic", 4, 19 / 75),  # the same expression and a blank
    ("stack_manipulation", 1, 3 / 4),  # (1/2 + 1) / 2
    ("stack_manipulation", 2, 5 / 9),  # size 0 (POP) w.p. 1/3, 2 (PUSH) w.p. 2/3: (1/3 + 2/3 + 2/3) / 3
    ("modular_arithmetic_brackets", 9, 1 / 5),
    ("solve_equation", 9, 1 / 5),
    ("reverse_string", 7, 1 / 2),
    ("duplicate_string", 7, 1 / 2),
    ("bucket_sort", 1, 1 / 5),
    ("bucket_sort", 2, 9 / 25),  # P(min = 0) = P(max = 4) = 1 - (4/5)**2
    ("parity_check", 7, 1 / 2),
    ("selective_copy", 7, 1 / 10),
    ("flip_flop", 7, 1 / 2),
    ("flip_flop_dense", 8, 1 / 2),
    ("passkey", 9, 1 / 10),
]


@pytest.mark.parametrize(("name", "length", "expected"), KNOWN_CHANCE)
def test_known_chance_levels(name, length, expected):
    assert tasks.get(name).chance_accuracy(length) == pytest.approx(expected, abs=1e-12)


def test_stack_size_distribution_is_a_distribution_and_matches_sampling():
    task = tasks.get("stack_manipulation")
    sizes = task.size_distribution(9)
    assert math.isclose(sum(sizes), 1.0) and min(sizes) >= 0
    targets = task.sample(20_000, 9, generator(0)).targets
    sampled = torch.bincount((targets == 2).long().argmax(1), minlength=10).double() / 20_000
    assert torch.allclose(sampled, torch.tensor(sizes, dtype=torch.float64), atol=0.012)


def test_generated_inputs_have_the_documented_form():
    batch = tasks.get("modular_arithmetic").sample(64, 8, generator(0))
    assert (batch.inputs[:, 0:7:2] < 5).all() and ((batch.inputs[:, 1:7:2] >= 5) & (batch.inputs[:, 1:7:2] <= 7)).all()
    assert (batch.inputs[:, 7] == 8).all(), "an even length ends with the blank"

    batch = tasks.get("stack_manipulation").sample(64, 9, generator(0))
    for row in batch.inputs.tolist():
        k = next(i for i, t in enumerate(row) if t >= 2)  # the initial stack: bits, then only instructions
        assert 1 <= k <= 8 and all(t >= 2 for t in row[k:])

    for name, (opening, closing) in {"modular_arithmetic_brackets": (OPEN, CLOSE),
                                     "solve_equation": (EQ_OPEN, EQ_CLOSE)}.items():
        for row in tasks.get(name).sample(64, 15, generator(1)).inputs.tolist():
            depths = list(itertools.accumulate((token == opening) - (token == closing) for token in row))
            assert min(depths) >= 0 and depths[-1] == 0, "brackets are balanced"
    rows = tasks.get("solve_equation").sample(64, 12, generator(2)).inputs
    assert (rows[:, -2] == EQUALS).all() and ((rows == X).sum(1) == 1).all() and (rows[:, -1] < 5).all()

    for name in ("binary_addition", "binary_multiplication"):
        rows = tasks.get(name).sample(64, 10, generator(3)).inputs
        assert ((rows == 2).sum(1) == 1).all()
        for row in rows.tolist():
            split = row.index(2)
            assert 1 <= split <= 8 and any(row[:split]) and any(row[split + 1 :]), "both numbers are nonzero"
    assert (tasks.get("compute_sqrt").sample(64, 3, generator(4)).inputs.sum(1) > 0).all()

    counting = tasks.get("counting").sample(256, 10, generator(5)).inputs
    assert (counting[:, -1] >= 7).all() and (counting[:, :-1] < 7).all(), "statements, then one print"
    asked = counting[:, -1:] - 7
    assert ((counting[:, :-1] == 1 + asked).any(1)).all(), "the printed variable was set"

    copy = tasks.get("selective_copy").sample(64, 9, generator(6)).inputs
    assert ((copy != BLANK).sum(1) == 5).all()

    flip = tasks.get("flip_flop").sample(64, 10, generator(7)).inputs
    assert (flip[:, 0] <= 1).all() and (flip[:, 1] == W).all() and (flip[:, -1] == R).all()
    assert (flip[:, 1:-1:2] >= 2).all() and (flip[:, 2:-1:2] <= 1).all(), "instruction, bit, instruction, ..."

    key = tasks.get("passkey").sample(64, 12, generator(8)).inputs
    assert ((key == KEY).sum(1) == 1).all() and ((key < 10).sum(1) == 5).all()


@pytest.mark.parametrize(("name", "p_ignore"), [("flip_flop", 0.8), ("flip_flop_sparse", 0.98),
                                                ("flip_flop_dense", 0.1)])
def test_flip_flop_instruction_frequencies(name, p_ignore):
    inputs = tasks.get(name).sample(2000, 41, generator(0)).inputs
    instructions = inputs[:, 2:-1:2]  # after the first write, before the final read
    assert (instructions == IGN).double().mean().item() == pytest.approx(p_ignore, abs=0.01)
    assert (instructions == W).double().mean().item() == pytest.approx((1 - p_ignore) / 2, abs=0.01)


def test_counting_statement_frequencies_follow_the_cope_generator():
    inputs = tasks.get("counting").sample(4000, 200, generator(0)).inputs[:, :-1]
    is_set = (inputs >= 1) & (inputs <= 3)
    first = is_set.long().argmax(1, keepdim=True)  # (n, 1) the first set
    # the 9 statements after it: no variable can reach 10 yet, so the weights are exactly set 1, pass 50,
    # increment 7 (later, increments of a variable at 10 are redrawn and pass becomes more frequent)
    window = first + 1 + torch.arange(9)
    keep = (window < inputs.shape[1]).all(1)
    statements = inputs[keep].gather(1, window[keep])
    assert ((statements >= 1) & (statements <= 3)).double().mean().item() == pytest.approx(1 / 58, abs=0.003)
    assert (statements == 0).double().mean().item() == pytest.approx(50 / 58, abs=0.01)
    assert (statements >= 4).double().mean().item() == pytest.approx(7 / 58, abs=0.01)


@pytest.mark.parametrize("name", NEW)
def test_generation_at_length_500_is_linear_in_memory(name):
    """n = 8 examples at the longest Deletang et al. length: right shapes, and neither torch nor Python
    allocates anything of size length**2 (the largest torch allocation and the Python peak stay
    proportional to n * length)."""
    task = tasks.get(name)
    n, length = 8, 500
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        tracemalloc.start()
        batch = task.sample(n, length, generator(0))
        python_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert batch.inputs.shape == (n, length)
    assert batch.targets.shape == (n, task.output_length(length))
    largest_tensor = max((event.cpu_memory_usage for event in prof.events()), default=0)
    linear_budget = 80 * n * length  # bytes; an (n, L, L) int64 tensor would take 8 * n * L * L = 16 MB
    assert largest_tensor <= linear_budget
    assert python_peak <= linear_budget
