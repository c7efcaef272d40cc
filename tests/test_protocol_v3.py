"""Protocol v3's fit criterion (every training length, 512 held-out examples, held-out inputs never trained
on) and training context (the rendered training sequence), each against the defect the audit of v2 found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from pebench import encodings, tasks
from pebench.learn.train import TrainConfig, fit_accuracy, fit_batch, train, training_batch
from pebench.plan.execute import model_for
from pebench.plan.experiment import make_spec, rendered_length
from pebench.protocol import FIT_V3
from pebench.tasks.base import HELD_OUT_SHARE, input_keys, is_held_out


def v3_config(**overrides) -> TrainConfig:
    return TrainConfig(**{"train_min_len": 1, "train_max_len": 8, "fit_every": 10, "seed": 3, **FIT_V3,
                          **overrides})


def rows(inputs: torch.Tensor) -> set[tuple[int, ...]]:
    return {tuple(row) for row in inputs.tolist()}


# --------------------------------------------------------------------------- held-out inputs


def test_the_split_is_a_fixed_function_of_the_input_and_its_length():
    inputs = tasks.get("copy").sample(4096, 8, torch.Generator().manual_seed(0)).inputs
    held = is_held_out(inputs)
    assert torch.equal(held, is_held_out(inputs.clone()))
    # one input in HELD_OUT_SHARE, up to sampling noise (4096 draws: sd of the share about 0.004)
    assert abs(float(held.float().mean()) - 1 / HELD_OUT_SHARE) < 0.02
    assert not torch.equal(input_keys(inputs[:, :7]), input_keys(inputs[:, 1:]))


@pytest.mark.parametrize(("name", "length", "expected"), [
    ("parity_check", 3, False),  # 8 binary inputs: nothing to hold out
    ("parity_check", 8, True),  # 256 inputs, about 32 held out
    ("copy", 8, True),
])
def test_a_length_is_split_only_where_its_held_out_part_has_enough_inputs(name, length, expected):
    assert tasks.get(name).is_split(length) is expected


@pytest.mark.parametrize("name", ["parity_check", "even_pairs", "cycle_navigation", "copy"])
def test_no_held_out_input_of_the_fit_check_is_ever_trained_on(name):
    """The defect: on binary tasks v2's 128 held-out examples at length 8 were drawn from 256 possible inputs,
    mostly ones the training stream also drew. Under v3 the two never share an input at a split length."""
    task = tasks.get(name)
    config = v3_config(train_min_len=max(1, task.min_length))
    held_out = {length: rows(inputs) for length, inputs, _ in fit_batch(task, config)}
    generator = torch.Generator().manual_seed(11)
    trained: dict[int, set] = {length: set() for length in held_out}
    for step in range(300):
        length = config.train_min_len + step % (config.train_max_len - config.train_min_len + 1)
        trained[length] |= rows(training_batch(task, config, length, generator).inputs)
    split = [length for length in held_out if task.is_split(length)]
    assert split, "at least the longest training length is split"
    for length in split:
        assert not held_out[length] & trained[length], f"length {length}"
        assert is_held_out(torch.tensor(sorted(held_out[length]))).all()


def missing_duplicate_inputs(length: int) -> torch.Tensor:
    """Every input of missing duplicate at an even ``length``: each half string, doubled, masked at each position."""
    half = length // 2
    strings = [[(k >> i) & 1 for i in range(half)] for k in range(2**half)]
    return torch.tensor([[2 if i == masked else bit for i, bit in enumerate(w + w)]
                         for w in strings for masked in range(length)])


def test_the_inputs_a_fit_check_draws_from_are_counted_exactly_where_they_are_fewer_than_its_examples():
    """The defect: at a split length of a small input space the held-out part holds a few distinct inputs (17
    for missing duplicate at length 8), so the check's 512 examples repeat them and one lucky check passes a
    model that is wrong on much of the length. The count is exact there: the enumerated space agrees."""
    missing = tasks.get("missing_duplicate")
    every = missing_duplicate_inputs(8)
    assert len(every) == 128 and len(rows(missing.sample(4096, 8, torch.Generator().manual_seed(0)).inputs)
                                      - rows(every)) == 0
    held = int(is_held_out(every).sum())
    assert missing.distinct_inputs(8, held_out=True) == held and held < FIT_V3["fit_examples"] // 16
    assert missing.distinct_inputs(8) == 128  # v2: the whole space, every input trained on
    parity = tasks.get("parity_check")
    bits = torch.tensor([[(k >> i) & 1 for i in range(8)] for k in range(256)])
    assert parity.distinct_inputs(8, held_out=True) == int(is_held_out(bits).sum())
    assert parity.distinct_inputs(3, held_out=True) == 8  # not split: the check draws from all 8 inputs
    assert tasks.get("copy").distinct_inputs(8, held_out=True) >= FIT_V3["fit_examples"]  # large: not resolved


def test_v2s_fit_check_shared_its_inputs_with_training_on_a_binary_task():
    """What v3 fixes, shown on v2's criterion: the same check without the split overlaps the training stream."""
    task = tasks.get("parity_check")
    config = TrainConfig(train_max_len=8, fit_every=10, seed=3)
    (_, inputs, _), = fit_batch(task, config)
    generator = torch.Generator().manual_seed(11)
    trained = set().union(*(rows(training_batch(task, config, 8, generator).inputs) for _ in range(100)))
    assert len(rows(inputs)) < 128 and rows(inputs) <= trained  # repeats among 256 inputs, every one trained on


def test_disjoint_training_batches_are_deterministic_and_keep_their_shape():
    task, config = tasks.get("copy"), v3_config()
    first = training_batch(task, config, 8, torch.Generator().manual_seed(5))
    again = training_batch(task, config, 8, torch.Generator().manual_seed(5))
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.targets, again.targets)
    assert first.inputs.shape == (config.batch_size, 8)
    assert torch.equal(task.solve(first.inputs), first.targets)


# --------------------------------------------------------------------------- every training length


def test_the_fit_set_has_512_held_out_examples_at_every_training_length_longest_first():
    task = tasks.get("reverse")
    held_out = fit_batch(task, v3_config())
    assert [length for length, _, _ in held_out] == [8, 7, 6, 5, 4, 3, 2, 1]
    assert all(inputs.shape == (512, length) for length, inputs, _ in held_out)


class CopyOracle(nn.Module):
    """Teacher-forced decoder copy, answered right at every input length except ``wrong_at``."""

    def __init__(self, wrong_at: int) -> None:
        super().__init__()
        self.wrong_at = wrong_at
        self.config = type("Config", (), {"arch": "decoder"})()
        self.vocab = tasks.model_vocab_size(tasks.get("copy"))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n, width = tokens.shape
        length = width // 2  # decoder copy renders [x, SEP, y[:-1]]: 2L positions
        predicted = torch.zeros(n, width, dtype=torch.long)
        predicted[:, length:] = tokens[:, :length] + (1 if length == self.wrong_at else 0)
        return nn.functional.one_hot(predicted % self.vocab, self.vocab).float()  # (N, T, V)


def test_a_model_wrong_at_a_shorter_training_length_has_not_fitted():
    """The defect: v2 checked only the longest training length, so 12 of its fitted runs scored below 0.90 at
    a shorter one (encoder sinusoidal reverse: 0.64 at length 6)."""
    task, model = tasks.get("copy"), CopyOracle(wrong_at=6)
    v2 = fit_batch(task, TrainConfig(train_max_len=8, fit_every=10))
    assert fit_accuracy(model, task, v2, torch.device("cpu"), 0.99) == 1.0
    v3 = fit_batch(task, v3_config())
    assert fit_accuracy(model, task, v3, torch.device("cpu"), 0.99) == 0.0
    assert fit_accuracy(CopyOracle(wrong_at=99), task, v3, torch.device("cpu"), 0.99) == 1.0


def test_training_under_the_v3_criterion_records_its_fields_and_stops_at_the_fit():
    task = tasks.get("majority")
    config = v3_config(steps=40, batch_size=16, fit_every=10, stop_at_fit=True, fit_threshold=0.05,
                       fit_examples=32)
    spec = make_spec("smoke", "t", {"task": "majority", "encoding": "none", "arch": "decoder", "seed": 0,
                                    "d_model": 16, "n_layers": 1, "n_heads": 2, **config.to_dict()})
    result = train(model_for(spec), task, config)
    assert result.fitted and result.steps_to_fit == 10 and result.stop_reason == "fit"
    assert {"fit_lengths": "all", "fit_disjoint": True, "fit_examples": 32}.items() <= config.to_dict().items()
    assert "fit_lengths" not in TrainConfig(fit_every=10).to_dict()  # v2 run ids are unchanged


@pytest.mark.parametrize("bad", [{"fit_lengths": "some"}, {"fit_disjoint": True, "fit_every": 0}])
def test_bad_fit_settings_are_refused(bad):
    with pytest.raises(ValueError, match="fit_"):
        TrainConfig(**{"fit_every": 10, **bad})


# --------------------------------------------------------------------------- the training context


@pytest.mark.parametrize(("task", "arch", "train_max_len", "expected"), [
    ("copy", "decoder", 8, 16),  # [x, SEP, y[:-1]]: v2 counted 17
    ("copy", "encoder", 8, 17),  # [x, SEP, blanks]
    ("majority", "decoder", 8, 9),
    ("charlm", "decoder", 32, 32),  # a window as it is: v2 counted 65
])
def test_the_training_context_is_the_rendered_training_sequence(task, arch, train_max_len, expected):
    spec = make_spec("standard", "t", {"task": task, "encoding": "fire", "arch": arch, "seed": 0,
                                       "train_max_len": train_max_len, "protocol": 3})
    assert spec.train_context() == expected == rendered_length(tasks.get(task), train_max_len, arch)
    v2 = make_spec("standard", "t", {"task": task, "encoding": "fire", "arch": arch, "seed": 0,
                                     "train_max_len": train_max_len, "protocol": 2})
    assert v2.train_context() == train_max_len + tasks.get(task).output_length(train_max_len) + 1
    assert "protocol" not in v2.resolved() and spec.resolved()["protocol"] == 3


@pytest.mark.parametrize("name", [f"{n}:rope" if encodings.wraps(n) else n for n in encodings.names()])
def test_every_encoding_is_built_with_the_rendered_training_context(name):
    """The defect: charlm encodings were built with twice the training context (FIRE's threshold, CoPE's table
    and the recorded train_len 65 for a window of 32), decoder tasks with one position too many."""
    for task, arch in [("charlm", "decoder"), ("copy", "decoder"), ("copy", "encoder")]:
        if arch == "encoder" and encodings.meta(name)["causal_only"]:
            continue
        spec = make_spec("standard", "t", {"task": task, "encoding": name, "arch": arch, "seed": 0,
                                           "train_max_len": 8, "protocol": 3})
        encoding = model_for(spec).encoding
        context = rendered_length(tasks.get(task), 8, arch)
        assert encoding.train_len == context, (task, arch)
        if name == "fire":
            assert float(encoding.init_threshold) == context
        if name == "cope":
            assert encoding.n_positions == context + 1


def test_suites_under_v2_keep_their_own_scale_when_another_suite_moves():
    """The extended and replication suites keep v2's scale until they are regenerated: each holds a copy, so that
    declaring the standard suite's v3 scale cannot change theirs."""
    from pebench import protocol

    for suite in ("extended", "replication"):
        assert {k: v for k, v in protocol.SCALES[suite].items() if k != "length_seed"} == protocol.SCALE_V2
    assert protocol.SCALES["replication"]["length_seed"] == 0
    scales = [protocol.SCALES[suite] for suite in ("standard", "extended", "replication")]
    assert len({id(scale) for scale in scales + [protocol.SCALE_V2]}) == 4


def test_the_standard_suite_of_v3_is_the_scale_the_width_pilot_chose():
    """Depth, width and caps come from the width pilot's committed outcome; no plateau stop; six seeds; the whole
    field; v3's fit criterion."""
    import json
    from pathlib import Path

    from pebench import protocol

    outcome = json.loads((Path(__file__).resolve().parent.parent / "results/pilots/width_pilot.json").read_text())
    v3 = protocol.STANDARD_V3  # as declared, whichever protocol is in force
    scale = v3["scale"]
    assert (scale["n_layers"], scale["d_model"]) == tuple(outcome["chosen"]) and scale["protocol"] == 3
    assert scale["fit_patience"] == 0 and {k: scale[k] for k in FIT_V3} == FIT_V3
    assert v3["task_steps"] == {(c["arch"], c["task"]): c["cap"] for c in outcome["caps"]}
    assert len(v3["seeds"]) == 6
    assert set(v3["encodings"]) == set(protocol.COMPARED_ENCODINGS + protocol.NEWER_ENCODINGS)
    # protocol v4 keeps v3's scale and caps (issue 66), beside its extension and the battery's new tasks
    v4 = protocol.STANDARD_V4
    assert {k: v for k, v in v4["scale"].items() if not k.startswith("extend_") and k != "protocol"} == {
        k: v for k, v in scale.items() if k != "protocol"}
    assert {key: cap for key, cap in v4["task_steps"].items() if key not in protocol.V4_BATTERY} == v3["task_steps"]


def test_the_standard_lm_trains_the_step_count_the_lm_step_pilot_chose():
    """The step count comes from the LM step pilot's committed outcome; under v2's declaration the LM is the
    800-step one the v2 reference was made with."""
    import json
    from pathlib import Path

    from pebench import protocol
    from pebench.plan.experiment import suite_runs

    outcome = json.loads((Path(__file__).resolve().parent.parent / "results/pilots/lm_step_pilot.json").read_text())
    assert outcome["steps"] == protocol.LM_STEPS["standard"]
    assert {spec.train.steps for spec in suite_runs("standard", ["lm_extrapolation"])} == {outcome["steps"]}
    with protocol.standard_v2():
        assert {spec.train.steps for spec in suite_runs("standard", ["lm_extrapolation"])} == {800}
    assert protocol.LM_STEPS["standard"] == outcome["steps"]  # restored


def test_the_committed_v2_reference_expands_again_under_standard_v2_and_the_protocol_is_restored():
    from pathlib import Path

    from pebench import protocol
    from pebench.cli import suite_run_ids
    from pebench.plan.experiment import suite_runs
    from pebench.store import load

    before = [spec.run_id for spec in suite_runs("standard")]
    with protocol.standard_v2():
        v2 = {spec.run_id for spec in suite_runs("standard")}
        assert protocol.SCALES["standard"] == protocol.SCALE_V2 and protocol.SEEDS["standard"] == [0, 1, 2]
    assert [spec.run_id for spec in suite_runs("standard")] == before  # restored
    assert len(v2) == 606 and not v2 & set(before)
    folder = Path(__file__).resolve().parent.parent / "results" / "standard"
    committed = set(load(folder)["run_id"])
    if "protocol" not in load(folder).columns:  # the v2 reference, until v3's replaces it
        assert committed == v2
        assert set(suite_run_ids(folder)) == v2  # what pebench report counts the folder's completeness against
    with pytest.raises(RuntimeError), protocol.standard_v2():
        raise RuntimeError("restored even when the block raises")
    assert [spec.run_id for spec in suite_runs("standard")] == before


def test_as_declared_changes_only_the_standard_suite_under_v2():
    from pebench import protocol
    from pebench.plan.experiment import suite_runs

    smoke, standard = ([spec.run_id for spec in suite_runs(suite)] for suite in ("smoke", "standard"))
    with protocol.as_declared("smoke", 2):
        assert [spec.run_id for spec in suite_runs("smoke")] == smoke
    for version in (protocol.SCALES["standard"]["protocol"], None):  # the version in force, or as now
        with protocol.as_declared("standard", version):
            assert [spec.run_id for spec in suite_runs("standard")] == standard
    with protocol.as_declared("standard", 2):
        assert len(suite_runs("standard")) == 606
    with protocol.as_declared("standard", 3):
        assert len(suite_runs("standard")) == 2040


def test_the_regeneration_sentence_counts_the_runs_of_the_next_reference(tmp_path):
    import shutil
    from pathlib import Path

    from pebench.plan.experiment import suite_runs
    from pebench.render.protocol_tables import regeneration_text
    from pebench.store import ResultsError, run_file_name

    results = tmp_path / "results"
    assert regeneration_text(results) == ""  # nothing regenerated
    raw = results / "next" / "standard" / "raw"
    raw.mkdir(parents=True)
    source = Path(__file__).resolve().parent.parent / "results" / "standard" / "raw"
    first = next(iter(source.iterdir()))
    specs = suite_runs("standard")
    for spec in specs[:3]:
        shutil.copy(first, raw / run_file_name(spec.run_id))  # only the names are counted
    (raw / run_file_name("0123456789abcdef")).write_bytes(b"")  # not a run of the suite: not counted
    text = regeneration_text(results)
    from pebench.protocol import PROTOCOL

    assert text.startswith(f"The standard reference is being regenerated under protocol v{PROTOCOL}: 3 of its "
                           f"{len(specs):,} runs are committed under `results/next/standard`")
    shutil.rmtree(raw)
    raw.symlink_to(source)
    with pytest.raises(ResultsError, match="symbolic link"):
        regeneration_text(results)


#: per task and length 1..12 (where the task is defined): [is_split, distinct_inputs, distinct_inputs held out], as
#: pebench.learn.heldout's separable and check_inputs (v2: disjoint=False; v3) computed them before issue 62
DISTINCT_INPUTS = Path(__file__).with_name("distinct_inputs.json")


@pytest.mark.long
def test_every_task_splits_and_counts_its_inputs_as_before():
    """The task answers its split and distinct-input count (the report asks it, not the training side): the same
    numbers as before on every registered task at lengths 1 to 12."""
    golden = json.loads(DISTINCT_INPUTS.read_text())
    assert set(golden) <= set(tasks.names())
    for name, lengths in golden.items():
        task = tasks.get(name)
        found = {str(n): [task.is_split(n), task.distinct_inputs(n), task.distinct_inputs(n, held_out=True)]
                 for n in map(int, lengths)}
        assert found == lengths, name
