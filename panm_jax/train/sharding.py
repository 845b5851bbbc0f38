"""Data parallelism over a ``jax.sharding.Mesh``: the batch axis sharded, parameters replicated.

The same code runs on one CPU, one GPU, several local devices, or several hosts:

* ``make_mesh()`` puts every device (of every process) on one ``"data"`` axis;
* ``replicate(tree, mesh)`` places parameters and optimiser state on every device;
* ``shard_batch(batch, mesh)`` splits the batch axis across the devices. With
  several processes, every host generates the same global batch (the data stream
  is a pure function of the seed and the step) and contributes its own slice
  (``jax.make_array_from_process_local_data``).

``jit`` then partitions the step (SPMD): each device runs its slice, the
gradient mean becomes an all-reduce. ``maybe_initialize_distributed()`` calls
``jax.distributed.initialize()`` when a coordinator is configured in the
environment (``JAX_COORDINATOR_ADDRESS``, with ``JAX_NUM_PROCESSES`` and
``JAX_PROCESS_ID``, or a cluster that JAX detects on its own, e.g. SLURM or a
Cloud TPU pod, when ``PANM_JAX_DISTRIBUTED=1``).
"""

from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["DATA_AXIS", "make_mesh", "maybe_initialize_distributed", "replicate", "shard_batch"]

DATA_AXIS = "data"
_initialized = False


def maybe_initialize_distributed() -> bool:
    """Initialise multi-host JAX when the environment asks for it; returns whether it did."""
    global _initialized
    if _initialized:
        return True
    if os.environ.get("JAX_COORDINATOR_ADDRESS") or os.environ.get("PANM_JAX_DISTRIBUTED") == "1":
        jax.distributed.initialize()
        _initialized = True
    return _initialized


def make_mesh(devices=None) -> Mesh:
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def replicate(tree, mesh: Mesh):
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def shard_batch(batch, mesh: Mesh):
    """Shard every leaf's leading (batch) axis over the mesh's data axis."""
    num = mesh.devices.size
    for x in jax.tree_util.tree_leaves(batch):
        if np.shape(x)[0] % num:
            raise ValueError(f"batch_size: expected a multiple of the {num} devices of the mesh, got {np.shape(x)[0]}")
    sharding = NamedSharding(mesh, PartitionSpec(DATA_AXIS))

    def put(x):
        x = np.asarray(x)
        if jax.process_count() == 1:
            return jax.device_put(x, sharding)
        per_process = x.shape[0] // jax.process_count()
        i = jax.process_index()
        return jax.make_array_from_process_local_data(sharding, x[i * per_process : (i + 1) * per_process], x.shape)

    return jax.tree_util.tree_map(put, batch)
