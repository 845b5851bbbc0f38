"""``train_seeds(configs, workdirs)``: several seeds of one run trained together, in one compiled program.

A length-generalisation table is the mean of several seeds (5 in Le et al. 2024)
of the same model, task and settings. One PANM step at batch 128 leaves a GPU
mostly idle, so the seeds are trained side by side: their train states are
stacked on a leading seed axis ``[S, ...]`` (independent initialisations, PRNG
keys and optimiser states), their batches too (``[S, B, ...]``: each seed's own
data stream, ``training_batch(task, config_s, step)``), and one ``jit(vmap(train_step))``
advances all S at once. Evaluation is ``vmap`` of the eval step over the stacked
parameters on the shared validation and test sets.

Each seed keeps its own run folder, exactly what ``train_and_evaluate`` of that
seed alone writes: ``config.json``, ``metrics.jsonl``, ``checkpoints/``, ``best/``,
``results.*``, ``accuracy.png`` and the folder's lock. A seed's checkpoints are
the single run's, so any seed can be resumed, evaluated or plotted on its own
(``panm-jax train``, ``eval``, ``plot``), and a seed trained alone can join a
batched resume.

Equality with single runs: the same initial states, batches, keys, selection rule
and evaluation sets, so the same numbers up to floating-point rounding. Not
bit-identical, for two reasons: XLA compiles the batched program's contractions
(a ``[S, B, ...]`` dot) with other kernels and summation orders than the single
ones, and when the seeds' batches of one step fall into different length
buckets, the shorter are padded to the longest (padding is inert: masked steps
change no output and no gradient, but the padded program rounds differently).
``tests/train/test_seeds.py`` checks 3 batched seeds against 3 single runs.

Resume is per seed: each folder resumes from its own latest checkpoint. When
the seeds stand at different steps (one trained further alone, or a crash
between the seeds' saves), the ones behind train first, the others' states held
(``where(active, new, old)`` in the step, no recompilation), until all stand at
the same step; from there all advance together (a program without the masking).

Differences from single runs, by design: a NaN loss under ``on_nan = "stop"``
in one seed stops all of them (each keeps its checkpoints); ``max_minutes`` is
one budget for the group. Batches are sharded over the devices of the mesh on
their batch axis (``B``), states replicated, as in a single run.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.progress import Progress

from panm_jax.errors import UserError
from panm_jax.models import build_model
from panm_jax.tasks import get_task
from panm_jax.tasks.buckets import pad_batch
from panm_jax.train import evaluate as evaluation
from panm_jax.train import report
from panm_jax.train.checkpoint import Checkpointer, CheckpointError
from panm_jax.train.config import TrainConfig
from panm_jax.train.io import append_jsonl, atomic_write_text
from panm_jax.train.lock import run_lock
from panm_jax.train.loop import (
    _MAX_UNCHECKED_STEPS,
    LossWatch,
    _time_up,
    check_batch_sizes,
    config_check,
    default_buckets,
    note,
    progress_columns,
    results_record,
    training_batch,
)
from panm_jax.train.optim import make_optimizer
from panm_jax.train.provenance import segment_record
from panm_jax.train.sharding import (
    all_agree,
    barrier,
    is_primary,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    shard_batch,
)
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

__all__ = ["SeedGroup", "check_seed_configs", "stack", "train_seeds", "unstack"]


def stack(trees: Sequence[Any]) -> Any:
    """Trees of equal structure -> one tree whose leaves have a leading axis ``[S, ...]``."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def unstack(tree: Any, index: int) -> Any:
    """Seed ``index``'s tree of a stacked tree (host arrays)."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], jax.device_get(tree))


def check_seed_configs(configs: Sequence[TrainConfig]) -> None:
    """The configs must be one run's settings with distinct seeds; raises ``UserError`` naming what differs."""
    if not configs:
        raise UserError("seeds: expected at least one seed, got none")
    seeds = [c.seed for c in configs]
    if len(set(seeds)) != len(seeds):
        raise UserError(f"seeds: expected distinct seeds, got {seeds}")
    first = {k: v for k, v in configs[0].to_dict().items() if k != "seed"}
    for c in configs[1:]:
        other = {k: v for k, v in c.to_dict().items() if k != "seed"}
        diff = sorted(k for k in first if first[k] != other.get(k))
        if diff:
            raise UserError(
                f"seeds: the runs trained together must differ only in their seed; seed {c.seed} "
                f"differs from seed {configs[0].seed} in {diff}"
            )


class SeedGroup:
    """The pieces of S seeds of one configured run: the task, the stacked train state ``[S, ...]`` on the
    mesh, and the seed-batched train and eval steps."""

    def __init__(self, configs: Sequence[TrainConfig]):
        check_seed_configs(configs)
        maybe_initialize_distributed()
        self.configs = list(configs)
        c = self.config = configs[0]
        self.task = get_task(c.task, **c.task_options)
        self.optimizer = make_optimizer(c.optimizer, c.num_steps)
        states = []
        for cs in configs:  # each seed's initial state, exactly a single run's (Run in train/loop.py)
            model = build_model(
                cs.model,
                input_size=self.task.input_size,
                output_size=self.task.output_size,
                seed=cs.seed,
                **cs.model_options,
            )
            self.graphdef, state = init_train_state(model, self.optimizer, seed=cs.seed)
            states.append(jax.device_get(state))
        self.template = states[0]  # the structure of one seed's state, for restoring checkpoints
        self.mesh = make_mesh()
        check_batch_sizes(c, self.mesh.devices.size)
        self.state = replicate(stack(states), self.mesh)
        self.buckets = tuple(c.buckets) or default_buckets(self.task)
        self.modes = tuple(c.eval_modes) or tuple(self.task.test_modes)
        train_step = make_train_step(
            self.graphdef,
            self.optimizer,
            self.task,
            skip_nonfinite=c.on_nan == "skip-batch",
            compute_dtype=c.compute_dtype,
        )

        def masked_step(state, batch, active):
            # An inactive seed (ahead of the others after a resume) keeps its state: step, key and all.
            new, metrics = train_step(state, batch)
            return jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new, state), metrics

        # Two programs: every seed advancing (the usual case, nothing but the vmapped step), and the masked
        # one, compiled only when a resume finds the seeds at different steps.
        self._step_all = jax.jit(jax.vmap(train_step), donate_argnums=0)
        self._step_masked = jax.jit(jax.vmap(masked_step), donate_argnums=0)
        eval_step = make_eval_step(self.graphdef, self.task, compute_dtype=c.compute_dtype)
        self.eval_step = jax.jit(jax.vmap(eval_step, in_axes=(0, None, None)))

    def train_step(self, state, batch, active: Sequence[bool]):
        """Advance the seeds whose ``active`` entry is true (all of them: ``jit(vmap(train_step))``)."""
        if all(active):
            return self._step_all(state, batch)
        return self._step_masked(state, batch, jnp.asarray(active))

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


def train_seeds(
    configs: Sequence[TrainConfig],
    workdirs: Sequence[str | Path],
    *,
    progress: bool = True,
    console: Console | None = None,
    allow_unverified: bool = False,
) -> list[dict[str, Any]]:
    """Train the seeds of ``configs`` (one run's settings, distinct seeds) together, seed s in
    ``workdirs[s]`` (resuming each from its checkpoints); returns each seed's results record, the one
    ``train_and_evaluate(configs[s], workdirs[s])`` returns.

    Raises ``UserError`` when the configs differ in more than their seed, ``WorkdirBusy`` when another run
    holds one of the folders, ``CheckpointError`` and ``NonFiniteLossError`` as ``train_and_evaluate`` does.
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
        return _train(group, ckpts, workdirs, progress=progress, console=console)


def _train(
    group: SeedGroup, ckpts: list[Checkpointer], workdirs: list[Path], *, progress: bool, console: Console
) -> list[dict[str, Any]]:
    c, configs, S = group.config, group.configs, group.size
    primary = is_primary()
    checks = [config_check(cs, w) for cs, w in zip(configs, workdirs, strict=True)]
    states = [jax.device_get(unstack(group.state, s)) for s in range(S)]
    best_scores = []
    watches = []
    for s in range(S):
        restored = ckpts[s].restore_latest(group.template, checks[s])
        best_meta = ckpts[s].best_meta(
            checks[s], then="the run goes on from the latest checkpoint and keeps a new best at its next evaluation"
        )
        best_scores.append((best_meta["score"], -best_meta["loss"]) if best_meta else (-np.inf, -np.inf))
        if restored is not None:
            saved, meta = restored
            if meta["step"] > c.num_steps:
                raise CheckpointError(
                    f"num_steps: the checkpoints in {str(workdirs[s])!r} are at step {meta['step']}, beyond the "
                    f"num_steps given ({c.num_steps}); give at least {meta['step']} to resume, or use another "
                    "workdir"
                )
            states[s] = saved
            console.print(f"seed {configs[s].seed}: resumed from step {meta['step']} ({workdirs[s] / 'checkpoints'})")
        skipped = restored[1].get("skipped_batches", 0) if restored is not None else 0
        watches.append(LossWatch(configs[s], ckpts[s], workdirs[s] / "metrics.jsonl", primary=primary, skipped=skipped))
        if primary:
            started = ("resumed", meta["step"]) if restored is not None else ("started", 0)
            append_jsonl(workdirs[s] / "metrics.jsonl", segment_record(*started))
            atomic_write_text(workdirs[s] / "config.json", json.dumps(configs[s].to_dict(), indent=2) + "\n")
    state = replicate(stack(states), group.mesh)
    pos = [int(st.step) for st in states]  # each seed's steps taken
    logs = [w / "metrics.jsonl" for w in workdirs]
    headline = group.task.metric_names[0]
    deadline = None if c.max_minutes is None else time.monotonic() + 60.0 * c.max_minutes
    pending: list[tuple[list[int], Any]] = []  # (the steps each active seed reached, stacked metrics on device)
    t_last, s_last = time.perf_counter(), min(pos)
    seeds_text = ",".join(str(cs.seed) for cs in configs)
    with Progress(*progress_columns(), console=console, disable=not progress, transient=False) as bar:
        job = bar.add_task(
            f"{c.model} on {c.task}, seeds {seeds_text}",
            total=c.num_steps,
            completed=min(pos),
            loss="-",
            acc="-",
            rate="-",
        )
        while min(pos) < c.num_steps:
            lo = min(pos)
            active = [p == lo for p in pos]
            state, metrics = group.train_step(state, group.batch(pos), active)
            for s in range(S):
                if active[s]:
                    pos[s] += 1
            done = min(pos)
            pending.append(([pos[s] if active[s] else -1 for s in range(S)], metrics))
            last = done == c.num_steps or (deadline is not None and _time_up(deadline))
            acting = [s for s in range(S) if active[s]]
            log_now = [s for s in acting if pos[s] % c.log_every == 0 or last]
            eval_now = [s for s in acting if pos[s] % c.eval_every == 0 or last]
            save_now = [s for s in acting if pos[s] % c.checkpoint_every == 0 or last]
            if log_now or eval_now or save_now or len(pending) >= _MAX_UNCHECKED_STEPS:
                _check_pending(pending, watches)
                pending = []
            if log_now:
                m = {k: np.asarray(v) for k, v in jax.device_get(metrics).items()}
                now = time.perf_counter()
                rate = (done - s_last) / max(now - t_last, 1e-9)
                t_last, s_last = now, done
                for s in log_now:
                    if primary:
                        append_jsonl(
                            logs[s],
                            {
                                "step": pos[s],
                                "time": time.time(),
                                "steps_per_s": rate,
                                **{k: float(v[s]) for k, v in m.items()},
                            },
                        )
                bar.update(
                    job,
                    completed=done,
                    loss=f"{float(np.mean(m['loss'])):.4f}",
                    acc=f"{100 * float(np.min(m[headline])):.1f}-{100 * float(np.max(m[headline])):.1f}%",
                    rate=f"{rate:.1f}",
                )
            if eval_now:
                val = group.evaluate(state.params, (c.select_mode,), evaluation.VALIDATION_SEED)
                for s in eval_now:
                    row = val[s][c.select_mode]
                    score = (row[headline], -row["loss"])
                    if primary:
                        append_jsonl(logs[s], {"step": pos[s], "validation": val[s]})
                    if score > best_scores[s]:
                        best_scores[s] = score
                        ckpts[s].save_best(
                            pos[s],
                            unstack(state, s),
                            {
                                "step": pos[s],
                                "score": score[0],
                                "loss": -score[1],
                                "mode": c.select_mode,
                                "config": configs[s].to_dict(),
                            },
                        )
            for s in save_now:
                ckpts[s].save(
                    pos[s],
                    unstack(state, s),
                    {
                        "step": pos[s],
                        "data_position": pos[s],
                        "seed": configs[s].seed,
                        "config": configs[s].to_dict(),
                        "skipped_batches": watches[s].skipped,
                    },
                )
            if last:
                if done < c.num_steps and primary:
                    for s in range(S):
                        append_jsonl(
                            logs[s], {"event": "time budget reached", "step": pos[s], "max_minutes": c.max_minutes}
                        )
                break
    # Each seed's best checkpoint (selected on select_mode) on the test sets, all seeds in one evaluation.
    final_state = jax.device_get(state)
    best_params, best_steps = [], []
    for s in range(S):
        best = ckpts[s].restore_best(unstack(final_state, s), checks[s], then="reporting the latest state instead")
        if best is None:
            best_params.append(unstack(final_state.params, s))
            best_steps.append(pos[s])
        else:
            best_params.append(best[0].params)
            best_steps.append(best[1]["step"])
    per_seed = group.evaluate(replicate(stack(best_params), group.mesh), group.modes, evaluation.TEST_SEED)
    records = []
    for s in range(S):
        view = SimpleNamespace(config=configs[s], task=group.task)
        record = results_record(view, per_seed[s], best_steps[s])
        if primary:
            report.write_results(record, workdirs[s] / "results")
            report.plot_accuracy([record], workdirs[s] / "accuracy.png")
        records.append(record)
    barrier("panm_jax: seed results written")
    return records


def _check_pending(pending, watches: list[LossWatch]) -> None:
    """Each seed's ``LossWatch.check`` over the steps since the last check (one transfer for all seeds)."""
    if not pending:
        return
    values = jax.device_get(
        [
            (m["loss"], m.get("grad_norm", jnp.zeros_like(m["loss"])), m.get("param_norm", jnp.zeros_like(m["loss"])))
            for _, m in pending
        ]
    )
    for s, watch in enumerate(watches):
        steps = [
            (
                reached[s],
                {
                    "loss": float(np.asarray(loss)[s]),
                    "grad_norm": float(np.asarray(grad)[s]),
                    "param_norm": float(np.asarray(norm)[s]),
                },
            )
            for (reached, _), (loss, grad, norm) in zip(pending, values, strict=True)
            if reached[s] >= 0
        ]
        if steps:
            watch.check(steps)
