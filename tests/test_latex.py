"""Every LaTeX table pebench writes compiles (issue 37): pasted into a paper's booktabs document, as the
design promises. Compiled with pdflatex where it is installed (.ci/run installs it); skipped where not."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_results import write_synthetic_results

import pebench
from pebench.report import write_report
from pebench.report.main_table import main_table
from pebench.tables import latex_escape, to_latex

ROOT = Path(pebench.__file__).resolve().parent.parent

pytestmark = [pytest.mark.latex,
              pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")]

#: the smallest document a paper pastes a table into
DOCUMENT = "\\documentclass{{article}}\n\\usepackage{{booktabs}}\n\\begin{{document}}\n{tables}\n\\end{{document}}\n"


def compile_error(tables: list[Path], folder: Path) -> str | None:
    """Compile ``tables`` in one document in ``folder``; ``None``, or pdflatex's first error line."""
    inputs = []
    for index, table in enumerate(tables):
        shutil.copyfile(table, folder / f"table{index}.tex")  # a plain name: \input needs no escaping of its path
        inputs.append(f"\\input{{table{index}}}\n\\clearpage")
    (folder / "paper.tex").write_text(DOCUMENT.format(tables="\n".join(inputs)))
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=folder,
                          capture_output=True, text=True, errors="replace", timeout=120)
    if done.returncode == 0:
        return None
    errors = [line for line in done.stdout.splitlines() if line.startswith("!")]
    return errors[0] if errors else done.stdout[-500:]


def failing(tables: list[Path], folder: Path) -> dict[Path, str]:
    """The tables of ``tables`` that do not compile on their own, with pdflatex's error (all at once first)."""
    if compile_error(tables, folder) is None:
        return {}
    return {table: error for table in tables if (error := compile_error([table], folder)) is not None}


def test_every_table_of_a_report_compiles(tmp_path):
    """A report of a small synthetic folder: its leaderboard, pairwise comparisons, harm board, results,
    parameter and run tables (captions with '%', '_' and '−'; cells with '±', '†', '—')."""
    report = write_report(write_synthetic_results(tmp_path / "results"), out_dir=tmp_path / "report")
    tables = sorted((tmp_path / "report" / "tables").glob("*.tex"))
    assert {"leaderboard_length_extrapolation.tex", "pairwise_length_extrapolation.tex"} <= {t.name for t in tables}
    assert len(tables) == len([a for a in report.tables if "tex" in a.paths])
    (tmp_path / "latex").mkdir()
    assert failing(tables, tmp_path / "latex") == {}


def predates_escaped_captions(table: Path) -> bool:
    """Whether a committed table was written before captions were escaped: an unescaped ``%`` in its caption."""
    caption = re.search(r"\\caption\{(.*)\}", table.read_text())
    return caption is not None and re.search(r"(?<!\\)%", caption.group(1)) is not None


def test_the_committed_tables_compile(tmp_path):
    """The tables under results/ as committed; those written before captions were escaped compile once their
    report is regenerated (pebench report), and are named here until then."""
    tables = sorted((ROOT / "results").glob("**/tables/*.tex"))
    if not tables:
        pytest.skip("no committed tables in this checkout")
    broken = failing(tables, tmp_path)
    stale = sorted(str(t.relative_to(ROOT)) for t in broken if predates_escaped_captions(t))
    assert {str(t.relative_to(ROOT)): e for t, e in broken.items() if not predates_escaped_captions(t)} == {}
    if stale:
        pytest.xfail(f"{len(stale)} committed tables predate escaped captions (regenerate their reports): "
                     f"{', '.join(stale)}")


def test_latex_escape_turns_every_character_of_the_tables_into_latex():
    """Every non-ASCII character pebench's code writes into a table becomes LaTeX source in ASCII."""
    sources = [*(ROOT / "pebench").glob("**/*.py"), *(ROOT / "experiments").glob("*.py")]
    used = {ch for path in sources for ch in path.read_text() if ord(ch) > 127}
    assert used, "pebench's code writes no character beyond ASCII: this test checks nothing"
    assert {ch: latex_escape(ch) for ch in used if not latex_escape(ch).isascii()} == {}
    assert latex_escape("a − b, 95% of sum_mod") == r"a $-$ b, 95\% of sum\_mod"


#: a two-column paper (the main table is a table* spanning both columns); the tabular is measured as set
TWO_COLUMN = ("\\documentclass[twocolumn]{{article}}\n\\usepackage{{booktabs}}\n\\begin{{document}}\n"
              "Text before the table.\n\\input{{table0}}\n\\setbox0\\hbox{{{font}{tabular}}}\n"
              "\\typeout{{TABLEWIDTH=\\the\\wd0}}\\typeout{{TEXTWIDTH=\\the\\textwidth}}\nText after it.\n"
              "\\end{{document}}\n")


def two_column(table: Path, folder: Path) -> tuple[str, float, float]:
    """Compile ``table`` in a two-column article in ``folder``: pdflatex's log, the width of its tabular (in the
    table's font size) and ``\\textwidth``, in pt."""
    tex = table.read_text()
    tabular = re.search(r"\\begin\{tabular\}.*?\\end\{tabular\}", tex, re.S).group(0)
    font = next((f for f in (r"\footnotesize", r"\small") if f"\n{f}\n" in tex), "")
    shutil.copyfile(table, folder / "table0.tex")
    (folder / "paper.tex").write_text(TWO_COLUMN.format(font=font, tabular=tabular))
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=folder,
                          capture_output=True, text=True, errors="replace", timeout=120)
    assert done.returncode == 0, [line for line in done.stdout.splitlines() if line.startswith("!")][:1]
    log = (folder / "paper.log").read_text(errors="replace")
    width, textwidth = (float(re.search(rf"{key}=([0-9.]+)pt", log).group(1)) for key in ("TABLEWIDTH", "TEXTWIDTH"))
    return log, width, textwidth


def board_runs() -> pd.DataFrame:
    """Runs of two archs whose boards rank three encodings (one fitting too rarely to be ranked), with scores
    below the floor (negative) and the longest encoding label pebench registers beside the wrapped one."""
    rng = np.random.default_rng(0)
    rows = []
    quality = {"none": (0.0, -0.2), "rope": (1.0, 0.3), "randomized:rope": (1.0, -0.12), "kerple_power": (1.0, 0.1),
               "alibi": (0.3, 0.0)}
    for arch in ("decoder", "encoder"):
        for task, dependent in (("copy", True), ("reverse", True), ("odds_first", True), ("majority", False),
                                ("parity_check", False)):
            for encoding, (fit, score) in quality.items():
                for seed in range(3):
                    fitted = float(rng.random() < fit)
                    rows.append(dict(arch=arch, task=task, encoding=encoding, seed=seed, status="ok", fitted=fitted,
                                     order_dependent=dependent, ood_normalised_acc=score + rng.normal(0, 0.05),
                                     ood_token_acc=float(np.clip(0.7 + score / 4 + rng.normal(0, 0.05), 0, 1))))
    return pd.DataFrame(rows)


def test_the_main_table_fits_a_two_column_paper(tmp_path):
    """The main table compiles as a table* of a two-column article without an overfull box, its tabular no wider
    than \\textwidth, and names the results version (issue 39)."""
    table = main_table(board_runs(), "length_extrapolation", "Length extrapolation: main results",
                       "standard v3-0123abcd")
    assert table is not None and table.version == ""
    tex = to_latex(table)
    assert r"\begin{table*}" in tex and "standard v3-0123abcd" in tex and r"$-$0.1" in tex
    (tmp_path / "main.tex").write_text(tex)
    log, width, textwidth = two_column(tmp_path / "main.tex", tmp_path)
    assert "Overfull \\hbox" not in log and 0 < width <= textwidth


def test_the_committed_main_tables_fit_a_two_column_paper(tmp_path):
    """Each committed suite's tables/main.tex as a table* of a two-column article: no overfull box, no wider than
    \\textwidth, its results version in its caption and under it."""
    tables = sorted(ROOT.glob("results/**/tables/main.tex"))
    if not tables:
        pytest.skip("no committed main tables in this checkout")
    for table in tables:
        folder = tmp_path / table.parent.parent.name
        folder.mkdir()
        log, width, textwidth = two_column(table, folder)
        assert "Overfull \\hbox" not in log and 0 < width <= textwidth, (table, width, textwidth)
        assert table.read_text().count("pebench results: ") == 1 and "Results: " in table.read_text()
