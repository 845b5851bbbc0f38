"""Neural Turing Machine memory: addressing chain, read, erase-then-add write.

Implements the Neural Turing Machine of Graves, Wayne & Danihelka 2014, "Neural
Turing Machines" (arXiv:1410.5401), §3: reading (Eq. 2), writing by erase and add
(Eqs. 3-4), and addressing (§3.3): content addressing with the cosine similarity
(Eqs. 5-6), interpolation (Eq. 7), convolutional shift (Eq. 8) and sharpening
(Eq. 9), for any number of read heads ``R`` and write heads ``H``; as restated in
Reina Campo 2022 (MPSoC-NTM documentation, "Turing Machine" chapter: Neural
Turing Machine, Reading, Writing, Addressing).

Order within a step (our choice where the sources leave it open; documented in
``step``): the write heads address over ``M_{t-1}`` and write, giving ``M_t``;
the read heads then address over ``M_t`` and read it, as Reina Campo 2022 writes
``r_t = sum_i w_t(i) M_t(i)`` and ``w^c_t(i)`` over ``M_t``. A vector written at
step ``t`` can therefore be read at step ``t``.

Notation: ``N`` slots, ``W`` word size, ``R`` read heads, ``H`` write heads,
``S`` shift width (odd).

Finite range: the step's values stay finite for raw interface values of any
finite magnitude (float32, up to ``3e38``; ``tests/kernels/test_cosine_scale.py``):
the cosine is exact at every scale (``addressing.normalize``) and the softmaxes of
``beta D`` and ``gamma log w`` cannot lose their largest term
(``addressing.scaled_softmax``). ``controls_from_interface`` bounds every raw value
to ``+-validation.raw_limit`` (``1e4``, ``128`` in float16) before its activations,
so that gradients
are finite too, in float32, bfloat16 and float16, at that bound and beyond it
(``tests/kernels/test_extreme_controls.py``); without the bound, float32 gradients
overflowed from ``|raw| ~ 1e18`` (a sharpening exponent ``gamma ~ |raw|`` times
memory-sized cotangents). Long before the bound, float32 gradients through a
strength of ``1e4`` carry that factor times a cosine's rounding: keep the
pre-activations moderate (Collier & Beel clip them to ``[-20, 20]``) or use float64.

Layout: the memory is stored word-major, ``[W, N]``, the transpose of the
sources' ``N x W`` matrix ``M_t`` (row ``i`` of ``M_t`` is column ``i`` here). Every
per-slot quantity (row norms, weightings, the erase and add outer products) then
runs along the contiguous last axis, and every sum over the word (a row norm, a
key's dot product, ``dw``'s contractions) adds ``W`` whole vectors of ``N``
slots instead of reducing ``N`` short rows of ``W``. Functions that take a
memory all take it in this layout.

Gradients: ``step`` runs ``memory_step``, the addressing, write and read of one
step with a hand-written VJP; its derivation (the chain rule through Eqs. 2-9
of Graves et al. 2014) is in ``panm_jax/kernels/_ntm_vjp.py``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from panm_jax import checks
from panm_jax.kernels import _batch, addressing
from panm_jax.kernels._ntm_heads import HeadControls
from panm_jax.kernels._ntm_vjp import erase_factors, memory_step, outer_sum, product
from panm_jax.kernels.scan import select
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
    "HeadControls",
    "NTMControls",
    "NTMState",
    "address",
    "controls_from_interface",
    "init_state",
    "interface_size",
    "memory_step",
    "read",
    "similarity",
    "step",
    "write",
]

# The initial memory value: a small constant, as Collier & Beel (2018, "Implementing
# Neural Turing Machines", ICANN) found to train most reliably. Every slot starts
# equal, so no slot is favoured by content addressing. The cosine is exact at every
# scale (addressing.normalize), so an unwritten slot is not "empty" to content
# addressing: it has the direction of the all-ones vector, and a key k scores
# sum(k) / (sqrt(W) |k|) against it, as in Collier & Beel's implementation (its
# cosine, u.v / (|u| |v| + 1e-8), is 0.2 % short of exact at this scale for a unit
# key and W = 20). `memory_init=0.0` gives slots that score
# 0 against every key instead (the cosine of a zero vector, addressing.normalize).
MEMORY_INIT = 1e-6


class NTMState(NamedTuple):
    """NTM memory state of one example (arrays only)."""

    memory: jax.Array  # [W, N] M_t^T: column i is slot i's word (see "Layout" above)
    read_weights: jax.Array  # [R, N] w_t of each read head
    write_weights: jax.Array  # [H, N] w_t of each write head
    reads: jax.Array  # [R, W] r_t, the last read vectors


class NTMControls(NamedTuple):
    """Activated controls of one NTM step."""

    read: HeadControls  # K = R read heads
    write: HeadControls  # K = H write heads
    erase: jax.Array  # [H, W] e in [0, 1] (sigmoid: the library's choice, see controls_from_interface)
    add: jax.Array  # [H, W] a (identity activation)


def init_state(
    num_slots: int,
    word_size: int,
    num_reads: int = 1,
    num_writes: int = 1,
    *,
    memory_init: float = MEMORY_INIT,
    dtype=jnp.float32,
    batch_shape: tuple[int, ...] = (),
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
      memory_init: the value of every memory entry, a finite number.
      dtype: a real floating dtype for every field.
      batch_shape: leading (batch) axes in front of every field (``()``: one example).

    Returns:
      ``NTMState`` with memory ``[..., W, N]``, read weights ``[..., R, N]``, write
      weights ``[..., H, N]`` and reads ``[..., R, W]`` (``...`` = ``batch_shape``).

    Raises:
      ValueError: naming the argument, for a size that is not a positive
        integer, a non-finite ``memory_init``, a dtype that is not real floating,
        or sizes too large to index or allocate (``validation.check_state_sizes``),
        before anything is allocated.
    """
    n = checks.positive_int("num_slots", num_slots)
    w = checks.positive_int("word_size", word_size)
    r = checks.positive_int("num_reads", num_reads)
    h = checks.positive_int("num_writes", num_writes)
    memory_init = checks.finite_number("memory_init", memory_init)
    dtype = check_float_dtype("dtype", dtype)
    batch_shape = _batch.check_batch_shape(batch_shape)
    check_state_sizes(
        {
            "state.memory": ((w, n), ("word_size", "num_slots")),
            "state.read_weights": ((r, n), ("num_reads", "num_slots")),
            "state.write_weights": ((h, n), ("num_writes", "num_slots")),
            "state.reads": ((r, w), ("num_reads", "word_size")),
        },
        batch_shape,
        dtype,
    )
    first = jnp.zeros((n,), dtype).at[0].set(1.0)
    state = NTMState(
        memory=jnp.full((w, n), memory_init, dtype),
        read_weights=jnp.tile(first, (r, 1)),
        write_weights=jnp.tile(first, (h, 1)),
        reads=jnp.zeros((r, w), dtype),
    )
    return _batch.broadcast_state(state, batch_shape)


def address(memory: jax.Array, previous: jax.Array, head: HeadControls) -> jax.Array:
    """The NTM addressing chain: content -> interpolation -> shift -> sharpen.

    Implements Graves et al. 2014 ("Neural Turing Machines", §3.3, Eqs. 5-9) and
    Reina Campo 2022 (Neural Turing Machine, "Addressing")::

        w_c[i] = softmax_i(beta * cos(k, M[i]))             (Eqs. 5-6)
        w_g    = g w_c + (1 - g) w_prev                     (Eq. 7)
        w~[i]  = sum_j w_g[j] s[i - j]                      (Eq. 8; indices mod N, s centred)
        w[i]   = w~[i]^gamma / sum_j w~[j]^gamma            (Eq. 9)

    Args:
      memory: ``[W, N]`` the memory being addressed (``M_t^T``).
      previous: ``[K, N]`` the heads' previous weights ``w_{t-1}``.
      head: ``HeadControls`` of ``K`` heads.

    Returns:
      ``[K, N]`` the new weights, each row a distribution over slots.
    """
    content = addressing.scaled_softmax(similarity(head.key, memory), head.strength)
    gated = addressing.interpolate(content, previous, head.gate)
    shifted = addressing.circular_shift(gated, head.shift)
    return addressing.sharpen(shifted, head.sharpen)


def similarity(keys: jax.Array, memory: jax.Array) -> jax.Array:
    """Cosine similarity of each key with each slot: ``K[k, M_t(i)]`` (Graves et al. 2014, Eq. 6).

    ``addressing.cosine_similarity`` for the ``[W, N]`` layout: the dot products of
    the unit vectors from ``addressing.normalize``, so it equals
    ``k . M(i) / (|k| |M(i)|)`` to rounding at every scale, and is 0 (with a
    finite gradient) for an exactly zero key or slot.

    Args:
      keys: ``[K, W]``.
      memory: ``[W, N]``.

    Returns:
      ``[K, N]``.
    """
    unit_keys, _ = addressing.normalize(keys)  # [K, W]
    unit_slots, _ = addressing.normalize(memory, axis=0)  # [W, N]
    return (unit_keys @ unit_slots).astype(jnp.result_type(keys.dtype, memory.dtype))


def read(memory: jax.Array, weights: jax.Array) -> jax.Array:
    """Read each head's weighted sum of memory rows.

    Implements ``r_t = sum_i w_t(i) M_t(i)`` (Graves et al. 2014, §3.1, Eq. 2; Reina
    Campo 2022, Neural Turing Machine, "Reading").

    Args:
      memory: ``[W, N]``.
      weights: ``[R, N]``.

    Returns:
      ``[R, W]``.
    """
    return weights @ memory.T


def write(memory: jax.Array, weights: jax.Array, erase: jax.Array, add: jax.Array) -> jax.Array:
    """Erase, then add, with any number of write heads.

    Implements Graves et al. 2014, §3.2, Eqs. 3-4 (and Reina Campo 2022, Neural
    Turing Machine, "Writing")::

        M~_t(i) = M_{t-1}(i) [1 - w_t(i) e_t]           (Eq. 3)
        M_t(i)  = M~_t(i) + w_t(i) a_t                  (Eq. 4)

    With ``H`` write heads the erasures multiply and the additions sum (Graves
    et al. 2014, §3.2: multiplication is commutative, so the heads' order does
    not matter)::

        M_t(i) = M_{t-1}(i) prod_h [1 - w^h(i) e^h] + sum_h w^h(i) a^h

    Args:
      memory: ``[W, N]`` ``M_{t-1}^T``.
      weights: ``[H, N]`` write weights.
      erase: ``[H, W]`` erase vectors in ``[0, 1]``.
      add: ``[H, W]`` add vectors.

    Returns:
      ``[W, N]`` ``M_t^T``.
    """
    # H is static and small: an unrolled product of outer products keeps the whole
    # update one elementwise fusion, forward and backward (jnp.prod over the head axis
    # and an einsum contracting over H = 1 would compile to two reductions).
    return memory * product(erase_factors(weights, erase)) + outer_sum(weights, add)


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
        raise ValueError(f"state.memory: expected shape [W, N], got {tuple(jnp.shape(state.memory))}")
    w, n = jnp.shape(state.memory)
    check_shape("state.read_weights", state.read_weights, (None, n), "R, N")
    r = jnp.shape(state.read_weights)[0]
    check_shape("state.write_weights", state.write_weights, (None, n), "H, N")
    h = jnp.shape(state.write_weights)[0]
    check_shape("state.reads", state.reads, (r, w), "R, W")
    return n, w, r, h


def _check_values(state: NTMState, controls: NTMControls) -> None:
    check_floating_fields("state", state)
    check_floating_fields("controls", controls)
    check_in_range("state.read_weights", state.read_weights, 0.0, 1.0)
    check_in_range("state.write_weights", state.write_weights, 0.0, 1.0)
    for prefix, head in (("controls.read", controls.read), ("controls.write", controls.write)):
        check_in_range(f"{prefix}.strength", head.strength, 0.0, None)
        check_in_range(f"{prefix}.gate", head.gate, 0.0, 1.0)
        check_in_range(f"{prefix}.shift", head.shift, 0.0, 1.0)
        check_in_range(f"{prefix}.sharpen", head.sharpen, 1.0, None)
    check_in_range("controls.erase", controls.erase, 0.0, 1.0)


def step(state: NTMState, controls: NTMControls, mask: jax.Array | None = None) -> tuple[NTMState, jax.Array]:
    """One NTM memory step: write heads address and write, then read heads read.

    Leading axes: the state, controls and mask may carry the same leading (batch)
    axes ``[...]`` in front of the shapes below; the step is then mapped over them
    (``jax.vmap``, at trace time).

    Order: (1) the write heads address ``M_{t-1}`` (Eqs. 5-9) from their previous
    weights; (2) erase-then-add gives ``M_t``; (3) the read heads address ``M_t``
    from their previous weights; (4) they read ``M_t``.

    Shapes and dtypes (real floating) are checked at trace time (free under
    ``jit``); in an eager call, where values are concrete, also the ranges: head
    weights, gates, shift weights and erase in ``[0, 1]``, strengths ``>= 0``,
    sharpening ``>= 1`` (``validation.check_in_range``).

    Args:
      state: ``NTMState`` (memory ``[W, N]``, read weights ``[R, N]``, write
        weights ``[H, N]``, reads ``[R, W]``).
      controls: ``NTMControls`` for ``R`` read and ``H`` write heads.
      mask: optional scalar; where 0 (a padding step) the state is returned
        unchanged and the read is zeros.

    Dtypes: the state keeps its dtype. float32 and float64 states are stepped
    in their dtype; float16 and bfloat16 states are stepped in float32 and the
    new state is rounded back (``addressing.compute_dtype``).

    Returns:
      ``(new_state, reads [R, W])`` (``[..., R, W]`` with leading axes).
    """
    lead = _batch.batch_shape_of(state.memory, 2)
    return _batch.batched_step(_step_one, lead, state, controls, mask)


def _step_one(state: NTMState, controls: NTMControls, mask: jax.Array | None) -> tuple[NTMState, jax.Array]:
    # step for one example.
    n, w, r, h = _check_state(state)
    _check_head("controls.read", controls.read, r, w, "R")
    _check_head("controls.write", controls.write, h, w, "H")
    check_shape("controls.erase", controls.erase, (h, w), "H, W")
    check_shape("controls.add", controls.add, (h, w), "H, W")
    if mask is not None:
        check_shape("mask", mask, (), "")
    _check_values(state, controls)

    # 16-bit states are stepped in float32 (addressing.compute_dtype) and stored back:
    # float16's sums of squares, sharpening logits and reciprocals leave its range.
    dtype = state.memory.dtype
    work = addressing.compute_dtype(dtype)
    up = functools.partial(jax.tree.map, lambda x: addressing.widen(x, work))  # 16-bit: saturating gradient
    keep = jnp.ones((), work) if mask is None else jnp.asarray(mask).astype(work)
    # (1)-(4) in memory_step: the same equations as address, write and read, with the
    # hand-written VJP of _ntm_vjp.py.
    memory, write_weights, read_weights, reads = jax.tree.map(
        lambda x: x.astype(dtype),
        memory_step(
            *up(
                (
                    state.memory,
                    state.write_weights,
                    state.read_weights,
                    controls.write,
                    controls.read,
                    controls.erase,
                    controls.add,
                )
            ),
            keep,
        ),
    )
    if mask is None:
        return NTMState(memory, read_weights, write_weights, reads), reads
    # A masked step wrote with zero weights (memory_step), so the memory is already
    # unchanged; only the small fields need a select.
    real = jnp.asarray(mask).astype(bool)
    *small, reads = select(
        real,
        (read_weights, write_weights, reads, reads),
        (state.read_weights, state.write_weights, state.reads, jnp.zeros_like(reads)),
    )
    return NTMState(memory, *small), reads


def interface_size(word_size: int, num_reads: int = 1, num_writes: int = 1, shift_width: int = 3) -> int:
    """The length of the raw interface vector that ``controls_from_interface`` splits.

    A read head takes ``[k (W), beta, g, s (S), gamma]``, its addressing outputs
    (Graves et al. 2014, §3.3, Eqs. 5-9), ``W + S + 3`` values; a write head also
    ``e (W)`` and ``a (W)`` (Eqs. 3-4), ``3W + S + 3`` values. Total
    ``R (W + S + 3) + H (3W + S + 3)``.
    """
    w = checks.positive_int("word_size", word_size)
    r = checks.positive_int("num_reads", num_reads)
    h = checks.positive_int("num_writes", num_writes)
    s = checks.odd_int("shift_width", shift_width)
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
        strength=jax.nn.softplus(beta),  # Eq. 5: beta_t positive
        gate=jax.nn.sigmoid(gate),  # Eq. 7: g_t in (0, 1)
        shift=jax.nn.softmax(shift, axis=-1),  # Eq. 8: s_t a distribution over shifts
        sharpen=addressing.oneplus(gamma),  # Eq. 9: gamma_t >= 1
    )


def controls_from_interface(
    raw: jax.Array, word_size: int, num_reads: int = 1, num_writes: int = 1, shift_width: int = 3
) -> NTMControls:
    """Split a raw controller output into activated ``NTMControls``.

    The activations give each control the range Graves et al. 2014 require of
    it (§3.3): ``beta = softplus`` (a positive key strength, Eq. 5),
    ``g = sigmoid`` (an interpolation gate in ``(0, 1)``, Eq. 7), ``s = softmax``
    (a distribution over the allowed shifts, Eq. 8), ``gamma = 1 + softplus``
    (``gamma >= 1``, Eq. 9). Keys and add vectors are used as they are (no
    activation there). The erase vector goes through a sigmoid: Graves et al.
    2014 (§3.2, Eq. 3) require every element of ``e_t`` to lie in ``(0, 1)``,
    which the sigmoid guarantees (a raw ``e`` above 1 would flip the sign of the
    memory it erases).

    Layout of ``raw`` (last axis, ``interface_size(W, R, H, S)`` values): the
    ``R`` read heads first, each ``[k (W), beta, g, s (S), gamma]``; then the
    ``H`` write heads, each ``[k (W), beta, g, s (S), gamma, e (W), a (W)]``.

    Any JAX network's output can drive the kernel this way, without Flax.

    Raw values beyond ``+-validation.raw_limit(dtype)`` (``1e4``; ``128`` in
    float16) are first set to that bound (``validation.bound_raw``): the controls
    there are those at the bound and the gradient is 0, so that the backward pass
    stays finite (see "Finite range" above).

    Args:
      raw: ``[..., P]`` (leading axes, e.g. a batch, are kept).
      word_size: ``W``. num_reads: ``R``. num_writes: ``H``. shift_width: ``S``.

    Returns:
      ``NTMControls`` whose fields carry the leading axes of ``raw``.
    """
    size = interface_size(word_size, num_reads, num_writes, shift_width)
    check_floating("raw", raw)
    if jnp.ndim(raw) < 1 or jnp.shape(raw)[-1] != size:
        raise ValueError(
            f"raw: expected shape [..., P] with P = interface_size(W={word_size}, R={num_reads}, "
            f"H={num_writes}, S={shift_width}) = {size}, got {tuple(jnp.shape(raw))}"
        )
    # Under jax.checkpoint the backward pass keeps ``raw`` alone and recomputes the
    # activations from it (a few elementwise operations), instead of keeping about
    # sixteen small arrays per step that a scan would stack one by one.
    return jax.checkpoint(_activate, static_argnums=(1, 2, 3, 4))(raw, word_size, num_reads, num_writes, shift_width)


def _activate(raw: jax.Array, word_size: int, num_reads: int, num_writes: int, shift_width: int) -> NTMControls:
    raw = bound_raw(raw)
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
