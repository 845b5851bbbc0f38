"""The Differentiable Neural Computer memory: usage, allocation, temporal links, read modes.

Implements the DNC equations of seed ``002_44e42d2b9681fe3e.txt`` (section
"Differentiable Neural Computer", "Definitions" and "Addressing") and the memory
controller of seed ``003_6adbd108c178b20b.txt`` (interface vector of size
``sq + 5s + 3q + 3``, Table 1; oneplus strengths; read modes backward, content,
forward), both after Graves et al. 2016, "Hybrid computing using a neural network
with dynamic external memory".

One write head and ``R`` read heads over ``N`` slots of width ``W``; the kernel sees
one example (modules add the batch axis with ``jax.vmap``). One public function per
equation, in the order ``step`` calls them:

    retention             psi_t = prod_i (1 - f^i_t w^{r,i}_{t-1})
    usage                 u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} o w^w_{t-1}) o psi_t
    allocation            a_t[phi_t[j]] = (1 - u_t[phi_t[j]]) prod_{i<j} u_t[phi_t[i]]
    write_weights         w^w_t = g^w_t [g^a_t a_t + (1 - g^a_t) c^w_t]
    write                 M_t = M_{t-1} o (E - w^w_t e_t^T) + w^w_t v_t^T
    link                  L_t[i, j] = (1 - w^w_t[i] - w^w_t[j]) L_{t-1}[i, j] + w^w_t[i] p_{t-1}[j],
                          L_t[i, i] = 0
    precedence            p_t = (1 - sum_i w^w_t[i]) p_{t-1} + w^w_t
    directional_weights   f^i_t = L_t w^{r,i}_{t-1},  b^i_t = L_t^T w^{r,i}_{t-1}
    link_and_directions   the two above in one call, with a hand-written VJP (what step uses)
    read_weights          w^{r,i}_t = pi^i_t[1] b^i_t + pi^i_t[2] c^{r,i}_t + pi^i_t[3] f^i_t
    read                  r^i_t = M_t^T w^{r,i}_t

Content weights ``c = C(M, k, beta)`` come from ``addressing.content_weights``.
``controls_from_interface`` turns a raw controller output of ``interface_size(R, W)``
numbers into ``DNCControls`` (seed 003 Table 1), so any JAX network can drive the
kernel without Flax.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.kernels import scan as scan_lib
from panm_jax.kernels.addressing import content_weights, oneplus
from panm_jax.kernels.validation import check_positive_int, check_shape

__all__ = [
    "DNCControls",
    "DNCState",
    "allocation",
    "controls_from_interface",
    "directional_weights",
    "init_state",
    "interface_size",
    "link",
    "link_and_directions",
    "precedence",
    "read",
    "read_weights",
    "retention",
    "step",
    "usage",
    "write",
    "write_weights",
]

# No epsilon lives in this file. Cosine similarity is made safe at zero vectors by
# addressing.NORM_EPS; the allocation's cumulative product needs no guard because
# jnp.cumprod differentiates without dividing by its inputs (DeepMind's TF code adds
# 1e-6 to the usage because tf.cumprod's gradient divides), so usage exactly 0 or 1
# is fine in value and gradient.


class DNCState(NamedTuple):
    """The DNC memory state of one example (arrays only)."""

    memory: jax.Array         # [N, W]  M_t
    usage: jax.Array          # [N]     u_t, in [0, 1]
    link: jax.Array           # [N, N]  L_t; L[i, j]: how much slot i was written right after slot j
    precedence: jax.Array     # [N]     p_t, sum <= 1
    read_weights: jax.Array   # [R, N]  w^{r,i}_t, one row per read head
    write_weights: jax.Array  # [N]     w^w_t
    reads: jax.Array          # [R, W]  r^i_t, the last read vectors


class DNCControls(NamedTuple):
    """One step's interface values, already activated (seed 003 Table 1)."""

    read_keys: jax.Array        # [R, W]  k^{r,i}_t
    read_strengths: jax.Array   # [R]     beta^{r,i}_t >= 1 (oneplus)
    write_key: jax.Array        # [W]     k^w_t
    write_strength: jax.Array   # []      beta^w_t >= 1 (oneplus)
    erase: jax.Array            # [W]     e_t in [0, 1] (sigmoid)
    write_vector: jax.Array     # [W]     v_t
    free_gates: jax.Array       # [R]     f^i_t in [0, 1] (sigmoid)
    allocation_gate: jax.Array  # []      g^a_t in [0, 1] (sigmoid)
    write_gate: jax.Array       # []      g^w_t in [0, 1] (sigmoid)
    read_modes: jax.Array       # [R, 3]  pi^i_t = (backward, content, forward), softmax per head


def init_state(num_slots: int, word_size: int, num_reads: int, dtype=jnp.float32) -> DNCState:
    """An empty memory: every field zero.

    Zero memory reads as zero; zero usage makes slot 0 the first to be allocated;
    zero link and precedence mean no write order yet; zero read and write weights
    mean nothing was read or written (so the first step frees nothing).

    Args:
      num_slots: ``N``, the number of memory slots.
      word_size: ``W``, the width of a slot.
      num_reads: ``R``, the number of read heads.
      dtype: the floating dtype of every field.

    Returns:
      ``DNCState`` with the shapes of its field comments.

    Raises:
      ValueError: if a size is not a positive integer.
    """
    n = check_positive_int("num_slots (N)", num_slots)
    w = check_positive_int("word_size (W)", word_size)
    r = check_positive_int("num_reads (R)", num_reads)
    return DNCState(
        memory=jnp.zeros((n, w), dtype),
        usage=jnp.zeros((n,), dtype),
        link=jnp.zeros((n, n), dtype),
        precedence=jnp.zeros((n,), dtype),
        read_weights=jnp.zeros((r, n), dtype),
        write_weights=jnp.zeros((n,), dtype),
        reads=jnp.zeros((r, w), dtype),
    )


# --------------------------------------------------------------------------------------
# Dynamic memory allocation
# --------------------------------------------------------------------------------------


def retention(free_gates: jax.Array, prev_read_weights: jax.Array) -> jax.Array:
    """Memory retention vector: how much of each slot the read heads do *not* free.

    Implements ``psi_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the psi_t equation).

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

    Implements ``u_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the u_t equation).

    Symbols: ``u_{t-1}`` = ``prev_usage``, ``w^w_{t-1}`` = ``prev_write_weights``,
    ``psi_t`` = ``psi`` (from ``retention``).

        u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} o w^w_{t-1}) o psi_t

    Args:
      prev_usage: ``[N]`` in ``[0, 1]``.
      prev_write_weights: ``[N]`` the write weights of the previous step.
      psi: ``[N]`` the retention vector of this step.

    Returns:
      ``[N]`` ``u_t`` in ``[0, 1]``.
    """
    return (prev_usage + prev_write_weights - prev_usage * prev_write_weights) * psi


def allocation(usage_vector: jax.Array) -> jax.Array:
    """Allocation weights: the least-used slot first, by a sort over usage.

    Implements ``a_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the a_t equation).

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
    prod_before = jnp.concatenate(
        [jnp.ones((1,), sorted_usage.dtype), jnp.cumprod(sorted_usage)[:-1]]
    )
    sorted_allocation = (1.0 - sorted_usage) * prod_before  # a_t[phi_t[j]]
    return jnp.zeros_like(usage_vector).at[order].set(sorted_allocation)


def write_weights(
    allocation_weights: jax.Array,
    content: jax.Array,
    allocation_gate: jax.Array,
    write_gate: jax.Array,
) -> jax.Array:
    """Write weights: allocation and content addressing mixed, then gated.

    Implements ``w^w_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the w^w_t equation) and of seed ``003_6adbd108c178b20b.txt``
    ("Write operation").

    Symbols: ``a_t`` = ``allocation_weights``, ``c^w_t`` = ``content``,
    ``g^a_t`` = ``allocation_gate``, ``g^w_t`` = ``write_gate``.

        w^w_t = g^w_t [g^a_t a_t + (1 - g^a_t) c^w_t]

    Args:
      allocation_weights: ``[N]`` ``a_t``.
      content: ``[N]`` write content weights ``c^w_t = C(M_{t-1}, k^w_t, beta^w_t)``.
      allocation_gate: ``[]`` in ``[0, 1]``.
      write_gate: ``[]`` in ``[0, 1]``.

    Returns:
      ``[N]`` ``w^w_t``, summing to at most 1.
    """
    return write_gate * (allocation_gate * allocation_weights + (1.0 - allocation_gate) * content)


def write(
    memory: jax.Array, weights: jax.Array, erase: jax.Array, write_vector: jax.Array
) -> jax.Array:
    """Erase then add: the memory after this step's write.

    Implements ``M_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the first equation) and of seed ``003_6adbd108c178b20b.txt``
    ("Write operation"), where ``E`` (``J_{p,q}``) is the all-ones ``[N, W]``
    matrix.

    Symbols: ``M_{t-1}`` = ``memory``, ``w^w_t`` = ``weights``, ``e_t`` = ``erase``,
    ``v_t`` = ``write_vector``.

        M_t = M_{t-1} o (E - w^w_t e_t^T) + w^w_t v_t^T

    Args:
      memory: ``[N, W]`` ``M_{t-1}``.
      weights: ``[N]`` ``w^w_t``.
      erase: ``[W]`` ``e_t`` in ``[0, 1]``.
      write_vector: ``[W]`` ``v_t``.

    Returns:
      ``[N, W]`` ``M_t``.
    """
    return memory * (1.0 - jnp.outer(weights, erase)) + jnp.outer(weights, write_vector)


# --------------------------------------------------------------------------------------
# Temporal memory linkage
# --------------------------------------------------------------------------------------


def precedence(prev_precedence: jax.Array, weights: jax.Array) -> jax.Array:
    """Precedence weights: how much each slot was the last one written.

    Implements ``p_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the p_t equation).

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

    Implements ``L_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the L_t equation); ``(1 - I)`` zeroes the diagonal (a slot
    does not follow itself).

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


def directional_weights(link_matrix: jax.Array, prev_read_weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Forward and backward weights: follow the write order from the last reads.

    Implements ``f^i_t`` and ``b^i_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC
    section, "Addressing") and ``f_t^r``, ``b_t^r`` of seed
    ``003_6adbd108c178b20b.txt`` ("Read operation").

    Symbols: ``L_t`` = ``link_matrix``, ``w^{r,i}_{t-1}`` = ``prev_read_weights[i]``.

        f^i_t = L_t w^{r,i}_{t-1}        (the slots written after the ones read)
        b^i_t = L_t^T w^{r,i}_{t-1}      (the slots written before the ones read)

    Args:
      link_matrix: ``[N, N]`` ``L_t`` (this step's link, after ``link``).
      prev_read_weights: ``[R, N]`` ``w^r_{t-1}``.

    Returns:
      ``(forward, backward)``, each ``[R, N]``.
    """
    forward = jnp.einsum("ij,rj->ri", link_matrix, prev_read_weights)  # f[r, i] = sum_j L[i, j] w[r, j]
    backward = jnp.einsum("ji,rj->ri", link_matrix, prev_read_weights)  # b[r, i] = sum_j L[j, i] w[r, j]
    return forward, backward


@jax.custom_vjp
def link_and_directions(
    prev_link: jax.Array, prev_precedence: jax.Array, weights: jax.Array, prev_read_weights: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``link`` then ``directional_weights`` in one function with a hand-written VJP.

    Returns ``(L_t, f_t, b_t)``, exactly ``L_t = link(L_{t-1}, p_{t-1}, w^w_t)`` and
    ``f_t, b_t = directional_weights(L_t, w^r_{t-1})`` (same equations, same
    shapes: ``[N, N]``, ``[R, N]``, ``[R, N]``); ``step`` calls this.

    Why: these are the DNC's only ``O(N^2)`` operations, and at ``N = 1024`` they
    are the whole cost of a training step. Under autodiff the backward pass keeps
    ``L_t`` and every ``[N, N]`` temporary of the forward as residuals (or, with
    ``remat``, recomputes the forward) and makes about a dozen passes over
    ``[N, N]`` arrays per step. The VJP below keeps only ``L_{t-1}`` (the carry,
    which a scan stores anyway, so no ``remat`` is needed) and reaches every
    gradient with a few passes: ``G`` (one ``[N, 2R] x [2R, N]`` product added to
    ``gLn``) and ``dL_{t-1}`` from it, a row and a column reduction, and two
    ``[N, N] x [N, 3R]`` products with ``L_{t-1}``. ``L_t`` is never rebuilt:
    its products are expanded in terms of ``L_{t-1}`` (below). The tests compare
    it with autodiff through ``link`` and ``directional_weights`` in float64.
    Measured on the 2-core CPU (``benchmarks/results/cpu-2cores/speed.md``), it
    took the DNC N = 1024 training step from 11.9 s (autodiff, remat) to 8.4 s.

    The derivation. Write ``L = L_{t-1}``, ``p = p_{t-1}``, ``w = w^w_t``,
    ``v_r`` = head r's ``w^r_{t-1}``, ``Ln = L_t`` and the cotangents ``gLn, g_f, g_b``.
    ``Ln = (1 - I) o [(1 - w 1^T - 1 w^T) o L + w p^T]``, ``f_r = Ln v_r``,
    ``b_r = Ln^T v_r``. The total cotangent of ``Ln`` is

        G = gLn + sum_r (g_f[r] v_r^T + v_r g_b[r]^T),    H = (1 - I) o G

    and then, with ``d_j = (1 - 2 w_j) L_jj + w_j p_j`` (the diagonal term the
    ``(1 - I)`` removes),

        dL     = (1 - w 1^T - 1 w^T) o H
        dp_j   = sum_i H_ij w_i
        dw_k   = sum_j H_kj (p_j - L_kj) - sum_i H_ik L_ik
        dv_r   = Ln^T g_f[r] + Ln g_b[r]
               = ((1 - w) o g_f[r])^T L - w o (g_f[r]^T L) + (g_f[r] . w) p - g_f[r] o d
                 + (1 - w) o (L g_b[r]) - L (w o g_b[r]) + (g_b[r] . p) w - g_b[r] o d

    where the rank-``2R`` part of ``G`` enters the reductions through ``L v``
    and ``u^T L`` products instead of an ``[N, N]`` array.
    """
    new_link = link(prev_link, prev_precedence, weights)
    forward, backward = directional_weights(new_link, prev_read_weights)
    return new_link, forward, backward


def _link_and_directions_fwd(prev_link, prev_precedence, weights, prev_read_weights):
    out = link_and_directions(prev_link, prev_precedence, weights, prev_read_weights)
    return out, (prev_link, prev_precedence, weights, prev_read_weights)


def _link_and_directions_bwd(residuals, cotangents):
    link_, p, w, v = residuals  # [N, N], [N], [N], [R, N]
    g_link, g_f, g_b = cotangents  # [N, N], [R, N], [R, N]
    num_heads = v.shape[0]
    # G = gLn + sum_r u_r v'_r^T with the 2R rank-one terms (u, v') = (g_f[r], v_r), (v_r, g_b[r]).
    # One small matmul is faster here than the 2R outer products unrolled in an elementwise loop.
    us = jnp.concatenate([g_f, v], axis=0)  # [2R, N]
    vs = jnp.concatenate([v, g_b], axis=0)  # [2R, N]
    total = g_link + us.T @ vs  # [N, N] G
    off_diagonal = 1.0 - jnp.eye(w.shape[0], dtype=link_.dtype)
    g_prev_link = (1.0 - w[:, None] - w[None, :]) * (off_diagonal * total)  # (1 - w 1^T - 1 w^T) o H

    diag_g = jnp.diagonal(g_link) + jnp.sum(us * vs, axis=0)  # [N] G_kk
    diag_l = jnp.diagonal(link_)  # [N] L_kk
    # Products with L for every rank-one term and for dv: one [3R, N] x [N, N], one [N, N] x [N, 3R].
    left = jnp.concatenate([us, g_f * (1.0 - w)], axis=0) @ link_  # [3R, N]: u^T L
    right = (link_ @ jnp.concatenate([vs, w * g_b], axis=0).T).T  # [3R, N]: (L u)^T
    us_l, gf_l, gf_1w_l = left[: 2 * num_heads], left[:num_heads], left[2 * num_heads :]  # u_r^T L, ...
    l_vs, l_gb, l_wgb = right[: 2 * num_heads], right[num_heads : 2 * num_heads], right[2 * num_heads :]  # L v'_r

    # sum_j G_kj (p_j - L_kj) and sum_i G_ik L_ik, then the diagonal of H removed.
    row = jnp.sum(g_link * (p[None, :] - link_), axis=1) + jnp.sum(us * ((vs @ p)[:, None] - l_vs), axis=0)
    col = jnp.sum(g_link * link_, axis=0) + jnp.sum(vs * us_l, axis=0)
    g_w = (row - diag_g * (p - diag_l)) - (col - diag_g * diag_l)
    g_p = w @ g_link + (us @ w) @ vs - diag_g * w

    d = (1.0 - 2.0 * w) * diag_l + w * p  # [N]
    g_v = (
        gf_1w_l - w * gf_l + (g_f @ w)[:, None] * p - g_f * d
        + (1.0 - w) * l_gb - l_wgb + (g_b @ p)[:, None] * w - g_b * d
    )
    return g_prev_link, g_p, g_w, g_v


link_and_directions.defvjp(_link_and_directions_fwd, _link_and_directions_bwd)


def read_weights(
    read_modes: jax.Array, backward: jax.Array, content: jax.Array, forward: jax.Array
) -> jax.Array:
    """Read weights: each head's mix of backward, content and forward addressing.

    Implements ``w^{r,i}_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing") and ``w_t^r`` of seed ``003_6adbd108c178b20b.txt`` ("Read
    operation"). The modes are in the seeds' order: index 0 backward, 1 content,
    2 forward (seed 002 counts them 1, 2, 3; seed 003 0, 1, 2).

    Symbols: ``pi^i_t`` = ``read_modes[i]``, ``b^i_t`` = ``backward[i]``,
    ``c^{r,i}_t`` = ``content[i]``, ``f^i_t`` = ``forward[i]``.

        w^{r,i}_t = pi^i_t[1] b^i_t + pi^i_t[2] c^{r,i}_t + pi^i_t[3] f^i_t

    Args:
      read_modes: ``[R, 3]`` each row a distribution (backward, content, forward).
      backward: ``[R, N]`` ``b_t``.
      content: ``[R, N]`` read content weights ``c^r_t``.
      forward: ``[R, N]`` ``f_t``.

    Returns:
      ``[R, N]`` ``w^r_t``, each row summing to at most 1.
    """
    return (
        read_modes[:, 0:1] * backward + read_modes[:, 1:2] * content + read_modes[:, 2:3] * forward
    )


def read(memory: jax.Array, weights: jax.Array) -> jax.Array:
    """Read vectors: each head's weighted sum of memory rows.

    Implements ``r^i_t`` of seed ``002_44e42d2b9681fe3e.txt`` (DNC section,
    "Addressing", the r^i_t equation) and ``m_t^r`` of seed
    ``003_6adbd108c178b20b.txt``.

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


def _check_state(state: DNCState) -> tuple[int, int, int]:
    check_shape("state.memory", state.memory, (None, None), "N, W")
    n, w = state.memory.shape
    check_shape("state.read_weights", state.read_weights, (None, n), "R, N")
    r = state.read_weights.shape[0]
    check_shape("state.usage", state.usage, (n,), "N")
    check_shape("state.link", state.link, (n, n), "N, N")
    check_shape("state.precedence", state.precedence, (n,), "N")
    check_shape("state.write_weights", state.write_weights, (n,), "N")
    check_shape("state.reads", state.reads, (r, w), "R, W")
    return n, w, r


def _check_controls(controls: DNCControls, w: int, r: int) -> None:
    check_shape("controls.read_keys", controls.read_keys, (r, w), "R, W")
    check_shape("controls.read_strengths", controls.read_strengths, (r,), "R")
    check_shape("controls.write_key", controls.write_key, (w,), "W")
    check_shape("controls.write_strength", controls.write_strength, (), "")
    check_shape("controls.erase", controls.erase, (w,), "W")
    check_shape("controls.write_vector", controls.write_vector, (w,), "W")
    check_shape("controls.free_gates", controls.free_gates, (r,), "R")
    check_shape("controls.allocation_gate", controls.allocation_gate, (), "")
    check_shape("controls.write_gate", controls.write_gate, (), "")
    check_shape("controls.read_modes", controls.read_modes, (r, 3), "R, 3")


def step(
    state: DNCState,
    controls: DNCControls,
    mask: jax.Array | None = None,
    *,
    read_previous_memory: bool = False,
) -> tuple[DNCState, jax.Array]:
    """One DNC memory step: free, allocate, write, link, read.

    Implements the DNC "Addressing" equations of seed ``002_44e42d2b9681fe3e.txt``
    in their dependency order (and seed ``003_6adbd108c178b20b.txt``'s memory
    controller):

    1. ``psi_t = retention(f_t, w^r_{t-1})``; ``u_t = usage(u_{t-1}, w^w_{t-1}, psi_t)``
       (usage from the previous step's write and read weights);
    2. ``c^w_t = C(M_{t-1}, k^w_t, beta^w_t)``; ``a_t = allocation(u_t)``;
       ``w^w_t = write_weights(a_t, c^w_t, g^a_t, g^w_t)``;
    3. ``M_t = write(M_{t-1}, w^w_t, e_t, v_t)``;
    4. ``L_t = link(L_{t-1}, p_{t-1}, w^w_t)`` with the precedence *before* its
       update, then ``p_t = precedence(p_{t-1}, w^w_t)``;
    5. ``f_t, b_t = directional_weights(L_t, w^r_{t-1})``;
       ``c^r_t = C(M, k^r_t, beta^r_t)``; ``w^r_t = read_weights(pi_t, b_t, c^r_t, f_t)``;
    6. ``r_t = read(M_t, w^r_t)``.

    Which memory the read content weights see (step 5):

    * ``read_previous_memory=False`` (default): ``M = M_t``, the memory after this
      step's write, as in Graves et al. 2016 (Nature, Methods) and DeepMind's
      ``dnc`` code, so a vector written at step t can be found by content at step t;
      seed 003 also writes ``M_t`` there.
    * ``read_previous_memory=True``: ``M = M_{t-1}``, as printed in seed 002
      (``c^{r,i}_t = C(M_{t-1}, k^{r,i}_t, beta^{r,i}_t)``). The read itself
      (step 6) uses ``M_t`` in both cases, as both seeds print.

    Args:
      state: ``DNCState`` of the previous step (``t - 1``).
      controls: ``DNCControls`` of this step, already activated.
      mask: optional ``[]`` (bool or {0, 1}); where 0 (padding) the state is
        returned unchanged and the read is zero. (The link is left unchanged by
        giving it zero write weights, exact for any link with a zero diagonal,
        which ``init_state`` and every step produce.)
      read_previous_memory: see above; a static Python bool.

    Returns:
      ``(new_state, reads)`` with ``reads`` ``[R, W]`` (also stored in
      ``new_state.reads``).

    Raises:
      ValueError: at trace time, naming the field, when a state, control or mask
        shape is inconsistent with ``N, W, R`` taken from ``state.memory`` and
        ``state.read_weights``.
    """
    _, w, r = _check_state(state)
    _check_controls(controls, w, r)
    if mask is not None:
        check_shape("mask", mask, (), "")

    # Dynamic memory allocation, from the previous step's read and write weights.
    psi = retention(controls.free_gates, state.read_weights)  # [N]
    new_usage = usage(state.usage, state.write_weights, psi)  # [N]

    # Write: content weights on M_{t-1}, mixed with allocation, then erase/add.
    write_content = content_weights(state.memory, controls.write_key, controls.write_strength)  # [N]
    alloc = allocation(new_usage)  # [N]
    new_write_weights = write_weights(
        alloc, write_content, controls.allocation_gate, controls.write_gate
    )  # [N]
    new_memory = write(state.memory, new_write_weights, controls.erase, controls.write_vector)  # [N, W]

    # Temporal linkage: the link uses p_{t-1}, so update it before the precedence.
    # On a masked step the link is given zero write weights, which leaves it exactly
    # unchanged (L_t = (1 - I) o L_{t-1} = L_{t-1}: its diagonal is zero), so the
    # masked select below can skip the [N, N] link instead of reading and writing
    # it a second time (and storing a selected copy for the backward pass).
    keep = None if mask is None else jnp.asarray(mask).astype(bool)
    link_weights = new_write_weights if keep is None else jnp.where(keep, new_write_weights, 0.0)
    # link_and_directions: link, then directional_weights (used below), with a VJP
    # that makes few passes over the [N, N] arrays.
    new_link, forward, backward = link_and_directions(
        state.link, state.precedence, link_weights, state.read_weights
    )  # [N, N], [R, N], [R, N]
    new_precedence = precedence(state.precedence, new_write_weights)  # [N]

    # Read.
    content_memory = state.memory if read_previous_memory else new_memory
    read_content = content_weights(content_memory, controls.read_keys, controls.read_strengths)  # [R, N]
    new_read_weights = read_weights(controls.read_modes, backward, read_content, forward)  # [R, N]
    reads = read(new_memory, new_read_weights)  # [R, W]

    new_state = DNCState(
        memory=new_memory,
        usage=new_usage,
        link=new_link,
        precedence=new_precedence,
        read_weights=new_read_weights,
        write_weights=new_write_weights,
        reads=reads,
    )
    if keep is None:
        return new_state, reads
    new_state = scan_lib.select(keep, new_state._replace(link=None), state._replace(link=None))
    new_state = new_state._replace(link=new_link)  # unchanged on a masked step (above)
    return new_state, jnp.where(keep, reads, jnp.zeros_like(reads))


# --------------------------------------------------------------------------------------
# Interface vector (seed 003 Table 1)
# --------------------------------------------------------------------------------------


def interface_size(num_reads: int, word_size: int) -> int:
    """Length of the raw interface vector: ``R W + 5 R + 3 W + 3``.

    Implements ``i_t in R^{sq + 5s + 3q + 3}`` of seed ``003_6adbd108c178b20b.txt``
    (``s`` = ``R`` read heads, ``q`` = ``W`` word size), which is also the length of
    seed 002's ``[xi_t; rho_t]``.

    Raises:
      ValueError: if a size is not a positive integer.
    """
    r = check_positive_int("num_reads (R)", num_reads)
    w = check_positive_int("word_size (W)", word_size)
    return r * w + 5 * r + 3 * w + 3


def controls_from_interface(raw: jax.Array, num_reads: int, word_size: int) -> DNCControls:
    """Split a raw interface vector and activate each part (seed 003 Table 1).

    Implements the interface vector of seed ``003_6adbd108c178b20b.txt`` (Table 1,
    with ``oneplus`` strengths from "Memory addressing" and softmax-normalised
    modes from "Read operation") and the activations of seed
    ``002_44e42d2b9681fe3e.txt`` (DNC "Definitions": sigma, oneplus, softmax).
    Pure: no parameters, so any JAX network's output can drive ``step``.

    Layout of the last axis (``P = interface_size(R, W)``), in this order, the order
    of Graves et al. 2016 and DeepMind's ``dnc``:

    ===============  ======  ================  ==========================
    field            length  symbol            activation
    ===============  ======  ================  ==========================
    read_keys        R W     k^{r,i}_t         identity, row-major [R, W]
    read_strengths   R       beta^{r,i}_t      oneplus
    write_key        W       k^w_t             identity
    write_strength   1       beta^w_t          oneplus
    erase            W       e_t               sigmoid
    write_vector     W       v_t               identity
    free_gates       R       f^i_t             sigmoid
    allocation_gate  1       g^a_t             sigmoid
    write_gate       1       g^w_t             sigmoid
    read_modes       3 R     pi^i_t            softmax per head, [R, 3]
    ===============  ======  ================  ==========================

    ``read_modes`` holds head 0's three logits (backward, content, forward), then
    head 1's, and so on.

    Args:
      raw: ``[..., P]`` raw controller output; leading axes (batch, time) are kept.
      num_reads: ``R``.
      word_size: ``W``.

    Returns:
      ``DNCControls`` whose fields have the shapes of its comments with the leading
      axes of ``raw`` in front.

    Raises:
      ValueError: if ``raw`` has no last axis of length ``P``, or a size is not a
        positive integer.
    """
    size = interface_size(num_reads, word_size)
    r, w = int(num_reads), int(word_size)
    raw = jnp.asarray(raw)
    if raw.ndim == 0 or raw.shape[-1] != size:
        raise ValueError(
            f"raw: expected shape [..., P] = (..., {size}) with P = R*W + 5R + 3W + 3 "
            f"for R = {r}, W = {w}, got {tuple(raw.shape)}"
        )
    lead = raw.shape[:-1]

    parts = {}
    start = 0
    for name, length in (
        ("read_keys", r * w),
        ("read_strengths", r),
        ("write_key", w),
        ("write_strength", 1),
        ("erase", w),
        ("write_vector", w),
        ("free_gates", r),
        ("allocation_gate", 1),
        ("write_gate", 1),
        ("read_modes", 3 * r),
    ):
        parts[name] = raw[..., start : start + length]
        start += length

    return DNCControls(
        read_keys=parts["read_keys"].reshape(*lead, r, w),
        read_strengths=oneplus(parts["read_strengths"]),
        write_key=parts["write_key"],
        write_strength=oneplus(parts["write_strength"][..., 0]),
        erase=jax.nn.sigmoid(parts["erase"]),
        write_vector=parts["write_vector"],
        free_gates=jax.nn.sigmoid(parts["free_gates"]),
        allocation_gate=jax.nn.sigmoid(parts["allocation_gate"][..., 0]),
        write_gate=jax.nn.sigmoid(parts["write_gate"][..., 0]),
        read_modes=jax.nn.softmax(parts["read_modes"].reshape(*lead, r, 3), axis=-1),
    )
