"""``train_seeds(configs, workdirs)``: several seeds (and learning rates) of one run trained together, in one
compiled program.

A length-generalisation table is the mean of several seeds (5 in Le et al. 2024)
of the same model, task and settings. One PANM step at batch 128 leaves a GPU
mostly idle, so the seeds are trained side by side: their train states are
stacked on a leading seed axis ``[S, ...]`` (independent initialisations, PRNG
keys and optimiser states), their batches too (``[S, B, ...]``: each seed's own
data stream, ``training_batch(task, config_s, step)``), and one ``jit(vmap(train_step))``
advances all S at once. Evaluation is ``vmap`` of the eval step over the stacked
parameters on the shared validation and test sets. ``SeedGroup`` holds these
pieces; the loop that drives them is the single run's (``train/engine.py``,
where a single run is the one-seed case with unbatched programs).

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

import contextlib
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.tasks.buckets import pad_batch
from panm_jax.train import engine
from panm_jax.train import evaluate as evaluation
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.config import TrainConfig
from panm_jax.train.lock import run_lock
from panm_jax.train.loop import (
    check_batch_sizes,
    default_buckets,
    display,
    note,
    training_batch,
)
from panm_jax.train.optim import make_optimizer
from panm_jax.train.sharding import (
    all_agree,
    is_primary,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    shard_batch,
)
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

__all__ = ["SeedGroup", "check_seed_configs", "rate_name", "stack", "train_seeds", "unstack"]

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


class SeedGroup:
    """The pieces of S members (seeds, learning rates) of one configured run: the task, the stacked train state
    ``[S, ...]`` and the members' learning rates ``[S]`` on the mesh, and the member-batched train and eval
    steps."""

    def __init__(self, configs: Sequence[TrainConfig]):
        check_seed_configs(configs)
        maybe_initialize_distributed()
        self.configs = list(configs)
        c = self.config = configs[0]
        self.task = c.build_task()
        states = []
        for cs in configs:  # each member's initial state, exactly a single run's (Run in train/loop.py)
            model = build_model(
                cs.model,
                input_size=self.task.input_size,
                output_size=self.task.output_size,
                seed=cs.seed,
                config=cs.model_config,
            )
            optimizer = make_optimizer(cs.optimizer, cs.num_steps)
            self.graphdef, state = init_train_state(model, optimizer, seed=cs.seed)
            states.append(jax.device_get(state))
        self.template = states[0]  # the structure of one member's state, for restoring checkpoints
        self.mesh = make_mesh()
        check_batch_sizes(c, self.mesh.devices.size)
        self.state = replicate(stack(states), self.mesh)
        # [S] float32: each member's rate, data of the one program (module docstring).
        rates = np.asarray([cs.optimizer.learning_rate for cs in configs], np.float32)
        self.learning_rates = replicate(rates, self.mesh)
        self.buckets = tuple(c.buckets) or default_buckets(
            self.task,
            c.batch_size,
            len({cs.seed for cs in self.configs}),  # the data streams padded together
        )
        self.modes = tuple(c.eval_modes) or tuple(self.task.test_modes)
        train_step = make_train_step(
            self.graphdef,
            lambda learning_rate: make_optimizer(c.optimizer, c.num_steps, learning_rate=learning_rate),
            self.task,
            skip_nonfinite=c.on_nan == "skip-batch",
            compute_dtype=c.compute_dtype,
        )

        def masked_step(state, batch, learning_rate, active):
            # An inactive member (ahead of the others after a resume) keeps its state: step, key and all.
            new, metrics = train_step(state, batch, learning_rate)
            return jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new, state), metrics

        # Two programs: every member advancing (the usual case, nothing but the vmapped step), and the masked
        # one, compiled only when a resume finds the members at different steps.
        self._step_all = jax.jit(jax.vmap(train_step), donate_argnums=0)
        self._step_masked = jax.jit(jax.vmap(masked_step), donate_argnums=0)
        eval_step = make_eval_step(self.graphdef, self.task, compute_dtype=c.compute_dtype)
        self.eval_step = jax.jit(jax.vmap(eval_step, in_axes=(0, None, None)))

    def train_step(self, state, batch, active: Sequence[bool]):
        """Advance the members whose ``active`` entry is true (all of them: ``jit(vmap(train_step))``), each at
        its learning rate."""
        if all(active):
            return self._step_all(state, batch, self.learning_rates)
        return self._step_masked(state, batch, self.learning_rates, jnp.asarray(active))

    @property
    def size(self) -> int:
        return len(self.configs)

    def batch(self, steps: Sequence[int]):
        """The stacked batch ``[S, B, ...]``: seed s's batch of step ``steps[s]``, all padded to the longest."""
        batches = [
            training_batch(self.task, cs, step, self.buckets) for cs, step in zip(self.configs, steps, strict=True)
        ]
        t_in = max(b.inputs.shape[1] for b in batches)
        t_out = max(b.targets.shape[1] for b in batches)
        batches = [pad_batch(b, t_in, t_out) for b in batches]
        return shard_batch(stack(batches), self.mesh, axis=1)

    def evaluate(self, params, modes, seed: int) -> list[dict[str, dict[str, Any]]]:
        """Per seed, ``evaluate``'s ``{mode: row}`` of that seed's parameters in the stacked ``params``."""
        c = self.config
        sets = evaluation.eval_sets(self.task, modes, c.eval_examples, c.eval_batch_size, seed)
        results = evaluation.evaluate(
            self.eval_step, params, self.task, sets, seed, shard=lambda b: shard_batch(b, self.mesh)
        )
        return evaluation.split_seeds(results, self.size)

    # ---- the training loop's interface (train/engine.py ``Pieces``): S seeds ---------------------

    def description(self) -> str:
        c = self.config
        seeds = ",".join(str(seed) for seed in dict.fromkeys(cs.seed for cs in self.configs))
        rates = dict.fromkeys(f"{cs.optimizer.learning_rate:g}" for cs in self.configs)
        return f"{c.model} on {c.task}, seeds {seeds}" + (
            f" x learning rates {','.join(rates)}" if len(rates) > 1 else ""
        )

    def unstack(self, state, index: int):
        return unstack(state, index)

    def place(self, states):
        return replicate(stack(states), self.mesh)

    def advance(self, state, batch, active):
        return self.train_step(state, batch, active)

    def seed_metrics(self, metrics, index: int) -> dict[str, float]:
        return {k: float(np.asarray(v)[index]) for k, v in metrics.items()}

    def evaluate_seeds(self, params, modes, seed: int) -> list[dict[str, dict[str, Any]]]:
        return self.evaluate(params, modes, seed)

    def view(self, index: int):
        return SimpleNamespace(config=self.configs[index], task=self.task)


def train_seeds(
    configs: Sequence[TrainConfig],
    workdirs: Sequence[str | Path],
    *,
    progress: bool = True,
    console: Console | None = None,
    allow_unverified: bool = False,
) -> list[dict[str, Any]]:
    """Train the members of ``configs`` (one run's settings, distinct seeds or learning rates: module docstring)
    together, member s in ``workdirs[s]`` (resuming each from its checkpoints); returns each member's results
    record, the one ``train_and_evaluate(configs[s], workdirs[s])`` returns.

    Raises ``UserError`` when the configs differ in more than their seed and learning rate, ``WorkdirBusy`` when
    another run holds one of the folders, ``CheckpointError`` and ``NonFiniteLossError`` as
    ``train_and_evaluate`` does.
    """
    check_seed_configs(configs)
    if len(workdirs) != len(configs):
        raise UserError(f"workdirs: expected one folder per seed ({len(configs)}), got {len(workdirs)}")
    workdirs = [Path(w) for w in workdirs]
    if len({w.resolve() for w in workdirs}) != len(workdirs):
        raise UserError(f"workdirs: expected a separate folder per seed, got {[str(w) for w in workdirs]}")
    maybe_initialize_distributed()
    several = jax.process_count() > 1
    if several and not is_primary():
        console, progress = Console(quiet=True), False
    console = console or Console()
    with contextlib.ExitStack() as stack_:
        for w in workdirs:
            lock = stack_.enter_context(run_lock(w, primary=is_primary(), agree=all_agree if several else None))
            if lock is not None and lock.stale_pid is not None:
                note(
                    f"{lock.path}: the run of process {lock.stale_pid} ended without releasing it (crashed or "
                    "killed); taking it over"
                )
        group = SeedGroup(configs)
        ckpts = [
            stack_.enter_context(
                contextlib.closing(
                    Checkpointer(w, keep=c.keep_checkpoints, notify=note, allow_unverified=allow_unverified)
                )
            )
            for w, c in zip(workdirs, configs, strict=True)
        ]
        show = stack_.enter_context(display(console, progress))
        return engine.run_to_end(engine.training(group, workdirs, ckpts), show)
