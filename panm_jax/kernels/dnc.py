"""The Differentiable Neural Computer memory: usage, allocation, temporal links, read modes.

Implements the memory of Graves et al. 2016, "Hybrid computing using a neural
network with dynamic external memory", Nature 538 (Methods: "Reading and writing
to memory", "Content-based addressing", "Dynamic memory allocation", "Temporal
memory linkage", "Read weighting"), with ``H`` write heads as in DeepMind's
``dnc`` (github.com/deepmind/dnc, ``access.py`` and ``addressing.py``; the
paper has ``H = 1``). The interface vector can be split in the paper's order or in
the order of the reading-comprehension DNC paper's supplementary Table 1
(``controls_from_interface``).

``R`` read heads and ``H`` write heads over ``N`` slots of width ``W``.
``init_state(..., batch_shape)`` and ``step`` take any leading (batch) axes (the
rule of ``panm_jax.kernels``); the per-equation functions below are written for
one example (``jax.vmap`` them). The state and
the write controls always carry a leading write-head axis (``[H, ...]``, also for
``H = 1``), as the NTM kernel's write weights do. One public function per
equation, in the order ``step`` calls them; each works on one write head where
that is natural (``step`` composes them over the heads):

    retention             psi_t = prod_i (1 - f^i_t w^{r,i}_{t-1})
    usage                 u_t = (u_{t-1} + (1 - u_{t-1}) o w^w_{t-1}) o psi_t,
                          with several heads u <- u + (1 - u) o w_h for each h
                          (= u + (1 - u) o (1 - prod_h (1 - w_h)))
    allocation            a_t[phi_t[j]] = (1 - u_t[phi_t[j]]) prod_{i<j} u_t[phi_t[i]]
    exclusive_cumprod     P[j] = prod_{i<j} x[i], with a division-free hand-written VJP
    write_allocations     a_h = allocation(u), then u <- u + (1 - u) o g^a_h g^w_h a_h, per head
    write_weights         w^w_{t,h} = g^w_h [g^a_h a_h + (1 - g^a_h) c^w_h]
    write                 M_t = M_{t-1} o prod_h (E - w^w_h e_h^T) + sum_h w^w_h v_h^T
    link                  L_t[i, j] = (1 - w^w_t[i] - w^w_t[j]) L_{t-1}[i, j] + w^w_t[i] p_{t-1}[j],
                          L_t[i, i] = 0                      (one write head)
    precedence            p_t = (1 - sum_i w^w_t[i]) p_{t-1} + w^w_t   (one write head)
    directional_weights   Directions(backward = L_t^T w^r_{t-1}, forward = L_t w^r_{t-1})
    link_and_directions   the two above in one call, with a hand-written VJP (its derivation
                          is in _dnc_vjp.py); step uses it (or, opted in, the C++ kernel below)
    read_weights          w^{r,i}_t = sum_h pi[h] b^{i,h} + pi[H] c^{r,i} + sum_h pi[H+1+h] f^{i,h}
    read                  r^i_t = M_t^T w^{r,i}_t

Content weights ``c = C(M, k, beta)`` come from ``addressing.content_weights``.
``controls_from_interface`` turns a raw controller output of
``interface_size(W, R, H)`` numbers into ``DNCControls``, so any JAX network can
drive the kernel without Flax.

The C++ link kernel (opt-in). ``step`` computes the link and directional weights
with ``link_and_directions`` in XLA by default, on every platform. On a CPU the
same equations and VJP also exist as one C++ kernel through XLA's FFI
(``_dnc_link_cpu.py``, compiled with the system's C++ compiler on first use),
which took a DNC training step at ``N = 256`` from 1.173 s to 0.7077 s (1.658x)
on a 2-core x86_64 CPU (``benchmarks/results/cpu-2cores/dnc_step_paths.json``;
``docs/performance.md``). It is used only when asked: set the environment
variable ``PANM_JAX_DNC_LINK=cpu`` (always, an error if it cannot be built) or
``PANM_JAX_DNC_LINK=auto`` (where JAX's default backend is one CPU device) before
the first call of ``step``; unset or ``xla`` keeps the XLA path.

Read modes. Each read head has ``2H + 1`` modes, in the order
``(backward_1, ..., backward_H, content, forward_1, ..., forward_H)``, so that
``H = 1`` is the papers' (backward, content, forward). DeepMind's ``dnc`` orders
them ``(backward_1..H, forward_1..H, content)``: ``read_mode_order_from_deepmind``
gives the permutation.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax import checks
from panm_jax.kernels import _batch, _dnc_link_cpu
from panm_jax.kernels import scan as scan_lib
from panm_jax.kernels._dnc_link_types import LinkAndDirections
from panm_jax.kernels._dnc_vjp import with_link_vjp
from panm_jax.kernels.addressing import content_weights, oneplus
from panm_jax.kernels.validation import (
    bound_raw,
    check_float_dtype,
    check_floating,
    check_floating_fields,
    check_in_range,
    check_shape,
    check_state_sizes,
)

__all__ = [
    "INTERFACE_LAYOUTS",
    "DNCControls",
    "DNCState",
    "Directions",
    "LinkAndDirections",
    "allocation",
    "controls_from_interface",
    "directional_weights",
    "exclusive_cumprod",
    "init_state",
    "interface_size",
    "link",
    "link_and_directions",
    "precedence",
    "read",
    "read_mode_order_from_deepmind",
    "read_weights",
    "retention",
    "step",
    "usage",
    "write",
    "write_allocations",
    "write_weights",
]

# No epsilon lives in this file. addressing.cosine_similarity is exact at every
# scale and 0 at an exactly-zero vector; the allocation's cumulative product needs
# no guard because exclusive_cumprod differentiates without dividing by its inputs
# (DeepMind's TF code maps the usage to 1e-6 + (1 - 1e-6) u before its cumprod,
# "to avoid numerical instability"), so usage exactly 0 or 1 is fine in value and
# gradient.


class DNCState(NamedTuple):
    """The DNC memory state of one example (arrays only)."""

    memory: jax.Array  # [N, W]     M_t
    usage: jax.Array  # [N]        u_t, in [0, 1]
    link: jax.Array  # [H, N, N]  L_t per write head; L[h, i, j]: head h wrote slot i right after slot j
    precedence: jax.Array  # [H, N]     p_t per write head, each row summing to <= 1
    read_weights: jax.Array  # [R, N]     w^{r,i}_t, one row per read head
    write_weights: jax.Array  # [H, N]     w^w_t, one row per write head
    reads: jax.Array  # [R, W]     r^i_t, the last read vectors


class DNCControls(NamedTuple):
    """One step's interface values, already activated (``controls_from_interface``)."""

    read_keys: jax.Array  # [R, W]       k^{r,i}_t
    read_strengths: jax.Array  # [R]          beta^{r,i}_t >= 1 (oneplus)
    write_key: jax.Array  # [H, W]       k^w_t per write head
    write_strength: jax.Array  # [H]          beta^w_t >= 1 (oneplus)
    erase: jax.Array  # [H, W]       e_t in [0, 1] (sigmoid)
    write_vector: jax.Array  # [H, W]       v_t
    free_gates: jax.Array  # [R]          f^i_t in [0, 1] (sigmoid)
    allocation_gate: jax.Array  # [H]          g^a_t in [0, 1] (sigmoid)
    write_gate: jax.Array  # [H]          g^w_t in [0, 1] (sigmoid)
    read_modes: jax.Array  # [R, 2H + 1]  pi^i_t = (backward_1..H, content, forward_1..H), softmax per head


class Directions(NamedTuple):
    """Backward and forward weights, in the order of the read modes."""

    backward: jax.Array  # [R, N] b_t = L_t^T w^r_{t-1} (or [H, R, N], one per write head)
    forward: jax.Array  # [R, N] f_t = L_t w^r_{t-1}   (or [H, R, N])


def init_state(
    num_slots: int,
    word_size: int,
    num_reads: int,
    num_writes: int = 1,
    dtype=jnp.float32,
    *,
    batch_shape: tuple[int, ...] = (),
) -> DNCState:
    """An empty memory: every field zero.

    Zero memory reads as zero; zero usage makes slot 0 the first to be allocated;
    zero link and precedence mean no write order yet; zero read and write weights
    mean nothing was read or written (so the first step frees nothing).

    Args:
      num_slots: ``N``, the number of memory slots.
      word_size: ``W``, the width of a slot.
      num_reads: ``R``, the number of read heads.
      num_writes: ``H``, the number of write heads (1 in Graves et al. 2016).
      dtype: the floating dtype of every field (pass it by keyword).
      batch_shape: leading (batch) axes in front of every field (``()``: one example).

    Returns:
      ``DNCState`` with the shapes of its field comments, ``batch_shape`` in front.

    Raises:
      ValueError: if a size is not a positive integer, ``dtype`` not a real
        floating dtype, or the sizes too large to index or allocate
        (``validation.check_state_sizes``), before anything is allocated.
    """
    n = checks.positive_int("num_slots (N)", num_slots)
    w = checks.positive_int("word_size (W)", word_size)
    r = checks.positive_int("num_reads (R)", num_reads)
    h = checks.positive_int("num_writes (H)", num_writes)
    dtype = check_float_dtype("dtype", dtype)
    batch_shape = _batch.check_batch_shape(batch_shape)
    shapes = {
        "memory": ((n, w), ("num_slots (N)", "word_size (W)")),
        "usage": ((n,), ("num_slots (N)",)),
        "link": ((h, n, n), ("num_writes (H)", "num_slots (N)", "num_slots (N)")),
        "precedence": ((h, n), ("num_writes (H)", "num_slots (N)")),
        "read_weights": ((r, n), ("num_reads (R)", "num_slots (N)")),
        "write_weights": ((h, n), ("num_writes (H)", "num_slots (N)")),
        "reads": ((r, w), ("num_reads (R)", "word_size (W)")),
    }
    check_state_sizes({f"state.{name}": spec for name, spec in shapes.items()}, batch_shape, dtype)
    return DNCState(**{name: jnp.zeros((*batch_shape, *shape), dtype) for name, (shape, _) in shapes.items()})


# --------------------------------------------------------------------------------------
# Dynamic memory allocation
# --------------------------------------------------------------------------------------


def retention(free_gates: jax.Array, prev_read_weights: jax.Array) -> jax.Array:
    """Memory retention vector: how much of each slot the read heads do *not* free.

    Implements ``psi_t`` of Graves et al. 2016 (Methods, "Dynamic memory
    allocation").

    Symbols: ``f^i_t`` = ``free_gates[i]``, ``w^{r,i}_{t-1}`` =
    ``prev_read_weights[i]``.

        psi_t = prod_{i=1}^{R} (1 - f^i_t w^{r,i}_{t-1})

    Args:
      free_gates: ``[R]`` free gates in ``[0, 1]``.
      prev_read_weights: ``[R, N]`` the read weights of the previous step.

    Returns:
      ``[N]`` ``psi_t`` in ``[0, 1]``.
    """
    return jnp.prod(1.0 - free_gates[:, None] * prev_read_weights, axis=0)


def usage(prev_usage: jax.Array, prev_write_weights: jax.Array, psi: jax.Array) -> jax.Array:
    """Usage vector: raised by the previous write, lowered by the free gates.

    Implements ``u_t`` of Graves et al. 2016 (Methods, "Dynamic memory
    allocation"), ``u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} o w^w_{t-1}) o psi_t``,
    rearranged as DeepMind's ``dnc`` computes it (``Freeness._usage_after_write``):

        u_t = (u_{t-1} + (1 - u_{t-1}) o w^w_{t-1}) o psi_t

    Why this form: in floating point ``u + w - u w`` rounds to one ulp *below* 1
    after a full write (``w = 1``) for about a fifth of the float32 values of
    ``u``, so a slot just written in full would look slightly free to the
    allocation. ``u + (1 - u) w`` is exactly 1 at ``w = 1`` in round-to-nearest
    (``u + fl(1 - u)`` rounds to 1), exactly ``u`` at ``w = 0``, and never above 1
    for ``u, w`` in ``[0, 1]`` (``fl(fl(1 - u) w) <= fl(1 - u)`` and rounding is
    monotone).

    Several write heads (``prev_write_weights`` ``[H, N]``, DeepMind's
    ``num_writes``): the heads are applied one after the other,
    ``u <- u + (1 - u) o w_h`` for ``h = 1..H``, which equals DeepMind's aggregate
    ``u + (1 - u) o (1 - prod_h (1 - w_h))`` (both are
    ``1 - (1 - u) prod_h (1 - w_h)``) and keeps the exactness above for each head.

    Symbols: ``u_{t-1}`` = ``prev_usage``, ``w^w_{t-1}`` = ``prev_write_weights``,
    ``psi_t`` = ``psi`` (from ``retention``).

    ``step(..., stop_usage_write_gradient=True)`` passes the write weights through
    ``jax.lax.stop_gradient`` before this function, as DeepMind's ``dnc`` does.

    Args:
      prev_usage: ``[N]`` in ``[0, 1]``.
      prev_write_weights: ``[N]`` (one write head) or ``[H, N]``, the write
        weights of the previous step.
      psi: ``[N]`` the retention vector of this step.

    Returns:
      ``[N]`` ``u_t`` in ``[0, 1]``.
    """
    weights = prev_write_weights if prev_write_weights.ndim == 2 else prev_write_weights[None]
    u = prev_usage
    for h in range(weights.shape[0]):
        u = u + (1.0 - u) * weights[h]
    return u * psi


def allocation(usage_vector: jax.Array) -> jax.Array:
    """Allocation weights: the least-used slot first, by a sort over usage.

    Implements ``a_t`` of Graves et al. 2016 (Methods, "Dynamic memory
    allocation").

    Symbols: ``u_t`` = ``usage_vector``; ``phi_t`` = the slot indices sorted by
    ascending usage (``phi_t[1]`` is the least-used slot).

        a_t[phi_t[j]] = (1 - u_t[phi_t[j]]) prod_{i=1}^{j-1} u_t[phi_t[i]]

    Computed without a loop over slots: sort the usage ascending, take the
    *exclusive* cumulative product of the sorted usage (``prod_{i<j}``, 1 for the
    first), multiply by ``1 - u`` and scatter back to slot order. Ties are broken by
    a stable sort: among equal usages the lower slot index comes first, so empty
    memory allocates slot 0, then slot 1, and so on.

    Args:
      usage_vector: ``[N]`` ``u_t`` in ``[0, 1]``.

    Returns:
      ``[N]`` ``a_t``, non-negative, summing to ``1 - prod_i u_t[i]`` (<= 1).
    """
    # The sort order phi_t is piecewise constant in u_t (its derivative is zero
    # almost everywhere and undefined at ties), so no gradient should flow through
    # the indices. Gradients still flow through the usage *values* gathered below,
    # as in DeepMind's dnc (addressing.py, _allocation).
    order = jax.lax.stop_gradient(jnp.argsort(usage_vector, stable=True))  # [N] phi_t
    sorted_usage = usage_vector[order]  # [N] u_t[phi_t[j]]
    # Exclusive cumulative product: prod_{i=1}^{j-1} u_t[phi_t[i]], 1 at j = 1.
    prod_before = exclusive_cumprod(sorted_usage)
    sorted_allocation = (1.0 - sorted_usage) * prod_before  # a_t[phi_t[j]]
    return jnp.zeros_like(usage_vector).at[order].set(sorted_allocation)


@jax.custom_vjp
def exclusive_cumprod(x: jax.Array) -> jax.Array:
    """``P[j] = prod_{i<j} x[i]`` (``P[0] = 1``) over the last axis, with a hand-written VJP.

    The VJP, with ``g`` the cotangent of ``P``, is division-free (exact where some
    ``x[i]`` is 0)::

        dx[i] = sum_{j>i} g[j] prod_{k<j, k != i} x[k] = P[i] S[i],
        S[i]  = sum_{j>i} g[j] prod_{i<k<j} x[k],   S[n-1] = 0,   S[i] = g[i+1] + x[i+1] S[i+1]

    and the linear recurrence for ``S`` runs as a reverse associative scan. It
    keeps ``x`` and ``P`` for the backward pass, where ``jnp.cumprod``'s own
    derivative (an associative scan of products) keeps several arrays per
    level of its scan: inside a time scan each is another ``[T, ...]`` stack.
    """
    return _exclusive_cumprod_fwd(x)[0]


def _exclusive_cumprod_fwd(x):
    ones = jnp.ones(x.shape[:-1] + (1,), x.dtype)
    before = jnp.concatenate([ones, jnp.cumprod(x, axis=-1)[..., :-1]], axis=-1)
    return before, (x, before)


def _exclusive_cumprod_bwd(residuals, g):
    x, before = residuals
    # S[i] = g[i+1] + x[i+1] S[i+1]: the affine maps s -> b + a s with (a, b) = (x[i+1], g[i+1]),
    # composed from the end; the last slot's S is 0.
    a = jnp.concatenate([x[..., 1:], jnp.zeros_like(x[..., :1])], axis=-1)
    b = jnp.concatenate([g[..., 1:], jnp.zeros_like(g[..., :1])], axis=-1)

    def compose(later, earlier):  # earlier o later: s -> b_e + a_e (b_l + a_l s)
        a_l, b_l = later
        a_e, b_e = earlier
        return a_e * a_l, b_e + a_e * b_l

    _, suffix = jax.lax.associative_scan(compose, (a, b), reverse=True, axis=x.ndim - 1)
    return (before * suffix,)


exclusive_cumprod.defvjp(_exclusive_cumprod_fwd, _exclusive_cumprod_bwd)


def write_allocations(usage_vector: jax.Array, allocation_gate: jax.Array, write_gate: jax.Array) -> jax.Array:
    """Allocation weights of ``H`` write heads, each seeing the usage its predecessors add.

    Implements DeepMind's ``Freeness.write_allocation_weights`` (``dnc``,
    ``addressing.py``), the several-head extension of Graves et al. 2016's single
    ``a_t`` (Methods, "Dynamic memory allocation"): head ``h`` allocates from the
    usage as it would be after heads ``1..h-1`` have written by allocation,

        a_h = allocation(u),    then    u <- u + (1 - u) o g^a_h g^w_h a_h

    starting from ``u = u_t``. For ``H = 1`` it is ``allocation(u_t)``.

    Args:
      usage_vector: ``[N]`` ``u_t`` in ``[0, 1]``.
      allocation_gate: ``[H]`` ``g^a_t`` in ``[0, 1]``.
      write_gate: ``[H]`` ``g^w_t`` in ``[0, 1]``.

    Returns:
      ``[H, N]`` one allocation per write head (not yet gated; ``write_weights``
      gates them).
    """
    num_writes = allocation_gate.shape[0]
    u = usage_vector
    allocations = []
    for h in range(num_writes):
        allocations.append(allocation(u))
        if h + 1 < num_writes:  # the last head's usage update would not be used
            u = u + (1.0 - u) * (allocation_gate[h] * write_gate[h]) * allocations[h]
    return jnp.stack(allocations)


def write_weights(
    allocation_weights: jax.Array,
    content: jax.Array,
    allocation_gate: jax.Array,
    write_gate: jax.Array,
) -> jax.Array:
    """Write weights: allocation and content addressing mixed, then gated.

    Implements ``w^w_t`` of Graves et al. 2016 (Methods, "Write weighting"),
    per write head ``h`` when there are several (DeepMind's ``dnc``,
    ``MemoryAccess._write_weights``).

    Symbols: ``a_t`` = ``allocation_weights``, ``c^w_t`` = ``content``,
    ``g^a_t`` = ``allocation_gate``, ``g^w_t`` = ``write_gate``.

        w^w_{t,h} = g^w_h [g^a_h a_h + (1 - g^a_h) c^w_h]

    Args:
      allocation_weights: ``[N]`` ``a_t`` (one head) or ``[H, N]``.
      content: ``[N]`` or ``[H, N]`` write content weights
        ``c^w_t = C(M_{t-1}, k^w_t, beta^w_t)``.
      allocation_gate: ``[]`` or ``[H]`` in ``[0, 1]``.
      write_gate: ``[]`` or ``[H]`` in ``[0, 1]``.

    Returns:
      ``[N]`` or ``[H, N]`` ``w^w_t``, each row summing to at most 1.
    """
    g_a = jnp.asarray(allocation_gate)[..., None]  # [..., 1]
    g_w = jnp.asarray(write_gate)[..., None]
    return g_w * (g_a * allocation_weights + (1.0 - g_a) * content)


def write(memory: jax.Array, weights: jax.Array, erase: jax.Array, write_vector: jax.Array) -> jax.Array:
    """Erase then add: the memory after this step's write.

    Implements ``M_t`` of Graves et al. 2016 (Methods, "Reading and writing to
    memory"), where ``E`` is the all-ones ``[N, W]`` matrix, and its several-head
    form from DeepMind's ``dnc`` (``access.py``, ``_erase_and_write``): every
    head's erase is applied, then every head's vector is added.

    Symbols: ``M_{t-1}`` = ``memory``, ``w^w_h`` = ``weights[h]``, ``e_h`` =
    ``erase[h]``, ``v_h`` = ``write_vector[h]``.

        M_t = M_{t-1} o prod_h (E - w^w_h e_h^T) + sum_h w^w_h v_h^T

    (one head: ``M_t = M_{t-1} o (E - w^w_t e_t^T) + w^w_t v_t^T``).

    Args:
      memory: ``[N, W]`` ``M_{t-1}``.
      weights: ``[N]`` ``w^w_t`` (one head) or ``[H, N]``.
      erase: ``[W]`` or ``[H, W]`` ``e_t`` in ``[0, 1]``.
      write_vector: ``[W]`` or ``[H, W]`` ``v_t``.

    Returns:
      ``[N, W]`` ``M_t``.
    """
    if weights.ndim == 2 and weights.shape[0] == 1:  # one head given with its head axis
        weights, erase, write_vector = weights[0], erase[0], write_vector[0]
    if weights.ndim == 1:
        return memory * (1.0 - jnp.outer(weights, erase)) + jnp.outer(weights, write_vector)
    kept = jnp.prod(1.0 - weights[:, :, None] * erase[:, None, :], axis=0)  # [N, W] prod_h (E - w_h e_h^T)
    added = jnp.sum(weights[:, :, None] * write_vector[:, None, :], axis=0)  # [N, W] sum_h w_h v_h^T
    return memory * kept + added


# --------------------------------------------------------------------------------------
# Temporal memory linkage (one write head; step maps them over the heads)
# --------------------------------------------------------------------------------------


def precedence(prev_precedence: jax.Array, weights: jax.Array) -> jax.Array:
    """Precedence weights: how much each slot was the last one written.

    Implements ``p_t`` of Graves et al. 2016 (Methods, "Temporal memory
    linkage"). One write head; with several, each head has
    its own precedence, updated by its own weights (DeepMind's ``dnc``,
    ``TemporalLinkage``).

    Symbols: ``p_{t-1}`` = ``prev_precedence``, ``w^w_t`` = ``weights``.

        p_t = (1 - sum_i w^w_t[i]) p_{t-1} + w^w_t

    Args:
      prev_precedence: ``[N]`` ``p_{t-1}``, summing to at most 1 (``p_0 = 0``).
      weights: ``[N]`` ``w^w_t``.

    Returns:
      ``[N]`` ``p_t``, summing to at most 1.
    """
    return (1.0 - jnp.sum(weights)) * prev_precedence + weights


def link(prev_link: jax.Array, prev_precedence: jax.Array, weights: jax.Array) -> jax.Array:
    """Temporal link matrix: ``L[i, j]`` is how much slot i was written right after j.

    Implements ``L_t`` of Graves et al. 2016 (Methods, "Temporal memory
    linkage"); ``(1 - I)`` zeroes the diagonal (a slot
    does not follow itself). One write head; with several, each head has its own
    link, updated by its own weights and precedence.

    Symbols: ``L_{t-1}`` = ``prev_link``, ``p_{t-1}`` = ``prev_precedence`` (the
    precedence *before* this step's update), ``w^w_t`` = ``weights``.

        L_t[i, j] = (1 - I[i, j]) [(1 - w^w_t[i] - w^w_t[j]) L_{t-1}[i, j] + w^w_t[i] p_{t-1}[j]]

    An outer sum and an outer product, ``O(N^2)`` per step.

    Args:
      prev_link: ``[N, N]`` ``L_{t-1}`` (``L_0 = 0``).
      prev_precedence: ``[N]`` ``p_{t-1}``.
      weights: ``[N]`` ``w^w_t``.

    Returns:
      ``[N, N]`` ``L_t``, entries in ``[0, 1]``, zero diagonal, row and column
      sums at most 1.
    """
    w_i = weights[:, None]  # [N, 1] w^w_t[i]
    w_j = weights[None, :]  # [1, N] w^w_t[j]
    new_link = (1.0 - w_i - w_j) * prev_link + w_i * prev_precedence[None, :]
    off_diagonal = 1.0 - jnp.eye(weights.shape[0], dtype=new_link.dtype)  # (1 - I)
    return off_diagonal * new_link


def directional_weights(link_matrix: jax.Array, prev_read_weights: jax.Array) -> Directions:
    """Backward and forward weights: follow the write order from the last reads.

    Implements ``b^i_t`` and ``f^i_t`` of Graves et al. 2016 (Methods, "Temporal
    memory linkage"), for one write head's link.

    Symbols: ``L_t`` = ``link_matrix``, ``w^{r,i}_{t-1}`` = ``prev_read_weights[i]``.

        b^i_t = L_t^T w^{r,i}_{t-1}      (the slots written before the ones read)
        f^i_t = L_t w^{r,i}_{t-1}        (the slots written after the ones read)

    Args:
      link_matrix: ``[N, N]`` ``L_t`` (this step's link, after ``link``).
      prev_read_weights: ``[R, N]`` ``w^r_{t-1}``.

    Returns:
      ``Directions(backward, forward)``, each ``[R, N]``: the order of the read
      modes and of ``read_weights``' arguments (DeepMind's and pytorch-dnc's
      functions return forward first).
    """
    backward = jnp.einsum("ji,rj->ri", link_matrix, prev_read_weights)  # b[r, i] = sum_j L[j, i] w[r, j]
    forward = jnp.einsum("ij,rj->ri", link_matrix, prev_read_weights)  # f[r, i] = sum_j L[i, j] w[r, j]
    return Directions(backward=backward, forward=forward)


@with_link_vjp
def link_and_directions(
    prev_link: jax.Array, prev_precedence: jax.Array, weights: jax.Array, prev_read_weights: jax.Array
) -> LinkAndDirections:
    """``link`` then ``directional_weights`` in one function with a hand-written VJP.

    Returns ``LinkAndDirections(link, backward, forward)``, exactly
    ``L_t = link(L_{t-1}, p_{t-1}, w^w_t)`` and
    ``directional_weights(L_t, w^r_{t-1})`` (same equations, same shapes:
    ``[N, N]``, ``[R, N]``, ``[R, N]``), for one write head; ``step`` maps it over
    the write heads with ``jax.vmap``.

    These are the DNC's only ``O(N^2)`` operations. The VJP keeps only
    ``L_{t-1}`` (the carry, which a scan stores anyway) and makes a few passes
    over ``[N, N]`` arrays where autodiff makes about a dozen; its derivation is
    in ``panm_jax/kernels/_dnc_vjp.py``. Reverse mode only (``grad``, ``vjp``),
    not ``jvp``.
    """
    new_link = link(prev_link, prev_precedence, weights)
    backward, forward = directional_weights(new_link, prev_read_weights)
    return LinkAndDirections(link=new_link, backward=backward, forward=forward)


def read_weights(read_modes: jax.Array, backward: jax.Array, content: jax.Array, forward: jax.Array) -> jax.Array:
    """Read weights: each read head's mix of backward, content and forward addressing.

    Implements ``w^{r,i}_t`` of Graves et al. 2016 (Methods, "Temporal memory
    linkage"), with one backward and one forward mode per write head as in
    DeepMind's ``dnc`` (``MemoryAccess._read_weights``). The arguments come in the
    order of the modes: backward, content, forward.

    Symbols: ``pi^i_t`` = ``read_modes[i]``, ``b^{i,h}_t`` = ``backward[h, i]``,
    ``c^{r,i}_t`` = ``content[i]``, ``f^{i,h}_t`` = ``forward[h, i]``.

        w^{r,i}_t = sum_h pi^i_t[h] b^{i,h}_t + pi^i_t[H] c^{r,i}_t + sum_h pi^i_t[H + 1 + h] f^{i,h}_t

    For one write head: ``pi[0] b + pi[1] c + pi[2] f`` (backward, content,
    forward, the papers' order). DeepMind's order is
    ``(backward_1..H, forward_1..H, content)``; see ``read_mode_order_from_deepmind``.

    Args:
      read_modes: ``[R, 2H + 1]`` each row a distribution over
        ``(backward_1..H, content, forward_1..H)``.
      backward: ``[H, R, N]`` ``b_t`` per write head, or ``[R, N]`` for ``H = 1``.
      content: ``[R, N]`` read content weights ``c^r_t``.
      forward: ``[H, R, N]`` ``f_t`` per write head, or ``[R, N]`` for ``H = 1``.

    Returns:
      ``[R, N]`` ``w^r_t``, each row summing to at most 1.

    Raises:
      ValueError: if the shapes disagree (naming the argument).
    """
    if backward.ndim == 2:
        backward, forward = backward[None], forward[None]
    check_shape("backward", backward, (None, None, None), "H, R, N")
    h, r, n = backward.shape
    check_shape("forward", forward, (h, r, n), "H, R, N")
    check_shape("content", content, (r, n), "R, N")
    check_shape("read_modes", read_modes, (r, 2 * h + 1), "R, 2H + 1")
    out = read_modes[:, 0:1] * backward[0]
    for k in range(1, h):
        out = out + read_modes[:, k : k + 1] * backward[k]
    out = out + read_modes[:, h : h + 1] * content
    for k in range(h):
        out = out + read_modes[:, h + 1 + k : h + 2 + k] * forward[k]
    return out


def read_mode_order_from_deepmind(num_writes: int = 1) -> np.ndarray:
    """Indices that reorder DeepMind's read modes into this kernel's order.

    DeepMind's ``dnc`` (``access.py``, ``_read_weights``) orders each read head's
    ``2H + 1`` modes ``(backward_1..H, forward_1..H, content)``; this kernel
    ``(backward_1..H, content, forward_1..H)``. With ``order`` returned here,
    ``ours = theirs[..., order]``, for the modes and for their logits alike (a
    softmax commutes with a permutation). For ``H = 1``: ``[0, 2, 1]``.

    Raises:
      ValueError: if ``num_writes`` is not a positive integer.
    """
    h = checks.positive_int("num_writes (H)", num_writes)
    return np.array([*range(h), 2 * h, *range(h, 2 * h)])


def read(memory: jax.Array, weights: jax.Array) -> jax.Array:
    """Read vectors: each head's weighted sum of memory rows.

    Implements ``r^i_t`` of Graves et al. 2016 (Methods, "Reading and writing to
    memory").

    Symbols: ``M_t`` = ``memory``, ``w^{r,i}_t`` = ``weights[i]``.

        r^i_t = M_t^T w^{r,i}_t

    Args:
      memory: ``[N, W]`` ``M_t``.
      weights: ``[R, N]`` ``w^r_t``.

    Returns:
      ``[R, W]`` one read vector per head.
    """
    return weights @ memory


# --------------------------------------------------------------------------------------
# One step
# --------------------------------------------------------------------------------------


def _check_state(state: DNCState) -> tuple[int, int, int, int]:
    check_shape("state.memory", state.memory, (None, None), "N, W")
    n, w = state.memory.shape
    check_shape("state.read_weights", state.read_weights, (None, n), "R, N")
    r = state.read_weights.shape[0]
    check_shape("state.write_weights", state.write_weights, (None, n), "H, N")
    h = state.write_weights.shape[0]
    check_shape("state.usage", state.usage, (n,), "N")
    check_shape("state.link", state.link, (h, n, n), "H, N, N")
    check_shape("state.precedence", state.precedence, (h, n), "H, N")
    check_shape("state.reads", state.reads, (r, w), "R, W")
    return n, w, r, h


def _check_controls(controls: DNCControls, w: int, r: int, h: int) -> None:
    check_shape("controls.read_keys", controls.read_keys, (r, w), "R, W")
    check_shape("controls.read_strengths", controls.read_strengths, (r,), "R")
    check_shape("controls.write_key", controls.write_key, (h, w), "H, W")
    check_shape("controls.write_strength", controls.write_strength, (h,), "H")
    check_shape("controls.erase", controls.erase, (h, w), "H, W")
    check_shape("controls.write_vector", controls.write_vector, (h, w), "H, W")
    check_shape("controls.free_gates", controls.free_gates, (r,), "R")
    check_shape("controls.allocation_gate", controls.allocation_gate, (h,), "H")
    check_shape("controls.write_gate", controls.write_gate, (h,), "H")
    check_shape("controls.read_modes", controls.read_modes, (r, 2 * h + 1), "R, 2H + 1")


def _check_values(state: DNCState, controls: DNCControls) -> None:
    # dtypes at trace time; ranges only where concrete (eager calls: validation.check_in_range)
    check_floating_fields("state", state)
    check_floating_fields("controls", controls)
    for name in ("usage", "link", "precedence", "read_weights", "write_weights"):
        check_in_range(f"state.{name}", getattr(state, name), 0.0, 1.0)
    for name in ("erase", "free_gates", "allocation_gate", "write_gate", "read_modes"):
        check_in_range(f"controls.{name}", getattr(controls, name), 0.0, 1.0)
    check_in_range("controls.read_strengths", controls.read_strengths, 0.0, None)
    check_in_range("controls.write_strength", controls.write_strength, 0.0, None)


def _link_and_directions_per_head(
    prev_link: jax.Array, prev_precedence: jax.Array, weights: jax.Array, prev_read_weights: jax.Array
) -> LinkAndDirections:
    """``link_and_directions`` for each write head: ``[H, N, N]``, ``[H, N]``, ``[H, N]``, ``[R, N]``.

    Opted in by the environment variable ``PANM_JAX_DNC_LINK`` (``cpu`` or
    ``auto``, see the module docstring), in float32 or float64, the compiled CPU
    kernel of ``_dnc_link_cpu`` (same equations, one sweep over each link row).
    Otherwise (the default) ``jax.vmap`` over the heads; one head is called directly (its head axis is a
    free reshape), so ``H = 1`` runs exactly the one-head computation.
    """
    if _dnc_link_cpu.use_for(prev_link.dtype):
        return _dnc_link_cpu.link_and_directions(prev_link, prev_precedence, weights, prev_read_weights)
    if weights.shape[0] == 1:
        one = link_and_directions(prev_link[0], prev_precedence[0], weights[0], prev_read_weights)
        return jax.tree_util.tree_map(lambda x: x[None], one)
    return jax.vmap(link_and_directions, in_axes=(0, 0, 0, None))(
        prev_link, prev_precedence, weights, prev_read_weights
    )


def step(
    state: DNCState,
    controls: DNCControls,
    mask: jax.Array | None = None,
    *,
    read_previous_memory: bool = False,
    stop_usage_write_gradient: bool = False,
) -> tuple[DNCState, jax.Array]:
    """One DNC memory step: free, allocate, write, link, read.

    Implements the memory of Graves et al. 2016 (Methods) in its dependency
    order, with ``H`` write heads as in DeepMind's ``dnc`` (``MemoryAccess``):

    1. ``psi_t = retention(f_t, w^r_{t-1})``; ``u_t = usage(u_{t-1}, w^w_{t-1}, psi_t)``
       (usage from the previous step's read and write weights, all write heads);
    2. ``c^w_t = C(M_{t-1}, k^w_t, beta^w_t)`` per write head;
       ``a_t = write_allocations(u_t, g^a_t, g^w_t)``;
       ``w^w_t = write_weights(a_t, c^w_t, g^a_t, g^w_t)``, all ``[H, N]``;
    3. ``M_t = write(M_{t-1}, w^w_t, e_t, v_t)``;
    4. per write head ``h``: ``L_{t,h} = link(L_{t-1,h}, p_{t-1,h}, w^w_{t,h})`` with
       the precedence *before* its update, then
       ``p_{t,h} = precedence(p_{t-1,h}, w^w_{t,h})``;
    5. per write head: ``b_{t,h}, f_{t,h} = directional_weights(L_{t,h}, w^r_{t-1})``
       (steps 4 and 5 in one ``link_and_directions``, mapped over the heads);
       ``c^r_t = C(M, k^r_t, beta^r_t)``; ``w^r_t = read_weights(pi_t, b_t, c^r_t, f_t)``;
    6. ``r_t = read(M_t, w^r_t)``.

    Which memory the read content weights see (step 5):

    * ``read_previous_memory=False`` (default): ``M = M_t``, the memory after this
      step's write, as in Graves et al. 2016 (Nature, Methods) and DeepMind's
      ``dnc`` code, so a vector written at step t can be found by content at step t;
      the reading-comprehension DNC paper (Back et al. 2018, MemoReader, EMNLP,
      supplementary §1) also writes ``M_t`` there.
    * ``read_previous_memory=True``: ``M = M_{t-1}``, as printed in Reina Campo 2022
      (MPSoC-NTM documentation, "Turing Machine" chapter, Differentiable Neural
      Computer: ``c^{r,i}_t = C(M_{t-1}, k^{r,i}_t, beta^{r,i}_t)``). The read itself
      (step 6) uses ``M_t`` in both cases, as both sources print.

    Gradient of the usage (step 1); the papers are silent on it:

    * ``stop_usage_write_gradient=False`` (default): ``u_t`` is differentiated
      with respect to ``w^w_{t-1}`` like every other equation, so a write gate
      at step t also gets gradient through the allocation of step t + 1.
    * ``stop_usage_write_gradient=True``: ``w^w_{t-1}`` enters ``usage`` through
      ``jax.lax.stop_gradient``, as in DeepMind's ``dnc`` (``Freeness.__call__``:
      "Calculation of usage is not differentiable with respect to write
      weights"). Values are identical; the read weights and free gates still
      get their gradient through ``psi_t``.

    Args:
      state: ``DNCState`` of the previous step (``t - 1``).
      controls: ``DNCControls`` of this step, already activated.
      mask: optional ``[]`` (bool or {0, 1}); where 0 (padding) the state is
        returned unchanged and the read is zero. (The links are left unchanged by
        giving them zero write weights, exact for any link with a zero diagonal,
        which ``init_state`` and every step produce.)
      read_previous_memory: see above; a static Python bool.
      stop_usage_write_gradient: see above; a static Python bool.

    Returns:
      ``(new_state, reads)`` with ``reads`` ``[R, W]`` (also stored in
      ``new_state.reads``).

    Leading axes: the state, controls and mask may carry the same leading (batch)
    axes ``[...]`` in front of the shapes above; the step is then mapped over them
    (``jax.vmap``, at trace time), and ``reads`` is ``[..., R, W]``.

    Raises:
      ValueError: at trace time, naming the field, when a state, control or mask
        shape is inconsistent with ``N, W, R, H`` taken from ``state.memory``,
        ``state.read_weights`` and ``state.write_weights``, or a field is not real
        floating; in an eager call (concrete values) also when a weighting, the
        usage, the link, a gate, the erase vector or a read mode leaves ``[0, 1]``
        or a strength is negative (``validation.check_in_range``).
    """
    lead = _batch.batch_shape_of(state.memory, 2)
    one = functools.partial(
        _step_one, read_previous_memory=read_previous_memory, stop_usage_write_gradient=stop_usage_write_gradient
    )
    return _batch.batched_step(one, lead, state, controls, mask)


def _step_one(
    state: DNCState,
    controls: DNCControls,
    mask: jax.Array | None,
    *,
    read_previous_memory: bool,
    stop_usage_write_gradient: bool,
) -> tuple[DNCState, jax.Array]:
    # step for one example.
    _, w, r, h = _check_state(state)
    _check_controls(controls, w, r, h)
    if mask is not None:
        check_shape("mask", mask, (), "")
    _check_values(state, controls)

    # Dynamic memory allocation, from the previous step's read and write weights.
    psi = retention(controls.free_gates, state.read_weights)  # [N]
    prev_write_weights = state.write_weights  # [H, N]
    if stop_usage_write_gradient:
        prev_write_weights = jax.lax.stop_gradient(prev_write_weights)
    new_usage = usage(state.usage, prev_write_weights, psi)  # [N]

    # Write: content weights on M_{t-1}, mixed with allocation, then erase/add.
    write_content = content_weights(state.memory, controls.write_key, controls.write_strength)  # [H, N]
    alloc = write_allocations(new_usage, controls.allocation_gate, controls.write_gate)  # [H, N]
    new_write_weights = write_weights(alloc, write_content, controls.allocation_gate, controls.write_gate)  # [H, N]
    new_memory = write(state.memory, new_write_weights, controls.erase, controls.write_vector)  # [N, W]

    # Temporal linkage: the link uses p_{t-1}, so update it before the precedence.
    # On a masked step the links are given zero write weights, which leaves them
    # exactly unchanged (L_t = (1 - I) o L_{t-1} = L_{t-1}: the diagonal is zero),
    # so the masked select below can skip the [H, N, N] link instead of reading and
    # writing it a second time (and storing a selected copy for the backward pass).
    keep = None if mask is None else jnp.asarray(mask).astype(bool)
    link_weights = new_write_weights if keep is None else jnp.where(keep, new_write_weights, 0.0)
    # link_and_directions: link, then directional_weights (used below), with a VJP
    # that makes few passes over the [N, N] arrays; one call per write head.
    linked = _link_and_directions_per_head(
        state.link, state.precedence, link_weights, state.read_weights
    )  # link [H, N, N], backward and forward [H, R, N]
    new_precedence = jax.vmap(precedence)(state.precedence, new_write_weights)  # [H, N]

    # Read.
    content_memory = state.memory if read_previous_memory else new_memory
    read_content = content_weights(content_memory, controls.read_keys, controls.read_strengths)  # [R, N]
    new_read_weights = read_weights(controls.read_modes, linked.backward, read_content, linked.forward)  # [R, N]
    reads = read(new_memory, new_read_weights)  # [R, W]

    new_state = DNCState(
        memory=new_memory,
        usage=new_usage,
        link=linked.link,
        precedence=new_precedence,
        read_weights=new_read_weights,
        write_weights=new_write_weights,
        reads=reads,
    )
    if keep is None:
        return new_state, reads
    new_state, reads = scan_lib.select(
        keep,
        (new_state._replace(link=None), reads),  # type: ignore[arg-type]  # None: an empty pytree leaf, select skips it
        (state._replace(link=None), jnp.zeros_like(reads)),  # type: ignore[arg-type]
    )
    new_state = new_state._replace(link=linked.link)  # unchanged on a masked step (above)
    return new_state, reads


# --------------------------------------------------------------------------------------
# Interface vector
# --------------------------------------------------------------------------------------

INTERFACE_LAYOUTS = ("graves2016", "table1")

# The fields of each layout in order (the activations are in _ACTIVATIONS).
_LAYOUT_FIELDS = {
    # Graves et al. 2016 (Methods, "Interface parameters"), the interface vector
    # xi_t = [k^r; beta^r; k^w; beta^w; e; v; f; g^a; g^w; pi].
    "graves2016": (
        "read_keys",
        "read_strengths",
        "write_key",
        "write_strength",
        "erase",
        "write_vector",
        "free_gates",
        "allocation_gate",
        "write_gate",
        "read_modes",
    ),
    # The reading-comprehension DNC paper's supplementary Table 1: the read modes
    # right after the read strengths.
    "table1": (
        "read_keys",
        "read_strengths",
        "read_modes",
        "write_key",
        "write_strength",
        "erase",
        "write_vector",
        "free_gates",
        "allocation_gate",
        "write_gate",
    ),
}


def _field_shapes(r: int, w: int, h: int) -> dict[str, tuple[int, ...]]:
    return {
        "read_keys": (r, w),
        "read_strengths": (r,),
        "write_key": (h, w),
        "write_strength": (h,),
        "erase": (h, w),
        "write_vector": (h, w),
        "free_gates": (r,),
        "allocation_gate": (h,),
        "write_gate": (h,),
        "read_modes": (r, 2 * h + 1),
    }


_ACTIVATIONS = {
    "read_keys": lambda x: x,
    "read_strengths": oneplus,
    "write_key": lambda x: x,
    "write_strength": oneplus,
    "erase": jax.nn.sigmoid,
    "write_vector": lambda x: x,
    "free_gates": jax.nn.sigmoid,
    "allocation_gate": jax.nn.sigmoid,
    "write_gate": jax.nn.sigmoid,
    "read_modes": lambda x: jax.nn.softmax(x, axis=-1),
}


def interface_size(word_size: int, num_reads: int, num_writes: int = 1) -> int:
    """Length of the raw interface vector: ``R W + 3 H W + 3 H + R (2H + 3)``.

    ``R`` read heads (key ``W``, strength, free gate, ``2H + 1`` modes each) and
    ``H`` write heads (key, erase and write vectors ``W`` each, strength,
    allocation gate, write gate). For ``H = 1`` it is ``R W + 5 R + 3 W + 3``, the
    length of Graves et al. 2016's interface vector (Methods, "Interface
    parameters": ``W R + 3 W + 5 R + 3``), the same in both layouts.

    Args:
      word_size: ``W``.
      num_reads: ``R``.
      num_writes: ``H`` (default 1, the papers' DNC).

    Raises:
      ValueError: if a size is not a positive integer.
    """
    w = checks.positive_int("word_size (W)", word_size)
    r = checks.positive_int("num_reads (R)", num_reads)
    h = checks.positive_int("num_writes (H)", num_writes)
    return r * w + 3 * h * w + 3 * h + r * (2 * h + 3)


def controls_from_interface(
    raw: jax.Array,
    word_size: int,
    num_reads: int,
    num_writes: int = 1,
    *,
    layout: str = "graves2016",
) -> DNCControls:
    """Split a raw interface vector and activate each part.

    Pure: no parameters, so any JAX network's output can drive ``step``. Raw
    values beyond ``+-validation.raw_limit(dtype)`` (``1e4``; ``128`` in float16)
    are first set to that bound (``validation.bound_raw``; the gradient there is
    0): without it, float32 gradients overflowed from ``|raw| ~ 1e30``. The
    activations are those of Graves et al. 2016 (Methods, "Interface
    parameters"): ``oneplus(x) = 1 + log(1 + e^x)`` for the strengths (so
    ``beta >= 1``), the logistic sigmoid for the erase vectors and the gates, a
    softmax over each read head's modes; keys and write vectors as they are.

    Two layouts of the last axis (``P = interface_size(W, R, H)``), by name:

    * ``layout="graves2016"`` (default): the order of the interface vector of
      Graves et al. 2016, "Hybrid computing using a neural network with dynamic
      external memory", Nature 538 (Methods, "Interface parameters"), read modes
      last. (DeepMind's ``dnc`` projects each field with its own linear layer, so
      it has no single vector to order.)
    * ``layout="table1"``: the order of the reading-comprehension DNC paper's
      supplementary Table 1, read modes right after the read strengths.

    The fields, their lengths and activations (the same in both layouts):

    ===============  ==========  ============  ================================
    field            length      symbol        activation
    ===============  ==========  ============  ================================
    read_keys        R W         k^{r,i}_t     identity, row-major [R, W]
    read_strengths   R           beta^{r,i}_t  oneplus
    write_key        H W         k^w_t         identity, [H, W]
    write_strength   H           beta^w_t      oneplus
    erase            H W         e_t           sigmoid, [H, W]
    write_vector     H W         v_t           identity, [H, W]
    free_gates       R           f^i_t         sigmoid
    allocation_gate  H           g^a_t         sigmoid
    write_gate       H           g^w_t         sigmoid
    read_modes       R (2H + 1)  pi^i_t        softmax per read head, [R, 2H + 1]
    ===============  ==========  ============  ================================

    and their order on the last axis of ``raw``:

    * ``graves2016``: read_keys, read_strengths, write_key, write_strength, erase,
      write_vector, free_gates, allocation_gate, write_gate, read_modes;
    * ``table1``: read_keys, read_strengths, read_modes, write_key,
      write_strength, erase, write_vector, free_gates, allocation_gate,
      write_gate.

    Every multi-head field is head-major: head 0's numbers, then head 1's.
    ``read_modes`` holds read head 0's ``2H + 1`` logits in the order
    ``(backward_1..H, content, forward_1..H)`` (for ``H = 1``: backward, content,
    forward), then head 1's, and so on.

    Args:
      raw: ``[..., P]`` raw controller output; leading axes (batch, time) are kept.
      word_size: ``W``.
      num_reads: ``R``.
      num_writes: ``H`` (default 1, the papers' DNC).
      layout: ``"graves2016"`` or ``"table1"``.

    Returns:
      ``DNCControls`` whose fields have the shapes of its comments with the leading
      axes of ``raw`` in front.

    Raises:
      ValueError: if ``layout`` is unknown, if ``raw`` has no last axis of length
        ``P``, or if a size is not a positive integer.
    """
    checks.one_of("layout", layout, INTERFACE_LAYOUTS)
    size = interface_size(word_size, num_reads, num_writes)
    r, w, h = int(num_reads), int(word_size), int(num_writes)
    raw = jnp.asarray(raw)
    check_floating("raw", raw)
    if raw.ndim == 0 or raw.shape[-1] != size:
        raise ValueError(
            f"raw: expected shape [..., P] = (..., {size}) with P = R*W + 3H*W + 3H + R(2H + 3) "
            f"for R = {r}, W = {w}, H = {h}, got {tuple(raw.shape)}"
        )
    # Under jax.checkpoint the backward pass keeps ``raw`` alone and recomputes the
    # activations from it (a few elementwise operations), instead of keeping a dozen
    # small arrays per step that a time scan would stack one by one.
    return jax.checkpoint(_activate, static_argnums=(1, 2, 3, 4))(raw, r, w, h, layout)


def _activate(raw: jax.Array, num_reads: int, word_size: int, num_writes: int, layout: str) -> DNCControls:
    raw = bound_raw(raw)
    lead = raw.shape[:-1]
    shapes = _field_shapes(num_reads, word_size, num_writes)
    fields = {}
    start = 0
    for name in _LAYOUT_FIELDS[layout]:
        length = int(np.prod(shapes[name]))
        part = raw[..., start : start + length].reshape(*lead, *shapes[name])
        fields[name] = _ACTIVATIONS[name](part)
        start += length
    return DNCControls(**fields)
