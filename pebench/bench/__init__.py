"""``tox -e bench`` as one process: rerun the standard suite, report it, build the site, compare with the reference.

Run as ``python -m pebench.bench [--workers N] [--out DIR] [pebench run options]`` (tox.ini's ``bench``
environment). Why one process: a terminal's Ctrl-C reaches every process of its foreground process group,
tox included, and tox then reports the environment as failed ("FAIL code -2 ... evaluation failed") whatever
the interrupted command did. This driver moves itself and its steps into a process group of their own that
holds the terminal's foreground (:func:`terminal_foreground`), so that Ctrl-C reaches the sweep and not tox:
the sweep saves its finished runs and prints its one resume line, the driver skips the steps after it and
exits 0, and the bench ends with that line and no failure banner. A step that fails on its own (a full disk,
a site that does not build) still fails the bench with its exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

#: the command that resumes an interrupted bench, named in the resume line (tox.ini sets it too)
RESUME_COMMAND = "tox -e bench"
#: the bench's last line when every step ran
CLOSING = ("pebench: the verdict is the line above. Site: docs/_build/html/index.html. Read first: "
           "docs/_build/html/_generated/results/standard-local-rerun.html (the per-cell comparison, cells that do "
           "not reproduce first; your figures under the reference ones)")
#: exit statuses of a step stopped by Ctrl-C or SIGTERM (128 + the signal's number)
INTERRUPTED = (128 + signal.SIGINT, 128 + signal.SIGTERM)


@dataclass(frozen=True)
class Step:
    """One step of the bench: what it is called, its command line, and whether its failure fails the bench
    (``pebench compare`` exits 1 when a cell does not reproduce: a finding the site shows, not a failure)."""

    name: str
    argv: tuple[str, ...]
    must_succeed: bool = True


def bench_steps(out: str, workers: int, run_options: Sequence[str] = (), reference: str = "results/standard",
                suite: str = "standard", plugins: Sequence[str] = ()) -> list[Step]:
    """The steps of ``tox -e bench``: run (or resume) ``suite`` into ``out``, report it, build the site (for the
    standard suite, whose rerun the site shows), compare with ``reference`` (last, so that its verdict is what the
    log ends with; a sample of the reference's runs, the quick suite, is compared on its own runs). ``plugins``:
    loaded by every step (``pebench --plugin``)."""
    pebench = (sys.executable, "-m", "pebench", *(part for plugin in plugins for part in ("--plugin", plugin)))
    site = [Step("site", (sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs",
                          "docs/_build/html"))] if suite == "standard" else []
    return [
        Step("run", (*pebench, "run", "--suite", suite, "--workers", str(workers), "--out", out, *run_options)),
        Step("report", (*pebench, "report", out)),
        *site,
        Step("compare", (*pebench, "compare", out, reference), must_succeed=False),
    ]


def evaluate_steps(encoding: str, plugins: Sequence[str], workers: int, options: Sequence[str] = ()) -> list[Step]:
    """``tox -e bench -- --encoding NAME [--plugin FILE]``: ``pebench evaluate`` of that encoding (its runs of the
    standard suite, then its verdict against the reference)."""
    loaded = [part for plugin in plugins for part in ("--plugin", plugin)]
    return [Step("evaluate", (sys.executable, "-m", "pebench", "evaluate", encoding, *loaded, "--workers",
                              str(workers), *options))]


@contextlib.contextmanager
def terminal_foreground() -> Iterator[bool]:
    """Run the block in a new process group that holds the terminal's foreground, when standard input is a
    terminal whose foreground is this process's group (else change nothing). Ctrl-C then reaches this process
    and its children only, not the parent (tox). The terminal goes back to the parent's group afterwards.
    A process that already leads its group (run straight from a new session, where it may not make another)
    has no parent in it to keep Ctrl-C from: it changes nothing. Yields whether it took the foreground."""
    try:
        terminal = sys.stdin.fileno()
        ours = os.isatty(terminal) and os.tcgetpgrp(terminal) == os.getpgrp() != os.getpid()
    except (OSError, ValueError, AttributeError):  # no stdin, a closed one, or not a terminal
        ours = False
    if not ours:
        yield False
        return
    parent_group = os.getpgrp()
    os.setpgid(0, 0)
    _give_terminal(terminal, os.getpgrp())
    try:
        yield True
    finally:
        _give_terminal(terminal, parent_group)


def _give_terminal(terminal: int, group: int) -> None:
    """Make ``group`` the terminal's foreground; a background process may do so only with SIGTTOU ignored."""
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(terminal, group)
    except OSError:  # the parent's group has gone (tox killed): nothing to give back to
        pass
    finally:
        signal.signal(signal.SIGTTOU, previous)


def run_steps(steps: Sequence[Step], closing: str = "", env: Mapping[str, str] | None = None) -> int:
    """Run ``steps`` in order (in the environment ``env``, default this process's), then print ``closing``;
    returns the bench's exit status: 0 when every step that must succeed did, or when Ctrl-C (or SIGTERM) stopped
    a step, whose own last line says how to resume (the steps after it and ``closing`` are skipped); else the exit
    status of the first step that failed."""
    env = dict(os.environ if env is None else env)
    for step in steps:
        status, interrupted = _wait(subprocess.Popen(step.argv, env=env))
        if interrupted or status in INTERRUPTED:
            if step.name != "run":  # the sweep prints its own resume line
                print(f"pebench: the bench stopped during its {step.name} step; the finished runs are saved: "
                      f"run {env.get('PEBENCH_RESUME_COMMAND') or RESUME_COMMAND} again to finish it",
                      file=sys.stderr)
            return 0
        if status and step.must_succeed:
            return status
    if closing:
        print(closing)
    return 0


def _wait(process: subprocess.Popen) -> tuple[int, bool]:
    """Wait for ``process`` to end, through Ctrl-C (the step, in the same group, gets it too and stops itself);
    returns its exit status and whether Ctrl-C was pressed meanwhile."""
    interrupted = False
    while True:
        try:
            return process.wait(), interrupted
        except KeyboardInterrupt:
            interrupted = True


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pebench.bench``: the bench's steps (:func:`bench_steps`) in the terminal's foreground."""
    parser = argparse.ArgumentParser(prog="python -m pebench.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="local worker processes of the sweep (default 2)")
    parser.add_argument("--suite", default="standard", help="the suite to rerun: standard, or quick (a sample of "
                                                              "its runs); default standard")
    parser.add_argument("--out", help="the rerun's results folder (default results/local/<suite>)")
    parser.add_argument("--encoding", help="instead, pebench evaluate this encoding: its standard runs and verdict")
    parser.add_argument("--plugin", action="append", default=[], help="the file or module that registers --encoding")
    args, run_options = parser.parse_known_args(argv)
    env = {"PEBENCH_RESUME_COMMAND": RESUME_COMMAND, **os.environ}  # the sweep's resume line names it; this
    # process's environment is left as it is (a caller's later sweeps say "the same command")
    if args.encoding:
        out = ["--out", args.out] if args.out else []
        steps, closing = evaluate_steps(args.encoding, args.plugin, args.workers, [*out, *run_options]), ""
    else:
        out = args.out or f"results/local/{args.suite}"
        steps = bench_steps(out, args.workers, run_options, suite=args.suite, plugins=args.plugin)
        closing = CLOSING if args.suite == "standard" else "pebench: the verdict is the line above"
    with terminal_foreground():
        return run_steps(steps, closing, env)

