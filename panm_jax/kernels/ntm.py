"""Neural Turing Machine memory: addressing chain, read, erase-then-add write.

Implements seed ``000_260939df825cb3ee.txt`` Eq. 11-13 (interface split,
activations, content -> interpolation -> shift -> sharpen) and seed
``002_44e42d2b9681fe3e.txt`` (Neural Turing Machine: Reading, Writing,
Addressing), for any number of read heads ``R`` and write heads ``H``.

One example at a time; modules add the batch axis with ``jax.vmap``.

Order within a step (our choice where the seeds leave it open; documented in
``step``): the write heads address over ``M_{t-1}`` and write, giving ``M_t``;
the read heads then address over ``M_t`` and read it, as seed 002 writes
``r_t = sum_i w_t(i) M_t(i)`` and seed 000 Eq. 13 addresses ``M_t``. A vector
written at step ``t`` can therefore be read at step ``t``.

Notation: ``N`` slots, ``W`` word size, ``R`` read heads, ``H`` write heads,
``S`` shift width (odd).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax.kernels import addressing
from panm_jax.kernels.scan import select
from panm_jax.kernels.validation import check_odd_int, check_positive_int, check_shape

__all__ = [
    "HeadControls",
    "NTMControls",
    "NTMState",
    "address",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "read",
    "step",
    "write",
]

# The initial memory value. A small constant rather than zeros or noise: every
# row starts equal (so no slot is favoured by content addressing) and non-zero.
# Collier & Beel (2018, "Implementing Neural Turing Machines") found a small
# constant initialisation trained most reliably; zeros are also safe here
# (cosine_similarity is guarded), so this is a default, not a requirement.
MEMORY_INIT = 1e-6


class NTMState(NamedTuple):
    """NTM memory state of one example (arrays only)."""

    memory: jax.Array  # [N, W] M_t
    read_weights: jax.Array  # [R, N] w_t of each read head
    write_weights: jax.Array  # [H, N] w_t of each write head
    reads: jax.Array  # [R, W] r_t, the last read vectors


class HeadControls(NamedTuple):
    """Activated addressing controls of a group of heads (seed 000 Eq. 11-12)."""

    key: jax.Array  # [K, W] k (identity activation)
    strength: jax.Array  # [K]    beta >= 0 (softplus)
    gate: jax.Array  # [K]    g in [0, 1] (sigmoid)
    shift: jax.Array  # [K, S] s, a distribution over shifts -(S-1)/2 .. (S-1)/2 (softmax)
    sharpen: jax.Array  # [K]    gamma >= 1 (1 + softplus)


class NTMControls(NamedTuple):
    """Activated controls of one NTM step."""

    read: HeadControls  # K = R read heads
    write: HeadControls  # K = H write heads
    erase: jax.Array  # [H, W] e in [0, 1] (sigmoid)
    add: jax.Array  # [H, W] a (identity activation)


def init_state(
    num_slots: int,
    word_size: int,
    num_reads: int = 1,
    num_writes: int = 1,
    *,
    memory_init: float = MEMORY_INIT,
    dtype=jnp.float32,
) -> NTMState:
    """The state before the first step.

    Memory is filled with ``memory_init`` (see ``MEMORY_INIT``); every head's
    weighting is one-hot at slot 0 (a head starts at the first cell, like a
    Turing machine's, so purely location-based programs have a defined start);
    the last reads are zero.

    Args:
      num_slots: ``N``.
      word_size: ``W``.
      num_reads: ``R``.
      num_writes: ``H``.

    Returns:
      ``NTMState`` with memory ``[N, W]``, read weights ``[R, N]``, write weights
      ``[H, N]`` and reads ``[R, W]``.
    """
    n = check_positive_int("num_slots", num_slots)
    w = check_positive_int("word_size", word_size)
    r = check_positive_int("num_reads", num_reads)
    h = check_positive_int("num_writes", num_writes)
    first = jnp.zeros((n,), dtype).at[0].set(1.0)
    return NTMState(
        memory=jnp.full((n, w), memory_init, dtype),
        read_weights=jnp.tile(first, (r, 1)),
        write_weights=jnp.tile(first, (h, 1)),
        reads=jnp.zeros((r, w), dtype),
    )


def address(memory: jax.Array, previous: jax.Array, head: HeadControls) -> jax.Array:
    """The NTM addressing chain: content -> interpolation -> shift -> sharpen.

    Implements seed ``000_260939df825cb3ee.txt`` Eq. 13 (and seed ``002``, NTM
    "Addressing")::

        w_c[i] = softmax_i(beta * cos(k, M[i]))
        w_g    = g w_c + (1 - g) w_prev
        w~[i]  = sum_j w_g[j] s[i - j]          (indices mod N, s centred)
        w[i]   = w~[i]^gamma / sum_j w~[j]^gamma

    Args:
      memory: ``[N, W]`` the memory being addressed (``M_t``).
      previous: ``[K, N]`` the heads' previous weights ``w_{t-1}``.
      head: ``HeadControls`` of ``K`` heads.

    Returns:
      ``[K, N]`` the new weights, each row a distribution over slots.
    """
    content = addressing.content_weights(memory, head.key, head.strength)
    gated = addressing.interpolate(content, previous, head.gate)
    shifted = addressing.circular_shift(gated, head.shift)
    return addressing.sharpen(shifted, head.sharpen)


def read(memory: jax.Array, weights: jax.Array) -> jax.Array:
    """Read each head's weighted sum of memory rows.

    Implements ``r_t = sum_i w_t(i) M_t(i)`` (seed ``002``, NTM "Reading").

    Args:
      memory: ``[N, W]``.
      weights: ``[R, N]``.

    Returns:
      ``[R, W]``.
    """
    return weights @ memory


def write(memory: jax.Array, weights: jax.Array, erase: jax.Array, add: jax.Array) -> jax.Array:
    """Erase, then add, with any number of write heads.

    Implements seed ``002`` NTM "Writing"::

        M~_t(i) = M_{t-1}(i) [1 - w_t(i) e_t]
        M_t(i)  = M~_t(i) + w_t(i) a_t

    With ``H`` write heads the erasures multiply and the additions sum (Graves
    et al. 2014, §3.2: multiplication is commutative, so the heads' order does
    not matter)::

        M_t(i) = M_{t-1}(i) prod_h [1 - w^h(i) e^h] + sum_h w^h(i) a^h

    Args:
      memory: ``[N, W]`` ``M_{t-1}``.
      weights: ``[H, N]`` write weights.
      erase: ``[H, W]`` erase vectors in ``[0, 1]``.
      add: ``[H, W]`` add vectors.

    Returns:
      ``[N, W]`` ``M_t``.
    """
    # H is static and small: an unrolled product of outer products keeps the whole
    # update one elementwise fusion, forward and backward. (jnp.prod over the head
    # axis and an einsum contracting over H = 1 compiled to two reductions that took
    # 30% of the NTM training step at B = 128; `python -m benchmarks.profile`.)
    keep = 1.0 - weights[0][:, None] * erase[0][None, :]  # [N, W]
    added = weights[0][:, None] * add[0][None, :]
    for h in range(1, weights.shape[0]):
        keep = keep * (1.0 - weights[h][:, None] * erase[h][None, :])
        added = added + weights[h][:, None] * add[h][None, :]
    return memory * keep + added


def _check_head(prefix: str, head: HeadControls, heads: int, word: int, what: str) -> int:
    check_shape(f"{prefix}.key", head.key, (heads, word), f"{what}, W")
    check_shape(f"{prefix}.strength", head.strength, (heads,), what)
    check_shape(f"{prefix}.gate", head.gate, (heads,), what)
    check_shape(f"{prefix}.shift", head.shift, (heads, None), f"{what}, S")
    check_shape(f"{prefix}.sharpen", head.sharpen, (heads,), what)
    shift_width = int(jnp.shape(head.shift)[-1])
    if shift_width % 2 != 1:
        raise ValueError(f"{prefix}.shift: expected an odd shift width S on the last axis, got S = {shift_width}")
    return shift_width


def _check_state(state: NTMState) -> tuple[int, int, int, int]:
    if jnp.ndim(state.memory) != 2:
        raise ValueError(f"state.memory: expected shape [N, W], got {tuple(jnp.shape(state.memory))}")
    n, w = jnp.shape(state.memory)
    check_shape("state.read_weights", state.read_weights, (None, n), "R, N")
    r = jnp.shape(state.read_weights)[0]
    check_shape("state.write_weights", state.write_weights, (None, n), "H, N")
    h = jnp.shape(state.write_weights)[0]
    check_shape("state.reads", state.reads, (r, w), "R, W")
    return n, w, r, h


def step(state: NTMState, controls: NTMControls, mask: jax.Array | None = None) -> tuple[NTMState, jax.Array]:
    """One NTM memory step: write heads address and write, then read heads read.

    Order: (1) the write heads address ``M_{t-1}`` (Eq. 13) from their previous
    weights; (2) erase-then-add gives ``M_t``; (3) the read heads address ``M_t``
    from their previous weights; (4) they read ``M_t``.

    Shapes are checked at trace time (free under ``jit``).

    Args:
      state: ``NTMState`` (memory ``[N, W]``, read weights ``[R, N]``, write
        weights ``[H, N]``, reads ``[R, W]``).
      controls: ``NTMControls`` for ``R`` read and ``H`` write heads.
      mask: optional scalar; where 0 (a padding step) the state is returned
        unchanged and the read is zeros.

    Returns:
      ``(new_state, reads [R, W])``.
    """
    n, w, r, h = _check_state(state)
    _check_head("controls.read", controls.read, r, w, "R")
    _check_head("controls.write", controls.write, h, w, "H")
    check_shape("controls.erase", controls.erase, (h, w), "H, W")
    check_shape("controls.add", controls.add, (h, w), "H, W")
    if mask is not None:
        check_shape("mask", mask, (), "")

    write_weights = address(state.memory, state.write_weights, controls.write)
    memory = write(state.memory, write_weights, controls.erase, controls.add)
    read_weights = address(memory, state.read_weights, controls.read)
    reads = read(memory, read_weights)
    new_state = NTMState(memory, read_weights, write_weights, reads)
    if mask is None:
        return new_state, reads
    return select(mask, new_state, state), jnp.where(jnp.asarray(mask).astype(bool), reads, 0.0)


def interface_size(word_size: int, num_reads: int = 1, num_writes: int = 1, shift_width: int = 3) -> int:
    """The length of the raw interface vector that ``controls_from_interface`` splits.

    Per seed 000 Eq. 11: a read head takes ``[k (W), beta, g, s (S), gamma]``,
    ``W + S + 3`` values; a write head also ``e (W)`` and ``a (W)``,
    ``3W + S + 3`` values. Total ``R (W + S + 3) + H (3W + S + 3)``.
    """
    w = check_positive_int("word_size", word_size)
    r = check_positive_int("num_reads", num_reads)
    h = check_positive_int("num_writes", num_writes)
    s = check_odd_int("shift_width", shift_width)
    return r * (w + s + 3) + h * (3 * w + s + 3)


def _split_heads(block: jax.Array, word: int, shift_width: int) -> HeadControls:
    # block: [..., K, W + S + 3] laid out as [k (W), beta, g, s (S), gamma].
    key = block[..., :word]
    beta = block[..., word]
    gate = block[..., word + 1]
    shift = block[..., word + 2 : word + 2 + shift_width]
    gamma = block[..., word + 2 + shift_width]
    return HeadControls(
        key=key,
        strength=jax.nn.softplus(beta),  # Eq. 12: beta := softplus(beta)
        gate=jax.nn.sigmoid(gate),  # Eq. 12: g := sigmoid(g)
        shift=jax.nn.softmax(shift, axis=-1),  # Eq. 12: s := softmax(s)
        sharpen=addressing.oneplus(gamma),  # Eq. 12: gamma := 1 + softplus(gamma)
    )


def controls_from_interface(
    raw: jax.Array, word_size: int, num_reads: int = 1, num_writes: int = 1, shift_width: int = 3
) -> NTMControls:
    """Split a raw controller output into activated ``NTMControls``.

    Implements seed ``000_260939df825cb3ee.txt`` Eq. 11 (the split) and Eq. 12
    (the activations): ``beta = softplus``, ``g = sigmoid``, ``s = softmax``,
    ``gamma = 1 + softplus``, erase ``e = sigmoid``; keys and add vectors are
    used as they are (the seed gives them no activation).

    Layout of ``raw`` (last axis, ``interface_size(W, R, H, S)`` values): the
    ``R`` read heads first, each ``[k (W), beta, g, s (S), gamma]``; then the
    ``H`` write heads, each ``[k (W), beta, g, s (S), gamma, e (W), a (W)]``.

    Any JAX network's output can drive the kernel this way, without Flax.

    Args:
      raw: ``[..., P]`` (leading axes, e.g. a batch, are kept).
      word_size: ``W``. num_reads: ``R``. num_writes: ``H``. shift_width: ``S``.

    Returns:
      ``NTMControls`` whose fields carry the leading axes of ``raw``.
    """
    size = interface_size(word_size, num_reads, num_writes, shift_width)
    if jnp.ndim(raw) < 1 or jnp.shape(raw)[-1] != size:
        raise ValueError(
            f"raw: expected shape [..., P] with P = interface_size(W={word_size}, R={num_reads}, "
            f"H={num_writes}, S={shift_width}) = {size}, got {tuple(jnp.shape(raw))}"
        )
    lead = jnp.shape(raw)[:-1]
    w, s = word_size, shift_width
    read_len = w + s + 3
    write_len = 3 * w + s + 3
    read_block = raw[..., : num_reads * read_len].reshape(*lead, num_reads, read_len)
    write_block = raw[..., num_reads * read_len :].reshape(*lead, num_writes, write_len)
    address_len = w + s + 3
    return NTMControls(
        read=_split_heads(read_block, w, s),
        write=_split_heads(write_block[..., :address_len], w, s),
        erase=jax.nn.sigmoid(write_block[..., address_len : address_len + w]),
        add=write_block[..., address_len + w :],
    )
