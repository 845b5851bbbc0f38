"""Addressing primitives shared by the memory kernels.

Content addressing (cosine similarity, softmax over slots) and the NTM's
location-addressing chain: interpolation, circular shift, sharpening
(seed ``000_260939df825cb3ee.txt`` Eq. 12-13; seed ``002_44e42d2b9681fe3e.txt``,
Neural Turing Machine "Addressing" and DNC "Definitions").

Every function works on any number of heads: the leading axes ``[...]`` are
heads (or anything else), the last axis is the memory slots ``N`` (or the word
``W`` for keys). Kernels see one example; modules add the batch axis with
``jax.vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "NORM_EPS",
    "ROLL_SHIFT_MAX",
    "SHARPEN_EPS",
    "circular_shift",
    "content_weights",
    "cosine_similarity",
    "interpolate",
    "oneplus",
    "sharpen",
]

# Added to a squared norm before the square root: sqrt is not differentiable at 0,
# so without it a zero key or an all-zero memory row gives an infinite gradient
# (and 0/0 in the cosine). 1e-8 is below float32 resolution for unit-scale vectors.
NORM_EPS = 1e-8

# Added to weights before the power in `sharpen`: d(w^gamma)/d(gamma) = w^gamma log w
# is 0 * -inf = NaN at w = 0. 1e-12 is far below float32 resolution of weights
# that sum to one over any practical N.
SHARPEN_EPS = 1e-12


def oneplus(x: jax.Array) -> jax.Array:
    """``oneplus(x) = 1 + log(1 + e^x)``, in ``[1, inf)``.

    Implements the "oneplus" of seed ``002_44e42d2b9681fe3e.txt`` (DNC
    Definitions) and the strength activation ``1 + log(1 + e^alpha)`` of seed
    ``003_6adbd108c178b20b.txt`` (Memory addressing); also the sharpening
    activation ``gamma = 1 + softplus(gamma)`` of seed ``000`` Eq. 12.
    Computed with the overflow-safe ``jax.nn.softplus``.
    """
    return 1.0 + jax.nn.softplus(x)


def _safe_norm(x: jax.Array, axis: int = -1) -> jax.Array:
    # sqrt(|x|^2 + NORM_EPS) over `axis`: finite value and gradient at x = 0 (see NORM_EPS).
    return jnp.sqrt(jnp.sum(x * x, axis=axis) + NORM_EPS)


def cosine_similarity(keys: jax.Array, memory: jax.Array) -> jax.Array:
    """Cosine similarity of each key with each memory row.

    Implements ``D(u, v) = u . v / (|u| |v|)`` of seed ``002`` (NTM and DNC
    Definitions); ``R[k, M[i]]`` of seed ``000`` Eq. 13.

    The norms are ``sqrt(|x|^2 + NORM_EPS)``, so a zero key or a zero memory row
    gives similarity 0 with a finite gradient instead of 0/0.

    Args:
      keys: ``[..., W]`` one key per head (any leading axes).
      memory: ``[N, W]``.

    Returns:
      ``[..., N]`` similarities in ``[-1, 1]``.
    """
    dots = jnp.einsum("...w,nw->...n", keys, memory)
    return dots / (_safe_norm(keys)[..., None] * _safe_norm(memory))


def content_weights(memory: jax.Array, keys: jax.Array, strengths: jax.Array) -> jax.Array:
    """Content-based address weights: a softmax over slots of strength x cosine.

    Implements ``w_c[i] = exp(beta D(k, M[i])) / sum_j exp(beta D(k, M[j]))``: seed
    ``000`` Eq. 13 (first line), seed ``002`` NTM "Addressing" ``w^c_t`` and DNC
    ``C(M, k, beta)``, seed ``003`` "Memory addressing".

    Args:
      memory: ``[N, W]`` (``M``).
      keys: ``[..., W]`` (``k``), one per head.
      strengths: ``[...]`` (``beta`` >= 0; already activated).

    Returns:
      ``[..., N]`` weights, each row a probability distribution over slots.
    """
    scores = strengths[..., None] * cosine_similarity(keys, memory)
    return jax.nn.softmax(scores, axis=-1)


def interpolate(content: jax.Array, previous: jax.Array, gate: jax.Array) -> jax.Array:
    """Interpolation with the previous weighting.

    Implements ``w_g = g w_c + (1 - g) w_prev`` (seed ``000`` Eq. 13, second
    line; seed ``002`` NTM "Addressing" ``w^g_t``).

    Args:
      content: ``[..., N]`` content weights ``w_c``.
      previous: ``[..., N]`` previous weights ``w_prev``.
      gate: ``[...]`` interpolation gate ``g`` in ``[0, 1]``.

    Returns:
      ``[..., N]``.
    """
    g = gate[..., None]
    return g * content + (1.0 - g) * previous


# Shift widths up to this are summed from static rolls; wider ones gather (see circular_shift).
ROLL_SHIFT_MAX = 9


def _shift_index(num_slots: int, shift_width: int) -> np.ndarray:
    # idx[i, k] = (i - (k - c)) mod N with c = (S - 1) / 2: the slot whose weight
    # moves to slot i under a shift of (k - c). A static [N, S] table.
    c = (shift_width - 1) // 2
    i = np.arange(num_slots)[:, None]
    k = np.arange(shift_width)[None, :]
    return (i - (k - c)) % num_slots


def circular_shift(weights: jax.Array, shift: jax.Array) -> jax.Array:
    """Rotate each weighting by a distribution over shifts (circular convolution).

    Implements ``w~[i] = sum_j w_g[j] s[i - j]`` with indices mod ``N`` (seed
    ``000`` Eq. 13, third line; seed ``002`` NTM "Addressing" ``w~_t``).

    The shift vector is centred: with odd width ``S``, ``shift[k]`` is the
    probability of moving every weight by ``k - (S - 1) / 2`` slots, so index 0
    is a shift of ``-(S - 1) / 2`` and the middle index is "stay". A one-hot
    weighting at slot ``j`` with ``shift = [0, 0, 1]`` (``S = 3``) ends at slot
    ``j + 1 mod N``. For ``S <= ROLL_SHIFT_MAX`` (NTM's usual ``S = 3``) it is a
    sum of ``S`` static rolls, which fuses into one elementwise pass and whose
    gradient is rolls back; wider shifts use one gather of a static ``[N, S]``
    index table (a gather's gradient is a scatter-add: 8% of the NTM training
    step at B = 128 with S = 3, measured by ``python -m benchmarks.profile``).

    Args:
      weights: ``[..., N]`` ``w_g``.
      shift: ``[..., S]`` ``s``, each row a distribution (S odd).

    Returns:
      ``[..., N]``.
    """
    num_slots = weights.shape[-1]
    shift_width = shift.shape[-1]
    if shift_width % 2 != 1:
        raise ValueError(f"shift: expected an odd shift width S on the last axis, got S = {shift_width}")
    if shift_width <= ROLL_SHIFT_MAX:
        c = (shift_width - 1) // 2
        # jnp.roll(w, d)[i] = w[(i - d) mod N]: the weight a shift of d brings to slot i.
        return sum(shift[..., k, None] * jnp.roll(weights, k - c, axis=-1) for k in range(shift_width))
    idx = _shift_index(num_slots, shift_width)  # [N, S]
    gathered = weights[..., idx]  # [..., N, S]: gathered[..., i, k] = w[(i - k + c) mod N]
    return jnp.einsum("...ns,...s->...n", gathered, shift)


def sharpen(weights: jax.Array, gamma: jax.Array) -> jax.Array:
    """Sharpen a weighting: ``w[i] = w~[i]^gamma / sum_j w~[j]^gamma``.

    Implements seed ``000`` Eq. 13 (last line) and seed ``002`` NTM "Addressing"
    ``w_t``, with ``gamma >= 1``.

    Computed as ``softmax(gamma * log(w~ + SHARPEN_EPS))``, which equals
    ``(w~ + eps)^gamma / sum (w~ + eps)^gamma`` exactly but cannot underflow to
    0/0 for a large ``gamma``, and is finite (uniform) when every weight is 0.

    Args:
      weights: ``[..., N]`` ``w~`` (non-negative).
      gamma: ``[...]`` sharpening exponent ``gamma`` (>= 1; already activated).

    Returns:
      ``[..., N]`` a distribution over slots.
    """
    # max(., 0): float round-off in the shift can leave -1e-9; log needs >= 0.
    logits = gamma[..., None] * jnp.log(jnp.maximum(weights, 0.0) + SHARPEN_EPS)
    return jax.nn.softmax(logits, axis=-1)
