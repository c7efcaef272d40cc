"""Provenance of the code that makes rows: the git state of the source checkout.

Standard library only, so ``pebench --version`` and anything else that only needs to name the code's commit
starts without torch, pandas or the registries (:mod:`pebench.store` re-exports both functions).
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any


def git_state(root: Path | None = None) -> dict[str, Any]:
    """Git sha and dirty flag of the source checkout (``root``, default the one that holds this
    package; ``None`` values outside git), and which files differ
    from the commit (``git_dirty_files``), so a reader can see whether the code that made the rows
    (``pebench/``, ``experiments/``) was among them.

    Dirty means a tracked file differs from the commit or an untracked, unignored code file exists
    (a ``.py`` file anywhere, or anything under ``pebench/`` or ``experiments/``): a new encoding
    file that the runs import is code the commit does not hold. Results (anything under ``results/``
    that is not code), tracked or not, are what runs write, not what they run, and do not count: a
    resumed sweep's own manifest, changed by its previous invocation, does not make it dirty.
    """
    root = root or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = sorted(line[3:] for line in status.splitlines()
                       if line.strip() and (_is_code(line[3:]) or not line.startswith("??")
                                            and not line[3:].startswith("results/")))
        return {"git_sha": sha, "git_dirty": bool(files), "git_dirty_files": files}
    except (OSError, subprocess.CalledProcessError):
        return {"git_sha": None, "git_dirty": None, "git_dirty_files": None}


def _is_code(path: str) -> bool:
    """Whether an untracked ``path`` (relative to the checkout) could change what a run computes."""
    return path.endswith(".py") or path.startswith(("pebench/", "experiments/"))


@functools.lru_cache(maxsize=1)
def code_commit() -> str:
    """The commit of the code that makes this process's rows (their ``commit`` column): the checkout's git sha,
    with ``+dirty`` when code differs from it (:func:`git_state`), ``unknown`` outside a git checkout (an
    installed package). Read once per process, when its first run is recorded."""
    state = git_state()
    if not state["git_sha"]:
        return "unknown"
    return state["git_sha"] + ("+dirty" if state["git_dirty"] else "")


def manifest_history(manifest: str, root: Path | None = None) -> list[tuple[str, str, str, str]]:
    """The commits that changed the results manifest ``manifest`` (a path relative to the checkout ``root``),
    newest first, as ``(short commit, date, code commit, subject)``: the code commit is the ``git_sha`` its
    latest invocation recorded (``""`` when it recorded none or cannot be read). Empty outside git."""
    root = root or Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    try:
        log = git("log", "--format=%h%x09%cs%x09%s", "--", manifest).strip().splitlines()
    except (OSError, subprocess.CalledProcessError):
        return []
    history = []
    for line in log:
        commit, date, subject = line.split("\t", 2)
        try:
            recorded = json.loads(git("show", f"{commit}:{manifest}"))
            code = (recorded.get("latest") or (recorded.get("invocations") or [{}])[-1]).get("git_sha", "")
        except (OSError, subprocess.CalledProcessError, ValueError):
            code = ""
        history.append((commit, date, code, subject))
    return history
