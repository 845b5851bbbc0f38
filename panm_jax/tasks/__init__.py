"""Procedural task generators with length modes, and a name -> task registry.

Every task is a NumPy generator on the host, deterministic from a
``np.random.Generator``: ``get_task(name, **options).sample(rng, batch_size,
length)`` returns a padded ``Batch(inputs, input_mask, targets, target_mask)``.
A task also carries its sizes, its training lengths and test length modes, how
its outputs align with its inputs, and its masked jax metrics. ``TASKS`` maps
each registered name to its factory, in the order tables list them;
``list_tasks()`` names them, ``task_options(name)`` gives each option of one
with its type and default, and ``panm-jax tasks`` prints them.

Modules:

* ``base``: ``Batch``, ``LengthRange``, the ``Task`` interface, named errors.
  An unknown task name raises ``UnknownNameError`` (``panm_jax.errors``, the
  error of every registry; ``UnknownTaskError`` is another name for it).
* ``registry``: ``TASKS`` (one table: each name and where its class is defined,
  imported when first looked up), ``get_task``, ``list_tasks``, ``task_options``,
  ``register_task``.
* ``buckets``: padding batches to bucket lengths (a handful of compiled shapes).
* ``metrics``: token / sequence (exact-match) / coarse / fine accuracy.
* ``losses``: masked softmax and sigmoid cross-entropy.
* ``algorithmic``: Copy, Reverse, Mix, Dynamic Recall, Priority Sort and ID Sort
  (Le et al. 2024, "Plug, Play, and Generalize: Length Extrapolation with
  Pointer-Augmented Neural Memory").
* ``dyck``: Dyck D_n next-bracket prediction (Suzgun et al. 2019).
* ``m10ae``: modulo-10 arithmetic expressions and the shift-reduce evaluator.
* ``itg``: inversion transduction grammars (SVO -> SOV, gender conjugation).
* ``transduction``: the copy, reversal, bigram flip and ITG tasks of
  Grefenstette et al. (2015).
* ``chomsky``: the 15 Chomsky-hierarchy tasks of Delétang et al. (2023), a
  package with one module per level of the hierarchy.
* ``scan``: SCAN generated from its grammar, with its length splits (Lake &
  Baroni 2018).
* ``mathematics``: ``add_or_sub`` and ``place_value`` of the Mathematics dataset
  (Saxton et al. 2019; needs the ``[math]`` extra).
* ``automata``: finite, pushdown and Turing machines written as data; acceptance
  and transduction tasks (a package: one module per machine kind, the TOML
  loader, the tasks).

Task definitions, lengths and metrics are described in ``docs/tasks.md``.
"""

from panm_jax.errors import UnknownNameError
from panm_jax.tasks.base import (
    Batch,
    DecodedExample,
    LengthRange,
    Task,
    TaskOptionError,
    TaskOptions,
)
from panm_jax.tasks.base import UnknownTaskError as UnknownTaskError  # the name UnknownNameError had for tasks
from panm_jax.tasks.buckets import bucket_length, pad_batch, pad_to_bucket, power_of_two_buckets
from panm_jax.tasks.metrics import (
    coarse_accuracy,
    fine_accuracy,
    sequence_accuracy,
    token_accuracy,
)
from panm_jax.tasks.registry import TASKS, get_task, list_tasks, register_task, task_options

__all__ = [
    "Batch",
    "DecodedExample",
    "LengthRange",
    "TASKS",
    "Task",
    "TaskOptionError",
    "TaskOptions",
    "UnknownNameError",
    "bucket_length",
    "coarse_accuracy",
    "fine_accuracy",
    "get_task",
    "list_tasks",
    "pad_batch",
    "pad_to_bucket",
    "power_of_two_buckets",
    "register_task",
    "sequence_accuracy",
    "task_options",
    "token_accuracy",
]
