"""Tests of the task registry, every task's contract, hand-checked answers and chance levels.

The contract tests run over every registered task (``pebench.tasks.names()``, installed plugins'
included), so a new task file gets them without editing this file; the hand-checked answers and
chance levels pin the built-in tasks.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from pebench import tasks
from pebench.plan import experiment
from pebench.registry import load_entry_point_plugins
from pebench.tasks import ARCHS, IGNORE, Batch, Task, model_vocab_size, render, shuffle_inputs

# the built-in synthetic task families and their declared order dependence (golden)
ORDER_DEPENDENT = [
    "addition", "associative_recall", "copy", "duplicate", "even_pairs", "odds_first", "reverse",
]
# missing_duplicate: the masked symbol is the one of odd count among the visible ones, so the bag answers it
ORDER_INVARIANT = ["count", "majority", "missing_duplicate", "parity", "sort", "sum_mod"]
SYNTHETIC = sorted(ORDER_DEPENDENT + ORDER_INVARIANT)
# the tasks whose symbols are a group's elements, one token each (the word problems): more than 16 by design
LARGE_VOCABULARY = {"s5_word_problem": 120, "a5_word_problem": 60}


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def in_range(task: Task, lengths) -> list[int]:
    """The ``lengths`` the task is defined for, sorted, without repeats."""
    top = task.max_length if task.max_length is not None else math.inf
    return sorted({length for length in lengths if task.min_length <= length <= top})


def clamp(task: Task, length: int) -> int:
    """``length`` moved into the task's range of lengths."""
    top = task.max_length if task.max_length is not None else length
    return max(task.min_length, min(length, top))


def allowed_archs(task: Task) -> tuple[str, ...]:
    """The architectures a task renders for (a language-modelling task is decoder only)."""
    return ("decoder",) if getattr(task, "decoder_only", False) else ARCHS


def solvable(name: str) -> bool:
    """Whether the task's targets are a function of its inputs (``solve``); a corpus task's are not."""
    task = tasks.get(name)
    try:
        task.solve(task.sample(2, clamp(task, 8), generator(0)).inputs)
    except NotImplementedError:
        return False
    return True


load_entry_point_plugins()  # installed plugins' tasks get the contract tests too
TASKS = tasks.names()
# synthetic tasks: inputs drawn from a distribution, targets computed by solve()
SOLVABLE = [name for name in TASKS if solvable(name)]
SOLVABLE_ORDER_DEPENDENT = [name for name in SOLVABLE if tasks.get(name).order_dependent]
SOLVABLE_ORDER_INVARIANT = [name for name in SOLVABLE if not tasks.get(name).order_dependent]


def test_registry_lists_every_task_family():
    assert set(SYNTHETIC) <= set(tasks.names())
    for name in SYNTHETIC:
        assert tasks.TASKS.meta(name)["order_dependent"] == (name in ORDER_DEPENDENT)


def test_unknown_task_name_suggests_close_names():
    with pytest.raises(KeyError, match="Did you mean 'reverse'"):
        tasks.get("revrse")
    with pytest.raises(KeyError, match="Valid: .*parity"):
        tasks.get("no_such_task")


@pytest.mark.parametrize("name", TASKS)
def test_task_declares_its_contract(name):
    task = tasks.get(name)
    meta = tasks.TASKS.meta(name)
    assert isinstance(task, Task)
    assert task.name == name
    assert isinstance(task.version, int) and task.version >= 1 and meta["version"] == task.version
    assert isinstance(task.order_dependent, bool) and meta["order_dependent"] == task.order_dependent
    assert task.vocab_size >= 2
    assert model_vocab_size(task) == task.vocab_size + 2
    assert task.min_length >= 1 and (task.max_length is None or task.max_length >= task.min_length)
    assert meta["paper"], "every task names its source"
    assert task.describe(), "the docstring's first paragraph describes the task"
    assert "hance" in type(task).__doc__, "docstring gives the chance level"


@pytest.mark.parametrize("name", SOLVABLE)
def test_synthetic_task_has_a_small_vocabulary_and_a_worked_example(name):
    task = tasks.get(name)
    assert 2 <= task.vocab_size <= LARGE_VOCABULARY.get(name, 16)
    assert "->" in type(task).__doc__, "docstring gives an example"


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("split", ["train", "eval"])
def test_sampling_is_deterministic_in_the_seed(name, split):
    task = tasks.get(name)
    length = clamp(task, 8)
    first = task.sample(32, length, generator(0), split=split)
    again = task.sample(32, length, generator(0), split=split)
    other = task.sample(32, length, generator(1), split=split)
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.targets, again.targets)
    assert not torch.equal(first.inputs, other.inputs)


@pytest.mark.parametrize("name", TASKS)
def test_shapes_and_values_at_every_length(name):
    task = tasks.get(name)
    for length in in_range(task, [*range(task.min_length, 65), 256]):
        batch = task.sample(4, length, generator(length))
        assert batch.inputs.shape == (4, length) and batch.inputs.dtype == torch.long
        assert batch.targets.shape == (4, task.output_length(length)) and batch.targets.dtype == torch.long
        for tensor in (batch.inputs, batch.targets):
            assert 0 <= tensor.min() and tensor.max() < task.vocab_size


@pytest.mark.parametrize("name", SOLVABLE)
def test_targets_are_the_solution_of_the_inputs(name):
    task = tasks.get(name)
    for length in in_range(task, [task.min_length, 7, 16, 64]):
        batch = task.sample(16, length, generator(length))
        assert torch.equal(task.solve(batch.inputs), batch.targets)


@pytest.mark.parametrize("name", TASKS)
def test_lengths_outside_the_task_range_are_rejected(name):
    task = tasks.get(name)
    with pytest.raises(ValueError, match=f">= {task.min_length}"):
        task.sample(1, task.min_length - 1, generator(0))
    if task.max_length is not None:
        with pytest.raises(ValueError, match=f"<= {task.max_length}"):
            task.sample(1, task.max_length + 1, generator(0))


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("arch", ARCHS)
def test_rendering_labels_exactly_the_targets(name, arch):
    """Every rendering: tokens in the model's vocabulary, a label on each output position and none elsewhere,
    the labels in order equal to the targets; an architecture the task does not allow is refused."""
    task = tasks.get(name)
    length = clamp(task, 6)
    batch = task.sample(8, length, generator(0))
    if arch not in allowed_archs(task):
        with pytest.raises(ValueError, match="decoder"):
            render(task, batch, arch)
        return
    tokens, labels = render(task, batch, arch)
    assert tokens.shape == labels.shape and tokens.shape[0] == 8
    assert tokens.dtype == labels.dtype == torch.long
    assert 0 <= tokens.min() and tokens.max() < model_vocab_size(task)
    supervised = labels != IGNORE  # (N, T)
    assert (supervised.sum(1) == task.output_length(length)).all()
    assert torch.equal(labels[supervised].view(8, -1), batch.targets)



@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("arch", ARCHS)
def test_the_rendered_length_is_that_of_every_rendered_example(name, arch):
    """``rendered_length`` (what run specs build encodings with, computed without drawing data) is the length of
    the examples ``render`` makes, at every length a task is trained at."""
    task = tasks.get(name)
    if arch not in allowed_archs(task):
        with pytest.raises(ValueError, match="decoder"):
            task.rendered_length(clamp(task, 8), arch)
        return
    for length in in_range(task, [task.min_length, 5, 8, 16, 32, 40, 64]):
        tokens, _labels = render(task, task.sample(3, length, generator(length)), arch)
        assert task.rendered_length(length, arch) == tokens.shape[1] == experiment.rendered_length(task, length, arch)


def test_a_task_rendered_its_own_way_is_measured_where_it_does_not_say_its_length():
    """A plugin's task that overrides ``render`` but not ``rendered_length``: run specs measure a rendered
    example instead of trusting the default count."""

    class Doubled(type(tasks.get("copy"))):
        def render(self, batch, arch):
            tokens, labels = super().render(batch, arch)
            return torch.cat([tokens, tokens], 1), torch.cat([labels, labels], 1)

    task = Doubled()
    assert task.rendered_length(8, "decoder") == 16  # the default count, wrong for this rendering
    assert experiment.rendered_length(task, 8, "decoder") == 32 == render(task, task.sample(1, 8, generator(0)),
                                                                          "decoder")[0].shape[1]

def test_count_rejects_lengths_its_three_digits_cannot_represent():
    task = tasks.get("count")
    assert task.sample(1, 999, generator(0)).targets.shape == (1, 3)
    with pytest.raises(ValueError, match="<= 999"):
        task.sample(1, 1000, generator(0))


# (task, input, expected output), checked by hand
EXAMPLES = [
    ("copy", [3, 1, 4], [3, 1, 4]),
    ("reverse", [3, 1, 4, 1, 5], [5, 1, 4, 1, 3]),
    ("reverse", [7], [7]),
    ("duplicate", [3, 1, 4], [3, 1, 4, 3, 1, 4]),
    ("odds_first", [1, 2, 3, 4, 5], [1, 3, 5, 2, 4]),
    ("odds_first", [0, 0, 1, 1, 0, 1, 0, 1], [0, 1, 0, 0, 0, 1, 1, 1]),  # Deletang et al.: 00110101 -> 01000111
    ("odds_first", [1, 1, 0], [1, 0, 1]),  # Deletang et al.: 110 -> 101
    ("associative_recall", [1, 2, 3, 1, 4, 3], [1]),  # query 3 last seen at position 2, then 1
    ("associative_recall", [1, 2, 1, 4, 1], [4]),  # query 1 last seen at position 2 (not 0), then 4
    ("associative_recall", [5, 9, 5], [9]),  # shortest input
    ("associative_recall", [5, 9, 5, 5], [9]),  # the last context symbol has no successor, so it is no key
    ("addition", [4, 2, 10, 7, 5], [1, 8, 0]),  # 24 + 57 = 81
    ("addition", [9, 9, 10, 9, 9], [8, 9, 1]),  # 99 + 99 = 198
    ("addition", [5, 10, 5], [0, 1]),  # 5 + 5 = 10
    ("addition", [1, 2, 3, 10, 9, 9], [0, 2, 4, 0]),  # 321 + 99 = 420 (a has one more digit than b)
    ("even_pairs", [0, 0, 1, 1, 1, 0], [0]),  # Deletang et al.: one 01, one 10 -> even -> 0
    ("even_pairs", [0, 1, 0, 1, 0, 0, 1], [1]),  # Deletang et al.: three 01, two 10 -> odd -> 1
    ("even_pairs", [1], [0]),
    ("missing_duplicate", [0, 1, 1, 0, 0, 2, 1, 0], [1]),  # 0110 0110 with position 5 masked
    ("missing_duplicate", [1, 0, 1, 1, 2, 1, 3], [0]),  # odd length: 101 101 masked at 4, then padding
    ("missing_duplicate", [2, 1], [1]),
    ("parity", [1, 0, 1, 1], [1]),
    ("parity", [1, 0, 0, 1], [0]),
    ("sum_mod", [2, 2, 1], [2]),
    ("sum_mod", [2, 2, 2], [0]),
    ("sum_mod", [1, 2, 1, 0, 1, 2, 2], [0]),
    ("majority", [2, 0, 2, 1, 0], [0]),  # tie between 0 and 2 -> smallest
    ("majority", [3, 1, 3, 2, 3], [3]),
    ("majority", [2], [2]),
    ("count", [1, 0, 1, 1], [3, 0, 0]),
    ("count", [1] * 12 + [0] * 3, [2, 1, 0]),
    ("count", [1] * 305, [5, 0, 3]),
    ("count", [0, 0], [0, 0, 0]),
    ("sort", [3, 1, 2, 1], [1, 1, 2, 3]),
    ("sort", [9, 0, 9, 5, 0], [0, 0, 5, 9, 9]),
]


@pytest.mark.parametrize(("name", "inputs", "expected"), EXAMPLES)
def test_hand_checked_examples(name, inputs, expected):
    task = tasks.get(name)
    assert len(expected) == task.output_length(len(inputs))
    assert task.solve(torch.tensor([inputs])).tolist() == [expected]


def test_generated_inputs_have_the_documented_form():
    batch = tasks.get("addition").sample(64, 9, generator(0))
    assert (batch.inputs[:, 4] == 10).all() and (batch.inputs[:, [0, 1, 2, 3, 5, 6, 7, 8]] < 10).all()
    batch = tasks.get("missing_duplicate").sample(64, 9, generator(0))
    assert ((batch.inputs[:, :8] == 2).sum(1) == 1).all() and (batch.inputs[:, 8] == 3).all()
    masked = batch.inputs[:, :8].clone()
    masked[masked == 2] = batch.targets.squeeze(1)
    assert torch.equal(masked[:, :4], masked[:, 4:])


@pytest.mark.parametrize("arch", ARCHS)
def test_missing_duplicate_is_answered_by_the_bag_of_its_input(arch):
    """Every symbol of ``w w`` occurs an even number of times, so the masked one is the symbol of odd count
    among the visible ones: a bag of symbols answers every example, and the task is a control whose
    position-free floor is exactly 1.0 (the audit of protocol v2 found it listed as order-dependent)."""
    task = tasks.get("missing_duplicate")
    for length in (2, 3, 8, 9, 33):
        batch = task.sample(500, length, generator(length))
        visible_ones = (batch.inputs == 1).sum(1)
        assert torch.equal(batch.targets.squeeze(1), visible_ones % 2)
        floor = tasks.position_free_floor(task, length, arch)
        assert (floor.token_acc, floor.method) == (1.0, "exact")
    assert not task.order_dependent
    batch = tasks.get("associative_recall").sample(64, 9, generator(0))
    assert (batch.inputs[:, :7] == batch.inputs[:, 8:]).any(1).all(), "the query occurs as a key"


def reference_associative_recall(row: list[int]) -> int:
    query = row[-1]
    return next(row[j + 1] for j in range(len(row) - 3, -1, -1) if row[j] == query)


def reference_addition(row: list[int]) -> list[int]:
    plus = len(row) // 2
    a = int("".join(map(str, reversed(row[:plus]))))
    b = int("".join(map(str, reversed(row[plus + 1 :]))))
    digits = str(a + b)[::-1].ljust(plus + 1, "0")
    return [int(d) for d in digits]


def reference_majority(row: list[int]) -> int:
    counts = Counter(row)
    return min(counts, key=lambda symbol: (-counts[symbol], symbol))


REFERENCES = {
    "associative_recall": lambda row: [reference_associative_recall(row)],
    "addition": reference_addition,
    "majority": lambda row: [reference_majority(row)],
    "sort": sorted,
    "count": lambda row: [int(d) for d in str(sum(row))[::-1].ljust(3, "0")],
    "odds_first": lambda row: row[0::2] + row[1::2],
    "even_pairs": lambda row: [int(row[0] != row[-1])],
    "sum_mod": lambda row: [sum(row) % 3],
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_solve_agrees_with_a_plain_python_reference(name):
    task = tasks.get(name)
    for length in (task.min_length, 7, 16, 101, 256):
        batch = task.sample(16, length, generator(length))
        for row, target in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
            assert REFERENCES[name](row) == target


@pytest.mark.parametrize("name", SOLVABLE_ORDER_INVARIANT)
def test_order_invariant_tasks_ignore_any_permutation(name):
    task = tasks.get(name)
    for length in in_range(task, (2, 5, 16, 64)):
        batch = task.sample(200, length, generator(length))
        for seed in range(5):
            shuffled = shuffle_inputs(batch.inputs, generator(100 + seed))
            assert torch.equal(task.solve(shuffled), batch.targets)


@pytest.mark.parametrize("name", SOLVABLE_ORDER_DEPENDENT)
def test_order_dependent_tasks_change_under_some_permutation(name):
    """Order-dependent means a permutation *can* change the answer: it must for a good share of examples.
    Not for all: in sparse tasks most short inputs have an order-free answer (CoPE's counting: 58% of
    length-12 programs never increment the printed variable, so their answer is 0 in any order)."""
    task = tasks.get(name)
    batch = task.sample(200, clamp(task, 12), generator(0))
    changed = torch.zeros(200, dtype=torch.bool)
    for seed in range(10):
        shuffled = shuffle_inputs(batch.inputs, generator(100 + seed))
        changed |= (task.solve(shuffled) != batch.targets).any(dim=1)
    assert changed.float().mean() > 0.25


# exact chance levels worked out by hand
KNOWN_CHANCE = [
    ("copy", 7, 1 / 10),
    ("reverse", 7, 1 / 10),
    ("duplicate", 7, 1 / 10),
    ("odds_first", 7, 1 / 10),
    ("associative_recall", 7, 1 / 16),
    ("parity", 1, 1 / 2),
    ("parity", 16, 1 / 2),
    ("sum_mod", 16, 1 / 3),
    ("even_pairs", 1, 1.0),
    ("even_pairs", 16, 1 / 2),
    ("missing_duplicate", 16, 1 / 2),
    ("majority", 1, 1 / 4),
    ("majority", 2, 7 / 16),  # 0 wins unless neither symbol is 0: 1 - (3/4)**2
    ("count", 1, (1 / 2 + 1 + 1) / 3),  # units digit is a fair bit, the others are always 0
    ("sort", 1, 1 / 10),
    ("sort", 2, 19 / 100),  # P(min = 0) = P(max = 9) = 1 - 0.9**2
    ("addition", 3, (1 / 10 + 1 - 9 / 20) / 2),  # carry out of two digits: 45 of 100 pairs
    ("addition", 4, (2 / 10 + 1 - 9 / 200) / 3),  # carry out of 2 digits + 1 digit: 45 of 1000 pairs
]


@pytest.mark.parametrize(("name", "length", "expected"), KNOWN_CHANCE)
def test_known_chance_levels(name, length, expected):
    assert tasks.get(name).chance_accuracy(length) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("name", [n for n in TASKS if type(tasks.get(n)).chance_accuracy is not Task.chance_accuracy])
def test_exact_chance_agrees_with_monte_carlo(name):
    """A task's own chance formula agrees with the base class's Monte-Carlo estimate (tasks without a formula
    use that estimate itself, so there is nothing to compare)."""
    task = tasks.get(name)
    for length in in_range(task, {task.min_length, task.min_length + 1, 5, 12}):
        exact = task.chance_accuracy(length)
        estimate = Task.chance_accuracy(task, length)  # the base class's Monte-Carlo estimate
        assert exact == pytest.approx(estimate, abs=0.012), f"length {length}"


@pytest.mark.parametrize("name", TASKS)
def test_chance_is_a_probability_at_every_length(name):
    task = tasks.get(name)
    for length in in_range(task, [task.min_length, 16, 64]):
        chance = task.chance_accuracy(length)
        assert 0 < chance <= 1 and math.isfinite(chance), f"length {length}"


def test_render_decoder_and_encoder_on_a_hand_checked_example():
    task = tasks.get("copy")
    sep, blank, x = task.vocab_size, task.vocab_size + 1, IGNORE
    batch = Batch(inputs=torch.tensor([[3, 1, 4]]), targets=torch.tensor([[3, 1, 4]]))
    tokens, labels = render(task, batch, "decoder")
    assert tokens.tolist() == [[3, 1, 4, sep, 3, 1]]
    assert labels.tolist() == [[x, x, x, 3, 1, 4]]
    tokens, labels = render(task, batch, "encoder")
    assert tokens.tolist() == [[3, 1, 4, sep, blank, blank, blank]]
    assert labels.tolist() == [[x, x, x, x, 3, 1, 4]]


def test_render_single_token_output():
    task = tasks.get("parity")
    batch = Batch(inputs=torch.tensor([[1, 0, 1]]), targets=torch.tensor([[0]]))
    tokens, labels = render(task, batch, "decoder")
    assert tokens.tolist() == [[1, 0, 1, 2]] and labels.tolist() == [[IGNORE, IGNORE, IGNORE, 0]]
    tokens, labels = render(task, batch, "encoder")
    assert tokens.tolist() == [[1, 0, 1, 2, 3]] and labels.tolist() == [[IGNORE] * 4 + [0]]
    with pytest.raises(ValueError, match="arch"):
        render(task, batch, "seq2seq")


def test_shuffle_inputs_permutes_each_row_deterministically():
    inputs = tasks.get("copy").sample(50, 20, generator(0)).inputs
    shuffled = shuffle_inputs(inputs, generator(7))
    assert torch.equal(shuffled.sort(dim=1).values, inputs.sort(dim=1).values)
    assert (shuffled != inputs).any(dim=1).all()
    assert torch.equal(shuffled, shuffle_inputs(inputs, generator(7)))
    assert not torch.equal(shuffled, shuffle_inputs(inputs, generator(8)))
