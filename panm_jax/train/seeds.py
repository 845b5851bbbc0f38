"""Several seeds (and learning rates) of one run trained together, in one compiled program
(``train.loop.train_seeds(configs, workdirs)``; this module holds what its members share).

A length-generalisation table is the mean of several seeds (5 in Le et al. 2024)
of the same model, task and settings. One PANM step at batch 128 leaves a GPU
mostly idle, so the seeds are trained side by side: their train states are
stacked on a leading seed axis ``[S, ...]`` (independent initialisations, PRNG
keys and optimiser states), their batches too (``[S, B, ...]``: each seed's own
data stream, ``training_batch(task, config_s, step)``), and one ``jit(vmap(train_step))``
advances all S at once. Evaluation is ``vmap`` of the eval step over the stacked
parameters on the shared validation and test sets. ``train.loop.Run`` holds these
pieces for any number of members (one member: a single run, its programs
unbatched); the loop that drives them is ``train/engine.py``'s.

Grids of seeds x learning rates (Delétang et al. 2023 train each cell at 10
seeds x 3 learning rates) are the same group: its S members are configs that
may differ in ``seed`` and ``optimizer.learning_rate`` and in nothing else. The
learning rate enters the step as data, an ``[S]`` float32 array ``vmap``-ped
beside the states: each member's optimiser is built inside the step from its
traced rate (``make_optimizer(..., learning_rate=lr)``, ``train/optim.py``), with
the state structure and the arithmetic of the single run at that rate, so the
members differ in data only and share one program, whatever the optimiser and
schedule. Members of one seed start from the same initial state and read the
same batches (the batch of step t is a function of ``(seed, t)``).
``panm-jax train --seeds 0,1 --learning-rates 1e-3,3e-4`` writes member
(rate r, seed s) to ``WORKDIR/lr<r>/s<s>``, the rate spelt by ``rate_name``
(``lr1e-3/s0``); ``train/grid.py`` picks each cell's best member.

Each member keeps its own run folder, exactly what ``train_and_evaluate`` of
that member's config alone writes: ``config.json`` (with the member's seed and
learning rate), ``metrics.jsonl``, ``checkpoints/``, ``best/``, ``results.*``,
``accuracy.png`` and the folder's lock. A member's checkpoints are the single
run's, so any member can be resumed, evaluated or plotted on its own
(``panm-jax train``, ``eval``, ``plot``), and a run trained alone can join a
batched resume.

Equality with single runs: the same initial states, batches, keys, learning
rates, selection rule and evaluation sets, so the same numbers up to
floating-point rounding. Not bit-identical, for two reasons: XLA compiles the
batched program's contractions (a ``[S, B, ...]`` dot) with other kernels and
summation orders than the single ones, and when the members' batches of one
step fall into different length buckets, the shorter are padded to the longest
(padding is inert: masked steps change no output and no gradient, but the
padded program rounds differently). ``tests/train/test_seeds.py`` checks 3
batched seeds against 3 single runs and a grid of 2 seeds x 2 learning rates
against its 4 single runs; ``tests/train/test_grid.py`` checks the traced rate
against the single run's constant one for every optimiser and schedule.

Resume is per member: each folder resumes from its own latest checkpoint. When
the members stand at different steps (one trained further alone, or a crash
between the members' saves), the ones behind train first, the others' states
held (``where(active, new, old)`` in the step, no recompilation), until all
stand at the same step; from there all advance together (a program without the
masking).

Differences from single runs, by design: a NaN loss under ``on_nan = "stop"``
in one member stops all of them (each keeps its checkpoints); ``max_minutes`` is
one budget for the group. Batches are sharded over the devices of the mesh on
their batch axis (``B``), states replicated, as in a single run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from panm_jax.errors import UserError
from panm_jax.train.config import TrainConfig

__all__ = ["MEMBER_FIELDS", "check_seed_configs", "rate_name", "stack", "unstack"]

# The settings in which the members of one group may differ.
MEMBER_FIELDS = ("seed", "optimizer.learning_rate")


def stack(trees: Sequence[Any]) -> Any:
    """Trees of equal structure -> one tree whose leaves have a leading axis ``[S, ...]``."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def unstack(tree: Any, index: int) -> Any:
    """Seed ``index``'s tree of a stacked tree (host arrays)."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], jax.device_get(tree))


def rate_name(learning_rate: float) -> str:
    """A learning rate as a member's folder names it: ``3e-4`` -> ``"lr3e-4"`` (the shortest exact spelling, so
    ``0.0003`` and ``3e-4`` name one folder)."""
    return "lr" + np.format_float_scientific(learning_rate, trim="-", exp_digits=1)


def _settings(config: TrainConfig) -> dict[str, Any]:
    """``{dotted field: value}`` of ``config`` as given (``dataclasses.asdict``, not ``to_dict``, which builds the
    task to name its mode), nested dataclasses flattened one level (``optimizer.momentum``)."""
    out = {}
    for key, value in dataclasses.asdict(config).items():
        if key == "optimizer":
            out.update({f"optimizer.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def _member(config: TrainConfig) -> str:
    return f"seed {config.seed}, learning rate {config.optimizer.learning_rate:g}"


def check_seed_configs(configs: Sequence[TrainConfig]) -> None:
    """The configs must be one run's settings with distinct ``(seed, optimizer.learning_rate)`` members; raises
    ``UserError`` naming what differs."""
    if not configs:
        raise UserError("seeds: expected at least one seed, got none")
    members = [(c.seed, c.optimizer.learning_rate) for c in configs]
    if len(set(members)) != len(members):
        if len({rate for _, rate in members}) == 1:
            raise UserError(f"seeds: expected distinct seeds, got {[seed for seed, _ in members]}")
        raise UserError(f"seeds: expected distinct (seed, learning rate) members, got {members}")
    first = {k: v for k, v in _settings(configs[0]).items() if k not in MEMBER_FIELDS}
    for c in configs[1:]:
        other = {k: v for k, v in _settings(c).items() if k not in MEMBER_FIELDS}
        diff = sorted(k for k in first if first[k] != other.get(k))
        if diff:
            raise UserError(
                "seeds: the runs trained together must differ only in their seed and learning rate; "
                f"{_member(c)} differs from {_member(configs[0])} in {diff}"
            )
