"""panm_jax: memory-augmented neural networks in JAX.

The Neural Turing Machine (Graves et al. 2014), the Differentiable Neural
Computer (Graves et al. 2016), the continuous neural Stack, Queue and DeQue
(Grefenstette et al. 2015) and Pointer-Augmented Neural Memory (PANM; Le et al.
2024, "Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented
Neural Memory"), as pure kernels run under ``jit``, ``vmap`` and ``grad``, with
the models, tasks and training loop that measure length generalisation.

Layers, each importing only from the layers below it: ``kernels -> modules ->
models`` on the model side; ``tasks`` beside them, independent of the model side;
``train`` on top of ``models`` and ``tasks``; ``cli`` over ``train`` (and the
registries of ``tasks`` and ``models``).

* ``kernels``: the memories as pure functions, one example at a time.
* ``modules``: Flax NNX modules that hold the parameters (controllers,
  encoders, memory modules, PANM's decoder).
* ``models``: whole sequence models behind one interface, built by name.
* ``tasks``: procedural task generators with length modes, built by name.
* ``train``: typed configs, jitted steps, checkpoints, evaluation, reports.
* ``cli``: the ``panm-jax`` command (``train``, ``eval``, ``plot``, ``tasks``,
  ``models``), one module per sub-command.

The names a user imports most are here too:

    from panm_jax import TrainConfig, build_model, get_task, train_and_evaluate

* ``build_model``, ``list_models`` (from ``panm_jax.models``);
* ``get_task``, ``list_tasks`` (from ``panm_jax.tasks``);
* ``TrainConfig``, ``load_config``, ``train_and_evaluate``, ``train_seeds``
  (from ``panm_jax.train``);
* ``UserError`` (from ``panm_jax.errors``), the base of the errors that name a
  wrong argument, setting or file;
* ``enable_compile_cache`` (from ``panm_jax.train.compile_cache``): JAX's persistent compilation
  cache in the library's cache folder, so a rerun reads the programs it compiled;
* ``__version__``: the package's version string.

``import panm_jax`` is cheap: it imports neither JAX nor a sub-package, which load
on first use of a name. See the README for the tour and ``docs/design.md`` for
the design.
"""

from __future__ import annotations

from panm_jax._lazy import lazy_exports
from panm_jax._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

# name -> the module that defines it; sub-packages map to themselves.
_EXPORTS = {
    "kernels": "panm_jax.kernels",
    "modules": "panm_jax.modules",
    "models": "panm_jax.models",
    "tasks": "panm_jax.tasks",
    "train": "panm_jax.train",
    "build_model": "panm_jax.models.registry",
    "list_models": "panm_jax.models.registry",
    "get_task": "panm_jax.tasks.registry",
    "list_tasks": "panm_jax.tasks.registry",
    "TrainConfig": "panm_jax.train.config",
    "load_config": "panm_jax.train.config",
    "train_and_evaluate": "panm_jax.train.loop",
    "train_seeds": "panm_jax.train.loop",
    "UserError": "panm_jax.errors",
    "enable_compile_cache": "panm_jax.train.compile_cache",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # what static tools see; at run time __getattr__ imports on first use
    from typing import Any

    from panm_jax import kernels, models, modules, tasks, train
    from panm_jax.errors import UserError
    from panm_jax.models.registry import build_model, list_models
    from panm_jax.tasks.registry import get_task, list_tasks
    from panm_jax.train.compile_cache import enable_compile_cache
    from panm_jax.train.config import TrainConfig, load_config
    from panm_jax.train.loop import train_and_evaluate, train_seeds


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
