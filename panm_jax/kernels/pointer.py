"""Pointer-Augmented Neural Memory (PANM): address bank, address attention, Mode 1 and Mode 2.

Implements the parameter-free part of PANM, Le et al. 2024 (Plug, Play, and
Generalize: Length Extrapolation with Pointer-Augmented Neural Memory, TMLR):
the address bank of §2.2 and Algorithm 1 (lines 3-5), the address attention and
soft pointer of the Pointer Unit (§2.3.1, Eq. 2-3), pointer dereference (§2.3.2,
Mode 1) and relational access (§2.3.2, Mode 2, Eq. 5-6). The GRUs of Eq. 1 and 7,
the address embedding ``g^a`` and the query network ``g^c`` (Eq. 4) have
parameters and live in ``panm_jax.modules``.

One public function per equation, written for one example (the pointer has no
state or ``step``; PANM's module maps these over the batch with ``jax.vmap``)::

    binary_addresses    A[j] = bin((a_B + j) mod 2^b),  j = 0 .. L-1    (Alg. 1, lines 3-5)
    end_address         a_E = (a_B + l(X) - 1) mod 2^b                   (§2.2)
    address_bits        bin(a), e.g. p_0 = bin(a_B) or bin(a_E)          (§2.3.1)
    attention_scores    S[h, n] = cos(q_h, k_n)   or  q_h . k_n / sqrt(D)
    masked_softmax      w[h, n] = softmax_n(beta_h S[h, n]) over the real slots
    causal_mask         mask[n] and n <= t: the memory a decoder-only PANM sees at step t   (§3.2)
    address_attention   w^a_t[n] = softmax_n(cos(h^a_t, g^a(A[n])))      (Eq. 2)
    pointer_values      p^a_t = A w^a_t                                   (Eq. 3)
    dereference         *p^a_t = M w^a_t                                  (Mode 1)
    snap_to_address     round(p^a_t), straight-through gradient           (option snap_pointers, ours)
    relational_access   w^c_t[n] = softmax_n(cos(q_t, M[n])),  *p^c_t = M w^c_t   (Eq. 5-6),
                        returned as RelationalRead(values, weights)
    off_bank_addresses  d_k ~ U(addresses no real slot holds)             (training distractors, ours)
    neighbour_addresses d_k = A[n_k] xor 2^j_k, off the bank                (training distractors, ours)

Notation: ``H`` heads (``H^a`` Mode-1 pointers or ``H^c`` Mode-2 pointers),
``L`` memory slots (the padded input length; the example's true length
``l(X) <= L`` is given by ``mask``), ``A`` address bits (the paper's ``b``),
``D`` width (of the keys, the embedded addresses and the memory rows). The
paper stores ``M`` as ``[d_m, L]`` and ``A`` as ``[b, L]`` (columns are slots);
here rows are slots, ``M [L, D]`` and ``A [L, A]``, so ``M w`` is ``w @ M``.

Inverse temperature (a deliberate extension of Eq. 2 and 5). The paper puts a
plain cosine, which lies in ``[-1, 1]``, inside the softmax. That cannot sharpen
over a long memory: over ``L`` real slots the largest weight softmax(cos) can give
is ``e / (e + (L - 1) e^-1)``, which over the 81 slots of a length-81 test input is
``e / (e + 80 e^-1) ~= 0.08``, so a Mode-1 pointer can never dereference one slot.
Every attention here therefore takes an ``inverse_temperature`` ``beta`` (a scalar,
or one per head) that multiplies the scores before the softmax; the PANM module
learns it, positive, one per head. ``inverse_temperature=1`` recovers the paper's
Eq. 2 and 5 exactly. The kernel does not check the sign of ``beta`` (it may be a
traced value): ``beta = 0`` gives the uniform distribution over the real slots, a
negative ``beta`` points away from the best match. A concrete ``beta`` must be
finite (a NaN or infinite one would make every weight NaN).

Score function. ``score="cosine"`` (the default) is the paper's Eq. 2 and 5,
computed by ``addressing.cosine_similarity``, which is finite, with a finite
gradient, at a zero key or a zero memory row (similarity 0 there).
``score="scaled_dot"`` is the score of the authors' public code (PyTorch
``MultiheadAttention``, i.e. the scaled dot product of Vaswani et al. 2017,
"Attention Is All You Need", Eq. 1): ``q . k / sqrt(D)``. The authors' code also
passes the query and the keys through learned linear projections first; this
kernel scores the vectors it is given, and the PANM module gives it the Pointer
Unit's state and ``g^a(A)`` (both learned) without extra projections. The inverse
temperature multiplies either score, so ``beta = 1`` with ``"scaled_dot"`` is
exactly softmax(q . k / sqrt(D)) of the vectors given.

The scaled dot product saturates instead of overflowing: each query and key row
is first multiplied by an exact power of two that brings its largest entry near
``2^safe``, ``safe = (maxexp - 1 - ceil(log2 D)) // 2`` (62 in float32 for
``D = 8``: the products and their sum then cannot overflow, and the products of
tiny rows do not underflow), the dot
product is taken of the rescaled rows and the powers are multiplied back (an
identity: no rounding is added), and the result is clipped to ``[-f_max, f_max]``
(``f_max`` the dtype's largest finite value). So the score is ``q . k / sqrt(D)``,
rounded as the plain product rounds it wherever that one neither overflows nor
underflows (bit for bit), and ``+-f_max`` beyond the finite range. The range that
remains: scores beyond ``f_max`` in magnitude all equal ``+-f_max`` (they tie), and
scores below the smallest normal number flush to 0 as any result does. The
gradient is the exact ``k / sqrt(D)`` (``q / sqrt(D)`` for the key) where the score
is not saturated and 0 where it is; it is finite wherever its true value,
``sum_n g[h, n] k_n / sqrt(D)`` for a cotangent ``g``, is representable.

Bit order. Address bits are least-significant first: column ``k`` of
``binary_addresses`` is bit ``k`` of the address (value ``2^k``). The paper prints
addresses most-significant first (``0011`` for 3); the order is immaterial to the
model, because ``g^a`` is a learned network over the whole bit vector, but it is
fixed here so that ``p_0``, the address bank and the tests agree. Addresses wrap
around: slot ``j`` holds ``(a_B + j) mod 2^b`` (Algorithm 1, line 5), so a bank that
starts near the top of the address space continues at 0.

Masking. Slots ``n`` with ``mask[n] == 0`` are padding (the input is padded to a
bucket length ``L``). The softmax runs over the real slots only: padded slots get
weight exactly 0 and never enter the arithmetic (their scores may even be
infinite or NaN), so the weights over the real slots are exactly the paper's
softmax over ``1 <= n <= l(X)`` for every finite ``beta`` (positive, zero or
negative, however large or small) and every finite score, and appending padded
slots changes no weight. (A weight of 0 times an infinite memory row is still
NaN in ``dereference``: memory rows must be finite.) A fully masked row (an empty
example) gives all-zero weights, so its pointer values and dereferenced values
are 0, with no NaN in the value or the gradient. ``masked_softmax`` explains how.

Causal memory (``causal_mask``). Le et al. 2024, §3.2, run PANM on the Dyck
languages as a decoder-only model: no encoder, the memory holds the raw input
tokens (one slot per input step), and it is masked "to ensure the decoder only
see tokens up to the current decoding step". At decoding step ``t`` (0-based)
the memory mask is therefore ``mask[n] and n <= t``; passed as the ``mask`` of
``address_attention`` (Eq. 2) and of ``relational_access`` (Eq. 5), it makes
both softmaxes run over the prefix ``0 <= n <= t`` only, with weight exactly 0
on every later slot, so Mode 1 (``dereference``, ``M w^a_t``), Mode 2
(Eq. 6, ``M w^c_t``) and the pointer (Eq. 3, ``A w^a_t``) read the prefix
alone: a token after step ``t`` cannot change step ``t``'s values or the
gradient reaching them (``tests/kernels/test_pointer_causal.py``). Any other
sum over the memory a caller forms (such as Eq. 7's ``h^c_0 = sum_i M[i]``)
must take the same mask.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from panm_jax import checks
from panm_jax.kernels.addressing import compute_dtype, cosine_similarity
from panm_jax.kernels.validation import check_float_dtype, check_floating, check_in_range, check_shape, is_concrete

__all__ = [
    "MAX_ADDRESS_BITS",
    "SCORES",
    "RelationalRead",
    "address_attention",
    "address_bits",
    "attention_scores",
    "binary_addresses",
    "causal_mask",
    "dereference",
    "end_address",
    "masked_softmax",
    "neighbour_addresses",
    "off_bank_addresses",
    "pointer_values",
    "relational_access",
    "snap_to_address",
]

# Addresses are computed in int32: base mod 2^b plus a slot index must stay below
# 2^31, and float32 represents every code bit exactly. 30 bits (10^9 addresses) is
# far beyond the paper's b = 10.
MAX_ADDRESS_BITS = 30

# The score functions `attention_scores` knows, in the order the docs list them.
SCORES = ("cosine", "scaled_dot")


# ---- validation helpers (trace time, free under jit) -------------------------------


def _check_bits(bits) -> int:
    return checks.integer("bits", bits, 1, MAX_ADDRESS_BITS)


def _check_int32_values(name: str, value) -> None:
    """Concrete integers (a Python int, a NumPy or JAX integer array) must lie in int32, where the kernel
    computes: a Python int beyond it cannot be converted (``OverflowError``), and a wider integer array
    would be cut to its low 32 bits (``causal_mask``'s step ``2^40`` would admit slot 0 only). Traced
    values are the caller's."""
    if isinstance(value, bool) or not is_concrete(value):
        return
    if isinstance(value, int):
        bad = [value] if not checks.INT32_MIN <= value <= checks.INT32_MAX else []
    else:
        array = np.asarray(value)
        if not np.issubdtype(array.dtype, np.integer) or array.size == 0:
            return  # the dtype check that follows names a non-integer
        bad = [int(v) for v in array.ravel() if not checks.INT32_MIN <= int(v) <= checks.INT32_MAX][:1]
    if bad:
        raise ValueError(
            f"{name}: expected integers in [{checks.INT32_MIN}, {checks.INT32_MAX}] (addresses and slots are "
            f"computed in int32), got {bad[0]}"
        )


def _check_int_scalar(name: str, value) -> jax.Array:
    check_shape(name, value, (), "")
    _check_int32_values(name, value)
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.integer):
        raise ValueError(f"{name}: expected an integer scalar, got dtype {value.dtype}")
    return value


def _check_length(length) -> jax.Array:
    # l(X): an integer scalar, not negative (checked where concrete; a traced length is the caller's).
    length = _check_int_scalar("length", length)
    check_in_range("length", length, 0, None)
    return length


def _check_matrix(name: str, value, dims: str) -> tuple[int, int]:
    if jnp.ndim(value) != 2:
        raise ValueError(f"{name}: expected shape [{dims}], got {tuple(jnp.shape(value))}")
    check_floating(name, value)
    rows, cols = jnp.shape(value)
    return int(rows), int(cols)


def _check_inverse_temperature(inverse_temperature, heads: int, dim: str) -> None:
    shape = tuple(jnp.shape(inverse_temperature))
    if shape not in ((), (heads,)):
        raise ValueError(f"inverse_temperature: expected shape [] or [{dim}] = () or ({heads},), got {shape}")
    if is_concrete(inverse_temperature):  # NaN or infinite: every weight NaN (beta (S - c) is inf * 0 at the best slot)
        beta = np.asarray(inverse_temperature, dtype=np.float64)
        if not np.isfinite(beta).all():
            raise ValueError(f"inverse_temperature: expected finite values, got {beta[~np.isfinite(beta)].flat[0]}")


def _wrap(values: jax.Array, bits: int) -> jax.Array:
    # values mod 2^b, as int32. A bitwise AND with 2^b - 1 is the floor modulo for
    # two's-complement integers, so a negative base wraps to the top of the space too.
    return jnp.bitwise_and(values, (1 << bits) - 1).astype(jnp.int32)


def _to_bits(values: jax.Array, bits: int, dtype) -> jax.Array:
    dtype = check_float_dtype("dtype", dtype)
    # [...] int32 in [0, 2^b) -> [..., A] {0, 1}: column k = (value >> k) & 1 (LSB first).
    shifts = jnp.arange(bits, dtype=jnp.int32)
    return jnp.bitwise_and(jnp.right_shift(values[..., None], shifts), 1).astype(dtype)


# ---- the causal memory of a decoder-only PANM (§3.2) ---------------------------------


def causal_mask(mask: jax.Array, step: jax.Array | int) -> jax.Array:
    """The slots a decoder-only PANM may read at decoding step ``t``: the real slots ``n <= t``.

    Implements the masking of ``M`` in Le et al. 2024 (PANM), §3.2 (Dyck): "masking
    M to ensure the decoder only see tokens up to the current decoding step"::

        causal[n] = mask[n] != 0  and  n <= t,     n = 0 .. L-1  (slots 0-based, t 0-based)

    The result is a mask like any other: give it as the ``mask`` of
    ``address_attention`` (Eq. 2) and ``relational_access`` (Eq. 5), and both
    softmaxes, and so Eq. 3, Mode 1 and Eq. 6, see the prefix only (module
    docstring). A step ``t < 0`` admits no slot (all-zero weights, as an empty
    example); ``t >= L - 1`` admits every real slot.

    ``step`` may be traced (the counter of a ``lax.scan``), and the call maps
    over leading axes like the other kernels: ``mask`` ``[..., L]`` with ``step``
    ``[]`` (one step for all) or ``[...]`` (one per example), broadcast.

    Args:
      mask: ``[..., L]``, 1 (or ``True``) for a real slot, 0 for padding.
      step: integer ``t``, ``[]`` or the leading shape of ``mask``.

    Returns:
      ``[..., L]`` bool, true on the real slots ``n <= t``.

    Raises:
      ValueError: ``mask`` has no slot axis, ``step`` is not an integer or its
        shape does not broadcast against ``mask``'s leading axes, or a concrete
        ``step`` lies outside int32.
    """
    if jnp.ndim(mask) < 1:
        raise ValueError(f"mask: expected shape [..., L], got {tuple(jnp.shape(mask))}")
    _check_int32_values("step", step)
    step = jnp.asarray(step)
    if not jnp.issubdtype(step.dtype, jnp.integer):
        raise ValueError(f"step: expected an integer (the decoding step t), got dtype {step.dtype}")
    lead = tuple(jnp.shape(mask))[:-1]
    if step.ndim > len(lead) or any(s not in (1, m) for s, m in zip(step.shape[::-1], lead[::-1], strict=False)):
        raise ValueError(f"step: expected shape [] or the leading axes of mask {lead}, got {tuple(step.shape)}")
    slots = jnp.arange(jnp.shape(mask)[-1], dtype=jnp.int32)
    return (jnp.asarray(mask) != 0) & (slots <= step.astype(jnp.int32)[..., None])


# ---- address bank (§2.2, Algorithm 1) ------------------------------------------------


def binary_addresses(base: jax.Array, length: int, bits: int, *, dtype=jnp.float32) -> jax.Array:
    """The address bank: ``L`` consecutive ``b``-bit addresses from the base, wrapping at ``2^b``.

    Implements Algorithm 1, lines 3-5 of Le et al. 2024 (PANM),
    and the address bank of §2.2: ``a_B`` is ``base``, ``b`` is ``bits``, ``l(M)``
    is ``length``::

        A[j] = (a_B + j) mod 2^b,   j = 0, 1, ..., l(M) - 1

    each address written as a ``b``-bit binary vector, least-significant bit first.
    Slot ``j`` of the memory is bound to ``A[j]`` (``A[j] = &M[j]``).

    ``base`` may be traced (a per-example random base under ``jit`` and ``vmap``);
    ``length`` and ``bits`` are static. A negative ``base`` wraps like any other
    (``-1`` is ``2^b - 1``).

    Args:
      base: ``[]`` integer ``a_B``.
      length: ``L``, a static Python int >= 1 (the padded memory length; slots past
        the example's true length get addresses too and are masked by the caller).
      bits: ``A`` (the paper's ``b``), a static Python int in ``[1, MAX_ADDRESS_BITS]`` (30).
      dtype: the dtype of the codes (float32 by default).

    Returns:
      ``[L, A]`` in ``{0, 1}``: row ``j`` is the code of ``(base + j) mod 2^A``,
      column ``k`` its bit ``k``.

    Raises:
      ValueError: ``base`` is not an integer scalar (or, concrete, lies outside
        int32: ``binary_addresses(2**31, 8, 8)``), ``length`` is outside
        ``[1, 2^31 - 1]`` (slot indices are int32) or ``bits`` outside
        ``[1, MAX_ADDRESS_BITS]``.
    """
    length = checks.integer(
        "length", checks.positive_int("length", length), hi=checks.INT32_MAX, why="slot indices are int32"
    )
    bits = _check_bits(bits)
    base = _check_int_scalar("base", base)
    # Wrap the base first so that base + j cannot overflow int32 (base < 2^30).
    start = _wrap(base, bits)
    values = _wrap(start + jnp.arange(length, dtype=jnp.int32), bits)  # [L]
    return _to_bits(values, bits, dtype)


def end_address(base: jax.Array, length: jax.Array, bits: int) -> jax.Array:
    """The end address: the address of the last real slot.

    Implements ``a_E`` of Le et al. 2024 (PANM) §2.2, with
    ``a_B`` = ``base`` and ``l(X)`` = ``length``::

        a_E = (a_B + l(X) - 1) mod 2^b

    ``binary_addresses(base, L, bits)[length - 1]`` is its code. ``length`` may be
    traced (the example's true length). A zero length gives ``a_B - 1 mod 2^b``.

    Args:
      base: ``[]`` integer ``a_B``.
      length: ``[]`` integer ``l(X)`` >= 0, the number of real slots.
      bits: ``A`` (the paper's ``b``), a static Python int in ``[1, MAX_ADDRESS_BITS]`` (30).

    Returns:
      ``[]`` int32 in ``[0, 2^A)``.

    Raises:
      ValueError: ``base`` or ``length`` is not an integer scalar, ``length`` is
        negative or either lies outside int32 (checked where they are concrete)
        or ``bits`` is outside ``[1, MAX_ADDRESS_BITS]``.
    """
    bits = _check_bits(bits)
    base = _check_int_scalar("base", base)
    length = _check_length(length)
    return _wrap(_wrap(base, bits) + _wrap(length, bits) - 1, bits)


def address_bits(address: jax.Array, bits: int, *, dtype=jnp.float32) -> jax.Array:
    """The ``b``-bit binary code of one address, least-significant bit first.

    Used for the Pointer Units' initial pointers of Le et al. 2024 (PANM)
    §2.3.1 and §3: ``p_0 = a_B`` (the base) or
    ``p_0 = a_E`` (the end address). ``address`` is taken mod ``2^b`` and may be
    traced.

    Args:
      address: ``[]`` integer.
      bits: ``A``, a static Python int in ``[1, MAX_ADDRESS_BITS]`` (30).
      dtype: the dtype of the code (float32 by default).

    Returns:
      ``[A]`` in ``{0, 1}``, element ``k`` is bit ``k`` of ``address mod 2^A``.
    """
    bits = _check_bits(bits)
    address = _check_int_scalar("address", address)
    return _to_bits(_wrap(address, bits), bits, dtype)


def off_bank_addresses(
    key: jax.Array, base: jax.Array, length: jax.Array, count: int, bits: int
) -> tuple[jax.Array, jax.Array]:
    """Addresses drawn uniformly from those that no real slot holds (distractors).

    Used by the PANM option ``distractors`` (``panm_jax.modules.panm``; not in
    Le et al. 2024): during training, the softmax of Eq. 2 also runs
    over ``count`` addresses outside the bank, which hold no data. The bank holds
    ``a_B, ..., a_E`` (``l(X)`` addresses, §2.2); the others are the ``2^b - l(X)``
    addresses from ``a_E + 1`` on, so each distractor is::

        d_k = (a_E + 1 + r_k) mod 2^b,   r_k ~ U{0, ..., 2^b - l(X) - 1}   (independently)

    When the bank holds the whole space (``l(X) = 2^b``) there is no such address:
    ``valid`` is then false and the caller masks the draws out.

    Most of these differ from any one bank address in several high bits at once;
    ``neighbour_addresses`` draws the harder distractors that differ in one bit.

    Args:
      key: a PRNG key.
      base: ``[]`` integer ``a_B``.
      length: ``[]`` integer ``l(X)`` >= 0 (may be traced).
      count: ``K``, a static Python int >= 1.
      bits: ``A`` (the paper's ``b``), a static Python int in ``[1, MAX_ADDRESS_BITS]`` (30).

    Returns:
      ``(addresses [K] int32, valid [K] bool)``: ``valid`` is the same for every draw.
    """
    count = checks.integer("count", checks.positive_int("count", count), hi=checks.INT32_MAX, why="an int32 array axis")
    bits = _check_bits(bits)
    base = _check_int_scalar("base", base)
    length = _check_length(length)
    free = (1 << bits) - length.astype(jnp.int32)  # addresses outside the bank
    offsets = jax.random.randint(key, (count,), 0, jnp.maximum(free, 1), dtype=jnp.int32)
    return _wrap(end_address(base, length, bits) + 1 + offsets, bits), jnp.broadcast_to(free > 0, (count,))


def neighbour_addresses(
    key: jax.Array, base: jax.Array, length: jax.Array, count: int, bits: int
) -> tuple[jax.Array, jax.Array]:
    """Distractors one bit away from the bank: a random bank address with one random bit flipped.

    Used by the PANM option ``distractors`` with ``distractor_sampling="neighbours"``
    (``panm_jax.modules.panm``; not in Le et al. 2024). Each draw
    takes a real slot ``n_k`` and a bit ``j_k`` uniformly and independently, and
    flips that bit of the slot's address ``A[n_k] = (a_B + n_k) mod 2^b`` (§2.2)::

        d_k = A[n_k] xor 2^j_k,   n_k ~ U{0, ..., l(X) - 1},   j_k ~ U{0, ..., b - 1}

    A pointer that is wrong in bit ``j`` alone lands on such an address, so these
    distractors test each bit by itself. A draw that lands inside the bank (a flip
    of a low bit usually does) is not a distractor: ``valid`` is false there.

    Args:
      key: a PRNG key.
      base: ``[]`` integer ``a_B``.
      length: ``[]`` integer ``l(X)`` >= 0 (may be traced; 0 gives no valid draw).
      count: ``K``, a static Python int >= 1.
      bits: ``A`` (the paper's ``b``), a static Python int in ``[1, MAX_ADDRESS_BITS]`` (30).

    Returns:
      ``(addresses [K] int32, valid [K] bool)``.
    """
    count = checks.integer("count", checks.positive_int("count", count), hi=checks.INT32_MAX, why="an int32 array axis")
    bits = _check_bits(bits)
    base = _check_int_scalar("base", base)
    length = _check_length(length).astype(jnp.int32)
    slot_key, bit_key = jax.random.split(key)
    slots = jax.random.randint(slot_key, (count,), 0, jnp.maximum(length, 1), dtype=jnp.int32)
    flips = jax.random.randint(bit_key, (count,), 0, bits, dtype=jnp.int32)
    start = _wrap(base, bits)
    drawn = jnp.bitwise_xor(_wrap(start + slots, bits), jnp.left_shift(jnp.int32(1), flips))
    in_bank = _wrap(drawn - start, bits) < length  # slot index of the drawn address, if it is in the bank
    return drawn, ~in_bank & (length > 0)


# ---- attention ------------------------------------------------------------------------


def _pow2(exponent: jax.Array, dtype) -> jax.Array:
    # 2^exponent, exactly, for integer exponents in the dtype's normal range (built from its bits).
    info = jnp.finfo(dtype)
    ints = jnp.int32 if info.bits == 32 else jnp.int64
    biased = (exponent.astype(ints) + (int(info.maxexp) - 1)) << int(info.nmant)
    return jax.lax.bitcast_convert_type(biased, dtype)


def _scaled_dot_unclipped(queries: jax.Array, keys: jax.Array) -> jax.Array:
    # [H, D], [L, D] (float32 or float64) -> [H, L] q . k / sqrt(D), or +-inf beyond the finite range.
    #
    # Each row x is written x = x' 2^s with an integer s chosen from its largest entry so
    # that |x'| < 2^safe, where 2 safe + ceil(log2 D) <= maxexp - 1: every product
    # q'_d k'_d and their sum over d then lie below 2^(maxexp - 1), so q' . k' cannot
    # overflow, and (rows being scaled up as well as down) the products of tiny rows do not
    # underflow either. Multiplying by a power of two is exact, so
    #     S = (q' . k' / sqrt(D)) 2^(s_q + s_k)
    # is q . k / sqrt(D) rounded as the plain product rounds it wherever that stays in the
    # normal range (bit for bit), and with that same rounding, of a dot product of
    # in-range numbers, where the plain product would overflow or lose its products to
    # underflow. The factor 2^(s_q + s_k) is applied as
    # two powers of the same sign, so the intermediate lies between q' . k' and S: it
    # overflows (to +-inf, never NaN) or underflows only when S itself does.
    # Not to be differentiated directly: _saturating_scaled_dot's rule gives the derivative.
    width = queries.shape[-1]
    info = jnp.finfo(queries.dtype)
    safe = (int(info.maxexp) - 1 - math.ceil(math.log2(width))) // 2
    limit = -int(info.minexp)  # 2^s and 2^-s are normal numbers for |s| <= limit

    def exponents(x):  # [R, D] -> [R] int s with |x 2^-s| < 2^safe
        _, top = jnp.frexp(jnp.max(jnp.abs(x), axis=-1))  # max|x| < 2^top
        return jnp.clip(top - safe, -limit, limit)

    s_q, s_k = exponents(queries), exponents(keys)
    q = queries * _pow2(-s_q, queries.dtype)[:, None]
    k = keys * _pow2(-s_k, keys.dtype)[:, None]
    dot = jnp.einsum("hd,nd->hn", q, k) * (1.0 / math.sqrt(width))
    total = s_q[:, None] + s_k[None, :]  # [H, L] in [-2 limit, 2 limit]
    half = jnp.floor_divide(total, 2)  # half and total - half have the sign of total
    return dot * _pow2(half, queries.dtype) * _pow2(total - half, queries.dtype)


@jax.custom_jvp
def _saturating_scaled_dot(queries: jax.Array, keys: jax.Array) -> jax.Array:
    # q . k / sqrt(D) clipped to the dtype's finite range (inputs in a >= 32-bit dtype).
    top = float(jnp.finfo(queries.dtype).max)
    return jnp.clip(_scaled_dot_unclipped(queries, keys), -top, top)


@_saturating_scaled_dot.defjvp
def _saturating_scaled_dot_jvp(primals, tangents):
    # dS = (dq . k + q . dk) / sqrt(D) where S is not saturated, 0 where it is. Written
    # with the unscaled q and k: differentiating the rescaled form instead would multiply
    # the cotangent by 2^(s_q + s_k) before it meets k', which overflows for large rows
    # and underflows (losing the cotangent's digits) for small ones, even where the true
    # gradient is moderate. The transposed (reverse-mode) products are g k and g^T q:
    # finite whenever the true gradient is.
    # The primal output calls the function itself, so that higher derivatives come
    # through this rule too (never through the rescaled form).
    queries, keys = primals
    d_queries, d_keys = tangents
    inside = jnp.isfinite(jax.lax.stop_gradient(_scaled_dot_unclipped(queries, keys)))  # not saturated
    scale = 1.0 / math.sqrt(queries.shape[-1])
    tangent = (jnp.einsum("hd,nd->hn", d_queries, keys) + jnp.einsum("hd,nd->hn", queries, d_keys)) * scale
    return _saturating_scaled_dot(queries, keys), jnp.where(inside, tangent, jnp.zeros_like(tangent))


def _scaled_dot(queries: jax.Array, keys: jax.Array) -> jax.Array:
    dtype = jnp.result_type(queries, keys)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.dtype(jnp.float32)
    work = compute_dtype(dtype)
    scores = _saturating_scaled_dot(jnp.asarray(queries, work), jnp.asarray(keys, work))
    if work != dtype:  # a 16-bit dtype: saturate at its own largest finite value
        top = float(jnp.finfo(dtype).max)
        scores = jnp.clip(scores, -top, top)
    return scores.astype(dtype)


def _scores(queries, keys, score: str, q_name: str, k_name: str, q_dims: str, k_dims: str) -> jax.Array:
    score = checks.one_of("score", score, SCORES)
    _, width = _check_matrix(q_name, queries, q_dims)
    _check_matrix(k_name, keys, k_dims)
    check_shape(k_name, keys, (None, width), k_dims)
    if score == "cosine":
        return cosine_similarity(queries, keys)  # [H, L], safe at zero vectors
    # The authors' code: q . k / sqrt(D) (Vaswani et al. 2017), saturating at +-f_max.
    return _scaled_dot(queries, keys)


def attention_scores(queries: jax.Array, keys: jax.Array, *, score: str = "cosine") -> jax.Array:
    """The score of each query against each key, before the softmax.

    Implements the fraction inside the softmax of Eq. 2 and Eq. 5 of Le et al. 2024,
    "Plug, Play, and Generalize: Length Extrapolation with Pointer-Augmented Neural
    Memory" (PANM): ``queries`` are ``h^a_t`` (Eq. 2) or ``q_t`` (Eq. 5), ``keys``
    are ``g^a(A[n])`` (Eq. 2) or ``M[n]`` (Eq. 5)::

        cosine:      S[h, n] = q_h . k_n / (|q_h| |k_n|)                       (the paper)
        scaled_dot:  S[h, n] = clip(q_h . k_n / sqrt(D), -f_max, f_max)         (the authors' code)

    The cosine uses ``addressing.cosine_similarity`` (a zero vector scores 0 with a
    finite gradient). The scaled dot product is computed from exactly rescaled rows
    so that it cannot overflow, and saturates at ``+-f_max``, the dtype's largest
    finite value (module docstring); its gradient is exact where it does not
    saturate and 0 where it does. 16-bit inputs are computed in float32 and the
    result is cast back.

    Args:
      queries: ``[H, D]``.
      keys: ``[L, D]``.
      score: ``"cosine"`` or ``"scaled_dot"``.

    Returns:
      ``[H, L]``; in ``[-1, 1]`` for the cosine, in ``[-f_max, f_max]`` for the
      scaled dot product.

    Raises:
      ValueError: unknown ``score``, or shapes that are not ``[H, D]`` and ``[L, D]``.
    """
    return _scores(queries, keys, score, "queries", "keys", "H, D", "L, D")


def masked_softmax(scores: jax.Array, mask: jax.Array, inverse_temperature: jax.Array | float = 1.0) -> jax.Array:
    """Softmax over the real slots of ``inverse_temperature * scores``; padded slots get 0.

    The softmax of Eq. 2 and Eq. 5 of Le et al. 2024 (PANM), taken over
    ``1 <= n <= l(X)`` (the real slots, ``mask[n] != 0``), with the inverse
    temperature ``beta`` of this library (module docstring)::

        w[h, n] = exp(beta_h S[h, n]) / sum_{m real} exp(beta_h S[h, m])   if n is real
        w[h, n] = 0                                                        if n is padding

    exactly, for every finite ``beta`` (positive, zero or negative) and every finite
    score: padded slots take no part in the arithmetic, so no padding constant can
    compete with a real logit however negative, and ``beta S`` itself is never
    formed (only ``beta (S - c) <= 0``, whose overflow is a harmless ``-inf``).
    Computed, per row ``h``, as::

        c_h      = max_{n real} S[h, n]  if beta_h > 0,  min_{n real} S[h, n]  if beta_h < 0,  0 if beta_h = 0
        x[h, n]  = 2 beta_h ((S[h, n] / 2) - (c_h / 2))     <= 0 on real slots, 0 at the best one
        w[h, n]  = [n real] exp(x[h, n]) / sum_{m real} exp(x[h, m])

    The softmax is unchanged by the shift ``c_h`` (it is taken under
    ``stop_gradient``, and the gradient stays exact); halving before subtracting
    keeps ``S - c`` finite for any finite scores, and a product ``beta_h (S - c) / 2``
    that overflows is ``-inf``, whose ``exp`` is exactly 0, as the true weight
    rounds to. The best real slot has ``exp(0) = 1``, so the normaliser is >= 1
    whenever a slot is real. Padded entries are replaced before any arithmetic and
    selected out after it, so neither their value nor their gradient can be NaN; a
    fully masked row returns zeros with a zero gradient (with respect to the scores
    and ``beta``). 16-bit scores are computed in float32 and cast back.

    Args:
      scores: ``[H, L]`` ``S``, finite on the real slots (anything on the padding).
      mask: ``[L]``, 1 (or ``True``) for a real slot, 0 for padding.
      inverse_temperature: ``beta``, finite, a scalar or ``[H]`` (one per head),
        broadcast over ``L``; ``1`` is the paper.

    Returns:
      ``[H, L]`` weights: each row sums to 1 over the real slots (0 if there is
      none) and is exactly 0 on padded slots.

    Raises:
      ValueError: ``scores`` not ``[H, L]``, ``mask`` not ``[L]``, or
        ``inverse_temperature`` neither ``[]`` nor ``[H]``, or (where it is
        concrete) NaN or infinite.
    """
    return _masked_softmax(scores, mask, inverse_temperature, "H")


def _masked_softmax(scores, mask, inverse_temperature, dim: str) -> jax.Array:
    # masked_softmax, with the heads axis named `dim` ("H" or "Hc") in the errors.
    heads, slots = _check_matrix("scores", scores, f"{dim}, L")
    check_shape("mask", mask, (slots,), "L")
    _check_inverse_temperature(inverse_temperature, heads, dim)
    scores = jnp.asarray(scores)
    dtype = scores.dtype if jnp.issubdtype(scores.dtype, jnp.floating) else jnp.dtype(jnp.float32)
    work = compute_dtype(dtype)
    scores = scores.astype(work)
    beta = jnp.asarray(inverse_temperature).astype(work)
    if beta.ndim == 1:
        beta = beta[:, None]  # [H, 1], one per head
    real = jnp.asarray(mask) != 0  # [L]
    # c_h: the best real score in the direction beta_h points (0 for beta_h = 0 or an empty row).
    top = jnp.max(jnp.where(real, scores, -jnp.inf), axis=-1, keepdims=True)  # [H, 1]
    bottom = jnp.min(jnp.where(real, scores, jnp.inf), axis=-1, keepdims=True)  # [H, 1]
    shift = jnp.where(beta > 0, top, jnp.where(beta < 0, bottom, 0.0))
    shift = jax.lax.stop_gradient(jnp.where(jnp.any(real), shift, 0.0))  # [H, 1], finite
    scores = jnp.where(real, scores, shift)  # padding never enters the arithmetic
    logits = (beta * (0.5 * scores - 0.5 * shift)) * 2.0  # beta (S - c) <= 0, or -inf; 0 at the best slot
    numerators = jnp.where(real, jnp.exp(logits), 0.0)  # padded logits are 0 here: exp is finite
    total = jnp.sum(numerators, axis=-1, keepdims=True)  # >= 1 if any slot is real
    return (numerators / jnp.where(total > 0, total, 1.0)).astype(dtype)


def address_attention(
    keys: jax.Array,
    embedded_addresses: jax.Array,
    mask: jax.Array,
    *,
    score: str = "cosine",
    inverse_temperature: jax.Array | float = 1.0,
) -> jax.Array:
    """Address attention of the Pointer Units: where each Mode-1 pointer points.

    Implements Eq. 2 of Le et al. 2024 (PANM): ``keys`` are the
    Pointer Units' hidden states ``h^a_t`` (one per head), ``embedded_addresses``
    are ``g^a(A[n])`` (the address bank through the address embedding)::

        w^a_t[n] = softmax_n( beta h^a_t . g^a(A[n]) / (|h^a_t| |g^a(A[n])|) ),  1 <= n <= l(X)

    with ``beta = inverse_temperature`` (``1`` is the paper; see the module
    docstring) and the softmax over the real slots only (``masked_softmax``).

    Args:
      keys: ``[H, D]`` ``h^a_t``, one per Mode-1 head (``H = H^a``).
      embedded_addresses: ``[L, D]`` ``g^a(A)``.
      mask: ``[L]``, 1 for the example's ``l(X)`` real slots, 0 for padding.
      score: ``"cosine"`` (the paper) or ``"scaled_dot"`` (the authors' code).
      inverse_temperature: ``beta``, a scalar or ``[H]``.

    Returns:
      ``[H, L]`` ``w^a_t``, each row a distribution over the real slots.

    Raises:
      ValueError: unknown ``score`` or a badly shaped argument (named).
    """
    scores = _scores(keys, embedded_addresses, score, "keys", "embedded_addresses", "H, D", "L, D")
    return masked_softmax(scores, mask, inverse_temperature)


def pointer_values(weights: jax.Array, addresses: jax.Array) -> jax.Array:
    """The soft pointer: the attention-weighted average of the binary addresses.

    Implements Eq. 3 of Le et al. 2024 (PANM), ``p^a_t = A w^a_t``,
    with ``A`` = ``addresses`` (rows are slots here) and ``w^a_t`` = ``weights``::

        p^a_t[k] = sum_n w^a_t[n] A[n, k]

    With weights that sum to at most 1 over the slots, every bit lies in ``[0, 1]``;
    a one-hot weighting gives exactly that slot's address.

    Args:
      weights: ``[H, L]`` ``w^a_t``.
      addresses: ``[L, A]`` the address bank ``A`` (``binary_addresses``).

    Returns:
      ``[H, A]`` ``p^a_t``.
    """
    _, slots = _check_matrix("weights", weights, "H, L")
    _check_matrix("addresses", addresses, "L, A")
    check_shape("addresses", addresses, (slots, None), "L, A")
    return weights @ addresses


def dereference(weights: jax.Array, memory: jax.Array) -> jax.Array:
    """Mode 1: the memory value a pointer points at.

    Implements pointer dereference (Mode 1, §2.3.2) of Le et al. 2024 (PANM),
    ``*p^a_t = M w^a_t``, using the binding ``A[n] = &M[n]``: ``weights`` are the address attention ``w^a_t`` and
    ``memory`` is ``M`` (rows are slots here)::

        *p^a_t = sum_n w^a_t[n] M[n]

    Args:
      weights: ``[H, L]`` ``w^a_t``.
      memory: ``[L, D]`` ``M``.

    Returns:
      ``[H, D]`` ``*p^a_t``, a convex combination of the real memory rows.
    """
    _, slots = _check_matrix("weights", weights, "H, L")
    _check_matrix("memory", memory, "L, D")
    check_shape("memory", memory, (slots, None), "L, D")
    return weights @ memory


class RelationalRead(NamedTuple):
    """What ``relational_access`` (Mode 2) returns: the values first, then the weights.

    A named tuple, so ``values, weights = relational_access(...)`` still unpacks in
    this order, and ``read.values`` / ``read.weights`` cannot be swapped by mistake
    (``dereference`` takes ``(weights, memory)``, the other way round).
    """

    values: jax.Array  # [Hc, D] *p^c_t = M w^c_t (Eq. 6)
    weights: jax.Array  # [Hc, L] w^c_t (Eq. 5)


def relational_access(
    queries: jax.Array,
    memory: jax.Array,
    mask: jax.Array,
    *,
    score: str = "cosine",
    inverse_temperature: jax.Array | float = 1.0,
) -> RelationalRead:
    """Mode 2: attend over the memory contents with a query made from the Mode-1 values.

    Implements Eq. 5-6 of Le et al. 2024 (PANM), §2.3.2 Mode 2:
    ``queries`` are ``q_t`` (one per Mode-2 head), ``memory`` is ``M``::

        w^c_t[n] = softmax_n( beta q_t . M[n] / (|q_t| |M[n]|) ),  1 <= n <= l(X)   (Eq. 5)
        *p^c_t   = M w^c_t                                                          (Eq. 6)

    with ``beta = inverse_temperature`` (``1`` is the paper) and the softmax over
    the real slots only. Eq. 4, the query network ``q_t = g^c({*p^a_t})``, has
    parameters and is part of the module.

    Args:
      queries: ``[Hc, D]`` ``q_t``, one per Mode-2 head (``Hc = H^c``).
      memory: ``[L, D]`` ``M``.
      mask: ``[L]``, 1 for real slots, 0 for padding.
      score: ``"cosine"`` (the paper) or ``"scaled_dot"`` (the authors' code).
      inverse_temperature: ``beta``, a scalar or ``[Hc]``.

    Returns:
      ``RelationalRead(values, weights)``: ``values`` is ``*p^c_t`` ``[Hc, D]`` and
      ``weights`` is ``w^c_t`` ``[Hc, L]`` (a named tuple: unpacks as
      ``values, weights``).

    Raises:
      ValueError: unknown ``score`` or a badly shaped argument (named).
    """
    scores = _scores(queries, memory, score, "queries", "memory", "Hc, D", "L, D")
    weights = _masked_softmax(scores, mask, inverse_temperature, "Hc")
    return RelationalRead(values=weights @ memory, weights=weights)


def snap_to_address(pointers: jax.Array) -> jax.Array:
    """The nearest binary address to a soft pointer, with a straight-through gradient.

    Used by the PANM option ``snap_pointers`` (``panm_jax.modules.panm``; not in
    Le et al. 2024, whose Eq. 3 pointer ``p^a_t = A w^a_t`` stays
    soft). Each bit is rounded to 0 or 1 (a bit of exactly 0.5 rounds to 0, half to
    even), so a pointer whose largest weight is above 1/2 snaps to exactly that
    address; every bit is decided by the weighted majority of the addresses::

        snap(p)[k] = round(p[k]),     d snap(p) / d p = I   (straight-through)

    Over a long memory the soft pointer's high bits are blurred by the small
    weights that every other slot takes; fed back to the Pointer Unit (Eq. 1) the
    blur compounds from step to step. Snapping removes it.

    Args:
      pointers: ``[..., A]`` soft pointers with bits in ``[0, 1]``.

    Returns:
      the same shape, each bit exactly 0 or 1; the gradient passes through unchanged.
    """
    pointers = jnp.asarray(pointers)
    return pointers + jax.lax.stop_gradient(jnp.round(pointers) - pointers)
