"""What the terminal says (issue 39): compare on a partial rerun, refused suites, a fast and torch-free CLI
start, bare ``pebench``, ``show``'s lead table and filters, an interrupted ``tox -e bench``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_results import write_synthetic_results

import pebench
from pebench.analysis.compare import compare
from pebench.cli import main
from pebench.config import run_id_of
from pebench.store.run_file_check import configuration


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return write_synthetic_results(tmp_path_factory.mktemp("reference"))


def copy_without(source: Path, target: Path, drop) -> Path:
    """A copy of the results folder ``source`` without the run files whose first row ``drop`` picks."""
    (target / "raw").mkdir(parents=True)
    for path in (source / "raw").glob("*.csv"):
        if not drop(pd.read_csv(path).iloc[0]):
            shutil.copy(path, target / "raw" / path.name)
    return target


# --------------------------------------------------------------------------- compare


def test_a_partial_rerun_counts_cells_not_yet_run_apart_from_cells_that_do_not_reproduce(synthetic, tmp_path):
    # a sweep under way: seed 2 of length_extrapolation not run yet, no lm_extrapolation run at all
    local = copy_without(synthetic, tmp_path / "local", lambda first: first["experiment"] == "lm_extrapolation" or (
        first["experiment"] == "length_extrapolation" and first["seed"] == 2))
    comparison = compare(local, synthetic)
    # judged: the 8 order_sensitivity cells and the 4 rope_scaling variants, every seed run on both sides
    assert (comparison.n_reproduced, comparison.n_cells) == (12, 12)
    assert comparison.failing == []
    assert comparison.n_not_run == 6 + 3
    assert comparison.verdict.startswith("12 of 12 cells reproduce")
    assert "9 cells of the reference not yet run (6 of them partly)" in comparison.verdict
    assert not comparison.all_reproduce  # a partial rerun has not reproduced the reference (yet)
    assert set(comparison.only_reference["experiment"]) == {"lm_extrapolation"}
    partly = comparison.not_run[comparison.not_run["partly_run"]]
    assert set(partly["seeds_not_run"]) == {"2"}
    summary = comparison.summary()
    assert "not reproduced:" not in summary
    assert "  length_extrapolation/copy/alibi/decoder (seeds 2)" in summary


def test_a_seed_that_failed_in_the_rerun_is_judged_and_does_not_reproduce(synthetic, tmp_path):
    local = copy_without(synthetic, tmp_path / "local", lambda first: False)
    for path in (local / "raw").glob("*.csv"):
        frame = pd.read_csv(path)
        first = frame.iloc[0]
        if (first["experiment"], first["task"], first["encoding"], first["seed"]) == (
                "length_extrapolation", "copy", "alibi", 2):
            frame.iloc[:1].assign(status="failed", error="RuntimeError: boom").to_csv(path, index=False)
    comparison = compare(local, synthetic)
    assert comparison.n_not_run == 0 and comparison.n_cells == comparison.n_reproduced + 1
    assert any("copy/alibi/decoder" in line and "seeds 2 not completed on both sides" in line
               for line in comparison.failing), comparison.failing


def test_compare_of_a_partial_rerun_says_how_many_cells_are_not_yet_run_and_exits_1(synthetic, tmp_path, capsys):
    local = copy_without(synthetic, tmp_path / "local", lambda first: first["experiment"] == "lm_extrapolation")
    assert main(["compare", str(local), str(synthetic)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("verdict: ")
    assert "3 cells of the reference not yet run" in out.splitlines()[-1]


def test_a_smoke_folder_against_a_standard_one_is_refused_in_one_line(synthetic, tmp_path, capsys):
    smoke = tmp_path / "smoke"
    (smoke / "raw").mkdir(parents=True)
    for path in (synthetic / "raw").glob("*.csv"):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False).assign(suite="smoke")
        run_id = run_id_of(configuration(frame.iloc[0].to_dict()))  # a smoke run's id: the suite is configuration
        frame.assign(run_id=run_id).to_csv(smoke / "raw" / f"{run_id}.csv", index=False)
    assert main(["compare", str(smoke), str(synthetic)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "holds the smoke suite" in err and "the standard suite" in err


# --------------------------------------------------------------------------- a CLI that starts fast

ROOT = Path(__file__).resolve().parent.parent


def python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a new interpreter in the checkout (what a new ``pebench`` process imports)."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_cli_imports_neither_torch_nor_pandas_until_a_command_needs_them():
    done = python("import sys, pebench.cli; print(sorted({'torch', 'pandas', 'scipy', 'matplotlib'} & "
                  "set(sys.modules)))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_version_names_the_commit_without_loading_torch_or_pandas():
    done = python("import sys; from pebench.cli import version_text; print(version_text()); "
                  "print(sorted({'torch', 'pandas', 'scipy', 'matplotlib'} & set(sys.modules)))")
    assert done.returncode == 0, done.stderr
    version, loaded = done.stdout.strip().splitlines()
    assert version.startswith(f"pebench {pebench.__version__} (protocol ") and "commit " in version
    assert loaded == "[]"


def test_pebench_alone_prints_its_usage_commands_and_examples_and_exits_2(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: pebench")
    for text in ("list", "run", "report", "compare", "show", "examples:", "pebench run --suite smoke",
                 "docs/quickstart.md"):
        assert text in err


def test_help_ends_with_examples_and_where_the_docs_are(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "examples:" in out and "pebench compare results/local/standard results/standard" in out
    assert "docs/_build/html/index.html" in out


def test_list_suites_counts_the_runs_and_seeds_the_suites_build(capsys):
    """The listing counts run configs without building them (the paper suite takes a minute to build): the
    same numbers as the built run specs."""
    from pebench.cli import describe_run_seeds
    from pebench.plan.experiment import suite_runs

    assert main(["list", "suites"]) == 0
    listed = {line.split()[0]: line.split(None, 2)[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    for suite in ("smoke", "standard", "replication"):
        specs = suite_runs(suite)
        assert listed[suite] == [str(len(specs)), describe_run_seeds(specs)]


# --------------------------------------------------------------------------- an interrupted tox -e bench

#: a stand-in for the sweep: says it runs, and on Ctrl-C prints its resume line and exits 130 as pebench run does
SWEEP = """
import signal, sys, time
try:
    print("sweep: running", flush=True)
    time.sleep(60)
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("pebench: stopped by SIGINT: 3 of 606 runs saved; run tox -e bench again to resume", file=sys.stderr)
    sys.exit(130)
"""


def test_the_bench_stops_after_an_interrupted_step_and_exits_0(tmp_path, capsys):
    from pebench.bench import Step, run_steps

    marker = tmp_path / "report-ran"
    steps = [Step("run", (sys.executable, "-c", "raise SystemExit(130)")),
             Step("report", (sys.executable, "-c", f"open({str(marker)!r}, 'w')"))]
    assert run_steps(steps, closing="CLOSING") == 0
    assert not marker.exists() and "CLOSING" not in capsys.readouterr().out
    # interrupted in a later step: one line saying how to finish
    assert run_steps([Step("report", (sys.executable, "-c", "raise SystemExit(130)"))]) == 0
    assert "stopped during its report step" in capsys.readouterr().err


def test_a_failing_step_fails_the_bench_and_a_verdict_of_compare_does_not(capsys):
    from pebench.bench import Step, run_steps

    compare_fails = [Step("run", (sys.executable, "-c", "pass")),
                     Step("compare", (sys.executable, "-c", "raise SystemExit(1)"), must_succeed=False)]
    assert run_steps(compare_fails, closing="CLOSING") == 0 and "CLOSING" in capsys.readouterr().out
    assert run_steps([Step("report", (sys.executable, "-c", "raise SystemExit(3)")),
                      Step("compare", (sys.executable, "-c", "pass"), must_succeed=False)], "CLOSING") == 3


def test_bench_steps_resume_the_standard_suite_then_report_build_and_compare():
    from pebench.bench import bench_steps

    steps = bench_steps("results/local/standard", 2, ["--device", "cpu"])
    assert [s.name for s in steps] == ["run", "report", "site", "compare"]
    assert steps[0].argv[-6:] == ("--workers", "2", "--out", "results/local/standard", "--device", "cpu")
    assert [s.must_succeed for s in steps] == [True, True, True, False]


def test_ctrl_c_at_a_terminal_reaches_the_bench_and_not_the_tox_that_runs_it(tmp_path):
    """The terminal's Ctrl-C goes to its foreground process group. The bench takes the foreground for a group of
    its own, so that its parent (tox, here a stand-in that reports a SIGINT it receives) is not interrupted: the
    sweep prints its resume line, the later steps are skipped, the bench exits 0, tox reports no failure."""
    import fcntl
    import os
    import select
    import termios
    import time

    bench = tmp_path / "bench.py"
    bench.write_text(
        "import sys\nfrom pebench.bench import Step, run_steps, terminal_foreground\n"
        f"SWEEP = {SWEEP!r}\n"
        "with terminal_foreground() as took:\n"
        "    print('foreground taken:', took, flush=True)\n"
        "    status = run_steps([Step('run', (sys.executable, '-c', SWEEP)),\n"
        "                        Step('report', (sys.executable, '-c', 'print(\"REPORT RAN\")'))], 'CLOSING')\n"
        "sys.exit(status)\n")
    tox = tmp_path / "tox.py"
    tox.write_text(
        "import signal, subprocess, sys\n"
        "caught = []\n"
        "signal.signal(signal.SIGINT, lambda *_: caught.append(1))\n"
        f"status = subprocess.call([sys.executable, {str(bench)!r}])\n"
        "print(f'tox: bench exited {status}, tox interrupted: {bool(caught)}', flush=True)\n")
    main_fd, terminal_fd = os.openpty()

    def controlling_terminal() -> None:  # the new session's terminal, as a shell's is
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen([sys.executable, str(tox)], stdin=terminal_fd, stdout=terminal_fd,
                               stderr=terminal_fd, start_new_session=True, preexec_fn=controlling_terminal,
                               cwd=ROOT)
    os.close(terminal_fd)
    output, sent, deadline = b"", False, time.monotonic() + 120
    while time.monotonic() < deadline:
        if not sent and b"sweep: running" in output:
            os.write(main_fd, b"\x03")  # Ctrl-C, as typed
            sent = True
        if select.select([main_fd], [], [], 0.1)[0]:
            try:
                chunk = os.read(main_fd, 4096)
            except OSError:  # the terminal closed: every process of the session has ended
                break
            if not chunk:
                break
            output += chunk
        if process.poll() is not None and not select.select([main_fd], [], [], 0.2)[0]:
            break
    os.close(main_fd)
    process.wait(timeout=30)
    text = output.decode(errors="replace")
    assert sent, text
    assert "foreground taken: True" in text
    assert "run tox -e bench again to resume" in text
    assert "REPORT RAN" not in text and "CLOSING" not in text
    assert "tox: bench exited 0, tox interrupted: False" in text


# --------------------------------------------------------------------------- the version


def test_the_package_version_follows_the_protocol_and_rows_keep_theirs(tmp_path):
    """pebench 3.x makes protocol-3 runs; a report cites the version that made its rows, not the one reporting."""
    import pebench
    from pebench.protocol import PROTOCOL
    from pebench.report import citation_bibtex

    assert pebench.__version__.split(".")[0] == str(PROTOCOL)
    assert "; pebench 0.1.0}" in citation_bibtex("standard", "v2-aaa7cfcc", [], made_with=["0.1.0"])
    assert f"; pebench {pebench.__version__}}}" in citation_bibtex("standard", "v3-0", [])


# --------------------------------------------------------------------------- show


@pytest.fixture(scope="module")
def reported(synthetic, tmp_path_factory) -> Path:
    """A copy of the synthetic folder with its report (tables/ and report.json) written into it."""
    from pebench.report import write_report

    folder = tmp_path_factory.mktemp("reported")
    shutil.copytree(synthetic / "raw", folder / "raw")
    if (synthetic / "manifest.json").exists():  # with the report declarations, where the folder records them
        shutil.copy(synthetic / "manifest.json", folder / "manifest.json")
    write_report(folder, folder)
    return folder


def test_show_leads_with_the_main_table_the_report_recorded(reported, tmp_path, capsys):
    import json

    folder = tmp_path / "reported"
    shutil.copytree(reported, folder)
    index = json.loads((folder / "report.json").read_text())
    index["main_table"] = "runs"  # a table the report wrote, named as report.json names its main table
    (folder / "report.json").write_text(json.dumps(index))
    main_table = folder / "tables" / "runs.md"
    assert main(["show", str(folder), "--width", "0"]) == 0
    out = capsys.readouterr().out
    assert f"(the table to cite: {main_table})" in out.splitlines()[0]
    assert main_table.read_text().strip() in out
    assert out.index("the table to cite") < out.index("Length extrapolation: fit and extrapolation per task (decoder)")


def test_show_leads_with_the_extrapolation_board_of_a_report_that_recorded_no_main_table(reported, tmp_path, capsys):
    import json

    older = tmp_path / "older"
    shutil.copytree(reported, older)
    index = json.loads((older / "report.json").read_text())
    index.pop("main_table", None)  # as reports written before it was recorded
    (older / "report.json").write_text(json.dumps(index))
    assert main(["show", str(older), "--width", "0"]) == 0
    assert capsys.readouterr().out.startswith(f"(the report of {older} names no main table;")
    # a folder of the reference: its report wrote the extrapolation board (the synthetic runs have no fit data)
    index["tables"].append({"name": "extrapolation_length_extrapolation", "title": "Length extrapolation: tiers",
                            "caption": "", "paths": {"md": "tables/extrapolation_length_extrapolation.md"}})
    (older / "report.json").write_text(json.dumps(index))
    (older / "tables" / "extrapolation_length_extrapolation.md").write_text("| Tier | Encoding |\n|---|---|\n")
    assert main(["show", str(older), "--width", "0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (f"Length extrapolation: tiers (the table to cite: "
                     f"{older / 'tables' / 'extrapolation_length_extrapolation.md'})")


def test_show_without_a_report_says_how_to_make_one_then_shows_the_tables(synthetic, capsys):
    assert main(["show", str(synthetic), "--width", "0"]) == 0  # unwrapped
    out = capsys.readouterr().out
    assert out.startswith(f"(no report of {synthetic} yet: pebench report {synthetic} writes its main table")
    assert "Length extrapolation: fit and extrapolation per task (decoder)" in out


def test_show_narrows_the_tables_to_the_tasks_encodings_and_metrics_asked_for(synthetic, capsys):
    assert main(["show", str(synthetic), "--task", "copy", "--encoding", "NoPE", "--encoding", "alibi",
                 "--metric", "ood_token_acc"]) == 0
    tables = capsys.readouterr().out.strip().split("\n\n")[1:]  # after the lead
    # the one table with copy's rows and OOD token accuracy; its marks are those of every encoding of copy
    assert len(tables) == 1
    assert tables[0].splitlines()[:6] == [
        "Length extrapolation: fit and extrapolation per task (decoder)",
        "Task  Encoding  OOD token acc  Seeds",
        "----  --------  -------------  -----",
        f"copy  NoPE      {tables[0].splitlines()[3][16:]}",
        f"      ALiBi     {tables[0].splitlines()[4][16:]}",
        "* best mean of its task; ~ not significantly worse (Welch t-test, Holm, alpha 0.05)"]


@pytest.mark.parametrize("option, name, close", [("--task", "cpy", "copy"), ("--encoding", "alibii", "alibi"),
                                                 ("--metric", "ood_tok_acc", "ood_token_acc")])
def test_show_refuses_a_name_no_table_shows_in_one_line_with_close_names(synthetic, capsys, option, name, close):
    assert main(["show", str(synthetic), option, name]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"Did you mean '{close}'" in err and name in err


def test_an_interrupt_before_the_sweep_starts_says_how_to_resume_the_bench(monkeypatch, capsys):
    from pebench import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_list", interrupted)
    monkeypatch.setenv("PEBENCH_RESUME_COMMAND", "tox -e bench")
    assert main(["list", "tasks"]) == 130
    assert capsys.readouterr().err == "pebench: interrupted; run tox -e bench again to resume\n"


def test_a_bench_that_leads_its_own_session_at_a_terminal_changes_nothing(tmp_path):
    """Run straight from a new session (``script -c``, a terminal multiplexer's pane), the bench already leads its
    process group: it keeps the terminal as it is instead of failing to make a group (PermissionError)."""
    import fcntl
    import os
    import termios

    script = tmp_path / "bench.py"
    script.write_text("import os\nfrom pebench.bench import terminal_foreground\n"
                      "with terminal_foreground() as took:\n"
                      "    print('took:', took, 'leads:', os.getpgrp() == os.getpid(), flush=True)\n")
    main_fd, terminal_fd = os.openpty()

    def controlling_terminal() -> None:  # the new session's terminal, as a shell's is
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.run([sys.executable, str(script)], stdin=terminal_fd, capture_output=True,
                             start_new_session=True, preexec_fn=controlling_terminal, cwd=ROOT, timeout=60, text=True)
    os.close(terminal_fd)
    os.close(main_fd)
    assert process.returncode == 0, process.stderr
    assert process.stdout == "took: False leads: True\n"
