"""``train_and_evaluate(config, workdir)``: a whole run, resumable at any point.

A single run is the one-seed case of the training loop (``train/engine.py``,
which ``train_seeds`` drives for several seeds): this module holds its pieces,
``Run`` (the task, the model by name, the optax optimiser, ``nnx.split`` once,
the state on a mesh of every device, the jitted ``train_step`` and
``eval_step``), and what the loop shares between one seed and several: the
batch of a step (``training_batch``: a pure function of ``(seed, step)``, so
the step is the data stream's position), the default buckets, the config check
of a resumed checkpoint, the checks of the losses (``LossWatch``) and the
results record. ``train_and_evaluate`` takes the workdir's lock (one run per
folder, ``train/lock.py``), resumes from the newest readable checkpoint and
runs the loop to its end (see ``train/engine.py`` for its steps).

Files in ``workdir``: ``config.json``, ``metrics.jsonl``, ``checkpoints/``,
``best/``, ``results.*``, ``accuracy.png`` and ``.lock`` (the running
process's PID, empty when none runs). All are written atomically (or
append-only); a run killed at any moment loses at most the steps since its last
checkpoint, and rerunning the same command resumes it exactly. Notes on what
the run found and did (a corrupt checkpoint set aside, skipped batches) go to
stderr, one line each (``note``).

The folder is checked before anything is built or written: its path must be one
orbax can write checkpoints under (``check_workdir_path``: UTF-8 text, and none
of the characters orbax and tensorstore read as something else), and what is
already there must not stand where the run writes (``check_run_folder``: a file
where ``checkpoints/`` or ``best/`` goes, a folder where a file goes, a folder
that cannot be written). Either raises at once, naming the path, instead of at
the first checkpoint or results write. Orbax's temporary folders of a save
that was cut short (a full disk, a second Ctrl-C, a kill) are removed when the
save fails and again when a run starts (``remove_partial_checkpoints``).

Several processes (``jax.distributed``, ``docs/distributed.md``) run the same
loop on the same data, each feeding its devices' rows of every global batch;
``workdir`` must be one folder that all of them see. Process 0 alone takes the
lock, writes ``config.json``, ``metrics.jsonl``, ``results.*`` and
``accuracy.png`` and prints; every process takes part in each checkpoint save
and restore (orbax has process 0 write the arrays and coordinates the others)
and in each evaluation (its metrics are reduced over all devices, so every
process gets the global numbers). With one process all of this is the single
run above.
"""

from __future__ import annotations

import contextlib
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
from panm_jax.tasks.buckets import fitted_buckets, pad_batch, pad_to_bucket, training_length_distribution
from panm_jax.tasks.losses import check_batch
from panm_jax.train import engine
from panm_jax.train import evaluate as evaluation
from panm_jax.train.checkpoint import Checkpointer
from panm_jax.train.config import TrainConfig
from panm_jax.train.engine import check_run_folder, check_workdir_path, note, remove_partial_checkpoints
from panm_jax.train.interrupt import at_safe_points
from panm_jax.train.lock import run_lock
from panm_jax.train.optim import make_optimizer
from panm_jax.train.progress import ProgressDisplay
from panm_jax.train.seeds import check_seed_configs, stack, unstack
from panm_jax.train.sharding import (
    all_agree,
    is_primary,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    shard_batch,
)
from panm_jax.train.steps import init_train_state, make_eval_step, make_train_step

__all__ = [
    "Run",
    "default_buckets",
    "train_and_evaluate",
    "train_seeds",
    "training_batch",
]


def default_buckets(task, batch_size: int = 128, seeds: int = 1) -> tuple[int, ...]:
    """The buckets fitted to the lengths of ``task``'s training batches of ``batch_size`` examples (of the
    longest of ``seeds`` batches, for seeds trained together): the fewest that compute at most 10 % more
    time steps than the real ones (``tasks.buckets.fitted_buckets`` over ``training_length_distribution``):
    (2, 4, 6, 8, 10) for 1..10, one bucket every 5 lengths for 1..40. The last bucket is the longest
    training length, so every training length has one.
    """
    return fitted_buckets(task, *training_length_distribution(task, batch_size, seeds=seeds))


def training_batch(task, config: TrainConfig, step: int, buckets):
    """The batch of ``step``: a pure function of ``(config.seed, step)``."""
    rng = np.random.default_rng([config.seed, step])
    batch = task.train_batch(rng, config.batch_size)
    try:  # a class id outside [0, K) would index past the logits: a NaN loss many steps later
        check_batch(batch, task.output_size, task.target_kind)
    except ValueError as err:
        raise ValueError(f"task {task.name!r}, training batch of step {step}: {err}") from None
    return pad_to_bucket(batch, task, buckets)


def check_batch_sizes(config: TrainConfig, num_devices: int) -> None:
    """Every batch of the run (training, and evaluation with its smaller last batch) splits evenly over
    the ``num_devices`` devices of the mesh (of all processes); raises ``UserError`` naming the field."""
    where = f"the {num_devices} devices" + (
        f" of the {jax.process_count()} processes" if jax.process_count() > 1 else ""
    )
    ex, eb = config.eval_examples, config.eval_batch_size
    # With eval_batch_size a multiple, eval_examples is one exactly when its last evaluation batch is.
    sizes = (
        [("batch_size", config.batch_size)] + ([("eval_batch_size", eb)] if ex > eb else []) + [("eval_examples", ex)]
    )
    for name, size in sizes:
        if size % num_devices:
            last = f" (a last evaluation batch of {ex % eb})" if name == "eval_examples" and ex > eb else ""
            raise UserError(f"{name}: expected a multiple of {where}, got {size}{last}")


class Run:
    """The pieces of a configured run of S >= 1 members (``train/engine.py``'s ``Pieces``): the task, each
    member's model, optimiser and initial train state, the mesh, the buckets and modes, and the jitted steps.

    ``Run(config)`` (or a list of one config) is a single run: its state as it is and its programs unbatched
    (``jit(train_step)``, ``jit(eval_step)``). ``Run(configs)`` with several members (distinct seeds or
    learning rates of one run's settings, ``seeds.check_seed_configs``) stacks their states on a leading
    axis ``[S, ...]`` and batches the programs over it (``jit(vmap(...))``, each member's learning rate an
    ``[S]`` array of data: ``train/seeds.py``). Also used by ``panm-jax eval`` (``train/run_eval.py``).
    """

    def __init__(self, configs: TrainConfig | Sequence[TrainConfig]):
        configs = [configs] if isinstance(configs, TrainConfig) else list(configs)
        check_seed_configs(configs)
        maybe_initialize_distributed()
        self.configs = configs
        c = self.config = configs[0]
        self.task = c.build_task()
        states = []
        for cs in configs:  # each member's initial state, exactly the single run's
            model = build_model(
                cs.model,
                input_size=self.task.input_size,
                output_size=self.task.output_size,
                seed=cs.seed,
                config=cs.model_config,
            )
            self.optimizer = make_optimizer(cs.optimizer, cs.num_steps)
            self.graphdef, state = init_train_state(model, self.optimizer, seed=cs.seed)
            states.append(state)
            if len(states) == 1:
                self.model = model  # the first member's, for traces (train/report.py)
        self.template = jax.device_get(states[0])  # one member's state structure, for restoring checkpoints
        self.mesh = make_mesh()
        check_batch_sizes(c, self.mesh.devices.size)
        seeds = len({cs.seed for cs in configs})  # the data streams padded together
        self.buckets = tuple(c.buckets) or default_buckets(self.task, c.batch_size, seeds)
        self.modes = tuple(c.eval_modes) or tuple(self.task.test_modes)  # checked by TrainConfig
        skip = c.on_nan == "skip-batch"
        if self.size == 1:
            self.state = replicate(states[0], self.mesh)
            step = make_train_step(self.graphdef, self.optimizer, self.task, skip_nonfinite=skip,
                                   compute_dtype=c.compute_dtype)  # fmt: skip
            self.train_step = jax.jit(step, donate_argnums=0)
            self.eval_step = jax.jit(make_eval_step(self.graphdef, self.task, compute_dtype=c.compute_dtype))
            return
        self.state = replicate(stack([jax.device_get(st) for st in states]), self.mesh)
        # [S] float32: each member's rate, data of the one program (train/seeds.py).
        rates = np.asarray([cs.optimizer.learning_rate for cs in configs], np.float32)
        self.learning_rates = replicate(rates, self.mesh)
        train_step = make_train_step(
            self.graphdef,
            lambda learning_rate: make_optimizer(c.optimizer, c.num_steps, learning_rate=learning_rate),
            self.task,
            skip_nonfinite=skip,
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

    @property
    def size(self) -> int:
        """S, the number of members."""
        return len(self.configs)

    def shard(self, batch):
        """A batch of one member (an evaluation batch: every member's), split on its batch axis over the mesh."""
        return shard_batch(batch, self.mesh)

    def evaluate(self, params, modes, seed: int):
        """``evaluate``'s ``{mode: row}`` of ``params`` on the sets of ``modes`` drawn from ``seed``; per member
        (a list) when S > 1."""
        c = self.config
        sets = evaluation.eval_sets(self.task, modes, c.eval_examples, c.eval_batch_size, seed)
        results = evaluation.evaluate(self.eval_step, params, self.task, sets, seed, shard=self.shard)
        return results if self.size == 1 else evaluation.split_seeds(results, self.size)

    # ---- the training loop's interface (train/engine.py ``Pieces``) ------------------------------

    def description(self) -> str:
        c = self.config
        if self.size == 1:
            return f"{c.model} on {c.task}"
        seeds = ",".join(str(seed) for seed in dict.fromkeys(cs.seed for cs in self.configs))
        rates = dict.fromkeys(f"{cs.optimizer.learning_rate:g}" for cs in self.configs)
        return f"{c.model} on {c.task}, seeds {seeds}" + (
            f" x learning rates {','.join(rates)}" if len(rates) > 1 else ""
        )

    def unstack(self, state, index: int):
        return jax.device_get(state) if self.size == 1 else unstack(state, index)

    def place(self, states):
        return replicate(states[0] if self.size == 1 else stack(states), self.mesh)

    def batch(self, steps):
        """Member s's batch of step ``steps[s]``; stacked ``[S, B, ...]`` and padded to the longest when S > 1."""
        batches = [
            training_batch(self.task, cs, step, self.buckets) for cs, step in zip(self.configs, steps, strict=True)
        ]
        if self.size == 1:
            return self.shard(batches[0])
        t_in = max(b.inputs.shape[1] for b in batches)
        t_out = max(b.targets.shape[1] for b in batches)
        return shard_batch(stack([pad_batch(b, t_in, t_out) for b in batches]), self.mesh, axis=1)

    def advance(self, state, batch, active):
        """Advance the members whose ``active`` entry is true, each at its learning rate."""
        if self.size == 1:
            return self.train_step(state, batch)
        if all(active):
            return self._step_all(state, batch, self.learning_rates)
        return self._step_masked(state, batch, self.learning_rates, jnp.asarray(active))

    def seed_metrics(self, metrics, index: int) -> dict[str, float]:
        if self.size == 1:
            return {k: float(v) for k, v in metrics.items()}
        return {k: float(np.asarray(v)[index]) for k, v in metrics.items()}

    def evaluate_seeds(self, params, modes, seed: int) -> list[dict[str, dict[str, Any]]]:
        results = self.evaluate(params, modes, seed)
        return [results] if self.size == 1 else results

    def view(self, index: int) -> Any:
        """Member ``index``'s ``config`` and ``task`` (for ``engine.results_record``)."""
        return self if self.size == 1 else SimpleNamespace(config=self.configs[index], task=self.task)


def train_and_evaluate(
    config: TrainConfig,
    workdir: str | Path,
    *,
    progress: bool = True,
    console: Console | None = None,
    allow_unverified: bool = False,
) -> dict[str, Any]:
    """Train ``config`` in ``workdir`` (resuming if it holds a checkpoint); returns the results record:
    ``train_seeds([config], [workdir])``'s one record.

    ``allow_unverified``: resume from a checkpoint without its checksums (``Checkpointer``).

    Raises ``WorkdirBusy`` when another run holds the workdir, ``CheckpointError``
    when its checkpoints belong to other settings (or none can be read), and
    ``NonFiniteLossError`` on a non-finite loss with ``on_nan = "stop"``.

    With several processes every one calls this with the same arguments; each
    returns the same record, once process 0 has written the results.
    """
    (results,) = train_seeds([config], [workdir], progress=progress, console=console, allow_unverified=allow_unverified)
    return results


def train_seeds(
    configs: Sequence[TrainConfig],
    workdirs: Sequence[str | Path],
    *,
    progress: bool = True,
    console: Console | None = None,
    allow_unverified: bool = False,
) -> list[dict[str, Any]]:
    """Train the members of ``configs`` (one run's settings, distinct seeds or learning rates:
    ``train/seeds.py``) together, member s in ``workdirs[s]`` (resuming each from its checkpoints); returns
    each member's results record, the one ``train_and_evaluate(configs[s], workdirs[s])`` returns. One
    config is a single run.

    Raises ``UserError`` when the configs differ in more than their seed and learning rate, ``WorkdirBusy`` when
    another run holds one of the folders, ``CheckpointError`` and ``NonFiniteLossError`` as
    ``train_and_evaluate`` does.
    """
    check_seed_configs(configs)
    if len(workdirs) != len(configs):
        raise UserError(f"workdirs: expected one folder per seed ({len(configs)}), got {len(workdirs)}")
    workdirs = [check_workdir_path(w) for w in workdirs]
    if len({w.resolve() for w in workdirs}) != len(workdirs):
        raise UserError(f"workdirs: expected a separate folder per seed, got {[str(w) for w in workdirs]}")
    for w in workdirs:
        check_run_folder(w)  # before the lock: nothing is created in a folder the run cannot use
    maybe_initialize_distributed()  # before the first JAX call
    several = jax.process_count() > 1
    if several and not is_primary():
        console, progress = Console(quiet=True), False  # process 0 alone prints
    console = console or Console()
    with contextlib.ExitStack() as held:
        for w in workdirs:
            lock = held.enter_context(run_lock(w, primary=is_primary(), agree=all_agree if several else None))
            if lock is not None and lock.stale_pid is not None:
                note(
                    f"{lock.path}: the run of process {lock.stale_pid} ended without releasing it (crashed or "
                    "killed); taking it over"
                )
        held.enter_context(at_safe_points())  # Ctrl-C and SIGTERM stop it between steps (train/interrupt.py)
        run = Run(configs)
        ckpts = []
        for w, c in zip(workdirs, configs, strict=True):
            ckpts.append(Checkpointer(w, keep=c.keep_checkpoints, notify=note, allow_unverified=allow_unverified))
            held.callback(_close, ckpts[-1], w)
        show = held.enter_context(display(console, progress))
        return engine.run_to_end(engine.training(run, workdirs, ckpts), show)


def _close(ckpt: Checkpointer, workdir: Path) -> None:
    # Close the checkpointer; when the run did not finish, what a cut-short save left goes (orbax's writes
    # have ended by then). A finished run left nothing.
    try:
        ckpt.close()
    finally:
        if is_primary():
            remove_partial_checkpoints(workdir)


def display(console: Console, progress: bool):
    """The ``on_record`` of ``engine.run_to_end`` (a context manager): the progress bar and notes
    (``panm_jax.train.progress``) on ``console``."""
    return ProgressDisplay(console, enabled=progress)
