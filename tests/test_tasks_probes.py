"""Golden tests of the probe tasks of issue 64: multi-query associative recall (Zoology's MQAR) and the S5 and A5
word problems (Merrill et al. 2024). The registry-wide contract (determinism, shapes, rendering, targets = solve,
chance against Monte Carlo) is in test_tasks.py and their floors in test_floors.py; here are the group tables
(axioms, composition order), hand-checked answers, the oracles against plain-Python references, the documented
input forms and the declared metadata."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from pebench import tasks
from pebench.render import registry_tables
from pebench.tasks import mqar, word_problem
from pebench.tasks.word_problem import compose, elements, multiplication_table

GROUPS = {"S5": ("s5_word_problem", 120, 7), "A5": ("a5_word_problem", 60, 5)}  # name, order, conjugacy classes


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("group", GROUPS)
def test_the_group_tables_satisfy_the_group_axioms(group):
    name, order, _ = GROUPS[group]
    table = multiplication_table(group)
    assert table.shape == (order, order) and len(set(elements(group))) == order
    assert elements(group)[0] == (0, 1, 2, 3, 4), "the identity is id 0"
    assert (table[0] == torch.arange(order)).all() and (table[:, 0] == torch.arange(order)).all()
    # a Latin square: every row and column is a permutation of the elements (cancellation, closure)
    assert (table.sort(1).values == torch.arange(order)).all() and (table.sort(0).values.T == torch.arange(order)).all()
    assert ((table == 0).sum(1) == 1).all(), "every element has one inverse"
    assert (table[table] == table[:, table]).all(), "associative: [a, b, c] is (a·b)·c on the left, a·(b·c) right"
    assert not (table == table.T).all(), "not abelian"
    assert tasks.get(name).vocab_size == order


def test_a5_is_the_even_half_of_s5_and_closed():
    s5, a5 = elements("S5"), elements("A5")
    assert set(a5) <= set(s5) and len(a5) == len(s5) // 2
    assert all(compose(a, b) in set(a5) for a, b in itertools.product(a5, repeat=2))
    assert word_problem.is_even((1, 2, 0, 3, 4)) and not word_problem.is_even((1, 0, 2, 3, 4))


@pytest.mark.parametrize("group", GROUPS)
def test_commuting_pairs_count_the_conjugacy_classes(group):
    """The chance that two uniform elements commute is (conjugacy classes) / |G| (7 for S5, 5 for A5): a check
    of the tables against a known fact, and the length-2 floor of test_floors.py."""
    _, order, classes = GROUPS[group]
    table = multiplication_table(group)
    assert int((table == table.T).sum()) == classes * order


def test_composition_applies_the_left_element_first():
    """The declared convention: ``a · b`` applies ``a``, then ``b`` (``i -> b[a[i]]``), and a word is read left to
    right, so the product of ``(0 1)`` then ``(1 2)`` sends 0 to 2."""
    swap01, swap12 = (1, 0, 2, 3, 4), (0, 2, 1, 3, 4)
    assert compose(swap01, swap12) == (2, 0, 1, 3, 4)
    assert compose(swap12, swap01) == (1, 2, 0, 3, 4)
    ids = {p: i for i, p in enumerate(elements("S5"))}
    task = tasks.get("s5_word_problem")
    assert task.solve(torch.tensor([[ids[swap01], ids[swap12]]])).tolist() == [[ids[(2, 0, 1, 3, 4)]]]
    assert task.solve(torch.tensor([[ids[swap12], ids[swap01]]])).tolist() == [[ids[(1, 2, 0, 3, 4)]]]
    # a 3-cycle applied three times is the identity; on a point it acts as the automaton reads
    cycle = ids[(1, 2, 0, 3, 4)]
    assert task.solve(torch.tensor([[cycle] * 3])).tolist() == [[0]]
    assert task.solve(torch.tensor([[cycle] * 2])).tolist() == [[ids[(2, 0, 1, 3, 4)]]]


@pytest.mark.parametrize("group", GROUPS)
def test_the_documented_example_and_the_oracle_against_a_python_fold(group):
    name, _, _ = GROUPS[group]
    task, members = tasks.get(name), elements(group)
    ids = {p: i for i, p in enumerate(members)}
    words = {"S5": ([(1, 0, 2, 3, 4), (0, 2, 1, 3, 4)], (2, 0, 1, 3, 4)),
             "A5": ([(1, 2, 0, 3, 4), (0, 2, 3, 1, 4)], (2, 3, 0, 1, 4))}
    word, product = words[group]
    assert task.solve(torch.tensor([[ids[p] for p in word]])).tolist() == [[ids[product]]]
    assert f"-> {product}" in task.describe()
    batch = task.sample(64, 9, generator(0))
    for row, target in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        state = (0, 1, 2, 3, 4)
        for token in row:
            state = compose(state, members[token])
        assert target == [ids[state]]


@pytest.mark.parametrize("group", GROUPS)
def test_word_problem_chance_and_metadata(group):
    name, order, _ = GROUPS[group]
    task = tasks.get(name)
    assert task.chance_accuracy(7) == pytest.approx(1 / order, abs=1e-12)
    targets = task.sample(20_000, 6, generator(1)).targets
    # the product is uniform: the most frequent one is within sampling noise of 1/|G| (about 12 standard errors)
    assert torch.bincount(targets[:, 0], minlength=order).max().item() / 20_000 < 1 / order + 0.012
    meta = tasks.TASKS.meta(name)
    assert (meta["version"], meta["order_dependent"], meta["paper"]) == (1, True, "merrill2024illusion")
    assert "NC1-complete" in meta["complexity"] and "chomsky" not in meta
    assert task.exchangeable_inputs and task.output_length(40) == 1 and task.min_length == 1


# MQAR: keys 0..7, values 8..15
MQAR_EXAMPLES = [
    ([3, 10, 7, 13, 7, 14, 3, 15], [13, 10]),  # the docstring's example: 7 asked first
    ([3, 10, 3, 14], [10]),  # shortest input: one pair, one query, one filler
    ([3, 10, 0, 9, 3, 12, 0, 8, 11, 12, 13], [10, 9]),  # L = 11: still 2 pairs, fillers to the end
    ([5, 10, 6, 11, 1, 12, 6, 8, 1, 9, 5, 8], [11, 12, 10]),  # L = 12: 3 pairs, asked out of order
]


@pytest.mark.parametrize(("inputs", "expected"), MQAR_EXAMPLES)
def test_mqar_hand_checked_examples(inputs, expected):
    task = tasks.get("mqar")
    assert task.output_length(len(inputs)) == len(expected) == len(inputs) // 4
    assert task.solve(torch.tensor([inputs])).tolist() == [expected]


def test_mqar_solve_is_total_on_shuffled_inputs():
    task = tasks.get("mqar")
    # no key in the region: every answer is value symbol 8; a region key that is in no pair: 8 as well
    assert task.solve(torch.tensor([[3, 10, 0, 9, 10, 11, 12, 13]])).tolist() == [[8, 8]]
    assert task.solve(torch.tensor([[3, 10, 0, 9, 7, 11, 3, 13]])).tolist() == [[8, 10]]
    shuffled = tasks.shuffle_inputs(task.sample(64, 12, generator(0)).inputs, generator(1))
    out = task.solve(shuffled)
    assert out.shape == (64, 3) and ((out >= 0) & (out < 16)).all()


def reference_mqar(row: list[int]) -> list[int]:
    """Plain Python: the pairs' dictionary, then the values of the key symbols of the region in order."""
    k = len(row) // 4
    binding = {row[2 * i]: row[2 * i + 1] for i in range(k)}
    return [binding[token] for token in row[2 * k :] if token < mqar.KEYS]


@pytest.mark.parametrize("length", [4, 7, 8, 13, 32, 35])
def test_mqar_inputs_have_the_documented_form_and_the_oracle_matches(length):
    task = tasks.get("mqar")
    batch = task.sample(256, length, generator(length))
    k = length // 4
    for row, target in zip(batch.inputs.tolist(), batch.targets.tolist(), strict=True):
        keys, values, region = row[0 : 2 * k : 2], row[1 : 2 * k : 2], row[2 * k :]
        assert len(set(keys)) == k and all(key < 8 for key in keys)
        assert len(set(values)) == k and all(8 <= value < 16 for value in values)
        asked = [i for i, token in enumerate(region) if token < 8]
        assert sorted(region[i] for i in asked) == sorted(keys), "every key asked once"
        assert all(i % 2 == 0 for i in asked), "queries at even offsets of the region"
        assert target == reference_mqar(row)


def test_mqar_query_order_follows_zoology_power_law():
    """Key i's slot is drawn i-th with P(g) proportional to (g + 1)**(a - 1): at L = 8 (two slots) the first key is
    asked first with probability 1 / (1 + 2**(a - 1)), about 0.665."""
    inputs = tasks.get("mqar").sample(20_000, 8, generator(2)).inputs
    first_key_first = (inputs[:, 4] == inputs[:, 0]).double().mean().item()
    expected = 1 / (1 + 2 ** (mqar.POWER_A - 1))
    assert first_key_first == pytest.approx(expected, abs=0.015)  # about 4.5 standard errors of 20,000 draws


def test_mqar_pairs_scale_with_length_only_and_chance_is_one_in_8():
    task = tasks.get("mqar")
    assert [task.output_length(n) for n in (4, 7, 8, 12, 32, 35)] == [1, 1, 2, 3, 8, 8]
    assert (task.min_length, task.max_length, task.vocab_size) == (4, 35, 16)
    with pytest.raises(ValueError, match="input length <= 35"):
        task.sample(1, 36, generator(0))
    assert task.chance_accuracy(8) == 1 / 8
    targets = task.sample(20_000, 8, generator(3)).targets
    frequency = torch.nn.functional.one_hot(targets - 8, 8).double().mean(0).max().item()
    assert frequency < 1 / 8 + 0.012  # about 5 standard errors above 1/8 over 20,000 draws per position
    meta = tasks.TASKS.meta("mqar")
    assert (meta["version"], meta["order_dependent"], meta["paper"], meta["label"]) == (1, True, "arora2023zoology",
                                                                                        "MQAR")


@pytest.mark.parametrize("name", ["mqar", "s5_word_problem", "a5_word_problem"])
def test_task_pages_get_facts_and_examples(name):
    facts = {row[0].text: row[1].text for row in registry_tables.task_facts(name).rows}
    assert facts["version"] == "1" and facts["order"] == "order-dependent"
    assert ("complexity" in facts) == (name != "mqar")
    examples, rendered = registry_tables.task_examples(name)
    assert len(examples.rows) == 2 and set(rendered) == {"encoder", "decoder"}
    length = registry_tables.example_length(tasks.get(name))
    assert math.isclose(float(facts[f"chance token accuracy at length {length}"]),
                        tasks.get(name).chance_accuracy(length), abs_tol=5e-4)  # the page rounds to 3 places
