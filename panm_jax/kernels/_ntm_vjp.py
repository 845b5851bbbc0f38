"""The NTM step's memory part with a hand-written VJP (``memory_step``), and its derivation.

``ntm.step`` calls ``memory_step``, which returns ``(M_t, w^w_t, w^r_t, r_t)``,
exactly the equations of ``ntm.address``, ``ntm.write`` and ``ntm.read`` (Graves
et al. 2014, "Neural Turing Machines", Eqs. 2-9)::

    w^w_t = address(M_{t-1}, w^w_{t-1}, write_head)
    M_t   = write(M_{t-1}, keep * w^w_t, erase, add)
    w^r_t = address(M_t, w^r_{t-1}, read_head)
    r_t   = read(M_t, w^r_t)

``keep`` is a scalar: 1 for a real step, 0 for a padding step, whose write is
then ``M (1 - 0 e) + 0 a = M`` exactly.

Why a hand-written VJP: under autodiff the backward pass of a step makes about
nine passes that each write an ``[N, W]`` array per example (the cosine's, the
erase's and the read's transposes, and broadcasts materialised for them), and
keeps several ``[N, W]`` residuals per step (or recomputes the whole step with
``remat``). The VJP here keeps only ``M_{t-1}`` (the carry, which the scan
stores anyway), the controls, the slots' inverse norms and one ``[5, K, N]``
stack each for the write and the read heads (``_chain_fwd``); it rebuilds
``M_t`` inside fused loops and reaches every gradient through one cotangent
``G`` of ``M_t``. Being a ``custom_vjp``, it has reverse-mode derivatives only
(``grad``, ``vjp``), not ``jvp``. ``tests/kernels/test_ntm.py`` compares it with
autodiff through ``ntm.address``, ``ntm.write`` and ``ntm.read`` in float64.

Notation: ``N`` slots, ``W`` word size, ``R`` read and ``H`` write heads, ``K``
heads of one group (``R`` or ``H``), ``S`` shift width, ``c = (S - 1) / 2``;
``<a, b>`` sums over the slots, ``o`` is the elementwise product, ``x^ = x / |x|``
and ``1 / |x|`` come from ``addressing.normalize`` (row by row; 0 and 1 for an
exactly zero vector, whose gradient is then the one ``normalize`` defines). A
``g`` in front of a name is the cotangent of that value, a ``d`` the gradient
of an input. The formulas are in the papers' ``[N, W]`` orientation (row ``i``
of ``M`` is slot ``i``); the code computes their transposes (``G^T``, ``K^T``,
...) in the kernel's ``[W, N]`` layout.

Forward, for a group of ``K`` heads addressing a memory ``M`` (``[N, W]``)::

    (6)  D[k, i] = k^_k . M^_i                              [K, N]  cosine
    (5)  w_c     = softmax(beta D)                          [K, N]  content weights
    (7)  w_g     = g w_c + (1 - g) w_prev                   [K, N]  interpolation
    (8)  w~      = sum_k s_k roll(w_g, k - c)               [K, N]  shift
    (9)  w       = softmax(gamma l),  l = log(max(w~, 0) + eps)    sharpening

and for the write (Eqs. 3-4, ``H`` heads; ``w`` = ``keep w^w_t``) and the read (Eq. 2)::

    M_t = M_{t-1} o K + sum_h w_h a_h^T,   K = prod_h F_h,   F_h = 1 - w_h e_h^T    [N, W]
    r   = w^r M_t                                                                  [R, W]

Backward, in reverse order, from the cotangents ``gM_t`` ``[N, W]``, ``gw^w``
``[H, N]``, ``gw^r`` ``[R, N]`` and ``gr`` ``[R, W]``:

1. The read (Eq. 2), ``r[r] = sum_i w^r[r, i] M_t[i]``::

       g_wr = gw^r + gr M_t^T                                       [R, N]
       G    = gM_t + sum_r w^r[r] gr[r]^T                           [N, W]  (so far)

2. The read heads' chain (Eqs. 9, 8, 7, 5) at ``g_wr``, ``_chain_bwd`` (for any
   group of ``K`` heads, from the cotangent ``gy`` of its weights ``y = w``)::

       (9)  u    = y o (gy - <gy, y>)                   dgamma = <u, l>              [K]
            gw~  = gamma u / (max(w~, 0) + eps) o 1[w~ > 0]   (1/2 at w~ = 0, as jnp.maximum)
       (8)  gw_g = sum_k s_k roll(gw~, c - k)           ds_k   = <gw~, roll(w_g, k - c)>   [K, S]
       (7)  gw_c = g gw_g    gw_prev = (1 - g) gw_g     dg     = <gw_g, w_c - w_prev>      [K]
       (5)  v    = w_c o (gw_c - <gw_c, w_c>)           dbeta  = <v, D>              [K]
            gD   = beta v                                                            [K, N]

3. The read heads' cosine (Eq. 6) over ``M_t``. With ``d(x^)/dx = (I - x^ x^^T) / |x|``,
   for ``D[k, i] = k^_k . M^_i`` and its cotangent ``dD`` (``gD`` of step 2)::

       dk_k = (sum_i dD[k, i] M^_i - (sum_i dD[k, i] D[k, i]) k^_k) / |k_k|        [K, W]
       dM_i = (sum_k dD[k, i] k^_k - (sum_k dD[k, i] D[k, i]) M^_i) / |M_i|        [N, W]

   so the total cotangent of ``M_t`` is::

       G = gM_t + sum_r w^r[r] gr[r]^T + sum_r (dD^r[r] / |M_t|) k^_r^T
           - (sum_r dD^r[r] D^r[r] / |M_t|) o M^_t                         [N, W]

4. The write (Eqs. 3-4). With ``K_-h = prod_{h' != h} F_h'``::

       dw_h[i]  = sum_j G_ij (a_hj - M_ij e_hj K_-h,ij)                            [N]
       de_h[j]  = -sum_i G_ij M_ij w_hi K_-h,ij                                    [W]
       da_h[j]  = sum_i G_ij w_hi                                                  [W]
       dkeep    = sum_h,i dw_h[i] w^w_t[h, i]                                      []
       dM_{t-1} = G o K + (the cosine's term of step 6)                            [N, W]

   where ``M`` is ``M_{t-1}``; the write weights' cotangent is ``gw^w + keep dw``.

5. The write heads' chain (step 2's formulas) at ``gw^w + keep dw``.

6. The write heads' cosine (step 3's formulas) over ``M_{t-1}``::

       dM_{t-1} = G o K + sum_h (dD^w[h] / |M|) k^_h^T - (sum_h dD^w[h] D^w[h] / |M|) o M^

The ``[W, N]`` write arithmetic (``erase_factors``, ``product``, ``outer_sum``)
lives here rather than in ``ntm.py`` because the backward pass needs it factor
by factor (``K_-h``); ``ntm.write`` composes the same functions, so the forward
here and ``ntm.write`` compute ``M_t`` with the same operations.
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp

from panm_jax.kernels import addressing
from panm_jax.kernels._ntm_heads import HeadControls

__all__ = ["erase_factors", "memory_step", "outer_sum", "product"]


def erase_factors(weights: jax.Array, erase: jax.Array) -> list[jax.Array]:
    """The write heads' erase factors in the ``[W, N]`` layout, one per head.

    ``F_h^T = (1 - w_h e_h^T)^T = 1 - e_h w_h^T`` for each write head ``h``
    (Graves et al. 2014, Eq. 3), each ``[W, N]``, for ``weights`` ``[H, N]`` and
    ``erase`` ``[H, W]``.
    """
    return [1.0 - erase[h][:, None] * weights[h][None, :] for h in range(weights.shape[0])]


def product(factors: list[jax.Array]) -> jax.Array | float:
    """The elementwise product of a static list, unrolled (``1.0`` for an empty list)."""
    return functools.reduce(operator.mul, factors, 1.0)


def outer_sum(left: jax.Array, right: jax.Array) -> jax.Array:
    """``(sum_k left[k] right[k]^T)^T = sum_k right[k] left[k]^T``, ``[W, N]``, for ``[K, N]`` and ``[K, W]``.

    Unrolled over the small static ``K``: one elementwise fusion (a ``K = 1``
    contraction compiles to a matmul call per example).
    """
    total = right[0][:, None] * left[0][None, :]
    for k in range(1, left.shape[0]):
        total = total + right[k][:, None] * left[k][None, :]
    return total


def _chain_fwd(similarity: jax.Array, previous: jax.Array, head: HeadControls) -> tuple[jax.Array, jax.Array]:
    """``ntm.address`` after its cosine, keeping what ``_chain_bwd`` needs.

    ``softmax(beta D) -> interpolate -> shift -> sharpen`` over ``[K, N]`` (the
    same functions as ``ntm.address``, so the same values). Returns the weights and
    one ``[5, K, N]`` stack ``(D, w_prev, w_c, w~, w)``: one residual array per
    step for the scan to store instead of five.
    """
    content = addressing.scaled_softmax(similarity, head.strength)
    shifted = addressing.circular_shift(addressing.interpolate(content, previous, head.gate), head.shift)
    weights = addressing.sharpen(shifted, head.sharpen)
    return weights, jnp.stack([similarity, previous, content, shifted, weights])


def _roll(x: jax.Array, shift: int) -> jax.Array:
    return jnp.roll(x, shift, axis=-1) if shift % x.shape[-1] else x


def _chain_bwd(saved: jax.Array, head: HeadControls, g_weights: jax.Array):
    """The VJP of ``_chain_fwd`` at ``g_weights`` (``[K, N]``): step 2 of the module docstring.

    Returns ``(gD, gw_prev, dbeta, dg, ds, dgamma)``.
    """
    # Four reductions over the slots, each taking every sum that is ready at that point
    # (stacked, one reduction each): for a batch of examples a reduction of a [B, K, N]
    # array costs about as much as its launch, so their number, not their size, is the cost.
    similarity, previous, content, shifted, weights = saved
    gamma = head.sharpen[..., None]
    gate = head.gate[..., None]
    width = head.shift.shape[-1]
    centre = (width - 1) // 2
    clamped = jnp.maximum(shifted, 0.0) + addressing.SHARPEN_EPS
    u = weights * (g_weights - jnp.sum(g_weights * weights, axis=-1, keepdims=True))
    slope = jnp.where(shifted > 0, 1.0, jnp.where(shifted == 0, 0.5, 0.0))
    g_shifted = gamma * u / clamped * slope
    gated = gate * content + (1.0 - gate) * previous
    sums = jnp.sum(
        jnp.stack([u * jnp.log(clamped)] + [g_shifted * _roll(gated, k - centre) for k in range(width)]), axis=-1
    )
    d_gamma, d_shift = sums[0], jnp.moveaxis(sums[1:], 0, -1)
    g_gated = sum(head.shift[..., k, None] * _roll(g_shifted, centre - k) for k in range(width))
    sums = jnp.sum(jnp.stack([g_gated * content, g_gated * previous]), axis=-1)
    d_gate = sums[0] - sums[1]
    v = content * gate * (g_gated - sums[0][..., None])  # w_c o (gw_c - <gw_c, w_c>), gw_c = g gw_g
    d_strength = jnp.sum(v * similarity, axis=-1)
    return head.strength[..., None] * v, (1.0 - gate) * g_gated, d_strength, d_gate, d_shift, d_gamma


@jax.custom_vjp
def memory_step(
    memory: jax.Array,
    prev_write: jax.Array,
    prev_read: jax.Array,
    write_head: HeadControls,
    read_head: HeadControls,
    erase: jax.Array,
    add: jax.Array,
    keep: jax.Array,
):
    """The ``[W, N]`` part of ``ntm.step``, with a hand-written VJP.

    Returns ``(M_t, w^w_t, w^r_t, r_t)``: exactly

        w^w_t = address(M_{t-1}, w^w_{t-1}, write_head)
        M_t   = write(M_{t-1}, keep * w^w_t, erase, add)
        w^r_t = address(M_t, w^r_{t-1}, read_head)
        r_t   = read(M_t, w^r_t)

    (Graves et al. 2014, "Neural Turing Machines", Eqs. 2-9). ``keep`` is a
    scalar: 1 for a real step, 0 for a padding step, whose write is then
    ``M (1 - 0 e) + 0 a = M`` exactly.

    Args:
      memory: ``[W, N]`` ``M_{t-1}^T``.
      prev_write: ``[H, N]`` ``w^w_{t-1}``.
      prev_read: ``[R, N]`` ``w^r_{t-1}``.
      write_head: ``HeadControls`` of the ``H`` write heads.
      read_head: ``HeadControls`` of the ``R`` read heads.
      erase: ``[H, W]`` erase vectors in ``[0, 1]``.
      add: ``[H, W]`` add vectors.
      keep: ``[]`` 1 or 0 (or anything between, differentiably).

    Returns:
      ``(M_t^T [W, N], w^w_t [H, N], w^r_t [R, N], r_t [R, W])``.

    The VJP and its derivation: the docstring of this module. Reverse mode only
    (``grad``, ``vjp``), not ``jvp``.
    """
    return _memory_step_fwd(memory, prev_write, prev_read, write_head, read_head, erase, add, keep)[0]


def _similarity_and_inverse_norms(keys: jax.Array, memory: jax.Array) -> tuple[jax.Array, jax.Array]:
    # ntm.similarity(keys, memory) and the slots' 1 / |M(i)| ([N], addressing.normalize), which the
    # backward pass keeps instead of recomputing the two reductions over [W, N] per memory.
    unit_keys, _ = addressing.normalize(keys)
    unit_slots, inverse = addressing.normalize(memory, axis=0)
    return (unit_keys @ unit_slots).astype(memory.dtype), inverse.astype(memory.dtype)


def _memory_step_fwd(memory, prev_write, prev_read, write_head, read_head, erase, add, keep):
    sim_w, inv_m = _similarity_and_inverse_norms(write_head.key, memory)
    write_weights, write_saved = _chain_fwd(sim_w, prev_write, write_head)
    w = write_weights * keep
    new_memory = memory * product(erase_factors(w, erase)) + outer_sum(w, add)  # ntm.write
    sim_r, inv_new = _similarity_and_inverse_norms(read_head.key, new_memory)
    read_weights, read_saved = _chain_fwd(sim_r, prev_read, read_head)
    reads = read_weights @ new_memory.T  # ntm.read
    residuals = (memory, write_head, read_head, erase, add, keep, write_saved, read_saved, inv_m, inv_new)
    return (new_memory, write_weights, read_weights, reads), residuals


def _memory_step_bwd(residuals, cotangents):
    memory, write_head, read_head, erase, add, keep, write_saved, read_saved, inv_m, inv_new = residuals
    g_memory, g_write_weights, g_read_weights, g_reads = cotangents
    num_writes = erase.shape[0]
    sim_w, write_weights = write_saved[0], write_saved[4]
    sim_r, read_weights = read_saved[0], read_saved[4]

    w = write_weights * keep  # [H, N] the weights the write used
    factors = erase_factors(w, erase)  # F_h
    kept = product(factors)  # K
    new_memory = memory * kept + outer_sum(w, add)  # M_t, rebuilt as ntm.write builds it

    # Steps 1-3: the read and its addressing over M_t. Every [W, N] array below is the
    # transpose of the docstring's [N, W] one (G here is G^T there, and so on).
    g_rw = g_read_weights + g_reads @ new_memory  # [R, N]
    d_sim_r, d_prev_read, *d_read_rest = _chain_bwd(read_saved, read_head, g_rw)
    # The cosine's VJP in unit vectors, with M^_i = M_i / |M_i| written out as M_i times the
    # kept inverse norm (no [W, N] unit array is formed).
    unit_kr, inv_kr = addressing.normalize(read_head.key)  # [R, W], [R]
    coef_r = d_sim_r * inv_new[None, :]  # [R, N]
    total = (
        g_memory
        + outer_sum(read_weights, g_reads)
        + outer_sum(coef_r, unit_kr)
        - (jnp.sum(d_sim_r * sim_r, axis=0) * inv_new)[None, :] * (new_memory * inv_new[None, :])
    )  # G
    d_key_r = inv_kr[:, None] * (coef_r @ new_memory.T - jnp.sum(d_sim_r * sim_r, axis=1)[:, None] * unit_kr)

    # Step 4: the write.
    d_w_rows, d_erase, d_add = [], [], []
    for h in range(num_writes):
        others = product(factors[:h] + factors[h + 1 :])  # K_-h
        # Vector-matrix products over the word axis (each adds W vectors of N slots).
        erased = total * memory * others  # G o M o K_-h
        d_w_rows.append(add[h] @ total - erase[h] @ erased)
        d_erase.append(-(erased @ w[h]))
        d_add.append(total @ w[h])
    d_w = jnp.stack(d_w_rows)  # [H, N]
    d_keep = jnp.sum(d_w * write_weights).astype(keep.dtype)
    # Steps 5-6: the write heads' addressing over M_{t-1}.
    d_sim_w, d_prev_write, *d_write_rest = _chain_bwd(write_saved, write_head, g_write_weights + keep * d_w)
    unit_kw, inv_kw = addressing.normalize(write_head.key)  # [H, W], [H]
    coef_w = d_sim_w * inv_m[None, :]  # [H, N]
    d_memory = (
        total * kept
        + outer_sum(coef_w, unit_kw)
        - (jnp.sum(d_sim_w * sim_w, axis=0) * inv_m)[None, :] * (memory * inv_m[None, :])
    )
    d_key_w = inv_kw[:, None] * (coef_w @ memory.T - jnp.sum(d_sim_w * sim_w, axis=1)[:, None] * unit_kw)

    return (
        d_memory,
        d_prev_write,
        d_prev_read,
        HeadControls(d_key_w, *d_write_rest),
        HeadControls(d_key_r, *d_read_rest),
        jnp.stack(d_erase),
        jnp.stack(d_add),
        d_keep,
    )


memory_step.defvjp(_memory_step_fwd, _memory_step_bwd)
