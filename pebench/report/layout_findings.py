"""The findings of each report layout: one sentence each, on the cells with a fitted seed (rule 1 of the
protocol)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pebench import encodings
from pebench.analysis import results
from pebench.protocol import LM_SPREAD_GOAL
from pebench.render.tables import format_mean_ci, format_number
from pebench.report import plots
from pebench.report_spec import ReportSpec
from pebench.store import schema
from pebench.store.schema import BASE_VARIANT, encoding_label, encoding_labels, people_words, task_label, task_labels

#: how far above the position-free floor an encoding's in-distribution token accuracy on order-dependent tasks
#: must be for its order reliance to count as order use (:func:`findings_order`)
ORDER_MARGIN = 0.05


def _across_tasks(runs: pd.DataFrame, metric: str) -> dict[str, float]:
    """Seed statistics of the per-seed mean over tasks (seeds are paired by their index across tasks)."""
    per_seed = runs[schema.completed(runs)].groupby("seed")[metric].mean()
    return results.seed_statistics(per_seed.to_numpy())


def _with_interval(runs: pd.DataFrame, encoding: str, metric: str) -> str:
    """``encoding``'s label and its mean of ``metric`` over tasks, ± the 95% interval over seeds
    (:func:`_across_tasks`)."""
    seeds = _across_tasks(runs[runs["encoding"] == encoding], metric)
    return f"{encoding_label(encoding)} {format_mean_ci(seeds['mean'], seeds['ci95'])}"


def named(experiment: str, spec: ReportSpec, arch: str | None = None) -> str:
    """An experiment as its findings name it: its declared title (``Replication: Kazemnejad et al. 2023``), else
    its name in people's words (:func:`pebench.store.schema.people_words`), with the architecture when given."""
    name = spec.title or people_words(experiment)
    return f"{name}, {arch}" if arch else name


def titled(experiment: str, spec: ReportSpec, what: str) -> str:
    """The title of ``experiment``'s table or figure showing ``what``: after its declared title, set off by a dash
    (``Replication: Kazemnejad et al. 2023 — extrapolation tiers``), else after its name in people's words
    (``Length extrapolation: extrapolation tiers``)."""
    return f"{spec.title} — {what}" if spec.title else f"{people_words(experiment)}: {what}"


def findings_length(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """Per architecture and task, the best extrapolating encoding among the cells with a fitted seed (rule 1:
    an unfitted run is no evidence), with its fit fraction, the ID accuracy of its fitted seeds, the position-free
    floor and chance, the encodings not significantly worse, and those the test could not judge (fewer than 2
    fitted seeds on a side: never counted as worse); tasks no encoding fitted are named as such."""
    out = []
    cells = cells[cells["variant"] == BASE_VARIANT]
    fitted_runs = runs[(runs["variant"] == BASE_VARIANT) & schema.completed(runs)]
    fitted_runs = fitted_runs[schema.fitted(fitted_runs)]
    for arch, part in cells.groupby("arch"):
        if part["ood_token_acc_mean"].notna().sum() == 0:
            continue
        judged = part[part["judged"]] if "judged" in part else part
        unfitted_tasks = sorted(set(part["task"]) - set(judged["task"]))
        if unfitted_tasks:
            out.append(f"{named(experiment, spec, arch)}: no encoding fitted {task_labels(unfitted_tasks)} within its "
                       "step cap; "
                       "no extrapolation finding there.")
        tests = results.compare_to_best(fitted_runs[fitted_runs["arch"] == arch], "ood_token_acc")
        for task, rows in tests.groupby("task", sort=False):
            top = rows[rows["is_best"]].iloc[0]
            cell = part[(part["task"] == task) & (part["encoding"] == top["encoding"])].iloc[0]
            tied = [e for e in rows[rows["not_worse"]]["encoding"] if e != top["encoding"]]
            # a Welch test needs two fitted seeds on each side: an encoding it could not test is not called worse
            untested = [e for e in rows[~rows["is_best"] & rows["p_holm"].isna()]["encoding"]]
            fitted = f"{int(round(cell['fitted_mean'] * cell['fitted_n']))}/{int(cell['fitted_n'])} seeds fitted" \
                if np.isfinite(cell.get("fitted_mean", np.nan)) else "no fit criterion"
            floor = cell.get("ood_floor_token_acc_mean", np.nan)
            # the ID accuracy of the seeds the OOD accuracy is of (a cell's mean is over every seed)
            own = fitted_runs[(fitted_runs["arch"] == arch) & (fitted_runs["task"] == task)
                              & (fitted_runs["encoding"] == top["encoding"])]
            in_distribution = f"ID {own['id_token_acc'].mean():.2f} on those" if "id_token_acc" in own \
                and own["id_token_acc"].notna().any() else f"ID {cell['id_token_acc_mean']:.2f}"
            out.append(
                f"{named(experiment, spec, arch)}, {task_label(task)}: among fitted seeds, best OOD token accuracy "
                f"{encoding_label(top['encoding'])} "
                f"{format_mean_ci(cell['ood_token_acc_mean'], cell['ood_token_acc_ci95'])} ({fitted}; "
                f"{in_distribution}; position-free floor {format_number(floor)}, chance "
                f"{cell['ood_chance_token_acc_mean']:.2f}); {_versus_best(tied, untested, len(rows) - 1)}."
            )
    return out


def _versus_best(tied: list[str], untested: list[str], n_others: int) -> str:
    """How the other encodings of a task compare with its best: those not significantly worse (of the ones the
    test could judge), and those it could not (fewer than 2 fitted seeds on a side)."""
    parts = []
    if n_others > len(untested) or not untested:
        parts.append(f"not significantly worse among fitted: {encoding_labels(tied, empty='no other encoding')}")
    if untested:
        parts.append(f"not tested, fewer than 2 fitted seeds on a side: {encoding_labels(untested)}")
    return "; ".join(parts)


def findings_order(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """The baseline's (NoPE's) accuracy on order-dependent tasks and controls, the encodings that did not learn
    order (in-distribution accuracy on order-dependent tasks within :data:`ORDER_MARGIN` of the position-free
    floor), the order reliance / invariance gap ranking, and equivariance gaps."""
    out: list[str | None] = []
    runs = runs[schema.completed(runs)]
    baseline = encodings.baseline_name()
    nope = encoding_label(baseline) if baseline else ""
    for arch, part in runs.groupby("arch"):
        dependent, controls = part[part["order_dependent"] == True], part[part["order_dependent"] == False]  # noqa: E712
        out += [_baseline_accuracy(arch, dependent, controls, baseline, nope), _order_not_learnt(arch, dependent),
                _order_reliance(arch, dependent, controls), _equivariance(arch, part, baseline, nope)]
    return [sentence for sentence in out if sentence]


def _baseline_accuracy(arch: str, dependent: pd.DataFrame, controls: pd.DataFrame, baseline: str | None,
                       nope: str) -> str | None:
    """The baseline's ID token accuracy on order-dependent tasks against controls (None without both)."""
    base_dep, base_ctl = dependent[dependent["encoding"] == baseline], controls[controls["encoding"] == baseline]
    if base_dep.empty or base_ctl.empty:
        return None
    dep, ctl = _across_tasks(base_dep, "id_token_acc"), _across_tasks(base_ctl, "id_token_acc")
    chance = base_dep["id_chance_token_acc"].mean()
    return (f"{nope} {arch}: {format_mean_ci(dep['mean'], dep['ci95'])} ID token accuracy on order-dependent tasks "
            f"(chance {chance:.2f}) vs {format_mean_ci(ctl['mean'], ctl['ci95'])} on controls.")


def _order_not_learnt(arch: str, dependent: pd.DataFrame) -> str | None:
    """The encodings within :data:`ORDER_MARGIN` of the position-free floor on the order-dependent tasks."""
    if "id_floor_token_acc" not in dependent or not dependent["id_floor_token_acc"].notna().any():
        return None
    # An encoding no better than the position-free floor on the order-dependent tasks has not learnt to
    # use order (rule 3: the floor is what a model that ignores order reaches on each task and rendering);
    # its order reliance says nothing about whether it could. NoPE is no such reference in a decoder:
    # the causal mask gives it positions.
    per_encoding = dependent.groupby("encoding")[["id_token_acc", "id_floor_token_acc"]].mean()
    blind = per_encoding[per_encoding["id_token_acc"] <= per_encoding["id_floor_token_acc"] + ORDER_MARGIN]
    if blind.empty:
        return None
    return (f"Order not learnt ({arch}): "
            + ", ".join(f"{encoding_label(e)} {row['id_token_acc']:.2f} (floor {row['id_floor_token_acc']:.2f})"
                        for e, row in blind.iterrows())
            + f" ID token accuracy on order-dependent tasks, within {ORDER_MARGIN} of the position-free floor "
            "(what a model that ignores order reaches); their order reliance is no evidence of order use.")


def _order_reliance(arch: str, dependent: pd.DataFrame, controls: pd.DataFrame) -> str | None:
    """The highest and lowest order reliance, and the largest invariance gap on controls."""
    if dependent.empty:
        return None
    reliance = dependent.groupby("encoding")["order_reliance"].mean().sort_values(ascending=False).dropna()
    gaps = controls.groupby("encoding")["invariance_gap"].mean().abs().sort_values(ascending=False).dropna()
    if reliance.empty:
        return None
    highest, lowest = (_with_interval(dependent, e, "order_reliance") for e in reliance.index[[0, -1]])
    text = (f"Order reliance, {arch} (original − shuffled token accuracy, mean over order-dependent "
            f"tasks, ± its 95% interval over seeds): highest {highest}, lowest {lowest}")
    if not gaps.empty and round(gaps.iloc[0], 2) == 0:  # no encoding to name: none has a gap
        text += "; every invariance gap on controls rounds to 0.00"
    elif not gaps.empty:
        text += f"; largest invariance gap on controls: {encoding_label(gaps.index[0])} {gaps.iloc[0]:.2f}"
    return text + "."


def _equivariance(arch: str, part: pd.DataFrame, baseline: str | None, nope: str) -> str | None:
    """The baseline encoder's permutation-equivariance gap at init and after training, beside the smallest other."""
    gaps = part.groupby("encoding")[["equivariance_gap_init", "equivariance_gap_trained"]].mean()
    if baseline not in gaps.index or arch != "encoder":
        return None
    if not np.isfinite(gaps.at[baseline, "equivariance_gap_trained"]):
        return None
    others = gaps.drop(index=baseline)["equivariance_gap_trained"].dropna()
    text = (f"Permutation-equivariance gap, {nope} encoder: {gaps.at[baseline, 'equivariance_gap_init']:.1e} "
            f"at init, {gaps.at[baseline, 'equivariance_gap_trained']:.1e} after training")
    if not others.empty:
        text += f" (smallest other encoding: {encoding_label(others.idxmin())} {others.min():.1e})"
    return text + "."


def findings_variants(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """OOD token accuracy of each evaluation variant, mean over tasks, in the order the experiment declares, each
    with the 95% interval over seeds of the per-seed mean over tasks (:func:`_across_tasks`)."""
    per_variant = cells.groupby("variant", sort=False)[["ood_token_acc_mean", "id_token_acc_mean"]].mean()
    per_variant = per_variant.sort_index(key=schema.sort_key)
    if per_variant["ood_token_acc_mean"].isna().all():
        return []
    parts = []
    for variant in per_variant.index:
        seeds = _across_tasks(runs[runs["variant"] == variant], "ood_token_acc")
        parts.append(f"{variant} {format_mean_ci(seeds['mean'], seeds['ci95'])}")
    n_tasks = cells["task"].nunique()
    return [f"{spec.title or experiment} (OOD token accuracy, mean over {n_tasks} task{'s' if n_tasks != 1 else ''}, "
            f"± its 95% interval over seeds): {', '.join(parts)}; ID token accuracy as trained "
            f"{per_variant['id_token_acc_mean'].iloc[0]:.2f}."]


def findings_perplexity(runs: pd.DataFrame, cells: pd.DataFrame, experiment: str, spec: ReportSpec) -> list[str]:
    """Perplexity degradation beyond the training context (OOD perplexity over perplexity at the training length,
    lower is better), each with its 95% interval over seeds: the least, with the encodings not significantly
    worse (the Welch test and Holm correction the tables mark ties with; a winner is named only where that test
    separates it) or not testable, and the most."""
    cells = cells[cells["variant"] == BASE_VARIANT].dropna(subset=["perplexity_ratio_mean"])
    if cells.empty:
        return []
    ranked = cells.sort_values("perplexity_ratio_mean")
    best, worst = ranked.iloc[0], ranked.iloc[-1]

    def describe(row: pd.Series) -> str:
        name = plots.label(row["encoding"], row["encoding_options"])
        return (f"{name} {format_number(row['ood_perplexity_mean'], 'ppl')} "
                f"({format_mean_ci(row['perplexity_ratio_mean'], row['perplexity_ratio_ci95'], 'ratio')} times its "
                f"perplexity at the training length, {format_number(row['train_perplexity_mean'], 'ppl')})")

    lengths = f"{int(runs['train_max_len'].max())}"
    if len(ranked) == 1:  # a sample of a suite: one encoding, neither a least nor a most
        return [f"{named(experiment, spec)}: perplexity beyond the training context ({lengths} characters): "
                f"{describe(best)}; one encoding, nothing to compare it with."]
    base = runs[(runs["variant"] == BASE_VARIANT) & schema.completed(runs)]
    tests = results.compare_to_best(base, "perplexity_ratio", higher_is_better=False)
    tests = tests[tests["encoding"] != best["encoding"]]
    tied, untested = list(tests[tests["not_worse"]]["encoding"]), list(tests[tests["p_holm"].isna()]["encoding"])
    if tied:
        versus = f"not significantly more: {encoding_labels(tied)}"
    elif len(tests) and not untested:
        versus = (f"significantly less than every other encoding's (one-sided Welch tests over seeds, Holm over "
                  f"{len(tests)}: largest corrected p {tests['p_holm'].max():.2g})")
    else:
        versus = ""
    if untested:
        versus += ("; " if versus else "") + f"not tested, fewer than 2 seeds: {encoding_labels(untested)}"
    return [f"{named(experiment, spec)}: perplexity beyond the training context ({lengths} characters): least "
            f"degradation {describe(best)}" + (f", {versus}" if versus else "") + f"; most {describe(worst)}. "
            + spread_sentence(cells)]


def spread_sentence(cells: pd.DataFrame) -> str:
    """Whether the LM's in-distribution fit met the declared goal: the spread of its seed-mean perplexity at the
    training context across encodings (largest over smallest) against :data:`pebench.protocol.LM_SPREAD_GOAL`,
    said either way (a ratio that rewards a poor fit is read with this beside it)."""
    train = cells["train_perplexity_mean"].dropna()
    if len(train) < 2:
        return ""
    spread = float(train.max() / train.min())
    met = spread <= LM_SPREAD_GOAL
    return (f"In distribution the perplexity at the training context spans {spread:.2f} times from the best "
            f"encoding to the worst; the declared goal (LM step pilot) was at most {LM_SPREAD_GOAL:.2f}: "
            + ("met." if met else "**missed**, so part of each ratio measures how well the model fitted."))
