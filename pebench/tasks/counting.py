"""Counting: a program sets variables to 0 and increments them; print a variable's value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pebench.lazy_torch import torch
from pebench.tasks import register
from pebench.tasks.base import Task

if TYPE_CHECKING:
    from torch import Tensor

VARIABLES = 3
MAX_VALUE = 10
PASS = 0
SET = 1  # SET a, SET b, SET c are 1, 2, 3
INCREMENT = SET + VARIABLES  # 4, 5, 6
PRINT = INCREMENT + VARIABLES  # 7, 8, 9
#: relative weights of the statements in CoPE's generator
WEIGHT_SET, WEIGHT_PASS, WEIGHT_INCREMENT = 1.0, 50.0, 7.0


@register("counting", paper="golovneva2024cope")
class Counting(Task):
    """Value of a variable after a program of ``v = 0``, ``v ++`` and ``pass`` statements: ``0 1 4 0 4 7 -> 2``.

    The program of CoPE's counting task, one token per statement: ``pass`` is
    0, ``a = 0`` / ``b = 0`` / ``c = 0`` are 1 / 2 / 3, ``a ++`` / ``b ++`` /
    ``c ++`` are 4 / 5 / 6, and the last token is the question ``print a`` /
    ``print b`` / ``print c`` (7 / 8 / 9). The answer is the variable's value,
    i.e. the number of its increments since it was last set, 0..10
    (``vocab_size = 11``; output symbols are the numbers). The example reads
    ``pass; a = 0; a ++; pass; a ++; print a`` and prints 2;
    ``2 0 5 1 4 5 8 -> 2`` (``b`` set, incremented twice around ``a``).
    Output: 1 token.

    Distribution (``scripts/count_data_gen.py`` of facebookresearch/RAM,
    ``projects/cope``, with its defaults: 3 variables, values at most 10): each
    of the ``L - 1`` statements is drawn with weights set 1 (variable uniform),
    pass 50, increment 7 (of a variable drawn uniformly among those already
    set); a draw that would increment before any variable is set or beyond 10
    is redrawn, which is sampling from the valid statements with the same
    weights. Programs in which no variable is set are redrawn (so the first
    ``set`` is placed by its exact truncated-geometric law); the question asks
    about a variable drawn uniformly among those set. ``min_length = 4``
    (their programs have at least 3 statements).

    Differences: their programs are text split into words (``a = 0 ;`` is four
    tokens) and draw their number of statements uniformly up to 512, while
    here one statement is one token and the length is given, so "length"
    counts statements. :meth:`solve` counts the increments of the printed
    variable (the one named by the last ``print``, ``a`` if none) after its
    last ``set`` anywhere in the input, capped at 10; that is the definition
    on generated programs and is total on shuffled ones.

    Order-dependent: only increments after the last ``set`` count. Note that
    increments are sparse (about one statement in eight), so at short lengths
    many answers are 0 and cannot change under permutation: 58% of the
    programs of length 12 have no increment of the printed variable.
    Chance: the answer's distribution has no simple form; the default
    Monte-Carlo estimate from 20,000 examples is used (standard error at most
    0.004). It is high at short lengths, where 0 dominates: 0.89 at ``L = 4``,
    0.70 at ``L = 8``, 0.57 at ``L = 12``, 0.19 at ``L = 64``.
    """

    version = 1
    order_dependent = True
    vocab_size = MAX_VALUE + 1
    min_length = 4

    def output_length(self, length: int) -> int:
        return 1

    def generate_inputs(self, n: int, length: int, generator: torch.Generator) -> Tensor:
        steps = length - 1
        uniforms = torch.rand(n, steps + 2, generator=generator, dtype=torch.float64)  # (n, L + 1)
        # the first `set`: before it only `pass` is valid (P(set) = 1/51 per statement), conditioned to occur
        first_set_p = WEIGHT_SET / (WEIGHT_SET + WEIGHT_PASS)
        never = (1 - first_set_p) ** steps  # probability of no `set` in `steps` statements
        u = uniforms[:, 0] * (1 - never)  # inverse CDF of the geometric law truncated to [0, steps)
        first = (torch.log1p(-u) / torch.log1p(torch.tensor(-first_set_p, dtype=torch.float64))).floor().long()
        first = first.clamp(0, steps - 1)  # (n,)
        first_variable = (uniforms[:, 1] * VARIABLES).long().clamp(max=VARIABLES - 1)

        inputs = torch.full((n, length), PASS, dtype=torch.long)
        is_set = torch.zeros(n, VARIABLES, dtype=torch.bool)
        values = torch.zeros(n, VARIABLES, dtype=torch.long)
        rows = torch.arange(n)
        step_draws = torch.rand(n, steps, generator=generator, dtype=torch.float64)  # one uniform per statement
        for t in range(steps):  # vectorized over the batch: linear in L
            starts_now = first == t
            # weights of the valid statements: set v (3), pass, increment v (3)
            can_increment = is_set & (values < MAX_VALUE)  # (n, V)
            n_set = is_set.sum(1, keepdim=True).clamp(min=1)
            weights = torch.cat([
                torch.full((n, VARIABLES), WEIGHT_SET / VARIABLES, dtype=torch.float64),
                torch.full((n, 1), WEIGHT_PASS, dtype=torch.float64),
                can_increment * (WEIGHT_INCREMENT / n_set),
            ], dim=1)  # (n, 2V + 1)
            cumulative = weights.cumsum(1)
            choice = (cumulative < step_draws[:, t : t + 1] * cumulative[:, -1:]).sum(1).clamp(max=2 * VARIABLES)
            choice = torch.where(t < first, VARIABLES, choice)  # `pass` before the first set
            choice = torch.where(starts_now, first_variable, choice)
            setting = choice < VARIABLES
            incrementing = choice > VARIABLES
            variable = torch.where(setting, choice, choice - VARIABLES - 1).clamp(0, VARIABLES - 1)
            values[rows[setting], variable[setting]] = 0
            is_set[rows[setting], variable[setting]] = True
            values[rows[incrementing], variable[incrementing]] += 1
            token = torch.where(setting, SET + choice, torch.where(incrementing, INCREMENT + variable, PASS))
            inputs[:, t] = token
        # the question: a variable drawn uniformly among those set
        order = uniforms[:, -1:] * is_set.sum(1, keepdim=True)  # (n, 1) in [0, number set)
        rank = is_set.long().cumsum(1) - 1  # (n, V): rank of each set variable
        asked = ((rank == order.floor().long()) & is_set).long().argmax(1)
        inputs[:, -1] = PRINT + asked
        return inputs

    def solve(self, inputs: Tensor) -> Tensor:
        n, length = inputs.shape
        positions = torch.arange(length, device=inputs.device).expand(n, length)
        is_print = (inputs >= PRINT) & (inputs < PRINT + VARIABLES)
        last_print = torch.where(is_print, positions, -1).max(1, keepdim=True).values  # (n, 1)
        variable = torch.where(last_print >= 0, inputs.gather(1, last_print.clamp(min=0)) - PRINT, 0)  # (n, 1)
        last_set = torch.where(inputs == SET + variable, positions, -1).max(1, keepdim=True).values
        increments = (inputs == INCREMENT + variable) & (positions > last_set)
        return increments.sum(1, keepdim=True).clamp(max=MAX_VALUE)
