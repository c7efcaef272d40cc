"""No command runs code it was not given (issue 37): pebench's own experiments come from beside the package,
never from the folder a command runs in; a user's code comes only through ``--plugin`` or entry points, and
what a plugin registers never replaces what is registered already."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_untrusted_folders import small_results

import pebench
from pebench.cli import main
from pebench.plan import experiment

ROOT = Path(pebench.__file__).resolve().parent.parent


def planted_experiments(folder: Path, marker: Path) -> Path:
    """``folder/experiments/`` holding a script that would leave ``marker`` behind if anything imported it."""
    scripts = folder / "experiments"
    scripts.mkdir(parents=True, exist_ok=True)
    stem = "planted_" + "".join(c if c.isalnum() else "_" for c in folder.parent.name)  # one per test: never cached
    (scripts / f"{stem}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    return folder


# --------------------------------------------------------------------------- experiments from the package only


@pytest.mark.parametrize("command", ["report", "show", "compare"])
def test_commands_never_import_scripts_of_the_folder_they_run_in(command, tmp_path, monkeypatch, capsys):
    marker = tmp_path / "code_ran.txt"
    folder = planted_experiments(small_results(tmp_path / "download"), marker)
    monkeypatch.chdir(folder)
    argv = {"report": ["report", "."], "show": ["show", "."], "compare": ["compare", ".", "."]}[command]
    main(argv)
    capsys.readouterr()
    assert not marker.exists()


def test_run_never_imports_scripts_of_the_folder_it_runs_in(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "code_ran.txt"
    monkeypatch.chdir(planted_experiments(tmp_path / "project", marker))
    assert main(["run", "--suite", "smoke", "--dry-run", "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert not marker.exists()


def test_experiments_dir_is_the_one_beside_the_package_wherever_pebench_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(planted_experiments(tmp_path / "project", tmp_path / "code_ran.txt"))
    assert experiment.experiments_dir() == ROOT / "experiments"


def test_suites_keep_their_runs_in_a_project_with_its_own_experiments_folder(tmp_path):
    """A fresh process, as a user's: an unrelated ``experiments/`` in its working directory changes nothing."""
    project = planted_experiments(tmp_path / "project", tmp_path / "code_ran.txt")
    listing = subprocess.run([sys.executable, "-m", "pebench", "run", "--suite", "smoke", "--dry-run", "--out", "out"],
                             cwd=project, capture_output=True, text=True, check=True).stdout
    assert listing.splitlines()[-1] == f"{len(experiment.suite_runs('smoke'))} runs -> out"
    assert not (tmp_path / "code_ran.txt").exists()


def test_load_experiments_refuses_the_pilots_folder(tmp_path):
    before = experiment.EXPERIMENTS.names()
    with pytest.raises(ValueError, match="pilots"):
        experiment.load_experiments(ROOT / "pilots")
    copy = tmp_path / "pilots"
    copy.mkdir()
    (copy / "a_pilot.py").write_text(f"from pathlib import Path\nPath({str(tmp_path / 'ran')!r}).write_text('x')\n")
    with pytest.raises(ValueError, match="pilots"):
        experiment.load_experiments(copy)
    assert experiment.EXPERIMENTS.names() == before and not (tmp_path / "ran").exists()


def _inert(path: Path) -> bool:
    """Whether importing the script at ``path`` only imports names (an entry point such as
    ``experiments/throughput.py``: docstring, imports and an ``if __name__ == "__main__":`` block)."""
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.Expr) and node is body[0])
               or (isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)) for node in body)


def test_every_script_the_experiments_loader_imports_is_an_experiment():
    """Pilot scripts live in ``pilots/``, which is never loaded: every script :func:`load_experiments` imports
    registers an experiment (or is an inert entry point), and no module of ``pilots/`` is imported by it."""
    registry = experiment.load_experiments()
    registered = {Path(registry.get(name).script).resolve() for name in registry.names() if registry.get(name).script}
    scripts = [path for path in experiment.experiments_dir().glob("*.py") if not path.name.startswith("_")]
    assert [path.name for path in scripts if path.resolve() not in registered and not _inert(path)] == []
    pilots = {path.resolve() for path in (ROOT / "pilots").glob("*.py")}
    assert pilots and not pilots & registered
    # what loading the experiments imports, in a fresh interpreter (in this one another test may have
    # imported a pilot on purpose, e.g. to read its results)
    probe = ("import sys; from pebench.plan import experiment; experiment.load_experiments(); "
             "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {Path(line).resolve() for line in done.stdout.splitlines() if line}
    assert not pilots & loaded


def test_a_pilots_folder_inside_an_experiments_folder_is_never_loaded(tmp_path):
    """Only the experiment scripts directly in the folder are imported: a ``pilots/`` folder beside them (or any
    other subfolder) never becomes an experiment."""
    experiments = planted_experiments(tmp_path / "project", tmp_path / "experiment_ran") / "experiments"
    (experiments / "pilots").mkdir()
    (experiments / "pilots" / "a_pilot.py").write_text(
        f"from pathlib import Path\nPath({str(tmp_path / 'pilot_ran')!r}).write_text('x')\n")
    before = set(sys.modules)
    try:
        experiment.load_experiments(experiments)
        assert (tmp_path / "experiment_ran").exists() and not (tmp_path / "pilot_ran").exists()
    finally:
        for name in set(sys.modules) - before:  # the planted script, so that no other test sees it imported
            if name.startswith("pebench_experiments."):
                del sys.modules[name]


# --------------------------------------------------------------------------- one experiment per name

DUPLICATE = '''from pebench.plan.experiment import Experiment, register_experiment

register_experiment(Experiment(name="order_sensitivity", description="not the real one",
                               configs={"smoke": lambda: []}, script=__file__))
'''


def forget_plugins(monkeypatch) -> None:
    """As a new process starts: no plugin loaded yet (and those a test loads are forgotten after it, else every
    later sweep of the session would load them again)."""
    from pebench import registry

    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setattr(registry, "_RECORDS", {})


@pytest.fixture
def no_plugins(monkeypatch):
    forget_plugins(monkeypatch)


def test_a_plugin_cannot_replace_an_experiment(tmp_path, capsys, no_plugins):
    registered = experiment.load_experiments().get("order_sensitivity")
    plugin = tmp_path / "dup_experiment.py"
    plugin.write_text(DUPLICATE)
    assert main(["--plugin", str(plugin), "run", "--suite", "smoke", "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "experiment 'order_sensitivity' is registered twice" in err, err
    assert str(plugin) in err and "choose another name" in err
    assert experiment.EXPERIMENTS.get("order_sensitivity") is registered


def test_a_plugin_loaded_first_cannot_replace_an_experiment_either(tmp_path):
    """In a fresh process the plugin registers before pebench's own experiments are imported."""
    plugin = tmp_path / "dup_experiment.py"
    plugin.write_text(DUPLICATE)
    done = subprocess.run([sys.executable, "-m", "pebench", "--plugin", str(plugin), "run", "--suite", "smoke",
                           "--dry-run", "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "experiment 'order_sensitivity' is registered twice" in done.stderr


def test_importing_an_experiment_script_again_is_harmless():
    """``python experiments/NAME.py`` runs the script as ``__main__`` beside the copy load_experiments imported."""
    import importlib.util

    registered = experiment.load_experiments().get("rope_scaling")
    spec = importlib.util.spec_from_file_location("rope_scaling_again", ROOT / "experiments" / "rope_scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert experiment.EXPERIMENTS.get("rope_scaling") is registered
    assert module.EXPERIMENT.name == "rope_scaling"


# --------------------------------------------------------------------------- a plugin changed between invocations

ONE_CELL = ["run", "--suite", "smoke", "--experiment", "length_extrapolation", "--filter", "task=majority"]


def test_a_resume_with_a_changed_plugin_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    plugin, out = tmp_path / "my_plugin.py", tmp_path / "out"
    plugin.write_text("SCALE = 1.0\n")
    forget_plugins(monkeypatch)
    assert main(["--plugin", str(plugin), *ONE_CELL, "--filter", "encoding=none", "--out", str(out)]) == 0
    made = sorted((out / "raw").iterdir())
    plugin.write_text("SCALE = 2.0\n")
    forget_plugins(monkeypatch)
    capsys.readouterr()
    assert main(["--plugin", str(plugin), *ONE_CELL, "--filter", "encoding=none,alibi", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"plugin {plugin} changed since an earlier sweep in {out} loaded it" in err, err
    assert sorted((out / "raw").iterdir()) == made
    plugin.write_text("SCALE = 1.0\n")  # the recorded version again: resumed
    forget_plugins(monkeypatch)
    assert main(["--plugin", str(plugin), *ONE_CELL, "--filter", "encoding=none,alibi", "--out", str(out)]) == 0
    assert len(list((out / "raw").iterdir())) == 2


def test_a_worker_that_loaded_another_version_of_a_plugin_refuses_its_runs(tmp_path, monkeypatch):
    """A long-lived Dask worker loads a plugin once: a later sweep with an edited file must not use its old code."""
    from pebench import registry
    from pebench.plan.executors import PluginRefused, _execute_in_worker

    plugin = tmp_path / "worker_plugin.py"
    plugin.write_text("SCALE = 1.0\n")
    forget_plugins(monkeypatch)
    registry.load_plugin(str(plugin))  # what the worker loaded for an earlier sweep
    plugin.write_text("SCALE = 2.0\n")
    sweep = [{**record, "sha256": registry._sha256(plugin)} for record in registry.plugin_records()]
    spec = experiment.suite_runs("smoke", ["length_extrapolation"])[0]
    refused = _execute_in_worker([spec], "cpu", 1, False, sweep)  # returned, not raised: no worker log, no retry
    assert isinstance(refused, PluginRefused), refused
    assert f"plugin {plugin} on this worker is not the version the sweep loaded" in refused.message


def test_a_pool_worker_that_loads_another_version_of_a_plugin_stops_the_sweep(tmp_path, monkeypatch):
    """The file changed after this process loaded it: the workers it starts would run other code."""
    from pebench import registry
    from pebench.plan.runner import SweepError, run_sweep

    plugin = tmp_path / "pool_plugin.py"
    plugin.write_text("SCALE = 1.0\n")
    forget_plugins(monkeypatch)
    registry.load_plugin(str(plugin))
    plugin.write_text("SCALE = 2.0\n")
    specs = experiment.suite_runs("smoke", ["length_extrapolation"])[:1]
    with pytest.raises(SweepError, match=f"plugin {plugin} on this worker is not the version the sweep loaded"):
        run_sweep(specs, tmp_path / "out", executor="processes", workers=1, on_done=lambda spec, rows: None)
    assert not list((tmp_path / "out" / "raw").iterdir())
