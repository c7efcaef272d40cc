"""``pebench verify FOLDER [--sample N] [--seed S] [--device D]``: rerun a sample of a results folder's runs and say
whether they reproduce (:mod:`pebench.plan.verify`). Exit 0 when every sampled run reproduces and no run file is
tampered or damaged, 1 otherwise, 2 on bad input (one line)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from pebench.render.tables import terminal_text

if TYPE_CHECKING:
    from pebench.store.verification import RunCheck


def add_verify(sub: argparse._SubParsersAction) -> None:
    """``pebench verify``'s arguments (nothing heavy imported: every command builds the parser)."""
    p = sub.add_parser("verify", help="rerun a sample of a results folder's runs: do they reproduce? (exit 1 if not)",
                       description="Verify every run file of a results folder (checksum, completeness, run id), "
                                   "then rerun a seeded sample of its completed runs, spread over tasks, encodings "
                                   "and architectures, in a temporary folder, and compare: exactly on the machine "
                                   "and torch build that made a run, otherwise within a declared margin of its mean "
                                   "token accuracy in and out of distribution (docs: extending). Runs of a "
                                   "plugin's encoding need that plugin: pebench --plugin FILE verify FOLDER.")
    p.add_argument("folder", metavar="FOLDER", help="a results folder (containing raw/)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="how many completed runs to rerun (default: pebench.store.verification.DEFAULT_SAMPLE, 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the choice of runs (default 0)")
    p.add_argument("--device", help="torch device of the reruns (default: the kind each run was made on, where "
                                    "this machine has one, else cpu)")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    """Print one line per tampered file and per rerun run, then the verdict; return the exit status."""
    from pebench.cli import EXIT_FAILED_RUNS, EXIT_OK, UsageError
    from pebench.plan.verify import plan_verification, verify
    from pebench.store.verification import DEFAULT_SAMPLE

    sample = DEFAULT_SAMPLE if args.sample is None else args.sample
    if sample < 1:
        raise UsageError(f"--sample must be >= 1, got {sample}")
    plan = plan_verification(args.folder, sample, args.seed)
    for line in plan.folder.bad:
        print(terminal_text(line))
    print(f"rerunning {len(plan.sample)} of the {len(plan.folder.completed)} completed runs of "
          f"{terminal_text(args.folder)} (seed {args.seed}) in a temporary folder")
    sys.stdout.flush()

    def said(check: RunCheck) -> None:
        print(terminal_text(check.line()))
        sys.stdout.flush()

    outcome = verify(plan, args.device, on_check=said)
    print(terminal_text(outcome.verdict))
    return EXIT_OK if outcome.ok else EXIT_FAILED_RUNS
