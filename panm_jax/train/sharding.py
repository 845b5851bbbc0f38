"""Data parallelism over a ``jax.sharding.Mesh``: the batch axis sharded, parameters replicated.

The same code runs on one CPU, one GPU, several local devices, or several hosts:

* ``make_mesh()`` puts every device (of every process) on one ``"data"`` axis;
* ``replicate(tree, mesh)`` places parameters and optimiser state on every device;
* ``shard_batch(batch, mesh)`` splits the batch axis across the devices. With
  several processes, every host generates the same global batch (the data stream
  is a pure function of the seed and the step) and each device takes its rows
  of it (``jax.make_array_from_callback``), whatever the order of the processes'
  devices on the mesh.

``jit`` then partitions the step (SPMD): each device runs its slice, the
gradient mean becomes an all-reduce. ``maybe_initialize_distributed()`` calls
``jax.distributed.initialize()`` when a coordinator is configured in the
environment (``JAX_COORDINATOR_ADDRESS``, with ``JAX_NUM_PROCESSES`` and
``JAX_PROCESS_ID``, or a cluster that JAX detects on its own, e.g. SLURM or a
Cloud TPU pod, when ``PANM_JAX_DISTRIBUTED=1``). Settings left unset are
detected by JAX (``distributed_settings``). It must run before anything
touches a JAX device; ``panm-jax train`` and ``Run`` call it first.

With several processes every process runs the same program on the same data
(SPMD), and the processes meet at a few points: ``is_primary()`` says which one
writes the run's files (process 0), ``barrier(name)`` waits for all of them,
``all_agree(flag)`` tells each process whether ``flag`` held in every one and
``all_same(words)`` whether every process holds the same numbers. With one
process all four are trivial and touch no device.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from panm_jax.errors import UserError

__all__ = [
    "DATA_AXIS",
    "HEARTBEAT_TIMEOUT_S",
    "all_agree",
    "all_same",
    "barrier",
    "distributed_settings",
    "is_primary",
    "make_mesh",
    "maybe_initialize_distributed",
    "replicate",
    "shard_batch",
]

DATA_AXIS = "data"
# Seconds without a heartbeat after which the coordination service takes a process for lost (JAX's: 100).
HEARTBEAT_TIMEOUT_S = 30
_initialized = False


def _int_env(environ: Mapping[str, str], name: str, lo: int, hi: int | None, expected: str) -> int | None:
    text = environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < lo or (hi is not None and value >= hi):
        raise UserError(f"{name}: expected {expected}, got {environ[name]!r}")
    return value


def distributed_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The arguments of ``jax.distributed.initialize`` from the environment, or ``None`` when not asked for.

    Asked for when ``JAX_COORDINATOR_ADDRESS`` is set (``host:port`` of process
    0's coordinator) or ``PANM_JAX_DISTRIBUTED=1``. ``coordinator_address``,
    ``num_processes`` (``JAX_NUM_PROCESSES``) and ``process_id``
    (``JAX_PROCESS_ID``) are ``None`` when their variable is unset: JAX then
    detects them (SLURM, Open MPI, Cloud TPU). ``JAX_LOCAL_DEVICE_IDS`` is read by
    JAX itself. ``heartbeat_timeout_seconds`` (``PANM_JAX_HEARTBEAT_TIMEOUT``,
    default ``HEARTBEAT_TIMEOUT_S``) is how long the coordination service waits
    for a silent process before it ends the run as lost. Raises ``UserError``
    (a ``ValueError``) naming a variable that is not a valid number.
    """
    environ = os.environ if environ is None else environ
    address = environ.get("JAX_COORDINATOR_ADDRESS", "").strip() or None
    if address is None and environ.get("PANM_JAX_DISTRIBUTED") != "1":
        return None
    num = _int_env(environ, "JAX_NUM_PROCESSES", 1, None, "a positive integer")
    pid = _int_env(
        environ,
        "JAX_PROCESS_ID",
        0,
        num,
        "an integer in [0, JAX_NUM_PROCESSES)" if num is not None else "a non-negative integer",
    )
    heartbeat = _int_env(environ, "PANM_JAX_HEARTBEAT_TIMEOUT", 1, None, "a positive number of seconds")
    return {
        "coordinator_address": address,
        "num_processes": num,
        "process_id": pid,
        "heartbeat_timeout_seconds": HEARTBEAT_TIMEOUT_S if heartbeat is None else heartbeat,
    }


def maybe_initialize_distributed() -> bool:
    """Initialise multi-host JAX when the environment asks for it (``distributed_settings``); returns whether
    it did (in this call or an earlier one)."""
    global _initialized
    if _initialized:
        return True
    settings = distributed_settings()
    if settings is not None:
        if "heartbeat_timeout_seconds" not in inspect.signature(jax.distributed.initialize).parameters:
            settings.pop("heartbeat_timeout_seconds")  # jax < 0.7 has none: its own (100 s) holds
        jax.distributed.initialize(**settings)
        _initialized = True
    return _initialized


def is_primary() -> bool:
    """Whether this process writes the run's files: process 0 (the only one of a single-process run)."""
    return jax.process_index() == 0


def barrier(name: str) -> None:
    """Wait until every process reaches ``barrier(name)`` (the same ``name`` in all); no-op with one process."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def all_agree(flag: bool) -> bool:
    """``True`` when ``flag`` is true in every process (``flag`` itself with one process)."""
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.int32(bool(flag)))  # [num_processes]
    return bool(np.all(np.asarray(flags)))


def all_same(words) -> bool:
    """``True`` when the int32 vector ``words`` ``[n]`` is the same in every process (always with one)."""
    if jax.process_count() == 1:
        return True
    from jax.experimental import multihost_utils

    gathered = np.asarray(multihost_utils.process_allgather(np.asarray(words, np.int32)))  # [num_processes, n]
    return bool(np.all(gathered == gathered[:1]))


def make_mesh(devices=None) -> Mesh:
    """A 1-D mesh ``[num_devices]`` on ``DATA_AXIS`` of ``devices`` (default: every device of every process)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def _global(x: np.ndarray, sharding: NamedSharding) -> jax.Array:
    """A global array whose devices each take their part of ``x``, the same host value in every process."""
    return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def replicate(tree, mesh: Mesh):
    """Every leaf on every device of ``mesh`` (the same host values in every process)."""
    sharding = NamedSharding(mesh, PartitionSpec())
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)
    return jax.tree_util.tree_map(lambda x: _global(np.asarray(jax.device_get(x)), sharding), tree)


def shard_batch(batch, mesh: Mesh, axis: int = 0):
    """Shard every leaf's batch axis (the leading one, ``[B, ...]``, or ``axis``: 1 for the seed-stacked
    batches ``[S, B, ...]`` of ``train.seeds``) over the mesh's data axis (``B`` a multiple of the mesh's
    device count); with several processes ``batch`` is the global batch, the same in every process."""
    num = mesh.devices.size
    for x in jax.tree_util.tree_leaves(batch):
        if np.shape(x)[axis] % num:
            raise ValueError(
                f"batch_size: expected a multiple of the {num} devices of the mesh, got {np.shape(x)[axis]}"
            )
    sharding = NamedSharding(mesh, PartitionSpec(*([None] * axis), DATA_AXIS))

    if jax.process_count() == 1:  # one call for every leaf: jax transfers them together
        return jax.device_put(jax.tree_util.tree_map(np.asarray, batch), sharding)
    return jax.tree_util.tree_map(lambda x: _global(np.asarray(x), sharding), batch)
