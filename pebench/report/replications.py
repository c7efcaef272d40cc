"""The replication sections of a report: for every replication declared in a results folder's suite
(:data:`pebench.analysis.replication.REPLICATIONS`), the setups side by side, the published aggregate, the
pre-registered agreement scores, the per-task tables, what the runs cost, and the checks declared for it with their
readings.

A section is a list of blocks (:mod:`pebench.render.blocks`); ``report.json`` holds them under ``replications``
and the site renders them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from pebench import encodings, metrics
from pebench.analysis.replication import (
    AGREES,
    CONTRADICTS,
    NOT_TESTABLE,
    REPLICATIONS,
    UNRESOLVED,
    ArmCheck,
    RankingAgreement,
    Replication,
    ScaleCheck,
    experiment_runs,
    growth_table,
    remake_comparison,
    task_table,
)
from pebench.render.blocks import PagePiece, bullet_list, code, heading, table, text
from pebench.render.tables import format_number
from pebench.report.findings import training_time
from pebench.store import load, raw_files, read_manifest, run_file_id
from pebench.store.schema import BASE_VARIANT, encoding_label, task_label, task_labels
from pebench.tasks.charlm import EVAL_SPAN

#: how a scale check's declared verdict on a size (:meth:`ScaleCheck.size_verdicts`) reads against the standard size
VERDICT_WORDS = {"higher": "higher than", "lower": "lower than", "unresolved": "not resolved from"}


def commands(suite: str, experiments: Iterable[str]) -> PagePiece:
    """The commands that make ``experiments``' runs in ``results/<suite>`` and report them, as a bash block."""
    names = " ".join(f"--experiment {name}" for name in experiments)
    return code("bash", [f"pebench run --suite {suite} {names} --out results/{suite} --workers 2",
                         f"pebench report --results results/{suite}"])


def replications_in(suite: str) -> list[Replication]:
    """The registered replications (their experiment scripts register them when they are loaded) whose
    experiment belongs to ``suite``, in the registry's order."""
    return [REPLICATIONS.get(name) for name in REPLICATIONS.names()
            if suite in REPLICATIONS.get(name).experiment.configs]


def sections(folder: Path, suite: str, data: pd.DataFrame | None = None, results_dir: Path | None = None
             ) -> list[dict]:
    """One section per replication of ``suite`` (:func:`replications_in`), read from the reported ``folder``
    (its ``summary/runs.csv``) and ``results_dir`` (its run files and ``manifest.json``; default ``folder``);
    ``data``: the length-level rows of ``results_dir`` when already loaded. Each section is ``{"name", "title",
    "blocks"}``; none when no replication is declared for the suite."""
    results_dir = Path(results_dir or folder)
    return [{"name": r.name, "title": r.experiment.report.title,
             "blocks": section(r, Path(folder), suite, data, results_dir)} for r in replications_in(suite)]


def our_setup(specs: Sequence, primary_metric: str, language_model: bool) -> dict[str, str]:
    """pebench's side of a replication's setup, read from its run specs and its primary metric (``language_model``:
    a perplexity experiment, which has contexts and no fit criterion)."""
    first = specs[0]
    train, evaluation = first.train, first.eval
    caps = sorted({s.train.steps for s in specs})
    id_lengths = [n for n in evaluation.lengths if n <= train.train_max_len]
    ood_lengths = [n for n in evaluation.lengths if n > train.train_max_len]
    names = list(dict.fromkeys(s.encoding for s in specs))
    if language_model:
        return {
            "model": f"{first.arch}-only, {first.n_layers} layers, {first.n_heads} heads, d_model {first.d_model}",
            "data": "the bundled character corpus (the Python language reference), character-level",
            "training": f"{train.steps} steps of {train.batch_size} windows of {train.train_max_len} characters, "
                        f"AdamW, lr {train.lr:g}, {train.warmup_steps} warm-up steps, cosine decay",
            "evaluation": f"non-overlapping windows of {', '.join(map(str, evaluation.lengths))} characters over the "
                          f"same {EVAL_SPAN} validation characters",
            "encodings": f"{len(names)}: {', '.join(encoding_label(n) for n in names)}",
            "seeds": f"{len({s.seed for s in specs})} per encoding",
            "score": "perplexity vs context; growth = perplexity at the longest context over that at the training "
                     "context",
        }
    return {
        "model": f"{first.arch}-only, {first.n_layers} layers, {first.n_heads} heads, d_model {first.d_model}, "
                 f"dropout {first.dropout:g}",
        "training": f"AdamW, lr {train.lr:g}, weight decay {train.weight_decay:g}, batch {train.batch_size}, "
                    f"{train.warmup_steps} warm-up steps, cosine decay; until the fit criterion "
                    f"({fit_criterion(train)}) with a cap of {' or '.join(str(c) for c in caps)} steps",
        "training lengths": "uniform from the task's shortest input ("
                            f"{' or '.join(map(str, sorted({s.train.train_min_len for s in specs})))}) to "
                            f"{train.train_max_len}",
        "test lengths": f"{', '.join(map(str, id_lengths))} (in distribution) and "
                        f"{', '.join(map(str, ood_lengths))} (beyond), {evaluation.n_examples} examples each",
        "tasks": f"{len({s.task for s in specs})}: {task_labels(dict.fromkeys(s.task for s in specs))}",
        "encodings": f"{len(names)}: {', '.join(encoding_label(n) for n in names)}",
        "metric": f"{metrics.get(primary_metric).axis_label} (`{primary_metric}`"
                  + (f", {evaluation.decoding} decoding" if first.arch == "decoder" else "")
                  + "), mean over fitted seeds; an unfitted run fails its task",
        "seeds": f"{len({s.seed for s in specs})} per task and encoding",
    }


def fit_criterion(train) -> str:
    """A run's fit criterion in words, as its training config (:class:`pebench.config.TrainConfig`) sets it: the
    threshold, where it is checked, on how many held-out inputs, and its plateau stop where it has one."""
    if not train.fit_every:
        return "none: every run trains for its full step count"
    where = "at every training length" if train.fit_lengths == "all" else f"at length {train.train_max_len}"
    held = f"{train.fit_examples} held-out inputs" + (" never trained on" if train.fit_disjoint else "")
    plateau = (f"; or stopped, unfitted, after {train.fit_patience} steps without progress" if train.fit_patience
               else "")
    return (f"token accuracy >= {train.fit_threshold:g} {where}, on {held}, checked every {train.fit_every} steps"
            + plateau)


def compute(name: str, folder: Path, results_dir: Path | None = None) -> list[PagePiece]:
    """What ``name``'s runs in ``folder`` cost and where they ran: the training time summed over its runs
    (``train_seconds``; evaluation not included), the machines every sweep into the folder recorded in its
    manifest (that of ``results_dir``, default ``folder``), and the wall time of each sweep that recorded it
    (``runs_made``, ``wall_seconds``; ``at least`` for one stopped without recording its end)."""
    runs = experiment_runs(folder, name)
    path = Path(results_dir or folder) / "manifest.json"
    if runs is None or not path.exists():
        return []
    invocations = (read_manifest(path.parent) or {}).get("invocations", [])
    # the sweeps that may have made these runs: those that name this experiment, and those that predate
    # the manifest's record of experiments (which of those made them is not recorded)
    own = [i for i in invocations if "experiments" not in i or name in i["experiments"]]
    machines = sorted({(f"{i['cuda_device']} GPU" if i.get("cuda_device") and i.get("device", "").startswith("cuda")
                        else f"{i['cpu_count']}-core {i['processor']} CPU") + f", torch {i['torch_version']}, "
                       f"{i['workers']} worker{'s' if i['workers'] != 1 else ''}" for i in own})
    unnamed = sum("experiments" not in i for i in own)
    runs = runs.drop_duplicates("run_id")
    training = training_time(runs) or 0.0
    line = (f"**Compute.** {len(runs)} runs; their training took {training / 60:.0f} worker-minutes in all (each "
            f"run's `train_seconds`; evaluation not included). The sweeps of this experiment"
            + (f", with the {unnamed} that predate the manifest's record of experiments," if unnamed else "")
            + f" ran on: {'; '.join(machines)}.")
    timed = [i for i in invocations if name in i.get("experiments", ()) and "wall_seconds" in i]
    if timed:
        line += " Sweeps of this experiment that recorded their wall time: " + "; ".join(
            f"{i['runs_made']} runs in {'at least ' * ('outcome' not in i)}{i['wall_seconds'] / 60:.0f} min "
            f"(commit `{i['git_sha'][:7]}`, {i.get('outcome', 'stopped without recording its end')})"
            for i in timed) + "."
    untimed = [i for i in invocations if "wall_seconds" not in i]
    if untimed:
        line += (f" {len(untimed)} of the manifest's {len(invocations)} sweeps recorded no wall time (they predate "
                 "its record, or were stopped before it was written): which of them made these runs, and in what "
                 "wall time, is not in the committed data.")
    return [text(line)]


def _signed(value: float) -> str:
    """``+0.123``, or ``—`` when undefined."""
    return "—" if value != value else f"{value:+.3f}"


def _p_value(value: float) -> str:
    """A p-value to 3 significant digits, or ``—`` when the claim was not tested."""
    return "—" if value != value else f"{value:.3g}"


def declared_order(found: Iterable, declared: Sequence) -> list:
    """``found`` in the order its experiment script declares (``declared``), any it does not declare after them
    in the order found: a replication's tables read in its paper's order, not in the order its runs finished."""
    found = list(found)
    return [x for x in declared if x in found] + [x for x in found if x not in declared]


def _declared(commit: str) -> str:
    """`` (commit `abc1234`)``, or nothing when the declaring commit is not recorded."""
    return f" (commit `{commit}`)" if commit else ""


def section(record: Replication, folder: Path, suite: str, data: pd.DataFrame | None = None,
            results_dir: Path | None = None) -> list[PagePiece]:
    """One replication: the setups side by side, the published aggregate, and the pre-registered agreement
    scores when ``folder`` holds its runs; then its checks (arguments as :func:`sections`)."""
    results_dir = Path(results_dir or folder)
    experiment = record.experiment
    name = experiment.name
    specs = experiment.runs(suite)
    spec = experiment.report
    blocks = [heading(2, spec.title),
              text(f"{experiment.description} Declared in `{record.script}`{_declared(record.declared_in)}, before "
                   "any of its runs was made."),
              heading(3, "Setup: the paper's and pebench's")]
    ours = our_setup(specs, spec.primary_metric, spec.layout == "perplexity")
    blocks.append(table(["", "paper", "pebench"], [[key, record.setup.get(key, "—"), ours.get(key, "—")]
                                                   for key in dict.fromkeys([*record.setup, *ours])]))
    theirs = record.published()
    blocks += [heading(3, "The published aggregate"),
               table(["encoding", record.aggregate_label],
                     [[encoding_label(e) if e in encodings.names() or ":" in e else e, f"{v:.2f}"]
                      for e, v in theirs.items()]),
               heading(3, "Agreement")]
    scored = record.score(folder, data)
    if scored is None:
        blocks += [text(f"Not run yet: `results/{results_dir.name}` holds no run of `{name}`. The pre-registered "
                        f"scores (the experiment's docstring): {record.scores} To make the results:"),
                   commands(suite, [name])]
        for check in record.checks:
            blocks += check_section(check, folder, suite)
        return blocks
    blocks += _incomplete(name, specs, results_dir)
    agreement, claims, sentence = scored
    blocks += _agreement(agreement, claims, sentence, remake_comparison(record, folder, agreement))
    runs = experiment_runs(folder, name)
    if spec.layout == "perplexity":  # a language model: every encoding's growth, the paper's four and the rest
        blocks += growth_blocks(results_dir, name, theirs, data)
    for statistic in record.task_tables:
        per_task = task_table(runs, spec.primary_metric, statistic)
        per_task = per_task.loc[declared_order(per_task.index, record.encodings)]  # the script's order
        tasks_run = declared_order([c for c in per_task.columns if c != "fitted"], record.tasks)
        blocks += [text(f"pebench per task: the {statistic} over seeds of `{spec.primary_metric}` (an unfitted run "
                        "scores 0; *fitted*: seeds fitted over seeds run, all tasks)."),
                   table(["encoding", *map(task_label, tasks_run), "fitted"],
                         [[encoding_label(e), *(f"{v:.2f}" if v == v else "—" for v in row[tasks_run]),
                           row["fitted"]] for e, row in per_task.iterrows()])]
    if record.per_task_note:
        blocks.append(text(record.per_task_note))
    blocks += compute(name, folder, results_dir)
    for check in record.checks:
        blocks += check_section(check, folder, suite)
    return blocks


def _incomplete(name: str, specs: Sequence, folder: Path) -> list[PagePiece]:
    """A paragraph saying which runs of ``name`` are not in ``folder`` yet, or nothing when all are."""
    held = {run_file_id(path) for path in raw_files(folder / "raw")}
    ids = {spec.run_id for spec in specs}
    if ids <= held:
        return []
    complete = sorted(e for e in dict.fromkeys(s.encoding for s in specs)
                      if {s.run_id for s in specs if s.encoding == e} <= held)
    return [text(f"**Incomplete:** {len(ids & held)} of the {len(ids)} runs of `{name}` are in; the encodings "
                 f"with every run in: {', '.join(encoding_label(e) for e in complete) or 'none'}. The scores "
                 "below use the runs that are in.")]


def _agreement(agreement: RankingAgreement | None, claims: pd.DataFrame, sentence: str, comparison: str = ""
               ) -> list[PagePiece]:
    """The ranking agreement, its ``comparison`` with the replication it re-makes (where it re-makes one), the
    sentence read beside it and the verdict on every claim."""
    blocks = []
    if agreement is not None:
        over = f" over {agreement.n_tasks} tasks" if agreement.n_tasks > 1 else ""
        blocks += [text(f"Kendall's tau of the ranking of the paper's {len(agreement.ours)} encodings{over}: "
                        f"**{agreement.tau:.2f}** [{agreement.low:.2f}, {agreement.high:.2f}] (95% bootstrap "
                        f"interval over seeds, {agreement.n_boot} replicates)."),
                   table(["encoding", "pebench", "paper"],
                         [[encoding_label(e), f"{agreement.ours[e]:.2f}", f"{agreement.theirs[e]:.2f}"]
                          for e in agreement.ours.index])]
    if comparison:
        blocks.append(text(comparison))
    if sentence:
        blocks.append(text(sentence))
    counts = claims["reading"].value_counts()
    untestable = counts.get(NOT_TESTABLE, 0)
    blocks.append(text(f"Pairwise orders the paper claims: {counts.get(AGREES, 0)} agree, "
                       f"{counts.get(CONTRADICTS, 0)} contradicted, {counts.get(UNRESOLVED, 0)} unresolved"
                       + (f", {untestable} not testable at this budget" if untestable else "")
                       + f" (Holm-corrected over the {len(claims)})."))
    if "raw_gain" in claims:  # read in the paper's regime (replication.regime_agreement): gated and raw side by side
        blocks.append(table(
            ["paper: better", "than", "pairs both fitted", "mean difference there", "Holm p", "raw difference, all "
             "pairs", "pebench"],
            [[encoding_label(r.a), encoding_label(r.b), str(r.n_pairs), _signed(r.mean_diff), _p_value(r.p_holm),
              f"{_signed(r.raw_gain)} ({r.raw_pairs})", r.reading + (f" ({r.note})" if r.note else "")]
             for r in claims.itertuples()]))
    else:
        blocks.append(table(["paper: better", "than", "pebench: mean difference", "Holm p", "pebench"],
                            [[encoding_label(r.a), encoding_label(r.b), f"{r.mean_diff:+.3f}", f"{r.p_holm:.3g}",
                              r.reading] for r in claims.itertuples()]))
    return blocks


def growth_blocks(folder: Path, name: str, published: pd.Series, data: pd.DataFrame | None = None) -> list[PagePiece]:
    """A language-model replication's every encoding (:func:`pebench.analysis.replication.growth_table`): perplexity at
    the training context and its growth at the longest context, mean ± 95% t-interval over seeds, beside the
    paper's growth where it has one (``data``: the folder's length-level rows when already loaded)."""
    rows = load(folder) if data is None else data
    rows = rows[(rows["experiment"] == name) & (rows["variant"] == BASE_VARIANT)]
    if rows.empty:
        return []
    growth = growth_table(rows, published)
    longest, trained = int(rows["eval_len"].max()), int(rows["train_max_len"].iloc[0])

    def mean_ci(mean: float, ci: float) -> str:
        return f"{mean:.2f}" + (f" ± {ci:.2f}" if ci == ci else "")

    return [text(f"pebench, every encoding, least growth first: perplexity at the training context ({trained}) and "
                 f"its growth at {longest} (mean ± 95% t-interval over seeds), beside the paper's growth where it "
                 "reports the encoding. The score above ranks the paper's encodings only; the others are shown, not "
                 "scored."),
            table(["encoding", "seeds", f"perplexity at {trained}", f"growth, {longest} / {trained}",
                   "paper: growth"],
                  [[encoding_label(e), str(int(r.seeds)), mean_ci(r.ppl_train, r.ppl_train_ci),
                    mean_ci(r.growth, r.growth_ci), f"{r.paper:.2f}" if r.paper == r.paper else "—"]
                   for e, r in growth.iterrows()])]


def check_section(check: ScaleCheck | ArmCheck, folder: Path, suite: str) -> list[PagePiece]:
    """A check declared for a replication: a scale check or a check in arms."""
    return scale_check_section(check, folder, suite) if isinstance(check, ScaleCheck) else \
        arm_check_section(check, folder, suite)


def arm_check_section(check: ArmCheck, folder: Path, suite: str) -> list[PagePiece]:
    """A replication's check in arms: per arm and encoding, seeds fitted, held-out accuracy when training stopped
    and OOD accuracy scored and raw, and per arm the mean gain of randomized over base; or how to run it."""
    blocks = [heading(3, f"Check: {task_label(check.task)}, {' / '.join(check.arms.values())}"), text(check.question),
              text(check.why), text(f"Declared in `{check.script}`{_declared(check.declared_in)}, arms:"),
              bullet_list(f"`{name}`: {change}" for name, change in check.arms.items())]
    summary = check.summary(folder)
    if summary is None:
        return blocks + [text("Not run yet. To make the results:"), commands(suite, check.arms)]
    cells, gains = summary
    held = cells.groupby("arm")["n"].sum()  # each arm's rows are its own runs
    expected = {name: len(check.experiments[name].runs(suite)) for name in check.arms}
    blocks += [table(
        ["arm", "encoding", "fitted seeds", "held-out token accuracy at the stop", "OOD token accuracy (unfitted: 0)",
         "OOD token accuracy, raw", "OOD token accuracy of the fitted runs"],
        [[r.arm, encoding_label(r.encoding), f"{int(r.fitted)}/{int(r.n)}", format_number(r.fit_acc),
          format_number(r.ood), format_number(r.ood_raw) + ("" if r.fitted == r.n else " (unfitted runs)"),
          format_number(r.ood_fitted) if r.fitted else "—"] for r in cells.itertuples()]),
               text("The dense arm has runs of the randomized encodings only; its bases are the replication's runs of "
                    "the same seeds (positions of a base encoding do not depend on L). The raw column and the fitted "
                    "runs' column are read beside the pre-registered scores, not instead of them."),
               text("Mean gain in OOD token accuracy of randomized over base, paired by seed (an unfitted run scores "
                    "0; 95% bootstrap interval): " + "; ".join(
                        f"{g.arm} **{100 * g.mean:+.1f}** points [{100 * g.low:+.1f}, {100 * g.high:+.1f}] over "
                        f"{g.pairs} pairs" for g in gains.itertuples() if g.pairs) + ".")]
    randomized = cells[cells["encoding"].str.startswith("randomized:")]
    randomized = randomized.groupby("arm", sort=False)[["fitted", "n"]].sum()
    blocks.append(text("Randomized runs fitted, per arm: " + "; ".join(
        f"{arm} {int(row.fitted)}/{int(row.n)}" for arm, row in randomized.iterrows()) + ". By the pre-registered "
        "reading, a cause is supported where an arm fits randomized runs that the replication did not; where none "
        "does, the failure is unexplained."))
    bases = cells.set_index(["arm", "encoding"])["ood_raw"]
    fitted = [(r.arm, r.encoding, r.fitted, r.n, r.ood_fitted,
               bases.get((r.arm, base), bases.get(("replication", base), float("nan"))))
              for r in cells.itertuples() if r.encoding.startswith("randomized:") and r.fitted
              for base in [r.encoding.partition(":")[2]]]
    if fitted:
        blocks.append(text(
            "Where randomized runs fitted, their OOD token accuracy against their base's (mean over the base's seeds "
            "in the same arm, or the replication's for the dense arm): " + "; ".join(
                f"{encoding_label(e)} in {arm}, {int(k)}/{int(n)} fitted: {ours:.2f} against {theirs:.2f}"
                for arm, e, k, n, ours, theirs in fitted) + "."))
    short = [f"`{name}` ({held.get(name, 0)} of {n} runs)" for name, n in expected.items() if held.get(name, 0) < n]
    if short:
        blocks.append(text(f"Not complete: {', '.join(short)}."))
    return blocks


def scale_check_section(check: ScaleCheck, folder: Path, suite: str) -> list[PagePiece]:
    """A replication's scale check: per size, each encoding's fitted seeds and exact match, the tau of its order
    against the paper's and its declared reading, read across the sizes; or how to run it."""
    blocks = [heading(3, f"Scale check: {task_label(check.task)} at {len(check.sizes)} model sizes"),
              text(f"{check.reading}\nDeclared in `{check.script}`{_declared(check.declared_in)}.")]
    summary = check.summary(folder)
    if summary is None:
        return blocks + [text("Not run yet. To make the results:"),
                         commands(suite, (check.experiment_name(*size) for size in check.sizes[1:]))]
    cells, taus, missing = summary
    blocks += [table(["size", "encoding", "fitted seeds", "ID exact match", "exact match beyond the training lengths "
                      "(unfitted: 0)"],
                     [[r.size, encoding_label(r.encoding), f"{int(r.fitted)}/{int(r.n)}", f"{r.id_seq:.2f}",
                       f"{r.ood:.2f}"] for r in cells.itertuples()]),
               text(f"Kendall's tau of the encodings' order on {task_label(check.task)} against the paper's aggregate "
                    "order, per size with every run in (95% bootstrap interval over seeds): "
                    + ("; ".join(f"{size} **{a.tau:.2f}** [{a.low:.2f}, {a.high:.2f}]" for size, a in taus.items())
                       or "none yet") + ".")]
    verdicts = check.size_verdicts(taus)
    if verdicts:
        standard = check.size_label(*check.sizes[0])
        blocks.append(text(f"By the declared reading (a size differs from {standard} only where the two intervals do "
                           "not overlap): " + "; ".join(f"{size} is {VERDICT_WORDS[v]} it" for size, v in verdicts)
                           + "."))
    baseline = encodings.baseline_name()
    nope = cells[cells["encoding"] == baseline]
    if not nope.empty:
        fits = [f"{r.size} {int(r.fitted)}/{int(r.n)}" for r in nope.itertuples()]
        blocks.append(text(f"{encoding_label(baseline)}, the paper's best encoding, fitted {task_label(check.task)} "
                           f"(seeds fitted per size): {'; '.join(fits)}."))
    blocks += scale_by_depth(check, cells, taus, dict(verdicts))
    blocks += scale_confound(check, cells, suite)
    if missing:
        blocks.append(text(f"Not complete (no tau): {', '.join(f'`{m}`' for m in missing)}."))
    return blocks


def _depth_rows(check: ScaleCheck, cells: pd.DataFrame, verdicts: Mapping[str, str]) -> dict[int, list]:
    """Per depth, ``(width, fits, verdict)`` of each size: whether the baseline fitted ``"all"``, ``"none"`` or
    ``"some"`` of its seeds, and the size's declared verdict (``"standard"`` for the standard size)."""
    standard = check.size_label(*check.sizes[0])
    nope = cells[cells["encoding"] == encodings.baseline_name()].set_index("size")
    depths: dict[int, list] = {}
    for width, layers in check.sizes:
        size = check.size_label(width, layers)
        fit = nope.loc[size]  # every size has its tau, so every run of it, the baseline's included, is in
        fits = "all" if fit.fitted == fit.n else "none" if fit.fitted == 0 else "some"
        depths.setdefault(layers, []).append((width, fits, "standard" if size == standard else verdicts[size]))
    return depths


def _depth_verdict(rows: list) -> str | None:
    """One verdict for a depth's sizes, the standard size reading as unresolved from itself; None if they differ."""
    found = {v if v != "standard" else "unresolved" for _, _, v in rows}
    return found.pop() if len(found) == 1 else None


def scale_by_depth(check: ScaleCheck, cells: pd.DataFrame, taus: Mapping[str, RankingAgreement],
                   verdicts: Mapping[str, str]) -> list[PagePiece]:
    """The scale check read across its sizes, once every size has a tau: per depth, the seeds the baseline (NoPE)
    fitted and the declared verdicts of its sizes against the standard one. Where each depth is uniform (the
    baseline fits every seed or none at every width, and its sizes share one verdict) and the depths differ, the
    sentence says that depth and not width separates the sizes; otherwise it lists them per depth and draws no
    conclusion."""
    sizes = [check.size_label(d, n) for d, n in check.sizes]
    if set(taus) != set(sizes):
        return []
    standard = check.size_label(*check.sizes[0])
    depths = _depth_rows(check, cells, verdicts)
    best = max(taus, key=lambda s: taus[s].tau)
    highest = f"The highest tau on {task_label(check.task)}: {best} **{taus[best].tau:.2f}** [{taus[best].low:.2f}, " \
              f"{taus[best].high:.2f}]."
    scope = (f"The replication's other tasks were run at the standard size ({standard}) only, so this check shows "
             f"what size does to the order on {task_label(check.task)}; it does not measure the aggregate tau at "
             "another size.")
    baseline = encoding_label(encodings.baseline_name())
    uniform = all(len({f for _, f, _ in rows}) == 1 and rows[0][1] != "some" and _depth_verdict(rows)
                  for rows in depths.values())
    distinct = len({(rows[0][1], _depth_verdict(rows)) for rows in depths.values()}) == len(depths) > 1
    if uniform and distinct:
        parts = []
        for layers, rows in sorted(depths.items()):
            widths = ", ".join(f"d{w}" for w, _, _ in rows)
            fitted = "every seed" if rows[0][1] == "all" else "no seed"
            parts.append(f"at every {layers}-layer size ({widths}) {baseline} fitted {task_label(check.task)} in "
                         f"{fitted} and the tau is {VERDICT_WORDS[_depth_verdict(rows)]} the standard size's")
        return [text(f"Read across the {len(sizes)} sizes, depth and not width separates them: " + "; ".join(parts)
                     + f". {highest} {scope}")]
    parts = [f"{layers} layers: " + ", ".join(f"d{w} ({baseline} fitted {f}; "
                                              f"{'the standard size' if v == 'standard' else v})"
                                              for w, f, v in rows) for layers, rows in sorted(depths.items())]
    return [text(f"Read across the {len(sizes)} sizes, per depth: {'; '.join(parts)}. Neither depth nor width alone "
                 f"separates them. {highest} {scope}")]


def scale_confound(check: ScaleCheck, cells: pd.DataFrame, suite: str) -> list[PagePiece]:
    """What a scale check holds fixed that a larger model may need changed: the optimiser of every size (read
    from its run specs), and the runs fitted per size, so that a width whose fits drop is read with its
    learning rate, which the check does not re-tune."""
    optimisers = {(s.train.lr, s.train.batch_size, s.train.warmup_steps)
                  for size in check.sizes for s in check.experiments[check.experiment_name(*size)].runs(suite)}
    if len(optimisers) != 1:
        return []
    lr, batch, warmup = optimisers.pop()
    fitted = cells.groupby("size", sort=False)[["fitted", "n"]].sum()
    counts = "; ".join(f"{size} {int(r.fitted)}/{int(r.n)}" for size, r in fitted.iterrows())
    return [text(f"Every size trains with the replication's optimiser unchanged (AdamW at lr {lr:g}, batches of "
                 f"{batch}, {warmup} warm-up steps): the learning rate is not re-tuned for width or depth. Runs fitted "
                 f"per size, the five encodings together: {counts}. Where a larger size fits fewer runs than a smaller "
                 "one, its size and a learning rate that may be too high for it are confounded, and this check cannot "
                 "separate them.")]
