"""Training and evaluation: optax steps, orbax checkpoints, sharding, reports.

One ``TrainConfig`` describes a run; ``train_and_evaluate(config, workdir)``
trains it (a pure jitted ``train_step`` per length bucket), keeps checkpoints
that resume exactly, evaluates on the task's length modes and writes the
results; ``train_seeds`` trains several seeds of one run together.

Modules:

* ``config``: ``TrainConfig``, ``OptimizerConfig``, ``load_config`` (TOML or JSON
  files and ``section.field=value`` overrides), validation.
* ``engine``: the one training loop, for one seed or several, yielding
  records (the command line's progress bar shows them), and its checks of the
  run folders, the losses and the resumed configs.
* ``loop``: ``Run``, the pieces of a run of one seed or several, and the entry
  points ``train_seeds`` and ``train_and_evaluate`` (its one-run form).
* ``seeds``: what the members of several seeds of one run share (stacking,
  the check that they differ only in seed and learning rate).
* ``steps``: ``TrainState`` and the jitted train and evaluation steps.
* ``optim``: optimisers and learning-rate schedules from a config.
* ``checkpoint``: orbax checkpoints that resume exactly.
* ``evaluate``: evaluation over length modes (a module; its function is
  ``panm_jax.train.evaluate.evaluate``).
* ``range_eval``: evaluation at every length of a range, one compilation per
  length bucket.
* ``run_eval``: ``evaluate_run`` and ``evaluate_run_range``, a run folder's
  checkpoint evaluated (what ``panm-jax eval`` does).
* ``report``: results tables and plots (a model's traces too).
* ``sharding``: data parallelism over a ``jax.sharding.Mesh``, one or several
  processes (see ``docs/distributed.md``).
* ``io``, ``lock``, ``checksums``: atomic writes, the work folder's lock, file
  checksums.
* ``provenance``: what trains each part of a run (commit, versions, device),
  logged at every start and resume.

The ``panm-jax train``, ``eval`` and ``plot`` sub-commands that drive them are
in ``panm_jax.cli``. Importing this package imports none of them (nor JAX): the
names in ``__all__`` load their module on first use.
"""

from __future__ import annotations

from panm_jax._lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

# name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(["ConfigError", "OptimizerConfig", "TrainConfig", "load_config"], "panm_jax.train.config"),
    "NonFiniteLossError": "panm_jax.train.engine",
    **dict.fromkeys(["Run", "train_and_evaluate", "train_seeds"], "panm_jax.train.loop"),
    **dict.fromkeys(["TrainState", "init_train_state", "make_eval_step", "make_train_step"], "panm_jax.train.steps"),
    **dict.fromkeys(["make_optimizer", "paper_optimizer"], "panm_jax.train.optim"),
    **dict.fromkeys(["CheckpointError", "Checkpointer"], "panm_jax.train.checkpoint"),
    **dict.fromkeys(["RangeResult", "range_evaluate"], "panm_jax.train.range_eval"),
    **dict.fromkeys(["Evaluation", "evaluate_run", "evaluate_run_range"], "panm_jax.train.run_eval"),
    **dict.fromkeys(["load_results", "plot_accuracy"], "panm_jax.train.report"),
    "make_mesh": "panm_jax.train.sharding",
    "WorkdirBusy": "panm_jax.train.lock",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from typing import Any

    from panm_jax.train.checkpoint import Checkpointer, CheckpointError
    from panm_jax.train.config import ConfigError, OptimizerConfig, TrainConfig, load_config
    from panm_jax.train.engine import NonFiniteLossError
    from panm_jax.train.lock import WorkdirBusy
    from panm_jax.train.loop import Run, train_and_evaluate, train_seeds
    from panm_jax.train.optim import make_optimizer, paper_optimizer
    from panm_jax.train.range_eval import RangeResult, range_evaluate
    from panm_jax.train.report import load_results, plot_accuracy
    from panm_jax.train.run_eval import Evaluation, evaluate_run, evaluate_run_range
    from panm_jax.train.sharding import make_mesh
    from panm_jax.train.steps import TrainState, init_train_state, make_eval_step, make_train_step


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
