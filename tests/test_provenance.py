"""The history of a committed results manifest (:func:`pebench.store.provenance.manifest_history`)."""

from __future__ import annotations

import json
import subprocess

from pebench.store.provenance import manifest_history


def test_manifest_history_names_each_commit_of_a_manifest_with_the_code_its_latest_run_recorded(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    manifest = tmp_path / "results" / "standard" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"invocations": [{"git_sha": "a" * 40}]}))
    git("add", ".")
    git("commit", "-q", "-m", "First reference: made at a")
    manifest.write_text(json.dumps({"latest": {"git_sha": "b" * 40}, "invocations": [{"git_sha": "c" * 40}]}))
    git("commit", "-q", "-am", "Regenerated")
    history = manifest_history("results/standard/manifest.json", tmp_path)
    assert [(code, subject) for _, _, code, subject in history] == [("b" * 40, "Regenerated"),
                                                                    ("a" * 40, "First reference: made at a")]
    assert manifest_history("results/none.json", tmp_path) == []
