"""The docs extension renders and does not analyse (issue 38, 8): what its page modules may import.

Every module of ``docs/_ext`` (the ``pebench_docs`` package, and the build's plumbing: ``mathml.py``, ``navtree.py``
and ``buildtree.py``) is parsed with :mod:`ast`, and
every ``import`` and ``from ... import`` in it, at module level or inside a function, is checked:

* ``pandas`` and ``scipy`` (and their submodules) are never imported: the extension reads ``report.json``,
  the registries and small files as they are, and computes no statistics.
* The analysis modules are never imported: every module that ``tests/test_architecture.py`` places in the
  analysis layer (``pebench.analysis.results``, ``pebench.analysis.leaderboard``, ``pebench.analysis.compare``,
  ``pebench.report`` with every submodule, ...), so a number the site shows is one ``pebench report`` wrote.
* No exception: what the site needs of a report lives outside the analysis, in modules that import neither
  pandas nor scipy: :mod:`pebench.store.report_file` (reading a folder's report, its artifacts and a rerun's reference),
  :mod:`pebench.render.results_text` (the words around the report's numbers) and :mod:`pebench.render.blocks`.
* The extension stays small enough to read as a renderer: under :data:`MAX_LINES` lines in all.
* Importing the extension in a fresh interpreter loads neither pandas nor scipy, through whatever library module
  it takes (matplotlib it may load: the teaching figures of :mod:`pebench.explain` draw with it).
* Relative imports (between the extension's own modules) are not checked. The API pages import every
  ``pebench`` module by name (``importlib.import_module``) for autodoc; that is no import of this rule.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from test_architecture import FLOORS

EXT = Path(__file__).resolve().parent.parent / "docs" / "_ext"
FORBIDDEN_PACKAGES = ("pandas", "scipy")
#: the analysis layer of DESIGN.md, as tests/test_architecture.py places pebench's modules in it
ANALYSIS = tuple(prefix for name, prefixes in FLOORS if name in ("analysis", "report") for prefix in prefixes)
#: the most lines the extension's modules may have in all (issue 38: the library computes, the site renders); 850
#: since issue 65 split the leaderboard into three pages (current boards, every table, archived protocols), whose
#: page plumbing (which folder's tables go on which page, copied downloads) lives here
MAX_LINES = 850
MODULES = sorted(EXT.rglob("*.py"))


def within(module: str, packages: tuple[str, ...]) -> bool:
    """Whether ``module`` is one of ``packages`` or a submodule of one."""
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def forbidden_imports(tree: ast.AST) -> list[str]:
    """Each import of ``tree`` that the rule of this module forbids, as ``line: what``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names
                      if within(alias.name, FORBIDDEN_PACKAGES + ANALYSIS)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module, names = node.module, {alias.name for alias in node.names}
            if within(module, FORBIDDEN_PACKAGES):
                found.append(f"{node.lineno}: from {module} import {', '.join(sorted(names))}")
            elif within(module, ANALYSIS):
                found.append(f"{node.lineno}: from {module} import {', '.join(sorted(names))}")
            elif module == "pebench":  # from pebench import results, leaderboard, ...
                found += [f"{node.lineno}: from pebench import {name}" for name in sorted(names)
                          if within(f"pebench.{name}", ANALYSIS)]
    return found


def test_the_extension_has_modules_to_check():
    assert EXT / "pebench_docs" / "__init__.py" in MODULES and len(MODULES) > 2
    assert {"pebench.report", "pebench.analysis"} <= set(ANALYSIS)


def test_the_extension_is_under_its_line_budget():
    package = sorted((EXT / "pebench_docs").glob("*.py"))
    lines = {path.name: len(path.read_text().splitlines()) for path in package}
    assert sum(lines.values()) < MAX_LINES, (f"docs/_ext/pebench_docs has {sum(lines.values())} lines ({lines}), "
                                             f"the limit is {MAX_LINES}: move what computes or words results into "
                                             "the library (pebench.render.results_text, pebench.store.report_file) and "
                                             "render it")


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.relative_to(EXT).as_posix())
def test_the_extension_imports_neither_pandas_scipy_nor_the_analysis(path):
    found = forbidden_imports(ast.parse(path.read_text(), filename=str(path)))
    assert not found, (f"{path.relative_to(EXT.parent.parent)} imports what the site may not compute with "
                       f"(tests/test_docs_extension.py says why): {found}; put the computation into pebench report "
                       "(report.json) or the library and render its result")


def test_the_rule_catches_each_kind_of_forbidden_import():
    source = ("import pandas as pd\nfrom scipy import stats\nfrom pebench.analysis import leaderboard\n"
              "def f():\n    from pebench.report.findings import headline\n"
              "    from pebench.report.freshness import current_report, write_report\n"
              "from pebench.report.fit import FOLDER\nfrom pebench import tasks\nfrom .common import shown\n"
              "from pebench.store.report_file import FOLDER\n")
    assert sorted(int(line.split(":")[0]) for line in forbidden_imports(ast.parse(source))) == [1, 2, 3, 5, 6, 7]


def test_importing_the_extension_loads_neither_pandas_nor_scipy():
    code = (f"import sys; sys.path.insert(0, {str(EXT)!r}); import pebench_docs; "
            f"print(sorted(m for m in {FORBIDDEN_PACKAGES!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=EXT.parent.parent)
    assert loaded.stdout.strip() == "[]", (f"importing the docs extension loads {loaded.stdout.strip()}: a library "
                                           "module it imports takes them at module level; move what the site needs "
                                           "into a module that does not")
