"""Every kernel in float32, bfloat16 and float16: 1,000 steps from a zero memory.

Each kernel is driven for 1,000 steps by random controls whose keys are zero (the
cases where a cosine, a sharpening or a masked softmax could divide by zero), from
a zero memory, in each floating dtype it accepts. Values and gradients must stay
finite, the state keeps its dtype, and the first steps agree with float32 to the
dtype's resolution. The largest deviation from float32 is printed (``pytest -s``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from panm_jax.kernels import deque, dnc, ntm, pointer, queue, stack

STEPS = 1000
DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)
# Agreement with float32 over the first steps: a few units of each dtype's resolution.
TOL = {jnp.float32: 1e-6, jnp.bfloat16: 6e-2, jnp.float16: 1e-2}
FIRST = 3


def _finite(tree) -> bool:
    return all(
        bool(np.all(np.isfinite(np.asarray(x, np.float32))))
        for x in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
    )


def _check(name, dtype, rollout, raw):
    """rollout(raw [T, P] in dtype) -> (final state, outputs [T, ...]); checks and prints."""
    raw = jnp.asarray(raw)
    final, outputs = jax.jit(rollout)(raw.astype(dtype))
    assert _finite(final) and _finite(outputs), f"{name} {jnp.dtype(dtype).name}: non-finite values"
    for leaf in jax.tree.leaves(final):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            assert leaf.dtype == dtype, f"{name}: state dtype {leaf.dtype}, expected {jnp.dtype(dtype).name}"
    grad = jax.jit(jax.grad(lambda r: jnp.sum(jax.tree.leaves(rollout(r)[1])[0].astype(jnp.float32))))(
        raw.astype(dtype)
    )
    assert _finite(grad), f"{name} {jnp.dtype(dtype).name}: non-finite gradient"
    _, reference = jax.jit(rollout)(raw[:FIRST].astype(jnp.float32))
    _, early = jax.jit(rollout)(raw[:FIRST].astype(dtype))
    dev = max(
        float(np.max(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32))))
        for a, b in zip(jax.tree.leaves(early), jax.tree.leaves(reference))
    )
    scale = max(1.0, max(float(np.max(np.abs(np.asarray(b, np.float32)))) for b in jax.tree.leaves(reference)))
    print(
        f"{name:18s} {jnp.dtype(dtype).name:8s} {STEPS} steps finite; first {FIRST} steps vs float32: "
        f"largest deviation {dev:.1e} (outputs up to {scale:.2g})"
    )
    assert dev <= TOL[dtype] * scale, (name, dtype, dev)


def _raw(seed: int, size: int, zero: slice | list) -> np.ndarray:
    raw = np.random.default_rng(seed).normal(size=(STEPS, size)) * 2.0
    raw[:, zero] = 0.0
    return raw


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_ntm(dtype):
    n, w, r, h, s = 8, 4, 2, 2, 3
    read_len, write_len = w + s + 3, 3 * w + s + 3
    # Zero every key: the first W entries of each head's block.
    keys = [i * read_len + j for i in range(r) for j in range(w)]
    keys += [r * read_len + i * write_len + j for i in range(h) for j in range(w)]
    raw = _raw(0, ntm.interface_size(w, r, h, s), keys)

    def rollout(x):
        def body(state, xt):
            return ntm.step(state, ntm.controls_from_interface(xt, w, r, h, s))

        return jax.lax.scan(body, ntm.init_state(n, w, r, h, memory_init=0.0, dtype=x.dtype), x)

    _check("ntm", dtype, rollout, raw)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_dnc(dtype):
    n, w, r = 8, 4, 2
    size = dnc.interface_size(word_size=w, num_reads=r)
    # Zero the read keys (first R W) and the write key (after the R read strengths).
    raw = _raw(1, size, list(range(r * w)) + list(range(r * w + r, r * w + r + w)))

    def rollout(x):
        def body(state, xt):
            return dnc.step(state, dnc.controls_from_interface(xt, word_size=w, num_reads=r))

        return jax.lax.scan(body, dnc.init_state(n, w, r, dtype=x.dtype), x)

    _check("dnc", dtype, rollout, raw)


@pytest.mark.parametrize("kind", ["stack", "queue", "deque"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_stack_queue_deque(kind, dtype):
    w = 4
    kernel = {"stack": stack, "queue": queue, "deque": deque}[kind]
    raw = _raw(2, kernel.interface_size(w), [])

    def rollout(x):
        def body(state, xt):
            return kernel.step(state, kernel.controls_from_interface(xt, w))

        return jax.lax.scan(body, kernel.init_state(STEPS, w, x.dtype), x)

    _check(kind, dtype, rollout, raw)


@pytest.mark.parametrize("score", pointer.SCORES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_pointer_attention(score, dtype):
    # 1,000 steps of Mode 1 and Mode 2 over a zero memory with zero keys at every other
    # step, random queries otherwise; the Mode-1 read is fed back into the next query.
    length, d, bits, heads = 6, 4, 5, 2
    raw = np.random.default_rng(3).normal(size=(STEPS, heads * d + 2)) * 2.0
    raw[::2, : heads * d] = 0.0

    def rollout(x):
        mask = (jnp.arange(length) < 4).astype(x.dtype)
        memory = jnp.zeros((length, d), x.dtype)
        codes = pointer.binary_addresses(jnp.int32(3), length, bits, dtype=x.dtype)
        embedded = jnp.concatenate([codes[:, : d - 1], jnp.zeros((length, 1), x.dtype)], axis=1)

        def body(carry, xt):
            keys = xt[: heads * d].reshape(heads, d) + carry
            beta = jnp.exp(xt[heads * d :])  # positive, one per head
            w = pointer.address_attention(keys, embedded, mask, score=score, inverse_temperature=beta)
            values = pointer.dereference(w, memory)
            queries = keys * 0 + values  # zero: the memory is zero
            read, _ = pointer.relational_access(queries, memory, mask, score=score, inverse_temperature=beta)
            return jnp.tanh(pointer.pointer_values(w, codes)[:, :d]), (w, read)

        return jax.lax.scan(body, jnp.zeros((heads, d), x.dtype), x)

    _check(f"pointer {score}", dtype, rollout, raw)
