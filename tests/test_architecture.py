"""pebench's import graph (issue 38, 9): no cycle, no function-level import that hides an arrow between pebench
modules, and DESIGN.md's layering (the analysis never imports the run layer, nor the plan beyond the report
declaration's type).

The graph is read from the source with :mod:`ast` (nothing is imported): a node per module of the ``pebench``
package, an arrow per import of another pebench module, at module level (``TYPE_CHECKING`` blocks included)
or inside a function (a *lazy* import).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pebench

PACKAGE = Path(pebench.__file__).resolve().parent

#: the whiteboard: pebench's floors, bottom-up, one line per folder (DESIGN.md's layout; the Extending page's
#: "Where things live" table is checked against it). A module may import from its own floor and the floors below.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("pebench", "pebench.registry", "pebench.metrics", "pebench.config", "pebench.protocol",
                "pebench.report_spec", "pebench.lazy_torch")),
    ("leaves", ("pebench.encodings", "pebench.tasks")),
    ("model", ("pebench.model",)),
    ("learn", ("pebench.learn",)),
    ("explain", ("pebench.explain",)),
    ("store", ("pebench.store",)),
    ("plan", ("pebench.plan",)),
    ("analysis", ("pebench.analysis",)),
    ("render", ("pebench.render",)),
    ("report", ("pebench.report",)),
    ("bench", ("pebench.bench",)),
    ("cli", ("pebench.cli", "pebench.__main__")),
)
#: the most modules ``pebench/`` may hold at its top level (issue 62: ``ls pebench/`` says where things live)
MAX_TOP_LEVEL = 12


def floor(module: str) -> int:
    """The floor of ``module`` (its index in :data:`FLOORS`): that of the longest package or module it is in."""
    places = [(len(prefix), index) for index, (_, prefixes) in enumerate(FLOORS) for prefix in prefixes
              if module == prefix or (prefix != "pebench" and module.startswith(prefix + "."))]
    return max(places)[1] if places else -1


#: floors that never import another, though it is below them: a report needs no experiment script (a results
#: folder records what its experiments declared, :mod:`pebench.report_spec`), and the statistics run none
NEVER: tuple[tuple[str, str], ...] = (("analysis", "plan"), ("report", "plan"))


#: function-level imports of pebench modules that stay, each with its reason ("*": any pebench module)
LAZY_ALLOWED: dict[tuple[str, str], str] = {
    ("pebench.cli", "*"): "a command imports what it needs, so that `pebench --version` and `pebench list` start "
                          "without torch (issue 39)",
    ("pebench.cli.verify", "*"): "the same for `pebench verify`, whose arguments every command's parser holds",
    ("pebench.cli.evaluate", "*"): "the same for `pebench evaluate`, whose arguments every command's parser holds",
    ("pebench.protocol", "pebench.tasks"): "the protocol is data that the package's version reads; only "
                                           "task_steps needs a task (and torch)",
    ("pebench.encodings", "pebench.encodings.base"): "the base class needs torch, and listing the encodings does "
                                                     "not: it is imported by the first registration or lookup",
    ("pebench.tasks.floors", "pebench.tasks"): "the tasks package imports floors after its registry; a floor of a "
                                               "task given by name needs that registry",
}

@dataclass(frozen=True)
class Arrow:
    """One import of ``target`` by ``source`` (pebench modules), at ``line``; ``lazy``: inside a function."""

    source: str
    target: str
    names: tuple[str, ...]
    line: int
    lazy: bool


def module_name(path: Path) -> str:
    """``pebench/report/fit.py`` -> ``pebench.report.fit``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The pebench module ``name`` (a module, or a name inside one) refers to; None outside pebench."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


class _Imports(ast.NodeVisitor):
    """The arrows of one module's source."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package, self.depth, self.arrows = module, is_package, 0, []

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, (), node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.module if self.is_package else self.module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:  # `from pebench import tasks` names a module, `from pebench.x import y` a name in it
            submodule = _resolve(f"{base}.{alias.name}")
            target = submodule if submodule == f"{base}.{alias.name}" else base
            self._add(target, (alias.name,), node.lineno)

    def _add(self, name: str, names: tuple[str, ...], line: int) -> None:
        target = _resolve(name) if name.split(".")[0] == "pebench" else None
        if target is not None and target != self.module:
            self.arrows.append(Arrow(self.module, target, names, line, self.depth > 0))


def arrows() -> list[Arrow]:
    """Every import of a pebench module by another, in every module of the package."""
    found = []
    for module, path in MODULES.items():
        visitor = _Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(), str(path)))
        found += visitor.arrows
    return found


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _registration(arrow: Arrow) -> bool:
    """A module of a registry package importing its package (``encodings.alibi`` -> ``encodings``): the package
    imports its modules by name to fill its registry, an arrow the graph does not hold the other way."""
    return arrow.source.startswith(arrow.target + ".") and MODULES[arrow.target].name == "__init__.py"


# --------------------------------------------------------------------------- the checks


def test_every_module_has_a_floor():
    assert [module for module in MODULES if floor(module) < 0] == []


def test_the_top_level_holds_at_most_twelve_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


#: the functions issue 62 named for their length, and where they live: each stays under :data:`MAX_STEP_LINES`
#: lines, a sequence of named steps (ruff's C901 bounds every function's complexity; this bounds these three's length)
LONG_ONCE = {"make_parser": "cli/__init__.py", "run_sweep": "plan/runner.py", "write_report": "report/write.py"}
MAX_STEP_LINES = 60


def test_the_entry_points_once_long_stay_under_sixty_lines():
    lengths = {}
    for name, path in LONG_ONCE.items():
        tree = ast.parse((PACKAGE / path).read_text())
        (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
        lengths[name] = node.end_lineno - node.lineno + 1
    assert {name: n for name, n in lengths.items() if n >= MAX_STEP_LINES} == {}


def test_the_import_graph_has_no_cycle():
    """Lazy imports count: a cycle closed inside a function is a cycle."""
    edges = {(arrow.source, arrow.target) for arrow in arrows() if not _registration(arrow)}
    assert cycles(edges) == []


def test_no_function_level_import_hides_an_arrow():
    hidden = [f"{arrow.source}:{arrow.line} imports {arrow.target}" for arrow in arrows() if arrow.lazy
              and (arrow.source, "*") not in LAZY_ALLOWED and (arrow.source, arrow.target) not in LAZY_ALLOWED]
    assert hidden == []


def test_lazy_imports_allowed_are_still_there():
    """An allowed lazy import that is gone leaves its entry (and its reason) behind: remove it."""
    lazy = {(arrow.source, arrow.target) for arrow in arrows() if arrow.lazy}
    lazy |= {(source, "*") for source, _ in lazy}
    assert [pair for pair in LAZY_ALLOWED if pair not in lazy] == []


def test_each_floor_imports_only_its_own_and_the_floors_below():
    name = {index: floor_name for index, (floor_name, _) in enumerate(FLOORS)}
    wrong = [f"{arrow.source} ({name[floor(arrow.source)]}) imports {arrow.target} ({name[floor(arrow.target)]})"
             for arrow in arrows() if floor(arrow.target) > floor(arrow.source)
             and (arrow.source, arrow.target) not in LAZY_ALLOWED]
    assert wrong == []


def test_the_analysis_and_the_report_never_import_the_plan():
    """Analysis never runs an experiment script: what an experiment declared comes from :mod:`pebench.report_spec`."""
    name = {index: floor_name for index, (floor_name, _) in enumerate(FLOORS)}
    wrong = [f"{arrow.source}:{arrow.line} imports {', '.join(arrow.names) or 'the module'} from {arrow.target}"
             for arrow in arrows() if (name[floor(arrow.source)], name[floor(arrow.target)]) in NEVER]
    assert wrong == []


def test_the_floors_keep_the_core_apart():
    """The leaves never import the model, the model never imports learning: floors hold it, checked here by name."""
    assert floor("pebench.encodings.rope") < floor("pebench.model") < floor("pebench.learn.train")
    assert floor("pebench.tasks.copy") < floor("pebench.model")


def test_the_graph_reader_sees_every_kind_of_import():
    """The reader itself: module-level, lazy, relative and ``from pebench import module`` imports."""
    source = ("from pebench import tasks\nfrom pebench.model import build_model\nfrom . import metrics\n"
              "from .tasks import base\n"
              "def f():\n    import pebench.learn.train\n    from pebench.plan.experiment import RunSpec\n")
    visitor = _Imports("pebench.protocol", is_package=False)
    visitor.visit(ast.parse(source))
    assert [(a.target, a.lazy) for a in visitor.arrows] == [
        ("pebench.tasks", False), ("pebench.model", False), ("pebench.metrics", False), ("pebench.tasks.base", False),
        ("pebench.learn.train", True), ("pebench.plan.experiment", True)]
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]


def test_what_listings_and_run_specs_read_imports_no_torch():
    """``pebench list`` computes every listing but the protocol's constants without torch (issue 39: under 2 s;
    importing torch takes 1.3 s): the registries, the run specs, the experiments' scripts and the store import
    it where they first use it (:mod:`pebench.lazy_torch`), and a run's configuration is :mod:`pebench.config`'s."""
    import subprocess
    import sys

    script = ("import sys; from pebench import config, encodings, metrics, store, tasks; "
              "from pebench.plan import experiment; "
              "registry = experiment.load_experiments(); "
              "[registry.get(name).run_configs('standard') for name in registry.names()]; "
              "tasks.get('copy').rendered_length(8, 'decoder'); encodings.meta('rope'); "
              "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_the_extending_page_shows_the_floors_of_this_table():
    """The site's "Where things live" table is this whiteboard: the same floors, in the same order, and each
    row's folders or modules those :data:`FLOORS` holds."""
    page = (PACKAGE.parent / "docs" / "extending.md").read_text()
    rows = [line.split("|")[1:3] for line in page.split("### Where things live", 1)[1].split("\n## ", 1)[0].splitlines()
            if line.startswith("| ") and not line.startswith("| floor")]
    shown = [(name.strip(), sorted(part.strip("`/").removesuffix(".py") for part in where.split()))
             for name, where in rows]
    expected = [(name, sorted(prefix.removeprefix("pebench.") for prefix in prefixes
                              if prefix not in ("pebench", "pebench.__main__"))) for name, prefixes in FLOORS]
    assert shown == expected
