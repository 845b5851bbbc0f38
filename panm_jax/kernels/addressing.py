"""Addressing primitives shared by the memory kernels.

Content addressing (cosine similarity, softmax over slots) and the NTM's
location-addressing chain: interpolation, circular shift, sharpening
(Graves, Wayne & Danihelka 2014, "Neural Turing Machines", §3.3: content
addressing Eqs. 5-6, interpolation Eq. 7, convolutional shift Eq. 8, sharpening
Eq. 9; Reina Campo 2022, MPSoC-NTM documentation, "Turing Machine" chapter:
Neural Turing Machine "Addressing" and Differentiable Neural Computer
"Definitions").

Every function works on any number of heads: the leading axes ``[...]`` are
heads (or anything else), the last axis is the memory slots ``N`` (or the word
``W`` for keys). A memory ``[N, W]`` is one example's (``jax.vmap`` over a
batch of memories).
"""

from __future__ import annotations

import functools
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "ROLL_SHIFT_MAX",
    "SHARPEN_EPS",
    "circular_shift",
    "compute_dtype",
    "content_weights",
    "cosine_similarity",
    "interpolate",
    "normalize",
    "oneplus",
    "scaled_softmax",
    "sharpen",
]

# Added to weights before the power in `sharpen`: d(w^gamma)/d(gamma) = w^gamma log w
# is 0 * -inf = NaN at w = 0. 1e-12 is far below float32 resolution of weights
# that sum to one over any practical N. (It would round to 0 in float16, so 16-bit
# weights are sharpened in float32: `compute_dtype`.)
SHARPEN_EPS = 1e-12


def compute_dtype(dtype) -> jnp.dtype:
    """The dtype the addressing arithmetic runs in for arrays of ``dtype``.

    ``dtype`` itself for float32 and float64; float32 for the 16-bit floats
    (float16, bfloat16), whose range (float16) or resolution (both) is too small
    for a sum of squares or a sharpening exponent. Kernels keep their state in the
    caller's dtype and cast results back.
    """
    return jnp.promote_types(dtype, jnp.float32)


def widen(x: jax.Array, dtype) -> jax.Array:
    """``x.astype(dtype)`` for a 16-bit ``x`` stepped in a wider ``dtype`` (``compute_dtype``), whose gradient
    is rounded back to ``x``'s dtype saturating at its largest finite value: a cotangent beyond float16's range
    (65504; a sharp, strong content read of a near-zero memory reaches it) would otherwise become infinite in
    the 16-bit state's gradient. Any other ``x`` is cast plainly."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating) or jnp.dtype(x.dtype).itemsize >= jnp.dtype(dtype).itemsize:
        return x.astype(dtype)
    return _widen(x, jnp.dtype(dtype))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _widen(x: jax.Array, dtype) -> jax.Array:
    return x.astype(dtype)


def _widen_fwd(x, dtype):
    return x.astype(dtype), jnp.zeros((), x.dtype)  # the residual carries x's dtype


def _widen_bwd(dtype, narrow, g):
    largest = float(jnp.finfo(narrow.dtype).max)
    return (jnp.clip(g, -largest, largest).astype(narrow.dtype),)


_widen.defvjp(_widen_fwd, _widen_bwd)


def oneplus(x: jax.Array) -> jax.Array:
    """``oneplus(x) = 1 + log(1 + e^x)``, in ``[1, inf)``.

    Implements the "oneplus" of Reina Campo 2022 (Differentiable Neural Computer,
    "Definitions"; Graves et al. 2016) and the strength activation
    ``1 + log(1 + e^alpha)`` of Back et al. 2018 (MemoReader: Large-Scale Reading
    Comprehension through Neural Memory Controller, EMNLP), supplementary §1
    ("Memory addressing"); also the NTM's sharpening activation
    ``gamma = 1 + softplus(x)``, which gives Graves et al. 2014's ``gamma >= 1``
    (Eq. 9).
    Computed with the overflow-safe ``jax.nn.softplus``.
    """
    return 1.0 + jax.nn.softplus(x)


def normalize(x: jax.Array, axis: int = -1) -> tuple[jax.Array, jax.Array]:
    """Unit vectors and inverse norms along ``axis``, exact at every scale.

    Returns ``(x / |x|, 1 / |x|)`` (the inverse norm with ``axis`` removed), where
    ``|x|`` is the Euclidean norm. A plain ``sqrt(sum(x^2))`` underflows to 0 for
    vectors shorter than about ``1e-19`` in float32 (their squares are below the
    smallest float) and overflows above about ``1e19``; here each vector is first
    multiplied by the power of two ``2^-e`` that brings its largest magnitude into
    ``[1/2, 1)`` (``e`` from ``frexp``; a multiplication by a power of two is exact;
    within a factor 4 of that for the largest floats), so the sum of squares lies in
    ``[1/4, 16 n]`` and the result equals ``x / |x|`` to
    rounding for every non-zero vector whose entries are normal numbers of the
    dtype. The 16-bit floats are computed in float32 (``compute_dtype``) and
    returned in float32.

    An exactly zero vector has no direction: it gives the unit vector 0 and the
    inverse norm 1 (documented choice; value and gradient finite). The gradient
    of the unit vector is then the identity, so a zero key's gradient through a
    cosine is the other vector's unit vector: finite, and pointing the key
    towards it.

    The gradient is that of ``x / |x|`` and ``1 / |x|`` (the scale ``2^-e`` is
    piecewise constant in ``x``), written by hand from the two outputs ``u`` and
    ``v = 1 / |x|``: for cotangents ``g_u`` and ``g_v``,
    ``dx = v (g_u - u <u, g_u>) - g_v v^2 u``. At a zero vector (``u = 0``,
    ``v = 1``) that is ``g_u``: the identity above. The backward pass keeps only
    ``u`` and ``v`` (autodiff through the scaling would keep about eight arrays per
    call, each another ``[T, ...]`` stack inside a time scan).

    Args:
      x: ``[..., n, ...]`` any floating array.
      axis: the axis of the vectors.

    Returns:
      ``(unit, inverse_norm)``: ``unit`` has the shape of ``x``; ``inverse_norm``
      has ``axis`` removed.
    """
    x = x.astype(compute_dtype(x.dtype))
    return _normalize(x, axis)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _normalize(x: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
    return _normalize_fwd(x, axis)[0]


def _normalize_fwd(x: jax.Array, axis: int):
    peak = jnp.max(jnp.abs(x), axis=axis, keepdims=True)
    _, exponent = jnp.frexp(peak)  # peak = f 2^e with f in [1/2, 1); e = 0 for peak = 0
    # Keep 2^-e a normal number: e <= -minexp (float32: 126; the largest floats then scale
    # to at most 4) and e >= minexp + 1 (subnormal peaks, flushed to zero on most backends).
    info = jnp.finfo(x.dtype)
    exponent = jnp.clip(exponent, info.minexp + 1, -info.minexp)
    scale = jnp.ldexp(jnp.ones_like(peak), -exponent)  # 2^-e, exact
    scaled = x * scale  # largest magnitude in [1/2, 1), or all zero
    squares = jnp.sum(scaled * scaled, axis=axis, keepdims=True)  # in [1/4, n], or 0
    norm = jnp.sqrt(jnp.where(squares > 0, squares, 1.0))  # |x| 2^-e; 1 for a zero vector
    unit, inverse = scaled / norm, scale / norm  # inverse keeps its axis here
    return (unit, jnp.squeeze(inverse, axis=axis)), (unit, inverse)


def _normalize_bwd(axis: int, residuals, cotangents):
    unit, inverse = residuals  # inverse [..., 1, ...]: broadcasts along axis
    g_unit, g_inverse = cotangents
    along = jnp.sum(unit * g_unit, axis=axis, keepdims=True)  # <u, g_u>
    g_inverse = jnp.expand_dims(g_inverse, axis)
    return (inverse * (g_unit - unit * along) - g_inverse * inverse * inverse * unit,)


_normalize.defvjp(_normalize_fwd, _normalize_bwd)


def cosine_similarity(keys: jax.Array, memory: jax.Array) -> jax.Array:
    """Cosine similarity of each key with each memory row.

    Implements ``D(u, v) = u . v / (|u| |v|)`` of Graves et al. 2016 (Methods,
    "Definitions") and the NTM's ``K[u, v]`` (Graves et al. 2014, Eq. 6).

    Computed as the dot product of the unit vectors from ``normalize``, so it
    equals ``u . v / (|u| |v|)`` to rounding for non-zero vectors of any scale
    the dtype represents (``1e-30`` and ``1e30`` in float32 alike: it is
    scale-invariant, as the equation is). An exactly zero key or memory row
    has similarity 0 with every vector, with a finite gradient (``normalize``).
    16-bit inputs are computed in float32 and the result is cast back.

    Args:
      keys: ``[..., W]`` one key per head (any leading axes).
      memory: ``[N, W]``.

    Returns:
      ``[..., N]`` similarities in ``[-1, 1]`` (to rounding).
    """
    unit_keys, _ = normalize(keys)
    unit_rows, _ = normalize(memory)
    out = jnp.result_type(keys.dtype, memory.dtype)
    return jnp.einsum("...w,nw->...n", unit_keys, unit_rows).astype(out)


def scaled_softmax(scores: jax.Array, scale: jax.Array) -> jax.Array:
    """``softmax(scale * scores)`` over the last axis, for a non-negative ``scale``.

    Computed as ``exp(scale (s - max s)) / sum exp(scale (s - max s))``: the largest
    score's logit is exactly ``scale * 0 = 0`` whatever the scale, so at least one
    term of the sum is 1. The usual ``exp(scale s - max(scale s))`` is not safe for a
    large scale: a compiler may contract the product and the subtraction into one
    fused multiply-add, which subtracts the *rounded* maximum from the *exact*
    product, leaving the largest logit at minus the product's rounding error
    (about ``-170`` for ``1e10 * 0.9999999`` in float32); every term then underflows
    and the softmax is 0/0. Here no product precedes a subtraction.

    The maximum is a constant for differentiation (the softmax does not depend
    on it), so the gradient is exactly that of ``softmax(scale * scores)``.

    Args:
      scores: ``[..., N]``.
      scale: ``[...]`` (or a scalar), ``>= 0``: the strength ``beta`` or the
        sharpening exponent ``gamma``.

    Returns:
      ``[..., N]``, each row a distribution.
    """
    # Under jax.checkpoint the backward pass keeps the scores and the scale and
    # recomputes the softmax from them, instead of the half-dozen intermediate
    # arrays autodiff keeps (each another [T, ...] stack inside a time scan).
    return jax.checkpoint(_scaled_softmax)(scores, jnp.asarray(scale))


def _scaled_softmax(scores: jax.Array, scale: jax.Array) -> jax.Array:
    top = jax.lax.stop_gradient(jnp.max(scores, axis=-1, keepdims=True))
    logits = scale[..., None] * (scores - top)  # <= 0; 0 at the maximum
    return jax.nn.softmax(logits, axis=-1)


def content_weights(memory: jax.Array, keys: jax.Array, strengths: jax.Array) -> jax.Array:
    """Content-based address weights: a softmax over slots of strength x cosine.

    Implements ``w_c[i] = exp(beta D(k, M[i])) / sum_j exp(beta D(k, M[j]))``: Graves
    et al. 2014, Eqs. 5-6, Reina Campo 2022 NTM "Addressing" ``w^c_t`` and DNC
    ``C(M, k, beta)``, Back et al. 2018 "Memory addressing".

    Args:
      memory: ``[N, W]`` (``M``).
      keys: ``[..., W]`` (``k``), one per head.
      strengths: ``[...]`` (``beta`` >= 0; already activated).

    Returns:
      ``[..., N]`` weights, each row a probability distribution over slots.
    """
    work = compute_dtype(memory.dtype)
    similarity = cosine_similarity(keys, memory).astype(work)
    return scaled_softmax(similarity, jnp.asarray(strengths).astype(work)).astype(memory.dtype)


def interpolate(content: jax.Array, previous: jax.Array, gate: jax.Array) -> jax.Array:
    """Interpolation with the previous weighting.

    Implements ``w_g = g w_c + (1 - g) w_prev`` (Graves et al. 2014, Eq. 7; Reina
    Campo 2022 NTM "Addressing" ``w^g_t``).

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

    Implements ``w~[i] = sum_j w_g[j] s[i - j]`` with indices mod ``N`` (Graves
    et al. 2014, Eq. 8; Reina Campo 2022 NTM "Addressing" ``w~_t``).

    The shift vector is centred: with odd width ``S``, ``shift[k]`` is the
    probability of moving every weight by ``k - (S - 1) / 2`` slots, so index 0
    is a shift of ``-(S - 1) / 2`` and the middle index is "stay". A one-hot
    weighting at slot ``j`` with ``shift = [0, 0, 1]`` (``S = 3``) ends at slot
    ``j + 1 mod N``. For ``S <= ROLL_SHIFT_MAX`` (NTM's usual ``S = 3``) it is a
    sum of ``S`` static rolls, which fuses into one elementwise pass and whose
    gradient is rolls back; wider shifts use one gather of a static ``[N, S]``
    index table (whose gradient is a slower scatter-add).

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
        # sum() starts at the int 0; with S >= 1 terms the result is an array.
        return cast(jax.Array, sum(shift[..., k, None] * jnp.roll(weights, k - c, axis=-1) for k in range(shift_width)))
    idx = _shift_index(num_slots, shift_width)  # [N, S]
    gathered = weights[..., idx]  # [..., N, S]: gathered[..., i, k] = w[(i - k + c) mod N]
    return jnp.einsum("...ns,...s->...n", gathered, shift)


def sharpen(weights: jax.Array, gamma: jax.Array) -> jax.Array:
    """Sharpen a weighting: ``w[i] = w~[i]^gamma / sum_j w~[j]^gamma``.

    Implements Graves et al. 2014, Eq. 9 and Reina Campo 2022 NTM "Addressing"
    ``w_t``, with ``gamma >= 1``.

    Computed as ``softmax(gamma * log(w~ + SHARPEN_EPS))`` (by ``scaled_softmax``,
    safe for any ``gamma``), which equals
    ``(w~ + eps)^gamma / sum (w~ + eps)^gamma`` exactly but cannot underflow to
    0/0 for a large ``gamma``, and is finite (uniform) when every weight is 0.
    16-bit weights are sharpened in float32 (``compute_dtype``) and cast back.

    Args:
      weights: ``[..., N]`` ``w~`` (non-negative).
      gamma: ``[...]`` sharpening exponent ``gamma`` (>= 1; already activated).

    Returns:
      ``[..., N]`` a distribution over slots.
    """
    work = compute_dtype(weights.dtype)
    # max(., 0): float round-off in the shift can leave -1e-9; log needs >= 0.
    logs = jnp.log(jnp.maximum(weights.astype(work), 0.0) + SHARPEN_EPS)
    return scaled_softmax(logs, jnp.asarray(gamma).astype(work)).astype(weights.dtype)
