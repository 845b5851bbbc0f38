"""The hand-written VJP of the DNC's temporal linkage (``dnc.link_and_directions``), and its derivation.

``dnc.link_and_directions`` computes, for one write head, the link matrix and the
directional weights of Graves et al. 2016, "Hybrid computing using a neural
network with dynamic external memory", Nature 538 (Methods, "Temporal memory
linkage"): ``L_t = link(L_{t-1}, p_{t-1}, w^w_t)`` and
``b_t, f_t = directional_weights(L_t, w^r_{t-1})``. ``with_link_vjp`` gives it
the VJP written out below.

Why a hand-written VJP: these are the DNC's only ``O(N^2)`` operations, and at
large ``N`` they dominate the cost of a training step. Under autodiff the
backward pass keeps ``L_t`` and every ``[N, N]`` temporary of the forward as
residuals (or, with ``remat``, recomputes the forward) and makes about a dozen
passes over ``[N, N]`` arrays per step. The VJP here keeps only ``L_{t-1}`` (the
carry, which a scan stores anyway, so no ``remat`` is needed) and reaches every
gradient with a few passes: ``G`` (one ``[N, 2R] x [2R, N]`` product added to
``gLn``) and ``dL_{t-1}`` from it, a row and a column reduction, and two
``[N, N] x [N, 3R]`` products with ``L_{t-1}``. ``L_t`` is never rebuilt: its
products are expanded in terms of ``L_{t-1}`` (step 4 below). Being a
``custom_vjp``, it has reverse-mode derivatives only (``grad``, ``vjp``), not
``jvp``. ``tests/kernels/test_dnc.py`` compares it with autodiff through
``dnc.link`` and ``dnc.directional_weights`` in float64.

Notation: ``L = L_{t-1}`` ``[N, N]``, ``p = p_{t-1}`` ``[N]``, ``w = w^w_t``
``[N]``, ``v_r`` = read head ``r``'s ``w^{r,r}_{t-1}`` ``[N]`` (``R`` of them),
``Ln = L_t``; ``1`` is the all-ones vector, ``I`` the identity, ``o`` the
elementwise product. A ``g`` in front of a name is the cotangent of that output
(``gLn`` ``[N, N]``, ``g_f``, ``g_b`` ``[R, N]``), a ``d`` the gradient of an
input. Forward::

    X   = (1 - w 1^T - 1 w^T) o L + w p^T                          [N, N]
    Ln  = (1 - I) o X                                              [N, N]   link
    f_r = Ln v_r,    b_r = Ln^T v_r                                [N]      directional weights

Backward:

1. The directional weights. ``f_r = Ln v_r`` adds ``g_f[r] v_r^T`` to the cotangent
   of ``Ln`` and ``b_r = Ln^T v_r`` adds ``v_r g_b[r]^T``, so the total cotangent of
   ``Ln`` is::

       G = gLn + sum_r (g_f[r] v_r^T + v_r g_b[r]^T)                [N, N]

2. The zeroed diagonal, ``Ln = (1 - I) o X``::

       H = (1 - I) o G                                              [N, N]

3. The link before the mask, ``X_ij = (1 - w_i - w_j) L_ij + w_i p_j``::

       dL   = (1 - w 1^T - 1 w^T) o H                               [N, N]
       dp_j = sum_i H_ij w_i                                        [N]
       dw_k = sum_j H_kj (p_j - L_kj) - sum_i H_ik L_ik             [N]

   where the rank-``2R`` part of ``G`` enters the sums through ``L v`` and
   ``u^T L`` products instead of an ``[N, N]`` array, and ``H``'s diagonal is
   subtracted from the sums over ``G`` term by term.

4. The read weights, ``dv_r = Ln^T g_f[r] + Ln g_b[r]``, expanded in ``L`` with
   ``d_j = X_jj = (1 - 2 w_j) L_jj + w_j p_j`` (the diagonal term the ``(1 - I)``
   removes)::

       Ln^T g = ((1 - w) o g)^T L - w o (g^T L) + (g . w) p - g o d        [N]
       Ln g   = (1 - w) o (L g) - L (w o g) + (g . p) w - g o d            [N]
       dv_r   = Ln^T g_f[r] + Ln g_b[r]                                    [N]
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

__all__ = ["with_link_vjp"]


def with_link_vjp(primal: Callable) -> Callable:
    """``jax.custom_vjp(primal)`` with the hand-written VJP of this module.

    ``primal(prev_link [N, N], prev_precedence [N], weights [N], prev_read_weights [R, N])``
    must compute ``(L_t [N, N], b_t [R, N], f_t [R, N])`` as a ``NamedTuple`` with
    fields ``link``, ``backward`` and ``forward``: ``dnc.link_and_directions``.
    The forward pass keeps the four inputs as residuals; the backward pass is the
    derivation of the module docstring.
    """
    fn = jax.custom_vjp(primal)

    def fwd(prev_link, prev_precedence, weights, prev_read_weights):
        out = fn(prev_link, prev_precedence, weights, prev_read_weights)
        return out, (prev_link, prev_precedence, weights, prev_read_weights)

    fn.defvjp(fwd, _link_and_directions_bwd)
    return fn


def _link_and_directions_bwd(residuals, cotangents):
    link_, p, w, v = residuals  # [N, N], [N], [N], [R, N]
    g_link, g_f, g_b = cotangents.link, cotangents.forward, cotangents.backward  # [N, N], [R, N], [R, N]
    num_heads = v.shape[0]
    # Step 1: G = gLn + sum_r u_r v'_r^T with the 2R rank-one terms (u, v') = (g_f[r], v_r), (v_r, g_b[r]).
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

    # Step 3: sum_j G_kj (p_j - L_kj) and sum_i G_ik L_ik, then the diagonal of H removed.
    row = jnp.sum(g_link * (p[None, :] - link_), axis=1) + jnp.sum(us * ((vs @ p)[:, None] - l_vs), axis=0)
    col = jnp.sum(g_link * link_, axis=0) + jnp.sum(vs * us_l, axis=0)
    g_w = (row - diag_g * (p - diag_l)) - (col - diag_g * diag_l)
    g_p = w @ g_link + (us @ w) @ vs - diag_g * w

    # Step 4.
    d = (1.0 - 2.0 * w) * diag_l + w * p  # [N]
    g_v = (
        gf_1w_l
        - w * gf_l
        + (g_f @ w)[:, None] * p
        - g_f * d
        + (1.0 - w) * l_gb
        - l_wgb
        + (g_b @ p)[:, None] * w
        - g_b * d
    )
    return g_prev_link, g_p, g_w, g_v
