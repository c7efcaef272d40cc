"""Golden run ids of the committed standard suite.

A run id is the hash of a run's resolved configuration, and the committed reference results in
``results/standard/raw/`` are named by it: a change to a spec, a default, a grid or the hashing that
moves any id silently orphans the reference (a rerun would no longer resume, and ``pebench compare``
would find no matching cells). These tests pin ids copied from the committed file names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pebench.plan.experiment import suite_runs
from pebench.store import raw_files, read_run_file, run_file_id, run_file_name

RESULTS = Path(__file__).resolve().parent.parent / "results"
RAW = RESULTS / "standard" / "raw"

# protocol -> (experiment, task, encoding, arch, seed) -> run id, copied from the file names of the reference
# made under that protocol (REFERENCES says where it lies)
GOLDEN = {
    2: {
        ("length_extrapolation", "copy", "none", "decoder", 0): "ab0657f33c96a7c1",
        ("length_extrapolation", "reverse", "randomized:rope", "decoder", 2): "84c58aa6f45e2561",
        ("length_extrapolation", "copy", "alibi", "encoder", 1): "023b7cdbe28049b0",
        ("length_extrapolation", "majority", "t5", "encoder", 1): "947928b61e1b41df",
        ("length_extrapolation", "even_pairs", "randomized:rope", "encoder", 2): "dac4afd50ba1afec",
        ("lm_extrapolation", "charlm", "rope", "decoder", 0): "c81c50937a27c586",
        ("lm_extrapolation", "charlm", "randomized:rope", "decoder", 2): "6f8aad47cca364d9",
        ("rope_scaling", "copy", "rope", "decoder", 1): "812deaab6e0cca2c",
    },
    3: {  # six seeds, the whole field, the LM's declared steps
        ("length_extrapolation", "reverse", "randomized:rope", "decoder", 2): "f49d10558c68854e",
        ("length_extrapolation", "duplicate", "none", "decoder", 0): "42f7fa89c7cf8120",
        ("length_extrapolation", "reverse", "alibi", "encoder", 1): "3c1314e5d399dd6b",
        ("length_extrapolation", "selective_copy", "t5", "decoder", 5): "90742e07e446323f",
        ("length_extrapolation", "parity_check", "kerple_log", "decoder", 3): "ba1df1274851900c",
        ("length_extrapolation", "odds_first", "cope", "decoder", 4): "7b8ba39d6b8397c0",
        ("lm_extrapolation", "charlm", "rope", "decoder", 0): "fb4df8c9fc85f0e9",
        ("lm_extrapolation", "charlm", "randomized:rope", "decoder", 2): "e7a2d6842309c783",
    },
    4: {  # two seeds, the mechanisms of 2025-26, the decoder battery's new tasks, runs extended at their cap
        ("length_extrapolation", "flip_flop", "fox", "decoder", 0): "0482b6585569f452",
        ("length_extrapolation", "passkey", "pope", "decoder", 0): "150b879accef72ce",
        ("length_extrapolation", "stack_manipulation", "rope", "decoder", 0): "5933b46426ef67e9",
        ("length_extrapolation", "odds_first", "ssmax:rope", "decoder", 0): "395e1cbfba4b18db",
        ("length_extrapolation", "copy", "canon", "encoder", 0): "e2bda98636026c88",
        ("length_extrapolation", "selective_copy", "learned", "decoder", 1): "9b5686c433893bc5",
        ("lm_extrapolation", "charlm", "irope", "decoder", 1): "d22ea6487eeecb83",
        ("rope_scaling", "copy", "rope", "decoder", 0): "f5275acd9db769e9",
    },
}
# where the reference of each protocol lies, in order: a new protocol's reference is made into its own folder
# (results/next/standard for v3, results/v4/standard for v4) and then replaces results/standard, whose reference
# moves to the archive (docs/protocol.md)
REFERENCES = {2: ["standard", "archive/v2/standard"], 3: ["standard", "next/standard", "archive/v3/standard"],
              4: ["standard", "v4/standard"]}
CASES = [pytest.param(version, run, run_id, id=f"v{version}-" + "-".join(map(str, run)))
         for version, golden in GOLDEN.items() for run, run_id in golden.items()]


def recorded_protocol(folder: Path) -> int:
    """The protocol of the runs of a results ``folder`` (run files without a ``protocol`` column predate protocol
    v3: v2)."""
    from pebench.store import first_rows
    from pebench.store.schema import recorded_protocols

    (version,) = recorded_protocols(first_rows(folder, ["experiment", "protocol"]))  # a folder has one
    return version


def reference_folder(version: int) -> Path:
    """The committed folder of the standard suite's reference made under protocol ``version``."""
    for name in REFERENCES[version]:
        folder = RESULTS / name
        if raw_files(folder / "raw") and recorded_protocol(folder) == version:
            return folder
    raise AssertionError(f"no committed standard reference under protocol {version} in {REFERENCES[version]}")


SPECS: dict[int, list] = {}


def runs_of(version: int) -> list:
    """The standard suite's runs as declared under protocol ``version`` (expanded once per test process)."""
    from pebench.protocol import as_declared

    if version not in SPECS:
        with as_declared("standard", version):
            SPECS[version] = suite_runs("standard")
    return SPECS[version]


@pytest.fixture(scope="module")
def specs():
    """The standard suite's runs under the protocol the committed reference records."""
    return runs_of(recorded_protocol(RAW.parent))


def key(spec) -> tuple:
    return spec.experiment, spec.task, spec.encoding, spec.arch, spec.seed


@pytest.mark.parametrize(("version", "run", "run_id"), CASES)
def test_standard_suite_produces_the_golden_run_id(version, run, run_id):
    assert [spec.run_id for spec in runs_of(version) if key(spec) == run] == [run_id]


@pytest.mark.parametrize(("version", "run", "run_id"), CASES)
def test_golden_ids_name_the_committed_files_of_those_runs(version, run, run_id):
    """The literals above are what the committed files hold (guards the test's own data)."""
    rows = read_run_file(reference_folder(version) / "raw" / run_file_name(run_id))
    columns = ["experiment", "task", "encoding", "arch", "seed", "run_id"]
    assert {tuple(row) for row in rows[columns].itertuples(index=False)} == {(*run, run_id)}


@pytest.mark.parametrize("version", sorted(REFERENCES))
def test_every_committed_file_is_a_run_of_the_standard_suite(version):
    """No committed run file is orphaned: each is a run the standard suite produces now, under the protocol of
    the reference that holds it."""
    committed = {run_file_id(path) for path in raw_files(reference_folder(version) / "raw")}
    ids = {spec.run_id for spec in runs_of(version)}
    assert committed, f"no run files in {reference_folder(version)}"
    assert len(ids) == len(runs_of(version))
    assert committed <= ids, f"committed files no spec produces: {sorted(committed - ids)}"


def test_an_incomplete_reference_says_so_on_the_site(specs):
    """While the reference is being regenerated (a resumable sweep over sessions), the results page and the
    index say how many runs are missing and how to finish them; a complete one says it is complete."""
    import sys

    sys.path.insert(0, str(RAW.parent.parent.parent / "docs" / "_ext"))
    from pebench_docs.results_pages import completeness

    missing = {spec.run_id for spec in specs} - {run_file_id(path) for path in raw_files(RAW)}
    status = completeness(RAW.parent)
    if missing:
        assert f"**Incomplete:** {len(missing)} of the {len(specs)} runs" in status
    else:
        assert status == f"The folder holds every one of the {len(specs)} runs of the `standard` suite."


@pytest.mark.parametrize("suite", ["extended", "replication"])
def test_every_committed_file_of_a_suite_run_over_sessions_is_a_run_it_produces(suite):
    """The extended and replication suites are committed as they complete and resumed in later sessions:
    a committed file no spec produces would be orphaned (the resumed sweep could not skip it)."""
    raw = RAW.parent.parent / suite / "raw"
    committed = {run_file_id(path) for path in raw_files(raw)}
    assert committed and committed <= {spec.run_id for spec in suite_runs(suite)}
